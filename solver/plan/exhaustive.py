"""Exhaustive enumeration over the same tables and constraints as the CP-SAT search.

For tests and `--method exhaustive`: every combination of group choices (one stage count for all), filtered by
the same memory cap, framework rules and SLAs. Within one (concurrency, attention layout) a combination that
another dominates in its two step times (Pe, Te) cannot have a lower latency nor meet an SLA the other misses
(the serving figures are non-decreasing in both: docs/planner.md), so only the non-dominated ones are scored
with the exact figures (Tables.figures); the rest are enumerated and dropped unscored. The per-concurrency
optima, and the front, are then the CP-SAT planner's.

The enumeration grows with the product of the groups' choices (qwen3-30b-a3b on H100 with 7 concurrencies: 1.1
million combinations at 8 ranks, 29 million at 32, 181 million at 256), so it runs within a time limit: past it
the enumeration stops (OutOfTime: how far it got) rather than answer from a part of the space.
"""
from __future__ import annotations

import itertools
import math
import time

from solver.plan.cpsat import Planner
from solver.plan.points import Point, pareto
from solver.plan.rule_tables import rule_tables, static_rule_tables
from solver.plan.groups import GROUPS
from solver.plan.tables import Tables
from solver.specs.framework import FrameworkProfile
from solver.specs.hardware import Hardware
from solver.specs.model import ModelSpec
from solver.specs.scenario import Scenario

__all__ = ["OutOfTime", "combinations", "enumerate_points", "pareto"]

CHECK_EVERY = 4096  # combinations between two looks at the clock


class OutOfTime(Exception):
    """The enumeration reached its time limit after `done` of `total` combinations, in `elapsed_s` seconds."""

    def __init__(self, done: int, total: int, elapsed_s: float):
        self.done, self.total, self.elapsed_s = done, total, elapsed_s
        super().__init__(f"{done:,} of {total:,} combinations in {elapsed_s:.3g} s")


def combinations(t: Tables) -> int:
    """The combinations enumerate_points visits: one option per group at each concurrency."""
    return len(t.batches) * math.prod(len(opts) for opts in t.choices.values())


def _steps(t: Tables, b: int, picks: dict[str, int]) -> tuple[tuple, float, float]:
    """(layout, Pe, Te): the steps as the engine runs them, less the per-sequence cost (what the figures read)."""
    vc, pre, dec = t.sums(b, picks)
    return (t.key_of(picks), *vc.step_times(pre, dec, t.f))


def enumerate_points(t: Tables, model: ModelSpec, hw: Hardware, fw: FrameworkProfile,
                     scenario: Scenario, time_limit_s: float | None = None,
                     batches: tuple[int, ...] | None = None) -> list[Point]:
    """Every admitted combination's point that no other of its layout dominates (module docstring), at the
    tables' concurrencies or those of `batches`; OutOfTime once `time_limit_s` seconds (wall clock, as CP-SAT's
    limit) have passed."""
    start = time.monotonic()
    deadline = math.inf if time_limit_s is None else start + time_limit_s
    done = 0

    def tick() -> None:
        if time.monotonic() > deadline:
            raise OutOfTime(done, combinations(t), time.monotonic() - start)

    groups = list(t.choices)
    scorer = Planner(t, model, hw, fw, scenario)
    out: list[Point] = []
    static = static_rule_tables(t, model, hw, fw, scenario)
    for b in (t.batches if batches is None else batches):
        rules = [(knobs, {tuple(a) for a in allowed}) for _, knobs, allowed in
                 rule_tables(t, model, hw, fw, scenario, b, static)]
        by_layout: dict[tuple, list[tuple[float, float, dict[str, int]]]] = {}
        for idx in itertools.product(*(range(len(t.choices[g])) for g in groups)):
            done += 1
            if done % CHECK_EVERY == 0:
                tick()
            picks = dict(zip(groups, idx))
            cfg: dict[str, int] = {}
            shared_ok = True
            for g, i in picks.items():
                for k, v in zip(GROUPS[g], t.choices[g][i]):
                    shared_ok = shared_ok and cfg.setdefault(k, v) == v  # one stage count for all groups
            if not shared_ok:
                continue
            if not t.fits(b, picks):
                continue
            if not all(tuple(cfg[k] for k in knobs) in allowed for knobs, allowed in rules):
                continue
            key, pe, te = _steps(t, b, picks)
            by_layout.setdefault(key, []).append((pe, te, picks))
        for pts in by_layout.values():
            pts.sort(key=lambda x: (x[0], x[1]))
            low = None
            for pe, te, picks in pts:
                if low is not None and te > low:
                    continue  # dominated by a combination with no larger Pe and a smaller Te
                tick()  # each point scored costs the exact figures: the clock is cheap beside them
                low = te if low is None else min(low, te)
                lat_s, fig = scorer.latency_of(b, picks)
                if scorer.meets_sla(fig, frozenset()):
                    out.append(scorer.point(b, picks, lat_s, fig))
    return out
