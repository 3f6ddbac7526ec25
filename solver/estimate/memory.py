"""Memory per rank for a parallel_config: weights, KV/indexer cache, activations, buffers, reserve.

Units are bytes. Thresholds follow the seed (Step 3.2/3.4): the total must stay under 0.95 of capacity (a
wall); weights + KV above 0.8 of capacity is a strong warning (class B, may be justified).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from solver.estimate.params import ModuleParams, ParamReport, count_params
from solver.specs.framework import DEFAULT_TOKEN_BUDGET
from solver.specs.hardware import Hardware
from solver.specs.model import ModelSpec
from solver.specs.parallel import ParallelConfig
from solver.specs.precision import Precision

TOTAL_FRACTION = 0.95  # seed 3.4: total memory > capacity x 0.95 -> increase parallelism or reduce batch
WEIGHTS_KV_FRACTION = 0.8  # seed 3.2: parameters + KV close to capacity x 0.8 -> tight
# NCCL/HCCL communicator buffers: ~340-390 MiB per GPU at TP 2-8 (facts/hardware.md)
COMM_BUFFER_BYTES = 375 * 2**20
# Default tokens per attention replica in one prefill forward: the chunked-prefill default token budget
DEFAULT_PREFILL_CHUNK = DEFAULT_TOKEN_BUDGET
INDEXER_SCALE_BYTES = 4  # one fp32 scale per cached indexer key (facts/attention-variants.md)


@dataclass(frozen=True)
class MemoryOptions:
    total_fraction: float = TOTAL_FRACTION
    weights_kv_fraction: float = WEIGHTS_KV_FRACTION
    prefill_chunk: int = DEFAULT_PREFILL_CHUNK
    # which knob splits the shared experts: frameworks differ (dense MLP TP vs the MoE module's TP)
    shared_experts_knob: str = "dense_tp_size"
    include_mtp: bool = False


def memory_limit(capacity_bytes: float, reserved_bytes: float, total_fraction: float) -> float:
    """The wall: the seed's 0.95 x capacity for what the model uses, and the runtime reserve must fit too."""
    return min(total_fraction * capacity_bytes, capacity_bytes - reserved_bytes)


@dataclass(frozen=True)
class MemoryReport:
    weights_bytes: dict[str, float]  # per module
    kv_cache_bytes: float
    indexer_cache_bytes: float
    activation_bytes: float
    comm_buffer_bytes: float
    reserved_bytes: float
    capacity_bytes: float
    total_fraction: float
    weights_kv_fraction: float
    sequences_per_rank: float
    notes: tuple[str, ...] = field(default=())

    @property
    def weights_total(self) -> float:
        return sum(self.weights_bytes.values())

    @property
    def cache_total(self) -> float:
        return self.kv_cache_bytes + self.indexer_cache_bytes

    @property
    def total(self) -> float:
        return (self.weights_total + self.cache_total + self.activation_bytes + self.comm_buffer_bytes
                + self.reserved_bytes)

    @property
    def limit_bytes(self) -> float:
        return memory_limit(self.capacity_bytes, self.reserved_bytes, self.total_fraction)

    @property
    def feasible(self) -> bool:
        return self.total - self.reserved_bytes <= self.limit_bytes

    @property
    def tight(self) -> bool:
        """Seed 3.2: weights + KV near 0.8 of capacity."""
        return self.weights_total + self.cache_total > self.weights_kv_fraction * self.capacity_bytes

    @property
    def kv_share_of_available(self) -> float:
        """Seed 3.4: KV share of the memory left after weights (> 50% -> consider KVP/CP)."""
        avail = self.limit_bytes - self.weights_total
        return self.cache_total / avail if avail > 0 else math.inf


# ------------------------------------------------------------------------------------------------ weights


def _split_degree(part_split: str, degree: int, kv_heads: int) -> int:
    if part_split == "tp":
        return degree
    if part_split == "kv_heads":
        return min(degree, kv_heads)
    return 1


def _module_degree(name: str, pc: ParallelConfig, opts: MemoryOptions) -> int:
    """How many ways a module's 'tp' parts are split under this config."""
    return {
        "embedding": pc.embed_tp_size,
        "attention": pc.attn_tp_size,  # SP/CP keep full attention weights on every rank
        "indexer": pc.attn_tp_size,  # parts are all "none": replicated under TP (facts/attention-variants.md)
        "o_proj": pc.oproj_shards,
        "dense_ffn": pc.dense_tp_size,
        "shared_experts": getattr(pc, opts.shared_experts_knob),
        "routed_experts": pc.world_size,  # E/EP experts per rank, each split moe_tp ways
        "router": 1,
        "norms": 1,
        "lm_head": pc.lmhead_tp_size,
        "mtp_glue": 1,
    }[name]


