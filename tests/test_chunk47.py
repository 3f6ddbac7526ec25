"""The prefill chunk the memory model sizes is the engine's own step budget on the device (stop 47): the same
budget the estimate prices and the launch prints (the profile's scheduler, FrameworkProfile.token_budget_on), an
attention-DP rank's share where the engine divides it, not a fixed 8,192 tokens."""
from __future__ import annotations

import pytest

from solver.estimate.activations import prefill_chunk
from solver.estimate.buffers import staging_tokens
from solver.estimate.closed_loop import synced_ranks
from solver.estimate.factors import factors_for
from solver.estimate.memory_options import MemoryOptions, engine_options, framework_options, workload_options
from solver.estimate.workload import Workload, token_budget
from solver.specs.framework import load_framework
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import load_model
from solver.specs.parallel import ParallelConfig

# (framework, hardware, the profile's budget there): vllm-ascend 2,048 on A3; vLLM 2,048 below 70 GiB (L40S),
# 8,192 on H100; SGLang 8,192 below 160 GiB (H200), 16,384 on B200; the generic profile records none (8,192)
BUDGETS = [("vllm-ascend", "atlas_a3", 2048), ("vllm", "l40s", 2048), ("vllm", "h100_sxm", 8192),
           ("sglang", "h200_sxm", 8192), ("sglang", "b200_sxm", 16384), ("generic", "atlas_a3", 8192),
           ("cann-recipes", "atlas_a3", 8192)]


def _attn_dp8() -> ParallelConfig:
    """8 ranks, attention DP 8 (attn TP 1), MoE EP 8."""
    return ParallelConfig(world_size=8)


@pytest.mark.parametrize("fw_name, hw_name, budget", BUDGETS)
def test_the_chunk_is_the_engines_step_budget_on_the_device(fw_name: str, hw_name: str, budget: int) -> None:
    """The options a plan prices with (engine_options, from the engine's factors) and those a memory answer or a
    launch builds from the profile (framework_options given the device) both chunk a prefill at the engine's
    default budget on that device."""
    fw, hw = load_framework(fw_name), load_hardware(hw_name)
    f = factors_for(hw, fw.efficiency_for(hw))
    assert engine_options(None, f).chunk_tokens(1) == budget
    assert framework_options(fw, hw=hw).chunk_tokens(1) == budget


@pytest.mark.parametrize("fw_name, hw_name, budget", BUDGETS)
@pytest.mark.parametrize("synced", [1, 8])
def test_the_chunk_is_the_budget_the_estimate_prices(fw_name: str, hw_name: str, budget: int, synced: int) -> None:
    """Across attention-DP ranks stepping together, a rank's chunk is the step budget workload.token_budget gives
    it (the whole budget, or budget / ranks where the engine divides it: SGLang), at a decode batch the command's
    rule leaves at the default."""
    fw, hw = load_framework(fw_name), load_hardware(hw_name)
    f = factors_for(hw, fw.efficiency_for(hw))
    assert engine_options(None, f).chunk_tokens(synced) == token_budget(Workload("serving", isl=4096, osl=256,
                                                                                 concurrency=8), f, synced)


def test_an_attention_dp_rank_sizes_its_share_of_a_divided_budget() -> None:
    """DeepSeek-R1 on 8 H200 under SGLang, attention DP 8 + EP 8: each rank prefills 8192 / 8 = 1,024 tokens a
    step, and so its activations and its EP staging are sized; under vLLM (no division) 8,192."""
    model, hw, pc = load_model("deepseek-r1"), load_hardware("h200_sxm"), _attn_dp8()
    assert synced_ranks(model, pc) == 8
    sg = engine_options(None, factors_for(hw, load_framework("sglang").efficiency_for(hw)))
    vl = engine_options(None, factors_for(hw, load_framework("vllm").efficiency_for(hw)))
    assert prefill_chunk(sg, 32768, 64, synced_ranks(model, pc)) == 1024
    assert prefill_chunk(vl, 32768, 64, synced_ranks(model, pc)) == 8192
    assert staging_tokens(model, sg, pc, 32768, 64) == 1024 / pc.token_shards


def test_a_dense_models_replicas_keep_the_whole_budget() -> None:
    """A dense model's attention-DP replicas are engines of their own (closed_loop.synced_ranks 1): each holds
    the whole budget even where the engine divides it over synced ranks."""
    model, pc = load_model("llama-3.1-70b"), _attn_dp8()
    hw = load_hardware("h200_sxm")
    sg = engine_options(None, factors_for(hw, load_framework("sglang").efficiency_for(hw)))
    assert prefill_chunk(sg, 32768, 64, synced_ranks(model, pc)) == 8192


def test_a_callers_chunk_wins_over_the_engines_budget() -> None:
    """memory --prefill-chunk (MemoryOptions.prefill_chunk): the engine's budget and its division do not
    replace the chunk a caller sets."""
    fw, hw = load_framework("sglang"), load_hardware("h200_sxm")
    opts = engine_options(MemoryOptions(prefill_chunk=16), factors_for(hw, fw.efficiency_for(hw)))
    assert opts.chunk_tokens(8) == 16
    assert framework_options(fw, MemoryOptions(prefill_chunk=16), hw).chunk_tokens(8) == 16


def test_a_prefill_only_step_holds_its_prompts_past_the_engines_budget_undivided() -> None:
    """A prefill-only worker (workload_options step_prompts) holds the larger of the engine's budget and its
    step's prompts, whole on each attention-DP rank (its command multiplies the budget by the ranks where the
    engine divides it: launch.emit.step_budget)."""
    fw, hw = load_framework("sglang"), load_hardware("h200_sxm")
    opts = engine_options(None, factors_for(hw, fw.efficiency_for(hw)))
    assert workload_options(opts, 32768, step_prompts=2).chunk_tokens(8) == 65536
    assert workload_options(opts, 1024, step_prompts=2).chunk_tokens(8) == 8192
    ascend = framework_options(load_framework("vllm-ascend"), hw=load_hardware("atlas_a3"))
    assert workload_options(ascend, 1024, step_prompts=1).chunk_tokens(1) == 2048


def test_the_memory_answer_at_a_2048_budget_fits_more_than_at_8192() -> None:
    """`shardplan memory deepseek-v3.2 --hardware atlas_a3 --cards 16 --framework vllm-ascend` (int8, attention
    DP + SP4 + dense TP4, 4,352 tokens): the 2,048-token chunk vllm-ascend runs holds less than the 8,192 one
    sized before, and more sequences fit (144 at 8,192)."""
    from solver.one_config import memory_config

    knobs = {"dense_tp_size": 4, "embed_tp_size": 4, "lmhead_tp_size": 4, "o_proj_tp_size": 4, "attn_sp_size": 4}
    args = ("deepseek-v3.2", "atlas_a3", 16, knobs, 16, 4352)
    kw = {"framework": "vllm-ascend", "weight_dtype": "int8"}
    own, old = memory_config(*args, **kw), memory_config(*args, prefill_chunk=8192, **kw)
    assert own.options.chunk_tokens(1) == 2048
    assert own.report.activation_bytes < old.report.activation_bytes
    assert own.report.comm_buffer_bytes < old.report.comm_buffer_bytes
    assert own.max_batch > old.max_batch == 144
