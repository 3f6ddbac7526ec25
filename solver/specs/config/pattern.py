"""The layer pattern: which mixer and which FFN each layer has, read from the config's own conventions.

Mixer kinds: full, sliding, chunked (softmax attention, windowed or not), linear, mamba, conv, rglru, none. FFN kinds:
dense, moe, none. Conventions read, in order of precedence:
  one block per layer:  hybrid_override_pattern ("M" Mamba, "E" MoE, "*" attention, "-" MLP) or
                        layers_block_type (mamba / moe / attention / mlp, or the family's own mixer names:
                        _layer_type_kinds), Nemotron-H
  whole stack:          _all_layers (a pure Mamba / Mamba-2 stack, a family fact)
  cross-attention:      cross_attention_layers (Mllama: the listed layers attend to the image tokens)
  shared K/V:           use_cla + cla_share_factor (Hunyuan: in each group of that many layers only the first
                        computes K/V, the others attend with it and hold no k / v projection);
                        num_kv_shared_layers (Gemma-3n: the last N layers attend with the K/V of the last earlier
                        layer of the same attention type; their k / v projections are stored, not run);
                        kv_source_layers (Mistral-Large-4: each layer's source, a borrowing layer holding no K/V
                        projection); no_rope_layers marks NoPE layers (sizes MLA layers only)
  mixers:               compress_ratios (DeepSeek-V4); layer_types | attention_layers (GPT-Neo); attn_type_list (0 linear, 1 softmax);
                        attn_layer_indices (Bamba: attention at the listed layers, Mamba elsewhere);
                        block_types (RecurrentGemma: recurrent / attention, repeated over the stack; its attention
                        layers are local when attention_window_size is given);
                        attn_layer_period / attn_layer_offset (Jamba); linear_attn_config.kda_layers /
                        full_attn_layers (1-based); full_attention_interval (or the field the fact
                        _full_attention_interval names); block_configs[i].attention.no_op;
                        sliding_window_pattern (every N-th layer global, or a string such as "LLLG") or its
                        spelling global_attn_every_n_layers (AFMoE); the family fact _global_every_from_last
                        N with sliding_window (every N-th layer counted back from the last global: Muse-Glimmer);
                        the fact _global_every N with sliding_window (every N-th from the first: Gemma-4);
                        attention_chunk_size + no_rope_layer_interval; use_sliding_window + max_window_layers;
                        sliding_window alone (every layer windowed)
  FFNs:                 block_configs[i].ffn; mlp_layer_types; expert_layer_period / offset (Jamba);
                        moe_layers (Llama-4: the MoE layers' indices, overriding interleave_moe_layer_step; an
                        empty list: every layer dense, Llama-Guard-4);
                        moe_layer_freq as a list; first_k_dense_replace | num_dense_layers,
                        moe_layer_freq / decoder_sparse_step / interleave_moe_layer_step /
                        moe_layer_frequency as an int;
                        moe_layer_start_index / moe_layer_end_index / moe_layer_interval (ERNIE-4.5);
                        mlp_only_layers; a num_layers that counts blocks of several sub-layers (LongCat);
                        parallel_attn_mlp_res (Arctic: a dense residual MLP with its own norm beside every MoE)
Every list must have one entry per layer and every entry must be known: anything else is an InputError
naming the field and the value.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from solver.specs.config.fields import Fields

LAYER_TYPE_MIXER = {
    "full_attention": "full", "attention": "full", "global_attention": "full", "global": "full",
    "sliding_attention": "sliding", "local_attention": "sliding", "sliding": "sliding", "local": "sliding",
    "chunked_attention": "chunked", "linear_attention": "linear", "mamba": "mamba", "mamba2": "mamba",
    "conv": "conv",  # LFM2: a gated short convolution (layers/conv.py)
    # a DSA layer (Mistral-Large-4, Qwen4-Exp): full attention whose indexer the index_* fields size
    "indexed_attention": "full",
    # full attention whose lightning indexer keeps the top-k blocks of index_block_size keys (MiniMax-M3's
    # MiniMaxM3VLIndexer, built on the layers its layer_types marks so; blocks.Blocks.block_sparse_indexer)
    "minimax_m3_sparse": "block_sparse",
}
# block_types entries (RecurrentGemma): "recurrent" is the RG-LRU block (layers/rglru.py)
BLOCK_TYPES_MIXER = {"recurrent": "rglru", "attention": "full"}
BLOCK_TYPE = {"mamba": ("mamba", None), "mamba2": ("mamba", None), "moe": (None, "moe"),
              "attention": ("full", None), "full_attention": ("full", None), "mlp": (None, "dense"),
              # a Mamba layer that also runs a shared attention + MLP block (Zamba / Zamba2), where the family
              # says it has one (_shared_block); its FFN kind "shared" becomes Slot.shared
              "hybrid": ("mamba", "shared")}
PATTERN_CHAR = {"M": ("mamba", None), "E": (None, "moe"), "*": ("full", None), "-": (None, "dense")}
# hash_moe: DeepseekV4Config's MoE routed by a token-id table, its count num_hash_layers (derived.py's
# _count_from_types on the family's line)
MLP_LAYER_TYPE = {"dense": "dense", "mlp": "dense", "moe": "moe", "sparse": "moe", "hash_moe": "moe"}
# layers_block_type entries only some families' layers hold, with why another is refused
UNMODELLED_BLOCK_TYPE = {
    "hybrid": "a Mamba layer that also runs an attention + MLP block shared across layers, which model_type {type!r} "
              "has no convention for (the zamba / zamba2 lines say how theirs is sized)",
}


@dataclass(frozen=True)
class Slot:
    """One layer's kinds (blocks are built from them and the config's sizes)."""

    mixer: str | None
    ffn: str | None
    extra_moe: bool = False  # an MoE beside the dense FFN (LongCat shortcut-connected MoE)
    index: int = 0
    kv_shared: bool = False  # attends with K/V an earlier layer computed and cached
    kv_weights: bool = True  # under kv_shared: its k / v projections are stored all the same
    kv_source: int | None = None  # under kv_shared: the layer it reads, where the config names it (kv_source_layers)
    residual_mlp: bool = False  # a dense residual MLP with its own norm beside the MoE (Arctic's parallel_attn_mlp_res)
    shared: int | None = None  # the stored block this layer also runs (Zamba's hybrid layers; layers/base.SharedRef)


ATTENTION_KINDS = ("full", "sliding", "chunked", "block_sparse")


def one_block_pattern(f: Fields) -> tuple[str, list[tuple[str | None, str | None]]] | None:
    """Nemotron-H style: each layer is a mixer OR an FFN."""
    if f.has("hybrid_override_pattern"):
        pat = f.cfg["hybrid_override_pattern"]
        if not isinstance(pat, str) or not pat:
            raise f.err("hybrid_override_pattern", f"must be a non-empty string, got {pat!r}")
        bad = sorted({c for c in pat if c not in PATTERN_CHAR})
        if bad:
            raise f.err("hybrid_override_pattern", f"unknown layer character(s) {''.join(bad)!r} (known: M E * -)")
        return "hybrid_override_pattern", [PATTERN_CHAR[c] for c in pat]
    field = "layers_block_type"
    types = f.str_list("layers_block_type") if f.has("layers_block_type") else None
    if types is None and f.cfg.get("_block_types_from_period") is not None:
        types, field = _block_types_from_period(f), "attn_layer_period"
    if types is not None:
        out = []
        # the family's own names for a mixer (the fact _layer_type_kinds: Zamba / Nemotron-H write their Mamba layers
        # as linear_attention, the mixer their modeling code builds for that name); each holds no FFN of its own
        own = f.cfg.get("_layer_type_kinds") or {}
        for i, t in enumerate(types):
            if t in own:
                out.append((own[t], None))
                continue
            why = UNMODELLED_BLOCK_TYPE.get(t)
            if t not in BLOCK_TYPE or (why and not f.has("_shared_block")):
                raise f.err(field, f"unknown entry {t!r} at index {i}: {why.format(type=f.cfg.get('model_type'))}"
                            if why else f"unknown entry {t!r} at index {i} (known: {', '.join(BLOCK_TYPE)})")
            out.append(BLOCK_TYPE[t])
        return field, out
    return None


def _block_types_from_period(f: Fields) -> list[str]:
    """The family's layers_block_type where the config writes none (ZambaConfig._layers_block_type): the fact's
    leading entries, then "hybrid" at every attn_layer_period-th of the remaining layers from attn_layer_offset,
    "mamba" elsewhere."""
    head = [str(t) for t in f.cfg["_block_types_from_period"]]
    n = f.int("num_hidden_layers", maximum=10_000)
    period = f.int("attn_layer_period", minimum=1)
    offset = f.int("attn_layer_offset", minimum=0)
    if n < len(head):
        raise f.err("num_hidden_layers", f"{n}: fewer than the {len(head)} layers the family's pattern starts with")
    return head + ["hybrid" if i % period == offset else "mamba" for i in range(n - len(head))]


def _attention_indices(f: Fields, layers: int) -> tuple[list[str | None], str] | None:
    """Softmax attention at a list of layer indices, another mixer at every other layer (each keeps its FFN).
    Bamba's attn_layer_indices with Mamba elsewhere is the convention; the fact _attention_indices {field, elsewhere,
    if_null} names a family's own list, the mixer at the other layers and what a null or absent list means: "none"
    (BambaConfig.layers_block_type: every layer Mamba) or "all" (Lfm2Config: full_attn_idxs None is every layer).
    Without the fact a null list places nothing (Falcon-H1 writes attn_layer_indices null)."""
    fact = f.cfg.get("_attention_indices")
    if fact is not None and (not isinstance(fact, dict) or fact.get("if_null") not in ("none", "all")):
        raise f.err("_attention_indices", f"must be {{field, elsewhere, if_null: none | all}}, got {fact!r}")
    field = str(fact["field"]) if fact else "attn_layer_indices"
    elsewhere = str(fact["elsewhere"]) if fact else "mamba"
    if f.cfg.get(field) is not None:
        index = f.int_list(field) or []
    elif fact:
        index = list(range(layers)) if fact["if_null"] == "all" else []
    else:
        return None
    bad = sorted({i for i in index if not 0 <= i < layers})
    if bad:
        raise f.err(field, f"layer indices {bad} outside 0..{layers - 1}")
    return ["full" if i in index else elsewhere for i in range(layers)], field


def _index_set(f: Fields, container: dict, key: str, layers: int, field: str) -> set[int]:
    """Layer indices from a list that may be 1-based (Kimi Linear: kda_layers / full_attn_layers)."""
    raw = container.get(key) or []
    if not isinstance(raw, list):
        raise f.err(field, f"must be a list of layer numbers, got {type(raw).__name__}")
    values = [f.check_int(f"{field}[{i}]", v, 0) for i, v in enumerate(raw)]
    return set(values)


def mixer_kinds(f: Fields, layers: int) -> tuple[list[str | None], str]:
    """One mixer kind per layer and the field it came from."""
    cfg = f.cfg
    if cfg.get("compress_ratios") is not None:
        ratios = f.int_list("compress_ratios") or []
        extra = f.int("num_nextn_predict_layers", default=0, minimum=0)
        if len(ratios) not in (layers, layers + extra):
            raise f.err("compress_ratios", f"has {len(ratios)} entries for {layers} layers (+{extra} MTP)")
        return ["compressed"] * layers, "compress_ratios"
    types_field = f.first("layer_types", "attention_layers")  # GPT-Neo: attention_layers, global / local
    if types_field is not None:
        types = f.str_list(types_field) or []
        if len(types) != layers:
            raise f.err(types_field, f"has {len(types)} entries for {layers} layers")
        out: list[str | None] = []
        # the family's own layer_types names, as the mixer kinds they are (ZAYA's "hybrid": its CCA attention)
        kinds = {**LAYER_TYPE_MIXER, **(cfg.get("_layer_type_kinds") or {})}
        for i, t in enumerate(types):
            if t not in kinds:
                raise f.err(types_field, f"unknown entry {t!r} at index {i} (known: {', '.join(kinds)})")
            out.append(kinds[t])
        return out, types_field
    flags_field = cfg.get("_sliding_flags")  # the family's list of one flag per layer, 1 a sliding-window layer
    if flags_field is not None and cfg.get(flags_field) is not None:
        # MiMo-V2-Flash's hybrid_layer_pattern: 0 full attention, 1 sliding window
        flags = f.int_list(str(flags_field), layers) or []
        if any(v not in (0, 1) for v in flags):
            raise f.err(str(flags_field), f"entries must be 0 (full attention) or 1 (sliding window), got "
                                          f"{sorted(set(flags))}")
        return ["sliding" if v else "full" for v in flags], str(flags_field)
    placed = _attention_indices(f, layers)
    if placed is not None:
        return placed
    if cfg.get("block_types") is not None:
        # RecurrentGemma: the list repeats over the stack (layer i is block_types[i % len]); its attention is
        # local, over attention_window_size tokens, when that is given
        types = f.str_list("block_types") or []
        if not types:
            raise f.err("block_types", "must not be empty")
        for i, t in enumerate(types):
            if t not in BLOCK_TYPES_MIXER:
                raise f.err("block_types", f"unknown entry {t!r} at index {i} (known: {', '.join(BLOCK_TYPES_MIXER)})")
        local = f.has("attention_window_size")
        kinds = [BLOCK_TYPES_MIXER[types[i % len(types)]] for i in range(layers)]
        return [("sliding" if local and k == "full" else k) for k in kinds], "block_types"
    if cfg.get("attn_type_list") is not None:
        flags = f.int_list("attn_type_list", layers) or []
        if any(v not in (0, 1) for v in flags):
            raise f.err("attn_type_list", f"entries must be 0 (linear) or 1 (softmax), got {sorted(set(flags))}")
        return ["full" if v else "linear" for v in flags], "attn_type_list"
    lin = cfg.get("linear_attn_config")
    if isinstance(lin, dict) and (lin.get("kda_layers") is not None or lin.get("full_attn_layers") is not None):
        linear = _index_set(f, lin, "kda_layers", layers, "linear_attn_config.kda_layers")
        full = _index_set(f, lin, "full_attn_layers", layers, "linear_attn_config.full_attn_layers")
        everything = linear | full
        # 1-based when the numbers run 1..L (no 0, and L present); 0-based when they run 0..L-1
        one_based = 0 not in everything and (layers in everything or not everything)
        shift = 1 if one_based else 0
        kinds: list[str | None] = []
        for i in range(layers):
            n = i + shift
            if n in linear and n in full:
                raise f.err("linear_attn_config", f"layer {n} is listed as both linear and full attention")
            if n not in linear and n not in full:
                raise f.err("linear_attn_config", f"layer {n} is in neither kda_layers nor full_attn_layers")
            kinds.append("linear" if n in linear else "full")
        extra = sorted(n for n in everything if not shift <= n < layers + shift)
        if extra:
            raise f.err("linear_attn_config", f"layer numbers {extra} outside 1..{layers}" if shift
                        else f"layer numbers {extra} outside 0..{layers - 1}")
        return kinds, "linear_attn_config"
    if f.has("attn_layer_period"):
        # Jamba: attention where i % period == offset, Mamba elsewhere
        period = f.int("attn_layer_period", maximum=max(layers, 1))
        offset = f.int("attn_layer_offset", default=0, minimum=0, maximum=period - 1)
        return ["full" if i % period == offset else "mamba" for i in range(layers)], "attn_layer_period"
    # a family may name full_attention_interval otherwise (the fact _full_attention_interval: BailingHybridConfig's
    # layer_group_size, the last layer of each group full)
    interval = str(cfg.get("_full_attention_interval") or "full_attention_interval")
    if f.has(interval):
        n = f.int(interval, maximum=layers)
        return ["full" if (i + 1) % n == 0 else "linear" for i in range(layers)], interval
    if isinstance(cfg.get("block_configs"), list):
        blocks = cfg["block_configs"]
        if len(blocks) != layers:
            raise f.err("block_configs", f"has {len(blocks)} entries for {layers} layers")
        out = []
        for i, b in enumerate(blocks):
            attn = b.get("attention") if isinstance(b, dict) else None
            if not isinstance(attn, dict):
                raise f.err(f"block_configs[{i}].attention", "must be an object")
            if attn.get("replace_with_linear"):
                raise f.err(f"block_configs[{i}].attention.replace_with_linear", "not supported (true)")
            out.append(None if attn.get("no_op") else "full")
        return out, "block_configs"
    every = f.first("global_attn_every_n_layers", "global_attention_every_n_layers")  # AFMoE's, Ergo's spelling
    if every is not None and not f.has("sliding_window_pattern"):
        # AFMoE's spelling of the integer sliding_window_pattern: every N-th layer global, the N-th first; ModernBERT's
        # decoder (the fact _global_attn_first) counts from the first layer: layers 0, N, 2N, ... global
        n = f.int(every, maximum=max(layers, 1))
        first = 0 if f.bool("_global_attn_first") else n - 1
        return ["full" if i % n == first else "sliding" for i in range(layers)], every
    from_last = cfg.get("_global_every_from_last")
    if from_last and f.has("sliding_window"):
        # the family's class builds its own layer_types: every N-th layer counted back from the last is global, the
        # rest slide (MuseGlimmerTextConfig's __post_init__: layer L - 1 global, then L - 5, ...)
        n = int(from_last)
        return ["full" if (layers - 1 - i) % n == 0 else "sliding" for i in range(layers)], "_global_every_from_last"
    if f.has("sliding_window_pattern"):
        pat = cfg["sliding_window_pattern"]
        if isinstance(pat, str):
            if not pat or any(c not in "LG" for c in pat):
                raise f.err("sliding_window_pattern", f"must be a string of L and G, got {pat!r}")
            return ["sliding" if pat[i % len(pat)] == "L" else "full" for i in range(layers)], "sliding_window_pattern"
        n = f.int("sliding_window_pattern", maximum=max(layers, 1))
        return ["full" if (i + 1) % n == 0 else "sliding" for i in range(layers)], "sliding_window_pattern"
    every = cfg.get("_global_every")
    if every and f.has("sliding_window"):
        # the family's class builds its own layer_types: every N-th layer from the first global, the rest slide
        # (Gemma4TextConfig's __post_init__, 5 : 1); a stack shorter than N slides throughout
        n = int(every)
        return ["full" if (i + 1) % n == 0 else "sliding" for i in range(layers)], "_global_every"
    if f.has("attention_chunk_size") and f.has("no_rope_layer_interval"):
        n = f.int("no_rope_layer_interval", maximum=max(layers, 1))
        return ["full" if (i + 1) % n == 0 else "chunked" for i in range(layers)], "no_rope_layer_interval"
    if f.bool("use_sliding_window") and f.has("sliding_window"):
        first = f.int("max_window_layers", default=layers, minimum=0)
        return ["sliding" if i >= first else "full" for i in range(layers)], "max_window_layers"
    if f.has("sliding_window") and cfg.get("use_sliding_window") is None:
        return ["sliding"] * layers, "sliding_window"
    return ["full"] * layers, ""


def ffn_kinds(f: Fields, layers: int, is_moe: bool, mixers: list[str | None]) -> list[str | None]:
    cfg = f.cfg
    if isinstance(cfg.get("block_configs"), list):
        out: list[str | None] = []
        for i, b in enumerate(cfg["block_configs"]):
            ffn = b.get("ffn") if isinstance(b, dict) else None
            if not isinstance(ffn, dict):
                raise f.err(f"block_configs[{i}].ffn", "must be an object")
            if ffn.get("replace_with_linear"):
                raise f.err(f"block_configs[{i}].ffn.replace_with_linear", "not supported (true)")
            out.append(None if ffn.get("no_op") else "dense")
        return out
    listed = _moe_layers(f, layers)
    if not is_moe:
        if listed:
            raise f.err("moe_layers", f"lists MoE layers {listed} but the config has no routed experts "
                                      f"(num_local_experts / num_experts 0 or unset)")
        return ["dense"] * layers
    if listed is not None:  # Llama4TextConfig: moe_layers, when written, wins over interleave_moe_layer_step
        return ["moe" if i in listed else "dense" for i in range(layers)]
    if cfg.get("mlp_layer_types") is not None:
        types = f.str_list("mlp_layer_types") or []
        if len(types) != layers:
            raise f.err("mlp_layer_types", f"has {len(types)} entries for {layers} layers")
        for i, t in enumerate(types):
            if t not in MLP_LAYER_TYPE:
                raise f.err("mlp_layer_types", f"unknown entry {t!r} at index {i}")
        return [MLP_LAYER_TYPE[t] for t in types]
    if cfg.get("moe_layers_enum") is not None:
        # the legacy alias of mlp_layer_types that Step3p7TextConfig reads where that is left out: the MoE layers'
        # indices, a comma-separated string or a list (indices past the layers are the MTP layers', not read here)
        raw = cfg["moe_layers_enum"]
        items = [i for i in raw.split(",") if i.strip()] if isinstance(raw, str) else raw
        try:
            listed = {int(i) for i in items}
        except (TypeError, ValueError):
            raise f.err("moe_layers_enum", "must be layer indices (a comma-separated string or a list)") from None
        bad = sorted(i for i in listed if not 0 <= i < layers)
        if bad:
            raise f.err("moe_layers_enum", f"layer indices {bad} outside 0..{layers - 1} (the MTP layers' MLP kinds "
                                           "are not read)")
        return ["moe" if i in listed else "dense" for i in range(layers)]
    if f.has("expert_layer_period"):
        # Jamba: MoE where i % period == offset, dense elsewhere
        period = f.int("expert_layer_period", maximum=max(layers, 1))
        offset = f.int("expert_layer_offset", default=0, minimum=0, maximum=period - 1)
        return ["moe" if i % period == offset else "dense" for i in range(layers)]
    if f.has("moe_layer_start_index", "moe_layer_end_index", "moe_layer_interval"):
        # ERNIE-4.5: MoE at layers start..end (inclusive; -1 or unset: the last) where (i + 1) % interval == 0
        start = f.int("moe_layer_start_index", default=0, minimum=0, maximum=max(layers - 1, 0))
        end = layers - 1 if cfg.get("moe_layer_end_index") in (None, -1) else f.int(
            "moe_layer_end_index", minimum=0, maximum=max(layers - 1, 0))
        interval = f.int("moe_layer_interval", default=1, maximum=max(layers, 1))
        kinds = ["moe" if start <= i <= end and (i + 1) % interval == 0 else "dense" for i in range(layers)]
    elif isinstance(cfg.get("moe_layer_freq"), list):
        flags = f.int_list("moe_layer_freq", layers) or []
        if any(v not in (0, 1) for v in flags):
            raise f.err("moe_layer_freq", "as a list, entries must be 0 (dense) or 1 (MoE)")
        kinds = ["moe" if v else "dense" for v in flags]
    else:
        # the first layers keep a dense MLP: DeepSeek's first_k_dense_replace, LFM2-MoE's num_dense_layers, Ergo's
        # num_dense_blocks
        dense_field = (f.first("first_k_dense_replace", "num_dense_layers", "num_dense_blocks")
                       or "first_k_dense_replace")
        first_dense = f.int(dense_field, default=0, minimum=0)
        if first_dense > layers:
            raise f.err(dense_field, f"{first_dense} exceeds num_hidden_layers ({layers})")
        freq = f.int("moe_layer_freq", "decoder_sparse_step", "interleave_moe_layer_step", "moe_layer_frequency",
                     default=1, maximum=max(layers, 1))
        # DeepSeek: i % moe_layer_freq after the first dense layers; Qwen / Llama-4: (i + 1) % step
        shift = 0 if "first_k_dense_replace" in cfg else 1
        kinds = ["moe" if i >= first_dense and (i + shift) % freq == 0 else "dense" for i in range(layers)]
    # None is the class default (no such layer); any other value that is not a list of indices is refused, a
    # falsy one (0, false, "") too: read as "none" it would be a guess
    only_mlp = cfg.get("mlp_only_layers")
    only_mlp = [] if only_mlp is None else only_mlp
    if not isinstance(only_mlp, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in only_mlp):
        raise f.err("mlp_only_layers", f"must be a list of layer indices, got {only_mlp!r}")
    for i in only_mlp:
        if not 0 <= i < layers:
            raise f.err("mlp_only_layers", f"index {i} outside 0..{layers - 1}")
        kinds[i] = "dense"
    return kinds


def _moe_layers(f: Fields, layers: int) -> list[int] | None:
    """Llama4TextConfig's moe_layers: the indices of the layers whose feed-forward is the MoE (the others a dense MLP
    of intermediate_size_mlp); None where it is not written."""
    if f.cfg.get("moe_layers") is None:
        return None
    listed = f.int_list("moe_layers") or []
    bad = sorted({i for i in listed if i >= layers})
    if bad:
        raise f.err("moe_layers", f"layer indices {bad} outside 0..{layers - 1}")
    return listed


def slots(f: Fields, layers: int, is_moe: bool) -> tuple[list[Slot], str]:
    out, field = _slots(f, layers, is_moe)
    return kv_sharing(f, cross_attention(f, out)), field


def cross_attention(f: Fields, out: list[Slot]) -> list[Slot]:
    """Mllama: the layers cross_attention_layers lists attend to the image tokens (mixer "cross"); their FFN is
    the other layers'."""
    if f.cfg.get("cross_attention_layers") is None:
        return out
    index = f.int_list("cross_attention_layers") or []
    bad = sorted({i for i in index if i >= len(out)})
    if bad:
        raise f.err("cross_attention_layers", f"layer indices {bad} outside 0..{len(out) - 1}")
    if len(set(index)) != len(index):
        raise f.err("cross_attention_layers", f"lists a layer twice: {index}")
    for i in index:
        if out[i].mixer not in ATTENTION_KINDS:
            raise f.err("cross_attention_layers", f"layer {i} is a {out[i].mixer or 'mixer-less'} layer, not attention")
    return [replace(slot, mixer="cross") if slot.index in index else slot for slot in out]


