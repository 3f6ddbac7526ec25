"""Collective communication time by primitive and topology tier.

A group of n ranks spaced `stride` apart is split into levels: members inside a node, inside the scale-up
domain, and beyond. Collectives run hierarchically (reduce-scatter inside, then across, as NCCL/HCCL do for
multi-node groups): each level moves its share of the bytes over that level's link. Each level costs an
offset (its latency) plus bytes / (line rate x achieved efficiency). All-to-all sends to every peer at once,
so its levels run in parallel and the slowest one decides.
"""
from __future__ import annotations

from solver.specs.hardware import Hardware
from solver.specs.topology import Level, crosses, group_levels  # noqa: F401  (crosses/Level re-exported)


def _bw(level: Level, comm_eff: float) -> float:
    return level.tier.bandwidth_Bps * level.tier.efficiency * comm_eff


def reduce_scatter_s(hw: Hardware, n: int, bytes_in: float, stride: int = 1, comm_eff: float = 1.0) -> float:
    """Reduce-scatter of a `bytes_in` buffer per rank: each level moves (k-1)/k of what is left."""
    t, size = 0.0, bytes_in
    for lv in group_levels(hw, n, stride):
        t += lv.tier.latency_s + (lv.members - 1) / lv.members * size / _bw(lv, comm_eff)
        size /= lv.members
    return t


def all_gather_s(hw: Hardware, n: int, bytes_out: float, stride: int = 1, comm_eff: float = 1.0) -> float:
    """All-gather into a `bytes_out` buffer per rank (the mirror of reduce-scatter)."""
    return reduce_scatter_s(hw, n, bytes_out, stride, comm_eff)


def all_reduce_s(hw: Hardware, n: int, nbytes: float, stride: int = 1, comm_eff: float = 1.0) -> float:
    """Ring all-reduce = reduce-scatter + all-gather: 2(n-1)/n of the buffer crosses each rank's link."""
    if n <= 1:
        return 0.0
    return 2 * reduce_scatter_s(hw, n, nbytes, stride, comm_eff)


def all_to_all_s(hw: Hardware, n: int, bytes_sent: float, stride: int = 1, comm_eff: float = 1.0) -> float:
    """All-to-all where each rank sends `bytes_sent` spread evenly over the n ranks (its own share stays)."""
    if n <= 1:
        return 0.0
    levels = group_levels(hw, n, stride)
    worst, inner = 0.0, 1
    lat = 0.0
    for lv in levels:
        # peers first reached at this level: (k-1) * (members of all inner levels)
        peers = (lv.members - 1) * inner
        worst = max(worst, bytes_sent * peers / n / _bw(lv, comm_eff))
        lat = max(lat, lv.tier.latency_s)
        inner *= lv.members
    return lat + worst


def send_recv_s(hw: Hardware, nbytes: float, tier_name: str = "intra_node", comm_eff: float = 1.0) -> float:
    tier = hw.tiers.get(tier_name) or hw.tiers["intra_node"]  # type: ignore[call-overload]
    return tier.latency_s + nbytes / (tier.bandwidth_Bps * tier.efficiency * comm_eff)
