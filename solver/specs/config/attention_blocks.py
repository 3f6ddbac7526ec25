"""The attention mixers of a layer, read from the config's sizes by field convention: softmax attention (full,
sliding, chunked, block-sparse), cross-attention to image tokens, MLA and DeepSeek-V4's compressed attention; the
part of BlockReader (blocks.py) that builds attention blocks."""
from __future__ import annotations

from dataclasses import replace
from typing import Callable

from solver.specs.config.fields import Fields
from solver.specs.config.pattern import Slot, nope_layers
from solver.specs.layers import (
    MLA,
    Attention,
    CompressedAttention,
    Indexer,
)
from solver.specs.layers.base import ACT_BYTES, Block
from solver.specs.layers.dsa import INDEXER_SCALE_BYTES

# switches of a bias on q / k / v only (Llama, Qwen2's family default, ChatGLM, Ling)
QKV_BIAS_FIELDS = ("attention_bias", "qkv_bias", "add_qkv_bias", "use_qkv_bias", "include_qkv_bias")  # OLMo-1 last
# qk_norm_type's layouts of the q / k RMSNorms: one head_dim vector shared by the heads ("qwen3"), or one over every
# head's channels (MiniMax-M2's "per_layer"; Molmo2's "olmo", Molmo2Attention's q_norm of heads x head_dim)
# the fields sizing a QSA indexer (Qwen4ExpTextConfig's; null in the class: the layers then attend to every key)
QSA_FIELDS = ("indexer_n_heads", "indexer_kv_heads", "indexer_head_dim", "indexer_budget", "indexer_compress_ratio")
_QK_NORM_TYPES = {"qwen3": "head", "per_layer": "layer", "olmo": "layer"}


