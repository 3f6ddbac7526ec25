"""Rules of a candidate's departure from the seed's Layer 2: the reason prices the seed's value at the same
backbone and concurrency by the full estimate (its score against the candidate and the table's figures), or names
what rules it out, on every candidate shown."""
from __future__ import annotations

import functools

import pytest

from solver.estimate.compute import factors_for
from solver.estimate.serving import Workload, estimate
from solver.specs.framework import load_framework
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import load_model
from solver.rank.explain import expressed, score_vs, score_word, seed_value_priced
from solver.rank.reason import decision_tree_reason, seed_attention
from solver.space.placement import as_launched
from solver.specs.parallel import ParallelConfig
from solver.specs.precision import resolve_precision
from solver.specs.scenario import Scenario


@functools.cache
def _solve(model: str, framework: str, kind: str):
    from solver.entry import run_solve

    return run_solve(model, "h100_sxm", 8, Scenario(kind=kind), framework)[1]


def _reprice(model: str, framework: str, kind: str, i: int, attn_tp: int | None = None,
             **knobs: int) -> tuple[float, str]:
    """A second, independent estimate of candidate i with the seed's attention TP (or the knobs given): (its score
    against the candidate, the clause's figures), the same arithmetic the reason must show."""
    cand = _solve(model, framework, kind)[i]
    spec, fw = load_model(model), load_framework(framework)
    hw = as_launched(load_hardware("h100_sxm"), fw, 8)
    prec = resolve_precision(spec, hw, None, None, None)
    p = cand.planned
    if attn_tp is not None:
        (label, pc), = [(lb, c) for lb, c in seed_attention(p.config, spec, Scenario(kind=kind), hw,
                                                             fw.kvp_splits_attention_weights)
                        if lb == f"attn_tp={attn_tp}"]
    else:
        pc = ParallelConfig(world_size=8, **{**p.config.knobs(), **knobs})
    pc, broken = expressed(spec, hw, fw, Scenario(kind=kind), pc, p.batch)
    assert not broken
    e = estimate(spec, hw, pc, prec, factors_for(hw, fw.efficiency_for(hw)),
                 Workload.for_scenario(Scenario(kind=kind), p.batch))
    s = score_vs(Scenario(kind=kind), e, p.estimate)
    return s, (f"mem {p.estimate.memory.model_bytes / 1e9:.2f} -> {e.memory.model_bytes / 1e9:.2f} GB, "
               f"TTFT {p.estimate.ttft_s * 1e3:,.0f} -> {e.ttft_s * 1e3:,.0f} ms, "
               f"TPOT {p.estimate.tpot_s * 1e3:.2f} -> {e.tpot_s * 1e3:.2f} ms")


def test_latency_departure_to_attention_dp_prices_the_seeds_attention_tp() -> None:
    """Qwen3-30B-A3B on 8 x H100 under SGLang (latency): #1 runs attention DP where the seed suggests a moderate
    attention TP for GQA. The reason prices attn_tp=2, 4, 8 at #1's backbone (MoE EP) and concurrency and names the
    best by its score against #1, with the TTFT / TPOT it would have; the score is positive (the seed's value is
    worse), so attention DP is why."""
    c = _solve("qwen3-30b-a3b", "sglang", "latency")[0]
    assert c.planned.config.attn_tp_size == 1
    s, figures = _reprice("qwen3-30b-a3b", "sglang", "latency", 0, 2)
    assert s > 0
    assert (f"departs: the seed's attn_tp=2 (the best of attn_tp=2/4/8) at the same backbone and concurrency "
            f"{c.planned.batch} scores {s:+.3f} (worse) against it: {figures}") in c.reason
    assert "the estimate favours it" not in c.reason


def test_candidates_below_the_first_price_their_departure_too() -> None:
    """#2 and #3 of the same answer run attention DP with CP2: attn_tp=2 x CP2 is priced at their own concurrency,
    attn_tp=4 x CP2, which SGLang's rule refuses, is named with the rule (rules_broken's id), and attn_tp=8 x CP2
    (an attention group of 16 on 8 ranks) with the space's refusal."""
    cands = _solve("qwen3-30b-a3b", "sglang", "latency")
    spec, fw = load_model("qwen3-30b-a3b"), load_framework("sglang")
    hw = as_launched(load_hardware("h100_sxm"), fw, 8)
    for i, c in list(enumerate(cands))[1:]:
        s, figures = _reprice("qwen3-30b-a3b", "sglang", "latency", i, 2)
        assert f"concurrency {c.planned.batch} scores {s:+.3f}" in c.reason and figures in c.reason
        tp4 = ParallelConfig(world_size=8, **{**c.planned.config.knobs(), "attn_tp_size": 4})
        broken = expressed(spec, hw, fw, Scenario(kind="latency"), tp4, c.planned.batch)[1]
        assert broken and f"attn_tp=4: violates {', '.join(dict.fromkeys(broken))}" in c.reason
        assert "attn_tp=8: attention group attn_tp*cp*kvp*sp = 16 does not divide the world size 8" in c.reason


def test_throughput_departure_where_attention_dp_fits_prices_attention_dp() -> None:
    """Llama-3.3-70B on 8 x H100, generic profile (throughput): #2 runs attention TP2 where attn_tp=1 fits in
    memory (nothing ties the dense FFN to attention TP), so memory is not why: attn_tp=1 at its backbone
    (dense TP4) and concurrency is priced; it scores +0.011, inside the 3% tie band (ln 1.03 = 0.0296), so it is
    said to be tied rather than worse."""
    c = _solve("llama-3.3-70b", "generic", "throughput")[1]
    assert c.planned.config.attn_tp_size > 1
    s, figures = _reprice("llama-3.3-70b", "generic", "throughput", 1, 1)
    assert (f"departs: the seed's attn_tp=1 at the same backbone and concurrency {c.planned.batch} scores "
            f"{s:+.3f} ({score_word(s)}) against it: {figures}") in c.reason


