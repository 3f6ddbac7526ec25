"""A user's measured serving rows (the calibration CSV's columns, read as `estimate --from-csv` reads them) fit the
per-(framework, hardware) factors of the pairs they measured: `shardplan calibrate --from-csv ROWS.csv --fit
OUT.yaml`, whose file `--factors OUT.yaml` then gives solve, estimate, sweep, recommend, check and launch.

The fit is the shipped one's (solver.calibrate.factor_fit: the loss, its ridge prior towards the hardware's own
factors, the bounded coordinate search), run on each pair's rows however few, with two differences a user's
handful of rows needs:

- the factors fitted once over every pair of the shipped rows (rows.GLOBAL_PARAMS: the grouped-GEMM and
  weight-only fractions, the custom all-reduce latency) and per engine (rows.FRAMEWORK_PARAMS) keep the shipped
  values: a few rows of one pair cannot pin down what hundreds of rows over every engine and device did;
- of the pair factors (rows.PARAMS) only those the rows constrain are fitted: a factor whose whole range moves no
  row's TTFT or TPOT by SENSITIVE (e.g. the GEMM fraction when every row is decode-bound and its prompts short)
  keeps the shipped pair's value, where the prior alone would pull it to the hardware's own.

Each row is predicted as `estimate` prices it under the candidate pair (rows.profile_params: the profile's own
multipliers times the pair's), so the in-sample error the fit reports is the one `estimate --from-csv ROWS.csv
--factors OUT.yaml` prints.
"""
from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from solver.calibrate.factor_fit import coordinate_search, csv_digest, hardware_kernel_s, loss, rounded
from solver.calibrate.rows import (
    BOUNDS, FRAMEWORK_PARAMS, GLOBAL_PARAMS, PARAMS, Prepared, predict, prepare, profile_params,
)
from solver.errors import InputError
from solver.estimate.serving import DEFAULT_REQUEST_OVERHEAD_S
from solver.specs.fitted import fit_keys, fitted_factors, fitted_factors_path, fitted_global, pair_factors

# a factor whose whole range (rows.BOUNDS) moves no row's TTFT or TPOT by this much (ln ratio) is not fitted: the
# estimate's median error on the calibration rows is 10-20% (README.md, accuracy), so a smaller move cannot be
# told from it
SENSITIVE = 0.05


# Disaggregated rows fit nothing of their own: the shipped disaggregated fit (fitted/disagg.yaml,
# benchmarks/fit_disagg.py) holds no factor, its one candidate (the burst share) raising the leave-one-system-out
# TTFT error (benchmarks/README.md, "Disaggregated prefill/decode"); each pool's steps are priced with the
# aggregated pair factors, which a fit of aggregated rows gives and --factors carries into disaggregated estimates.
DISAGG_REFUSAL = ("{path}: disaggregated rows (prefill_* / decode_* columns) have no factor of their own to fit (the "
                  "shipped disaggregated fit holds none); fit aggregated rows of the same engine and hardware instead: "
                  "their file's factors price each pool's steps (`estimate --from-csv {path} --factors FILE` "
                  "evaluates these rows with them)")


@dataclass(frozen=True)
class PairFit:
    """One (framework, hardware) pair's fit: which factors moved on how many rows, and the in-sample error."""

    framework: str
    hardware: str
    rows: int
    fitted: tuple[str, ...]  # the pair factors the rows constrain, fitted
    kept: tuple[str, ...]  # the pair factors no row constrains: the shipped pair's values
    before: dict[str, float]  # the shipped factors of the pair (what estimate uses without --factors)
    after: dict[str, float]  # what the written file holds for the pair
    ttft_before: float  # median |predicted / measured - 1| over the rows
    tpot_before: float
    ttft_after: float
    tpot_after: float
    loss_before: float
    loss_after: float


