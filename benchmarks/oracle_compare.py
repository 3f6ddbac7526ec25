"""The reader's parameter count beside transformers' own (benchmarks/transformers_oracle.py's TSV) and the hand count
where a round test holds one (HAND in tests/test_unseen_configs*.py), one row per config file.

Columns: file | reader total (or its refusal) | reader MTP | oracle parameters plus its router-bias buffers (or the
error transformers raised) | reader - oracle | hand count (= when it equals the reader's) | class.

Run (project venv; the TSV comes from the torch venv):
  /tmp/tfvenv/bin/python benchmarks/transformers_oracle.py > /tmp/oracle.tsv
  PYTHONPATH=. python benchmarks/oracle_compare.py /tmp/oracle.tsv [--only-diff] [--summary]
A TSV of written configs (benchmarks/transformers_defaults.py) names them by absolute path; `--config-dir DIR` reads
each file's name in DIR instead (the same configs moved, as tests/data/configs_defaults/). `--summary` ends with the
triage: agree / differ / reader refuses / transformers fails, and the refusals and failures by reason.
`--freeze DIR` copies the configs the reader counts to the oracle's figure, and those it refuses, into DIR with
DIR/oracle.tsv (config, oracle class, oracle count on the reader's basis, the reader's answer, the fields `--fill` set):
the test data of tests/test_transformers_defaults.py. A freeze merges: the rows already in DIR/oracle.tsv whose config
the TSV does not hold are kept. A config the reader counts to another figure is left out (listed in the README).
"""
from __future__ import annotations

import argparse
import csv
import importlib
import json
import shutil
import sys
from collections import Counter
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
    ap.add_argument("--config-dir", type=Path, help="read each TSV file's name in this folder")
    ap.add_argument("--summary", action="store_true", help="end with the triage counts")
    ap.add_argument("--freeze", type=Path, help="copy the agreeing and refused configs here, with oracle.tsv")
    args = ap.parse_args()
    frozen: list[str] = []
    oracle = read_oracle(args.tsv)
    hand = hand_counts()
    triage: Counter[str] = Counter()
    reasons: Counter[str] = Counter()
    print("| file | reader | reader MTP | oracle | reader - oracle | hand | oracle class |")
    print("|---|---|---|---|---|---|---|")
    for rel, row in oracle.items():
        path = args.config_dir / Path(rel).name if args.config_dir else ROOT / rel
        o = oracle_stored(row) if row["parameters"] else None
        if not path.is_file():  # a default config transformers could not build, or one not frozen
            total, mtp, refused = None, 0, "no file"
        else:
            total, mtp, refused = reader(path)
        diff = f"{total - o:+,}" if total is not None and o is not None else ""
        verdict = _triage(total, o) if path.is_file() or o is None else "no file"
        triage[verdict] += 1
        if args.freeze and verdict in ("agree", "reader refuses"):
            args.freeze.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, args.freeze / path.name)
            frozen.append("\t".join([path.stem, row["model_class"], "" if o is None else str(o),
                                     "refuses" if total is None else "counts", row.get("filled") or ""]))
        if o is None:
            reasons["transformers fails: " + _error_kind(row["error"])] += 1
        elif total is None and path.is_file():
            reasons["reader refuses: " + refused.removeprefix("refused: ").split(":", 1)[0]] += 1
        if args.only_diff and (not diff or diff == "+0"):
            continue
        h = hand.get(rel)
        hand_cell = "" if h is None else ("=" if h == total else f"{h:,}")
        print(f"| {rel} | {refused or f'{total:,}'} | {mtp:,} | {row['error'][:100] or f'{o:,}'} | {diff} "
              f"| {hand_cell} | {row['model_class']} |")
    if args.freeze:
        kept = _kept_rows(args.freeze / "oracle.tsv", {Path(rel).stem for rel in oracle})
        head = [f"# {args.tsv.name}: {_tsv_header(args.tsv)}",
                "# Made by: benchmarks/oracle_compare.py TSV --freeze DIR (oracle: transformers' parameters plus its "
                "router-bias buffers; empty where transformers fails; filled: the None sizes --fill set in the file). "
                "Rows of configs not in TSV are kept from the oracle.tsv already there.",
                "config\toracle_class\toracle\treader\tfilled"]
        (args.freeze / "oracle.tsv").write_text("\n".join(head + sorted(frozen + kept)) + "\n")
    if args.summary:
        print()
        print(", ".join(f"{n} {k}" for k, n in sorted(triage.items())) + f" ({sum(triage.values())} rows)")
        for reason, n in reasons.most_common():
            print(f"- {n} {reason}")


def _kept_rows(path: Path, rerun: set[str]) -> list[str]:
    """The rows of an earlier freeze whose config this TSV does not hold (kept, with their files): a freeze merges."""
    if not path.is_file():
        return []
    lines = [ln.split("\t") for ln in path.read_text().splitlines() if ln and not ln.startswith("#")][1:]
    return ["\t".join((cells + [""])[:5]) for cells in lines if cells[0] not in rerun]


def _tsv_header(path: Path) -> str:
    first = path.read_text().splitlines()[0]
    return first.removeprefix("# ") if first.startswith("#") else ""


def _error_kind(error: str) -> str:
    """'model: Cls: TypeError: ... | ...' -> 'model TypeError': the step that failed and the first class's exception."""
    parts = error.split(" | ")[0].split(": ")
    step = parts[0]
    kind = next((p for p in parts[1:] if p.endswith(("Error", "Exception", "Timeout"))), "")
    return f"{step} {kind}".strip()


def _triage(total: int | None, oracle: int | None) -> str:
    if oracle is None:
        return "transformers fails"
    if total is None:
        return "reader refuses"
    return "agree" if total == oracle else "differ"


if __name__ == "__main__":
    main()
