"""The CP-SAT model: one Boolean per group choice, the constraint families as small named functions, and
integer-scaled sums of the cost tables as objectives.

The two objectives are request latency L = TTFT + (OSL-1) x TPOT and inverse throughput per rank
I = L x W / (B x OSL) (seconds per output token per rank; decode-only and prefill-only deployments use
OSL x TPOT and the prefill time, see Scenario.latency_terms). For a fixed concurrency B, I is proportional to L,
so both are minimised by the same configuration: the Pareto front is exactly the non-dominated set of the
per-concurrency latency optima. One small model per B (no batch x choice products) keeps solves fast.
Ties in latency are broken towards smaller parallel degrees (fewer, simpler groups), exactly, by a
lexicographic weight.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Callable

from ortools.sat.python import cp_model

from solver.errors import InputError, InternalError
from solver.plan.tables import GROUPS, SHARED, Tables
from solver.specs.limits import MAX_COEF, MAX_SEED, MAX_TIME_LIMIT_S, MAX_WORKERS
from solver.specs.framework import FrameworkProfile, model_env
from solver.specs.hardware import Hardware
from solver.specs.model import ModelSpec
from solver.specs.scenario import Scenario

TIME_SCALE = 1e7  # integer units of 0.1 us
MEM_SCALE = 1e-3  # integer units of kB
TIE_WEIGHT = 128  # > the largest simplicity penalty, so latency always dominates


@dataclass(frozen=True)
class SolverParams:
    workers: int = 1  # 1 keeps results reproducible run to run
    seed: int = 0
    time_limit_s: float = 10.0

    def __post_init__(self) -> None:
        # CP-SAT takes an int32 seed and a positive finite time limit; anything else crashes or means "no search"
        if isinstance(self.workers, bool) or not isinstance(self.workers, int) or not 1 <= self.workers <= MAX_WORKERS:
            raise InputError("--workers", f"must be an integer in [1, {MAX_WORKERS}], got {self.workers!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or not 0 <= self.seed <= MAX_SEED:
            raise InputError("--seed", f"must be an integer in [0, {MAX_SEED}], got {self.seed!r}")
        t = self.time_limit_s
        if isinstance(t, bool) or not isinstance(t, (int, float)) or not math.isfinite(t) or not 0 < t <= MAX_TIME_LIMIT_S:
            raise InputError("--time-limit", f"must be a number of seconds in (0, {MAX_TIME_LIMIT_S:g}], got {t!r}")


@dataclass(frozen=True)
class SolveStatus:
    """How one CP-SAT solve ended when it did not prove its answer: a time-out with or without a solution."""

    batch: int
    found: bool  # a feasible solution was found before the limit (FEASIBLE), else UNKNOWN
    gap: float | None  # (objective - best bound) / objective of the solution found, when found


@dataclass(frozen=True)
class CutStop:
    """A concurrency where the cut loop stopped without an answer the full estimate accepts: `cuts` answers
    were rejected (memory or an SLA the additive tables put within bounds) and the budget (Planner.max_cuts)
    ran out, so the concurrency is not shown infeasible, only not searched further."""

    batch: int
    cuts: int
    asked: str  # what the solve looked for: "the front", "another pattern", "another attention backbone"


@dataclass(frozen=True)
class Point:
    """One configuration with its objective values exactly as the model scores them."""

    picks: tuple[tuple[str, int], ...]  # (group, choice index)
    batch: int
    latency: int  # TIME_SCALE units
    inv_throughput: float  # latency x W / (batch x OSL), same units

    def key(self) -> tuple:
        return (self.picks, self.batch)


# Memory enters only `sum <= cap` with non-negative terms: any term above the largest cap a device can have
# (hardware.MAX_BYTES) breaks it alone, so clamping there keeps the constraint exact and the integers small.
_MEM_CLAMP = 2.0**50 * MEM_SCALE


def exact(value: float, what: str, weight: int = TIE_WEIGHT) -> int:
    """A CP-SAT coefficient or bound: an integer well inside int64 once summed and tie-weighted, or bad input
    (times or sizes so large the inputs cannot describe a real deployment)."""
    if not math.isfinite(value) or abs(value) > MAX_COEF / (weight * 64):
        raise InputError("planner", f"{what} of {value:.3g} (scaled) is beyond what the planner's integer model "
                                    "holds; the inputs (sequence lengths, sizes, device figures) are out of range")
    return round(value)


def inv_throughput(t: Tables, latency: int, batch: int) -> float:
    return latency * t.world / (batch * t.tokens_per_request)


def coefs(t: Tables, b: int, g: str, i: int) -> tuple[int, int, int, int]:
    """(latency, ttft, tpot, memory) integer coefficients of one choice at concurrency b."""
    e = t.entries[(b, g, i)]
    tpot = e.decode_s / t.mtp_tokens + e.prefill_s * t.prefill_per_token
    lat = t.prefill_weight * e.prefill_s + t.decode_steps * tpot
    return (exact(lat * TIME_SCALE, "a latency"), exact(e.prefill_s * TIME_SCALE, "a TTFT"),
            exact(tpot * TIME_SCALE, "a TPOT"), exact(min(e.memory_bytes * MEM_SCALE, _MEM_CLAMP), "a memory size", 1))


def const_coefs(t: Tables) -> tuple[int, int, int]:
    """(latency, ttft, tpot) of the fixed per-step overhead."""
    tpot = t.const_step_s / t.mtp_tokens + t.const_step_s * t.prefill_per_token
    lat = t.prefill_weight * t.const_step_s + t.decode_steps * tpot
    return (exact(lat * TIME_SCALE, "a latency"), exact(t.const_step_s * TIME_SCALE, "a step overhead"),
            exact(tpot * TIME_SCALE, "a TPOT"))


def simplicity(values: tuple[int, ...]) -> int:
    """Tie-break penalty: bits of the parallel degrees (TP1 costs 0, TP8 costs 3)."""
    return sum(max(0, v - 1).bit_length() for v in values)  # a setting may be 0 (redundant experts)


def memory_cap(t: Tables) -> int:
    return exact(min((t.memory_limit_bytes - t.const_memory_bytes) * MEM_SCALE, _MEM_CLAMP), "the memory cap", 1)


def rule_tables(t: Tables, model: ModelSpec, hw: Hardware, fw: FrameworkProfile, scenario: Scenario, batch: int,
                static: list) -> list[tuple[str, list[str], list[list[int]]]]:
    """Each hard framework rule as (rule id, knobs it reads, allowed value tuples) at this concurrency.
    Rules the knob domains already satisfy are dropped: they can neither constrain nor bind. Rules that do not
    read the batch are the same at every concurrency: `static` (static_rule_tables) computes them once."""
    return static + _rule_tables(t, model, hw, fw, scenario, batch, batch_rules=True)


def static_rule_tables(t: Tables, model: ModelSpec, hw: Hardware, fw: FrameworkProfile, scenario: Scenario) -> list:
    return _rule_tables(t, model, hw, fw, scenario, None, batch_rules=False)


def _rule_tables(t: Tables, model: ModelSpec, hw: Hardware, fw: FrameworkProfile, scenario: Scenario,
                 batch: int | None, batch_rules: bool) -> list[tuple[str, list[str], list[list[int]]]]:
    domains = {k: sorted({opt[i] for opt in t.choices[g]}) for g, ks in GROUPS.items() for i, k in enumerate(ks)}
    derived = {"attn_dp_size": "attn_tp_size", "moe_ep_size": "moe_tp_size"}
    out = []
    # the deployment and model facts, knobs at 1: a rule whose `when` reads none of the knobs is decided here
    # once instead of over every knob combination (cann-recipes' AFD rule, never on while planning, spans six
    # TP knobs: 262K combinations at W=128)
    facts = model_env({}, model, hw.ranks_per_node, world=t.world, batch=batch or 1, mtp=scenario.mtp)
    knob_names = set(domains) | set(derived)
    for rule in fw.rules:
        if rule.severity != "error" or ("batch" in rule.names) != batch_rules:
            continue
        staged = len(domains.get("pp_size", ())) > 1 and "world" in rule.when_names
        if not (rule.when_names & knob_names) and not staged and not rule.applies(facts):
            continue
        knobs = sorted({n for n in rule.names if n in domains} | {k for d, k in derived.items() if d in rule.names}
                       # rules read `world` per pipeline stage: their tables range over the stage count too
                       | ({"pp_size"} if len(domains.get("pp_size", ())) > 1
                          and rule.names & {"world", *derived} else set()))
        spaces = [domains[k] for k in knobs]
        allowed = []
        total = 0
        for combo in itertools.product(*spaces):
            total += 1
            env = model_env(dict(zip(knobs, combo)), model, hw.ranks_per_node, world=t.world,
                            batch=batch or 1, mtp=scenario.mtp)
            if rule.holds(env):
                allowed.append(list(combo))
        if len(allowed) < total:
            out.append((rule.id, knobs, allowed))
    return out


@dataclass
class BatchModel:
    """The model for one concurrency value, built once and never changed afterwards: what one question adds
    (excluded patterns, cuts, which families are on) goes on a working copy (Planner.best), so the cached
    model does not grow from call to call."""

    batch: int
    model: cp_model.CpModel
    x: dict[str, list[cp_model.IntVar]]
    knob_vars: dict[str, cp_model.IntVar]
    latency: cp_model.LinearExpr
    objective: cp_model.LinearExpr  # latency x TIE_WEIGHT + simplicity
    families: dict[str, cp_model.IntVar] = field(default_factory=dict)

    def family(self, name: str) -> cp_model.IntVar:
        """The literal that switches a constraint family on; families are on through assumptions, so one can
        be relaxed (left out of the assumptions) to see whether it binds."""
        if name not in self.families:
            self.families[name] = self.model.new_bool_var(f"family_{name}")
        return self.families[name]


def build_batch(t: Tables, model_spec: ModelSpec, hw: Hardware, fw: FrameworkProfile, scenario: Scenario,
                b: int, static_rules: list) -> BatchModel:
    m = cp_model.CpModel()
    x = {g: [m.new_bool_var(f"x_{g}_{i}") for i in range(len(opts))] for g, opts in t.choices.items()}
    for bools in x.values():
        m.add_exactly_one(bools)
    c_lat, c_ttft, c_tpot = const_coefs(t)
    lat, ttft, tpot, mem, simple = [c_lat], [c_ttft], [c_tpot], [], []
    for g, bools in x.items():
        for i, xv in enumerate(bools):
            cl, ct, cp, cm = coefs(t, b, g, i)
            lat.append(cl * xv)
            ttft.append(ct * xv)
            tpot.append(cp * xv)
            mem.append(cm * xv)
            # the stage count is carried by every group: its tie-break penalty counts once, with attention
            own = t.choices[g][i] if g == "attn" else t.choices[g][i][:len(GROUPS[g]) - len(SHARED)]
            simple.append(simplicity(own) * xv)
    knob_vars: dict[str, cp_model.IntVar] = {}
    for g, knobs in GROUPS.items():
        for k_idx, knob in enumerate(knobs):
            values = sorted({opt[k_idx] for opt in t.choices[g]})
            # a knob every group carries (tables.SHARED: the stage count) is one variable all groups equal
            var = knob_vars.get(knob)
            if var is None:
                var = m.new_int_var_from_domain(cp_model.Domain.from_values(values), knob)
            m.add(var == sum(opt[k_idx] * xv for opt, xv in zip(t.choices[g], x[g])))
            knob_vars[knob] = var
    latency = sum(lat)
    bm = BatchModel(b, m, x, knob_vars, latency, TIE_WEIGHT * latency + sum(simple))
    add_memory_cap(bm, t, sum(mem))
    add_sla(bm, scenario, sum(ttft), sum(tpot))
    add_framework_rules(bm, rule_tables(t, model_spec, hw, fw, scenario, b, static_rules))
    bm.model.minimize(bm.objective)
    return bm


# ------------------------------------------------------------------------------------ constraint families


def add_memory_cap(bm: BatchModel, t: Tables, memory) -> None:
    """Class B: memory per rank <= min(0.95 x capacity, capacity - reserve)."""
    bm.model.add(memory <= memory_cap(t)).only_enforce_if(bm.family("B.memory_per_rank"))


def add_sla(bm: BatchModel, scenario: Scenario, ttft, tpot) -> None:
    if scenario.ttft_ms is not None:
        bm.model.add(ttft <= exact(scenario.ttft_ms * 1e-3 * TIME_SCALE, "the TTFT bound", 1)
                     ).only_enforce_if(bm.family("SLA.ttft"))
    if scenario.tpot_ms is not None:
        bm.model.add(tpot <= exact(scenario.tpot_ms * 1e-3 * TIME_SCALE, "the TPOT bound", 1)
                     ).only_enforce_if(bm.family("SLA.tpot"))


def add_framework_rules(bm: BatchModel, tables: list[tuple[str, list[str], list[list[int]]]]) -> None:
    """Class A/C rules of the framework profile as table constraints over the knobs each reads."""
    for rule_id, knobs, allowed in tables:
        lit = bm.family(rule_id)
        if not knobs:
            bm.model.add_bool_or([]).only_enforce_if(lit)  # a rule that fails whatever the knobs
        else:
            bm.model.add_allowed_assignments([bm.knob_vars[k] for k in knobs], allowed).only_enforce_if(lit)


# ----------------------------------------------------------------------------------------------- solving


def pattern_key(t: Tables, picks: dict[str, int]) -> tuple:
    """What makes two configurations the same pattern: the attention layout (TP, CP, KVP, SP), dense TP and
    MoE TP. Embedding/LM-head/o_proj degrees refine a pattern rather than change it."""
    return (t.choices["attn"][picks["attn"]][:4], t.choices["dense"][picks["dense"]],
            t.choices["moe"][picks["moe"]])


def attention_family(choice: tuple[int, ...]) -> str:
    """The attention backbone a choice (attn_tp, cp, kvp, sp, ...) belongs to: the seed's Layer 1 decision
    (TP over heads or DP) and its Layer 3 add-ons (CP, KVP) plus the RFC's SP."""
    tp, cp, kvp, sp = choice[:4]
    if sp > 1:
        return "sp"
    if cp > 1:
        return "cp"
    if kvp > 1:
        return "kvp"
    return "tp" if tp > 1 else "dp"


