"""Memory per rank for a parallel_config: weights, KV/indexer cache, activations, buffers, reserve.

Units are bytes. Thresholds follow the seed (Step 3.2/3.4): what the model uses (weights, caches, activations,
buffers: `model_bytes`) must stay under min(0.95 x capacity, capacity - runtime reserve) (a wall, `limit_bytes`);
weights + KV above 0.8 of capacity is a strong warning (class B, may be justified).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from solver.estimate.factors import Factors
from solver.estimate.params import ModuleParams, ParamReport, count_params
from solver.memo import IdentityMemo
from solver.specs.layers.dsa import INDEXER_SCALE_BYTES  # noqa: F401  (re-exported)
from solver.specs.profile_serving import DEFAULT_TOKEN_BUDGET
from solver.specs.hardware import Hardware
from solver.specs.dtypes import NumberFormat, number_format
from solver.specs.layers.base import Part, heads_split
from solver.specs.model import ModelSpec
from solver.specs.parallel import ParallelConfig
from solver.specs.precision import Precision

TOTAL_FRACTION = 0.95  # seed 3.4: total memory > capacity x 0.95 -> increase parallelism or reduce batch
WEIGHTS_KV_FRACTION = 0.8  # seed 3.2: parameters + KV close to capacity x 0.8 -> tight
# NCCL/HCCL communicator buffers: ~340-390 MiB per GPU at TP 2-8 (facts/hardware.md)
COMM_BUFFER_BYTES = 375 * 2**20
# Default tokens per attention replica in one prefill forward: the chunked-prefill default token budget
DEFAULT_PREFILL_CHUNK = DEFAULT_TOKEN_BUDGET


@dataclass(frozen=True)
class MemoryOptions:
    total_fraction: float = TOTAL_FRACTION
    weights_kv_fraction: float = WEIGHTS_KV_FRACTION
    prefill_chunk: int = DEFAULT_PREFILL_CHUNK
    # which knob splits the shared experts: frameworks differ (dense MLP TP vs the MoE module's TP)
    shared_experts_knob: str = "dense_tp_size"
    include_mtp: bool = False
    # the engine's KVP layout (FrameworkProfile.kvp_splits_attention_weights, as Factors carry it: engine_options):
    # the modules attention TP splits (attention, linear attention, SSM, conv) split over attention TP x KVP, and
    # so do the heads and state of the mixers KVP does not split (base.heads_split)
    kvp_splits_attention_weights: bool = False
    # the engine's CP cache layout (FrameworkProfile.cp_replicates_kv_cache): every CP rank keeps each request's
    # whole KV (vLLM's prefill context parallel), so CP does not divide the cache
    cp_replicates_kv_cache: bool = False


def engine_options(opts: MemoryOptions | None, f: Factors) -> MemoryOptions:
    """`opts` with the engine's layout facts the step costs read from `f`, so that one configuration's memory
    and step costs price one layout. Whoever holds the engine's factors passes them here."""
    opts = opts or MemoryOptions()
    if (opts.kvp_splits_attention_weights, opts.cp_replicates_kv_cache) == (f.kvp_splits_attention_weights,
                                                                              f.cp_replicates_kv_cache):
        return opts
    return replace(opts, kvp_splits_attention_weights=f.kvp_splits_attention_weights,
                   cp_replicates_kv_cache=f.cp_replicates_kv_cache)


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
    state_bytes: float = 0.0  # constant per-request state (linear attention, SSM) of the sequences held

    @property
    def weights_total(self) -> float:
        return sum(self.weights_bytes.values())

    @property
    def cache_total(self) -> float:
        return self.kv_cache_bytes + self.indexer_cache_bytes + self.state_bytes

    @property
    def model_bytes(self) -> float:
        """What is compared to `limit_bytes`: everything on the rank but the runtime reserve."""
        return self.weights_total + self.cache_total + self.activation_bytes + self.comm_buffer_bytes

    @property
    def total(self) -> float:
        """Everything on the rank, the runtime reserve included (compare to capacity, not to the limit)."""
        return self.model_bytes + self.reserved_bytes

    @property
    def limit_bytes(self) -> float:
        return memory_limit(self.capacity_bytes, self.reserved_bytes, self.total_fraction)

    @property
    def feasible(self) -> bool:
        return self.model_bytes <= self.limit_bytes

    def limit_formula(self) -> str:
        """The limit's formula in GB (1e9 bytes), for messages that show it next to `model_bytes`."""
        cap, res = self.capacity_bytes / 1e9, self.reserved_bytes / 1e9
        return f"min({self.total_fraction:g} x {cap:.2f}, {cap:.2f} - {res:.2f} runtime reserve)"

    def misfit(self) -> str | None:
        """One line saying by how much the rank overflows its limit; None where it fits."""
        if self.feasible:
            return None
        return (f"does not fit: {self.model_bytes / 1e9:.2f} GB per rank (the runtime reserve aside) over the limit "
                f"of {self.limit_bytes / 1e9:.2f} GB = {self.limit_formula()}")

    @property
    def tight(self) -> bool:
        """Seed 3.2: weights + KV near 0.8 of capacity."""
        return self.weights_total + self.cache_total > self.weights_kv_fraction * self.capacity_bytes

    @property
    def binds(self) -> bool:
        """Memory limits this deployment: it does not fit, or weights + KV sit above the seed's 0.8 mark."""
        return not self.feasible or self.tight

    def binds_why(self) -> str:
        """Which of `binds`' two conditions holds, in words."""
        return "it does not fit" if not self.feasible else "weights + KV above 0.8 of capacity"

    @property
    def kv_share_of_available(self) -> float:
        """Seed 3.4: KV share of the memory left after weights (> 50%: rank.kv_split.kv_share_warning)."""
        avail = self.limit_bytes - self.weights_total
        return self.cache_total / avail if avail > 0 else math.inf