class AttentionReading:
    """BlockReader's attention part: it reads the sizes BlockReader.__init__ sets (f, h, layers, heads, head_dim,
    kv_field, linear_bias, image_tokens, _mla) and its head counts per layer (heads_at, kv_at, uniform_heads)."""

    f: Fields
    h: int
    layers: int
    heads: int
    head_dim: int
    kv_field: str
    linear_bias: bool
    image_tokens: int | None
    _mla: bool
    heads_at: Callable[[int], int]
    kv_at: Callable[[int], int]
    uniform_heads: Callable[[str], None]

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
            return self.mla(slot, kind)
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
        bias = any(f.bool(name) for name in QKV_BIAS_FIELDS) or self.linear_bias or f.bool("_qkv_bias")
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
        if kind == "full" and any(f.has(field) for field in QSA_FIELDS):
            indexer = self.mean_pooled_indexer()
        return Attention(hidden=self.h, heads=heads, kv_heads=kv, head_dim=dh, v_head_dim=dh if dv is None else dv,
                         window=self.window(kind), chunked=kind == "chunked", qkv_bias=bias, out_bias=out_bias,
                         qk_norm=qk, sinks=sinks, output_gate=channel_gate, head_gate=head_gate,
                         gate_bias=channel_gate and f.bool("_attention_gate_bias"),
                         k_eq_v=k_eq_v, kv_shared=slot.kv_shared, kv_weights=slot.kv_weights,
                         # learned vectors of head_dim the family's attention holds (DiffLlama's lambda_q1 / k1 / q2 /
                         # k2: the differential attention's weights of its two softmax maps)
                         head_vectors=f.int("_attention_head_vectors", default=0, minimum=0, maximum=64),
                         differential=f.bool("_differential_attention"),
                         channel_vectors=f.int("_attention_channel_vectors", default=0, minimum=0, maximum=8),
                         indexer=indexer, qk_conv=self.qk_conv(dh),
                         delayed_v=kv * (dh if dv is None else dv) // 2 if f.bool("_delayed_value_half") else 0,
                         rel_bias=self.relative_bias(kind),
                         # the family's fact: its relative states enter unscaled (Inkling-1's r_proj alone)
                         rel_scales=f.cfg.get("_rel_bias_scales") is not False, sink_proj=f.bool("_attention_sink_proj"),
                         **self.kv_convs(kind),
                         kv_input_norms=kind in (f.cfg.get("_kv_input_norms") or ()))

    def relative_bias(self, kind: str) -> tuple[int, int] | tuple[()]:
        """(d_rel, extent) of a hidden-conditioned relative-position bias (layers/attention.py), () where d_rel is
        not written. The extent's field per layer kind is the family's (_rel_extent_fields: Inkling-2's full layers
        read rel_extent, its sliding ones their window, sliding_window_size)."""
        f = self.f
        if not f.has("d_rel"):
            return ()
        fields = f.cfg.get("_rel_extent_fields") or {}
        if kind not in fields:
            raise f.err("d_rel", f"{f.cfg['d_rel']}: relative-position states whose bias table's extent is not "
                                 f"known for the {kind} layers of model_type {f.cfg.get('model_type')!r}")
        return f.int("d_rel", minimum=1, maximum=1 << 16), f.int(str(fields[kind]), minimum=1, maximum=10**9)

    def kv_convs(self, kind: str) -> dict[str, object]:
        """The causal convolutions over K and V (layers/attention.py kv_conv): the family's _kv_conv {kernel: the
        kernel's field, dynamic: the layer kinds whose taps add per-token weights}; none without the fact."""
        rule = self.f.cfg.get("_kv_conv")
        if not rule:
            return {}
        field = str(rule["kernel"])
        if not self.f.has(field):
            raise self.f.err(field, "missing: it sizes the kernel of the key / value convolutions")
        return {"kv_conv": self.f.int(field, minimum=1, maximum=64),
                "kv_conv_dynamic": kind in (rule.get("dynamic") or ())}

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

    def mean_pooled_indexer(self) -> Indexer:
        """The QSA indexer of a full-attention layer (Qwen4ExpTextQSAIndexer, built on every layer of
        Qwen4ExpTextAttention once its fields are set): index_qk_proj hidden -> (indexer_n_heads + indexer_kv_heads)
        x indexer_head_dim, its one key head cached per token; blocks of indexer_compress_ratio keys pooled by their
        mean, the top indexer_budget / ratio blocks kept plus the incomplete tail block (ratio - 1 keys). Its norms,
        weights_proj and key format are the family's (_indexer_qk_rms_norms, _indexer_weights_proj,
        _indexer_keys_unquantised). All five fields or none, as the class validates."""
        f = self.f
        for field in QSA_FIELDS:
            if not f.has(field):
                raise f.err(field, f"missing: the QSA indexer is sized by {', '.join(QSA_FIELDS)}, all or none")
        if f.int("indexer_kv_heads", minimum=1) != 1:  # the pooled keys are one head's (raw_keys.squeeze(2))
            raise f.err("indexer_kv_heads", f"{f.cfg['indexer_kv_heads']}: the QSA indexer scores one key head")
        budget, ratio = f.int("indexer_budget", minimum=1), f.int("indexer_compress_ratio", minimum=1)
        if budget % ratio:
            raise f.err("indexer_budget", f"{budget}: not a multiple of indexer_compress_ratio ({ratio})")
        plain_keys = f.bool("_indexer_keys_unquantised")
        return Indexer(f.int("indexer_n_heads", minimum=1), f.int("indexer_head_dim", minimum=1), budget // ratio,
                       block=ratio, kpool=ratio, kpool_gate=False, local_tokens=ratio - 1,
                       weights_proj=f.bool("_indexer_weights_proj", default=True),
                       qk_rms_norms=f.bool("_indexer_qk_rms_norms"),
                       key_bytes=ACT_BYTES if plain_keys else 1,
                       key_scale_bytes=0 if plain_keys else INDEXER_SCALE_BYTES,
                       # the reference masks dense attention with the selection and no engine serves it (dsa.py)
                       prefill_forms=("gathered", "dense"))

    def _pooled_key_indexer(self, topk: int, kpool: int, scales: bool) -> Indexer:
        """A DSA indexer over pools of index_kpool keys (Glm5NextTextIndexer, dsa.py): the top index_topk / kpool
        pools of kpool keys, and the incomplete tail pool's up to kpool - 1 keys where
        index_kpool_always_select_tail (the class's default: true); its packed keys cached in the activation dtype."""
        f = self.f
        if topk % kpool:
            raise f.err("index_topk", f"{topk}: not a multiple of index_kpool ({kpool})")
        tail = kpool - 1 if f.bool("index_kpool_always_select_tail", True) else 0
        return Indexer(f.int("index_n_heads"), f.int("index_head_dim"), topk // kpool, block=kpool, kpool=kpool,
                       local_tokens=tail, query_norm=f.bool("_indexer_query_norm"), query_scales=scales,
                       key_bytes=ACT_BYTES, key_scale_bytes=0)

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
        if not rule:  # or the family's gate_proj hidden -> heads x head_dim under no field (_attention_output_gate)
            return f.bool("attn_output_gate") or f.bool("_attention_output_gate"), False
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

    def mla(self, slot: Slot, kind: str = "full") -> MLA:
        """An MLA layer; per_layer_config's entry for it replaces the model's sizes (Dots3NoteTextAttention reads
        config.per_layer_config[layer_idx]); a sliding layer attends over its window and runs no indexer (the class
        builds its indexer on the indexed_attention layers only)."""
        self.uniform_heads("MLA layers")
        f = per_layer_mla(self.f, slot.index) if self.f.has("per_layer_config") else self.f
        window = self.window("sliding") if kind == "sliding" else None
        dsa = f.has("index_n_heads", "index_topk") and window is None
        indexer = None
        # the family's per-head scale and bias of log(position + 1) on the queries, the indexer's too
        scales = f.bool("_query_position_scales")
        if dsa:
            if not f.has("index_n_heads") or not f.has("index_head_dim"):
                raise f.err("index_head_dim", "DSA indexer needs index_n_heads and index_head_dim")
            topk, kpool = f.int("index_topk", default=2048), f.int("index_kpool", default=0, minimum=0)
            if kpool > 1:
                indexer = replace(self._pooled_key_indexer(topk, kpool, scales), selects=self._selects(slot.index))
            else:
                indexer = Indexer(f.int("index_n_heads"), f.int("index_head_dim"), topk,
                                  query_norm=f.bool("_indexer_query_norm"), query_scales=scales,
                                  selects=self._selects(slot.index))
        # qk_rope_head_dim 0: no rotary part in any layer (GLM-5.3-Flash's all-NoPE MLA)
        nope, rope = f.int("qk_nope_head_dim"), f.int("qk_rope_head_dim", minimum=0)
        if slot.index in nope_layers(f, self.layers):
            # a NoPE layer keeps the query width: the rope slice joins the nope part, leaving kv_a and the cache
            # (MistralLarge4TextAttention: qk_nope_head_dim + qk_rope_head_dim, qk_rope_head_dim 0)
            nope, rope = nope + rope, 0
        heads = f.int("num_attention_heads") if f is not self.f else self.heads
        return MLA(hidden=self.h, heads=heads, kv_lora_rank=f.int("kv_lora_rank"),
                   qk_nope_head_dim=nope, qk_rope_head_dim=rope,
                   v_head_dim=self._mla_v_head_dim(f), q_lora_rank=f.opt_int("q_lora_rank"), indexer=indexer,
                   output_gate=f.bool("mla_use_output_gate") or f.bool("_mla_output_gate"),
                   head_gate=f.bool("_mla_head_gate"), sinks=f.bool("_mla_sinks"),
                   query_scales=scales, kv_shared=slot.kv_shared, query_gate_from_lora=self._query_gate_from_lora(),
                   bias=f.bool("attention_bias"), window=window, rope_key_norm=f.bool("_mla_rope_key_norm"))

    def _query_gate_from_lora(self) -> bool:
        """The family's q_gate_proj (_mla_query_gate_from_lora, A.X-K2): it reads the query LoRA, so one is needed."""
        f = self.f
        if not f.bool("_mla_query_gate_from_lora"):
            return False
        if not f.opt_int("q_lora_rank"):
            raise f.err("q_lora_rank", f"missing: model_type {f.cfg.get('model_type')!r} projects its queries and "
                                       "output gate from the query LoRA (q_gate_proj), which needs its rank")
        return True

    def _selects(self, index: int) -> bool:
        """Whether layer `index` runs its own indexer: indexer_types "full" (or unwritten); "shared" reuses the
        latest "full" layer's top-k and holds no indexer (GlmMoeDsaAttention, MistralLarge4TextAttention,
        HYV4Attention: indexer None where skip_topk), so the first layer must select."""
        types = self.f.str_list("indexer_types") or []
        if not types:
            return True
        if len(types) != self.layers:
            raise self.f.err("indexer_types", f"{len(types)} entries for {self.layers} layers")
        bad = sorted({t for t in types if t not in ("full", "shared")})
        if bad:
            raise self.f.err("indexer_types", f"entries {bad}: an indexer type other than 'full' / 'shared'")
        if types[0] != "full":
            raise self.f.err("indexer_types", "entry 0 is 'shared': no earlier layer's top-k to reuse")
        return types[index] == "full" if index < len(types) else True

    def _mla_v_head_dim(self, f: Fields) -> int:
        """v_head_dim as written; under the family fact _v_head_dim_hidden_over_heads the attention sizes its value
        heads hidden_size / heads whatever the config says (MiniCPM3's MiniCPMAttention), and a written v_head_dim
        that differs would be dropped: refused."""
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



