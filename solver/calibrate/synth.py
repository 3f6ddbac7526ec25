"""The kernel timeline an estimate predicts for one step: what a profiler would record if the estimate held.

Used to build synthetic traces with known answers (tests, docs/examples): each op of a `StepCost` becomes one
kernel of its `time_s` on the compute stream, named so that `classify` puts it in the class `compare.py`
maps the op to; each collective becomes one kernel of its `time_s` on a communication stream, placed so
that only its `exposed_s` sticks out past the compute before it. The step is compute + exposed
communication + the step overhead (idle at the end).
"""
from __future__ import annotations

from dataclasses import dataclass

from solver.calibrate.classify import ATTENTION, COMMUNICATION, GEMM_MOE, OTHER, classify
from solver.calibrate.compare import op_class
from solver.estimate.step import StepCost

COMPUTE_STREAM = "compute"
COMM_STREAM = "comm"

_OP_KERNELS = {
    ATTENTION: "void flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false>>(Flash_fwd_params)",
    GEMM_MOE: "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_cublas",
    OTHER: "void at::native::indexSelectLargeIndex<c10::BFloat16, long, unsigned int, 2, 2, -2, true>",
}
_MOE_KERNEL = "void cutlass::device_kernel<grouped_gemm::moe_expert_GemmKernel>(Params)"
_COMM_KERNELS = {
    "all_reduce": "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
    "all_gather": "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
    "reduce_scatter": "ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
    "all_to_all": "void deep_ep::intranode::dispatch<8, 768, 8192>(int4*, float*, int*, long*)",
    "ep_all_to_all": "void deep_ep::intranode::dispatch<8, 768, 8192>(int4*, float*, int*, long*)",
}
_COMBINE_KERNEL = "void deep_ep::intranode::combine<__nv_bfloat16, 8, 768, 4096>(int4*, float*, int4*, int*)"


@dataclass(frozen=True)
class SynthKernel:
    name: str
    kind: str
    start_us: float
    dur_us: float
    stream: str
    op: str  # the estimate's op or collective name


def kernel_name(op_name: str, module: str) -> str:
    if module in ("routed_experts", "shared_experts") and op_class(op_name) == GEMM_MOE:
        return _MOE_KERNEL
    return _OP_KERNELS[op_class(op_name)]


def step_timeline(step: StepCost, scale: float = 1.0) -> tuple[list[SynthKernel], float]:
    """(kernels, step length) in microseconds, every duration multiplied by `scale` (a slower rank)."""
    us = 1e6 * scale
    kernels: list[SynthKernel] = []
    t = 0.0
    for op in step.ops:
        if op.time_s <= 0:
            continue
        name = kernel_name(op.name, op.module)
        kernels.append(SynthKernel(name, classify(name), t, op.time_s * us, COMPUTE_STREAM, op.name))
        t += op.time_s * us
    comm_free = 0.0  # the comm stream runs one collective at a time
    for c in step.comms:
        if c.time_s <= 0:
            continue
        name = _COMBINE_KERNEL if c.name.endswith("combine") else _COMM_KERNELS.get(c.primitive,
                                                                                   _COMM_KERNELS["all_reduce"])
        hidden = (c.time_s - c.exposed_s) * us
        start = max(comm_free, t - hidden)
        kernels.append(SynthKernel(name, COMMUNICATION, start, c.time_s * us, COMM_STREAM, c.name))
        comm_free = start + c.time_s * us
        t = max(t, comm_free)
    return kernels, t + step.overhead_s * us


__all__ = ["SynthKernel", "step_timeline", "kernel_name", "COMPUTE_STREAM", "COMM_STREAM"]
