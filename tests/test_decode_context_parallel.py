"""Decode context parallel as vLLM runs it (-dcp K, FrameworkProfile.kvp_splits_attention_weights): the KVP group
is carved out of the TP ranks, so TP = attn_tp x kvp splits the attention weights and projections, and KVP only
splits the KV cache by tokens; the seed's KVP (generic, cann-recipes) keeps each KVP rank's attention weights
whole. Hand-computed on DeepSeek-V3's MLA (hidden 7168, 128 heads, q_lora 1536, kv_lora 512, nope 128, rope 64,
v 128; 61 layers), bf16 weights, 8 x H200, TP 8 = attn_tp 2 x DCP 4.

Per layer: replicated q_a_proj 7168 x 1536 = 11,010,048, q_a_layernorm 1536, kv_a_proj_with_mqa 7168 x 576 =
4,128,768, kv_a_layernorm 512: 15,140,864; split q_b_proj 1536 x 128 x 192 = 37,748,736 and kv_b_proj
512 x 128 x 256 = 16,777,216: 54,525,952."""
from __future__ import annotations

import pytest
from pydantic import ValidationError

from solver.specs.dtypes import KV16
from solver.estimate.compute import Kit, Work, factors_for, layer_ops
from solver.estimate.memory import memory_per_rank
from solver.estimate.memory_options import engine_options
from solver.estimate.serving import Workload, estimate
from solver.specs.framework import FrameworkProfile, load_framework
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import load_model
from solver.specs.parallel import ParallelConfig
from solver.specs.precision import resolve_precision
from test_planner_exact import configs_match_the_estimate, with_kvp

REPLICATED, SPLIT, LAYERS, BF16 = 15_140_864, 54_525_952, 61, 2


def _setup(framework: str, hardware: str = "h200_sxm"):
    m, h = load_model("deepseek-v3"), load_hardware(hardware)
    return m, h, resolve_precision(m, h, weight_dtype="bf16"), factors_for(h, load_framework(framework).efficiency_for(h))


def _pc(attn_tp: int, kvp: int, o_proj: int = 8, dense: int = 8) -> ParallelConfig:
    return ParallelConfig(world_size=8, attn_tp_size=attn_tp, kvp_size=kvp, o_proj_tp_size=o_proj,
                          dense_tp_size=dense, moe_tp_size=8, embed_tp_size=8, lmhead_tp_size=8)


def _attention_weights(framework: str, pc: ParallelConfig, hardware: str = "h200_sxm") -> float:
    m, h, prec, f = _setup(framework, hardware)
    return memory_per_rank(m, h, pc, prec, 4, 4096, engine_options(None, f)).weights_bytes["attention"]


