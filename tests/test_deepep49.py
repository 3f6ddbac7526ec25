"""Stop 49: the EP kernels' all-to-all buffers each rank allocates, counted in its memory (estimate/buffers.py)."""
from __future__ import annotations

import pytest

from solver.specs.framework import load_framework
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import load_model
from solver.estimate.buffers import a2a_buffer_bytes, low_latency_rdma_bytes
from solver.estimate.memory_options import framework_options
from solver.specs.parallel import ParallelConfig
from solver.specs.profile_serving import EpBuffers

# DeepSeek-V3.2: hidden 7168, 256 routed experts
HIDDEN, EXPERTS = 7168, 256
# the low-latency layout by hand at 128 tokens: dispatch message 7168 + 56 x 4 + 16 = 7,408 B, combine slot
# 16 + 2 x 7168 = 14,352 B; send = max(128 x 7,408, 256 x 128 x 14,352) = 470,286,336; receive the same (the
# combine slots outgrow the dispatch ones); counters 256 x 4 = 1,024; two layouts
LL_128 = 2 * (470_286_336 + 470_286_336 + 1_024)


def test_low_latency_buffer_is_deepeps_two_layouts_of_send_receive_and_counters():
    assert low_latency_rdma_bytes(128, HIDDEN, EXPERTS) == LL_128


def test_low_latency_buffer_grows_with_the_dispatch_tokens():
    assert low_latency_rdma_bytes(256, HIDDEN, EXPERTS) == 2 * (LL_128 - 2 * 1_024) + 2 * 1_024


def _ds_ep16(framework: str):
    model, hw = load_model("deepseek-v3.2"), load_hardware("h200_sxm")
    pc = ParallelConfig(world_size=16)
    return model, hw, pc, framework_options(load_framework(framework), hw=hw)


def test_sglang_deepep_on_16_h200_holds_the_low_latency_buffer_at_128_tokens():
    """64 sequences a rank: the launch leaves SGLANG_DEEPEP_NUM_MAX_DISPATCH_TOKENS_PER_RANK at its 128."""
    model, hw, pc, opts = _ds_ep16("sglang")
    assert a2a_buffer_bytes(model, hw, pc, opts, 64) == LL_128


def test_sglang_buffer_follows_the_launchs_raised_dispatch_tokens():
    model, hw, pc, opts = _ds_ep16("sglang")
    assert a2a_buffer_bytes(model, hw, pc, opts, 256) == low_latency_rdma_bytes(256, HIDDEN, EXPERTS)


def test_vllm_deepep_low_latency_sizes_its_buffer_by_the_commands_step_budget():
    """vLLM's deepep_low_latency: 1 GiB NVLink buffer + the low-latency buffer at --max-num-batched-tokens, which
    the command sets to the engine's own 256 there (EpKernels.token_budget; 64 requests an engine need no more):
    256 / 128 = 2 times the 128-token buffer's send and receive."""
    model, hw, pc, opts = _ds_ep16("vllm")
    want = 2**30 + 2 * (2 * 2 * 470_286_336 + 1_024)
    assert a2a_buffer_bytes(model, hw, pc, opts, 64) == want


def test_redundant_experts_widen_the_buffer():
    model, hw, _, opts = _ds_ep16("sglang")
    pc = ParallelConfig(world_size=16, redundant_experts=16)
    assert a2a_buffer_bytes(model, hw, pc, opts, 64) == low_latency_rdma_bytes(128, HIDDEN, EXPERTS + 16)


def test_no_buffer_where_the_command_keeps_the_default_exchange():
    """EP inside one node (8 H200): the profiles' condition keeps the all-gather, no DeepEP buffer."""
    model, hw, _, opts = _ds_ep16("sglang")
    assert a2a_buffer_bytes(model, hw, ParallelConfig(world_size=8), opts, 64) == 0.0


def test_no_buffer_for_an_engine_that_declares_none():
    model, hw, pc, opts = _ds_ep16("trtllm")
    assert a2a_buffer_bytes(model, hw, pc, opts, 64) == 0.0


def test_dispatch_tokens_reading_an_unknown_name_is_refused():
    with pytest.raises(ValueError, match="dispatch_tokens: reads batch"):
        EpBuffers(dispatch_tokens="max(128, batch)")


def _dispatch(framework: str, prefill_worker: bool) -> tuple[str, float]:
    from solver.estimate.factors import factors_for
    from solver.estimate.serving import prefill_step
    from solver.specs.precision import resolve_precision

    model, hw, pc, _ = _ds_ep16(framework)
    f = factors_for(hw, load_framework(framework).efficiency_for(hw))
    step = prefill_step(model, hw, pc, resolve_precision(model, hw), f, 4096, 2, prefill_worker=prefill_worker)
    c = next(c for c in step.comms if c.name.endswith("ep_dispatch"))
    return c.primitive, c.bytes


def test_vllm_colocated_prefill_runs_the_low_latency_kernels_its_command_selects():
    """--all2all-backend deepep_low_latency serves both phases: every token-expert pair over RDMA, the kernel's
    per-call latency; a prefill worker's deepep_high_throughput sends one copy per remote NVLink domain."""
    colocated, worker = _dispatch("vllm", False), _dispatch("vllm", True)
    assert colocated[0] == "ep_all_to_all" and worker[0] == "all_to_all"
    # top-8 over 2 nodes: a worker's share is 2 (1 - 1/2^8) / 8 of the pairs
    assert worker[1] == pytest.approx(colocated[1] * 2 * (1 - 0.5 ** 8) / 8)


def test_sglang_prefill_runs_the_throughput_kernels_either_way():
    """--deepep-mode auto: normal kernels on a batch with prefill (layers/moe/utils.py:278-285)."""
    assert _dispatch("sglang", False) == _dispatch("sglang", True)
    assert _dispatch("sglang", False)[0] == "all_to_all"
