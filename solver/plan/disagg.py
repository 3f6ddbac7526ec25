"""Disaggregated planning: two plans of the existing planner (phase prefill, phase decode) joined by a rate match
and the KV-transfer cost (estimate.disagg), not a second planner. This module pairs the pools' points
(plan.disagg_pools: the fronts per worker size) and picks the deployment.

A pool pair (prefill point, decode point), a decode worker count y and a prefill worker count x fix the
deployment: the decode pool holds C clients (C = y B_w with B_w running sequences per decode worker, or the
scenario's fixed concurrency); x runs from one to the rate match at the decode demand C / (OSL TPOT), the fewest
prefill workers whose capacity x n_w / P (n_w prompts per step per worker, P the step) meets the most the decode
pool could finish (estimate.disagg.workers_to_match), within the cards.

A cheap ratio estimate ranks the pairs: the closed loop the full estimate solves (estimate.disagg.closed_loop_rate:
the C clients' rate with the prefill step and the prefill queue in each cycle), transfer and fixed costs aside,
gives the request latency and the ranks per output token/s, and the scenario's score on them orders the pairs
(so that the order and the figures agree). In that order each is evaluated by the full serving model at
concurrency C and judged by the SLA, until SHORTLIST meet it (or MAX_EVALUATED have been tried, so that a tight
TTFT SLA still finds the pairs the ratio ranks lower); where none of those meets a TTFT SLA, the MAX_EVALUATED
pairs of lowest TTFT estimate are tried next (where the remedy looks for the SLA's floor). The scenario's score
on the full estimates picks the winner.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Callable, NamedTuple

from solver.errors import Change, InfeasibleError, InputError, Remedy, either, remedies
from solver.estimate.compute import factors_for
from solver.estimate.closed_loop import first_wave_groups, synced_ranks
from solver.estimate.disagg import (DisaggEstimate, DisaggWorkload, burst_blend, burst_weight, closed_loop_rate,
                                    estimate_disagg, workers_to_match)
from solver.estimate.memory_options import MemoryOptions
from solver.estimate.workload import DEFAULT_BENCHMARK_WAVES
from solver.plan import points
from solver.plan.disagg_pools import active_group, cards_for, pool_fronts, worker_sizes
from solver.plan.solve import Planned
from solver.specs.disagg_fitted import burst_share
from solver.specs.framework import FrameworkProfile
from solver.specs.pool_workers import pool_workers
from solver.specs.hardware import Hardware
from solver.specs.model import ModelSpec
from solver.specs.parallel import ParallelConfig
from solver.specs.precision import Precision
from solver.specs.scenario import Scenario

if TYPE_CHECKING:
    from solver.plan.disagg_floor import PrefillScreen

SHORTLIST = 40  # pool pairs meeting the SLA that the scenario's score chooses among
MAX_EVALUATED = 400  # pool pairs evaluated with the full serving model at most per order (a few ms each)
SCORE_DIGITS = 9  # a score (a log-ratio) equal to this many digits is a tie: float noise, not a difference


@dataclass(frozen=True)
class Pool:
    """One pool: its workers and the phase plan's point (config, batch per worker, the phase estimate)."""

    phase: str  # "prefill" | "decode"
    workers: int
    planned: Planned  # batch = prompts per step (prefill) / running sequences (decode) of one worker

    @property
    def ranks(self) -> int:
        return self.workers * self.planned.config.world_size


@dataclass(frozen=True)
class DisaggPlan:
    prefill: Pool
    decode: Pool
    estimate: DisaggEstimate
    demand_rps: float  # requests/s the decode pool finishes at its batch and TPOT (the ratio estimate)
    prefill_rps_per_worker: float  # requests/s one prefill worker starts

    @property
    def ratio(self) -> str:
        return f"{self.prefill.workers}P{self.decode.workers}D"

    @property
    def cards(self) -> int:
        return self.prefill.ranks + self.decode.ranks


