"""The framework's hard rules compiled into tables of the knob values each allows, over what the tables' group
choices can take together (docs/planner.md, "How it decides" 3): what the CP-SAT model constrains, the
exhaustive enumerator filters with, and `check` reports from the same rule set."""
from __future__ import annotations

import itertools
from typing import Iterator

from solver.memo import IdentityMemo
from solver.plan.groups import GROUPS, SHARED
from solver.plan.tables import Tables
from solver.specs.framework import FrameworkProfile
from solver.specs.hardware import Hardware
from solver.specs.knobs import DERIVED
from solver.specs.model import ModelSpec
from solver.specs.rule_env import device_facts, model_env, model_facts, rule_env
from solver.specs.scenario import Scenario


def rule_tables(t: Tables, model: ModelSpec, hw: Hardware, fw: FrameworkProfile, scenario: Scenario, batch: int,
                static: list) -> list[tuple[str, list[str], list[list[int]]]]:
    """Each hard framework rule as (rule id, knobs it reads, allowed value tuples) at this concurrency.
    Rules the knob domains already satisfy are dropped: they can neither constrain nor bind. Rules that do not
    read the batch are the same at every concurrency: `static` (static_rule_tables) computes them once."""
    return static + _rule_tables(t, model, hw, fw, scenario, batch, batch_rules=True)


def static_rule_tables(t: Tables, model: ModelSpec, hw: Hardware, fw: FrameworkProfile, scenario: Scenario) -> list:
    """The rules that do not read the batch, once per (framework, model, ranks per node, world, MTP, the groups'
    choices): all _rule_tables reads. Plans of one deployment for other workloads (a sweep) share them;
    solve.clear_cache drops them, so a benchmark's timed plan builds its own."""
    rest = (hw.ranks_per_node, hw.platform, t.world, scenario.mtp, tuple((g, tuple(t.choices[g])) for g in GROUPS))
    return list(_STATIC_RULES.get((fw, model), rest, lambda: _rule_tables(t, model, hw, fw, scenario, None,
                                                                          batch_rules=False)))


_STATIC_RULES = IdentityMemo(256)  # static_rule_tables per deployment


def clear_rule_cache() -> None:
    _STATIC_RULES.clear()


def _domains(t: Tables) -> dict[str, list[int]]:
    """Each knob's values over the tables' choices (the stage count: every group's)."""
    return {k: sorted({opt[i] for opt in t.choices[g]}) for g, ks in GROUPS.items() for i, k in enumerate(ks)}


def _rule_tables(t: Tables, model: ModelSpec, hw: Hardware, fw: FrameworkProfile, scenario: Scenario,
                 batch: int | None, batch_rules: bool) -> list[tuple[str, list[str], list[list[int]]]]:
    domains = _domains(t)
    derived = DERIVED
    out = []
    # the deployment and model facts, knobs at 1: a rule whose `when` reads none of the knobs is decided here
    # once instead of over every knob combination (cann-recipes' AFD rule, never on while planning, spans six
    # TP knobs: 262K combinations at W=128)
    facts = model_env({}, model, **device_facts(hw), world=t.world, batch=batch or 1, mtp=scenario.mtp)
    deployment = dict(world=t.world, batch=batch or 1, mtp=scenario.mtp, **device_facts(hw),
                      **model_facts(model))  # model_env's arguments, read once for every combination below
    knob_names = set(domains) | set(derived)
    for rule in fw.rules:
        if ("batch" in rule.names) != batch_rules:  # a warning too: the planner follows the engine's advice
            continue
        staged = len(domains.get("pp_size", ())) > 1 and "world" in rule.when_names
        if not (rule.when_names & knob_names) and not staged and not rule.applies(facts):
            continue
        knobs = sorted({n for n in rule.names if n in domains} | {k for d, k in derived.items() if d in rule.names}
                       # rules read `world` per pipeline stage: their tables range over the stage count too
                       | ({"pp_size"} if len(domains.get("pp_size", ())) > 1
                          and rule.names & {"world", *derived} else set()))
        allowed = []
        total = 0
        for combo in _reachable(t, knobs, domains):
            total += 1
            env = rule_env(dict(zip(knobs, combo)), **deployment)
            if rule.holds(env):
                allowed.append(list(combo))
        if len(allowed) < total:
            out.append((rule.id, knobs, allowed))
    return out


def _reachable(t: Tables, knobs: list[str], domains: dict[str, list[int]]) -> Iterator[tuple[int, ...]]:
    """The values `knobs` can take together, in their order: each group's choices projected on the knobs it owns,
    crossed (the stage count, every group's, with the first of them). A superset of what a configuration can pick and a
    subset of the domains' product, so a rule holds on every configuration exactly when it holds on all of
    these, and a table of them allows what the product's table allows."""
    owner = {k: g for g, ks in GROUPS.items() for k in ks if k not in SHARED}
    shared = [k for k in knobs if k not in owner]  # the stage count rides with the first group projected
    parts: list[tuple[list[str], list[tuple[int, ...]]]] = []
    for g, ks in GROUPS.items():
        mine = [k for k in knobs if owner.get(k) == g]
        if mine:
            mine, shared = mine + shared, []
            idx = [ks.index(k) for k in mine]
            parts.append((mine, sorted({tuple(c[i] for i in idx) for c in t.choices[g]})))
    parts += [([k], [(v,) for v in domains[k]]) for k in shared]
    order = [k for names, _ in parts for k in names]
    at = [order.index(k) for k in knobs]
    for combo in itertools.product(*(vals for _, vals in parts)):
        flat = tuple(v for sub in combo for v in sub)
        yield tuple(flat[i] for i in at)


__all__ = ["rule_tables", "static_rule_tables", "clear_rule_cache"]
