"""The disaggregated serving formulas (estimate.disagg.disagg_times) and the rate match, hand-computed."""
from __future__ import annotations

import math

import pytest

from solver.estimate.disagg import closed_loop_rate, disagg_times, pool_shape, prefill_queue_wait, workers_to_match


def shape(c: int, x: int = 1, rp: int = 1, n: int = 1, y: int = 1, rd: int = 1, cap: float = 1e9, mr: int = 0):
    return pool_shape(c, x, rp, n, y, rd, cap, mr)


def test_ratio_at_a_given_load() -> None:
    # 2 decode workers x 256 sequences at TPOT 50 ms, OSL 1000: 512 / (1000 x 0.05) = 10.24 requests/s;
    # a prefill worker starts 4 prompts every 0.5 s = 8 requests/s -> 2 workers (1 would carry 8 < 10.24)
    assert workers_to_match(2 * 256 / (1000 * 0.05), 4 / 0.5) == 2
    # exactly at capacity one worker is enough; at 80% target utilisation it takes two
    assert workers_to_match(8.0, 8.0) == 1
    assert workers_to_match(8.0, 8.0, utilization=0.8) == 2


def test_single_request_ttft_is_overhead_prefill_transfer_and_decode_admission() -> None:
    # one request, one wave: no wait; TTFT = o + P + T_kv + 1.5 tau (half a step until the decode batch takes it,
    # then its first step) = 0.05 + 0.1 + 0.002 + 0.015
    t = disagg_times(shape(1), prefill_s=0.1, decode_s=0.01, transfer_s=0.002, concurrency=1, osl=11,
                     overhead_s=0.05, waves=1)
    assert t.ttft_s == pytest.approx(0.167)
    assert t.tpot_s == pytest.approx(0.01)
    assert t.request_s == pytest.approx(0.167 + 10 * 0.01)


def test_first_token_iterations_of_the_decode_engine_add_to_ttft() -> None:
    # the same request with one overlap-scheduler iteration before the token streams: 0.167 + 0.01
    t = disagg_times(shape(1), 0.1, 0.01, 0.002, 1, 11, 0.05, 1, first_token_iterations=1.0)
    assert t.ttft_s == pytest.approx(0.177)
    assert t.first_decode_s == pytest.approx(0.025)


def test_burst_share_weights_the_first_wave_against_the_steady_state() -> None:
    # 4 requests at once, 1 prefill slot of 0.1 s: first wave mean ceil(i/1) = 2.5 steps; k = 5 waves
    base = disagg_times(shape(4), 0.1, 0.01, 0.0, 4, 2, 0.0, 5)
    every = disagg_times(shape(4), 0.1, 0.01, 0.0, 4, 2, 0.0, 5, burst_share=1.0)
    none = disagg_times(shape(4), 0.1, 0.01, 0.0, 4, 2, 0.0, 5, burst_share=0.0)
    assert every.ttft_s == pytest.approx(every.ttft_first_wave_s)  # every wave re-forms the burst
    assert none.ttft_s == pytest.approx(none.ttft_steady_s)
    assert base.ttft_s == pytest.approx((base.ttft_first_wave_s + 4 * base.ttft_steady_s) / 5)  # default 1 / k


def test_decode_runs_the_batch_padded_to_its_cuda_graph() -> None:
    graphs = (1, 2, 4, 8, 16)
    s = pool_shape(11, 1, 1, 1, 1, 1, 1e9, 0, graphs)
    assert (s.running, s.graph_batch, s.eager_decode) == (11, 16, False)
    past = pool_shape(40, 1, 1, 1, 1, 1, 1e9, 0, graphs)
    assert (past.running, past.graph_batch, past.eager_decode) == (40, 40, True)


def test_tpot_has_no_prefill_interference() -> None:
    fast = disagg_times(shape(64), 0.01, 0.02, 0.0, 64, 100, 0.0, 5)
    slow = disagg_times(shape(64), 1.0, 0.02, 0.0, 64, 100, 0.0, 5)
    assert fast.tpot_s == slow.tpot_s == pytest.approx(0.02)
    assert slow.ttft_s > fast.ttft_s


def test_first_wave_waits_for_the_prefill_steps_before_it() -> None:
    # 4 requests at once, 2 prefill slots per step (2 workers x 1 replica x 1 prompt): mean ceil(i/2) over
    # i = 1..4 is 1.5 steps of 0.1 s; one wave, no overhead, no transfer, tau 0.01
    t = disagg_times(shape(4, x=2), 0.1, 0.01, 0.0, 4, 2, 0.0, 1)
    assert t.ttft_first_wave_s == pytest.approx(0.15 + 0.015)
    assert t.ttft_s == pytest.approx(t.ttft_first_wave_s)


