"""Memory per rank for a parallel_config: the report that sums weights, caches, activations and buffers against the
wall (memory_options), per rank and per pipeline stage, and the largest batch that fits.

Units are bytes. The parts have their own homes: weights (weights), KV / indexer / recurrent state (request_state),
activation peaks (activations), communicators and EP staging (buffers).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Callable

from solver.estimate.activations import activation_peak
from solver.estimate.buffers import a2a_buffer_bytes, comm_buffers_per_rank, staging_tokens
from solver.estimate.memory_options import MemoryOptions, config_options, device_options, memory_limit
from solver.estimate.params import count_params
from solver.estimate.request_state import cache_per_rank, state_per_rank
from solver.estimate.weights import weights_per_rank
from solver.memo import IdentityMemo
from solver.specs.hardware import Hardware
from solver.specs.model import ModelSpec
from solver.specs.parallel import ParallelConfig
from solver.specs.precision import Precision


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
    stage: int | None = None  # under pipeline parallel, the index of the stage these figures are (stages())

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
        """Seed 3.4: KV share of the memory left after weights (> 50%: rank.kv_split.kv_share_warning). The
        growing caches only (KV, indexer keys), what CP / KVP split and a longer context grows: a hybrid's
        constant state is neither."""
        avail = self.limit_bytes - self.weights_total
        return (self.kv_cache_bytes + self.indexer_cache_bytes) / avail if avail > 0 else math.inf


def drafting_options(opts: MemoryOptions, model: ModelSpec, mtp_layers: int | None) -> MemoryOptions:
    """`opts` with the draft tokens each request verifies a decode step (MTP depth, where the model has MTP
    layers): every stage decodes them, and the engine's hybrid state keeps pages / slots for them."""
    if mtp_layers and model.num_mtp_layers and opts.decode_drafts != mtp_layers:
        return replace(opts, decode_drafts=mtp_layers)
    return opts


def memory_per_rank(model: ModelSpec, hw: Hardware, pc: ParallelConfig, prec: Precision, batch: float,
                    seq_len: int, opts: MemoryOptions | None = None, mtp_layers: int | None = None) -> MemoryReport:
    """Per-rank memory for `batch` concurrent sequences holding `seq_len` tokens of context each. Under
    pipeline parallel: the largest stage's (stage_memory)."""
    opts = config_options(drafting_options(device_options(opts or MemoryOptions(), hw), model, mtp_layers), model,
                          pc, hw)
    if pc.pp_size > 1:
        return max(stage_memory(model, hw, pc, prec, batch, seq_len, opts, mtp_layers), key=lambda r: r.total)
    report = count_params(model)
    mtp = mtp_layers or 0  # MTP is a deployment choice: its layers count only when enabled
    weights = weights_per_rank(model, pc, prec, replace(opts, include_mtp=mtp > 0), report)
    # next-n depth > 1 reuses the checkpoint's MTP layer(s): weights and cache are those layers only
    mtp_cache = model.num_mtp_layers if mtp > 0 else 0
    kv, idx, seqs = cache_per_rank(model, pc, prec, batch, seq_len, mtp_layers=mtp_cache,
                                   layout=opts.cache_layout,
                                   kvp_splits_weights=opts.kvp_splits_attention_weights)
    state = state_per_rank(model, pc, prec, batch, seq_len, mtp_layers=mtp_cache,
                           kvp_splits_weights=opts.kvp_splits_attention_weights, layout=opts.cache_layout)
    act = activation_peak(model, pc, opts, seq_len, seqs)
    comm = (comm_buffers_per_rank(model, pc, staging_tokens(model, opts, pc, seq_len, seqs))
            + a2a_buffer_bytes(model, hw, pc, opts, seqs))
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
    from solver.estimate.pipeline import held_absent, stages

    out = []
    own_table = opts is not None and opts.pp_drafter_own_embedding
    for st in stages(model, pc.pp_size):
        r = memory_per_rank(st.model, hw, pc.stage(), prec, batch, seq_len, opts, mtp_layers if st.last else 0)
        absent = held_absent(st, (mtp_layers or 0) if st.last else 0, own_table,
                             opts.pp_tower_first_stage_model_types if opts is not None else ())
        weights = {k: v for k, v in r.weights_bytes.items() if k not in absent}
        notes = r.notes + (f"pipeline stage {st.index} of {pc.pp_size}: {len(st.model.layers)} layers",)
        out.append(replace(r, weights_bytes=weights, notes=notes, stage=st.index))
    return out


# max_batch per (model, hardware, configuration, precision; length, options, MTP): a disaggregated plan's pairs
# share a few decode configurations, and each full estimate of a pair asks for its KV capacity (a search of some
# 6 memory_per_rank calls, _max_batch): unmemoised, 770 pairs of GLM-5 on 256 H200 spent 4 of 6 CPU s there
_MAX_BATCH = IdentityMemo(4096)


def max_batch(model: ModelSpec, hw: Hardware, pc: ParallelConfig, prec: Precision, seq_len: int,
              opts: MemoryOptions | None = None, mtp_layers: int | None = None) -> int:
    """Largest total batch (a multiple of the attention replicas) whose memory fits; 0 if none does."""
    return _MAX_BATCH.get((model, hw, pc, prec), (seq_len, opts, mtp_layers),
                          lambda: _max_batch(model, hw, pc, prec, seq_len, opts, mtp_layers))


def _max_batch(model: ModelSpec, hw: Hardware, pc: ParallelConfig, prec: Precision, seq_len: int,
               opts: MemoryOptions | None, mtp_layers: int | None) -> int:
    step = pc.attn_replicas
    reports: dict[int, MemoryReport] = {}

    def used(units: int) -> MemoryReport:
        if units not in reports:
            reports[units] = memory_per_rank(model, hw, pc, prec, units * step, seq_len, opts, mtp_layers)
        return reports[units]

    if not used(1).feasible:
        return 0
    # memory grows with the sequences held, steeply at first (the prefill chunk, a whole sequence on the busiest
    # rank) then about linearly (their caches): a few secant steps toward the limit land next to the answer, and
    # the bracket is searched from there (some 6 reports instead of 17; the same answer, fits being monotone)
    limit, (a, b) = used(1).limit_bytes, (1, 2)
    for _ in range(3):
        slope = (used(b).model_bytes - used(a).model_bytes) / (b - a)
        if slope <= 0:
            break
        nxt = max(1, min(_MAX_UNITS, int(b + (limit - used(b).model_bytes) / slope)))
        if nxt in (a, b):
            break
        a, b = b, nxt
    return _largest_fitting(lambda u: used(u).feasible, b) * step


_MAX_UNITS = 1 << 24


def _largest_fitting(fits: Callable[[int], bool], guess: int, cap: int = _MAX_UNITS) -> int:
    """The largest u in [1, cap] with fits(u), fits being monotone (true up to the answer) and fits(1) true:
    a bracket galloped from `guess`, then bisected."""
    if fits(guess):
        lo, width = guess, 1
        while lo < cap and fits(min(cap, lo + width)):
            lo, width = min(cap, lo + width), width * 2
        if lo >= cap:
            return cap
        hi = min(cap, lo + width)
    else:
        hi, width = guess, 1
        while hi - width > 1 and not fits(hi - width):
            hi, width = hi - width, width * 2
        lo = max(1, hi - width)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid
    return lo
