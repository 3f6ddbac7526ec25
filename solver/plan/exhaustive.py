"""Exhaustive enumeration over the same integer tables and constraints as the CP-SAT model.

For tests and `--method exhaustive`: it scores every combination exactly as plan.cpsat does, so both give
the same Pareto front.
"""
from __future__ import annotations

import itertools

from solver.plan.cpsat import (Point, TIME_SCALE, coefs, const_coefs, inv_throughput, memory_cap, pareto,
                               rule_tables, static_rule_tables)
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
    c_lat, c_ttft, c_tpot = const_coefs(t)
    ttft_cap = round(scenario.ttft_ms * 1e-3 * TIME_SCALE) if scenario.ttft_ms is not None else None
    tpot_cap = round(scenario.tpot_ms * 1e-3 * TIME_SCALE) if scenario.tpot_ms is not None else None
    out: list[Point] = []
    static = static_rule_tables(t, model, hw, fw, scenario)
    for b in t.batches:
        rules = [(knobs, {tuple(a) for a in allowed}) for _, knobs, allowed in
                 rule_tables(t, model, hw, fw, scenario, b, static)]
        table = {g: [coefs(t, b, g, i) for i in range(len(t.choices[g]))] for g in groups}
        for idx in itertools.product(*(range(len(t.choices[g])) for g in groups)):
            lat, ttft, tpot, mem = c_lat, c_ttft, c_tpot, 0
            for g, i in zip(groups, idx):
                cl, ct, cp, cm = table[g][i]
                lat += cl
                ttft += ct
                tpot += cp
                mem += cm
            if mem > cap or (ttft_cap is not None and ttft > ttft_cap) or (tpot_cap is not None and tpot > tpot_cap):
                continue
            cfg: dict[str, int] = {}
            shared_ok = True
            for g, i in zip(groups, idx):
                for k, v in zip(GROUPS[g], t.choices[g][i]):
                    shared_ok = shared_ok and cfg.setdefault(k, v) == v  # one stage count for all groups
            if not shared_ok:
                continue
            if all(tuple(cfg[k] for k in knobs) in allowed for knobs, allowed in rules):
                out.append(Point(tuple(zip(groups, idx)), b, lat, inv_throughput(t, lat, b)))
    return out
