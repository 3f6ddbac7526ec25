"""Rules of a disaggregated answer's pools read as a team plans them: each pool's departures from the seed are
priced at the pool's own phase and concurrency, as an aggregated candidate's are, and a seed value the engine runs
only by setting it back is named with the rule that refuses it, not priced as the configuration itself."""
from __future__ import annotations

import functools

from solver.estimate.compute import factors_for
from solver.estimate.serving import Workload, estimate
from solver.plan.disagg_pools import phase_scenario
from solver.rank.cell import fmt_cell
from solver.rank.explain import admitted, rules_broken, score_vs, score_word, seed_value_priced
from solver.rank.reason import seed_split
from solver.specs.framework import load_framework
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import load_model
from solver.specs.parallel import ParallelConfig
from solver.specs.precision import resolve_precision
from solver.specs.scenario import Scenario

SCENARIO = Scenario(kind="throughput", isl=4096, osl=1024)


@functools.cache
def _disagg():
    from solver.entry import run_disagg

    return run_disagg("deepseek-v3.2", "h200_sxm", 32, SCENARIO, "sglang", compare_aggregated=False)


def test_a_pools_replicated_module_is_priced_at_the_pools_phase_and_concurrency() -> None:
    """DeepSeek-V3.2 on 32 x H200 under SGLang (4K/1K, throughput): the prefill pool keeps the dense FFN and shared
    experts replicated where the seed allows TP within the node (8 ranks on an H200 node). The reason prices
    dense_tp=8 at the pool's backbone and its own concurrency (the prompts per step of one worker, at the prefill
    phase): a second estimate of that configuration, its score against the pool's and the TTFT it would have, the
    same clause an aggregated candidate shows, not an unpriced 'the estimate prefers no all-reduce here'."""
    pool = next(v for v in _disagg().pools if v.phase == "prefill")
    p = pool.candidate.planned
    assert p.config.dense_tp_size == 1 and p.config.stage_world % 8 == 0
    spec, hw, fw = load_model("deepseek-v3.2"), load_hardware("h200_sxm"), load_framework("sglang")
    prec = resolve_precision(spec, hw, None, None, None)
    sc = phase_scenario(SCENARIO, "prefill", p.batch)
    seed = ParallelConfig(world_size=p.config.world_size, **{**p.config.knobs(), "dense_tp_size": 8})
    e, why = admitted(spec, hw, fw, prec, factors_for(hw, fw.efficiency_for(hw)), sc, seed, p.batch)
    assert e is not None, why
    s = score_vs(sc, e, p.estimate)
    assert (f"dense_tp=8 at the same backbone and concurrency {p.batch} scores {s:+.3f} ({score_word(s)}) "
            f"against it: mem {p.estimate.memory.model_bytes / 1e9:.2f} -> {e.memory.model_bytes / 1e9:.2f} GB, "
            f"TTFT {fmt_cell(p.estimate.ttft_s * 1e3)} -> {fmt_cell(e.ttft_s * 1e3)} ms, prompt tok/s per rank "
            f"{fmt_cell(p.estimate.output_tokens_per_s_per_rank * 4096)} -> "
            f"{fmt_cell(e.output_tokens_per_s_per_rank * 4096)})") in pool.candidate.reason
    assert "the estimate prefers no all-reduce here" not in pool.candidate.reason


def test_every_pool_reason_is_priced_where_the_seed_allows_a_split() -> None:
    """Neither pool of that answer falls back to an unpriced departure: the decode pool's replicated lm_head says
    the seed's lmhead_tp=8 with its figures or its refusal, as the prefill pool's dense FFN does."""
    for pool in _disagg().pools:
        assert "its all-reduce would cost more than the memory it frees" not in pool.candidate.reason
        assert "the estimate prefers no all-reduce here" not in pool.candidate.reason


