"""Hyper-connections in the cost model (layers/hyper.py): FLOPs, bytes and kernels of the stream mixing per
sub-block, the m-stream residual in activation memory, the m-stream pipeline hand-off. Hand figures: DeepSeek-V4-Pro
(hidden 7168, hc_mult 4, hc_sinkhorn_iters 20) and Qwen4-Exp (hidden 2048, hc_count 4, hc_lowrank 320)."""
from __future__ import annotations

from dataclasses import replace
import json
from pathlib import Path

import pytest

from solver.estimate.compute import Kit, Work, factors_for
from solver.estimate.memory import activation_terms
from solver.estimate.pipeline import slots
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
    # 8192 tokens x 4 streams x 7168 x bf16 = 469,762,048 B a boundary crossing, over the step's slots
    assert micro.new_tokens * 4 * 7168 * 2 == 469_762_048
    assert send.bytes == 469_762_048 * slots("prefill", 2, m)


def test_a_model_without_hyper_connections_keeps_one_stream():
    llama = load_model("llama-3.1-70b")
    assert llama.residual_streams == 1 and llama.residual_width == llama.hidden_size
    assert all(layer.hyper is None for layer in llama.layers)
