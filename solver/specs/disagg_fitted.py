"""Factors of disaggregated serving fitted per (framework, hardware) on the measured xPyD rows
(solver/frameworks/fitted/disagg.yaml, written by benchmarks/fit_disagg.py). What the aggregated fit
(fitted/factors.yaml) already covers is not repeated here: only what exists because the pools are split."""
from __future__ import annotations

from pathlib import Path

from solver.specs.fitted import fitted_dir, read_factors

# keys the file may carry per (framework, hardware) (the shipped file carries none: the prefill wait is the closed
# loop's, estimate/disagg.py; fit_disagg.py --write-candidate writes the candidate):
#   burst_share  [-] share of requests that reach the prefill pool in a burst (the loop's: 1/k, the first wave)
DISAGG_FACTORS = ("burst_share",)


def disagg_fitted_path() -> Path:
    return fitted_dir() / "disagg.yaml"


def disagg_fitted(path: Path | None = None) -> dict[str, dict[str, dict[str, float]]]:
    """framework -> hardware -> {factor: value}; empty when no fit has been written."""
    return read_factors(path or disagg_fitted_path())


def disagg_factors(framework: str, hardware: str, path: Path | None = None) -> dict[str, float]:
    """The (framework, hardware) pair's fit, else the framework's pooled fit (`_pooled`), else {} (the estimator
    derives the wait: the first of k waves is a burst)."""
    fw = disagg_fitted(path).get(framework, {})
    pair = fw.get(hardware) or fw.get("_pooled") or {}
    return {k: float(pair[k]) for k in DISAGG_FACTORS if k in pair}


def burst_share(framework: str, hardware: str, path: Path | None = None) -> float | None:
    """phi of the pair (None when nothing is fitted: the estimator's 1 / k)."""
    return disagg_factors(framework, hardware, path).get("burst_share")


__all__ = ["DISAGG_FACTORS", "disagg_factors", "disagg_fitted", "disagg_fitted_path", "burst_share"]
