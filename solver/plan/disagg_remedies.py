"""Why a disaggregated plan found no (prefill, decode) pair, and what would fit: the remedies speak of the whole
deployment (cards in total, the concurrency the user gave, an SLA's lowest end-to-end figure), not of the phase
plans that failed inside it (plan.disagg asks here only when it has no pair)."""
from __future__ import annotations

import heapq
from itertools import islice
from typing import TYPE_CHECKING, Iterator

from solver.errors import Change, InfeasibleError, Remedy, either, remedies, three_figures
from solver.estimate.disagg import DisaggEstimate, workers_to_match
from solver.plan.disagg import MAX_EVALUATED, _Pair, _concurrency, _pairs, sla_misses, ttft_order
from solver.plan.disagg_pools import cards_for, phase_framework, phase_scenario
from solver.plan.disagg_floor import PrefillScreen
from solver.plan.diagnosis import SLA_FLAGS, memory_terms, relax_slas
from solver.plan.memory_remedies import (across_nodes, backed_off, first_that_plans, inside_node,
                                         longest_isl_screened, memory_question, might_fit, plans_at, quick_params,
                                         sla_aside, sla_changes_aside, smaller_weights)
from solver.specs.launch_spec import POOL_NAMES, pool_role
from solver.specs.limits import MAX_CONCURRENCY
from solver.specs.scenario import Scenario

if TYPE_CHECKING:
    from solver.plan.disagg import _Job
    from solver.plan.solve import Planned


def unpairable(job: "_Job", scenario: Scenario, fronts: dict) -> InfeasibleError:
    """Pools fit, but the engine's KV transfer pairs none of them (FrameworkProfile.unpaired): the check that
    binds, and the sizes each pool's workers were planned at, which the check reads."""
    failed = (job.fw.unpaired(p.config, d.config) for pre in fronts["prefill"].values()
              for dec in fronts["decode"].values() for p in pre for d in dec)
    checks = {c.id: c for c in failed if c is not None}  # each check some pair fails, in the order first failed
    check = next(iter(checks.values()))
    names = sorted(check.require_expr.names & POOL_NAMES)
    offered = {n: sorted({job.fw.pool_figures({pool_role(n): q.config})[n]
                          for pts in fronts[pool_role(n)].values() for q in pts}) for n in names}
    sizes = "; ".join(f"{n} planned at {', '.join(map(str, v))}" for n, v in offered.items())
    # what the pools must meet is the binding rule (no flag names pools that meet it); aggregated serving is a
    # remedy where the planner finds an aggregated configuration on these cards
    agg = plans_at(job.model, job.hw, job.prec, job.fw, job.cards, scenario, job.params, job.allow_cross_node,
                   job.mem_opts, job.method)
    return InfeasibleError(f"no disaggregated deployment of {job.model.name} on {job.cards} x {job.hw.name} under "
                           f"{job.fw.name}: the prefill and decode pools that fit break [{check.id}] {check.message}; "
                           f"pools that meet {check.require} are none of those planned ({sizes})", sorted(checks),
                           remedies(Remedy(f"--serving agg (the planner found an aggregated configuration on "
                                           f"{job.cards} x {job.hw.name})", (Change("--serving", "agg"),))
                                    if agg else None))