def nope_layers(f: Fields, layers: int) -> set[int]:
    """The layers no_rope_layers marks NoPE (0; 1 a RoPE layer: SmolLM3's and Llama-4's convention, one entry a
    layer at least, as the modeling code indexes it by layer)."""
    flags = f.int_list("no_rope_layers")
    if flags is None:
        return set()
    if len(flags) < layers or any(v > 1 for v in flags):
        raise f.err("no_rope_layers", f"must hold a 0 (NoPE) or 1 (RoPE) for each of the {layers} layers, got "
                                      f"{len(flags)} entries {sorted(set(flags))}")
    return {i for i in range(layers) if flags[i] == 0}


def kv_source_sharing(f: Fields, out: list[Slot]) -> list[Slot]:
    """kv_source_layers (Mistral-Large-4, Kolibri-1.1): the layer each layer attends with the K/V of, its own index
    where it caches its own. A borrowing layer holds no K/V projection and caches nothing (kv_weights false); the
    source must be an earlier layer that owns its cache, of the same attention kind and the same RoPE / NoPE kind.
    The modeling code reads the source as written (Kolibri-1.1: shared_kv_states[str(kv_source_layer)]) unless the
    family keys its shared caches by kind (_kv_source_by_kind, Mistral-Large-4: the last stored cache of its RoPE
    kind), where a source other than the nearest such layer would not be the one the model reads."""
    n = len(out)
    sources = f.int_list("kv_source_layers", n)
    if sources is None or sources == list(range(n)):
        return out
    nope = nope_layers(f, n)
    by_kind = f.bool("_kv_source_by_kind")
    shared = list(out)
    for slot, src in zip(out, sources):
        if src == slot.index:
            continue
        i = slot.index
        if src > i or sources[src] != src:
            raise f.err("kv_source_layers", f"layer {i} reads layer {src}, which is not an earlier layer that "
                                            "caches its own K/V")
        if slot.mixer not in ATTENTION_KINDS or slot.mixer != out[src].mixer or (i in nope) != (src in nope):
            # where no_rope_layers marks some layers, each side's RoPE kind too: "full reads full" alone hides
            # the mismatch that refused it
            def kind(j: int) -> str:
                return out[j].mixer + ((", NoPE" if j in nope else ", RoPE") if nope else "")
            raise f.err("kv_source_layers", f"layer {i} ({kind(i)}) reads the K/V of layer {src} ({kind(src)}); "
                                            "only attention layers of one kind, both RoPE or both NoPE, share K/V")
        nearest = next(j for j in range(i - 1, -1, -1) if sources[j] == j and out[j].mixer == slot.mixer
                       and (j in nope) == (i in nope))
        if by_kind and nearest != src:
            raise f.err("kv_source_layers", f"layer {i} reads layer {src}, but layer {nearest} caches K/V of the "
                                            "same kind later; the model reads the nearest")
        shared[i] = replace(slot, kv_shared=True, kv_weights=False, kv_source=src)
    return shared


