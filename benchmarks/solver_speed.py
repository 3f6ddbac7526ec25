"""Median wall time of planning DeepSeek-V3.2 (all knobs, generic profile) at several world sizes, in a warm
process, for CP-SAT and (where it finishes in reasonable time) the exhaustive enumerator over the same tables.
Each timed plan starts without reused tables or fronts (solve.clear_cache); `other_kind_s` is the same
deployment planned for another scenario kind right after, which reuses them (as a sweep does).

Run: python benchmarks/solver_speed.py [--repeats 5] [--exhaustive-max-world 16]
"""
from __future__ import annotations

import argparse
import statistics
import time

from solver.api import run_solve
from solver.plan import solve
from solver.specs.scenario import Scenario

_clear = getattr(solve, "clear_cache", lambda: None)  # a checkout without the cache times the same way


def timed(fn, repeats: int, clear: bool = True) -> float:
    times = []
    for _ in range(repeats):
        if clear:
            _clear()
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--exhaustive-max-world", type=int, default=16)
    ap.add_argument("--worlds", default="16,128,1024")
    ap.add_argument("--framework", default="generic", help="generic (every knob) or an engine profile")
    args = ap.parse_args()
    sc = Scenario(kind="balanced", isl=4096, osl=256)
    fw = args.framework
    run_solve("deepseek-v3.2", "atlas_a3", 16, sc, fw, "int8", explain_binding=False)  # warm caches
    print(f"framework {fw}, DeepSeek-V3.2 on atlas_a3, int8, ISL 4096 / OSL 256, median of {args.repeats}")
    print(f"{'W':>6} {'cpsat_s':>9} {'cpsat+binding_s':>16} {'other_kind_s':>13} {'exhaustive_s':>13} {'ratio':>7}")
    for w in (int(x) for x in args.worlds.split(",")):
        def cp():
            return run_solve("deepseek-v3.2", "atlas_a3", w, sc, fw, "int8", explain_binding=False)

        def cpb():
            return run_solve("deepseek-v3.2", "atlas_a3", w, sc, fw, "int8", explain_binding=True)

        def ex():
            return run_solve("deepseek-v3.2", "atlas_a3", w, sc, fw, "int8", method="exhaustive",
                             explain_binding=False)

        def other():
            return run_solve("deepseek-v3.2", "atlas_a3", w, sc.model_copy(update={"kind": "throughput"}),
                             fw, "int8", explain_binding=False)

        t_cp = timed(cp, args.repeats)
        t_cpb = timed(cpb, args.repeats)
        cp()  # the balanced plan's tables and front, then another kind on them
        t_other = timed(other, args.repeats, clear=False)
        if w <= args.exhaustive_max_world:
            t_ex = timed(ex, args.repeats)
            print(f"{w:>6} {t_cp:>9.2f} {t_cpb:>16.2f} {t_other:>13.2f} {t_ex:>13.2f} {t_ex / t_cp:>7.1f}")
        else:
            print(f"{w:>6} {t_cp:>9.2f} {t_cpb:>16.2f} {t_other:>13.2f} {'(skipped)':>13} {'':>7}")


if __name__ == "__main__":
    main()
