"""Build each layer's blocks from its kinds (pattern.py) and the config's sizes, by field convention: the head
counts, biases and norms every block reads, the dispatch to each mixer, and what hybrid stacks add around them
(hyper-connections, a shared attention block, modality copies)."""
from __future__ import annotations

from solver.specs.config.attention_blocks import AttentionReading
from solver.specs.config.ffns import EXPERT_COUNT_FIELDS, FfnReading, modality_pair
from solver.specs.config.fields import MAX_LAYERS, Fields
from solver.specs.config.mixer_pattern import window_switches_note
from solver.specs.config.outside import dynamic_streams, gated_residual, low_rank_streams, norm_weights
from solver.specs.config.pattern import Slot
from solver.specs.config.recurrent_blocks import RecurrentReading
from solver.specs.layers import Attention
from solver.specs.layers.base import Block
from solver.specs.layers.hyper import HyperConnections
from solver.specs.layers.dense import DenseFFN
from solver.specs.layers.per_layer_input import PerLayerInputs
from solver.specs.layers.self_conditioning import SelfConditioning

# switches that put a bias on every linear of the stack (Falcon, StarCoder2, OPT, ChatGLM, InternLM2); the
# family fact _linear_bias stands in where the modeling code fixes it without a field
LINEAR_BIAS_FIELDS = ("bias", "use_bias", "enable_bias", "add_bias_linear", "_linear_bias")
# MPT's attn_type: the K/V heads it implies (grouped_query_attention reads kv_n_heads)
ATTN_TYPE_KV = {"multihead_attention": "heads", "multiquery_attention": 1, "grouped_query_attention": None}
# where the query and K/V head counts are read from (an int, or a list of one entry per layer); DeciLM writes its
# per-layer K/V heads under their own name
# XGLM writes attention_heads
HEAD_FIELDS = ("num_attention_heads", "n_head", "n_heads", "num_heads", "num_query_heads", "attention_heads")
# n_head_kv: Falcon's RW code; num_multi_query_heads: CogVLM2's (its K/V head count, GQA's groups)
KV_HEAD_FIELDS = ("num_key_value_heads", "num_kv_heads", "kv_n_heads", "n_head_kv", "num_multi_query_heads",
                  "n_kv_heads")  # OLMo-1's layout (LLaDA)
PER_LAYER_KV_FIELD = "num_key_value_heads_per_layer"
# the query heads of each layer beside num_attention_heads (Laguna's LagunaAttention takes its layer's entry)
PER_LAYER_HEAD_FIELD = "num_attention_heads_per_layer"
# activations with learned parameters, per MLP: xIELU's alpha_p and alpha_n (Apertus; beta and eps are buffers)
ACTIVATION_PARAMS = {"xielu": 2}


