"""The disaggregated solves' shared work: a PlanGroup's scenarios share their pools' phase plans (each planned
once, for every scenario of the group at once), what the group does not hold plans its own, and the shared
plans give the answer a solve alone gives; the pair search's closed loop is the bisection over the prefill
queue's wait, float for float."""
from __future__ import annotations

import itertools

import pytest

from solver.estimate.disagg import LOOP_BISECTION_STEPS, closed_loop_rate, prefill_queue_wait
from solver.plan import disagg_pools
from solver.plan.disagg import plan_disagg
from solver.plan.disagg_pools import PlanGroup, planned_together
from solver.specs.framework import load_framework
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import load_model
from solver.specs.precision import resolve_precision
from solver.specs.scenario import Scenario

MODEL, HW, CARDS = "qwen3-30b-a3b", "h200_sxm", 4


def _sc(kind: str, tpot_ms: float = 50.0) -> Scenario:
    return Scenario(kind=kind, isl=2048, osl=256, tpot_ms=tpot_ms)


def _solve(sc: Scenario, cards: int = CARDS):
    spec, hw = load_model(MODEL), load_hardware(HW)
    return plan_disagg(spec, hw, resolve_precision(spec, hw, None, None, None), load_framework("sglang"), cards, sc)


@pytest.fixture
def planned(monkeypatch) -> list:
    """The phase scenarios the pools plan, in order (disagg_pools.plan counted)."""
    calls: list = []
    real = disagg_pools.plan

    def counted(model, hw, prec, fw, world, scenario, *args, **kw):
        calls.append((world, scenario.phase, scenario.kind, scenario.concurrency))
        return real(model, hw, prec, fw, world, scenario, *args, **kw)
    monkeypatch.setattr(disagg_pools, "plan", counted)
    return calls


def _figures(res) -> list[tuple]:
    return [(c.ratio, c.cards, c.estimate.ttft_s, c.estimate.tpot_s, c.estimate.output_tokens_per_s,
             tuple(c.prefill.planned.config.knobs().items()), tuple(c.decode.planned.config.knobs().items()))
            for c in [res.best, *res.alternatives]]


def test_a_groups_second_kind_plans_no_pool_again(planned) -> None:
    # the first kind's solve plans each pool for both kinds; the second finds every plan in the group's memo
    bal, thr = _sc("balanced"), _sc("throughput")
    group = PlanGroup([bal, thr])
    with planned_together(group):
        _solve(bal)
        first = list(planned)
        _solve(thr)
    assert planned == first
    assert {k for _, _, k, _ in first} == {"balanced", "throughput"}
    # each phase plan twice: once per kind, the asking kind's first
    assert len(first) == 2 * len({(w, ph, c) for w, ph, _, c in first})
    assert first[0][2] == "balanced"


def test_a_group_shares_plans_across_cluster_sizes(planned) -> None:
    # a phase plan reads the worker's size, not the cards: 4 cards' pools (workers of 1 and 2 ranks) recur on 8
    thr = _sc("throughput")
    with planned_together(PlanGroup([thr])):
        _solve(thr, 4)
        on_four = set(planned)
        planned.clear()
        _solve(thr, 8)
    assert on_four and not on_four & set(planned)


def test_a_scenario_outside_the_group_plans_the_pools_its_sla_changes(planned) -> None:
    # another TPOT SLA is another decode plan: the group's are not its, and the group's kinds are not planned
    # with it (it is none of them); its prefill plans (which read no TPOT SLA) are the group's
    bal = _sc("balanced")
    tight = _sc("balanced", tpot_ms=30.0)
    _solve(tight)
    alone = list(planned)
    planned.clear()
    with planned_together(PlanGroup([bal])):
        _solve(bal)
        planned.clear()
        _solve(tight)
    decode = [p for p in alone if p[1] == "decode"]
    assert decode and planned == decode


def test_a_solve_in_a_group_answers_as_alone() -> None:
    bal, thr = _sc("balanced"), _sc("throughput")
    with planned_together(PlanGroup([bal, thr])):
        _solve(bal)
        grouped = _solve(thr)
    assert _figures(grouped) == _figures(_solve(thr))


def test_other_job_inputs_get_a_memo_of_their_own() -> None:
    group = PlanGroup([_sc("balanced")])
    plans, together = group.plans_for(("m", "hw", "cpsat"))
    assert group.plans_for(("m", "hw", "cpsat"))[0] is plans and together == group.scenarios
    other, none = group.plans_for(("m", "hw", "exhaustive"))
    assert other is not plans and other == {} and none == ()


def _bisection(flowing: float, cycle_s: float, mu: float, prefill_s: float, ranks: int) -> float:
    """The closed loop's root by LOOP_BISECTION_STEPS plain steps over prefill_queue_wait."""
    lo, hi = 0.0, mu
    for _ in range(LOOP_BISECTION_STEPS):
        lam = 0.5 * (lo + hi)
        if lam * (cycle_s + prefill_queue_wait(lam / mu, prefill_s, ranks)) > flowing:
            hi = lam
        else:
            lo = lam
    return lo


def test_closed_loop_rate_is_the_bisection_over_the_queue_wait_float_for_float() -> None:
    # clients 1 to 20,000, cycles 10 ms to 100 s, capacities 0.01 to 10^4 prompts/s, steps 1 ms to 10 s,
    # 1 to 64 ranks stepping together: the early stop and the written-out wait change no bit
    grid = itertools.product([1, 7, 64, 4096, 20000], [0.01, 0.7, 13.0, 100.0], [0.01, 3.3, 250.0, 1e4],
                             [0.001, 0.37, 10.0], [1, 2, 8, 64])
    for args in grid:
        assert closed_loop_rate(*args) == _bisection(*args), args
