"""What would make a deployment that memory rules out fit, each remedy checked or screened before it is offered:
the smallest world size the planner confirms where more cards are needed (the nearest where the rules, not the
card count, bind; a memory screen first: might_fit), a smaller concurrency, the longest
prompt that fits, weight formats smaller than the current ones that the hardware takes. plan.diagnosis and
plan.disagg_remedies read them."""
from __future__ import annotations

import math
from dataclasses import replace
from typing import Callable, NamedTuple, Sequence

from solver.errors import Change, InfeasibleError, Remedy
from solver.estimate.memory import memory_per_rank
from solver.estimate.memory_options import MemoryOptions
from solver.plan.groups import GROUPS
from solver.plan.memory_edge import bisect_edge
from solver.plan.points import SolverParams
from solver.plan.table_build import attention_rejections, attention_tuples
from solver.space.domains import build_space, largest_tp, redundant_for
from solver.space.placement import as_launched, device_of, equal_split_sizes
from solver.specs.dtypes import number_format
from solver.specs.framework import FrameworkProfile
from solver.specs.hardware import Hardware
from solver.specs.limits import MAX_CARDS
from solver.specs.model import ModelSpec
from solver.specs.parallel import ParallelConfig
from solver.specs.precision import Precision
from solver.specs.scenario import Scenario


REMEDY_SIZES = 12  # world sizes a diagnosis screens for one that fits
REMEDY_PLANS = 3  # of those, how many it may confirm with the planner (each is a small solve)
REMEDY_TIME_LIMIT_S = 5.0  # the most --time-limit each of those small solves takes