def kv_sharing(f: Fields, out: list[Slot]) -> list[Slot]:
    """Mark the layers that attend with another layer's K/V (the module docstring's shared K/V): each must be an
    attention layer of the same kind as the layer it reads from."""
    if f.has("kv_source_layers"):
        if f.bool("use_cla") or f.int("num_kv_shared_layers", default=0, minimum=0):
            raise f.err("kv_source_layers", "together with use_cla / num_kv_shared_layers: the K/V sharing "
                                            "schemes are not modelled together")
        return kv_source_sharing(f, out)
    cla = f.bool("use_cla")
    factor = f.int("cla_share_factor", default=1, maximum=max(len(out), 1)) if f.has("cla_share_factor") else 1
    n = f.int("num_kv_shared_layers", default=0, minimum=0)
    if cla and factor > 1 and n:
        raise f.err("num_kv_shared_layers", f"{n} together with use_cla: the two K/V sharing schemes are not "
                                            "modelled together")
    if cla and factor > 1:
        shared = []
        for slot in out:
            src = out[slot.index - slot.index % factor]
            if src is slot:
                shared.append(slot)
                continue
            if slot.mixer not in ATTENTION_KINDS or slot.mixer != src.mixer:
                raise f.err("cla_share_factor", f"{factor}: layer {slot.index} ({slot.mixer}) would attend with the "
                                                f"K/V of layer {src.index} ({src.mixer}); only attention layers of "
                                                "one kind share K/V")
            shared.append(replace(slot, kv_shared=True, kv_weights=False))
        return shared
    if not n:
        return out
    first = len(out) - n
    if first <= 0:
        raise f.err("num_kv_shared_layers", f"{n} leaves no layer of the {len(out)} to compute the K/V")
    shared = list(out)
    for slot in out[first:]:
        if slot.mixer not in ATTENTION_KINDS:
            raise f.err("num_kv_shared_layers", f"{n}: layer {slot.index} is a {slot.mixer or 'mixer-less'} layer; "
                                                "only attention layers share K/V")
        if not any(s.mixer == slot.mixer for s in out[:first]):
            raise f.err("num_kv_shared_layers", f"{n}: layer {slot.index} ({slot.mixer}) has no earlier "
                                                f"{slot.mixer} layer before layer {first} to take its K/V from")
        # Gemma-4's sharing layers build no k / v projection nor k norm (the fact _kv_shared_without_weights);
        # Gemma-3n's store theirs unrun
        shared[slot.index] = replace(slot, kv_shared=True, kv_weights=not f.bool("_kv_shared_without_weights"))
    return shared


