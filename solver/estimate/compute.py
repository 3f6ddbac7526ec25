"""FLOPs, bytes and time per module per rank for one forward step.

Every operation reports the same record (FLOPs, bytes, compute time, memory time, kernel overhead), so any
figure can be checked by hand. Time = max(FLOPs / achieved FLOP/s, bytes / achieved HBM bandwidth) plus a
fixed cost per kernel. Work that an implementation repeats on every rank of a group (MLA down-projections,
the DSA indexer under attention TP) is charged to every rank.

The formulas of each layer type live in its module (specs/layers/): this file hands each block a `Kit`
(hardware, parallel config, precision, factors, work, and the record makers) and adds up what the blocks
return over the model's stack. It never names a layer type.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable

from solver.estimate import comm
from solver.estimate.params import ParamReport
from solver.specs.dtypes import number_format
from solver.specs.hardware import Hardware
from solver.specs.layers import hyper
from solver.specs.layers.base import ACT_BYTES, prior_tokens  # noqa: F401  (ACT_BYTES re-exported)
from solver.specs.layers.dsa import LOGIT_BYTES  # noqa: F401  (re-exported)
from solver.specs.layers.moe import distinct_experts_touched, load_imbalance  # noqa: F401  (re-exported)
from solver.specs.model import ModelSpec
from solver.specs.parallel import ParallelConfig
from solver.specs.precision import Precision
from solver.estimate.factors import Factors, factors_for  # noqa: F401  (re-exported: their home moved)

# GEMM output width at which a tile-based kernel reaches half its large-shape efficiency: small per-rank
# slices (TP over narrow experts) waste tensor-core tiles. Assumption: one 128-wide tile (wave quantization).
GEMM_HALF_WIDTH = 128


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
    # decode: the running sequences sit evenly over `span` consecutive positions, context - span/2 + 1 ..
    # context + span/2 (steady serving: ISL + 1 .. ISL + OSL, span = OSL); 0 = all at `context` (a decode
    # step known by its context alone). Read only where keys are not linear in the position (mean_keys_*)
    span: float = 0.0
    # decode under a CP whose ranks each keep every request's whole cache (FrameworkProfile.cp_replicates_kv_cache:
    # vLLM's prefill context parallel): the CP group's size. Each rank decodes its own requests, then all-gathers
    # their new K/V in every layer and their last hidden states once per step over the group, so every copy stays
    # whole and every rank samples the whole batch (step_parts.decode_layout); 1: no such gathers
    cp_copies: int = 1
    # decode under a CP whose ranks each keep 1/cp of every request's cache (FrameworkProfile.cp_decode_shards_kv:
    # vllm-ascend's PCP): the CP group's size. Every rank runs the whole batch's attention over its shard of the
    # keys and the group all-gathers the partial outputs with their lse to merge them (step_parts.decode_layout);
    # 1: each rank reads its requests' whole cache
    kv_shards: int = 1
    # a prefill-only worker's step (a disaggregated prefill pool; Workload kind "prefill"), whose command runs the
    # engine's prefill EP kernels; False: a co-located engine's prefill, which runs the kernels its one command
    # selects for both phases (EpKernels.colocated_prefill)
    prefill_worker: bool = False

    @classmethod
    def prefill(cls, new: float, cached: float, prompts: float, busy_replicas: float = 0.0,
                prefill_worker: bool = False) -> "Work":
        """A prefill step of `prompts` prompts of `new` tokens each after `cached` ones: their queries sit at
        positions cached + 1 .. cached + new (prior_tokens = cached), so each attends to `cached` keys more than a
        fresh prompt of `new` tokens would, while every other op sees only the new tokens. cached = 0: a whole
        prompt of `new` tokens."""
        return cls("prefill", new_tokens=new * prompts, context=cached + (new + 1) / 2, sequences=prompts,
                   logits_tokens=prompts, busy_replicas=busy_replicas, prefill_worker=prefill_worker)


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
        return op_time_s(self.compute_s, self.memory_s, self.overhead_s)

    @property
    def bound(self) -> str:
        return "compute" if self.compute_s >= self.memory_s else "memory"

    def scaled(self, n: float) -> "OpCost":
        return OpCost(self.name, self.module, self.flops * n, self.bytes * n, self.compute_s * n,
                      self.memory_s * n, self.overhead_s * n)


def op_time_s(compute_s: float, memory_s: float, overhead_s: float) -> float:
    """An op's time: the slower of its compute and its memory traffic, plus its kernels' fixed cost."""
    return max(compute_s, memory_s) + overhead_s


def _op_times(flops: float, nbytes: float, peak_flops: float, eff: float, hw: Hardware, f: Factors,
              shape_eff: float) -> tuple[float, float]:
    """(compute seconds, memory seconds) of an op's FLOPs and bytes."""
    return (flops / (peak_flops * eff * shape_eff) if flops else 0.0,
            nbytes / (hw.hbm_bandwidth_Bps * f.hbm) if nbytes else 0.0)


