"""Stop 51: `solve` hints copies where the engine runs attention DP only as copies (solver.plan.copies.attention_held):
TensorRT-LLM runs a dense model's attention TP over the whole world (C.attention_dp_all_or_none,
C.attention_dp_moe_only), so on 8 H100s it answers Pure TP8, while two trtllm-serve copies of TP4 carry clearly more
per rank. The planner's tables never hold the layout these rules turn away, so it cannot call them binding."""
from __future__ import annotations

from solver.entry import run_solve
from solver.plan import copies
from solver.space.placement import as_launched
from solver.specs.framework import load_framework
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import load_model
from solver.specs.parallel import ParallelConfig
from solver.specs.scenario import Scenario

LLAMA = "llama-3.3-70b"
THROUGHPUT = Scenario(kind="throughput")
TRT_RULES = ["C.attention_dp_all_or_none", "C.attention_dp_moe_only"]


def _held(framework: str, world: int, attn_tp: int | None = None, pp: int = 1) -> list[str]:
    hw, fw = load_hardware("h100_sxm"), load_framework(framework)
    tp = world // pp if attn_tp is None else attn_tp
    first = ParallelConfig(world_size=world, attn_tp_size=tp, dense_tp_size=tp, embed_tp_size=tp, lmhead_tp_size=tp,
                           pp_size=pp)
    return copies.attention_held(load_model(LLAMA), lambda w: as_launched(hw, fw, w), fw, world, THROUGHPUT, False,
                                 first)


def test_world_rules_turning_away_an_attention_layout_a_copy_runs_are_held():
    """8 ranks under TensorRT-LLM: attention TP4 x DP2 breaks both world rules; a copy of 4 runs TP4 as TP over
    its whole world."""
    assert _held("trtllm", 8) == TRT_RULES


def test_no_rule_is_held_where_the_engine_runs_attention_dp_in_one_world():
    """vLLM runs attention DP on a dense model within one world: no world rule turns TP4 x DP2 away."""
    assert _held("vllm", 8) == []


def test_no_rule_is_held_where_the_answer_s_attention_is_not_over_the_whole_world():
    """#1 at attention TP2 (x DP4) on 8 ranks: no rule held its attention over the whole world, so no copy runs
    more of its pattern than it does."""
    assert _held("trtllm", 8, attn_tp=2) == []


def test_no_rule_is_held_on_one_rank():
    """One rank has no smaller copy (and the dense rule's `when` needs world > 1)."""
    assert _held("trtllm", 1) == []


def test_copies_hinted_where_the_engine_runs_attention_dp_only_as_copies():
    """The solve of 8 H100s under TensorRT-LLM (Pure TP8, about 123 tok/s per rank) says two copies of 4 (Pure
    TP4, about 158) past MARGIN, naming both rules and the command that weighs copies."""
    result, cands = run_solve(LLAMA, "h100_sxm", 8, THROUGHPUT, "trtllm", copies_hint=True)
    here = cands[0].planned.estimate.output_tokens_per_s_per_rank
    note = result.copies_note
    assert note is not None and note.startswith("2 copies of 4 x h100_sxm (Pure TP4, ")
    assert all(r in note for r in TRT_RULES)
    assert "`shardplan recommend llama-3.3-70b --hardware h100_sxm --cards 4,8 " in note
    assert float(note.split(" would run ")[1].split(" ")[0]) >= copies.MARGIN * here