@dataclass
class DisaggResult:
    best: DisaggPlan
    alternatives: list[DisaggPlan]
    worker_sizes: list[int]
    skipped: dict[str, InfeasibleError] = field(default_factory=dict)  # 'phase W=size' -> why no plan


def sla_misses(e: DisaggEstimate, scenario: Scenario) -> list[str]:
    misses = []
    if not e.prefill_memory.feasible:
        misses.append("B.memory_per_rank (prefill)")
    if not e.decode_memory.feasible:
        misses.append("B.memory_per_rank (decode)")
    if scenario.ttft_ms is not None and e.ttft_s * 1e3 > scenario.ttft_ms * (1 + 1e-6):
        misses.append("SLA.ttft")
    if scenario.tpot_ms is not None and e.tpot_s * 1e3 > scenario.tpot_ms * (1 + 1e-6):
        misses.append("SLA.tpot")
    return misses


@dataclass(frozen=True)
class _Job:
    """What every plan of one disaggregated solve shares: the model on `cards` of the hardware, and how."""

    model: ModelSpec
    hw: Hardware
    prec: Precision
    fw: FrameworkProfile
    cards: int
    params: points.SolverParams | None
    allow_cross_node: bool
    mem_opts: MemoryOptions | None
    sizes: list[int]
    method: str
    plans: dict = field(default_factory=dict, compare=False, repr=False)  # phase plans: disagg_pools._memo_plan
    together: tuple[Scenario, ...] = field(default=(), compare=False, repr=False)  # disagg_pools.PlanGroup
    # the worker counts the user fixes: the pairs a remedy reads and the plans it confirms keep them
    fixed: "Workers" = field(default_factory=lambda: Workers())

    def fronts(self, scenario: Scenario, diagnose: bool = True, screen: "PrefillScreen | None" = None):
        return pool_fronts(self.model, self.hw, self.prec, self.fw, self.cards, scenario, self.params,
                       self.allow_cross_node, self.mem_opts, self.sizes, self.method, diagnose, self.plans, screen,
                       self.together)

    @cached_property
    def burst_phi(self) -> float:
        """The share of requests that wait in the first wave's burst, as evaluate's workload sets it."""
        return burst_weight(burst_share(self.fw.name, self.hw.name), DEFAULT_BENCHMARK_WAVES)

    @cached_property
    def factors(self):
        return factors_for(self.hw, self.fw.efficiency_for(self.hw))

    def evaluate(self, scenario: Scenario, t: "_Pair") -> DisaggPlan:
        """The pair by the full serving model at its concurrency."""
        f = self.factors
        wl = DisaggWorkload(isl=scenario.isl, osl=scenario.osl, concurrency=t.conc, prefill_workers=t.x,
                            decode_workers=t.y, prefill_batch=prompts_per_replica(t.p),
                            decode_batch=max(1, math.ceil(t.d.batch / t.d.config.attn_replicas)), mtp=scenario.mtp,
                            mtp_accept=scenario.mtp_accept, burst_share=burst_share(self.fw.name, self.hw.name),
                            prefix_hit=scenario.prefix_hit)
        e = estimate_disagg(self.model, self.hw, t.p.config, t.d.config, self.prec, f, f, wl, self.mem_opts)
        return DisaggPlan(Pool("prefill", t.x, t.p), Pool("decode", t.y, t.d), e, t.demand, t.mu_w)


class _Pair(NamedTuple):
    """A pool pair before the full serving model: its ratio estimate (request latency and ranks per output token/s
    in the closed loop, transfer and fixed costs aside: pool_pairs), the two phase points, x and y workers, the
    decode demand (requests/s with no prefill in a cycle), one prefill worker's capacity (prompts/s) and the
    concurrency."""

    lat: float
    inv: float
    p: Planned
    d: Planned
    x: int
    y: int
    demand: float
    mu_w: float
    conc: int
    steady_ttft: float = 0.0  # the ratio estimate's TTFT in the steady loop: prefill step, its queue, a decode step


