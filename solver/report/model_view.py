"""Plain data for `inspect` and `memory` (renderers only: every figure comes from estimate/)."""
from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from solver.specs.dtypes import KV16
from solver.estimate.params import count_params
from solver.specs.model import ModelSpec
from solver.specs.precision import held_groups

if TYPE_CHECKING:  # types of `memory` only: `inspect` loads neither the memory estimator nor the hardware specs
    from solver.estimate.memory import MemoryReport
    from solver.estimate.memory_options import MemoryOptions
    from solver.specs.hardware import Hardware
    from solver.specs.parallel import ParallelConfig
    from solver.specs.precision import Precision

GB = 1e9

_PARALLEL = {
    "embedding": "embed_tp", "attention": "attn_tp / cp / kvp / attn_sp", "indexer": "replicated under attn_tp; "
    "split by attn_sp / cp", "o_proj": "o_proj_tp (else attn_tp)", "dense_ffn": "dense_tp",
    "shared_experts": "dense_tp", "routed_experts": "moe_tp x EP", "router": "follows EP (replicated)",
    "norms": "replicated", "lm_head": "lmhead_tp", "linear_attention": "attn_tp (heads; state not split by cp/kvp)",
    "ssm": "attn_tp (heads, groups; state not split by cp/kvp)",
    "short_conv": "attn_tp (channels; conv state not split by cp/kvp)", "moe_latent": "replicated (follows EP)",
    "vision": "attn_tp where the engine splits it, else replicated",
    "audio": "attn_tp where the engine splits it, else replicated", "altup": "replicated",
}


def _basic(m: ModelSpec) -> dict[str, Any]:
    d: dict[str, Any] = {
        "architecture": m.architecture, "L (layers)": m.num_layers, "L_moe (MoE layers)": m.num_moe_layers,
        "H (hidden)": m.hidden_size,
        # only a model with a dense FFN has its width (ModelSpec.intermediate_size falls back to the experts')
        **({"H_ffn (dense FFN)": m.intermediate_size} if m.has_dense_ffn else {}),
        # a model without attention has no attention heads (its mixer's heads are in the layer table); N_h is
        # the attention's own heads, and where other mixers' head groups lower what TP must divide, that too
        **({"N_h (heads)": m.attention_heads_gcd or m.num_attention_heads, "N_kv (KV heads)": m.num_key_value_heads,
            "D_h (head dim)": m.head_dim} if m.attention_kind != "none" else {"attention": "none"}),
        **({"TP must divide (gcd of every mixer's head groups)": m.num_attention_heads}
           if m.attention_kind != "none" and m.attention_heads_gcd not in (0, m.num_attention_heads) else {}),
        "V (vocab)": m.vocab_size,
    }
    if m.is_moe:
        d.update({"E (routed experts)": m.num_experts, "E_act (per token)": m.experts_per_token,
                  "moe_intermediate_size": m.moe_intermediate_size, "shared experts": m.num_shared_experts})
        if m.num_zero_experts:
            d["zero-computation experts"] = m.num_zero_experts
    if m.has_mla:
        d.update({"kv_lora_rank": m.kv_lora_rank, "q_lora_rank": m.q_lora_rank, "v_head_dim": m.v_head_dim,
                   "qk_rope_head_dim": m.qk_rope_head_dim, "N_h * v_head_dim (o_proj TP must divide)": m.o_proj_dim})
    if m.has_dsa:
        d.update({"index_n_heads": m.index_n_heads, "index_head_dim": m.index_head_dim, "index_topk": m.index_topk})
    if m.num_local_attention_layers:
        d["local-window layers"] = f"{m.num_local_attention_layers} of {m.num_layers} (window {m.local_attention_window})"
    if m.num_mtp_layers:
        d["MTP (next-n) layers"] = m.num_mtp_layers
    # the groups the model holds weights in (a dense model has no experts to name a format for)
    d["checkpoint formats"] = ", ".join(f"{g} {getattr(m.quant, g)}" for g in held_groups(m) if g != "norm")
    if m.quant.activation is not None:
        d["checkpoint activations"] = ("16-bit (weight-only)" if m.quant.activation == "bf16"
                                       else f"{m.quant.activation} (quantized in the GEMMs)")
    if m.quant.kv_cache is not None:
        d["checkpoint KV-cache scales"] = (f"{m.quant.kv_cache} (the engines' default KV cache where the device "
                                           "holds it)" if m.quant.kv_cache_auto else
                                           f"{m.quant.kv_cache} (used with --kv-dtype {m.quant.kv_cache})")
    return d


