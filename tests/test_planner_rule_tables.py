"""The planner's rule tables range over what configurations can pick (each group's choices projected on the rule's
knobs), not over the product of the knob domains: the same configurations are allowed either way."""
from __future__ import annotations

import itertools

import pytest

from solver.estimate.compute import factors_for
from solver.plan import rule_tables
from solver.plan.groups import GROUPS
from solver.plan.table_build import build_tables
from solver.space.domains import build_space
from solver.specs.framework import load_framework
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import load_model
from solver.specs.precision import resolve_precision
from solver.specs.rule_env import model_facts, rule_env
from solver.specs.scenario import Scenario


def _tables(model: str, hw: str, fw: str, world: int):
    m, h, f = load_model(model), load_hardware(hw), load_framework(fw)
    sc = Scenario(kind="balanced", isl=4096, osl=256, max_concurrency=64)
    t = build_tables(m, h, resolve_precision(m, h), factors_for(h), f, build_space(m, h, f, world, sc), sc)
    return t, m, h, f, sc


def _config_values(t, picks: dict[str, int], knobs: list[str]) -> tuple[int, ...]:
    values = {}
    for g, j in picks.items():
        values.update(zip(GROUPS[g], t.choices[g][j]))
    return tuple(values[k] for k in knobs)


CASES = [("deepseek-v3.2", "atlas_a3", "cann-recipes", 128), ("deepseek-v3.2", "atlas_a3", "generic", 32),
         ("qwen3-30b-a3b", "h200_sxm", "sglang", 8), ("llama-3.1-70b", "h100_sxm", "vllm", 16)]


@pytest.mark.parametrize("model,hw,fw,world", CASES)
def test_a_rule_table_allows_what_the_domain_product_allows(model, hw, fw, world) -> None:
    t, m, h, f, sc = _tables(model, hw, fw, world)
    tables = {rid: (knobs, {tuple(a) for a in allowed})
              for rid, knobs, allowed in rule_tables.static_rule_tables(t, m, h, f, sc)}
    deployment = dict(world=t.world, batch=1, mtp=sc.mtp, ranks_per_node=h.ranks_per_node, **model_facts(m))
    domains = rule_tables._domains(t)
    groups = [g for g in GROUPS if t.choices[g]]
    checked = 0
    for rule in f.rules:
        if rule.severity != "error" or "batch" in rule.names or rule.id not in tables:
            continue
        knobs, allowed = tables[rule.id]
        product = {c for c in itertools.product(*(domains[k] for k in knobs))
                   if rule.holds(rule_env(dict(zip(knobs, c)), **deployment))}
        assert allowed <= product  # nothing the domains' table refuses
        # every configuration (one choice per group, at one stage count) is allowed by both or by neither
        for combo in itertools.islice(itertools.product(*(range(len(t.choices[g])) for g in groups)), 20000):
            picks = dict(zip(groups, combo))
            if len({t.choices[g][j][-1] for g, j in picks.items()}) > 1:
                continue
            v = _config_values(t, picks, knobs)
            assert (v in allowed) == (v in product), (rule.id, v)
            checked += 1
    assert checked or not tables


def test_a_rule_every_pickable_configuration_meets_binds_nothing() -> None:
    """cann-recipes' attention-group rule on DeepSeek-V3.2 at W=128: the attention choices all meet it (the space
    builds them so), so it gets no table, though the knob domains' product holds combinations it refuses."""
    t, m, h, f, sc = _tables("deepseek-v3.2", "atlas_a3", "generic", 128)
    ids = {rid for rid, _, _ in rule_tables.static_rule_tables(t, m, h, f, sc)}
    assert "A.attention_group_fits" in {r.id for r in f.rules}
    assert "A.attention_group_fits" not in ids


def test_rule_tables_are_reused_only_for_the_same_choices() -> None:
    """A rule's table depends on the choices the groups offer (not only on the knob domains), so the per-deployment
    memo hands a table only to tables with the same choices: with an attention choice the rule refuses added
    (the domains unchanged), the rule is back."""
    import dataclasses

    t, m, h, f, sc = _tables("deepseek-v3.2", "atlas_a3", "generic", 128)
    rule_tables.clear_rule_cache()
    assert "A.attention_group_fits" not in {rid for rid, _, _ in rule_tables.static_rule_tables(t, m, h, f, sc)}
    domains = rule_tables._domains(t)
    rule = next(r for r in f.rules if r.id == "A.attention_group_fits")
    deployment = dict(world=t.world, batch=1, mtp=sc.mtp, ranks_per_node=h.ranks_per_node, **model_facts(m))
    knobs = list(GROUPS["attn"])
    refused = next(c for c in itertools.product(*(domains[k] for k in knobs))
                   if not rule.holds(rule_env(dict(zip(knobs, c)), **deployment)))
    wider = dataclasses.replace(t, choices={**t.choices, "attn": [*t.choices["attn"], refused]})
    assert rule_tables._domains(wider) == domains
    assert "A.attention_group_fits" in {rid for rid, _, _ in rule_tables.static_rule_tables(wider, m, h, f, sc)}
