"""ModelSpec: a model as an ordered stack of typed layers plus the modules outside the stack.

`parse_model_config` (specs/config/read.py) reads a Hugging Face `config.json` by convention (specs/config/:
pattern.py for the layer pattern, blocks.py for the block sizes, encoders.py for vision / audio towers, quant.py
for the checkpoint formats); `family_defaults.yaml` supplies what an architecture class fixes without writing it.
The flat attributes older callers read (num_attention_heads, is_moe, num_experts, ...) are derived from the
stack: the "primary" attention mixer is the first one whose KV grows with the sequence, the primary MoE the
first MoE block. Sizing code iterates the stack instead.
"""
from __future__ import annotations

import math
from functools import cached_property
from typing import Any, Literal

from dataclasses import dataclass, field, replace

from solver.specs.dtypes import KV16
from solver.specs.config.encoders import Encoder
from solver.specs.config.quant import QuantSpec
from solver.specs.context import RopeScaling
from solver.specs.layers import MLA, Attention, CompressedAttention, DenseFFN, Layer, MoE, grouped
from solver.specs.layers.base import block_counts, compact
from solver.specs.layers.base import Block
from solver.specs.layers.per_layer_input import PerLayerInputs
from solver.specs.layers.self_conditioning import SelfConditioning

Architecture = Literal["dense", "moe", "moe+mla", "moe+dsa", "dense+mla", "hybrid-attention", "hybrid-linear",
                       "hybrid-ssm", "hybrid-conv", "moe+hybrid-linear", "moe+hybrid-ssm", "moe+hybrid-conv", "ssm"]
AttentionKind = Literal["gqa", "mla", "dsa", "csa", "none"]
LARGE_VOCAB = 100_000  # seed: a vocabulary over 100K -> set embed/lm_head TP independently of the backbone

