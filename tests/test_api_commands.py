"""The Python API covers the command line: estimate / memory / check as functions, recommend and sweep with
serving="disagg", solve with the scenario's fields as keywords, and an empty recommendation's frame with its
columns. Each API result equals the command's JSON for the same input."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml
from click.testing import CliRunner

from solver import api
from solver.capacity.recommend import FRAME_COLUMNS, Recommendation
from solver.cli.main import main
from solver.errors import InputError

MODEL = "qwen3-8b"  # small and dense: one estimate or solve is a fraction of a second
HW = "h100_sxm"


def _json(*args: str) -> dict:
    result = CliRunner().invoke(main, [*args, "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _field(call) -> str:
    with pytest.raises(InputError) as err:
        call()
    return err.value.field


def test_estimate_is_the_estimate_commands_json() -> None:
    """TP2 on 2 cards, serving 1024/128 at 8 in flight: the same figures, breakdowns and notes as the command."""
    res = api.estimate(MODEL, HW, 2, attn_tp_size=2, dense_tp_size=2, isl=1024, osl=128, concurrency=8)
    assert res.as_dict() == _json("estimate", MODEL, "--hardware", HW, "--cards", "2", "--attn-tp", "2",
                                  "--dense-tp", "2", "--isl", "1024", "--osl", "128", "--concurrency", "8")
    assert res.estimate.tpot_s > 0 and res.parallel_config.attn_tp_size == 2


def test_memory_is_the_memory_commands_json() -> None:
    res = api.memory(MODEL, HW, 2, 8, 4096, attn_tp_size=2, kv_dtype="fp8")
    assert res.as_dict() == _json("memory", MODEL, "--hardware", HW, "--cards", "2", "--attn-tp", "2", "--batch",
                                  "8", "--seq-len", "4096", "--kv-dtype", "fp8")
    assert res.report.feasible and res.max_batch >= 8


def test_check_by_keywords_is_the_check_commands_json_of_the_same_deployment(tmp_path: Path) -> None:
    dep = {"model": MODEL, "hardware": HW, "world_size": 2, "parallel_config": {"attn_tp_size": 2, "dense_tp_size": 2},
           "workload": {"phase": "decode", "batch": 8, "seq_len": 4096}}
    path = tmp_path / "dep.yaml"
    path.write_text(yaml.safe_dump(dep))
    cli = _json("check", str(path))
    res = api.check(MODEL, HW, 2, attn_tp_size=2, dense_tp_size=2, phase="decode", batch=8, seq_len=4096)
    assert res.as_dict() == cli and res.valid
    assert api.check(config=path).as_dict() == cli


def test_check_reports_an_invalid_config_as_a_result_not_an_exception() -> None:
    """attn_tp 3 does not divide 2 cards: a class A violation, as the command lists it (exit 1 there)."""
    res = api.check(MODEL, HW, 2, attn_tp_size=3, phase="decode", batch=8, seq_len=4096)
    assert not res.valid and res.review.violations["A"]


@pytest.mark.parametrize("fn, kwargs, key", [
    (api.estimate, dict(attn_tp_size=2.0, isl=1024, osl=128, concurrency=8), "attn_tp_size"),
    (api.estimate, dict(attn_tp_size=3, isl=1024, osl=128, concurrency=8), "attn_tp_size"),
    (api.estimate, dict(isl=1024, osl=128, concurrency=8, mtp_accept=0.5), "mtp_accept"),
    (api.estimate, dict(phase="serve", batch=1, seq_len=1), "phase"),
    (api.estimate, dict(isl=1024, osl=128), "workload"),
    (api.estimate, dict(isl=1024, osl=128, concurrency=8, kv_dtyp="fp8"), "kv_dtyp"),
    (api.estimate, dict(isl=1024, osl=128, concurrency=8, framework=None), "framework"),
    (api.memory, dict(batch=8, seq_len=0), "seq_len"),
    (api.memory, dict(batch=8, seq_len=4096, mem_fraction=1.5), "mem_fraction"),
    (api.memory, dict(batch=8, seq_len=4096, redundant_experts=-1), "redundant_experts"),
    (api.check, dict(phase="decode", batch=8, seq_len=4096, moe_tp_size=np.float64(1)), "moe_tp_size"),
    (api.check, dict(phase="decode", batch=8), "workload"),
    (api.check, dict(phase="decode", batch=8, seq_len=4096, candidate="a"), "candidate"),
])
def test_a_bad_argument_of_estimate_memory_or_check_is_refused_under_its_keyword(fn, kwargs, key: str) -> None:
    """Named as the caller wrote it (attn_tp_size, not --attn-tp), before any estimate."""
    args = (MODEL, HW, 2, kwargs.pop("batch"), kwargs.pop("seq_len")) if fn is api.memory else (MODEL, HW, 2)
    assert _field(lambda: fn(*args, **kwargs)) == key


def test_check_with_a_file_takes_no_workload_keywords(tmp_path: Path) -> None:
    """The file holds the workload: a keyword beside it would be one of two answers to the same question."""
    path = tmp_path / "dep.yaml"
    path.write_text(yaml.safe_dump({"model": MODEL, "hardware": HW, "world_size": 1,
                                    "workload": {"phase": "decode", "batch": 1, "seq_len": 128}}))
    assert _field(lambda: api.check(config=path, batch=8)) == "batch"


def test_recommend_serving_disagg_is_the_commands_json() -> None:
    """recommend --serving disagg: one xPyD deployment per hardware, the same answer from Python."""
    res = api.recommend(MODEL, HW, serving="disagg", target_output_tokens_per_s=2000, cards=[2, 4], isl=1024,
                        osl=128)
    assert res.as_dict() == _json("recommend", MODEL, "--hardware", HW, "--serving", "disagg",
                                  "--target-output-tokens-per-s", "2000", "--cards", "2,4", "--isl", "1024",
                                  "--osl", "128")


def test_recommend_serving_disagg_refuses_no_copies_and_an_unknown_serving() -> None:
    assert _field(lambda: api.recommend(MODEL, HW, serving="disagg", max_copies=0,
                                        target_output_tokens_per_s=1e3)) == "max_copies"
    assert _field(lambda: api.recommend(MODEL, HW, serving="split", target_output_tokens_per_s=1e3)) == "serving"


def test_sweep_serving_disagg_is_the_commands_csv() -> None:
    df = api.sweep(MODEL, HW, [2], "throughput", serving="disagg", isl=1024, osl=128)
    result = CliRunner().invoke(main, ["sweep", MODEL, "--hardware", HW, "--cards", "2", "--scenarios",
                                       "throughput", "--serving", "disagg", "--isl", "1024", "--osl", "128"])
    assert result.exit_code == 0, result.output
    assert df.to_csv(index=False, lineterminator="\n") == result.stdout
    assert _field(lambda: api.sweep(MODEL, HW, [2], serving="disagg", jobs=2)) == "jobs"


def test_solve_takes_the_scenarios_fields_as_sweep_and_recommend_do() -> None:
    """throughput at 1024/128, TPOT <= 50 ms: the same candidates as the Scenario built by hand."""
    by_keywords = api.solve(MODEL, HW, 1, "throughput", isl=1024, osl=128, tpot_ms=50, concurrency=np.int64(8))
    by_scenario = api.solve(MODEL, HW, 1, api.Scenario(kind="throughput", isl=1024, osl=128, tpot_ms=50,
                                                       concurrency=8))
    assert [c.planned.config for c in by_keywords] == [c.planned.config for c in by_scenario]
    assert by_keywords[0].planned.batch == 8  # the concurrency given, not the planner's choice


def test_solve_refuses_a_scenario_and_its_fields_together_naming_both() -> None:
    assert _field(lambda: api.solve(MODEL, HW, 1, api.Scenario(), isl=1024)) == "scenario/isl"
    assert _field(lambda: api.solve(MODEL, HW, 1, tpot_ms=-1)) == "tpot_ms"


def test_an_empty_recommendations_frame_has_the_documented_columns() -> None:
    """No option: the columns of FRAME_COLUMNS (an Option's figures and `recommended`), no row."""
    frame = Recommendation(MODEL, 1.0, 1.0, 1, 1, None, None, [], None, "none met").to_frame()
    assert list(frame.columns) == list(FRAME_COLUMNS) and frame.empty
    assert frame["cost_per_hour"].dtype == "float64" and frame["recommended"].dtype == bool


def test_a_disaggregated_api_sweep_carries_the_notes_the_command_says() -> None:
    """gpt-oss-20b on Atlas A3 (no FP4 there): the experts are served as bf16; the command says it as a `note:`
    line before solving, and the API's frame carries the same lines in df.attrs["notes"], as the aggregated
    sweep's does."""
    from click.testing import CliRunner

    from solver.cli.main import main

    df = api.sweep("gpt-oss-20b", "atlas_a3", cards="2", scenarios="throughput", serving="disagg")
    r = CliRunner().invoke(main, ["sweep", "gpt-oss-20b", "--hardware", "atlas_a3", "--cards", "2", "--scenarios",
                                  "throughput", "--serving", "disagg"])
    said = [line.removeprefix("note: ") for line in r.stderr.splitlines() if line.startswith("note: ")]
    assert df.attrs["notes"] == said and any("served as bf16" in n for n in said)
