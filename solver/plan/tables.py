"""Per-choice cost tables for the planner, computed by the estimator.

A step's cost is a sum over module groups, and each group's cost depends only on its own knobs and the
batch: attention (attn_tp, cp, kvp, attn_sp, o_proj_tp), dense (dense_tp: dense FFN + shared experts),
moe (moe_tp: routed experts, router, EP all-to-all), embed (embed_tp), lmhead (lmhead_tp). So the tables
are exact for the additive model; the planner re-checks its answers with the full estimator. One term is not
additive: when dense TP equals MoE TP the shared and routed experts share one all-reduce (specs/layers/moe.py),
which the tables charge once per group (an upper bound the full estimate removes). Modules map to groups by
the knob each layer block declares for them (`module_groups`): the tables never name a layer type.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass

from solver.estimate.compute import Factors, Work
from solver.estimate.memory import (
    MemoryOptions,
    activation_peak,
    memory_limit,
    cache_per_rank,
    comm_buffers_per_rank,
    module_weight_bytes,
    state_per_rank,
)
from solver.estimate.params import ParamReport, count_params
from solver.estimate.serving import mtp_tokens_per_step
from solver.estimate.step import StepCost, step_cost
from solver.space.domains import Space, redundant_for
from solver.specs.framework import FrameworkProfile, model_env
from solver.specs.hardware import Hardware
from solver.specs.model import ModelSpec
from solver.specs.parallel import ParallelConfig
from solver.specs.precision import Precision
from solver.specs.scenario import Scenario

# Pipeline stages change every group's cost (layers per stage, ranks per stage), so the stage count is the
# last entry of every group's choice and the planner makes all groups pick the same one (SHARED): with it
# fixed, the groups stay additive.
SHARED = ("pp_size",)
GROUPS: dict[str, tuple[str, ...]] = {
    "attn": ("attn_tp_size", "cp_size", "kvp_size", "attn_sp_size", "o_proj_tp_size", *SHARED),
    "dense": ("dense_tp_size", *SHARED),
    # redundant experts ride with MoE TP: the planner places the fewest that make EP divide the experts
    # (space.domains.redundant_for), so each MoE choice is (moe_tp, redundant, pp)
    "moe": ("moe_tp_size", "redundant_experts", *SHARED),
    "embed": ("embed_tp_size", *SHARED),
    "lmhead": ("lmhead_tp_size", *SHARED),
}
# a module belongs to the group of the knob that owns it (each layer block declares its modules' knobs:
# specs/layers); shared experts follow the dense group's knob by default (MemoryOptions.shared_experts_knob)
KNOB_GROUP: dict[str, str] = ({k: g for g, knobs in GROUPS.items() for k in knobs if k not in SHARED}
                              | {"shared_experts_tp": "dense"})


def module_groups(params: ParamReport) -> dict[str, str | None]:
    """module name -> planner group (None: replicated, owned by no knob: norms, encoders, MTP glue)."""
    return {name: KNOB_GROUP.get(knob) if knob else None for name, knob in params.knobs().items()}


@dataclass(frozen=True)
class Entry:
    prefill_s: float
    decode_s: float
    memory_bytes: float


@dataclass(frozen=True)
class Tables:
    world: int
    choices: dict[str, list[tuple[int, ...]]]  # group -> list of knob-value tuples (GROUPS order)
    batches: tuple[int, ...]
    entries: dict[tuple[int, str, int], Entry]  # (batch, group, choice index) -> cost
    const_memory_bytes: float
    const_step_s: float
    mtp_tokens: float
    prefill_weight: float  # how much of the prefill time counts in request latency (0 for decode-only)
    decode_steps: int  # TPOTs in request latency
    prefill_per_token: float  # share of the batch's prefill each output token pays (serving: 1 / OSL)
    tokens_per_request: int  # tokens a request yields (output, or input for prefill-only)
    memory_limit_bytes: float

    def config(self, picks: dict[str, int]) -> dict[str, int]:
        out: dict[str, int] = {}
        for g, i in picks.items():
            out.update(dict(zip(GROUPS[g], self.choices[g][i])))
        return out


def _attention_tuples(space: Space, model: ModelSpec, fw: FrameworkProfile, world: int, hw: Hardware,
                      scenario: Scenario) -> list[tuple[int, ...]]:
    """Attention choices: at most one token-sharding mode (CP, KVP or SP) at a time, group divides W, and
    every framework rule that reads only attention knobs holds."""
    d = space.domains
    names = set(GROUPS["attn"])
    local_rules = [r for r in fw.rules if r.severity == "error"
                   and r.names <= names | {"pp_size", "world", "mtp", "ranks_per_node", "afd", "num_attention_heads",
                                           "num_key_value_heads", "n_routed_experts", "has_mla", "has_dsa",
                                           "is_moe", "o_proj_dim", "attn_dp_size"}]
    out = []
    for tp, cp, kvp, sp, op, pp in itertools.product(d["attn_tp_size"], d["cp_size"], d["kvp_size"],
                                                     d["attn_sp_size"], d["o_proj_tp_size"], d["pp_size"]):
        if sum(x > 1 for x in (cp, kvp, sp)) > 1:
            continue
        if tp > 1 and op not in (1, tp):
            # seed Layer 1: o_proj gets its own TP only under attention DP; under attention TP it follows
            # attn_tp (written 1, or equal to attn_tp where a framework requires that spelling)
            continue
        if (world // pp) % (tp * cp * kvp * sp):
            continue
        if kvp > 1 and scenario.phase == "prefill":
            continue  # KVP splits a decode cache; it does nothing for a prefill-only deployment
        cfg = {"attn_tp_size": tp, "cp_size": cp, "kvp_size": kvp, "attn_sp_size": sp, "o_proj_tp_size": op,
               "pp_size": pp}
        env = model_env(cfg, model, hw.ranks_per_node, world=world, mtp=scenario.mtp)
        if all(r.holds(env) for r in local_rules):
            out.append((tp, cp, kvp, sp, op, pp))
    # under attention TP, o_proj_tp = attn_tp and = 1 are the same layout: keep one spelling, the framework's
    accepted = set(out)
    return [c for c in out if not (c[0] > 1 and c[4] == c[0] and (*c[:4], 1, c[5]) in accepted)]


def _per_stage(values: list[int], pps: tuple[int, ...], world: int, rest=None) -> list[tuple[int, ...]]:
    """A group's choices with each stage count: the knob must divide the stage's ranks."""
    return [(v, *((rest(v, p),) if rest else ()), p) for p in pps for v in values
            if (world // p) % v == 0 and (rest is None or rest(v, p) is not None)]


def _group_times(step: StepCost, groups: dict[str, str | None]) -> dict[str, float]:
    out = {g: 0.0 for g in GROUPS}
    for o in step.ops:
        g = groups.get(o.module)
        if g:
            out[g] += o.time_s
    for c in step.comms:
        # the pipeline hand-off goes with the attention group's choice, which carries the stage count
        g = "attn" if c.module == "pipeline" else groups.get(c.module)
        if g:
            out[g] += c.exposed_s
    return out


def build_tables(model: ModelSpec, hw: Hardware, prec: Precision, f: Factors, fw: FrameworkProfile,
                 space: Space, scenario: Scenario, mem_opts: MemoryOptions | None = None) -> Tables:
    mem_opts = mem_opts or MemoryOptions()
    W = space.world
    pps = space.domains["pp_size"]
    params = count_params(model)
    groups = module_groups(params)
    choices: dict[str, list[tuple[int, ...]]] = {
        "attn": _attention_tuples(space, model, fw, W, hw, scenario),
        "dense": _per_stage(space.domains["dense_tp_size"], pps, W),
        "moe": [c for c in _per_stage(space.domains["moe_tp_size"], pps, W,
                                      lambda v, p: _redundant(model, fw, hw, W // p // v))],
        "embed": _per_stage(space.domains["embed_tp_size"], pps, W),
        "lmhead": _per_stage(space.domains["lmhead_tp_size"], pps, W),
    }
    isl, osl = scenario.isl, scenario.osl
    ctx_decode = isl + osl / 2
    mtp = scenario.mtp
    mtp_layers = mtp if model.num_mtp_layers else 0
    entries: dict[tuple[int, str, int], Entry] = {}
    # memory not owned by any group: norms and encoders (replicated); the runtime reserve is in the limit
    const_mem = sum(module_weight_bytes(m, model, ParallelConfig(world_size=W), prec, mem_opts)
                    for m in params.modules if m.parts and groups.get(m.name) is None)
    if mtp_layers:
        base = ParallelConfig(world_size=W)
        const_mem += sum(module_weight_bytes(m, model, base, prec, mem_opts) for m in params.mtp)
    limit = memory_limit(hw.memory_bytes, hw.reserved_bytes, mem_opts.total_fraction)
    batches = []
    for b in space.batches:
        mem = {(g, i): _group_memory(g, model, ParallelConfig(world_size=W, **dict(zip(GROUPS[g], values))), prec,
                                     mem_opts, params, groups, b, scenario.max_seq_len, mtp_layers)
               for g, opts in choices.items() for i, values in enumerate(opts)}
        best = {g: min((mem[(g, i)] for i in range(len(opts))), default=0.0) for g, opts in choices.items()}
        floor = const_mem + sum(best.values())
        if floor > limit and b != min(space.batches):
            continue  # no configuration holds this many sequences: the concurrency leaves the space
        batches.append(b)
        for g, opts in choices.items():
            others = floor - best[g]
            for i, values in enumerate(opts):
                m = mem[(g, i)]
                if others + m > limit:
                    # memory alone rules this choice out at this concurrency (the model's memory constraint
                    # and the exhaustive filter both drop it), so its times are never read
                    entries[(b, g, i)] = Entry(0.0, 0.0, m)
                    continue
                pc = ParallelConfig(world_size=W, **dict(zip(GROUPS[g], values)))
                R = pc.attn_replicas
                # the attention group serves its busiest replica; other groups see the system's token share
                per_rep = max(1.0, b / R) if g == "attn" else b / R
                only = g == "attn"
                pre = step_cost(model, hw, pc, prec, f,
                                Work("prefill", isl * per_rep, (isl + 1) / 2, per_rep, per_rep), params,
                                attention_only=only)
                dec = step_cost(model, hw, pc, prec, f,
                                Work("decode", per_rep * (1 + mtp), ctx_decode, per_rep, per_rep * (1 + mtp)),
                                params, mtp_layers=mtp_layers, attention_only=only)
                entries[(b, g, i)] = Entry(_group_times(pre, groups)[g], _group_times(dec, groups)[g], m)
    pw, steps, per_request = scenario.latency_terms
    return Tables(W, choices, tuple(batches), entries, const_mem, f.step_overhead_s,
                  mtp_tokens_per_step(mtp, scenario.mtp_accept), pw, steps, scenario.prefill_per_output_token,
                  per_request, limit)


def _redundant(model: ModelSpec, fw: FrameworkProfile, hw: Hardware, ep: int) -> int | None:
    """Redundant experts at this EP size (space.domains.redundant_for), None where EP cannot hold the
    experts or the copies break the hardware's experts-per-rank cap."""
    r = redundant_for(model, fw, ep)
    if r is None or not model.is_moe or ep <= 1 or not hw.max_experts_per_rank:
        return r
    return r if (model.num_experts + r) / ep <= hw.max_experts_per_rank else None


