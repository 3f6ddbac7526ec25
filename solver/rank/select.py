"""The seed's Step 4: order candidates (memory feasibility, cross-node risk, expected performance, distance to a
verified config), name their pattern, label trade-offs and explain them with the Step 2 decision tree."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping

from solver.estimate.memory import MemoryReport
from solver.space.domains import cross_node_tp
from solver.plan.solve import Planned
from solver.rank.kv_split import kv_splitters
from solver.rank.ties import SINGLE_RANK, profile_ties
from solver.specs.framework import FrameworkProfile
from solver.specs.hardware import Hardware
from solver.specs.model import ModelSpec
from solver.specs.parallel import KNOBS, ParallelConfig
from solver.specs.reference import Reference
from solver.specs.scenario import PERF_TIE, Scenario

# how the candidates are ordered, stated with every result (the tie band is otherwise invisible)
ORDERING = (f"fitting and in-node first; candidates within {PERF_TIE:.0%} of the best score (the scenario's "
            "weighted log-ratio of request latency and inverse throughput) count as tied and are ordered by "
            "closeness to a verified deployment")


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


def reference_distance(pc: ParallelConfig, model: ModelSpec, hw: Hardware, ref: Reference,
                       ref_model_name: str | None) -> tuple[float, float, list[str]]:
    """(distance, the part of it that is scale, the knobs that differ): knobs that differ (as 1 / W / degree),
    model and hardware mismatch penalties, and a quarter per doubling of the world size away from the
    deployment's."""
    diffs = []
    for k in KNOBS:
        mine = getattr(pc, k)
        theirs = ref.parallel_config.as_dict().get(k, 1)
        if _norm(mine, pc.world_size) != _norm(theirs, ref.world_size):
            diffs.append(f"{k} {mine} vs {theirs}")
    d = float(len(diffs))
    if ref_model_name != model.name:
        d += 2.0
    if ref.hardware != hw.name:
        d += 1.0
    scale = abs(math.log2(pc.world_size) - math.log2(ref.world_size)) * 0.25
    return d + scale, scale, diffs


def closest_reference(pc: ParallelConfig, model: ModelSpec, hw: Hardware, refs: list[Reference],
                      ref_models: dict[str, str]) -> tuple[Reference | None, float, list[str]]:
    """The verified deployment closest to pc, and the distance the ranking orders tied candidates by: the scale
    term counts only for a deployment of this model (the size another model was verified at says nothing of this
    one's, so two candidates as close in knobs to two other models' deployments are ordered by their scores)."""
    best, best_d, best_scale, best_diff = None, math.inf, 0.0, []
    for ref in refs:
        d, scale, diff = reference_distance(pc, model, hw, ref, ref_models.get(ref.id))
        if d < best_d:
            best, best_d, best_scale, best_diff = ref, d, scale, diff
    if best is not None and ref_models.get(best.id) != model.name:
        best_d -= best_scale
    return best, best_d, best_diff


def cross_node(pc: ParallelConfig, hw: Hardware, kvp_in_tp: bool = False) -> bool:
    """TP groups that leave the node (the seed's main communication risk); `kvp_in_tp`: the engine's DCP reuses
    its TP ranks, so the attention TP group is attn_tp x kvp (cross_node_tp)."""
    return bool(cross_node_tp(pc, hw, kvp_in_tp))


def _label(value: float, best: float) -> str:
    if best <= 0:
        return "neutral"
    ratio = value / best
    return "advantage" if ratio <= 1.1 else ("neutral" if ratio <= 1.5 else "risk")


# the knobs whose value the reason credits to the estimate (the shared experts' TP, the vocabulary tables'), which an
# engine's rules may hold instead
TIED_REASON_KNOBS = ("dense_tp_size", "embed_tp_size", "lmhead_tp_size")


# Layer 3's add-ons: the knobs that split attention by sequence, as the reason names them
ADDON_KNOBS = (("cp_size", "CP"), ("kvp_size", "KVP"), ("attn_sp_size", "SP"))
# the seed's Layer 3 (seed 003, Step 2): a sequence up to 4K asks for no add-on
ADDON_FROM_SEQ = 4096


def asks_addon(model: ModelSpec, seq: int) -> bool:
    """Layer 3 asks for an add-on at this maximum sequence: past 4K, on a model with attention whose KV is not
    bounded by a window every layer keeps below the sequence."""
    return (seq > ADDON_FROM_SEQ and model.attention_kind != "none"
            and not (model.kv_window_bound and seq > model.kv_window_bound))


