"""The verified deployment the planner offers as a candidate: of the verified deployments of this model, hardware,
world size and phase, the best-scoring one the planner admits (plan.solve gives it a candidate slot)."""
from __future__ import annotations

from typing import Callable, Sequence

from solver.plan import cpsat
from solver.plan.points import Point
from solver.plan.tables import Tables
from solver.space.domains import space_name
from solver.specs.scenario import Scenario


def verified_candidate(tables: Tables, planner: cpsat.Planner, verified: Sequence[tuple[str, dict[str, int]]],
                       scenario: Scenario, score: Callable[[Point], float]) -> tuple[str, Point] | None:
    """(id, point) of the best-scoring verified deployment the planner would accept here, at its best-scoring
    concurrency: the seed prefers adopting a validated configuration whose estimate is reasonable (memory
    feasible, communication inside the node) over deriving one. Its knobs must be choices of this space (a knob
    the framework does not expose, or a TP group leaving the node, makes it none), and at the concurrency it
    must pass what the search's answers pass (Planner.admissible: memory, the framework's rules, the SLAs, the
    full estimate). A decode deployment's CP is taken as the space names it (space_name: its ranks decode as
    attention DP). Where it lands among the candidates is the ranking's (rank.select: within the tie band the
    closest to a verified configuration leads)."""
    best = None
    for ref_id, knobs in verified:
        picks = tables.picks_of(space_name(knobs, scenario))
        if picks is None:
            continue
        for b in tables.batches:
            hit = planner.admissible(b, picks)
            if hit is not None and (best is None or (score(hit[1]), b) < (score(best[1]), best[1].batch)):
                best = (ref_id, hit[1])
    return best


__all__ = ["verified_candidate"]
