"""Stop 48 (b): the user factors path finished: the Python API takes `factors=` where the command takes --factors,
a sweep's tasks carry the factors' content to their workers (no environment variable names them), and
disaggregated rows are refused by the fit in one line that says what to do instead."""
from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest
from click.testing import CliRunner

from solver import api
from solver.cli.main import main
from solver.errors import InputError
from solver.specs.fitted import active_user_factors

# a pair fit far from the shipped one, so that every figure it prices moves
SLOW = "factors:\n  vllm:\n    h100_sxm:\n      gemm: 0.6\n      hbm: 0.6\n"
KNOBS = dict(attn_tp_size=2, dense_tp_size=2, embed_tp_size=2, lmhead_tp_size=2)
SERVING = dict(isl=2000, osl=200, concurrency=16, framework="vllm")
CLI_ESTIMATE = ["estimate", "Qwen/Qwen3-32B", "--hardware", "h100_sxm", "--cards", "2", "--framework", "vllm",
                "--isl", "2000", "--osl", "200", "--concurrency", "16", "--format", "json", "--attn-tp", "2",
                "--dense-tp", "2", "--embed-tp", "2", "--lmhead-tp", "2"]
DISAGG_HEADER = ("model,system,backend,isl,osl,concurrency,prefill_workers,prefill_tp,prefill_batch,decode_workers,"
                 "decode_tp,decode_batch,ttft_ms,tpot_ms\n")
DISAGG_ROW = "Qwen/Qwen3-32B,h100_sxm,vllm,4000,500,32,2,2,1,1,4,32,900,25\n"


def _invoke(*args: str):
    return CliRunner().invoke(main, list(args))


@pytest.fixture
def slow(tmp_path: Path) -> Path:
    path = tmp_path / "slow.yaml"
    path.write_text(SLOW)
    return path


def _tpot(res) -> float:
    return res.as_dict()["tpot_ms"]


def test_the_api_prices_with_the_factors_file_the_command_reads(slow: Path) -> None:
    plain = api.estimate("Qwen/Qwen3-32B", "h100_sxm", 2, **SERVING, **KNOBS)
    given = api.estimate("Qwen/Qwen3-32B", "h100_sxm", 2, factors=slow, **SERVING, **KNOBS)
    cli = json.loads(_invoke(*CLI_ESTIMATE, "--factors", str(slow)).stdout)
    assert _tpot(given) > _tpot(plain)  # HBM at 0.6 of the shipped fit's: decode slower
    assert _tpot(given) == pytest.approx(cli["tpot_ms"], rel=1e-12)


def test_an_api_calls_factors_do_not_outlive_it(slow: Path) -> None:
    before = api.estimate("Qwen/Qwen3-32B", "h100_sxm", 2, **SERVING, **KNOBS)
    api.estimate("Qwen/Qwen3-32B", "h100_sxm", 2, factors=str(slow), **SERVING, **KNOBS)
    assert active_user_factors() is None
    assert _tpot(api.estimate("Qwen/Qwen3-32B", "h100_sxm", 2, **SERVING, **KNOBS)) == _tpot(before)


def test_an_api_answer_notes_which_pairs_the_factors_file_priced(slow: Path) -> None:
    res = api.estimate("Qwen/Qwen3-32B", "h100_sxm", 2, factors=slow, **SERVING, **KNOBS)
    assert f"factors {slow} priced vllm x h100_sxm" in res.notes


@pytest.mark.parametrize("body, field", [
    ("factors:\n  vllm:\n    h100_sxm:\n      gemm: 5\n", "factors.vllm.h100_sxm.gemm"),
    ("factors: {}\n", ": factors"),
    (None, "factors"),  # not a path
])
def test_an_api_call_refuses_a_bad_factors_file_naming_the_keyword(tmp_path: Path, body: str | None,
                                                                  field: str) -> None:
    bad: object = 5
    if body is not None:
        bad = tmp_path / "bad.yaml"
        bad.write_text(body)  # type: ignore[attr-defined]
    with pytest.raises(InputError) as err:
        api.estimate("Qwen/Qwen3-32B", "h100_sxm", 2, factors=bad, **SERVING, **KNOBS)
    assert err.value.field.startswith("factors") and field in err.value.field and "--" not in err.value.field


