"""One hand-computed case per estimator rule (solver.estimate.compute / step / serving's MTP rule).

Each test is named after the rule it checks. Figures are per layer and per rank unless a test says otherwise.
"""
from __future__ import annotations

import math
from dataclasses import replace

import pytest

from solver.specs.dtypes import KV16
from solver.estimate import comm
from solver.estimate.closed_loop import synced_ranks
from solver.estimate.compute import (
    Factors,
    OpCost,
    Work,
    _op,
    distinct_experts_touched,
    factors_for,
    head_ops,
    layer_ops,
    mean_keys_capped,
)
from solver.estimate.request_state import cache_per_rank, kv_bytes_per_token_layer
from solver.estimate.params import count_params
from solver.estimate.serving import (
    DEFAULT_TOKEN_BUDGET,
    Workload,
    estimate,
    mtp_tokens_per_step,
    serving_shape,
    token_budget,
)
from solver.estimate.step import layer_comms, step_cost
from solver.specs.framework import load_framework
from solver.specs.hardware import Hardware

from conftest import toy_hardware  # noqa: E402
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import load_model
from solver.specs.parallel import make_parallel_config
from solver.specs.precision import resolve_precision

H200 = load_hardware("h200_sxm")
A3 = load_hardware("atlas_a3")
V3 = load_model("deepseek-v3")
V32 = load_model("deepseek-v3.2")
LLAMA70 = load_model("llama-3.1-70b")
F_H200 = factors_for(H200)


def _prec(model, hw=H200, **kw):
    return resolve_precision(model, hw, **kw)


def _ops(model, pc, w, hw=H200, prec=None, f=None):
    """name -> OpCost for one layer of each kind (attention ops, dense, moe)."""
    prec = prec or _prec(model, hw)
    f = f or factors_for(hw)
    kinds = layer_ops(model, hw, pc, prec, f, w, count_params(model))
    return {o.name: o for ops in kinds.values() for o in ops}


def _comms(model, pc, w, hw=H200, prec=None, attn_compute_s=0.0):
    prec = prec or _prec(model, hw)
    out = layer_comms(model, hw, pc, prec, factors_for(hw), w, attn_compute_s)
    return {c.name: c for cs in out.values() for c in cs}


def _prefill(S: int, prompts: float = 1) -> Work:
    return Work("prefill", new_tokens=S * prompts, context=(S + 1) / 2, sequences=prompts, logits_tokens=prompts)


def _decode(batch: float, ctx: float, mtp: int = 0) -> Work:
    return Work("decode", new_tokens=batch * (1 + mtp), context=ctx, sequences=batch, logits_tokens=batch * (1 + mtp))


def _toy_hw(**over) -> Hardware:
    return toy_hardware(**over)


# ------------------------------------------------------------------------------------------ time of one op


def test_time_is_max_of_compute_and_memory_plus_kernel_overhead() -> None:
    hw = _toy_hw()
    f = Factors(gemm=0.5, attention=1.0, hbm=0.8, comm=1.0, kernel_overhead_s=3e-6)
    # 1e12 FLOPs at 1e15 x 0.5 = 2 ms; 4e9 bytes at 1e12 x 0.8 = 5 ms; 2 kernels x 3 us
    op = _op("x", "m", 1e12, 4e9, hw.flops("bf16"), f.gemm, hw, f, kernels=2)
    assert op.compute_s == pytest.approx(2e-3)
    assert op.memory_s == pytest.approx(5e-3)
    assert op.overhead_s == pytest.approx(6e-6)
    assert op.time_s == pytest.approx(5e-3 + 6e-6)
    assert op.bound == "memory"
    assert OpCost("y", "m", 0, 0, 2.0, 3.0, 0.5).time_s == 3.5


def test_framework_kernel_overhead_override_reaches_factors() -> None:
    # FrameworkEfficiency.kernel_overhead_s is an absolute override (fixed: it used to be dropped)
    assert factors_for(H200, {"kernel_overhead_s": 1e-5}).kernel_overhead_s == pytest.approx(1e-5)
    assert factors_for(H200, {"kernel_overhead": 2.0}).kernel_overhead_s == pytest.approx(6e-6)
    assert factors_for(H200, {"gemm": 2.0}).gemm == 1.0  # capped at peak


# --------------------------------------------------------------------------------------------- MLA / DSA


