"""The fit of the efficiency factors per (framework, hardware) to measured serving rows (the calibration CSV's
columns): the shipped solver/frameworks/fitted/factors.yaml (benchmarks/fit_efficiency.py over the calibration
CSV) and a user's own file (`shardplan calibrate --from-csv ROWS.csv --fit OUT.yaml`, solver.calibrate.user_fit).


First, the factors in rows.GLOBAL_PARAMS (the routed-expert grouped-GEMM fraction of the dense GEMM's
FLOP/s, a weight-only GEMM's fraction of the dense 16-bit GEMM's, and the launch-to-done latency of the engines'
custom one-shot / two-shot all-reduce kernels) are
fitted once over all rows, every framework and hardware pooled (`fit_global`): numbers that a pair holding a
single MoE model or one TP size could not pin down on its own. Next, the factors in rows.FRAMEWORK_PARAMS
(the cost per running sequence per layer run: the engine's own decode kernels) once per framework over all its
rows, every hardware pooled, the global ones held fixed (`fit_framework`). Then, for every (framework, hardware)
pair with at least MIN_ROWS evaluable rows and those held fixed, the factors in rows.PARAMS (GEMM and HBM
multipliers on the hardware YAML's achieved fractions, the GPU time per kernel launched and a per-request
front-end TTFT cost, in seconds) are chosen to minimise

    mean_rows |ln(TTFT_pred / TTFT_meas)| * W_TTFT + mean_rows |ln(TPOT_pred / TPOT_meas)|
      + PRIOR * sum_multipliers ln(m)^2

within rows.BOUNDS (physically plausible ranges, so a fit cannot hide a structural error); the GPU time per
kernel enters the prior as a multiplier on the hardware YAML's value, ln(kernel_overhead_s / hw)^2. The fit never
sees the model: one set of factors per framework x hardware serves every model, which is what the planner needs
for a model it has no measurement of. The prior keeps factors the rows do not constrain (e.g. gemm when all
rows are decode-bound) at the hardware's own values. Without it on the per-kernel cost, a pair whose other models
are bandwidth-bound let it drift when one model was held out (trtllm x h200 without gpt-oss-120b: 2.0 us against
6.0 us with it, and the held-out TPOT came out 25-45% low); with it, leave-one-model-out TPOT median 14.0% ->
13.5%, p90 42.3% -> 38.0%, in-sample 8.6% -> 10.0% (benchmarks/accuracy.py). The global fit puts no prior on
grouped_gemm and dequant_gemm (the pooled rows determine them; their bounds 0.1..1 keep them physical; a fit
without a weight-only row leaves dequant_gemm at its neutral 1). Pairs with fewer rows get the
framework's fit pooled over all its rows (the multipliers are relative to each hardware's own factors, so they
carry over).

The optimiser is a bounded coordinate search (no SciPy dependency): each factor in turn is scanned on a grid
over its range and the best value kept; the grid then narrows around the optimum. It is deterministic.

Output: solver/frameworks/fitted/factors.yaml, {factors: {framework: {hardware: {factor: value}}}}, read by
FrameworkProfile.efficiency_for (multipliers multiply the profile's own; *_s keys are absolute seconds). Every
fitted pair carries the global factors too, and so does a pair the file does not list of a framework and vendor
it fitted; a framework or vendor the fit never saw carries grouped_gemm and dequant_gemm alone
(specs/fitted.CARRIED).
"""
from __future__ import annotations

import hashlib
import math
from collections import defaultdict
from pathlib import Path
from typing import Callable, Mapping, Sequence

import numpy as np

from solver.calibrate.rows import BOUNDS, FRAMEWORK_PARAMS, GLOBAL_PARAMS, NEUTRAL, PARAMS, Prepared, predict


def short_model(name: str) -> str:
    return name.split("/")[-1]


MIN_ROWS = 6  # fewer rows than this in a (framework, hardware) group: no fit, the defaults stand
W_TTFT = 1.0  # weight of the TTFT term against TPOT's
PRIOR = 1.0  # ridge on ln(multiplier): a 0.7x or 1.4x factor costs 0.12, about a 12% error on every row
SWEEPS = 4
GRID = 9