def shipped_pair(p: Prepared) -> dict[str, float]:
    """The shipped fit's factors of the row's pair, as FrameworkProfile.efficiency_for reads them."""
    fw, path = p.case.framework, fitted_factors_path()
    shared = fitted_global(p.case.hw.vendor, path, framework=fw.fitted_as or fw.name)
    return pair_factors(fitted_factors(path), shared, fit_keys(fw.name, fw.fitted_as), p.case.hw.fit_keys)


def predict_as(p: Prepared, pair: Mapping[str, float]) -> tuple[float, float]:
    """(TTFT s, TPOT s) of the row as `estimate` prices it with `pair` as its pair's fitted factors."""
    return predict(p, profile_params(p, {p.framework: {p.hardware: dict(pair)}}))


def median_errors(rows: Sequence[Prepared], pair: Mapping[str, float]) -> tuple[float, float]:
    """(TTFT, TPOT) median |predicted / measured - 1|: what `estimate --from-csv` prints."""
    pred = [predict_as(p, pair) for p in rows]
    return (float(np.median([abs(t / p.ttft_s - 1) for (t, _), p in zip(pred, rows)])),
            float(np.median([abs(s / p.tpot_s - 1) for (_, s), p in zip(pred, rows)])))


def constrains(rows: Sequence[Prepared], pair: Mapping[str, float], key: str) -> bool:
    """Whether some row's TTFT or TPOT moves by SENSITIVE (ln ratio) as `key` crosses its bounds."""
    lo, hi = BOUNDS[key]
    for p in rows:
        a, b = predict_as(p, {**pair, key: lo}), predict_as(p, {**pair, key: hi})
        if max(abs(math.log(b[0] / a[0])), abs(math.log(b[1] / a[1]))) >= SENSITIVE:
            return True
    return False


def fit_pair(rows: Sequence[Prepared]) -> PairFit:
    """The pair factors of one (framework, hardware) group of rows, the shared ones held at the shipped values."""
    first = rows[0]
    before = shipped_pair(first)
    # where the shipped fit has no value of a pair factor, the one estimate uses without it: multipliers 1, the
    # hardware's per-kernel cost and the default per-request cost
    start = {"gemm": 1.0, "hbm": 1.0, "kernel_overhead_s": hardware_kernel_s(rows),
             "request_overhead_s": DEFAULT_REQUEST_OVERHEAD_S, **before}
    keys = tuple(k for k in PARAMS if constrains(rows, start, k))
    objective = lambda pair: loss(rows, pair, predict_as)  # noqa: E731
    best = coordinate_search(objective, start, keys) if keys else dict(start)
    after = {**start, **{k: rounded(k, best[k]) for k in keys}}
    tb, sb = median_errors(rows, before)
    ta, sa = median_errors(rows, after)
    return PairFit(first.framework, first.hardware, len(rows), keys, tuple(k for k in PARAMS if k not in keys),
                   before, after, tb, sb, ta, sa, objective({**start, **before}), objective(after))


@dataclass(frozen=True)
class UserFit:
    pairs: list[PairFit]
    rows: int  # rows read
    skipped: list[tuple[int, str]]  # (CSV line, why) of the rows no fit can use


def prepare_csv(path: str, flag: str = "--from-csv") -> tuple[list[Prepared], list[tuple[int, str]]]:
    """The CSV's evaluable rows, prepared, and (line, error) of the others (a row without a positive measured
    ttft_ms and tpot_ms, or one `estimate --from-csv` cannot price). InputError when the file has no such row."""
    from solver.measured import read_measured_csv, row_files_beside

    header, rows = read_measured_csv(path, flag)
    if any(c.startswith(("prefill_", "decode_")) for c in header):  # before the columns: theirs have no `tp`
        raise InputError(flag, DISAGG_REFUSAL.format(path=path))
    missing = [c for c in ("model", "system", "isl", "osl", "concurrency", "tp", "ttft_ms", "tpot_ms")
               if c not in header]
    if missing:
        raise InputError(flag, f"{path}: missing column(s): {', '.join(missing)} (a fit needs the measured ttft_ms "
                               "and tpot_ms of each row)")
    folder = Path(path).parent
    ok: list[Prepared] = []
    skipped: list[tuple[int, str]] = []
    for line, row in enumerate(rows, start=2):
        try:
            if None in row or None in row.values():
                raise InputError(f"line {line}", "cells do not match the header's columns")
            ok.append(prepare(row_files_beside(row, folder), line))
        except InputError as exc:
            skipped.append((line, str(exc)))
    if not ok:
        first = f" (first: line {skipped[0][0]}: {skipped[0][1][:200]})" if skipped else ""
        raise InputError(flag, f"{path}: none of the {len(rows)} rows can be fitted{first}")
    return ok, skipped


