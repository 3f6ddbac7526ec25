"""ModelSpec: a model as an ordered stack of typed layers plus the modules outside the stack.

`parse_model_config` reads a Hugging Face `config.json` by convention (specs/config/: pattern.py for the
layer pattern, blocks.py for the block sizes, encoders.py for vision / audio towers, quant.py for the
checkpoint formats); `family_defaults.yaml` supplies what an architecture class fixes without writing it.
The flat attributes older callers read (num_attention_heads, is_moe, num_experts, ...) are derived from the
stack: the "primary" attention mixer is the first one whose KV grows with the sequence, the primary MoE the
first MoE block. Sizing code iterates the stack instead.
"""
from __future__ import annotations

import math
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any, Literal

from dataclasses import dataclass, field

from solver.errors import InputError
from solver.specs.config.blocks import BlockReader
from solver.specs.config.encoders import Encoder, image_tokens, read_encoders
from solver.specs.config.fields import MAX_LAYERS, Fields, ReadRecorder
from solver.specs.config.outside import layernorm_bias, outside_stack
from solver.specs.config.pattern import Slot, one_block_pattern, slots
from solver.specs.config.quant import QuantSpec, read_quant
from solver.specs.config.unread import check_unread, refuse_uncountable
from solver.specs.layers import MLA, Attention, CompressedAttention, DenseFFN, Layer, MoE, grouped
from solver.specs.layers.base import block_counts, compact
from solver.specs.layers.base import Block
from solver.specs.validation import load_yaml

Architecture = Literal["dense", "moe", "moe+mla", "moe+dsa", "dense+mla", "hybrid-attention", "hybrid-linear",
                       "hybrid-ssm", "hybrid-conv", "moe+hybrid-linear", "moe+hybrid-ssm", "moe+hybrid-conv", "ssm"]
AttentionKind = Literal["gqa", "mla", "dsa", "csa", "none"]
LARGE_VOCAB = 100_000  # seed: a vocabulary over 100K -> set embed/lm_head TP independently of the backbone

__all__ = ["ModelSpec", "QuantSpec", "parse_model_config", "LARGE_VOCAB"]


