"""Per-sequence costs and CUDA-graph batch buckets (serving.py: graph_batch, step_time), hand-computed."""
from __future__ import annotations

from dataclasses import replace

import pytest

from solver.estimate.factors import factors_for
from solver.estimate.serving import Workload, decode_step, estimate, graph_batch, kernels_launched, step_time
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
    sizes = load_framework("vllm").serving.graph_sizes()
    assert sizes[:5] == (1, 2, 4, 8, 16)
    assert graph_batch(249, sizes) == (256, False)
    assert graph_batch(257, sizes) == (272, False)
    assert graph_batch(513, sizes) == (513, True)


def test_eager_step_is_floored_by_kernel_launches_and_pays_per_sequence() -> None:
    f = replace(factors_for(load_hardware("h100_sxm"), {}), eager_launch_s=5e-6, seq_overhead_s=1e-5)
    # 1000 kernels x 5 us = 5 ms > the 1 ms of GPU work; 10 sequences x 10 us
    assert step_time(1e-3, 1000, 10, True, f) == pytest.approx(5e-3 + 1e-4)
    # graphed: the GPU time plus the per-sequence cost only
    assert step_time(1e-3, 1000, 10, False, f) == pytest.approx(1e-3 + 1e-4)


def test_decode_at_one_past_a_graph_size_costs_the_padded_batch() -> None:
    model = load_model("meta-llama/Llama-3.1-8B-Instruct")
    hw = load_hardware("h100_sxm")
    fw = load_framework("vllm")
    f = replace(factors_for(hw, fw.efficiency_for(hw)), seq_overhead_s=0.0, seq_kernel_s=0.0)
    pc = make_parallel_config(1)
    prec = resolve_precision(model, hw)
    est = estimate(model, hw, pc, prec, f, Workload("decode", batch=249, seq_len=2048))
    padded = decode_step(model, hw, pc, prec, f, 256, 2048)
    assert est.tpot_s == pytest.approx(padded.time_s)
    assert kernels_launched(padded, f) > 32  # every layer launches kernels


def test_per_sequence_cost_per_kernel_scales_with_sequences_and_kernels() -> None:
    f = replace(factors_for(load_hardware("h100_sxm"), {}), seq_kernel_s=1e-7)
    # 10 sequences x 1000 kernels x 100 ns = 1 ms on top of the 1 ms of GPU work
    assert step_time(1e-3, 1000, 10, False, f) == pytest.approx(2e-3)
    # a model launching twice the kernels (twice the layers) pays it twice; so do twice the sequences
    assert step_time(1e-3, 2000, 10, False, f) - 1e-3 == pytest.approx(2e-3)
    assert step_time(1e-3, 1000, 20, False, f) - 1e-3 == pytest.approx(2e-3)


def test_per_sequence_costs_add_the_per_step_and_per_kernel_parts() -> None:
    f = replace(factors_for(load_hardware("h100_sxm"), {}), seq_overhead_s=1e-5, seq_kernel_s=1e-8)
    # 4 sequences x (10 us + 500 kernels x 10 ns = 15 us) = 60 us
    assert step_time(0.0, 500, 4, False, f) == pytest.approx(6e-5)


def test_fitted_per_kernel_sequence_cost_reaches_the_estimate() -> None:
    fitted = {"seq_kernel_s": 5e-8}
    f = factors_for(load_hardware("h100_sxm"), fitted)
    assert f.seq_kernel_s == 5e-8
    assert factors_for(load_hardware("h100_sxm"), {}).seq_kernel_s == 0.0
