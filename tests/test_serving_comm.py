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
    from solver.specs.config.read import parse_model_config
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


# --- EP dispatch / combine (comm.ep_all_to_all_s): the kernel's per-call latency from the DeepEP fit
H800 = load_hardware("h800")
H800_NVL = 200e9 * 0.775  # hardware/h800.yaml intra-node line rate x efficiency
H800_RDMA = 50e9 * 0.86  # inter-node, one NIC per GPU
DEEPEP_DISPATCH = 128 * 8 * 7168  # 128 tokens x top-8 x hidden 7168, FP8: bytes each rank sends


def test_ep_kernel_latency_is_base_plus_per_doubling_at_ep8_and_ep256() -> None:
    from solver.estimate.comm import ep_kernel_latency_s

    k = H800.ep_a2a
    assert k is not None
    assert ep_kernel_latency_s(H800, 8) == pytest.approx(k.latency_s + 3 * k.per_doubling_s)
    assert ep_kernel_latency_s(H800, 256) == pytest.approx(k.latency_s + 8 * k.per_doubling_s)
    assert ep_kernel_latency_s(H800, 8) == pytest.approx(33.3e-6, rel=0.01)  # fit_ep_a2a.py, not a hop's 10 us


def test_ep_dispatch_at_ep8_and_ep256_is_latency_plus_slowest_level_bytes() -> None:
    from solver.estimate.comm import ep_all_to_all_s

    k = H800.ep_a2a
    ep8 = k.latency_s + 3 * k.per_doubling_s + DEEPEP_DISPATCH * 7 / 8 / H800_NVL
    assert ep_all_to_all_s(H800, 8, DEEPEP_DISPATCH) == pytest.approx(ep8)
    # 32 nodes: 248 of the 256 peers sit across the NIC, the slowest level
    ep256 = k.latency_s + 8 * k.per_doubling_s + DEEPEP_DISPATCH * 248 / 256 / H800_RDMA
    assert ep_all_to_all_s(H800, 256, DEEPEP_DISPATCH) == pytest.approx(ep256)


def test_ep_dispatch_lands_near_deepeps_published_times() -> None:
    from solver.estimate.comm import ep_all_to_all_s

    # facts/hardware.md (DeepEP README): dispatch 77 us at EP8, 194 us at EP256; combine (BF16) 114 / 369 us
    assert ep_all_to_all_s(H800, 8, DEEPEP_DISPATCH) == pytest.approx(77e-6, rel=0.05)
    assert ep_all_to_all_s(H800, 256, DEEPEP_DISPATCH) == pytest.approx(194e-6, rel=0.05)
    assert ep_all_to_all_s(H800, 8, 2 * DEEPEP_DISPATCH) == pytest.approx(114e-6, rel=0.05)
    assert ep_all_to_all_s(H800, 256, 2 * DEEPEP_DISPATCH) == pytest.approx(369e-6, rel=0.05)


def test_ep_dispatch_without_kernel_data_is_a_plain_all_to_all() -> None:
    from solver.estimate.comm import all_to_all_s, ep_all_to_all_s

    mi = load_hardware("mi300x")
    assert mi.ep_a2a is None
    assert ep_all_to_all_s(mi, 16, DEEPEP_DISPATCH) == pytest.approx(all_to_all_s(mi, 16, DEEPEP_DISPATCH))
    assert ep_all_to_all_s(H800, 1, DEEPEP_DISPATCH) == 0.0


