"""Exhaustive enumeration over the same tables and constraints as the CP-SAT search.

For tests and `--method exhaustive`: every combination of group choices (one stage count for all), each
scored by the exact figures (Tables.figures) and filtered by the same memory cap, framework rules and SLAs,
so the per-concurrency optima, and the front, are the CP-SAT planner's.
"""
from __future__ import annotations

import itertools

from solver.plan.cpsat import Planner, Point, memory_cap, memory_coef, pareto, rule_tables, static_rule_tables
from solver.plan.tables import GROUPS, Tables
from solver.specs.framework import FrameworkProfile
from solver.specs.hardware import Hardware
from solver.specs.model import ModelSpec
from solver.specs.scenario import Scenario

__all__ = ["enumerate_points", "pareto"]


def enumerate_points(t: Tables, model: ModelSpec, hw: Hardware, fw: FrameworkProfile,
                     scenario: Scenario) -> list[Point]:
    groups = list(t.choices)
    cap = memory_cap(t)
    scorer = Planner(t, model, hw, fw, scenario)
    out: list[Point] = []
    static = static_rule_tables(t, model, hw, fw, scenario)
    for b in t.batches:
        rules = [(knobs, {tuple(a) for a in allowed}) for _, knobs, allowed in
                 rule_tables(t, model, hw, fw, scenario, b, static)]
        for idx in itertools.product(*(range(len(t.choices[g])) for g in groups)):
            picks = dict(zip(groups, idx))
            cfg: dict[str, int] = {}
            shared_ok = True
            for g, i in picks.items():
                for k, v in zip(GROUPS[g], t.choices[g][i]):
                    shared_ok = shared_ok and cfg.setdefault(k, v) == v  # one stage count for all groups
            if not shared_ok:
                continue
            if sum(memory_coef(t, b, g, i) for g, i in picks.items()) > cap:
                continue
            if not all(tuple(cfg[k] for k in knobs) in allowed for knobs, allowed in rules):
                continue
            lat_s, fig = scorer.latency_of(b, picks)
            if not scorer._meets_sla(fig, frozenset()):
                continue
            out.append(scorer._point(b, picks, lat_s, fig))
    return out



