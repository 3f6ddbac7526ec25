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