@dataclass(frozen=True, kw_only=True)
class ModelSpec:
    """A parsed model. A plain frozen dataclass, not a pydantic model: `parse_model_config` validates every field
    it reads (`Fields`), and keeping pydantic off this path keeps `inspect` from importing it."""

    name: str
    model_type: str
    hidden_size: int
    vocab_size: int
    tie_word_embeddings: bool = False
    layers: tuple[Layer, ...]
    # next-n (MTP) modules: each a tuple of layers plus its glue (eh_proj 2H -> H and three norms)
    mtp_modules: tuple[tuple[Layer, ...], ...] = ()
    mtp_checkpoint_copies: bool = False  # DeepSeek layout: each MTP module stores embedding + head copies
    encoders: tuple[Encoder, ...] = ()
    max_position_embeddings: int | None = None
    context_field: str = "max_position_embeddings"  # the config field max_position_embeddings was read from
    pattern_source: str = ""  # the config field the layer pattern came from
    quant: QuantSpec = field(default_factory=QuantSpec)
    warnings: tuple[str, ...] = ()
    nonstandard_modules: tuple[str, ...] = ()
    # outside the stack, by the family's conventions (family_defaults.yaml)
    position_embeddings: int = 0  # rows of a learned absolute position table (GPT-2's wpe, OPT's +2); 0: none
    embedding_norm: bool = False  # a norm on the token embedding (BLOOM's word_embeddings_layernorm)
    final_norm: bool = True  # the norm before the head carries weights (not OLMo-1's non-parametric LayerNorm)
    norm_bias: bool = False  # the norms outside the stack are LayerNorms with a bias
    lm_head_bias: bool = False  # the head has a bias per vocabulary entry (Phi-2, Phi-3.5-MoE)
    embedding_extra_rows: int = 0  # rows the token embedding holds beyond vocab_size (Mllama: 8), not the head

    # ------------------------------------------------------------------------------------- the stack

    @cached_property
    def layer_groups(self) -> list[tuple[Layer, int]]:
        """Distinct layers with their counts (what the estimators iterate)."""
        return grouped(self.layers)

    @cached_property
    def blocks(self) -> list[Block]:
        return [b for layer in self.layers for b in layer.blocks]

    @cached_property
    def block_groups(self) -> list[tuple[Block, int]]:
        """Distinct blocks of the stack with their counts (equal blocks in different layers add up)."""
        return block_counts(self.layer_groups)

    def stack_label(self) -> str:
        """Compact stack, e.g. `3 x [MLA ... + FFN 18432], 58 x [MLA ... + MoE 8/256 x 2048 + shared 2048]`;
        repeating groups fold: `12 x (3 x [GatedDeltaNet ...] + 1 x [GQA ...])`."""
        return compact(self.layers)

    @cached_property
    def _attention(self) -> Block | None:
        """Primary attention mixer: the first whose KV grows with the sequence."""
        growing = [b for b in self.blocks if isinstance(b, (Attention, MLA, CompressedAttention))
                   and getattr(b, "caches_kv", True)]  # not a layer borrowing K/V, nor cross-attention
        full = [b for b in growing if not getattr(b, "window", None)]
        return (full or growing or [None])[0]

    @cached_property
    def _moe(self) -> MoE | None:
        return next((b for b in self.blocks if isinstance(b, MoE)), None)

    @cached_property
    def _dense(self) -> DenseFFN | None:
        return next((b for b in self.blocks if isinstance(b, DenseFFN)), None)

    # ------------------------------------------------------------- derived attributes (older callers)

    @cached_property
    def num_layers(self) -> int:
        return len(self.layers)

    @cached_property
    def num_dense_layers(self) -> int:
        return sum(1 for layer in self.layers if any(isinstance(b, DenseFFN) for b in layer.blocks))

    @cached_property
    def num_moe_layers(self) -> int:
        return sum(1 for layer in self.layers if any(isinstance(b, MoE) for b in layer.blocks))

    @property
    def num_mtp_layers(self) -> int:
        return len(self.mtp_modules)

    @cached_property
    def is_moe(self) -> bool:
        return self._moe is not None

    @cached_property
    def has_mla(self) -> bool:
        return isinstance(self._attention, MLA)

    @cached_property
    def has_dsa(self) -> bool:
        return isinstance(self._attention, MLA) and self._attention.indexer is not None

    @property
    def attention_kind(self) -> AttentionKind:
        a = self._attention
        if a is None:
            return "none"
        if isinstance(a, CompressedAttention):
            return "csa"
        return "dsa" if self.has_dsa else ("mla" if self.has_mla else "gqa")

    @cached_property
    def architecture(self) -> str:
        kinds = {type(b).__name__ for b in self.blocks if b.role == "mixer"}
        moe = "moe" if self.is_moe else "dense"
        if kinds & {"GatedDeltaNet", "Lightning", "KDA"}:
            return f"{moe}+hybrid-linear" if self.is_moe else "hybrid-linear"
        if kinds & {"Mamba2", "Mamba1"}:
            if self.attention_kind == "none" and not self.is_moe:  # a pure SSM stack (Mamba, Mamba-2)
                return "ssm"
            return f"{moe}+hybrid-ssm" if self.is_moe else "hybrid-ssm"
        if "ShortConv" in kinds:  # LFM2: gated short convolutions beside attention
            return f"{moe}+hybrid-conv" if self.is_moe else "hybrid-conv"
        if "CompressedAttention" in kinds:
            return f"{moe}+csa"
        if self.has_mla:
            return f"{moe}+dsa" if self.has_dsa and self.is_moe else (f"{moe}+mla" if self.is_moe or not self.has_dsa
                                                                      else "dense+mla")
        if 0 < self.num_local_attention_layers < self.num_layers:
            return "hybrid-attention"
        return moe

    @cached_property
    def has_dense_ffn(self) -> bool:
        return self._dense is not None

    @property
    def has_large_vocab(self) -> bool:
        return self.vocab_size > LARGE_VOCAB

    def _attr(self, name: str, default: Any = None) -> Any:
        return getattr(self._attention, name, default) if self._attention is not None else default

    @cached_property
    def num_attention_heads(self) -> int:
        """Heads attention TP must divide: the gcd over every mixer's head groups (attention heads, linear
        key / value heads, Mamba heads and groups), so a TP size valid for this number is valid for all."""
        units = [u for b in self.blocks if b.role == "mixer" for u in _tp_units(b)]
        return math.gcd(*units) if units else 1

    @cached_property
    def num_key_value_heads(self) -> int:
        kv = [b.kv_heads for b in self.blocks if isinstance(b, Attention)]
        if self.has_mla or not kv:
            return self.num_attention_heads
        return math.gcd(*kv)

    @property
    def head_dim(self) -> int:
        return int(self._attr("head_dim", 0))

    @property
    def v_head_dim(self) -> int:
        return int(self._attr("v_head_dim", 0))

    @property
    def o_proj_dim(self) -> int:
        """Input width of o_proj: N_h * v_head_dim (the seed's o_proj TP divisibility constraint)."""
        return int(self._attr("o_dim", 0))

    @property
    def kv_lora_rank(self) -> int | None:
        return self._attr("kv_lora_rank")

    @property
    def q_lora_rank(self) -> int | None:
        return self._attr("q_lora_rank")

    @property
    def qk_rope_head_dim(self) -> int | None:
        return self._attr("qk_rope_head_dim")

    @property
    def qk_nope_head_dim(self) -> int | None:
        return self._attr("qk_nope_head_dim")

    @property
    def index_n_heads(self) -> int | None:
        return self._attention.indexer.heads if self.has_dsa else None  # type: ignore[union-attr]

    @property
    def index_head_dim(self) -> int | None:
        return self._attention.indexer.head_dim if self.has_dsa else None  # type: ignore[union-attr]

    @property
    def index_topk(self) -> int | None:
        return self._attention.indexer.topk if self.has_dsa else None  # type: ignore[union-attr]

    @cached_property
    def num_local_attention_layers(self) -> int:
        return sum(1 for b in self.blocks if isinstance(b, Attention) and b.window)

    @cached_property
    def local_attention_window(self) -> int | None:
        return next((b.window for b in self.blocks if isinstance(b, Attention) and b.window), None)

    @property
    def num_global_attention_layers(self) -> int:
        return self.num_layers - self.num_local_attention_layers

    @property
    def intermediate_size(self) -> int:
        if self._dense is not None:
            return self._dense.inter
        return self._moe.inter if self._moe is not None else 0

    @property
    def moe_intermediate_size(self) -> int | None:
        return self._moe.inter if self._moe else None

    @property
    def num_experts(self) -> int:
        return self._moe.experts if self._moe else 0

    @property
    def num_zero_experts(self) -> int:
        return self._moe.zero_experts if self._moe else 0

    @property
    def experts_per_token(self) -> int:
        return self._moe.topk if self._moe else 0

    @property
    def num_shared_experts(self) -> int:
        return 1 if self._moe and self._moe.shared_inter else 0

    @property
    def shared_expert_intermediate_size(self) -> int | None:
        return self._moe.shared_inter if self._moe and self._moe.shared_inter else None

    @property
    def expert_slots(self) -> int:
        return self._moe.slots if self._moe else 0

    @property
    def real_experts_per_token(self) -> float:
        return self._moe.real_topk if self._moe else 0.0