def test_more_prefill_workers_shorten_the_wait() -> None:
    # 32 clients, cycle Z = 0.2 + 0.001 + 1.5 x 0.03 + 199 x 0.03 = 6.216 s -> at most 5.15 requests/s wanted
    # against mu = 5 (one worker) or 10 (two) per second. One: 5 rho (6.216 + 0.1 rho / (1 - rho)) = 32 at
    # rho = 0.8997 (the M/D/1 wait 0.897 s); two: 10 rho (6.216 + 0.1 rho / (1 - rho)) = 32 at rho = 0.5064
    one = disagg_times(shape(32, x=1, y=4, rd=8), 0.2, 0.03, 0.001, 32, 200, 0.0, 5)
    two = disagg_times(shape(32, x=2, y=4, rd=8), 0.2, 0.03, 0.001, 32, 200, 0.0, 5)
    assert one.prefill_utilization == pytest.approx(0.8997, abs=1e-4)
    assert two.prefill_utilization == pytest.approx(0.5064, abs=1e-4)
    for t in (one, two):  # Little's law over the loop
        assert t.request_rate * (6.216 + t.prefill_wait_s) == pytest.approx(32)
    assert two.prefill_wait_s < one.prefill_wait_s
    assert two.ttft_s < one.ttft_s


def test_prefill_queue_wait_is_the_ranks_md1_queue_plus_the_workers_shared_step() -> None:
    # rho 0.5, steps of 0.2 s: the rank's M/D/1 queue waits 0.5 x 0.2 / (2 x 0.5) = 0.1 s; with 4 ranks stepping
    # together, an arrival at its idle rank (probability 0.5) finds the worker stepping for the others with
    # probability 1 - 0.5^3 = 0.875 and waits half a step: + 0.5 x 0.875 x 0.1 = 0.04375 s
    assert prefill_queue_wait(0.5, 0.2, 1) == pytest.approx(0.1)
    assert prefill_queue_wait(0.5, 0.2, 4) == pytest.approx(0.14375)
    assert prefill_queue_wait(0.0, 0.2, 4) == 0.0
    assert prefill_queue_wait(1.0, 0.2, 1) == math.inf


def test_closed_loop_rate_solves_littles_law_over_the_loop() -> None:
    # 2 clients, cycle 0.3 s, one rank of 1 prompt per 0.1 s step (mu = 10/s): lambda (0.3 + W(lambda / 10)) = 2
    # with W = rho 0.1 / (2 (1 - rho)) is lambda^2 - 20 lambda + 80 = 0: lambda = 10 - sqrt(20) = 5.5279 /s,
    # W = 0.061803 s
    lam = closed_loop_rate(2, 0.3, 10.0, 0.1, 1)
    assert lam == pytest.approx(10 - math.sqrt(20))
    assert lam * (0.3 + prefill_queue_wait(lam / 10, 0.1, 1)) == pytest.approx(2.0)


def test_later_waves_queue_at_the_loops_rate_and_the_first_is_a_burst() -> None:
    # the case above as a pool: o 5 ms, P 0.1 s, tau 10 ms (admission 15 ms), OSL 19 (18 x 10 ms): Z = 0.3 s;
    # steady TTFT = 0.12 + 0.061803; first wave of 2 on one slot: 5 ms + 1.5 x 0.1 + 15 ms = 0.17 s;
    # k = 5 waves: (0.17 + 4 x 0.181803) / 5
    t = disagg_times(shape(2), 0.1, 0.01, 0.0, 2, 19, 0.005, 5)
    assert t.prefill_wait_s == pytest.approx(0.061803, abs=1e-6)
    assert t.ttft_steady_s == pytest.approx(0.181803, abs=1e-6)
    assert t.ttft_first_wave_s == pytest.approx(0.17)
    assert t.ttft_s == pytest.approx((0.17 + 4 * 0.181803) / 5, abs=1e-6)
    assert t.request_rate == pytest.approx(10 - math.sqrt(20))


