"""A pipeline step of uneven stages (stop 50, pp2): stage times t_1..t_pp, each with its hand-off, make a decode
step of max(sum t_i, M x max t_i) and a prefill step of sum t_i + (M - 1) x max t_i (fill and drain); equal
stages keep the slot forms max(M, pp) x t and (M + pp - 1) x t. DeepSeek-R1 (61 layers) on 2 x 8 H100 at TP8 x
PP2, run 11 / 50 (VLLM_PP_LAYER_PARTITION=11,50) against the balanced 31 / 30."""
from __future__ import annotations

from dataclasses import replace

import pytest

from solver.estimate import pipeline
from solver.estimate.compute import Work, factors_for
from solver.estimate.engine_step import step_layers
from solver.estimate.stage_ranks import stage_device
from solver.estimate.step import step_cost
from solver.plan.group_cost import Pipeline
from solver.specs.framework import load_framework
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import load_model
from solver.specs.parallel import ParallelConfig
from solver.specs.precision import resolve_precision

PC = ParallelConfig(world_size=16, attn_tp_size=8, dense_tp_size=8, moe_tp_size=8, embed_tp_size=8,
                    lmhead_tp_size=8, pp_size=2)


@pytest.fixture(scope="module")
def setup():
    r1 = load_model("deepseek-r1")
    hw = load_hardware("h100_sxm")
    return r1, hw, resolve_precision(r1, hw), factors_for(hw, load_framework("vllm").efficiency_for(hw))


def _split(model, sizes: tuple[int, ...]):
    return replace(model, stage_layers=sizes)


def _stage_s(model, hw, prec, f, micro: Work) -> list[float]:
    """Each stage's seconds on one microbatch, its absent modules left out, as pipeline_step costs them."""
    spc = PC.stage()
    shw = stage_device(hw, f.rank_order, 2, spc.attn_group_size, spc.world_size)
    out = []
    for st in pipeline.stages(model, 2):
        sc = step_cost(st.model, shw, spc, prec, f, micro)
        out.append(sum(o.time_s for o in sc.ops if o.module not in st.absent_modules)
                   + sum(c.exposed_s for c in sc.comms if c.module not in st.absent_modules))
    return out


def _hand_off(model, hw, f, tokens: float) -> float:
    spc = PC.stage()
    return pipeline.send_s(hw, 8, 2, tokens, pipeline.handoff_width(model, f), f.comm,
                           spc.attn_tp_group(f.kvp_splits_attention_weights), f.rank_order, spc.attn_group_size)


def test_one_sequence_on_an_11_50_split_decodes_in_the_sum_of_its_two_stages(setup) -> None:
    """M = 1: the token crosses stage 1 (11 layers) then stage 2 (50), each handing off: t_1 + t_2 + 2 sends,
    not 2 x t_2 (what the slowest stage's slots made of it), and 61 layer passes."""
    r1, hw, prec, f = setup
    model = _split(r1, (11, 50))
    w = Work("decode", 1, 4096, 1, 1)
    t1, t2 = _stage_s(model, hw, prec, f, w)
    assert t2 > 3 * t1  # the split is uneven
    send = _hand_off(model, hw, f, 1)
    step = step_cost(model, hw, PC, prec, f, w)
    assert step.time_s == pytest.approx(t1 + t2 + 2 * send + f.step_overhead_s, rel=1e-9)
    assert step.time_s < 2 * t2 + 2 * send + f.step_overhead_s
    assert step_layers(model, PC, "decode", 1) == 61


def test_two_microbatches_on_an_11_50_split_decode_at_the_slowest_stages_pace(setup) -> None:
    """M = 2 of 2 sequences: 2 x t_2 >= t_1 + t_2, so each microbatch waits for the 50-layer stage: 2 x (t_2 +
    send); a sequence's step crosses 2 x 50 / 2 = 50 layer passes."""
    r1, hw, prec, f = setup
    model = _split(r1, (11, 50))
    t1, t2 = _stage_s(model, hw, prec, f, Work("decode", 1, 4096, 1, 1))
    send = _hand_off(model, hw, f, 1)
    step = step_cost(model, hw, PC, prec, f, Work("decode", 2, 4096, 2, 2))
    assert step.time_s == pytest.approx(2 * (t2 + send) + f.step_overhead_s, rel=1e-9)
    assert step_layers(model, PC, "decode", 2) == 50