def per_layer_attention(f: Fields, index: int, dh: int, kv: int) -> tuple[int, int]:
    """(head_dim, K/V heads) of layer `index` under per_layer_config ({layer: {head_dim, num_key_value_heads}},
    keys as JSON writes them: save_pretrained pads them to one width, "05" beside "29", and the class reads int(key));
    a layer it does not list keeps the model's. Any other override is refused by name."""
    table = f.cfg.get("per_layer_config")
    if not isinstance(table, dict):
        raise f.err("per_layer_config", "must be an object of layer index -> overrides")
    key = next((k for k in table if _layer_key(k) == index), None)
    if key is None:
        bad = next((k for k in table if _layer_key(k) is None), None)
        if bad is not None:
            raise f.err(f"per_layer_config.{bad}", "the key must be a layer index (a non-negative integer)")
        return dh, kv
    entry = table[key]
    name = f"per_layer_config.{key}"
    if not isinstance(entry, dict):
        raise f.err(name, "must be an object")
    unknown = sorted(set(entry) - {"head_dim", "num_key_value_heads"})
    if unknown:
        raise f.err(f"{name}.{unknown[0]}", "a per-layer override other than head_dim / num_key_value_heads is not "
                                            "read; not counted rather than miscounted")
    sub = Fields(entry, f.origin, f"{f.prefix}{name}.")
    return sub.int("head_dim", default=dh), sub.int("num_key_value_heads", default=kv)