# ------------------------------------------------------------------------------------------------ weights


def split_degree(knob: str | None, pc: ParallelConfig, opts: MemoryOptions) -> int:
    """How many ways the "tp" parts of a module owned by `knob` are split under this config."""
    if knob is None:
        return 1
    if knob == "attn_tp_size":
        # where the engine carves KVP out of its TP ranks it builds every such module at TP = attn_tp x kvp; SP /
        # CP keep full attention weights on every rank
        return pc.attn_tp_group(opts.kvp_splits_attention_weights)
    if knob == "moe_tp_size":
        return pc.world_size  # E/EP experts per rank, each split moe_tp ways
    if knob == "o_proj_tp_size":
        return pc.oproj_split(opts.kvp_splits_attention_weights)
    if knob == "shared_experts_tp":
        return getattr(pc, opts.shared_experts_knob)
    if knob == "encoder_tp_size":
        return 1
    return getattr(pc, knob)


def module_weight_bytes(mod: ModuleParams, model: ModelSpec, pc: ParallelConfig, prec: Precision,
                        opts: MemoryOptions) -> float:
    degree = split_degree(mod.knob, pc, opts)
    fmt = prec.fmt(mod.group)
    if mod.knob == "moe_tp_size" and mod.group == "experts" and pc.redundant_experts and model.num_experts:
        # redundant experts are full copies: the rank holds (E + r) / EP experts, not E / EP
        degree_scale = model.num_experts / pc.expert_slots(model.num_experts)
        return sum(part.params * _bytes(part, fmt) / part.degree(degree) for part in mod.parts) / degree_scale
    # norms and router weights stay 16-bit in quantized checkpoints (the "norm" group is always bf16); a part
    # the engine keeps in its own format (Part.dtype: DeepSeek-V4's fp32 hyper-connection maps) is priced at it
    return sum(part.params * _bytes(part, fmt) / part.degree(degree) for part in mod.parts)


