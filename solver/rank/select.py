"""The seed's Step 4: order candidates (memory feasibility, cross-node risk, expected performance, distance to a
verified config), name their pattern, label trade-offs and explain them with the Step 2 decision tree."""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import partial

from solver.estimate.compute import factors_for
from solver.space.domains import cross_node_tp
from solver.plan.solve import Planned
from solver.rank.reason import tradeoff_label, TIED_REASON_KNOBS, decision_tree_reason, addon_refusals
from solver.rank.ties import profile_ties
from solver.specs.framework import FrameworkProfile
from solver.specs.hardware import Hardware
from solver.specs.model import ModelSpec
from solver.specs.parallel import KNOBS, ParallelConfig
from solver.specs.precision import Precision
from solver.specs.reference import Reference
from solver.specs.scenario import PERF_TIE, TIE_SCORE, Scenario

# how the candidates are ordered, stated with every result (the tie band is otherwise invisible)
ORDERING = (f"fitting and in-node first; candidates within {PERF_TIE:.0%} of the best score (the scenario's "
            "weighted log-ratio of request latency and inverse throughput) count as tied and are ordered by "
            "closeness to a verified deployment")
CORE_FIRST = "core candidates (planned whatever --top asks) first; among them and among the rest, "


def core_ahead(keys: list[tuple]) -> set[int]:
    """The positions, in an order by `keys` (each led by `not core`, as rank_candidates' order), of the core
    candidates standing ahead of a later one that is not core which the rest of the key would put ahead."""
    return {i for i, k in enumerate(keys) for later in keys[i + 1:]
            if not k[0] and later[0] and later[1:] < k[1:]}


def ordering(candidates: list["Candidate"]) -> str:
    """ORDERING, led by the core candidates' precedence where that is what put one candidate ahead of another
    (Candidate.core_first): said elsewhere, it would name a key that ordered nothing."""
    return (CORE_FIRST + ORDERING) if any(c.core_first for c in candidates) else ORDERING


@dataclass
class Candidate:
    rank: int
    planned: Planned
    pattern: str
    reason: str
    reference: str
    reference_diff: list[str]
    tradeoff: dict[str, str]
    cross_node: bool
    comparative_testing: bool
    # the closest verified deployment itself (None: none): it can be another model's, on other hardware
    reference_deployment: Reference | None = None
    # the distance the ranking orders tied candidates by (closest_reference), and its terms in words
    reference_distance: float = math.inf
    reference_terms: tuple[str, ...] = ()
    # a core candidate standing ahead of a shown one that is not, which the rest of the order puts ahead of it
    core_first: bool = False


def pattern_name(pc: ParallelConfig, model: ModelSpec, kvp_in_tp: bool = False) -> str:
    """The seed's pattern name. `kvp_in_tp`: the engine carves its KVP group out of its TP ranks
    (FrameworkProfile.kvp_splits_attention_weights: vLLM / SGLang / ATOM -dcp), so attention runs at TP attn_tp x kvp
    with decode context parallel inside it, named so (TP8 -dcp 4 is "Attn TP8 + DCP4", not a DP of 4)."""
    if pc.pp_size > 1:  # the pattern of one stage, then the stages
        return f"{pattern_name(pc.stage(), model, kvp_in_tp)} x PP{pc.pp_size}"
    W = pc.world_size
    if W == 1:  # one rank (or one per stage): nothing is split or replicated
        return "Single rank"
    # dense_tp_size runs the dense FFN and the shared experts: a model with either has the module
    dense = model.has_dense_module
    tps = [pc.attn_tp_size, pc.dense_tp_size if dense else pc.attn_tp_size,
           pc.moe_tp_size if model.is_moe else pc.attn_tp_size]
    if W > 1 and all(t == W for t in tps) and pc.cp_size == pc.kvp_size == pc.attn_sp_size == 1:
        return f"Pure TP{W}"
    parts = []
    a = pc.attn_tp_group(kvp_in_tp)
    # attn_tp_size splits the token mixer: in a stack without attention (a pure SSM) it is named as the mixer
    mixer = "Attn" if model.attention_kind != "none" else "Mixer"
    # the DP of attention TP > 1 counts its replicas: the ranks left over by TP and every add-on (CP, KVP, SP),
    # so -tp 2 -pcp 4 on 8 is one replica, "Attn TP2 + CP4" (a == 1 keeps the seed's "Attn DP + CP")
    dp = W // pc.attn_group_size
    parts.append(f"{mixer} DP" if a == 1 else (f"{mixer} TP{a}" if dp == 1 else f"{mixer} TP{a} x DP{dp}"))
    if pc.cp_size > 1:
        parts.append(f"CP{pc.cp_size}")
    if pc.kvp_size > 1:
        parts.append(f"{'DCP' if a != pc.attn_tp_size else 'KVP'}{pc.kvp_size}")
    if pc.attn_sp_size > 1:
        parts.append(f"SP{pc.attn_sp_size}")
    if dense and pc.dense_tp_size > 1:
        parts.append(f"Dense TP{pc.dense_tp_size}")
    if model.is_moe:
        t = pc.moe_tp_size
        parts.append("MoE EP" if t == 1 else (f"MoE TP{t}" if t == W else f"MoE TP{t} x EP{W // t}"))
    if model.has_mla and pc.o_proj_tp_size > 1 and pc.o_proj_tp_size != a:
        parts.append(f"O_proj TP{pc.o_proj_tp_size}")
    return " + ".join(parts)


