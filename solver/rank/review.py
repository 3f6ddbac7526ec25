"""Seed Step 4 review of one user-given parallel_config: every violation by class (A model, B hardware,
C framework), the seed's "common errors" that apply, and the weight-handling note."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable

from solver.estimate.compute import factors_for
from solver.estimate.memory_options import MemoryOptions
from solver.estimate.serving import Estimate, Workload, estimate
from solver.space.domains import (TP_KNOBS, cross_node_tp, pp_fits_domains, pp_fits_nodes, stage_run,
                                  straddling_group, tp_domain)
from solver.space.placement import as_launched, placement_note
from solver.rank.kv_split import decode_cp_note, kv_share_warning
from solver.specs.framework import DP_MAJOR, FrameworkProfile
from solver.specs.rule_env import device_facts, model_env, unstated_platform_note
from solver.specs.hardware import Hardware
from solver.specs.model import ModelSpec
from solver.specs.model_rules import model_problems, model_stage_sizes
from solver.specs.knobs import DERIVED
from solver.specs.parallel import KNOBS, ParallelConfig, model_knobs
from solver.specs.precision import Precision
from solver.rank.compared import (PROCESS_ERRORS, SMALL_MOE_TP_ONLY, decode_attn_tp_needed, judge_process_errors,
                                  tp_comm_over_compute)

# the group sizes a rule can read (knobs and derived DP / EP sizes): what makes two class-A lines one problem
_GROUP_SIZES = frozenset(KNOBS) | frozenset(DERIVED)


def hardware_placement(model: ModelSpec, hw: Hardware, pc: ParallelConfig,
                       kvp_in_tp: bool = False) -> tuple[dict[str, int], list[str]]:
    """The seed's class B placement checks on the hardware (memory aside): TP groups wider than the node /
    scale-up domain, and more experts per rank than the device's dispatch path takes. (the wide TP knobs, one
    line per problem); `check` reports them as violations, `launch` notes them beside the command."""
    # a knob of a missing module is reported once, by absent_knob_problems, not as a TP group
    own = model_knobs(model)
    wide = {k: v for k, v in cross_node_tp(pc, hw, kvp_in_tp).items() if k.split(" x ")[0] in own}
    out = [f"{k} {v} > {tp_domain(hw)} ranks of the node/scale-up domain (cross-node TP)" for k, v in wide.items()]
    if hw.max_experts_per_rank and model.is_moe and pc.moe_ep_size > 1:
        per = pc.expert_slots(model.num_experts) / pc.moe_ep_size  # redundant copies count
        if per > hw.max_experts_per_rank:
            # hardware.md: the fast dispatch path (A2 MC2) takes at most this many; past it dispatch falls back to
            # a slower path (verified-configs.md) whose cost the estimate does not model
            out.append(f"{per:g} experts per rank > {hw.max_experts_per_rank} ({hw.name} dispatch path: past it "
                       "MoE dispatch falls back to a slower path the estimate does not price)")
    return wide, out


def straddling_groups(model: ModelSpec, hw: Hardware, pc: ParallelConfig, kvp_in_tp: bool = False) -> list[str]:
    """The seed's class B placement check for groups that fit a node but not its boundaries: ranks fill node 0
    first (rank r on node r // ranks_per_node), so a TP group whose size does not divide the node's ranks has
    one that spans two nodes (TP6 on 12 ranks of 8-GPU nodes: ranks 6-11). One line per knob; `check` warns,
    `launch` notes it (the planner never picks one: B.tp_groups_tile_nodes)."""
    own = model_knobs(model)
    sizes = {k: getattr(pc, k) for k in TP_KNOBS if k in own}
    group = pc.attn_tp_group(kvp_in_tp)
    if group != pc.attn_tp_size:
        sizes["attn_tp_size x kvp_size"] = group
    dom = tp_domain(hw)
    unit = "node" if dom == hw.ranks_per_node else "scale-up domain"
    by_size: dict[int, list[str]] = {}
    for k, size in sizes.items():
        by_size.setdefault(size, []).append(k)
    out = []
    for size, knobs in by_size.items():  # one line per group size: TP6 everywhere is one problem
        hit = straddling_group(pc.world_size, size, hw)
        if hit:
            out.append(f"{', '.join(knobs)} {size}: the group of ranks {hit[0]}-{hit[1]} spans two {unit}s of {dom} "
                       f"ranks (ranks fill the first {unit} first; {size} does not divide {dom}), so its collectives "
                       f"leave the {unit}, which the estimate prices inside it [B.tp_groups_tile_nodes]")
    return out


# what a launch argument that caps the running batch reads: the batch or an engine instance's share of it, over
# the attention group sizes (launch_spec.REPLICA_BATCH); an argument reading the MTP depth, the token budget or
# the PP size sizes something else from it (a graph, a step's tokens, a microbatch)
_BATCH_CAP_NAMES = frozenset({"batch", "replica_batch", "world", "attn_tp_size", "attn_group_size"})


def batch_cap_argument(fw: FrameworkProfile) -> str | None:
    """The engine's launch argument that caps the running batch (vLLM's --max-num-seqs, SGLang's
    --max-running-requests), as it spells it: the first the launch prints whose value is the batch (later ones size
    a CUDA graph to it). The seed's "reduce batch" in the engine's terms; None where the launch prints none."""
    for a in fw.launch.args if fw.launch else ():
        names = a.value_expr.names if a.value_expr is not None else frozenset()
        if names & {"batch", "replica_batch"} and names <= _BATCH_CAP_NAMES:
            return a.flag or a.env or a.key
    return None


def memory_actions(fw: FrameworkProfile) -> str:
    """The seed's 3.4 actions on a memory over 0.95 of capacity, the batch cap named as the engine reads it."""
    cap = batch_cap_argument(fw)
    return ("increase the parallelism (more cards, or a KV split: kvp_size / cp_size) or reduce the batch"
            + (f" ({cap})" if cap else ""))


