"""Verdicts tied to the configuration being profiled: which module deviates and what to change.

The thresholds and generic actions are `verdict.RULES` (the seed's Step 5). Here each verdict gets the
action that fits the profiled parallel_config: a communication share over 20% names the TP group that crosses
nodes (seed 3.3/3.4: keep tp_size <= ranks per node) or the EP all-to-all (adjust the TP/EP ratio); an
estimate deviation names the kernel class and module furthest from the estimate and the seed's remedy for it
(attention: re-evaluate attention TP vs CP; GEMM/MoE under TP: fragmented matrices, compare EP; exposed
communication: keep groups in a node); rank spread without EP is not expert imbalance.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from solver.calibrate.classify import ATTENTION, GEMM_MOE
from solver.calibrate.compare import COMM_EXPOSED, ClassComparison, Comparison
from solver.calibrate.metrics import TraceSummary
from solver.calibrate.verdict import COMMUNICATION_RATIO, ESTIMATE_DEVIATION, RANK_VARIANCE, Verdict, judge
from solver.estimate import comm
from solver.estimate.memory_options import TOTAL_FRACTION, WEIGHTS_KV_FRACTION, memory_limit
from solver.estimate.compute import comm_knob
from solver.estimate.step import StepCost
from solver.specs.knobs import knob_module
from solver.specs.hardware import Hardware
from solver.specs.model import ModelSpec
from solver.specs.parallel import ParallelConfig

CLASS_LABEL = {ATTENTION: "attention", GEMM_MOE: "GEMM/MoE", COMM_EXPOSED: "exposed communication"}


@dataclass(frozen=True)
class Finding:
    metric: str
    value: float
    level: str  # ok | warn | bad
    message: str
    action: str
    module: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"metric": self.metric, "value": self.value, "level": self.level, "message": self.message,
                "action": self.action, "module": self.module}


def _from(v: Verdict, metric: str | None = None, message: str | None = None, action: str | None = None,
          module: str | None = None) -> Finding:
    return Finding(metric or v.metric, v.value, v.level, message or v.message, action or v.action, module)


# ------------------------------------------------------------------------------------------ the layout


@dataclass(frozen=True)
class Group:
    knob: str
    size: int
    tier: str
    ep: bool = False


def layout_groups(pc: ParallelConfig, hw: Hardware) -> list[Group]:
    """Every communicating group of the config with the slowest tier it crosses (rank order as step.py)."""
    a = pc.attn_tp_size
    specs = [("attn_tp_size", pc.attn_tp_size, 1), ("dense_tp_size", pc.dense_tp_size, 1),
             ("moe_tp_size", pc.moe_tp_size, 1), ("embed_tp_size", pc.embed_tp_size, 1),
             ("lmhead_tp_size", pc.lmhead_tp_size, 1), ("o_proj_tp_size", pc.o_proj_tp_size, 1),
             ("cp_size", pc.cp_size, a), ("kvp_size", pc.kvp_size, a), ("attn_sp_size", pc.attn_sp_size, a)]
    out = [Group(k, n, comm.crosses(hw, n, s)) for k, n, s in specs if n > 1]
    if pc.moe_ep_size > 1:
        out.append(Group("moe_ep_size", pc.moe_ep_size, comm.crosses(hw, pc.moe_ep_size, pc.moe_tp_size), ep=True))
    return out


def crosses_nodes(tier: str) -> bool:
    return tier in ("inter_node", "inter_rack")


# ------------------------------------------------------------------------------------------ findings


def communication_findings(summary: TraceSummary, pc: ParallelConfig | None, hw: Hardware | None,
                           cmp: Comparison | None = None) -> list[Finding]:
    """The seed's Metric 1 on both readings: raw (sum of collective kernel time, the seed's definition) and
    exposed (the part no compute hides), with the config's remedy when it is over 20%."""
    out = []
    for metric, value, reading in (
        ("communication_ratio_raw", summary.communication_ratio_raw, "collective kernel time"),
        ("communication_ratio", summary.communication_ratio, "exposed collective time"),
    ):
        v = judge(COMMUNICATION_RATIO, value)
        message = f"{reading} {value:.1%} of the step: " + v.message.split(": ", 1)[1].rsplit(" (", 1)[0]
        action, module = v.action, None
        if v.level != "ok" and pc is not None and hw is not None:
            action, module, lead = _communication_action(v, pc, hw, cmp.step if cmp is not None else None)
            message = f"{reading} {value:.1%} of the step and {lead}"
        out.append(Finding(metric, value, v.level, message, action, module))
    raw, exposed = out
    if raw.level != "ok" and exposed.level == "ok":
        # the seed's figure sums collective durations; collectives overlapped by compute cost little step time
        out[0] = Finding(raw.metric, raw.value, raw.level,
                         raw.message + f" (only {summary.communication_ratio:.1%} exposed: the collectives run "
                                       "under compute)",
                         raw.action + f" -- but only if the overlap is lost: {summary.communication_ratio:.1%} of "
                                      "the step is exposed, act on that share", raw.module)
    return out


