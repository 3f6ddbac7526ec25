"""Disaggregated planning: two plans of the existing planner (phase prefill, phase decode) joined by a rate match
and the KV-transfer cost (estimate.disagg), not a second planner.

For every worker size W (ranks per worker) that fits the model, `plan` gives the prefill front (configs x prompts
per step, with the prefill time) and the decode front (configs x running sequences, with TPOT under the SLA).
A pool pair (prefill point, decode point) and a decode worker count y fix the demand: the decode pool finishes
lambda = C / (OSL TPOT) requests/s (C = y B_w with B_w running sequences per decode worker, or the scenario's
fixed concurrency); the rate match takes the fewest prefill workers whose capacity x n_w / P (n_w prompts per
step per worker, P the step) meets it, within the cards (estimate.disagg.workers_to_match).

A cheap ratio estimate (request latency without queueing, ranks per output token/s at the demand) ranks the pairs
by the scenario's score; in that order each is evaluated by the full serving model at concurrency C and judged by
the SLA, until SHORTLIST meet it (or MAX_EVALUATED have been tried, so that a tight TTFT SLA still finds the pairs
the ratio ranks lower); the scenario's score on the full estimates picks the winner.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from typing import NamedTuple

from solver.errors import InfeasibleError, InputError
from solver.estimate.compute import factors_for
from solver.estimate.disagg import DisaggEstimate, DisaggWorkload, estimate_disagg, workers_to_match
from solver.estimate.memory import MemoryOptions
from solver.plan import points
from solver.plan.solve import (REMEDY_PLANS, SLA_FLAGS, Planned, PlanResult, _cheaper_weights, _might_fit, plan,
                               relax_slas)
from solver.specs.disagg_fitted import burst_share
from solver.specs.framework import FrameworkProfile
from solver.specs.hardware import Hardware
from solver.specs.limits import MAX_CONCURRENCY
from solver.specs.model import ModelSpec
from solver.specs.precision import Precision
from solver.specs.scenario import Scenario

SHORTLIST = 40  # pool pairs meeting the SLA that the scenario's score chooses among
MAX_EVALUATED = 400  # pool pairs evaluated with the full serving model at most (a few ms each)
# Largest prefill step the prompt grid goes to, tokens per rank: SGLang's large-scale EP prefill runs 16384
# tokens per GPU (facts/measurements.md #3). The prefill planner plans one batch per call (space._batch_values).
PREFILL_TOKENS_PER_RANK_MAX = 16384


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
    """Prompts per prefill step of one worker the prefill plans try: 1, then W x 2^k up to the token cap."""
    out, b = [1], world
    while b * isl <= PREFILL_TOKENS_PER_RANK_MAX * world:
        if b > 1:
            out.append(b)
        b *= 2
    return out


def phase_scenario(scenario: Scenario, phase: str, batch: int | None = None) -> Scenario:
    """The scenario a pool is planned for: prefill keeps the TTFT SLA (its step must fit in it) at `batch`
    prompts per step, decode the TPOT SLA and the MTP depth with the concurrency the planner's to choose."""
    if phase == "prefill":
        return Scenario(kind=scenario.kind, isl=scenario.isl, osl=scenario.osl, concurrency=batch,
                        max_concurrency=scenario.max_concurrency, ttft_ms=scenario.ttft_ms, phase="prefill")
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