@dataclass
class Review:
    violations: dict[str, list[str]] = field(default_factory=lambda: {"A": [], "B": [], "C": []})
    warnings: dict[str, list[str]] = field(default_factory=lambda: {"A": [], "B": [], "C": []})
    common_errors: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    estimate: Estimate | None = None
    comparisons: dict[str, Estimate] = field(default_factory=dict)

    @property
    def valid(self) -> bool:
        return not any(self.violations.values())


def vocabulary_splits(fw: FrameworkProfile, model: ModelSpec, hw: Hardware, pc: ParallelConfig, batch: int,
                      mtp: int = 0) -> tuple[dict[str, int], list[str]]:
    """(knob -> the widest TP above 1 the engine's rules allow the vocabulary tables at this config's other knobs,
    the rules that refuse every split where none is allowed: vLLM's C.embed_tp_is_tp under attention DP). A knob
    is tried alone, then the two together (a rule tying them to each other); `{}` with the rules where neither
    moves, so the seed's advice to set them independently is given only as the engine can take it."""
    def broken(cfg: ParallelConfig) -> set[str]:
        env = model_env(cfg.settings(), model, **device_facts(hw), world=cfg.world_size, batch=batch, mtp=mtp)
        return {rule.id for rule in fw.violated(env, severity="error")}

    before = broken(pc)
    added: set[str] = set()
    widths = [d for d in range(pc.stage_world, 1, -1) if pc.stage_world % d == 0]

    def widest(knobs: tuple[str, ...]) -> int | None:
        for t in widths:
            new = broken(ParallelConfig(**{**pc.model_dump(), **{k: t for k in knobs}})) - before
            if not new:
                return t
            added.update(new)
        return None

    alone = {k: t for k in ("embed_tp_size", "lmhead_tp_size") for t in [widest((k,))] if t is not None}
    if alone:
        return alone, []
    both = widest(("embed_tp_size", "lmhead_tp_size"))
    if both is not None:
        return {"embed_tp_size": both, "lmhead_tp_size": both}, []
    return {}, sorted(added)


