"""Rules for the deployment-file, launch, topology and note loose ends: each test states one rule and its
hand-computed expectation."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from solver.cli.main import main


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
