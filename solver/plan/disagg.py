"""Disaggregated planning: two plans of the existing planner (phase prefill, phase decode) joined by a rate match
and the KV-transfer cost (estimate.disagg), not a second planner.

For every worker size W (ranks per worker) that fits the model, `plan` gives the prefill front (configs x prompts
per step, with the prefill time) and the decode front (configs x running sequences, with TPOT under the SLA).
A prefill point's batch is the prompts its step holds, all of them: the pool's serving model steps every attention
replica with the same n prompts (estimate.disagg: mu = x R_p n / P_n), so the prefill plans admit only layouts
whose replicas divide the batch (FILLS_REPLICAS) and try every batch that is one prompt per replica for some
layout (the divisors of W) besides the larger steps (prefill_batches).
A pool pair (prefill point, decode point) and a decode worker count y fix the demand: the decode pool finishes
lambda = C / (OSL TPOT) requests/s (C = y B_w with B_w running sequences per decode worker, or the scenario's
fixed concurrency); the rate match takes the fewest prefill workers whose capacity x n_w / P (n_w prompts per
step per worker, P the step) meets it, within the cards (estimate.disagg.workers_to_match).

A cheap ratio estimate (request latency without queueing, ranks per output token/s at the demand) ranks the pairs
by the scenario's score; in that order each is evaluated by the full serving model at concurrency C and judged by
the SLA, until SHORTLIST meet it (or MAX_EVALUATED have been tried, so that a tight TTFT SLA still finds the pairs
the ratio ranks lower); where none of those meets a TTFT SLA, the MAX_EVALUATED pairs of lowest TTFT estimate
are tried next (where the remedy looks for the SLA's floor). The scenario's score on the full estimates picks the
winner.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, NamedTuple

from solver.errors import InfeasibleError, InputError
from solver.estimate.compute import factors_for
from solver.estimate.disagg import DisaggEstimate, DisaggWorkload, estimate_disagg, workers_to_match
from solver.estimate.memory_options import MemoryOptions
from solver.plan import points
from solver.plan.solve import Planned, PlanResult, plan
from solver.specs.disagg_fitted import burst_share
from solver.memo import IdentityMemo
from solver.specs.framework import FrameworkProfile
from solver.specs.profile_rules import Rule
from solver.specs.hardware import Hardware
from solver.specs.model import ModelSpec
from solver.specs.precision import Precision
from solver.specs.scenario import Scenario

if TYPE_CHECKING:
    from solver.plan.disagg_floor import PrefillScreen

SHORTLIST = 40  # pool pairs meeting the SLA that the scenario's score chooses among
MAX_EVALUATED = 400  # pool pairs evaluated with the full serving model at most per order (a few ms each)
# Largest prefill step the prompt grid goes to, tokens per rank: SGLang's large-scale EP prefill runs 16384
# tokens per GPU (facts/measurements.md #3). The prefill planner plans one batch per call (space._batch_values).
PREFILL_TOKENS_PER_RANK_MAX = 16384


# A disaggregated prefill worker under load gives each attention replica its own share of the queued prompts and
# steps them together (estimate.disagg's pool model: n prompts on every replica, mu = x R_p n / P_n). A step of
# `batch` prompts is that only where the replicas divide it; a layout with more replicas than prompts would leave
# some idle, a step the pool model never runs, so the prefill plans the pool pairs from hold this rule beside the
# framework's (the planner's served classes alone cannot: every layout at one batch serves that batch).
FILLS_REPLICAS = Rule(
    id="C.prefill_pool_fills_replicas",
    require="divides(world // (attn_tp_size * cp_size * kvp_size * attn_sp_size), batch)",
    message="a disaggregated prefill worker steps every attention replica with the same prompts: the batch must be "
            "a multiple of the attention replicas",
    source="estimate.disagg (the prefill pool's step: n prompts on each of the R_p attention replicas)",
    bookkeeping=True)


_POOL_FW = IdentityMemo(64)  # profile -> pool_framework(profile)


def pool_framework(fw: FrameworkProfile) -> FrameworkProfile:
    """The framework's rules and FILLS_REPLICAS: what a prefill pool's plans hold. One object per profile, so the
    planner's memos keyed by the profile's identity (its static rule tables) serve every plan of the pool."""
    return _POOL_FW.get((fw,), None, lambda: fw.model_copy(update={"rules": [*fw.rules, FILLS_REPLICAS]}))


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


def worker_sizes(model: ModelSpec, hw: Hardware, cards: int) -> list[int]:
    """Sizes a worker may take: powers of two and multiples of a node that divide the cards, below the cards
    (the other pool needs at least one rank)."""
    sizes = {1 << k for k in range(cards.bit_length()) if (1 << k) < cards}
    sizes |= {w for w in range(hw.ranks_per_node, cards, hw.ranks_per_node) if cards % w == 0}
    return sorted(sizes)


def prefill_batches(isl: int, world: int) -> list[int]:
    """Prompts per prefill step of one worker the prefill plans try: the divisors of W (each is one prompt per
    replica for the layouts of that many replicas, the least step they run, and a few per replica for layouts of
    fewer: at most one prompt's tokens per rank), then W x 2^k up to the token cap."""
    out, b = [d for d in range(1, world + 1) if world % d == 0], 2 * world
    while b * isl <= PREFILL_TOKENS_PER_RANK_MAX * world:
        out.append(b)
        b *= 2
    return out


def phase_scenario(scenario: Scenario, phase: str, batch: int | None = None) -> Scenario:
    """The scenario a pool is planned for: prefill keeps the TTFT SLA (its step must fit in it) at `batch`
    prompts per step, decode the TPOT SLA with the concurrency the planner's to choose. Both keep the MTP depth:
    the prefill worker runs the MTP layers too (its command enables them, and it builds their cache, which the
    KV transfer carries: estimate.disagg), so it holds their weights."""
    if phase == "prefill":
        return Scenario(kind=scenario.kind, isl=scenario.isl, osl=scenario.osl, concurrency=batch,
                        max_concurrency=scenario.max_concurrency, ttft_ms=scenario.ttft_ms, mtp=scenario.mtp,
                        mtp_accept=scenario.mtp_accept, phase="prefill")
    return Scenario(kind=scenario.kind, isl=scenario.isl, osl=scenario.osl, max_concurrency=scenario.max_concurrency,
                    tpot_ms=scenario.tpot_ms, mtp=scenario.mtp, mtp_accept=scenario.mtp_accept, phase="decode")


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


def _fronts(model, hw, prec, fw, cards, scenario, params, allow_cross_node, mem_opts, sizes, method,
            diagnose: bool = True, plans: dict | None = None, screen: "PrefillScreen | None" = None):
    """(the prefill and decode fronts per worker size, 'phase W=size' -> why that pool has no point).
    `diagnose`: explain those failures (the caller reads them). A prefill batch below W that fails is passed over
    (FILLS_REPLICAS admits more layouts at a larger one); from W on a failure ends the batches. Only a pool with
    no point is diagnosed (a diagnosis re-plans with each constraint family relaxed): _prefill_failure.
    `plans`: a memo of the phase plans (_memo_plan) shared by the calls of one solve. `screen`: the decode fronts
    are planned first, and a prefill step the screen passes over (its points all lie past what the caller reads,
    disagg_floor) is not planned: the fronts hold the same points but those."""
    fronts: dict[str, dict[int, list[Planned]]] = {"prefill": {}, "decode": {}}
    skipped: dict[str, InfeasibleError] = {}
    pool_fw = pool_framework(fw)

    def phase_plan(phase: str, w: int, b: int | None, rules: FrameworkProfile, diagnosed: bool) -> PlanResult:
        def run() -> PlanResult:
            return plan(model, hw, prec, rules, w, phase_scenario(scenario, phase, b), params, method=method,
                        allow_cross_node=allow_cross_node, mem_opts=mem_opts, explain_binding=False,
                        diagnose=diagnosed)
        if plans is None:
            return run()
        return _memo_plan(plans, (phase, w, id(rules), phase_scenario(scenario, phase, b)), diagnosed, run)

    def add(phase: str, w: int) -> None:
        if phase == "decode":
            pts, failure = _decode_points(phase_plan, w, fw, diagnose)
        else:
            # a step never holds more prompts than requests are in flight (the given concurrency, else its cap)
            most = scenario.concurrency or scenario.max_concurrency
            batches = [b for b in prefill_batches(scenario.isl, w) if b <= most] or [1]
            pts, failure = _prefill_points(phase_plan, w, batches, fw, pool_fw, diagnose, screen)
        if failure is not None:
            skipped[f"{phase} W={w}"] = failure
        if not pts:
            return
        seen, uniq = set(), []
        for p in pts:
            k = (tuple(p.config.knobs().items()), p.batch)
            if k not in seen:
                seen.add(k)
                uniq.append(p)
        fronts[phase][w] = uniq
        if screen is not None and phase == "prefill":
            screen.note(w, uniq)

    if screen is None:
        for w in sizes:
            add("decode", w)
            add("prefill", w)
        return fronts, skipped
    for w in sizes:  # the screen reads the decode points
        add("decode", w)
    if fronts["decode"]:  # else no pair, whatever the prefill plans
        screen.start(fronts["decode"])
        for w in sizes:
            add("prefill", w)
    return fronts, skipped


def _memo_plan(plans: dict, key: tuple, diagnosed: bool, run) -> PlanResult:
    """The plan of `key` (phase, W, the rules' identity, the phase scenario), planned once per solve: a pool's
    plans repeat across the solve's scenarios wherever its phase scenario stays (a TTFT SLA set aside leaves the
    decode plans as they were, a TPOT SLA the prefill ones). A failure planned undiagnosed is planned again
    where a diagnosis is asked for."""
    hit = plans.get(key)
    if hit is None or (diagnosed and not hit[1] and isinstance(hit[0], InfeasibleError)):
        try:
            hit = (run(), diagnosed)
        except InfeasibleError as exc:
            hit = (exc, diagnosed)
        plans[key] = hit
    if isinstance(hit[0], InfeasibleError):
        raise hit[0]
    return hit[0]


def _points(res: PlanResult) -> list[Planned]:
    return [p for p in res.front + res.candidates if p.estimate.memory.feasible]


def _decode_points(phase_plan, w: int, fw: FrameworkProfile, diagnose: bool
                   ) -> tuple[list[Planned], InfeasibleError | None]:
    """(a W-rank decode worker's points, why it has none)."""
    try:
        return _points(phase_plan("decode", w, None, fw, diagnose)), None
    except InfeasibleError as exc:
        return [], exc


def _prefill_points(phase_plan, w: int, batches: list[int], fw: FrameworkProfile, pool_fw: FrameworkProfile,
                    diagnose: bool, screen: "PrefillScreen | None") -> tuple[list[Planned], InfeasibleError | None]:
    """(a W-rank prefill worker's points over `batches`, why it has none). A step the screen passes over from W on
    is planned after all, before the next step it does not pass over, where the batches would have ended on
    its failure (the steps after it would not be in the fronts)."""
    pts: list[Planned] = []
    passed: list[int] = []  # batches from W on the screen passed over since the last one planned
    for b in batches:
        if screen is not None and not screen.reaches(w, b):
            if b >= w:
                passed.append(b)
            continue
        if any(_fails(phase_plan, w, q, pool_fw) for q in passed):  # in order: the first failure ends them
            break  # (their points lie past the screen's: not taken)
        passed = []
        try:
            res = phase_plan("prefill", w, b, pool_fw, False)
        except InfeasibleError:
            if b >= w:
                break  # every layout is admitted from W on: more prompts per step will not fit either
            continue  # below W the rule admits more layouts at a larger batch
        pts += _points(res)
    if pts or screen is not None:  # the screen's caller reads no failure
        return pts, None
    return pts, _prefill_failure(phase_plan, w, max(b for b in batches if b <= w or b == batches[0]), fw, diagnose)


def _fails(phase_plan, w: int, b: int, pool_fw: FrameworkProfile) -> bool:
    try:
        phase_plan("prefill", w, b, pool_fw, False)
    except InfeasibleError:
        return True
    return False


def _prefill_failure(phase_plan, w: int, full: int, fw: FrameworkProfile, diagnose: bool) -> InfeasibleError:
    """Why no prefill step of a W-rank worker plans: the plan of one prompt on any layout (the least load of every
    layout, so what binds it binds every step the pool could run) under the framework's own rules, diagnosed;
    where that one plans, the layouts that fit leave replicas idle, a step the pool model never runs: then the
    pool's plan of `full` prompts (W, one per rank, a step every layout runs with its replicas full, or the
    largest step tried below it), diagnosed with FILLS_REPLICAS held (the model's bookkeeping, never what binds:
    the SLA or memory the full layouts miss is).
    Not re-planned where the failure goes unread (`diagnose` False)."""
    if not diagnose:
        return InfeasibleError(f"no prefill step of a {w}-rank worker plans", [])
    for rules, batch in ((fw, 1), (pool_framework(fw), full)):
        try:
            phase_plan("prefill", w, batch, rules, True)
        except InfeasibleError as exc:
            return exc
    # unreachable while the step of W prompts failed among the batches (_prefill_points), and kept as a guard
    return InfeasibleError(f"no prefill step of a {w}-rank worker keeps every attention replica busy within the "
                           "limits", [])


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
    plans: dict = field(default_factory=dict, compare=False, repr=False)  # the phase plans made: _memo_plan

    def fronts(self, scenario: Scenario, diagnose: bool = True, screen: "PrefillScreen | None" = None):
        return _fronts(self.model, self.hw, self.prec, self.fw, self.cards, scenario, self.params,
                       self.allow_cross_node, self.mem_opts, self.sizes, self.method, diagnose, self.plans, screen)

    @cached_property
    def factors(self):
        return factors_for(self.hw, self.fw.efficiency_for(self.hw))

    def evaluate(self, scenario: Scenario, t: "_Pair") -> DisaggPlan:
        """The pair by the full serving model at its concurrency."""
        f = self.factors
        wl = DisaggWorkload(isl=scenario.isl, osl=scenario.osl, concurrency=t.conc, prefill_workers=t.x,
                            decode_workers=t.y, prefill_batch=prompts_per_replica(t.p),
                            decode_batch=max(1, math.ceil(t.d.batch / t.d.config.attn_replicas)), mtp=scenario.mtp,
                            mtp_accept=scenario.mtp_accept, burst_share=burst_share(self.fw.name, self.hw.name))
        e = estimate_disagg(self.model, self.hw, t.p.config, t.d.config, self.prec, f, f, wl, self.mem_opts)
        return DisaggPlan(Pool("prefill", t.x, t.p), Pool("decode", t.y, t.d), e, t.demand, t.mu_w)


class _Pair(NamedTuple):
    """A rate-matched pool pair before the full serving model: its ratio estimate (request latency without
    queueing or transfer, ranks per output token/s), the two phase points, x and y workers, the decode demand
    (requests/s), one prefill worker's capacity (prompts/s) and the concurrency."""

    lat: float
    inv: float
    p: Planned
    d: Planned
    x: int
    y: int
    demand: float
    mu_w: float
    conc: int


def plan_disagg(model: ModelSpec, hw: Hardware, prec: Precision, fw: FrameworkProfile, cards: int,
                scenario: Scenario, params: points.SolverParams | None = None, allow_cross_node: bool = False,
                mem_opts: MemoryOptions | None = None, sizes: list[int] | None = None,
                top: int = 3, method: str = "cpsat") -> DisaggResult:
    """The best disaggregated deployment within `cards` ranks for the scenario and SLA (module docstring)."""
    if cards < 2:
        raise InputError("--cards", f"disaggregated serving needs at least 2 cards (one per pool), got {cards}")
    if scenario.phase != "serving":
        raise InputError("--phase", "disaggregated planning plans both phases; use --phase serving")
    job = _Job(model, hw, prec, fw, cards, params, allow_cross_node, mem_opts, sizes or worker_sizes(model, hw, cards),
               method)
    fronts, skipped = job.fronts(scenario)
    pairs = _pairs(scenario, fronts, cards)
    if not pairs:
        from solver.plan.disagg_remedies import no_pair  # it imports this module: imported where it is asked

        raise no_pair(job, scenario, fronts, skipped)
    lat0, inv0 = min(t.lat for t in pairs), min(t.inv for t in pairs)
    pairs.sort(key=lambda t: scenario.score(t.lat, t.inv, lat0, inv0))  # the scenario's own order, on the ratio
    evaluated, rejected = _shortlist(job, scenario, pairs[:MAX_EVALUATED])
    if not evaluated and scenario.ttft_ms is not None:
        # none the ratio ranks first meets the TTFT SLA: look where its floor is looked for (the pairs of lowest
        # TTFT estimate, disagg_remedies._sla_floor), so that an SLA at the floor the remedy names is met
        first = {id(t) for t in pairs[:MAX_EVALUATED]}
        evaluated, more = _shortlist(job, scenario, [t for t in sorted(pairs, key=ttft_order)[:MAX_EVALUATED]
                                                     if id(t) not in first])
        rejected += more
    if not evaluated:
        from solver.plan.disagg_remedies import none_meets

        raise none_meets(job, scenario, rejected)
    lat = [scenario.request_latency(c.estimate.ttft_s, c.estimate.tpot_s) for c in evaluated]
    inv = [1.0 / c.estimate.output_tokens_per_s_per_rank for c in evaluated]
    lat_ref, inv_ref = min(lat), min(inv)
    order = sorted(range(len(evaluated)), key=lambda i: scenario.score(lat[i], inv[i], lat_ref, inv_ref))
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


def ttft_order(t: _Pair) -> tuple[float, int]:
    """A pair's TTFT estimate without queueing or transfer (prefill step + one decode step), then its
    concurrency: the order a TTFT SLA's floor is searched in."""
    return t.p.estimate.ttft_s + t.d.estimate.tpot_s, t.conc


def _pairs(scenario: Scenario, fronts: dict, cards: int) -> list[_Pair]:
    """Every (prefill point, decode point, y) whose rate match fits the cards, with its ratio estimate."""
    out = []
    for wp, pre_pts in fronts["prefill"].items():
        for wd, dec_pts in fronts["decode"].items():
            for d in dec_pts:
                out += pool_pairs(scenario, cards, wp, pre_pts, wd, d)
    return out


def pool_pairs(scenario: Scenario, cards: int, wp: int, pre_pts: list[Planned], wd: int, d: Planned) -> list[_Pair]:
    """The pairs of decode point `d` (workers of `wd` ranks) with the prefill points `pre_pts` (of `wp`), y
    then the prefill point in order: those of _pairs."""
    out = []
    tpot = d.estimate.tpot_s
    for y in range(1, (cards - wp) // wd + 1):
        conc = _concurrency(scenario, d.batch, y)
        # a fixed concurrency makes the planner's bound moot (Scenario)
        if conc is None or (scenario.concurrency is None and conc > scenario.max_concurrency):
            continue
        demand = conc / (scenario.osl * tpot)
        for p in pre_pts:
            mu_w = p.estimate.output_tokens_per_s  # prompts/s: one token per prompt
            x = workers_to_match(demand, mu_w)
            if x * wp + y * wd > cards:
                continue
            lat = scenario.request_latency(p.estimate.ttft_s + tpot, tpot)  # no queueing, no transfer
            out.append(_Pair(lat, (x * wp + y * wd) / (demand * scenario.osl), p, d, x, y, demand, mu_w, conc))
    return out


def _concurrency(scenario: Scenario, batch: int, decode_workers: int) -> int | None:
    """Clients the pair serves: the decode pool full (y x B_w), or the scenario's fixed concurrency when its share
    per decode worker falls in this decode point's batch bucket (the front's batches are powers of two; the full
    model re-evaluates the decode step at the actual share)."""
    if scenario.concurrency is None:
        return decode_workers * batch
    share = -(-scenario.concurrency // decode_workers)
    return scenario.concurrency if batch // 2 < share <= batch else None


def cards_for(model: ModelSpec, hw: Hardware, prefill_size: int, decode_size: int, at_least: int = 0) -> int:
    """The fewest cards (at least `at_least`) on which a prefill worker and a decode worker of these sizes are
    both worker sizes."""
    c = max(prefill_size + decode_size, at_least)
    while not {prefill_size, decode_size} <= set(worker_sizes(model, hw, c)):
        c += 1
    return c


def prompts_per_replica(p: Planned) -> int:
    """Prompts one attention replica of a prefill worker takes per step at the plan's batch: batch / R_p, whole
    for the pool's points (FILLS_REPLICAS); at least one for a point planned without the rule."""
    return max(1, math.ceil(p.batch / p.config.attn_replicas))


def _key(c: DisaggPlan) -> tuple:
    """Distinct alternatives: another pool layout or ratio, not the same deployment at another batch."""
    return (tuple(c.prefill.planned.config.knobs().items()), tuple(c.decode.planned.config.knobs().items()),
            c.prefill.workers, c.decode.workers)
