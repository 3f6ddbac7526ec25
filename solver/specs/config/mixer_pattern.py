"""Which mixer each layer has, read from the config's own conventions (pattern.py composes it with the FFNs).

Mixer kinds: full, sliding, chunked (softmax attention, windowed or not), block_sparse, linear, mamba, conv, rglru,
none. Conventions read, in order of precedence:
  one block per layer:  hybrid_override_pattern ("M" Mamba, "E" MoE, "*" attention, "-" MLP) or
                        layers_block_type (mamba / moe / attention / mlp, or the family's own mixer names:
                        _layer_type_kinds), Nemotron-H
  whole stack:          _all_layers (a pure Mamba / Mamba-2 stack, a family fact)
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
                        attention_chunk_size + no_rope_layer_interval; sliding_window unless use_sliding_window is
                        false: the layers from max_window_layers on, every layer where it is not given (every
                        layer, whatever those two say, under the family fact _window_every_layer: Mistral's lineage)
Every list must have one entry per layer and every entry must be known: anything else is an InputError naming the
field and the value.
"""
from __future__ import annotations

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


# layers_block_type entries only some families' layers hold, with why another is refused
UNMODELLED_BLOCK_TYPE = {
    "hybrid": "a Mamba layer that also runs an attention + MLP block shared across layers, which model_type {type!r} "
              "has no convention for (the zamba / zamba2 lines say how theirs is sized)",
}


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
        return ["full" if runs else None for runs in block_config_parts(f, "attention", layers)], "block_configs"
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
    rule = cfg.get("_window")  # the family's own window field (Inkling-2's sliding_window_size)
    own_window = isinstance(rule, dict) and f.has(str(rule.get("field")))
    if every and (f.has("sliding_window") or own_window):
        # the family's class builds its own layer_types: every N-th layer from the first global, the rest slide
        # (Gemma4TextConfig's __post_init__, 5 : 1); a stack shorter than N slides throughout
        n = int(every)
        return ["full" if (i + 1) % n == 0 else "sliding" for i in range(layers)], "_global_every"
    if f.has("attention_chunk_size") and f.has("no_rope_layer_interval"):
        n = f.int("no_rope_layer_interval", maximum=max(layers, 1))
        return ["full" if (i + 1) % n == 0 else "chunked" for i in range(layers)], "no_rope_layer_interval"
    if f.has("sliding_window") and f.bool("_window_every_layer"):
        # the family's attention reads config.sliding_window in every layer and nothing switches it (MistralAttention,
        # Phi3Attention, ...): use_sliding_window and max_window_layers, where written, are said (window_switches_note)
        return ["sliding"] * layers, "sliding_window"
    if f.has("sliding_window") and f.bool("use_sliding_window", default=True):
        # the layers from max_window_layers on slide (Qwen2Config / Qwen3Config / Dots1Config build layer_types so,
        # their class default in family_defaults.yaml); without it every layer slides (Qwen3MoeConfig's
        # use_sliding_window windows the whole stack, as Mistral's sliding_window alone does)
        if f.has("max_window_layers"):
            first = f.int("max_window_layers", minimum=0)
            if f.bool("_window_even_below"):  # Qwen2MoeConfig: the even layers below max_window_layers slide
                return ["sliding" if i % 2 == 0 and i < first else "full" for i in range(layers)], "max_window_layers"
            return ["sliding" if i >= first else "full" for i in range(layers)], "max_window_layers"
        return ["sliding"] * layers, "sliding_window"
    return ["full"] * layers, ""


WINDOW_SWITCHES = ("use_sliding_window", "max_window_layers")


def window_switches_note(f: Fields) -> str | None:
    """The note for the window switches a config writes under _window_every_layer (a family whose class reads
    neither: sliding_window windows every layer), None where there is none to say."""
    if not f.bool("_window_every_layer"):
        return None
    written = [f.path(k) for k in WINDOW_SWITCHES if f.cfg.get(k) is not None]
    if not written:
        return None
    where = "every layer" if f.has("sliding_window") else "no layer (sliding_window is unset)"
    return (f"{', '.join(written)}: not read; model_type {f.cfg.get('model_type')!r} windows {where} by sliding_window "
            "alone")


def block_config_parts(f: Fields, part: str, layers: int) -> list[bool]:
    """Whether each layer runs its `part` ("attention" or "ffn") by block_configs, one entry per layer (Nemotron's
    per-layer blocks): an object each, no_op skipping it; replace_with_linear is refused."""
    blocks = f.cfg["block_configs"]
    if len(blocks) != layers:
        raise f.err("block_configs", f"has {len(blocks)} entries for {layers} layers")
    out = []
    for i, b in enumerate(blocks):
        entry = b.get(part) if isinstance(b, dict) else None
        if not isinstance(entry, dict):
            raise f.err(f"block_configs[{i}].{part}", "must be an object")
        if entry.get("replace_with_linear"):
            raise f.err(f"block_configs[{i}].{part}.replace_with_linear", "not supported (true)")
        out.append(not entry.get("no_op"))
    return out
