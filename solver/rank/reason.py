"""The reason line of a candidate: the seed's Step 2 decision tree (Layer 1 backbone, Layer 2 attention for the
scenario, Layer 3 the add-ons a long sequence asks for), the branches a configuration follows and where it departs,
and why Layer 3's add-on is not in it where the sequence asks for one."""
from __future__ import annotations

from typing import Callable, Mapping

from solver.specs.dtypes import KV16
from solver.estimate.memory import MemoryReport
from solver.rank.cell import apart
from solver.rank.kv_split import kv_splitters
from solver.rank.ties import SINGLE_RANK
from solver.specs.framework import FrameworkProfile
from solver.specs.hardware import Hardware
from solver.specs.model import ModelSpec
from solver.specs.parallel import ParallelConfig
from solver.specs.scenario import Scenario


def tradeoff_label(value: float, best: float) -> str:
    """A trade-off figure against the best: advantage within 10%, neutral within 50%, else risk."""
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
# past 64K the seed's Layer 3 adds CP, and an ultra-long decode may stack KVP (quick reference: "Ultra-long
# Sequence: Add KVP, +kvp_size, oproj_tp=kvp_size")
ULTRA_LONG_FROM_SEQ = 65536


# the weight modules a rank holds at attention TP (weights_bytes keys), and those an engine's rule may tie to it,
# with the knob that splits them
ATTENTION_MODULES = ("attention", "o_proj")
TIED_MODULES = (("dense_ffn", "dense_tp_size", "dense FFN"), ("embedding", "embed_tp_size", "embedding"),
                ("lm_head", "lmhead_tp_size", "lm_head"))


def dp_weights_over_limit(pc: ParallelConfig, mem: MemoryReport | None, ties: Mapping[str, str] | None) -> str | None:
    """Why the throughput branch's attn_tp=1 is out of reach, where memory is why: the weights a rank would hold
    with attention (and o_proj where it follows attention TP) at TP1, and each module an engine's rule ties to
    attention TP (`ties`, at attention TP's degree) at TP1 too: each module's bytes times its degree (a TP d
    shard is 1/d of the module). None where they fit the limit (then the estimate chose), or without `mem`."""
    a = pc.attn_tp_size
    if mem is None or a <= 1:
        return None
    ties = ties or {}
    w = mem.weights_bytes
    grown = sum(w.get(m, 0.0) for m in ATTENTION_MODULES if m != "o_proj" or pc.o_proj_tp_size == 1) * (a - 1)
    tied = [(m, name) for m, k, name in TIED_MODULES if ties.get(k) and getattr(pc, k) == a and w.get(m, 0.0) > 0]
    grown += sum(w[m] for m, _ in tied) * (a - 1)
    held = mem.weights_total + grown
    if held <= mem.limit_bytes:
        return None
    also = "".join(f", {name}" for _, name in tied)
    over, limit = apart(held / 1e9, mem.limit_bytes / 1e9)
    return (f"attn_tp=1 would hold {over} GB of weights per rank (attention{also} unsplit), over the "
            f"limit of {limit} GB")


# the seed's Layer 2 for MLA in the latency branch: a small attention TP kept as a candidate, "如 2/4" (seed 003,
# the decision tree's latency branch, MLA line)
MLA_LATENCY_TP = (2, 4)


def latency_follows(g: int, model: ModelSpec) -> bool:
    """The latency branch's attention TP (the ranks splitting the heads, `g`): for MLA the seed's small values
    (MLA_LATENCY_TP: a wider TP replicates the latent cache on more ranks), for GQA any TP above 1."""
    return g in MLA_LATENCY_TP if model.has_mla else g > 1


