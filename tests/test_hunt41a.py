"""8 x MI355X / MI300X read as an AMD inference team would (round 41a): one test per rule."""
from __future__ import annotations

import pytest

from solver.estimate.memory import memory_per_rank
from solver.rank.select import TIED_REASON_KNOBS, decision_tree_reason
from solver.rank.ties import SINGLE_RANK, profile_ties
from solver.specs.framework import load_framework
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import load_model
from solver.specs.parallel import ParallelConfig
from solver.specs.precision import resolve_precision
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


def test_gated_deltanet_state_is_held_once_per_request_beside_the_full_attention_kv() -> None:
    """Qwen3.5-122B-A10B (config): 48 layers, every 4th full attention (12) with 2 KV heads of 256, bf16:
    2 x 2 x 256 x 2 B = 2,048 B a token a layer, 24,576 B a token. The 36 Gated DeltaNet layers keep a conv tail
    of (kernel 4 - 1) x conv_dim (2 x 16 x 128 keys + 64 x 128 values = 12,288) x 2 B = 73,728 B and a recurrent
    state of 64 heads x 128 x 128 in fp32 (mamba_ssm_dtype) = 4,194,304 B: 36 x 4,268,032 = 153,649,152 B a
    request, whatever its length. At attention DP8, 128 requests of 4,352 tokens put 16 on a rank:
    KV 16 x 4,352 x 24,576 = 1,711,276,032 B, state 16 x 153,649,152 = 2,458,386,432 B."""
    model, hw = load_model(Q122), load_hardware("mi355x")
    rep = memory_per_rank(model, hw, _dp8_ep8(), resolve_precision(model, hw), 128, 4352)
    assert rep.kv_cache_bytes == pytest.approx(16 * 4352 * 24_576, rel=1e-9)
    assert rep.state_bytes == pytest.approx(16 * 36 * (3 * 12_288 * 2 + 64 * 128 * 128 * 4), rel=1e-9)


def test_a_configuration_the_engine_refuses_for_several_rules_names_every_rule() -> None:
    """The generic profile's best for DeepSeek-V3.2 on 8 x MI355X (balanced) is attention DP with CP4 and the LM
    head TP8. ATOM refuses it three ways: the LM head must follow TP 1 (C.lmhead_tp_is_tp), -pcp is DeepSeek-V4's
    only (C.pcp_csa_only), and -pcp needs attn_tp x cp = world (1 x 4 != 8: C.pcp_one_tp_group). The --explain
    line named the first alone, as if splitting the LM head were all ATOM lacked."""
    from solver.rank.explain import ruled_out
    from solver.specs.rule_env import device_facts, model_env

    model, hw, fw = load_model("deepseek-v3.2"), load_hardware("mi355x"), load_framework("atom")
    pc = ParallelConfig(world_size=8, lmhead_tp_size=8, cp_size=4)
    blocked = fw.check(model_env(pc.settings(), model, **device_facts(hw), world=8, batch=32), severity="error")
    text = ruled_out("atom", blocked)
    for rule in ("C.lmhead_tp_is_tp", "C.pcp_csa_only", "C.pcp_one_tp_group"):
        assert rule in text
    assert text.startswith("atom's profile rules it out ([C.lmhead_tp_is_tp] ATOM shards the LM head")


def test_a_disaggregated_plan_says_beside_its_figures_what_the_engine_cannot_be_told() -> None:
    """The facts give ATOM no disaggregated-serving flags (engines.md has no such row; atom.yaml launch.disagg
    `missing`). `solve --serving disagg --framework atom` printed "disagg wins" in its table and YAML and said the
    role and KV-transfer flags were missing only under --format launch; both now carry the line once."""
    from solver.entry import run_disagg
    from solver.report.disagg_view import render

    r = run_disagg("qwen3.5-35b-a3b", "mi355x", 8, Scenario(kind="balanced"), framework="atom")
    gap = "the facts (engines.md) give no ATOM disaggregated-serving flags (role, KV transfer)"
    table, yml = render(r, "table"), render(r, "yaml")
    assert table.count(gap) == 1 and f"  missing: {gap}" in table
    assert yml.count(gap) == 1 and f"# missing: {gap}" in yml


def test_the_table_explain_lists_the_front_a_candidate_is_called_off() -> None:
    """`solve --explain` (table) called #3 of Qwen3.5-122B-A10B on 8 x MI355X under ATOM "off the front" and printed
    no front (the option's help promises it; only the YAML carried it). Each front point is now one line: its
    knobs above 1, concurrency, TTFT, TPOT and tokens/s per rank, and a candidate off the front is dominated by one
    of them (no higher request latency, no lower tokens/s per rank)."""
    from solver.entry import run_solve
    from solver.report.candidates import front_lines

    scenario = Scenario(kind="balanced")
    result, cands = run_solve(Q122, "mi355x", 8, scenario, framework="atom")
    lines = front_lines(result)
    assert len(lines) == len(result.front) > 0
    p = result.front[0]
    e = p.estimate
    assert lines[0].endswith(f"at concurrency {p.batch}: TTFT {e.ttft_s * 1e3:,.1f} ms, TPOT {e.tpot_s * 1e3:.2f} ms, "
                             f"{e.output_tokens_per_s_per_rank:,.1f} tok/s/rank")
    assert any(not c.planned.on_front for c in cands)
    for c in cands:
        if c.planned.on_front:
            continue
        mine = c.planned.estimate
        lat = scenario.request_latency(mine.ttft_s, mine.tpot_s)
        assert any(scenario.request_latency(q.estimate.ttft_s, q.estimate.tpot_s) <= lat
                   and q.estimate.output_tokens_per_s_per_rank >= mine.output_tokens_per_s_per_rank
                   for q in result.front)


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
