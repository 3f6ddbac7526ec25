"""The parallel configurations an engine's profile admits at one world size: the space's knob domains
(space.domains.build_space), crossed knob by knob, each partial choice kept only while every hard rule of the profile
that reads nothing but the knobs chosen so far holds (the same rule environment the launch is checked in), and the
redundant experts the planner places at each EP size. A knob the profile lacks stays 1 (its followed value is the
same split). The launch (emit.emit_launch) checks each survivor in full."""
from __future__ import annotations

from typing import Iterator

from solver.space.domains import build_space, redundant_for
from solver.specs.framework import FrameworkProfile
from solver.specs.hardware import Hardware
from solver.specs.knobs import DERIVED, KNOBS
from solver.specs.model import ModelSpec
from solver.specs.parallel import absent_knobs
from solver.specs.rule_env import device_facts, model_facts, rule_env
from solver.specs.scenario import Scenario


def _order(needs: list[set[str]]) -> list[str]:
    """The knobs in the order that completes the most rules soonest (so a partial choice is cut early): the stage
    count first (rules read the world per stage), then each time the knob that completes the most rules."""
    order = ["pp_size"]
    while len(order) < len(KNOBS):
        chosen = set(order)
        rest = [k for k in KNOBS if k not in chosen]
        order.append(max(rest, key=lambda k: (sum(n <= chosen | {k} for n in needs), sum(k in n for n in needs),
                                              -KNOBS.index(k))))
    return order


def _needs(fw: FrameworkProfile, names: frozenset[str]) -> set[str] | None:
    """The knobs a rule's names stand for; None where a name reads the whole configuration (checked at the end)."""
    groups = dict(fw.group_products)
    out: set[str] = set()
    for n in names:
        if n in KNOBS:
            out.add(n)
        elif n in DERIVED:
            out.add(DERIVED[n])
        elif n in groups:
            out |= set(groups[n])
        elif n == "world":
            out.add("pp_size")
        elif n in ("ep_kernels", "replica_batch", "redundant_experts"):
            return None
    return out


def admitted(model: ModelSpec, hw: Hardware, fw: FrameworkProfile, world: int, scenario: Scenario,
             batch: int) -> Iterator[dict[str, int]]:
    """Each configuration (knobs and redundant experts) whose knobs pass the profile's hard rules one by one."""
    domains = build_space(model, hw, fw, world, scenario, allow_cross_node=True).domains
    fixed = set(fw.fixed_knobs) | set(absent_knobs(model))
    rules = [(r, n) for r in fw.rules if r.severity == "error" and (n := _needs(fw, r.names)) is not None]
    order = _order([n for _, n in rules])
    values = {k: (1,) if k in fixed else domains[k] for k in order}
    at: dict[int, list] = {}
    for r, needs in rules:
        at.setdefault(max((order.index(k) for k in needs), default=-1), []).append(r)
    # model_env's arguments, read once for every partial choice (as the planner's rule tables do)
    facts = dict(device_facts(hw), world=world, batch=batch, mtp=scenario.mtp, **model_facts(model))

    def holds(cfg: dict[str, int], depth: int) -> bool:
        if depth not in at:
            return True
        env = rule_env(cfg, **facts)
        return all(r.holds(env) for r in at[depth])

    def walk(cfg: dict[str, int], depth: int) -> Iterator[dict[str, int]]:
        if depth == len(order):
            yield cfg
            return
        knob = order[depth]
        for v in values[knob]:
            nxt = {**cfg, knob: v}
            if holds(nxt, depth):
                yield from walk(nxt, depth + 1)

    if not holds({}, -1):
        return
    for cfg in walk({}, 0):
        ep = world // cfg["pp_size"] // cfg["moe_tp_size"]
        r = redundant_for(model, fw, ep)
        for extra in sorted({0, r or 0}):
            yield {**cfg, "redundant_experts": extra}
