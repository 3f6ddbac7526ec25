"""Hyper-connections in the cost model (layers/hyper.py): FLOPs, bytes and kernels of the stream mixing per
sub-block, the m-stream residual in activation memory, the m-stream pipeline hand-off. Hand figures: DeepSeek-V4-Pro
(hidden 7168, hc_mult 4, hc_sinkhorn_iters 20) and Qwen4-Exp (hidden 2048, hc_count 4, hc_lowrank 320)."""
from __future__ import annotations

from dataclasses import replace
import json
from pathlib import Path

import pytest

from solver.estimate.compute import Kit, Work, factors_for
from solver.estimate.activations import activation_terms
from solver.estimate.pipeline import sends
from solver.estimate.step import micro_work, step_cost
from solver.specs.config.read import parse_model_config
from solver.specs.framework import load_framework
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import load_model
from solver.specs.parallel import make_parallel_config
from solver.specs.precision import resolve_precision

QWEN4 = Path(__file__).parent / "data" / "configs_unseen" / "round28" / "Qwen--Qwen4-Exp.json"


@pytest.fixture(scope="module")
def v4():
    return load_model("deepseek-v4-pro")


def _plain(model):
    """The same model with its hyper-connections removed (one residual stream)."""
    return replace(model, layers=tuple(replace(layer, hyper=None) for layer in model.layers))


def test_mhc_flops_per_token_per_sub_block_follow_the_forward(v4):
    hc = v4.layers[0].hyper
    assert (hc.streams, hc.hidden, hc.sinkhorn_iters, hc.rank) == (4, 7168, 20, 0)
    mh = 4 * 7168  # 28,672
    # pre: norm 3mh + map 2 x 24 x mh + Sinkhorn (4 x 20 - 2) x 16 + collapse 2mh
    assert hc.flops_per_token()[0] == 86_016 + 1_376_256 + 1_248 + 57_344 == 1_520_864
    # post: comb^T @ streams 2 x 16 x 7168 + post x output and the add 2mh
    assert hc.flops_per_token()[1] == 229_376 + 57_344 == 286_720
    # a layer (attention and FFN sub-blocks): 3.6 MFLOP a token
    assert 2 * sum(hc.flops_per_token()) == 3_615_168


def test_low_rank_hyper_connection_flops_follow_the_gated_residual():
    hc = parse_model_config(json.loads(QWEN4.read_text()), "qwen4").layers[0].hyper
    assert (hc.streams, hc.hidden, hc.rank) == (4, 2048, 320)
    mh = 4 * 2048
    # weighted norm 4mh + down and up 4 x mh x 320 + gated mean 2mh + inject map 2 x 4 x mh; post 2mh
    assert hc.flops_per_token() == (32_768 + 10_485_760 + 16_384 + 65_536, 16_384)


def test_hyper_connection_bytes_read_the_streams_twice_and_write_them_once(v4):
    # pre: read 4 x 7168, write 7168; post: read 4 x 7168 and 7168, write 4 x 7168; bf16
    assert v4.layers[0].hyper.bytes_per_token() == (71_680, 129_024)


def test_mhc_ops_read_the_fp32_maps_once_a_step_and_replicate_over_attention_tp(v4):
    hw = load_hardware("b200_sxm")
    f = factors_for(hw, load_framework("vllm").efficiency_for(hw))
    prec = resolve_precision(v4, hw)
    hc = v4.layers[0].hyper
    w = Work("prefill", new_tokens=8192, context=4096, sequences=1, logits_tokens=1)
    pre, post = hc.ops(Kit(hw, make_parallel_config(8, attn_tp_size=8), prec, f, w))
    weights = (24 * 28_672 + 24 + 3) * 4  # one sub-block's map, bias and scales in fp32: 2,752,620 B
    assert pre.flops == 2 * 8192 * 1_520_864 and post.flops == 2 * 8192 * 286_720
    assert pre.bytes == 2 * (8192 * 71_680 + weights) and post.bytes == 2 * 8192 * 129_024
    assert pre.overhead_s == pytest.approx(2 * 2 * f.kernel_overhead_s)
    assert post.overhead_s == pytest.approx(2 * 1 * f.kernel_overhead_s)
    # CP splits the tokens a rank mixes; attention TP does not (the residual is whole on every TP rank)
    cp_pre, _ = hc.ops(Kit(hw, make_parallel_config(8, cp_size=2, attn_tp_size=4), prec, f, w))
    assert cp_pre.flops == pre.flops / 2


