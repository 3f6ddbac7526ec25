"""Every catalog model: published total / active vs counted, and the layer pattern (Markdown table).

    python benchmarks/model_catalog_table.py            # the table in benchmarks/README.md
    python benchmarks/model_catalog_table.py --stacks   # one more line per model: the compact layer stack

Published figures and what each counts come from models/published.yaml (sources in
facts/model_configs/SOURCES.md and tests/test_params.py); counted figures from estimate/params.py.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from solver.estimate.params import count_params  # noqa: E402
from solver.specs.model_catalog import load_model, published_counts  # noqa: E402


def _pattern(spec) -> str:
    """Layer counts per mixer type and FFN type: `36 GatedDeltaNet + 12 GQA; 48 MoE`."""
    mixers: dict[str, int] = {}
    ffns: dict[str, int] = {}
    for layer in spec.layers:
        if layer.mixer is not None:
            mixers[layer.mixer.kind] = mixers.get(layer.mixer.kind, 0) + 1
        for ffn in layer.ffns:
            ffns[ffn.kind] = ffns.get(ffn.kind, 0) + 1
    enc = f"; + {', '.join(e.name for e in spec.encoders)}" if spec.encoders else ""
    mtp = f"; MTP {len(spec.mtp_modules)}" if spec.mtp_modules else ""
    return (" + ".join(f"{n} {k}" for k, n in mixers.items()) + "; " + " + ".join(f"{n} {k}" for k, n in ffns.items())
            + enc + mtp)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--stacks", action="store_true", help="print each model's compact stack too")
    args = ap.parse_args()
    print("| model | published total (B) | counts | counted (B) | diff | published active (B) | active basis "
          "| counted active (B) | status | layer pattern |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for alias, row in published_counts().items():
        spec = load_model(alias)
        rep = count_params(spec)
        counted = rep.counted(row["counts"]) / 1e9
        diff = 100 * (counted / row["total"] - 1)
        rounding = f" (card rounds to {row['rounding']:g}B)" if row["rounding"] else ""
        act = row.get("active")
        act_counted = f"{rep.active_counted(row['active_counts']) / 1e9:.2f}" if act else ""
        print(f"| {alias} | {row['total']:g}{rounding} | {row['counts']} | {counted:.2f} | {diff:+.2f}% | "
              f"{act if act else ''} | {row.get('active_counts', '') if act else ''} | {act_counted} | "
              f"{row['status']} | {_pattern(spec)} |")
        if args.stacks:
            print(f"|   | stack: {spec.stack_label()} |||||||||")
    print()
    for alias, row in published_counts().items():
        if row.get("note"):
            print(f"- {alias}: {row['note']}")


if __name__ == "__main__":
    main()