def test_mla_cache_not_sharded_by_attention_tp() -> None:
    # the latent (512 + 64 rope) is one shared "head": 1152 bytes per token per layer on EVERY TP rank
    assert kv_bytes_per_token_layer(V3, KV16, attn_tp=8) == kv_bytes_per_token_layer(V3, KV16, attn_tp=1) == 1152
    prec = _prec(V3)
    kv_tp8, _, _ = cache_per_rank(V3, make_parallel_config(8, attn_tp_size=8), prec, batch=8, seq_len=4096)
    kv_dp8, _, _ = cache_per_rank(V3, make_parallel_config(8), prec, batch=8, seq_len=4096)
    assert kv_tp8 == pytest.approx(8 * kv_dp8)  # TP8 holds all 8 sequences, DP8 one each
    # decode reads the whole latent cache on every TP rank: 8 seqs x 4096 keys x 1152 B (+ hidden input)
    w = _decode(8, 4096)
    core = _ops(V3, make_parallel_config(8, attn_tp_size=8), w)["attention_core"]
    assert core.bytes == pytest.approx(8 * 4096 * 1152 + 8 * V3.hidden_size * 2)


def test_mla_absorbed_decode_uses_dk_576_dv_512() -> None:
    w = _decode(8, 1000)
    core = _ops(V3, make_parallel_config(8), w)["attention_core"]
    assert core.flops == pytest.approx(2 * 128 * 8 * 1000 * (576 + 512))


def test_mla_prefill_non_absorbed_uses_dk_192_dv_128() -> None:
    w = _prefill(1000)
    core = _ops(V3, make_parallel_config(8), w)["attention_core"]
    assert core.flops == pytest.approx(2 * 128 * 1000 * 500.5 * (192 + 128))


def test_sparse_attention_head_padding_on_hopper_makes_tp8_compute_4x_useful() -> None:
    # 128 heads / TP8 = 16 per rank, padded to 64 by the SM90 sparse-MLA kernel: 4x the useful FLOPs
    w = _prefill(1000)  # below top-k: every query attends to all earlier keys, mean 500.5
    tp8 = _ops(V32, make_parallel_config(8, attn_tp_size=8), w)["attention_core"]
    dp = _ops(V32, make_parallel_config(8), w)["attention_core"]
    useful_tp8 = 2 * 16 * 1000 * 500.5 * (576 + 512)
    assert tp8.flops == pytest.approx(4 * useful_tp8)
    assert dp.flops == pytest.approx(2 * 128 * 1000 * 500.5 * (576 + 512))  # no padding at 128 heads
    assert tp8.flops == pytest.approx(dp.flops / 2)  # 8 ranks buy only a 2x cut
    # no padding on hardware without the rule (Atlas A3 catalog entry: pad 1)
    a3 = _ops(V32, make_parallel_config(16, attn_tp_size=16), w, hw=A3)["attention_core"]
    assert a3.flops == pytest.approx(2 * 8 * 1000 * 500.5 * (576 + 512))


def test_sparse_attention_prefill_gathers_each_querys_top_k_keys() -> None:
    # each prefill query reads its own top-k cached latents (656 B in FP8), whatever the heads per rank: the
    # intensity is 2 x heads per rank x 1088 FLOPs per gathered key, so TP8's 16 heads per rank are memory-bound
    # on MI355X (no padding fact there) where SP8's 128 heads stay compute-bound (seed 000's TP complaint)
    mi355x = load_hardware("mi355x")
    S = 8192
    w = _prefill(S)
    prec = _prec(V32, mi355x, kv_dtype="fp8")
    keys = mean_keys_capped(w, 2048)
    tp8 = _ops(V32, make_parallel_config(8, attn_tp_size=8), w, hw=mi355x, prec=prec)["attention_core"]
    sp8 = _ops(V32, make_parallel_config(8, attn_sp_size=8), w, hw=mi355x, prec=prec)["attention_core"]
    act = 7168 * 2  # the layer input of each of the rank's tokens
    assert tp8.bytes == pytest.approx(S * keys * 656 + S * act)
    assert sp8.bytes == pytest.approx(S / 8 * keys * 656 + S / 8 * act)
    assert tp8.flops == pytest.approx(sp8.flops)  # 16 heads x S queries = 128 heads x S / 8
    assert (tp8.bound, sp8.bound) == ("memory", "compute")
    # a decode sequence's selection is read once, drafts included (MTP 1: two queries per sequence)
    d = _ops(V32, make_parallel_config(8), _decode(4, 65536, mtp=1), hw=mi355x, prec=prec)["attention_core"]
    assert d.bytes == pytest.approx(4 * 2048 * 656 + 8 * act)


