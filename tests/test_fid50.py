"""Issue 15, stop 50: the worst in-sample and held-out TTFT groups read row by row (benchmarks/ttft_rows.py;
benchmarks/README.md, "Stop 50"). Hand-computed cases of the quantities the reading rests on: the prefill steps a
measured TTFT holds beyond its fixed cost, the steps a prefill-first cohort waits, the benchmark's blend of its
first wave with the later ones, and the prefill-first TTFT if only the first wave arrives as a cohort."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from solver.estimate.closed_loop import ServingPolicy, ServingShape, serving_kit
from solver.estimate.scheduler import prefill_steps_mean
from solver.estimate.workload import Workload

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import accuracy_rows  # noqa: E402
import ttft_rows  # noqa: E402

needs_csv = pytest.mark.skipif(not accuracy_rows.DEFAULT_CSV.is_file(),
                               reason="calibration CSV (../shared/facts) not present")


def test_measured_prefill_steps_are_the_ttft_beyond_the_fixed_cost_in_prefill_steps() -> None:
    # row 302 (DeepSeek-R1, SGLang, 8 x H200, 8K prompts, C 32): 994 ms measured, o 22 ms, ftl 28 ms, P_1 296 ms
    assert ttft_rows.measured_prefill_steps(0.994, 0.022, 0.028, 0.296) == pytest.approx((0.994 - 0.050) / 0.296)
    assert ttft_rows.measured_prefill_steps(0.994, 0.022, 0.028, 0.296) == pytest.approx(3.1892, abs=1e-4)


def test_a_cohort_waits_the_mean_of_its_prefill_groups() -> None:
    # request i of a cohort prefilled n at a time waits ceil(i / n) steps: 32 prompts one per step wait
    # (1 + ... + 32) / 32 = 16.5 steps; 64 prompts 16 per step (1 + 2 + 3 + 4) / 4 = 2.5; 9 prompts 8 per step
    # (8 x 1 + 1 x 2) / 9
    assert prefill_steps_mean(32, 1) == pytest.approx(16.5)
    assert prefill_steps_mean(64, 16) == pytest.approx(2.5)
    assert prefill_steps_mean(9, 8) == pytest.approx(10 / 9)


def test_the_benchmark_mean_blends_the_first_wave_with_the_later_ones() -> None:
    # k = 5 waves: (4.938 + 4 x 0.350) / 5 = 1.2676 s; one wave is the first wave alone
    assert ttft_rows.blend_waves(4.938, 0.350, 5) == pytest.approx(1.2676)
    assert ttft_rows.blend_waves(4.938, 0.350, 1) == pytest.approx(4.938)


def test_one_sequence_one_by_one_after_the_first_wave_waits_half_a_decode_step_more() -> None:
    # B = 1, n = 1, P_1 = 0.3 s, tau = 0.01 s, o = 0.02 s, one first-token iteration (ftl = tau), OSL 100, k = 5.
    # First wave: o + ftl + P_1 = 0.33 s. Later waves (decode-first steady state with one slot: no queue, the
    # wait's cap (B - 1) S is 0): o + ftl + tau / 2 + P_1 = 0.335 s. Blend: (0.33 + 4 x 0.335) / 5 = 0.334 s
    shape = ServingShape(per_replica=1, running=1, prompts_per_step=1, chunks=1)
    wl = Workload(kind="serving", isl=1000, osl=100, concurrency=1, request_overhead_s=0.02, benchmark_waves=5)
    kit = serving_kit(shape, wl, ServingPolicy(decode_first=False, first_token_iterations=1.0))
    assert ttft_rows.one_by_one_after_first_wave(kit, 0.3, 0.01) == pytest.approx(0.334)


@pytest.mark.slow
@needs_csv
def test_gpt_oss_on_trtllm_held_out_carries_its_neighbours_fixed_cost() -> None:
    # the pair refitted without gpt-oss-120b (DeepSeek and Llama-3.1-70B on TensorRT-LLM x B200) sets the fixed
    # TTFT cost o at about 3x the in-sample fit's: held out, the excess TTFT is o (benchmarks/README.md, stop 50)
    prepared, _ = accuracy_rows.prepare_all(accuracy_rows.load_rows(accuracy_rows.DEFAULT_CSV))
    row = next(p for p in prepared if p.framework == "trtllm" and p.hardware == "b200_sxm" and "gpt-oss" in p.model)
    held = ttft_rows.HeldOut(prepared).params(row)["request_overhead_s"]
    shipped = accuracy_rows.profile_params(row, accuracy_rows.load_factors())["request_overhead_s"]
    assert held > 2 * shipped
