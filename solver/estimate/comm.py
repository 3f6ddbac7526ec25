"""Collective communication time by primitive and topology tier.

A group of n ranks spaced `stride` apart is split into levels: members inside a node, inside the scale-up
domain, and beyond; adjacent tiers with identical link figures are one fabric and one level (an NVL72 rack's
trays, an Atlas A3 SuperPoD's nodes: topology.group_levels). Collectives run hierarchically (reduce-scatter
inside, then across, as NCCL/HCCL do for multi-node groups): each level moves its share of the bytes over that
level's link. Each level costs an
offset (its latency) plus bytes / (line rate x achieved efficiency); on a switchless full mesh (Infinity Fabric,
HCCS: Tier.mesh_links) the line rate is that of the links to the level's peers only, one link per peer. All-to-all sends to every peer at once,
so its levels run in parallel and the slowest one decides.

Small all-reduces (decode: batch x hidden x 2 bytes, tens of KB) do not run as NCCL rings in the serving engines:
vLLM and SGLang ship a custom all-reduce (one-shot below a size, two-shot above, NCCL past its buffer), TRT-LLM
its ONESHOT / TWOSHOT strategies. Inside one peer-access domain (a node's NVLink, an NVL72 rack), with L the
kernel's launch-to-done latency and bw the link's achieved rate:

    one-shot  t = L + (n - 1) x bytes / bw        each rank reads every peer's buffer and sums locally
    two-shot  t = 2 L + 2 (n - 1) / n x bytes / bw   reduce-scatter then all-gather, each one kernel phase

The ring charges 2 link latencies per level plus the same bytes as two-shot; at decode sizes the latency decides,
which is what makes TP 8 vs attention DP a close call at concurrency 1-8. The thresholds are the engine's
(FrameworkServing) and depend on the group size: vLLM's kernel (SGLang ships a copy) runs one-shot at any size
on 2 ranks, below 512 KB on up to 4 and below 256 KB on up to 8 (allreduce_oneshot_max_bytes_by_ranks), so a
TP 2 decode of 32-128 sequences pays one latency per all-reduce, not two. L is fitted once over the calibration
rows (benchmarks/fit_efficiency.py). The kernel runs only for the group sizes the engine lists, on the vendors it
builds it for, and across nodes only where it spans them (serving.allreduce_custom_*); elsewhere the ring.

EP dispatch and combine at decode run GPU-initiated kernels (DeepEP low-latency class) that send to every peer
and then wait on every peer's arrival flag: one call costs the kernel's latency, not a link hop's (DeepEP's
published decode figures leave ~33 us per call on H800 once the bytes are taken out, against the 10-20 us hop):

    t = L_ep(n) + slowest level's bytes / bw,    L_ep(n) = latency + per_doubling x log2 n   (Hardware.ep_a2a)

fitted by benchmarks/fit_ep_a2a.py; a device without `ep_a2a` keeps the plain all-to-all. That is the exchange
of an engine launched with such kernels (FrameworkServing.ep_exchange a2a_kernel). An engine whose command keeps
its default exchange prices what that runs instead (specs/layers/moe.py): an all-gather of the MoE group's tokens
and a reduce-scatter of the outputs over it (allgather_reducescatter), or the collective library's all-to-all of
every token-expert pair at both phases (all_to_all).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from solver.specs.hardware import Hardware, Tier
from solver.specs.topology import Level, crosses, group_levels  # noqa: F401  (crosses/Level re-exported)


def peer_rate_Bps(tier: Tier, peers: int) -> float:
    """Line rate a rank drives toward `peers` peers over `tier`: all of it on a switched fabric; on a full mesh
    (Tier.mesh_links) one link per peer, so a TP 2 pair on an 8-GPU Infinity Fabric node moves at 1/7 of the
    aggregate (facts/hardware.md: 7 links x ~64 GB/s)."""
    if tier.mesh_links <= 0:
        return tier.bandwidth_Bps
    return tier.bandwidth_Bps * min(max(peers, 1), tier.mesh_links) / tier.mesh_links


def _bw(level: Level, comm_eff: float) -> float:
    return peer_rate_Bps(level.tier, level.members - 1) * level.tier.efficiency * comm_eff


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


@dataclass(frozen=True)
class CustomAllReduce:
    """An engine's custom all-reduce kernel (module docstring): one-shot up to `oneshot_max_bytes` per rank,
    two-shot up to `custom_max_bytes`, NCCL ring above; `latency_s` None = the link tier's latency."""

    oneshot_max_bytes: float
    custom_max_bytes: float
    latency_s: float | None = None
    # (ranks R, bytes), R ascending: a group of at most R ranks runs one-shot up to these bytes instead
    oneshot_by_ranks: tuple[tuple[int, float], ...] = ()
    # the group sizes the kernel runs on (the engine's supported world sizes); () = any
    ranks: tuple[int, ...] = ()
    # whether it runs across the nodes of one peer-access domain, or inside one node only
    spans_nodes: bool = True

    @classmethod
    def of(cls, f: object) -> "CustomAllReduce | None":
        """The kernel a `Factors` describes (None when the engine has none)."""
        top = float(getattr(f, "allreduce_custom_max_bytes", 0.0) or 0.0)
        if top <= 0:
            return None
        return cls(float(getattr(f, "allreduce_oneshot_max_bytes", 0.0) or 0.0), top,
                   getattr(f, "allreduce_latency_s", None),
                   tuple(sorted(getattr(f, "allreduce_oneshot_max_bytes_by_ranks", ()) or ())),
                   tuple(sorted(getattr(f, "allreduce_custom_ranks", ()) or ())),
                   bool(getattr(f, "allreduce_custom_spans_nodes", True)))

    def runs(self, hw: Hardware, n: int, stride: int) -> bool:
        """Whether the kernel takes a group of n ranks `stride` apart: a size it lists, and inside one node
        where it does not span nodes (the ranks' reach n x stride within the node's ranks, as group_levels
        places them)."""
        return (not self.ranks or n in self.ranks) and (self.spans_nodes or n * stride <= hw.ranks_per_node)

    def oneshot_max(self, n: int) -> float:
        """The one-shot limit for a group of n ranks: the smallest listed R >= n, else oneshot_max_bytes."""
        for ranks, nbytes in self.oneshot_by_ranks:
            if n <= ranks:
                return nbytes
        return self.oneshot_max_bytes


