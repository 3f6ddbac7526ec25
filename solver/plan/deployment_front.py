"""One Pareto front per deployment (model, hardware, cards, workload), whatever the scenario kind: the kind only
picks the recommended point. The planner's front is planned at its powers of concurrency (and the SLAs' edges);
a kind's candidate moved to its own SLA edge (plan.sla_edge) is a point the planner's front never held, and one no
other point beats belongs on the front as much as a planned one. solve's front and the sweep's on_front rows both
come from here (the sweep reads solve's front)."""
from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Callable, Iterable, Sequence, TypeVar

if TYPE_CHECKING:  # solve imports this module
    from solver.plan.solve import Planned


def _key(p: Planned) -> tuple:
    return (tuple(p.config.knobs().values()), p.batch)


T = TypeVar("T")


def undominated(points: Sequence[T], planned: Callable[[T], bool], figures: Callable[[T], tuple[float, float]]
                ) -> list[T]:
    """The front of `points` (one per configuration and concurrency, best first; `figures`: request latency and
    output tokens/s per rank): the `planned` points no point beats (no slower request and no fewer tokens/s per
    rank, better in one), then the others none beats, but for one with exactly the figures of a point already on
    (one configuration per point: a tie keeps the first). solve's front (deployment_front) and the sweep's rows
    (capacity.sweep.share_front) both take it."""
    def beats(a: T, b: T) -> bool:
        (la, ta), (lb, tb) = figures(a), figures(b)
        return la <= lb and ta >= tb and (la < lb or ta > tb)

    out = [p for p in points if planned(p) and not any(beats(o, p) for o in points)]
    for p in points:
        if not planned(p) and not any(beats(o, p) for o in points) and not any(
                figures(f) == figures(p) for f in out):
            out.append(p)
    return out


def _figures(p: Planned) -> tuple[float, float]:
    return p.latency_s, p.estimate.output_tokens_per_s_per_rank


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
    on = {_key(p) for p in undominated(points, lambda p: _key(p) in planned, _figures)}
    return [replace(p, on_front=True, ties_front=False) for p in points if _key(p) in on]


def on_front_keys(front: list[Planned]) -> set[tuple]:
    return {_key(p) for p in front}
