"""The planner's memory rows: the bytes per rank one group's choice adds (weights, the attention group's
buffers, caches and its own activation term), fixed or growing with the sequences held, on the first pipeline
stage or a given one: what plan.tables adds up per configuration (build_tables' entries, a stage's
layout_memory.StageMemory), exactly as estimate.memory counts it."""
from __future__ import annotations

from solver.estimate.activations import activation_peak_of
from solver.estimate.buffers import comm_buffers_per_rank
from solver.estimate.memory_options import MemoryOptions
from solver.estimate.request_state import cache_per_rank, state_per_rank
from solver.estimate.weights import module_weight_bytes
from solver.estimate.params import ParamReport, count_params
from solver.specs.knobs import group_knobs
from solver.specs.model import ModelSpec
from solver.specs.parallel import ParallelConfig
from solver.specs.precision import Precision

# the knobs the attention group owns (plan.groups.GROUPS["attn"] but the stage count, which sizes no term)
ATTN_KNOBS = group_knobs("attn")


# the groups whose memory grows with the sequences a rank holds (caches, activations; EP staging buffers)
PER_SEQUENCE_MEMORY = ("attn", "moe")


def attention_transient(model: ModelSpec, pc: ParallelConfig, opts: MemoryOptions, seq_len: int,
                        seqs: float) -> float:
    """The attention group's activation term (activations.activation_peak_terms of the knobs it owns)."""
    t = activation_peak_of(model, pc, opts, seq_len, seqs, ATTN_KNOBS)
    return 0.0 if t is None else t


def group_memory(g: str, model: ModelSpec, pc: ParallelConfig, prec: Precision, opts: MemoryOptions,
                 params: ParamReport, groups: dict[str, str | None], batch: int, seq_len: int,
                 mtp_layers: int, part: str = "all") -> float:
    """Bytes a group adds per rank: `part` "fixed" (weights, the attention groups' buffers), "batch" (what
    grows with the `batch` sequences held) or "all". What adds up over groups: weights, caches and the attention
    group's own activation term; the other terms, the EP staging and a communicator another group opens are
    the layout's (layout_memory: Tables.view_memory). Under PP the first stage's (the most layers, the embedding), with the
    unowned weights the tables charge beyond that stage's taken off the attention entry: a lower bound of
    the largest stage's figure, which the per-stage constraints make exact."""
    if pc.pp_size == 1:
        return stage_entry(g, model, pc, prec, opts, params, groups, batch, seq_len, mtp_layers, part)
    from solver.estimate.pipeline import stages

    first = stages(model, pc.pp_size)[0]
    mtp = mtp_layers if first.last else 0
    out = stage_entry(g, first.model, pc.stage(), prec, opts, count_params(first.model), groups, batch, seq_len,
                      mtp, part, first.absent_modules)
    if g == "attn" and part in ("fixed", "all"):
        out -= (unowned_weights(model, pc.world_size, prec, opts, params, groups, mtp_layers, frozenset())
                - unowned_weights(first.model, pc.stage_world, prec, opts, count_params(first.model), groups, mtp,
                                  first.absent_modules))
    return out


def stage_entry(g: str, model: ModelSpec, pc: ParallelConfig, prec: Precision, opts: MemoryOptions,
                params: ParamReport, groups: dict[str, str | None], batch: int, seq_len: int, mtp_layers: int,
                part: str, absent: frozenset[str] = frozenset()) -> float:
    fixed, per_batch = part in ("fixed", "all"), part in ("batch", "all")
    total = 0.0
    if fixed:
        total += _weights(g, model, pc, prec, opts, params, groups, mtp_layers, absent) + _attention_buffers(g, model, pc)
    if g == "attn" and per_batch:
        cache, state, seqs = _caches(model, pc, prec, opts, batch, seq_len, mtp_layers)
        total += cache + state + attention_transient(model, pc, opts, seq_len, seqs)
    return total


def _weights(g: str | None, model: ModelSpec, pc: ParallelConfig, prec: Precision, opts: MemoryOptions,
             params: ParamReport, groups: dict[str, str | None], mtp_layers: int,
             absent: frozenset[str] = frozenset()) -> float:
    """The group's modules on this rank (None: the modules no knob owns), with the MTP layers' when MTP is on
    (weights.weights_per_rank), without the modules a pipeline stage does not hold."""
    mods = params.modules + (params.mtp if mtp_layers else ())
    return sum(module_weight_bytes(m, model, pc, prec, opts) for m in mods
               if m.parts and groups.get(m.name) == g and m.name not in absent)


def unowned_weights(model: ModelSpec, ranks: int, prec: Precision, opts: MemoryOptions, params: ParamReport,
                    groups: dict[str, str | None], mtp_layers: int, absent: frozenset[str]) -> float:
    """Weights no knob owns (norms, the MTP glue): replicated on every rank of a stage (an encoder is the attention
    group's: groups.module_groups)."""
    return _weights(None, model, ParallelConfig(world_size=ranks), prec, opts, params, groups, mtp_layers, absent)


def _attention_buffers(g: str, model: ModelSpec, pc: ParallelConfig) -> float:
    """The communicator buffers the attention knobs open (charged once: buffers.comm_buffers_per_rank)."""
    if g != "attn":
        return 0.0
    return comm_buffers_per_rank(model, ParallelConfig(world_size=pc.world_size, attn_tp_size=pc.attn_tp_size,
                                                       cp_size=pc.cp_size, kvp_size=pc.kvp_size,
                                                       attn_sp_size=pc.attn_sp_size,
                                                       o_proj_tp_size=pc.o_proj_tp_size), 0.0)


def _caches(model: ModelSpec, pc: ParallelConfig, prec: Precision, opts: MemoryOptions, batch: int, seq_len: int,
            mtp_layers: int) -> tuple[float, float, float]:
    """(KV + indexer, state, sequences per rank) of the held sequences, under the engine's KVP and CP layouts."""
    mtp_cache = model.num_mtp_layers if mtp_layers else 0
    kv, idx, seqs = cache_per_rank(model, pc, prec, batch, seq_len, mtp_layers=mtp_cache,
                                   layout=opts.cache_layout,
                                   kvp_splits_weights=opts.kvp_splits_attention_weights)
    state = state_per_rank(model, pc, prec, batch, seq_len, mtp_layers=mtp_cache,
                           kvp_splits_weights=opts.kvp_splits_attention_weights, layout=opts.cache_layout)
    return kv + idx, state, seqs