def review(model: ModelSpec, hw: Hardware, fw: FrameworkProfile, pc: ParallelConfig, prec: Precision,
           wl: Workload, mtp: int = 0, online_split: bool | None = None,
           previous: ParallelConfig | None = None, mem_opts: MemoryOptions | None = None,
           estimator: Callable[..., Estimate] | None = None) -> Review:
    """`estimator`: what estimates `pc` and its comparisons (serving.estimate's signature; None: it), so an
    attention-FFN disaggregated deployment is reviewed on its own step (estimate.afd)."""
    estimate_ = estimator or estimate
    r = Review()
    # the nodes as the engine's launch uses them (an equal share of part-filled ones): the rules, the estimate
    # and the placement checks read that; the note names it
    hw = as_launched(hw, fw, pc.world_size)
    r.notes += [n for n in (placement_note(hw, fw, pc.world_size), unstated_platform_note(hw, fw)) if n]
    r.violations["A"] += model_problems(model, pc, fw)
    env = model_env(pc.settings(), model, **device_facts(hw), world=pc.world_size, batch=wl.sequences, mtp=mtp)
    model_lines = [set(re.findall(r"[a-z_]+", line)) for line in r.violations["A"]]
    for rule in fw.rules:
        if rule.holds(env):
            continue
        cls = rule.id.split(".")[0]
        sizes = rule.names & _GROUP_SIZES
        if cls == "A" and sizes and any(sizes <= words for words in model_lines):
            continue  # the model check already says it, about the same group sizes (heads, experts, o_proj, world)
        target = r.warnings if rule.severity == "warning" else r.violations
        target.setdefault(cls, []).append(f"[{rule.id}] {rule.message}")
    r.violations["C"] += fw.limits(env)

    f = factors_for(hw, fw.efficiency_for(hw))
    if not r.violations["A"]:
        r.estimate = estimate_(model, hw, pc, prec, f, wl, mem_opts)
        mem = r.estimate.memory
        if not mem.feasible:
            r.violations["B"].append(f"memory per rank {mem.model_bytes / 1e9:.2f} GB (the runtime reserve aside) "
                                     f"exceeds the limit {mem.limit_bytes / 1e9:.2f} GB = {mem.limit_formula()} "
                                     f"(seed 3.4: {memory_actions(fw)})")
        elif mem.tight:
            r.warnings["B"].append("weights + KV above 0.8 of capacity (seed 3.2): little room for batch growth")
        if mem.kv_share_of_available > 0.5:
            r.warnings["B"].append(kv_share_warning(fw.cp_replicates_kv_cache, fw.kv_offload, fw.moe_chunk,
                                                    model.is_moe))
    wide, placement = hardware_placement(model, hw, pc, fw.kvp_splits_attention_weights)
    r.violations["B"] += placement
    r.warnings["B"] += straddling_groups(model, hw, pc, fw.kvp_splits_attention_weights)

    if pc.pp_size > 1 and pc.world_size % pc.pp_size == 0:
        L, pp = model.num_layers // model.stage_unit, pc.pp_size  # the engines' decoder layers
        split = model_stage_sizes(model, pp)
        if split == model.stage_layers:  # the command's own split, where model_stage_sizes takes it
            sizes = [n // model.stage_unit for n in split]
            r.warnings["B"].append(f"{L} layers in pp_size {pp} stages of {', '.join(map(str, sizes))} layers, as "
                                   "the command runs them: the heaviest stage's memory and each stage's time "
                                   "are priced")
        elif L % pp:
            r.warnings["B"].append(f"{L} layers do not divide into pp_size {pp} stages: balanced stages of "
                                   f"{-(-L // pp)} and {L // pp} layers, each priced at its own time")
        # the consecutive ranks the node and domain rules judge (space.domains.stage_run), named as such
        ranks = stage_run(pc.world_size, pp, fw.rank_order, pc.attn_group_size)
        run = (f"each DP engine's share of a stage ({ranks} ranks, the engine's rank order keeping an engine's "
               "stages together)" if fw.rank_order == DP_MAJOR else f"a stage of {ranks} ranks")
        if not pp_fits_nodes(pc.world_size, pp, hw, fw.rank_order, pc.attn_group_size):
            r.warnings["B"].append(f"{run} is neither whole nodes nor a part of one ({hw.ranks_per_node} per node): "
                                   "stages share a node boundary")
        elif not pp_fits_domains(pc.world_size, pp, hw, fw.rank_order, pc.attn_group_size):
            r.warnings["B"].append(f"{run} is neither whole scale-up domains nor a part "
                                   f"of one ({tp_domain(hw)} ranks each): a stage spans two domains, and its "
                                   "collectives cross the scale-out links the estimate prices at the domain's")

    if wl.kind == "decode" and pc.attn_tp_size > 1 and r.estimate is not None and r.estimate.memory.feasible:
        need = decode_attn_tp_needed(model, hw, fw, pc, prec, f, wl, mem_opts, r.estimate, estimator)
        if need is not None:
            smaller, e = need
            r.warnings["B"].append(
                f"attn_tp_size {pc.attn_tp_size} is more than this decode needs (seed Step 4 [B]): attn_tp_size "
                f"{smaller.attn_tp_size} fits ({e.memory.model_bytes / 1e9:.2f} of {e.memory.limit_bytes / 1e9:.2f} "
                f"GB) and decodes no slower (TPOT {e.tpot_s * 1e3:.3g} vs {r.estimate.tpot_s * 1e3:.3g} ms); the "
                "wider attention TP only adds all-reduce at one token per step")
    if r.estimate is not None and r.estimate.memory.feasible:
        found, notes = tp_comm_over_compute(model, hw, fw, pc, prec, f, wl, mem_opts, r.estimate, estimator)
        r.warnings["B"] += found
        r.notes += notes
    # the seed's common errors
    W = pc.world_size
    if wide:
        r.common_errors.append("TP communication crosses nodes: keep tp_size <= ranks per node")
    # the seed's "ignore the tp_size of Embed/LMHead": neither table split, where its memory matters (a large
    # vocabulary and memory binding); one of them split, or memory to spare, is a choice (solve makes it)
    if (model.has_large_vocab and pc.embed_tp_size == pc.lmhead_tp_size == 1 and W > 1 and r.estimate is not None
            and r.estimate.memory.binds):
        mem = r.estimate.memory
        tables = sum(mem.weights_bytes.get(k, 0.0) for k in ("embedding", "lm_head"))
        said = (f"embed/lm_head TP both left at 1 with V = {model.vocab_size:,} > 100K while memory binds "
                f"({mem.binds_why()}): the vocabulary tables take {tables / 1e9:.2f} GB on every rank")
        allowed, tied = vocabulary_splits(fw, model, hw, pc, wl.sequences, mtp)
        if tied:  # the engine cannot set them apart here: not the user's error, and not advice they can take
            r.notes.append(f"{said}; {fw.name} ties them to the TP size here ({', '.join(tied)}): only a larger "
                           "attention TP splits them")
        else:
            which = ", ".join(f"{k} up to {t}" for k, t in allowed.items())
            r.common_errors.append(f"{said}; set their TP independently ({fw.name} allows {which} here)")
    process = [e for e in PROCESS_ERRORS if not e.rule(model).holds(env)]
    if SMALL_MOE_TP_ONLY in process and r.estimate is not None:
        alt = ParallelConfig(**{**pc.model_dump(), "moe_tp_size": 1})
        if alt.expert_slots(model.num_experts) % alt.moe_ep_size == 0:
            r.comparisons["moe_ep"] = estimate_(model, hw, alt, prec, f, wl, mem_opts)
    if process and r.estimate is not None:
        found, notes = judge_process_errors(process, model, hw, fw, pc, prec, wl, mem_opts, r.estimate, estimator)
        r.common_errors += found
        r.notes += notes
    if wl.kind == "decode" and pc.cp_size > 1:
        r.notes.append(decode_cp_note(pc.cp_size, fw.cp_replicates_kv_cache, fw.cp_decode_repeats_batch,
                                      fw.cp_decode_shards_kv))
    if previous is not None:
        changed = [k for k in KNOBS if getattr(previous, k) != getattr(pc, k)]
        if changed and online_split is not True:
            r.notes.append(f"{', '.join(changed)} changed: offline-split weights are bound to the old "
                           "parallel_config; re-run weight conversion or set enable_online_split_weight: True")
    elif online_split is False:
        r.notes.append("enable_online_split_weight is False: weights must be converted for this parallel_config")
    return r