def _op(name: str, module: str, flops: float, nbytes: float, peak_flops: float, eff: float, hw: Hardware,
        f: Factors, kernels: float, shape_eff: float = 1.0) -> OpCost:
    compute, memory = _op_times(flops, nbytes, peak_flops, eff, hw, f, shape_eff)
    return OpCost(name, module, flops, nbytes, compute, memory, kernels * f.kernel_overhead_s)


def gemm_rate(hw: Hardware, prec: Precision, f: Factors, group: str) -> tuple[float, float]:
    """(peak FLOP/s, achieved fraction) of a GEMM over `group`'s weights: the peak of the dtype it runs at
    (Precision.gemm_dtype) and the dense GEMM's fraction, times `dequant_gemm` where it runs weight-only."""
    eff = f.gemm * f.dequant_gemm if prec.weight_only(group) else f.gemm
    return hw.flops(prec.gemm_dtype(group)), eff


def shape_efficiency(width: float) -> float:
    return width / (width + GEMM_HALF_WIDTH) if width > 0 else 1.0


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


def query_positions(w: Work) -> tuple[float, float] | None:
    """(prior, n): one sequence's queries of step `w` sit at positions prior + 1 .. prior + n. Prefill: its n
    new tokens per sequence after `prior_tokens`; decode with a span: the running sequences spread over
    context - span/2 + 1 .. context + span/2; None: every query at `context` (a decode step without a span)."""
    if w.sequences <= 0:
        return None
    if w.phase == "prefill":
        return prior_tokens(w), max(1.0, w.new_tokens / w.sequences)
    if w.span > 0:
        return max(0.0, max(w.context, 1.0) - w.span / 2), w.span
    return None


def _mean_keys(w: Work, keys_at: Callable[[float], float], cum: Callable[[float], float]) -> float:
    """Mean over the step's query tokens (at `query_positions`) of the keys each sees: (cum(prior + n) -
    cum(prior)) / n, `cum(x)` the keys summed over positions 1..x; keys_at(context) where every query sits at
    `context` (a decode step without a span)."""
    at = query_positions(w)
    if at is None:
        return keys_at(max(w.context, 1.0))
    prior, n = at
    return (cum(prior + n) - cum(prior)) / n


def mean_keys_capped(w: Work, cap: float) -> float:
    """Mean over the step's query tokens of min(keys visible, cap) (DSA top-k, sliding window).

    The mean of a min is not the min of the mean: a 4K prompt with top-k 2048 attends on average to 1536
    keys per query, not min(2048.5, 2048); decode sequences at 1025 .. 9216 under a 4096 window, 3520.2 on
    average, not 4096.
    """
    def cum(x: float) -> float:  # sum over positions 1..x of min(p, cap)
        if x <= cap:
            return x * (x + 1) / 2
        return cap * (cap + 1) / 2 + (x - cap) * cap

    return _mean_keys(w, lambda ctx: min(ctx, cap), cum)


def mean_keys_chunked(w: Work, chunk: float) -> float:
    """Mean over the step's query tokens of the keys a chunked-attention query sees: those of its own chunk, the
    query's position p (from 1) seeing (p - 1) mod chunk + 1 of them (Llama-4's attention_chunk_size: the mask
    restarts at every chunk boundary, so a query sees chunk / 2 keys on average, not the window's `chunk`)."""
    def cum(x: float) -> float:  # sum over positions 1..x of (p - 1) mod chunk + 1: whole chunks, then the rest
        whole, rest = divmod(x, chunk)
        return whole * chunk * (chunk + 1) / 2 + rest * (rest + 1) / 2

    return _mean_keys(w, lambda ctx: (ctx - 1) % chunk + 1, cum)


