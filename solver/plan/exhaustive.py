"""Exhaustive enumeration over the same integer tables and constraints as the CP-SAT model.

For tests and `--method exhaustive`: it scores every combination exactly as plan.cpsat does, so both give
the same Pareto front.
"""
from __future__ import annotations

import itertools

from solver.plan.cpsat import MEM_SCALE, TIME_SCALE, Point, _coef
from solver.plan.tables import GROUPS, Tables
from solver.specs.framework import FrameworkProfile, rule_env
from solver.specs.hardware import Hardware
from solver.specs.model import ModelSpec
from solver.specs.scenario import Scenario


def enumerate_points(t: Tables, model: ModelSpec, hw: Hardware, fw: FrameworkProfile,
                     scenario: Scenario) -> list[Point]:
    groups = list(t.choices)
    rules = [r for r in fw.rules if r.severity == "error"]
    cap = round((t.memory_limit_bytes - t.const_memory_bytes) * MEM_SCALE)
    const_step = t.const_step_s
    out: list[Point] = []
    for b in t.batches:
        const_tpot = const_step / t.mtp_tokens
        const_lat = const_step + max(0, t.osl - 1) * const_tpot
        c_lat0 = round(const_lat * TIME_SCALE)
        c_inv0 = round(const_lat * t.world / (b * t.osl) * TIME_SCALE)
        c_ttft0 = round(const_step * TIME_SCALE)
        c_tpot0 = round(const_tpot * TIME_SCALE)
        coefs = {g: [_coef(t, b, g, i) for i in range(len(t.choices[g]))] for g in groups}
        for idx in itertools.product(*(range(len(t.choices[g])) for g in groups)):
            lat, inv, ttft, tpot, mem = c_lat0, c_inv0, c_ttft0, c_tpot0, 0
            for g, i in zip(groups, idx):
                cl, ci, ct, cp, cm = coefs[g][i]
                lat += cl
                inv += ci
                ttft += ct
                tpot += cp
                mem += cm
            if mem > cap:
                continue
            if scenario.ttft_ms is not None and ttft > round(scenario.ttft_ms * 1e-3 * TIME_SCALE):
                continue
            if scenario.tpot_ms is not None and tpot > round(scenario.tpot_ms * 1e-3 * TIME_SCALE):
                continue
            cfg: dict[str, int] = {}
            for g, i in zip(groups, idx):
                cfg.update(dict(zip(GROUPS[g], t.choices[g][i])))
            env = rule_env(cfg, world=t.world, batch=b, mtp=scenario.mtp,
                           num_attention_heads=model.num_attention_heads,
                           num_key_value_heads=model.num_key_value_heads, n_routed_experts=model.num_experts,
                           has_mla=model.has_mla, has_dsa=model.has_dsa, o_proj_dim=model.o_proj_dim,
                           ranks_per_node=hw.ranks_per_node)
            if all(r.holds(env) for r in rules):
                out.append(Point(tuple(zip(groups, idx)), b, lat, inv))
    return out


def pareto(points: list[Point]) -> list[Point]:
    """Non-dominated points in (inverse throughput, latency), one per distinct objective pair, sorted by
    inverse throughput; ties broken like the epsilon-constraint loop (lowest latency first)."""
    best: dict[tuple[int, int], Point] = {}
    for p in points:
        best.setdefault((p.inv_throughput, p.latency), p)
    front: list[Point] = []
    min_lat = None
    for (inv, lat), p in sorted(best.items()):
        if min_lat is None or lat < min_lat:
            front.append(p)
            min_lat = lat
    return front
