"""DSA lightning indexer (DeepSeek-V3.2, GLM-5): scores every past key per query in FP8 and keeps the top-k.

Its projections are replicated under attention TP in every shipped implementation, so each TP rank repeats
the whole indexer; SP / CP split its tokens and KVP its keys (unless the engine keeps every key on each KVP rank:
FrameworkProfile.kvp_replicates_indexer_keys). Its key cache holds index_head_dim FP8 values
plus one FP32 scale per token (132 B for V3.2; facts/attention-variants.md), unless the engine caches them unquantised
beside the latent (FrameworkProfile.indexer_keys_unquantised: 128 bf16 values, 256 B; `cached_bytes`).

A block-selecting indexer (`block` > 1: MiniMax-M3's MiniMaxM3VLIndexer) scores every past key the same way, max-pools
the scores over blocks of `block` consecutive keys and keeps the top-k blocks; the local blocks it always keeps are
boosted into those k (their score set to +inf before the top-k), so a query attends to at most topk x block keys.
Its layout differs by family (read by the config reader): q / k RMSNorm weights of head_dim where DSA has a k
LayerNorm, no weights_proj, and keys cached in the activation dtype without a scale (MiniMaxM3VLSparseCacheLayer).

A selection scored by the attention's own heads (`own_heads`: Kolibri-1.1's Kolibri1_1Indexer) has no weights and no
cache: the ReLU'd logits of the first `heads` query heads against key head 0 of the layer's cached keys, averaged
over those heads. It may narrow the candidates first (`pool` > 0): a pool-source layer scores the means of
`pool_block` consecutive keys and keeps the best pool / pool_block blocks (the modeling code keeps no means: it forms
them from every cached key at each step); a layer that is not a pool source reuses the pool of the latest one. Each
layer then keeps the top-k keys of its pool plus `sink_tokens` leading and `local_tokens` latest tokens, so a query
attends to at most topk + sinks + local keys. The selection is one per query, shared by every head, so it cannot
split with the heads: each attention-TP rank repeats it, and a rank that does not hold key head 0 keeps a copy of
its keys (`head_copy_bytes`; the config class's TP plan leaves attention unsharded for this reason).

A layer reusing the latest selecting layer's top-k (`selects` False: indexer_types "shared", GLM-5's, Mistral-Large-4's
and Hy4's attention classes build no indexer there) attends to the same number of selected keys but holds no indexer
weights, caches no index keys and scores nothing: the reused indices are already on the device.

A pooled-key indexer (`kpool` > 1: GLM-5.3-Flash's Glm5NextTextIndexer) scores pools of `kpool` consecutive keys, not
single keys: a gate (hidden -> head_dim, compress_gate) scores each key per channel, a learned kpool x head_dim table
(compress_ape) is added, and a softmax over the pool's keys per channel weights them into one pooled key. It caches
each token's key, its gate scores and a valid flag packed in the activation dtype, keeps the top topk / kpool pools
(the reader sets topk so, with block = kpool) and appends the incomplete tail pool (local_tokens = kpool - 1).
A mean-pooled indexer (`kpool_gate` False: Qwen4-Exp's QSA, Qwen4ExpTextQSAIndexer) pools each block of kpool cached
keys by their plain mean instead (then its k RMSNorm and RoPE), so it holds no gate or table and caches each token's
key alone; its top indexer_budget / kpool blocks and the incomplete tail block make the selection the same way.

Prefill can attend in two forms (`prefill_forms`, the kernels that serve the layer kind): "gathered", each query
reading its own selected entries (gathered_entries), or "dense", the dense attention over the whole context with
the selection as a mask (dense FLOPs and one read of the cache; the selection is still scored). Where both are
served the cheaper is costed (`prefill_core`), as an engine dispatching between them by measured thresholds does.
DSA serves the gathered form: SGLang 0.5.23 (dsa_backend.set_dsa_prefill_impl) runs dense MHA only while every
sequence has <= SGLANG_DSA_PREFILL_DENSE_ATTN_KV_LEN_THRESHOLD (2048 = index_topk) keys, where both forms attend to
the same keys, and the sparse MLA kernels (flashmla_sparse / flashmla_kv) above it; vLLM 0.34.0 runs sparse MQA
except on SM100 with FA4 and an unquantised cache, where a masked dense MHA (sparse_mla_attention.forward_mha)
replaces it below a measured per-TP length (mla_attention._MASKED_MHA_THRESHOLDS, V3.2 dims at TP8: <= 32K), a
device- and engine-specific path not modelled. Kolibri-1.1's reference runs the selection as a mask over dense
attention (modeling_kolibri1_1: SDPA with the selected mask) and no engine serves it, so both forms are allowed.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from solver.specs.layers.base import ACT_BYTES, CostKit, Part, Share, per_object, prior_tokens

INDEXER_SCALE_BYTES = 4  # one fp32 scale per cached indexer key
LOGIT_BYTES = 4  # fp32 indexer logits per (query, key) pair
PREFILL_FORMS = ("gathered", "dense")  # the prefill attention forms of a selection (module docstring)


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
    sink_tokens: int = 0  # leading tokens every query attends to besides its top-k
    local_tokens: int = 0  # latest tokens (the query's own included) every query attends to besides its top-k
    own_heads: bool = False  # scored by the attention's first `heads` query heads against its key head 0 (docstring)
    pool: int = 0  # candidate keys a first stage keeps (0: the top-k is chosen among every key)
    pool_block: int = 1  # consecutive keys averaged into one summary the pool stage scores
    pool_source: bool = True  # this layer selects the pool (else it reuses the latest pool source's)
    prefill_forms: tuple[str, ...] = ("gathered",)  # prefill attention forms served (module docstring)
    selects: bool = True  # scores and selects its own top-k; False: reuses the latest selecting layer's (docstring)
    kpool: int = 0  # keys pooled into one scored candidate (module docstring); 0: every key scored alone
    kpool_gate: bool = True  # the pool weights its keys by a learned gate and table; False: their plain mean

    def __post_init__(self) -> None:
        unknown = set(self.prefill_forms) - set(PREFILL_FORMS)
        if not self.prefill_forms or unknown:
            raise ValueError(f"prefill_forms {self.prefill_forms}: each must be one of {PREFILL_FORMS}")

    @property
    def values_per_token(self) -> int:
        """Index key values this layer caches per token: none where it scores the attention's own cached keys."""
        if self.own_heads or not self.selects:
            return 0
        # a pooled-key indexer packs the key, its head_dim gate scores and a valid flag (Glm5NextTextIndexer)
        return 2 * self.head_dim + 1 if self.gated_pool else self.head_dim

    @property
    def bytes_per_token(self) -> float:
        """Index key bytes this layer caches per token in its own format (key_bytes a value plus its scale)."""
        values = self.values_per_token
        return values * self.key_bytes + self.key_scale_bytes if values else 0.0

    def cached_bytes(self, unquantised: bool) -> float:
        """Index key bytes per token as the engine caches them: the layer's format, or, `unquantised` (the
        engine's FrameworkProfile.indexer_keys_unquantised), each value in the activation dtype without a scale."""
        return self.values_per_token * ACT_BYTES if unquantised else self.bytes_per_token

    @property
    def gated_pool(self) -> bool:
        """Whether keys are pooled by a learned gate and table (Glm5NextTextIndexer), not by their mean."""
        return bool(self.kpool) and self.kpool_gate

    @property
    def pool_table_params(self) -> int:
        """The gated pool's learned position table (kpool x head_dim, compress_ape): added per pooled key, not
        multiplied by a token as the other weights are; 0 without a gated pool."""
        return self.kpool * self.head_dim if self.gated_pool else 0

    @property
    def selected_keys(self) -> int:
        """Keys a query attends to at most: its top-k entries of `block` keys each, plus its sinks and local keys."""
        return self.topk * self.block + self.sink_tokens + self.local_tokens

    def head_copy_bytes(self, kv_heads: int, attn_tp: int, kv_bytes: int) -> float:
        """Cached bytes per token a rank adds to score: a copy of key head 0 where attention TP leaves some rank
        without it (the selection is the same on every rank; module docstring)."""
        return self.head_dim * kv_bytes if self.own_heads and attn_tp > 1 and kv_heads > 1 else 0.0

    @per_object
    def parts(self, hidden: int, q_lora_rank: int | None) -> tuple[Part, ...]:
        if self.own_heads or not self.selects:  # scored by the attention's own projections, or not scored here
            return ()
        q_in = q_lora_rank or hidden
        norms = (Part("qk_norm", 2 * self.head_dim, "none") if self.qk_rms_norms  # two RMSNorm weights
                 else Part("k_norm", 2 * self.head_dim, "none"))  # LayerNorm weight + bias
        keys = (Part("wk", hidden * self.head_dim, "none"), norms) if self.key_projection else ()
        return (Part("wq_b", q_in * self.heads * self.head_dim, "none"),
                *keys,
                *((Part("weights_proj", hidden * self.heads, "none"),) if self.weights_proj else ()),
                *((Part("q_input_norm", 2 * q_in, "none"),) if self.query_norm else ()),
                *((Part("softmax_scaling", 2 * self.heads, "none"),) if self.query_scales else ()),
                *((Part("kpool_compress_gate", hidden * self.head_dim, "none"),
                   Part("kpool_compress_ape", self.pool_table_params, "none")) if self.gated_pool else ()))

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

    def prefill_core(self, cx: CostKit, gathered: tuple[float, float], dense: tuple[float, float], peak: float,
                     eff: float) -> tuple[float, float]:
        """(FLOPs, bytes) of a prefill core attending to this selection: the gathered form's or the dense form's
        (each a (FLOPs, bytes) pair of one rank), the cheaper at `peak` x `eff` where both are served."""
        forms = {"gathered": gathered, "dense": dense}
        return min((forms[name] for name in self.prefill_forms), key=lambda fb: cx.op_seconds(*fb, peak, eff))

    def ops(self, cx: CostKit, hidden: int, q_lora_rank: int | None, key_share: float = 1.0,
            unquantised: bool = False, kvp_replicated: bool = False) -> list:
        """`key_share`: the fraction of past tokens the indexer scores (1 / ratio over compressed entries).
        `unquantised`: the engine caches the keys in the activation dtype (cached_bytes), so they are read and
        scored at that precision; `kvp_replicated`: every KVP rank keeps every token's key and scores them all
        (FrameworkProfile.kvp_replicates_indexer_keys), so KVP does not split the scoring."""
        if not self.selects:
            return []
        pc, w, f, hw, prec = cx.pc, cx.w, cx.f, cx.hw, cx.prec
        T = w.new_tokens
        t_a = T / pc.token_shards
        ctx = max(w.context, 1.0) * key_share
        kvp = 1 if kvp_replicated else pc.kvp_size
        pair_shards = pc.token_shards * kvp * w.kv_shards  # Work.kv_shards: a sharded-cache CP decode
        # weights multiplied by every token (the pool position table is added per pooled key, not multiplied)
        params = sum(p.params for p in self.parts(hidden, q_lora_rank)) - self.pool_table_params
        fp8 = self.key_bytes == 1 and not unquantised  # the scores run at the cached keys' precision
        peak = (hw.flops("fp8") if fp8 and hw.supports("fp8") else hw.flops("int8") if fp8 and hw.supports("int8")
                else hw.flops("bf16"))
        # a key scored: the indexer's own cached key, or key head 0 of the attention's cache
        key_bpt = self.head_dim * prec.kv_bytes if self.own_heads else self.cached_bytes(unquantised)
        decode = w.phase == "decode"
        # keys a prefill step reads: its new tokens' and, after a cached prefix (prior_tokens), each sequence's
        # cached ones at `key_share` (compressed entries), once per sequence [keys]
        prefill_keys = T + w.sequences * round(prior_tokens(w)) * key_share
        ops = []
        if params:
            ops.append(cx.op("indexer_proj", "indexer", 2 * t_a * params,
                             params * prec.fmt("attention").bytes_per_param, *cx.gemm("attention"), kernels=3))
        if self.pool and self.pool_source and ctx > self.pool:
            # the pool stage: every key read to form the block means, one score per block, top pool / pool_block
            blocks = ctx / self.pool_block
            pool_logits = T * blocks * LOGIT_BYTES / pair_shards
            ops += [cx.op("indexer_pool_score", "indexer", 2 * self.heads * self.head_dim * T * blocks / pair_shards,
                          (w.sequences * ctx if decode else prefill_keys) * key_bpt / pair_shards + pool_logits, peak,
                          f.attention, kernels=2),
                    cx.op("indexer_pool_topk", "indexer", 0.0,
                          pool_logits + T * self.pool / self.pool_block * 4 / pair_shards, peak, f.attention,
                          kernels=1)]
        # the keys the top-k stage scores: its pool, or every key
        scored = min(ctx, cx.mean_keys_capped(self.pool)) if self.pool else ctx
        # candidates scored: each key, or each pool of kpool keys; every cached key is still read
        candidates = scored / self.kpool if self.kpool else scored
        score_flops = 2 * self.heads * self.head_dim * T * candidates / pair_shards
        read = (w.sequences * scored if decode else prefill_keys) * key_bpt
        if self.kpool:
            # pooling a key, once per key a step reads: gated, its gate score plus the table entry, the softmax's
            # exp and the weighted sum (about 4 FLOPs a channel); a mean, one add a channel
            per_channel = 4 if self.kpool_gate else 1
            score_flops += per_channel * self.head_dim * (w.sequences * scored if decode else T) / pair_shards
        # the score kernel writes one fp32 logit per (query, candidate) pair and a separate top-k kernel reads them
        # back (DeepGEMM fp8_mqa_logits + top-k per row)
        logits = T * candidates * LOGIT_BYTES / pair_shards
        return ops + [cx.op("indexer_score", "indexer", score_flops, read / pair_shards + logits, peak, f.attention,
                            kernels=2),
                      cx.op("indexer_topk", "indexer", 0.0, logits + T * self.topk * 4 / pair_shards, peak,
                            f.attention, kernels=1)]

    def logits_scratch(self, rows: float, keys: float, max_bytes: float | None) -> float:
        """Bytes of the fp32 logits one scoring pass holds: `rows` query rows of this rank against the `keys` they
        score (its candidates: kpool pools, at most `pool` keys after a pool stage, whose own logits score the
        key blocks). The engine splits the rows so that a piece stays within `max_bytes`
        (FrameworkProfile.indexer_logits_max_bytes; vLLM 0.34.0 dense_logits_rows: max(1, budget // row bytes)
        rows), never below one row; None: the whole matrix."""
        if not self.selects:
            return 0.0
        scored = min(keys, self.pool) if self.pool else keys
        widths = [scored / self.kpool if self.kpool else scored]
        if self.pool and self.pool_source and keys > self.pool:
            widths.append(keys / self.pool_block)
        return max(_row_pieces(rows, w * LOGIT_BYTES, max_bytes) for w in widths)


def _row_pieces(rows: float, row_bytes: float, max_bytes: float | None) -> float:
    """Bytes of `rows` rows of `row_bytes` each, split into pieces of whole rows within `max_bytes` (at least one
    row a piece; None: unsplit)."""
    if max_bytes is None or row_bytes <= 0:
        return rows * row_bytes
    return min(rows, max(1, max_bytes // row_bytes)) * row_bytes