def _norm(value: int, world: int) -> str:
    return "1" if value == 1 else ("W" if value == world else str(value))


# the weights of reference_distance past one per differing knob: a deployment of another model, on other hardware,
# and per doubling of the world size away from the deployment's
OTHER_MODEL_DISTANCE = 2.0
OTHER_HARDWARE_DISTANCE = 1.0
DISTANCE_PER_DOUBLING = 0.25
# an attention-FFN disaggregated deployment (Reference.afd) against a candidate that is not, or the reverse: another
# deployment shape (half the ranks attention, half FFN), weighed as one knob that differs
AFD_DISTANCE = 1.0


def _scale_distance(pc: ParallelConfig, ref: Reference) -> float:
    return abs(math.log2(pc.world_size) - math.log2(ref.world_size)) * DISTANCE_PER_DOUBLING


def reference_distance(pc: ParallelConfig, model: ModelSpec, hw: Hardware, ref: Reference,
                       ref_model_name: str | None, afd: bool = False) -> tuple[float, float, list[str]]:
    """(distance, the part of it that is scale, the knobs that differ): knobs that differ (as 1 / W / degree),
    model and hardware mismatch penalties, AFD on one side and off the other (`afd`: whether pc is attention-FFN
    disaggregated; the planner's candidates are not), and a quarter per doubling of the world size away from the
    deployment's."""
    diffs = []
    for k in KNOBS:
        mine = getattr(pc, k)
        theirs = ref.parallel_config.as_dict().get(k, 1)
        if _norm(mine, pc.world_size) != _norm(theirs, ref.world_size):
            # one degree on two world sizes differs as a share of the world (16 of 32 against all 16): say so
            diffs.append(f"{k} {mine} vs {theirs}" if mine != theirs else
                         f"{k} {mine} of {pc.world_size} ranks vs {theirs} of {ref.world_size}")
    d = float(len(diffs))
    if ref_model_name != model.name:
        d += OTHER_MODEL_DISTANCE
    if ref.hardware != hw.name:
        d += OTHER_HARDWARE_DISTANCE
    if ref.afd != afd:
        d += AFD_DISTANCE
    scale = _scale_distance(pc, ref)
    return d + scale, scale, diffs


def knobs_differ(n: int) -> str:
    """How far a configuration is from its verified deployment, in words that agree with the count."""
    return "same knobs" if n == 0 else ("1 knob differs" if n == 1 else f"{n} knobs differ")


def distance_terms(pc: ParallelConfig, model: ModelSpec, hw: Hardware, ref: Reference, ref_model_name: str | None,
                   diffs: list[str], afd: bool = False) -> tuple[str, ...]:
    """The terms of closest_reference's distance in words, each with its weight (reference_distance): a reader
    comparing two candidates' references sees why 2 knobs apart can be closer than 1 (the other is another
    model's)."""
    n = len(diffs)
    terms = [knobs_differ(n) + (f" (+{n})" if n else "")]
    if ref_model_name != model.name:
        terms.append(f"{ref.model_name} (another model, +{OTHER_MODEL_DISTANCE:g})")
    if ref.hardware != hw.name:
        terms.append(f"{ref.hardware} (other hardware, +{OTHER_HARDWARE_DISTANCE:g})")
    if ref.afd != afd:
        shape = "attention-FFN disaggregated vs not" if ref.afd else "not attention-FFN disaggregated vs disaggregated"
        terms.append(f"{shape} (+{AFD_DISTANCE:g})")
    if ref_model_name == model.name and ref.world_size != pc.world_size:
        terms.append(f"{ref.world_size} ranks vs {pc.world_size} (+{_scale_distance(pc, ref):.2f})")
    return tuple(terms)


