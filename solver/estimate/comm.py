"""Collective communication time by primitive and topology tier.

A group of n ranks spaced `stride` apart is split into levels: members inside a node, inside the scale-up
domain, and beyond. Collectives run hierarchically (reduce-scatter inside, then across, as NCCL/HCCL do for
multi-node groups): each level moves its share of the bytes over that level's link. Each level costs an
offset (its latency) plus bytes / (line rate x achieved efficiency). All-to-all sends to every peer at once,
so its levels run in parallel and the slowest one decides.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from solver.specs.hardware import Hardware, Tier


@dataclass(frozen=True)
class Level:
    members: int  # group members reached over this level's link (>= 1)
    tier: Tier
    tier_name: str


def _tiers_by_span(hw: Hardware) -> list[tuple[int, str, Tier]]:
    out: list[tuple[int, str, Tier]] = [(hw.ranks_per_node, "intra_node", hw.tiers["intra_node"])]
    if "scale_up" in hw.tiers and hw.scale_up_domain > hw.ranks_per_node:
        out.append((hw.scale_up_domain, "scale_up", hw.tiers["scale_up"]))
    if "inter_node" in hw.tiers:
        span = hw.tiers["inter_node"].span_ranks
        out.append((max(span, out[-1][0]), "inter_node", hw.tiers["inter_node"]))
    if "inter_rack" in hw.tiers:
        out.append((1 << 40, "inter_rack", hw.tiers["inter_rack"]))
    else:
        out[-1] = (1 << 40, out[-1][1], out[-1][2])
    return out


def group_levels(hw: Hardware, n: int, stride: int = 1) -> list[Level]:
    """Split a group of n ranks (members `stride` apart) into per-tier member counts whose product is n."""
    return list(_levels(_tiers(hw), n, stride))


_TIERS: dict[int, tuple[Hardware, tuple]] = {}


def _tiers(hw: Hardware) -> tuple:
    # Hardware is frozen but holds dicts (unhashable): remember its tier list by identity, checking the object
    hit = _TIERS.get(id(hw))
    if hit is None or hit[0] is not hw:
        hit = (hw, tuple(_tiers_by_span(hw)))
        _TIERS[id(hw)] = hit
    return hit[1]


@lru_cache(maxsize=4096)
def _levels(tiers: tuple[tuple[int, str, Tier], ...], n: int, stride: int) -> tuple[Level, ...]:
    # pure in its (hashable) arguments, and called for every collective of every candidate: memoised
    levels: list[Level] = []
    remaining = n
    covered = stride  # rank distance spanned by one member at the current level
    for span, name, tier in tiers:
        if remaining <= 1:
            break
        fit = max(1, span // covered)
        k = min(remaining, fit)
        # keep the product exact for non-power-of-two shapes
        while remaining % k:
            k -= 1
        if k > 1:
            levels.append(Level(k, tier, name))
        remaining //= k
        covered *= k
    if remaining > 1:
        _, name, tier = tiers[-1]
        levels.append(Level(remaining, tier, name))
    return tuple(levels)


def crosses(hw: Hardware, n: int, stride: int = 1) -> str:
    """Slowest tier a group touches ('none' for a single rank)."""
    levels = group_levels(hw, n, stride)
    return levels[-1].tier_name if levels else "none"


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
