"""Planning end to end: space -> tables -> CP-SAT (or exhaustive) -> Pareto front -> top candidates, each
re-estimated with the full estimator. Infeasibility is diagnosed by relaxing one constraint family at a time.
"""
from __future__ import annotations

import gc
import math
from collections import OrderedDict
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterator, Sequence

from solver.errors import Change, InfeasibleError, InputError, InternalError, Remedy, either, remedies, three_figures
from solver.specs.notes import input_notes, past_position_table
from solver.specs.limits import MAX_CARDS, MAX_TIME_LIMIT_S, MAX_TOP
from solver.estimate.compute import factors_for
from solver.estimate.factors import Factors
from solver.estimate.memory_options import MemoryOptions, engine_options, role_options, workload_options
from solver.estimate.serving import Estimate, Workload, estimate
from solver.plan import cpsat
from solver.plan.points import CutStop, Point, SolverParams, SolveStatus, attention_family, pareto, pattern_key
from solver.plan import rule_tables
from solver.plan.deployment_front import deployment_front, on_front_keys
from solver.plan.diagnosis import binding_constraints, explain_infeasible
from solver.plan.exhaustive import OutOfTime, enumerate_points
from solver.plan.layout_memory import assumed_memory
from solver.plan.sla_edge import (at_own_edges, edges_planned, full_estimate_misses, planned_sla_edges,
                                   runs_more, sla_edge_note, sla_tests)
from solver.plan.table_build import build_tables
from solver.plan.tables import Tables
from solver.plan.verified import verified_candidate
from solver.space.domains import build_space, range_note
from solver.space.placement import as_launched, placement_note
from solver.specs.framework import FrameworkProfile
from solver.specs.fitted import fitted_stamp
from solver.specs.hardware import Hardware
from solver.specs.model import ModelSpec
from solver.specs.parallel import KNOBS, ParallelConfig, model_knobs
from solver.specs.precision import Precision
from solver.specs.rule_env import unstated_platform_note
from solver.specs.scenario import SCENARIO_WEIGHTS, Scenario


# the candidates the ranking orders first, whatever --top asks (the seed's 2-3 best configurations: the best score,
# the best on another backbone, the next pattern): entry.run_solve plans at least these, so the first candidate
# does not depend on how many are shown; candidates planned beyond them are ranked after them
CORE_CANDIDATES = 3


@dataclass(frozen=True)
class Planned:
    config: ParallelConfig
    batch: int
    estimate: Estimate
    latency_s: float  # request latency (Scenario.request_latency) of the full figures
    on_front: bool
    # why it is a candidate: "best score" (the scenario's score over the front), "other backbone" (the best
    # on another attention backbone), "next pattern" (the next distinct pattern by the score), "verified
    # deployment" (a verified configuration of this deployment the planner admits: verified_candidate)
    role: str = "best score"
    verified: str | None = None  # the verified deployment's id, for that role
    # one of the first CORE_CANDIDATES chosen (or the verified deployment): the ranking orders these first
    core: bool = True
    # off the front only as a tie: a front configuration shows the same request latency and throughput per rank
    # (the front keeps one configuration per point, the same whatever the scenario)
    ties_front: bool = False
    # at an SLA edge (plan.sla_edge): the planned power whose configurations the edge was found from, else None
    sla_edge_from: int | None = None

    def front_clause(self) -> str:
        """Where the configuration stands to the front, as a clause after its role ('' on it)."""
        if self.on_front:
            return ""
        if self.sla_edge_from is not None:
            return ", at its own SLA edge, between the front's concurrencies"
        return (", tied with a front configuration: the same request latency and tokens/s per rank"
                if self.ties_front else ", off the front")


