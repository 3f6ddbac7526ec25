"""The CP-SAT model: one Boolean per (group choice), one per batch value, their products, and the
constraint families as small named functions. Objectives are integer-scaled sums of the cost tables.

Two objectives span the Pareto front: request latency (TTFT + (OSL-1) x TPOT) and inverse throughput per
rank (seconds per output token per rank). The front is enumerated exactly by the epsilon-constraint method:
minimise inverse throughput, tie-break on latency, then demand strictly lower latency and repeat.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

from ortools.sat.python import cp_model

from solver.plan.tables import GROUPS, Tables
from solver.specs.framework import FrameworkProfile, rule_env
from solver.specs.hardware import Hardware
from solver.specs.model import ModelSpec
from solver.specs.scenario import Scenario

TIME_SCALE = 1e7  # integer units of 0.1 us
MEM_SCALE = 1e-3  # integer units of kB


@dataclass(frozen=True)
class SolverParams:
    workers: int = 1  # 1 keeps results reproducible run to run
    seed: int = 0
    time_limit_s: float = 10.0


@dataclass(frozen=True)
class Point:
    """One configuration with its integer objective values (exactly as the model scores it)."""

    picks: tuple[tuple[str, int], ...]  # (group, choice index)
    batch: int
    latency: int  # TIME_SCALE units
    inv_throughput: int  # TIME_SCALE units x rank per output token

    def key(self) -> tuple:
        return (self.picks, self.batch)


@dataclass
class PlanModel:
    tables: Tables
    model: cp_model.CpModel
    x: dict[str, list[cp_model.IntVar]]  # group -> Booleans per choice
    y: dict[int, cp_model.IntVar]  # batch -> Boolean
    z: dict[tuple[int, str, int], cp_model.IntVar]
    knob_vars: dict[str, cp_model.IntVar]
    batch_var: cp_model.IntVar
    latency: cp_model.LinearExpr
    inv_throughput: cp_model.LinearExpr
    ttft: cp_model.LinearExpr
    tpot: cp_model.LinearExpr
    memory: cp_model.LinearExpr
    # constraint family -> its enforcement literal; families are switched on through solver assumptions so
    # one can be relaxed to find which constraints bind
    families: dict[str, cp_model.IntVar] = field(default_factory=dict)
    relaxed: set[str] = field(default_factory=set)
    temps: list = field(default_factory=list)

    def family(self, name: str) -> cp_model.IntVar:
        if name not in self.families:
            self.families[name] = self.model.NewBoolVar(f"family_{name}")
        return self.families[name]

    def sync(self) -> None:
        self.model.ClearAssumptions()
        lits = [lit for name, lit in self.families.items() if name not in self.relaxed] + list(self.temps)
        if lits:
            self.model.AddAssumptions(lits)


def _coef(t: Tables, b: int, g: str, i: int) -> tuple[int, int, int, int, int]:
    e = t.entries[(b, g, i)]
    tpot = e.decode_s / t.mtp_tokens
    lat = e.prefill_s + max(0, t.osl - 1) * tpot
    inv = lat * t.world / (b * t.osl)
    return (round(lat * TIME_SCALE), round(inv * TIME_SCALE), round(e.prefill_s * TIME_SCALE),
            round(tpot * TIME_SCALE), round(e.memory_bytes * MEM_SCALE))


def build(t: Tables, model_spec: ModelSpec, hw: Hardware, fw: FrameworkProfile, scenario: Scenario) -> PlanModel:
    m = cp_model.CpModel()
    x = {g: [m.NewBoolVar(f"x_{g}_{i}") for i in range(len(opts))] for g, opts in t.choices.items()}
    y = {b: m.NewBoolVar(f"y_{b}") for b in t.batches}
    for g, bools in x.items():
        m.AddExactlyOne(bools)
    m.AddExactlyOne(list(y.values()))
    z: dict[tuple[int, str, int], cp_model.IntVar] = {}
    lat, inv, ttft, tpot, mem = [], [], [], [], []
    const_step = t.const_step_s
    for b in t.batches:
        const_tpot = const_step / t.mtp_tokens
        const_lat = const_step + max(0, t.osl - 1) * const_tpot
        lat.append(round(const_lat * TIME_SCALE) * y[b])
        inv.append(round(const_lat * t.world / (b * t.osl) * TIME_SCALE) * y[b])
        ttft.append(round(const_step * TIME_SCALE) * y[b])
        tpot.append(round(const_tpot * TIME_SCALE) * y[b])
        for g, bools in x.items():
            group_z = []
            for i, xv in enumerate(bools):
                zv = m.NewBoolVar(f"z_{b}_{g}_{i}")
                m.AddBoolAnd([xv, y[b]]).OnlyEnforceIf(zv)
                m.AddBoolOr([xv.Not(), y[b].Not()]).OnlyEnforceIf(zv.Not())
                z[(b, g, i)] = zv
                group_z.append(zv)
                c_lat, c_inv, c_ttft, c_tpot, c_mem = _coef(t, b, g, i)
                lat.append(c_lat * zv)
                inv.append(c_inv * zv)
                ttft.append(c_ttft * zv)
                tpot.append(c_tpot * zv)
                mem.append(c_mem * zv)
            m.Add(sum(group_z) == y[b])
    knob_vars: dict[str, cp_model.IntVar] = {}
    for g, knobs in GROUPS.items():
        for k_idx, knob in enumerate(knobs):
            values = sorted({opt[k_idx] for opt in t.choices[g]})
            var = m.NewIntVarFromDomain(cp_model.Domain.FromValues(values), knob)
            m.Add(var == sum(opt[k_idx] * xv for opt, xv in zip(t.choices[g], x[g])))
            knob_vars[knob] = var
    batch_var = m.NewIntVarFromDomain(cp_model.Domain.FromValues(list(t.batches)), "batch")
    m.Add(batch_var == sum(b * yv for b, yv in y.items()))
    pm = PlanModel(t, m, x, y, z, knob_vars, batch_var, sum(lat), sum(inv), sum(ttft), sum(tpot), sum(mem))
    add_memory_cap(pm)
    add_sla(pm, scenario)
    add_framework_rules(pm, model_spec, hw, fw, scenario)
    pm.sync()
    return pm


# ------------------------------------------------------------------------------------ constraint families


def add_memory_cap(pm: PlanModel) -> None:
    """Class B: memory per rank <= min(0.95 x capacity, capacity - reserve)."""
    t = pm.tables
    cap = round((t.memory_limit_bytes - t.const_memory_bytes) * MEM_SCALE)
    pm.model.Add(pm.memory <= cap).OnlyEnforceIf(pm.family("B.memory_per_rank"))


def add_sla(pm: PlanModel, scenario: Scenario) -> None:
    if scenario.ttft_ms is not None:
        pm.model.Add(pm.ttft <= round(scenario.ttft_ms * 1e-3 * TIME_SCALE)).OnlyEnforceIf(pm.family("SLA.ttft"))
    if scenario.tpot_ms is not None:
        pm.model.Add(pm.tpot <= round(scenario.tpot_ms * 1e-3 * TIME_SCALE)).OnlyEnforceIf(pm.family("SLA.tpot"))


def add_framework_rules(pm: PlanModel, model: ModelSpec, hw: Hardware, fw: FrameworkProfile,
                        scenario: Scenario) -> None:
    """Class A/C rules from the framework profile as table constraints over the knobs they read."""
    t = pm.tables
    domains = {k: sorted({opt[i] for opt in t.choices[g]}) for g, ks in GROUPS.items() for i, k in enumerate(ks)}
    for rule in fw.rules:
        if rule.severity != "error":
            continue
        knobs = sorted(n for n in rule.names if n in domains)
        derived = {"attn_dp_size": "attn_tp_size", "moe_ep_size": "moe_tp_size"}
        for d, k in derived.items():
            if d in rule.names and k not in knobs:
                knobs.append(k)
        uses_batch = "batch" in rule.names
        vars_ = [pm.knob_vars[k] for k in knobs] + ([pm.batch_var] if uses_batch else [])
        spaces = [domains[k] for k in knobs] + ([list(t.batches)] if uses_batch else [])
        allowed = []
        for combo in _product(spaces):
            cfg = dict(zip(knobs, combo[: len(knobs)]))
            env = rule_env(cfg, world=t.world, batch=combo[-1] if uses_batch else 1, mtp=scenario.mtp,
                           num_attention_heads=model.num_attention_heads,
                           num_key_value_heads=model.num_key_value_heads, n_routed_experts=model.num_experts,
                           has_mla=model.has_mla, has_dsa=model.has_dsa, o_proj_dim=model.o_proj_dim,
                           ranks_per_node=hw.ranks_per_node)
            if rule.holds(env):
                allowed.append(list(combo))
        total = 1
        for sp_ in spaces:
            total *= len(sp_)
        if len(allowed) == total:
            continue  # the domains already satisfy this rule: nothing to constrain
        if not vars_:
            if not allowed:
                pm.model.AddBoolOr([]).OnlyEnforceIf(pm.family(rule.id))
            continue
        pm.model.AddAllowedAssignments(vars_, allowed).OnlyEnforceIf(pm.family(rule.id))


def _product(spaces: list[list[int]]) -> Iterable[tuple[int, ...]]:
    import itertools

    return itertools.product(*spaces) if spaces else [()]


# ----------------------------------------------------------------------------------------------- solving


def _solver(params: SolverParams) -> cp_model.CpSolver:
    s = cp_model.CpSolver()
    s.parameters.num_search_workers = params.workers
    s.parameters.random_seed = params.seed
    s.parameters.max_time_in_seconds = params.time_limit_s
    return s


def _point(pm: PlanModel, s: cp_model.CpSolver) -> Point:
    picks = tuple((g, next(i for i, v in enumerate(bools) if s.Value(v))) for g, bools in pm.x.items())
    batch = next(b for b, v in pm.y.items() if s.Value(v))
    return Point(picks, batch, int(s.Value(pm.latency)), int(s.Value(pm.inv_throughput)))


class _Temps:
    """Temporary constraints, each enforced by its own literal and switched on through assumptions
    (CP-SAT cannot delete a constraint; an unassumed enforcement literal leaves it inert)."""

    def __init__(self, pm: PlanModel):
        self.pm = pm

    def add(self, bounded) -> cp_model.IntVar:
        lit = self.pm.model.NewBoolVar(f"tmp_{len(self.pm.temps)}")
        self.pm.model.Add(bounded).OnlyEnforceIf(lit)
        return self._on(lit)

    def add_clause(self, lits: list) -> cp_model.IntVar:
        lit = self.pm.model.NewBoolVar(f"tmpc_{len(self.pm.temps)}")
        self.pm.model.AddBoolOr(lits).OnlyEnforceIf(lit)
        return self._on(lit)

    def _on(self, lit):
        self.pm.temps.append(lit)
        self.pm.sync()
        return lit

    def drop(self, lit) -> None:
        self.pm.temps = [a for a in self.pm.temps if a is not lit]
        self.pm.sync()

    def clear(self) -> None:
        self.pm.temps = []
        self.pm.sync()


def _lexmin(pm: PlanModel, temps: _Temps, first, second, params: SolverParams) -> Point | None:
    """Minimise `first`, then `second` with `first` held at its optimum."""
    m = pm.model
    s = _solver(params)
    m.Minimize(first)
    if s.Solve(m) not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None
    best = round(s.ObjectiveValue())
    hold = temps.add(first <= best)
    m.Minimize(second)
    status = s.Solve(m)
    point = _point(pm, s) if status in (cp_model.OPTIMAL, cp_model.FEASIBLE) else None
    temps.drop(hold)
    return point


def pareto_front(pm: PlanModel, params: SolverParams, max_points: int = 24) -> list[Point]:
    """Exact front of (latency, inverse throughput) by the epsilon-constraint method."""
    temps = _Temps(pm)
    front: list[Point] = []
    while len(front) < max_points:
        p = _lexmin(pm, temps, pm.inv_throughput, pm.latency, params)
        if p is None:
            break
        front.append(p)
        temps.add(pm.latency <= p.latency - 1)
    temps.clear()
    return front


def weighted_best(pm: PlanModel, w_lat: float, w_inv: float, lat_ref: int, inv_ref: int, params: SolverParams,
                  exclude: list[Point], count: int) -> list[Point]:
    """The `count` best configurations by the scenario's weighted cost, each a different pattern (attention
    layout, dense TP, MoE TP) from those excluded and those found before it."""
    scale = 10_000_000
    a = max(1, round(w_lat * scale / max(lat_ref, 1)))
    c = max(1, round(w_inv * scale / max(inv_ref, 1)))
    temps = _Temps(pm)
    for p in exclude:
        temps.add_clause(_pattern_lits(pm, p))
    out: list[Point] = []
    for _ in range(count):
        s = _solver(params)
        pm.model.Minimize(a * pm.latency + c * pm.inv_throughput)
        if s.Solve(pm.model) not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            break
        p = _point(pm, s)
        out.append(p)
        temps.add_clause(_pattern_lits(pm, p))
    temps.clear()
    return out


def pattern_key(t: Tables, p: Point) -> tuple:
    """What makes two configurations the same pattern: the attention layout (TP, CP, KVP, SP), dense TP and
    MoE TP. Embedding/LM-head/o_proj degrees refine a pattern rather than change it."""
    picks = dict(p.picks)
    attn = t.choices["attn"][picks["attn"]][:4]
    return (attn, t.choices["dense"][picks["dense"]], t.choices["moe"][picks["moe"]])


def _pattern_lits(pm: PlanModel, p: Point) -> list:
    """Clause forbidding every configuration of the same pattern as `p`."""
    t = pm.tables
    picks = dict(p.picks)
    same_attn = [pm.x["attn"][i] for i, opt in enumerate(t.choices["attn"])
                 if opt[:4] == t.choices["attn"][picks["attn"]][:4]]
    in_s = pm.model.NewBoolVar("same_attn")
    pm.model.Add(sum(same_attn) == in_s)
    return [in_s.Not(), pm.x["dense"][picks["dense"]].Not(), pm.x["moe"][picks["moe"]].Not()]


def _nogood_lits(pm: PlanModel, p: Point) -> list:
    """Clause forbidding this exact configuration (knob choices; any batch)."""
    return [pm.x[g][i].Not() for g, i in p.picks]


def feasible(pm: PlanModel, params: SolverParams) -> bool:
    s = _solver(params)
    pm.model.ClearObjective()
    return s.Solve(pm.model) in (cp_model.OPTIMAL, cp_model.FEASIBLE)