def fit_csv(path: str, flag: str = "--from-csv") -> UserFit:
    prepared, skipped = prepare_csv(path, flag)
    groups: dict[tuple[str, str], list[Prepared]] = defaultdict(list)
    for p in prepared:
        groups[(p.framework, p.hardware)].append(p)
    return UserFit([fit_pair(rows) for _, rows in sorted(groups.items())], len(prepared) + len(skipped), skipped)


def pct(x: float) -> str:
    return f"{x:.1%}"


def summary_lines(fit: UserFit) -> list[str]:
    """A line per pair: the factors fitted on how many rows, those kept, the in-sample error before and after."""
    out = []
    for f in fit.pairs:
        moved = ", ".join(f"{k} {_show(k, f.before.get(k))} -> {_show(k, f.after[k])}" for k in f.fitted)
        out.append(f"{f.framework} x {f.hardware}: {f.rows} row(s); fitted {moved or 'nothing'}"
                   + (f"; kept {', '.join(f.kept)} (no row moves by {SENSITIVE:.0%} over its range)" if f.kept else "")
                   + f"; median |error| TTFT {pct(f.ttft_before)} -> {pct(f.ttft_after)}, "
                     f"TPOT {pct(f.tpot_before)} -> {pct(f.tpot_after)}, loss {f.loss_before:.3f} -> {f.loss_after:.3f}"
                     " (in sample)")
    return out


def _show(key: str, value: float | None) -> str:
    if value is None:
        return "(no shipped fit)"
    return f"{value * 1e6:.3g} us" if key.endswith("_s") and value < 1e-3 else (
        f"{value * 1e3:.3g} ms" if key.endswith("_s") else f"{value:.4g}")


def render(fit: UserFit, csv: Path) -> str:
    """The factors file: {factors: {framework: {hardware: {factor: value}}}}, the fitted pairs only, with each pair's
    shared factors (rows.GLOBAL_PARAMS, rows.FRAMEWORK_PARAMS) at the shipped values; the header says what was
    fitted on which rows."""
    import yaml

    header = [
        "# Efficiency factors per (framework, hardware) fitted to measured rows. GENERATED.",
        f"# By `shardplan calibrate --from-csv {csv.name} --fit` (sha256 {csv_digest(csv)}...): "
        f"{sum(f.rows for f in fit.pairs)} of {fit.rows} rows fitted.",
        "# Use: shardplan solve|estimate|sweep|recommend|check|launch ... --factors THIS_FILE: its pairs replace the",
        "# shipped fit (solver/frameworks/fitted/factors.yaml); every other pair keeps the shipped one.",
        f"# {', '.join((*GLOBAL_PARAMS, *FRAMEWORK_PARAMS))}: the shipped fit's values (fitted over every pair).",
        *(f"# {line}" for line in summary_lines(fit)),
    ]
    body = {"factors": {}}  # type: dict[str, Any]
    for f in fit.pairs:
        body["factors"].setdefault(f.framework, {})[f.hardware] = dict(sorted(f.after.items()))
    return "\n".join(header) + "\n" + yaml.safe_dump(body, sort_keys=True, default_flow_style=False)
