"""The closed-loop serving formulas: TTFT and TPOT of aggregated serving from the step times.

Aggregated serving at concurrency C with fixed ISL/OSL is measured the way benchmark clients do it: a closed
loop keeps C requests in flight and a run sends N = k x C requests (k = `benchmark_waves`, workload.py).

Aggregated serving model (per attention replica; symbols with units; scheduler.py has the benchmark loop, its
simulation and the derivation of the closed forms used here):

    R     = attention-DP ranks that step together (MoE models: the expert all-to-all synchronises them; dense
            replicas are independent, R = 1)
    C_r   = ceil(C / replicas)                       requests in flight on the busiest replica
    B     = min(C_r, B_kv, max_running)              running sequences; B_kv = KV-cache capacity (memory.py)
    n     = clamp(floor(room / U), 1, B)             prompts per prefill step; U = the prompt's tokens not in the
                                                     prefix cache (ISL at no hit, Workload.prompt_tokens);
                                                     room = the budget (the scheduler's
                                                     tokens per forward step: the one the framework's command
                                                     sets, else its default, workload.token_budget), less the
                                                     other B - 1 sequences' 1 + mtp decode tokens under
                                                     decode_first (prompt_room)
    P_n   [s] = prefill step time of n prompts (a prompt longer than the room: all its chunks): U new tokens each,
                attending to the whole ISL context (its cached prefix's keys included)
    tau   [s] = decode step time of the batch B at mean context ISL + OSL/2

Both step times are the steps as the engine runs them: GPU time plus the serving loop's costs outside the
kernels (engine_step.py, `step_time`).

The fixed TTFT cost, split by where it is spent:

    o   [s] front end (HTTP, tokenizer, hand-off to the scheduler), fitted per framework x hardware
    ftl [s] = first_token_iterations x tau: engine iterations before the first token is streamed (an overlap
            scheduler processes step i's output during step i+1)
    the eager launch floor of the prefill step (layers x kernels launched) is in P_n itself

Scheduler policies (FrameworkServing.policy):

prefill_first (SGLang; TRT-LLM under attention DP, whose executor balances context requests across the ranks:
FrameworkServing.attention_dp_policy): cohorts stay together (scheduler.py). The B requests of a cohort are prefilled
in G = ceil(B / n) back-to-back steps, then decode in lockstep for D = (OSL - 1) / m steps (m = tokens per step,
MTP), so every wave repeats the first:

    TTFT = o + ftl + mean_g sum_{j<=g} P_j,    TPOT = (sum_{j>g} P_j + D tau) / (OSL - 1)   (scheduler.lockstep)

decode_first (vLLM V1, TRT-LLM in-flight batching): a prompt joins the next step beside the running decodes.
In the deterministic loop the first wave's groups would persist (scheduler.py); the measured rows behave as
requests arriving one by one (vLLM in-sample TTFT median 13% with the form below, 33% with persistent groups),
and this form is their steady state: the GPU spends a share rho of its time on prefill and every decode step
is stretched by it. With q prompts per step on the busiest rank, p = P_n / n the GPU time of one prompt (all
its chunks), S = p + (chunks - 1) tau its service time and lambda [1/s] the rank's request rate:

    s          = tau + q p                               the step with the prefills riding in it
    TPOT       = s / m                                   (0 at OSL 1: no gap follows the first token, scheduler.tpot_of)
    rho        = lambda p = q p / s                      the share of GPU time spent on prefill
    W_q        = min(rho S / (2 (1 - rho)), (B - 1) S)   M/D/1 mean wait for the prefill server
    TTFT_ss    = o + ftl + (r - 1) p + tau / 2 + S + W_q half a step of residual before the scheduler picks it up;
                                                         r p: what the prompt waits to cross its step (r = 1, or
                                                         m sum t / (sum t + (m - 1) max t) under PP: it crosses
                                                         every stage, pipeline.prefill_traversal), while the
                                                         queue's service time stays its share p
    lambda (TTFT_ss + (OSL - 1) s / m) = B               (a quadratic in q on each side of W_q's cap:
                                                         balance_root; s = tau / (1 - rho))

    A rank takes at most n prompts (or one chunk of a longer prompt) per step, q <= n / chunks; when the loop
    would need more, every step carries a full budget and the other requests queue: TTFT_ss = B / lambda -
    (OSL - 1) s / m.

    First wave: all B requests arrive at once and are prefilled n at a time, so request i waits for
    ceil(i / n) prefill steps: TTFT_1 = o + ftl + P_n * mean_i ceil(i / n). The benchmark mean is
    TTFT_serv = (TTFT_1 + (k - 1) TTFT_ss) / k.

    One running sequence on a replica no other rank steps with (B = 1, R = 1): the next request is sent once it
    is done, so no prompt rides in its decode steps and every wave is the first: TTFT = o + ftl + P_n, TPOT =
    tau / m, as scheduler.simulate runs it (ServingKit.alone; the steady state above would put q p > 0 of the next
    prompt into the decode steps of the request that sends it).

Attention-DP ranks step together (R > 1 for MoE): every rank's steps last as long as the busiest rank's, so the
busiest rank's C_r decides both policies. Under decode_first a chunk on one rank stalls every rank for that
chunk (scheduler.simulate; tests/test_serving_dp.py), and the closed loop keeps the ranks' prefills in the same
steps: requests that were prefilled in one step finish in one step on every rank (same OSL, one step clock) and
their clients send the next ones together, and a long prefill step gathers the arrivals of every rank for the
next. So a synchronised group's step carries the busiest rank's own prefill load, as one replica's does, not one
chunk per step from ranks prefilling at independent times (which would give s -> tau + p at large R: the
simulation of 64 ranks, 8 sequences each, p = 1.32 s, tau = 30 ms, OSL 256, gives a 46 ms TPOT, this form 67 ms,
ranks prefilling at independent times 1.18 s; tests/test_serving_dp.py).

When KV capacity holds fewer than C_r sequences the rest wait for a slot: each slot serves C_r / B requests in
turn, so W_slot = (C_r - B) / B * (TTFT_serv + (OSL - 1) TPOT) for all but the first B of the run's k C_r
requests, and TTFT = TTFT_serv + W_slot (1 - B / (k C_r)). Throughput follows
from Little's law: C * OSL / (TTFT + (OSL - 1) TPOT) (figures.figures).

`serving_figures` holds these formulas over plain step times so that a calibration or the planner can
re-evaluate them quickly: what the step times leave unchanged (m, B, n, o, the policy, the first wave's groups,
the slot wait's factors) is taken once into a `ServingKit` (`serving_kit`), and `serving_times` is one evaluation
of it; `serving.estimate` computes the step times from the step-cost model and calls it (through figures.figures).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from solver.estimate import pipeline
from solver.estimate.compute import Factors
from solver.estimate.engine_step import graph_batch
from solver.estimate.scheduler import lockstep, prefill_steps_mean, tpot_of
from solver.estimate.workload import DEFAULT_REQUEST_OVERHEAD_S, Workload, mtp_tokens_per_step
from solver.specs.profile_serving import DEFAULT_TOKEN_BUDGET
from solver.specs.model import ModelSpec
from solver.specs.parallel import ParallelConfig


@dataclass(frozen=True)
class ServingShape:
    """What the serving formulas need besides step times: counts per replica (no units)."""

    per_replica: int  # C_r
    running: int  # B
    prompts_per_step: int  # n
    chunks: int  # ceil(U / room): U the prompt's uncached tokens
    synced_ranks: int = 1  # R: attention-DP ranks that step together (1 = independent replicas)
    graph_batch: int = 0  # batch the decode step runs on the GPU (padded to a CUDA graph); 0 = `running`
    eager_decode: bool = False  # the running batch exceeds the largest captured graph
    traversal: float = 1.0  # r: prompt shares of the prefill step (P_n / n) one prompt waits to cross it
    # (pipeline.prefill_traversal: the pipeline's stages under PP; 1 without)


@dataclass(frozen=True)
class ServingPolicy:
    """The engine's scheduler as the serving formulas read it (FrameworkServing via Factors)."""

    decode_first: bool = True
    first_token_iterations: float = 0.0
    decode_first_synced: bool | None = None  # when attention-DP ranks step together; None = decode_first

    @classmethod
    def of(cls, f: Factors) -> "ServingPolicy":
        return cls(f.decode_first, f.first_token_iterations, f.decode_first_synced)

    def decode_first_for(self, synced_ranks: int) -> bool:
        if synced_ranks > 1 and self.decode_first_synced is not None:
            return self.decode_first_synced
        return self.decode_first