def decision_tree_reason(pc: ParallelConfig, model: ModelSpec, scenario: Scenario, hw: Hardware,
                         mem: MemoryReport | None = None, kvp_in_tp: bool = False,
                         cp_replicates_kv: bool = False, ties: Mapping[str, str] | None = None,
                         refused: Mapping[str, str] | None = None) -> str:
    """Name the seed's Step 2 branches this config follows and where it departs (`mem`: the config's memory at
    its concurrency, for whether memory binds; `kvp_in_tp`: the engine's DCP reuses its TP ranks, so the
    attention choice is said as the engine's TP and its DCP; `cp_replicates_kv`: the engine's CP ranks each keep
    the whole cache, so only KVP splits it; `ties`: knob -> the engine's rules that hold it at its value
    (ties.profile_ties), said as what set it instead of the estimate; `refused`: addon_refusals', why Layer 3's
    add-on is not in the config where the sequence asks for one)."""
    ties = ties or {}
    W = pc.world_size
    lines = []
    if model.is_moe:
        ep = pc.moe_ep_size
        per_rank = pc.expert_slots(model.num_experts) // max(ep, 1)
        lines.append("Layer 1 (MoE backbone): EP and TP compared; chose "
                     + ("EP" if pc.moe_tp_size == 1 else f"TP{pc.moe_tp_size} x EP{ep}")
                     + f" ({per_rank} expert{'' if per_rank == 1 else 's'} per rank"
                     + (f"; {model.num_experts} experts + {pc.redundant_experts} redundant copies, so that EP{ep} "
                        f"divides them: each copy is one more expert's weights on its rank)"
                        if pc.redundant_experts else ")"))
    else:
        # the seed's dense branch: a model one card holds starts from DP, a larger one from TP within the node
        tp = max(pc.attn_tp_group(kvp_in_tp), pc.dense_tp_size)
        held = f"{mem.weights_total / 1e9:.1f} GB of weights per rank" if mem is not None else ""
        parts = []
        if tp > 1:
            parts.append(f"TP{tp} " + ("within the node" if tp <= hw.ranks_per_node else
                                       f"across nodes ({hw.ranks_per_node} per node)"))
        if pc.pp_size > 1:
            parts.append(f"PP{pc.pp_size} (the layers in {pc.pp_size} stages)")
        what = " x ".join(parts) or "DP, every rank holds the whole model"
        lines.append(f"Layer 1 (dense backbone): {what}" + (f", {held}" if held else ""))
    if model.has_dense_module and model.is_moe:
        # the modules dense_tp_size runs here: a MoE stack with shared experts and no dense layer has them alone
        mods = " and ".join(n for n, on in (("dense FFN", model.has_dense_ffn),
                                             ("shared experts", model.num_shared_experts > 0)) if on)
        held = ties.get("dense_tp_size")
        lines.append(f"{mods} TP{pc.dense_tp_size}" if pc.dense_tp_size > 1 and not held else
                     f"{mods} {f'TP{pc.dense_tp_size}' if pc.dense_tp_size > 1 else 'replicated'} (set by {held})"
                     if held else
                     f"{mods} replicated (seed allows TP within the node; the estimate prefers no all-reduce here)")
    if model.has_large_vocab:
        # a replicated table's bytes on the rank as the memory report holds them (its format's, the embedding's
        # share with the per-layer input table where the model has one), else at bf16, the tables' format unless a
        # checkpoint quantizes them (a PP stage's report lacks the module it does not hold)
        ple = model.per_layer_inputs
        held = mem.weights_bytes if mem is not None else {}
        table = model.vocab_size * model.hidden_size
        embed_gb = (held.get("embedding") or (table + (ple.table_params if ple else 0)) * 2) / 1e9
        table_gb = (held.get("lm_head") or table * 2) / 1e9
        memory = (f"although memory binds ({mem.binds_why()})" if mem is not None and mem.binds
                  else "and memory does not bind")
        with_ple = " with the per-layer input table" if ple else ""
        tables = [(f"embed{with_ple}", pc.embed_tp_size), ("lm_head", pc.lmhead_tp_size)]
        if model.tie_word_embeddings and pc.embed_tp_size == pc.lmhead_tp_size == 1:
            tables = [(f"embed and lm_head (one tied table){with_ple}", 1)]  # one copy on the rank, not two
        parts = []
        for (name, degree), knob in zip(tables, ("embed_tp_size", "lmhead_tp_size")):
            gb = embed_gb if name.startswith("embed") else table_gb
            split = f"TP{degree}" if degree > 1 else "replicated"
            held = ties.get(knob) if len(tables) == 2 else (ties.get("embed_tp_size") and ties.get("lmhead_tp_size"))
            # a replicated table's bytes are said whatever set it: what it costs the rank
            size = f"{gb:.1f} GB per rank" if degree == 1 else ""
            by = (f"{size}, {memory}" if held == SINGLE_RANK else f"{size}; set by {held}, {memory}" if size
                  else f"set by {held}")
            parts.append(f"{name} {split} ({by})" if held else f"{name} TP{degree}" if degree > 1 else
                         f"{name} replicated ({gb:.1f} GB per rank: its all-reduce would cost more than "
                         f"the memory it frees, {memory})")
        # the seed sets the tables independently of the backbone; an engine whose rules hold both does not
        held = [bool(ties.get(k)) for k in ("embed_tp_size", "lmhead_tp_size")]
        single = all(ties.get(k) == SINGLE_RANK for k in ("embed_tp_size", "lmhead_tp_size"))
        how = ("one rank holds the tables" if single else "the engine ties the tables" if all(held) else
               "set independently where the engine allows" if any(held) else "set independently")
        lines.append(f"V={model.vocab_size:,} > 100K, {how}: " + ", ".join(parts))
    a = pc.attn_tp_size
    g = pc.attn_tp_group(kvp_in_tp)  # the ranks that split the heads: the engine's TP where DCP reuses them
    if scenario.kind == "throughput":
        expect = "attn_tp=1 (max DP)"
        follows = g == 1
    elif scenario.kind == "latency":
        expect = "small attn_tp (2/4) for MLA, moderate attn_tp for GQA"
        follows = g > 1
    else:
        expect = "between the throughput and latency branches"
        follows = True
    chose = f"TP{g} with DCP{pc.kvp_size} (attn_tp={a} x kvp={pc.kvp_size})" if g != a else f"attn_tp={a}"
    lines.append(f"Layer 2 ({scenario.kind}): seed suggests {expect}; chose {chose}"
                 + ("" if follows else " — departs because the estimate favours it (see estimation)"))
    seq = scenario.max_seq_len
    addon = [n for k, n in ADDON_KNOBS if getattr(pc, k) > 1]
    if model.attention_kind == "none":  # the seed's Layer 3 splits attention by sequence: nothing to split here
        l3 = "no attention layer: a constant state per sequence, no sequence split"
    elif model.kv_window_bound and seq > model.kv_window_bound:
        # the seed's split exists for attention growing with the sequence; a local window caps it
        l3 = (f"every attention layer local (window {model.kv_window_bound:,}): the KV stops growing at the window, "
              "a sequence split only shares the prompt's compute")
    elif seq <= ADDON_FROM_SEQ:
        l3 = "<=4K: no add-on"
    elif seq <= 65536:
        l3 = "4K-64K: check prefill split"
    else:
        l3 = "64K+: +CP, ultra-long decode may add KVP"
    if model.attention_kind != "none" and not model.kv_window_bound:
        # a layer keeping a window beside a cache that grows with the whole sequence (DeepSeek-V4's compressed
        # attention): the window does not bound the KV, so the split by sequence applies as to full attention
        both = sorted({b.label() for b, _ in model.block_groups if getattr(b, "window", None)
                       and b.state(2, 1).grows and b.state(2, 1).window is None})
        if both:
            l3 += f"; {', '.join(both)}: a bounded window beside a cache that grows with the sequence"
    lines.append(f"Layer 3 (max sequence {seq:,}, {l3}): " + (f"+{'/'.join(addon)}" if addon else
                                                               "no add-on" + _no_addon_why(refused or {})))
    if scenario.phase == "decode" and seq > ADDON_FROM_SEQ and pc.attn_tp_size == 1 and pc.kvp_size == 1:
        lines.append(f"CP splits prompts and leaves this decode step unchanged (its ranks decode as attention "
                     f"DP): set cp_size={W} if these ranks also prefill the prompts, as cann-recipes decode "
                     f"configs do")
    if model.has_mla and a > 1:
        # the latent cache is one head: attention TP replicates it, only CP / KVP split it by tokens (KVP alone
        # where the engine's CP ranks keep the whole cache: vLLM's -pcp)
        shards = pc.kvp_size * (1 if cp_replicates_kv else pc.cp_size)
        splitters = kv_splitters(cp_replicates_kv)
        held = ("holds the whole latent KV cache on every TP rank" if shards == 1 else
                f"replicates the latent KV cache over its {a} attention-TP ranks ({splitters} split it {shards} "
                "ways, TP does not)")
        lines.append(f"note: attention TP on an MLA model {held}; the estimate counts that and still ranks it here "
                     "(the seed's common error is choosing it unweighed)")
    return "; ".join(lines)


