"""Why a plan is infeasible and what would make it feasible: the constraint families that bind (each relaxed
alone), the concurrency and SLAs within reach, and the remedies in the model's terms (more cards, cheaper weights,
a shorter sequence), each confirmed by the planner where a screen cannot tell.
"""
from __future__ import annotations

from typing import Callable

from solver.errors import Change, InfeasibleError, Remedy, either, remedies as remedies_of, three_figures
from solver.estimate.memory import memory_per_rank
from solver.estimate.memory_options import MemoryOptions
from solver.plan import cpsat
from solver.plan.groups import GROUPS
from solver.plan.points import Point, SolverParams
from solver.plan.memory_remedies import (SLA_FIELDS, SLA_FLAGS, first_that_plans, memory_remedies, quick_params,
                                         remedy_worlds)
from solver.plan.table_build import attention_rejections
from solver.plan.tables import Tables
from solver.space.domains import Space
from solver.space.placement import launchable_sizes, split_text
from solver.specs.framework import FrameworkProfile
from solver.specs.hardware import Hardware
from solver.specs.model import ModelSpec
from solver.specs.parallel import ParallelConfig
from solver.specs.precision import Precision
from solver.specs.rule_env import device_facts, model_env
from solver.specs.scenario import Scenario


def binding_constraints(planner: cpsat.Planner, best: Point) -> list[str]:
    """Constraint families whose removal alone would lower the chosen configuration's latency at its
    concurrency (the operating point the recommendation is for)."""
    out = []
    for name in planner.families(best.batch):
        p = planner.best(best.batch, relaxed=frozenset({name}))
        if p is not None and p.latency < best.latency:
            out.append(name)
    return out


