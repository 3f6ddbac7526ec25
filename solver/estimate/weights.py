"""Weight bytes per rank: how each module's parts split over the knob that owns them, in their number format."""
from __future__ import annotations

from solver.estimate.memory_options import MemoryOptions
from solver.estimate.params import ModuleParams, ParamReport, count_params
from solver.specs.dtypes import NumberFormat, number_format
from solver.specs.layers.base import Part
from solver.specs.model import ModelSpec
from solver.specs.parallel import ParallelConfig
from solver.specs.precision import Precision


def split_degree(knob: str | None, pc: ParallelConfig, opts: MemoryOptions, model: ModelSpec | None = None) -> int:
    """How many ways the "tp" parts of a module owned by `knob` are split under this config (`model`: whose
    towers the engine may split, by their wrapper)."""
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
        # a vision / audio tower: over the attention TP group where the engine's code for the model's wrapper
        # shards it like attention, else whole; whole too where that group does not divide the tower's heads
        # (vLLM 0.34.0 models/vision.py:144-155 falls back to replicating it; an engine that does not would refuse
        # the split, and whole is the count that cannot hide an OOM)
        group = pc.attn_tp_group(opts.kvp_splits_attention_weights)
        towers = model.encoders if model is not None else ()
        split = any(e.wrapper in opts.encoder_split_model_types and not e.replicated for e in towers) and \
            all(not e.heads or e.heads % group == 0 for e in towers)
        return group if split else 1
    return getattr(pc, knob)


def module_weight_bytes(mod: ModuleParams, model: ModelSpec, pc: ParallelConfig, prec: Precision,
                        opts: MemoryOptions) -> float:
    degree = split_degree(mod.knob, pc, opts, model)
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
