"""KV transfer between the pools: bytes per request (MLA vs GQA) and the tier joining them, hand-computed."""
from __future__ import annotations

import pytest

from solver.specs.dtypes import KV16, KVFormat
from solver.estimate.disagg import kv_bytes_per_request, kv_transfer, transfer_tier
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import load_model
from solver.specs.parallel import make_parallel_config

R1 = "deepseek-ai/DeepSeek-R1"  # MLA: kv_lora_rank 512 + rope 64, 61 layers
L70 = "meta-llama/Meta-Llama-3.1-70B"  # GQA: 8 KV heads of 128, 80 layers


def test_mla_request_bytes_are_latent_plus_rope_per_layer() -> None:
    # bf16: (512 + 64) x 2 B = 1152 B per token per layer; x 61 layers x 2048 tokens
    assert kv_bytes_per_request(load_model(R1), KV16, 2048) == 1152 * 61 * 2048 == 143_917_056


def test_fp8_dense_mla_request_bytes_are_the_plain_fp8_row() -> None:
    # a dense MLA cache at fp8: (512 + 64) values of 1 B = 576 B per token per layer (the 656 B scaled row is the
    # sparse DSA kernels'; tests/test_engine_kv_layout.py)
    assert kv_bytes_per_request(load_model(R1), KVFormat(1), 2048) == 576 * 61 * 2048


def test_gqa_request_bytes_are_k_and_v_of_every_kv_head() -> None:
    # 8 heads x (128 + 128) x 2 B = 4096 B per token per layer; x 80 layers x 2048 tokens
    assert kv_bytes_per_request(load_model(L70), KV16, 2048) == 4096 * 80 * 2048 == 671_088_640


def test_attention_tp_splits_gqa_heads_but_not_an_mla_latent() -> None:
    r1, l70 = load_model(R1), load_model(L70)
    assert kv_bytes_per_request(l70, KV16, 2048, attn_tp=8) == kv_bytes_per_request(l70, KV16, 2048) / 8
    assert kv_bytes_per_request(r1, KV16, 2048, attn_tp=8) == kv_bytes_per_request(r1, KV16, 2048)


def test_tier_is_nvlink_inside_a_node_rdma_between_nodes_and_the_rack_fabric_on_nvl72() -> None:
    h100, gb200 = load_hardware("h100_sxm"), load_hardware("gb200")
    assert transfer_tier(h100, 4, 4)[0] == "intra_node"
    assert transfer_tier(h100, 8, 8)[0] == "inter_node"
    assert transfer_tier(gb200, 4, 8)[0] == "scale_up"


def test_the_tier_is_the_slowest_the_whole_deployment_spans_when_a_pool_has_several_workers() -> None:
    # the router pairs any prefill worker with any decode worker: 4 prefill workers of 1 H100 and 3 decode workers
    # of 4 fill two nodes, so some transfers cross RDMA though one prefill and one decode worker share a node
    # (Llama-3.1-8B 8K/1K on 16 H100, vLLM: 4P3D was costed at 2.92 ms over NVLink; now 24.99 ms over RDMA)
    h100, gb200 = load_hardware("h100_sxm"), load_hardware("gb200")
    assert transfer_tier(h100, 1, 4)[0] == "intra_node"
    assert transfer_tier(h100, 1, 4, 4, 3)[0] == "inter_node"
    assert transfer_tier(h100, 1, 2, 2, 3)[0] == "intra_node"  # 8 ranks: one node
    assert transfer_tier(gb200, 8, 8, 4, 5)[0] == "scale_up"  # 72 ranks: one NVL72 rack
    assert transfer_tier(gb200, 8, 8, 5, 5)[0] == "inter_rack"
    p1 = make_parallel_config(1)
    d4 = make_parallel_config(4, attn_tp_size=4, dense_tp_size=4, embed_tp_size=4, lmhead_tp_size=4)
    one, many = (kv_transfer(load_model(L70), h100, p1, d4, KV16, 2048, prefill_workers=x, decode_workers=y)
                 for x, y in ((1, 1), (4, 3)))
    assert (one.tier, many.tier) == ("intra_node", "inter_node")
    assert many.time_s > one.time_s


def test_gqa_transfer_time_tp8_to_tp8_over_rdma() -> None:
    # each of the 8 decode ranks receives its KV heads: 671,088,640 / 8 B; the 8 prefill ranks send as much;
    # H100 RDMA: 50 GB/s x 0.86 efficiency, 20 us latency
    hw = load_hardware("h100_sxm")
    p = make_parallel_config(8, attn_tp_size=8, dense_tp_size=8, embed_tp_size=8, lmhead_tp_size=8, moe_tp_size=8)
    t = kv_transfer(load_model(L70), hw, p, p, KV16, 2048)
    assert t.tier == "inter_node"
    assert t.recv_bytes_per_rank == t.send_bytes_per_rank == 671_088_640 / 8
    assert t.time_s == pytest.approx(20e-6 + 671_088_640 / 8 / (50e9 * 0.86))


