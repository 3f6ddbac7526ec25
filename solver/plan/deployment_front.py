"""One Pareto front per deployment (model, hardware, cards, workload), whatever the scenario kind: the kind only
picks the recommended point. The planner's front is planned at its powers of concurrency (and the SLAs' edges);
a kind's candidate moved to its own SLA edge (plan.sla_edge) is a point the planner's front never held, and one no
other point beats belongs on the front as much as a planned one. solve's front and the sweep's on_front rows both
come from here (the sweep reads solve's front)."""
from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Iterable

if TYPE_CHECKING:  # solve imports this module
    from solver.plan.solve import Planned


def _key(p: Planned) -> tuple:
    return (tuple(p.config.knobs().values()), p.batch)


def _beats(a: Planned, b: Planned) -> bool:
    """a dominates b: no slower request and no fewer output tokens/s per rank, better in one (full estimates)."""
    la, lb = a.latency_s, b.latency_s
    ta, tb = a.estimate.output_tokens_per_s_per_rank, b.estimate.output_tokens_per_s_per_rank
    return la <= lb and ta >= tb and (la < lb or ta > tb)


def _same_figures(a: Planned, b: Planned) -> bool:
    return (a.latency_s == b.latency_s
            and a.estimate.output_tokens_per_s_per_rank == b.estimate.output_tokens_per_s_per_rank)


def deployment_front(front: list[Planned], candidates: Iterable[Planned]) -> list[Planned]:
    """The deployment's front from the planner's `front` and every kind's `candidates`: the planner's points no
    point of either beats, then the candidates off the planner's front that none beats, best throughput first,
    but for one with exactly the figures of a point already on (one configuration per point: a tie). Each marked
    on_front; ordered by throughput per rank, best first (then latency)."""
    pool: dict[tuple, Planned] = {}
    for p in [*front, *candidates]:
        pool.setdefault(_key(p), p)
    points = sorted(pool.values(), key=lambda p: (-p.estimate.output_tokens_per_s_per_rank, p.latency_s, p.batch,
                                                  tuple(p.config.knobs().values())))
    planned = {_key(p) for p in front}
    out = [p for p in points if _key(p) in planned and not any(_beats(o, p) for o in points)]
    for p in points:  # best first, so a tie between two candidates keeps the first
        if _key(p) not in planned and not any(_beats(o, p) for o in points) and not any(
                _same_figures(f, p) for f in out):
            out.append(p)
    on = {_key(p) for p in out}
    return [replace(p, on_front=True, ties_front=False) for p in points if _key(p) in on]


def on_front_keys(front: list[Planned]) -> set[tuple]:
    return {_key(p) for p in front}