RANKED_LOWER = "admissible; the planner's estimate ranked it lower at this backbone"


def addon_refusals(pc: ParallelConfig, model: ModelSpec, hw: Hardware, scenario: Scenario, batch: int,
                   fw: FrameworkProfile | None) -> dict[str, str]:
    """Why a config without Layer 3's add-on has none, per add-on the model has (ADDON_KNOBS), keyed by the add-on
    and its degree ("CP2"): the first degree (a divisor of the world, from 2 up) the space and the engine's rules
    admit, which the planner's estimate then ranked lower (RANKED_LOWER); where none is admitted, the smallest
    degree's refusal, by the space (the attention group no longer divides the stage) or by the engine's rules (the
    ids --explain prints for a pattern, explain.rules_broken). KVP is tried inside the same engine TP where the
    engine carves it from its TP ranks (FrameworkProfile.kvp_splits_attention_weights). Empty where the sequence
    asks for no add-on (<= 4K, no attention, every layer windowed) or the config has one."""
    from solver.errors import ShardplanError
    from solver.rank.explain import rules_broken
    from solver.specs.parallel import make_parallel_config, model_knobs

    if not asks_addon(model, scenario.max_seq_len):
        return {}
    if any(getattr(pc, k) > 1 for k, _ in ADDON_KNOBS):
        return {}
    out = {}
    present = model_knobs(model)
    degrees = [d for d in range(2, pc.world_size + 1) if pc.world_size % d == 0]
    for knob, name in ADDON_KNOBS:
        if knob not in present:
            continue
        first = None
        for d in degrees:
            knobs = {**pc.knobs(), knob: d}
            if knob == "kvp_size" and fw is not None and fw.kvp_splits_attention_weights:
                if pc.attn_tp_size % d:
                    first = first or (f"{name}{d}", f"{fw.name} carves it out of the TP{pc.attn_tp_size} ranks, "
                                                    f"which {d} does not divide")
                    continue
                knobs["attn_tp_size"] = pc.attn_tp_size // d  # the engine's DCP is carved out of its TP ranks
            try:
                v = make_parallel_config(pc.world_size, **knobs)
            except ShardplanError as exc:
                first = first or (f"{name}{d}", getattr(exc, "problem", str(exc)))
                continue
            broken = rules_broken(model, hw, fw, scenario, v, batch) if fw is not None else []
            if not broken:
                first = (f"{name}{d}", RANKED_LOWER)
                break
            first = first or (f"{name}{d}", f"{fw.name}'s rules refuse it ({', '.join(dict.fromkeys(broken))})")
        if first:
            out[first[0]] = first[1]
    return out


