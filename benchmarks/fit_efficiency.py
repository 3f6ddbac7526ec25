"""Fit a few efficiency factors per (framework, hardware) from the calibration CSV.

    python benchmarks/fit_efficiency.py [--csv PATH] [--out PATH] [--dry-run | --check]

`--check` refits and compares with the shipped file byte for byte (exit 1 and a diff when they differ): the file
is a function of the CSV and this code alone (its header names the CSV by content hash, not by the day it ran).

The fit (what is fitted over which rows, the loss, its prior and the optimiser) has its one home in the package,
solver/calibrate/factor_fit.py, which a user's `shardplan calibrate --from-csv ROWS.csv --fit OUT.yaml` runs too;
this script runs it over the shipped calibration CSV and writes solver/frameworks/fitted/factors.yaml.
"""
from __future__ import annotations

import argparse
import difflib
import sys
import time
from pathlib import Path
from typing import Mapping, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parent))
from accuracy_rows import DEFAULT_CSV, FACTORS_YAML, load_rows, prepare_all  # noqa: E402

from solver.calibrate.factor_fit import (  # noqa: E402,F401 (the benchmark scripts import these from here)
    GRID, MIN_ROWS, PRIOR, SWEEPS, W_TTFT, coordinate_search, csv_digest, default_request_overhead, engine_factors,
    fit_all, fit_framework, fit_global, fit_group, hardware_kernel_s, loss, render_yaml,
)


def write_yaml(factors: dict[str, dict[str, dict[str, float]]], path: Path, csv: Path, n_rows: int,
               filled: Sequence[str] = (), shared: Mapping[str, float] | None = None,
               vendors: Sequence[str] = ()) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_yaml(factors, csv, n_rows, filled, shared, vendors))


def check_shipped(text: str, path: Path) -> int:
    """0 when `path` holds `text` byte for byte, else 1 with a unified diff on stdout."""
    shipped = path.read_text() if path.is_file() else ""
    if shipped == text:
        print(f"{path}: reproduced byte for byte")
        return 0
    sys.stdout.writelines(difflib.unified_diff(shipped.splitlines(keepends=True), text.splitlines(keepends=True),
                                               str(path), "refit"))
    print(f"{path}: differs from the refit (diff above); rerun without --check to rewrite it")
    return 1


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--csv", type=Path, default=DEFAULT_CSV)
    ap.add_argument("--out", type=Path, default=FACTORS_YAML)
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--dry-run", action="store_true", help="print the fit, write nothing")
    mode.add_argument("--check", action="store_true",
                      help="compare the refit with --out byte for byte, write nothing (exit 1 when they differ)")
    args = ap.parse_args(argv)
    if not args.csv.is_file():  # the default sits beside the checkout (../shared/facts), absent elsewhere
        print(f"error: --csv: {args.csv}: no such file; pass --csv PATH to measured_agg_calibration.csv",
              file=sys.stderr)
        return 2
    t0 = time.time()
    prepared, skipped = prepare_all(load_rows(args.csv))
    print(f"fitting on {len(prepared)} rows ({len(skipped)} skipped: they raise InputError)")
    factors, filled, shared = fit_all(prepared)
    o = default_request_overhead(factors, filled)
    if o is not None:
        print(f"median request_overhead_s of the pairs fitted on their own rows: {o:.4g}"
              " (workload.DEFAULT_REQUEST_OVERHEAD_S uses it for unfitted pairs)")
    vendors = sorted({p.case.hw.vendor for p in prepared if p.case.hw.vendor})
    status = 0
    if args.check:
        status = check_shipped(render_yaml(factors, args.csv, len(prepared), filled, shared, vendors), args.out)
    elif not args.dry_run:
        write_yaml(factors, args.out, args.csv, len(prepared), filled, shared, vendors)
        print(f"wrote {args.out}")
    print(f"runtime {time.time() - t0:.1f} s")
    return status


if __name__ == "__main__":
    raise SystemExit(main())
