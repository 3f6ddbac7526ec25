"""Build each layer's blocks from its kinds (pattern.py) and the config's sizes, by field convention."""
from __future__ import annotations

from solver.specs.config.ffns import EXPERT_COUNT_FIELDS, FfnReading, modality_pair
from solver.specs.config.fields import MAX_LAYERS, Fields
from solver.specs.config.outside import dynamic_streams, gated_residual, low_rank_streams, norm_weights
from solver.specs.config.pattern import Slot, nope_layers
from solver.specs.layers import (
    MLA,
    Attention,
    CompressedAttention,
    Indexer,
)
from solver.specs.layers.base import ACT_BYTES, Block
from solver.specs.layers.dsa import INDEXER_SCALE_BYTES
from solver.specs.layers.hyper import HyperConnections
from solver.specs.layers.dense import DenseFFN

STATE_DTYPE_BYTES = {"float32": 4, "fp32": 4, "bfloat16": 2, "bf16": 2, "float16": 2, "fp16": 2}

# switches that put a bias on every linear of the stack (Falcon, StarCoder2, OPT, ChatGLM, InternLM2); the
# family fact _linear_bias stands in where the modeling code fixes it without a field
LINEAR_BIAS_FIELDS = ("bias", "use_bias", "enable_bias", "add_bias_linear", "_linear_bias")
# MPT's attn_type: the K/V heads it implies (grouped_query_attention reads kv_n_heads)
ATTN_TYPE_KV = {"multihead_attention": "heads", "multiquery_attention": 1, "grouped_query_attention": None}
# switches of a bias on q / k / v only (Llama, Qwen2's family default, ChatGLM, Ling)
QKV_BIAS_FIELDS = ("attention_bias", "qkv_bias", "add_qkv_bias", "use_qkv_bias", "include_qkv_bias")  # OLMo-1 last
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
# qk_norm_type's layouts of the q / k RMSNorms: one head_dim vector shared by the heads ("qwen3"), or one over every
# head's channels (MiniMax-M2's "per_layer"; Molmo2's "olmo", Molmo2Attention's q_norm of heads x head_dim)
_QK_NORM_TYPES = {"qwen3": "head", "per_layer": "layer", "olmo": "layer"}


