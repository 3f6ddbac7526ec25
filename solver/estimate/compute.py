"""FLOPs, bytes and time per module per rank for one forward step.

Every operation reports the same record (FLOPs, bytes, compute time, memory time, kernel overhead), so any
figure can be checked by hand. Time = max(FLOPs / achieved FLOP/s, bytes / achieved HBM bandwidth) plus a
fixed cost per kernel. Work that an implementation repeats on every rank of a group (MLA down-projections,
the DSA indexer under attention TP) is charged to every rank.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from solver.estimate.memory import indexer_bytes_per_token_layer, kv_bytes_per_token_layer
from solver.estimate.params import ParamReport, _attention_parts, _indexer_parts
from solver.specs.hardware import Hardware
from solver.specs.model import ModelSpec
from solver.specs.parallel import ParallelConfig
from solver.specs.precision import Precision
from solver.estimate.factors import Factors, factors_for  # noqa: F401  (re-exported: their home moved)

# GEMM output width at which a tile-based kernel reaches half its large-shape efficiency: small per-rank
# slices (TP over narrow experts) waste tensor-core tiles. Assumption: one 128-wide tile (wave quantization).
GEMM_HALF_WIDTH = 128
ACT_BYTES = 2  # bf16 activations between kernels
LOGIT_BYTES = 4  # fp32 indexer logits per (query, key) pair


@dataclass(frozen=True)
class Work:
    """What one step processes, per attention replica."""

    phase: str  # "prefill" | "decode"
    new_tokens: float  # tokens through the layers
    context: float  # mean keys each new token attends to (its position in the sequence)
    sequences: float  # sequences in the step
    logits_tokens: float  # tokens that need logits (last token per prefill sequence, every decode token)
    # attention replicas that have work this step (0 = all). One prompt under attention DP8 keeps one replica
    # busy: the MoE sees that prompt's tokens only, not eight times them.
    busy_replicas: float = 0.0


@dataclass(frozen=True)
class OpCost:
    name: str
    module: str
    flops: float
    bytes: float
    compute_s: float
    memory_s: float
    overhead_s: float

    @property
    def time_s(self) -> float:
        return max(self.compute_s, self.memory_s) + self.overhead_s

    @property
    def bound(self) -> str:
        return "compute" if self.compute_s >= self.memory_s else "memory"

    def scaled(self, n: float) -> "OpCost":
        return OpCost(self.name, self.module, self.flops * n, self.bytes * n, self.compute_s * n,
                      self.memory_s * n, self.overhead_s * n)


def _op(name: str, module: str, flops: float, nbytes: float, peak_flops: float, eff: float, hw: Hardware,
        f: Factors, kernels: float, shape_eff: float = 1.0) -> OpCost:
    compute = flops / (peak_flops * eff * shape_eff) if flops else 0.0
    memory = nbytes / (hw.hbm_bandwidth_Bps * f.hbm) if nbytes else 0.0
    return OpCost(name, module, flops, nbytes, compute, memory, kernels * f.kernel_overhead_s)


def shape_efficiency(width: float) -> float:
    return width / (width + GEMM_HALF_WIDTH) if width > 0 else 1.0


def distinct_experts_touched(num_experts: int, topk_real: float, tokens: float) -> float:
    """Expected distinct experts hit by `tokens` tokens each routing to `topk_real` of `num_experts`."""
    if num_experts <= 0 or tokens <= 0:
        return 0.0
    p_miss = max(0.0, 1.0 - topk_real / num_experts)
    return num_experts * (1.0 - p_miss ** tokens)


def load_imbalance(base: float, pairs_per_rank: float, ranks: int) -> float:
    """Busiest EP rank vs mean: routing skew (base) and the balls-in-bins spread of few tokens."""
    if ranks <= 1 or pairs_per_rank <= 0:
        return 1.0
    spread = 1.0 + math.sqrt(2.0 * math.log(ranks) / pairs_per_rank)
    return max(base, spread)


def busy_replicas(pc: ParallelConfig, w: Work) -> float:
    r = pc.attn_replicas
    return min(float(r), w.busy_replicas) if w.busy_replicas > 0 else float(r)


def group_tokens(pc: ParallelConfig, w: Work, degree: int, tokens: float | None = None) -> float:
    """Tokens that one group of `degree` ranks (a module's TP group) processes in the busiest group.

    `tokens` is per attention replica (default: the step's new tokens). A group inside one attention group
    (degree <= TP x CP x KVP x SP) gets its share of that replica's tokens; a larger group spans
    degree / attn_group_size replicas, of which at most `busy_replicas` have tokens. Per-rank FLOPs of a
    module whose weights are split `degree` ways = 2 x group_tokens x params / degree.
    """
    t = w.new_tokens if tokens is None else tokens
    g = pc.attn_group_size
    if degree <= g:
        return t * degree / g
    return t * min(degree / g, busy_replicas(pc, w))


def mean_keys_capped(w: Work, cap: float) -> float:
    """Mean over the step's query tokens of min(keys visible, cap) (DSA top-k, sliding window).

    The mean of a min is not the min of the mean: a 4K prompt with top-k 2048 attends on average to 1536
    keys per query, not min(2048.5, 2048). Prefill queries of one sequence sit at positions prior+1..prior+n
    (n new tokens per sequence, `context` their mean position); decode tokens all see `context` keys.
    """
    ctx = max(w.context, 1.0)
    if w.phase != "prefill" or w.sequences <= 0:
        return min(ctx, cap)
    n = max(1.0, w.new_tokens / w.sequences)
    prior = max(0.0, ctx - (n + 1) / 2)

    def cum(x: float) -> float:  # sum over positions 1..x of min(p, cap)
        if x <= cap:
            return x * (x + 1) / 2
        return cap * (cap + 1) / 2 + (x - cap) * cap

    return (cum(prior + n) - cum(prior)) / n


def layer_ops(model: ModelSpec, hw: Hardware, pc: ParallelConfig, prec: Precision, f: Factors, w: Work,
              params: ParamReport, ffn: bool = True) -> dict[str, list[OpCost]]:
    """Per-layer-type op lists: 'attention' (every attention layer), 'dense' (dense-FFN layers), 'moe'.
    `ffn=False` skips the dense/MoE blocks (the planner's attention table needs only the attention block)."""
    a = pc.attn_tp_size
    h = model.hidden_size
    T = w.new_tokens
    t_a = T / pc.token_shards  # tokens whose projections a rank computes

    def u(degree: int) -> float:  # token share per rank of a module whose weights split `degree` ways
        return group_tokens(pc, w, degree) / degree
    gemm_attn = hw.flops(prec.gemm_dtype("attention"))
    bpp_attn = prec.fmt("attention").bytes_per_param

    # --- projections (q/kv or MLA), replicated parts charged to every TP rank
    parts = _attention_parts(model)
    tp_par = sum(p.params for p in parts if p.split == "tp")
    kv_par = sum(p.params for p in parts if p.split == "kv_heads")
    rep_par = sum(p.params for p in parts if p.split == "none")
    proj_params_rank = tp_par / a + kv_par / min(a, model.num_key_value_heads) + rep_par
    attn_ops = [_op("qkv_proj", "attention", 2 * t_a * proj_params_rank,
                    proj_params_rank * bpp_attn + t_a * h * ACT_BYTES, gemm_attn, f.gemm, hw, f,
                    kernels=6 if model.has_mla else 3,
                    shape_eff=shape_efficiency(model.num_attention_heads * model.head_dim / a))]

    # --- attention core
    ctx = max(w.context, 1.0)
    heads = model.num_attention_heads / a
    pair_shards = pc.token_shards * pc.kvp_size
    kv_bpt = kv_bytes_per_token_layer(model, prec.kv_bytes, a)
    attn_peak = hw.flops("bf16")
    if model.has_dsa:
        topk = model.index_topk or 2048
        # DSA runs in MLA's MQA (absorbed) form: d_k = kv_lora + rope, d_v = kv_lora; heads padded per rank
        keys = mean_keys_capped(w, topk)
        dk = (model.kv_lora_rank or 0) + (model.qk_rope_head_dim or 0)
        dv = model.kv_lora_rank or 0
        eff_heads = max(heads, hw.sparse_attention_head_pad)
        core_flops = 2 * eff_heads * T * keys * (dk + dv) / pair_shards
        core_bytes = (w.sequences * keys * kv_bpt if w.phase == "decode" else T * kv_bpt) / pair_shards
    else:
        window = model.local_attention_window
        if window and model.num_local_attention_layers:
            share_local = model.num_local_attention_layers / model.num_layers
            keys = (1 - share_local) * ctx + share_local * mean_keys_capped(w, window)
        else:
            keys = ctx
        if model.has_mla and w.phase == "decode":
            dk = (model.kv_lora_rank or 0) + (model.qk_rope_head_dim or 0)
            dv = model.kv_lora_rank or 0
        else:
            dk, dv = model.head_dim, model.v_head_dim
        core_flops = 2 * heads * T * keys * (dk + dv) / pair_shards
        read_tokens = w.sequences * keys if w.phase == "decode" else T
        core_bytes = read_tokens * kv_bpt / pair_shards
    attn_eff = f.attention if w.phase == "prefill" else f.gemm
    attn_ops.append(_op("attention_core", "attention", core_flops, core_bytes + t_a * h * ACT_BYTES,
                        attn_peak, attn_eff, hw, f, kernels=2))

    # --- DSA indexer: replicated under attention TP, split by SP/CP (token shards) and KVP (key shards)
    if model.has_dsa:
        ih, idim = model.index_n_heads or 0, model.index_head_dim or 0
        idx_params = sum(p.params for p in _indexer_parts(model))
        idx_peak = hw.flops("fp8") if hw.supports("fp8") else hw.flops("int8") if hw.supports("int8") else attn_peak
        score_flops = 2 * ih * idim * T * ctx / pair_shards
        idx_read = (w.sequences * ctx if w.phase == "decode" else T) * indexer_bytes_per_token_layer(model)
        # the score kernel writes one fp32 logit per (query, key) pair and a separate top-k kernel reads them
        # back (DeepGEMM fp8_mqa_logits + top-k per row); at 64K that is ~8.6 GB each way per layer, a missing
        # memory term before this fix
        logits_bytes = T * ctx * LOGIT_BYTES / pair_shards
        attn_ops.append(_op("indexer_proj", "indexer", 2 * t_a * idx_params,
                            idx_params * bpp_attn, gemm_attn, f.gemm, hw, f, kernels=3))
        attn_ops.append(_op("indexer_score", "indexer", score_flops, idx_read / pair_shards + logits_bytes,
                            idx_peak, f.attention, hw, f, kernels=2))
        attn_ops.append(_op("indexer_topk", "indexer", 0.0, logits_bytes + T * topk * 4 / pair_shards,
                            idx_peak, f.attention, hw, f, kernels=1))

    # --- o_proj: row-parallel over its own TP group; the group processes the tokens of its ranks. Under KVP
    # the ranks share tokens, so the KVP merge leaves each rank a 1/kvp share (by heads when o_proj TP = kvp,
    # by tokens otherwise) -- before this fix every KVP rank was charged the whole o_proj GEMM.
    # Row-parallel splits the input (K) dimension, so the output stays h wide for the tile efficiency.
    o_params = model.o_proj_dim * h
    o_deg = pc.oproj_shards
    attn_ops.append(_op("o_proj", "o_proj", 2 * group_tokens(pc, w, o_deg) * o_params / o_deg,
                        o_params / o_deg * bpp_attn, gemm_attn, f.gemm, hw, f, kernels=1,
                        shape_eff=shape_efficiency(h)))

    # --- dense FFN and the MoE block
    dense_ops: list[OpCost] = []
    if not ffn:
        return {"attention": attn_ops, "dense": dense_ops, "moe": []}
    if model.has_dense_ffn:
        p = params.module("dense_ffn").params / model.num_dense_layers
        d = pc.dense_tp_size
        dense_ops.append(_op("dense_ffn", "dense_ffn", 2 * u(d) * p, p / d * prec.fmt("dense").bytes_per_param,
                             hw.flops(prec.gemm_dtype("dense")), f.gemm, hw, f, kernels=3,
                             shape_eff=shape_efficiency(model.intermediate_size / d)))
    moe_ops: list[OpCost] = []
    if model.is_moe and model.num_moe_layers:
        L = model.num_moe_layers
        inter = model.moe_intermediate_size or model.intermediate_size
        expert_params = params.module("routed_experts").params / (L * model.num_experts)
        k_real = model.real_experts_per_token
        ep, t = pc.moe_ep_size, pc.moe_tp_size
        system_tokens = T * busy_replicas(pc, w)
        pairs_rank = system_tokens * k_real / ep
        imb = load_imbalance(f.expert_imbalance, pairs_rank, ep)
        touched = distinct_experts_touched(model.num_experts, k_real, system_tokens) / ep
        # Grouped GEMM over the local experts. Its FLOP/s are the dense GEMM's times `grouped_gemm`: at the
        # tens to hundreds of rows per expert of a serving step the MoE kernels (gather-by-index, per-expert
        # tile scheduling, weights streamed once per expert) reach well below a large dense GEMM (0.23 of it,
        # fitted over the calibration CSV; benchmarks/README.md). Small-batch decode stays weight-bound, so the
        # fraction matters where the grouped GEMM is compute-bound: prefill, and decode at hundreds of rows
        # per expert (large attention-DP batches).
        moe_ops.append(_op("routed_experts", "routed_experts", 2 * pairs_rank * expert_params / t * imb,
                           touched * expert_params / t * prec.fmt("experts").bytes_per_param
                           + pairs_rank * (h + 2 * inter / t) * ACT_BYTES,
                           hw.flops(prec.gemm_dtype("experts")), f.gemm, hw, f, kernels=4,
                           shape_eff=shape_efficiency(inter / t) * f.grouped_gemm))
        # Token permute / un-permute: memory-bound kernels outside the grouped GEMM (not overlapped with it).
        # The permute writes every (token, expert) pair's hidden row in expert order and the un-permute reads
        # the down-projection's rows back to sum them per token: pairs x hidden x 2 bytes x 2 passes on the
        # busiest rank (under MoE TP every rank holds all its group's pairs at full hidden width). One kernel
        # more: the permute is among the four the grouped-GEMM op already counts.
        moe_ops.append(_op("moe_permute", "routed_experts", 0.0, 2 * pairs_rank * imb * h * ACT_BYTES,
                           hw.flops("bf16"), f.gemm, hw, f, kernels=1))
        router = params.module("router").params / L
        moe_ops.append(_op("router", "router", 2 * u(1) * router, router * 2, hw.flops("bf16"), f.gemm, hw, f,
                           kernels=2))
        if model.num_shared_experts:
            sp_ = params.module("shared_experts").params / L
            d = pc.dense_tp_size
            moe_ops.append(_op("shared_experts", "shared_experts", 2 * u(d) * sp_,
                               sp_ / d * prec.fmt("dense").bytes_per_param, hw.flops(prec.gemm_dtype("dense")),
                               f.gemm, hw, f, kernels=3,
                               shape_eff=shape_efficiency((model.shared_expert_intermediate_size or inter
                                                           * model.num_shared_experts) / d)))
    return {"attention": attn_ops, "dense": dense_ops, "moe": moe_ops}


def head_ops(model: ModelSpec, hw: Hardware, pc: ParallelConfig, prec: Precision, f: Factors, w: Work,
             params: ParamReport) -> list[OpCost]:
    """Embedding lookup and lm_head, once per step."""
    h, v = model.hidden_size, model.vocab_size
    e, lt = pc.embed_tp_size, pc.lmhead_tp_size
    embed = _op("embedding", "embedding", 0.0, group_tokens(pc, w, e) * h * prec.fmt("embedding").bytes_per_param,
                hw.flops("bf16"), f.gemm, hw, f, kernels=1)
    u_logit = group_tokens(pc, w, lt, w.logits_tokens) / lt
    head_params = v * h
    lm = _op("lm_head", "lm_head", 2 * u_logit * head_params,
             head_params / pc.lmhead_tp_size * prec.fmt("lm_head").bytes_per_param + u_logit * v * 4,
             hw.flops(prec.gemm_dtype("lm_head")), f.gemm, hw, f, kernels=2,
             shape_eff=shape_efficiency(v / pc.lmhead_tp_size))
    return [embed, lm]