def test_a_seed_value_the_engine_runs_only_set_back_is_named_with_its_rule() -> None:
    """SGLang on a MoE model runs the LM head over all ranks or over the attention TP group
    (C.lmhead_tp_world_or_attn_tp: lmhead_tp in {16, 1} for attention DP on 16 ranks). The seed's lmhead_tp=8 (the
    widest TP an 8-rank H200 node holds that divides 16) is neither, and the one runnable form among its side
    variants sets lmhead_tp back to 1, the configuration itself: the clause names the rule, it does not price that
    form as the seed's value (it scored +0.000 against itself)."""
    spec, hw, fw = load_model("deepseek-v3.2"), load_hardware("h200_sxm"), load_framework("sglang")
    prec = resolve_precision(spec, hw, None, None, None)
    f = factors_for(hw, fw.efficiency_for(hw))
    sc = phase_scenario(SCENARIO, "decode")
    pc = ParallelConfig(world_size=16, moe_tp_size=2)  # MoE TP2 x EP8, attention DP16
    seeds = seed_split(pc, ("lmhead_tp_size",), hw)
    assert [lb for lb, _ in seeds] == ["lmhead_tp=8"]
    broken = rules_broken(spec, hw, fw, sc, seeds[0][1], 512)
    assert "C.lmhead_tp_world_or_attn_tp" in broken
    est = estimate(spec, hw, pc, prec, f, Workload.for_scenario(sc, 512))
    clause = seed_value_priced(spec, hw, fw, prec, f, sc, est, 512, seeds)
    assert clause == (f"lmhead_tp=8: violates {', '.join(dict.fromkeys(broken))}, "
                      "at the same backbone and concurrency 512")


def test_a_pools_reference_is_a_verified_deployment_of_its_own_phase() -> None:
    """The published disaggregated deployments are prefill instances and decode instances (references/*-p*, *-d*):
    the prefill pool of that answer is compared with the closest prefill instance, the decode pool with the
    closest decode instance. Its prefill pool (attention DP + SP8 + MoE EP on 8 ranks) sat closest to a decode
    instance (r1-d16-ep) when every phase was offered, which says nothing of how a prefill pool is cut."""
    from solver.entry import _ref_models
    from solver.rank.select import closest_reference
    from solver.specs.reference import list_references

    spec, hw = load_model("deepseek-v3.2"), load_hardware("h200_sxm")
    for pool in _disagg().pools:
        ref = pool.candidate.reference_deployment
        assert ref is not None and ref.phase == pool.phase
        same = [r for r in list_references() if r.phase == pool.phase]
        assert ref.id == closest_reference(pool.candidate.planned.config, spec, hw, same, _ref_models())[0].id


def test_a_win_by_default_says_why_no_aggregated_plan_fits() -> None:
    """Where the aggregated plan on the same cards and SLA has no configuration, the disaggregated answer wins
    by default: the comparison says so with the aggregated planner's own refusal beside it (as the YAML's
    `aggregated: infeasible` carries it), not a bare 'fits nothing'."""
    from solver.report.disagg_view import compare

    refusal = "no feasible parallel_config for DeepSeek-V3.2 on 32 x h200_sxm: SLA.tpot, SLA.ttft bind"
    c = compare(_disagg().plan, None, SCENARIO, 32, agg_error=refusal)
    assert c.winner == "disagg" and c.throughput_ratio is None
    assert c.why == (f"no aggregated configuration fits these cards and SLA: {refusal}",)


def test_a_prefill_figures_rate_is_in_prompt_tokens_as_the_table_shows_it() -> None:
    """A prefill-only estimate emits one token per prompt, so its output tokens/s per rank is prompts/s per rank;
    the table's column for that phase is prompt tokens/s per rank (x ISL = 4096 here). The priced clause says the
    same figure: the prefill pool's rate x 4096, not the one-token-per-prompt rate (0.423 tok/s per rank read
    beside a table of thousands)."""
    from solver.rank.explain import figures_vs

    e = next(v for v in _disagg().pools if v.phase == "prefill").candidate.planned.estimate
    assert not e.has_tpot
    rate = fmt_cell(e.output_tokens_per_s_per_rank * 4096)
    assert figures_vs(e, e, 4096).endswith(f"prompt tok/s per rank {rate} -> {rate}")
    assert figures_vs(e, e).endswith(f"tok/s per rank {fmt_cell(e.output_tokens_per_s_per_rank)} -> "
                                     f"{fmt_cell(e.output_tokens_per_s_per_rank)}")