def test_dsa_keys_per_query_are_the_mean_of_min_position_topk() -> None:
    # a 4096-token prompt with top-k 2048: positions 1..2048 see p keys, the rest 2048 -> mean 1536.25
    assert mean_keys_capped(_prefill(4096), 2048) == pytest.approx((2048 * 2049 / 2 + 2048 * 2048) / 4096)
    assert mean_keys_capped(_prefill(1000), 2048) == pytest.approx(500.5)
    assert mean_keys_capped(_decode(4, 65536), 2048) == 2048
    w = _prefill(4096)
    core = _ops(V32, make_parallel_config(8), w)["attention_core"]
    assert core.flops == pytest.approx(2 * 128 * 4096 * 1536.25 * 1088)


def test_indexer_work_per_rank_is_whole_under_tp_and_one_nth_under_sp_cp() -> None:
    S = 16384
    w = _prefill(S)
    whole = 2 * 64 * 128 * S * (S + 1) / 2  # 16,384 FLOPs per (query, key) pair
    tp8 = _ops(V32, make_parallel_config(8, attn_tp_size=8), w)
    dp = _ops(V32, make_parallel_config(8), w)
    sp8 = _ops(V32, make_parallel_config(8, attn_sp_size=8), w)
    cp8 = _ops(V32, make_parallel_config(8, cp_size=8), w)
    assert tp8["indexer_score"].flops == pytest.approx(whole)  # replicated: every TP rank repeats it
    assert dp["indexer_score"].flops == pytest.approx(whole)
    assert sp8["indexer_score"].flops == pytest.approx(whole / 8)
    assert cp8["indexer_score"].flops == pytest.approx(whole / 8)
    idx_params = 1536 * 64 * 128 + 7168 * 128 + 2 * 128 + 7168 * 64
    assert tp8["indexer_proj"].flops == pytest.approx(2 * S * idx_params)
    assert sp8["indexer_proj"].flops == pytest.approx(2 * S / 8 * idx_params)


def test_indexer_topk_reads_back_the_fp32_logits() -> None:
    S = 8192
    w = _prefill(S)
    ops = _ops(V32, make_parallel_config(8), w)
    logits = S * (S + 1) / 2 * 4
    assert ops["indexer_topk"].bytes == pytest.approx(logits + S * 2048 * 4)
    assert ops["indexer_topk"].bound == "memory"
    assert ops["indexer_score"].bytes == pytest.approx(S * 132 + logits)


# ---------------------------------------------------------------------------------------------- GQA / SP


def test_gqa_kv_replicated_beyond_n_kv() -> None:
    # Llama-3.1-70B: 8 KV heads of 128; TP16 leaves one (replicated) KV head per rank, not half of one
    assert kv_bytes_per_token_layer(LLAMA70, KV16, attn_tp=4) == 2 * 256 * 2
    assert kv_bytes_per_token_layer(LLAMA70, KV16, attn_tp=8) == 1 * 256 * 2
    assert kv_bytes_per_token_layer(LLAMA70, KV16, attn_tp=16) == 1 * 256 * 2
    w = _decode(1, 100)
    qkv16 = _ops(LLAMA70, make_parallel_config(16, attn_tp_size=16), w)["qkv_proj"]
    h = 8192
    q, kv = h * 64 * 128, 2 * h * 8 * 128
    assert qkv16.flops == pytest.approx(2 * (q / 16 + kv / 8))


def test_sp_keeps_full_heads_unsharded_weights_and_allgathers_new_kv_and_indexer_keys() -> None:
    S = 8192
    w = _prefill(S)
    prec = _prec(V32, kv_dtype="fp8")
    pc = make_parallel_config(8, attn_sp_size=8)
    ops = _ops(V32, pc, w, prec=prec)
    full = sum(p.params for p in V32._attention.proj_parts())
    assert ops["qkv_proj"].flops == pytest.approx(2 * S / 8 * full)  # whole weights, 1/8 of the tokens
    keys = mean_keys_capped(w, 2048)
    assert ops["attention_core"].flops == pytest.approx(2 * 128 * S * keys * 1088 / 8)  # 128 heads, no padding
    c = _comms(V32, pc, w, prec=prec)
    assert c["kv_allgather"].primitive == "all_gather"
    assert c["kv_allgather"].bytes == pytest.approx(S * (656 + 132))  # FP8 latent + indexer key
    assert "attn_tp_allreduce" not in c  # no hidden-state all-reduce
    # cache is not sharded by SP: every rank keeps the whole KV, like TP
    kv_sp, idx_sp, _ = cache_per_rank(V32, pc, prec, batch=1, seq_len=S)
    kv_tp, idx_tp, _ = cache_per_rank(V32, make_parallel_config(8, attn_tp_size=8), prec, batch=1, seq_len=S)
    assert (kv_sp, idx_sp) == (kv_tp, idx_tp)