def test_a_saturated_prefill_pool_queues_what_it_cannot_start() -> None:
    # 100 clients, cycle Z = 0.5 prefill + 0.015 admission and first step + 10 x 0.01 = 0.615 s -> 163
    # requests/s wanted, mu = 1 / 0.5 = 2 per second: the loop runs at (just under) 2 per second, the wait tends
    # to 100 / 2 - 0.615 s (M/D/1 at the root: 1 - rho = 0.25 / (50 - 0.615) -> lambda = 1.990)
    t = disagg_times(shape(100), 0.5, 0.01, 0.0, 100, 11, 0.0, 5)
    assert t.request_rate == pytest.approx(2.0, rel=0.01)
    assert t.prefill_wait_s == pytest.approx(100 / 2 - 0.615, rel=0.01)
    assert t.prefill_wait_s > 100 / 2 - 0.615


def test_requests_beyond_the_decode_slots_wait_for_one() -> None:
    # 8 requests, one decode replica capped at 4 running: 4 wait a whole request time each turn
    capped = shape(8, cap=4)
    assert capped.running == 4 and capped.per_replica == 8
    t = disagg_times(capped, 0.01, 0.01, 0.0, 8, 11, 0.0, 1)
    assert t.slot_wait_s == pytest.approx((8 - 4) / 4 * (t.ttft_s - t.slot_wait_s + 10 * 0.01))


def test_engine_batch_caps_the_running_sequences() -> None:
    assert shape(1000, y=2, rd=4, mr=16).running == 16
    assert shape(1000, y=2, rd=4).running == 125


def test_the_decode_pool_pays_the_per_layer_sequence_cost_of_its_own_layout() -> None:
    # Llama-3.1-70B (80 layers), decode TP8 without graphs: 64 running sequences x 80 layers x 1 us = 5.12 ms
    # more per decode step; TPOT is the decode step alone (no MTP)
    from dataclasses import replace

    from solver.estimate.compute import factors_for
    from solver.estimate.disagg import DisaggWorkload, estimate_disagg
    from solver.specs.hardware_catalog import load_hardware
    from solver.specs.model_catalog import load_model
    from solver.specs.parallel import make_parallel_config
    from solver.specs.precision import resolve_precision

    m, hw = load_model("meta-llama/Meta-Llama-3.1-70B"), load_hardware("h100_sxm")
    tp8 = make_parallel_config(8, attn_tp_size=8, dense_tp_size=8, embed_tp_size=8, lmhead_tp_size=8, moe_tp_size=8)
    prec = resolve_precision(m, hw, "fp8", None, None)
    f = replace(factors_for(hw, {}), graph_sizes=(), seq_overhead_s=0.0, seq_layer_s=0.0)
    wl = DisaggWorkload(isl=1024, osl=1024, concurrency=64, prefill_workers=1, decode_workers=1)
    base = estimate_disagg(m, hw, tp8, tp8, prec, f, f, wl)
    g = replace(f, seq_layer_s=1e-6)
    more = estimate_disagg(m, hw, tp8, tp8, prec, f, g, wl)
    assert base.shape.running == 64
    assert more.tpot_s - base.tpot_s == pytest.approx(64 * 80 * 1e-6, rel=1e-9)


def test_the_front_end_cost_on_ttft_is_the_prefill_servers() -> None:
    # the request enters at the prefill server (HTTP, tokenizer, router): its request_overhead_s is on the TTFT
    # path; the decode server's is not. One request, one wave: TTFT moves by the prefill side's 0.2 s exactly.
    from dataclasses import replace

    from solver.estimate.compute import factors_for
    from solver.estimate.disagg import DisaggWorkload, estimate_disagg
    from solver.specs.hardware_catalog import load_hardware
    from solver.specs.model_catalog import load_model
    from solver.specs.parallel import make_parallel_config
    from solver.specs.precision import resolve_precision

    m, hw = load_model("meta-llama/Meta-Llama-3.1-70B"), load_hardware("h100_sxm")
    tp8 = make_parallel_config(8, attn_tp_size=8, dense_tp_size=8, embed_tp_size=8, lmhead_tp_size=8, moe_tp_size=8)
    prec = resolve_precision(m, hw, "fp8", None, None)
    f = replace(factors_for(hw, {}), request_overhead_s=0.1)
    wl = DisaggWorkload(isl=1024, osl=16, concurrency=1, benchmark_waves=1)
    base = estimate_disagg(m, hw, tp8, tp8, prec, f, f, wl)
    slow_front = estimate_disagg(m, hw, tp8, tp8, prec, replace(f, request_overhead_s=0.3), f, wl)
    slow_decode = estimate_disagg(m, hw, tp8, tp8, prec, f, replace(f, request_overhead_s=0.3), wl)
    assert slow_front.ttft_s - base.ttft_s == pytest.approx(0.2, rel=1e-9)
    assert slow_decode.ttft_s == pytest.approx(base.ttft_s, rel=1e-12)