def test_mla_transfer_to_a_tp_decode_group_sends_the_latent_to_every_rank() -> None:
    # decode attention TP4: each of its 4 ranks holds the whole latent; one prefill rank (TP1) sends 4 copies
    hw = load_hardware("h100_sxm")
    pre = make_parallel_config(8, attn_tp_size=1, moe_tp_size=1)
    dec = make_parallel_config(8, attn_tp_size=4, moe_tp_size=1)
    t = kv_transfer(load_model(R1), hw, pre, dec, KV16, 2048)
    whole = 143_917_056
    assert t.recv_bytes_per_rank == whole
    assert t.send_bytes_per_rank == 4 * whole
    assert t.time_s == pytest.approx(20e-6 + 4 * whole / (50e9 * 0.86))


def test_decode_pool_memory_holds_the_kv_of_all_its_running_requests() -> None:
    # Llama-3.1-70B bf16 KV, decode TP8 (one KV head per rank): 80 layers x (128 + 128) x 2 B = 40,960 B per token
    # per rank; 64 sequences of 1024 + 1024 tokens on the single replica
    from solver.estimate.compute import factors_for
    from solver.estimate.disagg import DisaggWorkload, estimate_disagg
    from solver.specs.precision import resolve_precision

    m, hw = load_model(L70), load_hardware("h100_sxm")
    tp8 = make_parallel_config(8, attn_tp_size=8, dense_tp_size=8, embed_tp_size=8, lmhead_tp_size=8, moe_tp_size=8)
    prec = resolve_precision(m, hw, "fp8", None, None)
    f = factors_for(hw, {})
    e = estimate_disagg(m, hw, tp8, tp8, prec, f, f, DisaggWorkload(isl=1024, osl=1024, concurrency=64,
                                                                      prefill_workers=1, decode_workers=1))
    assert e.shape.running == 64
    assert e.decode_memory.kv_cache_bytes == pytest.approx(64 * 2048 * 80 * 256 * 2)
    # the prefill worker holds only the prompts of one step
    assert e.prefill_memory.kv_cache_bytes == pytest.approx(e.shape.prompts_per_step * 1024 * 80 * 256 * 2)
    # throughput per GPU counts the ranks of both pools
    assert e.output_tokens_per_s_per_rank == pytest.approx(e.output_tokens_per_s / 16)


def test_the_state_that_does_not_grow_is_handed_over_with_the_kv() -> None:
    """A hybrid's Mamba-2 layers built their SSM state and conv tail during prefill: the decode worker needs them
    as much as the attention layers' KV. Nemotron-3-Nano: 23 Mamba-2 layers of 64 heads x 64 x d_state 128 in
    fp32 plus a bf16 conv tail of 3 x (4096 + 2 x 8 x 128) (tests/test_memory.py), beside 6 GQA layers' KV;
    CP on the decode side splits the KV, not the state."""
    from solver.estimate.disagg import constant_state_per_request

    nano = load_model("nemotron-3-nano")
    state = 23 * (64 * 64 * 128 * 4 + 3 * (4096 + 2 * 8 * 128) * 2)
    assert constant_state_per_request(nano, KV16) == state
    hw = load_hardware("h100_sxm")
    one = make_parallel_config(1)
    t = kv_transfer(nano, hw, one, one, KV16, 2048)
    assert t.bytes_per_request == kv_bytes_per_request(nano, KV16, 2048) + state
    two = make_parallel_config(2, cp_size=2, moe_tp_size=1)
    assert kv_transfer(nano, hw, one, two, KV16, 2048).recv_bytes_per_rank == kv_bytes_per_request(nano, KV16, 2048) / 2 + state
    # an all-attention model hands over its KV alone
    assert constant_state_per_request(load_model(L70), KV16) == 0


def test_a_handoff_over_the_nics_is_priced_on_the_rdma_tier_whatever_the_pools_span() -> None:
    # SGLang's mooncake transfer engine speaks rdma unless NVLink is opted into (profile kv_handoff_over_nics):
    # 4 + 8 ranks inside one NVL72 rack still cross the inter-rack NICs, 4 + 4 inside one H100 node the inter-node
    h100, gb200 = load_hardware("h100_sxm"), load_hardware("gb200")
    assert transfer_tier(gb200, 4, 8, over_nics=True)[0] == "inter_rack"
    assert transfer_tier(h100, 4, 4, over_nics=True)[0] == "inter_node"
    assert transfer_tier(h100, 8, 8, 2, 2, over_nics=True)[0] == "inter_node"


def test_sglang_prices_its_kv_handoff_on_the_nics_and_vllm_on_the_span() -> None:
    # the same 1P1D of Llama-3.1-70B on one H100 node: NIXL's span (NVLink) under vLLM, mooncake's RDMA under SGLang
    from solver.estimate.disagg import DisaggWorkload, estimate_disagg
    from solver.estimate.factors import factors_for
    from solver.specs.framework import load_framework
    from solver.specs.precision import resolve_precision

    model, h100 = load_model(L70), load_hardware("h100_sxm")
    pc = make_parallel_config(4, attn_tp_size=4, dense_tp_size=4, embed_tp_size=4, lmhead_tp_size=4)
    prec = resolve_precision(model, h100)
    wl = DisaggWorkload(isl=4096, osl=256, concurrency=8)
    tiers = {}
    for name in ("vllm", "sglang"):
        fw = load_framework(name)
        f = factors_for(h100, fw.efficiency_for(h100))
        tiers[name] = estimate_disagg(model, h100, pc, pc, prec, f, f, wl).transfer.tier
    assert tiers == {"vllm": "intra_node", "sglang": "inter_node"}