def test_cp_prefill_kv_allgather_overlaps_attention_exposed_is_excess() -> None:
    w = _prefill(32768)
    pc = make_parallel_config(8, cp_size=8)
    t = _comms(V32, pc, w)["kv_allgather"].time_s
    assert t > 0
    assert _comms(V32, pc, w, attn_compute_s=0.0)["kv_allgather"].exposed_s == pytest.approx(t)
    assert _comms(V32, pc, w, attn_compute_s=t / 4)["kv_allgather"].exposed_s == pytest.approx(0.75 * t)
    assert _comms(V32, pc, w, attn_compute_s=10 * t)["kv_allgather"].exposed_s == 0.0
    # in the full step the gather hides behind this layer's attention core + indexer
    step = step_cost(V32, H200, pc, _prec(V32), F_H200, w)
    assert sum(c.exposed_s for c in step.comms if c.name == "kv_allgather") == 0.0


def test_kvp_decode_merges_partial_outputs_with_lse_reduce_scatter() -> None:
    T = 16
    w = _decode(T, 65536)
    pc = make_parallel_config(8, kvp_size=8, o_proj_tp_size=8)
    c = _comms(V3, pc, w)
    merge = c["lse_merge"]
    assert merge.primitive == "reduce_scatter" and merge.group == 8
    assert merge.bytes == pytest.approx(T * 128 * 512 * 2)  # latent-space outputs bf16
    lse = c["lse_merge_gather"]  # the fp32 lse of every rank, gathered first
    assert lse.primitive == "all_gather" and lse.group == 8 and lse.bytes == pytest.approx(8 * T * 128 * 4)
    # the merge hands each rank its head slice: o_proj TP = kvp needs no input gather, only the scatter
    assert "oproj_tp_gather" not in c and c["oproj_tp_scatter"].bytes == pytest.approx(T * 7168 * 2)
    assert c["kvp_hidden_allgather"].bytes == pytest.approx(T * 7168 * 2)
    # each KVP rank reads 1/8 of the cache and does 1/8 of the pairs and of o_proj
    ops = _ops(V3, pc, w)
    assert ops["attention_core"].flops == pytest.approx(2 * 128 * T * 65536 * 1088 / 8)
    assert ops["o_proj"].flops == pytest.approx(2 * T * 128 * 128 * 7168 / 8)


def test_cp_decode_runs_as_attention_dp_with_the_groups_sequences_spread_over_its_ranks() -> None:
    """CP splits prompts; a decode step under CP is the attention-DP step of sequences / cp per rank."""
    B, W = 64, 16
    w = _decode(B, 16384, mtp=1)  # one CP group of 16 ranks holds all 64 sequences
    under_cp = step_cost(V32, A3, make_parallel_config(W, cp_size=W), _prec(V32, A3), factors_for(A3), w)
    as_dp = step_cost(V32, A3, make_parallel_config(W), _prec(V32, A3), factors_for(A3), _decode(B / W, 16384, 1))
    assert under_cp.time_s == pytest.approx(as_dp.time_s)
    assert not [c for c in under_cp.comms if c.name in ("kv_allgather", "lse_merge", "topk_merge")]
    # fewer sequences than CP ranks: the busiest rank decodes one, not a fraction
    one = step_cost(V32, A3, make_parallel_config(W, cp_size=W), _prec(V32, A3), factors_for(A3), _decode(1, 16384))
    dp_one = step_cost(V32, A3, make_parallel_config(W), _prec(V32, A3), factors_for(A3),
                       replace(_decode(1, 16384), busy_replicas=1))  # one replica busy, the MoE sees one token
    assert one.time_s == pytest.approx(dp_one.time_s)


def test_cp_prefill_still_splits_the_prompt_tokens() -> None:
    w = _prefill(32768)
    pc = make_parallel_config(8, cp_size=8)
    assert _ops(V32, pc, w)["qkv_proj"].flops == pytest.approx(_ops(V32, make_parallel_config(8), w)["qkv_proj"].flops / 8)


def test_oproj_tp_under_attention_dp_gathers_inputs_and_reduce_scatters_outputs() -> None:
    T = 64  # per replica
    w = _decode(T, 4096)
    pc = make_parallel_config(16, o_proj_tp_size=8)
    c = _comms(V32, pc, w, hw=A3, prec=_prec(V32, A3))
    gather, scatter = c["oproj_tp_gather"], c["oproj_tp_scatter"]
    # each rank sends its own T x (128 x 128) input, a 1/8 slice to each peer (fixed: was 8x that)
    assert gather.bytes == pytest.approx(T * 16384 * 2) and gather.group == 8
    assert scatter.primitive == "reduce_scatter"
    assert scatter.bytes == pytest.approx(8 * T * 7168 * 2)  # partial sums of the group's 8 x T tokens
    o = _ops(V32, pc, w, hw=A3, prec=_prec(V32, A3))["o_proj"]
    assert o.flops == pytest.approx(2 * 8 * T * 16384 * 7168 / 8)
    assert "oproj_tp_gather" not in _comms(V32, make_parallel_config(16), w, hw=A3, prec=_prec(V32, A3))