# the MLA sizes a per_layer_config entry may replace (Dots3NoteTextConfig's sliding layers write these)
_MLA_LAYER_FIELDS = frozenset({"num_attention_heads", "num_key_value_heads", "q_lora_rank", "kv_lora_rank",
                               "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim", "head_dim"})


def per_layer_mla(f: Fields, index: int) -> Fields:
    """The config as MLA layer `index` reads it: per_layer_config's entry for the layer over the model's fields
    (keys as in per_layer_attention). An override outside the MLA sizes, K/V heads other than the query heads (the
    latent expands into every head) or a head_dim other than nope + rope is refused by name."""
    table = f.cfg.get("per_layer_config")
    if not isinstance(table, dict):
        raise f.err("per_layer_config", "must be an object of layer index -> overrides")
    bad = next((k for k in table if _layer_key(k) is None), None)
    if bad is not None:
        raise f.err(f"per_layer_config.{bad}", "the key must be a layer index (a non-negative integer)")
    key = next((k for k in table if _layer_key(k) == index), None)
    if key is None:
        return f
    entry, name = table[key], f"per_layer_config.{key}"
    if not isinstance(entry, dict):
        raise f.err(name, "must be an object")
    unknown = sorted(set(entry) - _MLA_LAYER_FIELDS)
    if unknown:
        raise f.err(f"{name}.{unknown[0]}", "a per-layer override other than the MLA sizes "
                                            f"({', '.join(sorted(_MLA_LAYER_FIELDS))}) is not read; not counted "
                                            "rather than miscounted")
    sub = Fields(entry, f.origin, f"{f.prefix}{name}.")
    for field in entry:
        sub.int(field, minimum=0 if field == "qk_rope_head_dim" else 1)
    layer = Fields({**f.cfg, **entry}, f.origin, f.prefix)
    heads = layer.int("num_attention_heads")
    if layer.int("num_key_value_heads", default=heads) != heads:
        raise sub.err("num_key_value_heads", f"{layer.cfg['num_key_value_heads']}: an MLA layer expands its latent "
                                             f"into every query head ({heads})")
    if "head_dim" in entry and entry["head_dim"] != layer.int("qk_nope_head_dim") + layer.int("qk_rope_head_dim"):
        raise sub.err("head_dim", f"{entry['head_dim']} is not qk_nope_head_dim + qk_rope_head_dim of the layer")
    return layer


def _layer_key(key: object) -> int | None:
    """A per_layer_config key as the class reads it (int(key)); None where it is no layer index."""
    if isinstance(key, int) and not isinstance(key, bool):
        return key if key >= 0 else None
    return int(key) if isinstance(key, str) and key.isdigit() else None
