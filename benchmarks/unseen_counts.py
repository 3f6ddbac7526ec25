"""Parameter count (or the refusal) of every config under tests/data/configs_unseen/, one line each, for diffing
two checkouts: run it with PYTHONPATH pointing at each (the configs are read from this file's checkout unless
--data names another folder).

Run: PYTHONPATH=<checkout> python benchmarks/unseen_counts.py [--data DIR]
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from solver.errors import InputError
from solver.estimate.params import count_params
from solver.specs.config.read import parse_model_config

DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "configs_unseen"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=str(DATA))
    root = Path(ap.parse_args().data)
    for path in sorted(root.rglob("*.json")):
        name = str(path.relative_to(root))[:-5]
        try:
            total = f"{count_params(parse_model_config(json.loads(path.read_text()), path.stem)).total:,}"
        except InputError as e:
            total = f"refused: {str(e).split(': ', 1)[-1][:120]}"
        print(f"{name}\t{total}")


if __name__ == "__main__":
    main()
