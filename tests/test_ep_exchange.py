"""The EP token exchange the estimate prices is the one the engine's command runs (FrameworkServing.ep_exchange):
dispatch / combine kernels, an all-gather + reduce-scatter over the MoE group, or a plain all-to-all.

DeepSeek-V3 on 8 H100 (one node), attention DP 8 x EP 8, FP8 activations (dispatch in 1 byte, combine in 2):
hidden 7168, top-8 routing."""
from __future__ import annotations

from dataclasses import replace

import pytest
from pydantic import ValidationError

from solver.estimate import comm
from solver.estimate.compute import Work, factors_for
from solver.estimate.step import layer_comms
from solver.specs.framework import load_framework
from solver.specs.hardware_catalog import load_hardware
from solver.specs.layers.moe import rdma_copies_share
from solver.specs.model_catalog import load_model
from solver.specs.parallel import make_parallel_config
from solver.specs.precision import resolve_precision
from solver.specs.profile_serving import FrameworkServing

H100 = load_hardware("h100_sxm")
V3 = load_model("deepseek-v3")
DECODE = Work("decode", new_tokens=32, context=4096, sequences=32, logits_tokens=32)  # per attention replica (DP rank)


def _comms(exchange: str, pc=None, w: Work = DECODE, hw=H100) -> dict:
    pc = pc or make_parallel_config(8, attn_tp_size=1, moe_tp_size=1)
    f = replace(factors_for(hw), ep_exchange=exchange)
    out = layer_comms(V3, hw, pc, resolve_precision(V3, hw), f, w, 0.0)
    return {c.name: c for cs in out.values() for c in cs}


def test_vllm_and_sglang_default_commands_run_allgather_reducescatter() -> None:
    """vLLM 0.34.0's all2all_backend default and SGLang 0.5.23's moe_a2a_backend none: the profiles say so and
    the Factors the estimate reads carry it."""
    for name in ("vllm", "sglang"):
        fw = load_framework(name)
        assert fw.serving.ep_exchange == "allgather_reducescatter"
        assert factors_for(H100, fw.efficiency_for(H100)).ep_exchange == "allgather_reducescatter"


def test_a_profile_without_the_field_keeps_the_dispatch_kernels() -> None:
    assert FrameworkServing().ep_exchange == "a2a_kernel"
    assert factors_for(H100).ep_exchange == "a2a_kernel"


def test_an_unknown_exchange_is_refused() -> None:
    with pytest.raises(ValidationError, match="ep_exchange"):
        FrameworkServing(ep_exchange="deepep")  # type: ignore[arg-type]


def test_allgather_dispatch_gathers_the_whole_groups_tokens_over_the_moe_group() -> None:
    """32 tokens on each of the 8 DP ranks: the gathered buffer is 8 x 32 x 7168 x 1 B = 1,835,008 B (FP8), the
    reduce-scatter's 8 x 32 x 7168 x 2 B = 3,670,016 B; both over the 8 ranks of one node."""
    c = _comms("allgather_reducescatter")
    assert (c["ep_dispatch"].primitive, c["ep_dispatch"].group) == ("all_gather", 8)
    assert c["ep_dispatch"].bytes == pytest.approx(8 * 32 * 7168 * 1)
    assert (c["ep_combine"].primitive, c["ep_combine"].group) == ("reduce_scatter", 8)
    assert c["ep_combine"].bytes == pytest.approx(8 * 32 * 7168 * 2)
    assert c["ep_dispatch"].time_s == pytest.approx(comm.all_gather_s(H100, 8, 8 * 32 * 7168))


def test_allgather_reducescatter_sums_the_moe_tp_partials_in_its_reduce_scatter() -> None:
    """Attention DP 4 x (MoE TP 2 x EP 4): the reduce-scatter over all 8 ranks sums the MoE TP partial outputs
    too, so no moe_tp all-reduce is charged beside it; the kernels path keeps that all-reduce."""
    pc = make_parallel_config(8, attn_tp_size=2, moe_tp_size=2)
    ag = _comms("allgather_reducescatter", pc)
    assert ag["ep_combine"].group == 8 and not any(n.startswith("moe_tp") for n in ag)
    assert any(n.startswith("moe_tp") for n in _comms("a2a_kernel", pc))


def test_decode_kernels_pay_the_devices_ep_latency_and_a_plain_all_to_all_does_not() -> None:
    """32 tokens a rank x top-8 x 7168 x 1 B = 1,835,008 B sent (the same bytes as the all-gather's buffer
    here, top-8 = DP 8). a2a_kernel: the H100's ep_a2a latency
    (latency + per_doubling x log2 8) plus the bytes; all_to_all: the tier's latency plus the same bytes."""
    send = 32 * 8 * 7168
    kern, plain = _comms("a2a_kernel")["ep_dispatch"], _comms("all_to_all")["ep_dispatch"]
    assert kern.bytes == plain.bytes == pytest.approx(send)
    assert kern.time_s == pytest.approx(comm.ep_all_to_all_s(H100, 8, send))
    assert plain.primitive == "all_to_all"
    assert plain.time_s == pytest.approx(comm.all_to_all_s(H100, 8, send))


def test_a_plain_all_to_all_sends_every_pair_across_nodes_at_prefill() -> None:
    """EP 32 on 4 H100 nodes, a 2048-token prompt: the throughput kernels send 2048 x 8 x 7168 x share
    (share 0.44995, one RDMA copy per remote node hit); NCCL's all-to-all sends every pair, share 1."""
    pc = make_parallel_config(32, attn_tp_size=1, moe_tp_size=1)
    w = Work("prefill", new_tokens=2048, context=1024.5, sequences=1, logits_tokens=1)
    pairs = 2048 * 8 * 7168
    assert _comms("a2a_kernel", pc, w)["ep_dispatch"].bytes == pytest.approx(
        pairs * rdma_copies_share(H100, 32, 1, 8))
    assert _comms("all_to_all", pc, w)["ep_dispatch"].bytes == pytest.approx(pairs)


def test_without_attention_dp_no_exchange_is_charged() -> None:
    """TP 8 x EP 8: every rank holds every token, one all-reduce of the partial outputs whatever the exchange."""
    pc = make_parallel_config(8, attn_tp_size=8, moe_tp_size=1)
    for exchange in ("a2a_kernel", "allgather_reducescatter", "all_to_all"):
        names = _comms(exchange, pc)
        assert "ep_dispatch" not in names and "ep_combine" not in names
