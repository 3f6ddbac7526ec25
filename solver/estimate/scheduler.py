"""The engine's scheduler on the closed-loop serving benchmark: a deterministic simulation and the closed forms
closed_loop.py evaluates.

The benchmark (as the calibration rows were measured): C clients each keep one request in flight; a client
sends its next request the moment the previous one's last token arrives; the run sends N = k x C requests of
fixed ISL / OSL and reports the mean TTFT and the mean TPOT = (last token - first token) / (OSL - 1).

The deployment is R attention-DP ranks that step together: with MoE, every forward step ends in the expert
all-to-all, so a step lasts as long as its slowest rank, and a rank with nothing to do runs an idle step.
Requests go to ranks round-robin in arrival order and stay there. Each rank holds at most B running sequences
(KV capacity, max_num_seqs) and takes at most n prompts of ISL tokens per step (n = budget // ISL, the
framework's token budget; a longer prompt takes `chunks` = ceil(ISL / budget) steps).

Step times (seconds, per rank, from the step-cost model): P_n a prefill step of n prompts (k < n prompts cost
P_n k / n), tau a decode step of the running batch. Two scheduler policies:

- prefill_first (SGLang, TRT-LLM context batches): while prompts wait on any rank, the next step prefills them
  (up to n per rank) and no rank decodes; otherwise every rank decodes one token for all its running sequences.
- decode_first (vLLM V1): every step decodes all running sequences and fills the rest of the token budget with
  waiting prompts (a long prompt in chunks); the step costs tau plus the slowest rank's prefill share.

`o` (front end: HTTP, tokenizer, hand-off) delays a request's arrival at the scheduler; `ftl` (the engine
iterations before a token is streamed: an overlap scheduler emits step i's tokens during step i+1) delays every
token the client sees, so it adds to TTFT and to the loop's cycle but not to TPOT.

What the simulation shows, and the closed forms use (tests/test_serving_scheduler.py checks both against it):

- prefill_first keeps cohorts together. The C_r = ceil(C / R) requests of the busiest rank arrive at once,
  are prefilled in G = ceil(C_r / n) back-to-back steps, decode in lockstep and finish on the same step, so
  the next wave is the same: every wave has

      TTFT = o + ftl + sum_{j <= g} P_j            for the requests of prefill step g (mean over g)
      TPOT = (sum_{j > g} P_j + D tau) / (OSL - 1)  D = ceil((OSL - 1) / m) decode steps (m tokens per step)

  whatever k is: TTFT grows linearly with C_r, not with a queue's load.
- decode_first mixes: a prompt joins the next step beside the decodes, so the prefills stretch every running
  request's TPOT instead of holding its TTFT. Deterministically the first wave's groups of n persist (they
  finish one decode step apart and are prefilled one step apart again; `jitter_s` re-bunches them into bursts).
  closed_loop.py's closed form is the steady state of requests arriving one by one (M/D/1 on the prefill share,
  counted over the DP group: a prompt on any rank stretches every rank's step) blended with the first-wave
  burst: it matches the simulation's TPOT (tests) and the measured vLLM rows better than persistent groups do
  (in-sample TTFT median 13% against 33%), not the deterministic simulation's TTFT.
"""
from __future__ import annotations

import heapq
import math
from collections import deque
from dataclasses import dataclass

POLICIES = ("prefill_first", "decode_first")
GOLDEN = 0.6180339887498949  # i x golden ratio mod 1: evenly spread jitter without a random generator


@dataclass(frozen=True)
class LoopSpec:
    """One closed-loop benchmark run on one DP group (symbols as in the module docstring; seconds)."""

    concurrency: int  # C, clients over the whole DP group
    replicas: int  # R attention-DP ranks stepping together
    slots: int  # B running sequences per rank
    prompts_per_step: int  # n
    chunks: int  # steps one prompt's prefill takes (n = 1 when > 1)
    prefill_s: float  # P_n
    decode_s: float  # tau
    osl: int
    tokens_per_step: float = 1.0  # m (MTP)
    overhead_s: float = 0.0  # o
    first_token_s: float = 0.0  # ftl
    waves: int = 5  # k
    jitter_s: float = 0.0  # request i's front end takes o + jitter x u_i, u_i in [0, 1) (a fixed low-discrepancy
    # sequence, so runs stay deterministic): the spread real clients and tokenizers add


@dataclass(frozen=True)
class LoopResult:
    ttft_s: float  # mean over all requests
    tpot_s: float
    requests: int
    makespan_s: float


@dataclass
class _Req:
    send: float
    rank: int
    arrive: float
    left_chunks: int = 0
    first: float = -1.0
    done: float = -1.0


