"""What the planner's step shares cost on their own: record the `shares` calls of one plan (tables' way into
group_cost, the estimator's sums beneath), then replay them with the estimator's caches cleared (every block
costed again, as in a plan) and with them warm (the bookkeeping alone). Prints CPU seconds, median and minimum
of the repeats, and whether every replayed answer equals (==) the plan's.

    python benchmarks/sums_replay.py [--model deepseek-v3.2] [--hardware atlas_a3] [--framework generic]
                                     [--world 128] [--repeats 7]

Run it in two checkouts back to back to compare them (it reads only what both have: the `shares` that
`Tables._share` calls, in the module that defines it, and `group_cost.shares`; the caches a checkout lacks are
skipped). Before branch tables16 it replayed the `plan_sums` calls beneath the shares (21,371 at generic
W=128), which the shares now skip where their kit already added the same sums up."""
from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time

from solver.api import run_solve
from solver.estimate import compute, step_parts, step_sums
from solver.plan import group_cost
from solver.plan.tables import Tables
from solver.specs.scenario import Scenario

# the estimator's caches the share path fills (those a checkout lacks are skipped)
_CACHES = ((step_sums, "_SUMS_CACHE"), (step_sums, "_KITS"), (step_parts, "_BLOCK_CACHE"),
           (step_parts, "_DECODE_LAYOUTS"), (step_parts, "_DP_LAYOUTS"), (step_parts, "_DECODE_WORKS"),
           (compute, "_COLLECTIVES"), (group_cost, "_OWNED"))


def _clear() -> None:
    for mod, name in _CACHES:
        getattr(mod, name, {}).clear()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="deepseek-v3.2")
    ap.add_argument("--hardware", default="atlas_a3")
    ap.add_argument("--framework", default="generic")
    ap.add_argument("--world", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=7)
    a = ap.parse_args()
    calls = []
    home = sys.modules[Tables._share.__module__]  # plan.table_inputs (plan.tables before branch split30)
    record = home.shares

    def capture(*args, **kwargs):
        out = record(*args, **kwargs)
        calls.append((args, kwargs, out))
        return out

    home.shares = capture
    run_solve(a.model, a.hardware, a.world, Scenario(kind="balanced", isl=4096, osl=256), a.framework,
              "int8" if a.hardware.startswith("atlas") else None, explain_binding=False)
    home.shares = record
    gc.disable()  # as the planner runs them
    _clear()
    equal = all(group_cost.shares(*args, **kwargs) == out for args, kwargs, out in calls)

    def timed(cold: bool) -> list[float]:
        out = []
        for _ in range(a.repeats):
            if cold:
                _clear()
            t = time.process_time()
            for args, kwargs, _ in calls:
                group_cost.shares(*args, **kwargs)
            out.append(time.process_time() - t)
        return out

    cold, warm = timed(True), timed(False)
    print(f"{a.model} {a.hardware} {a.framework} W={a.world}: {len(calls)} shares calls, answers equal: {equal}")
    print(f"caches cleared: median {statistics.median(cold):.3f} min {min(cold):.3f} CPU s; "
          f"warm: median {statistics.median(warm):.3f} min {min(warm):.3f} CPU s")


if __name__ == "__main__":
    main()
