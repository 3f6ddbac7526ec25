"""Disaggregated serving: a prefill pool and a decode pool joined by a KV-cache transfer.

x prefill workers (each one parallel_config of W_p ranks, R_p attention replicas) and y decode workers (W_d
ranks, R_d replicas) serve a closed loop of C client requests of ISL / OSL tokens. Symbols and units:

    n        prompts per prefill step on one attention replica (the engine's prefill batch, or the token budget
             over a prompt's new tokens)
    P_n [s]  prefill step of n prompts of ISL tokens on one replica (all replicas of a worker step together); at a
             prefix-cache hit F each computes ISL - floor(ISL F) new tokens attending over the whole prompt
             (DisaggWorkload.prompt_tokens), so mu rises and fewer prefill workers match a decode pool, while
             T_kv still moves all ISL tokens' cache
    mu  [1/s] = x R_p n / P_n               requests per second the prefill pool can start
    B        running sequences per decode replica = min(ceil(C / (y R_d)), KV capacity, engine cap)
    tau [s]  decode step of B sequences at mean context ISL + OSL/2 (no prefill in it: that is the point)
    T_kv [s] KV transfer of one request (kv_transfer_time), over the tier joining the two pools
    o   [s]  fixed per-request cost on the TTFT path (HTTP, tokenizer, router, KV hand-off bookkeeping)

    a   [s]  = (1/2 + 1 + i_ft) tau   the decode side of the first token: the transferred request joins the running
             batch at the next step boundary (half a step of residual on average), runs its first step, and
             streams after i_ft more iterations (the engine's first_token_iterations: an overlap scheduler)

    tau      = the decode loop's step (engine_step.step_time): the GPU time of B sequences padded to the next captured
               CUDA graph, floored by the host's kernel launches past the largest graph, plus seq_overhead_s per
               sequence and seq_layer_s per sequence per layer of the decode worker's layout (step_layers); P_n
               likewise runs eagerly with its n prompts (the aggregated model's serving loop)
    TPOT     = tau / m                          m = tokens per step (MTP)
    Z   [s]  = o + P_n + T_kv + a + (OSL - 1) TPOT    a request's cycle without waiting
    C_f      = min(C, y R_d B)                  requests that hold a decode slot (the rest wait for one)

The prefill wait, from the closed loop (no fitted share). A benchmark run sends k x C requests (k = the benchmark
waves, estimate.workload.DEFAULT_BENCHMARK_WAVES): every client sends k requests one after the other.

First wave (all C at once): request i waits ceil(i / (x R_p n)) prefill steps,
TTFT_1 = o + P_n * mean_i ceil(i / (x R_p n)) + T_kv + a.

Later waves do not re-form the burst: the first wave leaves the prefill pool one step's worth at a time, so its
requests finish and return spread over at least the time the burst took to prefill (the decode steps only stretch
the spacing as the batch fills), and the clients' cycles mix them. They reach the pool as a stream of rate lambda
and queue as random arrivals at the ranks that serve them (a loop without noise would not wait at all below
saturation; the measured rows wait as random arrivals do: benchmarks/disagg_wait_variants.py). Each of the x R_p
attention ranks of the pool queues its own requests (lambda_r = lambda / (x R_p) on average; the engine routes a
request to a rank by its id, not by the ranks' load: docs/disagg.md) and prefills up to n per step;
the R_s ranks of a worker that step together (closed_loop.synced_ranks: a MoE model's attention replicas, whose
expert all-to-all synchronises them; a dense model's replicas are independent, R_s = 1) run a step while any of
them has work:

    rho      = lambda / mu                      each rank's utilisation
    W_q(rho) = rho P_n / (2 (1 - rho))          the rank's own queue (M/D/1 with deterministic steps; exact at
                                                n = 1, as every measured row runs; for n > 1 a step of n is one
                                                service, which states the queue at its n = 1 size)
             + (1 - rho) (1 - (1 - rho)^(R_s - 1)) P_n / 2
                                                an arrival that finds its rank idle still waits for the step the
                                                worker runs for its other ranks: half a step on average
    lambda   : lambda (Z + W_q(lambda / mu)) = C_f    (Little's law over the loop; W_q grows without bound as
                                                rho -> 1, so the root is below mu; bisection)
    TTFT_ss  = o + W_q + P_n + T_kv + a         steady state: wait, prefill, transfer, the first decode step

When the prefill pool is the bottleneck (C_f / Z >> mu) the root tends to lambda -> mu and W_q -> C_f / mu - Z:
the queue holds what the pool cannot start. The benchmark mean is (TTFT_1 + (k - 1) TTFT_ss) / k: the share of
requests that wait in a burst is the first wave's, 1 / k (`burst_share` overrides it; nothing is fitted: a
per-(framework, hardware) share fitted on the measured rows did better in-sample and worse on held-out systems,
benchmarks/README.md, "Disaggregated prefill/decode"). Requests beyond the decode slots (C > y R_d B) wait
for a slot: W_slot = (C_r - B) / B * (TTFT + (OSL - 1) TPOT), C_r = ceil(C / (y R_d)). Throughput by Little's
law: C * OSL / (TTFT + (OSL - 1) TPOT), per GPU over x W_p + y W_d ranks.

KV transfer: the request's cache (every cached layer, indexer keys included, and the state that does not grow:
linear-attention / SSM state, conv tails, image K/V) moves from the prefill worker's attention group to the
decode worker's. A decode rank receives what it will hold (kv_bytes_per_token_layer at
its attention TP: GQA heads split, an MLA latent whole on every TP rank; under pipeline parallel only its stage's
layers, every stage's ranks at once, the busiest stage setting the pace); the prefill ranks share the sending
(likewise per prefill stage).
The slower side sets the time, at the tier's per-rank rate toward the peers that side exchanges with
(comm.peer_rate_Bps: on a full mesh one link per peer) x efficiency plus its latency. The tier is the
slowest the deployment spans (transfer_tier: the router pairs any prefill worker with any decode worker).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import lru_cache

from solver.specs.dtypes import KVFormat
from solver.estimate import comm
from solver.estimate.compute import Factors
from solver.estimate.memory import MemoryReport, memory_per_rank
from solver.estimate.memory_options import MemoryOptions, engine_options, workload_options
from solver.estimate.pipeline import stages
from solver.estimate.request_state import (
    SEED_LAYOUT,
    CacheLayout,
    cached_tokens_per_layer_sum,
    indexer_bytes_per_token_layer,
    kv_bytes_per_token_layer,
    state_of_layers,
)
from solver.estimate.closed_loop import ServingPolicy, first_wave_groups, per_user_rate, synced_ranks
from solver.estimate.engine_step import graph_batch, graph_sizes_at, kernels_launched, step_layers, step_time
from solver.estimate.scheduler import tpot_of
from solver.estimate.serving import decode_step, kv_capacity_per_replica, prefill_step
from solver.estimate.workload import (
    DEFAULT_BENCHMARK_WAVES, Workload, mtp_tokens_per_step, prefix_hit_note, prompt_draft_passes, request_overhead,
    token_budget,
)
from solver.estimate.step import StepCost
from solver.specs.hardware import Hardware, Tier
from solver.specs.model import ModelSpec
from solver.specs.parallel import ParallelConfig
from solver.specs.precision import Precision
from solver.specs.scenario import DEFAULT_MTP_ACCEPT

# Steps of the decode loop between a request's arrival on the decode server and its first decode step ending,
# besides first_token_iterations: half a step of residual (it joins at the next step boundary, as the aggregated
# model's tau / 2 before the scheduler picks a prompt up) and the step itself.
DECODE_ADMISSION_STEPS = 1.5


def kv_bytes_per_request(model: ModelSpec, kv: KVFormat, tokens: int, attn_tp: int = 1,
                         mtp_layers: int = 0, index_unquantised: bool = False) -> float:
    """Cache bytes `tokens` tokens of one request occupy on one rank of an attention group with TP `attn_tp`
    (attn_tp = 1: the whole request). Every cached layer (local-window layers capped at their window), the MTP
    layers' cache when they run, and DSA indexer keys, which attention TP does not split (in the engine's format:
    `index_unquantised`, CacheLayout.index_unquantised)."""
    return sum(_request_caches(model, kv, tokens, attn_tp, mtp_layers, index_unquantised))


def _request_caches(model: ModelSpec, kv: KVFormat, tokens: int, attn_tp: int, mtp_layers: int,
                    index_unquantised: bool) -> tuple[float, float]:
    """(KV, indexer keys) of kv_bytes_per_request."""
    layer_tokens = cached_tokens_per_layer_sum(model, tokens) + mtp_layers * tokens
    return (layer_tokens * kv_bytes_per_token_layer(model, kv, attn_tp),
            layer_tokens * indexer_bytes_per_token_layer(model, index_unquantised))


def constant_state_per_request(model: ModelSpec, kv: KVFormat, attn_tp: int = 1, group: int | None = None) -> float:
    """The state of one request that does not grow with its tokens (linear-attention / SSM state, conv tails, a
    cross-attention layer's image K/V) on one rank of an attention group with TP `attn_tp`: the prefill worker
    built it, so it is handed over with the KV. CP / KVP do not split it (each rank of their group holds it);
    `group`: the attention-TP group (TP x KVP where KVP reuses the TP ranks), which splits it."""
    return state_of_layers(model.layer_groups, kv, attn_tp, 1, group).constant


@dataclass(frozen=True)
class Transfer:
    """One request's KV hand-off from a prefill worker to a decode worker."""

    tier: str  # the tier joining the two pools
    bytes_per_request: float  # the request's whole cache
    send_bytes_per_rank: float  # the busiest sending (prefill) rank
    recv_bytes_per_rank: float  # the busiest receiving (decode) rank
    time_s: float


def transfer_tier(hw: Hardware, prefill_ranks: int, decode_ranks: int, prefill_workers: int = 1,
                  decode_workers: int = 1, over_nics: bool = False) -> tuple[str, Tier]:
    """The tier the KV crosses: the slowest tier the deployment's ranks span (NVLink inside a node or an NVL72
    rack, UB inside a SuperPoD, else RDMA). One worker per pool: the two placed side by side. More: the router
    sends a request to any prefill worker and any decode worker, so when the pools together leave one domain some
    transfers cross it whatever the placement, and that crossing is the one costed (an upper bound on the mean
    where some pairs share a node). `over_nics` (the engine's FrameworkProfile.kv_handoff_over_nics): the RDMA tier
    whatever the span, the one a group one rank past the node and the scale-up domain crosses."""
    ranks = prefill_workers * prefill_ranks + decode_workers * decode_ranks
    if over_nics:
        ranks = max(ranks, max(hw.ranks_per_node, hw.scale_up_domain) + 1)
    name = hw.tier_for_group(ranks)
    return name, hw.tiers[name]


def kv_transfer(model: ModelSpec, hw: Hardware, prefill: ParallelConfig, decode: ParallelConfig, kv_fmt: KVFormat,
                isl: int, mtp_layers: int = 0, kvp_splits_weights: bool = False, prefill_workers: int = 1,
                decode_workers: int = 1, layout: CacheLayout = SEED_LAYOUT, over_nics: bool = False) -> Transfer:
    """Bytes and seconds of one request's KV transfer (module docstring). The decode side's CP x KVP split the
    tokens across its ranks; the replicated copies of a latent (MLA) are each sent once per receiving rank.
    `kvp_splits_weights`: the decode engine's KVP layout (its constant state split over TP x KVP); the worker
    counts: the deployment whose span sets the tier (transfer_tier). `layout`: the decode engine's cache layout
    (MemoryOptions.cache_layout): CP ranks that each keep the whole cache receive it whole, KVP ranks that each
    keep every indexer key receive them all, and the indexer keys travel in the engine's format. `over_nics`:
    the engine's transport (transfer_tier)."""
    unq = layout.index_unquantised
    whole = (kv_bytes_per_request(model, kv_fmt, isl, 1, mtp_layers, unq)
             + constant_state_per_request(model, kv_fmt))
    a = decode.attn_tp_size
    cp_shards = 1 if layout.cp_replicates_kv else decode.cp_size

    def received(layers: ModelSpec, mtp: int) -> float:
        """What one decode rank of an attention group receives of `layers`' caches."""
        kv, idx = _request_caches(layers, kv_fmt, isl, a, mtp, unq)
        return (kv / (cp_shards * decode.kvp_size)
                + idx / (cp_shards * (1 if layout.kvp_replicates_index else decode.kvp_size))
                + constant_state_per_request(layers, kv_fmt, a, decode.attn_tp_group(kvp_splits_weights)))

    def per_stage(pp: int) -> list[float]:
        """received() of each pipeline stage's layers (MTP on the last): a stage's ranks hold, so send or
        receive, only their own layers' caches, every stage at once."""
        if pp == 1:
            return [received(model, mtp_layers)]
        return [received(st.model, mtp_layers if st.last else 0) for st in stages(model, pp)]

    senders, receivers = prefill.attn_group_size, decode.attn_group_size
    recv = max(per_stage(decode.pp_size))  # the busiest decode stage's rank
    # every receiving rank's share, copies counted, of the busiest prefill stage's layers, over its senders
    send = max(per_stage(prefill.pp_size)) * receivers / senders
    name, tier = transfer_tier(hw, prefill.world_size, decode.world_size, prefill_workers, decode_workers, over_nics)
    # each side drives the links to the peers it exchanges with (comm.peer_rate_Bps: all of a switched fabric,
    # one link per peer on a full mesh): a sending rank reaches the receivers its share spreads over, a
    # receiving rank the senders its share comes from
    send_peers, recv_peers = math.ceil(receivers / senders), math.ceil(senders / receivers)
    time_s = tier.latency_s + max(send / comm.peer_rate_Bps(tier, send_peers),
                                  recv / comm.peer_rate_Bps(tier, recv_peers)) / tier.efficiency
    return Transfer(name, whole, send, recv, time_s)


@dataclass(frozen=True)
class PoolShape:
    """Counts of the two pools (no units)."""

    prefill_workers: int  # x
    prefill_replicas: int  # R_p: attention replicas per prefill worker
    prompts_per_step: int  # n, per prefill replica
    decode_workers: int  # y
    decode_replicas: int  # R_d: attention replicas per decode worker
    per_replica: int  # C_r = ceil(C / (y R_d))
    running: int  # B: sequences decoding together per decode replica
    graph_batch: int = 0  # batch the decode step runs on the GPU (padded to a CUDA graph); 0 = `running`
    eager_decode: bool = False  # the running batch exceeds the largest captured graph
    prefill_synced: int = 1  # attention ranks of a prefill worker that step together (closed_loop.synced_ranks)


def pool_shape(concurrency: int, prefill_workers: int, prefill_replicas: int, prompts_per_step: int,
               decode_workers: int, decode_replicas: int, kv_capacity_per_replica: float,
               max_running: int = 0, graph_sizes: tuple[int, ...] = (), prefill_synced: int = 1) -> PoolShape:
    """B = min(C_r, KV capacity, the engine's cap per replica); n is at least 1 and at most the prompts a
    replica can ever hold at once (C spread over the prefill replicas). The decode step runs B padded to the
    decode engine's next captured CUDA-graph size (engine_step.graph_batch). prefill_synced: the prefill worker's
    attention ranks that step together (closed_loop.synced_ranks: a MoE model's replicas; a dense model's are
    independent, 1)."""
    per_replica = max(1, math.ceil(concurrency / (decode_workers * decode_replicas)))
    running = min(per_replica, max(1, int(kv_capacity_per_replica)))
    if max_running > 0:
        running = min(running, max_running)
    n = max(1, min(prompts_per_step, math.ceil(concurrency / (prefill_workers * prefill_replicas))))
    padded, eager = graph_batch(running, graph_sizes)
    return PoolShape(prefill_workers, prefill_replicas, n, decode_workers, decode_replicas, per_replica, running,
                     padded, eager, max(1, prefill_synced))


@dataclass(frozen=True)
class DisaggTimes:
    ttft_s: float
    tpot_s: float
    request_s: float  # TTFT + (OSL - 1) TPOT
    ttft_first_wave_s: float
    ttft_steady_s: float
    prefill_wait_s: float  # W_q in steady state
    prefill_s: float  # P_n
    transfer_s: float  # T_kv
    first_decode_s: float  # a = (DECODE_ADMISSION_STEPS + first_token_iterations) x tau
    slot_wait_s: float
    prefill_utilization: float  # rho
    request_rate: float  # lambda, requests/s of the whole deployment
    prefill_capacity: float  # mu, requests/s the prefill pool can start
    decode_step_s: float = 0.0  # tau


def prefill_queue_wait(rho: float, prefill_s: float, ranks_per_worker: int) -> float:
    """W_q [s] of a request reaching a prefill rank at utilisation rho (module docstring): the rank's own M/D/1
    queue of steps of prefill_s, plus half a step when the rank is idle but the worker steps for its other
    ranks (`ranks_per_worker` = R_s attention ranks stepping together). rho in [0, 1); inf at 1."""
    if rho >= 1.0:
        return math.inf
    own = rho * prefill_s / (2.0 * (1.0 - rho))
    others_busy = 1.0 - (1.0 - rho) ** max(0, ranks_per_worker - 1)
    return own + (1.0 - rho) * others_busy * prefill_s / 2.0


# Bisection steps for the closed loop's rate: the bracket (0, mu) shrinks to 2^-60 of mu, far below any
# step-time resolution.
LOOP_BISECTION_STEPS = 60


@lru_cache(maxsize=1 << 16)  # a sweep's kinds pair the same pools: the same loops, solved once
def closed_loop_rate(flowing: float, cycle_s: float, mu: float, prefill_s: float, ranks_per_worker: int) -> float:
    """lambda [1/s] with lambda (cycle_s + W_q(lambda / mu)) = flowing: `flowing` clients each cycling through
    cycle_s (Z) plus the prefill queue's wait. The left side rises from 0 to inf on (0, mu), so the root is
    unique; bisection keeps it pure and cheap (LOOP_BISECTION_STEPS evaluations). The pair search calls it tens
    of thousands of times a solve, so prefill_queue_wait is written out here, operation for operation (the same
    floats), and the steps stop once the bracket no longer moves (every later step would leave it so too)."""
    lo, hi = 0.0, mu
    others = max(0, ranks_per_worker - 1)
    for _ in range(LOOP_BISECTION_STEPS):
        lam = 0.5 * (lo + hi)
        rho = lam / mu
        if rho >= 1.0:
            wait = math.inf
        else:
            idle = 1.0 - rho
            wait = rho * prefill_s / (2.0 * idle) + idle * (1.0 - idle ** others) * prefill_s / 2.0
        if lam * (cycle_s + wait) > flowing:
            if hi == lam:
                break
            hi = lam
        else:
            if lo == lam:
                break
            lo = lam
    return lo


def disagg_times(shape: PoolShape, prefill_s: float, decode_s: float, transfer_s: float, concurrency: int,
                 osl: int, overhead_s: float, waves: int, mtp: int = 0, mtp_accept: float = 1.0,
                 first_token_iterations: float = 0.0, burst_share: float | None = None) -> DisaggTimes:
    """TTFT and TPOT of disaggregated serving from the step times (module docstring). Seconds in, seconds out.

    prefill_s: one prefill step of `shape.prompts_per_step` prompts on a replica as the engine runs it (P_n);
    decode_s: one decode step of `shape.running` sequences as the engine runs it (tau); transfer_s: one request's
    KV transfer; first_token_iterations: i_ft of the decode engine; burst_share: the share of requests that wait
    in a burst (None: the first wave's, 1 / k).
    """
    m = mtp_tokens_per_step(mtp, mtp_accept)
    tau = decode_s
    tpot = tpot_of(tau / m, osl)
    decode_after_s = max(0.0, (osl - 1) / m) * tau  # decode time after the first token
    per_step = shape.prefill_workers * shape.prefill_replicas * shape.prompts_per_step
    mu = per_step / prefill_s
    flowing = min(concurrency, shape.decode_workers * shape.decode_replicas * shape.running)
    admit = (DECODE_ADMISSION_STEPS + first_token_iterations) * tau
    base = overhead_s + prefill_s + transfer_s + admit
    cycle = base + decode_after_s
    rate = closed_loop_rate(flowing, cycle, mu, prefill_s, shape.prefill_synced)
    rho = rate / mu
    wait = max(0.0, flowing / rate - cycle)  # = W_q(rho) at the root (Little's law over the loop)
    steady = base + wait
    first = overhead_s + prefill_s * first_wave_groups(concurrency, per_step) + transfer_s + admit
    served = burst_blend(burst_weight(burst_share, waves), first, steady)
    slot_wait = max(0, shape.per_replica - shape.running) / shape.running * (served + decode_after_s)
    ttft = served + slot_wait
    return DisaggTimes(ttft, tpot, ttft + decode_after_s, first, steady, wait, prefill_s, transfer_s, admit,
                       slot_wait, rho, rate, mu, tau)


def burst_weight(burst_share: float | None, waves: int) -> float:
    """phi, the share of requests that wait in a burst: `burst_share` where given, else the first wave's, 1 / k."""
    return 1.0 / max(1, waves) if burst_share is None else burst_share


def burst_blend(phi: float, first_s: float, steady_s: float) -> float:
    """The mean TTFT over the run: phi waiting in the first wave's burst, the rest in the steady loop. Seconds."""
    return phi * first_s + (1.0 - phi) * steady_s


def workers_to_match(decode_rate: float, prefill_rate_per_worker: float, utilization: float = 1.0) -> int:
    """Prefill workers whose capacity meets the decode pool's demand: ceil(lambda / (mu_w x utilization)).

    decode_rate: requests/s the decode pool finishes at its batch and TPOT; prefill_rate_per_worker: requests/s
    one prefill worker starts (R_p n / P_n)."""
    if decode_rate <= 0:
        return 0
    return max(1, math.ceil(decode_rate / (prefill_rate_per_worker * utilization) - 1e-9))


@dataclass(frozen=True)
class DisaggWorkload:
    """Closed-loop serving of `concurrency` requests on x prefill and y decode workers.

    prefill_batch: prompts per prefill step per attention replica (None: the framework's token budget / ISL);
    decode_batch: the engine's cap on running sequences per decode attention replica (None: memory decides).
    """

    isl: int
    osl: int
    concurrency: int
    prefill_workers: int = 1
    decode_workers: int = 1
    prefill_batch: int | None = None
    decode_batch: int | None = None
    mtp: int = 0
    mtp_accept: float = DEFAULT_MTP_ACCEPT
    benchmark_waves: int = DEFAULT_BENCHMARK_WAVES
    request_overhead_s: float | None = None  # None: the fitted value of the framework x hardware, else default
    burst_share: float | None = None  # share waiting in a burst; None: the first wave's, 1 / benchmark_waves
    # share of each prompt's tokens the prefill worker finds in its prefix cache (prompt_tokens)
    prefix_hit: float = 0.0

    @property
    def prompt_tokens(self) -> tuple[int, int]:
        """(new, cached) tokens of one prompt, as aggregated serving counts them (workload.Workload.prompt_tokens):
        the prefill worker computes the new ones after reading the cached ones' K/V. The hand-off still moves the
        whole prompt's cache (kv_transfer at ISL): the decode worker needs every token's K/V, and the connectors
        send the prefill worker's cached prefix like the rest, skipping only what the decode worker's own cache
        holds (vLLM 0.34.0 distributed/kv_transfer/kv_connector/v1/nixl/pull_scheduler.py:59-63, count = prompt -
        the decode side's num_computed_tokens; SGLang 0.5.23 srt/disaggregation/prefill.py:437-448, start_send_idx
        = the decode side's decode_prefix_len, and :1460-1499, the prefill worker's cached prefix sent first),
        which is not assumed here."""
        return Workload("serving", isl=self.isl, prefix_hit=self.prefix_hit).prompt_tokens


@dataclass(frozen=True)
class DisaggEstimate:
    times: DisaggTimes
    shape: PoolShape
    transfer: Transfer
    prefill: StepCost  # GPU cost of the prefill step (P_n adds the loop's costs: times.prefill_s)
    decode: StepCost  # GPU cost of the decode step at the padded batch (tau with the loop's costs: times.decode_step_s)
    prefill_memory: MemoryReport  # per rank of a prefill worker
    decode_memory: MemoryReport  # per rank of a decode worker (the KV of all its running requests)
    prefill_ranks: int  # x W_p
    decode_ranks: int  # y W_d
    output_tokens_per_s: float  # whole deployment
    @property
    def ttft_s(self) -> float:
        return self.times.ttft_s

    @property
    def tpot_s(self) -> float:
        return self.times.tpot_s

    @property
    def world_size(self) -> int:
        return self.prefill_ranks + self.decode_ranks

    @property
    def output_tokens_per_s_per_rank(self) -> float:
        return self.output_tokens_per_s / self.world_size

    @property
    def tokens_per_s_per_user(self) -> float:
        return per_user_rate(self.times.tpot_s)

    isl: int
    osl: int
    concurrency: int

    @property
    def requests_per_s(self) -> float:
        return self.output_tokens_per_s / self.osl

    @property
    def input_tokens_per_s(self) -> float:
        """Prompt tokens the prefill pool serves per second at the operating point (cached ones included)."""
        return self.requests_per_s * self.isl

    @property
    def memory_feasible(self) -> bool:
        return self.prefill_memory.feasible and self.decode_memory.feasible


def disagg_hit_note(prefix_hit: float) -> str | None:
    """What a disaggregated answer assumed of the prefix cache (DisaggWorkload.prompt_tokens), said once; None at
    no hit."""
    note = prefix_hit_note(prefix_hit)
    if note is None:
        return None
    return (f"{note}; disaggregated: the prefill pool computes only the uncached tokens (fewer prefill workers per "
            "decode worker), and the KV hand-off still moves the whole prompt's cache to the decode pool")


def prompts_per_step(wl: DisaggWorkload, f: Factors, synced: int, replica_batch: int = 1) -> int:
    """n: the engine's prefill batch when given, else as many prompts as the scheduler's token budget holds (over
    the `synced` attention ranks of a worker, the command's budget at `replica_batch` requests per prefill
    replica: workload.token_budget). A prefill worker decodes nothing, so its prompts take the whole budget."""
    if wl.prefill_batch is not None:
        return wl.prefill_batch
    budget = token_budget(Workload("serving", isl=wl.isl, osl=wl.osl, concurrency=wl.concurrency, mtp=wl.mtp), f,
                          synced, replica_batch)
    return max(1, budget // wl.prompt_tokens[0])  # the budget counts a prompt's uncached tokens only


def pool_memory_options(f: Factors, wl: DisaggWorkload, mem_opts: MemoryOptions | None = None) -> MemoryOptions:
    """A pool's memory options as `estimate_disagg` sizes it: whoever re-derives the decode pool's KV capacity
    (benchmarks/accuracy_disagg.prepare) takes them from here, so both hold the same sequences."""
    return workload_options(engine_options(mem_opts, f), wl.isl)


def estimate_disagg(model: ModelSpec, hw: Hardware, prefill_pc: ParallelConfig, decode_pc: ParallelConfig,
                    prec: Precision, f_prefill: Factors, f_decode: Factors, wl: DisaggWorkload,
                    mem_opts: MemoryOptions | None = None) -> DisaggEstimate:
    """Step times from the step-cost model (serving.prefill_step / decode_step) run by each pool's serving loop
    (engine_step.step_time: CUDA-graph padding, eager launch floor, per-sequence cost), then `disagg_times`."""
    # each pool's memory under its engine's layout (memory_options.engine_options), as its steps are costed
    # and for requests of this prompt (memory_options.workload_options), as the pools' planner tables size them
    pre_opts, dec_opts = (pool_memory_options(f, wl, mem_opts) for f in (f_prefill, f_decode))
    cap = kv_capacity_per_replica(model, hw, decode_pc, prec, wl.isl + wl.osl, dec_opts, wl.mtp)
    synced = synced_ranks(model, prefill_pc)
    # the decode worker's per-rank batch as its command caps it (--max-running-requests: decode_batch, else its share)
    planned = wl.decode_batch or math.ceil(wl.concurrency / (wl.decode_workers * decode_pc.attn_replicas))
    shape = pool_shape(wl.concurrency, wl.prefill_workers, prefill_pc.attn_replicas,
                       prompts_per_step(wl, f_prefill, synced,
                                        math.ceil(wl.concurrency / (wl.prefill_workers * prefill_pc.attn_replicas))),
                       wl.decode_workers, decode_pc.attn_replicas,
                       cap, wl.decode_batch or 0, graph_sizes_at(f_decode, decode_pc, model.num_experts, planned,
                                                                 wl.mtp), synced)
    new, cached = wl.prompt_tokens
    pre = prefill_step(model, hw, prefill_pc, prec, f_prefill, new, shape.prompts_per_step, wl.mtp, cached,
                       prefill_worker=True)
    dec_batch = shape.graph_batch or shape.running  # the decode step runs the padded batch
    dec = decode_step(model, hw, decode_pc, prec, f_decode, dec_batch, wl.isl + wl.osl / 2, wl.mtp, wl.osl)
    pre_s = step_time(pre.time_s, kernels_launched(pre, f_prefill), shape.prompts_per_step, True, f_prefill,
                      layers=step_layers(model, prefill_pc, "prefill", shape.prompts_per_step,
                                         prompt_draft_passes(wl.mtp if model.num_mtp_layers else 0)))
    dec_s = step_time(dec.time_s, kernels_launched(dec, f_decode), shape.running, shape.eager_decode, f_decode,
                      layers=step_layers(model, decode_pc, "decode", dec_batch,
                                         wl.mtp if model.num_mtp_layers else 0))
    mtp_layers = model.num_mtp_layers if wl.mtp else 0
    xfer = kv_transfer(model, hw, prefill_pc, decode_pc, prec.kv_format, wl.isl, mtp_layers,
                       dec_opts.kvp_splits_attention_weights, wl.prefill_workers, wl.decode_workers,
                       layout=dec_opts.cache_layout, over_nics=f_decode.kv_handoff_over_nics)
    # the front end's cost (HTTP, tokenizer, router) is paid where the request enters: the prefill server's
    overhead = request_overhead(Workload("serving", request_overhead_s=wl.request_overhead_s), f_prefill)
    t = disagg_times(shape, pre_s, dec_s, xfer.time_s, wl.concurrency, wl.osl, overhead, wl.benchmark_waves,
                     wl.mtp, wl.mtp_accept, ServingPolicy.of(f_decode).first_token_iterations, wl.burst_share)
    # the prefill worker runs the MTP layers as the decode worker does (it builds their cache, handed over with
    # the rest: kv_transfer), so it holds their weights and that cache too
    # and a forward holds every prompt of its step, as priced (its command's budget holds them: launch.emit)
    step_prompts = shape.prompts_per_step * shape.prefill_replicas
    # a prefill worker's own command: its step budget and its EP kernels' buffers (MemoryOptions.prefill_worker)
    pmem = memory_per_rank(model, hw, prefill_pc, prec, step_prompts, wl.isl,
                           replace(workload_options(pre_opts, wl.isl, step_prompts=step_prompts
                                                    if f_prefill.prefill_budget_set else None), prefill_worker=True),
                           mtp_layers=wl.mtp)
    dmem = memory_per_rank(model, hw, decode_pc, prec, shape.running * shape.decode_replicas, wl.isl + wl.osl,
                           dec_opts, mtp_layers=wl.mtp)
    throughput = wl.concurrency * wl.osl / t.request_s
    return DisaggEstimate(t, shape, xfer, pre, dec, pmem, dmem, wl.prefill_workers * prefill_pc.world_size,
                          wl.decode_workers * decode_pc.world_size, throughput, wl.isl, wl.osl, wl.concurrency)


__all__ = [
    "DisaggWorkload", "DisaggEstimate", "estimate_disagg", "prompts_per_step", "disagg_hit_note", "kv_bytes_per_request",
           "constant_state_per_request",
    "kv_transfer", "transfer_tier", "Transfer", "PoolShape", "pool_shape", "DisaggTimes", "disagg_times",
    "workers_to_match", "DECODE_ADMISSION_STEPS", "prefill_queue_wait", "closed_loop_rate", "LOOP_BISECTION_STEPS",
    "burst_weight", "burst_blend",
]