def _fronts(model, hw, prec, fw, cards, scenario, params, allow_cross_node, mem_opts, sizes, method):
    fronts: dict[str, dict[int, list[Planned]]] = {"prefill": {}, "decode": {}}
    skipped: dict[str, InfeasibleError] = {}
    for w in sizes:
        for phase, batches in (("decode", [None]), ("prefill", prefill_batches(scenario.isl, w))):
            pts = []
            for b in batches:
                try:
                    res: PlanResult = plan(model, hw, prec, fw, w, phase_scenario(scenario, phase, b), params,
                                           method=method, allow_cross_node=allow_cross_node, mem_opts=mem_opts,
                                           explain_binding=False)
                except InfeasibleError as exc:
                    if b in (None, 1):
                        skipped[f"{phase} W={w}"] = exc
                    break  # more prompts per step will not fit either
                pts += [p for p in res.front + res.candidates if p.estimate.memory.feasible]
            if not pts:
                continue
            seen, uniq = set(), []
            for p in pts:
                k = (tuple(p.config.knobs().items()), p.batch)
                if k not in seen:
                    seen.add(k)
                    uniq.append(p)
            fronts[phase][w] = uniq
    return fronts, skipped


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

    def fronts(self, scenario: Scenario):
        return _fronts(self.model, self.hw, self.prec, self.fw, self.cards, scenario, self.params,
                       self.allow_cross_node, self.mem_opts, self.sizes, self.method)

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
        raise _no_pair(job, scenario, fronts, skipped)
    lat0, inv0 = min(t.lat for t in pairs), min(t.inv for t in pairs)
    pairs.sort(key=lambda t: scenario.score(t.lat, t.inv, lat0, inv0))  # the scenario's own order, on the ratio
    evaluated: list[DisaggPlan] = []
    rejected: list[str] = []
    for t in pairs[:MAX_EVALUATED]:
        if len(evaluated) >= SHORTLIST:
            break
        c = job.evaluate(scenario, t)
        misses = sla_misses(c.estimate, scenario)
        if misses:
            rejected.extend(misses)
            continue
        evaluated.append(c)
    if not evaluated:
        binding = sorted(set(rejected))
        # a decode worker holds the KV of its share of a given --concurrency: fewer requests need less
        fewer = scenario.concurrency and any(b.startswith("B.memory_per_rank") for b in binding)
        raise InfeasibleError(f"no disaggregated deployment of {model.name} on {cards} x {hw.name} meets the SLA: "
                              f"{', '.join(binding)} {'bind' if len(binding) > 1 else 'binds'}", binding,
                              _what_would_fit(_sla_floor(job, scenario, binding),
                                              ["a smaller --concurrency"] if fewer else []))
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


def _pairs(scenario: Scenario, fronts: dict, cards: int) -> list[_Pair]:
    """Every (prefill point, decode point, y) whose rate match fits the cards, with its ratio estimate."""
    out = []
    for wp, pre_pts in fronts["prefill"].items():
        for wd, dec_pts in fronts["decode"].items():
            for d in dec_pts:
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
                        out.append(_Pair(lat, (x * wp + y * wd) / (demand * scenario.osl), p, d, x, y, demand, mu_w,
                                         conc))
    return out


