"""Collective cost by primitive and topology tier (solver.estimate.comm), with hand-computed cases."""
from __future__ import annotations

import pytest

from solver.estimate import comm
from solver.specs.hardware import Hardware
from solver.specs.hardware_catalog import load_hardware

from conftest import toy_hardware  # noqa: E402

H200 = load_hardware("h200_sxm")
A3 = load_hardware("atlas_a3")
NVL = 450e9 * 0.82  # H200 intra-node achieved bytes/s
RDMA = 50e9 * 0.86  # H200 inter-node achieved bytes/s per rank


def _flat(**over) -> Hardware:
    """8 ranks per node, 1 GB/s inside, 0.1 GB/s between nodes, no latency: times are pure byte counts."""
    return toy_hardware(**over)


TOY = _flat()


def test_all_reduce_moves_two_times_n_minus_one_over_n_of_the_buffer() -> None:
    # 8 ranks in one node, 8 GB buffer, 1 GB/s: 2 x 7/8 x 8 GB = 14 GB -> 14 s
    assert comm.all_reduce_s(TOY, 8, 8e9) == pytest.approx(14.0)
    assert comm.all_reduce_s(TOY, 2, 8e9) == pytest.approx(8.0)  # 2 x 1/2 x 8
    assert comm.all_reduce_s(TOY, 1, 8e9) == 0.0
    # on H200: 2 x 7/8 x B over NVLink at 82% + two latency terms
    B = 117e6
    assert comm.all_reduce_s(H200, 8, B) == pytest.approx(2 * (10e-6 + 7 / 8 * B / NVL))


def test_reduce_scatter_and_all_gather_move_n_minus_one_over_n() -> None:
    assert comm.reduce_scatter_s(TOY, 4, 4e9) == pytest.approx(3.0)
    assert comm.all_gather_s(TOY, 4, 4e9) == pytest.approx(3.0)
    assert comm.all_reduce_s(TOY, 4, 4e9) == pytest.approx(2 * comm.reduce_scatter_s(TOY, 4, 4e9))


def test_group_of_16_on_8_rank_nodes_crosses_the_inter_node_tier() -> None:
    assert comm.crosses(H200, 8) == "intra_node"
    assert comm.crosses(H200, 16) == "inter_node"
    levels = comm.group_levels(H200, 16)
    assert [(lv.members, lv.tier_name) for lv in levels] == [(8, "intra_node"), (2, "inter_node")]
    # hierarchical: reduce-scatter 7/8 of B inside the node, then 1/2 of the remaining B/8 across nodes
    B = 1e9
    rs = 10e-6 + 7 / 8 * B / NVL + 20e-6 + 1 / 2 * (B / 8) / RDMA
    assert comm.reduce_scatter_s(H200, 16, B) == pytest.approx(rs)
    assert comm.all_reduce_s(H200, 16, B) == pytest.approx(2 * rs)
    # 8 NICs carry the B/8 chunks in parallel: 1.6x the in-node all-reduce, not the 10x of one slow ring
    assert 1.5 < comm.all_reduce_s(H200, 16, B) / comm.all_reduce_s(H200, 8, B) < 1.7


def test_strided_group_spans_more_nodes_than_its_size() -> None:
    # 8 members spaced 2 apart (e.g. EP peers with moe_tp 2) cover 16 ranks: 4 per node x 2 nodes
    assert [(lv.members, lv.tier_name) for lv in comm.group_levels(H200, 8, stride=2)] == [
        (4, "intra_node"), (2, "inter_node")]
    assert comm.crosses(H200, 4, stride=2) == "intra_node"


def test_atlas_a3_group_beyond_16_dies_uses_the_superpod_scale_up_tier() -> None:
    assert comm.crosses(A3, 16) == "intra_node"
    assert comm.crosses(A3, 32) == "scale_up"
    assert comm.crosses(A3, 1536) == "inter_rack"