def test_resharding_cost_appears_at_a_boundary_where_tp_size_changes() -> None:
    T = 512
    w = _decode(T, 1024)
    nbytes = 8 * T * 7168 * 2  # the dense TP8 group gathers the tokens of 8 DP ranks
    # attention DP -> dense TP8: all-gather in, reduce-scatter out
    c = _comms(V3, make_parallel_config(8, dense_tp_size=8), w)
    assert c["dense_tp_gather"].primitive == "all_gather" and c["dense_tp_gather"].bytes == pytest.approx(nbytes)
    assert c["dense_tp_scatter"].primitive == "reduce_scatter"
    assert c["dense_tp_gather"].time_s == pytest.approx(comm.all_gather_s(H200, 8, nbytes))
    assert c["dense_tp_gather"].time_s + c["dense_tp_scatter"].time_s == pytest.approx(
        comm.all_reduce_s(H200, 8, nbytes))
    # same TP on both sides: a plain all-reduce; DP on both sides: nothing
    same = _comms(V3, make_parallel_config(8, attn_tp_size=8, dense_tp_size=8), w)
    assert "dense_tp_allreduce" in same and "dense_tp_gather" not in same
    assert not [k for k in _comms(V3, make_parallel_config(8), w) if k.startswith("dense")]


# ------------------------------------------------------------------------------------------------- MoE


def test_expected_distinct_experts_touched_is_E_times_one_minus_miss_probability() -> None:
    E, k = 256, 8
    assert distinct_experts_touched(E, k, 1) == pytest.approx(8)  # one token: its top-k
    t64 = distinct_experts_touched(E, k, 64)
    assert t64 == pytest.approx(E * (1 - (1 - k / E) ** 64))
    assert t64 == pytest.approx(222.44, abs=0.01)  # neither "all 256" nor "top-k 8"
    assert distinct_experts_touched(E, k, 10_000) == pytest.approx(E)
    # decode reads only the touched experts' weights: 64 tokens across EP8 -> 222.44 / 8 experts per rank
    w = _decode(8, 4096)  # 8 per replica x 8 replicas = 64 tokens
    prec = _prec(V3)
    routed = _ops(V3, make_parallel_config(8), w, prec=prec)["routed_experts"]
    expert = 3 * 7168 * 2048
    bpp = prec.fmt("experts").bytes_per_param
    act = 64 * 8 / 8 * (7168 + 2 * 2048) * 2
    assert routed.bytes == pytest.approx(t64 / 8 * expert * bpp + act)


def test_ep_dispatch_bytes_are_tokens_times_topk_times_hidden_times_bytes() -> None:
    w = _decode(4, 4096)  # 4 tokens per DP rank
    prec = _prec(V3)  # FP8 checkpoint on H200: FP8 dispatch, bf16 combine
    assert prec.activation == "fp8"
    c = _comms(V3, make_parallel_config(8), w, prec=prec)
    assert c["ep_dispatch"].bytes == pytest.approx(4 * 8 * 7168 * 1)
    assert c["ep_combine"].bytes == pytest.approx(4 * 8 * 7168 * 2)
    assert c["ep_dispatch"].time_s == pytest.approx(comm.ep_all_to_all_s(H200, 8, 4 * 8 * 7168))


def test_one_prompt_under_attention_dp_loads_the_moe_with_that_prompt_only() -> None:
    S = 4096
    one = Work("prefill", S, (S + 1) / 2, 1, 1, busy_replicas=1)
    dp = _ops(V32, make_parallel_config(8), one)
    sp = _ops(V32, make_parallel_config(8, attn_sp_size=8), _prefill(S))
    assert dp["routed_experts"].flops == pytest.approx(sp["routed_experts"].flops)
    # the busy rank keeps its tokens for the replicated modules (shared experts at dense_tp 1)
    assert dp["shared_experts"].flops == pytest.approx(8 * sp["shared_experts"].flops)


