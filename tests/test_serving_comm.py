"""Small-message all-reduce: the engines' one-shot / two-shot kernels (comm.py), hand-computed on H100."""
from __future__ import annotations

import pytest

from solver.estimate.comm import CustomAllReduce, all_reduce_s
from solver.specs.hardware_catalog import load_hardware

H100 = load_hardware("h100_sxm")
BW = 450e9 * 0.82  # intra-node line rate x achieved efficiency (hardware/h100_sxm.yaml)
KERNEL = CustomAllReduce(oneshot_max_bytes=256 * 1024, custom_max_bytes=8 * 2**20, latency_s=5e-6)


def test_one_shot_reads_every_peers_buffer_after_one_latency() -> None:
    nbytes = 16 * 1024  # a decode step of 8 tokens x 1024 hidden x 2 bytes
    assert all_reduce_s(H100, 8, nbytes, custom=KERNEL) == pytest.approx(5e-6 + 7 * nbytes / BW)


def test_two_shot_above_the_one_shot_size() -> None:
    nbytes = 2**20
    assert all_reduce_s(H100, 8, nbytes, custom=KERNEL) == pytest.approx(2 * 5e-6 + 2 * 7 / 8 * nbytes / BW)


def test_nccl_ring_above_the_custom_buffer() -> None:
    nbytes = 64 * 2**20
    ring = 2 * (10e-6 + 7 / 8 * nbytes / BW)
    assert all_reduce_s(H100, 8, nbytes, custom=KERNEL) == pytest.approx(ring)
    assert all_reduce_s(H100, 8, nbytes) == pytest.approx(ring)


def test_no_custom_kernel_across_nodes() -> None:
    nbytes = 16 * 1024
    assert all_reduce_s(H100, 16, nbytes, custom=KERNEL) == pytest.approx(all_reduce_s(H100, 16, nbytes))


def test_small_messages_cost_less_than_the_ring() -> None:
    # at decode sizes the latency decides: one latency instead of two per level
    assert all_reduce_s(H100, 8, 16 * 1024, custom=KERNEL) < 0.5 * all_reduce_s(H100, 8, 16 * 1024)


def test_custom_kernel_latency_defaults_to_the_link_tier() -> None:
    tier = CustomAllReduce(256 * 1024, 8 * 2**20)
    assert all_reduce_s(H100, 2, 1024, custom=tier) == pytest.approx(10e-6 + 1024 / BW)


def test_ep_under_attention_tp_reduces_once_and_dispatches_nothing() -> None:
    # attention TP4 over the whole MoE group (EP4): every rank holds the step's 4 tokens, runs its 2 local
    # experts on those routed to them, and one all-reduce of 4 tokens x 64 hidden x 2 bytes sums the routed
    # and the shared partial outputs; under attention DP the tokens must travel (dispatch / combine)
    from solver.estimate.compute import Kit, Work, factors_for
    from solver.specs.layers.moe import MoE
    from solver.specs.model import parse_model_config
    from solver.specs.parallel import make_parallel_config
    from solver.specs.precision import resolve_precision

    spec = parse_model_config(dict(model_type="llama", hidden_size=64, num_hidden_layers=1, num_attention_heads=4,
                                   num_key_value_heads=4, intermediate_size=128, vocab_size=1000), "toy")
    moe = MoE(hidden=64, experts=8, topk=2, inter=32, shared_inter=32)
    w = Work("decode", new_tokens=4, context=1000, sequences=4, logits_tokens=4)

    def comms(**knobs):
        kit = Kit(H100, make_parallel_config(4, **knobs), resolve_precision(spec, H100), factors_for(H100), w)
        return moe.comms(kit, 0.0)

    tp = comms(attn_tp_size=4, dense_tp_size=4, moe_tp_size=1)
    assert [c.name for c in tp] == ["moe_ep_allreduce"]
    assert tp[0].time_s == pytest.approx(all_reduce_s(H100, 4, 4 * 64 * 2))
    dp = comms(attn_tp_size=1, dense_tp_size=1, moe_tp_size=1)
    assert [c.name for c in dp] == ["ep_dispatch", "ep_combine"]