def no_pair(job: "_Job", scenario: Scenario, fronts: dict, skipped: dict[str, InfeasibleError]) -> InfeasibleError:
    """Why no (prefill, decode) pair fits: a pool has no worker size that holds the model (or meets the SLA), the
    smallest workers of the two pools together exceed the cards, or the pools that fit cannot hold the given
    concurrency. The remedies speak of the deployment, not of the phase plans that failed (their concurrency is a
    batch of ours, their world a worker)."""
    model, hw, cards = job.model, job.hw, job.cards
    smallest = {ph: min(fronts[ph], default=None) for ph in ("prefill", "decode")}
    missing = [ph for ph, w in smallest.items() if w is None]
    if missing:
        largest = max(job.sizes)
        # what binds the largest worker tried is what more cards or a looser SLA must lift, and what is named:
        # the smaller workers' lists add the framework rules that pruned some of their layouts on the way to
        # their memory wall, which bind nothing the user can change
        at_largest = {b for ph in missing if (exc := skipped.get(f"{ph} W={largest}")) for b in exc.binding}
        failed = [k for k in skipped if k.split()[0] in missing]
        binding = (sorted(at_largest) or sorted({b for k in failed for b in skipped[k].binding})
                   or ["B.memory_per_rank"])
        where = f" at {largest} ranks" if at_largest else ""
        tried, memory = _memory_remedies(job, scenario, smallest, missing) if (
            "B.memory_per_rank" in at_largest or not at_largest) else (None, [])
        # the memory in the model's terms, for the last pool missing (decode's sequence is the longer)
        terms = (f"in a {missing[-1]} worker, "
                 + memory_terms(model, hw, job.prec, largest, _smallest_load(scenario, missing[-1]), job.mem_opts)
                 if "B.memory_per_rank" in at_largest else None)
        return InfeasibleError(f"no disaggregated deployment of {model.name} on {cards} x {hw.name}: no "
                               f"{' or '.join(missing)} worker of at most {largest} ranks is feasible "
                               f"({', '.join(binding)} {'bind' if len(binding) > 1 else 'binds'}{where}"
                               + (f"; {terms}" if terms else "") + ")" + (f"; {tried}" if tried else ""), binding,
                               remedies(_sla_floor(job, scenario, sorted(at_largest)), *memory), terms=terms)
    need = cards_for(model, hw, smallest["prefill"], smallest["decode"])
    if need > cards:
        return InfeasibleError(f"no disaggregated deployment of {model.name} on {cards} x {hw.name}: the smallest "
                               f"prefill ({smallest['prefill']}) and decode ({smallest['decode']}) workers need {need} "
                               "cards together", ["cards"],
                               remedies(Remedy(f"{need} cards or more", (Change("--cards", need),))))
    # the pools fit: the load does not. The most requests the pairs serve within the SLAs (the full estimate's
    # verdict, as plan_disagg's), the planner's range set aside as a fixed concurrency sets it aside
    free = scenario.model_copy(update={"concurrency": None, "max_concurrency": MAX_CONCURRENCY})
    served = _first_served(job, scenario, sorted(_pairs(free, fronts, cards, job.fw, job.model),
                                                      key=lambda t: (-t.conc, -t.x)))
    most = served.conc if served else None
    if scenario.concurrency:
        sla = f" at TPOT <= {scenario.tpot_ms:g} ms" if scenario.tpot_ms is not None else ""
        held = _decode_slots(fronts, cards, smallest["prefill"])
        if held >= scenario.concurrency:  # the decode pool holds the load; the prefill pool it asks for does not fit
            why = (f"decode workers that fit beside a prefill worker hold {held:,} requests{sla}, but not beside the "
                   "prefill workers that load needs (the rate match)")
        else:
            why = f"the decode workers that fit beside a prefill worker hold at most {held:,} requests{sla}"
        has_sla = scenario.has_slas()
        if most and most < held:
            why += f"; the rate-matched pools serve at most {most:,}" + (" within the SLA" if has_sla else "")
        bigger = _fewest_cards(job, scenario, fronts)
        # a looser SLA: how far, as the SLAs' floors at this concurrency (none where no deployment fits without
        # them: then looser SLAs are no remedy)
        given = [b for b, f in SLA_FLAGS.items() if getattr(scenario, f.field) is not None]
        looser = None if bigger else _sla_floor(job, scenario, given)
        more = (Remedy(f"{bigger[0]} cards ({bigger[1]} prefill worker(s) of {bigger[2]} ranks and {bigger[3]} "
                       f"decode worker(s) of {bigger[4]})", (Change("--cards", bigger[0]),)) if bigger else looser)
        if not bigger and not has_sla:  # no size searched serves it: more cards is what binds, not a remedy
            why += ("; nor do the pools' worker sizes, rate-matched, on more cards (the fewest-cards search found "
                    "none that serves it)")
        fewer = _confirmed(job, scenario, most) if most else None
        fit = either(Remedy(f"--concurrency {fewer}", (Change("--concurrency", fewer),)) if fewer else None, more)
        return InfeasibleError(f"no disaggregated deployment of {model.name} on {cards} x {hw.name} serves "
                               f"--concurrency {scenario.concurrency}: {why}", ["concurrency"], remedies(fit))
    # the pools' smallest workers fit the cards (above), yet no pair formed: what binds, which no card count
    # named here is checked to lift
    return InfeasibleError(f"no disaggregated deployment of {model.name} on {cards} x {hw.name}: the prefill workers "
                           "the rate match needs do not fit beside a decode worker", ["cards"])


