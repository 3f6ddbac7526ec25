"""The disaggregated serving formulas (estimate.disagg.disagg_times) and the rate match, hand-computed."""
from __future__ import annotations

import pytest

from solver.estimate.disagg import disagg_times, pool_shape, workers_to_match


def shape(c: int, x: int = 1, rp: int = 1, n: int = 1, y: int = 1, rd: int = 1, cap: float = 1e9, mr: int = 0):
    return pool_shape(c, x, rp, n, y, rd, cap, mr)


def test_ratio_at_a_given_load() -> None:
    # 2 decode workers x 256 sequences at TPOT 50 ms, OSL 1000: 512 / (1000 x 0.05) = 10.24 requests/s;
    # a prefill worker starts 4 prompts every 0.5 s = 8 requests/s -> 2 workers (1 would carry 8 < 10.24)
    assert workers_to_match(2 * 256 / (1000 * 0.05), 4 / 0.5) == 2
    # exactly at capacity one worker is enough; at 80% target utilisation it takes two
    assert workers_to_match(8.0, 8.0) == 1
    assert workers_to_match(8.0, 8.0, utilization=0.8) == 2


def test_single_request_ttft_is_overhead_prefill_transfer_and_first_step() -> None:
    # one request, one wave: no wait; TTFT = o + P + T_kv + tau = 0.05 + 0.1 + 0.002 + 0.01
    t = disagg_times(shape(1), prefill_s=0.1, decode_s=0.01, transfer_s=0.002, concurrency=1, osl=11,
                     overhead_s=0.05, waves=1)
    assert t.ttft_s == pytest.approx(0.162)
    assert t.tpot_s == pytest.approx(0.01)
    assert t.request_s == pytest.approx(0.162 + 10 * 0.01)


def test_tpot_has_no_prefill_interference() -> None:
    fast = disagg_times(shape(64), 0.01, 0.02, 0.0, 64, 100, 0.0, 5)
    slow = disagg_times(shape(64), 1.0, 0.02, 0.0, 64, 100, 0.0, 5)
    assert fast.tpot_s == slow.tpot_s == pytest.approx(0.02)
    assert slow.ttft_s > fast.ttft_s


def test_first_wave_waits_for_the_prefill_steps_before_it() -> None:
    # 4 requests at once, 2 prefill slots per step (2 workers x 1 replica x 1 prompt): mean ceil(i/2) over
    # i = 1..4 is 1.5 steps of 0.1 s; one wave, no overhead, no transfer, tau 0.01
    t = disagg_times(shape(4, x=2), 0.1, 0.01, 0.0, 4, 2, 0.0, 1)
    assert t.ttft_first_wave_s == pytest.approx(0.15 + 0.01)
    assert t.ttft_s == pytest.approx(t.ttft_first_wave_s)


def test_more_prefill_workers_shorten_the_wait() -> None:
    one = disagg_times(shape(256, x=1, y=4, rd=8), 0.2, 0.03, 0.001, 256, 200, 0.0, 5)
    two = disagg_times(shape(256, x=2, y=4, rd=8), 0.2, 0.03, 0.001, 256, 200, 0.0, 5)
    assert two.prefill_utilization < one.prefill_utilization
    assert two.prefill_wait_s < one.prefill_wait_s
    assert two.ttft_s < one.ttft_s


def test_requests_beyond_the_decode_slots_wait_for_one() -> None:
    # 8 requests, one decode replica capped at 4 running: 4 wait a whole request time each turn
    capped = shape(8, cap=4)
    assert capped.running == 4 and capped.per_replica == 8
    t = disagg_times(capped, 0.01, 0.01, 0.0, 8, 11, 0.0, 1)
    assert t.slot_wait_s == pytest.approx((8 - 4) / 4 * (t.ttft_s - t.slot_wait_s + 10 * 0.01))


def test_engine_batch_caps_the_running_sequences() -> None:
    assert shape(1000, y=2, rd=4, mr=16).running == 16
    assert shape(1000, y=2, rd=4).running == 125
