"""Cold start of the command line: the median wall time of 5 fresh processes for `shardplan --help`,
`shardplan inspect deepseek-v3.2` and a cold `solve` (the README example at --cards 128).

Run: python benchmarks/cli_start.py [--repeats 5] [--root CHECKOUT]   (--root times another checkout's code)
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


def cold(root: Path, args: list[str], repeats: int) -> float:
    env = {**os.environ, "PYTHONPATH": str(root)}
    cmd = [sys.executable, "-c", "from solver.cli.main import main; main(prog_name='shardplan')", *args]
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        subprocess.run(cmd, env=env, cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent)
    args = ap.parse_args()
    print(f"{'command':<24} {'median_s':>9}  (of {args.repeats} fresh processes, {args.root})")
    for name, argv in CASES.items():
        print(f"{name:<24} {cold(args.root, argv, args.repeats):>9.2f}")


if __name__ == "__main__":
    main()