def _tp_units(b: Block) -> list[int]:
    # attention TP splits query heads (KV heads replicate beyond their count), linear key and value heads,
    # Mamba heads and their B/C groups
    for names in (("key_heads", "value_heads"), ("heads", "groups"), ("heads",)):
        if all(hasattr(b, n) for n in names):
            return [getattr(b, n) for n in names]
    return []


# ---------------------------------------------------------------------------------------------- parsing

_DEFAULTS_PATH = Path(__file__).parent / "config" / "family_defaults.yaml"
# wrapper keys whose values belong to the whole checkpoint, lifted into the text config when it lacks them
# where the longest position the model was built for is written, first given wins
CONTEXT_FIELDS = ("max_position_embeddings", "n_positions", "seq_length")
_LIFTED = ("architectures", "quantization_config", "tie_word_embeddings", "torch_dtype", "dtype")
_KNOWN_TYPES_NOTE = "sizes read from the config's own fields by convention"


@lru_cache(maxsize=1)
def _family_defaults() -> dict[str, dict[str, Any]]:
    return load_yaml(_DEFAULTS_PATH) or {}


def _text_config(raw: dict[str, Any], origin: str) -> tuple[dict[str, Any], str]:
    """Multimodal wrappers keep the language model under text_config (or llm_config / language_config)."""
    for key in ("text_config", "llm_config", "language_config"):
        if key not in raw:
            continue
        text = raw[key]
        if not isinstance(text, dict):  # else the top level would be read in its place, and its error misnamed
            got = "null" if text is None else type(text).__name__
            raise InputError(origin, f"{key}: must be a JSON object (the language model's config), got {got}")
        if isinstance(text, dict) and text:
            merged = dict(text)
            for k in _LIFTED:
                if k in raw and k not in merged:
                    merged[k] = raw[k]
            merged.setdefault("model_type", raw.get("model_type", ""))
            return merged, f"{key}."
    return raw, ""