# tiers whose ranks can map each other's memory (what the custom kernels need)
PEER_ACCESS_TIERS = ("intra_node", "scale_up")


def all_reduce_s(hw: Hardware, n: int, nbytes: float, stride: int = 1, comm_eff: float = 1.0,
                 custom: "CustomAllReduce | None" = None) -> float:
    """All-reduce of `nbytes` per rank. NCCL ring = reduce-scatter + all-gather: 2(n-1)/n of the buffer crosses
    each rank's link. With the engine's `custom` kernel, small messages in one peer-access domain run one-shot
    or two-shot instead (module docstring), for a group size the kernel lists (and inside one node where it does
    not span nodes)."""
    if n <= 1:
        return 0.0
    if custom is not None and nbytes <= custom.custom_max_bytes and custom.runs(hw, n, stride):
        levels = group_levels(hw, n, stride)
        if len(levels) == 1 and levels[0].tier_name in PEER_ACCESS_TIERS and levels[0].tier.peer_access:
            lv = levels[0]
            lat = lv.tier.latency_s if custom.latency_s is None else custom.latency_s
            bw = _bw(lv, comm_eff)
            if nbytes <= custom.oneshot_max(n):
                return lat + (n - 1) * nbytes / bw
            return 2 * lat + 2 * (n - 1) / n * nbytes / bw
    return 2 * reduce_scatter_s(hw, n, nbytes, stride, comm_eff)


def _a2a_levels(hw: Hardware, n: int, bytes_sent: float, stride: int, comm_eff: float) -> tuple[float, float]:
    """(slowest tier latency, slowest level's transfer time) of an all-to-all: the levels run in parallel."""
    worst, inner, lat = 0.0, 1, 0.0
    for lv in group_levels(hw, n, stride):
        # peers first reached at this level: (k-1) * (members of all inner levels)
        peers = (lv.members - 1) * inner
        worst = max(worst, bytes_sent * peers / n / _bw(lv, comm_eff))
        lat = max(lat, lv.tier.latency_s)
        inner *= lv.members
    return lat, worst


def all_to_all_s(hw: Hardware, n: int, bytes_sent: float, stride: int = 1, comm_eff: float = 1.0) -> float:
    """All-to-all where each rank sends `bytes_sent` spread evenly over the n ranks (its own share stays)."""
    if n <= 1:
        return 0.0
    lat, move = _a2a_levels(hw, n, bytes_sent, stride, comm_eff)
    return lat + move


def all_to_all_transfer_s(hw: Hardware, n: int, bytes_sent: float, stride: int = 1, comm_eff: float = 1.0) -> float:
    """The bytes part of `all_to_all_s` alone (no latency): the slowest level's transfer."""
    return _a2a_levels(hw, n, bytes_sent, stride, comm_eff)[1] if n > 1 else 0.0


def ep_kernel_latency_s(hw: Hardware, n: int, stride: int = 1) -> float:
    """Per-call latency of the EP dispatch/combine kernel over n ranks: latency + per_doubling x log2 n (the
    device's `ep_a2a`, module docstring); without that data, the slowest tier's latency, as a plain all-to-all."""
    if n <= 1:
        return 0.0
    if hw.ep_a2a is None:
        return _a2a_levels(hw, n, 0.0, stride, 1.0)[0]
    return hw.ep_a2a.latency_s + hw.ep_a2a.per_doubling_s * math.log2(n)


def ep_all_to_all_s(hw: Hardware, n: int, bytes_sent: float, stride: int = 1, comm_eff: float = 1.0) -> float:
    """EP dispatch or combine at decode: the kernel's per-call latency plus the all-to-all's bytes."""
    if n <= 1:
        return 0.0
    return ep_kernel_latency_s(hw, n, stride) + all_to_all_transfer_s(hw, n, bytes_sent, stride, comm_eff)


def send_recv_s(hw: Hardware, nbytes: float, tier_name: str = "intra_node", comm_eff: float = 1.0) -> float:
    """Point-to-point send of `nbytes` to one peer over `tier_name` (a PP stage boundary)."""
    tier = hw.tiers.get(tier_name) or hw.tiers["intra_node"]  # type: ignore[call-overload]
    return tier.latency_s + nbytes / (peer_rate_Bps(tier, 1) * tier.efficiency * comm_eff)