def remedy_worlds(world: int, model: ModelSpec, hw: Hardware, fw: FrameworkProfile) -> list[int]:
    """World sizes to try, nearest first (by ratio), larger before smaller at the same distance: multiples
    carry more memory, and divisors can be what makes the experts divide (384 experts on 4096 ranks do not).
    Past one node, a world that leaves a node part-filled also tries the whole-node sizes either side (12 on
    8-rank nodes: 8 and 16) and, under an engine whose launch runs equal ranks per node, the nearest sizes that
    spread evenly over their nodes (11: 10 and 12)."""
    sizes = {world * k for k in (2, 3, 4, 6, 8, 16, 32)} | {world // k for k in (2, 4, 8, 16, 32, 64, 128)
                                                             if world % k == 0}
    rpn = device_of(hw).ranks_per_node
    if world > rpn and world % rpn:
        sizes |= {world // rpn * rpn, -(-world // rpn) * rpn}
        if fw.equal_ranks_per_node:
            sizes |= set(equal_split_sizes(world, rpn))
    sizes = {w for w in sizes if 1 <= w <= MAX_CARDS and w != world}
    return sorted(sizes, key=lambda w: (abs(math.log(w / world)), -w))[:REMEDY_SIZES]


def might_fit(model: ModelSpec, hw: Hardware, prec: Precision, fw: FrameworkProfile, w: int, scenario: Scenario,
               mem_opts: MemoryOptions | None, seq_len: int | None = None) -> bool:
    """A cheap screen before the planner is asked: the most sharded layouts with TP inside the node (MoE TP as
    small as lets EP hold the experts, with the redundant copies the engine would place), without and with
    pipeline stages across the rest of the ranks (at most one per layer), hold the smallest batch at the
    scenario's longest sequence (or `seq_len`). Attention is screened both ways the node's ranks can shard it:
    by heads (TP) and by requests (attention DP, or KVP over the same ranks where the engine has it), since a
    cache that heads do not split (MLA's latent, one K/V head) is least per rank with the requests spread."""
    tp = largest_tp(w, hw, model)
    stages = [1] + [w // tp] * (1 < w // tp <= model.num_layers)
    kvp = tp if "kvp_size" in fw.knobs else 1
    attention = [(tp, 1)] + [(1, kvp)] * (tp > 1)
    for pp in stages:
        stage = w // pp
        moe_tps = [1] if not model.is_moe else [t for t in (1, 2, 4, 8, 16, 32) if t <= tp and stage % t == 0
                                                and redundant_for(model, fw, stage // t) is not None]
        if not moe_tps:
            continue
        t = moe_tps[0] if model.is_moe else tp
        for a_tp, a_kvp in attention:
            pc = ParallelConfig(world_size=w, attn_tp_size=a_tp, kvp_size=a_kvp, dense_tp_size=tp, embed_tp_size=tp,
                                lmhead_tp_size=tp, moe_tp_size=t, pp_size=pp,
                                redundant_experts=(redundant_for(model, fw, stage // t) or 0) if model.is_moe else 0)
            if memory_per_rank(model, hw, pc, prec, scenario.concurrency or 1, seq_len or scenario.max_seq_len,
                               mem_opts, mtp_layers=scenario.mtp).feasible:
                return True
    return False


def memory_remedies(model: ModelSpec, hw: Hardware, prec: Precision, fw: FrameworkProfile, world: int,
                     scenario: Scenario, params: SolverParams, allow_cross_node: bool,
                     mem_opts: MemoryOptions | None, sizes_only: bool = False) -> tuple[list[str], list[Remedy]]:
    """(what binds at the sizes tried, said with the binding constraints, not as remedies, since it names nothing
    to change: the sizes the planner found none at, that no size holds the weights, the sizes the engine's rules
    run nothing at; the remedies) for a deployment that memory rules out, each remedy checked or screened: a world
    size the planner confirms (with --allow-cross-node where only that finds one), a smaller concurrency, a
    shorter sequence (where the screen passes at one token), weight formats smaller than the current ones that the
    hardware takes. `sizes_only`: the world size alone (a group the rules leave empty, which no sequence, batch or
    format refills)."""
    out: list[Remedy] = []
    said: list[str] = []
    aside = sla_changes_aside(scenario)  # each size is checked with the SLAs set aside
    ruled: dict[int, list[str]] = {}
    fits, planned = _fitting_world(model, hw, prec, fw, world, scenario, params, allow_cross_node, mem_opts, ruled)
    wide = inside_node(hw, fw, planned, allow_cross_node)
    if fits is not None:
        out.append(Remedy(f"{fits} cards fit (the planner found a configuration there"
                          f"{sla_aside(scenario, ', SLAs aside')})", (Change("--cards", fits), *aside)))
    elif planned:
        said.append(f"the planner found none at {', '.join(map(str, planned))} cards (the sizes a memory screen "
                    f"passes){wide}")
        across = across_nodes(model, hw, prec, fw, planned, scenario.model_copy(
            update={"ttft_ms": None, "tpot_ms": None}), params, mem_opts) if wide else None
        if across is not None:
            out.append(Remedy(f"{across} cards with --allow-cross-node (the planner found a configuration there"
                              f"{sla_aside(scenario, ', SLAs aside')})",
                              (Change("--cards", across), Change("--allow-cross-node", True), *aside)))
    else:
        near = [w for w in remedy_sizes(world, model, hw, prec, fw, scenario, mem_opts) if w not in ruled]
        load = f"{scenario.concurrency:,} sequences" if scenario.concurrency else "the smallest batch"
        # where the engine's rules leave only sizes below `world`, "none of them holds the weights" says nothing:
        # fewer cards hold more weights a rank
        if near and (max(near) > world or not ruled or sizes_only):
            said.append(f"no size from {min(near)} to {max(near)} cards holds the weights and {load}{wide}")
    larger = sorted(w for w in ruled if w > world)
    if fits is None and larger:
        # sizes the engine's rules run no configuration at, whatever the flags: said, not offered as a remedy
        rules = sorted({r for w in larger for r in ruled[w]})
        at = ", ".join(map(str, larger)) if len(larger) <= 3 else f"{larger[0]} to {larger[-1]}"
        said.append(f"{fw.name} runs no larger size ({', '.join(rules)} at {at} cards)")
    if sizes_only:
        return said, out
    fewer = _most_concurrency(model, hw, prec, fw, world, scenario, params, allow_cross_node, mem_opts)
    if fewer:
        out.append(fewer)
    shorter = _longest_isl(model, hw, prec, fw, world, scenario, params, allow_cross_node, mem_opts)
    if shorter:
        out.append(shorter)
    cheaper = smaller_weights(model, hw, prec, lambda p: might_fit(model, hw, p, fw, world, scenario, mem_opts))
    if cheaper:
        out.append(cheaper)
    return said, out


def inside_node(hw: Hardware, fw: FrameworkProfile, sizes: Sequence[int], allow_cross_node: bool) -> str:
    """' with TP inside a node' where --allow-cross-node was not given and a size tried spans nodes (the flag
    matters only there), else ''."""
    spans = any(w > device_of(as_launched(hw, fw, w)).ranks_per_node for w in sizes)
    return "" if allow_cross_node or not spans else " with TP inside a node"


def across_nodes(model: ModelSpec, hw: Hardware, prec: Precision, fw: FrameworkProfile, sizes: Sequence[int],
                 scenario: Scenario, params: SolverParams | None, mem_opts: MemoryOptions | None,
                 method: str = "cpsat") -> int | None:
    """The first of `sizes` (the ones planned inside a node, which found none) at which the planner finds a
    configuration with TP across nodes, or None: --allow-cross-node is offered only there, as a hint the rerun
    refuses again is no remedy (first_that_plans)."""
    return first_that_plans(model, hw, prec, fw, sizes, scenario, params, True, mem_opts, method)[0]


def _longest_isl(model: ModelSpec, hw: Hardware, prec: Precision, fw: FrameworkProfile, world: int,
                 scenario: Scenario, params: SolverParams, allow_cross_node: bool,
                 mem_opts: MemoryOptions | None) -> Remedy | None:
    """The longest --isl (the OSL kept) at which these cards hold the model, as a remedy the planner confirms, or
    None: the memory screen (might_fit) only grows with the sequence, so a bisection finds its longest sequence;
    the planner then checks that ISL, and up to REMEDY_PLANS - 1 shorter ones (each ISL_BACKOFF of the last)
    where what the screen leaves out (activations of the chunk, a layout the rules turn away) still binds."""
    question = memory_question(scenario)
    lo = longest_isl_screened(model, hw, prec, fw, world, question, mem_opts)
    if lo is None:
        return None
    isl = backed_off(lo, lambda n: plans_at(model, hw, prec, fw, world, question.model_copy(update={"isl": n}),
                                             params, allow_cross_node, mem_opts))
    if isl is None:
        return None
    held = f"{scenario.concurrency:,} requests" if scenario.concurrency else "one request"
    longest = (f"the longest prompt {world} x {hw.name} hold{'s' * (world == 1)} with {held} at OSL "
               f"{scenario.osl:,}" if isl == lo else f"the memory screen's longest, {lo:,}, the planner turned away")
    aside = sla_aside(scenario, ", SLAs aside")
    return Remedy(f"--isl {isl} or shorter ({longest}; the planner found a configuration there{aside})",
                  (Change("--isl", isl), *sla_changes_aside(scenario)))


def _most_concurrency(model: ModelSpec, hw: Hardware, prec: Precision, fw: FrameworkProfile, world: int,
                      scenario: Scenario, params: SolverParams, allow_cross_node: bool,
                      mem_opts: MemoryOptions | None) -> Remedy | None:
    """Under a fixed --concurrency, the most requests below it that these cards hold, as a remedy the planner
    confirms, or None (no --concurrency given, or not even one request passes: the weights alone bind, which
    fewer requests do not change). The memory screen only grows with the batch, so a bisection finds its most;
    the planner then checks it, and up to REMEDY_PLANS - 1 smaller ones (each ISL_BACKOFF of the last)."""
    c = scenario.concurrency
    if not c or c <= 1:
        return None

    def at(n: int) -> Scenario:
        return scenario.model_copy(update={"concurrency": n})

    if not might_fit(model, hw, prec, fw, world, at(1), mem_opts):
        return None
    # 1 passes the screen; c does not (memory binds)
    lo = bisect_edge(1, c, lambda n: might_fit(model, hw, prec, fw, world, at(n), mem_opts)) or 1
    n = backed_off(lo, lambda n: plans_at(model, hw, prec, fw, world, memory_question(at(n)), params,
                                           allow_cross_node, mem_opts))
    if n is None:
        return None
    return Remedy(f"--concurrency {n:,}{' or fewer' * (n > 1)} (the most requests {world} x {hw.name} "
                  f"hold{'s' * (world == 1)} "
                  f"by the memory screen{'' if n == lo else f', {lo:,}, less what the planner turned away'}; the "
                  f"planner found a configuration there{sla_aside(scenario, ', SLAs aside')})",
                  (Change("--concurrency", n), *sla_changes_aside(scenario)))


def backed_off(start: int, plans: Callable[[int], bool]) -> int | None:
    """The first of `start` and up to REMEDY_PLANS - 1 smaller values (each ISL_BACKOFF of the last) at which
    `plans` (a small solve: plans_at) finds a configuration, where what the screen leaves out still binds; None
    where none does."""
    n = start
    for _ in range(REMEDY_PLANS):
        if plans(n):
            return n
        n = int(n * ISL_BACKOFF)
        if n < 1:
            return None
    return None


def quick_params(params: SolverParams | None) -> SolverParams:
    """The planner's settings for one of a remedy's small solves: the run's workers and seed, within
    REMEDY_TIME_LIMIT_S."""
    params = params or SolverParams()
    return SolverParams(workers=params.workers, seed=params.seed,
                        time_limit_s=min(params.time_limit_s, REMEDY_TIME_LIMIT_S))


def plans_at(model: ModelSpec, hw: Hardware, prec: Precision, fw: FrameworkProfile, world: int, scenario: Scenario,
             params: SolverParams | None, allow_cross_node: bool, mem_opts: MemoryOptions | None,
             method: str = "cpsat") -> bool:
    """Whether the planner, in a remedy's small solve (quick_params), finds a configuration for `scenario` on
    `world` ranks."""
    from solver.plan.solve import plan  # late: solve imports this module for its diagnosis

    try:
        plan(model, hw, prec, fw, world, scenario, quick_params(params), method=method, top=1,
             allow_cross_node=allow_cross_node, mem_opts=mem_opts, explain_binding=False, diagnose=False)
    except InfeasibleError:
        return False
    return True


def longest_isl_screened(model: ModelSpec, hw: Hardware, prec: Precision, fw: FrameworkProfile, world: int,
                         scenario: Scenario, mem_opts: MemoryOptions | None) -> int | None:
    """The longest ISL below the scenario's (its OSL kept) that the memory screen (might_fit) passes on `world`
    ranks, or None where one prompt token does not pass: the screen only grows with the sequence, so a bisection."""
    tail = scenario.max_seq_len - scenario.isl  # the output tokens the sequence holds past the prompt
    if scenario.isl <= 1 or not might_fit(model, hw, prec, fw, world, scenario, mem_opts, seq_len=tail + 1):
        return None
    # 1 passes (screened above); the ISL given does not
    return bisect_edge(1, scenario.isl,
                       lambda n: might_fit(model, hw, prec, fw, world, scenario, mem_opts, seq_len=tail + n)) or 1


ISL_BACKOFF = 0.9  # each next ISL the planner is asked about, as a share of the last, where the screen's longest fails


# the weight formats a remedy may name, by the flag's spelling
WEIGHT_REMEDIES = ("fp8", "int8", "int4", "fp4")


def with_weights(prec: Precision, name: str, groups: Sequence[str]) -> Precision:
    """`prec` with `groups` stored in format `name` where that has fewer bits (a flag never grows a group the
    deployment already holds smaller: --moe-weight-dtype int4 stays under --weight-dtype fp8)."""
    f = number_format(name)
    return replace(prec, weights={g: f if g in groups and f.bits < w.bits else w for g, w in prec.weights.items()})


# the groups each weight flag stores (resolve_precision: --weight-dtype every linear layer, routed experts included)
WEIGHT_FLAGS = {"--weight-dtype": ("attention", "dense", "experts"), "--moe-weight-dtype": ("experts",)}


def cheaper_weights(model: ModelSpec, hw: Hardware, prec: Precision,
                    fits: Callable[[Precision], bool] | None = None) -> str:
    """The weight flags and formats with fewer bits than this deployment's, that the hardware computes in or
    keeps weight-only (resolve_precision accepts them) and, given `fits`, under which the deployment's memory
    screen passes (a format that still does not hold the weights is no remedy); '' when none."""
    return _formats_text(_smaller_formats(model, hw, prec, fits))


def smaller_weights(model: ModelSpec, hw: Hardware, prec: Precision,
                    fits: Callable[[Precision], bool] | None = None) -> Remedy | None:
    """cheaper_weights as a remedy: 'smaller weights (...)', standing for the first flag at its first format named
    (each named passes the screen); None where none does."""
    formats = _smaller_formats(model, hw, prec, fits)
    if not formats:
        return None
    flag, names = formats[0]
    return Remedy(f"smaller weights ({_formats_text(formats)})", (Change(flag, names[0]),))


def _formats_text(formats: list[tuple[str, list[str]]]) -> str:
    return ", ".join(f"{flag} {'/'.join(names)}" for flag, names in formats)


def _smaller_formats(model: ModelSpec, hw: Hardware, prec: Precision,
                     fits: Callable[[Precision], bool] | None) -> list[tuple[str, list[str]]]:
    """(flag, the formats it may take) of cheaper_weights, the flag for every linear layer first."""
    def smaller(than: float, flag: str) -> list[str]:
        return [n for n in WEIGHT_REMEDIES if (f := number_format(n)).bits < than
                and (hw.supports(f.compute) or f.compute in hw.weight_only_formats)
                and (fits is None or fits(with_weights(prec, n, WEIGHT_FLAGS[flag])))]

    parts = []
    dense = smaller(max(prec.fmt(g).bits for g in ("attention", "dense")), "--weight-dtype")
    if dense:
        parts.append(("--weight-dtype", dense))
    experts = smaller(prec.fmt("experts").bits, "--moe-weight-dtype") if model.is_moe else []
    if experts and experts != dense:
        parts.append(("--moe-weight-dtype", experts))
    return parts


def _fitting_world(model: ModelSpec, hw: Hardware, prec: Precision, fw: FrameworkProfile, world: int,
                   scenario: Scenario, params: SolverParams, allow_cross_node: bool,
                   mem_opts: MemoryOptions | None, ruled: dict[int, list[str]] | None = None
                   ) -> tuple[int | None, list[int]]:
    """(the first world size other than `world`, in remedy_sizes' order, at which the planner itself finds a
    configuration: the smallest memory admits, or where the rules rule `world` out the nearest, larger first at
    the same distance; the sizes it was asked about): the remedy is checked (first_that_plans; `ruled` as there)."""
    sizes = remedy_sizes(world, model, hw, prec, fw, scenario, mem_opts)
    # planned over the scenario's own concurrencies (the SLAs aside): an engine whose attention DP splits the
    # batch runs a size only at a batch its DP divides, which one request is not
    return first_that_plans(model, hw, prec, fw, sizes, scenario.model_copy(update={"ttft_ms": None, "tpot_ms": None}),
                            params, allow_cross_node, mem_opts, ruled=ruled)


def remedy_sizes(world: int, model: ModelSpec, hw: Hardware, prec: Precision, fw: FrameworkProfile,
                 scenario: Scenario, mem_opts: MemoryOptions | None) -> list[int]:
    """The sizes a remedy tries, in order: where memory needs more cards than `world` (the smallest size the
    screen passes is larger), those smallest sizes ascending, so the remedy is the same whatever size was asked;
    otherwise (the engine's rules or the layout, not the card count, rule `world` out) the nearest (remedy_worlds)."""
    smallest = smallest_worlds(model, hw, prec, fw, memory_question(scenario), mem_opts)
    return smallest if smallest and smallest[0] > world else remedy_worlds(world, model, hw, fw)


SCAN_SIZES = 256  # the most world sizes smallest_worlds screens past its lower bound


def least_world(model: ModelSpec, hw: Hardware, prec: Precision, scenario: Scenario,
                mem_opts: MemoryOptions | None) -> int:
    """No fewer cards hold the model: the weights and the least cache (the scenario's smallest batch at its longest
    sequence) on one rank, over one card's usable memory. Sharding divides each at best by the world size, and
    what every rank keeps whole (norms, a replicated embedding, activations) only adds."""
    one = memory_per_rank(model, hw, ParallelConfig(world_size=1), prec, scenario.concurrency or 1,
                          scenario.max_seq_len, mem_opts, mtp_layers=scenario.mtp)
    return max(1, math.ceil((one.weights_total + one.cache_total) / one.limit_bytes))


def smallest_worlds(model: ModelSpec, hw: Hardware, prec: Precision, fw: FrameworkProfile, scenario: Scenario,
                    mem_opts: MemoryOptions | None) -> list[int]:
    """The smallest world sizes, ascending (at most REMEDY_SIZES), at which the memory screen (might_fit, with the
    heads, experts and node sizes it shards by) passes, from least_world up (at most SCAN_SIZES sizes screened):
    the same sizes whatever size the deployment asked for."""
    lo = least_world(model, hw, prec, scenario, mem_opts)
    out: list[int] = []
    for w in range(lo, min(lo + SCAN_SIZES, MAX_CARDS + 1)):
        if might_fit(model, as_launched(hw, fw, w), prec, fw, w, scenario, mem_opts):
            out.append(w)
            if len(out) >= REMEDY_SIZES:
                break
    return out


def rules_leaving_no_layout(model: ModelSpec, hw: Hardware, fw: FrameworkProfile, world: int,
                            scenario: Scenario) -> list[str]:
    """The rules under which no attention layout runs on `world` ranks whatever the flags (the space with TP across
    nodes allowed): ATOM's C.single_node past one node. [] where one runs."""
    hw = as_launched(hw, fw, world)
    space = build_space(model, hw, fw, world, scenario, allow_cross_node=True)
    if attention_tuples(space, model, fw, world, hw, scenario):
        return []
    return (attention_rejections(space, model, fw, world, hw, scenario)
            or sorted({p.rule for p in space.pruned if p.knob in GROUPS["attn"]}))


class SlaFamily(NamedTuple):
    """A binding SLA family as the remedies read it: its flag, the figure's attribute on Figures and estimates, the
    figure's name, and the Scenario field that holds its limit."""

    flag: str
    figure: str
    name: str
    field: str


SLA_FLAGS = {"SLA.ttft": SlaFamily("--ttft-ms", "ttft_s", "TTFT", "ttft_ms"),
             "SLA.tpot": SlaFamily("--tpot-ms", "tpot_s", "TPOT", "tpot_ms")}
SLA_FIELDS = tuple(f.flag for f in SLA_FLAGS.values())  # the SLA flags, as a remedy sets them aside


def sla_changes_aside(scenario: Scenario) -> tuple[Change, ...]:
    """The changes that set the scenario's SLAs aside (a remedy checked without them, which sla_aside says in
    words): each given SLA flag removed."""
    return tuple(Change(f.flag, None) for f in SLA_FLAGS.values() if getattr(scenario, f.field) is not None)


def sla_aside(scenario: Scenario, text: str) -> str:
    """`text` where the scenario has an SLA, else "": a memory remedy is checked with the SLAs set aside
    (memory_question), so its line says so wherever one was given (applied alone, it may still miss the SLA)."""
    return text if scenario.has_slas() else ""


def memory_question(scenario: Scenario) -> Scenario:
    """The scenario a memory remedy is checked at: the smallest concurrency (a fixed one stays), the SLAs set aside
    (memory is the question; a binding SLA has its own remedy)."""
    return scenario.model_copy(update={"ttft_ms": None, "tpot_ms": None}
                               | ({} if scenario.concurrency else {"max_concurrency": 1}))


def first_that_plans(model: ModelSpec, hw: Hardware, prec: Precision, fw: FrameworkProfile, sizes: Sequence[int],
                     scenario: Scenario, params: SolverParams | None, allow_cross_node: bool,
                     mem_opts: MemoryOptions | None, method: str = "cpsat",
                     ruled: dict[int, list[str]] | None = None) -> tuple[int | None, list[int]]:
    """(the first of `sizes` at which the planner finds a configuration for `scenario`, the sizes it was asked
    about): a size the engine's rules run nothing at is passed over (into `ruled`, with the rules:
    rules_leaving_no_layout), each other passes the memory screen (might_fit) first, and at most REMEDY_PLANS are
    planned, each within REMEDY_TIME_LIMIT_S."""
    planned: list[int] = []
    for w in sizes:
        rules = rules_leaving_no_layout(model, hw, fw, w, scenario)
        if rules:
            if ruled is not None:
                ruled[w] = rules
            continue
        if not might_fit(model, as_launched(hw, fw, w), prec, fw, w, scenario, mem_opts):
            continue
        planned.append(w)
        if plans_at(model, hw, prec, fw, w, scenario, params, allow_cross_node, mem_opts, method):
            return w, planned
        if len(planned) >= REMEDY_PLANS:
            break
    return None, planned