def tie_marked(p: Planned, front: list[Planned]) -> Planned:
    """p, marked where it is off the front yet a front configuration has its figures (request latency and output
    tokens/s per rank, to 1e-9): a tie the front resolved to the other configuration, not a dominated point."""
    if p.on_front:
        return p
    tps = p.estimate.output_tokens_per_s_per_rank
    tied = any(math.isclose(q.latency_s, p.latency_s, rel_tol=1e-9)
               and math.isclose(q.estimate.output_tokens_per_s_per_rank, tps, rel_tol=1e-9) for q in front)
    return replace(p, ties_front=True) if tied else p


@dataclass
class PlanResult:
    candidates: list[Planned]
    front: list[Planned]
    binding: list[str] = field(default_factory=list)
    method: str = "cpsat"
    pruned: dict[str, list[str]] = field(default_factory=dict)  # rule -> knob values it removed
    # OPTIMAL: every solve behind the front proved its optimum; FEASIBLE: the time limit cut some short, so the
    # front is the best found so far (`timeouts` says where, with the gap to the best bound)
    status: str = "OPTIMAL"
    timeouts: list[SolveStatus] = field(default_factory=list)
    time_limit_s: float | None = None

    def timeout_note(self) -> str | None:
        """One line on a time-out: how many solves ran out, and the largest gap left."""
        if self.status == "OPTIMAL":
            return None
        gaps = [t.gap for t in self.timeouts if t.gap is not None]
        empty = sum(1 for t in self.timeouts if not t.found)
        parts = [f"{len(self.timeouts)} CP-SAT solve(s) hit --time-limit {self.time_limit_s:g} s"]
        if gaps:
            parts.append(f"best found so far, gap to the bound up to {max(gaps):.2%}")
        if empty:
            parts.append(f"{empty} found no solution in time")
        return "timed out (FEASIBLE, not OPTIMAL): " + "; ".join(parts) + "; raise --time-limit to prove the optimum"
    knobs: tuple[str, ...] = KNOBS  # the model's own knobs (parallel.model_knobs): what the output shows
    # where the SLA/memory cut loop gave up (CutStop): the full estimate rejected every answer the cut
    # budget allowed, so those concurrencies were not searched further (not shown infeasible)
    cut_stops: list[CutStop] = field(default_factory=list)

    # the best-score candidate's concurrency is the top of the range --max-concurrency cut (space.range_note)
    range_note: str | None = None
    # k copies of a smaller deployment would carry clearly more per rank (plan.copies; entry.run_solve's copies_hint)
    copies_note: str | None = None
    # a candidate runs at the SLA edge, a concurrency between the powers of two (plan.sla_edge)
    edge_note: str | None = None
    # #1's own configuration holds more requests than the power of two it was planned at, and scores better there
    # (plan.config_edge; entry.run_solve's copies_hint)
    held_note: str | None = None
    # the concurrencies planned: the powers of two, the memory edge, the SLA edges
    planned_batches: tuple[int, ...] = ()
    # edges were planned (plan.sla_edge: under SLAs, or where a batch rule made the grid skip a layout's counts)
    edges_found: bool = False
    # what reading the inputs noted (specs/notes.input_notes: a field the config reader did not read, weights
    # kept in the checkpoint's format, a device no calibration row measured); shown with the answer
    input_notes: tuple[str, ...] = ()

    def cut_note(self) -> str | None:
        """One line on the cut loop's stops, or None when every solve ended with an accepted answer or a proof."""
        notes = []
        for reason in ("rejected", "rounds"):
            stops = [c for c in self.cut_stops if c.reason == reason]
            if not stops:
                continue
            where = sorted({(c.asked, c.batch) for c in stops})
            cuts = max(c.cuts for c in stops)
            shown = ", ".join(f"{asked} at concurrency {b}" for asked, b in where[:6])
            more = f" and {len(where) - 6} more" if len(where) > 6 else ""
            notes.append(f"cut loop stopped after {cuts} rejected answers (the full estimate's memory/SLA check) "
                         f"for {shown}{more}: those were not searched further, so a fitting configuration may "
                         "exist there" if reason == "rejected" else
                         f"a layout's search reached its bound of {cuts} rounds for {shown}{more}: its best answer "
                         "stands without a proof that nothing in the layout beats it")
        return "; ".join(notes) or None


