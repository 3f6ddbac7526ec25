"""The floor a disaggregated refusal names for a binding SLA: the pools it re-plans with the SLA set aside
(plan.disagg_pools._memo_plan) and the prefill steps it need not plan (plan.disagg_floor)."""
from __future__ import annotations

import pytest

from solver.errors import InfeasibleError
from solver.ortools_cp import cp_model
from solver.plan import disagg, disagg_pools, disagg_remedies, solve
from solver.plan.disagg_floor import PrefillScreen
from solver.specs.framework import load_framework
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import load_model
from solver.specs.precision import resolve_precision
from solver.specs.scenario import Scenario


def _job(model: str, hw: str, fw: str, cards: int) -> disagg._Job:
    spec, h = load_model(model), load_hardware(hw)
    return disagg._Job(spec, h, resolve_precision(spec, h, None, None, None), load_framework(fw), cards, None, False,
                       None, disagg_pools.worker_sizes(spec, h, cards), "cpsat")


def _first_pairs(scenario: Scenario, fronts: dict, cards: int) -> list[tuple]:
    """The pairs a TTFT floor evaluates (disagg_remedies._sla_floor's order and cut), as comparable tuples."""
    pairs = disagg._pairs(scenario, fronts, cards)
    first = sorted(range(len(pairs)), key=lambda i: disagg.ttft_order(pairs[i]))[:disagg.MAX_EVALUATED]
    return [(pairs[i].p.config.world_size, tuple(pairs[i].p.config.knobs().items()), pairs[i].p.batch,
             pairs[i].d.config.world_size, tuple(pairs[i].d.config.knobs().items()), pairs[i].d.batch, pairs[i].x,
             pairs[i].y, pairs[i].conc) for i in first]


# the vLLM case plans the most pairs (2.5-4.5 s): the slow suite; the default suite keeps trtllm and sglang
@pytest.mark.parametrize("model,hw,fw,cards,scenario", [
    pytest.param("qwen3-30b-a3b", "h100_sxm", "vllm", 32, {"isl": 1024, "osl": 256}, marks=pytest.mark.slow),
    ("mixtral-8x7b", "b200_sxm", "trtllm", 64, {"isl": 16384, "osl": 512, "max_concurrency": 32}),
    ("llama-3.1-8b", "h200_sxm", "sglang", 16, {"isl": 4096, "osl": 1024, "concurrency": 64}),
])
def test_a_ttft_floor_evaluates_the_pairs_of_the_unscreened_fronts(model, hw, fw, cards, scenario) -> None:
    sc = Scenario(**scenario)
    want = _first_pairs(sc, _job(model, hw, fw, cards).fronts(sc, diagnose=False)[0], cards)
    job = _job(model, hw, fw, cards)
    screen = PrefillScreen(job, sc)
    got = _first_pairs(sc, job.fronts(sc, diagnose=False, screen=screen)[0], cards)
    assert got == want
    assert screen.ruled_out > 0  # the screen left some prefill steps unplanned


def test_a_relaxed_sla_re_plans_only_the_pool_it_constrains(monkeypatch) -> None:
    """A TTFT SLA set aside leaves the decode plans as they were (the decode phase has no TTFT SLA), a TPOT SLA
    the prefill plans: the solve's memo answers them."""
    job = _job("qwen3-30b-a3b", "h100_sxm", "vllm", 16)
    sc = Scenario(isl=1024, osl=256, ttft_ms=60.0, tpot_ms=20.0)
    job.fronts(sc)
    planned: list[str] = []
    real = disagg_pools.plan
    monkeypatch.setattr(disagg_pools, "plan", lambda *a, **k: planned.append(a[5].phase) or real(*a, **k))
    job.fronts(sc.model_copy(update={"ttft_ms": None}), diagnose=False)
    assert planned and "decode" not in planned
    planned.clear()
    job.fronts(sc.model_copy(update={"tpot_ms": None}), diagnose=False)
    assert planned and "prefill" not in planned


@pytest.mark.slow  # seconds each: .ci/run's slow pass (the default suite stays under 5 minutes on 2 cores)
def test_a_ttft_floor_plans_only_the_prefill_steps_that_reach_its_pairs(monkeypatch) -> None:
    """Nemotron-3-Nano on 256 H100 (TensorRT-LLM), TTFT 150 ms: the refusal's floor took 1,197 CP-SAT solves
    (the decode pools and 52 prefill steps planned again); the decode plans reused and the prefill steps screened,
    it takes a few dozen, and names the same floor."""
    solves = [0]
    real_solve = cp_model.CpSolver.solve

    def counted(self, *a, **k):
        solves[0] += 1
        return real_solve(self, *a, **k)

    floor_solves: list[int] = []
    real_floor = disagg_remedies._sla_floor

    def floor(*a):
        n = solves[0]
        out = real_floor(*a)
        floor_solves.append(solves[0] - n)
        return out

    monkeypatch.setattr(cp_model.CpSolver, "solve", counted)
    monkeypatch.setattr(disagg_remedies, "_sla_floor", floor)
    job = _job("nemotron-3-nano", "h100_sxm", "trtllm", 256)
    solve.clear_cache()
    with pytest.raises(InfeasibleError, match="the lowest TTFT is 163 ms"):
        disagg.plan_disagg(job.model, job.hw, job.prec, job.fw, 256,
                           Scenario(isl=4096, osl=1024, ttft_ms=150.0))
    assert floor_solves and floor_solves[0] <= 100
