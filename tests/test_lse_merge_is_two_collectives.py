"""The log-sum-exp merge of KVP's partial outputs is two collectives, as the engines run it (vLLM
cp_lse_ag_out_rs: an all-gather of every rank's fp32 lse, then a reduce-scatter of the corrected outputs), so a
decode step pays two collective latencies per layer for it, not one. Before, one reduce-scatter carried the lse
bytes and the gather's latency was skipped: at short context DCP's per-layer collectives were priced one
latency too cheap.

Hand-computed on DeepSeek-V3's MLA (128 heads, absorbed decode: query width 512 + 64 = 576, merge width 512)
under vLLM, 8 x H200, TP 8 = attn_tp 2 x DCP 4, 16 sequences of 4,096 tokens decoding one token each: the core
runs 128 / 2 = 64 heads per rank, so T x heads = 16 x 64 = 1,024 rows.

    lse all-gather   4 ranks x 1,024 x 4 B          = 16,384 B out
    reduce-scatter   1,024 x 512 x 2 B              = 1,048,576 B in
    each on one NVLink level: t = latency + 3/4 x bytes / (bandwidth x tier efficiency x engine comm factor)."""
from __future__ import annotations

import pytest

from solver.estimate.compute import Kit, Work, factors_for
from solver.specs.framework import load_framework
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import load_model
from solver.specs.parallel import ParallelConfig
from solver.specs.precision import resolve_precision
from solver.specs.topology import group_levels


def test_lse_merge_is_two_collectives() -> None:
    m, h = load_model("deepseek-v3"), load_hardware("h200_sxm")
    f = factors_for(h, load_framework("vllm").efficiency_for(h))
    prec = resolve_precision(m, h, weight_dtype="bf16")
    pc = ParallelConfig(world_size=8, attn_tp_size=2, kvp_size=4, o_proj_tp_size=8, dense_tp_size=8,
                        moe_tp_size=8, embed_tp_size=8, lmhead_tp_size=8)
    w = Work("decode", new_tokens=16, context=4096, sequences=16, logits_tokens=16)
    comms = {c.name: c for c in m._attention.comms(Kit(h, pc, prec, f, w), 0.0)}
    gather, scatter = comms["lse_merge_gather"], comms["lse_merge"]
    assert (gather.primitive, gather.group, gather.bytes) == ("all_gather", 4, 4 * 16 * 64 * 4)
    assert (scatter.primitive, scatter.group, scatter.bytes) == ("reduce_scatter", 4, 16 * 64 * 512 * 2)
    (lv,) = group_levels(h, 4, 1)  # one node: one NVLink level
    bw = lv.tier.bandwidth_Bps * lv.tier.efficiency * f.comm
    assert gather.time_s == pytest.approx(lv.tier.latency_s + 3 / 4 * 16_384 / bw)
    assert scatter.time_s == pytest.approx(lv.tier.latency_s + 3 / 4 * 1_048_576 / bw)
    # two latencies: the merge alone costs at least twice the link's latency per layer
    assert gather.time_s + scatter.time_s >= 2 * lv.tier.latency_s
