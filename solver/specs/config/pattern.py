"""The layer pattern: which mixer and which FFN each layer has, read from the config's own conventions.

The mixers are mixer_pattern.py's (its docstring lists their conventions). FFN kinds: dense, moe, none. Read here:
  cross-attention:      cross_attention_layers (Mllama: the listed layers attend to the image tokens)
  shared K/V:           use_cla + cla_share_factor (Hunyuan: in each group of that many layers only the first
                        computes K/V, the others attend with it and hold no k / v projection);
                        num_kv_shared_layers (Gemma-3n: the last N layers attend with the K/V of the last earlier
                        layer of the same attention type; their k / v projections are stored, not run);
                        kv_source_layers (Mistral-Large-4: each layer's source, a borrowing layer holding no K/V
                        projection); no_rope_layers marks NoPE layers (sizes MLA layers only)
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
from solver.specs.config.mixer_pattern import block_config_parts, mixer_kinds, one_block_pattern

# hash_moe: DeepseekV4Config's MoE routed by a token-id table, its count num_hash_layers (derived.py's
# _count_from_types on the family's line)
MLP_LAYER_TYPE = {"dense": "dense", "mlp": "dense", "moe": "moe", "sparse": "moe", "hash_moe": "moe"}


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


def ffn_kinds(f: Fields, layers: int, is_moe: bool, mixers: list[str | None]) -> list[str | None]:
    cfg = f.cfg
    if isinstance(cfg.get("block_configs"), list):
        return ["dense" if runs else None for runs in block_config_parts(f, "ffn", layers)]
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