MIN_DISAGG_CARDS = 2  # a worker per pool, one card at least each


def refuse_too_few_cards(cards: int) -> None:
    """A size smaller than a worker per pool cannot run at all: refused in one line naming --cards."""
    if cards < MIN_DISAGG_CARDS:
        raise InputError("--cards", f"disaggregated serving needs at least {MIN_DISAGG_CARDS} cards (one per pool), "
                                    f"got {cards}")


def plan_disagg(model: ModelSpec, hw: Hardware, prec: Precision, fw: FrameworkProfile, cards: int,
                scenario: Scenario, params: points.SolverParams | None = None, allow_cross_node: bool = False,
                mem_opts: MemoryOptions | None = None, sizes: list[int] | None = None,
                top: int = 3, method: str = "cpsat", fixed: Workers | None = None,
                diagnose: bool = True) -> DisaggResult:
    """The best disaggregated deployment within `cards` ranks for the scenario and SLA (module docstring).
    `fixed`: the prefill and decode worker counts the user fixes (Workers; None: the rate match picks them).
    `diagnose` False: no deployment raises a bare InfeasibleError, neither why nor a remedy (a remedy's own check,
    which reads only whether one plans)."""
    refuse_too_few_cards(cards)
    fixed = fixed or Workers()
    fixed = Workers(*pool_workers("disagg", fixed.prefill, fixed.decode))  # run_disagg's `workers`, as the CLI's
    if scenario.phase != "serving":
        raise InputError("--phase", "disaggregated planning plans both phases; use --phase serving")
    group = active_group()  # a sweep's kinds and sizes share the phase plans (disagg_pools.PlanGroup)
    plans, together = (group.plans_for((model, hw, prec, fw, params, allow_cross_node, mem_opts, method))
                       if group is not None else ({}, ()))
    job = _Job(model, hw, prec, fw, cards, params, allow_cross_node, mem_opts, sizes or worker_sizes(model, hw, cards),
               method, plans, together, fixed)
    fronts, skipped = job.fronts(scenario, diagnose=diagnose)
    pairs = _pairs(scenario, fronts, cards, fw, model, fixed)
    if not diagnose and not pairs:
        raise InfeasibleError(f"no disaggregated deployment of {model.name} on {cards} x {hw.name}")
    if not pairs and fixed.given:
        raise fixed_unplaceable(fixed, fronts, cards, hw, model, scenario, job)
    if not pairs:
        from solver.plan.disagg_remedies import no_pair, unpairable  # they import this module: imported where asked

        if _pairs(scenario, fronts, cards):
            raise unpairable(job, scenario, fronts)
        raise no_pair(job, scenario, fronts, skipped)
    evaluated, rejected = _evaluated(job, scenario, pairs)
    if not evaluated and not diagnose:
        raise InfeasibleError(f"no disaggregated deployment of {model.name} on {cards} x {hw.name}")
    if not evaluated:
        from solver.plan.disagg_remedies import none_meets

        raise none_meets(job, scenario, rejected, fronts)
    lat = [scenario.request_latency(c.estimate.ttft_s, c.estimate.tpot_s) for c in evaluated]
    inv = [1.0 / c.estimate.output_tokens_per_s_per_rank for c in evaluated]
    lat_ref, inv_ref = min(lat), min(inv)
    # a tie on the score (the same pools scaled: 2P2D as 1P1D per rank) goes to the one serving more on the cards;
    # the score is rounded past the float noise of the same per-rank figures
    order = sorted(range(len(evaluated)), key=lambda i: (round(scenario.score(lat[i], inv[i], lat_ref, inv_ref),
                                                               SCORE_DIGITS),
                                                         -evaluated[i].estimate.output_tokens_per_s))
    ranked = [evaluated[i] for i in order]
    alts, seen = [], {_key(ranked[0])}
    for c in ranked[1:]:
        if len(alts) >= top - 1:
            break
        if _key(c) not in seen:
            seen.add(_key(c))
            alts.append(c)
    return DisaggResult(ranked[0], alts, job.sizes, skipped)


