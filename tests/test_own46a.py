"""The term behind the planner's largest disagreement with the verified Atlas A3 decode deployments at one or
two sequences per rank (benchmarks/own_judgment_terms.py): under attention DP every rank streams every
attention-side weight each step, under attention TP one slice of it. These pin that term to the hand count."""
from __future__ import annotations

import pytest

from solver.estimate.compute import factors_for
from solver.estimate.serving import decode_step
from solver.specs.framework import load_framework
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import load_model
from solver.specs.parallel import ParallelConfig
from solver.specs.precision import resolve_precision

LAYERS = 61  # DeepSeek-R1 num_hidden_layers
# o_proj: num_attention_heads x v_head_dim -> hidden = 128 x 128 x 7168 int8 weights, plus one scale byte per
# 1024 weights (the W8A8 format's scale_bytes_per_param, 1/1024)
O_PROJ_BYTES = 128 * 128 * 7168 * (1 + 1 / 1024)  # 117,555,200 bytes per layer


def _o_proj_bytes_per_layer(attn_tp: int) -> float:
    """One decode step of R1 W8A8 on 128 A3 dies, one sequence per rank (r1-d128's batch 128), 64 tokens of
    context: the o_proj op's bytes on one rank, per layer."""
    m, hw = load_model("deepseek-r1"), load_hardware("atlas_a3")
    fw = load_framework("cann-recipes")
    f = factors_for(hw, fw.efficiency_for(hw))
    prec = resolve_precision(m, hw, "int8", None, "bf16")
    pc = ParallelConfig(world_size=128, attn_tp_size=attn_tp)
    step = decode_step(m, hw, pc, prec, f, 128 / pc.attn_replicas, 64)
    return sum(o.bytes for o in step.ops if o.module == "o_proj") / LAYERS


def test_attention_dp_streams_the_whole_o_proj_on_every_rank_each_step() -> None:
    """All TP 1 (r1-d128): 117,555,200 bytes a layer, 7.17 GB over 61 layers, ~5.3 ms at 1.6 TB/s x 0.84."""
    assert _o_proj_bytes_per_layer(1) == pytest.approx(O_PROJ_BYTES)


def test_attention_tp_streams_one_slice_of_the_o_proj() -> None:
    """Attention TP 32 (the planner's pick for r1-d128): 117,555,200 / 32 = 3,673,600 bytes a layer."""
    assert _o_proj_bytes_per_layer(32) == pytest.approx(O_PROJ_BYTES / 32)