@dataclass(frozen=True)
class ServingTimes:
    ttft_s: float
    tpot_s: float
    ttft_first_wave_s: float
    ttft_steady_s: float
    slot_wait_s: float
    prefill_share: float
    request_s: float  # TTFT + (OSL - 1) TPOT: time one request is in the system
    first_token_delay_s: float = 0.0  # ftl, inside TTFT


def serving_shape(wl: Workload, replicas: int, kv_capacity_per_replica: float, synced_ranks: int = 1,
                  graph_sizes: tuple[int, ...] = (), pp: int = 1, decode_first: bool = False,
                  stage_weights: tuple[tuple[float, ...], tuple[int, ...]] = ((), ())) -> ServingShape:
    """The counts of one replica. `decode_first`: a prompt shares its step's budget with the running decodes
    (prompt_room), else a prefill step holds prompts only. `stage_weights`: the pipeline's distinct stages'
    prefill weights and counts (engine_step.stage_layer_passes; none: equal stages)."""
    per_replica = max(1, math.ceil(wl.concurrency / replicas))
    running = min(per_replica, max(1, int(kv_capacity_per_replica)))
    if wl.max_running > 0:
        running = min(running, wl.max_running)
    budget = wl.token_budget if wl.token_budget is not None else DEFAULT_TOKEN_BUDGET
    room = prompt_room(budget, running, wl.mtp) if decode_first else max(1, budget)
    new = wl.prompt_tokens[0]  # the budget counts a prompt's uncached tokens only
    n = max(1, min(running, room // max(1, new)))
    chunks = max(1, math.ceil(new / room))
    padded, eager = graph_batch(running, graph_sizes)
    return ServingShape(per_replica, running, n, chunks, max(1, synced_ranks), padded, eager,
                        pipeline.prefill_traversal(pp, n, *stage_weights))


def prompt_room(budget: int, running: int, mtp: int) -> int:
    """Prompt tokens a decode-first step takes: the budget less the 1 + mtp tokens each of the other B - 1 running
    sequences decodes in it, at least 1. The scheduler fills the budget with the running requests first and gives
    what is left to waiting prompts, chunked (vLLM 0.34.0 v1/core/sched/scheduler.py 811-1018 the running
    requests' num_tokens_with_spec - num_computed_tokens, then 1345-1396 a waiting prompt's tokens capped at what
    is left); in the closed loop a prompt arrives as a request finishes, so B - 1 others decode beside it."""
    return max(1, budget - (running - 1) * (1 + mtp))


def first_wave_groups(requests: int, per_step: int) -> float:
    """mean over i = 1..requests of ceil(i / per_step): prefill steps request i waits for in a burst."""
    return prefill_steps_mean(requests, per_step)


def _slot_terms(running: float, per_replica: int, wl: Workload) -> tuple[float, float]:
    """The two factors of the slot wait beside the request time: (C_r - B) / B, the slots' turns ahead of a
    waiting request, and the share of a run's k x C_r requests that wait for a slot: all but the first B."""
    total = max(1, wl.benchmark_waves) * per_replica
    return max(0, per_replica - running) / running, max(0.0, 1 - running / total)


def slot_wait_s(running: float, per_replica: int, request_s: float, wl: Workload) -> float:
    """Mean wait for a running slot [s]: the C_r - B requests beyond the B slots of a replica wait for one
    request's time in a slot (`request_s`) per B ahead of them, over the share of the run's requests that wait."""
    return _slot_wait(*_slot_terms(running, per_replica, wl), request_s)


def _slot_wait(ahead: float, waiting: float, request_s: float) -> float:
    """The slot wait [s] from its two factors (_slot_terms) and one request's time in a slot."""
    return ahead * request_s * waiting


@dataclass(frozen=True)
class ServingKit:
    """The terms of the serving formulas that the step times leave unchanged (from the shape, the workload and
    the policy). The planner evaluates one configuration's figures at some 40 step times (figures.figures keeps
    a kit per step plan), so each evaluation (`serving_figures`) does only the arithmetic on P_n and tau."""

    running: int  # B
    prompts_per_step: int  # n
    chunks: int
    tokens_per_step: float  # m
    overhead_s: float  # o
    first_token_iterations: float
    steps_out: float  # (OSL - 1) / m: decode steps after the first token
    osl: int
    decode_first: bool  # the policy for this shape's synchronised ranks
    cross_shares: float  # r - 1: prompt shares a prompt waits beyond its own to cross the step
    max_prompts: float  # n / chunks: q's ceiling
    first_groups: float  # first_wave_groups(B, n)
    waves: int  # k
    slots_ahead: float  # the slot wait's factors (_slot_terms)
    waiting_share: float
    ttft_per_prefill_s: float  # TTFT's floor per second of P_n (ttft_floor)
    ttft_per_decode_s: float  # and per second of tau
    alone: bool = False  # decode-first with one running sequence and no rank stepping with it (B = 1, R = 1)


def serving_kit(shape: ServingShape, wl: Workload, policy: ServingPolicy | None = None) -> ServingKit:
    """`serving_figures`' terms for `shape` at `wl` under `policy` (None: decode_first, no first-token delay)."""
    policy = policy or ServingPolicy()
    m = mtp_tokens_per_step(wl.mtp, wl.mtp_accept)
    B, n = shape.running, shape.prompts_per_step
    o = wl.request_overhead_s if wl.request_overhead_s is not None else DEFAULT_REQUEST_OVERHEAD_S
    ahead, waiting = _slot_terms(B, shape.per_replica, wl)
    decode_first, groups, k = policy.decode_first_for(shape.synced_ranks), first_wave_groups(B, n), \
        max(1, wl.benchmark_waves)
    # one running sequence on a replica no other steps with: no prompt is prefilled while it decodes and the next
    # one arrives only once it is done, so every request is served as the first wave's (serving_figures)
    alone = decode_first and B == 1 and shape.synced_ranks == 1
    # serving_figures' TTFT less every term that is not proportional to P_n (each is >= 0): decode-first, the
    # first wave's P_n x groups and the steady state's base >= (1 + r - 1) p with p = P_n / n, blended 1 : k - 1;
    # lockstep, the cohort's mean first-token time, linear in P_n
    per_prefill = groups if alone else (groups + (k - 1) * shape.traversal / n) / k if decode_first else \
        lockstep(B, n, 1.0, 0.0, 0.0, wl.osl, 0.0).ttft_s
    # and the terms proportional to tau, each >= 0: the first-token iterations (both policies); decode-first, the
    # steady state's base tau / 2 + (chunks - 1) tau, blended (k - 1) : k
    per_decode = policy.first_token_iterations + ((k - 1) * (shape.chunks - 0.5) / k
                                                  if decode_first and not alone else 0.0)
    return ServingKit(B, n, shape.chunks, m, o, policy.first_token_iterations, max(0.0, (wl.osl - 1) / m), wl.osl,
                      decode_first, shape.traversal - 1, n / shape.chunks, groups, k, ahead, waiting, per_prefill,
                      per_decode, alone)


def ttft_floor(kit: ServingKit, prefill_s: float, decode_s: float = 0.0) -> float:
    """A lower bound of serving_figures' TTFT [s] at prefill step P_n = prefill_s and any decode step tau >=
    decode_s: the fixed cost and the terms proportional to P_n and to tau. TTFT itself can fall a little as tau
    grows (a slower decode lowers the request rate), so a TTFT SLA bounds the prefill step through this floor
    (at decode_s = 0: whatever the decode step), and the pair of steps through it at decode_s.

    Why it is a floor, non-decreasing in both steps: decode-first, TTFT = served + slot wait with the slot wait
    >= 0 and served = (first + (k - 1) steady) / k, first = o + ftl + P_n groups, steady = base + (a wait >= 0:
    the M/D/1 wait capped at (B - 1) S, or the saturated loop's queue, which only raises it), base = o + ftl +
    (r - 1) p + tau / 2 + S, S = p + (chunks - 1) tau, p = P_n / n, ftl = first_token_iterations x tau; dropping
    the waits leaves o + P_n (groups + (k - 1) r / n) / k + tau (first_token_iterations + (k - 1) (chunks - 1/2)
    / k), every coefficient >= 0. Lockstep, TTFT = o + the cohort's mean first-token time (proportional to P_n)
    + ftl + the slot wait (>= 0)."""
    return kit.overhead_s + kit.ttft_per_prefill_s * prefill_s + kit.ttft_per_decode_s * decode_s


def serving_times(shape: ServingShape, prefill_s: float, decode_s: float, wl: Workload,
                  policy: ServingPolicy | None = None) -> ServingTimes:
    """TTFT and TPOT of aggregated serving from the step times (module docstring). Seconds in, seconds out.

    prefill_s: one prefill step of `shape.prompts_per_step` prompts of ISL tokens (P_n);
    decode_s: one decode step of `shape.running` sequences (tau); both as the engine runs them (step_time).
    policy: the engine's scheduler (None: decode_first, no first-token delay).
    """
    return ServingTimes(*serving_figures(serving_kit(shape, wl, policy), prefill_s, decode_s))


def serving_figures(kit: ServingKit, prefill_s: float, tau: float) -> tuple[float, float, float, float, float,
                                                                             float, float, float]:
    """`serving_times`' figures in ServingTimes' field order, from a kit: P_n = prefill_s, tau = the decode step."""
    B, n, o, steps_out = kit.running, kit.prompts_per_step, kit.overhead_s, kit.steps_out
    ftl = kit.first_token_iterations * tau
    if not kit.decode_first:
        ls = lockstep(B, n, prefill_s, tau, steps_out, kit.osl, ftl)
        served = o + ls.ttft_s
        cycle = o + ftl + ls.cycle_s
        slot_wait = _slot_wait(kit.slots_ahead, kit.waiting_share, cycle)
        ttft = served + slot_wait
        share = (ls.cycle_s - steps_out * tau) / ls.cycle_s if ls.cycle_s > 0 else 0.0
        return ttft, ls.tpot_s, served, served, slot_wait, share, ttft + (kit.osl - 1) * ls.tpot_s, ftl
    if kit.alone:
        # B = 1, R = 1: the prompt's chunks run in steps of their own (nothing decodes beside them) and its decode
        # steps carry no prompt (the next request is sent once it is done), as scheduler.simulate runs it: TTFT =
        # o + ftl + P_n, TPOT = tau / m. The steady state below would spread a prompt over the decode steps of
        # the request that sent it (TPOT tau + q p)
        first = o + ftl + prefill_s * kit.first_groups
        busy = prefill_s + steps_out * tau
        slot_wait = _slot_wait(kit.slots_ahead, kit.waiting_share, first + steps_out * tau)
        ttft = first + slot_wait
        return ttft, tpot_of(tau / kit.tokens_per_step, kit.osl), first, first, slot_wait, \
            prefill_s / busy if busy > 0 else 0.0, ttft + steps_out * tau, ftl
    p = prefill_s / n
    S = p + (kit.chunks - 1) * tau
    # a prompt arriving alone occupies the prefill server for its share p (the queue's service time), but its
    # first token comes only once it has crossed the step: r p under PP, whose stages it crosses one by one
    fixed = o + ftl + kit.cross_shares * p
    base = fixed + tau / 2 + S  # TTFT_ss = base + W_q
    cap = (B - 1) * S
    # Steady state, solved for q = prompts per step on the busiest rank: the step is s = tau + q p (its
    # prefills ride in the steps; in a synchronised group the other ranks' prefills run in the same steps, see
    # the module docstring), the rank's request rate lambda = q / s and its prefill share rho = lambda p; q
    # balances the closed loop (lambda x cycle = B). The excess lambda x cycle - B is increasing in q (lambda =
    # q / (tau + q p) is). A rank takes at most n prompts per step, or one chunk of a longer prompt.
    hi = kit.max_prompts
    step, lam, rho, steady = _loop_state(hi, tau, p, S, base, cap)
    saturated = lam * (steady + steps_out * step) - B <= 0
    if saturated:
        # every step carries a full budget of prompts and the loop's other requests queue for it, so a
        # request's cycle is B / lambda and TTFT the part of it not spent decoding
        queued = B / lam - steps_out * step
        if queued > steady:
            steady = queued
    else:
        lo = 0.0
        root = balance_root(B, tau, p, kit.chunks, fixed, steps_out)
        if root is not None and 0.0 <= root <= hi and root * p < (1 - 1e-12) * (tau + root * p):
            lo = root
        else:  # degenerate steps (tau or p zero, rho at its clamp): bisection on the same balance
            for _ in range(60):
                if hi - lo <= 1e-12 * hi:
                    break
                mid = (lo + hi) / 2
                s, lam, _, ss = _loop_state(mid, tau, p, S, base, cap)
                if lam * (ss + steps_out * s) - B > 0:
                    hi = mid
                else:
                    lo = mid
        step, lam, rho, steady = _loop_state(lo, tau, p, S, base, cap)
    first = o + ftl + prefill_s * kit.first_groups
    k = kit.waves
    served = (first + (k - 1) * steady) / k
    request_s = served + steps_out * step
    slot_wait = _slot_wait(kit.slots_ahead, kit.waiting_share, request_s)
    ttft = served + slot_wait
    return ttft, tpot_of(step / kit.tokens_per_step, kit.osl), first, steady, slot_wait, rho, \
        ttft + steps_out * step, ftl


def per_user_rate(tpot_s: float) -> float:
    """Tokens per second one user sees after the first: 1 / TPOT, 0 where there is no TPOT (OSL 1, prefill)."""
    return 1.0 / tpot_s if tpot_s > 0 else 0.0


def _loop_state(q: float, tau: float, p: float, S: float, base: float, cap: float) -> tuple[float, float, float,
                                                                                           float]:
    """(s, lambda, rho, TTFT_ss) of the decode-first loop at q prompts per step (serving_figures' terms)."""
    s = tau + q * p
    lam = q / s
    rho = lam * p
    if not rho < 1 - 1e-12:  # min(1 - 1e-12, lam p), NaN included
        rho = 1 - 1e-12
    wait = rho * S / (2 * (1 - rho))  # M/D/1, at most (B - 1) S
    return s, lam, rho, base + (cap if cap < wait else wait)


def _positive_root(a: float, b: float, c: float) -> float:
    """The positive root of a q^2 + b q - c = 0 (a >= 0, c > 0), written without cancellation."""
    if a <= 0:
        return c / b if b > 0 else math.inf
    d = math.sqrt(b * b + 4 * a * c)
    return 2 * c / (b + d) if b >= 0 else (d - b) / (2 * a)


def balance_root(B: float, tau: float, p: float, chunks: int, fixed_s: float, steps_out: float) -> float | None:
    """q [prompts per step] at which the decode-first closed loop balances, lambda (TTFT_ss + steps_out s) = B,
    in closed form (None where tau or p is not positive). With s = tau + q p, rho = q p / s and 1 - rho = tau / s,
    the M/D/1 wait is rho S / (2 (1 - rho)) = q p S / (2 tau), linear in q; multiplying the balance by s gives a
    quadratic a q^2 + b q - B tau = 0 on each side of the wait's cap (B - 1) S, reached at q* = 2 tau (B - 1) / p.
    S = p + (chunks - 1) tau; fixed_s = o + ftl + (r - 1) p (TTFT_ss = fixed_s + tau / 2 + S + W_q)."""
    if not (tau > 0 and p > 0):
        return None
    S = p + (chunks - 1) * tau
    c = B * tau
    # b below the cap: steps_out tau + TTFT_ss(no wait) - B p; at the cap the wait adds (B - 1) S, and
    # (B - 1) S + S - B p = B (chunks - 1) tau: summed from positive terms only
    head = steps_out * tau + fixed_s + tau / 2
    below = _positive_root(p * (steps_out + S / (2 * tau)), head + (chunks - 1) * tau - (B - 1) * p, c)
    if below <= 2 * tau * (B - 1) / p:
        return below
    return _positive_root(p * steps_out, head + B * (chunks - 1) * tau, c)


def synced_ranks(model: ModelSpec, pc: ParallelConfig) -> int:
    """Attention-DP ranks that step together: a MoE model's expert all-to-all (or MoE TP across replicas)
    ends every step on all of them; a dense model's replicas serve independently."""
    return pc.attn_replicas if model.is_moe and pc.attn_replicas > 1 else 1
