"""The reason an answer gives for a table or split held at 1: the engine's rule that ties it to TP, the one rank that
holds it, or the estimate's weighing where the engine leaves the knob free."""
from __future__ import annotations

from solver.rank.reason import TIED_REASON_KNOBS, decision_tree_reason
from solver.rank.ties import SINGLE_RANK, profile_ties
from solver.specs.framework import load_framework
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import load_model
from solver.specs.parallel import ParallelConfig
from solver.specs.scenario import Scenario

Q122 = "qwen3.5-122b-a10b"


def _dp8_ep8() -> ParallelConfig:
    """Attention DP8 + MoE EP8 on 8 ranks: every TP knob 1."""
    return ParallelConfig(world_size=8)


def test_a_knob_the_engine_ties_to_tp_is_credited_to_its_rule_not_to_the_estimate() -> None:
    """ATOM runs the dense FFN, the embedding and the LM head over its one TP group (C.dense_tp_is_tp,
    C.embed_tp_is_tp, C.lmhead_tp_is_tp: the knob == attn_tp x kvp). At attention DP8 (TP 1) each of the other
    divisors of 8 (2, 4, 8) breaks that rule, so the value 1 is the engine's, and the reason said instead "its
    all-reduce would cost more than the memory it frees" (solve qwen3.5-122b-a10b, 8 x MI355X, --framework atom)."""
    model, hw, pc = load_model(Q122), load_hardware("mi355x"), _dp8_ep8()
    ties = profile_ties(load_framework("atom"), model, hw, pc, TIED_REASON_KNOBS)
    assert ties == {"dense_tp_size": "atom's C.dense_tp_is_tp", "embed_tp_size": "atom's C.embed_tp_is_tp",
                    "lmhead_tp_size": "atom's C.lmhead_tp_is_tp"}
    reason = decision_tree_reason(pc, model, Scenario(kind="balanced"), hw, ties=ties)
    # the table's bytes stay said: 248,320 x 3,072 x 2 B = 1.53e9 B
    assert "embed replicated (1.5 GB per rank; set by atom's C.embed_tp_is_tp, and memory does not bind)" in reason
    assert "shared experts replicated (set by atom's C.dense_tp_is_tp)" in reason
    assert "would cost more than the memory" not in reason and "estimate prefers" not in reason
    assert "set independently" not in reason


def test_a_knob_the_engine_leaves_free_keeps_the_estimates_reason() -> None:
    """The generic profile sets the tables and the shared experts' TP independently: no rule holds them, so the
    reason stays the seed's (the estimate weighed the all-reduce against the memory)."""
    model, hw, pc = load_model(Q122), load_hardware("mi355x"), _dp8_ep8()
    assert profile_ties(load_framework("generic"), model, hw, pc, TIED_REASON_KNOBS) == {}
    reason = decision_tree_reason(pc, model, Scenario(kind="balanced"), hw, ties={})
    assert "set independently: embed replicated" in reason and "would cost more than the memory" in reason


def test_a_single_rank_holds_every_split_at_one() -> None:
    """A disaggregated prefill worker of one rank (4P1D of Qwen3.5-122B-A10B on 8 x MI355X) has no divisor of its
    ranks but 1: its tables are whole because there is nothing to split them over, not because "its all-reduce
    would cost more than the memory it frees", whatever the engine."""
    model, hw = load_model(Q122), load_hardware("mi355x")
    one = ParallelConfig(world_size=1)
    for engine in ("generic", "atom"):
        ties = profile_ties(load_framework(engine), model, hw, one, TIED_REASON_KNOBS)
        assert ties == dict.fromkeys(TIED_REASON_KNOBS, SINGLE_RANK)
    reason = decision_tree_reason(one, model, Scenario(kind="balanced"), hw, ties=ties)
    assert "one rank holds the tables: embed replicated (1.5 GB per rank, and memory does not bind)" in reason
    assert "would cost more than the memory" not in reason
