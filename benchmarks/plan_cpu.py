"""CPU and wall seconds of one plan of DeepSeek-V3.2 on atlas_a3 (int8, ISL 4096 / OSL 256, balanced) in a warm
process: each timed plan starts after `solve.clear_cache()` (no reused tables, fronts or rule tables; the
estimator's own memos persist across plans in the process, as in a sweep). Prints medians per world size, and
the first plan apart from the others: it costs the ops that the later plans find in the estimator's memos.

Run: python benchmarks/plan_cpu.py [--framework generic] [--worlds 16,128] [--repeats 3]
Run it in two checkouts alternately to compare them (benchmarks/README.md, "Planner speed").
"""
from __future__ import annotations

import argparse
import statistics

from plan_case import plan_once, warm_up


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--framework", default="generic")
    ap.add_argument("--worlds", default="16,128")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    warm_up(args.framework)
    for w in (int(x) for x in args.worlds.split(",")):
        cpu, wall = [], []
        for _ in range(args.repeats):
            c, t, _ = plan_once(w, args.framework)
            cpu.append(c)
            wall.append(t)
        # the first plan of a world size costs its ops; the later ones find them in the estimator's memos
        rest = cpu[1:] or cpu
        print(f"{args.framework} W={w} cpu_s {statistics.median(cpu):.2f} wall_s {statistics.median(wall):.2f} "
              f"(median of {args.repeats}; first {cpu[0]:.2f}, the others' median {statistics.median(rest):.2f})",
              flush=True)


if __name__ == "__main__":
    main()
