"""Fit the disaggregated-serving factors per (framework, hardware) and write solver/frameworks/fitted/disagg.yaml.

    python benchmarks/fit_disagg.py [--csv PATH] [--dry-run] [--write-candidate]
    (then: python benchmarks/accuracy_disagg.py)

What the aggregated fit (fitted/factors.yaml) cannot carry because the pools are split would be fitted here. It
ships none (SHIPPED_FACTORS is empty, the file is written with no factor): the prefill wait is the closed loop's
(estimate.disagg module docstring: the first of the benchmark's k waves is a burst, the later ones queue as random
arrivals at the prefill ranks). The candidate that the previous model fitted,

    burst_share  [-] share of requests that reach the prefill pool in a burst (the loop's: 1 / k),

is still fitted here and printed (`--write-candidate` writes it instead): on the complete rows it lowers the
in-sample TTFT error and raises the leave-one-system-out one (accuracy_disagg.py (c2) vs (c3); benchmarks/README.md,
"Disaggregated prefill/decode"), so it is not shipped.

A factor is fitted on the complete rows only (both worker counts and batches given: a row read by the blank-cell
convention has a guessed worker count, and its queueing decides its TTFT), minimising the mean
|ln(TTFT_pred / TTFT_meas)| over a grid, the step factors held at the shipped ones (aggregated fit). A pair with
fewer than MIN_ROWS complete rows gets its framework's fit over all its complete rows (`_pooled`); a framework with
fewer than MIN_ROWS complete rows gets none. Never per model or row.

A fixed per-request hand-off cost (bootstrap, decode-side KV pre-allocation) was fitted beside the burst share
and dropped: the two traded off (0.12 s with phi 0.15 for TensorRT-LLM) and with it the leave-one-system-out TTFT
median was 47.8% against 35.7% with phi alone.
"""
from __future__ import annotations

import argparse
import datetime
import math
import sys
from collections import defaultdict
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from accuracy_rows import load_factors, load_rows  # noqa: E402
from accuracy_disagg import DEFAULT_CSV, Prepared, predict, prepare_rows, shipped_params  # noqa: E402
from fit_efficiency import MIN_ROWS  # noqa: E402

from solver.specs.disagg_fitted import disagg_fitted_path  # noqa: E402

BURST_GRID = np.linspace(0.0, 1.0, 41)
# the factors the shipped file carries: none (module docstring); CANDIDATE_FACTORS are fitted and printed
SHIPPED_FACTORS: tuple[str, ...] = ()
CANDIDATE_FACTORS: tuple[str, ...] = ("burst_share",)


def ttft_loss(rows: Sequence[Prepared], base: Mapping[int, Mapping[str, float]], phi: float) -> float:
    return sum(abs(math.log(predict(p, {**base[p.index], "burst_share": phi})[0] / p.ttft_s)) for p in rows) / len(rows)


def fit_pair(rows: Sequence[Prepared], fitted) -> dict[str, float] | None:
    """burst_share minimising the TTFT loss on `rows`; None below MIN_ROWS."""
    if len(rows) < MIN_ROWS:
        return None
    base = {p.index: shipped_params(p, fitted) for p in rows}
    best = min((ttft_loss(rows, base, phi), phi) for phi in BURST_GRID)
    return {"burst_share": round(float(best[1]), 3), "rows": len(rows)}


def fit_all(prepared: Sequence[Prepared], fitted, factors: Sequence[str] = SHIPPED_FACTORS
            ) -> dict[str, dict[str, dict[str, float]]]:
    """framework -> hardware (or `_pooled`) -> `factors`, from the complete rows of `prepared` ({} when
    `factors` is empty: nothing to fit)."""
    if "burst_share" not in factors:
        return {}
    by_pair: dict[tuple[str, str], list[Prepared]] = defaultdict(list)
    by_fw: dict[str, list[Prepared]] = defaultdict(list)
    for p in prepared:
        if p.complete:
            by_pair[(p.framework, p.hardware)].append(p)
            by_fw[p.framework].append(p)
    out: dict[str, dict[str, dict[str, float]]] = {}
    for fw, rows in sorted(by_fw.items()):
        pooled = fit_pair(rows, fitted)
        if pooled is not None:
            out.setdefault(fw, {})["_pooled"] = pooled
    for (fw, hw), rows in sorted(by_pair.items()):
        res = fit_pair(rows, fitted)
        if res is not None:
            out.setdefault(fw, {})[hw] = res
    return out


def write(fit: Mapping, path: Path, csv: Path, n_complete: int) -> None:
    header = (f"# Disaggregated-serving factors per (framework, hardware). GENERATED: do not edit by hand.\n"
              f"# Produced by benchmarks/fit_disagg.py on {datetime.date.today()} from {csv.name} ({n_complete} complete\n"
              f"# rows: worker counts and batches given). Empty when no factor is shipped: the prefill wait is the\n"
              f"# closed loop's (estimate/disagg.py). burst_share (written by --write-candidate only): share of\n"
              f"# requests reaching the prefill pool in a burst. `_pooled`: the framework's fit over all its complete\n"
              f"# rows, for pairs with fewer than {MIN_ROWS} (`rows` = rows fitted).\n"
              f"# Rerun: python benchmarks/fit_disagg.py && python benchmarks/accuracy_disagg.py\n")
    path.write_text(header + yaml.safe_dump({"factors": fit}, sort_keys=True))


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--csv", type=Path, default=DEFAULT_CSV)
    ap.add_argument("--dry-run", action="store_true", help="print the fit, write nothing")
    ap.add_argument("--write-candidate", action="store_true",
                    help="write the candidate burst share instead of the shipped (empty) factor set")
    args = ap.parse_args(argv)
    prepared, _ = prepare_rows(load_rows(args.csv))
    candidate = fit_all(prepared, load_factors(), CANDIDATE_FACTORS)
    print("candidate (not shipped unless --write-candidate):")
    for fw, pairs in candidate.items():
        for hw, v in pairs.items():
            print(f"  {fw:>7} x {hw:<9} burst_share {v['burst_share']:.3f}  ({v['rows']} rows)")
    fit = candidate if args.write_candidate else fit_all(prepared, load_factors())
    print(f"shipped factors: {', '.join(SHIPPED_FACTORS) or 'none'}")
    if not args.dry_run:
        path = disagg_fitted_path()
        write(fit, path, args.csv, sum(p.complete for p in prepared))
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
