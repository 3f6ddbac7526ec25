"""Rules of serving at high concurrency: the engine's running cap, the graph-bucket eager fallback and a
benchmark that sends every prompt at once (one wave)."""
from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from solver.estimate.closed_loop import serving_shape, slot_wait_s
from solver.estimate.engine_step import graph_batch, launch_floor_s
from solver.estimate.serving import ServingPolicy, ServingShape, Workload, serving_times

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import published_rows  # noqa: E402


def test_a_batch_above_the_running_cap_waits_for_a_slot() -> None:
    """C 8 on one replica, room for 100 in the KV cache, max_running 4: B = min(8, 100, 4) = 4 run and 4 wait.
    Slot wait = (C_r - B) / B x request time x share of the run's k C_r = 2 x 8 requests that wait
    (1 - B / 16): (8 - 4) / 4 x 10 s x (1 - 4 / 16) = 1 x 10 x 0.75 = 7.5 s."""
    wl = Workload("serving", isl=100, osl=11, concurrency=8, max_running=4, benchmark_waves=2)
    shape = serving_shape(wl, replicas=1, kv_capacity_per_replica=100)
    assert (shape.per_replica, shape.running) == (8, 4)
    assert slot_wait_s(shape.running, shape.per_replica, 10.0, wl) == pytest.approx(7.5)


def test_without_a_running_cap_the_kv_cache_decides() -> None:
    """The same C 8 with room for 6 sequences and no cap: B = min(8, 6) = 6."""
    wl = Workload("serving", isl=100, osl=11, concurrency=8, benchmark_waves=2)
    assert serving_shape(wl, replicas=1, kv_capacity_per_replica=6).running == 6


def test_above_the_largest_graph_the_decode_runs_eagerly_at_its_own_size() -> None:
    """Captured sizes 1, 2, 4, 8, 512: 300 sequences pad to the 512 graph; 600 exceed it and run eagerly, 600 rows."""
    sizes = (1, 2, 4, 8, 512)
    assert graph_batch(300, sizes) == (512, False)
    assert graph_batch(600, sizes) == (600, True)


def test_an_eager_step_takes_at_least_its_kernel_launches() -> None:
    """1,000 kernels at 5 us of host launch each: an eager step lasts max(1 ms GPU, 1000 x 5 us = 5 ms) = 5 ms; the
    same step from a graph lasts its GPU time, 1 ms; a GPU time above the launches (8 ms) is unchanged."""
    f = SimpleNamespace(eager_launch_s=5e-6)
    assert launch_floor_s(1e-3, 1000, True, f) == pytest.approx(5e-3)
    assert launch_floor_s(1e-3, 1000, False, f) == pytest.approx(1e-3)
    assert launch_floor_s(8e-3, 1000, True, f) == pytest.approx(8e-3)


def test_a_burst_run_is_its_first_wave() -> None:
    """All B = 4 prompts sent at once, n = 2 per prefill step of P_n = 1 s, no fixed cost: request i waits
    ceil(i / 2) steps, mean (1 + 1 + 2 + 2) / 4 = 1.5 steps = 1.5 s. One wave (k = 1): TTFT is that first wave;
    five waves blend it 1 : 4 with the steady state, which is shorter here."""
    shape = ServingShape(per_replica=4, running=4, prompts_per_step=2, chunks=1)
    policy = ServingPolicy(decode_first=True, first_token_iterations=0.0)
    one = Workload("serving", isl=100, osl=11, concurrency=4, benchmark_waves=1, request_overhead_s=0.0)
    t1 = serving_times(shape, 1.0, 0.1, one, policy)
    assert t1.ttft_first_wave_s == pytest.approx(1.5)
    assert t1.ttft_s == pytest.approx(1.5)
    five = serving_times(shape, 1.0, 0.1, Workload("serving", isl=100, osl=11, concurrency=4, benchmark_waves=5,
                                                    request_overhead_s=0.0), policy)
    assert five.ttft_s == pytest.approx((1.5 + 4 * five.ttft_steady_s) / 5)
    assert five.ttft_s < t1.ttft_s


def test_the_sharegpt_rows_send_their_prompts_in_one_burst() -> None:
    """#12's benchmark_serving sends --num-prompts 1000 at --request-rate inf: C = 1000 in flight, one wave."""
    rows = [p for p in published_rows.PUBLISHED if p.source_row == 12]
    assert len(rows) == 4
    for pub in rows:
        _, wl, note = published_rows.published_case(pub)
        assert (wl.concurrency, wl.benchmark_waves) == (published_rows.SHAREGPT_PROMPTS, 1)
        assert "one wave" in note
