"""The share of a rank's memory an engine's command gives it, from the memory model's plan: the whole limit
(vLLM's --gpu-memory-utilization, memory_fraction), what weights and caches may hold of it (SGLang's
--mem-fraction-static, static_fraction) or what the caches may take of the memory left free once the weights,
activations, buffers and runtime are in (TensorRT-LLM's kv_cache_config.free_gpu_memory_fraction, free_fraction),
rounded at SHARE_DECIMALS; or the KV pool's bytes themselves (vLLM's --kv-cache-memory-bytes, kv_pool_bytes)."""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from solver.estimate.memory import MemoryReport
    from solver.specs.hardware import Hardware


# the share's decimals: the engines take any fraction (vLLM's --gpu-memory-utilization is a float), and a plan
# may fill its rank to the limit, so the share rounds down by at most 1e-4 of the rank (5 MB on 48 GB), below
# the tables' 0.01 GB; a hundredth would cut up to 1% (0.48 GB on 48 GB: a 1-card plan's whole KV margin)
SHARE_DECIMALS = 4


def memory_fraction(hw: "Hardware") -> float:
    """The share of a rank's memory the deployment was planned to use: the memory model's limit,
    min(0.95 x capacity, capacity - runtime reserve), over the capacity, rounded down at SHARE_DECIMALS (at a
    lower default an engine holds less than the estimate fits: vLLM's is 0.9). vLLM sizes its KV pool as this
    share of the device's total less the weights, the profiled activations, non-torch memory and its CUDA-graph
    estimate (v1/worker/gpu_worker.py determine_available_memory): the graphs, part of the runtime reserve here,
    come out of the share, so its pool is smaller than the plan's by their size; a profile that gives the pool's
    bytes too (kv_pool_bytes) closes that gap."""
    from solver.estimate.memory_options import TOTAL_FRACTION, memory_limit

    return _floor_share(memory_limit(hw.memory_bytes, hw.reserved_bytes, TOTAL_FRACTION) / hw.memory_bytes)


def _floor_share(share: float) -> float:
    scale = 10 ** SHARE_DECIMALS
    return math.floor(round(share * scale, 6)) / scale


def static_fraction(mem: "MemoryReport") -> float:
    """The share of a rank's memory the weights and caches may hold in the planned configuration: the memory
    model's limit less the activations and comm buffers at the planned concurrency, over the capacity, rounded
    down as memory_fraction (an engine whose share covers weights + KV pool alone, SGLang's
    --mem-fraction-static, then leaves the rest, capacity x (1 - share) >= reserve + activations + comm, to
    what runs outside it). Never below the weights + caches the plan holds (rounded up: a plan filled to within
    1e-4 of the limit keeps them); a plan whose weights + caches + activations exceed the limit has no share
    (static_fraction_refusal)."""
    scale = 10 ** SHARE_DECIMALS
    held = math.ceil(round((mem.weights_total + mem.cache_total) / mem.capacity_bytes * scale, 6)) / scale
    return max(held, _floor_share((mem.limit_bytes - mem.activation_bytes - mem.comm_buffer_bytes)
                                  / mem.capacity_bytes))


def kv_pool_bytes(mem: "MemoryReport") -> int:
    """The bytes of KV pool per rank the plan leaves its caches: the memory model's limit less the weights, the
    activations and comm buffers at the planned concurrency, in whole bytes (rounded down), never below the caches
    the plan holds (rounded up). The same pool static_fraction gives SGLang (its share less the weights), and for a
    plan filled to its limit the caches the plan holds. An engine told the pool's bytes (vLLM's
    --kv-cache-memory-bytes) takes them as they are: no profiled activations, non-torch memory or graph estimate
    come out of them, so the pool holds the requests the plan fits (the graphs stay in the runtime reserve beside
    it, as the memory model has them). 0 where the plan does not fit (static_fraction_refusal): no pool holds it,
    and the launch leaves the engine to size one from its share, holding fewer requests than planned."""
    if not mem.feasible:
        return 0
    held = math.ceil(mem.cache_total)
    return max(held, math.floor(mem.limit_bytes - mem.weights_total - mem.activation_bytes - mem.comm_buffer_bytes))


def free_fraction(mem: "MemoryReport") -> float:
    """The share of the memory still free after the weights, the activations, the comm buffers and the runtime
    reserve (capacity - reserve - weights - activations - buffers) that the caches may take: the memory model's
    limit less the rest, over that free memory, rounded down as memory_fraction, never below the caches the plan
    holds (rounded up), at most 1. An engine that sizes its KV pool as a share of what is free once the model is
    loaded and profiled then ends at the limit plus the reserve, never past the capacity (the limit is at most
    capacity - reserve); its default share (0.9 for TensorRT-LLM) would hold less than the plan fits where the
    weights are light, and eat the reserve where they are heavy."""
    scale = 10 ** SHARE_DECIMALS
    rest = mem.weights_total + mem.activation_bytes + mem.comm_buffer_bytes
    free = max(1.0, mem.capacity_bytes - mem.reserved_bytes - rest)  # a feasible plan leaves it >= its caches
    held = math.ceil(round(mem.cache_total / free * scale, 6)) / scale
    return min(1.0, max(held, _floor_share((mem.limit_bytes - rest) / free)))


def static_fraction_refusal(mem: "MemoryReport") -> str | None:
    """Why no share holds the plan: its weights + caches, activations and comm buffers over the memory model's
    limit (a share holding the weights + caches would leave the activations and the runtime reserve no room).
    None where they fit."""
    if mem.feasible:
        return None
    held = (mem.weights_total + mem.cache_total) / 1e9
    rest = (mem.activation_bytes + mem.comm_buffer_bytes) / 1e9
    return (f"weights + KV {held:.2f} GB and activations {rest:.2f} GB per rank exceed the limit of "
            f"{mem.limit_bytes / 1e9:.2f} GB = {mem.limit_formula()}: no memory share holds this plan (more ranks "
            "or a lower batch)")
