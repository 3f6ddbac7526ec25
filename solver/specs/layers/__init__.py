"""Layer types: one module per mixer / FFN type (see base.py for the questions each answers)."""
from solver.specs.layers.attention import Attention
from solver.specs.layers.compressed import CompressedAttention
from solver.specs.layers.base import Block, Layer, Part, Share, State, grouped, runs
from solver.specs.layers.dense import DenseFFN
from solver.specs.layers.dsa import Indexer
from solver.specs.layers.linear import KDA, GatedDeltaNet, Lightning
from solver.specs.layers.mamba import Mamba1, Mamba2
from solver.specs.layers.mla import MLA
from solver.specs.layers.moe import MoE

__all__ = ["Attention", "CompressedAttention", "Block", "DenseFFN", "GatedDeltaNet", "Indexer", "KDA", "Layer", "Lightning", "MLA",
           "Mamba1", "Mamba2", "MoE", "Part", "Share", "State", "grouped", "runs"]