def _bytes(part: Part, group: NumberFormat) -> float:
    """Bytes a parameter of `part` holds: its own format where it keeps one, its group's otherwise."""
    return number_format(part.dtype).bytes_per_param if part.dtype else group.bytes_per_param


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


def _primary(model: ModelSpec):
    return model._attention


def kv_bytes_per_token_layer(model: ModelSpec, kv_bytes: int, attn_tp: int = 1) -> float:
    """KV-cache bytes one token adds in one layer of the primary (full) attention type on one rank.

    GQA: K and V for this rank's KV heads. MLA: the compressed latent plus the rope key, one shared 'head'
    that attention TP does not shard. Per-layer figures for every layer type: `state_of_layers`.
    """
    a = _primary(model)
    return a.state(kv_bytes, attn_tp).per_token_bytes if a is not None else 0.0


def indexer_bytes_per_token_layer(model: ModelSpec) -> float:
    """DSA indexer key cache: index_head_dim FP8 values + one FP32 scale (132 B for V3.2)."""
    a = _primary(model)
    return a.state(2, 1).index_per_token_bytes if a is not None else 0.0


@dataclass(frozen=True)
class StateBytes:
    """One request's state summed over layers, on one rank before CP / KVP token sharding."""

    kv: float  # growing KV (capped at the window for sliding / chunked layers)
    index: float  # DSA indexer keys
    constant: float  # per-request state that does not grow: linear-attention / SSM state, conv tails, image K/V


def state_of_layers(layers: list, kv_bytes: int, attn_tp: int, seq_len: float,
                    group: int | None = None) -> StateBytes:
    """Per-request state of (layer, count) pairs holding `seq_len` tokens; `group`: the attention-TP group
    (ParallelConfig.attn_tp_group; None: attention TP), which splits the heads of the blocks KVP does not split."""
    group = group or attn_tp
    kv = idx = const = 0.0
    for layer, n in layers:
        for block in layer.blocks:
            st = block.state(kv_bytes, heads_split(block, attn_tp, group))
            held = st.tokens_held(seq_len)
            kv += n * st.per_token_bytes * held
            idx += n * st.index_per_token_bytes * held
            const += n * st.constant_bytes
    return StateBytes(kv, idx, const)


def cached_tokens_per_layer_sum(model: ModelSpec, seq_len: int) -> float:
    """Sum over layers with a growing cache of the tokens each holds (windowed layers keep their window)."""
    total = 0.0
    for layer, n in model.layer_groups:
        for block in layer.blocks:
            st = block.state(2, 1)
            if st.grows:
                total += n * st.tokens_held(seq_len)
    return total


def _mtp_layers(model: ModelSpec, mtp_layers: int) -> list:
    """The MTP modules' layers (their caches count only when MTP is on)."""
    if not mtp_layers:
        return []
    return [(layer, 1) for module in model.mtp_modules[:mtp_layers] for layer in module]


# request_state per (model, attention TP, its group, token shards, KV bytes, length, MTP): the planner's memory
# tables ask for it per attention choice and sequences held, and it reads neither the batch nor the other knobs
_REQUEST_STATE = IdentityMemo(65_536)


def request_state(model: ModelSpec, pc: ParallelConfig, prec: Precision, seq_len: int,
                  mtp_layers: int = 0, kvp_splits_weights: bool = False, cp_replicates_kv: bool = False) -> StateBytes:
    """One request's state on one rank: growing parts split by CP x KVP, constant parts by the attention-TP group
    only (attention TP, or TP x KVP where KVP reuses the TP ranks: `kvp_splits_weights`, the engine's layout).
    `cp_replicates_kv`: the engine's CP ranks each keep the whole cache (MemoryOptions.cp_replicates_kv_cache),
    so only KVP splits it."""
    shards = (1 if cp_replicates_kv else pc.cp_size) * pc.kvp_size
    group = pc.attn_tp_group(kvp_splits_weights)

    def build() -> StateBytes:
        st = state_of_layers(model.layer_groups + _mtp_layers(model, mtp_layers), prec.kv_bytes, pc.attn_tp_size,
                             seq_len, group)
        return StateBytes(st.kv / shards, st.index / shards, st.constant)

    return _REQUEST_STATE.get((model,), (pc.attn_tp_size, group, shards, prec.kv_bytes, seq_len, mtp_layers), build)