def _shortlist(job: _Job, scenario: Scenario, pairs: list[_Pair]) -> tuple[list[DisaggPlan], list[str]]:
    """(the first SHORTLIST of `pairs`, in order, that the full serving model finds within the SLA; the SLA
    families the others missed)."""
    evaluated: list[DisaggPlan] = []
    rejected: list[str] = []
    for t in pairs:
        if len(evaluated) >= SHORTLIST:
            break
        c = job.evaluate(scenario, t)
        misses = sla_misses(c.estimate, scenario)
        if misses:
            rejected.extend(misses)
            continue
        evaluated.append(c)
    return evaluated, rejected


def burst_ttft(t: _Pair, phi: float) -> float:
    """A pair's TTFT estimate with the first wave's burst, fixed costs and transfer aside (as
    estimate.disagg.disagg_times weighs them): phi x the burst (the concurrency's prompts through the x workers'
    prompts per step, a step a group) + (1 - phi) x the steady loop's TTFT. Seconds."""
    step = t.p.estimate.ttft_s
    per_step = max(1, round(t.x * t.mu_w * step))  # the pool's prompts per step: its rate x the step
    return burst_blend(phi, step * first_wave_groups(t.conc, per_step), t.steady_ttft)


def ttft_order(t: _Pair) -> tuple[float, int, int]:
    """A pair's TTFT estimate without queueing or transfer (prefill step + one decode step), then its
    concurrency, then the most prefill workers (the least queueing): the order a TTFT SLA's floor is searched in."""
    return t.p.estimate.ttft_s + t.d.estimate.tpot_s, t.conc, -t.x


class Workers(NamedTuple):
    """The worker counts a user fixes (`solve --serving disagg --prefill-workers X --decode-workers Y`): None
    leaves that pool's count to the rate match and the cards."""

    prefill: int | None = None
    decode: int | None = None

    @property
    def given(self) -> bool:
        return self.prefill is not None or self.decode is not None

    def label(self) -> str:
        return (f"{self.prefill if self.prefill is not None else 'x'}P"
                f"{self.decode if self.decode is not None else 'y'}D")


def _evaluated(job: "_Job", scenario: Scenario, pairs: list["_Pair"]) -> tuple[list[DisaggPlan], list[str]]:
    """(the pairs the full serving model finds within the SLA, up to SHORTLIST, the SLA families the others missed):
    the first MAX_EVALUATED in the scenario's order (sorted in place), then, where none meets a TTFT SLA, those whose
    TTFT with the first wave's burst is within it, then those of lowest TTFT estimate."""
    lat0, inv0 = min(t.lat for t in pairs), min(t.inv for t in pairs)
    pairs.sort(key=lambda t: scenario.score(t.lat, t.inv, lat0, inv0))  # the scenario's own order, on the ratio
    evaluated, rejected = _shortlist(job, scenario, pairs[:MAX_EVALUATED])
    if not evaluated and scenario.ttft_ms is not None:
        # none the ratio ranks first meets the TTFT SLA (the first wave's burst, which the ratio leaves aside, is
        # past it at their concurrency): the rest in the same order, those whose TTFT with the burst
        # (burst_ttft) is within the SLA, so that the best the SLA allows is found, not the lowest concurrency
        tried = {id(t) for t in pairs[:MAX_EVALUATED]}
        phi = job.burst_phi
        within = [t for t in pairs if id(t) not in tried and burst_ttft(t, phi) <= scenario.ttft_ms / 1e3]
        evaluated, more = _shortlist(job, scenario, within[:MAX_EVALUATED])
        rejected += more
        tried |= {id(t) for t in within[:MAX_EVALUATED]}
    if not evaluated and scenario.ttft_ms is not None:
        # nor those: look where the SLA's floor is looked for (the pairs of lowest TTFT estimate,
        # disagg_remedies._sla_floor), so that an SLA at the floor the remedy names is met
        evaluated, more = _shortlist(job, scenario, [t for t in sorted(pairs, key=ttft_order)[:MAX_EVALUATED]
                                                     if id(t) not in tried])
        rejected += more
    return evaluated, rejected


