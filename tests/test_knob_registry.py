"""One vocabulary for knobs (specs.knobs): every place that names a knob reads the registry, so a knob has one
planner group, one flag, one derived size, and every split knob a layer declares is one the registry knows."""
from __future__ import annotations

import pytest

from solver.estimate.params import count_params
from solver.plan.groups import ATTN_ORDER, GROUPS, KNOB_GROUP, SHARED
from solver.specs import knobs
from solver.specs.profile_rules import KNOB_NAMES, RULE_NAMES
from solver.specs.model_catalog import list_models, load_model
from solver.specs.parallel import ParallelConfig


def test_every_knob_is_set_by_exactly_one_planner_group():
    owners = {k: [g for g, ks in GROUPS.items() if k in ks and k not in SHARED] for k in knobs.KNOBS}
    for k, gs in owners.items():
        if k in SHARED:
            assert all(k in ks for ks in GROUPS.values()), k  # the stage count: every group carries it
        else:
            assert gs == [knobs.KNOB[k].group], (k, gs)


def test_attention_choice_spells_every_attention_knob_once():
    assert sorted(ATTN_ORDER) == sorted(knobs.group_knobs("attn"))


def test_derived_size_is_the_stage_world_over_its_knob():
    pc = ParallelConfig(world_size=32, attn_tp_size=4, moe_tp_size=2, pp_size=2)
    for derived, knob in knobs.DERIVED.items():
        assert getattr(pc, derived) == pc.stage_world // getattr(pc, knob)


def test_rules_read_the_registry_names():
    assert KNOB_NAMES == knobs.KNOBS
    assert set(knobs.KNOBS) | set(knobs.DERIVED) | set(knobs.SETTINGS) <= RULE_NAMES


def test_flags_are_distinct_and_cover_every_key():
    flags = list(knobs.KNOB_FLAGS.values()) + list(knobs.SETTING_FLAGS.values())
    assert len(set(flags)) == len(flags) == len(knobs.CONFIG_KEYS)


@pytest.mark.parametrize("name", [aliases[0] for _, aliases in list_models() if aliases])
def test_every_module_split_knob_is_a_registry_knob(name):
    model = load_model(name)
    for module, knob in count_params(model).knobs().items():
        assert knob is None or knob in knobs.SPLIT_KNOBS, (module, knob)
        if knob is not None and knob in knobs.KNOB:
            assert KNOB_GROUP[knob] == knobs.KNOB[knob].group
