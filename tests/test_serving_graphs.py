"""Per-sequence costs and CUDA-graph batch buckets (engine_step.py: graph_batch, step_time, step_layers), hand-computed."""
from __future__ import annotations

from dataclasses import replace

import pytest

from solver.estimate.engine_step import graph_sizes_at
from solver.estimate.factors import factors_for
from solver.estimate.figures import step_plan
from solver.estimate.serving import (
    Workload, decode_step, estimate, graph_batch, kernels_launched, step_layers, step_time,
)
from solver.specs.framework import load_framework
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import load_model
from solver.specs.parallel import make_parallel_config
from solver.specs.precision import resolve_precision

SIZES = (1, 2, 4, 8, 16)


def test_a_batch_on_a_graph_size_runs_unpadded() -> None:
    assert graph_batch(8, SIZES) == (8, False)


def test_one_past_a_graph_size_pads_to_the_next() -> None:
    assert graph_batch(9, SIZES) == (16, False)
    assert graph_batch(3, SIZES) == (4, False)


def test_past_the_largest_graph_runs_eagerly_unpadded() -> None:
    assert graph_batch(17, SIZES) == (17, True)


def test_no_graphs_means_no_padding_and_no_eager_floor() -> None:
    assert graph_batch(13, ()) == (13, False)


def test_vllm_graph_sizes_step_by_8_then_16() -> None:
    # the default cap on an H100 (not a 10.x device): 512 (serving.graph_max_batch), without the command's lift
    hw, fw = load_hardware("h100_sxm"), load_framework("vllm")
    f = replace(factors_for(hw, fw.efficiency_for(hw)), graph_cap_lift=False)
    sizes = graph_sizes_at(f, make_parallel_config(1), 0, planned=1)
    assert sizes[:5] == (1, 2, 4, 8, 16)
    assert graph_batch(249, sizes) == (256, False)
    assert graph_batch(257, sizes) == (272, False)
    assert graph_batch(513, sizes) == (513, True)


def test_eager_step_is_floored_by_kernel_launches_and_pays_per_sequence() -> None:
    f = replace(factors_for(load_hardware("h100_sxm"), {}), eager_launch_s=5e-6, seq_overhead_s=1e-5)
    # 1000 kernels x 5 us = 5 ms > the 1 ms of GPU work; 10 sequences x 10 us
    assert step_time(1e-3, 1000, 10, True, f, layers=32) == pytest.approx(5e-3 + 1e-4)
    # graphed: the GPU time plus the per-sequence cost only
    assert step_time(1e-3, 1000, 10, False, f, layers=32) == pytest.approx(1e-3 + 1e-4)


def test_decode_at_one_past_a_graph_size_costs_the_padded_batch() -> None:
    model = load_model("meta-llama/Llama-3.1-8B-Instruct")
    hw = load_hardware("h100_sxm")
    fw = load_framework("vllm")
    f = replace(factors_for(hw, fw.efficiency_for(hw)), seq_overhead_s=0.0, seq_layer_s=0.0)
    pc = make_parallel_config(1)
    prec = resolve_precision(model, hw)
    est = estimate(model, hw, pc, prec, f, Workload("decode", batch=249, seq_len=2048))
    padded = decode_step(model, hw, pc, prec, f, 256, 2048)
    assert est.tpot_s == pytest.approx(padded.time_s)
    assert kernels_launched(padded, f) > 32  # every layer launches kernels


def test_per_sequence_cost_per_layer_scales_with_sequences_and_layers() -> None:
    f = replace(factors_for(load_hardware("h100_sxm"), {}), seq_layer_s=1e-6)
    # 10 sequences x 100 layers x 1 us = 1 ms on top of the 1 ms of GPU work
    assert step_time(1e-3, 1000, 10, False, f, layers=100) == pytest.approx(2e-3)
    # twice the layers pay it twice; so do twice the sequences; the kernels launched do not enter
    assert step_time(1e-3, 1000, 10, False, f, layers=200) - 1e-3 == pytest.approx(2e-3)
    assert step_time(1e-3, 1000, 20, False, f, layers=100) - 1e-3 == pytest.approx(2e-3)
    assert step_time(1e-3, 5000, 10, False, f, layers=100) == pytest.approx(2e-3)


