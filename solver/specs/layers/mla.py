"""Multi-head latent attention (DeepSeek-V2/V3, Kimi-K2, GLM-5, LongCat), optionally with a DSA indexer.

The cache holds one compressed latent (kv_lora_rank) plus the rope key per token: a single shared "head"
that attention TP does not shard (facts/attention-variants.md). Prefill runs non-absorbed (d_k = nope+rope,
d_v = v_head_dim); decode runs absorbed, MQA-like (d_k = kv_lora + rope, d_v = kv_lora). The down-projections
and their norms are replicated under attention TP. With a DSA indexer (dsa.py) core attention reads only the
top-k keys per query and the indexer's key cache grows beside the latent. A window (Dots3-Note's sliding layers)
caps the keys a query reads and the tokens the cache holds, as softmax attention's does (attention.py).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from solver.specs.dtypes import KVFormat
from solver.specs.layers.attention import o_proj_op, sequence_attention_comms
from solver.specs.layers.base import ACT_BYTES, Block, CostKit, Part, Share, State, per_object, prefill_read_tokens
from solver.specs.layers.dsa import Indexer


@dataclass(frozen=True)
class MLA(Block):
    hidden: int
    heads: int
    kv_lora_rank: int
    qk_nope_head_dim: int
    qk_rope_head_dim: int
    v_head_dim: int
    q_lora_rank: int | None = None
    indexer: Indexer | None = None
    output_gate: bool = False  # a per-channel output gate projection (hidden -> heads x v_head_dim)
    # one learned sink logit per head, an extra softmax column (Hy4's HYV4Attention.sinks): heads parameters, FLOPs
    # and bytes negligible beside the keys' (one logit a head a query)
    sinks: bool = False
    head_gate: bool = False  # one gate scalar per head (hidden -> heads: BailingHybridAttention's g_proj)
    # a learned per-head scale and bias of log(position + 1) multiplying the queries (Mistral-Large-4's
    # MistralLarge4TextSoftmaxScaling)
    query_scales: bool = False
    # attends with the latent another layer computed and cached (kv_source_layers): no kv_a projection nor its
    # norm, no latent of its own in the cache; its kv_b still expands the borrowed latent
    kv_shared: bool = False
    # q_b_proj replaced by one projection of [q_a_layernorm(q), q] (2 x q_lora_rank) into the queries and a
    # per-channel sigmoid output gate (heads x v_head_dim): A.X-K2's q_gate_proj
    query_gate_from_lora: bool = False
    # attention_bias: q_a_proj, kv_a_proj_with_mqa and o_proj carry a bias, q_b / kv_b none (DeepseekV3Attention and
    # every MLA class of transformers 5.25.0)
    bias: bool = False
    window: int | None = None  # sliding window in tokens (keys read, latents cached); None = the whole context
    # an RMSNorm of qk_rope_head_dim on the shared rope key before RoPE (Dots3NoteTextAttention.k_rope_only_layernorm)
    rope_key_norm: bool = False

    role = "mixer"
    kvp_splits_keys = True

    @property
    def kind(self) -> str:  # type: ignore[override]
        return "DSA" if self.indexer else "MLA"

    @property
    def head_dim(self) -> int:
        return self.qk_nope_head_dim + self.qk_rope_head_dim

    @property
    def o_dim(self) -> int:
        return self.heads * self.v_head_dim

    @property
    def caches_kv(self) -> bool:
        """Its latent grows the per-token cache (not a layer borrowing another's)."""
        return not self.kv_shared

    def label(self) -> str:
        idx = (f" top{self.indexer.topk}" + ("" if self.indexer.selects else " reused")) if self.indexer else ""
        nope = "" if self.qk_rope_head_dim else " NoPE"
        shared = " shared-KV" if self.kv_shared else ""
        w = f" w{self.window}" if self.window else ""
        return f"{self.kind} {self.heads} x {self.head_dim} lora{self.kv_lora_rank}{w}{idx}{nope}{shared}"

    @per_object
    def proj_parts(self) -> tuple[Part, ...]:
        h, nh, rope, nope, v = self.hidden, self.heads, self.qk_rope_head_dim, self.qk_nope_head_dim, self.v_head_dim
        parts: list[Part] = []
        if self.q_lora_rank:
            parts += [Part("q_a_proj", (h + self.bias) * self.q_lora_rank, "none"),
                      Part("q_a_layernorm", self.q_lora_rank, "none")]
            if self.query_gate_from_lora:
                parts.append(Part("q_gate_proj", 2 * self.q_lora_rank * nh * (nope + rope + v), "tp"))
            else:
                parts.append(Part("q_b_proj", self.q_lora_rank * nh * (nope + rope), "tp"))
        else:
            parts.append(Part("q_proj", h * nh * (nope + rope), "tp"))
        if not self.kv_shared:
            parts += [Part("kv_a_proj_with_mqa", (h + self.bias) * (self.kv_lora_rank + rope), "none"),
                      Part("kv_a_layernorm", self.kv_lora_rank, "none")]
            if self.rope_key_norm:
                parts.append(Part("k_rope_norm", rope, "none"))
        parts.append(Part("kv_b_proj", self.kv_lora_rank * nh * (nope + v), "tp"))
        if self.query_scales:
            parts.append(Part("softmax_scaling", 2 * nh, "tp"))
        if self.output_gate:
            parts.append(Part("g_proj", h * nh * v, "tp"))
        if self.head_gate:
            parts.append(Part("g_proj", h * nh, "tp"))
        if self.sinks:
            parts.append(Part("sinks", nh, "tp"))
        return tuple(parts)

    def shares(self) -> tuple[Share, ...]:
        out = [Share("attention", "attention", "attn_tp_size", self.proj_parts())]
        if self.indexer:
            out.append(self.indexer.share(self.hidden, self.q_lora_rank))
        o_proj = Part("o_proj", (self.o_dim + self.bias) * self.hidden, "tp")
        out.append(Share("o_proj", "attention", "o_proj_tp_size", (o_proj,)))
        return tuple(out)

    def kv_bytes_per_token(self, kv: KVFormat, attn_tp: int = 1) -> float:
        """Latent + rope key, each value at `kv.element_bytes`. An 8-bit cache of a sparse (DSA) layer is the sparse
        kernels' scaled row instead: the latent in fp8 with one fp32 scale per 128 values and the rope key in bf16,
        512 + 16 + 128 = 656 B for V3.2 (vLLM 0.34.0 flashmla_sparse.py:86-94, SGLang 0.5.23
        kv_cache_configurator.calculate_mla_kv_cache_dim for DSA models, vllm-ascend 0.23.0.post1
        attention/utils.get_sfa_qsfa_packed_head_dim). A dense MLA cache at 8 bits is the plain 576 values, one
        byte each, in every engine read (vLLM mla_attention.py:556-563 "standard fp8 KV cache format", SGLang
        calculate_mla_kv_cache_dim "for non-DSA models ... kv_lora_rank + qk_rope_head_dim"). Not modelled: the
        sparse backends that keep the plain row for a DSA layer at fp8, chosen per device (vLLM's
        FLASHINFER_MLA_SPARSE, first for an fp8 cache on SM10x: platforms/cuda.py:95-103; SGLang's trtllm DSA
        backend: calculate_mla_kv_cache_dim)."""
        lora, rope = self.kv_lora_rank, self.qk_rope_head_dim
        if kv.element_bytes == 1 and self.indexer is not None:
            return lora + 4 * math.ceil(lora / 128) + 2 * rope
        return (lora + rope) * kv.element_bytes

    def index_bytes(self, unquantised: bool) -> float:
        """The indexer's cached key bytes per token as the engine lays them out (Indexer.cached_bytes)."""
        return self.indexer.cached_bytes(unquantised) if self.indexer else 0.0

    @per_object
    def state(self, kv: KVFormat, attn_tp: int) -> State:
        idx = self.index_bytes(False)
        own = 0.0 if self.kv_shared else self.kv_bytes_per_token(kv, attn_tp)
        return State(per_token_bytes=own, window=self.window, index_per_token_bytes=idx,
                     index_unquantised_per_token_bytes=self.index_bytes(True) if self.indexer else None)

    def ops(self, cx: CostKit) -> list:
        pc, w, f, hw, prec = cx.pc, cx.w, cx.f, cx.hw, cx.prec
        a, h, T = pc.attn_tp_size, self.hidden, w.new_tokens
        t_a = T / pc.token_shards
        ops = [latent_projection_op(self, cx)]
        ctx = max(w.context, 1.0)
        heads = self.heads / a
        pair_shards = pc.token_shards * pc.kvp_size * w.kv_shards  # Work.kv_shards: a sharded-cache CP decode
        kv_bpt = self.kv_bytes_per_token(prec.kv_format, a)
        absorbed_dk, absorbed_dv = self.kv_lora_rank + self.qk_rope_head_dim, self.kv_lora_rank
        if self.indexer:
            # DSA runs in MLA's MQA (absorbed) form over the top-k keys; heads padded per rank by the kernel
            keys = cx.mean_keys_capped(self.indexer.selected_keys)
            eff_heads = max(heads, hw.sparse_attention_head_pad)
            flops = 2 * eff_heads * T * keys * (absorbed_dk + absorbed_dv) / pair_shards
            nbytes = self.indexer.gathered_entries(w, keys) * kv_bpt / pair_shards
            if w.phase == "prefill":  # or the dense (non-absorbed MHA) form masked by the selection
                dense = 2 * heads * T * ctx * (self.head_dim + self.v_head_dim) / pair_shards
                flops, nbytes = self.indexer.prefill_core(cx, (flops, nbytes),
                                                          (dense, prefill_read_tokens(w) * kv_bpt / pair_shards),
                                                          hw.flops("bf16"), f.attention)
        else:
            # a window caps the keys (the mean over the step's queries, as softmax attention's window does)
            keys = cx.mean_keys_capped(self.window) if self.window else ctx
            dk, dv = (absorbed_dk, absorbed_dv) if w.phase == "decode" else (self.head_dim, self.v_head_dim)
            flops = 2 * heads * T * keys * (dk + dv) / pair_shards
            # a prefill reads its new tokens' latents and every cached token's it attends to: [tokens]
            nbytes = (w.sequences * keys if w.phase == "decode" else prefill_read_tokens(w, self.window)
                      ) * kv_bpt / pair_shards
        eff = f.attention if w.phase == "prefill" else f.gemm
        ops.append(cx.op("attention_core", "attention", flops, nbytes + t_a * h * ACT_BYTES, hw.flops("bf16"),
                         eff, kernels=2))
        if self.indexer:
            ops += self.indexer.ops(cx, self.hidden, self.q_lora_rank, unquantised=f.indexer_keys_unquantised,
                                    kvp_replicated=f.kvp_replicates_indexer_keys)
        ops.append(o_proj_op(cx, self.o_dim, h))
        return ops

    def comms(self, cx: CostKit, hide_s: float) -> list:
        absorbed = cx.w.phase == "decode" or self.indexer is not None
        idx = self.index_bytes(cx.f.indexer_keys_unquantised)
        return sequence_attention_comms(
            cx, hide_s, hidden=self.hidden, heads=self.heads, o_dim=self.o_dim,
            cache_bpt=(0.0 if self.kv_shared else self.kv_bytes_per_token(cx.prec.kv_format, cx.pc.attn_tp_size)) + idx,
            merge_width=(self.kv_lora_rank or self.v_head_dim) if absorbed else self.v_head_dim,
            query_width=self.kv_lora_rank + self.qk_rope_head_dim if absorbed else self.head_dim,
            topk=self.indexer.topk if self.indexer else None, gathers_context=not absorbed,
            copies_gathered=self.copies_gathered())

    def copies_gathered(self) -> tuple[tuple[str, float], ...]:
        """What a decode under CP copies all-gathers per new token (sequence_attention_comms): the latent and
        the rope key, and the indexer key, each its own collective in the activation dtype, quantised only by
        the cache write after it (vLLM 0.34.0 v1/attention/ops/pcp.py: maybe_gather_mla_latent_cache_inputs
        gathers kv_c_normed and k_pe, maybe_gather_indexer_k the indexer's k)."""
        if not self.kv_lora_rank:  # no latent: the cache entry as one tensor
            return ()
        out: tuple[tuple[str, float], ...] = () if self.kv_shared else (
            ("latent", self.kv_lora_rank * ACT_BYTES), ("rope", self.qk_rope_head_dim * ACT_BYTES))
        idx = self.indexer if self.indexer is not None and self.indexer.selects else None  # a reused one caches none
        return out + ((("indexer", idx.head_dim * ACT_BYTES),) if idx is not None else ())

    def activation(self, pc, tokens: float, split: int) -> float:
        t = tokens / pc.token_shards
        # non-absorbed prefill: q and k at nope+rope per head, v at v_head_dim
        return t * self.heads / split * (2 * self.head_dim + self.v_head_dim) * ACT_BYTES

    def scratch(self, pc, tokens: float, keys: float, logits_max_bytes: float | None) -> float:
        # the indexer's logits: this rank's queries against every key of the context
        return self.indexer.logits_scratch(tokens / pc.token_shards, keys, logits_max_bytes) if self.indexer else 0.0


def latent_projection_op(block: Block, cx: CostKit):
    """The q / latent-KV projections of an MLA-style block (MLA, compressed attention): replicated
    down-projections charged to every rank, up-projections split over the attention-TP group (`proj_parts`;
    TP x KVP where KVP reuses the TP ranks: cx.attn_tp_group)."""
    pc, hw, prec = cx.pc, cx.hw, cx.prec
    g = cx.attn_tp_group
    t_a = cx.w.new_tokens / pc.token_shards
    rank = sum(p.params / p.degree(g) for p in block.proj_parts())
    return cx.op("qkv_proj", "attention", 2 * t_a * rank,
                 rank * prec.fmt("attention").bytes_per_param + t_a * block.hidden * ACT_BYTES,
                 *cx.gemm("attention"), kernels=6,
                 shape_eff=cx.shape_efficiency(block.heads * block.head_dim / g))
