"""Cold start of the command line: the median wall time of 5 fresh processes for `shardplan --help`,
`shardplan inspect deepseek-v3.2` and a cold `solve` (the README example at --cards 128).

Run: python benchmarks/cli_start.py [--repeats 5] [--root CHECKOUT ...]
(--root times another checkout's code; several roots are timed interleaved, run by run, so that a before/after
comparison on a shared machine sees the same load)
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

SOLVE = ["solve", "deepseek-v3.2", "--hardware", "atlas_a3", "--cards", "128", "--scenario", "throughput",
         "--framework", "cann-recipes", "--weight-dtype", "int8", "--isl", "4096", "--osl", "256"]
CASES = {"--help": ["--help"], "inspect deepseek-v3.2": ["inspect", "deepseek-v3.2"], "solve W=128 (cold)": SOLVE}


def once(root: Path, args: list[str]) -> float:
    env = {**os.environ, "PYTHONPATH": str(root)}
    cmd = [sys.executable, "-c", "from solver.cli.main import main; main(prog_name='shardplan')", *args]
    t0 = time.perf_counter()
    subprocess.run(cmd, env=env, cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--root", type=Path, action="append", default=None)
    args = ap.parse_args()
    roots = args.root or [Path(__file__).resolve().parent.parent]
    print(f"median_s of {args.repeats} fresh processes")
    print(f"{'command':<24}" + "".join(f" {str(r):>22}" for r in roots))
    for name, argv in CASES.items():
        times: dict[Path, list[float]] = {r: [] for r in roots}
        for _ in range(args.repeats):
            for r in roots:
                times[r].append(once(r, argv))
        print(f"{name:<24}" + "".join(f" {statistics.median(times[r]):>22.2f}" for r in roots))


if __name__ == "__main__":
    main()
