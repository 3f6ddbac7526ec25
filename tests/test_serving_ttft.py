"""The fixed TTFT cost, split: front end, the engine iteration before the first streamed token, and the eager
launch floor of the prefill step (closed_loop.py, engine_step.py)."""
from __future__ import annotations

import pytest

from solver.estimate.serving import ServingPolicy, ServingShape, Workload, serving_times
from solver.measured import predict_row

ROW = {"backend": "sglang", "model": "meta-llama/Llama-3.1-8B-Instruct", "system": "h200_sxm", "precision": "fp8",
       "isl": 1000, "osl": 500, "concurrency": 1, "tp": 1}


def test_ttft_at_concurrency_one_is_front_end_plus_prefill_plus_one_iteration() -> None:
    wl = Workload("serving", isl=1024, osl=64, concurrency=1, request_overhead_s=0.02)
    t = serving_times(ServingShape(1, 1, 1, 1), 0.05, 0.01, wl, ServingPolicy(decode_first=False,
                                                                           first_token_iterations=1))
    assert t.ttft_s == pytest.approx(0.02 + 0.05 + 0.01)
    assert t.tpot_s == pytest.approx(0.01)


def test_no_first_token_iteration_without_an_overlap_scheduler() -> None:
    wl = Workload("serving", isl=1024, osl=64, concurrency=1, request_overhead_s=0.02)
    t = serving_times(ServingShape(1, 1, 1, 1), 0.05, 0.01, wl, ServingPolicy(decode_first=False))
    assert t.ttft_s == pytest.approx(0.07)


def test_estimate_reports_the_split() -> None:
    est = predict_row(ROW)
    assert est.policy == "prefill_first"
    assert est.first_token_delay_s == pytest.approx(est.decode_step_s)  # SGLang: one overlap iteration
    assert est.ttft_s == pytest.approx(est.front_end_s + est.prefill_step_s + est.first_token_delay_s)


def _random_kit(rng):
    """A serving kit drawn over both policies, queued or not, chunked prompts, pipelines, several benchmark waves
    and slot waits (the TTFT floor's property tests)."""
    from solver.estimate.closed_loop import serving_kit

    conc = rng.choice([1, 2, 7, 64, 512])
    wl = Workload("serving", isl=rng.choice([128, 4096, 40000]), osl=rng.choice([2, 64, 1024]), concurrency=conc,
                  request_overhead_s=rng.choice([0.0, 0.05]), benchmark_waves=rng.choice([1, 3, 10]))
    running = rng.randint(1, conc)
    shape = ServingShape(conc, running, rng.randint(1, running), rng.choice([1, 3]), rng.choice([1, 4]),
                         traversal=rng.choice([1.0, 1.75]))
    policy = ServingPolicy(decode_first=rng.random() < 0.5, first_token_iterations=rng.choice([0.0, 1.0]))
    return serving_kit(shape, wl, policy)


def test_ttft_is_never_below_its_prefill_floor() -> None:
    """closed_loop.ttft_floor bounds TTFT from below at any decode step (the planner cuts a TTFT SLA on it):
    both policies, queued or not, chunked prompts, pipelines, several benchmark waves and slot waits."""
    import random

    from solver.estimate.closed_loop import serving_figures, serving_kit, ttft_floor

    rng = random.Random(11)
    for _ in range(2000):
        kit = _random_kit(rng)
        prefill_s = rng.uniform(1e-4, 2.0)
        for tau in (1e-5, 1e-3, 0.02, 0.3, 5.0):
            assert serving_figures(kit, prefill_s, tau)[0] >= ttft_floor(kit, prefill_s) * (1 - 1e-12), (kit, tau)
    # the floor is the figure itself where nothing but the prompt's own prefill waits: one request, lockstep
    kit = serving_kit(ServingShape(1, 1, 1, 1), Workload("serving", isl=1024, osl=64, concurrency=1,
                                                          request_overhead_s=0.02), ServingPolicy(decode_first=False))
    assert ttft_floor(kit, 0.05) == pytest.approx(serving_figures(kit, 0.05, 0.01)[0]) == pytest.approx(0.07)


def test_ttft_is_never_below_its_floor_at_both_steps_over_every_dominating_pair() -> None:
    """closed_loop.ttft_floor at (P_n, tau) bounds TTFT from below at every prefill step >= P_n and decode step >=
    tau (the planner cuts off every configuration dominating an answer whose floor misses a TTFT SLA): both
    policies, queued or not, chunked prompts, pipelines, several benchmark waves and slot waits; and at tau = 0
    it is the prefill-only floor, float for float."""
    import random

    from solver.estimate.closed_loop import serving_figures, serving_kit, ttft_floor

    rng = random.Random(12)
    for _ in range(1500):
        kit = _random_kit(rng)
        prefill_s, tau = rng.uniform(1e-4, 2.0), rng.choice([1e-5, 1e-3, 0.02, 0.3])
        floor = ttft_floor(kit, prefill_s, tau)
        assert ttft_floor(kit, prefill_s, 0.0) == ttft_floor(kit, prefill_s)
        for grow_p in (1.0, 1.001, 1.5, 4.0):
            for grow_t in (1.0, 1.001, 1.5, 4.0, 100.0):
                ttft = serving_figures(kit, prefill_s * grow_p, tau * grow_t)[0]
                assert ttft >= floor * (1 - 1e-12), (kit, prefill_s, tau, grow_p, grow_t)
    # the floor is the figure itself where nothing waits: one request, lockstep, one first-token iteration
    kit = serving_kit(ServingShape(1, 1, 1, 1), Workload("serving", isl=1024, osl=64, concurrency=1,
                                                          request_overhead_s=0.02),
                      ServingPolicy(decode_first=False, first_token_iterations=1))
    assert ttft_floor(kit, 0.05, 0.01) == pytest.approx(serving_figures(kit, 0.05, 0.01)[0]) == pytest.approx(0.08)