def _group_memory(g: str, model: ModelSpec, pc: ParallelConfig, prec: Precision, opts: MemoryOptions,
                  params: ParamReport, groups: dict[str, str | None], batch: int, seq_len: int,
                  mtp_layers: int) -> float:
    """Bytes a group adds per rank. Activations and EP buffers are charged at their largest so the linear
    memory constraint never admits a config the exact check rejects. Under PP: on the stage with the most
    layers (the first), charged the embedding and the LM head both (an upper bound by one of them)."""
    if pc.pp_size > 1:
        from solver.estimate.pipeline import stages

        top = max(stages(model, pc.pp_size), key=lambda st: len(st.model.layers))
        return _group_memory(g, top.model, pc.stage(), prec, opts, count_params(top.model), groups, batch,
                             seq_len, mtp_layers)
    total = sum(module_weight_bytes(m, model, pc, prec, opts) for m in params.modules
                if m.parts and groups.get(m.name) == g)
    if g == "attn":
        mtp_cache = model.num_mtp_layers if mtp_layers else 0
        kv, idx, seqs = cache_per_rank(model, pc, prec, batch, seq_len, mtp_layers=mtp_cache)
        state = state_per_rank(model, pc, prec, batch, seq_len, mtp_layers=mtp_cache)
        total += kv + idx + state + activation_peak(model, pc, opts, seq_len, seqs)
        total += comm_buffers_per_rank(model, ParallelConfig(world_size=pc.world_size, attn_tp_size=pc.attn_tp_size,
                                                             cp_size=pc.cp_size, kvp_size=pc.kvp_size,
                                                             attn_sp_size=pc.attn_sp_size,
                                                             o_proj_tp_size=pc.o_proj_tp_size), 0.0)
    if g == "moe" and model.is_moe and pc.moe_ep_size > 1:
        tokens = max(opts.prefill_chunk, batch / max(1, pc.world_size) * (1 + mtp_layers))
        total += comm_buffers_per_rank(model, pc, tokens) - comm_buffers_per_rank(
            model, ParallelConfig(world_size=pc.world_size, moe_tp_size=pc.world_size), 0.0)
    return total
