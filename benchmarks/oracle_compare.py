"""The reader's parameter count beside transformers' own (benchmarks/transformers_oracle.py's TSV) and the hand count
where a round test holds one (HAND in tests/test_unseen_configs*.py), one row per config file.

Columns: file | reader total (or its refusal) | reader MTP | oracle parameters plus its router-bias buffers (or the
error transformers raised) | reader - oracle | hand count (= when it equals the reader's) | class.

Run (project venv; the TSV comes from the torch venv):
  /tmp/tfvenv/bin/python benchmarks/transformers_oracle.py > /tmp/oracle.tsv
  PYTHONPATH=. python benchmarks/oracle_compare.py /tmp/oracle.tsv [--only-diff]
"""
from __future__ import annotations

import argparse
import csv
import importlib
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from solver.errors import InputError  # noqa: E402
from solver.estimate.params import count_params  # noqa: E402
from solver.specs.config.read import parse_model_config  # noqa: E402


# Persistent buffers a checkpoint stores as weights and the reader counts as parameters: the router's per-expert
# score-correction bias (DeepSeek-V3's e_score_correction_bias; expert_bias, balancing_biases in other families).
# transformers registers them as buffers because no gradient flows into them.
ROUTER_BIAS_BUFFERS = ("e_score_correction_bias", "expert_bias", "balancing_biases")


def oracle_stored(row: dict[str, str]) -> int:
    """The oracle's count on the reader's basis: its parameters plus the router-bias buffers."""
    names = json.loads(row["buffer_names"]) if row["buffer_names"] else {}
    return int(row["parameters"]) + sum(n for k, n in names.items() if k in ROUTER_BIAS_BUFFERS)


def read_oracle(path: Path) -> dict[str, dict[str, str]]:
    lines = [ln for ln in path.read_text().splitlines() if not ln.startswith("#")]
    return {row["file"]: row for row in csv.DictReader(lines, delimiter="\t")}


def hand_counts() -> dict[str, int]:
    """file (relative to the checkout) -> the hand count a round test holds for it."""
    out: dict[str, int] = {}
    for test in sorted((ROOT / "tests").glob("test_unseen_configs*.py")):
        mod = importlib.import_module(test.stem)
        data: Path = getattr(mod, "DATA")
        for name, total in getattr(mod, "HAND", {}).items():
            out[str((data / f"{name}.json").relative_to(ROOT))] = total
    return out


def reader(path: Path) -> tuple[int | None, int, str]:
    try:
        rep = count_params(parse_model_config(json.loads(path.read_text()), path.stem))
    except InputError as e:
        return None, 0, f"refused: {str(e).split(': ', 1)[-1][:100]}"
    return rep.total, rep.mtp_params, ""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("tsv", type=Path)
    ap.add_argument("--only-diff", action="store_true", help="rows where reader and oracle both count and differ")
    args = ap.parse_args()
    oracle = read_oracle(args.tsv)
    hand = hand_counts()
    print("| file | reader | reader MTP | oracle | reader - oracle | hand | oracle class |")
    print("|---|---|---|---|---|---|---|")
    for rel, row in oracle.items():
        total, mtp, refused = reader(ROOT / rel)
        o = oracle_stored(row) if row["parameters"] else None
        diff = f"{total - o:+,}" if total is not None and o is not None else ""
        if args.only_diff and (not diff or diff == "+0"):
            continue
        h = hand.get(rel)
        hand_cell = "" if h is None else ("=" if h == total else f"{h:,}")
        print(f"| {rel} | {refused or f'{total:,}'} | {mtp:,} | {row['error'][:100] or f'{o:,}'} | {diff} "
              f"| {hand_cell} | {row['model_class']} |")


if __name__ == "__main__":
    main()