def test_per_sequence_costs_add_the_per_step_and_per_layer_parts() -> None:
    f = replace(factors_for(load_hardware("h100_sxm"), {}), seq_overhead_s=1e-5, seq_layer_s=1e-7)
    # 4 sequences x (10 us + 50 layers x 100 ns = 15 us) = 60 us
    assert step_time(0.0, 500, 4, False, f, layers=50) == pytest.approx(6e-5)


def test_fitted_per_layer_sequence_cost_reaches_the_factors() -> None:
    f = factors_for(load_hardware("h100_sxm"), {"seq_layer_s": 5e-7})
    assert f.seq_layer_s == 5e-7
    assert factors_for(load_hardware("h100_sxm"), {}).seq_layer_s == 0.0


def test_a_step_runs_the_stacks_layers() -> None:
    model = load_model("meta-llama/Llama-3.1-8B-Instruct")  # 32 layers
    assert step_layers(model, make_parallel_config(8, attn_tp_size=8, dense_tp_size=8), "decode", 64) == 32


def test_mtp_passes_add_the_mtp_modules_layers_to_the_step_that_runs_them() -> None:
    """A decode step's draft passes and a prefill step's pass over its prompts (workload.prompt_draft_passes)."""
    model = load_model("deepseek-ai/DeepSeek-V3")  # 61 layers, one MTP layer
    pc = make_parallel_config(8, attn_tp_size=8, moe_tp_size=8)
    assert step_layers(model, pc, "decode", 16, draft_passes=2) == 61 + 2
    assert step_layers(model, pc, "prefill", 16, draft_passes=1) == 61 + 1
    assert step_layers(model, pc, "prefill", 16) == 61


def test_under_pp_a_sequence_crosses_the_busiest_stages_layers_per_slot() -> None:
    model = load_model("meta-llama/Llama-3.1-8B-Instruct")  # 32 layers: 8 a stage at PP4
    pc = make_parallel_config(4, pp_size=4)
    # decode of 64 sequences: 4 microbatches, 4 slots: each sequence's 8 layers on the pacing stage, once
    assert step_layers(model, pc, "decode", 64) == 8
    # one sequence: 1 microbatch circulating through 4 slots: all 32 layers in series
    assert step_layers(model, pc, "decode", 1) == 32
    # prefill of 4 prompts: 4 microbatches, fill + drain = 7 slots: 8 x 7 / 4 = 14
    assert step_layers(model, pc, "prefill", 4) == 14
    # 30 layers at PP4: stages of 8, 8, 7, 7; the busiest holds 8
    odd = replace(model, layers=model.layers[:30])
    assert step_layers(odd, pc, "decode", 64) == 8


def test_the_step_plan_holds_the_layers_of_its_steps() -> None:
    model = load_model("deepseek-ai/DeepSeek-V3")
    hw = load_hardware("h200_sxm")
    f = factors_for(hw, {})
    pc = make_parallel_config(8, attn_tp_size=8, moe_tp_size=8)
    sp = step_plan(model, pc, f, Workload("serving", isl=1024, osl=256, concurrency=8, mtp=1))
    assert (sp.pre_layers, sp.dec_layers) == (61 + 1, 61 + 1)  # the prompt's MTP pass; the one draft pass


def test_the_estimate_charges_the_per_layer_cost_per_running_sequence() -> None:
    model = load_model("meta-llama/Llama-3.1-8B-Instruct")
    hw = load_hardware("h100_sxm")
    f = replace(factors_for(hw, {}), seq_overhead_s=0.0, seq_layer_s=0.0, graph_sizes=())
    pc = make_parallel_config(1)
    prec = resolve_precision(model, hw)
    wl = Workload("decode", batch=16, seq_len=2048)
    base = estimate(model, hw, pc, prec, f, wl).tpot_s
    # 16 sequences x 32 layers x 1 us = 512 us more per decode step
    with_cost = estimate(model, hw, pc, prec, replace(f, seq_layer_s=1e-6), wl).tpot_s
    assert with_cost - base == pytest.approx(16 * 32 * 1e-6)


def test_the_fitted_per_layer_sequence_cost_is_one_value_per_engine() -> None:
    # the per-sequence work inside each layer's kernels is the engine's own kernels' (benchmarks/fit_efficiency.py
    # fits it once per framework over every hardware): every fitted pair of a framework carries the same value
    from solver.specs.fitted import fitted_factors

    fitted = fitted_factors()
    assert fitted
    for fw, per_hw in fitted.items():
        values = {hw: load_framework(fw).efficiency_for(hw)["seq_layer_s"] for hw in per_hw}
        assert len(set(values.values())) == 1, (fw, values)
