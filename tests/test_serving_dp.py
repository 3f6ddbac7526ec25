"""Attention-DP ranks step together: a prefill on any rank stalls every rank's decode (scheduler.py,
closed_loop.py), with hand-computed cases."""
from __future__ import annotations

import pytest

from solver.estimate.scheduler import LoopSpec, simulate
from solver.estimate.serving import (ServingPolicy, ServingShape, Workload, serving_shape, serving_times,
                                    synced_ranks)
from solver.specs.model_catalog import load_model
from solver.specs.parallel import make_parallel_config


def test_a_prefill_on_one_rank_stalls_the_other_ranks_decode() -> None:
    # 2 ranks, 3 clients: requests 0, 2 go to rank 0, request 1 to rank 1 (round robin); one prompt per step
    # (0.1 s), decode steps 0.01 s, OSL 3 (two decode steps). Step 1 prefills 0 and 1 together (0.1); step 2
    # prefills 2 on rank 0 while rank 1 decodes 1: the step lasts 0.1 + 0.01 on both ranks (ends 0.21);
    # step 3 decodes: 0 and 1 finish at 0.22; request 2 finishes one step later at 0.23.
    spec = LoopSpec(concurrency=3, replicas=2, slots=4, prompts_per_step=1, chunks=1, prefill_s=0.1,
                    decode_s=0.01, osl=3, waves=1)
    r = simulate(spec, "decode_first")
    assert r.ttft_s == pytest.approx((0.1 + 0.1 + 0.21) / 3)
    # request 1 never prefills again on its rank, yet its two tokens took 0.12 s, not 0.02 s
    assert r.tpot_s == pytest.approx(((0.22 - 0.1) / 2 * 2 + (0.23 - 0.21) / 2) / 3)


def test_independent_replicas_do_not_stall_each_other() -> None:
    # rank 1 alone (its one request): 0.1 prefill, then two 0.01 decode steps
    alone = simulate(LoopSpec(concurrency=1, replicas=1, slots=4, prompts_per_step=1, chunks=1, prefill_s=0.1,
                              decode_s=0.01, osl=3, waves=1), "decode_first")
    assert alone.tpot_s == pytest.approx(0.01)


def test_the_busiest_rank_decides_a_synchronised_group() -> None:
    # 9 clients on 8 synchronised ranks: one rank holds 2 requests and every rank's steps last as long as its
    synced = simulate(LoopSpec(concurrency=9, replicas=8, slots=4, prompts_per_step=1, chunks=1, prefill_s=0.1,
                               decode_s=0.01, osl=3, waves=1), "prefill_first")
    busiest = simulate(LoopSpec(concurrency=2, replicas=1, slots=4, prompts_per_step=1, chunks=1, prefill_s=0.1,
                                decode_s=0.01, osl=3, waves=1), "prefill_first")
    # first tokens at 0.1 (eight requests) and 0.2 (the busiest rank's second); all decode after 0.2
    assert synced.ttft_s == pytest.approx((8 * 0.1 + 0.2) / 9)
    assert synced.makespan_s == pytest.approx(busiest.makespan_s)
    est = serving_shape(Workload("serving", isl=1024, osl=3, concurrency=9, token_budget=1024), 8, 100.0, 8)
    assert est.per_replica == 2 and est.synced_ranks == 8


def test_moe_ranks_synchronise_and_dense_replicas_do_not() -> None:
    pc = make_parallel_config(8, attn_tp_size=1, moe_tp_size=1, dense_tp_size=1, embed_tp_size=1,
                              lmhead_tp_size=1)
    assert synced_ranks(load_model("deepseek-ai/DeepSeek-V3"), pc) == 8
    assert synced_ranks(load_model("meta-llama/Llama-3.1-8B-Instruct"), pc) == 1


def test_the_closed_loop_keeps_synchronised_ranks_prefilling_in_the_same_steps() -> None:
    # 2 ranks, one client each, OSL 3, prefill 0.1 s, decode 0.01 s. Wave 1: both prompts in step 1 (0.1 s:
    # the longest rank, not the sum), two decode steps, both finish at 0.12 and their clients send together:
    # wave 2 prefills both in 0.12-0.22. No decode step ever carries the other rank's prefill.
    r = simulate(LoopSpec(concurrency=2, replicas=2, slots=4, prompts_per_step=1, chunks=1, prefill_s=0.1,
                          decode_s=0.01, osl=3, waves=2), "decode_first")
    assert r.ttft_s == pytest.approx(0.1)
    assert r.tpot_s == pytest.approx(0.01)
    assert r.makespan_s == pytest.approx(0.24)


def test_a_synchronised_group_carries_the_busiest_ranks_prefill_load_not_a_chunk_per_step() -> None:
    # 64 ranks x 8 sequences, one prompt costs 1.32 s, decode 30 ms, OSL 256. Ranks prefilling at independent
    # times would put a prompt in 1 - (1 - 8/255)^64 = 87% of the steps: TPOT ~ 0.03 + 0.87 x 1.32 = 1.18 s.
    # The loop aligns them (46 ms); the closed form is one rank's steady state, tau / (1 - rho).
    sim = simulate(LoopSpec(concurrency=512, replicas=64, slots=8, prompts_per_step=2, chunks=1, prefill_s=2.64,
                            decode_s=0.03, osl=256, waves=5, overhead_s=0.1), "decode_first")
    assert sim.tpot_s < 0.03 + 0.05 * 1.32
    wl = Workload("serving", isl=4096, osl=256, concurrency=512, request_overhead_s=0.1)
    synced = serving_times(ServingShape(8, 8, 2, 1, 64), 2.64, 0.03, wl, ServingPolicy(decode_first=True))
    alone = serving_times(ServingShape(8, 8, 2, 1, 1), 2.64, 0.03, wl, ServingPolicy(decode_first=True))
    assert synced.tpot_s == pytest.approx(alone.tpot_s)
    assert synced.tpot_s == pytest.approx(sim.tpot_s, rel=0.5)


def test_a_saturated_budget_queues_the_loops_other_requests() -> None:
    # 16 sequences, one prompt per step (0.1 s) beside a 0.01 s decode, OSL 2: every step carries a prompt
    # (0.11 s), a request's cycle is 16 steps (1.76 s) of which one decodes: steady TTFT 1.65 s, TPOT 0.11 s
    wl = Workload("serving", isl=1024, osl=2, concurrency=16, request_overhead_s=0.0)
    t = serving_times(ServingShape(16, 16, 1, 1), 0.1, 0.01, wl, ServingPolicy(decode_first=True))
    assert t.tpot_s == pytest.approx(0.11)
    assert t.ttft_steady_s == pytest.approx(16 * 0.11 - 0.11)