def explain_infeasible(model: ModelSpec, hw: Hardware, prec: Precision, fw: FrameworkProfile, world: int,
                       scenario: Scenario, tables: Tables, planner: cpsat.Planner,
                       mem_opts: MemoryOptions | None, params: SolverParams,
                       allow_cross_node: bool, space: Space,
                       fits: Callable[[Point], bool] | None = None) -> InfeasibleError:
    """The error a plan with no configuration raises: the families that bind (each relaxed alone, then the SLAs
    together, then all), a parallel group the rules left empty with the rules that emptied it, and what would fit
    (an even split over nodes, a concurrency the batch rules run, the memory remedies, the SLAs within reach).
    `fits`: the full estimate's memory check of a configuration (solve's verify without the SLAs), which the
    configuration an SLA remedy names passes; None: the tables' memory alone."""
    binding: list[str] = []
    terms: list[str] = []  # what binds, in the model's and the engine's own words
    empty = [g for g, opts in tables.choices.items() if not opts]
    # a group with no allowed layout leaves no model to relax: name it and the rules that emptied it
    names = [] if empty else sorted({n for b in tables.batches for n in planner.families(b)})
    for name in names:
        if any(planner.best(b, relaxed=frozenset({name})) for b in tables.batches):
            binding.append(name)
    # no one family alone: the SLAs together (two SLAs that each bind name no memory or rule), then everything
    slas = [n for n in names if n.startswith("SLA")]
    jointly = False  # the binding families free a configuration only relaxed together: the line says so
    for together in ([slas] if len(slas) > 1 else []) + [names]:
        if not binding and together and any(planner.best(b, relaxed=frozenset(together)) for b in tables.batches):
            binding, jointly = together, len(together) > 1
    for g in empty:
        # the space's one-knob rules, then the framework rules that turned the remaining layouts away
        rules = sorted({p.rule for p in space.pruned if p.knob in GROUPS[g]})
        if g == "attn":
            rules += [r for r in attention_rejections(space, model, fw, world, hw, scenario) if r not in rules]
        binding.append(f"no {g} layout is left" + (f" ({', '.join(rules)})" if rules else ""))
        terms.append(f"{binding[-1]} on {world} ranks ({hw.name} nodes of {hw.ranks_per_node})"
                     + (": " + "; ".join(rule_terms(r, g, fw, space) for r in rules) if rules else ""))
    stalled = [t for t in planner.timeouts.values() if not t.found]
    remedies: list[Remedy] = []
    launchable = launchable_sizes(hw, fw, world)
    if launchable:  # no equal share of the ranks over their nodes: the launch itself refuses, whatever the layout
        remedies.append(either(*(Remedy(split_text(w, hw.ranks_per_node), (Change("--cards", w),))
                                 for w in launchable), joined=" or ",
                               tail=f" ranks spread evenly over their nodes, as {fw.name}'s launch needs"))
    batch_ids = {r.id for r in fw.batch_rules}
    if scenario.concurrency is not None and batch_ids & set(binding) and tables.choices["attn"]:
        # a fixed concurrency the engine's batch rules turn away: the nearest its layouts run, first
        reach = _batch_reach(model, hw, fw, world, scenario, tables, sorted(batch_ids & set(binding)))
        remedies += [reach] if reach else []
    memory: list[Remedy] = []
    tried: list[str] = []  # what the sizes tried found, stated with what binds (it names nothing to change)
    if "B.memory_per_rank" in binding or not binding or empty:
        # a group the rules empty has no layout at any sequence, batch or weight format: only the size helps
        tried, memory = memory_remedies(model, hw, prec, fw, world, scenario, params, allow_cross_node, mem_opts,
                                  sizes_only=bool(empty) and "B.memory_per_rank" not in binding)
    slas = [b for b in binding if b.startswith("SLA")]
    sla: list[Remedy] = []  # relax the SLAs, then the cards and the concurrency that meet them
    if slas:
        sla.append(_sla_reach(planner, tables, world, slas, together=jointly, fits=fits))
        more = _sla_world(model, hw, prec, fw, world, scenario, params, allow_cross_node, mem_opts)
        if more:
            sla.append(Remedy(f"or {more} cards (the planner meets the SLA there)", (Change("--cards", more),)))
        fewer = _sla_concurrency(model, hw, prec, fw, world, scenario, params, allow_cross_node, mem_opts)
        if fewer:
            sla.append(Remedy(f"or --concurrency {fewer:,} (the planner meets the SLA there)",
                              (Change("--concurrency", fewer),)))
    if jointly and memory and sla:
        # families that free a configuration only relaxed together: one memory remedy and the SLA, not either
        # each memory alternative with the SLA relaxed: one change set per alternative the line offers
        ways = tuple(Remedy(m.text, tuple(({c.flag: c for c in sla[0].changes}
                                           | {c.flag: c for c in m.changes if c.flag not in SLA_FIELDS}).values()))
                     for m in memory)
        text = (f"relaxed together, as neither suffices alone: memory ({' or '.join(m.text for m in memory)}) and the "
                f"SLA ({'; '.join(r.text for r in sla)})")
        remedies.append(either(*ways, text=text))  # type: ignore[arg-type]  (memory is not empty here)
    elif jointly and "B.memory_per_rank" in binding and not memory:
        pass  # the SLA relaxed alone frees nothing and no memory change was found (`tried` says what was asked)
    else:
        remedies += memory + sla
    if stalled:
        remedies.append(Remedy(f"{len(stalled)} relaxed solve(s) timed out, so the binding list may be short; "
                               "raise --time-limit"))
    stopped = sorted({c.batch for c in planner.cut_stops if c.asked == "the front" and c.reason == "rejected"})
    if stopped:
        remedies.append(Remedy(f"the cut loop stopped at {len(stopped)} concurrenc"
                               f"{'y' if len(stopped) == 1 else 'ies'} ({', '.join(map(str, stopped[:6]))}) after "
                               f"{planner.max_cuts} configurations the full estimate rejected, so a fitting one may "
                               "exist there; a fixed --concurrency searches one"))
    names = ", ".join(binding) if binding else "the combination of memory and framework rules"
    why = f"{names} {'bind' if len(binding) > 1 else 'binds'}" + (
        " together (no one of them relaxed alone frees a configuration)" if jointly else "")
    if "B.memory_per_rank" in binding:
        terms.append(memory_terms(model, hw, prec, world, scenario, mem_opts))
    terms += tried
    if empty:  # the emptied groups' lines name their rules themselves
        why = "; ".join(terms)
    elif terms:
        why += f" ({'; '.join(terms)})"
    return InfeasibleError(f"no feasible parallel_config for {model.name} on {world} x {hw.name}: {why}",
                           binding, remedies_of(*remedies),
                           terms="; ".join(terms) or None)


