"""Reading profiler traces: formats, ranks, steps, device-event rules, classification, bad input."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

import traces_synth as ts
from solver.calibrate.classify import ATTENTION, COMMUNICATION, GEMM_MOE, OTHER, classify
from solver.calibrate.metrics import summarize
from solver.calibrate.trace import left_out_notes, load_trace_file, load_traces, trace_files
from solver.errors import InputError

from conftest import REAL_TRACE  # noqa: E402  (../shared/facts beside the checkout)


def _names(step) -> list[str]:
    return [e.name for e in step.events]


# ------------------------------------------------------------------------------------------ formats


def test_gzip_read_by_magic_bytes(tmp_path):
    plain = ts.write_trace(tmp_path / "plain.json", ts.comm_share_trace())
    # gzip content behind a plain-looking name: detection must not rely on the suffix
    packed = ts.write_trace(tmp_path / "packed.json", ts.comm_share_trace(), gz=True)
    a, b = load_trace_file(plain), load_trace_file(packed)
    assert a.steps == b.steps
    assert _names(b.steps[0]) == [ts.GEMM, ts.NCCL_ALLREDUCE]


def test_list_of_events_is_a_trace(tmp_path):
    path = ts.write_trace(tmp_path / "t.json", ts.comm_share_trace()["traceEvents"])
    assert len(load_trace_file(path).steps[0].events) == 2


def test_folder_of_rank_files_read_in_rank_order(tmp_path):
    folder = ts.rank_folder(tmp_path / "prof", [[1000.0]] * 12, gz=True)
    traces = load_traces(folder)
    assert [t.rank for t in traces] == list(range(12))  # rank_10 after rank_9, not after rank_1
    assert all(t.world_size == 12 for t in traces)
    assert trace_files(folder)[2].name == "rank_2.pt.trace.json.gz"


def test_rank_from_distributed_info_beats_file_name(tmp_path):
    path = ts.write_trace(tmp_path / "rank_5.json", ts.comm_share_trace(rank=3))
    assert load_trace_file(path).rank == 3


def test_rank_from_file_name(tmp_path):
    ts.write_trace(tmp_path / "worker_rank7.pt.trace.json", ts.comm_share_trace())
    ts.write_trace(tmp_path / "rank_2.json.gz", ts.comm_share_trace(), gz=True)
    assert [t.rank for t in load_traces(tmp_path)] == [2, 7]


def test_rank_from_file_order(tmp_path):
    for name in ("b.json", "a.json", "c.json"):
        ts.write_trace(tmp_path / name, ts.comm_share_trace())
    traces = load_traces(tmp_path)
    assert [(t.rank, Path(t.source).name) for t in traces] == [(0, "a.json"), (1, "b.json"), (2, "c.json")]


def test_nested_pt_trace_files_found_when_folder_has_no_json(tmp_path):
    for r in (0, 1):
        (tmp_path / f"node{r}").mkdir()
        ts.write_trace(tmp_path / f"node{r}" / f"host_{r}.pt.trace.json", ts.comm_share_trace(rank=r))
    assert [t.rank for t in load_traces(tmp_path)] == [0, 1]


def test_duplicate_rank_is_input_error(tmp_path):
    ts.write_trace(tmp_path / "a.json", ts.comm_share_trace(rank=1))
    ts.write_trace(tmp_path / "b.json", ts.comm_share_trace(rank=1))
    with pytest.raises(InputError, match="both hold rank 1"):
        load_traces(tmp_path)


# -------------------------------------------------------------------------------------------- steps


def test_step_detection_from_profiler_step_host_annotations(tmp_path):
    trace = ts.chrome_trace([
        ts.annotation("ProfilerStep#3", 0, 1000),
        ts.annotation("ProfilerStep#4", 1000, 1000),
        ts.launch(100, correlation=1), ts.kernel(ts.GEMM, 200, 1500, correlation=1),  # runs past the host end
        ts.launch(1200, correlation=2), ts.kernel(ts.FLASH, 1800, 500, correlation=2),
        ts.kernel(ts.ELEMENTWISE, 1900, 10),  # no launch record: placed by its own start
        ts.kernel(ts.ELEMENTWISE, 5000, 10),  # outside every step: dropped
    ])
    rt = load_trace_file(ts.write_trace(tmp_path / "t.json", trace))
    assert rt.step_source == "host_annotation"
    assert [s.index for s in rt.steps] == [3, 4]
    first, second = rt.steps
    assert _names(first) == [ts.GEMM]
    assert (first.start_us, first.end_us) == (0, 1700)  # widened to the end of the kernel it launched
    assert _names(second) == [ts.FLASH, ts.ELEMENTWISE]
    assert (second.start_us, second.end_us) == (1000, 2300)


def test_gpu_step_annotation_preferred_over_host(tmp_path):
    trace = ts.chrome_trace([
        ts.annotation("ProfilerStep#1", 0, 500),
        ts.annotation("ProfilerStep#1", 100, 900, gpu=True),
        ts.kernel(ts.GEMM, 100, 900),
    ])
    rt = load_trace_file(ts.write_trace(tmp_path / "t.json", trace))
    assert rt.step_source == "gpu_annotation"
    assert (rt.steps[0].index, rt.steps[0].start_us, rt.steps[0].end_us) == (1, 0, 900)  # origin = step start


def test_step_marker_names_the_steps(tmp_path):
    trace = ts.chrome_trace([
        ts.annotation("ProfilerStep#1", 0, 3000),
        ts.annotation("train_step", 0, 1000), ts.annotation("train_step", 1000, 1000),
        ts.kernel(ts.GEMM, 10, 100), ts.kernel(ts.GEMM, 1010, 100),
    ])
    path = ts.write_trace(tmp_path / "t.json", trace)
    rt = load_trace_file(path, step_marker="train_step")
    assert [(s.index, len(s.events)) for s in rt.steps] == [(0, 1), (1, 1)]
    with pytest.raises(InputError) as err:
        load_trace_file(path, step_marker="decode_iter")
    assert err.value.field == "step_marker" and "t.json" in str(err.value)


def test_whole_trace_is_one_step_without_annotations(tmp_path):
    trace = ts.chrome_trace([ts.kernel(ts.GEMM, 500, 100), ts.kernel(ts.NCCL_ALLREDUCE, 700, 300, stream=20)])
    rt = load_trace_file(ts.write_trace(tmp_path / "t.json", trace))
    assert rt.step_source == "whole_trace"
    assert [(s.start_us, s.end_us, len(s.events)) for s in rt.steps] == [(0, 500, 2)]


def test_memory_peak_from_device_memory_events(tmp_path):
    trace = ts.chrome_trace([
        ts.kernel(ts.GEMM, 0, 10),
        ts.memory(1, 5 << 30, 6 << 30), ts.memory(2, 7 << 30, 8 << 30), ts.memory(3, 6 << 30, 8 << 30),
        ts.memory(4, 99 << 30, 99 << 30, device_type=0),  # host memory: ignored
    ])
    rt = load_trace_file(ts.write_trace(tmp_path / "t.json", trace))
    assert (rt.peak_memory_bytes, rt.peak_reserved_bytes) == (7 << 30, 8 << 30)


def test_no_memory_events_gives_none(tmp_path):
    assert load_trace_file(ts.write_trace(tmp_path / "t.json", ts.comm_share_trace())).peak_memory_bytes is None


# ----------------------------------------------------------------------------------- device rules


def test_cuda_device_events_are_kernel_memcpy_memset_only(tmp_path):
    trace = ts.chrome_trace([
        ts.kernel(ts.GEMM, 0, 10),
        ts.kernel("Memcpy DtoD (Device -> Device)", 10, 5, cat="gpu_memcpy"),
        ts.kernel("Memset (Device)", 15, 5, cat="gpu_memset"),
        ts.kernel("aten::mm", 0, 30, pid=ts.HOST_PID, cat="cpu_op"),
        ts.launch(0, correlation=9),
    ])
    rt = load_trace_file(ts.write_trace(tmp_path / "t.json", trace))
    assert _names(rt.steps[0]) == [ts.GEMM, "Memcpy DtoD (Device -> Device)", "Memset (Device)"]
    assert {e.stream for e in rt.steps[0].events} == {"0:7"}


def test_npu_process_rule_and_string_timestamps(tmp_path):
    rt = load_trace_file(ts.write_trace(tmp_path / "trace_view.json", ts.npu_trace()))
    (step,) = rt.steps
    assert (step.index, step.start_us, step.end_us) == (1, 0, 1000.5)
    got = [(e.name, e.kind, e.start_us, e.dur_us) for e in step.events]
    assert got == [
        ("MatMulV2", GEMM_MOE, 0.125, 100),
        ("FusedInferAttentionScore", ATTENTION, 100.375, 200.25),
        ("hcom_allReduce__511_0_1", COMMUNICATION, 400.5, 300),  # once, though two processes list it
    ]


def test_npu_rank_from_profiler_info(tmp_path):
    run = tmp_path / "prof" / "host_123_20250101_ascend_pt"
    (run / "ASCEND_PROFILER_OUTPUT").mkdir(parents=True)
    (run / "profiler_info_5.json").write_text("{}")
    ts.write_trace(run / "ASCEND_PROFILER_OUTPUT" / "trace_view.json", ts.npu_trace())
    assert [t.rank for t in load_traces(tmp_path / "prof")] == [5]


# --------------------------------------------------------------------------------- classification


@pytest.mark.parametrize("name", [
    "HcclAllReduce", "HcclAllToAll", "HcclAllGather", "HcclReduceScatter", "hcom_allReduce__511_0_1",
    "hcom_alltoallv__1_2_3", ts.NCCL_ALLREDUCE, "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t",
    "ncclDevKernel_AllGather_RING_LL", ts.DEEPEP_DISPATCH, ts.DEEPEP_COMBINE,
    "void dpsk::ep::internode::notify_dispatch<false, 8>(int const*, long*)",
    "void dpsk::ep::internode::cached_notify<false>(int, int)",
    "void deep_ep::intranode::dispatch<8, 768, 6144>(int4*, float*)",
    "void deep_ep::internode_ll::combine<false, 7168>(void*, void*)",
    "c10d::allreduce_", "vllm::cross_device_reduce_1stage<__nv_bfloat16, 8>", "all_to_all_single",
    "reduce_scatter_tensor", "nvshmemi_proxy_kernel", "send", "recv",
])
def test_classification_communication(name):
    assert classify(name) == COMMUNICATION


@pytest.mark.parametrize("name", [
    ts.FLASH, "void cutlass::device_kernel<flash::FlashAttnBwd<flash::CollectiveMainloopBwd<2>>>()",
    "fmha_cutlassF_bf16_aligned_64x64_rf_sm80", "void flash_mla::flash_fwd_splitkv_mla_kernel<>()",
    "FlashMLA", "IncreFlashAttention", "FusedInferAttentionScore", "PagedAttention",
    "paged_attention_v2_kernel", "PromptFlashAttention", "sdpa_forward", "MlaProlog",
])
def test_classification_attention(name):
    assert classify(name) == ATTENTION


@pytest.mark.parametrize("name", [
    ts.GEMM, "void cutlass::device_kernel<dpsk::grouped_gemm::cuda::fp8_ptp128c::GemmKernel>()",
    "deep_gemm::fp8_gemm_kernel<7168, 4096>", "MatMulV2", "GroupedMatmul", "QuantBatchMatmulV3",
    "cublasLt::splitKreduce_kernel", "ampere_bf16_s16816gemm_bf16_128x64", "fused_moe_kernel",
    "MoeGatingTopKSoftmax", "void cuda::clean_and_count_expert<512>(long const*)",
])
def test_classification_gemm_moe(name):
    assert classify(name) == GEMM_MOE


@pytest.mark.parametrize("name", [
    ts.ELEMENTWISE, "Memcpy DtoD (Device -> Device)", "Memset (Device)", "rotary_kernel",
    "void dpsk::ep::cuda::get_dispatch_layout<256, 32, 8>(long const*)",  # local counting, no traffic
    "void layer_norm::ln_fwd_kernel<>()", "RmsNorm", "Cast", "void at::native::reduce_kernel<512, 1>()",
])
def test_classification_other(name):
    assert classify(name) == OTHER


# -------------------------------------------------------------------------------------- bad input


def _one_line_input_error(exc_info, fragment: str) -> None:
    text = str(exc_info.value)
    assert exc_info.value.field == "traces"
    assert fragment in text and "\n" not in text


def test_not_json_is_input_error(tmp_path):
    path = tmp_path / "junk.json"
    path.write_text("{not json")
    with pytest.raises(InputError) as err:
        load_trace_file(path)
    _one_line_input_error(err, "junk.json: not JSON")


def test_binary_garbage_is_input_error(tmp_path):
    path = tmp_path / "bin.json"
    path.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(InputError) as err:
        load_trace_file(path)
    _one_line_input_error(err, "bin.json: not JSON")


def test_truncated_gzip_is_input_error(tmp_path):
    path = ts.write_trace(tmp_path / "cut.json.gz", ts.comm_share_trace(), gz=True)
    path.write_bytes(path.read_bytes()[:20])
    with pytest.raises(InputError) as err:
        load_trace_file(path)
    _one_line_input_error(err, "cut.json.gz: cannot read")


@pytest.mark.parametrize("payload", [{"schemaVersion": 1}, {"traceEvents": {}}, 42, "trace"])
def test_json_that_is_not_a_trace_is_input_error(tmp_path, payload):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(payload))
    with pytest.raises(InputError) as err:
        load_trace_file(path)
    _one_line_input_error(err, "config.json: JSON but not a Chrome trace")


def test_trace_without_device_events_is_input_error(tmp_path):
    trace = ts.chrome_trace([ts.annotation("ProfilerStep#1", 0, 100), ts.launch(5, 1)])
    with pytest.raises(InputError) as err:
        load_trace_file(ts.write_trace(tmp_path / "cpu_only.json", trace))
    _one_line_input_error(err, "cpu_only.json: no device events")


def test_missing_path_and_empty_folder_are_input_errors(tmp_path):
    with pytest.raises(InputError, match="no such file or folder"):
        load_traces(tmp_path / "nope")
    with pytest.raises(InputError, match="holds no trace files"):
        load_traces(tmp_path)


def test_bad_file_in_folder_is_named(tmp_path):
    ts.rank_folder(tmp_path, [[1000.0], [1000.0]])
    (tmp_path / "rank_2.json").write_text("[1, 2")
    with pytest.raises(InputError, match="rank_2.json: not JSON"):
        load_traces(tmp_path)


# ------------------------------------------------------------------------------------- real trace


@pytest.fixture(scope="module")
def real_trace():
    if not REAL_TRACE.is_file():
        pytest.skip(f"{REAL_TRACE} absent")
    (rt,) = load_traces(REAL_TRACE)
    return rt


def test_real_trace_loads_with_steps_and_deepep_kernels(real_trace):
    assert real_trace.rank == 0 and real_trace.world_size == 64
    assert len(real_trace.steps) >= 1
    events = [e for s in real_trace.steps for e in s.events]
    comm = {e.name for e in events if e.kind == COMMUNICATION}
    assert any("ep::internode::dispatch" in n for n in comm)
    assert any("ep::internode::combine" in n for n in comm)
    assert {e.kind for e in events} == {COMMUNICATION, ATTENTION, GEMM_MOE, OTHER}


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