def test_a_prefill_of_fewer_prompts_than_replicas_costs_and_serves_those_prompts_only() -> None:
    # `estimate --phase prefill --batch 1` of DeepSeek-V3 under attention DP2 (EP2): one replica holds the prompt,
    # the other none. The MoE sees that prompt's tokens alone: S x top-8 pairs over EP2 per rank, 2 FLOPs per
    # expert parameter (3 x 7168 x 2048: gate, up, down), 58 MoE layers, at the H200 routing skew (the balls-in-bins
    # spread of 4,096 pairs over 2 ranks, 1.018, is below it); and the step finishes one prompt, not two
    S, moe_layers = 1024, 61 - 3
    prec = _prec(V3)
    pc = make_parallel_config(2)
    assert pc.attn_replicas == 2 and pc.moe_ep_size == 2
    one = estimate(V3, H200, pc, prec, F_H200, Workload("prefill", batch=1, seq_len=S))
    pairs = S * 8 / 2
    routed = sum(o.flops for o in one.prefill.ops if o.name == "routed_experts")
    assert routed == pytest.approx(moe_layers * 2 * pairs * 3 * 7168 * 2048 * F_H200.expert_imbalance)
    assert one.output_tokens_per_s == pytest.approx(1 / one.ttft_s)
    # two prompts fill both replicas: twice the MoE tokens, two prompts per step
    two = estimate(V3, H200, pc, prec, F_H200, Workload("prefill", batch=2, seq_len=S))
    assert sum(o.flops for o in two.prefill.ops if o.name == "routed_experts") == pytest.approx(2 * routed)
    assert two.output_tokens_per_s == pytest.approx(2 / two.ttft_s)


def test_dequant_fraction_slows_the_weight_only_gemms_only_and_replaces_the_grouped_one(monkeypatch) -> None:
    # NVFP4 experts on H200 (no FP4 rate) run W4A16 under the rule with FP4 listed (shipped empty:
    # precision.W4A16_ON_DEVICES_WITHOUT): the dequantizing MoE kernel at dequant_gemm of the 16-bit dense GEMM,
    # without grouped_gemm (fitted on the 8-bit grouped GEMMs); the FP8 dense GEMMs keep theirs
    monkeypatch.setattr("solver.specs.precision.W4A16_ON_DEVICES_WITHOUT", ("fp4",))
    pc = make_parallel_config(8, attn_tp_size=8, dense_tp_size=8, moe_tp_size=8)
    prec = _prec(V3, moe_weight_dtype="nvfp4")
    assert prec.weight_only("experts") and not prec.weight_only("dense")
    base = factors_for(H200, {"grouped_gemm": 0.25})
    half = factors_for(H200, {"grouped_gemm": 0.25, "dequant_gemm": 0.5})
    a, b = _ops(V3, pc, _prefill(8192), prec=prec, f=base), _ops(V3, pc, _prefill(8192), prec=prec, f=half)
    assert b["routed_experts"].compute_s == pytest.approx(2 * a["routed_experts"].compute_s)
    for name in ("shared_experts", "dense_ffn", "qkv_proj", "o_proj"):
        assert b[name].compute_s == pytest.approx(a[name].compute_s), name
    as_dense = _ops(V3, pc, _prefill(8192), prec=prec)  # grouped_gemm 1
    assert a["routed_experts"].compute_s == pytest.approx(as_dense["routed_experts"].compute_s)
    assert factors_for(H200, {"dequant_gemm": 3.0}).dequant_gemm == 1.0  # never faster than the 16-bit GEMM
    assert factors_for(H200).dequant_gemm == 1.0  # no fit: as the 16-bit GEMM


def test_grouped_gemm_fraction_slows_the_routed_expert_compute_only() -> None:
    # TP8 MoE (EP 1): 8192 prompt tokens x top-8 pairs on every rank, a compute-bound grouped GEMM
    pc = make_parallel_config(8, attn_tp_size=8, dense_tp_size=8, moe_tp_size=8)
    prec = _prec(V3)
    quarter = factors_for(H200, {"grouped_gemm": 0.25})
    dense, slow = _ops(V3, pc, _prefill(8192), prec=prec), _ops(V3, pc, _prefill(8192), prec=prec, f=quarter)
    assert slow["routed_experts"].compute_s == pytest.approx(4 * dense["routed_experts"].compute_s)
    assert slow["routed_experts"].memory_s == pytest.approx(dense["routed_experts"].memory_s)
    for name in ("shared_experts", "dense_ffn", "qkv_proj", "o_proj"):  # dense GEMMs keep the dense fraction
        assert slow[name].compute_s == pytest.approx(dense[name].compute_s), name
    assert factors_for(H200, {"grouped_gemm": 3.0}).grouped_gemm == 1.0  # never faster than a dense GEMM
    assert factors_for(H200).grouped_gemm == 1.0  # no fit: as dense
    # decode at small batch streams the touched experts' weights: the fraction leaves its time alone
    d = _decode(8, 4096)
    d_dense = _ops(V3, make_parallel_config(8), d, prec=prec)["routed_experts"]
    d_slow = _ops(V3, make_parallel_config(8), d, prec=prec, f=quarter)["routed_experts"]
    assert d_slow.bound == "memory" and d_slow.time_s == pytest.approx(d_dense.time_s)


