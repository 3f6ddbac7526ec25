"""CP-SAT hygiene: the current (snake_case) OR-Tools API, cached per-concurrency models that do not grow from
call to call, and a cut loop that says why it stopped."""
from __future__ import annotations

import warnings

import pytest
from ortools.sat.python import cp_model

from solver.estimate.compute import factors_for
from solver.plan import cpsat
from solver.plan import points
from solver.plan.solve import PlanResult
from solver.plan.table_build import build_tables
from solver.space.domains import build_space
from solver.specs.framework import load_framework

from conftest import rules_of  # noqa: E402
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import load_model
from solver.specs.precision import resolve_precision
from solver.specs.scenario import Scenario


def _planner(model="qwen3-30b-a3b", hw="h200_sxm", world=8, fw="cann-recipes", **sc) -> cpsat.Planner:
    m, h, f = load_model(model), load_hardware(hw), rules_of(fw)
    prec = resolve_precision(m, h)
    scenario = Scenario(kind="balanced", isl=4096, osl=128, max_concurrency=64, **sc)
    t = build_tables(m, h, prec, factors_for(h), f, build_space(m, h, f, world, scenario), scenario)
    return cpsat.Planner(t, m, h, f, scenario)


def _size(bm: cpsat.ViewModel) -> tuple[int, int, int]:
    p = bm.model.proto
    return len(p.variables), len(p.constraints), len(p.assumptions)


def test_planning_calls_no_deprecated_ortools_method(monkeypatch) -> None:
    monkeypatch.setattr(cp_model, "enable_warnings", True)  # OR-Tools warns on its CamelCase aliases
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        pl = _planner(ttft_ms=5000.0)
        pl.verify = lambda p: True
        front = pl.front()
        b = front[0].batch
        key = points.pattern_key(pl.t, dict(front[0].picks))
        pl.best(b, [key], exclude_families=frozenset({"dp"}))
        for name in pl.families(b):
            pl.best(b, relaxed=frozenset({name}))
    assert front


def test_a_cached_model_does_not_grow_across_calls() -> None:
    pl = _planner(ttft_ms=5000.0)
    front = pl.front()
    sizes = {k: _size(vm) for k, vm in pl.cached_models().items()}
    assert sizes
    b = front[0].batch
    key = points.pattern_key(pl.t, dict(front[0].picks))
    rejected = []

    def verify(p: points.Point) -> bool:  # reject the first two answers: two cuts
        rejected.append(p)
        return len(rejected) > 2

    pl.verify = verify
    for _ in range(3):
        rejected.clear()
        pl.best(b)
        pl.best(b, [key])
        pl.best(b, exclude_families=frozenset({points.attention_family(pl.t.choices["attn"][dict(front[0].picks)["attn"]])}))
        for name in pl.families(b):
            pl.best(b, relaxed=frozenset({name}))
    assert {k: _size(pl.cached_models()[k]) for k in sizes} == sizes


def test_the_same_question_gets_the_same_answer_after_others_were_asked() -> None:
    pl = _planner()
    first = pl.front()
    b = first[0].batch
    pl.best(b, [points.pattern_key(pl.t, dict(first[0].picks))])
    for name in pl.families(b):
        pl.best(b, relaxed=frozenset({name}))
    assert pl.front() == first


def test_the_cut_loop_says_why_it_stopped() -> None:
    pl = _planner()
    pl.max_cuts = 2
    pl.verify = lambda p: False  # the full estimate rejects every answer
    b = pl.t.batches[0]
    assert pl.best(b) is None
    assert pl.cut_stops == [points.CutStop(b, 3, "the front")]
    result = PlanResult(candidates=[], front=[], cut_stops=pl.cut_stops)
    note = result.cut_note()
    assert note is not None and "3 rejected" in note and f"concurrency {b}" in note


def test_a_proof_of_infeasibility_is_not_a_cut_stop() -> None:
    pl = _planner()
    pl.max_cuts = 10_000
    pl.verify = lambda p: False
    b = pl.t.batches[0]
    n = 1
    for opts in pl.t.choices.values():
        n *= len(opts)
    if n > 400:
        pytest.skip(f"{n} configurations: too many to cut one by one")
    assert pl.best(b) is None and pl.cut_stops == []
    assert PlanResult(candidates=[], front=[]).cut_note() is None


def _answer(result) -> tuple:
    return ([(c.config.knobs(), c.batch, c.latency_s, c.on_front, c.estimate.ttft_s) for c in result.candidates],
            [(p.config.knobs(), p.batch, p.latency_s) for p in result.front], result.binding, result.status)


@pytest.mark.parametrize("kinds", [("throughput", "latency", "balanced")])
def test_reused_tables_and_fronts_change_no_answer(kinds) -> None:
    from solver.plan import solve

    m, h, f = load_model("qwen3-30b-a3b"), load_hardware("h200_sxm"), rules_of("cann-recipes")
    prec = resolve_precision(m, h)
    scenarios = [Scenario(kind=k, isl=4096, osl=128, max_concurrency=64) for k in kinds]
    scenarios += [Scenario(kind="latency", isl=4096, osl=128, max_concurrency=64, tpot_ms=20.0),
                  Scenario(kind="latency", isl=2048, osl=128, max_concurrency=64)]
    fresh = []
    for sc in scenarios:
        solve.clear_cache()
        fresh.append(_answer(solve.plan(m, h, prec, f, 8, sc)))
    solve.clear_cache()
    reused = [_answer(solve.plan(m, h, prec, f, 8, sc)) for sc in scenarios]
    assert reused == fresh


