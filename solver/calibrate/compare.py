"""Compare measured traces with the estimate of the configuration they were profiled under.

The estimate is one forward step of the config's workload (`estimate/step.py`: the busiest rank of the
busiest replica). Its ops and collectives are sorted into the trace's kernel classes:

    attention       attention_core (+ the DSA indexer score / top-k kernels)
    gemm_moe        every projection and FFN GEMM: qkv_proj, o_proj, dense_ffn, routed_experts, router,
                    shared_experts, lm_head, indexer_proj
    other           embedding (the trace's "other" also holds norms, activations, casts... that the estimate
                    does not model, so this class is shown but not judged)
    communication   collectives: kernel time (`time_s`, compared with the trace's raw collective time) and
                    exposed time (`exposed_s`, compared with the trace's exposed collective time)

Measured figures are per step, averaged over ranks and steps (`TraceSummary`). Deviations are signed,
(measured - estimated) / estimated: +40% means 40% slower than estimated.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from solver.calibrate.classify import ATTENTION, COMMUNICATION, GEMM_MOE, OTHER
from solver.calibrate.config import ProfiledConfig
from solver.calibrate.metrics import TraceSummary
from solver.errors import InputError
from solver.estimate.compute import Factors, factors_for
from solver.estimate.memory import MemoryReport, memory_per_rank
from solver.estimate.memory_options import engine_options
from solver.estimate.serving import decode_step, prefill_step
from solver.estimate.step import StepCost
from solver.specs.framework import FrameworkProfile, load_framework
from solver.specs.hardware import Hardware
from solver.specs.model import ModelSpec
from solver.specs.model_catalog import load_model
from solver.specs.notes import input_notes
from solver.specs.precision import USER_FLAGS, Precision, resolve_precision

ATTENTION_OPS = frozenset({"attention_core", "indexer_score", "indexer_topk"})
OTHER_OPS = frozenset({"embedding"})
COMM_EXPOSED = "communication_exposed"
JUDGED = (ATTENTION, GEMM_MOE, COMM_EXPOSED)  # classes whose deviation the report judges
FITTED = (ATTENTION, GEMM_MOE, COMMUNICATION)  # classes recalibration fits on (kernel time)


def op_class(op_name: str) -> str:
    if op_name in ATTENTION_OPS:
        return ATTENTION
    if op_name in OTHER_OPS:
        return OTHER
    return GEMM_MOE


@dataclass
class Setup:
    """Everything the estimate of one profiled run needs, resolved once."""

    model: ModelSpec
    hw: Hardware
    cfg: ProfiledConfig
    prec: Precision
    fw: FrameworkProfile
    notes: list[str] = field(default_factory=list)

    @property
    def pc(self):
        return self.cfg.parallel

    def factors(self, hw: Hardware | None = None) -> Factors:
        hw = hw or self.hw
        return factors_for(hw, self.fw.efficiency_for(hw))

    def step(self, hw: Hardware | None = None, factors: Factors | None = None) -> StepCost:
        """One forward step of the config's workload on `hw` (default: the run's hardware)."""
        hw = hw or self.hw
        f = factors or self.factors(hw)
        c = self.cfg
        per_replica = max(1.0, (c.batch or 1) / self.pc.attn_replicas)
        if c.phase == "prefill":
            return prefill_step(self.model, hw, self.pc, self.prec, f, c.seq_len or 1, per_replica, prefill_worker=True)
        return decode_step(self.model, hw, self.pc, self.prec, f, per_replica, c.seq_len or 1)

    def memory(self) -> MemoryReport:
        c = self.cfg
        return memory_per_rank(self.model, self.hw, self.pc, self.prec, c.batch or 1, c.seq_len or 1,
                               engine_options(None, self.factors()))


def make_setup(model: str | ModelSpec, hw: Hardware, cfg: ProfiledConfig) -> Setup:
    spec = load_model(model) if isinstance(model, str) else model
    try:
        fw = load_framework(cfg.framework)
    except InputError as exc:  # name the config key, not the estimate command's flag
        raise InputError(f"{cfg.source}: framework", exc.problem) from None
    fw.check_vendor(hw.name, hw.vendor, f"{cfg.source}: framework")  # the key that named it, not a flag
    fw.check_model(spec, f"{cfg.source}: framework", hw.vendor)  # an engine without the model: no trace to judge
    prec = resolve_precision(spec, hw, cfg.weight_dtype, cfg.moe_weight_dtype, cfg.kv_dtype,
                             fields={k: f"{cfg.source}: {k}" for k in USER_FLAGS})
    notes = list(input_notes(spec, hw, prec))
    return Setup(spec, hw, cfg, prec, fw, notes)


def estimate_classes(step: StepCost) -> dict[str, float]:
    """Seconds per step by trace kernel class (module docstring), plus exposed communication."""
    out = {ATTENTION: 0.0, GEMM_MOE: 0.0, OTHER: 0.0, COMMUNICATION: 0.0, COMM_EXPOSED: 0.0}
    for op in step.ops:
        out[op_class(op.name)] += op.time_s
    for c in step.comms:
        out[COMMUNICATION] += c.time_s
        out[COMM_EXPOSED] += c.exposed_s
    return out


def class_modules(step: StepCost) -> dict[str, list[tuple[str, float]]]:
    """Per class, the estimate's modules (or collectives) by time, largest first."""
    acc: dict[str, dict[str, float]] = {k: {} for k in (ATTENTION, GEMM_MOE, OTHER, COMMUNICATION, COMM_EXPOSED)}
    for op in step.ops:
        d = acc[op_class(op.name)]
        d[op.module] = d.get(op.module, 0.0) + op.time_s
    for c in step.comms:
        label = f"{c.name} ({c.module}, {c.tier})"
        acc[COMMUNICATION][label] = acc[COMMUNICATION].get(label, 0.0) + c.time_s
        acc[COMM_EXPOSED][label] = acc[COMM_EXPOSED].get(label, 0.0) + c.exposed_s
    return {k: sorted(v.items(), key=lambda kv: -kv[1]) for k, v in acc.items()}