def _wrapper_fields_read_nested(raw: dict[str, Any], text: dict[str, Any], prefix: str, read: set,
                                origin: str) -> None:
    """A field the parser reads from the nested language-model config, also given at the wrapper's top level
    with another value (or only there), would be dropped unread: the nested one (or its default) sizes the
    model. One error naming it (the wrapper's own fields, lifted where the nested config lacks them, excepted)."""
    for key in raw:
        if key in _LIFTED or key == "model_type" or key == prefix.rstrip(".") or key not in read:
            continue
        if key not in text:
            raise InputError(origin, f"{key}: given at the top level ({raw[key]!r}) but the language model is read "
                                     f"from {prefix.rstrip('.')}, which lacks it; move it into {prefix.rstrip('.')}")
        if raw[key] != text[key]:
            raise InputError(origin, f"{key}: the top level says {raw[key]!r} and {prefix}{key} says {text[key]!r}; "
                                     f"the language model is read from {prefix.rstrip('.')}: drop or fix the top-level one")


def _apply_defaults(cfg: dict[str, Any], wrapper_type: str, nested: bool = False,
                    taken: list[str] | None = None) -> tuple[dict[str, Any], bool]:
    """The family's defaults where the config leaves a field out. A language model nested in a wrapper
    (text_config) also takes the wrapper's default text config (its _text_config_defaults): transformers writes
    a nested config as its diff against the wrapper's default one (to_diff_dict), so a field equal to that
    default is left out there (LLaVA's text_config writes no hidden_size for a 4096-wide Llama)."""
    table = _family_defaults()
    known = False
    out = dict(cfg)
    for t in (str(cfg.get("model_type") or ""), wrapper_type):
        if t in table:
            known = True
            family = table[t] or {}
            for k, v in family.items():
                if k != "_text_config_defaults" and out.get(k) is None:
                    out[k] = v
            if nested and t == wrapper_type:
                for k, v in (family.get("_text_config_defaults") or {}).items():
                    if k not in out:
                        out[k] = v
                        if taken is not None:
                            taken.append(k)
    return out, known