def _slots(f: Fields, layers: int, is_moe: bool) -> tuple[list[Slot], str]:
    pure = f.cfg.get("_all_layers")
    if pure is not None:  # a pure SSM stack: one Mamba mixer per layer, no FFN (family_defaults.yaml)
        if pure not in ("mamba", "mamba2"):
            raise f.err("_all_layers", f"unknown layer kind {pure!r} (known: mamba, mamba2)")
        return [Slot("mamba", None, index=i) for i in range(layers)], "_all_layers"
    one = one_block_pattern(f)
    if one is not None:
        field, pairs = one
        if f.has("num_hidden_layers") and f.int("num_hidden_layers", maximum=10_000) != len(pairs):
            raise f.err(field, f"has {len(pairs)} entries for num_hidden_layers = {f.cfg['num_hidden_layers']}")
        if not is_moe and any(ffn == "moe" for _, ffn in pairs):
            raise f.err(field, "has MoE layers but the config declares no routed experts")
        blocks = f.int("num_mem_blocks", default=1) if any(x == "shared" for _, x in pairs) else 1
        uses = [sum(1 for _, x in pairs[:i] if x == "shared") for i in range(len(pairs))]
        # the hybrid layers run the stored blocks in turn (Zamba2Model: itertools.cycle over num_mem_blocks)
        return [Slot(m, None, index=i, shared=uses[i] % blocks) if x == "shared" else Slot(m, x, index=i)
                for i, (m, x) in enumerate(pairs)], field
    mixers, field = mixer_kinds(f, layers)
    if f.bool("_last_layer_full") and mixers and mixers[-1] in ATTENTION_KINDS:
        # the class forces the last layer to full attention whatever layer_types says (Gemma-4's __post_init__)
        mixers = [*mixers[:-1], "full"]
    ffns = ffn_kinds(f, layers, is_moe, mixers)
    blocks = f.opt_int("num_layers") if f.has("num_hidden_layers") and f.has("num_layers") else None
    if blocks and is_moe and blocks < layers:
        # num_layers counts blocks of several attention + dense-FFN sub-layers that share one MoE (LongCat)
        if layers % blocks:
            raise f.err("num_hidden_layers", f"{layers} must be a multiple of num_layers ({blocks})")
        per = layers // blocks
        return [Slot(mixers[i], "dense", extra_moe=(i % per == per - 1), index=i) for i in range(layers)], field
    # Arctic: every MoE layer also runs a dense residual MLP (parallel_attn_mlp_res)
    residual = f.bool("parallel_attn_mlp_res")
    return [Slot(mixers[i], ffns[i], index=i, residual_mlp=residual and ffns[i] == "moe") for i in range(layers)], field