def held_per_replica(batch: float, pc: ParallelConfig) -> int:
    """Sequences the busiest attention replica holds: a request is not split across replicas, so a batch below
    the replica count still leaves one whole sequence on a rank."""
    return math.ceil(batch / pc.attn_replicas)


def cache_per_rank(model: ModelSpec, pc: ParallelConfig, prec: Precision, batch: float, seq_len: int,
                   mtp_layers: int = 0, cp_replicates_kv: bool = False) -> tuple[float, float, float]:
    """(KV bytes, indexer bytes, sequences per rank). CP and KVP shard tokens (CP not where the engine's CP ranks
    each keep the whole cache: `cp_replicates_kv`); TP shards GQA heads only. Constant per-request state
    (linear / SSM layers): `state_per_rank`."""
    seqs = held_per_replica(batch, pc)
    st = request_state(model, pc, prec, seq_len, mtp_layers, cp_replicates_kv=cp_replicates_kv)
    return seqs * st.kv, seqs * st.index, seqs


def state_per_rank(model: ModelSpec, pc: ParallelConfig, prec: Precision, batch: float, seq_len: int,
                   mtp_layers: int = 0, kvp_splits_weights: bool = False) -> float:
    """Constant per-request state (linear attention, SSM) of the sequences a rank holds, under the engine's KVP
    layout (`kvp_splits_weights`: MemoryOptions.kvp_splits_attention_weights)."""
    seqs = held_per_replica(batch, pc)
    return seqs * request_state(model, pc, prec, seq_len, mtp_layers, kvp_splits_weights).constant


# ------------------------------------------------------------------------------------------- activations


def activation_terms(model: ModelSpec, pc: ParallelConfig, tokens: float, sequences: float,
                     kvp_splits_weights: bool = False) -> dict[str, float]:
    """Peak transient bytes of one forward over `tokens` tokens of one attention replica, by the knob that sizes
    each part (Block.activation_knob; the logits: lmhead_tp_size): the residual stream plus the largest
    intermediate of those blocks. Layers run one after another, so the peak is the largest term
    (activation_per_rank); the planner constrains each term on its own (plan.layout_memory.StageMemory).
    `kvp_splits_weights`: the engine's KVP layout (the heads of the mixers KVP does not split: base.heads_split)."""
    return _terms(model, pc, tokens, sequences, None, kvp_splits_weights)


def _terms(model: ModelSpec, pc: ParallelConfig, tokens: float, sequences: float,
           knobs: frozenset[str] | tuple[str, ...] | None, kvp_splits_weights: bool) -> dict[str, float]:
    """activation_terms, only the terms of `knobs` (None: all): the same blocks in the same order, the others
    not evaluated (the planner's memory rows ask for one group's terms per choice)."""
    a, group = pc.attn_tp_size, pc.attn_tp_group(kvp_splits_weights)
    h = model.hidden_size
    act_b = 2  # activations held in bf16 between kernels
    t = tokens / pc.token_shards  # tokens a rank computes attention for
    # the residual (its streams under hyper-connections: layers/hyper.py), the normed input, the module output
    residual = (model.residual_streams + 2) * t * h * act_b
    largest: dict[str, float] = {}
    for layer, _ in model.layer_groups:
        for b in layer.blocks:
            k = b.activation_knob
            if knobs is None or k in knobs:
                largest[k] = max(largest.get(k, 0.0), b.activation(pc, tokens, heads_split(b, a, group)))
    if knobs is None or "lmhead_tp_size" in knobs:
        logits = max(sequences, 1.0) * model.vocab_size / pc.lmhead_tp_size * 4
        largest["lmhead_tp_size"] = max(largest.get("lmhead_tp_size", 0.0), logits)
    return {k: residual + v for k, v in largest.items()}