def _no_addon_why(refused: Mapping[str, str]) -> str:
    """The clause after "no add-on": each add-on and why not, one reason said once for all it covers."""
    if not refused:
        return ""
    by: dict[str, list[str]] = {}
    for label, why in refused.items():
        by.setdefault(why, []).append(label)
    return " (" + "; ".join(f"{'/'.join(labels)}: {why}" for why, labels in by.items()) + ")"


def adoption_note(ref_id: str, behind: float) -> str:
    """Why a verified deployment is a candidate, and whether the tie band adopts it (`behind`: its score minus
    the best, the log-ratio of ORDERING)."""
    head = (f"the verified deployment {ref_id} of this model, hardware, world size and phase (the seed adopts "
            "validated values that fit in memory with TP inside the node)")
    if behind <= math.log(1 + PERF_TIE):
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
                    fw: FrameworkProfile | None = None) -> list[Candidate]:
    """The candidates in the seed's order (ORDERING), one per pattern (the first of a pattern in that order
    stays), the first `top` of them (`kvp_in_tp`: pattern_name's; `cp_replicates_kv`: decision_tree_reason's;
    `fw`: the engine whose rules may hold a knob the reason would otherwise credit to the estimate)."""
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
        perf_bucket = 0 if score <= best_score + math.log(1 + PERF_TIE) else 1
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
    out = []
    for i, (p, score, ref, dist, diff, xnode, lat_p, inv_p) in enumerate(_shown(kept, top)):
        e = p.estimate
        mem = e.memory
        long_ctx = ("advantage" if (p.config.cp_size * p.config.kvp_size * p.config.attn_sp_size > 1
                                    or mem.kv_share_of_available < 0.25)
                    else "risk" if mem.kv_share_of_available > 0.5 else "neutral")
        comparative = i == 0 and dist >= 4 and score <= best_score + math.log(1 + PERF_TIE)
        ties = (profile_ties(fw, model, hw, p.config, TIED_REASON_KNOBS, p.batch, scenario.mtp)
                if fw is not None else None)
        refused = addon_refusals(p.config, model, hw, scenario, p.batch, fw)
        reason = decision_tree_reason(p.config, model, scenario, hw, mem, kvp_in_tp, cp_replicates_kv, ties, refused)
        if p.verified is not None:
            reason = f"{adoption_note(p.verified, score - best_score)}; {reason}"
        out.append(Candidate(
            rank=i + 1, planned=p, pattern=pattern_name(p.config, model, kvp_in_tp),
            reason=reason,
            reference=(ref.id if ref else "none"), reference_diff=diff,
            reference_deployment=ref,
            tradeoff={"throughput": _label(inv_p, min(inv)), "latency": _label(lat_p, min(lat)),
                      "long_context": long_ctx},
            cross_node=xnode, comparative_testing=comparative,
        ))
    return out
