"""Exhaustive enumeration over the same tables and constraints as the CP-SAT search.

For tests and `--method exhaustive`: every combination of group choices (one stage count for all), filtered by
the same memory cap, framework rules and SLAs. Within one (concurrency, attention layout) a combination that
another dominates in its two step times (Pe, Te) cannot have a lower latency nor meet an SLA the other misses
(the serving figures are non-decreasing in both: docs/planner.md), so only the non-dominated ones are scored
with the exact figures (Tables.figures); the rest are enumerated and dropped unscored. The per-concurrency
optima, and the front, are then the CP-SAT planner's.
"""
from __future__ import annotations

import itertools

from solver.plan.cpsat import Planner
from solver.plan.points import Point, pareto
from solver.plan.rule_tables import rule_tables, static_rule_tables
from solver.plan.groups import GROUPS
from solver.plan.tables import Tables
from solver.specs.framework import FrameworkProfile
from solver.specs.hardware import Hardware
from solver.specs.model import ModelSpec
from solver.specs.scenario import Scenario

__all__ = ["enumerate_points", "pareto"]


def _steps(t: Tables, b: int, picks: dict[str, int]) -> tuple[tuple, float, float]:
    """(layout, Pe, Te): the steps as the engine runs them, less the per-sequence cost (what the figures read)."""
    vc, pre, dec = t.sums(b, picks)
    return (t.layout_key(t.choices["attn"][picks["attn"]]), *vc.step_times(pre, dec, t.f))


def enumerate_points(t: Tables, model: ModelSpec, hw: Hardware, fw: FrameworkProfile,
                     scenario: Scenario) -> list[Point]:
    groups = list(t.choices)
    scorer = Planner(t, model, hw, fw, scenario)
    out: list[Point] = []
    static = static_rule_tables(t, model, hw, fw, scenario)
    for b in t.batches:
        rules = [(knobs, {tuple(a) for a in allowed}) for _, knobs, allowed in
                 rule_tables(t, model, hw, fw, scenario, b, static)]
        by_layout: dict[tuple, list[tuple[float, float, dict[str, int]]]] = {}
        for idx in itertools.product(*(range(len(t.choices[g])) for g in groups)):
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
                low = te if low is None else min(low, te)
                lat_s, fig = scorer.latency_of(b, picks)
                if scorer.meets_sla(fig, frozenset()):
                    out.append(scorer.point(b, picks, lat_s, fig))
    return out