class BlockReader(FfnReading):
    """Reads the sizes once and builds blocks per slot (equal blocks are equal objects: costs group): the mixers
    here, the FFNs in ffns.py."""

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
        elif f.has("head_dim", "attention_head_dim", "kv_channels"):
            self.head_dim = f.int("head_dim", "attention_head_dim", "kv_channels")
        elif self._mla:
            self.head_dim = 0  # MLA sizes its heads from qk_nope / qk_rope / v_head_dim
        elif self.heads_per_layer:
            raise f.err("head_dim", f"missing: {self.heads_field} gives a head count per layer, so the head width "
                                    "is not hidden_size / heads and must be written")
        else:
            if hidden % self.heads:
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
        # gated (gate, up, down) unless the family's modeling code or a switch (OpenELM's ffn_with_glu) says
        # otherwise; squared-ReLU MLPs (Nemotron-H) are up/down only. The activation's name does not decide: Gemma's
        # gated MLP runs GELU
        self.gated = f.bool("_gated_mlp", True) and f.bool("ffn_with_glu", True) and act != "relu2"
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
        # identity experts: LongCat's zero_expert_num, or the family's fact (ZAYA's skip class, _zero_experts)
        self.zero = f.int("zero_expert_num", "_zero_experts", default=0, minimum=0)
        self.is_moe = self.experts > 0
        self.state_bytes = self._state_dtype()
        self.notes: list[str] = []  # sizes read by an architecture's convention, for the model's warnings
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

    # ------------------------------------------------------------------------------------------- mixers

    def _state_dtype(self) -> int:
        for key in ("mamba_ssm_cache_dtype", "mamba_ssm_dtype"):
            value = self.f.cfg.get(key)
            if value is not None:
                if str(value) not in STATE_DTYPE_BYTES:
                    raise self.f.err(key, f"unknown dtype {value!r}")
                return STATE_DTYPE_BYTES[str(value)]
        return 2  # engines keep the state in the model dtype unless the config says otherwise

    def window(self, kind: str) -> int | None:
        f = self.f
        if kind == "sliding":
            # the family's own window field and how the cache's window follows from it (_window: {field, divide,
            # add}): ModernBERT's decoder attends local_attention / 2 tokens, MiMo-V2-Flash sliding_window_size
            # previous tokens and the query's own
            rule = f.cfg.get("_window")
            if isinstance(rule, dict) and f.has(str(rule.get("field"))):
                value = f.int(str(rule["field"]), maximum=10**9)
                return value // int(rule.get("divide", 1)) + int(rule.get("add", 0))
            # RecurrentGemma names its local attention's window attention_window_size
            return f.int("sliding_window", "window_size", "attention_window_size", maximum=10**9)
        if kind == "chunked":
            return self.f.int("attention_chunk_size", maximum=10**9)
        return None

    def attention(self, kind: str, slot: Slot) -> Block:
        f, cfg = self.f, self.f.cfg
        if self._mla:
            # a latent borrowed by kv_source_layers is read (its borrowing layers build no kv_a); CLA's groups and
            # Gemma's stored-but-unrun K/V have no MLA form
            if slot.kv_shared and not f.has("kv_source_layers"):
                field = "use_cla" if slot.kv_weights is False else "num_kv_shared_layers"
                raise f.err(field, "MLA layers sharing another layer's latent K/V are not modelled")
            return self.mla(slot)
        heads, kv, dh = self.heads_at(slot.index), self.kv_at(slot.index), self.head_dim
        # value heads narrower than the query / key heads (MiMo-V2-Flash's v_head_dim 128 beside head_dim 192); 0
        # is DeepSeek's "unset" outside MLA (DeepSeek-VL2's MHA language model writes v_head_dim 0)
        dv: int | None = f.int("v_head_dim") if f.has("v_head_dim") and cfg.get("v_head_dim") != 0 else None
        if kind == "sliding" and f.has("swa_num_key_value_heads", "swa_head_dim", "swa_num_attention_heads"):
            # the sliding-window layers' own sizes (MiMo-V2-Flash: twice the full layers' K/V heads)
            heads = f.int("swa_num_attention_heads", default=heads)
            kv = f.int("swa_num_key_value_heads", default=kv)
            dh = f.int("swa_head_dim", default=dh)
            dv = f.int("swa_v_head_dim") if f.has("swa_v_head_dim") else None
        k_eq_v = False
        if isinstance(cfg.get("block_configs"), list):
            group = cfg["block_configs"][slot.index]["attention"].get("n_heads_in_group")
            kv = heads // f.check_int(f"block_configs[{slot.index}].attention.n_heads_in_group", group)
        if f.has("per_layer_config"):
            # Gemma-4's per-layer attention sizes as the class derives and saves them; written, they replace
            # global_head_dim / num_global_key_value_heads (Gemma4TextConfig.__post_init__ derives only when absent)
            dh, kv, dv = *per_layer_attention(f, slot.index, dh, kv), (dv if kind != "full" else None)
            k_eq_v = kind == "full" and f.bool("attention_k_eq_v")
        elif kind == "full" and f.has("global_head_dim", "num_global_key_value_heads"):
            dh = f.int("global_head_dim", default=dh)
            # attention_k_eq_v gates the global K/V heads where a config declares it (the class: "models that drop
            # the attribute entirely are ungated"); false, the full layers keep num_key_value_heads
            if f.bool("attention_k_eq_v", default=True):
                kv = f.int("num_global_key_value_heads", default=kv)
            k_eq_v = f.bool("attention_k_eq_v")
            dv = None
        if heads % kv:
            field = self.kv_field if kv == self.kv_at(slot.index) else "num_key_value_heads"
            raise f.err(field, f"{kv} must divide num_attention_heads ({heads})")
        if heads == 0:
            raise f.err("num_attention_heads", "missing (required to size the attention layers)")
        if heads % 2 and f.bool("_differential_attention"):  # the two softmax maps of a differential head
            raise f.err("num_attention_heads", f"{heads}: differential attention pairs the heads; an odd count "
                                               "leaves one unpaired")
        bias = any(f.bool(name) for name in QKV_BIAS_FIELDS) or self.linear_bias
        out_bias = self.linear_bias or (bias and f.bool("_attention_out_bias")) or f.bool("_attention_out_only_bias")
        if f.has("attention_out_bias"):  # o_proj's bias as its own switch (Seed-OSS), beside q / k / v's
            out_bias = f.bool("attention_out_bias")
        if f.bool("_last_layer_out_bias") and slot.index == self.layers - 1:
            out_bias = True  # GPT-NeoX-Japanese: dense_bias in the last layer only
        # one learned sink logit per head: the family's fact, or a switch per layer kind (MiMo-V2-Flash's sliding
        # layers: add_swa_attention_sink_bias; add_full_attention_sink_bias for the full ones)
        sinks = f.bool("_attention_sinks") or f.bool("add_swa_attention_sink_bias" if kind == "sliding"
                                                      else "add_full_attention_sink_bias")
        qk = ""
        # q / k RMSNorms of head_dim: use_qk_norm, OpenELM's normalize_qk_projections
        layout = f.text("qk_norm_type", default="")  # a list or mapping there names the field, not a traceback
        if f.bool("use_qk_norm") or f.bool("normalize_qk_projections") or layout:
            if layout and layout not in _QK_NORM_TYPES:
                raise f.err("qk_norm_type", f"{layout!r}: a q / k norm layout not counted (known: "
                                            f"{', '.join(sorted(_QK_NORM_TYPES))})")
            over_heads = _QK_NORM_TYPES.get(layout) == "layer" or f.bool("_qk_norm_over_heads")
            qk = "layer" if over_heads else "head"
            if cfg.get("_qk_norm_weight") is False:
                qk = ""
        if f.bool("qk_layernorm"):
            # the norms' layout is the family's (_qk_layernorm): StableLM's StableLmLayerNormPerHead is one bias-free
            # LayerNorm(head_dim) per head, "layer"; Persimmon's one LayerNorm(head_dim) with a bias for q and one for
            # k, shared by the heads, "head_bias"
            qk = str(cfg.get("_qk_layernorm") or "")
            if qk not in ("head", "head_bias", "layer"):
                raise f.err("qk_layernorm", f"true: the q / k LayerNorms of model_type {cfg.get('model_type')!r} (one "
                                            "shared over the heads or one per head, with or without a bias: no "
                                            "convention for this family) are not counted")
        if f.bool("_qk_norm_key_scale"):  # L2 norms without weights, one learned key scale per KV head (ZAYA)
            qk = "key_scale"
        channel_gate, head_gate = self._output_gates()
        indexer = self.block_sparse_indexer() if kind == "block_sparse" else None
        if kind == "full" and f.has("index_topk"):
            indexer = self.own_head_selection(slot.index, heads // kv, dh)
        return Attention(hidden=self.h, heads=heads, kv_heads=kv, head_dim=dh, v_head_dim=dh if dv is None else dv,
                         window=self.window(kind), chunked=kind == "chunked", qkv_bias=bias, out_bias=out_bias,
                         qk_norm=qk, sinks=sinks, output_gate=channel_gate, head_gate=head_gate,
                         k_eq_v=k_eq_v, kv_shared=slot.kv_shared, kv_weights=slot.kv_weights,
                         # learned vectors of head_dim the family's attention holds (DiffLlama's lambda_q1 / k1 / q2 /
                         # k2: the differential attention's weights of its two softmax maps)
                         head_vectors=f.int("_attention_head_vectors", default=0, minimum=0, maximum=64),
                         differential=f.bool("_differential_attention"),
                         channel_vectors=f.int("_attention_channel_vectors", default=0, minimum=0, maximum=8),
                         indexer=indexer, qk_conv=self.qk_conv(dh),
                         delayed_v=kv * (dh if dv is None else dv) // 2 if f.bool("_delayed_value_half") else 0)

    def qk_conv(self, head_dim: int) -> tuple[tuple[int, int], ...]:
        """The causal convolutions over the q / k channels, in order: the family's _qk_conv lists each as [grouping,
        kernel field], grouping "depthwise" (one input channel a group) or "head" (head_dim a group; ZAYA's
        conv_qk_depthwise of cca_time0, then conv_qk_grouped of cca_time1)."""
        f, spec = self.f, self.f.cfg.get("_qk_conv") or ()
        per_group = {"depthwise": 1, "head": head_dim}
        out = []
        for grouping, field in spec:
            if grouping not in per_group:
                raise f.err("_qk_conv", f"{grouping!r}: a q / k convolution grouping not counted (known: "
                                        f"{', '.join(per_group)})")
            if not f.has(field):
                raise f.err(field, "missing: it sizes the kernel of the q / k convolution")
            out.append((f.int(field, minimum=1, maximum=64), per_group[grouping]))
        return tuple(out)

    def block_sparse_indexer(self) -> Indexer:
        """The lightning indexer of a block-sparse layer (layer_types' "minimax_m3_sparse": MiniMaxM3VLIndexer):
        q_proj hidden -> index_n_heads x index_head_dim, k_proj hidden -> index_head_dim, keeping per query the
        index_topk_blocks best blocks of index_block_size keys (the index_local_blocks nearest are boosted into
        those, not added). Its norms, weights_proj and key format are the family's (_indexer_qk_rms_norms,
        _indexer_weights_proj, _indexer_keys_unquantised); every size must be written: none is guessed."""
        f = self.f
        for field in ("index_n_heads", "index_head_dim", "index_block_size", "index_topk_blocks"):
            if not f.has(field):
                raise f.err(field, "missing: the block-sparse attention layers' indexer is sized by index_n_heads, "
                                   "index_head_dim, index_block_size and index_topk_blocks")
        plain_keys = f.bool("_indexer_keys_unquantised")
        return Indexer(f.int("index_n_heads", minimum=1), f.int("index_head_dim", minimum=1),
                       f.int("index_topk_blocks", minimum=1), block=f.int("index_block_size", minimum=1),
                       weights_proj=f.bool("_indexer_weights_proj", default=True),
                       qk_rms_norms=f.bool("_indexer_qk_rms_norms"),
                       key_bytes=ACT_BYTES if plain_keys else 1,
                       key_scale_bytes=0 if plain_keys else INDEXER_SCALE_BYTES)

    def own_head_selection(self, index: int, group: int, head_dim: int) -> Indexer:
        """index_topk on plain full attention (Kolibri-1.1's indexed_attention layers, Kolibri1_1Indexer): a
        selection without weights scored by the first index_num_heads query heads against key head 0; the
        index_layers narrow the keys to a pool of index_pool_size by means of index_compression keys, the others
        reuse the latest pool; each keeps its pool's index_topk best keys plus index_num_sink_tokens leading and
        index_num_local_tokens latest ones (dsa.Indexer). Every size must be written: none is guessed."""
        f = self.f
        scorers = f.int("index_num_heads", minimum=1)
        if scorers > group:  # the modeling code scores with the query heads of key head 0 only
            raise f.err("index_num_heads", f"{scorers}: more than the {group} query heads of key head 0")
        pool, block = f.int("index_pool_size", minimum=1), f.int("index_compression", minimum=1)
        if pool % block:
            raise f.err("index_pool_size", f"{pool}: not a multiple of index_compression ({block})")
        sources = f.cfg.get("index_layers")
        if not isinstance(sources, list) or not all(type(i) is int for i in sources):
            raise f.err("index_layers", "missing or not a list of layer indices: the layers selecting a new pool")
        return Indexer(scorers, head_dim, f.int("index_topk", minimum=1), weights_proj=False, key_bytes=ACT_BYTES,
                       key_scale_bytes=0, sink_tokens=f.int("index_num_sink_tokens", minimum=0),
                       local_tokens=f.int("index_num_local_tokens", minimum=0), own_heads=True, pool=pool,
                       pool_block=block, pool_source=index in sources, prefill_forms=("gathered", "dense"))

    def _output_gates(self) -> tuple[bool, bool]:
        """The attention's output gate as (per channel, per head): attn_output_gate doubles q_proj into a gate of
        every channel (Qwen3-Next); a family's _attention_gate names the field switching its separate g_proj and
        what each value builds ("head": hidden -> heads, one gate a head; "channel": hidden -> heads x head_dim, the
        same weights as a doubled q_proj; "none"). A value the family's code does not build is refused."""
        f = self.f
        rule = f.cfg.get("_attention_gate")
        if not rule:
            return f.bool("attn_output_gate"), False
        field, builds = rule["field"], rule["values"]
        value = f.cfg.get(field)
        width = next((w for v, w in builds.items() if v == value and type(v) is type(value)), None)
        if width is None:
            known = ", ".join(repr(v) for v in builds)
            raise f.err(field, f"{value!r}: the attention's output gate is built for {known} only")
        return f.bool("attn_output_gate") or width == "channel", width == "head"

    def cross_attention(self, slot: Slot) -> Block:
        """A layer of cross_attention_layers (Mllama's MllamaTextCrossAttention and its decoder layer): the
        self-attention layers' q / k / v / o sizes, q and k RMSNorms over head_dim and two scalar tanh gates
        (cross_attn_attn_gate, cross_attn_mlp_gate), attending to the request's image tokens."""
        from solver.specs.layers.cross import CrossAttention

        f = self.f
        if self.image_tokens is None:
            raise f.err("cross_attention_layers", "the cross-attention layers' K/V size from the image tokens per "
                                                  "request, read from a tiled vision_config (max_num_tiles, "
                                                  "image_size, patch_size), which the config lacks")
        if self._mla:
            raise f.err("cross_attention_layers", "cross-attention over MLA layers is not modelled")
        base = self.attention("full", slot)
        assert isinstance(base, Attention)
        return CrossAttention(hidden=base.hidden, heads=base.heads, kv_heads=base.kv_heads, head_dim=base.head_dim,
                              v_head_dim=base.v_head_dim, qkv_bias=base.qkv_bias, out_bias=base.out_bias,
                              qk_norm="head", kv_tokens=self.image_tokens, gates=2)

    def mla(self, slot: Slot) -> MLA:
        f = self.f
        self.uniform_heads("MLA layers")
        dsa = f.has("index_n_heads", "index_topk")
        indexer = None
        # the family's per-head scale and bias of log(position + 1) on the queries, the indexer's too
        scales = f.bool("_query_position_scales")
        if dsa:
            if not f.has("index_n_heads") or not f.has("index_head_dim"):
                raise f.err("index_head_dim", "DSA indexer needs index_n_heads and index_head_dim")
            self._refuse_shared_indexers()
            indexer = Indexer(f.int("index_n_heads"), f.int("index_head_dim"), f.int("index_topk", default=2048),
                              query_norm=f.bool("_indexer_query_norm"), query_scales=scales)
        nope, rope = f.int("qk_nope_head_dim"), f.int("qk_rope_head_dim")
        if slot.index in nope_layers(f, self.layers):
            # a NoPE layer keeps the query width: the rope slice joins the nope part, leaving kv_a and the cache
            # (MistralLarge4TextAttention: qk_nope_head_dim + qk_rope_head_dim, qk_rope_head_dim 0)
            nope, rope = nope + rope, 0
        return MLA(hidden=self.h, heads=self.heads, kv_lora_rank=f.int("kv_lora_rank"),
                   qk_nope_head_dim=nope, qk_rope_head_dim=rope,
                   v_head_dim=self._mla_v_head_dim(), q_lora_rank=f.opt_int("q_lora_rank"), indexer=indexer,
                   output_gate=f.bool("mla_use_output_gate"), head_gate=f.bool("_mla_head_gate"),
                   query_scales=scales, kv_shared=slot.kv_shared, query_gate_from_lora=self._query_gate_from_lora(),
                   bias=f.bool("attention_bias"))

    def _query_gate_from_lora(self) -> bool:
        """The family's q_gate_proj (_mla_query_gate_from_lora, A.X-K2): it reads the query LoRA, so one is needed."""
        f = self.f
        if not f.bool("_mla_query_gate_from_lora"):
            return False
        if not f.opt_int("q_lora_rank"):
            raise f.err("q_lora_rank", f"missing: model_type {f.cfg.get('model_type')!r} projects its queries and "
                                       "output gate from the query LoRA (q_gate_proj), which needs its rank")
        return True

    def _refuse_shared_indexers(self) -> None:
        """indexer_types "shared" (GLM-5's, Mistral-Large-4's): a layer reusing an earlier layer's top-k holds no
        indexer, which the DSA layer kind does not model; "full" everywhere is the ordinary DSA stack."""
        types = self.f.str_list("indexer_types") or []
        bad = sorted({t for t in types if t != "full"})
        if bad:
            raise self.f.err("indexer_types", f"entries {bad}: layers reusing an earlier layer's top-k selection "
                                              "(no indexer of their own) are not modelled")

    def _mla_v_head_dim(self) -> int:
        """v_head_dim as written; under the family fact _v_head_dim_hidden_over_heads the attention sizes its value
        heads hidden_size / heads whatever the config says (MiniCPM3's MiniCPMAttention), and a written v_head_dim
        that differs would be dropped: refused."""
        f = self.f
        if not f.bool("_v_head_dim_hidden_over_heads"):
            return f.int("v_head_dim")
        if self.h % self.heads:
            raise f.err("num_attention_heads", f"{self.heads} does not divide hidden_size ({self.h}), which "
                                               "sizes the value heads of this family's MLA")
        width = self.h // self.heads
        if f.has("v_head_dim") and f.int("v_head_dim") != width:
            raise f.err("v_head_dim", f"{f.cfg['v_head_dim']}, but model_type {f.cfg.get('model_type')!r} sizes "
                                      f"its value heads hidden_size / num_attention_heads = {width}")
        return width

    def linear(self) -> Block:
        from solver.specs.layers.linear import KDA, GatedDeltaNet, Lightning

        f, cfg = self.f, self.f.cfg
        lin = cfg.get("linear_attn_config")
        if isinstance(lin, dict) and (lin.get("kda_layers") is not None):
            lf = Fields(lin, f.origin, prefix=f.prefix + "linear_attn_config.")
            return KDA(hidden=self.h, heads=lf.int("num_heads"), head_dim=lf.int("head_dim"),
                       conv_kernel=lf.int("short_conv_kernel_size", default=4),
                       full_rank_gate=lf.bool("use_full_rank_gate"), state_dtype_bytes=self.state_bytes)
        if f.has("linear_num_value_heads", "linear_num_key_heads"):
            return GatedDeltaNet(hidden=self.h, key_heads=f.int("linear_num_key_heads"),
                                 value_heads=f.int("linear_num_value_heads"), key_dim=f.int("linear_key_head_dim"),
                                 value_dim=f.int("linear_value_head_dim"),
                                 conv_kernel=f.int("linear_conv_kernel_dim", default=4),
                                 state_dtype_bytes=self.state_bytes)
        # the kernel a family's linear_attention layers run when the config writes none of its own fields (the fact
        # _linear_attention: MiniMaxConfig's layer_types name lightning layers with the softmax layers' heads)
        kernel = cfg.get("_linear_attention")
        if kernel is not None and kernel not in ("lightning", "kda"):
            raise f.err("_linear_attention", f"unknown linear-attention kernel {kernel!r} (known: lightning, kda)")
        if kernel == "kda":
            # KDA sized by the top-level fields (BailingHybridConfig: linear_num_heads = num_attention_heads,
            # linear_head_dim = head_dim); its decay and output gates are one full-rank linear each under the fact
            # _kda_full_rank_gates. kda_safe_gate / kda_lower_bound bound the forget gate's value: no weight
            f.bool("kda_safe_gate"), f.has("kda_lower_bound")
            full = f.bool("_kda_full_rank_gates")
            return KDA(hidden=self.h, heads=self.heads, head_dim=f.int("head_dim"),
                       conv_kernel=f.int("short_conv_kernel_size", default=4), full_rank_gate=full,
                       full_rank_output_gate=full, state_dtype_bytes=self.state_bytes)
        if cfg.get("attn_type_list") is not None or kernel == "lightning":
            self.uniform_heads("lightning attention layers")
            return Lightning(hidden=self.h, heads=self.heads, head_dim=self.head_dim, state_dtype_bytes=4
                             if cfg.get("linear_attn_dtype") == "float32" else self.state_bytes)
        raise f.err("layer_types", "linear_attention layers need linear_num_key_heads / linear_num_value_heads "
                    "(Gated DeltaNet), linear_attn_config (KDA) or attn_type_list (lightning), and the model_type "
                    f"{cfg.get('model_type')!r} names no linear-attention kernel of its own")

    def mamba(self) -> Block:
        f = self.f
        # a pure Mamba-2 stack (_all_layers: mamba2) names its heads num_heads / head_dim, a hybrid mamba_*
        pure = f.cfg.get("_all_layers") == "mamba2"
        # Zamba2 names its Mamba-2 heads n_mamba_heads of mamba_headdim (Zamba v1's n_mamba_heads split a Mamba-1)
        if not pure and not f.has("mamba_num_heads", "mamba_n_heads", "mamba_headdim"):
            return self.mamba1()
        from solver.specs.layers.mamba import SSD_CHUNK, Mamba2

        heads = f.int("mamba_num_heads", "mamba_n_heads", "n_mamba_heads", *(("num_heads",) if pure else ()))
        if f.cfg.get("mamba_d_head") == "auto":
            # BambaConfig: mamba_expand x hidden split over the heads; FalconH1Config: mamba_d_ssm where it is set
            width = "mamba_d_ssm" if f.has("mamba_d_ssm") else "mamba_expand x hidden_size"
            inner = f.int("mamba_d_ssm") if f.has("mamba_d_ssm") else f.int("mamba_expand", default=2) * self.h
            if inner % heads:
                raise f.err("mamba_n_heads", f"{heads} does not divide {width} ({inner}), which mamba_d_head "
                                             "auto splits over the heads")
            head_dim = inner // heads
        else:
            head_dim = f.int("mamba_head_dim", "mamba_d_head", "mamba_headdim", *(("head_dim",) if pure else ()))
        # Falcon-H1 writes the mixer's width as mamba_d_ssm; its reshapes need heads x head_dim to be that width
        if f.has("mamba_d_ssm") and f.int("mamba_d_ssm") != heads * head_dim:
            raise f.err("mamba_d_ssm", f"{f.cfg['mamba_d_ssm']} is not mamba_n_heads x mamba_d_head ({heads} x "
                                       f"{head_dim}): a Mamba-2 width other than its heads' is not modelled")
        # the field that switches out_proj's bias apart from in_proj's (the family fact _mamba_out_proj_bias:
        # FalconH1Mixer biases out_proj by projectors_bias and in_proj by mamba_proj_bias); in_proj's otherwise
        out_field = f.cfg.get("_mamba_out_proj_bias")
        return Mamba2(hidden=self.h, heads=heads, head_dim=head_dim,
                      state_size=f.int("ssm_state_size", "mamba_d_state", "state_size"),
                      groups=f.int("n_groups", "mamba_n_groups", "mamba_ngroups", default=1),
                      conv_kernel=f.int("conv_kernel", "mamba_d_conv", default=4),
                      conv_bias=f.bool("use_conv_bias", True) and f.bool("mamba_conv_bias", True),
                      proj_bias=f.bool("mamba_proj_bias")
                      or f.bool("use_bias"), state_dtype_bytes=self.state_bytes,
                      gated_norm=f.bool("mamba_rms_norm", True),
                      out_bias=f.bool(str(out_field)) if out_field else None,
                      chunk_size=f.int("chunk_size", "mamba_chunk_size", default=SSD_CHUNK))

    def short_conv(self) -> Block:
        """LFM2's gated short convolution over hidden channels: kernel conv_L_cache, biases by conv_bias. A
        conv_dim that differs from the hidden size is refused (the modeling code convolves hidden_size channels)."""
        from solver.specs.layers.conv import ShortConv

        f = self.f
        for name in ("conv_dim", "conv_dim_out"):
            if f.has(name) and f.int(name) != self.h:
                raise f.err(name, f"{f.cfg[name]} differs from hidden_size ({self.h}): a short conv narrower or wider "
                                  "than the hidden size is not modelled")
        return ShortConv(hidden=self.h, kernel=f.int("conv_L_cache", "conv_kernel", default=3),
                         bias=f.bool("conv_bias"))

    def rglru(self) -> Block:
        """RecurrentGemma's recurrent block (layers/rglru.py): lru_width channels (the hidden size when not
        given), a depthwise conv of conv1d_width, gates block-diagonal over num_attention_heads."""
        from solver.specs.layers.rglru import RGLRU

        f = self.f
        self.uniform_heads("RG-LRU blocks")
        width = f.int("lru_width", default=self.h)
        if width % self.heads:
            raise f.err("lru_width", f"{width} is not a multiple of num_attention_heads ({self.heads}), which "
                                     "splits the RG-LRU gates into blocks")
        return RGLRU(hidden=self.h, width=width, heads=self.heads, conv_kernel=f.int("conv1d_width", default=4),
                     state_dtype_bytes=self.state_bytes)

    def compressed(self, index: int) -> CompressedAttention:
        """DeepSeek-V4 layer `index` (an index past the stack reads the MTP layers' entries)."""
        f = self.f
        self.uniform_heads("compressed attention layers")
        ratios = f.int_list("compress_ratios") or []
        ratio = ratios[index] if index < len(ratios) else 0
        indexer = None
        if ratio == 4 and f.has("index_n_heads"):
            # its keys come from its own compressor (CompressedAttention.shares), not a key projection
            indexer = Indexer(f.int("index_n_heads"), f.int("index_head_dim"), f.int("index_topk", default=2048),
                              key_projection=False)
        return CompressedAttention(hidden=self.h, heads=self.heads, head_dim=self.head_dim,
                                   q_lora_rank=f.int("q_lora_rank"), o_lora_rank=f.int("o_lora_rank"),
                                   o_groups=f.int("o_groups", default=1), ratio=ratio,
                                   window=f.int("sliding_window", maximum=10**9), indexer=indexer)

    def hyper_params(self) -> HyperConnections | None:
        """Hyper-connections (layers/hyper.py), None: none. hc_mult streams: per sub-block a (2 + m) x m mixing
        map of the m x hidden input, its bias and three scales (DeepSeek-V4 inference code), made doubly
        stochastic by hc_sinkhorn_iters passes; hc_count streams: low-rank gated residuals of hc_lowrank."""
        streams = low_rank_streams(self.f)
        if streams:  # two low-rank gated residuals, one a sub-block
            return HyperConnections(self.h, streams, 2 * gated_residual(self.f, self.h, inject=True),
                                    rank=self.f.int("hc_lowrank", maximum=1 << 20))
        m = dynamic_streams(self.f)
        if not m:
            return None
        mix = (2 + m) * m
        # hc_sinkhorn_iters unwritten: DeepseekV4Config's default, 20
        return HyperConnections(self.h, m, 2 * (mix * m * self.h + mix + 3),
                                sinkhorn_iters=self.f.int("hc_sinkhorn_iters", default=20, minimum=1, maximum=1000))

    def mamba1(self) -> Mamba1:
        """Mamba-1 (no head count): d_inner = mamba_expand x hidden; dt_rank "auto" = ceil(hidden / 16)."""
        from solver.specs.layers.mamba import Mamba1

        f = self.f
        if not f.has("mamba_d_state", "ssm_state_size", "state_size"):
            raise f.err("layer_types", "mamba layers need mamba_num_heads (Mamba-2) or mamba_d_state (Mamba-1)")
        expand = f.int("mamba_expand", "expand", default=2)
        rank_field = f.first("mamba_dt_rank", "time_step_rank") or "mamba_dt_rank"
        rank = f.cfg.get(rank_field, "auto")
        dt_rank = -(-self.h // 16) if rank == "auto" else f.check_int(rank_field, rank)
        # a pure Mamba-1 stack writes its inner width (MambaConfig: intermediate_size = expand x hidden); a
        # hybrid's intermediate_size is its FFN's
        pure = f.cfg.get("_all_layers") == "mamba"
        d_inner = f.int("intermediate_size") if pure and f.has("intermediate_size") else expand * self.h
        # Zamba's n_mamba_heads splits x_proj and dt_proj per head (ZambaMambaMixer: x_proj_weight heads x (dt_rank
        # + 2 x d_state) x d_inner / heads, dt_proj_weight heads x d_inner / heads x dt_rank): the same weights and
        # FLOPs as one Mamba-1 of that dt_rank, so only the split is checked
        if f.has("n_mamba_heads") and d_inner % f.int("n_mamba_heads"):
            raise f.err("n_mamba_heads", f"{f.cfg['n_mamba_heads']} does not divide the Mamba inner width ({d_inner})")
        return Mamba1(hidden=self.h, d_inner=d_inner,
                      state_size=f.int("mamba_d_state", "ssm_state_size", "state_size"), dt_rank=dt_rank,
                      conv_kernel=f.int("mamba_d_conv", "conv_kernel", default=4),
                      conv_bias=f.bool("mamba_conv_bias", True) and f.bool("use_conv_bias", True),
                      proj_bias=f.bool("mamba_proj_bias") or f.bool("use_bias"),
                      inner_norms=f.bool("_mamba_inner_norms"), state_dtype_bytes=self.state_bytes)

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


def per_layer_attention(f: Fields, index: int, dh: int, kv: int) -> tuple[int, int]:
    """(head_dim, K/V heads) of layer `index` under per_layer_config ({layer: {head_dim, num_key_value_heads}},
    keys as JSON writes them); a layer it does not list keeps the model's. Any other override is refused by name."""
    table = f.cfg.get("per_layer_config")
    if not isinstance(table, dict):
        raise f.err("per_layer_config", "must be an object of layer index -> overrides")
    entry = table.get(str(index), table.get(index))  # type: ignore[call-overload]
    if entry is None:
        return dh, kv
    name = f"per_layer_config.{index}"
    if not isinstance(entry, dict):
        raise f.err(name, "must be an object")
    unknown = sorted(set(entry) - {"head_dim", "num_key_value_heads"})
    if unknown:
        raise f.err(f"{name}.{unknown[0]}", "a per-layer override other than head_dim / num_key_value_heads is not "
                                            "read; not counted rather than miscounted")
    sub = Fields(entry, f.origin, f"{f.prefix}{name}.")
    return sub.int("head_dim", default=dh), sub.int("num_key_value_heads", default=kv)
