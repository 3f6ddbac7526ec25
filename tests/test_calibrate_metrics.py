"""Calibration figures over synthetic traces with hand-computed answers, and sanity on the real trace."""
from __future__ import annotations

import pytest

import traces_synth as ts
from solver.calibrate.classify import ATTENTION, COMMUNICATION, GEMM_MOE, OTHER
from solver.calibrate.metrics import (
    check_step_counts,
    length,
    overlap,
    peak_memory,
    rank_metrics,
    rank_variance,
    step_metrics,
    summarize,
    top_kernels,
    union,
)
from solver.calibrate.trace import DeviceEvent, RankTrace, Step, load_trace_file, load_traces
from solver.errors import InputError

from conftest import REAL_TRACE  # noqa: E402  (../shared/facts beside the checkout)


def _step(*events: tuple[str, str, float, float, str], start: float = 0, end: float = 10_000) -> Step:
    return Step(0, start, end, tuple(DeviceEvent(*e) for e in events))


# ------------------------------------------------------------------------------------ interval math


def test_interval_union_is_exact():
    merged = union([(5, 7), (0, 2), (1, 3), (3, 4), (10, 10), (6, 6.5), (8, 9)])
    assert merged == [(0, 4), (5, 7), (8, 9)]  # abutting joins, nested absorbed, empty dropped
    assert length(merged) == 7
    assert overlap(merged, union([(3.5, 5.5), (6, 20)])) == 0.5 + 0.5 + 1 + 1


# ------------------------------------------------------------------------------ communication share


def test_known_communication_share_is_20_percent(tmp_path):
    rt = load_trace_file(ts.write_trace(tmp_path / "t.json", ts.comm_share_trace()))
    m = step_metrics(rt.steps[0])
    assert m.step_time_us == 10_000
    assert (m.comm_raw_us, m.comm_exposed_us) == (2_000, 2_000)
    assert (m.communication_ratio, m.communication_ratio_raw) == (0.2, 0.2)


def test_overlapped_comm_on_second_stream_counts_in_raw_not_exposed():
    m = step_metrics(_step(
        (ts.GEMM, GEMM_MOE, 0, 10_000, "0:7"),
        (ts.NCCL_ALLREDUCE, COMMUNICATION, 2_000, 3_000, "0:20"),
    ))
    assert (m.comm_raw_us, m.comm_exposed_us) == (3_000, 0)
    assert (m.communication_ratio_raw, m.communication_ratio) == (0.3, 0.0)


def test_partly_overlapped_comm_exposes_only_the_uncovered_part():
    m = step_metrics(_step(
        (ts.GEMM, GEMM_MOE, 0, 6_000, "0:7"),
        (ts.FLASH, ATTENTION, 7_000, 1_000, "0:7"),
        (ts.DEEPEP_DISPATCH, COMMUNICATION, 5_000, 4_000, "0:20"),  # 5-9 ms; covered 5-6 and 7-8
    ))
    assert (m.comm_raw_us, m.comm_exposed_us) == (4_000, 2_000)


def test_concurrent_collectives_sum_in_raw_once_in_exposed():
    m = step_metrics(_step(
        (ts.DEEPEP_DISPATCH, COMMUNICATION, 0, 2_000, "0:20"),
        (ts.NCCL_ALLREDUCE, COMMUNICATION, 1_000, 2_000, "0:21"),
    ))
    assert (m.comm_raw_us, m.comm_union_us, m.comm_exposed_us) == (4_000, 3_000, 3_000)


def test_compute_by_class_is_a_union_per_class():
    m = step_metrics(_step(
        (ts.GEMM, GEMM_MOE, 0, 4_000, "0:7"),
        (ts.GEMM, GEMM_MOE, 3_000, 2_000, "0:8"),  # overlaps the first: union 5 ms, not 6
        (ts.FLASH, ATTENTION, 6_000, 1_000, "0:7"),
        ("Memset (Device)", OTHER, 7_000, 500, "0:7"),
    ))
    assert m.compute_us == {ATTENTION: 1_000, GEMM_MOE: 5_000, OTHER: 500}
    assert m.busy_us == 6_500


def test_events_are_clipped_to_the_step_window():
    m = step_metrics(_step(
        (ts.NCCL_ALLREDUCE, COMMUNICATION, 9_000, 3_000, "0:20"),  # 1 ms falls past the step end
        (ts.GEMM, GEMM_MOE, -500, 1_000, "0:7"),
    ))
    assert (m.comm_raw_us, m.compute_us[GEMM_MOE]) == (1_000, 500)