def module_weight_bytes(mod: ModuleParams, model: ModelSpec, pc: ParallelConfig, prec: Precision,
                        opts: MemoryOptions) -> float:
    degree = _module_degree(mod.name, pc, opts)
    fmt = prec.fmt(mod.group)
    total = 0.0
    # norms and router weights stay 16-bit in quantized checkpoints (the "norm" group is always bf16)
    for part in mod.parts:
        total += part.params * fmt.bytes_per_param / _split_degree(part.split, degree, model.num_key_value_heads)
    return total


def weights_per_rank(model: ModelSpec, pc: ParallelConfig, prec: Precision, opts: MemoryOptions,
                     report: ParamReport | None = None) -> dict[str, float]:
    report = report or count_params(model)
    out = {m.name: module_weight_bytes(m, model, pc, prec, opts) for m in report.modules if m.parts}
    if opts.include_mtp and report.mtp:
        out["mtp"] = sum(module_weight_bytes(m, model, pc, prec, opts) for m in report.mtp)
    return out


# ------------------------------------------------------------------------------------------------ caches


def kv_heads_per_rank(model: ModelSpec, attn_tp: int) -> int:
    """GQA KV heads held by one rank: replicated once attention TP exceeds the KV heads."""
    return max(1, math.ceil(model.num_key_value_heads / attn_tp))


def kv_bytes_per_token_layer(model: ModelSpec, kv_bytes: int, attn_tp: int = 1) -> float:
    """KV-cache bytes one token adds in one layer on one rank (before CP/KVP token sharding).

    GQA: K and V for this rank's KV heads. MLA: the compressed latent plus the rope key, one shared 'head'
    that attention TP does not shard. FP8 MLA uses the FlashMLA layout: 512 fp8 + 4 fp32 scales + 64 bf16 rope.
    """
    if model.has_mla:
        lora, rope = model.kv_lora_rank or 0, model.qk_rope_head_dim or 0
        if kv_bytes == 1:
            return lora + 4 * math.ceil(lora / 128) + 2 * rope
        return (lora + rope) * kv_bytes
    heads = kv_heads_per_rank(model, attn_tp)
    return heads * (model.head_dim + model.v_head_dim) * kv_bytes


def indexer_bytes_per_token_layer(model: ModelSpec) -> float:
    """DSA indexer key cache: index_head_dim FP8 values + one FP32 scale (132 B for V3.2)."""
    if not model.has_dsa:
        return 0.0
    return (model.index_head_dim or 0) + INDEXER_SCALE_BYTES


def cached_tokens_per_layer_sum(model: ModelSpec, seq_len: int) -> float:
    """Sum over layers of tokens held: local-window layers keep at most their window."""
    window = model.local_attention_window or seq_len
    return model.num_global_attention_layers * seq_len + model.num_local_attention_layers * min(seq_len, window)


def cache_per_rank(model: ModelSpec, pc: ParallelConfig, prec: Precision, batch: float, seq_len: int,
                   mtp_layers: int = 0) -> tuple[float, float, float]:
    """(KV bytes, indexer bytes, sequences per rank). CP and KVP shard tokens; TP shards GQA heads only."""
    seqs = batch / pc.attn_replicas
    token_shards = pc.cp_size * pc.kvp_size
    layer_tokens = cached_tokens_per_layer_sum(model, seq_len) + mtp_layers * seq_len
    kv = seqs * layer_tokens * kv_bytes_per_token_layer(model, prec.kv_bytes, pc.attn_tp_size) / token_shards
    idx = seqs * layer_tokens * indexer_bytes_per_token_layer(model) / token_shards
    return kv, idx, seqs


# ------------------------------------------------------------------------------------------- activations


def activation_per_rank(model: ModelSpec, pc: ParallelConfig, tokens: float,
                        sequences: float) -> float:
    """Peak transient bytes of one forward over `tokens` tokens of one attention replica.

    Layers run one after another, so the peak is the residual stream plus the largest module intermediate.
    """
    h = model.hidden_size
    act_b = 2  # activations held in bf16 between kernels
    t = tokens / pc.token_shards  # tokens a rank computes attention for
    residual = 3 * t * h * act_b  # residual, normed input, module output
    heads = model.num_attention_heads / pc.attn_tp_size
    if model.has_mla:
        # non-absorbed prefill: q and k at nope+rope per head, v at v_head_dim
        attn = t * heads * (2 * model.head_dim + model.v_head_dim) * act_b
    else:
        kvh = kv_heads_per_rank(model, pc.attn_tp_size)
        attn = t * (heads * model.head_dim + 2 * kvh * model.head_dim) * act_b
    if model.has_dsa:
        # indexer logits for the queries of this rank against the context, fp32, chunked per query block
        attn += t * min(tokens, 4096) * 4
    # FFN/MoE groups gather the tokens of their members: a rank's share of the system's tokens is u
    u = tokens * pc.attn_replicas / pc.world_size
    dense = u * 2 * model.intermediate_size * act_b if model.has_dense_ffn else 0.0
    moe = 0.0
    if model.is_moe:
        pairs = u * model.real_experts_per_token * pc.moe_tp_size  # token-expert pairs landing on a rank
        inter = model.moe_intermediate_size or model.intermediate_size
        moe = pairs * (h + 2 * inter / pc.moe_tp_size) * act_b
    logits = max(sequences, 1.0) * model.vocab_size / pc.lmhead_tp_size * 4
    return residual + max(attn, dense, moe, logits)