def _characteristics(m: ModelSpec) -> list[dict[str, str]]:
    big_vocab = m.has_large_vocab
    vocab = f"{'large' if big_vocab else 'small'} vocabulary matrix (V={m.vocab_size:,})"
    rows = [{"module": "embedding", "prefill": vocab + ", a gather", "decode": vocab + ", a gather",
             "parallel": "embed_tp" + (" (set independently: V > 100K)" if big_vocab else " (follow main strategy)")}]
    if m.has_mla:
        rows.append({"module": "attention QKV (MLA)", "prefill": "compute-bound at large S (non-absorbed, d_k 192)",
                     "decode": "memory-bound (S=1, absorbed); latent KV not split by TP",
                     "parallel": "attn_tp / cp (prefer CP or DP: TP does not shard the latent)"})
    else:
        rows.append({"module": "attention QKV", "prefill": "compute-bound at large S",
                     "decode": "memory-bound (S=1)", "parallel": "attn_tp / cp"})
    rows.append({"module": "attention core", "prefill": "compute-bound (O(S^2)" + (", sparse top-k)" if m.has_dsa else ")"),
                 "decode": "memory-bound (reads the KV cache)", "parallel": "attn_tp / cp / kvp"})
    if m.has_dsa:
        rows.append({"module": "DSA indexer", "prefill": "O(S^2) FP8 scoring; repeated on every TP rank",
                     "decode": "reads the indexer key cache", "parallel": "attn_sp / cp (replicated under TP)"})
    rows.append({"module": "o_proj", "prefill": "compute-bound", "decode": "memory-bound",
                 "parallel": "o_proj_tp" + (" (set independently for MLA)" if m.has_mla else " (follows attn_tp)")})
    if m.has_dense_ffn:
        rows.append({"module": "dense FFN", "prefill": "compute-bound", "decode": "memory-bound",
                     "parallel": "dense_tp (within a node)"})
    if m.is_moe:
        rows.append({"module": "MoE router", "prefill": "lightweight", "decode": "lightweight", "parallel": "follows EP"})
        rows.append({"module": "MoE experts", "prefill": "compute-bound (grouped GEMM)",
                     "decode": f"distributed memory access ({m.experts_per_token} of {m.num_experts} per token)",
                     "parallel": "moe_tp (usually 1, EP = W / moe_tp)"})
    rows.append({"module": "lm_head", "prefill": vocab, "decode": vocab, "parallel": "lmhead_tp"})
    return rows


def _block_rows(m: ModelSpec) -> list[dict[str, Any]]:
    """One row per distinct block type of the stack: how many layers hold it, its parameters, and its
    per-request state (bytes per token at bf16 KV on one rank, the window that caps it, constant bytes)."""
    rows = []
    stored: dict = {}  # a block run from a stored shared block: the stored copies (SharedRef indices) hold its weights
    for layer in m.layers:
        if layer.shared is not None:
            for i in layer.shared.blocks:
                stored.setdefault(layer.blocks[i], set()).add(layer.shared.index)
    for block, n in m.block_groups:
        st = block.state(KV16, 1)
        copies = len(stored[block]) if block in stored else n
        rows.append({"block": block.label() + (f" (stored {copies}x, run {n}x)" if block in stored else ""),
                     "kind": block.kind, "role": block.role, "layers": n,
                     "params_per_layer": block.params, "params": block.params * copies,
                     "state_bytes_per_token": st.per_token_bytes + st.index_per_token_bytes,
                     "state_window": st.window, "state_constant_bytes": st.constant_bytes})
    copies_of: dict = {}  # modality experts (Layer.modality_copies): stored for another modality's tokens, not run
    for layer, n in m.layer_groups:
        for block in layer.modality_copies:
            copies_of[block] = copies_of.get(block, 0) + n
    for block, n in copies_of.items():
        rows.append({"block": block.label() + " (modality copy: image tokens', no text token runs it)",
                     "kind": block.kind, "role": block.role, "layers": n, "params_per_layer": block.params,
                     "params": block.params * n, "state_bytes_per_token": 0.0, "state_window": None,
                     "state_constant_bytes": 0.0})
    return rows


