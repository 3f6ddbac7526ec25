"""benchmarks/slot_waits.py: the running batch a measured TTFT implies is the one closed_loop.py's slot wait needs."""
from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from solver.estimate.serving import ServingPolicy, ServingShape, Workload, serving_times

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import slot_waits  # noqa: E402


def _row(per_replica: int, running: int, ttft_s: float, tpot_s: float, osl: int, waves: int = 5):
    """The parts of an accuracy.Prepared row implied_slots reads."""
    wl = Workload("serving", isl=1024, osl=osl, concurrency=per_replica, benchmark_waves=waves)
    shape = ServingShape(per_replica=per_replica, running=running, prompts_per_step=1, chunks=1)
    return SimpleNamespace(case=SimpleNamespace(workload=wl), shape=shape, ttft_s=ttft_s, tpot_s=tpot_s)


def test_implied_slots_hand_computed_closed_loop():
    # C_r 4, B 2, served 1 s, OSL 11 at TPOT 0.1 s: a slot serves a request for 1 + 10 x 0.1 = 2 s; two requests
    # wait for each slot, (4 - 2) / 2 x 2 s = 2 s, for all but the first 2 of the run's 5 x 4: x (1 - 2 / 20) = 1.8 s
    p = _row(per_replica=4, running=4, ttft_s=1.0 + 1.8, tpot_s=0.1, osl=11)
    assert slot_waits.implied_slots(p, served_s=1.0) == pytest.approx(2.0, rel=1e-9)


def test_implied_slots_inverts_serving_times_slot_wait():
    # decode-first closed loop at C_r 64 with 16 slots: the TTFT serving_times predicts gives back B 16
    shape = ServingShape(per_replica=64, running=16, prompts_per_step=4, chunks=1)
    wl = Workload("serving", isl=2048, osl=512, concurrency=64, request_overhead_s=0.05)
    t = serving_times(shape, prefill_s=0.4, decode_s=0.03, wl=wl, policy=ServingPolicy())
    assert t.slot_wait_s > 0
    p = _row(per_replica=64, running=16, ttft_s=t.ttft_s, tpot_s=t.tpot_s, osl=512)
    assert slot_waits.implied_slots(p, served_s=t.ttft_s - t.slot_wait_s) == pytest.approx(16.0, rel=1e-6)


def test_implied_slots_no_wait_when_measured_below_served():
    p = _row(per_replica=32, running=32, ttft_s=0.5, tpot_s=0.02, osl=100)
    assert slot_waits.implied_slots(p, served_s=0.8) == 32.0
