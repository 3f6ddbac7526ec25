"""Planning end to end: space -> tables -> CP-SAT (or exhaustive) -> Pareto front -> top candidates, each
re-estimated with the full estimator. Infeasibility is diagnosed by relaxing one constraint family at a time.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from solver.errors import InfeasibleError, InputError
from solver.estimate.compute import factors_for
from solver.estimate.memory import MemoryOptions
from solver.estimate.serving import Estimate, Workload, estimate
from solver.plan import cpsat
from solver.plan.cpsat import pareto
from solver.plan.exhaustive import enumerate_points
from solver.plan.tables import Tables, build_tables
from solver.space.domains import build_space, largest_tp
from solver.specs.framework import FrameworkProfile
from solver.specs.hardware import Hardware
from solver.specs.model import ModelSpec
from solver.specs.parallel import KNOBS, ParallelConfig, model_knobs
from solver.specs.precision import Precision
from solver.specs.scenario import Scenario


@dataclass(frozen=True)
class Planned:
    config: ParallelConfig
    batch: int
    estimate: Estimate
    latency_s: float  # the planner's additive latency objective
    on_front: bool


@dataclass
class PlanResult:
    candidates: list[Planned]
    front: list[Planned]
    binding: list[str] = field(default_factory=list)
    method: str = "cpsat"
    pruned: dict[str, list[str]] = field(default_factory=dict)  # rule -> knob values it removed
    knobs: tuple[str, ...] = KNOBS  # the model's own knobs (parallel.model_knobs): what the output shows


def full_estimate_misses(e: Estimate, scenario: Scenario) -> list[str]:
    """Constraint families the full estimate breaks (the planner's tables are a proxy; this has the last
    word). A relative 1e-6 absorbs float noise at a limit."""
    misses = [] if e.memory.feasible else ["B.memory_per_rank"]
    if scenario.ttft_ms is not None and e.ttft_s * 1e3 > scenario.ttft_ms * (1 + 1e-6):
        misses.append("SLA.ttft")
    if scenario.tpot_ms is not None and e.tpot_s * 1e3 > scenario.tpot_ms * (1 + 1e-6):
        misses.append("SLA.tpot")
    return misses


def plan(model: ModelSpec, hw: Hardware, prec: Precision, fw: FrameworkProfile, world: int, scenario: Scenario,
         params: cpsat.SolverParams | None = None, method: str = "cpsat", top: int = 3,
         allow_cross_node: bool = False, mem_opts: MemoryOptions | None = None,
         explain_binding: bool = True) -> PlanResult:
    params = params or cpsat.SolverParams()
    if scenario.mtp > fw.max_mtp:
        raise InputError("--mtp", f"{scenario.mtp} exceeds {fw.name}'s maximum MTP depth {fw.max_mtp}")
    f = factors_for(hw, fw.efficiency_for(hw))
    space = build_space(model, hw, fw, world, scenario, allow_cross_node)
    tables = build_tables(model, hw, prec, f, fw, space, scenario, mem_opts)
    planner = cpsat.Planner(tables, model, hw, fw, scenario, params)
    realized: dict[tuple, Estimate] = {}

    def full(p: cpsat.Point) -> Estimate:
        if p.key() not in realized:
            cfg = ParallelConfig(world_size=world, **tables.config(dict(p.picks)))
            realized[p.key()] = estimate(model, hw, cfg, prec, f, Workload.for_scenario(scenario, p.batch), mem_opts)
        return realized[p.key()]

    def verify(p: cpsat.Point) -> bool:
        return not full_estimate_misses(full(p), scenario)

    # memory and SLAs are judged by the full estimate, not only the additive proxy: a candidate solve prints
    # must pass `check` (tests/test_engine_roundtrip.py found a 153 GB "fit" on 141 GB H200s without this)
    planner.verify = verify
    if method == "exhaustive":
        points = pareto(enumerate_points(tables, model, hw, fw, scenario))
    else:
        points = planner.front()
    if not points:
        raise _diagnose(model, hw, prec, fw, world, scenario, tables, planner, mem_opts)
    lat_ref = min(p.latency for p in points)
    inv_ref = min(p.inv_throughput for p in points)

    def score(p: cpsat.Point) -> float:  # the best compromise always lies on the front
        return scenario.score(p.latency, p.inv_throughput, lat_ref, inv_ref)

    ordered = sorted(points, key=score)
    chosen: list[cpsat.Point] = [ordered[0]]
    seen: list[tuple] = [cpsat.pattern_key(tables, dict(ordered[0].picks))]
    if top >= 2:
        # one slot for the best configuration on another attention backbone (TP vs DP, or a CP/KVP/SP
        # add-on): the seed asks that the backbones be compared, not only variants of the winner's
        fam = frozenset({cpsat.attention_family(tables.choices["attn"][dict(ordered[0].picks)["attn"]])})
        # its best at the winner's concurrency, or another backbone's point already on the front
        alts = [q for q in ordered[1:] if cpsat.attention_family(
            tables.choices["attn"][dict(q.picks)["attn"]]) not in fam]
        alt = planner.best(ordered[0].batch, seen, exclude_families=fam)
        alts += [alt] if alt is not None else []
        if alts:
            p = min(alts, key=score)
            chosen.append(p)
            seen.append(cpsat.pattern_key(tables, dict(p.picks)))
    for p in ordered[1:]:
        if len(chosen) >= top:
            break
        k = cpsat.pattern_key(tables, dict(p.picks))
        if k not in seen:
            chosen.append(p)
            seen.append(k)
    while len(chosen) < top:
        # fewer distinct patterns on the front: the best configuration of a new pattern at any concurrency
        alts = [p for p in (planner.best(b, seen) for b in tables.batches) if p is not None]
        if not alts:
            break
        p = min(alts, key=score)
        chosen.append(p)
        seen.append(cpsat.pattern_key(tables, dict(p.picks)))
    front_keys = {p.key() for p in points}

    def realize(p: cpsat.Point) -> Planned:
        cfg = ParallelConfig(world_size=world, **tables.config(dict(p.picks)))
        return Planned(cfg, p.batch, full(p), p.latency / cpsat.TIME_SCALE, p.key() in front_keys)

    result = PlanResult([realize(p) for p in chosen], [realize(p) for p in points], method=method,
                        knobs=model_knobs(model))
    if explain_binding:
        result.binding = binding_constraints(planner, chosen[0])
    pruned: dict[str, list[str]] = {}
    for p in space.pruned:
        pruned.setdefault(p.rule, []).append(f"{p.knob}={p.value}")
    result.pruned = {rule: sorted(set(v)) for rule, v in sorted(pruned.items())}
    return result


def binding_constraints(planner: cpsat.Planner, best: cpsat.Point) -> list[str]:
    """Constraint families whose removal alone would lower the chosen configuration's latency at its
    concurrency (the operating point the recommendation is for)."""
    out = []
    for name in planner.families(best.batch):
        p = planner.best(best.batch, relaxed=frozenset({name}))
        if p is not None and p.latency < best.latency:
            out.append(name)
    return out


def _diagnose(model: ModelSpec, hw: Hardware, prec: Precision, fw: FrameworkProfile, world: int,
              scenario: Scenario, tables: Tables, planner: cpsat.Planner,
              mem_opts: MemoryOptions | None) -> InfeasibleError:
    from solver.estimate.memory import memory_per_rank

    binding: list[str] = []
    names = sorted({n for b in tables.batches for n in planner.families(b)})
    for name in names:
        if any(planner.best(b, relaxed=frozenset({name})) for b in tables.batches):
            binding.append(name)
    if not binding and names:
        if any(planner.best(b, relaxed=frozenset(names)) for b in tables.batches):
            binding = names
    if not tables.choices["attn"]:
        binding.append("framework rules leave no attention layout")
    remedies = []
    if "B.memory_per_rank" in binding or not binding:
        # fewest cards that fit: the most sharded config at the smallest batch, for growing world sizes
        smallest = min(tables.batches)
        for w in [world * k for k in (2, 3, 4, 6, 8, 12, 16, 24, 32)]:
            # the most sharded layout the planner itself would allow: TP inside the fast domain, MoE on EP
            tp = largest_tp(w, hw, model)
            if model.is_moe and model.num_experts % w:
                continue
            pc = ParallelConfig(world_size=w, attn_tp_size=tp, dense_tp_size=tp, embed_tp_size=tp,
                                lmhead_tp_size=tp)
            rep = memory_per_rank(model, hw, pc, prec, smallest, scenario.max_seq_len, mem_opts,
                                  mtp_layers=scenario.mtp)
            if rep.feasible:
                remedies.append(f"{w} cards fit (e.g. attn_tp {tp}" + (" with MoE EP)" if model.is_moe else ")"))
                break
        if not remedies:
            remedies.append(f"no world size up to {world * 32} fits with TP inside a node "
                            "(try --allow-cross-node)")
        if scenario.concurrency:
            remedies.append("a smaller --concurrency")
        remedies.append("a shorter sequence, or cheaper weights (--weight-dtype int8/fp8"
                        + (", --moe-weight-dtype int4)" if model.is_moe else ")"))
    if any(b.startswith("SLA") for b in binding):
        remedies.append("relax --ttft-ms/--tpot-ms or add cards")
    names = ", ".join(binding) if binding else "the combination of memory and framework rules"
    return InfeasibleError(f"no feasible parallel_config for {model.name} on {world} x {hw.name}: {names} binds",
                           binding, "what would fit: " + "; ".join(remedies) if remedies else None)