def _outside(m: ModelSpec, rep) -> list[dict[str, Any]]:
    by = rep.by_name()
    h = m.hidden_size
    positions = m.position_embeddings * h
    head = "tied to the embedding" if m.tie_word_embeddings else "lmhead_tp (vocab-parallel)"
    ew, proj = m.embed_width, m.embed_width * h if m.embedding_width else 0
    ple = m.per_layer_inputs
    ple_params = sum(p.params for p in ple.parts()) if ple else 0
    sc = m.self_conditioning
    sc_params = sc.params if sc else 0
    rows = [{"module": "embedding" + (f" ({m.vocab_size} x {ew})" if proj else ""),
             "params": by.get("embedding", 0) - positions - proj - ple_params - sc_params,
             "placement": "embed_tp (vocab-parallel)"}]
    if ple:
        rows.append({"module": f"per-layer inputs ({ple.rows} x {ple.layers} x {ple.width} table, projection "
                               f"{h} -> {ple.packed}, norm)", "params": ple_params,
                     "placement": "table embed_tp (vocab-parallel), projection replicated"})
    if sc:
        rows.append({"module": f"self-conditioning MLP ({h} -> {sc.inter} -> {h}, pre-norm)", "params": sc_params,
                     "placement": "replicated on the embedding's ranks"})
    if proj:  # a narrower embedding and head (embedding_width): project_in / project_out beside them
        rows.append({"module": f"project_in ({ew} -> {h}) and project_out ({h} -> {ew})", "params": 2 * proj,
                     "placement": "replicated"})
    if positions:
        rows.append({"module": f"learned position table ({m.position_embeddings} x {h})", "params": positions,
                     "placement": "replicated on the embedding's ranks (a plain lookup)"})
    if m.embedding_norm:
        rows.append({"module": "embedding norm", "params": (2 if m.norm_bias else 1) * h, "placement": "replicated"})
    rows.append({"module": "lm_head" + (" (with a bias)" if m.lm_head_bias else ""), "params": by.get("lm_head", 0) - proj,
                 "placement": head + (", its bias vocab-parallel" if m.lm_head_bias and m.tie_word_embeddings else "")})
    for enc in m.encoders:
        rows.append({"module": f"{enc.name} encoder ({enc.layers} layers, width {enc.hidden})", "params": enc.params,
                     "placement": "split over the attention TP group where the engine shards it like attention "
                     "(its profile's encoder_split_model_types), else whole on every rank"})
    if m.mtp_modules:
        rows.append({"module": f"MTP / next-n ({len(m.mtp_modules)} x [{' , '.join(x.label() for x in m.mtp_modules[0])}])",
                     "params": rep.mtp_params, "placement": "like the stack's layers; counted only with --mtp"})
    return rows


def inspect_data(m: ModelSpec) -> dict[str, Any]:
    rep = count_params(m)
    total = rep.total
    mods = [{"name": x.name, "params": x.params, "share": x.params / total, "active_params": int(round(x.active_params)),
             "parallel": _PARALLEL.get(x.name, "")} for x in rep.modules if x.params]
    return {
        "name": m.name, "model_type": m.model_type, "architecture": m.architecture,
        "attention": m.attention_kind, "is_moe": m.is_moe,
        "total_params": total, "active_params": int(round(rep.active)),
        "mtp_params": rep.mtp_params, "checkpoint_params": rep.checkpoint_total,
        "stack": m.stack_label(), "pattern_source": m.pattern_source, "layer_types": _block_rows(m),
        "outside_stack": _outside(m, rep),
        "modules": mods, "basic": _basic(m), "characteristics": _characteristics(m),
        "warnings": list(m.warnings), "nonstandard_modules": list(m.nonstandard_modules),
    }


