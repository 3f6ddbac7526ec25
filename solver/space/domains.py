"""The search space: for each knob, the values it may take, and the batch values the planner may pick.

A knob's domain is the divisors of the world size that pass its own rules (class A, one knob at a time) and
the hardware's hard limits; rules that tie several knobs together are constraints in plan/.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from solver.specs.framework import DP_MAJOR, STAGE_MAJOR, FrameworkProfile
from solver.specs.hardware import Hardware
from solver.specs.model import ModelSpec
from solver.specs.model_rules import ffn_widths, kv_sharing_split
from solver.specs.parallel import KNOBS, ParallelConfig, model_knobs, smallest_redundant
from solver.specs.scenario import Scenario

# every knob that sizes a tensor-parallel group (o_proj's own TP under attention DP included)
TP_KNOBS = ("attn_tp_size", "dense_tp_size", "moe_tp_size", "embed_tp_size", "lmhead_tp_size", "o_proj_tp_size")


def tp_domain(hw: Hardware) -> int:
    """Largest TP group that stays on the fast fabric: the node, or the whole scale-up domain when that
    fabric runs at the node's bandwidth (NVL72 racks, the CloudMatrix384 UB domain)."""
    up = hw.tiers.get("scale_up")
    if up is not None and up.bandwidth_Bps >= hw.tiers["intra_node"].bandwidth_Bps:
        return hw.scale_up_domain
    return hw.ranks_per_node


def largest_tp(world: int, hw: Hardware, model: ModelSpec) -> int:
    """The largest attention TP the planner could pick: divides W and the heads, inside tp_domain."""
    return max(d for d in divisors(world) if d <= tp_domain(hw) and model.num_attention_heads % d == 0)


def cross_node_tp(pc: ParallelConfig, hw: Hardware, kvp_in_tp: bool = False) -> dict[str, int]:
    """TP groups wider than tp_domain, by knob (seed class B: tp_size <= ranks per node); the planner prunes
    them unless --allow-cross-node, `check` reports them, the ranking marks them as a risk. `kvp_in_tp`: the
    engine's DCP reuses its TP ranks, so the attention TP group is attn_tp x kvp (TP16 -dcp 16 on two 8-GPU nodes
    all-reduces o_proj and merges the DCP partials across them although attn_tp_size is 1)."""
    dom = tp_domain(hw)
    out = {k: getattr(pc, k) for k in TP_KNOBS if getattr(pc, k) > dom}
    group = pc.attn_tp_group(kvp_in_tp)
    if group != pc.attn_tp_size and group > dom:
        out.pop("attn_tp_size", None)
        out["attn_tp_size x kvp_size"] = group
    return out


def node_counts(ranks: int, ranks_per_node: int) -> list[int]:
    """Ranks on each node as the planner places them: nodes filled in rank order (rank r on node
    r // ranks_per_node), the last one part-filled where the ranks do not fill it (12 on 8-GPU nodes: 8 and 4).
    straddling_group checks groups against this order; the launch prints it."""
    return [min(ranks_per_node, ranks - start) for start in range(0, ranks, ranks_per_node)]


