"""Stop 47's user-level hunt: one test per rule it found broken."""
from __future__ import annotations

import pytest

from solver.rank.reason import decision_tree_reason
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import load_model
from solver.specs.parallel import ParallelConfig
from solver.specs.scenario import Scenario


@pytest.fixture(scope="module")
def oss():
    return load_model("gpt-oss-120b")


@pytest.fixture(scope="module")
def h100():
    return load_hardware("h100_sxm")


SCEN = Scenario(kind="balanced", isl=1024, osl=1024)


def test_a_moe_stage_of_one_rank_claims_no_ep_against_tp_choice(oss, h100):
    """gpt-oss-120b on one H100 said "EP and TP compared; chose EP (128 experts per rank)": one rank has neither
    EP nor MoE TP, so the reason says the rank holds all 128 experts instead (each stage's rank under PP)."""
    one = decision_tree_reason(ParallelConfig(world_size=1), oss, SCEN, h100)
    assert "EP and TP compared" not in one
    assert "the one rank holds all 128 experts of its layers" in one
    staged = decision_tree_reason(ParallelConfig(world_size=2, pp_size=2), oss, SCEN, h100)
    assert "each stage's rank holds all 128 experts" in staged and "EP and TP compared" not in staged


def test_a_moe_stage_of_several_ranks_still_says_its_ep_choice(oss, h100):
    """Two ranks in one stage: EP2 (64 experts a rank) is a choice against MoE TP2, and the reason says so."""
    two = decision_tree_reason(ParallelConfig(world_size=2), oss, SCEN, h100)
    assert "EP and TP compared; chose EP (64 experts per rank)" in two