def _communication_action(v: Verdict, pc: ParallelConfig, hw: Hardware, step: StepCost | None
                          ) -> tuple[str, str | None, str]:
    """(action, module, what the message leads with). Seed 3.3 priority: a TP group across nodes first, then
    the collective the estimate says dominates (EP all-to-all -> the TP/EP ratio; TP all-reduce -> the TP
    degree), then the layout alone."""
    groups = layout_groups(pc, hw)
    tp_cross = [g for g in groups if not g.ep and crosses_nodes(g.tier)]
    if tp_cross:
        g = max(tp_cross, key=lambda g: g.size)
        names = ", ".join(f"{x.knob}={x.size}" for x in tp_cross)
        return (f"keep tp_size <= ranks per node ({hw.ranks_per_node}): {names} cross{'es' if len(tp_cross) == 1 else ''}"
                f" nodes ({g.tier})", knob_module(g.knob),
                f"TP crosses nodes ({names} > {hw.ranks_per_node} ranks per node)")
    top_knob, share, top = None, 0.0, None
    if step is not None and step.comm_s > 0:
        by_knob: dict[str, float] = {}
        for c in step.comms:
            k = comm_knob(c.name)
            if k is not None:
                by_knob[k] = by_knob.get(k, 0.0) + c.time_s
        if by_knob:
            top_knob = max(by_knob, key=by_knob.get)  # type: ignore[arg-type]
            share = by_knob[top_knob] / step.comm_s
            top = next(c for c in sorted(step.comms, key=lambda c: -c.time_s) if comm_knob(c.name) == top_knob)
    ep = [g for g in groups if g.ep]
    if (top_knob is None and ep) or top_knob == "moe_ep_size":
        g = ep[0]
        where = f"crosses nodes ({g.tier})" if crosses_nodes(g.tier) else (
            "inside one node" if g.tier == "intra_node" else f"over {g.tier}")
        lead = f"the EP all-to-all {where}" + (f" is {share:.0%} of the estimated communication" if top_knob else "")
        return (f"adjust the TP/EP ratio: EP all-to-all over moe_ep_size={g.size} ranks {where}; a larger "
                "moe_tp_size shrinks the EP group (or enable overlap: dual micro-batch / AFD send-recv)",
                "routed_experts", lead)
    if top_knob is not None and top is not None:
        size = getattr(pc, top_knob)
        return (f"{top_knob}={size} carries most of it ({top.primitive} on the critical path): reduce {top_knob} "
                "(more DP) or adjust the TP/EP ratio (seed 3.4: communication near compute means the TP degree is "
                "too large)", top.module,
                f"{top.name} over {top_knob}={size} ({top.tier}) is {share:.0%} of the estimated communication")
    tp = [g for g in groups if not g.ep]
    if tp:
        g = max(tp, key=lambda g: g.size)
        return (f"reduce {g.knob} (now {g.size}) or move the module to DP/EP (seed 3.4: communication near "
                "compute means the TP degree is too large)", knob_module(g.knob),
                f"TP all-reduce over {g.knob}={g.size} ({g.tier})")
    return v.action, None, "no parallel group in this config communicates (collectives from elsewhere)"