# ------------------------------------------------------------------------------- tables and planners reused

_CACHE_SIZE = 32  # a sweep's combinations for one model: cards x ISL/OSL x hardware, scenario kinds shared
_CACHE: OrderedDict[tuple, tuple[tuple, Any]] = OrderedDict()


def _tables_key(model: ModelSpec, hw: Hardware, fw: FrameworkProfile, world: int, scenario: Scenario,
                allow_cross_node: bool, mem_opts: MemoryOptions | None) -> tuple:
    """What the space, the tables and the full estimates read of a scenario (space.domains: concurrency, phase;
    plan.tables: lengths, MTP, latency terms; estimate.serving.Workload.for_scenario: phase, lengths, MTP, the
    prefix-cache hit rate): not its kind or weights, which only rank the front; and the fitted factors' files
    (fitted_stamp: the shipped one and a user's `--factors`), which the tables' costs read through the profile.
    The objects themselves are compared by _cached."""
    return (model.name, hw.name, fw.name, fitted_stamp(), world, allow_cross_node, mem_opts, scenario.isl, scenario.osl,
            scenario.mtp, scenario.mtp_accept, scenario.phase, scenario.concurrency, scenario.max_concurrency,
            scenario.max_seq_len, scenario.latency_terms, scenario.prefill_per_output_token, scenario.prefix_hit)


def _cached(key: tuple, inputs: tuple, build: Callable[[], Any]) -> Any:
    """The value built for `key` when it was built from equal inputs (the same objects, or equal ones: a
    reloaded profile, a re-resolved precision), else a new one; least recently used entries go first."""
    hit = _CACHE.get(key)
    if hit is not None and len(hit[0]) == len(inputs) and all(a is b or a == b for a, b in zip(hit[0], inputs)):
        _CACHE.move_to_end(key)
        return hit[1]
    value = build()
    _CACHE[key] = (inputs, value)
    while len(_CACHE) > _CACHE_SIZE:
        _CACHE.popitem(last=False)
    return value


def clear_cache() -> None:
    """Drop the reused tables, planners and static rule tables (benchmarks time a cold plan with it)."""
    _CACHE.clear()
    rule_tables.clear_rule_cache()


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector while planning. The planner's tables and caches are trees of
    small objects (a generic W=128 plan leaves none unreachable) but hundreds of thousands of them, which the
    collector rescans as they grow: about 2.5 of 14 CPU seconds of that plan. Reference counting still frees
    everything; the collector resumes (as it was) when the plan returns or raises."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.freeze()  # what the plan made joins the oldest generation: no young collection rescans it
            gc.unfreeze()
            gc.enable()


def plan(model: ModelSpec, hw: Hardware, prec: Precision, fw: FrameworkProfile, world: int, scenario: Scenario,
         params: SolverParams | None = None, method: str = "cpsat", top: int = 3,
         allow_cross_node: bool = False, mem_opts: MemoryOptions | None = None,
         explain_binding: bool = True, diagnose: bool = True,
         verified: Sequence[tuple[str, dict[str, int]]] = ()) -> PlanResult:
    """`verified`: (id, knobs) of the verified deployments of this model, hardware, world size and phase; the
    best-scoring one the planner admits is offered as one more candidate (`verified_candidate`)."""
    with _collector_paused():
        result = _plan(model, hw, prec, fw, world, scenario, params, method, top, allow_cross_node, mem_opts,
                       explain_binding, diagnose, verified)
        # the front is the deployment's, whatever the kind: every kind's candidates join the planner's points.
        # A candidate off the planner's points is one moved to its own SLA edge; without SLA edges every kind's
        # candidates are planned points, on the front or beaten by (or tied with) a class optimum on it, so the
        # other kinds are not planned for nothing (they cost a sixth of a plan). Without SLAs only a batch rule's
        # edges exist, found from the class optima every kind shares: none found here, none for the other kinds
        others = [c for k in SCENARIO_WEIGHTS if k != scenario.kind or scenario.weights is not None
                  for c in _kind_candidates(model, hw, prec, fw, world, scenario.model_copy(
                      update={"kind": k, "weights": None}), params, method, top, allow_cross_node, mem_opts, verified)
                  ] if edges_planned(scenario, fw) and (scenario.has_slas() or result.edges_found) else []
        result.front = deployment_front(result.front, [*result.candidates, *others])
        on = on_front_keys(result.front)
        result.candidates = [tie_marked(replace(c, on_front=(tuple(c.config.knobs().values()), c.batch) in on,
                                                ties_front=False), result.front) for c in result.candidates]
        return result