@dataclass(frozen=True)
class CommCost:
    name: str
    module: str
    primitive: str
    group: int
    bytes: float
    time_s: float
    exposed_s: float
    tier: str

    def scaled(self, n: float, prefix: str = "") -> "CommCost":
        """The same collective run n times (over n layers or draft passes)."""
        return replace(self, name=prefix + self.name, bytes=self.bytes * n, time_s=self.time_s * n,
                       exposed_s=self.exposed_s * n)


# collective name prefix (CommCost.name) -> the knob whose group it runs over
_COMM_KNOB = (("attn_tp_", "attn_tp_size"), ("oproj_tp_", "o_proj_tp_size"), ("kv_allgather", "cp_size"),
              ("cp_", "cp_size"), ("lse_merge", "kvp_size"), ("topk_merge", "kvp_size"),
              ("kvp_", "kvp_size"), ("dense_tp_", "dense_tp_size"), ("shared_tp_", "dense_tp_size"),
              ("moe_tp_", "moe_tp_size"), ("ep_", "moe_ep_size"), ("embed_", "embed_tp_size"),
              ("lmhead_", "lmhead_tp_size"), ("logits_", "lmhead_tp_size"))


def comm_knob(name: str) -> str | None:
    """The knob whose group a collective of the estimate (CommCost.name) runs over; None if none of them."""
    name = name.removeprefix("mtp_")
    return next((k for prefix, k in _COMM_KNOB if name.startswith(prefix)), None)


_PRIMITIVES = {"all_reduce": comm.all_reduce_s, "all_gather": comm.all_gather_s,
               "reduce_scatter": comm.reduce_scatter_s, "all_to_all": comm.all_to_all_s,
               "ep_all_to_all": comm.ep_all_to_all_s}


# collective_s per (hardware, factors, primitive, ranks, bytes, stride): a generic W=128 plan asks for 46,484
# collectives with 2,362 distinct arguments. A plain dict keyed by the hardware's and factors' ids (no closure
# or key assembly per call, as IdentityMemo.get has: this is its hottest caller); each entry keeps the two
# objects, so an id it holds names them
_COLLECTIVES: dict[tuple, tuple[Hardware, Factors, float]] = {}
_COLLECTIVES_MAX = 65_536


def collective_s(hw: Hardware, f: Factors, primitive: str, n: int, nbytes: float, stride: int = 1) -> float:
    """Seconds of one collective over `n` ranks spaced `stride` apart."""
    key = (id(hw), id(f), primitive, n, nbytes, stride)
    hit = _COLLECTIVES.get(key)
    if hit is not None:
        return hit[2]
    if primitive == "all_reduce":  # the engine's small-message all-reduce kernel, when it has one (comm.py)
        t = comm.all_reduce_s(hw, n, nbytes, stride, f.comm, comm.CustomAllReduce.of(f))
    else:
        t = _PRIMITIVES[primitive](hw, n, nbytes, stride, f.comm)
    if len(_COLLECTIVES) >= _COLLECTIVES_MAX:
        _COLLECTIVES.clear()
    _COLLECTIVES[key] = (hw, f, t)
    return t


def exposed_s(t: float, hide_s: float | None) -> float:
    """What of a collective's `t` seconds the step waits for: all of it on the critical path (`hide_s` None),
    else the excess over the compute it overlaps."""
    return t if hide_s is None else max(0.0, t - hide_s)


def collective(hw: Hardware, f: Factors, name: str, module: str, primitive: str, n: int, nbytes: float,
               stride: int = 1, hide_s: float | None = None) -> CommCost:
    """One collective over `n` ranks spaced `stride` apart. `hide_s`: compute it can overlap (a second
    stream), so only the excess is exposed; None = on the critical path."""
    t = collective_s(hw, f, primitive, n, nbytes, stride)
    return CommCost(name, module, primitive, n, nbytes, t, exposed_s(t, hide_s), comm.crosses(hw, n, stride))


