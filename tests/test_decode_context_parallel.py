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

from solver.estimate.compute import Kit, Work, factors_for, layer_ops
from solver.estimate.memory import engine_options, memory_per_rank
from solver.estimate.serving import Workload, estimate
from solver.specs.framework import FrameworkProfile, load_framework
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import load_model
from solver.specs.parallel import ParallelConfig
from solver.specs.precision import resolve_precision

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
    core runs (absorbed width 576), merges the partial outputs by LSE back to its 16 heads (reduce-scatter of
    64 heads x (512 x 2 + 4 bytes)), and o_proj's all-reduce spans all 8 ranks: no hidden all-gather after."""
    w = Work("decode", new_tokens=16, context=4096, sequences=16, logits_tokens=16)
    assert _comms("vllm", _pc(2, 4), w) == {
        ("attn_tp_allreduce", 8): 16 * 7168 * 2,
        ("kvp_query_allgather", 4): 16 * 64 * 576 * 2,
        ("lse_merge", 4): 16 * 64 * (512 * 2 + 4)}
    # the seed's KVP: all-reduce over attention TP, o_proj's partial sums reduce-scattered over the KVP group
    # (o_proj TP = attn_tp x kvp), the merge, and the next layer's input all-gathered
    assert _comms("generic", _pc(2, 4), w) == {
        ("attn_tp_allreduce", 2): 16 * 7168 * 2,
        ("oproj_tp_scatter", 4): 16 / 2 * 7168 * 2,
        ("lse_merge", 4): 16 * 64 * (512 * 2 + 4),
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
    from solver.rank.select import decision_tree_reason
    from solver.specs.scenario import Scenario
    m, h = load_model("deepseek-v3"), load_hardware("h200_sxm")
    sc = Scenario(kind="balanced", isl=32768, osl=1024)
    assert "holds the whole latent KV cache on every TP rank" in decision_tree_reason(_pc(8, 1), m, sc, h)
    dcp = decision_tree_reason(_pc(2, 4), m, sc, h)
    assert "replicates the latent KV cache over its 2 attention-TP ranks (CP / KVP split it 4 ways" in dcp
    assert "whole latent KV cache" not in dcp