def straddling_group(world: int, size: int, hw: Hardware) -> tuple[int, int] | None:
    """Seed class B under the ranks' placement (rank r on node r // ranks_per_node, nodes filled in order, the
    last one part-filled: 12 ranks on 8-GPU nodes are 0-7 and 8-11), the first group of `size` consecutive ranks,
    smaller than the fast-fabric domain (tp_domain), that still spans two domains, as (first rank, last rank);
    None when every group stays inside one. Groups as wide as the domain or wider are cross_node_tp's."""
    dom = tp_domain(hw)
    if world <= dom or size >= dom or dom % size == 0:
        return None
    first = next((g * size for g in range(world // size) if g * size // dom != ((g + 1) * size - 1) // dom), None)
    return None if first is None else (first, first + size - 1)


def redundant_for(model: ModelSpec, fw: FrameworkProfile, ep: int) -> int | None:
    """Redundant experts the planner places at this EP size: the profile's fixed count, else the fewest that
    make EP divide the expert slots when the engine has the feature, else 0 (EP must divide the experts).
    None: this EP cannot hold the experts under the profile."""
    if not model.is_moe or ep <= 1:
        return 0
    E = model.num_experts
    # an engine that refuses copies for this model (Feature.refused_model_types) holds E over EP as it is
    if not fw.copies_experts(model.model_type):
        return 0 if E % ep == 0 else None
    if fw.fixed_redundant_experts is not None:
        return fw.fixed_redundant_experts if (E + fw.fixed_redundant_experts) % ep == 0 else None
    r = smallest_redundant(E, ep)
    # copies past one per expert are placed round-robin by the engines as any others (vLLM eplb_state
    # build_initial_global_physical_to_logical_map: i % num_routed_experts), so only the engine's own cap bounds them
    cap = fw.feature_max("redundant_experts")
    return r if cap is None or r <= cap else None


def pp_fits_nodes(world: int, pp: int, hw: Hardware, order: str = STAGE_MAJOR, engine: int | None = None) -> bool:
    """Seed class B for PP: each stage's run of consecutive ranks is whole nodes, or a part of one node that tiles
    it (TP inside the node, PP across nodes, the intended use). Which ranks are consecutive is the engine's rank
    order (FrameworkProfile.rank_order, estimate.stage_ranks): stage-major, the stage's world / pp ranks;
    dp-major (vLLM), each DP engine's share of the stage, its `engine` = attention group ranks (the next engine's
    sit pp x engine further on): TP2 x PP3 x DP2 on 2 x 6 H100 is two engines of 6 ranks, one a node, each
    stage 2 ranks inside it. `engine` None: the rule on the pp value alone, which under dp-major one rank per
    engine always meets (the attention layouts apply it with their group: plan.table_build.attention_tuples)."""
    stage, rpn = stage_run(world, pp, order, engine), hw.ranks_per_node
    return stage % rpn == 0 or rpn % stage == 0


def stage_run(world: int, pp: int, order: str = STAGE_MAJOR, engine: int | None = None) -> int:
    """The consecutive ranks of one pipeline stage the node and domain rules judge (pp_fits_nodes): the stage's
    world / pp under a stage-major rank order; under dp-major one DP engine's share, its `engine` ranks (one rank
    where None: the pp value alone)."""
    stage = world // pp
    return min(stage, engine or 1) if order == DP_MAJOR and pp > 1 else stage


def pp_fits_domains(world: int, pp: int, hw: Hardware, order: str = STAGE_MAJOR, engine: int | None = None) -> bool:
    """Seed class B for PP at the scale-up domain, as pp_fits_nodes at the node: where the world spans several
    fast-fabric domains (tp_domain: two NVL72 racks), each stage is whole domains or a part of one that tiles
    it. A stage of 16 on 144 GB200 ranks is whole trays, but the fifth (ranks 64-79) sits half in each rack:
    its EP all-to-all would cross the scale-out NICs, which the estimate, pricing a 16-rank group inside the
    domain, does not charge. `order`, `engine`: which ranks a stage's run is, as pp_fits_nodes."""
    stage, dom = stage_run(world, pp, order, engine), tp_domain(hw)
    return world <= dom or stage % dom == 0 or dom % stage == 0


def divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


@dataclass(frozen=True)
class Pruned:
    """A value removed from a knob's domain, and the rule that removed it (traceable in the output)."""

    knob: str
    value: int
    rule: str


@dataclass(frozen=True)
class Space:
    world: int
    domains: dict[str, tuple[int, ...]]
    batches: tuple[int, ...]
    pruned: tuple[Pruned, ...] = field(default=())


def _batch_values(scenario: Scenario, world: int, fw: FrameworkProfile | None = None) -> tuple[int, ...]:
    if scenario.concurrency is not None:
        return (scenario.concurrency,)
    if scenario.phase == "prefill":
        # one step of prompts, the batch the prompts it holds (a batch below a layout's replica count leaves the
        # others idle: estimate.figures.step_plan); the batches are the replica counts a configuration can have,
        # the divisors of the world, so each layout is planned at one prompt per replica too, and an engine that
        # wants the batch divisible by its DP (C.batch_divisible_attn_dp) finds its DP configurations there
        return tuple(divisors(world))
    # powers of two from one request per rank's worth up to the cap (the largest that fits is not always best)
    values, b = [], 1
    while b <= scenario.max_concurrency:
        values.append(b)
        b *= 2
    if scenario.phase == "serving" and values[-1] < scenario.max_concurrency:
        # a cap the user gave between two powers (--max-concurrency 1000) is tried itself: at 512 alone the plan
        # stops short of the load the user named. (A disaggregated decode pool, phase "decode", keeps the powers:
        # its buckets of a fixed concurrency are the intervals between them, plan.disagg._concurrency.)
        values.append(scenario.max_concurrency)
    odd = world // (world & -world)
    if odd > 1 and fw is not None and fw.batch_rules:
        # an engine that wants the batch divisible by its attention DP size finds no power of two that a DP of
        # odd size divides (48 cards: DP 48, 24, 12, 6, 3); each such size divides the powers of two times the
        # world's odd part, so those are tried too (a world of whole powers of two keeps the powers alone)
        b = odd
        while b <= scenario.max_concurrency:
            values.append(b)
            b *= 2
        values = sorted(set(values))
    return tuple(values)


def capped_concurrency(scenario: Scenario) -> int | None:
    """The largest concurrency the planner tries when --max-concurrency, not the scenario, ends the range (the
    planner picks the concurrency and a larger one could be tried); None when the scenario fixes it."""
    values = _batch_values(scenario, 1)
    return values[-1] if scenario.concurrency is None and scenario.phase != "prefill" else None


def range_note(concurrency: int, scenario: Scenario, what: str = "the best score",
               gain: str = "a larger one may do better", more: Callable[[int], bool] | None = None) -> str | None:
    """One line when `concurrency` (an answer's) is the top of the range --max-concurrency cut, else None: the
    planner tried nothing larger, so a larger concurrency may do better (throughput grows with it until memory,
    the KV cache or an SLA stops it). `more(top)`: whether the answer's configuration runs a larger count up to
    the cap (an engine's batch rule, plan.sla_edge.runs_more; None: it does); where not, its concurrency is the top
    of the range for it."""
    top = capped_concurrency(scenario)
    if top is None or (concurrency < top and (more is None or more(top))):
        return None
    if concurrency < top:
        return (f"{what} is at the most requests its configuration runs up to --max-concurrency "
                f"{scenario.max_concurrency:,}, {concurrency:,} (the engine's batch rules run no larger count "
                f"there): {gain}; raise --max-concurrency to try it")
    return (f"{what} is at the largest concurrency tried, {top:,} (--max-concurrency {scenario.max_concurrency:,}): "
            f"{gain}; raise --max-concurrency to try it")


NOT_IN_SPACE = ""  # a knob the framework does not expose or the model lacks: silently 1, no rule to name


def knob_rule(model: ModelSpec, hw: Hardware, fw: FrameworkProfile, world: int, scenario: Scenario,
              allow_cross_node: bool, knob: str, value: int, engine: int | None = None) -> str | None:
    """The one home of the rules that bound one knob's value alone (class A divisibility, class B hardware
    limits, the scenario's): the rule id `value` breaks, NOT_IN_SPACE, or None when it is allowed. The space,
    `--explain` and the remedies all ask here. `engine`: a whole configuration's attention group size, which
    B.pp_stage_whole_nodes reads under a dp-major rank order (pp_fits_nodes)."""
    if knob not in fw.knobs and value != 1:
        return NOT_IN_SPACE  # the framework exposes only some knobs; the others stay at 1
    if knob not in model_knobs(model) and value != 1:
        # no knob for a module the model lacks (its rules treat it as free); o_proj outside MLA models follows
        # attention TP, spelled 1 (ParallelConfig.oproj_shards)
        return NOT_IN_SPACE
    if knob == "attn_tp_size":
        if model.num_attention_heads % value:
            return "A.heads_divisible_attn_tp"
        if fw.splits_kv_heads and model.num_key_value_heads % value:
            return "A.kv_heads_divisible_attn_tp"
    if knob == "moe_tp_size" and not any(redundant_for(model, fw, world // p // value) is not None
                                         for p in (divisors(world) if "pp_size" in fw.knobs else [1])
                                         if (world // p) % value == 0):
        return "A.experts_divisible_moe_ep"
    if knob == "o_proj_tp_size" and model.o_proj_dim % value:
        return "A.o_proj_dim_divisible"
    if any(width % value for _, width in ffn_widths(model, knob)):
        return "A.ffn_width_divisible_tp"
    if value != 1 and (refused := fw.refusing_feature(knob, model.model_type)):
        return f"C.{refused}_model_type_refused"
    if knob == "pp_size" and value > 1:
        if value > model.num_layers // model.stage_unit:
            return "A.pp_at_most_layers"
        if kv_sharing_split(model, value):
            return "A.pp_keeps_kv_sharing_groups"
        if not pp_fits_nodes(world, value, hw, fw.rank_order, engine):
            return "B.pp_stage_whole_nodes"
        if not pp_fits_domains(world, value, hw, fw.rank_order, engine):
            return "B.pp_stage_whole_domains"
    if knob == "cp_size" and value != 1 and cp_is_renamed(scenario):
        return "scenario.cp_splits_prefill_only"
    if knob in TP_KNOBS and not allow_cross_node and value > tp_domain(hw):
        return "B.tp_within_node"  # seed class B: tp_size <= cards per node (cross-node TP degrades sharply)
    if knob in TP_KNOBS and straddling_group(world, value, hw):
        # a group inside the node's size that the placement still splits across two nodes: its collectives run
        # at the scale-out tier, which the estimate prices at the node's (a group that size is "in the node")
        return "B.tp_groups_tile_nodes"
    if knob == "moe_tp_size" and hw.max_experts_per_rank and model.is_moe and world // value > 1:
        # the cap belongs to the EP dispatch path; without EP there is no dispatch. Redundant copies are
        # experts the rank holds and dispatches to: the cap counts them
        per_rank = (model.num_experts + (redundant_for(model, fw, world // value) or 0)) / (world // value)
        if per_rank > hw.max_experts_per_rank:
            return "B.max_experts_per_rank"
    return None


def cp_is_renamed(scenario: Scenario) -> bool:
    """CP splits prompts; its ranks decode as attention DP (estimate.step_parts.decode_layout), so in a decode-only
    scenario every cp value is the cp = 1 configuration under another name (the rule
    scenario.cp_splits_prefill_only, and `space_name`)."""
    return scenario.phase == "decode"


def space_name(knobs: dict[str, int], scenario: Scenario) -> dict[str, int]:
    """The knobs the space holds this configuration under: cp = 1 where CP is renamed (cp_is_renamed)."""
    if knobs.get("cp_size", 1) != 1 and cp_is_renamed(scenario):
        return {**knobs, "cp_size": 1}
    return dict(knobs)


def config_violations(model: ModelSpec, hw: Hardware, fw: FrameworkProfile, pc: ParallelConfig,
                      scenario: Scenario, allow_cross_node: bool = False) -> list[str]:
    """The one-knob rules (knob_rule) a whole configuration breaks, by rule id."""
    out = []
    for knob in KNOBS:
        rule = knob_rule(model, hw, fw, pc.world_size, scenario, allow_cross_node, knob, getattr(pc, knob),
                         pc.attn_group_size)
        if rule:
            out.append(rule)
    return out


def build_space(model: ModelSpec, hw: Hardware, fw: FrameworkProfile, world: int, scenario: Scenario,
                allow_cross_node: bool = False) -> Space:
    pruned: list[Pruned] = []
    divs = divisors(world)
    domains: dict[str, tuple[int, ...]] = {}

    def keep(knob: str, value: int) -> bool:
        rule = knob_rule(model, hw, fw, world, scenario, allow_cross_node, knob, value)
        if rule:
            pruned.append(Pruned(knob, value, rule))
        return rule is None

    for knob in KNOBS:
        values = tuple(v for v in divs if keep(knob, v))
        domains[knob] = values
    return Space(world, domains, _batch_values(scenario, world, fw), tuple(pruned))
