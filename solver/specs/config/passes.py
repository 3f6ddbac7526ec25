"""Layers stored once and run in several passes a token (a looped stack), read from a family's `_passes` fact.

A looped model stores fewer layers than a token runs through: HRM-Text's two stacks (L_module, H_module) run H_cycles
times, the L stack L_cycles times then the H stack once in each (HrmTextModel.forward); Dory runs its input section
once, its recurrent section n_recurrent_loops times, its output section once (DoryModel.forward). The fact is the
pass order over the stored layers:

  _passes:
    order: [segment, ...]        in the order a token runs them
      {layers: FIELD}            the next FIELD stored layers, once
      {layers: FIELD, times: FIELD}   the next FIELD stored layers, run FIELD times in a row
      {layers: {from: FIELD, to: FIELD}, ...}  the stored layers from index FROM (0 where left out) up to TO: the
                                 config writes a section's bounds, not its length (Inkling-2-Loop's
                                 loop_layer_index_start / _end); FROM must be where the order stands
      {of: [segment, ...], times: FIELD}   a group of segments run FIELD times (the same stored layers each time)
      cache: {field: F, values: {v: every}}   the cache mode this segment's repeats run under; "every": each run keeps
                                 its own K/V (Dory's per_loop); another value of F is refused naming F
    written: passes | stored     what the config's layer count counts: every pass (HRM: num_hidden_layers writes the
                                 cache slots, one per pass) or the stored layers (Dory)

Stored layers are numbered by their first appearance in the order as written (a group's body once). The stack is
built over the stored layers, then laid out pass by pass, each pass the stored layer itself under a SharedRef of the
whole layer (layers/base.py): its weights counted once, its compute, collectives and cache at every pass.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from solver.specs.config.fields import MAX_LAYERS, Fields
from solver.specs.layers.base import Layer, SharedRef


@dataclass(frozen=True)
class Passes:
    stored: int  # layers the model stores
    order: tuple[int, ...]  # the stored layer each pass runs, in the order a token runs them
    written: str  # "passes" | "stored": what the config's layer count counts


def _times(f: Fields, segment: dict[str, Any]) -> int:
    times = segment.get("times", 1)
    return times if isinstance(times, int) else f.int(str(times), maximum=MAX_LAYERS)


def _check_cache(f: Fields, segment: dict[str, Any]) -> None:
    rule = segment.get("cache")
    if not rule:
        return
    field, values = str(rule["field"]), rule["values"]
    value = f.cfg.get(field)
    if value is None or values.get(value) == "every":
        return
    known = ", ".join(repr(v) for v, mode in values.items() if mode == "every")
    raise f.err(field, f"{value!r}: the repeated passes share one K/V cache, which another pass writes; only "
                       f"{known} (a K/V cache per pass) is modelled")


def _walk(f: Fields, segments: list[dict[str, Any]], start: int) -> tuple[list[int], int]:
    """The pass order of `segments` whose first new stored layer is `start`, and the next new stored layer."""
    order: list[int] = []
    for segment in segments:
        _check_cache(f, segment)
        times = _times(f, segment)
        if "of" in segment:
            body, start = _walk(f, segment["of"], start)
        else:
            n = _section(f, segment["layers"], start)
            body, start = list(range(start, start + n)), start + n
        order += body * times
    return order, start


def _section(f: Fields, layers: Any, start: int) -> int:
    """How many stored layers a segment's `layers` names: a count field, or {from, to} bounds (module docstring)."""
    if not isinstance(layers, dict):
        return f.int(str(layers), minimum=0, maximum=MAX_LAYERS)
    first = f.int(str(layers["from"]), minimum=0, maximum=MAX_LAYERS) if "from" in layers else 0
    if first != start:
        raise f.err(str(layers.get("from", layers["to"])), f"{first}: the section must begin where the layers "
                                                          f"before it end, at layer {start}")
    end = f.int(str(layers["to"]), minimum=0, maximum=MAX_LAYERS)
    if end < first:
        raise f.err(str(layers["to"]), f"{end}: before the section's first layer {first}")
    return end - first


def read_passes(f: Fields) -> Passes | None:
    """The family's pass order (module docstring), or None for a stack that runs each layer once."""
    fact = f.cfg.get("_passes")
    if not fact:
        return None
    order, stored = _walk(f, list(fact["order"]), 0)
    if stored == 0:
        raise f.err("num_hidden_layers", "the pass order stores no layer")
    return Passes(stored, tuple(order), str(fact.get("written", "stored")))


def check_layer_count(f: Fields, passes: Passes, written: int, field: str) -> None:
    """The config's layer count must be what the family writes there: the passes or the stored layers."""
    want = len(passes.order) if passes.written == "passes" else passes.stored
    if written != want:
        what = "passes a token runs" if passes.written == "passes" else "stored layers"
        raise f.err(field, f"{written}: the {what} of the family's pass order are {want} ({passes.stored} stored "
                           f"layers, {len(passes.order)} passes)")


def lay_out(stored: list[Layer], passes: Passes) -> tuple[Layer, ...]:
    """The stack pass by pass: each pass the stored layer it runs, its weights that stored layer's (SharedRef)."""
    out = []
    for index in passes.order:
        layer = stored[index]
        out.append(replace(layer, shared=SharedRef(index, tuple(range(len(layer.blocks))), whole=True)))
    return tuple(out)


def unpair_layer_types(f: Fields) -> None:
    """A layout that writes each layer as two layer_types entries, its attention then an `entry` block (Dory's
    released config.json: "sliding_attention", "mlp", ...; DoryConfig.__post_init__ pairs them back), under the
    family's `_paired_layer_types: {entry, halve}`: keep the attention entries and halve the `halve` counts, which
    that layout writes in blocks. A list that does not alternate is refused naming layer_types."""
    rule = f.cfg.get("_paired_layer_types")
    types = f.cfg.get("layer_types") if rule else None
    if not isinstance(types, list) or rule["entry"] not in types:
        return
    entry = rule["entry"]
    if len(types) % 2 or any(t != entry for t in types[1::2]) or entry in types[::2]:
        raise f.err("layer_types", f"lists {entry!r} entries, so each layer is written as two entries (its "
                                   f"attention, then {entry!r}); these do not alternate")
    f.cfg["layer_types"] = types[::2]
    for key in rule["halve"]:
        if f.has(key):
            value = f.int(key, minimum=0, maximum=2 * MAX_LAYERS)
            if value % 2:
                raise f.err(key, f"{value}: the paired layout writes two entries a layer, so an even count")
            f.cfg[key] = value // 2


def pass_fields(fact: Any) -> set[str]:
    """The config fields a `_passes` fact reads (they are not left unread)."""
    out: set[str] = set()
    for segment in (fact or {}).get("order", ()) if isinstance(fact, dict) else ():
        out |= _segment_fields(segment)
    return out


def _segment_fields(segment: dict[str, Any]) -> set[str]:
    out = {str(segment[k]) for k in ("layers", "times") if isinstance(segment.get(k), str)}
    if isinstance(segment.get("layers"), dict):
        out |= {str(v) for v in segment["layers"].values()}
    if segment.get("cache"):
        out.add(str(segment["cache"]["field"]))
    for inner in segment.get("of", ()):
        out |= _segment_fields(inner)
    return out
