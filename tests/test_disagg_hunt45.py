"""Rules of a disaggregated answer's pools read as a team plans them: each pool's departures from the seed are
priced at the pool's own phase and concurrency, as an aggregated candidate's are, and a seed value the engine runs
only by setting it back is named with the rule that refuses it, not priced as the configuration itself."""
from __future__ import annotations

import functools

import pytest

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


def test_a_pairs_prefill_workers_run_from_one_to_the_rate_match_each_by_the_closed_loop() -> None:
    """A decode point of 8 sequences per worker at TPOT 50 ms and a prefill point of one prompt per 200 ms step
    (5 prompts/s), OSL 28, on cards enough for three workers of one rank. The decode demand with no prefill in a
    cycle is 8 / (28 x 0.05) = 5.71 requests/s, so the rate match is ceil(5.71 / 5) = 2 prefill workers: the
    pairs take x = 1 and 2, not 3. Each is ranked by the closed loop the full estimate solves (cycle Z = 0.2 +
    28 x 0.05 = 1.6 s, M/D/1 wait at each prefill rank): at x = 1 the rate is 4 requests/s, as
    4 x (1.6 + W_q) = 8 with rho = 4 / 5 = 0.8 and W_q = 0.8 x 0.2 / (2 x 0.2) = 0.4 s; the request latency is
    TTFT 0.2 + 0.4 + 0.05 plus 27 x 0.05 = 2.0 s, and 2 ranks / (4 x 28 tokens/s) = 1/56 rank per token/s."""
    from types import SimpleNamespace

    from solver.plan.disagg import pool_pairs

    sc = Scenario(kind="throughput", isl=1024, osl=28)
    cfg = ParallelConfig(world_size=1)
    d = SimpleNamespace(batch=8, config=cfg, estimate=SimpleNamespace(tpot_s=0.05))
    p = SimpleNamespace(batch=1, config=cfg, estimate=SimpleNamespace(ttft_s=0.2, output_tokens_per_s=5.0))
    pairs = [t for t in pool_pairs(sc, 10, 1, [p], 1, d) if t.y == 1]
    assert [t.x for t in pairs] == [1, 2]
    one = pairs[0]
    assert one.lat == pytest.approx(2.0, rel=1e-9) and one.inv == pytest.approx(1 / 56, rel=1e-9)
    # more prefill workers: a shorter queue, more ranks
    assert pairs[1].lat < one.lat


def test_a_long_prompts_prefill_pool_is_sized_by_the_closed_loop_not_the_decode_demand() -> None:
    """DeepSeek-V3.2 on 96 Atlas A3 (cann-recipes), 64K / 256, INT8: a request's cycle is mostly its prefill, so
    the decode demand C / (OSL TPOT) oversizes the prefill pool: at the answer's own pools and concurrency it asks
    for workers_to_match(demand, mu_w) prefill workers, more than run. The answer's prefill pool is the one the
    closed loop sizes: fewer workers, its rate below their capacity, the queue's wait in its TTFT."""
    from solver.entry import run_disagg
    from solver.estimate.disagg import workers_to_match

    sc = Scenario(kind="throughput", isl=65536, osl=256)
    best = run_disagg("deepseek-v3.2", "atlas_a3", 96, sc, "cann-recipes", "int8", None, "int8",
                      compare_aggregated=False).plan
    t = best.estimate.times
    assert best.prefill.workers < workers_to_match(best.demand_rps, best.prefill_rps_per_worker)
    assert t.request_rate < t.prefill_capacity and t.prefill_wait_s > 0


