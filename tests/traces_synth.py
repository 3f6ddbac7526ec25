"""Synthetic Chrome traces with hand-known figures, shaped like PyTorch-profiler (Kineto) and torch_npu output.

Times are microseconds. Builders return plain dicts/lists; `write_trace` puts them on disk (optionally
gzipped) and `rank_folder` writes one file per rank.
"""
from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any, Sequence

HOST_PID = 100
GPU_PID = 0
COMPUTE_STREAM = 7
COMM_STREAM = 20
EPOCH = 1_740_000_000_000_000  # a realistic absolute timestamp, so tests cover rebasing

NCCL_ALLREDUCE = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
GEMM = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_cublas"
FLASH = "void flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false>>(Flash_fwd_params)"
ELEMENTWISE = "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>(int)"
DEEPEP_DISPATCH = "void dpsk::ep::internode::dispatch<false, 8, true, 8>(int4*, float*, long*)"
DEEPEP_COMBINE = "void dpsk::ep::internode::combine<false, 8, __nv_bfloat16, 8, 2, 16, 24>(int4*, float*)"


def kernel(name: str, ts: float, dur: float, *, stream: int = COMPUTE_STREAM, pid: int = GPU_PID,
           cat: str = "kernel", correlation: int | None = None) -> dict[str, Any]:
    args: dict[str, Any] = {"device": pid, "stream": stream}
    if correlation is not None:
        args["correlation"] = correlation
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": stream, "ts": EPOCH + ts, "dur": dur,
            "args": args}


def launch(ts: float, correlation: int) -> dict[str, Any]:
    return {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": HOST_PID, "tid": HOST_PID,
            "ts": EPOCH + ts, "dur": 4, "args": {"correlation": correlation}}


def annotation(name: str, ts: float, dur: float, *, gpu: bool = False) -> dict[str, Any]:
    if gpu:
        return {"ph": "X", "cat": "gpu_user_annotation", "name": name, "pid": GPU_PID, "tid": COMPUTE_STREAM,
                "ts": EPOCH + ts, "dur": dur}
    return {"ph": "X", "cat": "user_annotation", "name": name, "pid": HOST_PID, "tid": HOST_PID,
            "ts": EPOCH + ts, "dur": dur}


def memory(ts: float, allocated: int, reserved: int, *, device_type: int = 1) -> dict[str, Any]:
    return {"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": HOST_PID,
            "tid": HOST_PID, "ts": EPOCH + ts,
            "args": {"Total Reserved": reserved, "Total Allocated": allocated, "Bytes": 1024,
                     "Device Type": device_type, "Device Id": 0 if device_type else -1}}


def chrome_trace(events: Sequence[dict[str, Any]], *, rank: int | None = None,
                 world_size: int | None = None) -> dict[str, Any]:
    trace: dict[str, Any] = {"schemaVersion": 1, "traceEvents": list(events)}
    if rank is not None:
        trace["distributedInfo"] = {"backend": "nccl", "rank": rank, "world_size": world_size or rank + 1}
    return trace


def write_trace(path: Path, trace: Any, *, gz: bool = False) -> Path:
    data = json.dumps(trace).encode()
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


def comm_share_trace(*, rank: int | None = None) -> dict[str, Any]:
    """One 10 ms step (GPU-side ProfilerStep#1): 8 ms GEMM, then 2 ms NCCL nothing overlaps -> 20%."""
    return chrome_trace([
        annotation("ProfilerStep#1", 0, 10_000, gpu=True),
        kernel(GEMM, 0, 8_000),
        kernel(NCCL_ALLREDUCE, 8_000, 2_000),
    ], rank=rank)


def steps_trace(step_times_us: Sequence[float], *, rank: int | None = None, world_size: int | None = None,
                comm_fraction: float = 0.1) -> dict[str, Any]:
    """Back-to-back GPU-annotated steps of the given lengths; each is compute then an exposed collective."""
    events: list[dict[str, Any]] = []
    t = 0.0
    for i, step in enumerate(step_times_us):
        comm = step * comm_fraction
        events += [annotation(f"ProfilerStep#{i}", t, step, gpu=True),
                   kernel(GEMM, t, step - comm),
                   kernel(NCCL_ALLREDUCE, t + step - comm, comm, stream=COMM_STREAM)]
        t += step
    return chrome_trace(events, rank=rank, world_size=world_size)


def rank_folder(folder: Path, per_rank_step_times: Sequence[Sequence[float]], *, gz: bool = False) -> Path:
    """One rank_N.pt.trace.json[.gz] per rank, each with distributedInfo."""
    folder.mkdir(parents=True, exist_ok=True)
    world = len(per_rank_step_times)
    for rank, times in enumerate(per_rank_step_times):
        suffix = ".pt.trace.json.gz" if gz else ".pt.trace.json"
        write_trace(folder / f"rank_{rank}{suffix}", steps_trace(times, rank=rank, world_size=world), gz=gz)
    return folder


# ---------------------------------------------------------------------------------------- torch_npu


def npu_metadata(pid: int, process: str, threads: dict[int, str] | None = None) -> list[dict[str, Any]]:
    events = [{"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": process}}]
    for tid, name in (threads or {}).items():
        events.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": name}})
    return events


def npu_op(name: str, ts: str, dur: float, *, pid: int, tid: int) -> dict[str, Any]:
    """torch_npu writes ts as a decimal string (ns precision) and no cat for device ops."""
    return {"ph": "X", "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": {"Task Type": "AI_CORE"}}


def npu_trace() -> list[dict[str, Any]]:
    """A torch_npu trace_view.json-like list: one ProfilerStep#1 (host cpu_op) of 1000.5 us.

    Device work: MatMulV2 100 us and FusedInferAttentionScore 200.25 us on the compute stream; an
    hcom_allReduce of 300 us in the Communication process, also listed under Ascend Hardware (same name,
    start and duration: kept once); its Notify_Wait on a "Plane" row and the Overlap Analysis rows are
    not device ops.
    """
    base = "1700000000000000"
    return [
        *npu_metadata(1, "Python", {1: "Thread 1"}),
        *npu_metadata(2, "Ascend Hardware", {5: "Stream 5", 8: "Stream 8"}),
        *npu_metadata(3, "Communication", {0: "Group hccl_world_group Communication", 1: "Plane 0"}),
        *npu_metadata(4, "Overlap Analysis", {0: "Computing", 1: "Communication"}),
        {"ph": "X", "cat": "cpu_op", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": f"{base}.000",
         "dur": 1000.5},
        npu_op("MatMulV2", f"{base}.125", 100, pid=2, tid=5),
        npu_op("FusedInferAttentionScore", f"{base[:-3]}100.375", 200.25, pid=2, tid=5),
        npu_op("hcom_allReduce__511_0_1", f"{base[:-3]}400.500", 300, pid=2, tid=8),
        npu_op("hcom_allReduce__511_0_1", f"{base[:-3]}400.500", 300, pid=3, tid=0),
        npu_op("Notify_Wait", f"{base[:-3]}400.500", 290, pid=3, tid=1),
        npu_op("Computing", f"{base}.125", 300, pid=4, tid=0),
        npu_op("Communication", f"{base[:-3]}400.500", 300, pid=4, tid=1),
    ]