def rule_terms(rule: str, group: str, fw: FrameworkProfile, space: Space) -> str:
    """A rule that emptied a group, in its own words: an engine rule's message, with the world and node it read;
    a one-knob rule of the space, the values of the group's knobs it removed."""
    try:
        text = fw.rule(rule).message
    except KeyError:  # a one-knob rule of the space, not the engine's
        removed: dict[str, list[int]] = {}
        for p in space.pruned:
            if p.rule == rule and p.knob in GROUPS[group]:
                removed.setdefault(p.knob, []).append(p.value)
        return f"{rule} removes " + ", ".join(f"{k} {'/'.join(map(str, v))}" for k, v in removed.items())
    return f"{rule}: {text}"


def memory_terms(model: ModelSpec, hw: Hardware, prec: Precision, world: int, scenario: Scenario,
                 mem_opts: MemoryOptions | None) -> str:
    """The memory that binds in the model's terms: its whole weights, and the cache of the requests held at the
    longest sequence, against the cards' memory within the per-rank limit, all ranks together. Where the sum fits
    the pool, the layouts the rules leave do not split them finely enough (a rule may cap a split: TP inside a
    node, no PP in a decode pool) beside what no layout splits (replicated modules, per-rank activations and
    buffers)."""
    load = scenario.concurrency or 1
    r = memory_per_rank(model, hw, ParallelConfig(world_size=1), prec, load, scenario.max_seq_len, mem_opts,
                        mtp_layers=scenario.mtp)
    pool = world * r.limit_bytes
    fmts = sorted({prec.fmt(g).name for g in ("attention", "dense", "experts") if g in prec.weights})
    weights = f"{model.name}'s weights, {r.weights_total / 1e9:,.1f} GB in {'/'.join(fmts)}"
    cards = f"{world} x {r.limit_bytes / 1e9:.1f} GB = {pool / 1e9:,.1f} GB usable on {hw.name}"
    if r.weights_total > pool:
        return f"{weights}, exceed {cards}"
    held = f"{load:,} request{'s' if load > 1 else ''} of {scenario.max_seq_len:,} tokens"
    cache = f"the cache of {held}, {r.cache_total / 1e9:,.1f} GB"
    if r.weights_total + r.cache_total > pool:
        return f"{weights}, and {cache}, exceed {cards}"
    return (f"{weights}, and {cache}, fit {cards} only in sum: no layout the rules leave splits them finely "
            "enough for a rank's share and what it holds whole (replicated modules, activations, buffers) to fit")


def _batch_reach(model: ModelSpec, hw: Hardware, fw: FrameworkProfile, world: int, scenario: Scenario,
                 tables: Tables, ids: list[str]) -> Remedy | None:
    """The most requests below a fixed concurrency that an attention layout holding that concurrency in memory
    (with its stage count's least-memory other groups) may run under the engine's batch rules `ids`
    (cann-recipes: a multiple of the attention DP size); fewer sequences fit where more do. None where no
    layout holds the concurrency: then memory, not the batch rule, is what to change."""
    rules = [r for r in fw.rules if r.id in ids]
    c = scenario.concurrency
    held = []
    for i, ch in enumerate(tables.choices["attn"]):
        others = {g: min((j for j, o in enumerate(opts) if o[-1] == ch[-1]), key=lambda j: tables.memory[(c, g, j)])
                  for g, opts in tables.choices.items() if g != "attn" and any(o[-1] == ch[-1] for o in opts)}
        if len(others) == sum(1 for g, opts in tables.choices.items() if g != "attn" and opts) \
                and tables.fits(c, {"attn": i, **others}):
            held.append(ch)

    def runs(b: int) -> int:
        """How many of the held layouts run b sequences."""
        return sum(all(r.holds(model_env(dict(zip(GROUPS["attn"], ch)), model, **device_facts(hw), world=world,
                                         batch=b, mtp=scenario.mtp)) for r in rules) for ch in held)

    # each rule is a divisibility by a count of ranks: one is met within `world` steps
    counts = {b: runs(b) for b in range(c - 1, max(c - world, 0), -1)}
    below = next((b for b, n in counts.items() if n), None)
    if below is None:
        return None
    # the nearest count may be run by one layout only (100 on 48 ranks: 99, by 3 attention replicas); the nearest
    # that the most run leaves the planner its choice of layouts (96: every DP size up to 48)
    most = max(counts, key=lambda b: (counts[b], b))

    def share(n: int) -> str:
        return "the one" if len(held) == 1 else f"all {n}" if n == len(held) else f"{n} of the {len(held)}"

    one = len(held) == 1
    text = (f"--concurrency {below:,} ({', '.join(ids)}: {share(counts[below])} attention layout{'' if one else 's'} "
            f"that hold{'s' if one else ''} {c:,} sequences run{'s' if one else ''} {below:,})")
    if counts[most] > counts[below]:
        text += f", or --concurrency {most:,} ({share(counts[most])} run it)"
    return Remedy(text, (Change("--concurrency", below),))


