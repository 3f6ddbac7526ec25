"""The prefill pool's EP dispatch across nodes (published #3's mechanism): the throughput-mode EP kernels cross RDMA
once per remote NVLink domain a token's experts sit on, not once per token-expert pair."""
from __future__ import annotations

import pytest

from solver.estimate.compute import Work, factors_for
from solver.estimate.step import layer_comms
from solver.specs.hardware_catalog import load_hardware
from solver.specs.layers.moe import rdma_copies_share
from solver.specs.model_catalog import load_model
from solver.specs.parallel import make_parallel_config
from solver.specs.precision import resolve_precision

H100 = load_hardware("h100_sxm")
GB200 = load_hardware("gb200")
V3 = load_model("deepseek-v3")


def _dispatch(pc, w, hw=H100):
    prec = resolve_precision(V3, hw)
    out = layer_comms(V3, hw, pc, prec, factors_for(hw), w, 0.0)
    return {c.name: c for cs in out.values() for c in cs}, prec


def test_a_token_crosses_rdma_once_per_remote_node_its_experts_sit_on() -> None:
    # EP32 on 4 nodes of 8, top-8 routing: a per-pair all-to-all puts 8 x 3/4 = 6 copies on RDMA; the remote
    # nodes hit are 3 x (1 - (3/4)^8) = 2.6997, so the share is 2.6997 / 6 = 0.44995
    assert rdma_copies_share(H100, 32, 1, 8) == pytest.approx(3 * (1 - 0.75 ** 8) / 6)
    assert rdma_copies_share(H100, 32, 1, 8) == pytest.approx(0.44995, abs=1e-5)


def test_inside_one_nvlink_domain_nothing_is_deduplicated() -> None:
    assert rdma_copies_share(H100, 8, 1, 8) == 1.0  # one node
    assert rdma_copies_share(GB200, 32, 1, 8) == 1.0  # 8 trays of one NVL72 rack: NVLink throughout


def test_prefill_dispatch_carries_the_share_and_decode_sends_every_pair() -> None:
    pc = make_parallel_config(32, attn_tp_size=1, moe_tp_size=1)
    tokens = 2048
    pre, prec = _dispatch(pc, Work("prefill", new_tokens=tokens, context=(tokens + 1) / 2, sequences=1,
                                   logits_tokens=1))
    assert prec.activation == "fp8"  # FP8 dispatch, bf16 combine
    share = rdma_copies_share(H100, 32, 1, 8)
    assert pre["ep_dispatch"].bytes == pytest.approx(tokens * 8 * 7168 * 1 * share)
    assert pre["ep_combine"].bytes == pytest.approx(tokens * 8 * 7168 * 2 * share)
    # decode runs the low-latency kernels, which send each token-expert pair to its expert's rank
    dec, _ = _dispatch(pc, Work("decode", new_tokens=4, context=4096, sequences=4, logits_tokens=4))
    assert dec["ep_dispatch"].bytes == pytest.approx(4 * 8 * 7168 * 1)
