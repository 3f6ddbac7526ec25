"""Where one plan's branch and bound spends its time: the layouts at each stage of `cpsat.Planner.best` (the
planner's own `funnel` counts, over every question of the plan) and the wall seconds of the planner's stage
methods (inclusive: a method's time holds the methods it calls). DeepSeek-V3.2 on atlas_a3 (int8, ISL 4096 /
OSL 256, balanced), one warm process: a W=16 plan and one plan at each world size first, so the timed plan finds
the estimator's memos warm (as benchmarks/plan_cpu.py's later plans do), then `solve.clear_cache()`.

Run: python benchmarks/plan_funnel.py [--framework generic] [--worlds 128,1024]
"""
from __future__ import annotations

import argparse
import time
from collections import Counter

from solver.api import run_solve
from solver.plan import solve
from solver.plan.cpsat import Planner
from solver.plan.tables import Tables
from solver.specs.scenario import Scenario

# the stage methods timed: (class, method, what it does)
STAGES = [
    (Planner, "best", "one question (a concurrency's optimum, or a next pattern)"),
    (Planner, "_first_bound", "a layout's first bound (attention only, or its floor)"),
    (Planner, "_floor_drops", "a popped layout's bound on other layouts' tables"),
    (Tables, "fill_group", "a group's table beside a layout"),
    (Planner, "_bound", "a layout's bound over its groups' Pareto sums"),
    (Tables, "view", "a layout's view (attention costed; full: every group)"),
    (Planner, "_solve_view", "the CP-SAT dominance search inside one layout"),
    (Planner, "_seed", "a question's first incumbent"),
]
FUNNEL = ["first bounds", "popped", "dropped on floors", "dropped by the MoE bound", "dropped on floors after MoE",
          "dropped by the complete bound", "searched"]


def _timed(cls, name: str, seconds: Counter, calls: Counter) -> None:
    inner = getattr(cls, name)

    def wrapper(self, *args, **kwargs):
        t0 = time.perf_counter()
        try:
            return inner(self, *args, **kwargs)
        finally:
            seconds[name] += time.perf_counter() - t0
            calls[name] += 1

    setattr(cls, name, wrapper)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--framework", default="generic")
    ap.add_argument("--worlds", default="128,1024")
    args = ap.parse_args()
    sc = Scenario(kind="balanced", isl=4096, osl=256)
    worlds = [int(x) for x in args.worlds.split(",")]
    for w in [16, *worlds]:
        run_solve("deepseek-v3.2", "atlas_a3", w, sc, args.framework, "int8", explain_binding=False)
    seconds, calls = Counter(), Counter()
    for cls, name, _ in STAGES:
        _timed(cls, name, seconds, calls)
    for w in worlds:
        seconds.clear()
        calls.clear()
        solve.clear_cache()
        planners = []
        new = Planner.__init__

        def keep(self, *a, **k):
            new(self, *a, **k)
            planners.append(self)

        Planner.__init__ = keep
        t0 = time.perf_counter()
        run_solve("deepseek-v3.2", "atlas_a3", w, sc, args.framework, "int8", explain_binding=False)
        total = time.perf_counter() - t0
        Planner.__init__ = new
        funnel = sum((p.funnel for p in planners), Counter())
        solves = sum(p.solves for p in planners)
        print(f"{args.framework} W={w}: plan {total:.3f} s wall, {solves} CP-SAT solves")
        print("  layouts: " + ", ".join(f"{k} {funnel[k]:,}" for k in FUNNEL))
        for _, name, what in STAGES:
            n = calls[name]
            print(f"  {name:13s} {n:7,} calls {seconds[name]:7.3f} s {seconds[name] / max(n, 1) * 1e6:8.0f} us  {what}")


if __name__ == "__main__":
    main()