class BlockReader(AttentionReading, RecurrentReading, FfnReading):
    """Reads the sizes once and builds blocks per slot (equal blocks are equal objects: costs group): the attention
    mixers in attention_blocks.py, the recurrent ones in recurrent_blocks.py, the FFNs in ffns.py."""

    def __init__(self, f: Fields, hidden: int, layers: int, image_tokens: int | None = None):
        self.f, self.h, self.layers = f, hidden, layers
        self.image_tokens = image_tokens  # the vision tower's output tokens per request (cross-attention layers)
        cfg = f.cfg
        # a pure SSM stack (_all_layers) has no attention heads: its head fields belong to the Mamba mixer
        attention = not f.has("_all_layers")
        self.heads_field = f.first(PER_LAYER_HEAD_FIELD, *HEAD_FIELDS) or HEAD_FIELDS[0]
        # a head count written as a list holds one entry per layer (OpenELM's num_query_heads / num_kv_heads, DeciLM's
        # num_key_value_heads_per_layer, Laguna's num_attention_heads_per_layer); an int holds for every layer
        self.heads_per_layer = self._per_layer(self.heads_field) if attention else None
        if self.heads_per_layer:
            self.heads = max(self.heads_per_layer)
        else:
            self.heads = f.int(*HEAD_FIELDS) if attention else 0
        # the field the K/V head count was read from, for errors (DBRX / MPT: attn_config.kv_n_heads)
        self.kv_field = f.first(PER_LAYER_KV_FIELD, *KV_HEAD_FIELDS) or KV_HEAD_FIELDS[0]
        self.kv_per_layer = self._per_layer(self.kv_field) if attention else None
        self.kv_heads = 0 if not attention else max(self.kv_per_layer) if self.kv_per_layer else self._kv_heads()
        if self.heads_per_layer and not self.kv_per_layer and self.kv_heads == self.heads and not f.has(*KV_HEAD_FIELDS):
            self.kv_per_layer = list(self.heads_per_layer)  # no K/V count written: one per query head, layer by layer
        # MLA's K/V heads are the query heads over one latent: num_key_value_heads sizes nothing there (DeepseekV3's
        # class default 128 beside 16 heads builds and runs), so it is checked only for GQA / MHA layers
        self._mla = f.has("kv_lora_rank")
        if not attention:
            self.head_dim = 0
        elif self._mla and f.cfg.get("head_dim") == 0:
            self.head_dim = 0  # written 0 beside MLA's own head sizes (Glm5NextTextConfig): nothing reads it
        elif f.has("head_dim", "attention_head_dim", "kv_channels"):
            self.head_dim = f.int("head_dim", "attention_head_dim", "kv_channels")
        elif self._mla:
            self.head_dim = 0  # MLA sizes its heads from qk_nope / qk_rope / v_head_dim
        elif self.heads_per_layer:
            raise f.err("head_dim", f"missing: {self.heads_field} gives a head count per layer, so the head width "
                                    "is not hidden_size / heads and must be written")
        else:
            # the family's class floors it where the heads do not divide (_head_dim_floor: Glm4MoeAttention's
            # getattr(config, "head_dim", hidden_size // num_attention_heads), which nothing validates)
            if hidden % self.heads and not f.bool("_head_dim_floor"):
                raise f.err("num_attention_heads",
                            f"{self.heads} does not divide hidden_size ({hidden}) and no head_dim is given")
            self.head_dim = hidden // self.heads
        if attention and not self._mla and not cfg.get("block_configs"):
            for i in range(layers if self.heads_per_layer or self.kv_per_layer else 1):
                heads, kv = self.heads_at(i), self.kv_at(i)
                if kv > heads or heads % kv:
                    at = f" at layer {i}" if self.heads_per_layer or self.kv_per_layer else ""
                    heads_name = self.heads_field if self.heads_per_layer else "num_attention_heads"
                    raise f.err(self.kv_field, f"{kv}{at} must divide {heads_name} ({heads})")
        act = f.text("mlp_hidden_act", "hidden_act", "hidden_activation", "activation_fn_name", default="silu")
        # gated (gate, up, down) unless the family's MLP class (_gated_mlp false: Nemotron-H's up / relu2 / down) or a
        # switch (OpenELM's ffn_with_glu) says otherwise. The activation's name does not decide: LlamaMLP gates
        # whatever hidden_act, Gemma's gated MLP runs GELU, BitNet's gates relu2
        self.gated = f.bool("_gated_mlp", True) and f.bool("ffn_with_glu", True)
        self.act_params = ACTIVATION_PARAMS.get(act, 0)
        linear = f.first(*LINEAR_BIAS_FIELDS)
        self.linear_bias = f.bool(linear) if linear else False
        if f.has("no_bias"):  # MPT: the switch that removes every bias (linears and norms), read inverted
            self.linear_bias = not f.bool("no_bias")
        # the family's bias switch reaches the attention's linears only (InternLM's bias: q / k / v / o, not the MLP)
        scope_attention = f.cfg.get("_bias_switch_scope") == "attention"
        self.mlp_bias = f.bool("mlp_bias") or (self.linear_bias and not scope_attention)
        # the family's modeling code biases the MLP's down projection alone, under no config field (TeleChat2)
        self.mlp_out_bias = f.bool("_mlp_out_only_bias")
        self.norms = self._norms_per_layer()
        pair = modality_pair(f, f.first(*EXPERT_COUNT_FIELDS) or EXPERT_COUNT_FIELDS[0])
        self.experts = pair[0] if pair else f.int(*EXPERT_COUNT_FIELDS, default=0, minimum=0)
        self.notes: list[str] = []  # sizes read by an architecture's convention, for the model's warnings
        switch = f.cfg.get("_moe_switch")  # the family's field whose falsity builds no experts (Gemma-4's)
        if switch and not f.bool(switch):
            # the class builds no experts, whatever the expert fields say: read, and said when they are set
            written = [k for k in f.cfg if str(k).endswith(("experts", "experts_per_tok")) and f.cfg.get(k)]
            if self.experts or written:
                self.notes.append(f"{f.path(switch)} false: {', '.join(sorted(map(str, written)))} written but "
                                  "no experts built (the modeling code runs the dense MLP alone)")
            self.experts = 0
        self.unbuilt_shared_note()
        window_note = window_switches_note(f)
        if window_note:
            self.notes.append(window_note)
        # identity experts: LongCat's zero_expert_num, or the family's fact (ZAYA's skip class, _zero_experts)
        self.zero = f.int("zero_expert_num", "_zero_experts", default=0, minimum=0)
        self.is_moe = self.experts > 0
        if self.is_moe:  # norms a layer adds around its experts (Gemma-4's MoE block: three)
            self.norms += f.int("_norms_beside_moe", default=0, minimum=0) if self.norms else 0
        self.state_bytes = self._state_dtype()
        streams = low_rank_streams(f)
        if streams:
            self.notes.append(f"{f.path('hc_count')}={streams}: the low-rank hyper-connections are costed "
                              f"(about 4 x {streams} x hidden x hc_lowrank FLOPs a sub-block a token, the "
                              f"{streams}-times-wider residual stream); their kernels are counted as the forward's "
                              f"ops, no engine kernel being known")
        dense_every = f.opt_int("dense_attention_every_n_layers", maximum=MAX_LAYERS)
        if dense_every and dense_every > 1:
            # Phi-3-small: the other layers attend block-sparsely (local blocks and a vertical stride) with the dense
            # layers' weights and a full paged cache; the stack models their attention as dense
            self.notes.append(f"{f.path('dense_attention_every_n_layers')}={dense_every}: the other layers' "
                              "block-sparse attention (blocksparse_*) is estimated as dense attention over the whole "
                              "context; weights and KV cache are as counted")

    def _per_layer(self, field: str) -> list[int] | None:
        """A head count written as a list: one entry per layer (None where the field holds one int)."""
        if not isinstance(self.f.cfg.get(field), list):
            if field in (PER_LAYER_KV_FIELD, PER_LAYER_HEAD_FIELD) and self.f.has(field):
                raise self.f.err(field, f"must be a list of one head count per layer, got {self.f.cfg[field]!r}")
            return None
        return self.f.int_list(field, self.layers, minimum=1)

    def heads_at(self, index: int) -> int:
        """Layer `index`'s query heads (an index past the stack, an MTP layer's, reads the last layer's)."""
        return self.heads_per_layer[min(index, self.layers - 1)] if self.heads_per_layer else self.heads

    def kv_at(self, index: int) -> int:
        return self.kv_per_layer[min(index, self.layers - 1)] if self.kv_per_layer else self.kv_heads

    def uniform_heads(self, what: str) -> None:
        """The mixers other than softmax attention read one head count for the stack: refuse a per-layer list."""
        if self.heads_per_layer or self.kv_per_layer:
            field = self.heads_field if self.heads_per_layer else self.kv_field
            raise self.f.err(field, f"a head count per layer: {what} with per-layer head counts are not modelled")

    def _kv_heads(self) -> int:
        """KV heads: the config's count; else ChatGLM's multi_query_group_num under multi_query_attention, one
        under multi_query (GPT-BigCode, Falcon-7B), else one per query head."""
        f = self.f
        if f.has("attn_type"):  # MPT: the attention kind decides; only grouped-query attention reads kv_n_heads
            kind = f.cfg["attn_type"]
            if kind not in ATTN_TYPE_KV:
                raise f.err("attn_type", f"unknown attention type {kind!r} (known: {', '.join(ATTN_TYPE_KV)})")
            if ATTN_TYPE_KV[kind] == "heads":
                return self.heads
            if ATTN_TYPE_KV[kind] == 1:
                return 1
        if f.has(*KV_HEAD_FIELDS):
            return f.int(*KV_HEAD_FIELDS)
        if f.bool("multi_query_attention"):
            return f.int("multi_query_group_num")
        return 1 if f.bool("multi_query") else self.heads

    def _norms_per_layer(self) -> int:
        """Norm vectors' count per layer: two (before the mixer, before the FFN) unless the family says; a
        parallel block whose attention and MLP share one input norm has one (Falcon's parallel_attn, unless it
        keeps two: num_ln_in_parallel_attn 2, the default of new_decoder_architecture); a non-parametric
        LayerNorm (OLMo-1, OPT's layer_norm_elementwise_affine false) has none; use_post_norm (HyperCLOVA X's Peri-LN) or use_sandwich_norm (LFM3) adds a norm
        on each sublayer's output before the residual add: four."""
        f = self.f
        if not norm_weights(f) or low_rank_streams(f):  # low-rank hyper-connections norm their own input
            return 0
        if f.bool("parallel_attn"):
            two = 2 if f.bool("new_decoder_architecture") else 1
            return 1 if f.int("num_ln_in_parallel_attn", default=two) == 1 else 2
        switch = f.cfg.get("_shared_norm_switch")  # the family's field whose truth means one shared norm (StableLM)
        if switch and f.bool(switch):
            return 1
        sandwich = f.bool("use_post_norm") or f.bool("use_sandwich_norm")  # LFM3's name for the same four
        return f.int("_norms_per_layer", default=4 if sandwich else 2)

    def hyper_params(self) -> HyperConnections | None:
        """Hyper-connections (layers/hyper.py), None: none. hc_mult streams: per sub-block a (2 + m) x m mixing
        map of the m x hidden input, its bias and three scales (DeepSeek-V4 inference code), made doubly
        stochastic by hc_sinkhorn_iters passes (the family's _hc_comb false: a 2m x m map, two scales, no comb);
        hc_count streams: low-rank gated residuals of hc_lowrank."""
        streams = low_rank_streams(self.f)
        if streams:  # two low-rank gated residuals, one a sub-block
            return HyperConnections(self.h, streams, 2 * gated_residual(self.f, self.h, inject=True),
                                    rank=self.f.int("hc_lowrank", maximum=1 << 20))
        m = dynamic_streams(self.f)
        if not m:
            return None
        if not self.f.bool("_hc_comb", default=True):  # pre and post rows only, two scales (HYV4HyperConnection)
            return HyperConnections.dynamic(self.h, m, comb=False)
        # hc_sinkhorn_iters unwritten: DeepseekV4Config's default, 20
        return HyperConnections.dynamic(self.h, m, sinkhorn_iters=self.f.int("hc_sinkhorn_iters", default=20,
                                                                              minimum=1, maximum=1000))

    def shared_block(self, slot: Slot) -> tuple[tuple[Block, ...], tuple[Block, ...], tuple[int, ...]]:
        """The attention + MLP block a hybrid layer runs (the family's _shared_block, ZambaAttentionDecoderLayer /
        Zamba2AttentionDecoderLayer), stored once: (its attention and MLP, the layer's own projections, its norms'
        widths). The attention reads the hidden state and the embedding concatenated, attention_hidden_size = the
        fact's multiple of hidden (2), over heads of attention_head_dim (that width / heads where not written), no
        biases, and writes back hidden wide; the MLP is the config's, on hidden; an RMSNorm before each. Each use
        adds its own linear (hidden x hidden) and, under use_shared_mlp_adapter, a LoRA adapter of adapter_rank on
        the MLP's gate_up_proj (Zamba2)."""
        from solver.specs.layers.projection import Projection

        f, h = self.f, self.h
        width = f.int("_shared_block") * h
        heads = f.int(*HEAD_FIELDS)
        kv = f.int(*KV_HEAD_FIELDS, default=heads)
        if width % heads and not f.has("attention_head_dim"):
            raise f.err("num_attention_heads", f"{heads} does not divide the shared attention's input width "
                                               f"({width}) and no attention_head_dim is given")
        dh = f.int("attention_head_dim", default=width // heads)
        if heads % kv:
            raise f.err("num_key_value_heads", f"{kv} must divide num_attention_heads ({heads})")
        if f.bool("use_shared_attention_adapter"):
            raise f.err("use_shared_attention_adapter", "true: the per-use LoRA adapters on the shared attention's "
                                                        "q / k / v are not modelled")
        attention = Attention(hidden=h, heads=heads, kv_heads=kv, head_dim=dh, v_head_dim=dh, in_width=width)
        ffn = self.dense(Slot(None, "dense", index=slot.index))
        own: tuple[Block, ...] = (Projection("linear", ((h, h),)),)
        if f.bool("use_shared_mlp_adapter"):
            rank = f.int("adapter_rank")
            up = (2 if ffn.gated else 1) * ffn.inter
            own += (Projection("mlp_adapter", ((h, rank), (rank, up))),)
        return (attention, ffn), own, (width, h)

    def block_residual(self, slot: Slot) -> Block | None:
        """Attention residuals over blocks of layers and the short convolutions on each sub-block's output
        (layers/block_residual.py), from the family's _block_residual {block: the field of layers a block, queries:
        {layer kind: learned queries of the mixer's input}, conv_kernel: the convolutions' kernel field}; None
        without the fact. Layer i reads the ceil(i / n) states begun before it plus its partial sum; the first
        layer's mixer reads the embedding (no query); a layer starting a block adds its input before the MLP's read.
        A layer of the family's _loop_messages section also reads the previous pass's messages and gates them in.
        The family's _output_convs {kernel: field} alone gives the two output convolutions without block reads."""

        from solver.specs.layers.block_residual import BlockResidual

        f, rule = self.f, self.f.cfg.get("_block_residual")
        convs_only = self.f.cfg.get("_output_convs")  # {kernel: field}: the sub-block output convs alone (Inkling-1)
        if not rule and convs_only:
            return BlockResidual(self.h, (), convs=2, kernel=f.int(str(convs_only["kernel"]), minimum=1, maximum=64))
        if not rule:
            return None
        n = f.int(str(rule["block"]), minimum=1, maximum=MAX_LAYERS)
        queries = rule["queries"]
        if slot.mixer not in queries:
            raise f.err(str(rule["block"]), f"attention residuals before a {slot.mixer} mixer are not modelled")
        i = slot.index
        begun = -(-i // n)
        reads = ((int(queries[slot.mixer]), begun + 1),) if i > 0 else ()
        reads += ((1, begun + (1 if i % n == 0 else 0) + 1),)
        kernel_field = str(rule["conv_kernel"])
        gates, rank = 0, 0
        loop = f.cfg.get("_loop_messages")  # {start, end, rank: fields, gates: N, queries: N}: a looped section
        if loop:
            start, end = (f.int(str(loop[k]), minimum=0, maximum=MAX_LAYERS) for k in ("start", "end"))
            for key, value in (("start", start), ("end", end)):
                if value % n:
                    raise f.err(str(loop[key]), f"{value}: not a multiple of {rule['block']} ({n}), as the "
                                                "looped section's message reads need")
            if start <= i < end:
                # the previous pass's block states after its first, and its last hidden state
                reads += ((int(loop["queries"]), (end - start) // n),)
                gates, rank = int(loop["gates"]), f.int(str(loop["rank"]), minimum=1, maximum=MAX_LAYERS)
        return BlockResidual(self.h, reads, convs=2, kernel=f.int(kernel_field, minimum=1, maximum=64),
                             gates=gates, gate_rank=rank)

    def per_layer_input(self) -> Block | None:
        """A layer's per-layer input gate and projection (hidden_size_per_layer_input; layers/per_layer_input.py):
        bias-free hidden -> width and width -> hidden, replicated; None where the field is 0 or absent. The layer
        adds one norm for it (post_per_layer_input_norm, config/read.py)."""
        from solver.specs.layers.projection import Projection

        width = self.f.int("hidden_size_per_layer_input", default=0, minimum=0)
        return Projection("per_layer_input", ((self.h, width), (width, self.h))) if width else None

    def altup(self) -> Block | None:
        """AltUp's copies of the hidden state and the LAuReL residual (layers/altup.py), from the family's _altup
        {streams: field, laurel_rank: field}; None without the fact. The layer adds one norm for LAuReL
        (post_laurel_norm, config/read.py)."""
        from solver.specs.layers.altup import AltUp

        rule = self.f.cfg.get("_altup")
        if not rule:
            return None
        rank = self.f.int(str(rule["laurel_rank"]), default=0, minimum=0, maximum=self.h)
        return AltUp(self.h, self.f.int(str(rule["streams"]), minimum=1, maximum=64), rank)

    def altup_projections(self, first: bool, last: bool) -> tuple[Block, ...]:
        """The model's projections into AltUp's copies before the first layer (altup_projections) and out of them
        after the last (altup_unembed_projections): n - 1 bias-free hidden x hidden matrices each, held by that
        layer (they run once a token, where it runs)."""
        from solver.specs.layers.projection import Projection

        rule = self.f.cfg.get("_altup")
        n = self.f.int(str(rule["streams"])) if rule else 1
        if n <= 1:
            return ()
        shapes = ((self.h, self.h),) * (n - 1)
        return ((Projection("altup_projections", shapes, "altup"),) if first else ()) + \
            ((Projection("altup_unembed_projections", shapes, "altup"),) if last else ())

    def per_layer_inputs(self) -> PerLayerInputs | None:
        """The per-layer input table, projection and norm outside the stack (layers/per_layer_input.py): rows
        vocab_size_per_layer_input (the family's class default where not written) x layers x
        hidden_size_per_layer_input; None where that is 0 or absent."""
        width = self.f.int("hidden_size_per_layer_input", default=0, minimum=0)
        if not width:
            return None
        rows = self.f.int("vocab_size_per_layer_input")
        return PerLayerInputs(rows=rows, layers=self.layers, width=width, hidden=self.h)

    def self_conditioning(self) -> SelfConditioning | None:
        """The family's self-conditioning MLP outside the stack (_self_conditioning_mlp names its width field;
        layers/self_conditioning.py); None where the family has none."""
        field = self.f.cfg.get("_self_conditioning_mlp")
        return SelfConditioning(hidden=self.h, inter=self.f.int(str(field), minimum=1)) if field else None

    def modality_copies(self, blocks: tuple[Block, ...]) -> tuple[Block, ...]:
        """The family fact _modality_experts {count, qkv_bias}: every layer holds count experts routed by the
        token's modality (CogVLM2's VisionExpertAttention / VisionExpertMLP: a vision copy of query_key_value, dense
        and the gated MLP beside the language one); the copies beyond the first are the layer's blocks again, their
        fused qkv biased where the fact's qkv_bias says (CogVLM2's vision_expert_query_key_value alone is)."""
        from dataclasses import replace

        fact = self.f.cfg.get("_modality_experts")
        if not fact:
            return ()
        if any(type(b) not in (Attention, DenseFFN) for b in blocks):
            raise self.f.err("model_type", "modality experts over blocks other than softmax attention and a dense FFN "
                                           "are not modelled")
        copy = tuple(replace(b, qkv_bias=bool(fact.get("qkv_bias"))) if isinstance(b, Attention) else b
                     for b in blocks)
        return copy * (int(fact["count"]) - 1)

    def mixer(self, slot: Slot) -> Block | None:
        kind = slot.mixer
        if kind is None:
            return None
        if kind == "compressed":
            return self.compressed(slot.index)
        if kind in ("full", "sliding", "chunked", "block_sparse"):
            return self.attention(kind, slot)
        if kind == "cross":
            return self.cross_attention(slot)
        if kind == "linear":
            return self.linear()
        if kind == "mamba":
            return self.mamba()
        if kind == "conv":
            return self.short_conv()
        if kind == "rglru":
            return self.rglru()
        raise self.f.err("layer_types", f"unknown mixer {kind!r}")
