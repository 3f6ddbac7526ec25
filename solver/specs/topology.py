"""Topology: how a group of ranks spreads over the tiers of a machine (node, scale-up domain, beyond).

A group of n ranks spaced `stride` apart is split into levels whose member counts multiply to n: members
inside a node, inside the scale-up domain, and beyond. The communication model (estimate/comm.py) charges each
level its own link; the hardware catalog asks which tier a group crosses.

One fabric, one level: where adjacent tiers have identical link figures (bandwidth, latency, efficiency) they are
one switched fabric seen at two spans (GB200/GB300 NVL72: the tray's and the rack's NVLink are the same 18
ports at 900 GB/s per GPU; Atlas A3: one UB domain of 768 dies at 196 GB/s per die; facts/hardware.md). A
rank reaches every peer of the group over those same ports, so the levels merge into one, named by the
outermost tier the group reaches: its bandwidth is shared over all the group's peers (as one level's is), and
a collective over it is one hop, not a ring per level (comm.py: the custom all-reduce applies).

Reach: the outermost tier's span_ranks is the largest deployment the device file says its fabric connects; a
deployment of more ranks is refused (check_reach) rather than priced as if that tier stretched further.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
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


def outermost_tier(hw: Hardware) -> tuple[str, int]:
    """The outermost tier the file gives (inter_rack, else inter_node) and its span_ranks."""
    name = next(n for n in ("inter_rack", "inter_node") if n in hw.tiers)
    return name, hw.tiers[name].span_ranks


def check_reach(hw: Hardware, ranks: int) -> None:
    """InputError where `ranks` exceed what the outermost tier connects (module docstring: Reach)."""
    from solver.errors import InputError

    name, span = outermost_tier(hw)
    if ranks > span:
        raise InputError(f"{hw.name}: tiers.{name}.span_ranks",
                         f"{span:,} ranks, the most its outermost tier connects, but the deployment spans {ranks:,}: "
                         f"give at most {span:,} cards, or raise span_ranks to what the fabric reaches")


_GROUPS: dict[tuple[int, int, int], tuple[Hardware, tuple]] = {}


def group_levels(hw: Hardware, n: int, stride: int = 1) -> tuple[Level, ...]:
    """Split a group of n ranks (members `stride` apart) into per-tier member counts whose product is n."""
    # asked for every collective of every candidate: remembered per (hardware object, n, stride), and handed
    # out as the (immutable) tuple itself
    hit = _GROUPS.get((id(hw), n, stride))
    if hit is None or hit[0] is not hw:
        if len(_GROUPS) > 65536:
            _GROUPS.clear()
        hit = (hw, _levels(_tiers(hw), n, stride))
        _GROUPS[(id(hw), n, stride)] = hit
    return hit[1]


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
    levels: list[tuple[int, Level]] = []  # (index of the tier, level)
    remaining = n
    covered = stride  # rank distance spanned by one member at the current level
    for i, (span, name, tier) in enumerate(tiers):
        if remaining <= 1:
            break
        fit = max(1, span // covered)
        k = min(remaining, fit)
        # keep the product exact for non-power-of-two shapes
        while remaining % k:
            k -= 1
        if k > 1:
            levels.append((i, Level(k, tier, name)))
        remaining //= k
        covered *= k
    if remaining > 1:
        _, name, tier = tiers[-1]
        levels.append((len(tiers) - 1, Level(remaining, tier, name)))
    return tuple(_one_level_per_fabric(levels))


def _same_link(a: Tier, b: Tier) -> bool:
    return ((a.bandwidth_Bps, a.latency_s, a.efficiency, a.mesh_links)
            == (b.bandwidth_Bps, b.latency_s, b.efficiency, b.mesh_links))


def _one_level_per_fabric(levels: list[tuple[int, Level]]) -> list[Level]:
    """Merge levels on the same or adjacent tiers with identical link figures (module docstring): members
    multiply, the merged level is named by the outer tier."""
    out: list[tuple[int, Level]] = []
    for i, lv in levels:
        if out and i - out[-1][0] <= 1 and _same_link(out[-1][1].tier, lv.tier):
            lv = Level(out[-1][1].members * lv.members, lv.tier, lv.tier_name)
            out[-1] = (i, lv)
        else:
            out.append((i, lv))
    return [lv for _, lv in out]


def crosses(hw: Hardware, n: int, stride: int = 1) -> str:
    """Slowest tier a group touches ('none' for a single rank)."""
    levels = group_levels(hw, n, stride)
    return levels[-1].tier_name if levels else "none"