def variance_finding(summary: TraceSummary, pc: ParallelConfig | None, model: ModelSpec | None) -> Finding | None:
    """The seed's Metric 3 (MoE EP): (max - min) / mean of per-rank step times; None with one rank."""
    if len(summary.ranks) < 2:
        return None
    v = judge(RANK_VARIANCE, summary.rank_variance)
    times = {r.rank: r.mean_step_time_us for r in summary.ranks}
    slow = max(times, key=times.get)  # type: ignore[arg-type]
    fast = min(times, key=times.get)  # type: ignore[arg-type]
    detail = f" (slowest rank {slow} {times[slow] / 1e3:.3g} ms, fastest rank {fast} {times[fast] / 1e3:.3g} ms)"
    has_ep = pc is not None and model is not None and model.is_moe and pc.moe_ep_size > 1
    if pc is not None and model is not None and not has_ep and v.level != "ok":
        return Finding(v.metric, v.value, v.level, v.message + detail,
                       "no expert parallelism in this config, so the spread is not expert load: look at the "
                       f"slowest rank ({slow}) for a straggler (clocks, host stalls, uneven batch)", None)
    action = v.action
    if has_ep and v.level != "ok":
        action += f" (moe_ep_size={pc.moe_ep_size})"  # type: ignore[union-attr]
    return Finding(v.metric, v.value, v.level, v.message + detail, action, "routed_experts" if has_ep else None)


def memory_findings(peak_bytes: float | None, hw: Hardware | None, cmp: Comparison | None,
                    batch: int | None, phase: str | None) -> list[Finding]:
    """The seed's Metric 2: peak memory against the capacity and against the Step 3 estimate."""
    out: list[Finding] = []
    if peak_bytes is None:
        return out
    if hw is not None:
        # the allocator's peak leaves out the runtime reserve (context, communicator workspaces), so it is held to
        # the memory rule's limit, min(0.95 x capacity, capacity - reserve), as every estimate's figure is
        cap, reserve = float(hw.memory_bytes), float(hw.reserved_bytes)
        limit = memory_limit(cap, reserve, TOTAL_FRACTION)
        share = peak_bytes / cap
        level = "bad" if peak_bytes > limit else ("warn" if share > WEIGHTS_KV_FRACTION else "ok")
        action = {"ok": "none", "warn": "little headroom: keep the batch",
                  "bad": "over the memory limit: raise parallelism or lower the batch"}[level]
        out.append(Finding("peak_memory_share", share, level,
                           f"peak {peak_bytes / 1e9:.1f} GB = {share:.1%} of the {cap / 1e9:.1f} GB per rank "
                           f"(limit {limit / 1e9:.2f} GB = min({TOTAL_FRACTION:g} x {cap / 1e9:.2f}, "
                           f"{cap / 1e9:.2f} - {reserve / 1e9:.2f} runtime reserve))", action))
    if cmp is not None and cmp.memory_deviation is not None:
        dev = cmp.memory_deviation
        v = judge(ESTIMATE_DEVIATION, abs(dev))
        action = "none" if v.level == "ok" else (
            "the memory estimate is off: re-check what the framework allocates beyond weights and KV "
            "(graph workspace, communication buffers, activation peak)")
        grow = max_batch_from_peak(cmp, peak_bytes, batch, phase)
        if grow is not None:
            action = (action + "; " if action != "none" else "") + f"batch can grow to about {grow} " \
                     f"(KV headroom under the limit {cmp.memory.limit_bytes / 1e9:.2f} GB = " \
                     f"{cmp.memory.limit_formula()} at this context)"
        out.append(Finding("memory_deviation", abs(dev), v.level,
                           f"peak {peak_bytes / 1e9:.2f} GB measured vs {cmp.estimated_memory_bytes / 1e9:.2f} GB "
                           f"estimated ({dev:+.1%})", action))
    return out


