"""Recalibration: fit the hardware's achieved-efficiency factors to measured traces.

Factors fitted: `efficiency.gemm`, `efficiency.attention`, `efficiency.hbm` and `tiers.<tier>.efficiency` for
every tier of the hardware. The kernel overhead and the framework multipliers are left alone.

Method. For a kernel class c (attention, gemm_moe, communication kernel time) of one profiled run, M_c is the
measured time per step and E_c the estimated time per step of the ops of that class in the estimate of the
same config and workload (`compare.py` maps ops to classes). Every op costs max(FLOPs / (peak x e_compute),
bytes / (HBM x e_hbm)) + a fixed per-kernel cost, and every collective latency + bytes / (link x e_tier):
with the binding bound of each op fixed, E_c is linear in the inverse efficiencies,

    E_c = O_c + sum_k A_ck * s_k,     s_k = e_k(before) / e_k(after)

where O_c is the fixed part (kernel overheads, link latencies) and A_ck the time of class c that factor k
governs (compute-bound ops: gemm or attention; memory-bound ops: hbm; collectives: the tier of each level of
the group). A_ck is read off the estimate by perturbing e_k. When one factor dominates a class this gives the
plain ratio s_k = (M_c - O_c) / (E_c - O_c): measured over estimated time of the class scales the efficiency
of the bound that dominates it. With several classes and runs (a prefill trace fixes gemm and attention, a
decode trace hbm) the s_k solve the least-squares problem min sum_c ((E_c(s) - M_c) / M_c)^2; the bounds are
re-evaluated at the new factors and the fit repeated until it is stable (a few rounds).

A factor is fitted only when it governs at least `MIN_SHARE` of some class's estimated time (otherwise the
traces do not observe it and it keeps the catalog value). Fitted values are bounded to (0, 1] of peak: one
that would exceed 1 is pinned at 1 and the rest refitted.
"""
from __future__ import annotations

import datetime as _dt
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import yaml

from solver.calibrate.compare import FITTED, Setup, estimate_classes
from solver.errors import InputError
from solver.specs.hardware import Hardware, hardware_from_dict

MIN_SHARE = 0.25  # a factor must govern this share of some class's estimated time to be fitted
_DELTA = 1e-4  # relative perturbation of an inverse efficiency
_RIDGE = 1e-9  # keeps directions the data cannot separate at their current value
COMPUTE_KEYS = ("gemm", "attention", "hbm")


def factor_keys(hw: Hardware) -> list[str]:
    return [*COMPUTE_KEYS, *(f"tiers.{name}" for name in hw.tiers)]


def factor_values(hw: Hardware) -> dict[str, float]:
    out = {k: float(getattr(hw.efficiency, k)) for k in COMPUTE_KEYS}
    out.update({f"tiers.{name}": float(t.efficiency) for name, t in hw.tiers.items()})
    return out


def with_factors(hw: Hardware, values: dict[str, float], name: str | None = None) -> Hardware:
    """A copy of `hw` with the given efficiency values (unvalidated: used inside the fit)."""
    eff = hw.efficiency.model_copy(update={k: v for k, v in values.items() if k in COMPUTE_KEYS})
    tiers = {n: (t.model_copy(update={"efficiency": values[f"tiers.{n}"]}) if f"tiers.{n}" in values else t)
             for n, t in hw.tiers.items()}
    update: dict[str, Any] = {"efficiency": eff, "tiers": tiers}
    if name is not None:
        update["name"] = name
    return hw.model_copy(update=update)


@dataclass
class Observation:
    """One profiled run: its estimate setup and the measured seconds per step by class."""

    setup: Setup
    measured: dict[str, float]
    label: str  # the trace path(s), for the report and the YAML's sources


@dataclass
class FactorFit:
    key: str
    before: float
    after: float
    status: str  # "fitted" | "pinned at 1.0 (peak)" | "not observed"
    observed_by: list[str] = field(default_factory=list)  # "run#class (share)"

    @property
    def changed(self) -> bool:
        return self.status != "not observed"


@dataclass
class FitResult:
    hardware: Hardware  # the calibrated hardware (validated)
    factors: list[FactorFit]
    iterations: int
    residual: float  # root-mean-square relative class error after the fit


def _rows(obs: Sequence[Observation], hw: Hardware, keys: list[str], values: dict[str, float]):
    """Per (run, class): measured M, estimated E, and A_k = e-governed time for each factor key."""
    base_hw = with_factors(hw, values)
    rows = []
    per_obs: list[tuple[dict[str, float], dict[str, dict[str, float]]]] = []
    for o in obs:
        e0 = estimate_classes(o.setup.step(base_hw))
        pert = {}
        for k in keys:
            v = dict(values)
            v[k] = values[k] / (1 + _DELTA)  # inverse efficiency x (1 + delta)
            pert[k] = estimate_classes(o.setup.step(with_factors(hw, v)))
        per_obs.append((e0, pert))
    for i, (o, (e0, pert)) in enumerate(zip(obs, per_obs)):
        for cls in FITTED:
            m, e = o.measured.get(cls, 0.0), e0[cls]
            if m <= 0 or e <= 0:
                continue
            a = {k: max(0.0, (pert[k][cls] - e) / _DELTA) for k in keys}
            rows.append((i, cls, m, e, a))
    return rows