def activation_per_rank(model: ModelSpec, pc: ParallelConfig, tokens: float,
                        sequences: float, kvp_splits_weights: bool = False) -> float:
    """Peak transient bytes of one forward over `tokens` tokens of one attention replica."""
    return max(activation_terms(model, pc, tokens, sequences, kvp_splits_weights).values())


def prefill_chunk(opts: MemoryOptions, seq_len: int, seqs: float) -> float:
    """Tokens of one prefill forward: the chunk, or all the prompts a rank holds when they are fewer."""
    return min(opts.prefill_chunk, max(seq_len, 1) * max(seqs, 1))


def activation_peak_terms(model: ModelSpec, pc: ParallelConfig, opts: MemoryOptions, seq_len: int,
                          seqs: float) -> dict[str, float]:
    """activation_terms at the larger of a prefill chunk and a decode step of `seqs` sequences, term by term
    (the max over phases of the max over terms is the max over terms of the max over phases)."""
    return _peak_terms(model, pc, opts, seq_len, seqs, None)


def activation_peak_of(model: ModelSpec, pc: ParallelConfig, opts: MemoryOptions, seq_len: int, seqs: float,
                       knobs: frozenset[str] | tuple[str, ...]) -> float | None:
    """The largest of activation_peak_terms' terms sized by one of `knobs` (None: no block's term is), without
    evaluating the other terms."""
    return max(_peak_terms(model, pc, opts, seq_len, seqs, knobs).values(), default=None)


def _peak_terms(model: ModelSpec, pc: ParallelConfig, opts: MemoryOptions, seq_len: int, seqs: float,
                knobs: frozenset[str] | tuple[str, ...] | None) -> dict[str, float]:
    chunk = prefill_chunk(opts, seq_len, seqs)
    pre = _terms(model, pc, chunk, max(1.0, chunk / max(seq_len, 1)), knobs, opts.kvp_splits_attention_weights)
    dec = _terms(model, pc, seqs, seqs, knobs, opts.kvp_splits_attention_weights)
    return {k: max(pre.get(k, 0.0), dec.get(k, 0.0)) for k in pre.keys() | dec.keys()}


def activation_peak(model: ModelSpec, pc: ParallelConfig, opts: MemoryOptions, seq_len: int, seqs: float) -> float:
    """The larger transient of a prefill chunk and of a decode step of `seqs` sequences."""
    return max(activation_peak_terms(model, pc, opts, seq_len, seqs).values())


def staging_tokens(opts: MemoryOptions, pc: ParallelConfig, seq_len: int, seqs: float) -> float:
    """Tokens a rank stages for the EP all-to-all: its share of a prefill chunk, or its decode sequences."""
    return max(prefill_chunk(opts, seq_len, seqs) / pc.token_shards, seqs)


def ep_staging_bytes(model: ModelSpec, pc: ParallelConfig, tokens_per_rank: float) -> float:
    """All-to-all dispatch and combine staging: every token-expert pair a rank can send, both ways
    (zero-computation experts stay on the rank: they are not dispatched); 0 without EP."""
    if not (model.is_moe and pc.moe_ep_size > 1):
        return 0.0
    width = max(getattr(b, "expert_width", 0) for b, _ in model.block_groups)  # distinct blocks: the same max
    return 2 * tokens_per_rank * model.real_experts_per_token * width * 2


def comm_groups(pc: ParallelConfig) -> tuple[int, ...]:
    """The group sizes that open a communicator (its buffers: COMM_BUFFER_BYTES once, whatever their number)."""
    return (pc.attn_tp_size, pc.dense_tp_size, pc.embed_tp_size, pc.lmhead_tp_size, pc.cp_size, pc.kvp_size,
            pc.attn_sp_size, pc.oproj_shards)