def max_batch_from_peak(cmp: Comparison, peak_bytes: float, batch: int | None, phase: str | None) -> int | None:
    """Seed Metric 2, "how large batch_size can be set": the measured peak plus whole sequences of KV cache
    (per rank, at the profiled context) until the memory limit. None when it cannot be judged."""
    mem = cmp.memory
    if not batch or phase != "decode" or mem.sequences_per_rank <= 0 or mem.cache_total <= 0:
        return None
    per_seq = mem.cache_total / mem.sequences_per_rank
    extra = int((mem.limit_bytes - peak_bytes) // per_seq)
    return max(0, int(batch * (mem.sequences_per_rank + extra) / mem.sequences_per_rank))


def deviation_findings(cmp: Comparison, pc: ParallelConfig, hw: Hardware, model: ModelSpec) -> list[Finding]:
    """Step time against the estimate (seed bands 10 / 30%), then each judged class."""
    worst = cmp.most_deviating()
    out = []
    dev = cmp.step_deviation
    if dev is not None:
        v = judge(ESTIMATE_DEVIATION, abs(dev))
        msg = (f"step time {cmp.measured_step_s * 1e3:.3g} ms measured vs {cmp.estimated_step_s * 1e3:.3g} ms "
               f"estimated ({dev:+.1%})")
        if v.level == "ok":
            action = "strategy confirmed, no adjustment needed"
        else:
            lead = ("fine-tune the deviating module" if v.level == "warn"
                    else "re-evaluate the strategy; consider module-level differentiated parallelism")
            if worst is not None:
                action = (f"{lead}: {CLASS_LABEL[worst.kind]} deviates most ({worst.module}): "
                          + _class_action(worst, cmp, pc, hw, model))
            else:
                action = lead + " (no single kernel class explains it: idle gaps or kernels the estimate omits)"
        out.append(Finding("step_time_deviation", abs(dev), v.level, msg, action,
                           worst.module if worst is not None and v.level != "ok" else None))
    for c in cmp.classes:
        if not c.judged:
            continue
        d = c.deviation
        label = CLASS_LABEL[c.kind]
        if d is None:
            if c.measured_s <= 0:
                continue
            share = c.measured_s / cmp.measured_step_s if cmp.measured_step_s > 0 else 0.0
            level = "bad" if share > 0.10 else "warn"
            out.append(Finding(f"{c.kind}_deviation", share, level,
                               f"{label}: {c.measured_s * 1e3:.3g} ms measured, none estimated ({share:.1%} of "
                               "the step)", _class_action(c, cmp, pc, hw, model), c.module))
            continue
        v = judge(ESTIMATE_DEVIATION, abs(d))
        word = "slower" if d > 0 else "faster"
        msg = (f"{label} {abs(d):.0%} {word} than estimated ({c.measured_s * 1e3:.3g} vs "
               f"{c.estimated_s * 1e3:.3g} ms per step; {c.module})")
        if worst is not None and c.kind == worst.kind:
            msg += "; deviates most"
        action = "none" if v.level == "ok" else _class_action(c, cmp, pc, hw, model)
        out.append(Finding(f"{c.kind}_deviation", abs(d), v.level, msg, action, c.module))
    return out


def _class_action(c: ClassComparison, cmp: Comparison, pc: ParallelConfig, hw: Hardware, model: ModelSpec) -> str:
    d = c.deviation
    slower = d is None or d > 0
    if not slower:
        return (f"{CLASS_LABEL[c.kind]} runs faster than the catalog factors predict: recalibrate "
                "(--recalibrate) before comparing candidates")
    if c.kind == ATTENTION:
        base = "re-evaluate attention TP vs CP"
        if cmp.phase == "prefill":
            if model.has_mla:
                return base + f" (MLA: keep attn_tp_size small, now {pc.attn_tp_size}, and add cp_size, now " \
                              f"{pc.cp_size}, to share prefill)"
            return base + f" (GQA: raise attn_tp_size, now {pc.attn_tp_size}, or add cp_size, now {pc.cp_size})"
        return base + f" (decode attention reads the KV cache: kvp_size, now {pc.kvp_size}, splits it for long " \
                      "contexts; or recalibrate hbm)"
    if c.kind == GEMM_MOE:
        if model.is_moe and pc.moe_tp_size > 1 and c.module in ("routed_experts", "shared_experts"):
            inter = model.moe_intermediate_size or model.intermediate_size
            return (f"moe_tp_size={pc.moe_tp_size} cuts each expert to {inter // pc.moe_tp_size} columns per rank "
                    "(fragmented GEMMs): compare EP (moe_tp_size=1)")
        if c.module == "dense_ffn" and pc.dense_tp_size > 1:
            return (f"dense_tp_size={pc.dense_tp_size} leaves {model.intermediate_size // pc.dense_tp_size} FFN "
                    "columns per rank: compare a smaller dense_tp_size")
        return "GEMM efficiency below the catalog's: recalibrate gemm (--recalibrate) and re-rank the candidates"
    # exposed communication
    groups = [g for g in layout_groups(pc, hw) if crosses_nodes(g.tier)]
    if groups:
        names = ", ".join(f"{g.knob}={g.size}" for g in groups)
        return f"keep the groups within a node ({hw.ranks_per_node} ranks): {names} cross nodes"
    return ("collectives take longer than estimated inside the node: check compute/communication overlap, "
            "or recalibrate the tier efficiency (--recalibrate)")


__all__ = ["Finding", "Group", "layout_groups", "crosses_nodes", "communication_findings", "variance_finding",
           "memory_findings", "deviation_findings", "max_batch_from_peak"]
