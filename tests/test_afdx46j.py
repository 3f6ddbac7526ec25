"""Attention-FFN disaggregation in the planner's answer: the reference distance counts AFD on vs off, and
`--explain` prices the seed's +AFD baseline (#1's knobs over each half) beside #1 where the engine runs AFD and
the plan is a decode, or says what refuses it."""
from __future__ import annotations

from dataclasses import replace

import pytest

from solver.estimate.factors import factors_for
from solver.estimate.serving import Workload, estimate
from solver.rank.explain import AFD_NAME, afd_priced
from solver.rank.select import AFD_DISTANCE, distance_terms, reference_distance
from solver.space.placement import as_launched
from solver.specs.framework import load_framework
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import load_model
from solver.specs.parallel import ParallelConfig
from solver.specs.precision import resolve_precision
from solver.specs.reference import load_reference
from solver.specs.scenario import Scenario

# lc-afd's knobs (each half's) over LongCat-Flash's 128 ranks: the planner's #1 for the decode of lc-afd's workload
LC_KNOBS = dict(attn_tp_size=1, dense_tp_size=8, moe_tp_size=1, embed_tp_size=1, lmhead_tp_size=16,
                o_proj_tp_size=8)
BATCH = 256  # lc-afd's batch


def _setup(framework: str = "cann-recipes"):
    model, fw = load_model("longcat-flash"), load_framework(framework)
    hw = as_launched(load_hardware("atlas_a3"), fw, 128)
    prec = resolve_precision(model, hw, "int8")
    return model, hw, fw, prec, factors_for(hw, fw.efficiency_for(hw))


def _priced(phase: str = "decode", framework: str = "cann-recipes", best=None, **knobs) -> list[str]:
    model, hw, fw, prec, f = _setup(framework)
    scenario = Scenario(kind="throughput", isl=4608, osl=128, phase=phase)
    pc = ParallelConfig(world_size=128, **{**LC_KNOBS, **knobs})
    est = best or estimate(model, hw, pc, prec, f, Workload.for_scenario(scenario, BATCH))
    return afd_priced(model, hw, fw, prec, f, scenario, pc, est, BATCH)


def test_afd_on_one_side_and_off_the_other_adds_its_weight_to_the_reference_distance():
    """lc-afd's own knobs on its 128 ranks, as the planner plans them (not disaggregated): 0 knobs differ, same
    model, hardware and world, so the distance is the AFD term alone, 0 + 1 = 1, said in words; the same knobs
    disaggregated are at 0 from lc-afd and at 1 from lc-ep128 (a deployment that is not)."""
    model, hw = load_model("longcat-flash"), load_hardware("atlas_a3")
    pc = ParallelConfig(world_size=128, **LC_KNOBS)
    ref = load_reference("lc-afd")
    d, scale, diffs = reference_distance(pc, model, hw, ref, model.name)
    assert (d, scale, diffs) == (AFD_DISTANCE, 0.0, []) and AFD_DISTANCE == 1.0
    assert distance_terms(pc, model, hw, ref, model.name, diffs) == (
        "same knobs", "attention-FFN disaggregated vs not (+1)")
    assert reference_distance(pc, model, hw, ref, model.name, afd=True)[0] == 0.0
    plain = load_reference("lc-ep128")
    d_afd = reference_distance(pc, model, hw, plain, model.name, afd=True)[0]
    assert d_afd == reference_distance(pc, model, hw, plain, model.name)[0] + AFD_DISTANCE


def test_explain_prices_the_afd_form_of_first_under_an_engine_running_afd_in_decode():
    """cann-recipes decodes LongCat-Flash attention-FFN disaggregated (lc-afd): the line names the baseline,
    its halves (128 / 2 = 64 + 64) and #1's concurrency, its score against #1 and the side that binds."""
    lines = _priced()
    assert len(lines) == 1, lines
    line = lines[0]
    assert line.startswith(f"{AFD_NAME} (the seed's high-throughput baseline: #1's knobs over each half, 64 attention "
                           f"ranks + 64 FFN ranks, at #1's concurrency {BATCH}): score ")
    assert " side binds: busy " in line and "transfer exposed" in line


@pytest.mark.parametrize("phase", ["serving", "prefill"])
def test_no_afd_line_outside_a_decode_plan(phase):
    """The AFD estimate has no prefill step: a serving or prefill plan gets no +AFD line."""
    assert _priced(phase=phase) == []


def test_no_afd_line_under_an_engine_without_afd():
    """vllm-ascend's profile does not support attention_ffn_disaggregation: no line, not a refusal."""
    assert _priced(framework="vllm-ascend") == []


def test_a_tp_size_not_dividing_half_the_world_is_refused_with_the_rule_and_the_knob():
    """lmhead_tp 128 over 128 ranks: each half has 64 ranks and 64 % 128 != 0, so cann-recipes' AFD rule refuses
    it, the line naming the knob and the half."""
    (line,) = _priced(lmhead_tp_size=128)
    assert line.startswith(f"{AFD_NAME} (") and ": refused (parallel_config.lmhead_tp_size: [" in line
    assert "lmhead_tp_size 128 of 64" in line


def test_a_better_scoring_afd_form_is_said_in_a_note_naming_the_field_and_check():
    """A constructed #1 twice as slow as its own estimate (TPOT x 2, tokens/s / 2): the AFD form, about as fast
    as the plain one, scores better (negative) against it, and a note says so with `afd: true` and `check`."""
    model, hw, fw, prec, f = _setup()
    scenario = Scenario(kind="throughput", isl=4608, osl=128, phase="decode")
    pc = ParallelConfig(world_size=128, **LC_KNOBS)
    e = estimate(model, hw, pc, prec, f, Workload.for_scenario(scenario, BATCH))
    slow = replace(e, tpot_s=2 * e.tpot_s, output_tokens_per_s=e.output_tokens_per_s / 2)
    lines = afd_priced(model, hw, fw, prec, f, scenario, pc, slow, BATCH)
    assert len(lines) == 2 and "better against #1" in lines[0], lines
    assert lines[1].startswith("note: the AFD form of #1 scores -")
    assert "`afd: true`" in lines[1] and "`shardplan check FILE`" in lines[1]
    assert not any(x.startswith("note:") for x in _priced())  # at its own estimate the plain #1 scores better
