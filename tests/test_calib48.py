"""Stop 48: a user-level hunt of calibration (profiler traces, measured CSVs) and the RFC's deployment.

Each test is one rule found broken by the hunt (benchmarks/README.md, "Stop 48: a user-level hunt of calibration
and the RFC's deployment")."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))

import accuracy_disagg  # noqa: E402
import accuracy_rows  # noqa: E402

AGG_CSV = accuracy_rows.DEFAULT_CSV
DISAGG_CSV = accuracy_disagg.DEFAULT_CSV
needs_agg = pytest.mark.skipif(not AGG_CSV.is_file(), reason="calibration CSV (../shared/facts) not present")
needs_disagg = pytest.mark.skipif(not DISAGG_CSV.is_file(), reason="calibration CSV (../shared/facts) not present")


# ------------------------------------------------------------------ the benchmark's fast path is `estimate`


@needs_agg
def test_the_accuracy_fast_path_holds_the_sequences_estimate_holds() -> None:
    # the KV-bound row: 298 running sequences on the fast path against estimate's 294 before the fix (TTFT 1.6%)
    rows = [r for r in accuracy_rows.load_rows(AGG_CSV)
            if r["id"] == "2026_03_25_deepseek_r1_b200_sxm_sglang_fp8_agg_8192x1024_c512_tp8_0_ep1_0_266"]
    prepared, _ = accuracy_rows.prepare_all(rows)
    assert len(prepared) == 1
    assert accuracy_rows.check_fast_path(prepared) < 1e-9


@needs_disagg
def test_the_disagg_fast_path_pads_and_holds_as_estimate_disagg_does() -> None:
    # rows 88-104 (KV-bound sglang decode pools, graphs past the default cap) and 36-39 (GLM-5: the decode span)
    # were 1e-5 to 53% off estimate_disagg while the first 12 rows, all the check read, agreed
    rows = accuracy_disagg.first_rows(DISAGG_CSV, 0)
    picked = [rows[i] for i in (36, 39, 88, 95, 104)]
    prepared, _ = accuracy_disagg.prepare_rows(picked)
    assert len(prepared) == 5
    assert accuracy_disagg.check_fast_path(prepared) < 1e-9


# ------------------------------------------------------------------ decode graphs past the listed sizes


def _sglang_factors(hw_name: str = "h200_sxm"):
    from solver.estimate.compute import factors_for
    from solver.specs.framework import load_framework
    from solver.specs.hardware_catalog import load_hardware

    hw = load_hardware(hw_name)
    return factors_for(hw, load_framework("sglang").serving_factors(hw.vendor))


def test_a_lifted_graph_cap_captures_the_engines_sizes_below_it() -> None:
    # sglang 0.5.23 arg_groups/cuda_graph_hook.py:515: multiples of 32 from 512 up to max_bs, then max_bs itself;
    # before: the lifted cap of 2048 followed 512 directly, and 532 running sequences ran padded to 2048
    from solver.estimate.engine_step import graph_batch, graph_sizes_at
    from solver.specs.parallel import ParallelConfig

    f = _sglang_factors()
    pc = ParallelConfig(world_size=8, attn_tp_size=8, moe_tp_size=8)
    sizes = graph_sizes_at(f, pc, 256, 2048)
    assert sizes[-1] == 2048 and {512, 544, 576, 2016} <= set(sizes) and 2047 not in sizes
    assert graph_batch(532, sizes) == (544, False)


def test_an_unlifted_graph_cap_is_unchanged_by_the_open_range() -> None:
    from solver.estimate.engine_step import graph_sizes_at
    from solver.specs.parallel import ParallelConfig

    f = _sglang_factors()
    pc = ParallelConfig(world_size=8, attn_tp_size=8, moe_tp_size=8)
    assert graph_sizes_at(f, pc, 256, 300)[-1] == 512 and max(graph_sizes_at(f, pc, 256, 300)) == 512


def test_only_the_last_graph_range_may_run_on_to_the_cap() -> None:
    from pydantic import ValidationError

    from solver.specs.profile_serving import FrameworkServing

    cap = [{"value": 512}]
    with pytest.raises(ValidationError, match="only the last range may run on to the cap"):
        FrameworkServing.model_validate({"graph_batches": [{"start": 1}, {"start": 8, "stop": 16}],
                                         "graph_max_batch": cap})
    with pytest.raises(ValidationError, match="graph_max_batch must name it"):
        FrameworkServing.model_validate({"graph_batches": [{"start": 1, "stop": 4}, {"start": 8, "step": 8}]})
    ok = FrameworkServing.model_validate({"graph_batches": [{"start": 1, "stop": 4}, {"start": 8, "step": 8}],
                                          "graph_max_batch": cap})
    assert ok.graph_sizes() == (1, 2, 3, 4) and ok.graph_open() == (8, 8)


# ------------------------------------------------------------------ profiler traces a user brings


def _calibrate_json(path: Path) -> tuple[dict, str]:
    import json

    from click.testing import CliRunner

    from solver.cli.main import main

    res = CliRunner().invoke(main, ["calibrate", str(path), "--format", "json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout), res.stderr


def _as_begin_end(events: list[dict]) -> list[dict]:
    out = []
    for e in events:
        if e.get("ph") != "X":
            out.append(e)
            continue
        begin = {k: v for k, v in e.items() if k != "dur"}
        out += [{**begin, "ph": "B"}, {"ph": "E", "pid": e["pid"], "tid": e["tid"], "ts": e["ts"] + e["dur"]}]
    return out


def test_a_trace_written_as_begin_end_pairs_reads_as_its_complete_events(tmp_path: Path) -> None:
    # before: B/E slices were dropped without a word (the H800 trace so written read 0% communication, a
    # 112 ms host window as its step); 20% communication of a 10 ms step either way
    import traces_synth as ts

    trace = ts.comm_share_trace()
    plain, _ = _calibrate_json(ts.write_trace(tmp_path / "x.json", trace))
    paired, _ = _calibrate_json(ts.write_trace(tmp_path / "be.json", {**trace,
                                                                       "traceEvents": _as_begin_end(trace["traceEvents"])}))
    assert paired["step_time_ms"] == plain["step_time_ms"] == [10.0]
    assert paired["communication_ratio_raw"] == plain["communication_ratio_raw"] == pytest.approx(0.2)
    assert paired["kernel_share"] == plain["kernel_share"]


def test_a_begin_with_no_end_is_a_left_out_event_named_in_a_note(tmp_path: Path) -> None:
    import traces_synth as ts

    trace = ts.comm_share_trace()
    events = _as_begin_end(trace["traceEvents"])
    events.pop()  # the NCCL kernel's end: a trace cut short
    out, err = _calibrate_json(ts.write_trace(tmp_path / "cut.json", {**trace, "traceEvents": events}))
    assert out["communication_ratio_raw"] == 0.0
    assert "1 event left out" in err and "with no E (a trace cut short?)" in err


def test_rocm_tensile_gemms_and_ascend_mc2_exchanges_are_classed_as_what_they_run() -> None:
    # before: a ROCm trace's hipBLASLt GEMMs were "other" (the Qwen3 prefill example with its dense GEMMs so
    # named: GEMM/MoE 33.65 ms, +9.6% "ok", against 38.07 ms, +24.0%), and Ascend's MC2 EP dispatch/combine GEMM/MoE
    from solver.calibrate.classify import classify

    assert classify("Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT256x256x64_MI16x16x1_SN_LDSB1_AFC1") == "gemm_moe"
    assert classify("MoeDistributeDispatchV2") == "communication"
    assert classify("MoeDistributeCombine") == "communication"
    assert classify("MoeGatingTopK") == "gemm_moe"  # the router stays with the experts


# ------------------------------------------------------------------ a user's own measurement CSV


def _from_csv(tmp_path: Path, text: str) -> tuple[int, list[dict], str]:
    import csv
    import io

    from click.testing import CliRunner

    from solver.cli.main import main

    src = tmp_path / "mine.csv"
    src.write_text(text)
    res = CliRunner().invoke(main, ["estimate", "--from-csv", str(src), "--out", "-"])
    return res.exit_code, list(csv.DictReader(io.StringIO(res.stdout))) if res.exit_code == 0 else [], res.stderr


def test_each_row_carries_its_error_as_the_benchmark_computes_it(tmp_path: Path) -> None:
    code, rows, err = _from_csv(tmp_path, "model,system,backend,tp,isl,osl,concurrency,ttft_ms,tpot_ms\n"
                                          "Qwen/Qwen3-32B,h100_sxm,vllm,2,2000,100,8,200,20\n"
                                          "Qwen/Qwen3-32B,h100_sxm,vllm,2,2000,100,8,,\n")
    assert code == 0
    measured, blank = rows
    assert float(measured["ttft_err"]) == pytest.approx(float(measured["ttft_ms_pred"]) / 200 - 1, abs=1e-4)
    assert float(measured["tpot_err"]) == pytest.approx(float(measured["tpot_ms_pred"]) / 20 - 1, abs=1e-4)
    assert blank["ttft_err"] == blank["tpot_err"] == "" and float(blank["tpot_ms_pred"]) > 0
    assert "median |error|" in err and "over 1 rows with a measurement" in err


def test_a_column_the_rows_are_not_read_from_is_named_in_a_note(tmp_path: Path) -> None:
    # before: ttft_s / tpot_s (seconds, another name) passed through as if compared
    code, rows, err = _from_csv(tmp_path, "model,system,backend,tp,isl,osl,concurrency,ttft_s,tpot_s\n"
                                          "Qwen/Qwen3-32B,h100_sxm,vllm,2,2000,100,8,0.2,0.02\n")
    assert code == 0 and rows[0]["ttft_err"] == ""
    assert ("column(s) not read, carried to the output as given: ttft_s, tpot_s (measured times are read from "
            "ttft_ms / tpot_ms, in milliseconds)") in err


def test_a_header_in_other_case_is_refused_with_the_names_it_has(tmp_path: Path) -> None:
    code, _, err = _from_csv(tmp_path, "Model,System,TP,ISL,OSL,Concurrency\nQwen/Qwen3-32B,h100_sxm,2,2000,100,8\n")
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "(the header has 'Model' for model, 'System' for system" in err


@needs_agg
def test_the_calibration_csvs_columns_are_all_read_but_their_labels() -> None:
    import csv

    from solver.measured import MEASURED_COLUMNS, READ_COLUMNS
    from solver.measured_disagg import READ_COLUMNS as DISAGG_READ

    for path, read in ((AGG_CSV, READ_COLUMNS), (DISAGG_CSV, DISAGG_READ)):
        header = next(csv.reader(path.open()))
        assert set(header) - set(read) - set(MEASURED_COLUMNS) == {"id", "backend_version"}
