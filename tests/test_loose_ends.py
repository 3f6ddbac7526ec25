"""Rules for the deployment-file, launch, topology and note loose ends: each test states one rule and its
hand-computed expectation."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from solver.cli.main import main
from test_bring_your_own import PCIE4


def _write(path: Path, data: dict) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return str(path)


def _run(*args: str):
    return CliRunner().invoke(main, list(args))


@pytest.mark.parametrize("command", ["check", "launch"])
def test_a_disaggregated_plan_is_refused_as_a_deployment_file_in_one_line_naming_what_to_run(tmp_path, command):
    """`solve --serving disagg --format yaml` writes two pools priced together and no model, hardware, engine or
    workload: check and launch name the file for what it is and point to `--format launch`."""
    res = _run("solve", "qwen3-8b", "--hardware", "h100_sxm", "--cards", "2", "--serving", "disagg",
               "--isl", "1024", "--osl", "128", "--format", "yaml")
    assert res.exit_code == 0, res.output
    plan = tmp_path / "plan.yaml"
    plan.write_text(res.stdout)
    res = _run(command, str(plan))
    assert res.exit_code == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"error: {plan}: a disaggregated plan (solve --serving disagg), not a deployment file")
    assert "--format launch" in lines[0]


def _profile_without_launch(tmp_path: Path) -> str:
    root = Path(__file__).resolve().parents[1]
    data = yaml.safe_load((root / "solver" / "frameworks" / "vllm.yaml").read_text())
    data.pop("launch")
    data["name"] = "no-template"
    return _write(tmp_path / "no-template.yaml", data)


def _decode_deployment(path: Path, **keys: object) -> str:
    return _write(path, {"model": "qwen3-8b", "hardware": "h100_sxm", "world_size": 1,
                         "workload": {"phase": "decode", "batch": 1, "seq_len": 128}, **keys})


def test_launch_of_a_profile_without_a_launch_section_says_it_gives_no_command_template(tmp_path):
    """The profile is an engine's in every other way (a copy of vllm.yaml less `launch:`): the line names the
    profile, says it gives no command template and what to do, under the key that named it."""
    profile = _profile_without_launch(tmp_path)
    dep = _decode_deployment(tmp_path / "dep.yaml", framework=profile)
    for args, field in (([dep], f"{dep}: framework"), ([dep, "--engine", profile], "--engine")):
        res = _run("launch", *args)
        assert res.exit_code == 2
        assert res.stderr.startswith(f"error: {field}: its profile (no-template) gives no command template "
                                     "(no launch section): name a profile that has one (")
        assert "vllm" in res.stderr and "not an engine" not in res.stderr


def test_relative_paths_in_a_deployment_file_resolve_against_its_folder_and_catalog_names_stay_names(tmp_path):
    """sub/dep.yaml names `hardware: pcie4.yaml` and `framework: my.yaml`, both in sub/; read from the
    repository root (the tests' directory), check and launch find them beside the file. `qwen3-8b` is a catalog
    name and stays one (no sub/qwen3-8b is looked for)."""
    sub = tmp_path / "sub"
    _write(sub / "pcie4.yaml", PCIE4)
    root = Path(__file__).resolve().parents[1]
    (sub / "my.yaml").write_text((root / "solver" / "frameworks" / "vllm.yaml").read_text())
    dep = _decode_deployment(sub / "dep.yaml", hardware="pcie4.yaml", framework="my.yaml")
    assert not Path("pcie4.yaml").exists() and not Path("my.yaml").exists()
    res = _run("check", dep, "--format", "json")
    assert res.exit_code == 0, res.output
    res = _run("launch", dep)
    assert res.exit_code == 0, res.output
    assert "vllm serve" in res.stdout


def test_a_relative_path_missing_beside_the_deployment_file_is_named_with_that_folder(tmp_path):
    """`hardware: nothere.yaml` in sub/dep.yaml is looked for as sub/nothere.yaml, and the error names it."""
    dep = _decode_deployment(tmp_path / "sub" / "dep.yaml", hardware="nothere.yaml")
    res = _run("check", dep)
    assert res.exit_code == 2
    assert f"hardware: file not found: {tmp_path / 'sub' / 'nothere.yaml'}" in res.stderr


def test_a_hub_id_and_a_catalog_name_in_a_deployment_file_are_not_read_as_paths(tmp_path):
    """`Qwen/Qwen3-8B` (one separator, nothing of that name in the folder) stays a hub id; `h100_sxm` stays a
    catalog name; `./cfg/config.json` becomes FOLDER/cfg/config.json."""
    from solver.specs.deployment import beside

    assert beside("Qwen/Qwen3-8B", tmp_path, hub_ids=True) == "Qwen/Qwen3-8B"
    assert beside("h100_sxm", tmp_path) == "h100_sxm"
    assert beside("./cfg/config.json", tmp_path, hub_ids=True) == str(tmp_path / "cfg" / "config.json")


def test_a_relative_system_path_in_a_calibration_csv_resolves_against_the_csvs_folder(tmp_path):
    """estimate --from-csv sub/rows.csv whose row names `system: pcie4.yaml` (in sub/) predicts the row; the output
    keeps the cell as written."""
    import csv

    sub = tmp_path / "sub"
    _write(sub / "pcie4.yaml", PCIE4)
    row = {"model": "qwen3-8b", "system": "pcie4.yaml", "isl": "128", "osl": "16", "concurrency": "1", "tp": "1"}
    src = sub / "rows.csv"
    with src.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(row))
        writer.writeheader()
        writer.writerow(row)
    res = _run("estimate", "--from-csv", str(src), "--out", "-")
    assert res.exit_code == 0, res.output
    out = list(csv.DictReader(res.stdout.splitlines()))
    assert out[0]["error"] == "" and float(out[0]["tpot_ms_pred"]) > 0 and out[0]["system"] == "pcie4.yaml"


def test_a_deployment_beyond_the_outermost_tiers_span_is_refused_naming_the_field(tmp_path):
    """PCIE4's outermost tier is inter_node with span_ranks 1,024: 2,048 ranks (an embedding all-reduce over all
    of them) are refused in one line naming tiers.inter_node.span_ranks; 1,024 ranks are priced."""
    hw = _write(tmp_path / "pcie4.yaml", PCIE4)
    assert PCIE4["tiers"]["inter_node"]["span_ranks"] == 1024 and "inter_rack" not in PCIE4["tiers"]
    for cards, code in (("2048", 2), ("1024", 0)):
        res = _run("estimate", "qwen3-8b", "--hardware", hw, "--cards", cards, "--embed-tp", cards, "--phase",
                   "decode", "--batch", "2048", "--seq-len", "1024", "--format", "json")
        assert res.exit_code == code, res.output
    assert json.loads(res.stdout)["tpot_ms"] > 0
    res = _run("estimate", "qwen3-8b", "--hardware", hw, "--cards", "2048", "--phase", "decode", "--batch", "2048",
               "--seq-len", "1024")
    assert res.stderr.strip().splitlines() == [
        "error: my_pcie4: tiers.inter_node.span_ranks: 1,024 ranks, the most its outermost tier connects, but the "
        "deployment spans 2,048: give at most 1,024 cards, or raise span_ranks to what the fabric reaches"]


def _estimate_notes(framework: str) -> list[str]:
    res = _run("estimate", "qwen3-8b", "--hardware", "h100_sxm", "--cards", "1", "--phase", "decode", "--batch",
               "8", "--seq-len", "1024", "--framework", framework, "--format", "json")
    assert res.exit_code == 0, res.output
    return [n for n in json.loads(res.stdout)["notes"] if "no factors are fitted" in n]


def test_a_renamed_engine_copy_without_fitted_as_carries_a_note_that_its_fitted_factors_are_not_used(tmp_path):
    """vllm.yaml renamed my-vllm: the fitted factors are keyed by name (sglang, trtllm, vllm are fitted), so the
    answer says my-vllm has none and how to carry vLLM's (`fitted_as`); with `fitted_as: vllm`, or the shipped
    vllm, nothing is said."""
    root = Path(__file__).resolve().parents[1]
    data = yaml.safe_load((root / "solver" / "frameworks" / "vllm.yaml").read_text())
    plain = _write(tmp_path / "plain.yaml", {**data, "name": "my-vllm"})
    fork = _write(tmp_path / "fork.yaml", {**data, "name": "my-vllm", "fitted_as": "vllm"})
    said = _estimate_notes(plain)
    assert len(said) == 1
    assert said[0].startswith("no factors are fitted for the engine name my-vllm: ")
    assert "`fitted_as: NAME`" in said[0] and "vllm" in said[0]
    assert _estimate_notes(fork) == [] and _estimate_notes("vllm") == []
    # check reads the same note (it estimates the deployment as estimate does)
    dep = _decode_deployment(tmp_path / "dep.yaml", framework=plain)
    res = _run("check", dep, "--format", "json")
    assert res.exit_code == 0, res.output
    assert [n for n in json.loads(res.stdout)["notes"] if "no factors are fitted" in n] == said
