"""The communication a step pays beyond TP and EP, checked by hand: the disaggregated KV transfer's link rate on a
switchless full mesh, and the context-parallel K/V gather and the KVP merge's bytes. MI355X's node: Infinity Fabric,
7 links summing to 448 GB/s, efficiency 0.7, latency 10 us (hardware/mi355x.yaml); H200's NVLink: a switch."""
from __future__ import annotations

import pytest

from solver.specs.dtypes import KV16
from solver.estimate.compute import Work
from solver.estimate.factors import factors_for
from solver.estimate.disagg import kv_bytes_per_request, kv_transfer
from solver.estimate.step import step_cost
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import load_model
from solver.specs.parallel import make_parallel_config
from solver.specs.precision import resolve_precision

L70 = "meta-llama/Meta-Llama-3.1-70B"  # GQA: 8 KV heads of 128, 80 layers
R1 = "deepseek-ai/DeepSeek-R1"  # MLA: latent 512 + rope 64, 61 layers

MESH_LINK_BPS = 448e9 / 7  # one Infinity Fabric link
MESH_EFF, MESH_LAT = 0.7, 10e-6


def _tp(n: int, world: int | None = None):
    return make_parallel_config(world or n, attn_tp_size=n, dense_tp_size=n, embed_tp_size=n, lmhead_tp_size=n,
                                moe_tp_size=1 if world else n)


def test_kv_transfer_on_a_full_mesh_drives_one_link_per_peer() -> None:
    """A TP4 prefill worker and a TP4 decode worker fill one 8-GPU MI355X node: each prefill rank sends its 2 KV
    heads to the one decode rank holding them, over the one link between the two.
    recv = send = 8 heads / 4 x 256 values x 2 B x 80 layers x 2048 tokens = 671,088,640 / 4 = 167,772,160 B;
    t = 10 us + 167,772,160 / (64e9 x 0.7) = 10 us + 3.7449 ms (the whole 448 GB/s would claim 0.535 ms)."""
    hw = load_hardware("mi355x")
    t = kv_transfer(load_model(L70), hw, _tp(4), _tp(4), KV16, 2048)
    assert t.tier == "intra_node"
    assert t.recv_bytes_per_rank == t.send_bytes_per_rank == 671_088_640 / 4
    assert t.time_s == pytest.approx(MESH_LAT + 167_772_160 / (MESH_LINK_BPS * MESH_EFF))


def test_kv_transfer_to_more_receivers_drives_a_link_to_each() -> None:
    """One TP1 prefill rank sends DeepSeek-R1's whole latent to each of 4 decode ranks (attention TP4 keeps the
    latent whole on every rank): it drives 4 of its 7 links, each receiver one.
    whole = (512 + 64) x 2 B x 61 x 2048 = 143,917,056 B; send 4 x whole over 4 links, recv whole over 1:
    t = 10 us + 4 whole / (4 x 64e9 x 0.7) = 10 us + whole / 44.8e9 = 10 us + 3.2124 ms."""
    hw = load_hardware("mi355x")
    t = kv_transfer(load_model(R1), hw, make_parallel_config(1), _tp(4), KV16, 2048)
    whole = kv_bytes_per_request(load_model(R1), KV16, 2048)
    assert whole == 143_917_056
    assert (t.send_bytes_per_rank, t.recv_bytes_per_rank) == (4 * whole, whole)
    assert t.time_s == pytest.approx(MESH_LAT + whole / (MESH_LINK_BPS * MESH_EFF))


def test_kv_transfer_over_a_switch_gets_the_whole_rate_whatever_its_peers() -> None:
    """H200's NVLink is switched: the same TP1 -> TP4 hand-off runs at 450 GB/s x its efficiency per rank, the
    sender's 4 x whole setting the time: 10 us + 4 x 143,917,056 / (bandwidth x efficiency)."""
    hw = load_hardware("h200_sxm")
    tier = hw.tiers["intra_node"]
    t = kv_transfer(load_model(R1), hw, make_parallel_config(1), _tp(4), KV16, 2048)
    assert t.time_s == pytest.approx(tier.latency_s + 4 * 143_917_056 / (tier.bandwidth_Bps * tier.efficiency))


def _step_comms(model: str, hw_name: str, pc, w: Work) -> dict[str, float]:
    """Bytes per collective name of one step (summed over the layers)."""
    spec, hw = load_model(model), load_hardware(hw_name)
    out: dict[str, float] = {}
    for c in step_cost(spec, hw, pc, resolve_precision(spec, hw), factors_for(hw), w).comms:
        out[c.name] = out.get(c.name, 0.0) + c.bytes
    return out


def test_cp_prefill_gathers_every_chunks_latent_and_indexer_keys() -> None:
    """DeepSeek-V3.2 (FP8 checkpoint, bf16 cache) prefilling one 8192-token prompt over CP 8 on H200: each rank
    all-gathers the new cache entries of all 8192 tokens into its buffer in each of the 61 layers: the MLA latent
    (512 + 64) x 2 B = 1152 B and the DSA indexer key, 128 fp8 + one fp32 scale = 132 B, per token.
    61 x 8192 x (1152 + 132) = 641,630,208 B."""
    pc = make_parallel_config(8, cp_size=8, moe_tp_size=1)
    w = Work("prefill", 8192, 4096.5, 1, 1)
    assert _step_comms("deepseek-v3.2", "h200_sxm", pc, w)["kv_allgather"] == 61 * 8192 * (1152 + 132)


def test_kvp_decode_merges_lse_then_reduce_scatters_the_partial_outputs() -> None:
    """Llama-3.3-70B decoding 64 sequences at attention TP 4 x KVP 2 (KVP on its own ranks): per layer and rank
    the core runs 64 tokens x 64 / 4 = 16 heads. The lse all-gather's output: 2 ranks x 64 x 16 x 4 B = 8,192 B;
    the partial outputs reduce-scattered: 64 x 16 x 128 x 2 B = 262,144 B; the layer output all-gathered back:
    64 x 8192 x 2 B = 1,048,576 B; x 80 layers."""
    pc = make_parallel_config(8, attn_tp_size=4, kvp_size=2, dense_tp_size=4, embed_tp_size=4, lmhead_tp_size=4)
    w = Work("decode", 64, 8192, 64, 64)
    got = _step_comms("llama-3.3-70b", "h100_sxm", pc, w)
    assert got["lse_merge_gather"] == 80 * 8_192
    assert got["lse_merge"] == 80 * 262_144
    assert got["kvp_hidden_allgather"] == 80 * 1_048_576


def test_dsa_topk_merge_gathers_every_kvp_ranks_candidates() -> None:
    """DeepSeek-V3.2 decoding 64 sequences at attention DP with KVP 8 (its own ranks): each rank picks its local
    top-2048 keys and the group all-gathers every rank's (fp32 score, id) candidates, 8 B each (vLLM 0.34.0
    sparse_attn_indexer._merge_dcp_topk_global): the buffer out holds 8 ranks x 64 tokens x 2048 x 8 B =
    8,388,608 B per layer, x 61 layers."""
    pc = make_parallel_config(8, kvp_size=8, o_proj_tp_size=8, moe_tp_size=1)
    w = Work("decode", 64, 8192, 64, 64)
    assert _step_comms("deepseek-v3.2", "h200_sxm", pc, w)["topk_merge"] == 61 * 8 * 64 * 2048 * 8