def _concurrency(scenario: Scenario, batch: int, decode_workers: int) -> int | None:
    """Clients the pair serves: the decode pool full (y x B_w), or the scenario's fixed concurrency when its share
    per decode worker falls in this decode point's batch bucket (the front's batches are powers of two; the full
    model re-evaluates the decode step at the actual share)."""
    if scenario.concurrency is None:
        return decode_workers * batch
    share = -(-scenario.concurrency // decode_workers)
    return scenario.concurrency if batch // 2 < share <= batch else None


def _no_pair(job: _Job, scenario: Scenario, fronts: dict, skipped: dict[str, InfeasibleError]) -> InfeasibleError:
    """Why no (prefill, decode) pair fits: a pool has no worker size that holds the model (or meets the SLA), the
    smallest workers of the two pools together exceed the cards, or the pools that fit cannot hold the given
    concurrency. The remedies speak of the deployment, not of the phase plans that failed (their concurrency is a
    batch of ours, their world a worker)."""
    model, hw, cards = job.model, job.hw, job.cards
    smallest = {ph: min(fronts[ph], default=None) for ph in ("prefill", "decode")}
    missing = [ph for ph, w in smallest.items() if w is None]
    if missing:
        largest = max(job.sizes)
        failed = [k for k in skipped if k.split()[0] in missing]
        binding = sorted({b for k in failed for b in skipped[k].binding}) or ["B.memory_per_rank"]
        # what binds the largest worker tried is what more cards or a looser SLA must lift
        at_largest = {b for ph in missing if (exc := skipped.get(f"{ph} W={largest}")) for b in exc.binding}
        memory = _memory_remedies(job, scenario, smallest, missing) if (
            "B.memory_per_rank" in at_largest or not at_largest) else []
        return InfeasibleError(f"no disaggregated deployment of {model.name} on {cards} x {hw.name}: no "
                               f"{' or '.join(missing)} worker of at most {largest} ranks is feasible "
                               f"({', '.join(binding)} {'bind' if len(binding) > 1 else 'binds'})", binding,
                               _what_would_fit(_sla_floor(job, scenario, sorted(at_largest)), memory))
    need = cards_for(model, hw, smallest["prefill"], smallest["decode"])
    if need > cards:
        return InfeasibleError(f"no disaggregated deployment of {model.name} on {cards} x {hw.name}: the smallest "
                               f"prefill ({smallest['prefill']}) and decode ({smallest['decode']}) workers need {need} "
                               "cards together", ["cards"], f"what would fit: {need} cards or more")
    # the pools fit: the load does not. The most requests the pairs hold, the planner's range set aside as a fixed
    # concurrency sets it aside
    free = scenario.model_copy(update={"concurrency": None, "max_concurrency": MAX_CONCURRENCY})
    most = max((t.conc for t in _pairs(free, fronts, cards)), default=None)
    if scenario.concurrency and most:
        return InfeasibleError(f"no disaggregated deployment of {model.name} on {cards} x {hw.name} serves "
                               f"--concurrency {scenario.concurrency}: the decode workers that fit beside their "
                               f"prefill workers hold at most {most} requests", ["concurrency"],
                               f"what would fit: --concurrency {most}, or more cards")
    return InfeasibleError(f"no disaggregated deployment of {model.name} on {cards} x {hw.name}: the prefill workers "
                           "the rate match needs do not fit beside a decode worker", ["cards"],
                           "what would fit: more cards")


def _what_would_fit(sla: str | None, others: list[str]) -> str | None:
    parts = [*([sla] if sla else []), *others]
    return "what would fit: " + "; ".join(parts) if parts else None


_SLA_FIELDS = {"SLA.ttft": "ttft_ms", "SLA.tpot": "tpot_ms"}


def _sla_floor(job: _Job, scenario: Scenario, binding: list[str]) -> str | None:
    """Relax the binding SLAs, and how far: the lowest value of each one's figure over the deployments evaluated
    with those SLAs set aside (pools planned without them, pairs taken in order of the figure's estimate without
    queueing), so the floor is the same whatever value of the SLA was given. None when no SLA binds."""
    slas = [b for b in binding if b in _SLA_FIELDS]
    if not slas:
        return None
    relaxed = scenario.model_copy(update={_SLA_FIELDS[b]: None for b in slas})
    pairs = _pairs(relaxed, job.fronts(relaxed)[0], job.cards)
    estimates: dict[int, DisaggEstimate] = {}  # pair index -> its full estimate (each evaluated once)
    lows = []
    for b in slas:
        _, attr, name = SLA_FLAGS[b]
        est = ((lambda t: t.p.estimate.ttft_s + t.d.estimate.tpot_s) if b == "SLA.ttft"
               else (lambda t: t.d.estimate.tpot_s))
        fitting = []
        for i in sorted(range(len(pairs)), key=lambda i: (est(pairs[i]), pairs[i].conc))[:MAX_EVALUATED]:
            if i not in estimates:
                estimates[i] = job.evaluate(relaxed, pairs[i]).estimate
            if not sla_misses(estimates[i], relaxed):  # fits memory and meets the SLAs kept
                fitting.append(estimates[i])
        if fitting:
            lows.append(f"the lowest {name} is {min(getattr(e, attr) for e in fitting) * 1e3:.3g} ms")
    aside = "them" if len(slas) > 1 else "it"
    return relax_slas(slas) + (f": with {aside} set aside, of the {len(estimates)} deployments evaluated "
                               f"{' and '.join(lows)}" if lows else "")


def _memory_remedies(job: _Job, scenario: Scenario, smallest: dict[str, int | None], missing: list[str]
                     ) -> list[str]:
    """What would make the missing pools' workers fit, for the deployment as a whole: the cards a worker of each
    pool needs together where the planner finds one (a pool that has workers keeps its smallest), a shorter
    sequence where the weights and one token fit the largest worker, smaller weight formats. No smaller
    --concurrency: the phase plans that failed do not depend on it."""
    largest = max(job.sizes)
    sizes = dict(smallest)
    tried: list[int] = []
    for ph in missing:
        sizes[ph], planned = _fitting_worker(job, scenario, ph, largest)
        tried += planned
    wide = "" if job.allow_cross_node else " with TP inside a node (try --allow-cross-node)"
    if sizes["prefill"] and sizes["decode"]:
        need = cards_for(job.model, job.hw, sizes["prefill"], sizes["decode"])
        aside = ", SLAs aside" if scenario.ttft_ms is not None or scenario.tpot_ms is not None else ""
        out = [f"{need} cards in total (a prefill worker of {sizes['prefill']} ranks and a decode worker of "
               f"{sizes['decode']}: the planner found a configuration for each{aside})"]
    elif tried:
        out = [f"the planner found no {' or '.join(ph for ph in missing if not sizes[ph])} worker at "
               f"{', '.join(map(str, sorted(set(tried))))} ranks (the sizes a memory screen passes){wide}"]
    else:
        out = [f"no worker of {largest + 1} to {largest * WORKER_GROWTH} ranks holds the weights and the smallest "
               f"batch{wide}"]
    if all(_might_fit(job.model, job.hw, job.prec, job.fw, largest, _smallest_load(scenario, ph), job.mem_opts,
                      seq_len=1) for ph in missing):
        out.append("a shorter sequence")
    cheaper = _cheaper_weights(job.model, job.hw, job.prec)
    if cheaper:
        out.append(f"smaller weights ({cheaper})")
    return out


WORKER_GROWTH = 32  # how far past the largest worker tried a memory remedy looks for one that fits


def _smallest_load(scenario: Scenario, phase: str) -> Scenario:
    """The phase's scenario at its smallest batch with the SLAs set aside: memory is the question."""
    sc = phase_scenario(scenario, phase, 1)
    return sc.model_copy(update={"ttft_ms": None, "tpot_ms": None}
                         | ({} if sc.concurrency else {"max_concurrency": 1}))


def _fitting_worker(job: _Job, scenario: Scenario, phase: str, above: int) -> tuple[int | None, list[int]]:
    """(the smallest worker size above `above`, a power of two or a node multiple as worker_sizes takes, at which
    the phase's planner finds a configuration; the sizes it was asked about). Sizes pass a memory screen first."""
    params = job.params or points.SolverParams()
    quick = points.SolverParams(workers=params.workers, seed=params.seed, time_limit_s=min(params.time_limit_s, 5.0))
    sc = _smallest_load(scenario, phase)
    rpn = job.hw.ranks_per_node
    sizes = sorted({1 << k for k in range((above * WORKER_GROWTH).bit_length()) if (1 << k) > above}
                   | set(range(rpn * (above // rpn + 1), above * WORKER_GROWTH + 1, rpn)))
    planned: list[int] = []
    for w in sizes:
        if not _might_fit(job.model, job.hw, job.prec, job.fw, w, sc, job.mem_opts):
            continue
        planned.append(w)
        try:
            plan(job.model, job.hw, job.prec, job.fw, w, sc, quick, method=job.method, top=1,
                 allow_cross_node=job.allow_cross_node, mem_opts=job.mem_opts, explain_binding=False, diagnose=False)
        except InfeasibleError:
            if len(planned) >= REMEDY_PLANS:
                break
            continue
        return w, planned
    return None, planned


def cards_for(model: ModelSpec, hw: Hardware, prefill_size: int, decode_size: int) -> int:
    """The fewest cards on which a prefill worker and a decode worker of these sizes are both worker sizes."""
    c = prefill_size + decode_size
    while not {prefill_size, decode_size} <= set(worker_sizes(model, hw, c)):
        c += 1
    return c


def prompts_per_replica(p: Planned) -> int:
    """Prompts one attention replica of a prefill worker takes per step at the plan's batch (every replica
    prefills at least one: estimate.serving's prefill workload)."""
    return max(1, math.ceil(p.batch / p.config.attn_replicas))


def _key(c: DisaggPlan) -> tuple:
    """Distinct alternatives: another pool layout or ratio, not the same deployment at another batch."""
    return (tuple(c.prefill.planned.config.knobs().items()), tuple(c.decode.planned.config.knobs().items()),
            c.prefill.workers, c.decode.workers)