def closest_reference(pc: ParallelConfig, model: ModelSpec, hw: Hardware, refs: list[Reference],
                      ref_models: dict[str, str], afd: bool = False) -> tuple[Reference | None, float, list[str]]:
    """The verified deployment closest to pc (`afd`: attention-FFN disaggregated), and the distance the ranking
    orders tied candidates by: the scale term counts only for a deployment of this model (the size another model
    was verified at says nothing of this one's, so two candidates as close in knobs to two other models'
    deployments are ordered by their scores)."""
    best, best_d, best_scale, best_diff = None, math.inf, 0.0, []
    for ref in refs:
        d, scale, diff = reference_distance(pc, model, hw, ref, ref_models.get(ref.id), afd)
        if d < best_d:
            best, best_d, best_scale, best_diff = ref, d, scale, diff
    if best is not None and ref_models.get(best.id) != model.name:
        best_d -= best_scale
    return best, best_d, best_diff


def cross_node(pc: ParallelConfig, hw: Hardware, kvp_in_tp: bool = False) -> bool:
    """TP groups that leave the node (the seed's main communication risk); `kvp_in_tp`: the engine's DCP reuses
    its TP ranks, so the attention TP group is attn_tp x kvp (cross_node_tp)."""
    return bool(cross_node_tp(pc, hw, kvp_in_tp))


def adoption_note(ref_id: str, behind: float) -> str:
    """Why a verified deployment is a candidate, and whether the tie band adopts it (`behind`: its score minus
    the best, the log-ratio of ORDERING)."""
    head = (f"the verified deployment {ref_id} of this model, hardware, world size and phase (the seed adopts "
            "validated values that fit in memory with TP inside the node)")
    if behind <= TIE_SCORE:
        return f"{head}: within {PERF_TIE:.0%} of the best score, so adopted ahead of what the planner derived"
    return f"{head}: {math.exp(behind) - 1:.0%} behind the best score by the estimate"


# roles the planner plans so that they are seen (plan.solve): the best score (the objective's optimum), the best on
# another attention backbone (the seed asks that backbones be compared) and the verified deployment it admits (the
# seed prefers adopting one)
SHOWN_ROLES = ("best score", "other backbone", "verified deployment")


def _shown(rows: list, top: int) -> list:
    """The first `top` rows in the ranking's order, except that a candidate of a role that is planned to be seen
    (SHOWN_ROLES) ranked below them takes the place of the last one of no such role after the first: the core
    candidates planned beyond --top (entry.run_solve plans at least CORE_CANDIDATES) compete for the places, they
    do not push those out."""
    head, tail = list(rows[:top]), rows[top:]
    for r in tail:
        if r[0].role not in SHOWN_ROLES:
            continue
        free = [i for i in range(len(head) - 1, 0, -1) if head[i][0].role not in SHOWN_ROLES]
        if not free:
            break
        del head[free[0]]
        head.append(r)
    return head