def test_memory_takes_no_factors_as_its_command_takes_none(slow: Path) -> None:
    with pytest.raises(InputError, match="not an argument of memory"):
        api.memory("Qwen/Qwen3-32B", "h100_sxm", 2, 8, 4096, factors=slow, **KNOBS)


def test_no_environment_variable_gives_factors(slow: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plain = _invoke(*CLI_ESTIMATE)
    monkeypatch.setenv("SHARDPLAN_FACTORS", str(slow))  # the name an earlier build read: a hidden input
    shell = _invoke(*CLI_ESTIMATE)
    assert shell.stdout == plain.stdout and "factors" not in shell.stderr


def test_a_sweep_task_carries_the_factors_content_not_a_path(tmp_path: Path, slow: Path) -> None:
    from solver.capacity.sweep import build_plan, solve_task
    from solver.calibrate.factors_file import read_user_factors
    from solver.specs.fitted import using_user_factors

    args = ("Qwen/Qwen3-32B", "h100_sxm", "2", ["throughput"])
    with using_user_factors(read_user_factors(str(slow))):
        (task,) = build_plan(*args, isl=2000, osl=200, framework="vllm").tasks
        priced = solve_task(task)
    (plain_task,) = build_plan(*args, isl=2000, osl=200, framework="vllm").tasks
    slow.unlink()  # a worker on another host has no such file
    shipped = pickle.loads(pickle.dumps(task))  # what a process pool, Dask or Ray sends the worker
    assert active_user_factors() is None
    assert solve_task(shipped) == priced != solve_task(plain_task)


def test_sweep_workers_price_with_the_commands_factors(tmp_path: Path, slow: Path) -> None:
    base = ["sweep", "Qwen/Qwen3-32B", "--hardware", "h100_sxm", "--cards", "2,4", "--framework", "vllm",
            "--isl", "2000", "--osl", "200", "--scenarios", "throughput"]
    out = {}
    for name, extra in (("plain", []), ("one", ["--factors", str(slow)]), ("two", ["--factors", str(slow), "--jobs", "2"])):
        res = _invoke(*base, *extra, "--out", str(tmp_path / f"{name}.csv"))
        assert res.exit_code == 0, res.output
        out[name] = (tmp_path / f"{name}.csv").read_text()
    assert out["two"] == out["one"] != out["plain"]


def test_disaggregated_rows_are_refused_in_one_line_saying_what_to_do(tmp_path: Path) -> None:
    rows = tmp_path / "disagg.csv"
    rows.write_text(DISAGG_HEADER + DISAGG_ROW)
    res = _invoke("calibrate", "--from-csv", str(rows), "--fit", str(tmp_path / "f.yaml"))
    assert res.exit_code == 2 and "Traceback" not in res.output
    (line,) = res.stderr.strip().splitlines()
    assert line.startswith("error: --from-csv") and "fit aggregated rows" in line and "--factors" in line
    assert not (tmp_path / "f.yaml").exists()


def test_factors_price_the_pools_of_disaggregated_rows(tmp_path: Path, slow: Path) -> None:
    rows = tmp_path / "disagg.csv"
    rows.write_text(DISAGG_HEADER + DISAGG_ROW)
    plain = _invoke("estimate", "--from-csv", str(rows), "--out", "-")
    given = _invoke("estimate", "--from-csv", str(rows), "--out", "-", "--factors", str(slow))
    assert plain.exit_code == 0 and given.exit_code == 0, given.output
    assert plain.stdout != given.stdout and "priced vllm x h100_sxm" in given.stderr