def fixed_unplaceable(fixed: Workers, fronts: dict, cards: int, hw: Hardware, model: ModelSpec,
                      scenario: Scenario, job: "_Job") -> InfeasibleError:
    """No pair at the user's worker counts: the fewest cards they take at the smallest feasible worker sizes
    (more than `cards`: the remedy, beside the most workers up to the user's whose pools pair on `cards`,
    fewer_workers), or, where those fit the cards, that none of the pairs at those counts pairs or serves the load
    (more cards are then no remedy), or that no worker size of a pool is feasible at all."""
    wp = min(fronts["prefill"], default=None)
    wd = min(fronts["decode"], default=None)
    if wp is None or wd is None:
        return InfeasibleError(f"no disaggregated deployment at {fixed.label()}: no "
                               f"{'prefill' if wp is None else 'decode'} worker size is feasible on {cards} cards",
                               ["B.cards"])
    least = (fixed.prefill or 1) * wp + (fixed.decode or 1) * wd
    smallest = f"the smallest feasible workers are {wp} ranks (prefill) and {wd} (decode)"
    # each alternative offered is one the planner plans
    fewer, tried, fit = fewer_workers(fixed, fronts, cards, scenario, job)
    counts = (Remedy(f"{' '.join(c.option for c in fewer)} (the most workers up to {fixed.label()} the planner "
                     f"finds a deployment at on {cards} cards)", fewer) if fewer else None)
    # the search's bound, where it stopped short of the counts with fewer workers
    unsearched = (f" (the planner finds no deployment at the {tried:,} worker counts below {fixed.label()} with the "
                  f"most workers that fit {cards} cards; the {fit - tried:,} with fewer were not searched)"
                  if not fewer and fit > tried else "")
    if least <= cards:
        free = (Remedy("--prefill-workers / --decode-workers left to the rate match",
                       tuple(Change(f, None) for f, n in (("--prefill-workers", fixed.prefill),
                                                          ("--decode-workers", fixed.decode)) if n is not None))
                if _plans_at(job, scenario, fronts, cards, Workers()) else None)
        return InfeasibleError(f"no disaggregated deployment at {fixed.label()} on {cards} cards: {smallest}, "
                               f"{least} cards at {fixed.label()}, but none of its pairs pairs or serves the load "
                               "(a --concurrency / --max-concurrency the decode workers' batches do not share, or "
                               f"pools the KV transfer cannot pair){unsearched}", ["B.cards"],
                               remedies(either(counts, free)))
    need = cards_for(model, hw, wp, wd, least)  # both sizes worker sizes of the cards (disagg_pools.worker_sizes)
    # the cards that place those workers are not planned here: with an SLA it is set aside (the fronts at `need`
    # cards are another plan's)
    from solver.plan.memory_remedies import sla_changes_aside

    aside = sla_changes_aside(scenario)
    room = Remedy(f"--cards {need}" + (" (room for them, SLAs aside)" if aside else ""),
                  (Change("--cards", need), *aside))
    return InfeasibleError(f"no disaggregated deployment at {fixed.label()} within {cards} cards: {smallest}, so "
                           f"{fixed.label()} takes {need} cards at least{unsearched}", ["B.cards"],
                           remedies(either(room, counts)))


def _plans_at(job: "_Job", scenario: Scenario, fronts: dict, cards: int, workers: Workers) -> bool:
    """Whether the planner finds a deployment within the SLA at these worker counts (Workers(): the rate match) on
    `cards`, as plan_disagg plans one: a pair of the pools (_pairs) that the full serving model keeps (_evaluated)."""
    pairs = _pairs(scenario, fronts, cards, job.fw, job.model, workers)
    return bool(pairs) and bool(_evaluated(job, scenario, pairs)[0])


