"""One module group's share of a forward step, stage by stage, exactly as estimate.step costs it.

A step (estimate.step.step_cost) is a sum over its ops and collectives, each owned by a module, and a module
belongs to the planner group of the knob that splits it (groups.module_groups). Under pipeline parallel the
step combines the stages' sums and hand-offs, fill and drain for prefill, max(sum, m x slowest) for decode
(estimate.step.pipeline_step): so a group's share is kept per distinct stage and the planner combines the
sums over stages as the pipeline does (Pipeline). What a non-attention group costs also depends on the attention
layout around it (tokens per rank of its TP group, whether it reshards against attention TP, the decode layout
of CP), so the planner asks for it per attention layout (`Layout`): the exact additive quantity is (layout,
choice), a pairwise table. tests/test_planner_exact.py checks the sums against step_cost on random configurations.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple
from operator import add as _add, sub as _sub

from solver.estimate import pipeline
from solver.estimate.compute import Factors, Work
from solver.estimate.stage_ranks import stage_device
from solver.estimate.step import micro_work
from solver.estimate.step_sums import SumsPlan, head_key, kit_plan_sums, mixer_key, plan_kit, sums_plan
from solver.specs.hardware import Hardware
from solver.specs.model import ModelSpec
from solver.specs.parallel import ParallelConfig
from solver.specs.precision import Precision

NONE = "none"  # the pseudo-group of modules no knob owns (norms, encoders): costed once per layout


class Share(NamedTuple):
    """A group's GPU seconds and kernel overhead seconds (kernels x kernel_overhead_s, how the step-cost model
    counts launches) on each distinct stage of one step, before the pipeline's slots (1 stage without PP).
    A named tuple (was a frozen dataclass: the same fields, equality and hash): the bounds add ~90K of them per
    plan, and a tuple is built in a third of a dataclass's time."""

    gpu_s: tuple[float, ...]
    launch_s: tuple[float, ...]

    def __add__(self, other: "Share") -> "Share":  # type: ignore[override]
        g, k = self
        h, m = other
        n = len(g)
        # one or two distinct stages (no PP, or a pipeline's two kinds of stage) spelled out: twice as fast
        # as map, the same sums
        if n == 1:
            return _new(Share, ((g[0] + h[0],), (k[0] + m[0],)))
        if n == 2:
            return _new(Share, ((g[0] + h[0], g[1] + h[1]), (k[0] + m[0], k[1] + m[1])))
        return _new(Share, (tuple(map(_add, g, h)), tuple(map(_add, k, m))))

    def __sub__(self, other: "Share") -> "Share":
        return _new(Share, (tuple(map(_sub, self[0], other[0])), tuple(map(_sub, self[1], other[1]))))


_new = tuple.__new__


@dataclass(frozen=True)
class Pipeline:
    """How a layout's stages make one step (step.pipeline_step): GPU = the distinct stages' sums combined as
    pipeline.paced does, each stage `counts` times, with their hand-offs, + step overhead; kernels launched =
    the stages' launches combined the same way."""

    stages: int  # distinct stages costed
    slots: int  # slots of equal stages (pipeline.slots; 1 without PP): the bound on stage sums a step adds
    handoff_s: float  # one hand-off (0 without PP)
    overhead_s: float
    counts: tuple[int, ...] = (1,)  # how many stages each distinct stage stands for (pipeline.stage_counts)
    phase: str = "decode"
    micro: int = 1  # microbatches in flight (pipeline.microbatches)

    def gpu_s(self, per_stage: tuple[float, ...]) -> float:
        if self.slots == 1:
            return per_stage[0] + self.handoff_s + self.overhead_s
        span, n = pipeline.paced(self.phase, self.micro, per_stage, self.counts, self.handoff_s)
        return span + n * self.handoff_s + self.overhead_s

    def kernels(self, per_stage: tuple[float, ...], f: Factors) -> float:
        """Kernels the step launches (engine_step.kernels_launched) from the stages' kernel overhead seconds."""
        if f.kernel_overhead_s <= 0:
            return 0.0
        span = per_stage[0] if self.slots == 1 else pipeline.paced(self.phase, self.micro, per_stage, self.counts)[0]
        return span / f.kernel_overhead_s


def pipeline_of(model: ModelSpec, hw: Hardware, pc: ParallelConfig, f: Factors, w: Work) -> Pipeline:
    """The pipeline a step of `w` runs at `pc`: its distinct stages and their counts, microbatches and stage
    hand-off."""
    if pc.pp_size == 1:
        return Pipeline(1, 1, 0.0, f.step_overhead_s)
    pp, spc = pc.pp_size, pc.stage()
    m, micro = micro_work(pp, w)
    k = pipeline.slots(w.phase, pp, m)
    send = pipeline.send_s(hw, spc.world_size, pp, micro.new_tokens, pipeline.handoff_width(model, f), f.comm,
                           spc.attn_tp_group(f.kvp_splits_attention_weights), f.rank_order, spc.attn_group_size)
    counts = pipeline.stage_counts(model, pp)
    return Pipeline(len(counts), k, send, f.step_overhead_s, counts, w.phase, m)


