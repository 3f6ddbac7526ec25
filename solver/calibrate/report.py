"""The calibration report: plain data (yaml/json) and the table rendering of `shardplan calibrate`.

Units: milliseconds per step, GB = 1e9 bytes, ratios and deviations as fractions (0.2 = 20%).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from rich.console import Console

from solver.calibrate.advice import Finding
from solver.calibrate.classify import ATTENTION, COMMUNICATION, GEMM_MOE, OTHER, is_backward
from solver.calibrate.compare import COMM_EXPOSED, Comparison, comparison_data
from solver.calibrate.config import ProfiledConfig
from solver.calibrate.fit import FitResult
from solver.calibrate.metrics import TraceSummary
from solver.calibrate.trace import RankTrace
from solver.report.render import table

MS = 1e3
GB = 1e9


def backward_kernels(traces: Sequence[RankTrace]) -> tuple[int, str | None]:
    """How many device events are backward-pass kernels, and the name of one (a training step)."""
    count, example = 0, None
    for t in traces:
        for s in t.steps:
            for ev in s.events:
                if is_backward(ev.name):
                    count += 1
                    if example is None:
                        example = ev.name
    return count, example


@dataclass
class RunErrors:
    """Estimate error of one run before and after recalibration."""

    label: str
    config: str
    phase: str
    before: Comparison
    after: Comparison

    def as_dict(self) -> dict[str, Any]:
        def errs(c: Comparison) -> dict[str, Any]:
            return {"step_time": c.step_deviation,
                    **{x.kind: x.deviation for x in c.classes if x.kind != OTHER}}

        return {"trace": self.label, "config": self.config, "phase": self.phase,
                "measured_step_ms": self.before.measured_step_s * MS,
                "estimated_step_ms": {"before": self.before.estimated_step_s * MS,
                                      "after": self.after.estimated_step_s * MS},
                "error_before": errs(self.before), "error_after": errs(self.after)}


@dataclass
class Report:
    trace_paths: list[str]
    traces: list[RankTrace]
    summary: TraceSummary
    peak_bytes: float | None
    peak_source: str | None
    model: str | None = None
    hardware: str | None = None
    config: ProfiledConfig | None = None
    comparison: Comparison | None = None
    findings: list[Finding] = field(default_factory=list)
    training: bool = False
    notes: list[str] = field(default_factory=list)
    fit: FitResult | None = None
    fit_output: str | None = None
    fit_runs: list[RunErrors] = field(default_factory=list)

    def data(self) -> dict[str, Any]:
        s = self.summary
        ranks = [r.rank for r in s.ranks]
        per_rank_peak = [None if r.peak_memory_bytes is None else r.peak_memory_bytes / GB for r in s.ranks]
        world = next((t.world_size for t in self.traces if t.world_size is not None), None)
        d: dict[str, Any] = {
            "traces": self.trace_paths,
            "ranks": ranks,
            "world_size": world,
            "steps_per_rank": s.steps_per_rank,
            "step_source": self.traces[0].step_source if self.traces else None,
            "training_step": self.training,
            "step_time_ms": [r.mean_step_time_us / MS for r in s.ranks],
            "step_time_ms_mean": s.mean_step_time_us / MS,
            "communication_ratio": s.communication_ratio,
            "communication_ratio_raw": s.communication_ratio_raw,
            "rank_variance": s.rank_variance if len(s.ranks) > 1 else None,
            "peak_memory_gb": None if self.peak_bytes is None else self.peak_bytes / GB,
            "peak_memory_source": self.peak_source,
            "peak_memory_gb_per_rank": per_rank_peak,
            "kernel_share": {k: s.compute_share[k] for k in (COMMUNICATION, ATTENTION, GEMM_MOE, OTHER)},
            "per_rank": [{"rank": r.rank, "steps": len(r.steps), "step_time_ms": r.mean_step_time_us / MS,
                          "communication_ratio": r.communication_ratio,
                          "communication_ratio_raw": r.communication_ratio_raw,
                          "peak_memory_gb": None if r.peak_memory_bytes is None else r.peak_memory_bytes / GB}
                         for r in s.ranks],
            "model": self.model,
            "hardware": self.hardware,
            "config": self.config.as_dict() if self.config is not None else None,
            "estimate_comparison": comparison_data(self.comparison) if self.comparison is not None else None,
            "verdicts": [f.as_dict() for f in self.findings],
        }
        if self.fit is not None:
            d["recalibration"] = {
                "output": self.fit_output,
                "hardware": self.fit.hardware.name,
                "factors": [{"factor": f.key, "before": f.before, "after": f.after, "status": f.status,
                             "observed_by": f.observed_by} for f in self.fit.factors],
                "rounds": self.fit.iterations,
                "residual_rms": self.fit.residual,
                "runs": [r.as_dict() for r in self.fit_runs],
            }
        d["notes"] = self.notes
        return d


# ------------------------------------------------------------------------------------------- rendering


def _pct(x: float | None, signed: bool = False) -> str:
    if x is None:
        return "-"
    return f"{x:+.1%}" if signed else f"{x:.1%}"


def _pct2(x: float | None) -> str:
    """Signed percent with two decimals (after recalibration errors are small)."""
    return "-" if x is None else f"{x:+.2%}"


def _ms(x: float) -> str:
    return f"{x:.3f}" if x < 100 else f"{x:,.1f}"


_LEVEL_STYLE = {"ok": "[green]ok[/green]", "warn": "[yellow]warn[/yellow]", "bad": "[red]bad[/red]"}
_CLASS_LABEL = {ATTENTION: "attention", GEMM_MOE: "gemm_moe", COMMUNICATION: "communication (kernel time)",
                COMM_EXPOSED: "communication (exposed)", OTHER: "other (not modeled)"}


def render(rep: Report, con: Console) -> None:
    d = rep.data()
    s = rep.summary
    head = f"{len(s.ranks)} rank trace(s)"
    if d["world_size"]:
        head += f" of world_size {d['world_size']}"
    head += f", {s.steps_per_rank} step(s) each (steps from {d['step_source']})"
    if rep.training:
        head += "; TRAINING step (backward kernels)"
    con.print(f"[bold]calibrate[/bold] {head}")
    rows = []
    for r in d["per_rank"]:
        rows.append([r["rank"], r["steps"], _ms(r["step_time_ms"]), _pct(r["communication_ratio_raw"]),
                     _pct(r["communication_ratio"]),
                     "-" if r["peak_memory_gb"] is None else f"{r['peak_memory_gb']:.2f}"])
    con.print(table("Per rank (mean over steps)", ["rank", "steps", "step ms", "comm raw", "comm exposed",
                                                   "peak GB"], rows))
    peak = "-" if d["peak_memory_gb"] is None else f"{d['peak_memory_gb']:.2f} GB ({d['peak_memory_source']})"
    share = ", ".join(f"{_CLASS_LABEL[k].split(' ')[0]} {v:.1%}" for k, v in d["kernel_share"].items())
    con.print(table("Step metrics (seed Step 5)", ["metric", "value"], [
        ["step time (mean of ranks)", f"{_ms(d['step_time_ms_mean'])} ms"],
        ["communication ratio, raw (collective kernel time / step)", _pct(d["communication_ratio_raw"])],
        ["communication ratio, exposed (not hidden by compute)", _pct(d["communication_ratio"])],
        ["rank variance (max - min) / mean", _pct(d["rank_variance"]) if d["rank_variance"] is not None
         else "- (one rank)"],
        ["peak memory", peak],
        ["device time by class (union / step)", share],
    ]))
    if rep.comparison is not None:
        c = rep.comparison
        rows = [["step", _ms(c.measured_step_s * MS), _ms(c.estimated_step_s * MS), _pct(c.step_deviation, True), ""]]
        for x in c.classes:
            rows.append([_CLASS_LABEL[x.kind], _ms(x.measured_s * MS), _ms(x.estimated_s * MS),
                         _pct(x.deviation, True), x.module])
        if c.measured_peak_bytes is not None:
            rows.append(["peak memory (GB)", f"{c.measured_peak_bytes / GB:.2f}",
                         f"{c.estimated_memory_bytes / GB:.2f}", _pct(c.memory_deviation, True), ""])
        con.print(table(f"Trace vs estimate ({c.phase} step; ms per step)",
                        ["class", "measured", "estimated", "deviation", "largest estimated module"], rows))
    con.print(table("Verdicts", ["level", "metric", "finding", "action"],
                    [[_LEVEL_STYLE.get(f.level, f.level), f.metric, f.message, f.action] for f in rep.findings]))
    if rep.fit is not None:
        rows = [[f.key, f"{f.before:.4g}", f"{f.after:.4g}", f.status, "; ".join(f.observed_by)]
                for f in rep.fit.factors]
        con.print(table(f"Recalibrated factors -> {rep.fit.hardware.name} ({rep.fit_output})",
                        ["factor", "catalog", "calibrated", "status", "observed by (share of class time)"], rows))
        rows = []
        for r in rep.fit_runs:
            b, a = r.as_dict()["error_before"], r.as_dict()["error_after"]
            for k in b:
                rows.append([r.label if k == "step_time" else "", r.phase if k == "step_time" else "",
                             _CLASS_LABEL.get(k, "step time"), _pct2(b[k]), _pct2(a[k])])
        con.print(table("Estimate error (measured vs estimated) before -> after recalibration",
                        ["trace", "phase", "class", "before", "after"], rows))