def _decode_slots(fronts: dict, cards: int, prefill_size: int) -> int:
    """The most requests decode workers hold (their planned batch, under the TPOT SLA) on the cards a prefill
    worker of `prefill_size` ranks leaves, the rate match aside."""
    return max(((cards - prefill_size) // wd * max(d.batch for d in pts) for wd, pts in fronts["decode"].items()
                if cards - prefill_size >= wd), default=0)


def _first_served(job: "_Job", scenario: Scenario, pairs: list[_Pair]) -> _Pair | None:
    """The first of `pairs` (at most MAX_EVALUATED) whose full estimate fits memory and meets the SLAs."""
    return next((t for t in pairs[:MAX_EVALUATED] if not sla_misses(job.evaluate(scenario, t).estimate, scenario)),
                None)


def _fewest_cards(job: "_Job", scenario: Scenario, fronts: dict) -> tuple[int, int, int, int, int] | None:
    """(cards, x, W_p, y, W_d): the fewest cards on which the pools' worker sizes, rate-matched, serve the given
    concurrency within the SLAs (the pairs plan.disagg forms, on more cards, judged by the full estimate); None
    when none of those evaluated does."""
    c = scenario.concurrency

    def walk(i: int, j: int, k: int, wp: int, wd: int, d: Planned, m: int, p: Planned) -> Iterator[tuple]:
        # one (prefill size, decode size, decode point, prefill point)'s pairs in y order: x does not depend on y
        # and the cards only grow with it, so each walk is in the order of the whole list's key (below)
        demand = c / (scenario.osl * d.estimate.tpot_s)
        mu_w = p.estimate.output_tokens_per_s
        x = workers_to_match(demand, mu_w)
        lo = -(-c // d.batch)  # y from the fewest whose share fits the batch bucket
        for y in range(lo, 2 * lo + 1):
            if _concurrency(scenario, d.batch, y) is None:  # each decode worker's share only falls with y
                return
            need = cards_for(job.model, job.hw, wp, wd, x * wp + y * wd)
            # the fewest cards, then the lowest TTFT + TPOT, then the order the pools list them in
            yield (need, p.estimate.ttft_s + d.estimate.tpot_s, i, j, k, y, m), \
                _Pair(0.0, 0.0, p, d, x, y, demand, mu_w, c)

    # only the first MAX_EVALUATED of the pairs in that order are evaluated (_first_served): the walks merged
    # lazily give them without listing every y of every decode point (hundreds of thousands at a large load)
    walks = [walk(i, j, k, wp, wd, d, m, p) for i, (wp, pre) in enumerate(fronts["prefill"].items())
             for j, (wd, dec) in enumerate(fronts["decode"].items()) for k, d in enumerate(dec)
             for m, p in enumerate(pre)]
    first = list(islice(heapq.merge(*walks, key=lambda f: f[0]), MAX_EVALUATED))
    t = _first_served(job, scenario, [f[1] for f in first])
    if t is None:
        return None
    need = next(key[0] for key, u in first if u is t)
    return need, t.x, t.p.config.world_size, t.y, t.d.config.world_size


def none_meets(job: "_Job", scenario: Scenario, rejected: list[str], fronts: dict) -> InfeasibleError:
    """Pairs fit, but none evaluated meets the SLAs (or fits the full estimate's memory): what binds, the SLAs'
    floors, and the most requests below a given --concurrency the planner serves where it makes a decode
    worker's KV bind."""
    binding = sorted(set(rejected))
    # a decode worker holds the KV of its share of a given --concurrency: fewer requests need less
    fewer = _fewer_requests(job, scenario, fronts) if scenario.concurrency and any(
        b.startswith("B.memory_per_rank") for b in binding) else None
    return InfeasibleError(f"no disaggregated deployment of {job.model.name} on {job.cards} x {job.hw.name}"
                           f"{_at_fixed(job)} meets the SLA: {', '.join(binding)} "
                           f"{'bind' if len(binding) > 1 else 'binds'}", binding,
                           remedies(_sla_floor(job, scenario, binding), fewer))


def _at_fixed(job: "_Job") -> str:
    """' at 2P1D (the worker counts given)' where the user fixes them, which the remedies keep; else ''."""
    return f" at {job.fixed.label()} (the worker counts given)" if job.fixed.given else ""


def _fewer_requests(job: "_Job", scenario: Scenario, fronts: dict) -> Remedy | None:
    """Under a fixed --concurrency, the most requests below it that the pools' pairs serve within the SLAs (the
    full estimate's verdict, as no_pair reads it), as a remedy the planner confirms at that concurrency and up to
    REMEDY_PLANS - 1 smaller ones (backed_off, as the aggregated remedy); None where none plans."""
    c = scenario.concurrency
    free = scenario.model_copy(update={"concurrency": None, "max_concurrency": MAX_CONCURRENCY})
    below = [t for t in _pairs(free, fronts, job.cards, job.fw, job.model, job.fixed) if t.conc < c]
    served = _first_served(job, scenario, sorted(below, key=lambda t: (-t.conc, -t.x)))
    n = _confirmed(job, scenario, served.conc) if served else None
    if n is None:
        return None
    within = " within the SLA" if scenario.has_slas() else ""
    return Remedy(f"--concurrency {n:,}{' or fewer' * (n > 1)} (the most requests the pools that fit on "
                  f"{job.cards} x {job.hw.name}{_at_fixed(job)} serve{within} by the full estimate"
                  f"{'' if n == served.conc else f', {served.conc:,}, less what the planner turned away'}; the "
                  "planner found a deployment there)", (Change("--concurrency", n),))


def _confirmed(job: "_Job", scenario: Scenario, most: int) -> int | None:
    """`most` requests, or up to REMEDY_PLANS - 1 fewer (backed_off, as the aggregated remedies), the first at which
    the disaggregated planner finds a deployment on the job's cards; None where none does."""
    return backed_off(most, lambda n: _plans(job, scenario.model_copy(update={"concurrency": n})))


def _plans(job: "_Job", scenario: Scenario, cards: int | None = None, allow_cross_node: bool | None = None) -> bool:
    """Whether the disaggregated planner, in a remedy's small solve (quick_params), finds a deployment for
    `scenario` on the job's cards (plans_at's question, disaggregated), or on `cards` (the worker sizes those cards
    take, worker_sizes, and `allow_cross_node` where given), as a rerun at --cards asks it."""
    from solver.plan.disagg import plan_disagg  # late: it imports this module where it has no pair

    own = cards is None
    try:
        plan_disagg(job.model, job.hw, job.prec, job.fw, job.cards if own else cards, scenario,
                    quick_params(job.params), job.allow_cross_node if allow_cross_node is None else allow_cross_node,
                    job.mem_opts, job.sizes if own else None, top=1, method=job.method, fixed=job.fixed,
                    diagnose=False)
    except InfeasibleError:
        return False
    return True


def _sla_floor(job: "_Job", scenario: Scenario, binding: list[str]) -> Remedy | None:
    """Relax the binding SLAs, and how far: the lowest value of each one's figure over the deployments evaluated
    with those SLAs set aside (pools planned without them, pairs taken in order of the figure's estimate without
    queueing), so the floor is the same whatever value of the SLA was given. None when no SLA binds, or when no
    deployment evaluated fits with them set aside (memory binds too: relaxing them alone is no remedy)."""
    slas = [b for b in binding if b in SLA_FLAGS]
    if not slas:
        return None
    relaxed = scenario.model_copy(update={SLA_FLAGS[b].field: None for b in slas})
    # a TTFT floor alone reads the pairs of lowest TTFT estimate: the prefill steps whose points all lie past them
    # are not planned (disagg_floor); a TPOT floor reads every prefill point's pairs
    screen = PrefillScreen(job, relaxed) if slas == ["SLA.ttft"] else None
    pairs = _pairs(relaxed, job.fronts(relaxed, diagnose=False, screen=screen)[0], job.cards,  # failures unread
                   job.fw, job.model, job.fixed)
    estimates: dict[int, DisaggEstimate] = {}  # pair index -> its full estimate (each evaluated once)
    lows: dict[str, str] = {}  # the SLA's flag -> its lowest figure, as quoted
    for b in slas:
        order = ttft_order if b == "SLA.ttft" else (lambda t: (t.d.estimate.tpot_s, t.conc))
        fitting = []
        for i in sorted(range(len(pairs)), key=lambda i: order(pairs[i]))[:MAX_EVALUATED]:
            if i not in estimates:
                estimates[i] = job.evaluate(relaxed, pairs[i]).estimate
            if not sla_misses(estimates[i], relaxed):  # fits memory and meets the SLAs kept
                fitting.append(_floor_figure(b, estimates[i], pairs[i]))
        if fitting:
            # rounded up: the figure is the cap to pass (--tpot-ms 15.9 misses a lowest TPOT of 15.94 ms)
            lows[b] = three_figures(min(fitting) * 1e3, up=True)
    if not lows:  # no deployment evaluated fits with the SLAs set aside: relaxing them is no remedy alone
        return None
    aside = "them" if len(slas) > 1 else "it"
    shown = " and ".join(f"the lowest {SLA_FLAGS[b].name} is {low} ms" for b, low in lows.items())
    # the first floor applied, the other binding SLAs set aside (each floor is over the deployments without them)
    first = next(iter(lows))
    return Remedy(relax_slas(slas) + f": with {aside} set aside, of the {len(estimates)} deployments evaluated"
                  f"{_at_fixed(job)} {shown}",
                  tuple(Change(SLA_FLAGS[b].flag, float(lows[b].replace(",", "")) if b == first else None)
                        for b in slas))


def _floor_figure(sla: str, e: DisaggEstimate, t: _Pair) -> float:
    """The value of `sla`'s figure a rerun must allow for pair `t` to be planned, seconds: its full estimate's,
    and for TPOT no less than its decode point's own estimate, which the decode pool is planned against (at the
    point's batch bucket, above the share of the load each worker runs): a decode point whose bucket misses the
    cap is not planned, so its pair serves the load only from that figure."""
    figure = getattr(e, SLA_FLAGS[sla].figure)
    return max(figure, t.d.estimate.tpot_s) if sla == "SLA.tpot" else figure


def _memory_remedies(job: "_Job", scenario: Scenario, smallest: dict[str, int | None], missing: list[str]
                     ) -> tuple[str | None, list[Remedy]]:
    """(what binds where no worker size fits: the sizes the planner tried, said in the message, not as a remedy,
    since it names nothing to change; the remedies) for the missing pools' workers, for the deployment as a whole:
    the cards a worker of each pool needs together where the planner finds one (a pool that has workers keeps its
    smallest; with --allow-cross-node where only that finds one), the longest prompt the largest worker holds
    (_longest_isl), smaller weight formats. No smaller --concurrency: the phase plans that failed do not depend
    on it."""
    largest = max(job.sizes)
    sizes = dict(smallest)
    tried: dict[str, list[int]] = {}  # a missing pool -> the worker sizes the planner was asked about
    for ph in missing:
        sizes[ph], tried[ph] = _fitting_worker(job, scenario, ph, largest)
    planned = sorted({w for ws in tried.values() for w in ws})
    wide = inside_node(job.hw, job.fw, planned, job.allow_cross_node)
    tried_said = None
    if sizes["prefill"] and sizes["decode"]:
        out = [r for r in [_total_cards(job, scenario, sizes, "in total")] if r]
    elif planned:
        tried_said = (f"the planner found no {' or '.join(ph for ph in missing if not sizes[ph])} worker at "
                      f"{', '.join(map(str, planned))} ranks (the sizes a memory screen passes){wide}")
        out = []
        # --allow-cross-node offered only where the planner finds a worker of each pool with it (across_nodes, as
        # the aggregated remedy): a hint the rerun refuses again is no remedy
        across = dict(sizes)
        for ph in missing if wide else ():
            across[ph] = across[ph] or across_nodes(job.model, job.hw, job.prec, phase_framework(job.fw, ph),
                                                    tried[ph], _smallest_load(scenario, ph), job.params,
                                                    job.mem_opts, job.method)
        if wide and across["prefill"] and across["decode"] and (
                total := _total_cards(job, scenario, across, "with --allow-cross-node")):
            out.append(total)
    else:
        tried_said = (f"no worker of {largest + 1} to {largest * WORKER_GROWTH} ranks holds the weights and the "
                      "smallest batch")
        out = []
    shorter = _longest_isl(job, scenario, missing, largest)
    if shorter:
        out.append(shorter)
    cheaper = smaller_weights(job.model, job.hw, job.prec, lambda p: all(
        might_fit(job.model, job.hw, p, phase_framework(job.fw, ph), largest, _smallest_load(scenario, ph), job.mem_opts)
        for ph in missing))
    if cheaper:
        out.append(cheaper)
    return tried_said, out


def _total_cards(job: "_Job", scenario: Scenario, sizes: dict[str, int | None], how: str) -> Remedy | None:
    """'N cards {how} (a prefill worker of P ranks and a decode worker of D: the planner found a configuration
    for each...)': the cards the two workers need together; `how` 'with --allow-cross-node' where they were found
    with TP across nodes (the flag is part of the change). None where the disaggregated planner finds no
    deployment on those cards as the line changes the request: a worker of each pool may fit while no pair of
    them is one the engine's KV transfer joins (FrameworkProfile.unpaired: vllm-ascend's prefill TP >= decode TP),
    and a hint the rerun refuses is no remedy."""
    need = cards_for(job.model, job.hw, sizes["prefill"], sizes["decode"])
    # each worker is planned at one request with the SLAs set aside (_smallest_load): a given --concurrency
    # or SLA is the deployment's next question, which the line names
    load = f"--concurrency {scenario.concurrency:,}" if scenario.concurrency else ""
    if not _plans(job, scenario.model_copy(update={"ttft_ms": None, "tpot_ms": None}
                                           | ({"concurrency": None} if load else {})),
                  need, allow_cross_node=job.allow_cross_node or "--allow-cross-node" in how):
        return None
    aside = (f", {load} and the SLAs aside" if load else ", SLAs aside") if scenario.has_slas() else (
        f", at one request ({load} aside)" if load else "")
    wide = (Change("--allow-cross-node", True),) if "--allow-cross-node" in how else ()
    return Remedy(f"{need} cards {how} (a prefill worker of {sizes['prefill']} ranks and a decode worker of "
                  f"{sizes['decode']}: the planner found a configuration for each{aside})",
                  (Change("--cards", need), *wide, *sla_changes_aside(scenario),
                   *((Change("--concurrency", None),) if load else ())))


def _longest_isl(job: "_Job", scenario: Scenario, missing: list[str], largest: int) -> Remedy | None:
    """The longest --isl (the OSL kept) at which a worker of `largest` ranks of every missing pool holds one
    request, by the memory screen (longest_isl_screened, the least over the pools), that the planner confirms for
    each pool's worker at that size (whether the rate-matched pools then fit the cards is the next question, which
    the deployment's own error answers); None where one prompt token does not pass or the planner finds none there."""
    isls = [longest_isl_screened(job.model, job.hw, job.prec, phase_framework(job.fw, ph), largest,
                                 _smallest_load(scenario, ph), job.mem_opts) for ph in missing]
    if None in isls:
        return None
    isl = min(isls)
    shorter = scenario.model_copy(update={"isl": isl})
    for ph in missing:
        if first_that_plans(job.model, job.hw, job.prec, phase_framework(job.fw, ph), [largest],
                            _smallest_load(shorter, ph), job.params, job.allow_cross_node, job.mem_opts,
                            job.method)[0] is None:
            return None
    pools = " and ".join(missing)
    # each worker is checked at one request (_smallest_load): a given --concurrency is set aside, and said
    load = f", --concurrency {scenario.concurrency:,}" if scenario.concurrency else ""
    return Remedy(f"--isl {isl} or shorter (the longest prompt a {pools} worker of {largest} "
                  f"rank{'s' * (largest > 1)} holds at OSL {scenario.osl:,}; the planner found such a worker there, "
                  f"the pools' rate match{load}{sla_aside(scenario, ' and the SLAs')} aside)",
                  (Change("--isl", isl), *sla_changes_aside(scenario),
                   *((Change("--concurrency", None),) if load else ())))


WORKER_GROWTH = 32  # how far past the largest worker tried a memory remedy looks for one that fits


def _smallest_load(scenario: Scenario, phase: str) -> Scenario:
    """The phase's scenario at its smallest batch with the SLAs set aside: memory is the question."""
    return memory_question(phase_scenario(scenario, phase, 1))


def _fitting_worker(job: "_Job", scenario: Scenario, phase: str, above: int) -> tuple[int | None, list[int]]:
    """(the smallest worker size above `above`, a power of two or a node multiple as worker_sizes takes, at which
    the phase's planner finds a configuration; the sizes it was asked about): first_that_plans."""
    rpn = job.hw.ranks_per_node
    sizes = sorted({1 << k for k in range((above * WORKER_GROWTH).bit_length()) if (1 << k) > above}
                   | set(range(rpn * (above // rpn + 1), above * WORKER_GROWTH + 1, rpn)))
    return first_that_plans(job.model, job.hw, job.prec, phase_framework(job.fw, phase), sizes,
                            _smallest_load(scenario, phase),
                            job.params, job.allow_cross_node, job.mem_opts, job.method)