def test_a_seed_value_every_rule_refuses_is_named_with_the_rules() -> None:
    """Where no seed value may run, the clause is what rules each out at that concurrency: attn_tp=8 under
    attention DP + CP2 makes an attention group of 8 x 2 = 16 on 8 ranks, which the space refuses (seed_attention
    keeps the refusal); attn_tp=4 x CP2 breaks SGLang's rule."""
    spec, fw = load_model("qwen3-30b-a3b"), load_framework("sglang")
    hw = as_launched(load_hardware("h100_sxm"), fw, 8)
    sc = Scenario(kind="latency")
    pc = ParallelConfig(world_size=8, cp_size=2, lmhead_tp_size=8)
    seeds = seed_attention(pc, spec, sc, hw, fw.kvp_splits_attention_weights)
    assert [lb for lb, _ in seeds] == ["attn_tp=2", "attn_tp=4", "attn_tp=8"]
    assert seeds[2][1] == "attention group attn_tp*cp*kvp*sp = 16 does not divide the world size 8"
    tp4 = [(lb, c) for lb, c in seeds if lb == "attn_tp=4"]
    broken = expressed(spec, hw, fw, sc, tp4[0][1], 4)[1]
    assert broken
    clause = seed_value_priced(spec, hw, fw, resolve_precision(spec, hw, None, None, None),
                               factors_for(hw, fw.efficiency_for(hw)), sc, _solve("qwen3-30b-a3b", "sglang",
                                                                                  "latency")[1].planned.estimate,
                               4, [*tp4, seeds[2]])
    assert clause == (f"attn_tp=4: violates {', '.join(dict.fromkeys(broken))}; attn_tp=8: {seeds[2][1]}, "
                      "at the same backbone and concurrency 4")


def test_a_backbone_without_room_for_attention_tp_says_so() -> None:
    """Llama-3.3-70B as PP8 on 8 ranks (latency): each stage is one rank, so no attention TP from 2 divides it;
    the reason says so instead of crediting the estimate."""
    spec = load_model("llama-3.3-70b")
    hw = load_hardware("h100_sxm")
    pc = ParallelConfig(world_size=8, pp_size=8)
    sc = Scenario(kind="latency")
    assert seed_attention(pc, spec, sc, hw) == []
    reason = decision_tree_reason(pc, spec, sc, hw, price=lambda seeds: pytest.fail("nothing to price"))
    assert "departs: no attn_tp the seed suggests divides this backbone's 1-rank stage and the 64 heads" in reason


def test_a_configuration_following_the_branch_prices_nothing() -> None:
    """A balanced scenario's Layer 2 is met by any attention TP, and a throughput pick at attn_tp=1 follows its
    branch: neither departs, so no attention TP is priced."""
    spec, hw = load_model("llama-3.3-70b"), load_hardware("h100_sxm")
    priced: list[str] = []
    for kind, pc in (("balanced", ParallelConfig(world_size=8, attn_tp_size=8, dense_tp_size=8)),
                     ("throughput", ParallelConfig(world_size=8, dense_tp_size=8))):
        reason = decision_tree_reason(pc, spec, Scenario(kind=kind), hw,
                                      price=lambda seeds: priced.extend(lb for lb, _ in seeds) or "priced")
        assert "departs" not in reason
    assert not [lb for lb in priced if lb.startswith("attn_tp")]  # only the replicated tables were priced


def test_a_replicated_vocabulary_table_prices_its_tp_within_the_node() -> None:
    """Llama-3.3-70B on 8 x H100, generic profile (balanced): #1 (Pure TP8) keeps the embedding whole where the
    seed allows TP within the node: embed_tp=8 at #1's backbone and concurrency is priced (the memory it frees and
    the score its all-gather costs), in place of an unpriced "its all-reduce would cost more"."""
    c = _solve("llama-3.3-70b", "generic", "balanced")[0]
    assert c.planned.config.embed_tp_size == 1
    s, figures = _reprice("llama-3.3-70b", "generic", "balanced", 0, embed_tp_size=8)
    assert (f"embed replicated (2.1 GB per rank, and memory does not bind; embed_tp=8 at the same backbone and "
            f"concurrency {c.planned.batch} scores {s:+.3f} ({score_word(s)}) against it: "
            f"{figures}") in c.reason
    assert "would cost more than the memory" not in c.reason


def test_replicated_shared_experts_price_the_tp_the_node_allows() -> None:
    """Qwen3.5-122B-A10B at attention DP8 + EP8 on 8 x MI355X: the shared experts replicated are priced at the
    node's TP (dense_tp=8, the widest divisor of the 8-rank stage within the 8-rank node)."""
    model, hw = load_model("qwen3.5-122b-a10b"), load_hardware("mi355x")
    pc = ParallelConfig(world_size=8)
    seen = []

    def price(seeds):
        seen.extend(lb for lb, _ in seeds)
        return "PRICED"

    reason = decision_tree_reason(pc, model, Scenario(kind="balanced"), hw, ties={}, price=price)
    assert "shared experts replicated (seed allows TP within the node: PRICED)" in reason
    assert seen[0] == "dense_tp=8"


def test_a_one_rank_stage_has_no_split_to_price() -> None:
    """A stage of one rank (PP8 on 8) has nothing to split a table over: seed_split offers nothing."""
    from solver.rank.reason import seed_split

    assert seed_split(ParallelConfig(world_size=8, pp_size=8), ("embed_tp_size",), load_hardware("h100_sxm")) == []
