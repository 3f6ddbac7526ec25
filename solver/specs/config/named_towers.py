"""An image tower a config names by checkpoint rather than sizing it, and the projector beside it: LLaVA's original
layout (liuhaotian/llava-v1.5, Yi-VL, Bunny), where the language model's own config writes

  mm_vision_tower    the tower's checkpoint (LLaVA's builder loads its CLIPVisionModel / SiglipVisionModel whole);
                     its sizes come from a table of the standard towers (named_towers.yaml, each row's source given)
                     and are counted by the tower conventions of encoders.py under the tower class's facts; a name
                     the table lacks is refused, naming the field
  mm_hidden_size     the projector's input width: the tower's width, or a multiple of it where S2 (use_s2)
                     concatenates the tower's features at several image scales (one set of weights)
  mm_projector_type  the projector as LLaVA's multimodal_projector/builder.py builds it: `linear` (its default:
                     nn.Linear(mm_hidden_size, hidden_size)), `mlpNx_gelu` (that linear, then N - 1 times GELU and
                     a biased hidden x hidden linear), `identity` (no weights; the widths must agree); and
                     `mlpNx_gelu_Norm`, Yi-VL's fork of that builder: a LayerNorm after each linear
"""
from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Any

from solver.specs.config.encoders import TOWER_FACTS, Encoder
from solver.specs.config.fields import Fields, ReadRecorder
from solver.specs.config.vit_towers import vit_tower
from solver.specs.validation import load_yaml

NAMED_TOWER_FIELD = "mm_vision_tower"
_TABLE = Path(__file__).parent / "named_towers.yaml"
_MLP = re.compile(r"mlp(\d+)x_gelu(_Norm)?")


@lru_cache(maxsize=1)
def _towers() -> dict[str, dict[str, Any]]:
    return load_yaml(_TABLE, own=True) or {}


def tower_row(name: str) -> dict[str, Any] | None:
    """The table's row for a checkpoint name: the full name, else its last path component (a local copy keeps the
    checkpoint's folder name)."""
    table = _towers()
    if name in table:
        return table[name]
    leaf = name.rstrip("/").rsplit("/", 1)[-1]
    return next((row for key, row in table.items() if key.rsplit("/", 1)[-1] == leaf), None)


def read_named_tower(raw: dict[str, Any], text_hidden: int, origin: str, notes: list[str],
                     families: dict[str, dict[str, Any]]) -> Encoder | None:
    """The tower and projector of a config that names its tower's checkpoint (the module docstring); None when it
    names none."""
    f = Fields(raw, origin)
    name = raw.get(NAMED_TOWER_FIELD)
    if name is None or name == "":
        return None
    if not isinstance(name, str):
        raise f.err(NAMED_TOWER_FIELD, "must be a checkpoint name (a string)")
    if isinstance(raw.get("vision_config"), dict) and raw.get("vision_config"):
        raise f.err(NAMED_TOWER_FIELD, f"{name!r} and a vision_config both describe an image tower; one of them "
                                       "would be counted and the other dropped")
    row = tower_row(name)
    if row is None:
        known = ", ".join(sorted(k.rsplit("/", 1)[-1] for k in _towers()))
        raise f.err(NAMED_TOWER_FIELD, f"{name!r}: an image tower named by a checkpoint whose sizes shardplan does "
                                       f"not hold (it holds {known}); not counted rather than miscounted (write the "
                                       "tower's sizes as a vision_config, or drop the field to size the language "
                                       "model alone)")
    own = families.get(str(row["model_type"])) or {}
    facts = {k: v for k, v in own.items() if str(k).startswith(TOWER_FACTS)}
    sizes = ReadRecorder({k: v for k, v in row.items() if k != "source"})
    tower, layers, h, _ = vit_tower(Fields(sizes, origin, prefix=f"{NAMED_TOWER_FIELD}."), notes, facts)
    notes.append(f"{NAMED_TOWER_FIELD}: {name!r} sized from shardplan's table of named towers: {h} wide, {layers} "
                 f"layers, {row['patch_size']} px patches at {row['image_size']} px ({row['source']})")
    return Encoder("vision", tower + _projector(f, raw, h, text_hidden, notes), layers, h)


def _projector(f: Fields, raw: dict[str, Any], h: int, text_hidden: int, notes: list[str]) -> int:
    """Parameters of the projector from mm_hidden_size into the text width (the module docstring)."""
    if f.has("mm_hidden_size"):
        width = f.int("mm_hidden_size")
    else:
        width = h
        notes.append(f"mm_hidden_size: not written; the projector's input is read as the tower's width ({h})")
    if width % h:
        raise f.err("mm_hidden_size", f"{width} is not a multiple of the named tower's width ({h}); the projector "
                                      "would be sized from a width the tower does not give")
    if width != h:
        if not f.bool("use_s2"):
            raise f.err("mm_hidden_size", f"{width} is {width // h} x the named tower's width ({h}) without use_s2 "
                                          "(S2's features at several scales); the projector would be sized from a "
                                          "width the tower does not give")
        notes.append(f"mm_hidden_size: {width} = {width // h} x {h}: the tower's features at {width // h} image "
                     "scales (use_s2), one set of its weights")
    _ = raw.get("mm_vision_select_layer"), raw.get("mm_vision_select_feature")  # which output feeds it: no weights
    kind = raw.get("mm_projector_type", "linear")  # the builder's default
    if kind == "linear":
        return width * text_hidden + text_hidden
    if kind == "identity":
        if width != text_hidden:
            raise f.err("mm_projector_type", f"'identity' passes a {width}-wide feature to a {text_hidden}-wide "
                                             "language model")
        return 0
    match = _MLP.fullmatch(str(kind))
    if match is None:
        raise f.err("mm_projector_type", f"{kind!r}: not one of LLaVA's projector kinds (linear, mlpNx_gelu, "
                                         "mlpNx_gelu_Norm, identity); not counted rather than miscounted")
    depth = f.check_int("mm_projector_type", int(match.group(1)), 1, 64)
    norms = depth * 2 * text_hidden if match.group(2) else 0  # a LayerNorm after each linear (Yi-VL)
    return width * text_hidden + text_hidden + (depth - 1) * (text_hidden * text_hidden + text_hidden) + norms