def _kind_candidates(model: ModelSpec, hw: Hardware, prec: Precision, fw: FrameworkProfile, world: int,
                     scenario: Scenario, params: SolverParams | None, method: str, top: int, allow_cross_node: bool,
                     mem_opts: MemoryOptions | None, verified: Sequence[tuple[str, dict[str, int]]]
                     ) -> list[Planned]:
    """The candidates the planner picks for `scenario`'s kind (no binding explained, no diagnosis), once per
    deployment and kind: the sweep asks each kind's front, and each asks the other kinds' candidates."""
    def build() -> list[Planned]:
        try:
            return _plan(model, hw, prec, fw, world, scenario, params, method, top, allow_cross_node, mem_opts,
                         False, False, verified).candidates
        except InfeasibleError:
            return []
    return _cached(("kind candidates", model.name, hw.name, fw.name, fitted_stamp(), world, scenario.model_dump_json()),
                   (model, hw, prec, fw, mem_opts, params, method, top, allow_cross_node, list(verified)), build)


POSITION_TABLE_RULE = "A.sequence_within_position_table"


def plan_inputs(model: ModelSpec, hw: Hardware, fw: FrameworkProfile, world: int, scenario: Scenario,
                mem_opts: MemoryOptions | None = None) -> tuple[Hardware, Factors, MemoryOptions]:
    """The hardware, factors and memory options a plan prices its configurations with (a caller re-estimating a
    planned configuration, plan.config_edge, prices it alike)."""
    # the nodes as the engine's launch uses them: 12 ranks under an equal-ranks-per-node launcher run 6 on each of
    # 2 nodes, so the space, the tables and the estimates all read 6 ranks a node (space.placement)
    hw = as_launched(hw, fw, world)
    f = factors_for(hw, fw.efficiency_for(hw))
    # the tables, the full estimates and the memory checks all price the engine's layout (memory_options.engine_options)
    # one request's prefill holds its prompt; a decode step runs its drafts; a prefill-only worker's forward holds
    # every prompt of its step (memory_options.workload_options)
    # a disaggregated pool's worker as its role's command runs it (memory_options.role_options: a prefill
    # worker's step budget and EP buffers)
    return hw, f, role_options(workload_options(engine_options(mem_opts, f), scenario.isl,
                                                scenario.mtp if model.num_mtp_layers else 0,
                                                # the most prompts a step may hold: a forward holds a replica's share
                                                (scenario.concurrency or scenario.max_concurrency)
                                                if scenario.phase == "prefill" and f.prefill_budget_set else None), fw)