__all__ = ["ModelSpec", "QuantSpec", "LARGE_VOCAB"]


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
    # the config's RoPE scalings, which an engine may multiply the context by (specs/context.derived_context)
    rope_scalings: tuple[RopeScaling, ...] = ()
    pattern_source: str = ""  # the config field the layer pattern came from
    # the layer each layer reads its K/V from where the config names it (kv_source_layers), its own index where it
    # caches its own; () where no layer names one (CLA and Gemma-3n read the nearest: model_rules.kv_sharing_split)
    kv_sources: tuple[int, ...] = ()
    # layers the engines' pipeline split keeps on one stage: a config layer of several sub-layers sharing one MoE
    # (LongCat's num_layers blocks, each an engine's decoder layer) is one layer to it (model_rules.stage_sizes)
    stage_unit: int = 1
    # the layers of each pipeline stage as a command runs them (a pasted VLLM_PP_LAYER_PARTITION, or an engine's own
    # split of a remainder): model_rules.model_stage_sizes reads it where its stages match pp; (): balanced
    stage_layers: tuple[int, ...] = ()
    quant: QuantSpec = field(default_factory=QuantSpec)
    warnings: tuple[str, ...] = ()
    nonstandard_modules: tuple[str, ...] = ()
    # outside the stack, by the family's conventions (family_defaults.yaml)
    position_embeddings: int = 0  # rows of a learned absolute position table (GPT-2's wpe, OPT's +2); 0: none
    # rope / alibi / learned / none (config/positions.py): what the context length limits (notes.context_notes)
    position_encoding: str = "rope"
    embedding_norm: bool = False  # a norm on the token embedding (BLOOM's word_embeddings_layernorm)
    embedding_norm_bias: bool = False  # that norm is a LayerNorm with a bias whatever norm_bias says (stable embedding)
    final_norm: bool = True  # the norm before the head carries weights (not OLMo-1's non-parametric LayerNorm)
    norm_bias: bool = False  # the norms outside the stack are LayerNorms with a bias
    lm_head_bias: bool = False  # the head has a bias per vocabulary entry (Phi-2, Phi-3.5-MoE)
    lm_head_scale: bool = False  # the head scales each vocabulary entry's logit by a learned factor (Dory)
    stack_vectors: int = 0  # learned hidden-size vectors outside the layers (HRM-Text's z_L_init), replicated
    rope_scales: int = 0  # learned scales of the rotary's inverse frequencies (LeRoPE's alpha), replicated
    # weights of a transform between the final norm and the head (ModernBERT's prediction head: a dense h x h and a
    # norm), counted with the head
    head_transform: int = 0
    # weights of the final collapse of the hyper-connection streams before the final norm (DeepseekV4HyperHead:
    # layers/hyper.head_weights), held fp32 and replicated with the head; 0: none
    hyper_head: int = 0
    embedding_extra_rows: int = 0  # rows the token embedding holds beyond vocab_size (Mllama: 8), not the head
    # the token embedding's and the head's width where it differs from the stack's (OPT-350m's word_embed_proj_dim):
    # bias-free project_in (width -> hidden) after the lookup and project_out (hidden -> width) before the head,
    # replicated; 0: the stack's hidden_size, no projections
    embedding_width: int = 0
    # per-layer input embeddings beside the token embedding (hidden_size_per_layer_input: a table of layers x width
    # per vocabulary row, its model projection and norm; layers/per_layer_input.py), held with the embedding; None: none
    per_layer_inputs: PerLayerInputs | None = None
    # a self-conditioning MLP over the previous denoising step's soft embeddings, added to the input embeddings
    # (layers/self_conditioning.py), held with the embedding; None: none
    self_conditioning: SelfConditioning | None = None
    # the config names modelling code of its own (auto_map): an engine loads such a checkpoint only when told to
    # trust that code (the launch's `remote_code` name; solver.launch.emit)
    remote_code: bool = False

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
        repeating groups fold: `12 x (3 x [GatedDeltaNet ...] + 1 x [GQA ...])`. A looped stack (layers stored once,
        run in several passes: SharedRef.whole) is folded as its passes, after how many layers it stores."""
        looped = [layer.shared.index for layer in self.layers if layer.shared is not None and layer.shared.whole]
        if not looped:
            return compact(self.layers)
        passes = tuple(replace(layer, shared=None) if layer.shared is not None and layer.shared.whole else layer
                       for layer in self.layers)
        return f"{len(set(looped))} stored layers run in {len(looped)} passes: {compact(passes)}"

    @cached_property
    def residual_streams(self) -> int:
        """Residual streams of `hidden` a token carries between layers: a hyper-connection layer's streams
        (layers/hyper.py) or AltUp's copies of the hidden state (layers/altup.py), 1 otherwise."""
        copies = (getattr(b, "residual_copies", 1) for b in self.blocks)
        return max(max((layer.hyper.streams for layer in self.layers if layer.hyper), default=1),
                   max(copies, default=1))

    @property
    def residual_width(self) -> int:
        """Values a token carries between layers (what a pipeline stage hands to the next): streams x hidden."""
        return self.residual_streams * self.hidden_size

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

    def towers_as(self, towers: str, unloaded: tuple[str, ...] = ()) -> "ModelSpec":
        """The model with its vision / audio towers as a command runs them (FrameworkProfile.tower_flags): "engine"
        as the engine's layout places them, "whole" replicated on every rank, "none" not loaded; the towers named
        in `unloaded` (Encoder.name) not loaded whatever `towers` says."""
        if towers == "engine" and not unloaded or not self.encoders:
            return self
        if towers == "none":
            return replace(self, encoders=())
        return replace(self, encoders=tuple(replace(e, replicated=towers == "whole" or e.replicated)
                                            for e in self.encoders if e.name not in unloaded))

    def with_stage_layers(self, engine_layers: tuple[int, ...]) -> "ModelSpec":
        """The model as a command splits it over pipeline stages: `engine_layers`, the engine's decoder layers of
        each stage (stage_unit layers each); () the balanced split (model_rules.stage_sizes)."""
        return replace(self, stage_layers=tuple(n * self.stage_unit for n in engine_layers))

    def without_next_n(self) -> "ModelSpec":
        """The model as an engine runs it under a lookup draft (ngram): its next-n (MTP) modules neither loaded nor
        run, so a step verifies the drafts with the target alone (no draft pass, no MTP weights or cache)."""
        return replace(self, mtp_modules=()) if self.mtp_modules else self

    @cached_property
    def is_moe(self) -> bool:
        return self._moe is not None

    @cached_property
    def has_mla(self) -> bool:
        return isinstance(self._attention, MLA)

    @cached_property
    def has_dsa(self) -> bool:
        return isinstance(self._attention, MLA) and self._attention.indexer is not None

    @cached_property
    def recurrent_mixers(self) -> tuple[str, ...]:
        """Kinds of the mixers that carry a state from token to token (Block.scans_tokens: Mamba, linear
        attention, short convolution, RG-LRU), in the order they first appear: an engine whose token split has no
        path for them refuses the split (a framework rule's has_recurrent_mixer)."""
        return tuple(dict.fromkeys(b.kind for b in self.blocks if b.role == "mixer" and b.scans_tokens))

    @cached_property
    def has_sliding_window(self) -> bool:
        """A mixer keeps a sliding window of raw keys (a windowed Attention that is not chunked; DeepSeek-V4's
        compressed attention beside its raw window): an engine whose cache for such a window has no split of the
        sequence refuses one (a framework rule's has_sliding_window). Chunked windows (Llama-4) are not one."""
        return any(b.role == "mixer" and getattr(b, "window", None) and not getattr(b, "chunked", False)
                   for b in self.blocks)

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
        if kinds & {"Mamba2", "Mamba1", "RGLRU"}:  # a recurrent state per request (RG-LRU: RecurrentGemma)
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
    def has_dense_module(self) -> bool:
        """A dense FFN or shared experts: what dense_tp_size splits (the "dense" weight group)."""
        return self.has_dense_ffn or bool(self.num_shared_experts)

    @property
    def embed_width(self) -> int:
        """The width of the token embedding and of the head's input (the stack's, unless embedding_width says)."""
        return self.embedding_width or self.hidden_size

    @property
    def has_large_vocab(self) -> bool:
        return self.vocab_size > LARGE_VOCAB

    def _attr(self, name: str, default: Any = None) -> Any:
        return getattr(self._attention, name, default) if self._attention is not None else default

    @cached_property
    def num_attention_heads(self) -> int:
        """Heads attention TP must divide: the gcd over every mixer's head groups (attention heads, linear
        key / value heads, Mamba heads and groups), so a TP size valid for this number is valid for all."""
        units = [u for _, _, u in self.tp_units]
        return math.gcd(*units) if units else 1

    @cached_property
    def tp_units(self) -> tuple[tuple[str, str, int], ...]:
        """(block kind, unit, count) of every distinct mixer's head groups attention TP splits: what a refusal names
        when a TP size does not divide num_attention_heads, their gcd."""
        out: dict[tuple[str, str, int], None] = {}
        for b in self.blocks:
            if b.role == "mixer":
                out.update((u, None) for u in ((b.kind, name, n) for name, n in _tp_units(b)))
        return tuple(out)

    @cached_property
    def attention_heads_gcd(self) -> int:
        """The gcd of the attention mixers' own query heads (0: no attention): whether num_attention_heads, the
        gcd over every mixer, is the attention's number or another mixer's (a refusal names the right one)."""
        heads = [b.heads for b in self.blocks if isinstance(b, (Attention, MLA, CompressedAttention))]
        return math.gcd(*heads) if heads else 0

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
    def keys_monotone(self) -> bool:
        """Every mixer's keys per query never fall as the context grows (Block.keys_monotone; chunked attention's
        restart at each chunk): what the planner's attention floors assume."""
        return all(b.keys_monotone for b in self.blocks if b.role == "mixer")

    @cached_property
    def num_local_attention_layers(self) -> int:
        return sum(1 for b in self.blocks if isinstance(b, Attention) and b.window)

    @cached_property
    def local_attention_window(self) -> int | None:
        return next((b.window for b in self.blocks if isinstance(b, Attention) and b.window), None)

    @cached_property
    def kv_window_bound(self) -> int | None:
        """The most tokens a layer's growing state holds when every such state is windowed (State.window;
        RecurrentGemma: every attention layer local): the KV per sequence stops growing there. None when a
        layer's state grows with the whole sequence (a full-attention layer; DeepSeek-V4's compressed cache,
        kept beside its window at 1 / ratio of the tokens), or no layer's state grows."""
        states = [s for b, _ in self.block_groups if (s := b.state(KV16, 1)).grows]
        if not states or any(s.window is None for s in states):
            return None
        return max(s.window or 0 for s in states)

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
        return (self._moe.shared_count or 1) if self._moe and self._moe.shared_inter else 0

    @property
    def shared_expert_intermediate_size(self) -> int | None:
        return self._moe.shared_inter if self._moe and self._moe.shared_inter else None

    @property
    def expert_slots(self) -> int:
        return self._moe.slots if self._moe else 0

    @property
    def real_experts_per_token(self) -> float:
        return self._moe.real_topk if self._moe else 0.0


def _tp_units(b: Block) -> list[tuple[str, int]]:
    # attention TP splits query heads (KV heads replicate beyond their count), linear key and value heads,
    # Mamba heads and their B/C groups; a block that replicates some of them names its own (Mamba2.tp_units)
    own = getattr(b, "tp_units", None)
    if own is not None:
        return list(zip(b.tp_unit_names, own))
    for names in (("key_heads", "value_heads"), ("heads", "groups"), ("heads",)):
        if all(hasattr(b, n) for n in names):
            return [(n, getattr(b, n)) for n in names]
    return []