def test_a_scenario_kind_reuses_the_front_but_an_sla_does_not() -> None:
    from solver.plan import solve

    m, h, f = load_model("qwen3-30b-a3b"), load_hardware("h200_sxm"), rules_of("cann-recipes")
    prec = resolve_precision(m, h)
    solve.clear_cache()
    solve.plan(m, h, prec, f, 8, Scenario(kind="throughput", isl=4096, osl=128, max_concurrency=64))
    planners = {k for k in solve._CACHE if k[0] == "planner"}
    solve.plan(m, h, prec, f, 8, Scenario(kind="latency", isl=4096, osl=128, max_concurrency=64))
    assert {k for k in solve._CACHE if k[0] == "planner"} == planners
    solve.plan(m, h, prec, f, 8, Scenario(kind="latency", isl=4096, osl=128, max_concurrency=64, ttft_ms=900.0))
    assert len({k for k in solve._CACHE if k[0] == "planner"}) == len(planners) + 1
    assert len({k for k in solve._CACHE if k[0] == "tables"}) == 1


def test_a_plan_leaves_no_young_generation_for_the_collector_to_rescan() -> None:
    """The plan pauses the cyclic collector; what it made while paused joins the oldest generation when it
    resumes, so the first young collection after a plan does not walk every table entry (0.44 s of a generic
    W=128 plan), and the collector is left as it was found."""
    import gc

    from solver.plan import solve

    m, h, f = load_model("qwen3-30b-a3b"), load_hardware("h200_sxm"), rules_of("cann-recipes")
    solve.clear_cache()
    assert gc.isenabled()
    solve.plan(m, h, resolve_precision(m, h), f, 8, Scenario(kind="balanced", isl=4096, osl=128, max_concurrency=64))
    assert gc.isenabled()
    assert len(gc.get_objects(generation=0)) + len(gc.get_objects(generation=1)) < 5000


def test_a_ttft_sla_no_prefill_step_meets_is_proven_without_cutting_configurations_one_by_one() -> None:
    """TTFT can fall a little as the decode step grows, so an answer that misses the TTFT SLA alone is cut alone;
    its floor at the prefill step (figures.ttft_floor) bounds every decode step, so the layouts and prefill steps
    whose floor misses are dropped whole. Qwen3-30B-A3B on 8 H100 at a 50 ms TTFT (the fastest TTFT is 87 ms) took
    18,132 CP-SAT solves (23 s) before."""
    pl = _planner("qwen3-30b-a3b", "h100_sxm", 8, "generic", ttft_ms=50.0)
    assert pl.best(pl.t.batches[0]) is None and pl.cut_stops == []
    assert pl.solves <= 20


def test_answers_missing_a_ttft_sla_whose_floor_at_both_steps_misses_are_cut_with_what_dominates_them() -> None:
    """An answer that misses the TTFT SLA alone, and whose TTFT floor at its prefill and decode steps
    (figures.ttft_floor_at_steps) misses it too, is cut off with every point dominating it, as a TPOT miss is: all
    of them miss. Llama-3.1-70B on 32 B200 (generic, ISL 4096 / OSL 1024) at a 75 ms TTFT and concurrency 2, below
    the fastest there, took 1,272 CP-SAT solves cutting such answers one by one before (288 with this cut alone
    taken out, stop 49). Concurrency 2: a replica of one running sequence has its floor for TTFT (closed_loop
    ServingKit.alone), so at concurrency 1 the prefill floor cuts every answer before a solve."""
    m, h, f = load_model("llama-3.1-70b"), load_hardware("b200_sxm"), load_framework("generic")
    sc = Scenario(kind="latency", isl=4096, osl=1024, ttft_ms=75.0, concurrency=2)
    t = build_tables(m, h, resolve_precision(m, h), factors_for(h, f.efficiency_for(h)), f,
                     build_space(m, h, f, 32, sc), sc)
    pl = cpsat.Planner(t, m, h, f, sc)
    assert pl.front() == [] and pl.cut_stops == []
    assert pl.solves <= 150


def test_a_search_that_reaches_its_round_bound_says_so() -> None:
    """A layout's dominance search that stops at Planner.max_rounds has not proven its answer: the stop is
    recorded (CutStop, reason "rounds") and the plan's note names it, never a silent give-up."""
    pl = _planner()
    pl.max_rounds = 1
    b = pl.t.batches[-1]
    pl.best(b)
    stops = [c for c in pl.cut_stops if c.reason == "rounds"]
    assert stops and stops[0] == points.CutStop(b, 1, "the front", "rounds")
    note = PlanResult(candidates=[], front=[], cut_stops=pl.cut_stops).cut_note()
    assert note is not None and "bound of 1 rounds" in note and f"concurrency {b}" in note