# the most worker counts fewer_workers evaluates (each up to MAX_EVALUATED x 3 pairs estimated, tens of ms; every
# count up to 16P16D on 32 cards, 184 of them, took 17 s): past it the counts with fewer workers are not searched,
# and the answer says so (fewer_workers' third value)
FEWER_TRIES = 8


def fewer_workers(fixed: Workers, fronts: dict, cards: int, scenario: Scenario, job: "_Job"
                  ) -> tuple[tuple[Change, ...] | None, int, int]:
    """(the changes to the user's fixed worker counts that keep the most workers (each count at most the user's,
    the pools' total nearest theirs) whose smallest feasible sizes fit `cards` and at which the planner finds a
    deployment within the SLA (_pairs at those counts, _evaluated of them, as plan_disagg plans a rerun), the
    counts searched, the counts that fit): None where none does before FEWER_TRIES counts are evaluated (a count
    whose pools form no pair is searched without an evaluation: it plans nothing)."""
    wp, wd = min(fronts["prefill"]), min(fronts["decode"])
    # at most the workers of the smallest sizes that fit beside one of the other pool
    fits = [Workers(p, d) for p in (range(min(fixed.prefill, (cards - wd) // wp), 0, -1) if fixed.prefill else [None])
            for d in (range(min(fixed.decode, (cards - wp) // wd), 0, -1) if fixed.decode else [None])
            if (p, d) != (fixed.prefill, fixed.decode) and (p or 1) * wp + (d or 1) * wd <= cards]
    fits.sort(key=lambda w: -((w.prefill or 0) + (w.decode or 0)))
    evaluated = 0
    for i, w in enumerate(fits):
        if evaluated == FEWER_TRIES:
            return None, i, len(fits)
        pairs = _pairs(scenario, fronts, cards, job.fw, job.model, w)
        if not pairs:
            continue
        evaluated += 1
        if _evaluated(job, scenario, pairs)[0]:
            return (tuple(Change(flag, n) for flag, n, asked in (("--prefill-workers", w.prefill, fixed.prefill),
                                                                ("--decode-workers", w.decode, fixed.decode))
                          if n is not None and n != asked), i + 1, len(fits))
    return None, len(fits), len(fits)


def _pairs(scenario: Scenario, fronts: dict, cards: int, fw: FrameworkProfile | None = None,
           model: ModelSpec | None = None, fixed: Workers = Workers()) -> list[_Pair]:
    """Every (prefill point, decode point, y, x) that fits the cards, with its ratio estimate (pool_pairs); with
    `fw`, of the pools its KV transfer can pair (FrameworkProfile.unpaired); `fixed`: at the user's counts only."""
    out = []
    paired = _pair_check(fw) if fw is not None else None
    for wp, pre_pts in fronts["prefill"].items():
        for wd, dec_pts in fronts["decode"].items():
            for d in dec_pts:
                out += pool_pairs(scenario, cards, wp, pre_pts, wd, d, fw, model, paired, fixed)
    return out


def _pair_check(fw: FrameworkProfile) -> Callable[[ParallelConfig, ParallelConfig], bool]:
    """fw.unpaired(prefill, decode) is None, once per pair of layouts (a front repeats a layout at each batch)."""
    memo: dict[tuple[ParallelConfig, ParallelConfig], bool] = {}

    def paired(pc: ParallelConfig, dc: ParallelConfig) -> bool:
        hit = memo.get((pc, dc))
        if hit is None:
            hit = memo[(pc, dc)] = fw.unpaired(pc, dc) is None
        return hit
    return paired


def pool_pairs(scenario: Scenario, cards: int, wp: int, pre_pts: list[Planned], wd: int, d: Planned,
               fw: FrameworkProfile | None = None, model: ModelSpec | None = None,
               paired: Callable[[ParallelConfig, ParallelConfig], bool] | None = None,
               fixed: Workers = Workers()) -> list[_Pair]:
    """The pairs of decode point `d` (workers of `wd` ranks) with the prefill points `pre_pts` (of `wp`), y, the
    prefill point, then x in order: those of _pairs. x runs from 1 to the rate match at the decode demand (the
    most prefill workers the decode pool could keep busy, as no request's cycle is shorter than its decode); each
    pair's ratio estimate is the closed loop the full estimate solves (estimate.disagg.closed_loop_rate): C
    clients cycling through the prefill step, their decode and the prefill queue's wait, transfer and fixed costs
    aside. `model`: whose prefill ranks step together (closed_loop.synced_ranks); None: each rank alone.
    `paired`: fw's pair check, memoized (_pair_check). `fixed`: y and / or x the user fixes (x past the rate
    match too: the prefill workers the match would leave idle are the user's to keep)."""
    out = []
    if fw is not None:  # pools the engine's KV transfer cannot pair are no deployment (the launch refuses them)
        paired = paired or _pair_check(fw)
        pre_pts = [p for p in pre_pts if paired(p.config, d.config)]
    synced_of = [synced_ranks(model, p.config) if model is not None else 1 for p in pre_pts]
    tpot = d.estimate.tpot_s
    ys = range(1, (cards - wp) // wd + 1)
    for y in (ys if fixed.decode is None else [fixed.decode] if fixed.decode in ys else []):
        conc = _concurrency(scenario, d.batch, y)
        # a fixed concurrency makes the planner's bound moot (Scenario)
        if conc is None or (scenario.concurrency is None and conc > scenario.max_concurrency):
            continue
        demand = conc / (scenario.osl * tpot)  # the decode pool's rate with no prefill in a request's cycle
        for p, synced in zip(pre_pts, synced_of):
            mu_w = p.estimate.output_tokens_per_s  # prompts/s: one token per prompt
            step = p.estimate.ttft_s
            cycle = step + scenario.osl * tpot  # prefill, first decode step, the rest: no queueing, no transfer
            xs = range(1, workers_to_match(demand, mu_w) + 1) if fixed.prefill is None else [fixed.prefill]
            for x in xs:
                if x * wp + y * wd > cards:
                    break
                rate = closed_loop_rate(conc, cycle, x * mu_w, step, synced)
                wait = max(0.0, conc / rate - cycle)  # W_q at the root (Little's law, as disagg_times)
                lat = scenario.request_latency(step + wait + tpot, tpot)
                out.append(_Pair(lat, (x * wp + y * wd) / (rate * scenario.osl), p, d, x, y, demand, mu_w, conc,
                                 step + wait + tpot))
    return out


def _concurrency(scenario: Scenario, batch: int, decode_workers: int) -> int | None:
    """Clients the pair serves: the decode pool full (y x B_w), or the scenario's fixed concurrency when its share
    per decode worker falls in this decode point's batch bucket (the front's batches are powers of two; the full
    model re-evaluates the decode step at the actual share)."""
    if scenario.concurrency is None:
        return decode_workers * batch
    share = -(-scenario.concurrency // decode_workers)
    return scenario.concurrency if batch // 2 < share <= batch else None


def prompts_per_replica(p: Planned) -> int:
    """Prompts one attention replica of a prefill worker takes per step at the plan's batch: batch / R_p, whole
    for the pool's points (disagg_pools.FILLS_REPLICAS); at least one for a point planned without the rule."""
    return max(1, math.ceil(p.batch / p.config.attn_replicas))


def _key(c: DisaggPlan) -> tuple:
    """Distinct alternatives: another pool layout or ratio, not the same deployment at another batch."""
    return (tuple(c.prefill.planned.config.knobs().items()), tuple(c.decode.planned.config.knobs().items()),
            c.prefill.workers, c.decode.workers)
