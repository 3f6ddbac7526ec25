"""DSA lightning indexer (DeepSeek-V3.2, GLM-5): scores every past key per query in FP8 and keeps the top-k.

Its projections are replicated under attention TP in every shipped implementation, so each TP rank repeats
the whole indexer; SP / CP split its tokens and KVP its keys. Its key cache holds index_head_dim FP8 values
plus one FP32 scale per token (132 B for V3.2; facts/attention-variants.md).

A block-selecting indexer (`block` > 1: MiniMax-M3's MiniMaxM3VLIndexer) scores every past key the same way, max-pools
the scores over blocks of `block` consecutive keys and keeps the top-k blocks; the local blocks it always keeps are
boosted into those k (their score set to +inf before the top-k), so a query attends to at most topk x block keys.
Its layout differs by family (read by the config reader): q / k RMSNorm weights of head_dim where DSA has a k
LayerNorm, no weights_proj, and keys cached in the activation dtype without a scale (MiniMaxM3VLSparseCacheLayer).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from solver.specs.layers.base import CostKit, Part, Share, per_object

INDEXER_SCALE_BYTES = 4  # one fp32 scale per cached indexer key
LOGIT_BYTES = 4  # fp32 indexer logits per (query, key) pair


@dataclass(frozen=True)
class Indexer:
    heads: int
    head_dim: int
    topk: int
    query_norm: bool = False  # a LayerNorm (weight, bias) on the queries' input (Mistral-Large-4's q_input_norm)
    query_scales: bool = False  # a learned per-head scale and bias of log(position + 1) on the queries
    block: int = 1  # keys per selected entry: top-k selects single keys (DSA) or blocks of `block` keys
    weights_proj: bool = True  # a per-head weight projection hidden -> heads mixing the head scores (DSA)
    qk_rms_norms: bool = False  # RMSNorm weights of head_dim on q and k, in place of k's LayerNorm (weight + bias)
    key_bytes: int = 1  # bytes per cached key value: FP8 (DSA), or the activation dtype's
    key_scale_bytes: int = INDEXER_SCALE_BYTES  # per cached key: DSA's fp32 scale; none for unquantised keys
    # wk and its norm make the keys (DSA); False where a compressor of the layer's makes them (DeepSeek-V4's CSA
    # indexer holds wq_b, weights_proj and its compressor only: transformers DeepseekV4Indexer, SGLang C4Indexer)
    key_projection: bool = True

    @property
    def bytes_per_token(self) -> float:
        return self.head_dim * self.key_bytes + self.key_scale_bytes

    @property
    def selected_keys(self) -> int:
        """Keys a query attends to at most: its top-k entries of `block` keys each."""
        return self.topk * self.block

    @per_object
    def parts(self, hidden: int, q_lora_rank: int | None) -> tuple[Part, ...]:
        q_in = q_lora_rank or hidden
        norms = (Part("qk_norm", 2 * self.head_dim, "none") if self.qk_rms_norms  # two RMSNorm weights
                 else Part("k_norm", 2 * self.head_dim, "none"))  # LayerNorm weight + bias
        keys = (Part("wk", hidden * self.head_dim, "none"), norms) if self.key_projection else ()
        return (Part("wq_b", q_in * self.heads * self.head_dim, "none"),
                *keys,
                *((Part("weights_proj", hidden * self.heads, "none"),) if self.weights_proj else ()),
                *((Part("q_input_norm", 2 * q_in, "none"),) if self.query_norm else ()),
                *((Part("softmax_scaling", 2 * self.heads, "none"),) if self.query_scales else ()))

    def share(self, hidden: int, q_lora_rank: int | None) -> Share:
        return Share("indexer", "attention", "attn_tp_size", self.parts(hidden, q_lora_rank))

    @staticmethod
    def gathered_entries(w: Any, selected: float) -> float:
        """Cached entries the sparse attention reads for the top-k selection of a step. A prefill query gathers
        its own `selected` entries: the kernels loop over one query's indices with all its heads, and the
        selections of neighbouring queries differ, so nothing is reused between queries. Intensity is then
        2 x heads per rank x (d_k + d_v) FLOPs per cached entry, which few heads per rank leave memory-bound
        (seed 000: under TP "each token requires separate cache calculation, the compute intensity is quite
        low"). A decode sequence's selection is read once per sequence, its MTP drafts included."""
        return (w.sequences if w.phase == "decode" else w.new_tokens) * selected

    def ops(self, cx: CostKit, hidden: int, q_lora_rank: int | None, key_share: float = 1.0) -> list:
        """`key_share`: the fraction of past tokens the indexer scores (1 / ratio over compressed entries)."""
        pc, w, f, hw, prec = cx.pc, cx.w, cx.f, cx.hw, cx.prec
        T = w.new_tokens
        t_a = T / pc.token_shards
        ctx = max(w.context, 1.0) * key_share
        pair_shards = pc.token_shards * pc.kvp_size
        params = sum(p.params for p in self.parts(hidden, q_lora_rank))
        fp8 = self.key_bytes == 1  # the scores run at the cached keys' precision
        peak = (hw.flops("fp8") if fp8 and hw.supports("fp8") else hw.flops("int8") if fp8 and hw.supports("int8")
                else hw.flops("bf16"))
        score_flops = 2 * self.heads * self.head_dim * T * ctx / pair_shards
        read = (w.sequences * ctx if w.phase == "decode" else T) * self.bytes_per_token
        # the score kernel writes one fp32 logit per (query, key) pair and a separate top-k kernel reads them
        # back (DeepGEMM fp8_mqa_logits + top-k per row)
        logits = T * ctx * LOGIT_BYTES / pair_shards
        return [cx.op("indexer_proj", "indexer", 2 * t_a * params, params * prec.fmt("attention").bytes_per_param,
                      *cx.gemm("attention"), kernels=3),
                cx.op("indexer_score", "indexer", score_flops, read / pair_shards + logits, peak, f.attention,
                      kernels=2),
                cx.op("indexer_topk", "indexer", 0.0, logits + T * self.topk * 4 / pair_shards, peak, f.attention,
                      kernels=1)]

    def activation(self, t: float, tokens: float) -> float:
        # logits for this rank's queries against the context, fp32, chunked per query block
        return t * min(tokens, 4096) * LOGIT_BYTES