def shares(model: ModelSpec, hw: Hardware, pc: ParallelConfig, prec: Precision, f: Factors, w: Work,
           mtp_layers: int, groups: dict[str, str | None], want: tuple[str, ...],
           attention_only: bool = False) -> dict[str, Share]:
    """The shares of the groups in `want` (NONE: unowned modules) at `pc`, one step of `w`. Each group's own
    knobs are read from `pc`; `attention_only` costs the mixers alone (the attention group's choices)."""
    recipe = _share_plan(model, pc.pp_size, mtp_layers, groups, want, attention_only, w.phase)
    if pc.pp_size == 1:
        spc, sw = pc, w
    else:  # every stage runs the same stage config on the same microbatch: their sums in one pass
        spc, sw = pc.stage(), micro_work(pc.pp_size, w)[1]
        # the stage's groups priced on the ranks they hold under the engine's rank order (stage_ranks)
        hw = stage_device(hw, f.rank_order, pc.pp_size, spc.attn_group_size, spc.world_size)
    # attention only: the mixers' kit; the embedding and LM head alone (a recipe of no block): the head's
    kit, store = plan_kit(hw, spc, prec, f, sw, mixer_key if attention_only else None if recipe[0].blocks else head_key)
    # configs whose steps run under one kit (CP's decode layout, the stage of several pipelines) add the same
    # sums: the answer is kept in the kit's store, per recipe (held there, so its id names it)
    hit = store.get(("shares", id(recipe)))
    if hit is not None:
        return hit[1]
    out = _add_up(kit_plan_sums(recipe[0], kit, store), recipe[1], groups, want)
    store[("shares", id(recipe))] = (recipe, out)
    return out


def _add_up(each: list, owners: tuple[dict, ...], groups: dict[str, str | None], want: tuple[str, ...]
            ) -> dict[str, Share]:
    """The shares of `want` from each stage's (module sums, times repeated, draft) chunks."""
    # module by module, in the records' order: the same additions (and roundings) as step_cost's
    n_st = len(each)
    per = [([0.0] * n_st, [0.0] * n_st) for _ in want]
    for s, (chunks, owner) in enumerate(zip(each, owners)):
        for sums, n, _ in chunks:
            for module, t, k in sums:
                gi = owner.get(module, _MISS)
                if gi is _MISS:
                    gi = _owner(owner, module, groups, want)
                if gi is None:
                    continue
                acc = per[gi]
                acc[0][s] += t * n
                acc[1][s] += k * n
    return {g: Share(tuple(v[0]), tuple(v[1])) for g, v in zip(want, per)}


_MISS = object()


def _owner(owner: dict, module: str, groups: dict[str, str | None], want: tuple[str, ...]) -> int | None:
    """Which of `want` owns a module the stage's map has not met (None: none, or the stage lacks it); kept in
    the map. The maps start with only the stage's absent modules, so every module is looked up once."""
    g = groups.get(module) or NONE
    gi = owner[module] = want.index(g) if g in want else None
    return gi


def _share_plan(model: ModelSpec, pp: int, mtp_layers: int, groups: dict[str, str | None], want: tuple[str, ...],
                attention_only: bool, phase: str) -> tuple[SumsPlan, tuple[dict, ...]]:
    """What shares adds up for these stages and groups (step_sums.SumsPlan), and per distinct stage a map module ->
    index in `want` of its owner (None: not wanted, or the stage lacks it; filled as modules are met), once
    per (model, stage count, MTP passes, groups, want, question, phase)."""
    key = (id(model), id(groups), pp, mtp_layers, want, attention_only, phase)
    hit = _PLANS.get(key)
    if hit is not None:  # the entry keeps the model and groups its ids name
        return hit[2]
    modules = _wanted_modules(groups, want)
    if pp == 1:
        stages = [(model, mtp_layers, frozenset())]
    else:
        stages = [(st.model, mtp_layers if st.last else 0, st.absent_modules) for st in pipeline.distinct_stages(model, pp)]
    plan = sums_plan([(sm, mtp) for sm, mtp, _ in stages], attention_only, modules, phase)
    out = plan, tuple(dict.fromkeys(a) for _, _, a in stages)
    if len(_PLANS) >= 4096:
        _PLANS.clear()
    _PLANS[key] = (model, groups, out)
    return out


# a plain dict (no closure or key assembly per call, as IdentityMemo.get has: every share asks for its recipe)
_PLANS: dict[tuple, tuple] = {}


_WANTED: dict[tuple[int, tuple[str, ...]], tuple[dict, frozenset[str]]] = {}


def _wanted_modules(groups: dict[str, str | None], want: tuple[str, ...]) -> frozenset[str]:
    """The modules of the groups in `want` (NONE: those no knob owns), per (groups object, want)."""
    hit = _WANTED.get((id(groups), want))
    if hit is not None and hit[0] is groups:
        return hit[1]
    out = frozenset(m for m, g in groups.items() if (g or NONE) in want)
    if len(_WANTED) >= 4096:
        _WANTED.clear()
    _WANTED[(id(groups), want)] = (groups, out)
    return out


__all__ = ["Share", "Pipeline", "pipeline_of", "shares", "NONE"]