def test_hyper_connections_are_costed_in_the_step_under_the_norms_module(v4):
    hw = load_hardware("b200_sxm")
    f = factors_for(hw, load_framework("vllm").efficiency_for(hw))
    prec = resolve_precision(v4, hw)
    pc = make_parallel_config(8, attn_tp_size=8, dense_tp_size=8, embed_tp_size=8, lmhead_tp_size=8)
    w = Work("decode", new_tokens=16, context=4096, sequences=16, logits_tokens=16)
    step = step_cost(v4, hw, pc, prec, f, w)
    hyper = [o for o in step.ops if o.name.startswith("hyper_")]
    assert {o.module for o in hyper} == {"norms"}
    layers = len(v4.layers)  # 61, all mixing 4 streams
    assert sum(o.flops for o in hyper) == layers * 2 * 16 * (1_520_864 + 286_720)
    assert not [o for o in step_cost(_plain(v4), hw, pc, prec, f, w).ops if o.name.startswith("hyper_")]


def test_prefill_activation_residual_holds_every_stream(v4):
    pc = make_parallel_config(8, attn_tp_size=8)
    with_hc = activation_terms(v4, pc, 8192, 1)
    plain = activation_terms(_plain(v4), pc, 8192, 1)
    # an 8K chunk: (4 + 2) x 8192 x 7168 x 2 B of residual streams, normed input and output, against 3 x
    assert all(with_hc[k] - plain[k] == 3 * 8192 * 7168 * 2 == 352_321_536 for k in plain)


def test_pipeline_hand_off_sends_every_stream(v4):
    assert v4.residual_width == 4 * 7168
    hw = load_hardware("h200_sxm")
    f = factors_for(hw, load_framework("vllm").efficiency_for(hw))
    prec = resolve_precision(v4, hw)
    pc = make_parallel_config(16, attn_tp_size=8, dense_tp_size=8, pp_size=2)
    w = Work("prefill", new_tokens=8192, context=4096, sequences=1, logits_tokens=1)
    m, micro = micro_work(2, w)
    send = next(c for c in step_cost(v4, hw, pc, prec, f, w).comms if c.name == "pp_send_recv")
    # 8192 tokens x 4 streams x 7168 x bf16 = 469,762,048 B a boundary crossing, 1/8 of it per TP8 rank, over the
    # step's hand-offs (one: a prompt through two stages)
    assert micro.new_tokens * 4 * 7168 * 2 == 469_762_048
    assert send.bytes == 469_762_048 / 8 * sends("prefill", 2, m) == 58_720_256


def test_a_model_without_hyper_connections_keeps_one_stream():
    llama = load_model("llama-3.1-70b")
    assert llama.residual_streams == 1 and llama.residual_width == llama.hidden_size
    assert all(layer.hyper is None for layer in llama.layers)


# --- the final hyper-connection head, the CSA indexer's keys, the fp32 maps in memory -------------------------------
# V4-Pro's total by hand, tensor by tensor from transformers 5.25.0 modeling_deepseek_v4.py (h 7168, 61 layers: 31
# HCA 1:128, 30 CSA 1:4; MTP apart): embed + lm_head 2 x 129,280 x 7168; per layer attention 115,345,536 (q_a_proj,
# q_a_norm, q_b_proj, kv_proj, kv_norm, sinks) + o_a/o_b 184,549,376 + MoE 25,435,963,392 (384 experts, shared,
# router) + norms 14,336 + attn_hc/ffn_hc 1,376,310; HCA compressor 7,406,080; CSA compressor 14,687,744 + indexer
# 16,712,832 (wq_b, weights_proj, its compressor: no wk); final norm 7168; hc_head 114,693. Sum 1,572,997,179,491,
# + e_score_correction_bias 384 on each of the 58 score-routed layers (the 3 hash layers, num_hash_layers, hold a
# tid2eid table instead; counted there until stop 37: 1,152 over) = 1,572,997,201,763, transformers 5.25.0's
# meta-device count with its router-bias buffers (tests/data/transformers_oracle.tsv).
V4_PRO_TOTAL = 1_572_997_201_763


def test_mhc_head_weights_are_m_by_m_hidden_plus_bias_and_scale(v4):
    assert v4.hyper_head == 4 * 4 * 7168 + 4 + 1 == 114_693