def test_prefill_fills_and_drains_unequal_stages(setup) -> None:
    """Two prompts, two microbatches over 11 / 50: the first crosses both stages (t_1 + t_2), the second follows
    the slower stage (t_2); 2 hand-offs (the last stage forwards nothing): t_1 + 2 t_2 + 2 sends, not 3 t_2. A
    prompt's layer passes: (61 + 50) / 2."""
    r1, hw, prec, f = setup
    model = _split(r1, (11, 50))
    t1, t2 = _stage_s(model, hw, prec, f, Work("prefill", 2048, 1024.5, 1, 1))
    send = _hand_off(model, hw, f, 2048)
    step = step_cost(model, hw, PC, prec, f, Work("prefill", 2 * 2048, 1024.5, 2, 2))
    assert step.time_s == pytest.approx(t1 + 2 * t2 + 2 * send + f.step_overhead_s, rel=1e-9)
    assert step_layers(model, PC, "prefill", 2) == (61 + 50) / 2


def test_equal_stages_keep_the_slot_forms() -> None:
    """Equal stages: decode max(M, pp) x t with a hand-off per slot, prefill (M + pp - 1) x t with one fewer."""
    t, s = 3.0, 0.5
    for m in (1, 2, 4):
        assert pipeline.paced("decode", m, (t,), (4,), s) == (pipeline.slots("decode", 4, m) * t, 4)
        assert pipeline.paced("prefill", m, (t, t), (1, 3), s) == (pipeline.slots("prefill", 4, m) * t,
                                                                   pipeline.sends("prefill", 4, m))


def test_balanced_stages_cross_the_same_layers_as_before() -> None:
    """Llama-3.1-405B, 63 / 63: a decode sequence crosses 2 x 63 / M layers at M = 1, 2; a prefill's 3 x 63 / 2 at
    M = 2, as slots x the busiest stage / M made them."""
    llama = load_model("llama-3.1-405b")
    pc = ParallelConfig(world_size=16, attn_tp_size=8, dense_tp_size=8, embed_tp_size=8, lmhead_tp_size=8,
                        pp_size=2)
    assert step_layers(llama, pc, "decode", 1) == 126
    assert step_layers(llama, pc, "decode", 8) == 63
    assert step_layers(llama, pc, "prefill", 2) == 3 * 63 / 2


def test_every_stage_counts_in_the_sum(setup) -> None:
    """DeepSeek-R1 at PP4, the engines' 16 / 15 / 15 / 15: the distinct stages' counts cover all four, one
    sequence's decode crosses all 61 layers, four microbatches' the busiest stage's 16 each."""
    r1 = setup[0]
    assert sum(pipeline.stage_counts(r1, 4)) == 4
    assert len(pipeline.stage_counts(r1, 4)) == len(pipeline.distinct_stages(r1, 4))
    pc4 = ParallelConfig(world_size=32, attn_tp_size=8, dense_tp_size=8, moe_tp_size=8, embed_tp_size=8,
                         lmhead_tp_size=8, pp_size=4)
    assert step_layers(r1, pc4, "decode", 1) == 61
    assert step_layers(r1, pc4, "decode", 4) == 16


def test_the_planners_pipeline_combines_stage_sums_as_the_estimator_does() -> None:
    """group_cost.Pipeline on stage sums (1, 5) with a 0.1 s hand-off and 0.01 s overhead: decode at M = 2 paced by
    the slow stage, 2 x 5.1; at M = 1 the sum with both hand-offs, 6.2; prefill at M = 2: 6 + 5 + 2 x 0.1."""
    dec2 = Pipeline(2, 2, 0.1, 0.01, (1, 1), "decode", 2)
    dec1 = Pipeline(2, 2, 0.1, 0.01, (1, 1), "decode", 1)
    pre2 = Pipeline(2, 3, 0.1, 0.01, (1, 1), "prefill", 2)
    assert dec2.gpu_s((1.0, 5.0)) == pytest.approx(2 * 5.1 + 0.01)
    assert dec1.gpu_s((1.0, 5.0)) == pytest.approx(6.2 + 0.01)
    assert pre2.gpu_s((1.0, 5.0)) == pytest.approx(11.2 + 0.01)