def relax_slas(slas: list[str], together: bool = False) -> str:
    """'relax' and the flags of the binding SLA families (both if none is one of them); `together`: they free a
    configuration only relaxed at once, which the line says."""
    flags = [SLA_FLAGS[s].flag for s in slas if s in SLA_FLAGS]
    if together and len(flags) > 1:
        return "relax " + " and ".join(flags) + " together"
    return "relax " + ("/".join(flags) or "--ttft-ms/--tpot-ms")


def _sla_reach(planner: cpsat.Planner, tables: Tables, world: int, slas: list[str], together: bool = False,
               fits: Callable[[Point], bool] | None = None) -> Remedy:
    """What the binding SLAs would have to allow: at the smallest concurrency with those SLAs set aside, the
    configuration with the least figure of the one that binds, or where both do the fastest (least request
    latency), and the figures they cap; naming it keeps the remedy in the
    deployment's own figures rather than a bare 'relax'. Each configuration named passes `fits` (the full
    estimate's memory, as a rerun at those caps checks it), where given."""
    # the smallest concurrency with a configuration once the SLAs are set aside: the smallest one of all may have
    # none (an engine's batch rule, a memory that holds only more sequences per DP group)
    b, p = next(((b, p) for b in tables.batches if (p := _fastest_aside(planner, b, slas, fits))), (None, None))
    if p is None:
        return Remedy(relax_slas(slas, together), tuple(Change(SLA_FLAGS[s].flag, None) for s in slas))
    if len(slas) == 1:
        # one SLA binds: its least figure, not the fastest configuration's (DeepSeek-V3.2 on 8 B200: TP8 has the
        # least request latency at TTFT 449 ms, Attn DP + SP8 reaches 366)
        p = _least_figure(planner, b, slas[0], p, fits)
    fig = planner.latency_of(b, dict(p.picks))[1]
    cfg = ParallelConfig(world_size=world, **tables.config(dict(p.picks)))
    knobs = " ".join(f"{k}={v}" for k, v in cfg.knobs().items() if v > 1) or "all knobs 1"
    # rounded up: each figure is quoted as the cap to pass (--tpot-ms 33.1 misses a TPOT of 33.14 ms)
    caps = {s: three_figures(getattr(fig, SLA_FLAGS[s].figure) * 1e3, up=True) for s in slas}
    shown = ", ".join(f"{SLA_FLAGS[s].name} {cap} ms" for s, cap in caps.items())
    which = (f"the configuration with the least {SLA_FLAGS[slas[0]].name}" if len(slas) == 1
             else "the fastest configuration")
    return Remedy(f"{relax_slas(slas, together)}: {which} at concurrency {b} on {world} "
                  f"card{'s' if world != 1 else ''} ({knobs}) shows {shown}",
                  tuple(Change(SLA_FLAGS[s].flag, float(cap.replace(",", ""))) for s, cap in caps.items()))


