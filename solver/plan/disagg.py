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

from solver.errors import InfeasibleError, InputError
from solver.estimate.compute import factors_for
from solver.estimate.disagg import DisaggEstimate, DisaggWorkload, estimate_disagg, workers_to_match
from solver.estimate.memory import MemoryOptions
from solver.plan import points
from solver.plan.solve import SLA_FLAGS, Planned, PlanResult, plan, relax_slas
from solver.specs.disagg_fitted import burst_share
from solver.specs.framework import FrameworkProfile
from solver.specs.hardware import Hardware
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


def _sla_reach(binding: list[str], reached: list) -> str:
    """The remedy in the deployment's own figures: the lowest value of each binding SLA's figure over the
    deployments evaluated (`reached`: their estimates), so the user knows how far to relax it."""
    lows = " and ".join(f"the lowest {name} is {min(getattr(e, attr) for e in reached) * 1e3:.3g} ms"
                        for _, attr, name in (SLA_FLAGS[b] for b in binding if b in SLA_FLAGS))
    return f"what would fit: {relax_slas(binding)}" + (
        f": of the {len(reached)} deployments evaluated {lows}" if lows else "")


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


def plan_disagg(model: ModelSpec, hw: Hardware, prec: Precision, fw: FrameworkProfile, cards: int,
                scenario: Scenario, params: points.SolverParams | None = None, allow_cross_node: bool = False,
                mem_opts: MemoryOptions | None = None, sizes: list[int] | None = None,
                top: int = 3, method: str = "cpsat") -> DisaggResult:
    """The best disaggregated deployment within `cards` ranks for the scenario and SLA (module docstring)."""
    if cards < 2:
        raise InputError("--cards", f"disaggregated serving needs at least 2 cards (one per pool), got {cards}")
    if scenario.phase != "serving":
        raise InputError("--phase", "disaggregated planning plans both phases; use --phase serving")
    sizes = sizes or worker_sizes(model, hw, cards)
    fronts, skipped = _fronts(model, hw, prec, fw, cards, scenario, params, allow_cross_node, mem_opts, sizes,
                              method)
    f = factors_for(hw, fw.efficiency_for(hw))
    phi = burst_share(fw.name, hw.name)
    pairs = []  # (ratio estimate: request latency, ranks per output token/s; prefill point, decode point, x, y,
    #            demand, mu_w, concurrency)
    for wp, pre_pts in fronts["prefill"].items():
        for wd, dec_pts in fronts["decode"].items():
            for d in dec_pts:
                tpot = d.estimate.tpot_s
                for y in range(1, (cards - wp) // wd + 1):
                    conc = _concurrency(scenario, d.batch, y)
                    if conc is None:
                        continue
                    demand = conc / (scenario.osl * tpot)
                    for p in pre_pts:
                        mu_w = p.estimate.output_tokens_per_s  # prompts/s: one token per prompt
                        x = workers_to_match(demand, mu_w)
                        if x * wp + y * wd > cards:
                            continue
                        if conc > scenario.max_concurrency:
                            continue
                        lat = scenario.request_latency(p.estimate.ttft_s + tpot, tpot)  # no queueing, no transfer
                        pairs.append((lat, (x * wp + y * wd) / (demand * scenario.osl), p, d, x, y, demand, mu_w,
                                      conc))
    if not pairs:
        raise _no_pair(model, hw, cards, fronts, skipped)
    lat0, inv0 = min(t[0] for t in pairs), min(t[1] for t in pairs)
    pairs.sort(key=lambda t: scenario.score(t[0], t[1], lat0, inv0))  # the scenario's own order, on the ratio
    evaluated: list[DisaggPlan] = []
    rejected: list[str] = []
    reached = []  # the estimates of the deployments an SLA rejected
    for _, _, p, d, x, y, demand, mu_w, conc in pairs[:MAX_EVALUATED]:
        if len(evaluated) >= SHORTLIST:
            break
        wl = DisaggWorkload(isl=scenario.isl, osl=scenario.osl, concurrency=conc, prefill_workers=x,
                            decode_workers=y, prefill_batch=prompts_per_replica(p),
                            decode_batch=max(1, math.ceil(d.batch / d.config.attn_replicas)), mtp=scenario.mtp,
                            mtp_accept=scenario.mtp_accept, burst_share=phi)
        e = estimate_disagg(model, hw, p.config, d.config, prec, f, f, wl, mem_opts)
        misses = sla_misses(e, scenario)
        if misses:
            rejected.extend(misses)
            reached.append(e)
            continue
        evaluated.append(DisaggPlan(Pool("prefill", x, p), Pool("decode", y, d), e, demand, mu_w))
    if not evaluated:
        binding = sorted(set(rejected))
        raise InfeasibleError(f"no disaggregated deployment of {model.name} on {cards} x {hw.name} meets the SLA: "
                              f"{', '.join(binding)} {'bind' if len(binding) > 1 else 'binds'}", binding,
                              _sla_reach(binding, reached))
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
    return DisaggResult(ranked[0], alts, sizes, skipped)


def _concurrency(scenario: Scenario, batch: int, decode_workers: int) -> int | None:
    """Clients the pair serves: the decode pool full (y x B_w), or the scenario's fixed concurrency when its share
    per decode worker falls in this decode point's batch bucket (the front's batches are powers of two; the full
    model re-evaluates the decode step at the actual share)."""
    if scenario.concurrency is None:
        return decode_workers * batch
    share = -(-scenario.concurrency // decode_workers)
    return scenario.concurrency if batch // 2 < share <= batch else None


def _no_pair(model: ModelSpec, hw: Hardware, cards: int, fronts: dict, skipped: dict[str, InfeasibleError]
             ) -> InfeasibleError:
    """Why no (prefill, decode) pair fits: a pool has no worker size that holds the model, or the smallest
    workers of the two pools together exceed the cards."""
    smallest = {ph: min(fronts[ph], default=None) for ph in ("prefill", "decode")}
    missing = [ph for ph, w in smallest.items() if w is None]
    if missing:
        failed = [k for k in skipped if k.split()[0] in missing]
        binding = sorted({b for k in failed for b in skipped[k].binding}) or ["B.memory_per_rank"]
        remedy = skipped[failed[-1]].remedy if failed else None
        return InfeasibleError(f"no disaggregated deployment of {model.name} on {cards} x {hw.name}: no "
                               f"{' or '.join(missing)} worker of at most {max(worker_sizes(model, hw, cards))} ranks "
                               f"is feasible ({', '.join(binding)} binds)", binding,
                               (remedy + " per worker, and one worker for each pool") if remedy else None)
    need = smallest["prefill"] + smallest["decode"]
    return InfeasibleError(f"no disaggregated deployment of {model.name} on {cards} x {hw.name}: the smallest "
                           f"prefill ({smallest['prefill']}) and decode ({smallest['decode']}) workers need {need} "
                           "cards together", ["cards"], f"what would fit: {need} cards or more")


def prompts_per_replica(p: Planned) -> int:
    """Prompts one attention replica of a prefill worker takes per step at the plan's batch (every replica
    prefills at least one: estimate.serving's prefill workload)."""
    return max(1, math.ceil(p.batch / p.config.attn_replicas))


def _key(c: DisaggPlan) -> tuple:
    """Distinct alternatives: another pool layout or ratio, not the same deployment at another batch."""
    return (tuple(c.prefill.planned.config.knobs().items()), tuple(c.decode.planned.config.knobs().items()),
            c.prefill.workers, c.decode.workers)
