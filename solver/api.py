"""Python API: the same entry points as the command line, returning typed results (and DataFrames where
tables are the natural shape). The CLI is a thin layer over these; the runners live in solver.entry."""
from __future__ import annotations

from solver.entry import (_ref_models, explain_solution, refuse_unlaunchable_kv, run_disagg,  # noqa: F401
                          run_solve, verified_for)
from solver.plan.points import SolverParams
from solver.rank.select import Candidate
from solver.specs.scenario import Scenario

__all__ = ["run_solve", "run_disagg", "solve", "Scenario", "SolverParams", "sweep", "recommend",
           "explain_solution", "refuse_unlaunchable_kv", "verified_for"]


def solve(model: str, hardware: str, cards: int, scenario: Scenario | None = None, **kwargs) -> list[Candidate]:
    """Ranked candidates for one deployment (see run_solve for the keyword arguments)."""
    return run_solve(model, hardware, cards, scenario or Scenario(), **kwargs)[1]


def sweep(model: str, hardware, cards, scenarios=None, *, jobs: int = 1, progress=None, **kwargs):
    """Capacity sweep: a pandas DataFrame with the Pareto front of every (hardware, cards, scenario[, ISL/OSL])
    combination, one row per configuration, and one row naming the binding constraint where none fits.

    `hardware`: a name or a list; `cards`: "8,16,32", "8..1024" (powers of two) or a list of ints;
    `scenarios`: kinds ("throughput", "latency", "balanced"; default all three) or Scenario objects. Keyword
    arguments: isl, osl, seq_lens, ttft_ms, tpot_ms, concurrency, max_concurrency, mtp, framework, weight_dtype,
    moe_weight_dtype, kv_dtype (a dtype, or {hardware: dtype}), method, params, top, allow_cross_node,
    explain_binding. `jobs` > 1 solves in worker processes; `executor="ray"|"dask"` with `address` (or a Dask
    Client) on an existing cluster (same table either way). Columns: solver.capacity.sweep.COLUMNS.
    """
    from solver.capacity.sweep import sweep as _sweep

    return _sweep(model, hardware, cards, scenarios, jobs=jobs, progress=progress, **kwargs)


def recommend(model: str, hardware, **kwargs):
    """The fewest cards (and the configuration) that carry a load within the SLA, per hardware, as copies of one
    deployment behind a load balancer (`Option.copies` x `Option.cards` = `Option.total_cards`); the cheapest
    when prices per card-hour are given. Returns a solver.capacity.recommend.Recommendation (`.best`,
    `.options`, `.to_frame()`). Keyword arguments: target_output_tokens_per_s or target_requests_per_s, isl,
    osl, ttft_ms, tpot_ms, prices ({hardware: price per card-hour}), cards (per copy), max_copies (None: no
    bound; 1: one deployment), framework, weight_dtype, ...
    """
    from solver.capacity.recommend import recommend as _recommend

    return _recommend(model, hardware, **kwargs)