def loss(rows: Sequence[Prepared], params: Mapping[str, float], predict_fn=predict) -> float:
    """Mean |ln(predicted / measured)| of TTFT (x W_TTFT) and TPOT, plus the ridge on ln(multiplier);
    `predict_fn(row, params)` -> (TTFT, TPOT) (accuracy_rows.predict, or the disaggregated one)."""
    lt = ls = 0.0
    for p in rows:
        t, s = predict_fn(p, params)
        lt += abs(math.log(t / p.ttft_s))
        ls += abs(math.log(s / p.tpot_s))
    n = len(rows)
    prior = sum(math.log(params[k]) ** 2 for k in PARAMS if not k.endswith("_s"))
    if "kernel_overhead_s" in params:  # a multiplier on the hardware YAML's per-kernel cost, ridged the same way
        prior += math.log(params["kernel_overhead_s"] / hardware_kernel_s(rows)) ** 2
    return W_TTFT * lt / n + ls / n + PRIOR * prior


def hardware_kernel_s(rows: Sequence[Prepared]) -> float:
    """The per-kernel cost the rows' hardware YAMLs cite (the median over a pooled fit's devices): the value an
    unfitted estimate uses, which the prior pulls an unconstrained kernel_overhead_s back to."""
    return float(np.median([p.case.hw.efficiency.kernel_overhead_s for p in rows]))


def _grid(lo: float, hi: float, log: bool) -> np.ndarray:
    if log:
        return np.exp(np.linspace(math.log(lo), math.log(hi), GRID))
    return np.linspace(lo, hi, GRID)


def coordinate_search(objective, start: Mapping[str, float], params: Sequence[str]) -> dict[str, float]:
    """The bounded coordinate search every fit here uses: SWEEPS passes over `params`, each trying GRID values
    of one factor (log-spaced for multipliers, linear for seconds) inside its current range, then narrowing
    every range to a third of its width around the best point, inside BOUNDS. `objective(factors)` -> loss."""
    best = dict(start)
    best_loss = objective(best)
    span = {k: BOUNDS[k] for k in params}
    for _ in range(SWEEPS):
        for k in params:
            lo, hi = span[k]
            log = not k.endswith("_s")
            for v in _grid(lo, hi, log):
                trial = {**best, k: float(v)}
                value = objective(trial)
                if value < best_loss - 1e-12:
                    best, best_loss = trial, value
        # narrow every range around the current optimum (a third of its width), inside the bounds
        for k in params:
            lo, hi = span[k]
            b_lo, b_hi = BOUNDS[k]
            if k.endswith("_s"):
                w = (hi - lo) / 3
                span[k] = (max(b_lo, best[k] - w / 2), min(b_hi, best[k] + w / 2))
            else:
                w = (math.log(hi) - math.log(lo)) / 3
                span[k] = (max(b_lo, best[k] * math.exp(-w / 2)), min(b_hi, best[k] * math.exp(w / 2)))
    return best


def fit_group(rows: Sequence[Prepared], params: Sequence[str] = PARAMS,
              fixed: Mapping[str, float] | None = None) -> dict[str, float] | None:
    """Factors for one (framework, hardware) group, or None when it has fewer than MIN_ROWS rows. `fixed`
    factors (the global fit's) are held at their values and not returned."""
    if len(rows) < MIN_ROWS:
        return None
    # request_overhead_s has no neutral value (the estimator's default for unfitted pairs is computed from this
    # fit's output), so its search starts mid-range, not at that default: the fit does not depend on itself
    start = {**NEUTRAL, "request_overhead_s": sum(BOUNDS["request_overhead_s"]) / 2, **(fixed or {})}
    best = coordinate_search(lambda factors: loss(rows, factors), start, params)
    return {k: rounded(k, best[k]) for k in params}