def _layer_count(f: Fields) -> int:
    for key in ("num_hidden_layers", "n_layer", "num_layers"):
        if f.has(key):
            return f.int(key, maximum=MAX_LAYERS)
    for key in ("hybrid_override_pattern", "layers_block_type", "layer_types", "block_configs"):
        if isinstance(f.cfg.get(key), (list, str)) and f.cfg.get(key):
            return len(f.cfg[key])
    return f.int("num_hidden_layers", maximum=MAX_LAYERS)


def _mtp(f: Fields, reader: BlockReader, stack: tuple[Layer, ...]) -> tuple[tuple[tuple[Layer, ...], ...], bool]:
    """Next-n modules: num_nextn_predict_layers (DeepSeek layout: copies of embedding and head in each),
    mtp_num_hidden_layers (Qwen3.5), num_mtp_modules x mtp_transformer_layers (MiniMax); the layers of one
    module follow mtp_hybrid_override_pattern / mtp_layers_block_type when given, else one decoder layer
    with the model's full attention and its FFN type (MoE when the model has one)."""
    n = f.int("num_nextn_predict_layers", default=0, minimum=0, maximum=64)
    copies = n > 0
    per_module = 1
    if not n:
        n = f.int("mtp_num_hidden_layers", default=0, minimum=0, maximum=64)
    if not n and f.has("num_mtp_modules") and f.cfg.get("use_mtp", True):
        n = f.int("num_mtp_modules", minimum=0, maximum=64)
        per_module = f.int("mtp_transformer_layers", default=1, maximum=64)
    if not n:
        return (), False
    pattern = None
    if f.has("mtp_hybrid_override_pattern"):
        sub = Fields({"hybrid_override_pattern": f.cfg["mtp_hybrid_override_pattern"]}, f.origin, f.prefix)
        pattern = one_block_pattern(sub)
    elif f.has("mtp_layers_block_type"):
        sub = Fields({"layers_block_type": f.cfg["mtp_layers_block_type"]}, f.origin, f.prefix)
        pattern = one_block_pattern(sub)
    if pattern is not None:
        layers = []
        for mixer, ffn in pattern[1]:
            slot = Slot(mixer, ffn, index=len(stack) - 1)
            layers.append(Layer(tuple(x for x in ((reader.mixer(slot),) + reader.ffns(slot)) if x is not None),
                                reader.h, 1))
        module = tuple(layers)
    else:
        slot = Slot("full", "moe" if reader.is_moe else "dense", index=len(stack) - 1)
        if f.has("compress_ratios"):
            slot = Slot("compressed", slot.ffn, index=len(stack))
        mixer = reader.mixer(slot) if slot.mixer == "compressed" else next((layer.mixer for layer in reversed(stack) if isinstance(layer.mixer, (Attention, MLA))
                      and not getattr(layer.mixer, "window", None) and getattr(layer.mixer, "caches_kv", True)),
                      None) or reader.mixer(slot)
        ffn = reader.ffns(slot)
        module = (Layer((mixer,) + ffn, reader.h, reader.norms, reader.hyper_params()),) * per_module  # type: ignore[operator]
    return tuple(module for _ in range(n)), copies


