"""The most a lazier first bound could save: CPU seconds of one plan of DeepSeek-V3.2 on atlas_a3 (int8, ISL 4096 /
OSL 256, balanced; the estimator's memos warm, as in plan_cpu.py) against the same plan where an oracle skips the
first bound of every layout the branch and bound never pops (Planner._search puts every layout its memory screen
keeps in the queue with a first bound, an exact attention-only bound or a floor of it, and pops them in that order
until the incumbent is reached; the layouts left in the queue cost their bound for nothing). The oracle learns
which layouts those are from a recording plan (a layout is popped when its floor check runs: _floor_drops without
`before_view`), then answers their first bound with an infinite value, which leaves them out of the queue. Its
answers must equal the plain plan's (printed); its CPU time bounds from below what any cheaper first bound or
visiting order could reach with this search. A measurement only: the oracle is no planner.

Run: python benchmarks/first_bound_ceiling.py [--worlds 128,1024] [--rounds 3]
"""
from __future__ import annotations

import math
import statistics

from plan_case import ceiling_args, plan_once, warm_up

from solver.plan import cpsat


class Oracle:
    """Wraps Planner._search, _first_bound and _floor_drops: records the layouts each question never pops, or
    (once `skip` is on) answers their first bound with inf."""

    def __init__(self) -> None:
        self.recording, self.skip = True, False
        self.question = 0
        self.never: set[tuple[int, tuple]] = set()
        P = cpsat.Planner
        first, search, drops = P._first_bound, P._search, P._floor_drops
        oracle = self

        def first_bound(planner, b, key, screen, relaxed):
            if oracle.skip and (oracle.question, key) in oracle.never:
                return math.inf, True
            planner._bench_keys.append(key)
            return first(planner, b, key, screen, relaxed)

        def floor_drops(planner, vc, key, screen, relaxed, inc, before_view=False):
            if not before_view:  # once per popped layout, right after it leaves the queue
                planner._bench_popped.add(key)
            return drops(planner, vc, key, screen, relaxed, inc, before_view)

        def search_(planner, b, *args):
            planner._bench_keys, planner._bench_popped = [], set()
            oracle.question += 1
            point = search(planner, b, *args)
            if oracle.recording:
                oracle.never |= {(oracle.question, k) for k in planner._bench_keys if k not in planner._bench_popped}
            return point

        P._first_bound, P._search, P._floor_drops = first_bound, search_, floor_drops

    def plan(self, world: int, skip: bool) -> tuple[float, str]:
        self.question, self.skip = 0, skip
        cpu, _, out = plan_once(world)
        return cpu, repr(out)


def main() -> None:
    args = ceiling_args()
    oracle = Oracle()
    warm_up()
    for w in (int(x) for x in args.worlds.split(",")):
        oracle.recording, oracle.never = True, set()
        oracle.plan(w, skip=False)  # the estimator's memos for this world size
        _, ref = oracle.plan(w, skip=False)
        oracle.recording = False
        plain, skipped, same = [], [], True
        for _ in range(args.rounds):  # alternated: the machine's drift falls on both
            t, out = oracle.plan(w, skip=False)
            plain.append(t)
            same &= out == ref
            t, out = oracle.plan(w, skip=True)
            skipped.append(t)
            same &= out == ref
        p, s = statistics.median(plain), statistics.median(skipped)
        print(f"W={w} first bounds never popped {len(oracle.never)}; plan cpu_s {p:.3f}, oracle {s:.3f} "
              f"(ratio {s / p:.3f}, medians of {args.rounds}); answers {'identical' if same else 'DIFFER'}",
              flush=True)


if __name__ == "__main__":
    main()