def test_only_decode_dispatch_pays_the_ep_kernel_latency() -> None:
    # DeepSeek-V3 on 8 x H800, attention DP 8 + EP 8: decode dispatch = kernel latency + bytes; prefill runs the
    # throughput kernels (no published per-call figure): the plain all-to-all with the NVLink hop latency
    from solver.estimate.comm import all_to_all_s, ep_all_to_all_s
    from solver.estimate.compute import Work
    from solver.estimate.factors import factors_for
    from solver.estimate.step import layer_comms
    from solver.specs.model_catalog import load_model
    from solver.specs.parallel import make_parallel_config
    from solver.specs.precision import resolve_precision

    v3 = load_model("deepseek-v3")
    pc = make_parallel_config(8, attn_tp_size=1, moe_tp_size=1)
    prec = resolve_precision(v3, H800)
    assert pc.attn_tp_size == 1 and pc.moe_ep_size == 8

    def dispatch(w: Work):
        out = layer_comms(v3, H800, pc, prec, factors_for(H800), w, 0.0)
        return {c.name: c for cs in out.values() for c in cs}["ep_dispatch"]

    dec = dispatch(Work("decode", new_tokens=16, context=2048, sequences=16, logits_tokens=16))
    assert dec.bytes == pytest.approx(16 * 8 * 7168)  # FP8 dispatch: tokens x top-8 x hidden x 1 byte
    assert dec.time_s == pytest.approx(ep_all_to_all_s(H800, 8, dec.bytes))
    assert dec.time_s == pytest.approx(33.3e-6 + 16 * 8 * 7168 * 7 / 8 / H800_NVL, rel=0.01)
    pre = dispatch(Work("prefill", new_tokens=4096, context=2048, sequences=1, logits_tokens=1))
    assert pre.time_s == pytest.approx(all_to_all_s(H800, 8, pre.bytes))


def test_every_shipped_ep_latency_is_the_fit_on_deepeps_table() -> None:
    # the YAMLs carry benchmarks/fit_ep_a2a.py's result (rounded to 3 figures), one value for every device
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    from fit_ep_a2a import fit
    from solver.specs.hardware_catalog import list_hardware

    base, per_doubling, _ = fit()
    for name in list_hardware():
        k = load_hardware(name).ep_a2a
        if k is not None:
            assert k.latency_s == pytest.approx(base, rel=5e-3), name
            assert k.per_doubling_s == pytest.approx(per_doubling, rel=5e-3), name


# vLLM's dispatch (SGLang ships a copy; TRT-LLM's profile takes the same thresholds): one-shot at any size on 2
# ranks, below 512 KB on up to 4, below 256 KB on up to 8
BY_RANKS = CustomAllReduce(oneshot_max_bytes=256 * 1024, custom_max_bytes=8 * 2**20, latency_s=5e-6,
                           oneshot_by_ranks=((2, 8 * 2**20), (4, 512 * 1024)))


def test_two_ranks_run_one_shot_up_to_the_custom_buffer() -> None:
    nbytes = 2**20  # a TP 2 decode of 64 sequences x 8192 hidden x 2 bytes
    assert all_reduce_s(H100, 2, nbytes, custom=BY_RANKS) == pytest.approx(5e-6 + 1 * nbytes / BW)


def test_four_ranks_run_one_shot_below_512_kb_and_eight_ranks_two_shot() -> None:
    nbytes = 384 * 1024
    assert all_reduce_s(H100, 4, nbytes, custom=BY_RANKS) == pytest.approx(5e-6 + 3 * nbytes / BW)
    assert all_reduce_s(H100, 8, nbytes, custom=BY_RANKS) == pytest.approx(2 * 5e-6 + 2 * 7 / 8 * nbytes / BW)
    assert all_reduce_s(H100, 4, 1.5 * nbytes, custom=BY_RANKS) == pytest.approx(
        2 * 5e-6 + 2 * 3 / 4 * 1.5 * nbytes / BW)


def test_every_engine_profile_carries_the_rank_dependent_one_shot_limits() -> None:
    from solver.estimate.factors import factors_for
    from solver.specs.framework import load_framework

    for name in ("vllm", "sglang", "trtllm"):
        kernel = CustomAllReduce.of(factors_for(H100, load_framework(name).serving_factors()))
        assert kernel is not None
        assert [kernel.oneshot_max(n) for n in (2, 4, 8)] == [8 * 2**20, 512 * 1024, 256 * 1024]
