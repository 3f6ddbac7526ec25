"""Profiling calibration: read profiler traces, measure communication share / rank spread / memory peak,
and judge them against the calibration thresholds."""
from solver.calibrate.classify import ATTENTION, CLASSES, COMMUNICATION, GEMM_MOE, OTHER, classify
from solver.calibrate.metrics import (
    KernelStat,
    RankMetrics,
    StepMetrics,
    TraceSummary,
    check_step_counts,
    peak_memory,
    rank_metrics,
    rank_variance,
    step_metrics,
    summarize,
    top_kernels,
)
from solver.calibrate.trace import DeviceEvent, RankTrace, Step, load_trace_file, load_traces, trace_files
from solver.calibrate.advice import Finding
from solver.calibrate.compare import Comparison, Setup, compare, make_setup
from solver.calibrate.config import ProfiledConfig, load_profiled_config, parse_profiled_config
from solver.calibrate.fit import FitResult, Observation, fit_factors, recalibrate
from solver.calibrate.verdict import (
    RULES,
    Verdict,
    communication_verdict,
    deviation,
    deviation_verdict,
    judge,
    variance_verdict,
)

__all__ = [
    "ATTENTION", "CLASSES", "COMMUNICATION", "GEMM_MOE", "OTHER", "classify",
    "KernelStat", "RankMetrics", "StepMetrics", "TraceSummary", "check_step_counts", "peak_memory",
    "rank_metrics", "rank_variance", "step_metrics", "summarize", "top_kernels",
    "DeviceEvent", "RankTrace", "Step", "load_trace_file", "load_traces", "trace_files",
    "Finding", "Comparison", "Setup", "compare", "make_setup", "ProfiledConfig", "load_profiled_config",
    "parse_profiled_config", "FitResult", "Observation", "fit_factors", "recalibrate",
    "RULES", "Verdict", "communication_verdict", "deviation", "deviation_verdict", "judge", "variance_verdict",
]