def test_ratios_time_weighted_over_steps(tmp_path):
    trace = ts.steps_trace([1_000, 3_000], comm_fraction=0.25)
    rm = rank_metrics(load_trace_file(ts.write_trace(tmp_path / "t.json", trace)))
    assert [s.step_time_us for s in rm.steps] == [1_000, 3_000]
    assert rm.mean_step_time_us == 2_000
    assert rm.communication_ratio == rm.communication_ratio_raw == 0.25


# ----------------------------------------------------------------------------------- across ranks


def test_rank_variance_across_8_ranks_by_hand(tmp_path):
    # per-rank step times (ms): mean 100, max 104, min 96 -> (104 - 96) / 100 = 8%
    times = [100_000, 102_000, 98_000, 101_000, 99_000, 100_000, 104_000, 96_000]
    summary = summarize(load_traces(ts.rank_folder(tmp_path, [[t] for t in times])))
    assert len(summary.ranks) == 8 and summary.steps_per_rank == 1
    assert summary.mean_step_time_us == 100_000
    assert summary.rank_variance == pytest.approx(0.08, abs=1e-12)
    assert summary.communication_ratio == pytest.approx(0.1, abs=1e-12)


def test_rank_variance_uses_each_rank_mean_over_steps(tmp_path):
    # rank 0 steps 90 and 110 (mean 100), rank 1 steps 120 and 120 -> (120 - 100) / 110
    summary = summarize(load_traces(ts.rank_folder(tmp_path, [[90, 110], [120, 120]])))
    assert summary.rank_variance == pytest.approx(20 / 110, abs=1e-12)


def test_rank_variance_single_rank_is_zero():
    assert rank_variance([123.0]) == 0.0


def test_different_step_counts_is_input_error(tmp_path):
    traces = load_traces(ts.rank_folder(tmp_path, [[100, 100, 100], [100, 100], [100, 100, 100]]))
    with pytest.raises(InputError) as err:
        summarize(traces)
    assert err.value.field == "traces"
    assert str(err.value).startswith("traces: rank 1 has 2 steps but rank 0 has 3;")
    with pytest.raises(InputError, match="no traces"):
        check_step_counts([])


def test_peak_memory_per_rank_and_max_over_ranks():
    a = RankTrace(0, [_step()], peak_memory_bytes=5 << 30, peak_reserved_bytes=6 << 30)
    b = RankTrace(1, [_step()], peak_memory_bytes=7 << 30, peak_reserved_bytes=7 << 30)
    c = RankTrace(2, [_step()], peak_memory_bytes=None)
    assert (peak_memory(a), peak_memory(a, reserved=True), peak_memory(c)) == (5 << 30, 6 << 30, None)
    s = summarize([a, b, c])
    assert (s.peak_memory_bytes, s.peak_reserved_bytes) == (7 << 30, 7 << 30)
    assert summarize([c]).peak_memory_bytes is None


def test_top_kernels_sums_by_name():
    rt = RankTrace(0, [_step(
        (ts.GEMM, GEMM_MOE, 0, 100, "0:7"), (ts.GEMM, GEMM_MOE, 200, 100, "0:7"),
        (ts.NCCL_ALLREDUCE, COMMUNICATION, 0, 150, "0:20"),
    )], peak_memory_bytes=None)
    top = top_kernels([rt], limit=1)
    assert [(k.name, k.kind, k.count, k.total_us) for k in top] == [(ts.GEMM, GEMM_MOE, 2, 200)]


# ------------------------------------------------------------------------------------- real trace


def test_real_trace_ratios_bounded_and_exposed_below_raw():
    if not REAL_TRACE.is_file():
        pytest.skip(f"{REAL_TRACE} absent")
    summary = summarize(load_traces(REAL_TRACE))
    assert summary.steps_per_rank >= 1 and summary.mean_step_time_us > 0
    for step in summary.ranks[0].steps:
        assert 0 <= step.communication_ratio <= step.communication_ratio_raw <= 1
        assert step.comm_exposed_us <= step.comm_union_us <= step.comm_raw_us
        assert step.busy_us <= step.step_time_us
    assert 0 <= summary.communication_ratio <= summary.communication_ratio_raw <= 1
    assert summary.rank_variance == 0.0  # one rank
