"""The planner's tables built for one deployment: every group's choices in the space (attention choices
under the framework's attention rules, each other group's knob per stage count, MoE with its redundant experts)
and their memory per rank at each concurrency; step costs are filled later, per layout (Tables.view).
"""
from __future__ import annotations

import itertools
from dataclasses import replace
from typing import TypeVar

from solver.estimate.compute import Factors
from solver.estimate.memory_options import MemoryOptions, engine_options, memory_limit
from solver.estimate.params import count_params
from solver.plan.groups import GROUPS, module_groups
from solver.plan.layout_memory import held_of
from solver.plan.memory_edge import memory_edge
from solver.plan.memory_rows import PER_SEQUENCE_MEMORY, group_memory, unowned_weights
from solver.plan.tables import Tables, kernel_budgets
from solver.space.domains import Space, pp_fits_domains, pp_fits_nodes, redundant_for
from solver.specs.framework import FrameworkProfile
from solver.specs.hardware import Hardware
from solver.specs.model import ModelSpec
from solver.specs.parallel import ParallelConfig
from solver.specs.precision import Precision
from solver.specs.rule_env import device_facts, model_env, model_facts
from solver.specs.scenario import Scenario

T = TypeVar("T")

# one object per value among the hardware, precisions and factors tables were built with (_one_of)
_BUILT_WITH: list = []


