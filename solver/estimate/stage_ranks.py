"""Where one pipeline stage's ranks sit, under the engine's rank order (FrameworkProfile.rank_order).

A stage is costed as `stage_world` ranks numbered 0 .. S-1 (its attention groups of E = attn_group_size ranks
one after another, every group of the stage a run of them, comm.group_levels). Which global ranks those are
depends on the order the engine numbers them in:

- stage_major (PP outermost): stage k holds global ranks k x S .. (k+1) x S - 1, consecutive, so the device is
  the stage's as it is (SGLang 0.5.23 distributed/parallel_state.py:2951-2959, PP groups ranks i, i + S, ...).
- dp_major (DP outermost, then PP, then the engine's TP x PCP ranks: vLLM 0.34.0 distributed/parallel_state.py
  :2155-2170, vLLM 0.23.0 :1740-1755): the stage's d-th attention group is global ranks d x PP x E + k x E ..
  + E - 1. Its E ranks are consecutive; the next group of the stage sits PP x E ranks further on.

Under dp_major a tier of span s (its domains aligned at multiples of s) holds, of one stage's ranks: s of them
when s <= E (inside one engine block); one block of E when E < s < PP x E (the rest of the domain is the same
engine's other stages); s // (PP x E) whole blocks when s >= PP x E. The stage is then priced on the device whose
tier spans are those counts (stage_device): every collective of the stage (TP, EP, attention DP, ...) reaches
the tiers the ranks it really holds reach. Spans that divide as above are exact; others (an engine not tiling a
node) are priced as if aligned, as stage-major stages are.
"""
from __future__ import annotations

from solver.memo import IdentityMemo
from solver.specs.framework import DP_MAJOR, STAGE_MAJOR  # the profile field's values, defined there
from solver.specs.hardware import Hardware

RANK_ORDERS = (STAGE_MAJOR, DP_MAJOR)

_VIEWS = IdentityMemo(1024)  # one device view per (device, pp, engine ranks): the estimate's caches key on identity


def stage_span(span: int, pp: int, engine: int) -> int:
    """Of a tier domain of `span` global ranks, how many one stage's ranks it holds under dp_major (module
    docstring): 8-GPU nodes, TP4 x PP2: 4 (one engine block; the node's other 4 are its second stage)."""
    if span <= engine:
        return span
    return engine * max(1, span // (pp * engine))


def stage_device(hw: Hardware, order: str, pp: int, engine: int, stage_world: int) -> Hardware:
    """The device as one stage's ranks see it: `hw` itself under stage_major, without PP, or with one attention
    group a stage (the orders agree); under dp_major the same device with each tier's span (and ranks_per_node,
    scale_up_domain) cut to the stage's ranks inside one of its domains."""
    if order != DP_MAJOR or pp <= 1 or engine >= stage_world:
        return hw
    return _VIEWS.get((hw,), (pp, engine), lambda: _view(hw, pp, engine))


def launched_device(hw: Hardware) -> Hardware:
    """The device a stage view was cut from (the device itself otherwise): what the engine's command conditions
    read (an EP-kernel switch's ranks_per_node), so the estimate prices the exchange the launch emits."""
    hit = _BASES.get(id(hw))
    return hit[1] if hit is not None and hit[0] is hw else hw


_BASES: dict[int, tuple[Hardware, Hardware]] = {}  # id(view) -> (view, the device it was cut from)


def _view(hw: Hardware, pp: int, engine: int) -> Hardware:
    tiers = {name: t.model_copy(update={"span_ranks": stage_span(t.span_ranks, pp, engine)})
             for name, t in hw.tiers.items()}
    out = hw.model_copy(update={"ranks_per_node": stage_span(hw.ranks_per_node, pp, engine),
                                "scale_up_domain": stage_span(hw.scale_up_domain, pp, engine), "tiers": tiers})
    out._placed_from = hw._placed_from or hw  # the device as its file gives it, as space.placement keeps it
    if len(_BASES) > 4096:
        _BASES.clear()
    _BASES[id(out)] = (out, hw)
    return out


def global_rank(order: str, pp: int, stage_world: int, engine: int, stage: int, local: int) -> int:
    """The global rank of a stage's `local`-th rank (0 .. stage_world - 1) under `order`."""
    if order != DP_MAJOR:
        return stage * stage_world + local
    d, e = divmod(local, engine)
    return (d * pp + stage) * engine + e


__all__ = ["RANK_ORDERS", "STAGE_MAJOR", "DP_MAJOR", "stage_span", "stage_device", "launched_device",
           "global_rank"]
