"""The lead's mends of stop 50, one rule each."""
from __future__ import annotations

from dataclasses import replace

import pytest
import yaml
from pydantic import ValidationError

from solver.catalog import frameworks_dir
from solver.estimate.pipeline import held_absent, stages
from solver.specs.framework import FrameworkProfile, load_framework
from solver.specs.model_catalog import load_model


def _vllm_with(**changes) -> FrameworkProfile:
    data = yaml.safe_load((frameworks_dir() / "vllm.yaml").read_text())
    data.update(changes)
    return FrameworkProfile.model_validate(data)


def test_an_engine_that_builds_every_tower_on_the_first_stage_holds_none_past_it_whatever_the_wrapper() -> None:
    """vLLM's multimodal interface builds every wrapper's tower on the first PP stage only (interfaces.py:358-394),
    so its profile names every wrapper (["*"]), not the ones the catalog held when it was written: a wrapper the
    list would not have named (here Qwen3-VL's, renamed) holds no tower past the first stage."""
    model = load_model("qwen3-vl-30b-a3b")
    renamed = replace(model, encoders=tuple(replace(e, wrapper="a_new_wrapper") for e in model.encoders))
    first, last = stages(renamed, 2)
    towers = {e.name for e in renamed.encoders}
    every = tuple(load_framework("vllm").pp_tower_first_stage_model_types)
    assert towers and not towers & held_absent(first, 0, False, every)
    assert towers <= held_absent(last, 0, False, every)
    assert not towers & held_absent(last, 0, False, ("qwen3_vl_moe",))


def test_every_wrapper_stands_alone_in_a_profile_list_of_wrappers() -> None:
    with pytest.raises(ValidationError, match="stands alone"):
        _vllm_with(pp_tower_first_stage_model_types=["*", "gemma3"])
