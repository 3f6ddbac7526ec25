"""--method exhaustive within --time-limit: the answer, or one line with the count it enumerates and the planner
that finds the same front (plan.exhaustive.OutOfTime, solve._out_of_time)."""
from __future__ import annotations

import time

import pytest

from solver.entry import run_solve
from solver.errors import InfeasibleError
from solver.plan.points import SolverParams
from solver.specs.scenario import Scenario

SC = Scenario(isl=1024, osl=256, max_concurrency=64)


def test_exhaustive_past_its_time_limit_says_how_many_combinations_and_offers_cpsat() -> None:
    """Qwen3-30B-A3B on 32 H100 enumerates 29,393,280 combinations (147 s before the limit held)."""
    start = time.monotonic()
    with pytest.raises(InfeasibleError) as err:
        run_solve("qwen3-30b-a3b", "h100_sxm", 32, SC, method="exhaustive", params=SolverParams(time_limit_s=0.5),
                  explain_binding=False)
    assert time.monotonic() - start < 10
    exc = err.value
    assert exc.binding == ["time limit"] and not exc.proven
    assert "--method exhaustive reached --time-limit 0.5 s" in str(exc)
    assert "of the 29,393,280 combinations" in str(exc)
    assert "--method cpsat, which finds the same front" in str(exc)


def test_exhaustive_within_its_time_limit_answers_the_cpsat_front() -> None:
    fronts = [[(p.config, p.batch, round(p.latency_s, 9)) for p in run_solve(
        "qwen3-30b-a3b", "h100_sxm", 4, SC, method=m, params=SolverParams(time_limit_s=60),
        explain_binding=False)[0].front] for m in ("cpsat", "exhaustive")]
    assert fronts[0] == fronts[1]