def prefill_chunk(opts: MemoryOptions, seq_len: int, seqs: float) -> float:
    """Tokens of one prefill forward: the chunk, or all the prompts a rank holds when they are fewer."""
    return min(opts.prefill_chunk, max(seq_len, 1) * max(seqs, 1))


def activation_peak(model: ModelSpec, pc: ParallelConfig, opts: MemoryOptions, seq_len: int, seqs: float) -> float:
    """The larger transient of a prefill chunk and of a decode step of `seqs` sequences."""
    chunk = prefill_chunk(opts, seq_len, seqs)
    return max(activation_per_rank(model, pc, chunk, max(1.0, chunk / max(seq_len, 1))),
               activation_per_rank(model, pc, seqs, seqs))


def comm_buffers_per_rank(model: ModelSpec, pc: ParallelConfig, tokens_per_rank: float) -> float:
    groups = [pc.attn_tp_size, pc.dense_tp_size, pc.embed_tp_size, pc.lmhead_tp_size, pc.cp_size,
              pc.kvp_size, pc.attn_sp_size, pc.oproj_shards]
    total = COMM_BUFFER_BYTES if any(g > 1 for g in groups) else 0.0
    if model.is_moe and pc.moe_ep_size > 1:
        # all-to-all dispatch and combine staging: every token-expert pair a rank can send, both ways
        # (zero-computation experts stay on the rank: they are not dispatched)
        total += 2 * tokens_per_rank * model.real_experts_per_token * model.hidden_size * 2
    return total


# ------------------------------------------------------------------------------------------------ report


def memory_per_rank(model: ModelSpec, hw: Hardware, pc: ParallelConfig, prec: Precision, batch: float,
                    seq_len: int, opts: MemoryOptions | None = None, mtp_layers: int | None = None) -> MemoryReport:
    """Per-rank memory for `batch` concurrent sequences holding `seq_len` tokens of context each."""
    opts = opts or MemoryOptions()
    report = count_params(model)
    mtp = mtp_layers or 0  # MTP is a deployment choice: its layers count only when enabled
    weights = weights_per_rank(model, pc, prec, replace(opts, include_mtp=mtp > 0), report)
    # next-n depth > 1 reuses the checkpoint's MTP layer(s): weights and cache are those layers only
    kv, idx, seqs = cache_per_rank(model, pc, prec, batch, seq_len,
                                   mtp_layers=model.num_mtp_layers if mtp > 0 else 0)
    chunk = prefill_chunk(opts, seq_len, seqs)
    act = activation_peak(model, pc, opts, seq_len, seqs)
    comm = comm_buffers_per_rank(model, pc, max(chunk / pc.token_shards, seqs))
    notes = list(prec.notes)
    return MemoryReport(
        weights_bytes=weights,
        kv_cache_bytes=kv,
        indexer_cache_bytes=idx,
        activation_bytes=act,
        comm_buffer_bytes=comm,
        reserved_bytes=float(hw.reserved_bytes),
        capacity_bytes=float(hw.memory_bytes),
        total_fraction=opts.total_fraction,
        weights_kv_fraction=opts.weights_kv_fraction,
        sequences_per_rank=seqs,
        notes=tuple(notes),
    )


def max_batch(model: ModelSpec, hw: Hardware, pc: ParallelConfig, prec: Precision, seq_len: int,
              opts: MemoryOptions | None = None, mtp_layers: int | None = None) -> int:
    """Largest total batch (a multiple of the attention replicas) whose memory fits; 0 if none does."""
    step = pc.attn_replicas

    def fits(b: int) -> bool:
        return memory_per_rank(model, hw, pc, prec, b, seq_len, opts, mtp_layers).feasible

    if not fits(step):
        return 0
    lo, hi = 1, 2
    while fits(hi * step):
        lo, hi = hi, hi * 2
        if hi > 1 << 24:
            return lo * step
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if fits(mid * step):
            lo = mid
        else:
            hi = mid
    return lo * step