def rounded(key: str, value: float) -> float:
    """Multipliers to 4 decimals; seconds to 4 significant digits (seq_layer_s is ~1e-6 s)."""
    return round(value, 4) if not key.endswith("_s") else float(f"{value:.4g}")


def fit_global(rows: Sequence[Prepared]) -> dict[str, float] | None:
    """The once-for-all factors (GLOBAL_PARAMS): one pooled fit over `rows` (every framework and hardware)
    together with pooled PARAMS, of which only the global ones are kept."""
    res = fit_group(rows, (*GLOBAL_PARAMS, *FRAMEWORK_PARAMS, *PARAMS))
    return None if res is None else {k: res[k] for k in GLOBAL_PARAMS}


def fit_framework(rows: Sequence[Prepared], fixed: Mapping[str, float] | None = None) -> dict[str, float] | None:
    """The per-framework factors (FRAMEWORK_PARAMS): one fit over all of one framework's `rows` (every hardware)
    together with pooled PARAMS, of which only the per-framework ones are kept; `fixed` the global ones."""
    res = fit_group(rows, (*FRAMEWORK_PARAMS, *PARAMS), fixed=fixed)
    return None if res is None else {k: res[k] for k in FRAMEWORK_PARAMS}


def fit_all(prepared: Sequence[Prepared], log: Callable[[str], None] = print
            ) -> tuple[dict[str, dict[str, dict[str, float]]], list[str], dict[str, float]]:
    """(factors per framework and hardware, the pairs filled from the framework's pooled fit, the global
    factors every pair shares; each pair also carries its framework's FRAMEWORK_PARAMS). `log` takes each line
    of the fit's report."""
    shared = fit_global(prepared) or {}
    log(f"  global over {len(prepared)} rows: {shared}")
    groups: dict[tuple[str, str], list[Prepared]] = defaultdict(list)
    by_fw: dict[str, list[Prepared]] = defaultdict(list)
    for p in prepared:
        groups[(p.framework, p.hardware)].append(p)
        by_fw[p.framework].append(p)
    per_fw = {fw: {**shared, **(fit_framework(rows, fixed=shared) or {})} for fw, rows in by_fw.items()}
    for fw, values in sorted(per_fw.items()):
        log(f"  {fw:>7} over {len(by_fw[fw])} rows, every hardware: "
              f"{ {k: values[k] for k in FRAMEWORK_PARAMS if k in values} }")
    pooled = {fw: fit_group(rows, fixed=per_fw[fw]) for fw, rows in by_fw.items()}
    out: dict[str, dict[str, dict[str, float]]] = {}
    filled = []
    for (fw, hw), rows in sorted(groups.items()):
        shared_fw = per_fw[fw]
        res = fit_group(rows, fixed=shared_fw)
        models = ", ".join(sorted({short_model(p.model) for p in rows}))
        how = "fitted"
        if res is None:
            res, how = pooled.get(fw), f"below {MIN_ROWS} rows: the pooled {fw} fit (all hardware)"
            if res is None:
                log(f"  {fw:>7} x {hw:<9} {len(rows):>3} rows: not fitted ({models})")
                continue
            filled.append(f"{fw} x {hw}")
        before, after = loss(rows, dict(NEUTRAL)), loss(rows, {**shared_fw, **res})
        log(f"  {fw:>7} x {hw:<9} {len(rows):>3} rows: loss {before:.3f} -> {after:.3f}  {res}  ({models}; {how})")
        out.setdefault(fw, {})[hw] = {**shared_fw, **res}
    return out, filled, shared


def default_request_overhead(factors: Mapping[str, Mapping[str, Mapping[str, float]]],
                             filled: Sequence[str] = ()) -> float | None:
    """The fixed TTFT cost a (framework, hardware) pair without a fit is priced with
    (workload.DEFAULT_REQUEST_OVERHEAD_S): the median of request_overhead_s over the pairs fitted on their own
    rows. A pair `filled` from its framework's pooled fit repeats that fit's value and is left out: counted, the
    pooled value weighs as one more pair (on the shipped fit it moves the median from 0.049 to 0.10 s, and held out by
    device the median counted that way gives TTFT median 35.9% against 32.1%; benchmarks/README.md, "Stop 29")."""
    values = [v["request_overhead_s"] for fw, hws in factors.items() for hw, v in hws.items()
              if f"{fw} x {hw}" not in filled]
    return float(np.median(values)) if values else None