def test_under_vllms_dcp_the_attention_weights_per_rank_are_split_over_tp_x_dcp() -> None:
    # (15,140,864 + 54,525,952 / 8) x 61 layers x 2 bytes
    expect = (REPLICATED + SPLIT // 8) * LAYERS * BF16
    assert expect == 2_678_706_176
    assert _attention_weights("vllm", _pc(2, 4)) == expect
    assert _attention_weights("vllm", _pc(8, 1)) == expect  # the same as plain TP 8
    assert _attention_weights("vllm-ascend", _pc(2, 4), "atlas_a3") == expect
    # o_proj follows TP 8 either way: 128 x 128 x 7168 / 8 x 61 x 2
    m, h, prec, f = _setup("vllm")
    rep = memory_per_rank(m, h, _pc(2, 4), prec, 4, 4096, engine_options(None, f))
    assert rep.weights_bytes["o_proj"] == 128 * 128 * 7168 // 8 * LAYERS * BF16


def test_the_generic_profiles_kvp_keeps_the_replicated_weights() -> None:
    # the seed's KVP: each KVP rank holds its attention-TP group's weights, (15,140,864 + 54,525,952 / 2) x 61 x 2
    assert _attention_weights("generic", _pc(2, 4)) == (REPLICATED + SPLIT // 2) * LAYERS * BF16 == 5_173_268_480
    # cann-recipes' verified KVP (attn_tp 1, o_proj_tp = kvp): whole attention weights on every rank
    assert _attention_weights("cann-recipes", _pc(1, 8), "atlas_a3") == (REPLICATED + SPLIT) * LAYERS * BF16 == 8_499_351_552


def test_the_estimate_prices_the_memory_of_the_engines_layout() -> None:
    """estimate() takes the layout from the engine's factors: no MemoryOptions needed."""
    m, h, prec, f = _setup("vllm")
    e = estimate(m, h, _pc(2, 4), prec, f, Workload("decode", batch=4, seq_len=4096))
    assert e.memory.weights_bytes["attention"] == (REPLICATED + SPLIT // 8) * LAYERS * BF16


def _ops(framework: str, pc: ParallelConfig, w: Work) -> dict:
    m, h, prec, f = _setup(framework)
    return {o.name: o for o in layer_ops(m, h, pc, prec, f, w, ffn=False)["attention"]}


def test_under_vllms_dcp_the_projection_flops_per_rank_are_split_over_tp_x_dcp() -> None:
    w = Work("decode", new_tokens=16, context=4096, sequences=16, logits_tokens=16)
    vllm, generic = _ops("vllm", _pc(2, 4), w), _ops("generic", _pc(2, 4), w)
    # 2 x 16 tokens x per-rank projection parameters
    assert vllm["qkv_proj"].flops == 2 * 16 * (REPLICATED + SPLIT // 8) == 702_611_456
    assert generic["qkv_proj"].flops == 2 * 16 * (REPLICATED + SPLIT // 2) == 1_356_922_880
    # the attention core is the same: heads / attn_tp = 64 absorbed heads (576 + 512) over 1/4 of 4096 keys
    core = 2 * 64 * 16 * 4096 * (576 + 512) / 4
    assert vllm["attention_core"].flops == generic["attention_core"].flops == core == 2_281_701_376
    # o_proj is TP 8 in both: 2 x 16 x 128 x 128 x 7168 / 8
    assert vllm["o_proj"].flops == generic["o_proj"].flops == 2 * 16 * 128 * 128 * 7168 / 8


def _comms(framework: str, pc: ParallelConfig, w: Work, block: str = "mixer") -> dict:
    m, h, prec, f = _setup(framework)
    b = m._attention if block == "mixer" else m._dense
    return {(c.name, c.group): c.bytes for c in b.comms(Kit(h, pc, prec, f, w), 0.0)}


def test_under_vllms_dcp_queries_gather_partial_outputs_merge_and_o_proj_all_reduces_over_tp() -> None:
    """Each rank projects its 128 / 8 = 16 heads' queries: the DCP group all-gathers them to the 64 heads its
    core runs (absorbed width 576), merges the partial outputs by LSE back to its 16 heads (all-gather of the
    4 ranks' fp32 lse of 64 heads, then a reduce-scatter of 64 heads x 512 x 2 bytes), and o_proj's all-reduce spans all 8 ranks: no hidden all-gather after."""
    w = Work("decode", new_tokens=16, context=4096, sequences=16, logits_tokens=16)
    assert _comms("vllm", _pc(2, 4), w) == {
        ("attn_tp_allreduce", 8): 16 * 7168 * 2,
        ("kvp_query_allgather", 4): 16 * 64 * 576 * 2,
        ("lse_merge_gather", 4): 4 * 16 * 64 * 4,
        ("lse_merge", 4): 16 * 64 * 512 * 2}
    # the seed's KVP: all-reduce over attention TP, o_proj's partial sums reduce-scattered over the KVP group
    # (o_proj TP = attn_tp x kvp), the merge, and the next layer's input all-gathered
    assert _comms("generic", _pc(2, 4), w) == {
        ("attn_tp_allreduce", 2): 16 * 7168 * 2,
        ("oproj_tp_scatter", 4): 16 / 2 * 7168 * 2,
        ("lse_merge_gather", 4): 4 * 16 * 64 * 4,
        ("lse_merge", 4): 16 * 64 * 512 * 2,
        ("kvp_hidden_allgather", 4): 16 * 7168 * 2}


def test_under_vllms_dcp_a_prefill_gathers_the_cached_context_instead_of_merging() -> None:
    """MLA's non-absorbed prefill attends with each rank's 16 heads over every key: a fresh prompt's keys are
    computed on every rank (nothing to gather); a later chunk gathers its 8192 cached tokens' latents (576 x 2
    bytes each) from the DCP group."""
    fresh = Work("prefill", new_tokens=4096, context=(4096 + 1) / 2, sequences=1, logits_tokens=1)
    assert _comms("vllm", _pc(2, 4), fresh) == {("attn_tp_allreduce", 8): 4096 * 7168 * 2}
    later = Work("prefill", new_tokens=4096, context=8192 + (4096 + 1) / 2, sequences=1, logits_tokens=1)
    assert _comms("vllm", _pc(2, 4), later) == {("attn_tp_allreduce", 8): 4096 * 7168 * 2,
                                                 ("kvp_context_allgather", 4): 8192 * 576 * 2}


def test_under_vllms_dcp_the_dense_ffn_follows_the_tp_group_without_resharding() -> None:
    """dense TP 8 = attn_tp 2 x DCP 4: the o_proj all-reduce left every rank the whole hidden, so the MLP
    all-reduces (vLLM: one TP group); under the seed's KVP attention TP is 2, so TP 8 reshards."""
    w = Work("decode", new_tokens=16, context=4096, sequences=16, logits_tokens=16)
    assert set(_comms("vllm", _pc(2, 4), w, "dense")) == {("dense_tp_allreduce", 8)}
    assert set(_comms("generic", _pc(2, 4), w, "dense")) == {("dense_tp_gather", 8), ("dense_tp_scatter", 8)}


def test_kvp_splitting_attention_weights_needs_kvp_among_the_knobs() -> None:
    data = load_framework("vllm").model_dump()
    data["knobs"] = [k for k in data["knobs"] if k != "kvp_size"]
    data["rules"] = [r for r in data["rules"] if "kvp_size" not in r["require"] + r["when"]]
    with pytest.raises(ValidationError, match="kvp_splits_attention_weights"):
        FrameworkProfile.model_validate(data)


def test_the_vllm_launch_of_attn_tp_2_by_kvp_4_is_tp_8_dcp_4() -> None:
    """attn_tp 2 x kvp 4 (o_proj, dense, MoE, embedding, LM head over the TP group) is one TP 8 group, no DP."""
    from solver.launch import LaunchInputs, emit_launch

    m, h = load_model("deepseek-r1"), load_hardware("h200_sxm")
    pc = ParallelConfig(world_size=8, attn_tp_size=2, kvp_size=4, o_proj_tp_size=8, dense_tp_size=8, moe_tp_size=1,
                        embed_tp_size=8, lmhead_tp_size=8)
    argv = emit_launch(load_framework("vllm"), m, h, pc, LaunchInputs(batch=16, max_model_len=33792))["nodes"][0]["argv"]
    text = " ".join(argv)
    assert "--tensor-parallel-size 8 --decode-context-parallel-size 4" in text
    assert "--data-parallel-size" not in text


def test_the_mla_attention_tp_note_says_only_kvp_splits_the_replicated_latent_cache() -> None:
    from solver.rank.reason import decision_tree_reason
    from solver.specs.scenario import Scenario
    m, h = load_model("deepseek-v3"), load_hardware("h200_sxm")
    sc = Scenario(kind="balanced", isl=32768, osl=1024)
    assert "holds the whole latent KV cache on every TP rank" in decision_tree_reason(_pc(8, 1), m, sc, h)
    dcp = decision_tree_reason(_pc(2, 4), m, sc, h)
    assert "replicates the latent KV cache over its 2 attention-TP ranks (CP / KVP split it 4 ways" in dcp
    assert "whole latent KV cache" not in dcp


# ------------------------------------------------------------------------------------------------ hybrid layers
# Under an engine whose KVP reuses the TP ranks the model is built at TP = attn_tp x kvp: only the layers whose
# keys KVP splits (MLA, softmax attention) keep heads / attn_tp over 1/kvp of the keys; every other mixer (linear
# attention, SSM, convs) runs at TP: heads, constant state and projection weights / attn_tp x kvp per rank, its
# output all-reduced over the whole group (base.heads_split, ParallelConfig.attn_tp_group). The seed's KVP repeats
# such a mixer, heads / attn_tp, on each KVP rank.
#
# Kimi-K3's KDA (hidden 7168, 96 heads x 128, full-rank gate, conv 4; 69 layers): split per layer qkv_proj
# 3 x 7168 x 12288 = 264,241,152, short_conv 3 x 12288 x 4 = 147,456, decay_gate 7168 x 12288 = 88,080,384,
# beta_proj 7168 x 96 = 688,128, A_log+dt_bias 96 + 12288 = 12,384, output_gate 7168 x 128 + 128 x 12288 =
# 2,490,368, o_proj 12288 x 7168 = 88,080,384: 443,740,256; o_norm 128 replicated. State per request and layer:
# 96 x 128 x 128 x 2 = 3,145,728 (recurrent) + 3 x 36,864 x 2 = 221,184 (conv tail) = 3,366,912.

from dataclasses import replace as _replace  # noqa: E402

from solver.specs.layers.base import Layer  # noqa: E402
from solver.specs.layers.conv import ShortConv  # noqa: E402
from solver.specs.layers.linear import KDA, GatedDeltaNet, Lightning  # noqa: E402
from solver.specs.layers.mamba import Mamba1, Mamba2  # noqa: E402
from solver.specs.layers.rglru import RGLRU  # noqa: E402
from solver.estimate.memory_options import MemoryOptions  # noqa: E402
from solver.estimate.request_state import state_of_layers  # noqa: E402

KDA_SPLIT, KDA_NORM, KDA_LAYERS, KDA_STATE = 443_740_256, 128, 69, 3_366_912


def _wide(world: int = 64) -> ParallelConfig:
    """vLLM TP 8 -dcp 4 (attn_tp 2 x kvp 4) in a world of DP engines, MoE as EP."""
    return ParallelConfig(world_size=world, attn_tp_size=2, kvp_size=4, o_proj_tp_size=8, dense_tp_size=8,
                          moe_tp_size=1, embed_tp_size=8, lmhead_tp_size=8)


def _kimi(framework: str):
    m, h = load_model("kimi-k3"), load_hardware("h200_sxm")
    return m, h, resolve_precision(m, h, weight_dtype="bf16"), factors_for(h, load_framework(framework).efficiency_for(h))


def test_under_vllms_dcp_kimi_k3s_kda_weights_per_rank_are_split_over_tp_x_dcp() -> None:
    m, h, prec, f = _kimi("vllm")
    rep = memory_per_rank(m, h, _wide(), prec, 4, 4096, engine_options(None, f))
    assert rep.weights_bytes["linear_attention"] == (KDA_SPLIT // 8 + KDA_NORM) * KDA_LAYERS * BF16 == 7_654_537_080
    # the seed's KVP: each KVP rank holds its attention-TP group's KDA weights, / 2
    m, h, prec, g = _kimi("generic")
    rep = memory_per_rank(m, h, _wide(), prec, 4, 4096, engine_options(None, g))
    assert rep.weights_bytes["linear_attention"] == (KDA_SPLIT // 2 + KDA_NORM) * KDA_LAYERS * BF16 == 30_618_095_328


def test_under_vllms_dcp_kimi_k3s_kda_state_per_rank_is_split_over_tp_x_dcp() -> None:
    """One sequence per rank (batch 4 over 8 attention replicas holds ceil(4 / 8) = 1): 96 / 8 = 12 heads' state
    per KDA layer, where the seed's KVP keeps 96 / 2 = 48 on every KVP rank (the state itself, before vLLM pads
    it to its KV pages: hybrid_state, tests/test_hyb46m.py)."""
    m, h, prec, f = _kimi("vllm")
    opts = _replace(engine_options(None, f), hybrid_state=None)
    assert memory_per_rank(m, h, _wide(), prec, 4, 4096, opts).state_bytes \
        == KDA_STATE // 8 * KDA_LAYERS == 29_039_616
    m, h, prec, g = _kimi("generic")
    assert memory_per_rank(m, h, _wide(), prec, 4, 4096, engine_options(None, g)).state_bytes \
        == KDA_STATE // 2 * KDA_LAYERS == 116_158_464


def _kda_costs(framework: str) -> tuple[dict, dict]:
    m, h, prec, f = _kimi(framework)
    kda = m.layers[1].mixer
    assert isinstance(kda, KDA)
    cx = Kit(h, _wide(), prec, f, Work("decode", new_tokens=16, context=4096, sequences=16, logits_tokens=16))
    return {o.name: o for o in kda.ops(cx)}, {(c.name, c.group): c.bytes for c in kda.comms(cx, 0.0)}


def test_under_vllms_dcp_kimi_k3s_kda_flops_and_all_reduce_span_tp_x_dcp() -> None:
    """16 decode tokens: projections 2 x 16 x 443,740,256 / 8; the recurrence 16 tokens x 12 heads x 6 x 128 x
    128; out_proj's all-reduce over all 8 ranks (16 x 7168 x 2 bytes), no gather over the DCP group."""
    ops, comms = _kda_costs("vllm")
    assert ops["linear_attention_proj"].flops == 2 * 16 * KDA_SPLIT / 8 == 1_774_961_024
    assert ops["linear_attention_scan"].flops == 16 * 12 * 6 * 128 * 128 == 18_874_368
    assert comms == {("linear_attention_tp_allreduce", 8): 16 * 7168 * 2}
    # the seed's KVP: each KVP rank runs the 48 heads of its attention-TP pair
    ops, comms = _kda_costs("generic")
    assert ops["linear_attention_proj"].flops == 2 * 16 * KDA_SPLIT / 2
    assert ops["linear_attention_scan"].flops == 16 * 48 * 6 * 128 * 128
    assert comms == {("linear_attention_tp_allreduce", 2): 16 * 7168 * 2}


def test_vllm_admits_dcp_for_kimi_k3_an_mla_hybrid() -> None:
    """Kimi-K3's MLA layers admit -dcp (no KV-head advice applies to MLA), and its KDA layers then run at TP."""
    from solver.one_config import knob_rules

    m, h = load_model("kimi-k3"), load_hardware("h200_sxm")
    assert knob_rules(load_framework("vllm"), m, h, _wide(), 16, 0) == []


# Qwen3-Next's GatedDeltaNet (hidden 2048, 16 key / 32 value heads x 128, conv 4; 36 layers), under a profile
# with the flag: split per layer in_proj_qkvz
# 2048 x (2 x 2048 + 2 x 4096) = 25,165,824, in_proj_ba 2048 x 64 = 131,072, conv1d 8192 x 4 = 32,768,
# A_log+dt_bias 64, out_proj 4096 x 2048 = 8,388,608: 33,718,336; norm 128 replicated. State per request and
# layer: 32 x 128 x 128 x 2 = 1,048,576 + 3 x 8192 x 2 = 49,152: 1,097,728.
GDN_SPLIT, GDN_LAYERS, GDN_STATE = 33_718_336, 36, 1_097_728


def _qwen_next():
    m, h = load_model("qwen3-next-80b-a3b"), load_hardware("h200_sxm")
    f = factors_for(h, load_framework("generic").efficiency_for(h))
    return m, h, resolve_precision(m, h, weight_dtype="bf16"), _replace(f, kvp_splits_attention_weights=True)


def _qwen_pc() -> ParallelConfig:
    return ParallelConfig(world_size=8, attn_tp_size=2, kvp_size=4, dense_tp_size=8, moe_tp_size=1,
                          embed_tp_size=8, lmhead_tp_size=8)


def test_where_kvp_reuses_the_tp_ranks_qwen3_nexts_gated_deltanet_weights_and_state_split_over_tp_x_kvp() -> None:
    m, h, prec, f = _qwen_next()
    rep = memory_per_rank(m, h, _qwen_pc(), prec, 1, 4096, engine_options(None, f))
    assert rep.weights_bytes["linear_attention"] == (GDN_SPLIT // 8 + 128) * GDN_LAYERS * BF16 == 303_474_240
    assert rep.state_bytes == GDN_STATE // 8 * GDN_LAYERS == 4_939_776
    seed = memory_per_rank(m, h, _qwen_pc(), prec, 1, 4096, MemoryOptions())
    assert seed.weights_bytes["linear_attention"] == (GDN_SPLIT // 2 + 128) * GDN_LAYERS * BF16 == 1_213_869_312
    assert seed.state_bytes == GDN_STATE // 2 * GDN_LAYERS == 19_759_104


def test_where_kvp_reuses_the_tp_ranks_qwen3_nexts_gated_deltanet_flops_split_over_tp_x_kvp() -> None:
    """16 decode tokens: projections 2 x 16 x 33,718,336 / 8, the recurrence 16 x 32 / 8 heads x 6 x 128 x 128,
    out_proj all-reduced over 8 ranks; the GQA layers keep 16 / 2 query heads over 1/4 of the keys."""
    m, h, prec, f = _qwen_next()
    w = Work("decode", new_tokens=16, context=4096, sequences=16, logits_tokens=16)
    cx = Kit(h, _qwen_pc(), prec, f, w)
    gdn = next(b for b, _ in m.block_groups if isinstance(b, GatedDeltaNet))
    assert 2 * 16 * GDN_SPLIT / 8 == 134_873_344 and 16 * 4 * 6 * 128 * 128 == 6_291_456
    assert {o.name: o.flops for o in gdn.ops(cx)} == {"linear_attention_proj": 134_873_344,
                                                      "linear_attention_scan": 6_291_456}
    assert {(c.name, c.group): c.bytes for c in gdn.comms(cx, 0.0)} == {
        ("linear_attention_tp_allreduce", 8): 16 * 2048 * 2}
    core = next(o for o in layer_ops(m, h, _qwen_pc(), prec, f, w, ffn=False)["attention"] if o.name == "attention_core")
    assert core.flops == 2 * 8 * 16 * 4096 * (256 + 256) / 4


# every mixer KVP does not split, at attn_tp 2 x kvp 4 where KVP reuses the TP ranks, costs what it costs at TP 8
H = 1024
MIXERS = [KDA(hidden=H, heads=8, head_dim=64), Lightning(hidden=H, heads=8, head_dim=64),
          GatedDeltaNet(hidden=H, key_heads=8, value_heads=16, key_dim=64, value_dim=64),
          Mamba2(hidden=H, heads=16, head_dim=64, state_size=64, groups=8), Mamba1(hidden=H, d_inner=2048,
                                                                                  state_size=16, dt_rank=64),
          ShortConv(hidden=H), RGLRU(hidden=H, width=H, heads=8)]


@pytest.mark.parametrize("block", MIXERS, ids=lambda b: b.kind)
def test_where_kvp_reuses_the_tp_ranks_a_mixer_kvp_does_not_split_runs_at_tp(block) -> None:
    m, h, prec, f = _setup("generic")
    dcp = _replace(f, kvp_splits_attention_weights=True)
    two_by_four = ParallelConfig(world_size=8, attn_tp_size=2, kvp_size=4)
    eight = ParallelConfig(world_size=8, attn_tp_size=8)
    for w in (Work("decode", new_tokens=16, context=4096, sequences=16, logits_tokens=16),
              Work("prefill", new_tokens=4096, context=2048.5, sequences=1, logits_tokens=1)):
        at_dcp, at_tp = Kit(h, two_by_four, prec, dcp, w), Kit(h, eight, prec, f, w)
        assert [(o.name, o.flops, o.bytes) for o in block.ops(at_dcp)] == \
            [(o.name, o.flops, o.bytes) for o in block.ops(at_tp)]
        assert [(c.name, c.group, c.bytes) for c in block.comms(at_dcp, 0.0)] == \
            [(c.name, c.group, c.bytes) for c in block.comms(at_tp, 0.0)]
    layers = [(Layer((block,), H, 1), 3)]
    assert state_of_layers(layers, KV16, 2, 1, group=8) == state_of_layers(layers, KV16, 8, 1)
    assert state_of_layers(layers, KV16, 2, 1).constant == state_of_layers(layers, KV16, 2, 1, group=2).constant
    assert block.activation(two_by_four, 64, 8) == block.activation(eight, 64, 8)


def _small_kimi():
    """Kimi-K3's layers (KDA 96 x 128, MLA 96 heads, latent MoE) in 8 layers with 64 experts: the planner's
    tables on one node in seconds."""
    import json
    from pathlib import Path

    from solver.specs.config.read import parse_model_config

    raw = json.loads((Path(__file__).parents[1] / "models" / "moonshotai--Kimi-K3.json").read_text())
    t = raw["text_config"]
    t.update(num_hidden_layers=8, num_experts=64, num_experts_per_token=4)
    t["linear_attn_config"] = {**t["linear_attn_config"], "kda_layers": [1, 2, 3, 5, 6, 7], "full_attn_layers": [4, 8]}
    return parse_model_config(raw, "kimi-k3-8-layers")


# each concurrency checks every layout (2 s on one core): the default suite checks the decode phase at concurrency 4
# (several sequences a replica); its first three concurrencies and the serving phase (17-23 s on 2 cores, both
# steps of every layout) run in the slow suite
@pytest.mark.parametrize("phase, batches", [("decode", slice(2, 3)),
                                            pytest.param("decode", slice(0, 3), marks=pytest.mark.slow),
                                            pytest.param("serving", slice(0, 3), marks=pytest.mark.slow)])
def test_the_tables_sum_to_the_full_estimate_for_an_mla_hybrid_under_decode_context_parallel(phase, batches) -> None:
    """vLLM TP x DCP on MLA + KDA layers: the tables' memory rows (KDA weights and state over TP x DCP) and
    step costs give the full estimate's figures for every configuration with KVP they admit."""
    import itertools

    from solver.plan.table_build import build_tables
    from solver.space.domains import build_space
    from solver.specs.scenario import Scenario

    m, h, fw = _small_kimi(), load_hardware("h200_sxm"), load_framework("vllm")
    prec = resolve_precision(m, h)
    sc = Scenario(isl=4096, osl=128, max_concurrency=64, phase=phase)
    fac = factors_for(h, fw.efficiency_for(h))
    t = build_tables(m, h, prec, fac, fw, build_space(m, h, fw, 8, sc), sc)
    assert any(c[0] > 1 and c[2] > 1 for c in t.choices["attn"]), "TP x DCP layouts are in the space"
    groups = list(t.choices)
    configs = ((b, dict(zip(groups, idx))) for b in t.batches[batches]
               for idx in itertools.product(*(range(len(t.choices[g])) for g in groups))
               if len({t.choices[g][i][-1] for g, i in zip(groups, idx)}) == 1)
    assert configs_match_the_estimate(m, h, prec, fac, sc, t, configs, keep=with_kvp)


# ------------------------------------------------------------------------------ SGLang --dcp-size and ATOM -dcp
# engines.md, Flags (decode CP row): SGLang "--dcp-size, MLA only, stripes KV over the TP group"; ATOM "-dcp
# (tp % dcp == 0)". Both reuse the TP ranks (kvp_splits_attention_weights), so TP = attn_tp x kvp; the facts say
# nothing of DCP beside DP attention, so both plan it with one TP group (C.dcp_without_dp_attention).


def _r1_launch(framework: str, hardware: str, attn_tp: int, kvp: int, moe_tp: int = 1) -> str:
    from solver.launch import LaunchInputs, emit_launch

    pc = ParallelConfig(world_size=8, attn_tp_size=attn_tp, kvp_size=kvp, dense_tp_size=8, moe_tp_size=moe_tp,
                        embed_tp_size=8, lmhead_tp_size=8)
    m, h = load_model("deepseek-r1"), load_hardware(hardware)
    return " ".join(emit_launch(load_framework(framework), m, h, pc,
                                LaunchInputs(batch=8, max_model_len=33792))["nodes"][0]["argv"])


def test_sglangs_dcp_launch_is_one_tp_group_with_dcp_size() -> None:
    text = _r1_launch("sglang", "h200_sxm", 2, 4)
    assert "--tp-size 8 --dcp-size 4" in text
    assert "--dp-size" not in text and "--attn-dp-size" not in text and "--enable-dp-lm-head" not in text
    assert "--enable-dp-attention" not in text


def test_atoms_dcp_launch_is_tp_attn_tp_x_kvp_with_dcp() -> None:
    text = _r1_launch("atom", "mi355x", 2, 4)
    assert "-tp 8 -dcp 4" in text and " -dp " not in text and "--enable-dp-attention" not in text
    assert "--max-num-seqs 8" in text  # one engine holds the whole batch


@pytest.mark.parametrize("framework", ["sglang", "atom"])
def test_dcp_is_planned_without_dp_attention(framework: str) -> None:
    from solver.specs.rule_env import model_env

    fw = load_framework(framework)
    assert fw.kvp_splits_attention_weights and "kvp_size" in fw.knobs
    tp8 = dict(attn_tp_size=2, kvp_size=4, dense_tp_size=8, moe_tp_size=1, embed_tp_size=8, lmhead_tp_size=8)
    r1 = load_model("deepseek-r1")
    assert fw.check(model_env(tp8, r1, 8, world=8), "error") == []
    # DP attention beside DCP (attn_tp 1 x kvp 4 in a world of 8) is refused
    dp = {**tp8, "attn_tp_size": 1, "embed_tp_size": 1, "lmhead_tp_size": 4 if framework == "atom" else 1}
    assert "C.dcp_without_dp_attention" in [r.id for r in fw.violated(model_env(dp, r1, 8, world=8), "error")]


def test_sglangs_dcp_is_mla_only() -> None:
    """engines.md, decode CP row: SGLang --dcp-size is "MLA only" (vLLM, vllm-ascend and ATOM -dcp are not)."""
    from solver.specs.rule_env import model_env

    gqa = dict(attn_tp_size=2, kvp_size=4, moe_tp_size=1, embed_tp_size=8, lmhead_tp_size=8)
    fw = load_framework("sglang")
    assert "C.dcp_mla_only" in [r.id for r in fw.violated(model_env(gqa, load_model("qwen3-235b-a22b"), 8, world=8))]


@pytest.mark.parametrize("framework", ["sglang", "atom"])
def test_without_an_o_proj_knob_o_proj_follows_the_whole_tp_group_under_dcp(framework: str) -> None:
    """o_proj left at 1 follows the ranks that split the heads: TP 8 = attn_tp 2 x DCP 4, 128 x 128 x 7168 / 8
    per rank (DeepSeek-V3, 61 layers, bf16), its all-reduce over 8 ranks."""
    hardware = "mi355x" if framework == "atom" else "h200_sxm"
    m, h, prec, f = _setup(framework, hardware)
    pc = ParallelConfig(world_size=8, attn_tp_size=2, kvp_size=4, dense_tp_size=8, moe_tp_size=1, embed_tp_size=8,
                        lmhead_tp_size=8)
    rep = memory_per_rank(m, h, pc, prec, 4, 4096, engine_options(None, f))
    assert rep.weights_bytes["o_proj"] == 128 * 128 * 7168 // 8 * LAYERS * BF16
    assert rep.weights_bytes["attention"] == (REPLICATED + SPLIT // 8) * LAYERS * BF16
    w = Work("decode", new_tokens=16, context=4096, sequences=16, logits_tokens=16)
    comms = {(c.name, c.group): c.bytes for c in m._attention.comms(Kit(h, pc, prec, f, w), 0.0)}
    assert comms == {("attn_tp_allreduce", 8): 16 * 7168 * 2,
                                        ("kvp_query_allgather", 4): 16 * 64 * 576 * 2,
                                        ("lse_merge_gather", 4): 4 * 16 * 64 * 4,
        ("lse_merge", 4): 16 * 64 * 512 * 2}


def test_the_tables_sum_to_the_full_estimate_for_sp_and_dcp_layouts_where_kvp_reuses_the_tp_ranks() -> None:
    """SGLang on DeepSeek-V3.2 has both NSA prefill CP (attn_sp_size) and --dcp-size: the tables share the
    other groups' costs between layouts of one TP group and group size, and where KVP reuses the TP ranks a
    KVP layout's TP group is attn_tp x kvp while an SP layout's is attn_tp. Spelling SP8 as KVP8 priced the
    dense FFN's TP8 beside it as an all-reduce, not the reshard it is (a 10 % faster TTFT than the estimate)."""
    import itertools
    import random

    from solver.plan.layout_memory import assumed_memory
    from solver.plan.table_build import build_tables
    from solver.space.domains import build_space
    from solver.specs.scenario import Scenario

    m, h, fw = load_model("deepseek-v3.2"), load_hardware("h200_sxm"), load_framework("sglang")
    prec = resolve_precision(m, h)
    sc = Scenario(isl=32768, osl=512, max_concurrency=16, phase="serving")
    fac = factors_for(h, fw.efficiency_for(h))
    t = build_tables(m, h, prec, fac, fw, build_space(m, h, fw, 8, sc), sc)
    groups = list(t.choices)
    every = [dict(zip(groups, idx)) for idx in itertools.product(*(range(len(t.choices[g])) for g in groups))]
    configs = [p for p in every if len({t.choices[g][i][-1] for g, i in p.items()}) == 1
               and (t.config(p)["attn_sp_size"] > 1 or t.config(p)["kvp_size"] > 1)]
    seen = {"sp": 0, "kvp": 0}
    for picks in random.Random(3).sample(configs, min(len(configs), 150)):
        pc = ParallelConfig(world_size=8, **t.config(picks))
        b = 8
        if not assumed_memory(m, h, pc, prec, sc, b, t.mem_opts).feasible:
            continue
        e = estimate(m, h, pc, prec, fac, Workload.for_scenario(sc, b))
        fig = t.figures(b, picks)
        assert fig.ttft_s == pytest.approx(e.ttft_s, rel=1e-9, abs=1e-15), t.config(picks)
        assert fig.tpot_s == pytest.approx(e.tpot_s, rel=1e-9, abs=1e-15), t.config(picks)
        seen["sp" if pc.attn_sp_size > 1 else "kvp"] += 1
    assert seen["sp"] and seen["kvp"], seen


def test_a_kvp_group_inside_tp_is_named_as_the_engines_tp_and_its_dcp() -> None:
    from solver.rank.select import pattern_name
    m = load_model("deepseek-v3")
    # vLLM's -tp 8 -dcp 4 is one TP group of 8 with DCP 4 inside it, no attention DP
    assert pattern_name(_pc(2, 4), m, kvp_in_tp=True) == "Attn TP8 + DCP4 + Dense TP8 + MoE TP8"
    assert pattern_name(_pc(1, 8), m, kvp_in_tp=True) == "Attn TP8 + DCP8 + Dense TP8 + MoE TP8"
    # the seed's KVP (its ranks hold the attention weights whole) keeps its name
    assert pattern_name(_pc(2, 4), m) == "Attn TP2 + KVP4 + Dense TP8 + MoE TP8 + O_proj TP8"


@pytest.mark.parametrize("framework", ["vllm", "vllm-ascend"])
def test_o_proj_follows_tp_so_a_dcp_file_need_not_set_it(framework: str) -> None:
    """C.o_proj_follows_tp / C.o_proj_tp_with_tp: o_proj_tp_size left out (1) follows the TP group under -dcp as
    without it: the same estimate as o_proj_tp_size = attn_tp x kvp, so the rule accepts it; another size is refused
    with a line naming what to do."""
    from solver.specs.rule_env import model_env
    m, fw = load_model("deepseek-v3"), load_framework(framework)
    for o_proj, ok in ((1, True), (8, True), (4, False)):
        pc = _pc(1, 8, o_proj=o_proj)
        problems = fw.check(model_env(pc.settings(), m, 8, world=8, batch=8))
        assert (not any("o_proj" in p for p in problems)) is ok, problems
        if not ok:
            assert any("o_proj" in p and "kvp_size" in p for p in problems), problems
    m, h, prec, f = _setup(framework, "atlas_a3" if framework == "vllm-ascend" else "h200_sxm")
    unset, spelled = (memory_per_rank(m, h, _pc(1, 8, o_proj=o), prec, 4, 4096, engine_options(None, f)).weights_bytes
                      for o in (1, 8))
    assert unset == spelled


def test_attn_dp_size_is_the_engines_dp_where_kvp_reuses_the_tp_ranks() -> None:
    """TP8 -dcp 8 on 8 ranks has no attention DP (sweep CSV, solve JSON/YAML: attn_dp_size 1, as its pattern
    'Attn TP8 + DCP8' says); TP8 -dcp 4 on 16 ranks is DP2; the seed's KVP keeps world // attn_tp."""
    assert _pc(1, 8).attn_dp(("kvp_size",)) == 1 and _pc(2, 4).attn_dp(("kvp_size",)) == 1
    assert _pc(1, 8).attn_dp() == 8 == _pc(1, 8).attn_dp_size
    pc16 = ParallelConfig(world_size=16, attn_tp_size=2, kvp_size=4, dense_tp_size=8, embed_tp_size=8,
                          lmhead_tp_size=8, o_proj_tp_size=8)
    assert pc16.attn_dp(("kvp_size",)) == 2
    m = load_model("deepseek-v3")
    assert _pc(1, 8).model_view(("attn_tp_size", "kvp_size"), replica_knobs=("kvp_size",))["attn_dp_size"] == 1
    assert _pc(1, 8).model_view(("attn_tp_size", "kvp_size"))["attn_dp_size"] == 8
    del m


def test_a_deployment_may_state_the_engines_attention_dp_under_dcp(tmp_path) -> None:
    """check / launch read back what solve writes: attn_dp_size 1 for TP8 -dcp 8 passes under an engine whose KVP
    reuses the TP ranks; any other value is one clear line (InputError)."""
    from solver.errors import InputError
    from solver.specs.deployment import load_deployment

    def dep(dp: int):
        f = tmp_path / f"dp{dp}.yaml"
        f.write_text(f"parallel_config: {{attn_tp_size: 1, kvp_size: 8, attn_dp_size: {dp}}}\n")
        return load_deployment(str(f))

    dep(1).check_derived(8, "f.yaml", replica_knobs=("kvp_size",))
    dep(8).check_derived(8, "f.yaml", replica_knobs=("kvp_size",))  # the seed's value says the same layout
    with pytest.raises(InputError):
        dep(1).check_derived(8, "f.yaml")  # the seed's KVP: world // attn_tp = 8
    with pytest.raises(InputError):
        dep(2).check_derived(8, "f.yaml", replica_knobs=("kvp_size",))


def test_tp_inside_node_counts_the_dcp_ranks_of_the_tp_group() -> None:
    """Seed class B (tp_size <= ranks per node): under -dcp the TP group is attn_tp x kvp, so TP16 -dcp 16 on two
    8-GPU H200 nodes crosses nodes although attn_tp_size is 1; the seed's KVP (no TP group around it) does not."""
    from solver.rank.review import hardware_placement
    m, h = load_model("deepseek-v3"), load_hardware("h200_sxm")
    pc = ParallelConfig(world_size=16, attn_tp_size=1, kvp_size=16, dense_tp_size=8, embed_tp_size=8,
                        lmhead_tp_size=8, o_proj_tp_size=1, moe_tp_size=1)
    wide, lines = hardware_placement(m, h, pc, kvp_in_tp=True)
    assert wide == {"attn_tp_size x kvp_size": 16}, wide
    assert "cross-node TP" in lines[0]
    assert hardware_placement(m, h, pc)[0] == {}


def test_a_disaggregated_pool_under_dcp_inside_tp_counts_tp_and_dp_as_the_engine_does() -> None:
    import json

    from click.testing import CliRunner

    from solver.cli.main import main
    r = CliRunner().invoke(main, ["solve", "deepseek-r1", "--hardware", "h200_sxm", "--cards", "16", "--framework",
                                  "vllm", "--isl", "32768", "--osl", "1024", "--serving", "disagg", "--format", "json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    for key in ("prefill_pool", "decode_pool"):
        pc = d[key]["parallel_config"]
        tp = pc["attn_tp_size"] * pc.get("kvp_size", 1)  # the engine's TP: DCP inside it
        assert pc["attn_dp_size"] == 8 // tp
        assert f"{'prefill' if key == 'prefill_pool' else 'decode'} {tp}-way" in " ".join(d["comparison"]["why"])


@pytest.mark.parametrize("o_proj, valid", [(8, True), (1, True), (2, False)])
def test_an_o_proj_written_as_the_engines_whole_tp_group_is_accepted_without_an_o_proj_knob(tmp_path, o_proj: int,
                                                                                             valid: bool) -> None:
    # SGLang --tp-size 8 --dcp-size 8 runs o_proj over the whole TP group: a file saying o_proj_tp_size 8 (or
    # leaving it at 1) says what the engine does; 2 it cannot express
    from click.testing import CliRunner

    from solver.cli.main import main
    f = tmp_path / "dcp.yaml"
    f.write_text("model: deepseek-r1\nhardware: h200_sxm\nworld_size: 8\nparallel_config: {attn_tp_size: 1, "
                 "dense_tp_size: 8, moe_tp_size: 1, embed_tp_size: 8, lmhead_tp_size: 8, "
                 f"o_proj_tp_size: {o_proj}, kvp_size: 8}}\nworkload: {{isl: 32768, osl: 1024, concurrency: 4}}\n")
    r = CliRunner().invoke(main, ["check", str(f), "--framework", "sglang"])
    assert r.output.splitlines()[0].endswith(": valid") == valid, r.output
    if not valid:
        assert "o_proj_tp_size = 2 but sglang has no such knob" in r.output


def test_the_rankings_cross_node_flag_counts_the_dcp_ranks_of_the_tp_group() -> None:
    """The ranking's cross-node risk (rank.select.cross_node) reads the same group as `check`: TP16 -dcp 16 on two
    8-GPU H200 nodes splits the heads over 16 ranks across the nodes; the seed's KVP (attn_tp 1) does not."""
    from solver.rank.select import cross_node
    h = load_hardware("h200_sxm")
    pc = ParallelConfig(world_size=16, attn_tp_size=1, kvp_size=16, dense_tp_size=8, embed_tp_size=8,
                        lmhead_tp_size=8, o_proj_tp_size=1, moe_tp_size=1)
    assert cross_node(pc, h, kvp_in_tp=True)
    assert not cross_node(pc, h)


def test_the_reason_says_the_engines_tp_and_its_dcp() -> None:
    """TP8 -dcp 8 is attn_tp 1 x kvp 8: the reason says 'TP8 with DCP8', not 'attn_tp=1'; under the latency
    branch the seed keeps a small attention TP (2/4) for MLA (seed 003, Layer 2), so the 8-way split departs from
    it (tests/test_answer_sentences.py); the seed's KVP keeps 'attn_tp=1'."""
    from solver.rank.reason import decision_tree_reason
    from solver.specs.scenario import Scenario
    m, h = load_model("deepseek-v3"), load_hardware("h200_sxm")
    s = Scenario(kind="latency", isl=2048, osl=256)
    reason = decision_tree_reason(_pc(1, 8), m, s, h, kvp_in_tp=True)
    layer2 = reason.split("Layer 2")[1].split("Layer 3")[0]
    assert "chose TP8 with DCP8 (attn_tp=1 x kvp=8) — departs" in layer2 and "departs" not in reason.split("Layer 2")[0]
    assert "chose attn_tp=1 " in decision_tree_reason(_pc(1, 8), m, s, h)


def test_the_yaml_footer_derives_dp_from_the_engines_tp_group() -> None:
    """Under -dcp the engine's DP is world // (attn_tp x kvp) (ParallelConfig.attn_dp): the footer says so."""
    from types import SimpleNamespace
    from solver.report.candidates import seed_yaml
    from solver.specs.parallel import KNOBS
    result = SimpleNamespace(knobs=KNOBS, binding=[], status="OPTIMAL", timeout_note=lambda: "", input_notes=(),
                             range_note="", edge_note=None, copies_note=None, held_note=None,
                             pruned={})
    assert "attn_dp_size = world_size // (attn_tp_size x kvp_size)" in seed_yaml(result, [], replica_knobs=("kvp_size",))
    assert "attn_dp_size = world_size // attn_tp_size," in seed_yaml(result, [])


# vLLM -dcp on KV-head (GQA) models (engines.md, decode CP row: tp % dcp == 0, advice dcp <= tp / num_kv_heads).
# Qwen3-30B-A3B: 4 KV heads x 128, 48 layers, bf16 KV: 2 x 128 x 2 B = 512 B per token, head and layer. TP 8
# replicates each head on 2 ranks: 512 x 48 = 24,576 B per token per rank; TP 8 = attn_tp 4 x DCP 2 keeps one
# head per rank over half the tokens: 12,288. Llama-3.1-70B: 8 KV heads, 80 layers: TP 8 holds one head,
# 40,960 B per token; attn_tp 4 x DCP 2 two heads over half the tokens: the same 40,960.
def _gqa_pc(attn_tp: int, kvp: int, moe: bool) -> ParallelConfig:
    return ParallelConfig(world_size=8, attn_tp_size=attn_tp, kvp_size=kvp, dense_tp_size=1 if moe else 8,
                          moe_tp_size=8 if moe else 1, embed_tp_size=8, lmhead_tp_size=8)


def _kv_per_rank(name: str, pc: ParallelConfig, seqs: int = 64, tokens: int = 33792) -> float:
    """The requests' KV on a rank under vLLM, its pool's null block aside (request_state.reserved_blocks)."""
    from solver.estimate.request_state import reserved_blocks

    m, h = load_model(name), load_hardware("h100_sxm")
    prec, f = resolve_precision(m, h), factors_for(h, load_framework("vllm").efficiency_for(h))
    opts = engine_options(None, f)
    null = reserved_blocks(m, pc, prec, layout=opts.cache_layout).kv
    return memory_per_rank(m, h, pc, prec, seqs, tokens, opts).kv_cache_bytes - null


def test_vllm_dcp_on_a_gqa_model_splits_the_replicated_kv_heads_tokens() -> None:
    moe = True
    tp8, dcp2 = (_kv_per_rank("qwen3-30b-a3b", _gqa_pc(a, k, moe)) for a, k in ((8, 1), (4, 2)))
    assert tp8 == 64 * 33792 * 24_576 and dcp2 == 64 * 33792 * 12_288
    # past the replicas (8 KV heads over TP 8) DCP 2 holds as much KV per rank as TP 8 alone
    tp8, dcp2 = (_kv_per_rank("llama-3.1-70b", _gqa_pc(a, k, False)) for a, k in ((8, 1), (4, 2)))
    assert tp8 == dcp2 == 64 * 33792 * 40_960


@pytest.mark.parametrize("framework", ["vllm", "vllm-ascend", "atom"])
def test_dcp_on_gqa_is_admitted_and_advised_within_the_kv_heads_replicas(framework: str) -> None:
    """engines.md, decode CP row: vLLM -dcp (tp % dcp == 0, advice dcp <= tp / num_kv_heads), vllm-ascend (vLLM's
    flags, "PCP/DCP") and ATOM -dcp (tp % dcp == 0) name no model restriction; only SGLang's is MLA only."""
    from solver.specs.rule_env import model_env

    fw = load_framework(framework)
    qwen, llama = load_model("qwen3-30b-a3b"), load_model("llama-3.1-70b")
    ok = model_env(_gqa_pc(4, 2, True).settings(), qwen, 8, world=8, batch=64)
    assert fw.check(ok) == []  # 4 KV heads over TP 8: two replicas, DCP 2 within them
    past = model_env(_gqa_pc(4, 2, False).settings(), llama, 8, world=8, batch=64)
    # 8 KV heads over TP 8: dcp <= 1, the advice where the engine admits it, an error in vLLM 0.34.0 and in the
    # vLLM 0.23.0 vllm-ascend runs (config/model.py:1209-1224)
    refused = framework in ("vllm", "vllm-ascend")
    assert [r.id for r in fw.violated(past, "error" if refused else "warning")] == (
        ["C.dcp_gqa_within_kv_replicas"] if refused else ["C.dcp_gqa_advice"])


@pytest.mark.parametrize("framework, hardware, tp, dcp, dp", [
    ("vllm", "h100_sxm", "--tensor-parallel-size 8", "--decode-context-parallel-size 2", "--data-parallel-size"),
    ("vllm-ascend", "atlas_a2", "--tensor-parallel-size 8", "--decode-context-parallel-size 2", "--data-parallel-size"),
    ("atom", "mi355x", "-tp 8", "-dcp 2", " -dp "),
])
def test_a_dcp_launch_on_a_gqa_model_is_tp_attn_tp_x_kvp_with_dcp(framework, hardware, tp, dcp, dp) -> None:
    from solver.launch import LaunchInputs, emit_launch

    m, h = load_model("qwen3-30b-a3b"), load_hardware(hardware)
    argv = " ".join(emit_launch(load_framework(framework), m, h, _gqa_pc(4, 2, True),
                                LaunchInputs(batch=64, max_model_len=33792))["nodes"][0]["argv"])
    assert tp in argv and dcp in argv and dp not in argv
    assert "oproj_tensor_parallel_size" not in argv  # o_proj follows the TP group: no fine-grained key


def test_the_planner_follows_the_engines_advice() -> None:
    """A profile's warning rule is the engine's advice: `check` accepts a file that breaks it (with a warning),
    the planner plans within it. Llama-3.1-70B's 8 KV heads over TP8 leave nothing for vLLM's DCP to split (dcp
    <= tp / num_kv_heads = 1): DCP2 and DCP4 were runner-ups under a TPOT SLA, and are never candidates now."""
    from solver.api import run_solve
    from solver.specs.scenario import Scenario

    result, cands = run_solve("llama-3.1-70b", "h100_sxm", 8, Scenario(kind="balanced", tpot_ms=30.0), "vllm",
                              top=5)
    assert cands and all(c.planned.config.kvp_size == 1 for c in cands)
    assert all(p.config.kvp_size == 1 for p in result.front)


# vllm and vllm-ascend are not among them: both refuse -dcp beside V4's raw sliding window
# (C.dcp_no_sliding_window, tests/test_layers48.py)
@pytest.mark.parametrize("engine", ["atom"])
def test_decode_context_parallel_on_compressed_attention_draws_no_kv_head_advice(engine: str) -> None:
    """DeepSeek-V4's compressed attention has one KV head (config num_key_value_heads 1) replicated on every TP
    rank, so -dcp 8 inside TP 8 splits its cache 8 ways (the estimate's KV falls, 8 x MI355X, ISL 524,288: 120.87
    -> 114.55 GB a rank under ATOM). The advice dcp <= tp / num_kv_heads read the model's 128 query heads as KV
    heads (128 x 8 > 8) and warned that DCP "saves no KV per rank"."""
    from solver.one_config import knob_rules
    from solver.specs.framework import load_framework
    from solver.specs.hardware_catalog import load_hardware

    pc = ParallelConfig(world_size=8, kvp_size=8, dense_tp_size=8, embed_tp_size=8, lmhead_tp_size=8)
    hw = load_hardware("atlas_a3" if engine == "vllm-ascend" else "mi355x")
    notes = knob_rules(load_framework(engine), load_model("deepseek-v4-pro"), hw, pc, batch=2, mtp=0)
    assert not [n for n in notes if "C.dcp_gqa_" in n]


def test_decode_context_parallel_past_the_kv_head_replicas_is_refused_by_vllm() -> None:
    """Llama-3.1-70B has 8 KV heads: -tp 8 -dcp 8 (attn_tp_size 1 x kvp_size 8) holds one KV head per rank and
    splits no more KV than TP alone; 8 x 8 > 8 breaks dcp <= tp // num_kv_heads = 1, which vLLM 0.34.0 refuses
    (config/model.py), so the knobs are bad input for vllm (tests/test_long_context.py holds the rule)."""
    from solver.errors import InputError
    from solver.one_config import knob_rules
    from solver.specs.framework import load_framework
    from solver.specs.hardware_catalog import load_hardware

    pc = ParallelConfig(world_size=8, kvp_size=8, dense_tp_size=8, embed_tp_size=8, lmhead_tp_size=8)
    with pytest.raises(InputError, match="C.dcp_gqa_within_kv_replicas"):
        knob_rules(load_framework("vllm"), load_model("llama-3.1-70b"), load_hardware("h200_sxm"), pc,
                   batch=2, mtp=0)