def parse_model_config(raw: Any, name: str, origin: str | None = None) -> ModelSpec:
    """Parse a config.json dict into a ModelSpec. Raises InputError naming the offending field."""
    origin = origin or name
    if not isinstance(raw, dict):
        raise InputError(origin, f"config must be a JSON object, got {type(raw).__name__}")
    text, prefix = _text_config(raw, origin)
    wrapper_type = str(raw.get("model_type") or "")
    from_wrapper: list[str] = []  # fields the nested config leaves to the wrapper's default text config
    defaulted, known = _apply_defaults(text, wrapper_type, nested=text is not raw, taken=from_wrapper)
    cfg = ReadRecorder(defaulted)
    f = Fields(cfg, origin, prefix)
    warnings: list[str] = []
    model_type = str(cfg.get("model_type") or "")
    refuse_uncountable(f)
    if not known and model_type:
        warnings.append(f"model_type {model_type!r} is not in the family defaults; {_KNOWN_TYPES_NOTE}")

    hidden = f.int("hidden_size", "d_model", "n_embd", "n_embed")
    vocab = f.int("padded_vocab_size", "vocab_size")  # ChatGLM: the table holds the padded vocabulary
    n_layers = _layer_count(f)
    images = image_tokens(raw, origin) if f.cfg.get("cross_attention_layers") else None
    reader = BlockReader(f, hidden, n_layers, images)
    layer_slots, source = slots(f, n_layers, reader.is_moe)
    if len(layer_slots) != n_layers:
        n_layers = len(layer_slots)
        reader = BlockReader(f, hidden, n_layers, images)
    norms = reader.norms
    norm_bias = layernorm_bias(f)
    stack: list[Layer] = []
    parallel_ssm = f.bool("_parallel_mamba")  # Falcon-H1: attention and Mamba-2 side by side in every layer
    for slot in layer_slots:
        side = (reader.mamba(),) if parallel_ssm and slot.mixer in ("full", "sliding", "chunked") else ()
        blocks = tuple(b for b in ((reader.mixer(slot),) + side + reader.ffns(slot)) if b is not None)
        per_layer_norms = norms if slot.mixer and slot.ffn else 1 if (slot.mixer or slot.ffn) else 0
        stack.append(Layer(blocks, hidden, per_layer_norms, reader.hyper_params(), norm_bias))
    layers = tuple(stack)
    if images is not None:
        warnings.append(f"cross-attention layers ({sum(1 for s in layer_slots if s.mixer == 'cross')}) hold the K/V "
                        f"of one image per request: {images} tokens (vision_config.max_num_tiles x "
                        "((image_size / patch_size)^2 + 1)), a constant state per sequence")
    mtp, copies = _mtp(f, reader, layers)
    warnings += reader.notes
    facts = {k: v for k, v in defaulted.items() if str(k).startswith("_vision_")}
    encoders = tuple(read_encoders(raw, hidden, origin, warnings, facts, _family_defaults()))
    nonstandard = [e.name for e in encoders]
    for key in ("ngram_embedding", "engram"):
        if raw.get(key):
            nonstandard.append(key)
            warnings.append(f"{key}: not counted (no sizing convention for it); the totals exclude it")
    quant = read_quant(cfg, origin, warnings)
    # LFM2's config class reads tie_embedding in place of tie_word_embeddings when both are given
    tie = f.bool(f.first("tie_embedding", "tie_word_embeddings") or "tie_word_embeddings")
    # the longest position the model was built for: GPT-2's lineage names it n_positions, ChatGLM seq_length
    context_field = f.first(*CONTEXT_FIELDS) or CONTEXT_FIELDS[0]
    max_pos = f.opt_int(*CONTEXT_FIELDS, maximum=2**40)
    outside = outside_stack(f, hidden)
    if prefix:  # before check_unread, which looks at every key left
        _wrapper_fields_read_nested(raw, text, prefix, set(cfg.looked_up), origin)
    read = [k for k in from_wrapper if k in cfg.looked_up]
    if read:
        warnings.append(f"{prefix}{', '.join(read)}: not written; read as {wrapper_type}'s default text config "
                        "(a nested config is written as its difference from that default)")
    check_unread(f, cfg, model_type, known, warnings)
    return ModelSpec(
        name=name, model_type=model_type, hidden_size=hidden, vocab_size=vocab,
        tie_word_embeddings=tie, layers=layers, mtp_modules=mtp,
        mtp_checkpoint_copies=copies, encoders=encoders,
        max_position_embeddings=max_pos, context_field=context_field,
        pattern_source=source, quant=quant, warnings=tuple(warnings), nonstandard_modules=tuple(nonstandard),
        norm_bias=norm_bias, **outside,
    )