def seed_attention(pc: ParallelConfig, model: ModelSpec, scenario: Scenario, hw: Hardware,
                   kvp_in_tp: bool = False) -> list[tuple[str, ParallelConfig | str]]:
    """The seed's Layer 2 value(s) where `pc` departs from its branch, each as `pc` with that attention TP and
    the rest of the backbone unchanged (o_proj's TP following attention where it did; with `kvp_in_tp` the
    engine's TP is attn_tp x kvp, so throughput's TP1 has no DCP): throughput attn_tp=1; latency 2/4 for MLA and
    every degree from 2 to the largest in-node TP (domains.largest_tp) for GQA, those dividing the stage and the
    heads (for MLA also where `pc` runs a wider TP than 2/4); in place of the configuration,
    the space's refusal where it admits none with that value (the attention group no longer divides the world).
    Empty where `pc` follows the branch, or no such degree divides the stage and the heads."""
    from solver.errors import ShardplanError
    from solver.space.domains import largest_tp
    from solver.specs.parallel import make_parallel_config

    g = pc.attn_tp_group(kvp_in_tp)
    if scenario.kind == "throughput" and g > 1:
        values = [1]
    elif scenario.kind == "latency" and not latency_follows(g, model):
        top = largest_tp(pc.stage_world, hw, model)
        # a degree attention TP can take at all: dividing the stage and the heads, inside the node
        values = [d for d in (MLA_LATENCY_TP if model.has_mla else range(2, top + 1))
                  if d <= top and pc.stage_world % d == 0 and model.num_attention_heads % d == 0]
    else:
        return []
    out = []
    for d in values:
        knobs = {**pc.knobs(), "attn_tp_size": d}
        if kvp_in_tp and d == 1:
            knobs["kvp_size"] = 1
        if pc.o_proj_tp_size == pc.attn_tp_size:
            knobs["o_proj_tp_size"] = d
        try:
            out.append((f"attn_tp={d}", make_parallel_config(pc.world_size, **knobs)))
        except ShardplanError as exc:
            out.append((f"attn_tp={d}", getattr(exc, "problem", str(exc))))
    return out


def seed_split(pc: ParallelConfig, knobs: tuple[str, ...], hw: Hardware) -> list[tuple[str, ParallelConfig | str]]:
    """The TP within the node the seed allows a module `pc` replicates (the dense FFN / shared experts, a vocabulary
    table: `knobs`, set together where one table is tied): `pc` with them at the widest TP the node holds
    (domains.tp_domain) that divides the stage, the rest unchanged; the space's refusal in its place where it
    admits none. Empty where the stage has one rank."""
    from solver.errors import ShardplanError
    from solver.space.domains import tp_domain
    from solver.specs.parallel import make_parallel_config

    d = max(x for x in range(1, min(tp_domain(hw), pc.stage_world) + 1) if pc.stage_world % x == 0)
    if d == 1:
        return []
    label = "=".join(k.removesuffix("_size") for k in knobs) + f"={d}"
    try:
        return [(label, make_parallel_config(pc.world_size, **{**pc.knobs(), **{k: d for k in knobs}}))]
    except ShardplanError as exc:
        return [(label, getattr(exc, "problem", str(exc)))]


def node_reach(hw: Hardware) -> str:
    """The seed's "within the node" as the planner reads it on this hardware (domains.tp_domain): the node, or
    the scale-up domain where its links run at the node's rate, said so where it spans more than one node."""
    from solver.space.domains import tp_domain

    dom = tp_domain(hw)
    return ("the node" if dom <= hw.ranks_per_node else
            f"the node, here the {dom}-rank scale-up domain at the node's link rate ({hw.ranks_per_node} per node)")


def _split_priced(pc: ParallelConfig, knobs: tuple[str, ...], hw: Hardware, price: Callable | None,
                  unpriced: str) -> str:
    """The clause on a replicated module: its TP within the node priced (seed_split, `price`), else `unpriced`."""
    seeds = seed_split(pc, knobs, hw) if price is not None else []
    return price(seeds) if seeds else unpriced


def asks_addon(model: ModelSpec, seq: int) -> bool:
    """Layer 3 asks for an add-on at this maximum sequence: past 4K, on a model with attention whose KV is not
    bounded by a window every layer keeps below the sequence."""
    return (seq > ADDON_FROM_SEQ and model.attention_kind != "none"
            and not (model.kv_window_bound and seq > model.kv_window_bound))


