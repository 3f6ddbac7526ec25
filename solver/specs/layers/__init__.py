"""Layer types: one module per mixer / FFN type (see base.py for the questions each answers)."""
from solver.specs.layers.attention import Attention
from solver.specs.layers.compressed import CompressedAttention
from solver.specs.layers.base import Block, Layer, Part, Share, State, grouped, runs
from solver.specs.layers.dense import DenseFFN
from solver.specs.layers.dsa import Indexer
from solver.specs.layers.mla import MLA
from solver.specs.layers.moe import MoE

__all__ = ["Attention", "CompressedAttention", "CrossAttention", "Block", "DenseFFN", "GatedDeltaNet", "Indexer", "KDA", "Layer", "Lightning", "MLA",
           "Mamba1", "Mamba2", "MoE", "Part", "RGLRU", "Share", "ShortConv", "State", "grouped", "runs"]

# the linear-attention, SSM, RG-LRU, short-conv and cross-attention layers load with the first model that has one (`inspect` of a transformer skips them)
_LAZY = {"KDA": "linear", "GatedDeltaNet": "linear", "Lightning": "linear", "Mamba1": "mamba", "Mamba2": "mamba",
         "ShortConv": "conv", "CrossAttention": "cross", "RGLRU": "rglru"}


def __getattr__(name: str):
    if name in _LAZY:
        from importlib import import_module

        return getattr(import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