def cache_layout_data(m: ModelSpec, pc: ParallelConfig, prec: Precision, seq_len: int,
                      opts: MemoryOptions) -> dict[str, Any]:
    """What one token's cache holds in one layer of the primary attention (bytes; the MLA row's latent and rope
    values), and how many ways the engine's layout splits each part over a request's ranks: the request's whole
    state over what request_state puts on one rank, so the split is the estimate's own (CP x KVP, less what the
    engine keeps whole on each rank: `opts.cache_layout`)."""
    from solver.estimate.request_state import (indexer_bytes_per_token_layer, kv_bytes_per_token_layer,
                                               request_state, state_of_layers)

    from solver.rank.kv_split import cp_decode_form

    layout = replace(opts.cache_layout, kv_block=1)  # the split of a request's tokens, before their blocks
    whole = state_of_layers(m.layer_groups, prec.kv_format, pc.attn_tp_size, seq_len,
                            pc.attn_tp_group(opts.kvp_splits_attention_weights), layout.index_unquantised)
    rank = request_state(m, pc, prec, seq_len, kvp_splits_weights=opts.kvp_splits_attention_weights, layout=layout)
    out: dict[str, Any] = {"kv_bytes_per_token_layer": kv_bytes_per_token_layer(m, prec.kv_format, pc.attn_tp_size),
                           "kv_split": round(whole.kv / rank.kv) if rank.kv else 1}
    if pc.cp_size > 1:  # how its CP ranks decode a cached request, as check's note says (rank.kv_split)
        out["cp_decode"] = cp_decode_form(opts.cp_replicates_kv_cache, opts.cp_decode_repeats_batch,
                                          opts.cp_decode_shards_kv)
    if m.has_mla:
        out["kv_holds"] = {"latent": m.kv_lora_rank, "rope": m.qk_rope_head_dim}
    if m.has_dsa:
        out["index_bytes_per_token_layer"] = indexer_bytes_per_token_layer(m, layout.index_unquantised)
        out["index_values"] = m.index_head_dim
        out["index_split"] = round(whole.index / rank.index) if rank.index else 1
    if rank.constant > 0:
        out["state"] = _state_data(m, pc, prec, seq_len, opts, rank)
    return out


def _state_data(m: ModelSpec, pc: ParallelConfig, prec: Precision, seq_len: int, opts: MemoryOptions,
                rank: Any) -> dict[str, Any]:
    """One request's constant state (linear attention, SSM) on one rank and what the engine's hybrid allocation
    holds for it (request_state under the engine's layout): pages padded to the attention page, or slots of a
    state pool of a fixed share, and there which pool bounds the batch."""
    from solver.estimate.request_state import state_pool_binds, unpooled_state

    layout, kvp = opts.cache_layout, opts.kvp_splits_attention_weights
    bare = unpooled_state(m, pc, prec, seq_len, kvp_splits_weights=kvp, layout=layout)
    out: dict[str, Any] = {"bytes": bare.constant, "held_bytes": rank.constant}
    if layout.block_alignment is not None and bare.kv > 0:
        out |= {"form": "pages", "pages": layout.state_pages,
                "padding_bytes": max(0.0, rank.constant - layout.state_pages * bare.constant)}
    elif (state_binds := state_pool_binds(m, pc, prec, seq_len, kvp_splits_weights=kvp,
                                          layout=layout)) is not None:
        out |= {"form": "pool", "slots": layout.state_pages, "share": layout.state_pool_share,
                "binds": "state" if state_binds else "kv"}
    return out


def cache_line(cache: dict[str, Any], pc: ParallelConfig) -> str:
    """cache_layout_data in a sentence: each part's bytes per token per layer and the ways it is split on the
    CP x KVP ranks of a request ('whole on each' where the engine keeps it so)."""
    shards, cp = pc.cp_size * pc.kvp_size, pc.cp_size
    # the CP ranks decode as attention DP: a request's cache is on the one decoding it (1/cp of the requests a
    # rank: the same bytes as a 1/cp share of each), as check's note says (rank.kv_split.decode_cp_note)
    owner = cache.get("cp_decode") == "owner"

    def split(n: int) -> str:
        if shards == 1:
            return "no CP / KVP split"
        if owner:  # split only by KVP on the CP rank that holds the request
            k = n // cp
            return ("whole" if pc.kvp_size == 1 else f"split {k} ways over KVP {pc.kvp_size}" if k > 1
                    else f"whole on each of the {pc.kvp_size} KVP ranks")
        return f"split {n} ways over CP x KVP {shards}" if n > 1 else f"whole on each of the {shards} CP x KVP ranks"

    holds = cache.get("kv_holds")
    kv = f"KV {cache['kv_bytes_per_token_layer']:,.0f} B" + (
        f" (latent {holds['latent']} + rope {holds['rope']} values)" if holds else "")
    parts = [f"{kv}, {split(cache['kv_split'])}"]
    if "index_bytes_per_token_layer" in cache:
        parts.append(f"indexer keys {cache['index_bytes_per_token_layer']:,.0f} B ({cache['index_values']} values), "
                     f"{split(cache['index_split'])}")
    if "state" in cache:
        parts.append(_state_words(cache["state"]))
    if owner:
        parts.append(f"each request on the one of the {cp} CP ranks that decodes it (they decode as attention DP, "
                     f"each holding 1/{cp} of the requests)")
    return "cache per token per layer on one attention-TP rank: " + "; ".join(parts)


