"""The linear modules a checkpoint of the read layer stack holds, by the names its quantization_config lists use.

Each layer's blocks name their weights (Share.module / Part.name); module_names.yaml says which modules each is
stored as, per family line. quant.py matches the config's ignore / exclude / targets lists against these, so a
list is read against the modules the model has (a MoE layer has no dense MLP; Mixtral's experts are w1 / w2 / w3).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable

from solver.specs.layers.base import Layer
from solver.specs.validation import load_yaml

_PATH = Path(__file__).parent / "module_names.yaml"


@dataclass(frozen=True)
class Module:
    """One linear module (or embedding) of the checkpoint."""

    names: tuple[str, ...]  # its full names: aliases where exporters name the same module differently
    group: str  # the precision group its weights are sized in (attention, dense, experts, embedding, lm_head, norm)
    kind: str  # "layer" (inside a decoder layer), "embedding", "lm_head"


@dataclass(frozen=True)
class ModuleSet:
    modules: tuple[Module, ...]
    roots: tuple[str, ...]  # the text model's module names (model, or a wrapper's model.language_model, ...)


@lru_cache(maxsize=1)
def _table() -> dict[str, dict[str, Any]]:
    return load_yaml(_PATH, own=True) or {}


def _naming(families: Iterable[str]) -> dict[str, Any]:
    table = _table()
    out = dict(table["_default"])
    parts = dict(out["parts"])
    for fam in families:  # the first family with a line wins (the language model's, else the wrapper's)
        if fam in table:
            line = table[fam] or {}
            parts.update(line.get("parts") or {})
            out.update({k: v for k, v in line.items() if k != "parts"})
            break
    out["parts"] = parts
    return out


def model_modules(layers: Iterable[Layer], families: Iterable[str], nested: bool) -> ModuleSet:
    """The modules of the decoder `layers` (MTP layers included, numbered after the stack), the embedding and the
    head, named as the family's line says; `nested`: the language model sits in a multimodal wrapper."""
    n = _naming(families)
    roots = n["nested_root"] if nested else n["root"]
    heads = n["nested_lm_head"] if nested else n["lm_head"]
    out = [Module(tuple(f"{r}.{n['embedding']}" for r in roots), "embedding", "embedding"),
           Module(tuple(heads), "lm_head", "lm_head")]
    for i, layer in enumerate(layers):
        prefixes = tuple(f"{r}.{n['layers']}.{i}" for r in roots)
        for block in layer.blocks:
            for share in block.shares():
                suffixes = [s.format(e=0) for p in share.parts for s in n["parts"].get(f"{share.module}/{p.name}", ())]
                for s in suffixes or [share.module]:
                    out.append(Module(tuple(f"{p}.{s}" for p in prefixes), share.group, "layer"))
    return ModuleSet(tuple(out), tuple(roots))
