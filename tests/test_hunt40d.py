"""Calibration as a user meets it (seed Step 5 and the measured rows): torch_npu folders, device work outside the
step windows, the CSV conventions a row leans on, and a refit that reproduces its file."""
from __future__ import annotations

import csv
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import traces_synth as ts
from solver.calibrate.metrics import summarize
from solver.calibrate.trace import left_out_notes, load_trace_file, load_traces, trace_files
from solver.cli.main import main
from solver.errors import InputError
from solver.measured import parallel_sizes

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import fit_efficiency  # noqa: E402
from conftest import FACTS  # noqa: E402

BASE = "1700000000000000"


def _npu_steps(ops: list[tuple[str, int, float]]) -> list[dict]:
    """A torch_npu trace_view.json: host ProfilerStep#1 at 0..1000 us and #2 at 2000..3000 us (cpu_op), and the
    given (name, start us, dur us) ops on one Ascend Hardware stream (no launch records, as torch_npu writes)."""
    events = [*ts.npu_metadata(1, "Python", {1: "Thread 1"}),
              *ts.npu_metadata(2, "Ascend Hardware", {5: "Stream 5"}),
              {"ph": "X", "cat": "cpu_op", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": f"{BASE}.000",
               "dur": 1000},
              {"ph": "X", "cat": "cpu_op", "name": "ProfilerStep#2", "pid": 1, "tid": 1,
               "ts": f"{int(BASE) + 2000}.000", "dur": 1000}]
    return events + [ts.npu_op(name, f"{int(BASE) + start}.000", dur, pid=2, tid=5) for name, start, dur in ops]


# ------------------------------------------------------------------------------------------ steps


def test_an_npu_op_that_starts_between_two_host_steps_is_the_earlier_steps_tail(tmp_path: Path) -> None:
    """MatMulV2 0..800, HcclAllReduce 800..1000 in step 1's host window; HcclAllToAll 1100..1300 starts after it
    closed and before step 2 began: the device runs behind the host, so it is step 1's work. Step 1 = 0..1300 us,
    raw communication (200 + 200) / 1300 = 30.77%; step 2 (MatMulV2 2000..2500) = 1000 us, no communication."""
    path = ts.write_trace(tmp_path / "trace_view.json", _npu_steps([
        ("MatMulV2", 0, 800), ("HcclAllReduce", 800, 200), ("HcclAllToAll", 1100, 200), ("MatMulV2", 2000, 500)]))
    first, second = load_trace_file(path).steps
    assert (first.start_us, first.end_us) == (0, 1300)
    assert [e.name for e in first.events] == ["MatMulV2", "HcclAllReduce", "HcclAllToAll"]
    assert second.duration_us == 1000
    s = summarize([load_trace_file(path)])
    assert s.communication_ratio_raw == pytest.approx(400 / 2300)  # time-weighted over both steps
    assert s.ranks[0].steps[0].communication_ratio_raw == pytest.approx(400 / 1300)


def test_device_work_outside_every_step_is_noted_not_dropped_silently(tmp_path: Path) -> None:
    """An op before the first step (at -500 us) and one after the last (3500 us) belong to no step: each
    rank's report says how many and how long (0.1 + 0.3 = 0.4 ms)."""
    path = ts.write_trace(tmp_path / "trace_view.json", _npu_steps([
        ("MatMulV2", 0, 800), ("MatMulV2", 2000, 800), ("HcclAllReduce", -500, 100), ("Cast", 3500, 300)]))
    rt = load_trace_file(path)
    assert sum(len(s.events) for s in rt.steps) == 2
    (note,) = left_out_notes([rt])
    assert "2 device events (0.400 ms) outside every step window" in note and "HcclAllReduce" in note


# ---------------------------------------------------------------------------------------- folders


def _npu_run(root: Path, rank: int, trace: list[dict]) -> Path:
    run = root / f"host_{rank}_ascend_pt"
    (run / "ASCEND_PROFILER_OUTPUT").mkdir(parents=True)
    (run / f"profiler_info_{rank}.json").write_text("{}")
    ts.write_trace(run / "ASCEND_PROFILER_OUTPUT" / "trace_view.json", trace)
    (run / "ASCEND_PROFILER_OUTPUT" / "communication.json").write_text("{}")
    return run


def test_a_torch_npu_rank_run_folder_is_read_through_its_trace_view_not_its_profiler_info(tmp_path: Path) -> None:
    run = _npu_run(tmp_path, 3, ts.npu_trace())
    assert trace_files(run) == [run / "ASCEND_PROFILER_OUTPUT" / "trace_view.json"]
    assert [t.rank for t in load_traces(run)] == [3]