def fit_factors(obs: Sequence[Observation], hw: Hardware, name: str | None = None,
                max_rounds: int = 40) -> tuple[dict[str, float], list[FactorFit], int, float]:
    """Fitted efficiency values (see the module docstring). `name` is the hardware name the fit evaluates
    under (the calibrated name: framework multipliers are looked up by hardware name)."""
    if not obs:
        raise InputError("recalibrate", "no profiled run to fit")
    keys = factor_keys(hw)
    start = factor_values(hw)
    hw_named = with_factors(hw, start, name)
    values = dict(start)
    observed: dict[str, list[str]] = {}
    pinned: set[str] = set()
    rounds = 0
    for rounds in range(1, max_rounds + 1):
        rows = _rows(obs, hw_named, keys, values)
        if not rows:
            raise InputError("recalibrate", "the traces hold no attention, GEMM or communication time that the "
                                            "estimate also has; nothing to fit")
        for i, cls, m, e, a in rows:
            for k in keys:
                if a[k] >= MIN_SHARE * e:
                    tag = f"run {i + 1} {cls} ({a[k] / e:.0%})"
                    lst = observed.setdefault(k, [])
                    if not any(t.startswith(f"run {i + 1} {cls} ") for t in lst):
                        lst.append(tag)
        free = [k for k in keys if k in observed and k not in pinned]
        if not free:
            break
        # least squares on relative errors: sum_k (A_ck / M_c) s_k = (M_c - O_c) / M_c, O_c = E_c - sum_k A_ck
        mat = np.zeros((len(rows) + len(free), len(free)))
        rhs = np.zeros(len(rows) + len(free))
        for r, (_, _, m, e, a) in enumerate(rows):
            fixed_part = e - sum(a[k] for k in free)  # overheads, latencies and factors not being fitted
            mat[r] = [a[k] / m for k in free]
            rhs[r] = (m - fixed_part) / m
        for j in range(len(free)):
            mat[len(rows) + j, j] = math.sqrt(_RIDGE)
            rhs[len(rows) + j] = math.sqrt(_RIDGE)
        s, *_ = np.linalg.lstsq(mat, rhs, rcond=None)
        step = 0.0
        for k, sk in zip(free, s):
            sk = float(sk)
            if not sk > 0:
                sk = 0.5  # the data asks for a negative time: move toward faster and refit
            new = values[k] / sk
            if new >= 1.0:
                new = 1.0
                pinned.add(k)
            step = max(step, abs(math.log(new / values[k])))
            values[k] = new
        if step < 1e-12:
            break
    # root-mean-square relative error of the classes at the fitted point
    final = _rows(obs, hw_named, [], values)
    residual = math.sqrt(sum(((e - m) / m) ** 2 for _, _, m, e, _ in final) / len(final)) if final else 0.0
    fits = []
    for k in keys:
        if k not in observed:
            fits.append(FactorFit(k, start[k], start[k], "not observed"))
        else:
            fits.append(FactorFit(k, start[k], values[k], "pinned at 1.0 (peak)" if k in pinned else "fitted",
                                  observed[k]))
    return values, fits, rounds, residual


def _round(v: float) -> float:
    return float(f"{v:.6g}")


def calibrated_data(hw: Hardware, fits: Sequence[FactorFit], sources_label: str, date: str | None = None
                    ) -> dict[str, Any]:
    """The hardware YAML mapping with the fitted factors, `-calibrated` name and updated sources."""
    date = date or _dt.date.today().isoformat()
    data = hw.model_dump(mode="json")
    data["name"] = f"{hw.name}-calibrated"
    data["description"] = (f"{hw.description} " if hw.description else "") + f"(calibrated {date})"
    sources = dict(data.get("sources") or {})
    for f in fits:
        if not f.changed:
            continue
        value = _round(f.after)
        if f.key in COMPUTE_KEYS:
            data["efficiency"][f.key] = value
            field_name = f"efficiency.{f.key}"
        else:
            tier = f.key.split(".", 1)[1]
            data["tiers"][tier]["efficiency"] = value
            field_name = f"{f.key}.efficiency"
        was = sources.get(field_name)
        sources[field_name] = (f"calibrated from {sources_label} on {date} (catalog value {_round(f.before)}"
                               + (f": {was})" if was else ")"))
    data["sources"] = sources
    return data


def recalibrate(obs: Sequence[Observation], hw: Hardware, sources_label: str, date: str | None = None
                ) -> tuple[FitResult, dict[str, Any]]:
    """Fit, then build and validate the calibrated hardware (same schema as the catalog's YAML)."""
    cal_name = f"{hw.name}-calibrated"
    _, fits, rounds, residual = fit_factors(obs, hw, cal_name)
    data = calibrated_data(hw, fits, sources_label, date)
    cal = hardware_from_dict(data, "calibrated hardware")
    return FitResult(cal, fits, rounds, residual), data


def write_hardware_yaml(data: dict[str, Any], path: str | Path, header: str = "") -> None:
    text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=120)
    lines = "".join(f"# {line}\n" for line in header.splitlines()) if header else ""
    from solver.outfile import check_extension, write_text

    check_extension(path, "--recalibrate", (".yaml", ".yml"))
    write_text(path, lines + text, "--recalibrate")


__all__ = ["Observation", "FactorFit", "FitResult", "fit_factors", "recalibrate", "calibrated_data",
           "write_hardware_yaml", "factor_keys", "factor_values", "with_factors", "MIN_SHARE"]