def _fastest_aside(planner: cpsat.Planner, b: int, slas: list[str], fits: Callable[[Point], bool] | None
                   ) -> Point | None:
    """The fastest configuration at concurrency b with the binding SLAs set aside that passes `fits`: the planner's
    answer with them relaxed (which skips the full estimate's check), else where that one fails it, the answer of
    a planner over the same tables without those SLAs and with `fits` as its check (its cut loop passes over
    what fails it)."""
    p = planner.best(b, relaxed=frozenset(slas))
    if p is None or fits is None or fits(p):
        return p
    return _planner_under(planner, {SLA_FLAGS[s].field: None for s in slas}, fits).best(b)


def _planner_under(planner: cpsat.Planner, update: dict[str, float | None], fits: Callable[[Point], bool] | None
                   ) -> cpsat.Planner:
    """A planner over `planner`'s tables for its scenario with the SLA fields `update` changes, whose check is
    `fits` (None: the tables' own constraints alone)."""
    out = cpsat.Planner(planner.t, planner.model, planner.hw, planner.fw, planner.scenario.model_copy(update=update),
                        planner.params)
    out.verify = fits
    return out


LEAST_FIGURE_REL = 2e-3  # _least_figure's resolution: finer than the three figures the remedy quotes


def _least_figure(planner: cpsat.Planner, b: int, sla: str, start: Point,
                  fits: Callable[[Point], bool] | None = None) -> Point:
    """The configuration at concurrency b with the least figure of the one binding SLA (the other SLA held),
    from `start`, one that has it set aside: bisection on that SLA's cap, each cap asked of a planner over the
    same tables (to LEAST_FIGURE_REL of the figure; a cap met moves the bound to the figure met), whose check is
    `fits` (the full estimate's memory: a configuration the rerun would reject is not named)."""
    fam = SLA_FLAGS[sla]

    def figure_ms(q: Point) -> float:
        return getattr(planner.latency_of(b, dict(q.picks))[1], fam.figure) * 1e3

    best, lo, hi = start, 0.0, figure_ms(start)
    while hi - lo > LEAST_FIGURE_REL * hi:
        cap = (lo + hi) / 2
        q = _planner_under(planner, {fam.field: cap}, fits).best(b)
        if q is None:
            lo = cap
        else:
            best, hi = q, min(figure_ms(q), cap)
    return best


def _sla_world(model: ModelSpec, hw: Hardware, prec: Precision, fw: FrameworkProfile, world: int,
               scenario: Scenario, params: SolverParams, allow_cross_node: bool,
               mem_opts: MemoryOptions | None) -> int | None:
    """The nearest larger world size (of the two nearest) at which the planner meets the SLAs, or None: more
    cards are offered only where they reach the SLA (a TPOT below one layer's communication floor does not come
    down with cards)."""
    larger = [w for w in remedy_worlds(world, model, hw, fw) if w > world][:SLA_SIZES]
    return first_that_plans(model, hw, prec, fw, larger, scenario, params, allow_cross_node, mem_opts)[0]


def _sla_concurrency(model: ModelSpec, hw: Hardware, prec: Precision, fw: FrameworkProfile, world: int,
                     scenario: Scenario, params: SolverParams, allow_cross_node: bool,
                     mem_opts: MemoryOptions | None) -> int | None:
    """Under a fixed --concurrency, the most requests below it at which the planner meets the SLAs on these cards
    (the largest concurrency on its front with the concurrency left to it), or None: an SLA that fewer requests
    meet is met by serving fewer at once."""
    from solver.plan.solve import plan  # late: solve imports this module for its diagnosis

    c = scenario.concurrency
    if not c or c <= 1:
        return None
    quick = quick_params(params)
    fewer = scenario.model_copy(update={"concurrency": None, "max_concurrency": c - 1})
    try:
        result = plan(model, hw, prec, fw, world, fewer, quick, top=1, allow_cross_node=allow_cross_node,
                      mem_opts=mem_opts, explain_binding=False, diagnose=False)
    except InfeasibleError:
        return None
    return max((p.batch for p in result.front), default=None)


SLA_SIZES = 2  # larger world sizes an SLA remedy asks the planner about