def _tp_module(coll, name: str, module: str, d: int, nbytes: float, reshard: bool) -> list:
    """tp_module's collectives, made by `coll` (a Kit's record maker)."""
    if not reshard:
        return [coll(f"{name}_allreduce", module, "all_reduce", d, nbytes)]
    return [coll(f"{name}_gather", module, "all_gather", d, nbytes),
            coll(f"{name}_scatter", module, "reduce_scatter", d, nbytes)]


def tp_module(name: str, module: str, hw: Hardware, f: Factors, d: int, nbytes: float, reshard: bool
              ) -> list[CommCost]:
    """All-gather in + reduce-scatter out over a module's TP group (one all-reduce when nothing reshards)."""
    return _tp_module(lambda *a: collective(hw, f, *a), name, module, d, nbytes, reshard)


@dataclass(frozen=True)
class Kit:
    """What a block needs to cost itself (specs.layers.base.CostKit)."""

    hw: Hardware
    pc: ParallelConfig
    prec: Precision
    f: Factors
    w: Work

    def op(self, name: str, module: str, flops: float, nbytes: float, peak: float, eff: float, kernels: float,
           shape_eff: float = 1.0) -> OpCost:
        return _op(name, module, flops, nbytes, peak, eff, self.hw, self.f, kernels, shape_eff)

    def op_seconds(self, flops: float, nbytes: float, peak: float, eff: float) -> float:
        return op_time_s(*_op_times(flops, nbytes, peak, eff, self.hw, self.f, 1.0), 0.0)

    def coll(self, name: str, module: str, primitive: str, n: int, nbytes: float, stride: int = 1,
             hide_s: float | None = None) -> CommCost:
        return collective(self.hw, self.f, name, module, primitive, n, nbytes, stride, hide_s)

    def tp_module(self, name: str, module: str, d: int, nbytes: float, reshard: bool) -> list[CommCost]:
        return _tp_module(self.coll, name, module, d, nbytes, reshard)

    @property
    def attn_tp_group(self) -> int:
        return self.pc.attn_tp_group(self.f.kvp_splits_attention_weights)

    @property
    def oproj_shards(self) -> int:
        return self.pc.oproj_split(self.f.kvp_splits_attention_weights)

    def group_tokens(self, degree: int, tokens: float | None = None) -> float:
        return group_tokens(self.pc, self.w, degree, tokens)

    def mean_keys_capped(self, cap: float) -> float:
        return mean_keys_capped(self.w, cap)

    def mean_keys_chunked(self, chunk: float) -> float:
        return mean_keys_chunked(self.w, chunk)

    def shape_efficiency(self, width: float) -> float:
        return shape_efficiency(width)

    def gemm(self, group: str) -> tuple[float, float]:
        return gemm_rate(self.hw, self.prec, self.f, group)

    def busy_replicas(self) -> float:
        return busy_replicas(self.pc, self.w)


@dataclass(frozen=True)
class SumsKit(Kit):
    """A Kit whose records hold only what per-module sums read (estimate.step_sums: the planner's tables add those
    sums and never read a record): an op is (name, module, compute s, memory s, overhead s), a collective
    (module, exposed s). The same formulas and arithmetic as Kit's records, without building them."""

    def op(self, name: str, module: str, flops: float, nbytes: float, peak: float, eff: float,  # type: ignore[override]
           kernels: float, shape_eff: float = 1.0) -> tuple[str, str, float, float, float]:
        compute, memory = _op_times(flops, nbytes, peak, eff, self.hw, self.f, shape_eff)
        return name, module, compute, memory, kernels * self.f.kernel_overhead_s

    def coll(self, name: str, module: str, primitive: str, n: int, nbytes: float, stride: int = 1,  # type: ignore[override]
             hide_s: float | None = None) -> tuple[str, float]:
        return module, exposed_s(collective_s(self.hw, self.f, primitive, n, nbytes, stride), hide_s)