def comm_buffers_per_rank(model: ModelSpec, pc: ParallelConfig, tokens_per_rank: float) -> float:
    total = COMM_BUFFER_BYTES if any(g > 1 for g in comm_groups(pc)) else 0.0
    return total + ep_staging_bytes(model, pc, tokens_per_rank)


# ------------------------------------------------------------------------------------------------ report


def memory_per_rank(model: ModelSpec, hw: Hardware, pc: ParallelConfig, prec: Precision, batch: float,
                    seq_len: int, opts: MemoryOptions | None = None, mtp_layers: int | None = None) -> MemoryReport:
    """Per-rank memory for `batch` concurrent sequences holding `seq_len` tokens of context each. Under
    pipeline parallel: the largest stage's (stage_memory)."""
    opts = opts or MemoryOptions()
    if pc.pp_size > 1:
        return max(stage_memory(model, hw, pc, prec, batch, seq_len, opts, mtp_layers), key=lambda r: r.total)
    report = count_params(model)
    mtp = mtp_layers or 0  # MTP is a deployment choice: its layers count only when enabled
    weights = weights_per_rank(model, pc, prec, replace(opts, include_mtp=mtp > 0), report)
    # next-n depth > 1 reuses the checkpoint's MTP layer(s): weights and cache are those layers only
    mtp_cache = model.num_mtp_layers if mtp > 0 else 0
    kv, idx, seqs = cache_per_rank(model, pc, prec, batch, seq_len, mtp_layers=mtp_cache,
                                   cp_replicates_kv=opts.cp_replicates_kv_cache)
    state = state_per_rank(model, pc, prec, batch, seq_len, mtp_layers=mtp_cache,
                           kvp_splits_weights=opts.kvp_splits_attention_weights)
    act = activation_peak(model, pc, opts, seq_len, seqs)
    comm = comm_buffers_per_rank(model, pc, staging_tokens(opts, pc, seq_len, seqs))
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
        state_bytes=state,
    )


def stage_memory(model: ModelSpec, hw: Hardware, pc: ParallelConfig, prec: Precision, batch: float,
                 seq_len: int, opts: MemoryOptions | None = None, mtp_layers: int | None = None) -> list[MemoryReport]:
    """Per-rank memory of each pipeline stage: its layers' weights and caches on the stage's ranks, the
    embedding on the first stage, the LM head (and MTP) on the last. Every stage holds all `batch` sequences'
    state for its own layers (each sequence passes through every stage)."""
    from solver.estimate.pipeline import stages

    out = []
    for st in stages(model, pc.pp_size):
        r = memory_per_rank(st.model, hw, pc.stage(), prec, batch, seq_len, opts, mtp_layers if st.last else 0)
        weights = {k: v for k, v in r.weights_bytes.items() if k not in st.absent_modules}
        notes = r.notes + (f"pipeline stage {st.index} of {pc.pp_size}: {len(st.model.layers)} layers",)
        out.append(replace(r, weights_bytes=weights, notes=notes))
    return out


# max_batch per (model, hardware, configuration, precision; length, options, MTP): a disaggregated plan's pairs
# share a few decode configurations, and each full estimate of a pair asks for its KV capacity (a bisection of some
# 17 memory_per_rank calls): 770 pairs of GLM-5 on 256 H200 spent 4 of 6 CPU s there
_MAX_BATCH = IdentityMemo(4096)


def max_batch(model: ModelSpec, hw: Hardware, pc: ParallelConfig, prec: Precision, seq_len: int,
              opts: MemoryOptions | None = None, mtp_layers: int | None = None) -> int:
    """Largest total batch (a multiple of the attention replicas) whose memory fits; 0 if none does."""
    return _MAX_BATCH.get((model, hw, pc, prec), (seq_len, opts, mtp_layers),
                          lambda: _max_batch(model, hw, pc, prec, seq_len, opts, mtp_layers))


def _max_batch(model: ModelSpec, hw: Hardware, pc: ParallelConfig, prec: Precision, seq_len: int,
               opts: MemoryOptions | None, mtp_layers: int | None) -> int:
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