def test_token_permute_moves_pairs_times_hidden_times_2_bytes_twice() -> None:
    # TP8 MoE: every rank permutes all 8192 x 8 pairs at full hidden width (one EP rank: no imbalance)
    tp8 = make_parallel_config(8, attn_tp_size=8, dense_tp_size=8, moe_tp_size=8)
    op = _ops(V3, tp8, _prefill(8192))["moe_permute"]
    assert op.module == "routed_experts" and op.flops == 0 and op.bound == "memory"
    assert op.bytes == pytest.approx(2 * 8192 * 8 * 7168 * 2)
    assert op.memory_s == pytest.approx(op.bytes / (H200.hbm_bandwidth_Bps * H200.efficiency.hbm))
    # EP8 under attention DP8: the busiest rank holds 8 x 8192 x 8 / 8 pairs times the 1.2 routing skew
    ep = _ops(V3, make_parallel_config(8), _prefill(8192))["moe_permute"]
    assert ep.bytes == pytest.approx(2 * 8192 * 8 * 1.2 * 7168 * 2)


def test_token_budget_is_the_frameworks_public_default_for_the_device() -> None:
    sg, vl, tr = (load_framework(n) for n in ("sglang", "vllm", "trtllm"))
    assert sg.efficiency_for("h200_sxm")["token_budget"] == 8192  # chunked_prefill_size below 160 GiB
    assert sg.efficiency_for("b200_sxm")["token_budget"] == 16384  # from 160 GiB
    assert vl.efficiency_for("h100_sxm")["token_budget"] == 8192  # max_num_batched_tokens from 70 GiB
    assert vl.efficiency_for("a100_sxm")["token_budget"] == 2048  # vLLM keeps A100-80GB at 2048 by name
    assert vl.efficiency_for("l40s")["token_budget"] == 2048  # 46,068 MiB per GPU, below 70 GiB
    assert tr.efficiency_for("b200_sxm")["token_budget"] == 8192  # max_num_tokens
    assert sg.efficiency_for("not_in_the_catalog")["token_budget"] == 8192  # unknown device: the base value


def test_token_budget_tier_follows_the_memory_of_a_users_own_hardware() -> None:
    """A hardware file outside the catalog still has its memory: the tier comes from it, not from the name."""
    sg = load_framework("sglang")  # runs on nvidia, amd and huawei devices
    assert sg.efficiency_for(_toy_hw(memory_bytes=192 * 2**30, vendor="amd"))["token_budget"] == 16384
    assert sg.efficiency_for(_toy_hw(memory_bytes=80 * 2**30, vendor="amd"))["token_budget"] == 8192


def test_vllm_keeps_any_device_named_a100_at_its_small_budget() -> None:
    """vLLM decides by the driver's device name ('a100' in it), not by the catalog's file name: a user's A100
    PCIe 80GB file gets 2048 tokens like the catalog's SXM, whatever its file is called."""
    vl = load_framework("vllm")
    a100 = load_hardware("a100_sxm").model_copy(update={"name": "my_pcie_box",
                                                        "description": "NVIDIA A100 PCIe 80GB"})
    h100 = load_hardware("h100_sxm").model_copy(update={"name": "my_box"})
    assert vl.efficiency_for(a100)["token_budget"] == 2048
    assert vl.efficiency_for(h100)["token_budget"] == 8192