def simulate(spec: LoopSpec, policy: str) -> LoopResult:
    """Run the closed loop request by request (pure-decode stretches are skipped in bulk). Deterministic."""
    if policy not in POLICIES:
        raise ValueError(f"policy must be one of {POLICIES}, got {policy!r}")
    R, C, B, n = spec.replicas, spec.concurrency, spec.slots, spec.prompts_per_step
    total = spec.waves * C
    decode_steps = max(0, math.ceil((spec.osl - 1) / spec.tokens_per_step - 1e-9))
    per_prompt = spec.prefill_s / n  # cost of one prompt in a prefill step (chunks: of all its chunks)
    reqs: list[_Req] = []
    arrivals: list[tuple[float, int]] = []  # (arrival at the scheduler, request id)
    waiting: list[deque[int]] = [deque() for _ in range(R)]
    prefilling: list[list[int]] = [[] for _ in range(R)]  # admitted, prompt not finished
    running = [0] * R  # sequences holding a slot (prefilling or decoding)
    finish: list[tuple[int, int]] = []  # (decode-step counter at which it is done, id)
    decoding = 0
    counter = 0  # decode steps run so far (every running sequence advances once per decode step)
    now = 0.0
    sent = 0
    rr = 0

    def send(t: float) -> None:
        nonlocal sent, rr
        i = len(reqs)
        front = spec.overhead_s + spec.jitter_s * ((i * GOLDEN) % 1.0)
        reqs.append(_Req(t, rr % R, t + front, spec.chunks))
        rr += 1
        sent += 1
        heapq.heappush(arrivals, (t + front, i))

    for _ in range(C):
        send(0.0)
    finished = 0
    while finished < total:
        while arrivals and arrivals[0][0] <= now + 1e-15:
            _, i = heapq.heappop(arrivals)
            waiting[reqs[i].rank].append(i)
        for r in range(R):  # admit into free slots (FIFO)
            while waiting[r] and running[r] < B:
                prefilling[r].append(waiting[r].popleft())
                running[r] += 1
        has_prefill = any(prefilling)
        if not has_prefill and not decoding:
            now = arrivals[0][0]  # idle until the next request arrives
            continue
        done_prompts: list[int] = []
        if has_prefill:
            worst = 0.0
            for r in range(R):
                take = prefilling[r][:n] if spec.chunks == 1 else prefilling[r][:1]
                cost = per_prompt * len(take) / (spec.chunks if spec.chunks > 1 else 1)
                worst = max(worst, cost)
                for i in take:
                    reqs[i].left_chunks -= 1
                    if reqs[i].left_chunks <= 0:
                        done_prompts.append(i)
                        prefilling[r].remove(i)
            step = worst
            if policy == "decode_first" and decoding:
                step += spec.decode_s
                counter += 1
            elif policy == "prefill_first":
                pass  # no rank decodes during a prefill step
        else:
            # pure decode: skip ahead to the next completion or the next arrival, whichever is sooner
            skip = finish[0][0] - counter
            if arrivals:
                skip = min(skip, max(1, math.ceil((arrivals[0][0] - now) / spec.decode_s - 1e-12)))
            skip = max(1, skip)
            step = skip * spec.decode_s
            counter += skip
        now += step
        for i in done_prompts:
            reqs[i].first = now
            heapq.heappush(finish, (counter + decode_steps, i))
            decoding += 1
        while finish and finish[0][0] <= counter:
            _, i = heapq.heappop(finish)
            reqs[i].done = now
            decoding -= 1
            running[reqs[i].rank] -= 1
            finished += 1
            if sent < total:
                send(now + spec.first_token_s)  # the client sees the last token ftl later, then sends
    ttft = [q.first + spec.first_token_s - q.send for q in reqs]  # the jittered front end counts in TTFT
    tpot = [tpot_of((q.done - q.first) / max(1, spec.osl - 1), spec.osl) for q in reqs]
    return LoopResult(sum(ttft) / len(ttft), sum(tpot) / len(tpot), len(reqs), now)


def tpot_of(gap_s: float, osl: int) -> float:
    """TPOT [s]: the mean gap between a request's output tokens, `gap_s` (a decode step per token emitted, or a
    request's decode time over its OSL - 1 gaps), or 0 where OSL = 1: no token follows the first, so there is no
    gap (every engine and path says 0 there, the event loop, lockstep and the closed loop alike; the request time
    is TTFT alone, and a TPOT SLA is met trivially)."""
    return gap_s if osl > 1 else 0.0


def prefill_steps_mean(requests: int, per_step: int) -> float:
    """mean over i = 1..requests of ceil(i / per_step): prefill steps request i waits for in a burst."""
    full, rest = divmod(requests, per_step)
    total = per_step * full * (full + 1) / 2 + rest * (full + 1)
    return total / requests


@dataclass(frozen=True)
class Lockstep:
    """prefill_first closed form (module docstring), per cohort of `cohort` requests on the busiest rank."""

    ttft_s: float  # mean, one cohort, no slot wait
    tpot_s: float
    cycle_s: float  # one cohort from arrival at the scheduler to its last token leaving the engine


def lockstep(cohort: int, n: int, prefill_s: float, decode_s: float, decode_steps: float, osl: int,
             first_token_s: float) -> Lockstep:
    """A cohort of `cohort` requests arriving together on a rank that prefills n per step (P_n each full step,
    P_n k / n a last step of k) and then decodes them in lockstep for `decode_steps` steps of tau."""
    full, rest = divmod(cohort, n)
    steps = [prefill_s] * full + ([prefill_s * rest / n] if rest else [])
    sizes = [n] * full + ([rest] if rest else [])
    t, ready = 0.0, 0.0  # ready: sum over requests of their first-token time
    for p, k in zip(steps, sizes):
        t += p
        ready += k * t
    prefill_total = t
    mean_first = ready / cohort
    decode_total = decode_steps * decode_s
    tpot = tpot_of((prefill_total - mean_first + decode_total) / max(1, osl - 1), osl)
    return Lockstep(mean_first + first_token_s, tpot, prefill_total + decode_total)


__all__ = ["LoopSpec", "LoopResult", "simulate", "lockstep", "Lockstep", "prefill_steps_mean", "tpot_of", "POLICIES"]