def decision_tree_reason(pc: ParallelConfig, model: ModelSpec, scenario: Scenario, hw: Hardware,
                         mem: MemoryReport | None = None, kvp_in_tp: bool = False,
                         cp_replicates_kv: bool = False, ties: Mapping[str, str] | None = None,
                         refused: Mapping[str, str] | None = None,
                         price: Callable[[list[tuple[str, ParallelConfig | str]]], str] | None = None) -> str:
    """Name the seed's Step 2 branches this config follows and where it departs (`mem`: the config's memory at
    its concurrency, for whether memory binds; `kvp_in_tp`: the engine's DCP reuses its TP ranks, so the
    attention choice is said as the engine's TP and its DCP; `cp_replicates_kv`: the engine's CP ranks each keep
    the whole cache, so only KVP splits it; `ties`: knob -> the engine's rules that hold it at its value
    (ties.profile_ties), said as what set it instead of the estimate; `refused`: addon_refusals', why Layer 3's
    add-on is not in the config where the sequence asks for one; `price`: the seed's Layer 2 values
    (seed_attention) -> why the config departs from them, in figures (explain.seed_value_priced))."""
    ties = ties or {}
    lines = []
    if model.is_moe:
        ep = pc.moe_ep_size
        per_rank = pc.expert_slots(model.num_experts) // max(ep, 1)
        if pc.stage_world == 1:
            # one rank per stage: neither EP nor MoE TP exists to compare, so no choice is claimed
            where = "each stage's rank" if pc.pp_size > 1 else "the one rank"
            lines.append(f"Layer 1 (MoE backbone): {where} holds all {per_rank} experts of its layers "
                         "(no EP or MoE TP on one rank)")
        else:
            lines.append("Layer 1 (MoE backbone): EP and TP compared; chose "
                         + ("EP" if pc.moe_tp_size == 1 else f"TP{pc.moe_tp_size} x EP{ep}")
                         + f" ({per_rank} expert{'' if per_rank == 1 else 's'} per rank"
                         + (f"; {model.num_experts} experts + {pc.redundant_experts} redundant copies, so that "
                            f"EP{ep} divides them: each copy is one more expert's weights on its rank)"
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
                     f"{mods} replicated (seed allows TP within {node_reach(hw)}: "
                     + _split_priced(pc, ("dense_tp_size",), hw, price, "the estimate prefers no all-reduce here")
                     + ")")
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
            own = (("embed_tp_size", "lmhead_tp_size") if len(tables) == 1 else (knob,))
            parts.append(f"{name} {split} ({by})" if held else f"{name} TP{degree}" if degree > 1 else
                         f"{name} replicated ({gb:.1f} GB per rank, {memory}; "
                         + _split_priced(pc, own, hw, price, "its all-reduce would cost more than the memory it "
                                                             "frees") + ")")
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
        follows = latency_follows(g, model)
    else:
        expect = "between the throughput and latency branches"
        follows = True
    chose = f"TP{g} with DCP{pc.kvp_size} (attn_tp={a} x kvp={pc.kvp_size})" if g != a else f"attn_tp={a}"
    why = None
    if not follows:
        why = dp_weights_over_limit(pc, mem, ties) if scenario.kind == "throughput" else None
        if why is None and price is not None:
            seeds = seed_attention(pc, model, scenario, hw, kvp_in_tp)
            why = f"the seed's {price(seeds)}" if seeds else (f"no attn_tp the seed suggests divides this backbone's "
                                              f"{pc.stage_world}-rank {'stage' if pc.pp_size > 1 else 'world'} "
                                              f"and the {model.num_attention_heads} heads")
    lines.append(f"Layer 2 ({scenario.kind}): seed suggests {expect}; chose {chose}"
                 + ("" if follows else f" — departs: {why}" if why
                    else " — departs because the estimate favours it (see estimation)"))
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
    elif seq <= ULTRA_LONG_FROM_SEQ:
        l3 = "4K-64K: check prefill split"
    else:
        l3 = "64K+: +CP, ultra-long decode may add KVP"
    if model.attention_kind != "none" and not model.kv_window_bound:
        # a layer keeping a window beside a cache that grows with the whole sequence (DeepSeek-V4's compressed
        # attention): the window does not bound the KV, so the split by sequence applies as to full attention
        both = sorted({b.label() for b, _ in model.block_groups if getattr(b, "window", None)
                       and b.state(KV16, 1).grows and b.state(KV16, 1).window is None})
        if both:
            l3 += f"; {', '.join(both)}: a bounded window beside a cache that grows with the sequence"
    lines.append(f"Layer 3 (max sequence {seq:,}, {l3}): " + (f"+{'/'.join(addon)}" if addon else
                                                               "no add-on" + _no_addon_why(refused or {})))
    if scenario.phase == "decode" and seq > ADDON_FROM_SEQ and pc.attn_tp_size == 1 and pc.kvp_size == 1:
        # the attention group attn_tp*cp*kvp*sp must divide one stage's ranks: CP takes the stage's share SP leaves
        lines.append(f"CP splits prompts and leaves this decode step unchanged (its ranks decode as attention "
                     f"DP): set cp_size={pc.stage_world // pc.attn_sp_size} if these ranks also prefill the "
                     f"prompts, as cann-recipes decode configs do")
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