def test_serving_budget_is_the_workloads_else_the_frameworks_split_over_one_engines_attention_dp() -> None:
    b200 = load_hardware("b200_sxm")
    wl = Workload("serving", isl=1024, osl=1024, concurrency=64)
    tp8, dp8 = make_parallel_config(8, attn_tp_size=8), make_parallel_config(8)
    f_sg = factors_for(b200, load_framework("sglang").efficiency_for("b200_sxm"))
    f_tr = factors_for(b200, load_framework("trtllm").efficiency_for("b200_sxm"))
    dsr1, llama = load_model("deepseek-r1"), load_model("llama-3.1-70b")
    assert token_budget(wl, f_sg, synced_ranks(dsr1, tp8)) == 16384
    assert token_budget(wl, f_sg, synced_ranks(dsr1, dp8)) == 2048  # chunked_prefill_size // attn_dp_size
    # a dense model's 8 replicas are engines of their own: each keeps the whole budget
    assert token_budget(wl, f_sg, synced_ranks(llama, dp8)) == 16384
    assert token_budget(wl, f_tr, synced_ranks(dsr1, dp8)) == 8192  # TRT-LLM: max_num_tokens per attention-DP rank
    assert token_budget(replace(wl, token_budget=4096), f_tr, 1) == 4096  # the workload's own wins
    assert token_budget(wl, factors_for(b200), 1) == DEFAULT_TOKEN_BUDGET  # no profile: the default
    assert serving_shape(replace(wl, token_budget=16384), 1, 1e6).prompts_per_step == 16
    assert serving_shape(wl, 1, 1e6).prompts_per_step == DEFAULT_TOKEN_BUDGET // 1024  # unresolved: default
    # estimate() resolves the framework's budget: the same figures as passing it explicitly
    m = load_model("deepseek-r1")
    prec = _prec(m, b200)
    auto = estimate(m, b200, tp8, prec, f_sg, wl)
    explicit = estimate(m, b200, tp8, prec, f_sg, replace(wl, token_budget=16384))
    assert auto.ttft_s == pytest.approx(explicit.ttft_s) and auto.tpot_s == pytest.approx(explicit.tpot_s)
    assert auto.ttft_s != pytest.approx(estimate(m, b200, tp8, prec, f_sg, replace(wl, token_budget=8192)).ttft_s)


# ------------------------------------------------------------------------------------- bound and MTP


def test_decode_of_a_big_model_at_small_batch_is_memory_bound() -> None:
    step = step_cost(V3, H200, make_parallel_config(8), _prec(V3), F_H200, _decode(4, 4096))
    ops = {o.name: o for o in step.ops}
    assert ops["routed_experts"].bound == "memory"
    assert ops["qkv_proj"].bound == "memory"
    split = step.split()
    assert split["memory_s"] > 5 * split["compute_s"]


def test_prefill_at_long_sequence_is_compute_bound() -> None:
    step = step_cost(V3, H200, make_parallel_config(8, cp_size=8), _prec(V3), F_H200, _prefill(32768))
    ops = {o.name: o for o in step.ops}
    for name in ("attention_core", "qkv_proj", "o_proj", "routed_experts"):
        assert ops[name].bound == "compute", name
    split = step.split()
    assert split["compute_s"] > 5 * split["memory_s"]


def test_mtp_tokens_per_step_is_one_plus_a_plus_a_squared() -> None:
    assert mtp_tokens_per_step(0, 0.7) == 1.0
    assert mtp_tokens_per_step(1, 0.7) == pytest.approx(1.7)
    assert mtp_tokens_per_step(3, 0.7) == pytest.approx(1 + 0.7 + 0.49 + 0.343)


def test_mtp_draft_passes_read_the_shared_lm_head_again() -> None:
    pc = make_parallel_config(8)
    prec = _prec(V3)
    base = step_cost(V3, H200, pc, prec, F_H200, _decode(8, 4096, mtp=2), mtp_layers=2)
    drafts = [o for o in base.ops if o.name == "mtp_lm_head"]
    assert len(drafts) == 1 and drafts[0].module == "lm_head"
    head = [o for o in head_ops(V3, H200, pc, prec, F_H200, _decode(8, 4096), count_params(V3)) if o.name == "lm_head"]
    assert drafts[0].bytes == pytest.approx(2 * head[0].bytes)  # two draft passes, one token per sequence each
    no_mtp = step_cost(V3, H200, pc, prec, F_H200, _decode(8, 4096))
    assert not [o for o in no_mtp.ops if o.name == "mtp_lm_head"]


def test_step_time_is_compute_plus_exposed_comm_plus_overhead() -> None:
    f = Factors(gemm=0.78, attention=0.75, hbm=0.8, comm=1.0, kernel_overhead_s=3e-6, step_overhead_s=1e-3)
    step = step_cost(V3, H200, make_parallel_config(8, attn_tp_size=8), _prec(V3), f, _decode(64, 4096))
    assert step.time_s == pytest.approx(sum(o.time_s for o in step.ops) + sum(c.exposed_s for c in step.comms)
                                        + 1e-3)
    mods = step.by_module()
    assert sum(m["time_s"] for m in mods.values()) + step.overhead_s == pytest.approx(step.time_s)
    s = step.split()
    assert sum(s.values()) == pytest.approx(step.time_s)
    assert math.isfinite(step.time_s)