def layer_ops(model: ModelSpec, hw: Hardware, pc: ParallelConfig, prec: Precision, f: Factors, w: Work,
              params: ParamReport | None = None, ffn: bool = True) -> dict[str, list[OpCost]]:
    """Ops of one instance of the model's primary mixer ('attention'), first dense FFN ('dense') and first
    MoE ('moe'): a per-layer view for reports and tests (step_cost iterates the whole stack)."""
    kit = Kit(hw, pc, prec, f, w)
    mixer = model._attention or next((b for b in model.blocks if b.role == "mixer"), None)
    out: dict[str, list[OpCost]] = {"attention": mixer.ops(kit) if mixer else [], "dense": [], "moe": []}
    if ffn:
        if model._dense is not None:
            out["dense"] = model._dense.ops(kit)
        if model._moe is not None:
            out["moe"] = model._moe.ops(kit)
    return out


def head_ops(model: ModelSpec, hw: Hardware, pc: ParallelConfig, prec: Precision, f: Factors, w: Work,
             params: ParamReport | None = None) -> list[OpCost]:
    """Embedding lookup and lm_head, once per step."""
    return kit_head_ops(model, Kit(hw, pc, prec, f, w))


def kit_head_ops(model: ModelSpec, kit: Kit) -> list:
    """head_ops as `kit`'s records."""
    hw, pc, prec, f, w = kit.hw, kit.pc, kit.prec, kit.f, kit.w
    h, v, ew = model.hidden_size, model.vocab_size, model.embed_width
    e, lt = pc.embed_tp_size, pc.lmhead_tp_size
    lookups = 2 if model.position_embeddings else 1  # a learned position table is a second gather per token
    embed = kit.op("embedding", "embedding", 0.0,
                   lookups * group_tokens(pc, w, e) * ew * prec.fmt("embedding").bytes_per_param,
                   hw.flops("bf16"), f.gemm, kernels=lookups)
    u_logit = group_tokens(pc, w, lt, w.logits_tokens) / lt
    head_params = v * ew  # the head reads the embedding's width (project_out's output where it is narrower)
    lm = kit.op("lm_head", "lm_head", 2 * u_logit * head_params,
                head_params / pc.lmhead_tp_size * prec.fmt("lm_head").bytes_per_param + u_logit * v * 4,
                *kit.gemm("lm_head"), kernels=2,
                shape_eff=shape_efficiency(v / pc.lmhead_tp_size))
    ops = [embed, lm]
    if model.hyper_head:
        # the hyper-connection head collapses every token's streams before the final norm (engines run it over
        # the step's tokens before the logits pick the sampled ones), replicated over attention TP like the
        # streams (layers/hyper.py ops); its map fp32
        m, t = model.residual_streams, w.new_tokens / pc.token_shards
        ops.insert(1, kit.op("hc_head", "lm_head", t * hyper.head_flops_per_token(m, h),
                             t * hyper.head_bytes_per_token(m, h)
                             + model.hyper_head * number_format(hyper.HEAD_DTYPE).bytes_per_param,
                             hw.flops("bf16"), f.gemm, kernels=hyper.HEAD_KERNELS, shape_eff=shape_efficiency(m)))
    if model.per_layer_inputs:
        ops[1:1] = model.per_layer_inputs.ops(kit)  # beside the token lookup (layers/per_layer_input.py)
    if model.self_conditioning:  # after the token lookup (layers/self_conditioning.py)
        ops[1:1] = model.self_conditioning.ops(kit)
    if not model.embedding_width:
        return ops
    # project_in / project_out: replicated bias-free GEMMs over every token of the rank's step (engines run the
    # stack's output through project_out before the logits pick the sampled positions)
    t = group_tokens(pc, w, 1)
    matrix = ew * h * prec.fmt("dense").bytes_per_param
    rate = kit.gemm("dense")
    proj_in = kit.op("project_in", "embedding", 2 * t * ew * h, matrix + t * (ew + h) * ACT_BYTES, *rate,
                     kernels=1, shape_eff=shape_efficiency(h))
    proj_out = kit.op("project_out", "lm_head", 2 * t * ew * h, matrix + t * (ew + h) * ACT_BYTES, *rate,
                      kernels=1, shape_eff=shape_efficiency(ew))
    return [embed, proj_in, proj_out, *ops[1:]]