def engine_factors(factors: Mapping[str, Mapping[str, Mapping[str, float]]]) -> dict[str, dict[str, float]]:
    """Each framework's FRAMEWORK_PARAMS (every pair of a framework carries the same values): what its pairs
    without a fit carry besides the global factors (factors.yaml's `engines` block)."""
    return {fw: {k: next(iter(hw.values()))[k] for k in FRAMEWORK_PARAMS} for fw, hw in factors.items() if hw}


def csv_digest(csv: Path) -> str:
    """The CSV's identity in the header: its content hash, so that a refit of the same rows is byte-identical
    (a run date would change the file every day with no figure changed)."""
    return hashlib.sha256(csv.read_bytes()).hexdigest()[:16]


def render_yaml(factors: dict[str, dict[str, dict[str, float]]], csv: Path, n_rows: int,
                filled: Sequence[str] = (), shared: Mapping[str, float] | None = None,
                vendors: Sequence[str] = ()) -> str:
    """factors.yaml's text: a function of the fit and the CSV's content only."""
    import yaml

    header = [
        "# Fitted efficiency factors per (framework, hardware). GENERATED: do not edit by hand.",
        f"# Produced by benchmarks/fit_efficiency.py from {csv.name} (sha256 {csv_digest(csv)}...)",
        f"# ({n_rows} evaluable rows; public ai-dynamo/aiconfigurator silicon_sample.csv, Apache-2.0).",
        "# Rerun: python benchmarks/fit_efficiency.py   (then python benchmarks/accuracy.py to check).",
        "# Multipliers (gemm, hbm) scale the hardware YAML's achieved fractions and the framework",
        "# profile's own multipliers; keys ending in _s are absolute seconds (kernel_overhead_s per kernel launched,",
        "# request_overhead_s per request on the TTFT path, seq_layer_s per running sequence per layer run,",
        "# allreduce_latency_s per custom all-reduce). Bounds: "
        + ", ".join(f"{k} {lo:g}..{hi:g}" for k, (lo, hi) in BOUNDS.items()) + ".",
        f"# Pairs with fewer than {MIN_ROWS} rows get the framework's pooled fit over all its rows (relative to each",
        "# hardware's own factors): " + (", ".join(filled) or "none") + ". No per-model or per-row factors.",
        "# grouped_gemm (the routed-expert grouped GEMM's FLOP/s as a fraction of the dense GEMM's),",
        "# dequant_gemm (a weight-only W4A16 GEMM's, experts included, as a fraction of the dense 16-bit GEMM's) and",
        "# allreduce_latency_s are fitted once over all rows, every framework and hardware pooled"
        + "".join(f", {k} = {v:g}" for k, v in (shared or {}).items()) + "; each fitted pair carries it, and",
        "# `global` holds them per vendor of the rows fitted, for that vendor's pairs without a fit, and",
        "# `engines` each framework's own factors below, for the same pairs (specs/fitted.fitted_global).",
        "# " + ", ".join(FRAMEWORK_PARAMS) + " fitted once per framework over all its rows, every hardware pooled (the"
        " engine's own kernels): " + "; ".join(
            f"{fw} " + ", ".join(f"{k} = {next(iter(hw.values()))[k]:g}" for k in FRAMEWORK_PARAMS)
            for fw, hw in sorted(factors.items()) if hw) + ".",
    ]
    engines = {fw: {v: dict(params) for v in vendors} for fw, params in engine_factors(factors).items()}
    body = yaml.safe_dump({"global": {v: dict(shared or {}) for v in vendors}, "engines": engines,
                           "factors": factors}, sort_keys=True, default_flow_style=False)
    return "\n".join(header) + "\n" + body