def test_a_torch_npu_output_folder_is_its_trace_view_not_the_json_beside_it(tmp_path: Path) -> None:
    out = _npu_run(tmp_path, 0, ts.npu_trace()) / "ASCEND_PROFILER_OUTPUT"
    assert trace_files(out) == [out / "trace_view.json"]


def test_a_folder_of_kineto_rank_files_still_reads_every_json_in_it(tmp_path: Path) -> None:
    ts.write_trace(tmp_path / "worker_rank7.pt.trace.json", ts.comm_share_trace())
    ts.write_trace(tmp_path / "rank_2.json", ts.comm_share_trace())
    assert [p.name for p in trace_files(tmp_path)] == ["rank_2.json", "worker_rank7.pt.trace.json"]


# ------------------------------------------------------------------------------------- measured rows


def test_a_zero_moe_cell_on_a_moe_model_says_zero_stands_only_for_a_dense_models_column() -> None:
    row = {"tp": "4", "attention_dp": "1", "moe_tp": "0", "moe_ep": "4"}
    with pytest.raises(InputError, match="0 on a MoE model") as err:
        parallel_sizes(row, is_moe=True)
    assert err.value.field == "moe_tp"
    assert parallel_sizes(row, is_moe=False) == (4, 1, 4, 1)  # dense: 0 = not applicable


def _disagg_rows(tmp_path: Path) -> Path:
    """The disaggregated table's first complete row, and the same row with both worker counts blank."""
    src = FACTS / "calibration" / "measured_disagg_calibration.csv"
    if not src.is_file():
        pytest.skip(f"{src} not present")
    with src.open(newline="") as fh:
        reader = csv.DictReader(fh)
        first = next(reader)
        header = list(reader.fieldnames or [])
    blank = {**first, "prefill_workers": "", "decode_workers": ""}
    path = tmp_path / "rows.csv"
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=header)
        w.writeheader()
        w.writerows([first, blank])
    return path


def test_disaggregated_rows_read_with_one_worker_per_pool_are_counted_in_a_note(tmp_path: Path) -> None:
    rows = _disagg_rows(tmp_path)
    res = CliRunner().invoke(main, ["estimate", "--from-csv", str(rows), "--out", str(tmp_path / "p.csv")])
    assert res.exit_code == 0, res.output
    assert ("note: 1 of 2 evaluated rows leave prefill_workers / decode_workers blank: read as 1 worker per pool "
            "(first: line 3)") in res.output


# ---------------------------------------------------------------------------------------------- refit


def test_the_refit_file_names_its_csv_by_content_not_by_the_day(tmp_path: Path) -> None:
    csv_path = tmp_path / "rows.csv"
    csv_path.write_text("id\n1\n")
    factors = {"vllm": {"h200_sxm": {"gemm": 0.9, "seq_layer_s": 1e-7}}}
    text = fit_efficiency.render_yaml(factors, csv_path, 1)
    assert text == fit_efficiency.render_yaml(factors, csv_path, 1)
    assert f"from rows.csv (sha256 {fit_efficiency.csv_digest(csv_path)}...)" in text.splitlines()[1]
    assert " on 20" not in text.splitlines()[1]


def test_check_mode_passes_on_an_identical_file_and_fails_with_a_diff(tmp_path: Path, capsys) -> None:
    shipped = tmp_path / "factors.yaml"
    shipped.write_text("a: 1\n")
    assert fit_efficiency.check_shipped("a: 1\n", shipped) == 0
    assert fit_efficiency.check_shipped("a: 2\n", shipped) == 1
    assert "-a: 1\n+a: 2" in capsys.readouterr().out


def test_the_refit_without_its_csv_is_one_error_line_and_exit_2(tmp_path: Path, capsys) -> None:
    assert fit_efficiency.main(["--csv", str(tmp_path / "none.csv"), "--dry-run"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: --csv:") and "no such file" in err[0]


def test_a_framework_flag_that_replaces_the_rows_backend_says_whose(tmp_path: Path) -> None:
    """Two vLLM rows and one SGLang row under --framework sglang: the two vLLM rows change engine."""
    path = tmp_path / "rows.csv"
    row = "meta-llama/Llama-3.1-70B,h200_sxm,bf16,1024,128,16,4"
    path.write_text("backend,model,system,precision,isl,osl,concurrency,tp\n"
                    f"vllm,{row}\nvllm,{row}\nsglang,{row}\n")
    res = CliRunner().invoke(main, ["estimate", "--from-csv", str(path), "--out", str(tmp_path / "p.csv"),
                                    "--framework", "sglang"])
    assert res.exit_code == 0, res.output
    assert "note: --framework sglang replaces the backend column of 2 rows (vllm)" in res.output