@pytest.mark.slow  # whole disaggregated recommends (4.5 s)
def test_a_disaggregated_recommend_weighs_copies_of_each_plan_as_the_aggregated_does() -> None:
    """DeepSeek-V3.2 on H200 (SGLang), 4K / 1K, TPOT <= 50 ms, 20 requests/s = 20,480 output tokens/s over sizes
    16 and 32: for each size and each plan the sweep lists, copies = ceil(20,480 / the plan's output tokens/s)
    (recommend.copies_needed); the answer is the fewest cards in all (copies x size), then fewer copies, and its
    copies together carry the load. One copy only (--max-copies 1): no size carries it alone."""
    import math

    from solver.capacity.disagg import TOP, recommend_disagg
    from solver.entry import run_disagg

    target = 20 * 1024
    sc = Scenario(kind="throughput", isl=4096, osl=1024, tpot_ms=50)
    fewest = []
    for w in (16, 32):
        rep = run_disagg("deepseek-v3.2", "h200_sxm", w, sc, "sglang", None, None, None, None, TOP, False,
                         compare_aggregated=False)
        for d in [rep.plan, *rep.alternatives]:
            rate = round(d.estimate.output_tokens_per_s, 2)  # the figure the sweep writes
            fewest.append((w * math.ceil(target / rate), math.ceil(target / rate)))
    rec = recommend_disagg("deepseek-v3.2", ["h200_sxm"], target_requests_per_s=20, isl=4096, osl=1024, tpot_ms=50,
                           cards="16,32", framework="sglang")
    o = rec.best
    assert o is not None and (o["total_cards"], o["copies"]) == min(fewest)
    assert o["total_cards"] == o["copies"] * o["cards"]
    assert o["copies"] == math.ceil(target / o["output_tokens_per_s"])
    assert o["total_output_tokens_per_s"] == pytest.approx(o["copies"] * o["output_tokens_per_s"], abs=0.01)
    assert o["total_output_tokens_per_s"] >= target
    one = recommend_disagg("deepseek-v3.2", ["h200_sxm"], target_requests_per_s=20, isl=4096, osl=1024,
                           tpot_ms=50, cards="16,32", framework="sglang", max_copies=1)
    assert one.best is None and one.as_dict()["max_copies"] == 1


def test_a_decode_mode_label_says_what_the_pool_runs() -> None:
    """accuracy_disagg groups rows by the decode pool's mode: attention DP with the experts split by MoE TP32 (no
    EP) is that, not 'TP 1' (the attention TP of each replica); the EP modes keep their labels."""
    from types import SimpleNamespace

    from benchmarks.accuracy_disagg import decode_mode

    def mode(model: str = "deepseek-v3.2", **knobs) -> str:
        pc = ParallelConfig(world_size=32, **knobs)
        side = SimpleNamespace(pc=pc, model=load_model(model))
        return decode_mode(SimpleNamespace(case=SimpleNamespace(decode=side)))

    assert mode(moe_tp_size=32) == "attention DP + MoE TP32"
    assert mode() == "attention DP + EP32"
    assert mode(attn_tp_size=32, moe_tp_size=32) == "TP"
    assert mode(attn_tp_size=8) == "attention DP + EP32"
    assert mode("llama-3.1-70b") == "attention DP"  # a dense model has no experts to split


@pytest.mark.slow  # a 96-card disaggregated plan (7 s)
def test_a_tie_on_the_score_goes_to_the_deployment_serving_more_on_the_cards() -> None:
    """DeepSeek-R1 on 96 H100 (SGLang), 2K / 1K, TPOT <= 50 ms: 1P1D (16 + 24 ranks) and 2P2D (the same pools
    twice, 80 ranks) have the same figures per rank and the same latency, so the same score (a difference of
    scores is w_lat log(lat_a / lat_b) + w_inv log(inv_a / inv_b), whatever the references: 0 here). The answer is
    the one serving more output tokens/s on the 96 cards, not the one evaluated first."""
    import math

    from solver.entry import run_disagg
    from solver.plan.disagg import SCORE_DIGITS

    sc = Scenario(kind="throughput", isl=2048, osl=1024, tpot_ms=50, max_concurrency=65536)
    rep = run_disagg("deepseek-r1", "h100_sxm", 96, sc, "sglang", compare_aggregated=False)
    w_lat, w_inv = sc.objective_weights

    def terms(d) -> tuple[float, float]:
        e = d.estimate
        return sc.request_latency(e.ttft_s, e.tpot_s), 1 / e.output_tokens_per_s_per_rank

    (lb, ib) = terms(rep.plan)
    tied = [d for d in rep.alternatives
            if round(w_lat * math.log(lb / terms(d)[0]) + w_inv * math.log(ib / terms(d)[1]), SCORE_DIGITS) == 0]
    assert tied  # the premise: a scaled copy of the pools ties
    assert all(rep.plan.estimate.output_tokens_per_s > d.estimate.output_tokens_per_s for d in tied)