class Planner:
    """Per-concurrency models, built on first use."""

    def __init__(self, t: Tables, model: ModelSpec, hw: Hardware, fw: FrameworkProfile, scenario: Scenario,
                 params: SolverParams | None = None):
        self.t, self.model, self.hw, self.fw, self.scenario = t, model, hw, fw, scenario
        self.params = params or SolverParams()
        self._models: dict[int, BatchModel] = {}
        self.verify: Callable[[Point], bool] | None = None
        self.max_cuts = 12
        self._static = static_rule_tables(t, model, hw, fw, scenario)
        # solves the time limit cut short: (batch, relaxed) -> how it ended; the search behind an answer
        self.timeouts: dict[tuple[int, frozenset[str]], SolveStatus] = {}
        # solves whose SLA/memory cut loop ran out of cuts before the full estimate accepted an answer
        self.cut_stops: list[CutStop] = []
        self._front: list[Point] | None = None
        self._front_log: tuple[dict, list] = ({}, [])

    def batch_model(self, b: int) -> BatchModel:
        if b not in self._models:
            self._models[b] = build_batch(self.t, self.model, self.hw, self.fw, self.scenario, b, self._static)
        return self._models[b]

    def _solver(self) -> cp_model.CpSolver:
        s = cp_model.CpSolver()
        s.parameters.num_workers = self.params.workers
        s.parameters.random_seed = self.params.seed
        s.parameters.max_time_in_seconds = self.params.time_limit_s
        # these models are small (a few hundred Booleans): probing and symmetry detection cost more than the
        # search. Presolve is off: with it, OR-Tools 9.15 returned OPTIMAL for a worse front than the
        # exhaustive enumerator finds on 6 of the 30 verified deployments (e.g. kimi-th-p64, glm5-d128: embed
        # TP2 for TP1; tests/test_planner.py). The same model object gives two different OPTIMAL objectives
        # with presolve on and off while the families are on through assumptions, and one without them: a
        # presolve/assumption fault, not the model. The search alone proves the true optimum and is faster
        # here (W=128 0.95 -> 0.86 s, W=1024 2.25 -> 1.37 s, benchmarks/solver_speed.py)
        s.parameters.cp_model_probing_level = 0
        s.parameters.symmetry_level = 0
        s.parameters.cp_model_presolve = False
        return s

    def best(self, b: int, exclude_patterns: list[tuple] = (), relaxed: frozenset[str] = frozenset(),
             exclude_families: frozenset[str] = frozenset()) -> Point | None:
        """Lowest-latency configuration at concurrency b, avoiding the given patterns and attention families.
        With a `verify` callback (the full estimator's SLA and memory check), an answer it rejects is cut off
        and the model solved again: the additive tables are a proxy, the full estimate has the last word.
        Exclusions and cuts go on a copy of the cached model, dropped when the call returns."""
        bm = self.batch_model(b)
        work = bm.model.clone()  # variables keep their indices: bm.x and bm.latency read the copy's solutions
        # each exclusion is enforced by a literal assumed true, after the families' (the model's structure, and
        # so CP-SAT's search, is that of the first question asked of this concurrency plus this call's own)
        lits = [lit for name, lit in bm.families.items() if name not in relaxed]
        banned = [bm.x["attn"][i] for i, o in enumerate(self.t.choices["attn"])
                  if attention_family(o) in exclude_families]
        if banned:
            lit = work.new_bool_var("not_family")
            work.add_bool_and([v.negated() for v in banned]).only_enforce_if(lit)
            lits.append(lit)
        for key in exclude_patterns:
            lit = work.new_bool_var("not_pattern")
            same = [bm.x["attn"][i] for i, o in enumerate(self.t.choices["attn"]) if o[:4] == key[0]]
            dense = [bm.x["dense"][i] for i, o in enumerate(self.t.choices["dense"]) if o == key[1]]
            moe = [bm.x["moe"][i] for i, o in enumerate(self.t.choices["moe"]) if o == key[2]]
            if same and dense and moe:
                work.add_bool_or([v.negated() for v in (_any(work, same), _any(work, dense), _any(work, moe))]
                                 ).only_enforce_if(lit)
                lits.append(lit)
        if lits:
            work.add_assumptions(lits)
        point = None
        rejected = 0
        key = (b, frozenset(relaxed))
        for _ in range(self.max_cuts + 1):
            s = self._solver()
            status = s.solve(work)
            if status == cp_model.MODEL_INVALID:
                raise InternalError(f"CP-SAT rejected the model at concurrency {b}: {work.validate()[:200]}")
            if status == cp_model.UNKNOWN:  # the time limit hit before any solution
                self.timeouts[key] = SolveStatus(b, False, None)
                point = None
                break
            if status == cp_model.FEASIBLE:  # the time limit hit before optimality was proven
                obj, bound = s.objective_value, s.best_objective_bound
                self.timeouts[key] = SolveStatus(b, True, (obj - bound) / max(abs(obj), 1.0))
            if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
                point = None  # INFEASIBLE: nothing (left after the cuts) satisfies the model at this concurrency
                break
            picks = tuple((g, next(i for i, v in enumerate(bools) if s.value(v))) for g, bools in bm.x.items())
            lat = int(s.value(bm.latency))
            point = Point(picks, b, lat, inv_throughput(self.t, lat, b))
            if self.verify is None or relaxed or self.verify(point):
                break
            # the full estimate rejects this answer (memory or an SLA): cut it off and ask again
            cut = work.new_bool_var("rejected")
            work.add_bool_or([bm.x[g][i].negated() for g, i in picks]).only_enforce_if(cut)
            work.add_assumption(cut)
            rejected += 1
            point = None
        else:
            # every answer the cut budget allowed was rejected: say so rather than report the concurrency empty
            asked = ("another attention backbone" if exclude_families else
                     "another pattern" if exclude_patterns else "the front")
            self.cut_stops.append(CutStop(b, rejected, asked))
        return point

    def timed_out(self, relaxed: frozenset[str] = frozenset()) -> list[SolveStatus]:
        """The solves (at these relaxed families) the time limit cut short."""
        return [v for (b, r), v in sorted(self.timeouts.items(), key=lambda kv: kv[0][0]) if r == relaxed]

    def front(self) -> list[Point]:
        """The Pareto front, solved once per planner: a planner reused for another scenario kind (the same
        tables, SLAs and solver parameters: solve.plan's cache) answers from it."""
        if self._front is None:
            self._front = pareto([p for p in (self.best(b) for b in self.t.batches) if p is not None])
            self._front_log = (dict(self.timeouts), list(self.cut_stops))
        return list(self._front)

    def reset_log(self) -> None:
        """Forget what questions after the front recorded (time-outs, cut stops), keeping the front's own: a
        new plan reusing this planner reports only its own solves and the front's."""
        self.timeouts, self.cut_stops = dict(self._front_log[0]), list(self._front_log[1])

    def families(self, b: int) -> list[str]:
        return list(self.batch_model(b).families)


def _any(m: cp_model.CpModel, lits: list) -> cp_model.IntVar:
    """A literal true iff one of `lits` (members of an exactly-one group) is true."""
    v = m.new_bool_var("any")
    m.add(sum(lits) == v)
    return v


def pareto(points: list[Point]) -> list[Point]:
    """Non-dominated points in (inverse throughput, latency), sorted by inverse throughput; one point per
    distinct objective pair (the first seen)."""
    best: dict[tuple[float, int], Point] = {}
    for p in points:
        best.setdefault((p.inv_throughput, p.latency), p)
    front: list[Point] = []
    min_lat = None
    for (_, lat), p in sorted(best.items(), key=lambda kv: kv[0]):
        if min_lat is None or lat < min_lat:
            front.append(p)
            min_lat = lat
    return front