def test_all_to_all_inside_a_node_vs_across_nodes() -> None:
    # each rank sends 8 GB spread evenly over the group; its own share stays home
    assert comm.all_to_all_s(TOY, 8, 8e9) == pytest.approx(7.0)  # 7/8 of 8 GB at 1 GB/s
    # 16 ranks on two nodes: 7/16 goes over the fast link, 8/16 over the 10x slower one, in parallel
    t16 = comm.all_to_all_s(TOY, 16, 8e9)
    assert t16 == pytest.approx(max(8e9 * 7 / 16 / 1e9, 8e9 * 8 / 16 / 1e8)) == pytest.approx(40.0)
    # on H200 the cross-node part is bounded by the RDMA NIC
    B = 100e6
    assert comm.all_to_all_s(H200, 8, B) == pytest.approx(10e-6 + B * 7 / 8 / NVL)
    assert comm.all_to_all_s(H200, 16, B) == pytest.approx(20e-6 + B * 8 / 16 / RDMA)
    assert comm.all_to_all_s(TOY, 1, 8e9) == 0.0


def test_comm_efficiency_factor_scales_bandwidth() -> None:
    assert comm.all_reduce_s(TOY, 8, 8e9, comm_eff=0.5) == pytest.approx(28.0)


def test_send_recv_uses_the_named_tier() -> None:
    assert comm.send_recv_s(TOY, 1e9) == pytest.approx(1.0)
    assert comm.send_recv_s(TOY, 1e9, "inter_node") == pytest.approx(10.0)
    assert comm.send_recv_s(TOY, 1e9, "scale_up") == pytest.approx(1.0)  # missing tier falls back to intra-node


# ------------------------------------------------------------------ one fabric, one level (topology.group_levels)

GB200 = load_hardware("gb200")
H100 = load_hardware("h100_sxm")
NVL5 = 900e9 * 0.82  # GB200 NVLink achieved bytes/s per GPU, tray and rack alike
UB = 196e9 * 0.82  # Atlas A3 UB achieved bytes/s per die, node and SuperPoD alike
CUSTOM = comm.CustomAllReduce(oneshot_max_bytes=1 << 20, custom_max_bytes=8 << 20, latency_s=5e-6)


def test_a_group_over_two_trays_of_one_nvlink_rack_is_one_level() -> None:
    # TP8 on GB200: 4 GPUs a tray x 2 trays; tray and rack tiers are the same NVLink figures: one fabric
    assert [(lv.members, lv.tier_name) for lv in comm.group_levels(GB200, 8)] == [(8, "scale_up")]
    assert comm.crosses(GB200, 8) == "scale_up"


def test_a_tp8_all_reduce_over_two_trays_of_one_nvlink_rack_runs_the_custom_kernel() -> None:
    # 64 KB one-shot: L + 7 x 64 KB / bw, not a ring per level (2 x (10 us + ...) x 2 levels)
    b = 64 * 1024
    assert comm.all_reduce_s(GB200, 8, b, custom=CUSTOM) == pytest.approx(5e-6 + 7 * b / NVL5)
    # 4 MB two-shot: 2 L + 2 x 7/8 x 4 MB / bw
    b = 4 << 20
    assert comm.all_reduce_s(GB200, 8, b, custom=CUSTOM) == pytest.approx(2 * 5e-6 + 2 * 7 / 8 * b / NVL5)


def test_a_ring_over_one_nvlink_rack_is_one_hop_per_phase() -> None:
    # 32 GPUs of the rack (8 trays): reduce-scatter = one latency + 31/32 of the buffer over the GPU's ports
    B = 1e9
    assert comm.reduce_scatter_s(GB200, 32, B) == pytest.approx(10e-6 + 31 / 32 * B / NVL5)


def test_an_all_to_all_over_one_nvlink_rack_shares_the_gpus_ports_over_every_peer() -> None:
    # 16 GPUs over 4 trays: 15/16 of what a rank sends leaves over its NVLink ports, the tray peers' share
    # included (two parallel 900 GB/s levels would count the same ports twice)
    B = 100e6
    assert comm.all_to_all_s(GB200, 16, B) == pytest.approx(10e-6 + B * 15 / 16 / NVL5)