def test_v4_pro_total_matches_the_tensor_by_tensor_hand_count(v4):
    from solver.estimate.params import count_params
    rep = count_params(v4)
    assert rep.total == V4_PRO_TOTAL
    assert rep.by_name()["lm_head"] == 129_280 * 7168 + 114_693  # the head's collapse sits with the head


def test_each_mtp_module_holds_its_own_mhc_head(v4):
    from solver.estimate.params import count_params
    glue = next(m for m in count_params(v4).mtp if m.name == "mtp_glue")
    assert glue.params == 2 * 7168 * 7168 + 3 * 7168 + 114_693  # e_proj, h_proj, enorm, hnorm, norm, hc_head


def test_csa_indexer_keys_come_from_its_compressor_not_a_key_projection(v4):
    from solver.estimate.params import count_params
    per_layer = 1536 * 64 * 128 + 7168 * 64 + (2 * 7168 * 256 + 4 * 256 + 128)  # wq_b, weights_proj, compressor
    assert count_params(v4).by_name()["indexer"] == 30 * per_layer == 501_384_960


def test_mhc_maps_and_head_are_held_in_fp32_in_memory(v4):
    from solver.estimate.memory_options import MemoryOptions
    from solver.estimate.weights import weights_per_rank
    hw = load_hardware("b200_sxm")
    pc = make_parallel_config(8, attn_tp_size=8, dense_tp_size=8, embed_tp_size=8, lmhead_tp_size=8)
    w = weights_per_rank(v4, pc, resolve_precision(v4, hw), MemoryOptions())
    assert w["norms"] == (61 * 2 * 7168 + 7168) * 2 + 61 * 1_376_310 * 4  # bf16 norms, fp32 maps
    assert w["lm_head"] == 129_280 * 7168 * 2 / 8 + 114_693 * 4


def test_low_rank_hyper_connections_keep_the_model_dtype_and_no_mhc_head():
    model = parse_model_config(json.loads(QWEN4.read_text()), "qwen4-exp")
    assert model.hyper_head == 0
    assert model.layers[0].hyper.part().dtype is None


def test_mhc_head_is_costed_once_a_token_with_the_head(v4):
    hw = load_hardware("b200_sxm")
    f = factors_for(hw, load_framework("vllm").efficiency_for(hw))
    pc = make_parallel_config(8, attn_tp_size=8, dense_tp_size=8, embed_tp_size=8, lmhead_tp_size=8)
    w = Work("prefill", new_tokens=8192, context=4096, sequences=2, logits_tokens=2)
    step = step_cost(v4, hw, pc, resolve_precision(v4, hw), f, w)
    (head,) = [o for o in step.ops if o.name == "hc_head"]
    mh = 4 * 7168
    assert head.module == "lm_head"
    assert head.flops == 8192 * (3 * mh + 2 * 4 * mh + 2 * mh)  # norm, map, collapse: 372,736 a token
    assert head.bytes == 8192 * 5 * 7168 * 2 + 114_693 * 4  # streams read, hidden written; the fp32 map once
    assert head.overhead_s == pytest.approx(f.kernel_overhead_s)


def test_each_mtp_draft_pass_runs_its_modules_mhc_head(v4):
    # the MTP module holds its own hc_head (test_each_mtp_module_holds_its_own_mhc_head): every draft pass collapses
    # its one token per sequence with it before the shared LM head, as the main pass does
    hw = load_hardware("b200_sxm")
    f = factors_for(hw, load_framework("vllm").efficiency_for(hw))
    pc = make_parallel_config(8, attn_tp_size=8, dense_tp_size=8, embed_tp_size=8, lmhead_tp_size=8)
    w = Work("decode", new_tokens=48, context=4096, sequences=16, logits_tokens=48)
    step = step_cost(v4, hw, pc, resolve_precision(v4, hw), f, w, mtp_layers=2)
    (draft,) = [o for o in step.ops if o.name == "mtp_hc_head"]
    mh = 4 * 7168
    assert draft.module == "lm_head"
    assert draft.flops == 2 * 16 * (3 * mh + 2 * 4 * mh + 2 * mh)  # two passes of 16 tokens
    assert draft.bytes == 2 * (16 * 5 * 7168 * 2 + 114_693 * 4)  # the fp32 map read again each pass
    assert draft.overhead_s == pytest.approx(2 * f.kernel_overhead_s)
    no_head = replace(_plain(v4), hyper_head=0)
    assert not [o for o in step_cost(no_head, hw, pc, resolve_precision(v4, hw), f, w, mtp_layers=2).ops
                if o.name == "mtp_hc_head"]