def attention_tuples(space: Space, model: ModelSpec, fw: FrameworkProfile, world: int, hw: Hardware,
                      scenario: Scenario, rejected: dict[str, int] | None = None,
                      ignore: frozenset[str] = frozenset()) -> list[tuple[int, ...]]:
    """Attention choices: at most one token-sharding mode (CP, KVP or SP) at a time, group divides W, and
    every framework rule that reads only attention knobs holds. `rejected`: counts, by rule id, the layouts
    each framework rule turned away (the first rule a layout breaks); `ignore`: rules set aside."""
    d = space.domains
    # the attention knobs, the deployment's facts and every fact of the model (model_facts: constant here)
    names = (set(GROUPS["attn"]) | set(model_facts(model)) - {"absent"}
             | {"pp_size", "world", "mtp", "ranks_per_node", "afd", "is_moe", "attn_dp_size"})
    local_rules = [r for r in fw.rules if r.id not in ignore and r.names <= names]
    # each rule judged once per distinct reading of the environment (Rule.reading): the choices repeat them
    verdicts: dict[tuple, bool] = {}

    def holds(env) -> bool:
        for n, r in enumerate(local_rules):
            vkey = (n, r.reading(env))
            v = verdicts.get(vkey)
            if v is None:
                v = verdicts[vkey] = r.holds(env)
            if not v:
                if rejected is not None:
                    rejected[r.id] = rejected.get(r.id, 0) + 1
                return False
        return True

    out = []
    kvp_in_tp = fw.kvp_splits_attention_weights
    # in itertools.product's order, the one-mode test made before the o_proj and stage loops (it reads neither)
    splits = [(cp, kvp, sp) for cp, kvp, sp in itertools.product(d["cp_size"], d["kvp_size"], d["attn_sp_size"])
              if (cp > 1) + (kvp > 1) + (sp > 1) <= 1]
    for tp, (cp, kvp, sp), op, pp in itertools.product(d["attn_tp_size"], splits, d["o_proj_tp_size"],
                                                       d["pp_size"]):
        if tp > 1 and op not in (1, tp) and not (kvp_in_tp and op == tp * kvp):
            # seed Layer 1: o_proj gets its own TP only under attention DP; under attention TP it follows
            # attn_tp (written 1, or equal to attn_tp where a framework requires that spelling), or the whole
            # TP group attn_tp x kvp where KVP reuses the TP ranks (vLLM's TP8 -dcp 4: attn_tp 2, o_proj 8)
            continue
        if (world // pp) % (tp * cp * kvp * sp):
            continue
        if pp > 1 and not (pp_fits_nodes(world, pp, hw, fw.rank_order, tp * cp * kvp * sp)
                           and pp_fits_domains(world, pp, hw, fw.rank_order, tp * cp * kvp * sp)):
            continue  # B.pp_stage_whole_nodes / _domains with this layout's engine under a dp-major rank order
            # (the space applied them to the pp value alone)
        if kvp > 1 and scenario.phase == "prefill":
            continue  # KVP splits a decode cache; it does nothing for a prefill-only deployment
        cfg = {"attn_tp_size": tp, "cp_size": cp, "kvp_size": kvp, "attn_sp_size": sp, "o_proj_tp_size": op,
               "pp_size": pp}
        env = model_env(cfg, model, **device_facts(hw), world=world, mtp=scenario.mtp)
        if holds(env):
            out.append((tp, cp, kvp, sp, op, pp))
    # under attention TP, o_proj_tp = attn_tp and = 1 are the same layout: keep one spelling, the framework's
    accepted = set(out)
    return [c for c in out if not (c[0] > 1 and c[4] == c[0] and (*c[:4], 1, c[5]) in accepted)]

def attention_rejections(space: Space, model: ModelSpec, fw: FrameworkProfile, world: int, hw: Hardware,
                         scenario: Scenario) -> list[str]:
    """The framework rules that turned every attention layout of the space away: those that, set aside alone,
    leave a layout (ATOM's C.single_node on two nodes, not C.dcp_mla_only, which only turns KVP away); where no
    rule does alone, every rule that turned one away, the most layouts first. What an empty attention group
    names beside the space's own pruning."""
    rejected: dict[str, int] = {}
    attention_tuples(space, model, fw, world, hw, scenario, rejected)
    ordered = sorted(rejected, key=lambda rule: (-rejected[rule], rule))
    alone = [r for r in ordered if attention_tuples(space, model, fw, world, hw, scenario, ignore=frozenset({r}))]
    return alone or ordered


def _per_stage(values: list[int], pps: tuple[int, ...], world: int, rest=None) -> list[tuple[int, ...]]:
    """A group's choices with each stage count: the knob must divide the stage's ranks."""
    return [(v, *((rest(v, p),) if rest else ()), p) for p in pps for v in values
            if (world // p) % v == 0 and (rest is None or rest(v, p) is not None)]

def build_tables(model: ModelSpec, hw: Hardware, prec: Precision, f: Factors, fw: FrameworkProfile,
                 space: Space, scenario: Scenario, mem_opts: MemoryOptions | None = None) -> Tables:
    """The choices of every group and their memory per concurrency; step costs are filled per layout on
    first use (Tables.view)."""
    mem_opts = engine_options(mem_opts, f)  # the memory rows price the layout the step costs do
    hw, prec, f = _one_of(hw), _one_of(prec), _one_of(f)
    W = space.world
    pps = space.domains["pp_size"]
    params = count_params(model)
    groups = _one_of(module_groups(params))  # one object per value too: the share recipes key it by id
    choices: dict[str, list[tuple[int, ...]]] = {
        "attn": attention_tuples(space, model, fw, W, hw, scenario),
        "dense": _per_stage(space.domains["dense_tp_size"], pps, W),
        "moe": [c for c in _per_stage(space.domains["moe_tp_size"], pps, W,
                                      lambda v, p: _redundant(model, fw, hw, W // p // v))],
        "embed": _per_stage(space.domains["embed_tp_size"], pps, W),
        "lmhead": _per_stage(space.domains["lmhead_tp_size"], pps, W),
    }
    mtp_layers = scenario.mtp if model.num_mtp_layers else 0
    # memory not owned by any group: norms (replicated; an encoder is the attention group's); the runtime reserve
    # is in the limit
    # (the MTP layers' modules split like the stack's, with their groups; their glue is replicated)
    const_mem = unowned_weights(model, W, prec, mem_opts, params, groups, mtp_layers, frozenset())
    limit = memory_limit(hw.memory_bytes, hw.reserved_bytes, mem_opts.total_fraction)
    batches = []
    memory: dict[tuple[int, str, int], float] = {}
    pcs = {(g, i): ParallelConfig(world_size=W, **dict(zip(GROUPS[g], values)))
           for g, opts in choices.items() for i, values in enumerate(opts)}
    # what does not grow with the sequences held (weights, the attention groups' buffers): once per choice
    # where the EP kernels set their own step budget beside some choices the views split by it (Tables.layouts)
    # and size their memory at theirs (layout_memory): the entries, which the planner's bounds and screens read,
    # at the least one
    entry_opts = mem_opts
    if kernel_budgets(f, model):
        probe = Tables(W, choices, (), {}, 0.0, 0.0, 0, model, hw, prec, f, scenario, {}, mem_opts)
        # no layout (every attention choice's MoE partners screened out): no view, the scheduler's budget
        least = min((probe.view_budget(k) for k in probe.layouts()), default=mem_opts.token_budget)
        if least != mem_opts.token_budget:
            entry_opts = replace(mem_opts, token_budget=least)
    fixed = {(g, i): group_memory(g, model, pc, prec, entry_opts, params, groups, 0, scenario.max_seq_len,
                                  mtp_layers, part="fixed") for (g, i), pc in pcs.items()}
    # what grows with the sequences held, per (choice, sequences held): under attention DP a small concurrency
    # still holds one sequence per replica, so several concurrencies ask for the same figure. An attention
    # choice's growing part (caches, its activation term) reads its layout, not o_proj TP
    # (tests/test_planner_memory.py::test_the_attention_entrys_growing_part_reads_no_o_proj_tp): the choices
    # of one layout share it (726 choices, 282 layouts at generic W=128)
    grown = {(g, i): ((g, Tables.layout_key(choices[g][i])) if g == "attn" else (g, i), pc.attn_replicas)
             for (g, i), pc in pcs.items() if g in PER_SEQUENCE_MEMORY}
    per_held: dict[tuple, float] = {}

    def memory_at(b: int) -> dict[tuple[str, int], float]:
        mem = {}
        for (g, i), pc in pcs.items():
            if g not in PER_SEQUENCE_MEMORY:
                mem[(g, i)] = fixed[(g, i)]
                continue
            gk, replicas = grown[(g, i)]
            held = held_of(b, replicas) if g == "attn" else b
            grow = per_held.get((gk, held))
            if grow is None:
                grow = per_held[(gk, held)] = group_memory(g, model, pc, prec, entry_opts, params, groups, held,
                                                           scenario.max_seq_len, mtp_layers, part="batch")
            mem[(g, i)] = fixed[(g, i)] + grow
        return mem

    def fits(mem: dict[tuple[str, int], float]) -> bool:
        """Some configuration holds these sequences: the least memory of every group together."""
        best = {g: min((mem[(g, i)] for i in range(len(opts))), default=0.0) for g, opts in choices.items()}
        return const_mem + sum(best.values()) <= limit

    failing = None
    for b in space.batches:
        mem = memory_at(b)
        if not fits(mem) and b != min(space.batches):
            failing = b  # no configuration holds this many sequences, nor more (memory grows with them)
            break
        batches.append(b)
        memory.update({(b, g, i): m for (g, i), m in mem.items()})
    tables = Tables(W, choices, tuple(batches), memory, const_mem, limit, scenario.latency_terms[2],
                    model, hw, prec, f, scenario, groups, mem_opts, mtp_layers, memory_at, entry_budget=entry_opts.token_budget)
    if failing is None or not batches or scenario.concurrency is not None or scenario.phase != "serving":
        # a fixed concurrency, a prefill-only or decode-only plan keep their batches (a disaggregated decode
        # pool's buckets are the intervals between the powers, plan.disagg); the others try the memory edge too
        return tables
    rows_of: dict[int, dict[tuple[str, int], float]] = {}

    def rows_at(c: int) -> dict[tuple[str, int], float]:
        if c not in rows_of:
            rows_of[c] = memory_at(c)
            tables.memory.update({(c, g, i): m for (g, i), m in rows_of[c].items()})
        return rows_of[c]

    edge = memory_edge(tables, failing, rows_at, pps, fw, model, hw, scenario)
    if edge is None:
        return tables
    # fresh tables: the bisection's probes leave rows and layout memory behind at concurrencies not planned
    memory = {k: m for k, m in tables.memory.items() if k[0] in batches or k[0] == edge}
    return Tables(W, choices, (*batches, edge), memory, const_mem, limit, scenario.latency_terms[2],
                  model, hw, prec, f, scenario, groups, mem_opts, mtp_layers, memory_at, entry_budget=entry_opts.token_budget)


def _one_of(x: T) -> T:
    """The first object equal to `x` that tables were built with. The estimator's memos key the hardware,
    precision and factors by identity (step_sums._KITS, compute._COLLECTIVES) and each plan makes its own factors
    and precision: with one object per value, the plans of one deployment at other world sizes (a sweep) or
    again share what they cost alike (the mixers' sums of equal works: step_sums.mixer_key). Equal values cost the
    same (the estimator is pure)."""
    for y in _BUILT_WITH:
        if type(y) is type(x) and y == x:
            return y
    if len(_BUILT_WITH) >= 64:
        _BUILT_WITH.clear()
    _BUILT_WITH.append(x)
    return x


def _redundant(model: ModelSpec, fw: FrameworkProfile, hw: Hardware, ep: int) -> int | None:
    """Redundant experts at this EP size (space.domains.redundant_for), None where EP cannot hold the
    experts or the copies break the hardware's experts-per-rank cap."""
    r = redundant_for(model, fw, ep)
    if r is None or not model.is_moe or ep <= 1 or not hw.max_experts_per_rank:
        return r
    return r if (model.num_experts + r) / ep <= hw.max_experts_per_rank else None