def _state_words(st: dict[str, Any]) -> str:
    """_state_data in words (MB = 1e6 bytes)."""
    words = f"constant state {st['bytes'] / 1e6:,.2f} MB a request"
    if st.get("form") == "pages":
        words += (f", held in {st['pages']} page(s) per state layer group of the shared KV pool: "
                  f"{st['held_bytes'] / 1e6:,.2f} MB, {st['padding_bytes'] / 1e6:,.2f} MB of it padding")
    elif st.get("form") == "pool":
        bound = ("the state pool binds the batch" if st["binds"] == "state"
                 else "the KV pool binds the batch, state slots left idle")
        words += (f", {st['slots']} slots in a state pool of {st['share']:.1%} of the cache memory: "
                  f"{st['held_bytes'] / 1e6:,.2f} MB held; {bound}")
    return words


def memory_data(m: ModelSpec, hw: Hardware, pc: ParallelConfig, prec: Precision, rep: MemoryReport,
                best_batch: int, batch: int, seq_len: int, opts: MemoryOptions | None = None) -> dict[str, Any]:
    from solver.estimate.memory_options import MemoryOptions

    breakdown = {f"weights.{k}": v / GB for k, v in rep.weights_bytes.items()}
    breakdown.update({"kv_cache": rep.kv_cache_bytes / GB, "indexer_cache": rep.indexer_cache_bytes / GB,
                      "constant_state": rep.state_bytes / GB,  # per request: linear / SSM state, conv tails, image K/V
                      "activations": rep.activation_bytes / GB, "comm_buffers": rep.comm_buffer_bytes / GB,
                      "framework_reserve": rep.reserved_bytes / GB})
    return {
        "model": m.name, "hardware": hw.name, "cards": pc.world_size,
        "parallel_config": pc.own_with_derived(m), "batch": batch, "seq_len": seq_len,
        # the groups the model holds weights in (a dense model's experts format sizes nothing)
        "precision": {g: prec.weights[g].name for g in held_groups(m)} | {"activation": prec.activation,
                                                                       "kv_bytes": prec.kv_bytes},
        "params_per_card_gb": rep.weights_total / GB,
        "kv_cache_per_card_gb": rep.cache_total / GB,
        # model_gb is what limit_gb bounds; total_gb adds the runtime reserve and is bounded by capacity_gb
        "model_gb": rep.model_bytes / GB, "reserve_gb": rep.reserved_bytes / GB, "limit_gb": rep.limit_bytes / GB,
        "total_gb": rep.total / GB, "capacity_gb": rep.capacity_bytes / GB,
        "feasible": rep.feasible, "tight": rep.tight,
        "weights_kv_share": (rep.weights_total + rep.cache_total) / rep.capacity_bytes,
        "sequences_per_rank": rep.sequences_per_rank,
        "max_batch": best_batch, "breakdown": breakdown, "notes": list(rep.notes),
        "cache": _reported_cache(m, pc, prec, rep, seq_len, opts or MemoryOptions()),
    } | ({"pipeline_stage": rep.stage} if rep.stage is not None else {})  # under PP: the largest stage's figures


def _reported_cache(m: ModelSpec, pc: ParallelConfig, prec: Precision, rep: MemoryReport, seq_len: int,
                    opts: MemoryOptions) -> dict[str, Any]:
    """cache_layout_data of the ranks the report's figures are: under pipeline parallel its stage's layers on
    the stage's ranks (a request's state per rank halves over PP2, as the breakdown's), else the whole model."""
    if rep.stage is None:
        return cache_layout_data(m, pc, prec, seq_len, opts)
    from solver.estimate.pipeline import stages

    return cache_layout_data(stages(m, pc.pp_size)[rep.stage].model, pc.stage(), prec, seq_len, opts)
