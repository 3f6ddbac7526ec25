"""The CLI: machine-readable keys, catalog listings, one-line errors with exit code 2, and the wheel's contents."""
from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Callable

import pytest
import yaml
from click.testing import CliRunner

from solver.catalog import catalog_dir
from solver.cli.main import main
from solver.specs.hardware_catalog import list_hardware
from solver.specs.model_catalog import list_models

REPO = Path(__file__).resolve().parent.parent
LLAMA_8B = json.loads((catalog_dir("models") / "meta-llama--Meta-Llama-3.1-8B.json").read_text())
MEMORY_ARGS = ["memory", "deepseek-v3.2", "--hardware", "atlas_a3", "--cards", "64", "--cp", "64", "--oproj-tp", "8",
               "--embed-tp", "16", "--lmhead-tp", "16", "--batch", "64", "--seq-len", "65536"]


def _run(*args: str):
    return CliRunner().invoke(main, list(args))


def _shardplan() -> Path:
    """The console script installed beside the interpreter running the tests."""
    script = Path(sys.executable).parent / "shardplan"
    assert script.is_file(), f"no shardplan script beside {sys.executable}"
    return script


# ------------------------------------------------------------------------------------------- JSON output


def test_inspect_json_has_architecture_params_and_modules() -> None:
    result = _run("inspect", "deepseek-v3.2", "--format", "json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["architecture"] == "moe+dsa"
    assert isinstance(data["total_params"], int) and isinstance(data["active_params"], int)
    assert 0 < data["active_params"] < data["total_params"]
    assert data["mtp_params"] > 0
    assert {m["name"] for m in data["modules"]} >= {"embedding", "attention", "indexer", "routed_experts", "lm_head"}
    assert all(isinstance(m["params"], int) for m in data["modules"])
    assert sum(m["params"] for m in data["modules"]) == data["total_params"]


def test_memory_json_has_totals_feasibility_max_batch_and_breakdown() -> None:
    result = _run(*MEMORY_ARGS, "--format", "json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    for key in ("total_gb", "capacity_gb", "feasible", "max_batch", "breakdown"):
        assert key in data
    assert data["capacity_gb"] == pytest.approx(64 * 2**30 / 1e9)  # an A3 die: 64 GiB
    assert data["feasible"] is True
    assert data["max_batch"] >= 64
    assert data["total_gb"] == pytest.approx(sum(data["breakdown"].values()))


def test_fp8_checkpoint_on_ascend_prints_a_note_on_stderr() -> None:
    result = _run(*MEMORY_ARGS, "--format", "json")
    assert "served as bf16" in result.stderr
    json.loads(result.stdout)  # notes stay off stdout


# ------------------------------------------------------------------------------------------- catalogs


@pytest.mark.parametrize("fmt", ["table", "yaml", "json"])
def test_models_lists_every_catalog_entry(fmt: str) -> None:
    result = _run("models", "--format", fmt)
    assert result.exit_code == 0, result.output
    files = [f for f, _ in list_models()]
    assert len(files) == len(list(catalog_dir("models").glob("*.json")))
    if fmt == "table":
        for file in files:
            assert file in result.stdout
    else:
        data = json.loads(result.stdout) if fmt == "json" else yaml.safe_load(result.stdout)
        assert [row["file"] for row in data["models"]] == files


@pytest.mark.parametrize("fmt", ["table", "yaml", "json"])
def test_hardware_lists_every_catalog_entry(fmt: str) -> None:
    result = _run("hardware", "--format", fmt)
    assert result.exit_code == 0, result.output
    names = list_hardware()
    if fmt == "table":
        for name in names:
            assert name in result.stdout
    else:
        data = json.loads(result.stdout) if fmt == "json" else yaml.safe_load(result.stdout)
        assert [row["name"] for row in data["hardware"]] == names


# ------------------------------------------------------------------------------------------- bad input


def _config_file(tmp_path: Path, text: str | None = None, **changes) -> str:
    cfg = dict(LLAMA_8B)
    for key, value in changes.items():
        if value is None:
            cfg.pop(key, None)
        else:
            cfg[key] = value
    path = tmp_path / "config.json"
    path.write_text(text if text is not None else json.dumps(cfg))
    return str(path)


# (case id, argv builder, fragment the one error line must contain)
BAD_INPUT: list[tuple[str, Callable[[Path], list[str]], str]] = [
    ("malformed_json", lambda t: ["inspect", _config_file(t, text='{"hidden_size": 4096,')], "not valid JSON"),
    ("missing_hidden_size", lambda t: ["inspect", _config_file(t, hidden_size=None)], "hidden_size: missing"),
    ("heads_not_dividing_hidden", lambda t: ["inspect", _config_file(t, num_attention_heads=30,
                                                                     num_key_value_heads=10)],
     "does not divide hidden_size"),
    ("negative_size", lambda t: ["inspect", _config_file(t, hidden_size=-4096)], "hidden_size: must be >= 1"),
    ("unknown_model", lambda t: ["inspect", "deepseek-v4"], "close names: deepseek-v4-pro, deepseek-v3"),
    ("unknown_hardware", lambda t: ["memory", "llama-3.1-8b", "--hardware", "h300", "--cards", "8", "--batch", "1",
                                    "--seq-len", "1024"], "unknown hardware 'h300'"),
    ("parallel_size_not_dividing_world", lambda t: ["memory", "llama-3.1-8b", "--hardware", "h200_sxm", "--cards", "16",
                                                    "--attn-tp", "3", "--batch", "1", "--seq-len", "1024"],
     "--attn-tp: 3 does not divide the world size 16"),
    ("config_path_missing", lambda t: ["inspect", str(t / "nowhere" / "config.json")], "file not found"),
    # a folder path that is not there was "unknown model '/.../nowhere'; see `shardplan models`"
    ("config_folder_missing", lambda t: ["inspect", str(t / "nowhere")], "model: no such file or folder"),
    ("config_folder_missing_relative", lambda t: ["inspect", "./nowhere/q30"], "model: no such file or folder"),
]


@pytest.mark.parametrize("build, fragment", [(b, f) for _, b, f in BAD_INPUT], ids=[c for c, _, _ in BAD_INPUT])
def test_bad_input_is_one_error_line_with_exit_code_2(tmp_path: Path, build, fragment: str) -> None:
    result = CliRunner().invoke(main, build(tmp_path))
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error:")
    assert fragment in lines[0]
    assert "Traceback" not in result.output
    assert result.stdout == ""


def test_bad_input_from_the_installed_script_prints_no_traceback(tmp_path: Path) -> None:
    for args in (["inspect", _config_file(tmp_path, hidden_size=None)], ["inspect", "deepseek-v4"],
                 ["memory", "llama-3.1-8b", "--hardware", "h200_sxm", "--cards", "16", "--attn-tp", "3",
                  "--batch", "1", "--seq-len", "1024"]):
        proc = subprocess.run([str(_shardplan()), *args], capture_output=True, text=True, timeout=120)
        assert proc.returncode == 2, proc.stderr
        assert "Traceback" not in proc.stderr
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error:"), proc.stderr
        assert proc.stdout == ""


def test_installed_script_runs_the_readme_example() -> None:
    proc = subprocess.run([str(_shardplan()), *MEMORY_ARGS, "--format", "json"], capture_output=True, text=True,
                          timeout=120, cwd="/")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["feasible"] is True


# ------------------------------------------------------------------------------------------- packaging


@pytest.mark.slow
def test_wheel_ships_the_catalogs_and_framework_profiles(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", str(REPO), "-w",
                           str(tmp_path)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    wheels = list(tmp_path.glob("shardplan-*.whl"))
    assert len(wheels) == 1
    names = set(zipfile.ZipFile(wheels[0]).namelist())
    for pattern, folder, suffix in [
        ("solver/_catalog/models", REPO / "models", ".json"),
        ("solver/_catalog/hardware", REPO / "hardware", ".yaml"),
        ("solver/_catalog/references", REPO / "references", ".yaml"),
        ("solver/frameworks", REPO / "solver" / "frameworks", ".yaml"),
    ]:
        shipped = {n.rsplit("/", 1)[-1] for n in names if n.startswith(pattern + "/") and n.endswith(suffix)}
        assert shipped, f"the wheel has no {pattern}/*{suffix}"
        expected = {p.name for p in folder.glob(f"*{suffix}")}
        assert expected <= shipped, f"missing from the wheel: {sorted(expected - shipped)}"
    assert "solver/_catalog/models/index.yaml" in names


def test_python_dash_m_runs_the_same_cli_as_the_installed_script() -> None:
    import subprocess
    import sys

    for module in ("solver", "solver.cli.main"):
        out = subprocess.run([sys.executable, "-m", module, "inspect", "llama-3.1-8b", "--format", "json"],
                             capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        assert '"total_params"' in out.stdout