def rank_candidates(planned: list[Planned], model: ModelSpec, hw: Hardware, scenario: Scenario,
                    refs: list[Reference], ref_models: dict[str, str], top: int | None = None,
                    kvp_in_tp: bool = False, cp_replicates_kv: bool = False,
                    fw: FrameworkProfile | None = None, prec: Precision | None = None) -> list[Candidate]:
    """The candidates in the seed's order (ORDERING), one per pattern (the first of a pattern in that order
    stays), the first `top` of them (`kvp_in_tp`: pattern_name's; `cp_replicates_kv`: decision_tree_reason's;
    `fw`: the engine whose rules may hold a knob the reason would otherwise credit to the estimate; `fw` and
    `prec`, the planned precision: a departure from the seed's Layer 2 is priced, explain.seed_value_priced)."""
    from solver.rank.explain import seed_value_priced  # explain names patterns by this module

    if not planned:
        return []
    # the full serving estimate each candidate shows, not the planner's additive proxy: the proxy leaves out
    # the serving dynamics (scheduler budget per replica, queueing), so two configurations it ties (DP and CP
    # at equal per-rank work) can differ here by 15% in throughput
    lat = [max(scenario.request_latency(p.estimate.ttft_s, p.estimate.tpot_s), 1e-12) for p in planned]
    inv = [1.0 / max(p.estimate.output_tokens_per_s_per_rank, 1e-12) for p in planned]
    rows = []
    for p, lat_p, inv_p in zip(planned, lat, inv):
        # the planner's weighted log-ratio (plan.solve): a 3% tie means 3% in the weighted geometric mean of
        # latency and inverse throughput, whichever candidate is the reference
        score = scenario.score(lat_p, inv_p, min(lat), min(inv))
        ref, dist, diff = closest_reference(p.config, model, hw, refs, ref_models)
        rows.append((p, score, ref, dist, diff, cross_node(p.config, hw, kvp_in_tp), lat_p, inv_p))
    best_score = min(r[1] for r in rows)

    def order(r):
        p, score, _, dist, _, xnode, _, _ = r
        perf_bucket = 0 if score <= best_score + TIE_SCORE else 1
        # the core candidates first (plan.solve.CORE_CANDIDATES: planned whatever --top asks), so the first
        # candidate does not depend on how many are shown
        return (not p.core, not p.estimate.memory.feasible, xnode, perf_bucket, score if perf_bucket else 0.0,
                dist, score)

    rows.sort(key=order)
    # a verified deployment offered beside the planner's pick of the same pattern: the first of the two stays
    kept, shown = [], {}
    for r in rows:
        name, verified = pattern_name(r[0].config, model, kvp_in_tp), r[0].verified is not None
        if name in shown and (verified or shown[name]):
            continue
        shown.setdefault(name, verified)
        kept.append(r)
    # the factors the planner estimated with (plan.solve), for pricing the seed's values beside the candidates
    factors = factors_for(hw, fw.efficiency_for(hw)) if fw is not None and prec is not None else None
    out = []
    shown_rows = _shown(kept, top)
    core_first = core_ahead([order(r) for r in shown_rows])
    for i, (p, score, ref, dist, diff, xnode, lat_p, inv_p) in enumerate(shown_rows):
        e = p.estimate
        mem = e.memory
        long_ctx = ("advantage" if (p.config.cp_size * p.config.kvp_size * p.config.attn_sp_size > 1
                                    or mem.kv_share_of_available < 0.25)
                    else "risk" if mem.kv_share_of_available > 0.5 else "neutral")
        comparative = i == 0 and dist >= 4 and score <= best_score + TIE_SCORE
        ties = (profile_ties(fw, model, hw, p.config, TIED_REASON_KNOBS, p.batch, scenario.mtp)
                if fw is not None else None)
        refused = addon_refusals(p.config, model, hw, scenario, p.batch, fw)
        # the seed's values this candidate departs from, priced at its backbone and concurrency
        price = (partial(seed_value_priced, model, hw, fw, prec, factors, scenario, p.estimate, p.batch, role=p.role)
                 if factors is not None else None)
        reason = decision_tree_reason(p.config, model, scenario, hw, mem, kvp_in_tp, cp_replicates_kv, ties, refused,
                                      price)
        if p.verified is not None:
            reason = f"{adoption_note(p.verified, score - best_score)}; {reason}"
        out.append(Candidate(
            rank=i + 1, planned=p, pattern=pattern_name(p.config, model, kvp_in_tp),
            reason=reason,
            reference=(ref.id if ref else "none"), reference_diff=diff,
            reference_deployment=ref, reference_distance=dist,
            reference_terms=(distance_terms(p.config, model, hw, ref, ref_models.get(ref.id), diff) if ref else ()),
            tradeoff={"throughput": tradeoff_label(inv_p, min(inv)), "latency": tradeoff_label(lat_p, min(lat)),
                      "long_context": long_ctx},
            cross_node=xnode, comparative_testing=comparative, core_first=i in core_first,
        ))
    return out