def test_past_the_rack_the_rdma_level_stays_its_own() -> None:
    assert [(lv.members, lv.tier_name) for lv in comm.group_levels(GB200, 144)] == [
        (72, "scale_up"), (2, "inter_rack")]


def test_an_atlas_a3_group_over_two_nodes_of_one_ub_domain_is_one_level() -> None:
    assert [(lv.members, lv.tier_name) for lv in comm.group_levels(A3, 32)] == [(32, "scale_up")]
    B = 1e9
    assert comm.reduce_scatter_s(A3, 32, B) == pytest.approx(10e-6 + 31 / 32 * B / UB)


def test_an_h100_group_over_two_nodes_stays_two_levels_and_rings() -> None:
    # NVLink in the node, RDMA between: different links, so two levels, and no custom kernel across them
    assert [(lv.members, lv.tier_name) for lv in comm.group_levels(H100, 16)] == [
        (8, "intra_node"), (2, "inter_node")]
    b = 64 * 1024
    assert comm.all_reduce_s(H100, 16, b, custom=CUSTOM) == pytest.approx(2 * comm.reduce_scatter_s(H100, 16, b))


def test_tiers_merge_only_on_identical_link_figures() -> None:
    # the toy device with a scale-up tier of the node's bandwidth but another latency: two levels
    tiers = {"intra_node": dict(bandwidth_Bps=1e9, latency_s=0.0, efficiency=1.0, span_ranks=8),
             "scale_up": dict(bandwidth_Bps=1e9, latency_s=1e-6, efficiency=1.0, span_ranks=64),
             "inter_rack": dict(bandwidth_Bps=1e8, latency_s=0.0, efficiency=1.0, span_ranks=1 << 20)}
    hw = toy_hardware(scale_up_domain=64, tiers=tiers)
    assert [(lv.members, lv.tier_name) for lv in comm.group_levels(hw, 16)] == [(8, "intra_node"), (2, "scale_up")]
    same = {**tiers, "scale_up": {**tiers["scale_up"], "latency_s": 0.0}}
    hw = toy_hardware(scale_up_domain=64, tiers=same)
    assert [(lv.members, lv.tier_name) for lv in comm.group_levels(hw, 16)] == [(16, "scale_up")]


def test_identical_tiers_with_another_link_between_them_do_not_merge() -> None:
    # node 1 GB/s, rack 0.5 GB/s, beyond 1 GB/s: the outer tier is not the node's fabric
    tiers = {"intra_node": dict(bandwidth_Bps=1e9, latency_s=0.0, efficiency=1.0, span_ranks=8),
             "scale_up": dict(bandwidth_Bps=5e8, latency_s=0.0, efficiency=1.0, span_ranks=16),
             "inter_rack": dict(bandwidth_Bps=1e9, latency_s=0.0, efficiency=1.0, span_ranks=1 << 20)}
    hw = toy_hardware(scale_up_domain=16, tiers=tiers)
    assert [(lv.members, lv.tier_name) for lv in comm.group_levels(hw, 32)] == [
        (8, "intra_node"), (2, "scale_up"), (2, "inter_rack")]


def test_a_pcie_only_node_runs_the_nccl_ring_not_the_custom_all_reduce() -> None:
    # L40S: no NVLink, so vLLM/SGLang switch their custom kernel off past two GPUs; the ring's bytes and two
    # link latencies are charged, on H100's NVLink the one-shot kernel's
    l40s, b = load_hardware("l40s"), 64 * 1024
    assert not l40s.tiers["intra_node"].peer_access and H100.tiers["intra_node"].peer_access
    assert comm.all_reduce_s(l40s, 4, b, custom=CUSTOM) == pytest.approx(comm.all_reduce_s(l40s, 4, b))
    assert comm.all_reduce_s(H100, 4, b, custom=CUSTOM) == pytest.approx(5e-6 + 3 * b / (450e9 * 0.82))
