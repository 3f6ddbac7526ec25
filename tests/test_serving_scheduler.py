"""The engines' scheduler policies on a tiny closed loop (solver/estimate/scheduler.py), cases computed by hand,
and the closed forms closed_loop.py uses checked against the simulation."""
from __future__ import annotations

import pytest

from solver.estimate.scheduler import LoopSpec, lockstep, simulate
from solver.estimate.serving import ServingPolicy, ServingShape, Workload, serving_times

# 4 clients, one rank with room for all, 2 prompts per prefill step of 0.1 s, decode steps of 0.01 s, 11 output
# tokens (the first from the prefill, then 10 decode steps)
TINY = LoopSpec(concurrency=4, replicas=1, slots=8, prompts_per_step=2, chunks=1, prefill_s=0.1, decode_s=0.01,
                osl=11, waves=1)


def test_prefill_first_prefills_the_whole_cohort_before_any_decode() -> None:
    # steps: prefill {0,1} ends 0.1, prefill {2,3} ends 0.2, then 10 decode steps: all four end at 0.3
    r = simulate(TINY, "prefill_first")
    assert r.ttft_s == pytest.approx((0.1 + 0.1 + 0.2 + 0.2) / 4)
    # requests 0, 1 wait one prefill step after their first token: (0.3 - 0.1) / 10; requests 2, 3: 0.1 / 10
    assert r.tpot_s == pytest.approx((0.02 + 0.02 + 0.01 + 0.01) / 4)
    assert r.makespan_s == pytest.approx(0.3)


def test_decode_first_runs_decodes_alongside_the_next_prompts() -> None:
    # step 1: prefill {0,1} (0.1, nothing to decode yet); step 2: prefill {2,3} + decode {0,1} (0.1 + 0.01) ends
    # 0.21; requests 0, 1 finish 9 decode steps later at 0.30, requests 2, 3 one step after at 0.31
    r = simulate(TINY, "decode_first")
    assert r.ttft_s == pytest.approx((0.1 + 0.1 + 0.21 + 0.21) / 4)
    assert r.tpot_s == pytest.approx(((0.30 - 0.1) / 10 * 2 + (0.31 - 0.21) / 10 * 2) / 4)


def test_prefill_first_keeps_cohorts_together_in_every_wave() -> None:
    one = simulate(TINY, "prefill_first")
    many = simulate(LoopSpec(**{**TINY.__dict__, "waves": 6}), "prefill_first")
    assert many.ttft_s == pytest.approx(one.ttft_s)
    assert many.tpot_s == pytest.approx(one.tpot_s)


def test_decode_first_spreads_cohorts_after_the_first_wave() -> None:
    spec = LoopSpec(concurrency=16, replicas=1, slots=16, prompts_per_step=2, chunks=1, prefill_s=0.1,
                    decode_s=0.01, osl=64, waves=1)
    one = simulate(spec, "decode_first")
    many = simulate(LoopSpec(**{**spec.__dict__, "waves": 8}), "decode_first")
    assert many.ttft_s < 0.6 * one.ttft_s  # staggered arrivals: a prompt waits about one step, not a burst


def test_lockstep_closed_form_is_the_simulation() -> None:
    for c, n, osl in ((4, 2, 11), (7, 3, 40), (1, 1, 2), (32, 8, 200)):
        spec = LoopSpec(concurrency=c, replicas=1, slots=c, prompts_per_step=n, chunks=1, prefill_s=0.12,
                        decode_s=0.015, osl=osl, overhead_s=0.03, first_token_s=0.015, waves=3)
        sim = simulate(spec, "prefill_first")
        ls = lockstep(c, n, 0.12, 0.015, osl - 1, osl, 0.015)
        assert sim.ttft_s == pytest.approx(0.03 + ls.ttft_s)
        assert sim.tpot_s == pytest.approx(ls.tpot_s)


def test_serving_times_prefill_first_is_the_lockstep_form() -> None:
    # C = 4, n = 2: TTFT = o + ftl + (0.1 + 0.2) / 2, TPOT as the simulation above
    wl = Workload("serving", isl=1024, osl=11, concurrency=4, request_overhead_s=0.05, benchmark_waves=5)
    t = serving_times(ServingShape(4, 4, 2, 1), 0.1, 0.01, wl, ServingPolicy(decode_first=False,
                                                                           first_token_iterations=1.0))
    assert t.ttft_s == pytest.approx(0.05 + 0.01 + 0.15)
    assert t.tpot_s == pytest.approx(0.015)
    assert t.first_token_delay_s == pytest.approx(0.01)