def _plan(model: ModelSpec, hw: Hardware, prec: Precision, fw: FrameworkProfile, world: int, scenario: Scenario,
          params: SolverParams | None, method: str, top: int, allow_cross_node: bool,
          mem_opts: MemoryOptions | None, explain_binding: bool, diagnose: bool,
          verified: Sequence[tuple[str, dict[str, int]]] = ()) -> PlanResult:
    params = params or SolverParams()
    if isinstance(world, bool) or not isinstance(world, int) or not 1 <= world <= MAX_CARDS:
        raise InputError("--cards", f"must be an integer in [1, {MAX_CARDS:,}], got {world!r}")
    if isinstance(top, bool) or not isinstance(top, int) or not 1 <= top <= MAX_TOP:
        raise InputError("--top", f"must be an integer in [1, {MAX_TOP}], got {top!r}")
    too_deep = fw.mtp_past_max(scenario.mtp)
    if too_deep:
        raise InputError("--mtp", too_deep)
    fw.check_model(model, vendor=hw.vendor)
    no_hit = fw.prefix_hit_refusal(model, scenario.prefix_hit)
    if no_hit:
        raise InputError("--prefix-hit", no_hit)
    table_cap = past_position_table(model, scenario.max_seq_len)
    if table_cap:
        raise InfeasibleError(f"no feasible parallel_config for {model.name} on {world} x {hw.name}: {table_cap}",
                              [POSITION_TABLE_RULE],
                              remedies(f"--isl + --osl within {model.max_position_embeddings:,} tokens"))
    hw, f, mem_opts = plan_inputs(model, hw, fw, world, scenario, mem_opts)
    space = build_space(model, hw, fw, world, scenario, allow_cross_node)
    same = (model, hw, prec, f, fw, space, mem_opts)
    tables = _cached(("tables", *_tables_key(model, hw, fw, world, scenario, allow_cross_node, mem_opts)), same,
                     lambda: build_tables(model, hw, prec, f, fw, space, scenario, mem_opts))
    # the planner (its models and front) and the full estimates of its points are shared by scenarios that
    # differ only in what ranks the front (kind, weights): the SLAs, workload and solver parameters match
    planner, realized = _cached(
        ("planner", method, params, scenario.ttft_ms, scenario.tpot_ms,
         *_tables_key(model, hw, fw, world, scenario, allow_cross_node, mem_opts)), (*same, tables),
        lambda: (cpsat.Planner(tables, model, hw, fw, scenario, params), {}))
    planner.reset_log()

    def full(p: Point) -> Estimate:
        if p.key() not in realized:
            cfg = ParallelConfig(world_size=world, **tables.config(dict(p.picks)))
            realized[p.key()] = estimate(model, hw, cfg, prec, f, Workload.for_scenario(scenario, p.batch), mem_opts)
        return realized[p.key()]

    def holds_assumed(p: Point) -> bool:
        # room for what the figures assume: the busiest replica's sequences at the longest context (the planner's
        # memory constraint is that model: layout_memory.StageMemory)
        cfg = ParallelConfig(world_size=world, **tables.config(dict(p.picks)))
        return assumed_memory(model, hw, cfg, prec, scenario, p.batch, mem_opts).feasible

    def verify(p: Point) -> bool:
        # the full estimate's constraints, and room for what the figures assume
        return not full_estimate_misses(full(p), scenario) and holds_assumed(p)

    def fits_in_full(p: Point) -> bool:
        # verify's memory half (a diagnosis's configuration with the SLAs set aside is checked by it)
        return full(p).memory.feasible and holds_assumed(p)

    # memory and SLAs are judged by the full estimate, not only the additive proxy: nothing that does not fit
    # is ever recommended
    planner.verify = verify

    def classes_of(t: Tables, pl: cpsat.Planner, batches: tuple[int, ...] | None = None
                   ) -> dict[tuple[int, float], Point]:
        """(concurrency, sequences in flight) -> the best configuration of that class: the front's inputs."""
        if any(not opts for opts in t.choices.values()):
            return {}  # a group without any allowed layout: nothing to solve
        if method != "exhaustive":
            return pl.class_optima()
        # at one concurrency and one number of sequences in flight throughput is proportional to latency, so
        # only the fastest point of each such class can be on the front: the fastest the full estimate accepts
        # (as the CP-SAT search finds it), in enumeration order
        by_class: dict[tuple[int, float], list[Point]] = {}
        try:
            enumerated = enumerate_points(t, model, hw, fw, scenario, params.time_limit_s, batches)
        except OutOfTime as stop:
            raise _out_of_time(model, hw, world, params, stop) from None
        for p in enumerated:
            by_class.setdefault((p.batch, p.served), []).append(p)
        return {k: q for k, pts in by_class.items()
                for q in [next((p for p in sorted(pts, key=lambda p: (p.latency, p.simplicity)) if verify(p)), None)]
                if q is not None}

    classes = classes_of(tables, planner)
    meets, runs = sla_tests(tables, model, hw, prec, f, fw, world, scenario, mem_opts)
    powers = tables.batches
    first, base = planner, tables

    def planner_at(cs: tuple[int, ...]) -> cpsat.Planner:
        """A planner over the powers and the concurrencies cs (SLA edges), the answers at the powers carried over."""
        key = (*_tables_key(model, hw, fw, world, scenario, allow_cross_node, mem_opts), "sla edge", cs)

        def with_edges() -> Tables:
            t = base
            for c in cs:
                t = t.with_batch(c)
            return t
        t = _cached(("tables", *key), (*same, base), with_edges)
        pl, _ = _cached(("planner", method, params, scenario.ttft_ms, scenario.tpot_ms, *key),
                        (*same, t), lambda: (cpsat.Planner(t, model, hw, fw, scenario, params), None))
        pl.adopt(first)
        pl.reset_log()
        pl.verify = verify
        return pl

    # edge -> the planned concurrency whose optima it was found from (plan.sla_edge)
    edges = planned_sla_edges(classes, tables, scenario, fw, meets, runs)
    if edges:
        # the SLAs stop a power's optima: their edges are planned too
        planner = planner_at(tuple(sorted(edges)))
        tables = planner.t
        classes = ({**classes, **classes_of(tables, planner, tuple(sorted(edges)))} if method == "exhaustive"
                   else classes_of(tables, planner))
    points = planner.front() if method != "exhaustive" and classes else pareto(list(classes.values()))
    if not points:
        stalled = planner.timed_out()
        if stalled:
            raise InfeasibleError(
                f"no parallel_config found for {model.name} on {world} x {hw.name} within --time-limit "
                f"{params.time_limit_s:g} s: CP-SAT timed out at {len(stalled)} of {len(tables.batches)} "
                "concurrencies without a solution (not shown infeasible)", ["time limit"],
                remedies("raise --time-limit", lead=None), proven=False)
        if not diagnose:
            raise InfeasibleError(f"no feasible parallel_config for {model.name} on {world} x {hw.name}",
                                  proven=not planner.cut_stops)
        raise explain_infeasible(model, hw, prec, fw, world, scenario, tables, planner, mem_opts, params,
                                 allow_cross_node, space, fits_in_full)
    lat_ref = min(p.latency for p in points)
    inv_ref = min(p.inv_throughput for p in points)

    def score(p: Point) -> float:  # the best compromise always lies on the front
        return scenario.score(p.latency, p.inv_throughput, lat_ref, inv_ref)

    ordered = sorted(points, key=score)
    chosen: list[Point] = [ordered[0]]
    roles = {ordered[0].key(): "best score"}
    seen: list[tuple] = [pattern_key(tables, dict(ordered[0].picks))]
    def next_by_score(exclude_families: frozenset[str] = frozenset()) -> Point | None:
        """The best-scoring configuration of a pattern not yet shown (outside these attention families), over
        every configuration: at one concurrency and one number of sequences in flight the score falls with
        latency, so the best of each such class, and the best of those (on the front or not: a pattern tied with
        one shown is off the front, yet next). Classes are visited in the order of their unconstrained best's
        score, which no configuration of the class beats: once it reaches the best found, no later class can
        do better."""
        found = None
        for (b, q), p0 in sorted(planner.class_optima().items(), key=lambda kv: score(kv[1])):
            if found is not None and score(p0) >= score(found):
                break
            fresh = (pattern_key(tables, dict(p0.picks)) not in seen and attention_family(
                tables.choices["attn"][dict(p0.picks)["attn"]]) not in exclude_families)
            p = p0 if fresh else planner.best(b, seen, served=q, exclude_families=exclude_families)
            if p is not None and (found is None or score(p) < score(found)):
                found = p
        return found

    # one slot for the best configuration on another attention backbone (TP vs DP, or a CP/KVP/SP add-on): the
    # seed asks that the backbones be compared, not only variants of the winner's; then the next patterns
    backbone = frozenset({attention_family(tables.choices["attn"][dict(ordered[0].picks)["attn"]])})
    asks = [("other backbone", backbone)] if top >= 2 else []
    # the verified deployment the planner admits takes a "next pattern" slot, the best-score and other-backbone
    # slots staying: the seed prefers adopting a validated configuration, so it is always shown. One of a pattern
    # already chosen takes none (the ranking keeps one configuration per pattern)
    adopt = verified_candidate(tables, planner, verified, scenario, score)
    if adopt is not None and adopt[1].key() in roles:
        adopt = None
    slots = 0
    if adopt is not None and pattern_key(tables, dict(adopt[1].picks)) not in seen:
        seen.append(pattern_key(tables, dict(adopt[1].picks)))
        slots = 1
    while len(chosen) + (slots if not asks else 0) < top:
        role, families = asks.pop(0) if asks else ("next pattern", frozenset())
        p = next_by_score(families)
        if p is None:
            if role == "next pattern":
                break
            continue
        chosen.append(p)
        roles[p.key()] = role
        seen.append(pattern_key(tables, dict(p.picks)))
    if adopt is not None:  # its pattern is in `seen`, so no slot above took its key
        chosen.append(adopt[1])
        roles[adopt[1].key()] = "verified deployment"
    front_keys = {p.key() for p in points}
    core = {p.key() for p in chosen[:CORE_CANDIDATES]} | ({adopt[1].key()} if adopt is not None else set())
    # the power each candidate's SLA edge came from; a slot after the first the SLAs stop at a power, or any slot
    # at another configuration's edge below the most its own runs, moves to its own edge (the first at a power is
    # the scenario's choice of the front, where it stands: its own edge, if any, was planned from that power)
    edge_from: dict[tuple, int] = {}
    planners = [planner]
    first_planner = planner  # the planner whose tables hold the first candidate's concurrency (binding_constraints)
    edge_from = {p.key(): edges[p.batch] for p in chosen if p.batch in edges}
    if edge_from:
        fixed = {adopt[1].key()} if adopt is not None else set()
        # one planner per edge within this plan: planner_at resets a cached planner's log, which would drop what
        # an earlier candidate's question at the same edge recorded (its time-outs, cut stops)
        at: dict[int, cpsat.Planner] = dict.fromkeys(edges, planner)
        moved = at_own_edges(chosen[int(chosen[0].batch not in edges):], powers, meets, runs,
                             lambda c: at[c] if c in at else at.setdefault(c, planner_at((c,))), fixed,
                             scenario.has_slas())
        for p, (q, pl) in moved.items():
            first_planner = pl if p is chosen[0] else first_planner
            chosen[chosen.index(p)] = q
            roles[q.key()] = roles.pop(p.key())
            if p.key() in core:
                core = (core - {p.key()}) | {q.key()}
            if p.key() in fixed:
                adopt = (adopt[0], q)
            edge_from[q.key()] = edges.get(p.batch, p.batch)
            planners += [pl] if all(pl is not o for o in planners) else []

    def realize(p: Point) -> Planned:
        cfg = ParallelConfig(world_size=world, **tables.config(dict(p.picks)))
        role = roles.get(p.key(), "front")
        return Planned(cfg, p.batch, full(p), p.latency / cpsat.TIME_SCALE, p.key() in front_keys, role,
                       adopt[0] if role == "verified deployment" else None, p.key() in core,
                       sla_edge_from=edge_from.get(p.key(), edges.get(p.batch)))

    front = [realize(p) for p in points]
    result = PlanResult([tie_marked(realize(p), front) for p in chosen], front, method=method,
                        time_limit_s=params.time_limit_s, knobs=model_knobs(model))
    result.timeouts = sorted((t for pl in planners for t in pl.timed_out()), key=lambda t: t.batch)
    result.cut_stops = [c for i, pl in enumerate(planners) for c in pl.cut_stops
                        if all(c not in o.cut_stops for o in planners[:i])]
    result.status = "FEASIBLE" if result.timeouts else "OPTIMAL"
    bad = [c for c in result.candidates if full_estimate_misses(c.estimate, scenario)]
    if bad:  # verify() cut these off; reaching here is a fault of the planner, not of the input
        raise InternalError(f"candidate {bad[0].config.knobs()} misses {full_estimate_misses(bad[0].estimate, scenario)}")
    result.planned_batches = tuple(sorted(tables.batches))
    result.edges_found = bool(edges)
    result.range_note = range_note(chosen[0].batch, scenario, more=lambda cap: runs_more(
        tables.config(dict(chosen[0].picks)), model, hw, fw, world, chosen[0].batch, cap, scenario.mtp))
    # the note names the plan's edge the first candidate there stands at (the plan's others at theirs, as own edges)
    # (the first moved from another configuration's edge to its own: that one)
    edge = (chosen[0].batch if chosen[0].batch not in edges and chosen[0].key() in edge_from
            else next((p.batch for p in chosen if p.batch in edges), None))
    if edge is not None:
        own = list(dict.fromkeys(f"{p.batch:,} from {edge_from[p.key()]:,}" for p in chosen
                                 if p.batch != edge and p.key() in edge_from))
        # edges' own where the edge is one (the first candidate need not have moved: no edge_from entry)
        at = edges[edge] if edge in edges else edge_from[chosen[0].key()]
        result.edge_note = sla_edge_note(edge, at, scenario) + (
            "; the other candidates the SLAs stop at a power are shown at their own SLA edge (the most their "
            "configuration there runs within them, the best of their pattern planned at it): " + ", ".join(own)
            if own else "")
    device = [n for n in (placement_note(hw, fw, world), unstated_platform_note(hw, fw)) if n]
    result.input_notes = (*input_notes(model, hw, prec, max_len=scenario.max_seq_len, served_by=fw), *device)
    if explain_binding:
        result.binding = binding_constraints(first_planner, chosen[0])
    pruned: dict[str, list[str]] = {}
    for p in space.pruned:
        pruned.setdefault(p.rule, []).append(f"{p.knob}={p.value}")
    result.pruned = {rule: sorted(set(v)) for rule, v in sorted(pruned.items())}
    return result


def _out_of_time(model: ModelSpec, hw: Hardware, world: int, params: SolverParams, stop: OutOfTime
                 ) -> InfeasibleError:
    """--method exhaustive past --time-limit: how many combinations it enumerated of how many, how long all would
    take at the rate it ran, and the planner that answers the same front (tests/test_planner.py holds it to the
    enumeration on every verified deployment)."""
    need_s = stop.total * stop.elapsed_s / max(stop.done, 1)
    longer = math.ceil(need_s * 1.2)
    return InfeasibleError(
        f"--method exhaustive reached --time-limit {params.time_limit_s:g} s for {model.name} on {world} x "
        f"{hw.name} after {stop.done:,} of the {stop.total:,} combinations it enumerates (one option per parallel "
        f"group at each concurrency); at that rate all of them take about {three_figures(need_s)} s", ["time limit"],
        remedies(either(Remedy(f"--time-limit {longer:,} or more", (Change("--time-limit", longer),))
                        if need_s * 1.2 <= MAX_TIME_LIMIT_S else None,
                        Remedy("--method cpsat, which finds the same front", (Change("--method", "cpsat"),)))),
        proven=False)
