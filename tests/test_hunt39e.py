"""Long contexts and the context-parallel family tried as a user would (round 39e): one test per rule."""
from __future__ import annotations

from solver.rank.select import pattern_name
from solver.specs.model_catalog import load_model
from solver.specs.parallel import ParallelConfig


def _pc(**knobs: int) -> ParallelConfig:
    return ParallelConfig(world_size=8, embed_tp_size=8, lmhead_tp_size=8, **knobs)


def test_a_pattern_name_counts_shared_experts_as_the_dense_tp_module() -> None:
    """Qwen3-Next has shared experts and no dense layer: dense_tp_size runs the shared experts, so attention TP8 +
    MoE EP with shared experts TP8 and with them replicated were both named "Attn TP8 + MoE EP" (two rows alike in
    one solve table, 8 x B200, SGLang, ISL 262,000); the TP8 one is "+ Dense TP8" as on a model with dense layers."""
    model = load_model("qwen3-next-80b-a3b")
    split, replicated = _pc(attn_tp_size=8, dense_tp_size=8), _pc(attn_tp_size=8)
    assert pattern_name(split, model) == "Attn TP8 + Dense TP8 + MoE EP"
    assert pattern_name(replicated, model) == "Attn TP8 + MoE EP"


def test_a_model_whose_shared_experts_are_replicated_is_not_pure_tp() -> None:
    """Every module TP8 but the shared experts (dense_tp_size 1: replicated on each rank) is not "Pure TP8"."""
    model = load_model("qwen3-next-80b-a3b")
    assert pattern_name(_pc(attn_tp_size=8, moe_tp_size=8), model) == "Attn TP8 + MoE TP8"
    assert pattern_name(_pc(attn_tp_size=8, moe_tp_size=8, dense_tp_size=8), model) == "Pure TP8"