def test_serving_times_prefill_first_waits_whole_cohort_cycles_for_a_slot() -> None:
    # 8 requests, 4 slots, 4 waves: every request but the first cohort waits one cohort cycle (prefill 0.2 +
    # 10 decode steps 0.1) for a slot: 28 of 32 requests wait 0.3 s
    wl = Workload("serving", isl=1024, osl=11, concurrency=8, request_overhead_s=0.0, benchmark_waves=4)
    t = serving_times(ServingShape(8, 4, 2, 1), 0.1, 0.01, wl, ServingPolicy(decode_first=False))
    assert t.slot_wait_s == pytest.approx(28 / 32 * 0.3)
    assert t.ttft_s == pytest.approx(0.15 + 28 / 32 * 0.3)
    sim = simulate(LoopSpec(concurrency=8, replicas=1, slots=4, prompts_per_step=2, chunks=1, prefill_s=0.1,
                            decode_s=0.01, osl=11, waves=4), "prefill_first")
    assert sim.ttft_s == pytest.approx(t.ttft_s)


def test_decode_first_closed_form_tracks_the_simulations_tpot() -> None:
    # the steady-state form prices the prefills that ride in the decode steps as the loop does: within 10%
    for c, n, osl in ((32, 4, 256), (64, 8, 128), (128, 2, 512), (16, 16, 1024)):
        spec = LoopSpec(concurrency=c, replicas=1, slots=c, prompts_per_step=n, chunks=1, prefill_s=0.08,
                        decode_s=0.012, osl=osl, waves=5)
        sim = simulate(spec, "decode_first")
        wl = Workload("serving", isl=2048, osl=osl, concurrency=c, request_overhead_s=0.0, benchmark_waves=5)
        t = serving_times(ServingShape(c, c, n, 1), 0.08, 0.012, wl, ServingPolicy(decode_first=True))
        assert t.tpot_s == pytest.approx(sim.tpot_s, rel=0.10)


def test_jitter_rebunches_decode_first_groups() -> None:
    spec = LoopSpec(concurrency=32, replicas=1, slots=32, prompts_per_step=4, chunks=1, prefill_s=0.08,
                    decode_s=0.012, osl=256, waves=5)
    steady = simulate(spec, "decode_first")
    jittered = simulate(LoopSpec(**{**spec.__dict__, "jitter_s": 0.05}), "decode_first")
    assert jittered.ttft_s > steady.ttft_s + 0.025  # more than the jitter's own mean: arrivals queue again


def test_simulate_rejects_an_unknown_policy() -> None:
    with pytest.raises(ValueError):
        simulate(TINY, "fifo")


def test_serving_times_never_fall_when_a_step_gets_slower() -> None:
    # the planner's bounds rely on it: TPOT and request time are non-decreasing in both step times, TTFT in the
    # prefill step time (a slower decode can lower the steady-state TTFT: it lowers the prefill load)
    import random

    rng = random.Random(7)
    for _ in range(600):
        b = rng.choice([1, 2, 8, 64, 256, 1000])
        shape = ServingShape(b * rng.choice([1, 3]), b, min(b, rng.choice([1, 2, 8, 16])), rng.choice([1, 1, 3]),
                             rng.choice([1, 8]))
        wl = Workload("serving", isl=1000, osl=rng.choice([2, 3, 16, 1024, 8192]), concurrency=shape.per_replica,
                      mtp=rng.choice([0, 1, 3]), request_overhead_s=rng.choice([0.0, 0.1]),
                      benchmark_waves=rng.choice([1, 5]))
        policy = ServingPolicy(decode_first=rng.random() < 0.5, first_token_iterations=rng.choice([0, 1]))
        p, tau = 10 ** rng.uniform(-3, 1), 10 ** rng.uniform(-3.5, -0.5)
        t = serving_times(shape, p, tau, wl, policy)
        for slower, fields in (((p * 1.01, tau), ("ttft_s", "tpot_s", "request_s")),
                               ((p, tau * 1.01), ("tpot_s", "request_s"))):
            u = serving_times(shape, *slower, wl, policy)
            for name in fields:
                assert getattr(u, name) >= getattr(t, name) * (1 - 1e-9), (name, shape, wl, policy, p, tau)