def measured_classes(summary: TraceSummary) -> dict[str, float]:
    """Seconds per step by class, averaged over every rank and step of the traces."""
    steps = [s for r in summary.ranks for s in r.steps]
    n = len(steps) or 1
    out = {k: sum(s.compute_us[k] for s in steps) / n / 1e6 for k in (ATTENTION, GEMM_MOE, OTHER)}
    out[COMMUNICATION] = sum(s.comm_raw_us for s in steps) / n / 1e6
    out[COMM_EXPOSED] = sum(s.comm_exposed_us for s in steps) / n / 1e6
    return out


def signed_deviation(estimated: float, measured: float) -> float | None:
    """(measured - estimated) / estimated; None when there is no estimate to compare against."""
    if not estimated > 0:
        return None
    return (measured - estimated) / estimated


@dataclass(frozen=True)
class ClassComparison:
    kind: str
    measured_s: float
    estimated_s: float
    module: str  # the estimate's largest contributor to this class
    judged: bool

    @property
    def deviation(self) -> float | None:
        return signed_deviation(self.estimated_s, self.measured_s)

    @property
    def excess_s(self) -> float:
        return self.measured_s - self.estimated_s


@dataclass(frozen=True)
class Comparison:
    phase: str
    measured_step_s: float
    estimated_step_s: float
    classes: list[ClassComparison]
    measured_peak_bytes: float | None
    estimated_memory_bytes: float  # what the model allocates (the estimate's total less the runtime reserve)
    memory: MemoryReport
    step: StepCost | None = None  # the estimate compared against

    @property
    def step_deviation(self) -> float | None:
        return signed_deviation(self.estimated_step_s, self.measured_step_s)

    @property
    def memory_deviation(self) -> float | None:
        if self.measured_peak_bytes is None:
            return None
        return signed_deviation(self.estimated_memory_bytes, self.measured_peak_bytes)

    def by_kind(self) -> dict[str, ClassComparison]:
        return {c.kind: c for c in self.classes}

    def most_deviating(self, min_deviation: float = 0.10) -> ClassComparison | None:
        """The judged class whose measurement is furthest from its estimate in time, among those off by at
        least `min_deviation` (relative); None when every judged class is within it."""
        cands = []
        for c in self.classes:
            if not c.judged:
                continue
            dev = c.deviation
            if dev is None:
                if c.measured_s > 0.10 * self.measured_step_s:  # nothing estimated, but a real share measured
                    cands.append(c)
            elif abs(dev) >= min_deviation - 1e-9:
                cands.append(c)
        return max(cands, key=lambda c: abs(c.excess_s)) if cands else None


def compare(summary: TraceSummary, setup: Setup, peak_bytes: float | None, hw: Hardware | None = None) -> Comparison:
    """The trace's figures against the estimate on `hw` (default: the run's hardware)."""
    step = setup.step(hw)
    est = estimate_classes(step)
    meas = measured_classes(summary)
    mods = class_modules(step)
    classes = []
    for kind in (ATTENTION, GEMM_MOE, COMMUNICATION, COMM_EXPOSED, OTHER):
        top = mods[kind][0][0] if mods[kind] and mods[kind][0][1] > 0 else "-"
        classes.append(ClassComparison(kind, meas[kind], est[kind], top, kind in JUDGED))
    mem = setup.memory()
    return Comparison(
        phase=setup.cfg.phase or "",
        measured_step_s=summary.mean_step_time_us / 1e6,
        estimated_step_s=step.time_s,
        classes=classes,
        measured_peak_bytes=peak_bytes,
        estimated_memory_bytes=mem.model_bytes,
        memory=mem,
        step=step,
    )


def comparison_data(cmp: Comparison) -> dict[str, Any]:
    return {
        "phase": cmp.phase,
        "step_time_ms": {"measured": cmp.measured_step_s * 1e3, "estimated": cmp.estimated_step_s * 1e3,
                         "deviation": cmp.step_deviation},
        "classes": [{"class": c.kind, "measured_ms": c.measured_s * 1e3, "estimated_ms": c.estimated_s * 1e3,
                     "deviation": c.deviation, "module": c.module, "judged": c.judged}
                    for c in cmp.classes],
        "memory_gb": {"measured_peak": None if cmp.measured_peak_bytes is None else cmp.measured_peak_bytes / 1e9,
                      "estimated": cmp.estimated_memory_bytes / 1e9, "deviation": cmp.memory_deviation,
                      "capacity": cmp.memory.capacity_bytes / 1e9, "limit": cmp.memory.limit_bytes / 1e9},
    }
