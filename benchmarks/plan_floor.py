"""What a warm plan's CPU is made of, split by what holding the planner's bounds as arrays across the layouts of
one concurrency could take and what it could not (issue 12, stop 49), on plan_case's DeepSeek-V3.2 case
(benchmarks/README.md, "Stop 49").

Each timed part is exclusive (a part's time leaves out the timed parts it calls):
  memory rows        plan.table_build.group_memory (the estimator's memory terms per choice and sequences held)
  tables, the rest   build_tables less its memory rows (the choices, their rules, the memory edge)
  shares             plan.group_cost.shares as the tables ask it (the estimator's step sums per choice and work)
  figures            the serving figures the bounds and searches read (figures.ttft_tpot, figures.ttft_floor)
  CP-SAT             Planner._solve_view (the layout searches: their models, solves and checks)
  memory screens     Planner._memory_screen
  first bounds       Planner._first_bound and _attention_bound: the attention views' assembly, their Pareto sums, the attention floors
  pops               the rest of Planner._search (the 15 questions): the popped layouts' floors, group tables,
                     MoE and complete bounds, the queue
  the rest           the plan less all the above: the questions' bookkeeping, ranking, the report
shares and figures are also given by where they are asked (inside a first bound or elsewhere): a first-bound
pass held as arrays over one concurrency's layouts would take its memory screens, its first bounds and, with the
serving figures evaluated over arrays, its figures; not the shares (the estimator's per-choice step sums).
Then the sizes such arrays would have per layout: the points of each Pareto-sums minimum the bounds take, the
attention choices per layout, each other group's choices per stage count; and numpy's cost of one masked
minimum over a held table of those sizes against the Python the bounds spell (tuple(map(min, zip(*rows)))).
Last, the largest tables the bounds build, dense x MoE (plan.bound.joint_part and the Pareto set of its pairs,
on the inputs a W=128 plan gave it): the same pairs and Pareto set from arrays held per table (dense and MoE
choices x coordinates, the pairs' corrections at their indices), checked equal to the Python's.

Run: python benchmarks/plan_floor.py [--worlds 128,1024] [--rounds 3]
"""
from __future__ import annotations

import statistics
import time
import timeit
from collections import Counter

import numpy as np

from plan_case import ceiling_args, plan_once, warm_up
from solver.plan import cpsat, layout_bounds, solve, table_build, table_inputs
from solver.plan.bound import _flat, joint_part, minimum_unless_below, nondominated

clock = time.process_time
PARTS = ("memory rows", "tables, the rest", "shares", "shares in first bounds", "figures",
         "figures in first bounds", "CP-SAT", "memory screens", "first bounds", "pops")
# the parts given again by where they are asked
IN_FIRST = ("shares", "figures")
spent: Counter[str] = Counter()
calls: Counter[str] = Counter()
points: list[int] = []
built: list = []
joints: list[tuple] = []  # joint_part's inputs in the last plan
_stack: list[list] = []  # [label, start, time of the timed parts it called]


def _timed(owner, name: str, label: str) -> None:
    """Wrap owner.name so its exclusive CPU lands in spent[label]."""
    f = getattr(owner, name)

    def wrapped(*a, **k):
        lab = label
        if lab in IN_FIRST and any(e[0] == "first bounds" for e in _stack):
            lab = f"{label} in first bounds"
        _stack.append([lab, clock(), 0.0])
        try:
            return f(*a, **k)
        finally:
            lab, t0, inner = _stack.pop()
            took = clock() - t0
            spent[lab] += took - inner
            calls[lab] += 1
            if _stack:
                _stack[-1][2] += took

    setattr(owner, name, wrapped)


def _install() -> None:
    _timed(table_build, "group_memory", "memory rows")
    build = solve.build_tables

    def kept(*a, **k):  # the tables of the last plan, for their sizes
        built.append(build(*a, **k))
        return built[-1]

    solve.build_tables = kept
    _timed(solve, "build_tables", "tables, the rest")
    _timed(table_inputs, "shares", "shares")
    _timed(cpsat, "ttft_tpot", "figures")
    _timed(layout_bounds, "ttft_floor", "figures")
    _timed(cpsat.Planner, "_solve_view", "CP-SAT")
    _timed(cpsat.Planner, "_memory_screen", "memory screens")
    _timed(cpsat.Planner, "_first_bound", "first bounds")
    _timed(cpsat.Planner, "_attention_bound", "first bounds")  # also where the queue replaces a floor
    _timed(cpsat.Planner, "_search", "pops")

    def counted(sums, figure, at_least):
        points.append(len(sums.points))
        return minimum_unless_below(sums, figure, at_least)

    layout_bounds.minimum_unless_below = counted

    def joint(dense, moe, pairs, excluded=frozenset()):
        joints.append((dense, moe, pairs, excluded))
        return joint_part(dense, moe, pairs, excluded)

    layout_bounds.joint_part = joint


def _quantiles(xs: list[int]) -> str:
    xs = sorted(xs)
    return (f"median {statistics.median(xs):g}, p90 {xs[int(0.9 * (len(xs) - 1))]}, max {xs[-1]}, "
            f"{sum(x <= 4 for x in xs)} of {len(xs)} at most 4")


def _numpy_against_python(rows: int, cols: int) -> tuple[float, float]:
    """(numpy, Python) microseconds of one per-coordinate minimum over `rows` kept rows of a `cols`-column table:
    numpy from a held array and a kept-row index (the array already built), Python as the bounds spell it."""
    table = [tuple(float(r * cols + c) for c in range(cols)) for r in range(rows)]
    held, kept = np.array(table), np.arange(rows)
    n = 20_000
    t_np = timeit.timeit(lambda: held[kept].min(axis=0).tolist(), number=n) / n * 1e6
    t_py = timeit.timeit(lambda: tuple(map(min, zip(*table))), number=n) / n * 1e6
    return t_np, t_py


def _held(dense: dict, moe: dict, pairs: dict, excluded: frozenset) -> tuple:
    """One joint table as arrays: dense and MoE GPU seconds (choices x coordinates), the corrected pairs' flat
    indices and corrections, the kept pairs' mask (dense-major, as joint_part lists them)."""
    d, m = list(dense), list(moe)
    gpu = [np.array([_flat(o)[0] for o in t.values()]) for t in (dense, moe)]
    at = {(jd, jm): a * len(m) + b for a, jd in enumerate(d) for b, jm in enumerate(m)}
    idx = [at[pk] for pk in pairs if pk in at]
    corr = [_flat(c)[0] for pk, c in pairs.items() if pk in at]
    ok = np.array([(jd, jm) not in excluded for jd in d for jm in m])
    return gpu[0], gpu[1], np.array(idx, dtype=int), np.array(corr).reshape(len(idx), gpu[0].shape[1]), ok


def _front_of_held(h: tuple) -> list[tuple[float, ...]]:
    """The Pareto set of a held joint table's pairs (dense + MoE, then the correction: joint_part's order of
    additions), sorted as plan.bound.nondominated gives it."""
    dense, moe, idx, corr, ok = h
    g = (dense[:, None, :] + moe[None, :, :]).reshape(-1, dense.shape[1])
    if len(idx):
        g[idx] = g[idx] + corr
    g = g[ok]
    g = g[np.lexsort(g.T[::-1])]  # sorted (the first coordinate first), then one copy of equal points
    g = g[np.concatenate(([True], (g[1:] != g[:-1]).any(axis=1)))]
    if g.shape[1] == 2:
        low = np.minimum.accumulate(g[:, 1])
        keep = np.concatenate(([True], g[1:, 1] < low[:-1]))
    else:
        le = (g[:, None, :] <= g[None, :, :]).all(axis=2)
        np.fill_diagonal(le, False)
        keep = ~le.any(axis=0)
    return list(map(tuple, g[keep].tolist()))


def _joint_arrays(calls: list[tuple]) -> None:
    held = [_held(*c) for c in calls]
    same = sum(_front_of_held(h) == nondominated(joint_part(*c).vectors) for h, c in zip(held, calls))
    n = 5
    t_py = min(timeit.repeat(lambda: [nondominated(joint_part(*c).vectors) for c in calls], number=n, repeat=3)) / n
    t_np = min(timeit.repeat(lambda: [_front_of_held(h) for h in held], number=n, repeat=3)) / n
    t_fill = min(timeit.repeat(lambda: [_held(*c) for c in calls], number=n, repeat=3)) / n
    pairs = [len(c[0]) * len(c[1]) for c in calls]
    print(f"  dense x MoE tables: {len(calls)}, pairs each median {statistics.median(pairs):g}, max {max(pairs)}; "
          f"Pareto set from held arrays equal to the Python's in {same} of {len(calls)}")
    print(f"    Python (joint_part + nondominated) {t_py * 1e3:.1f} ms, from held arrays {t_np * 1e3:.1f} ms, "
          f"holding them (from the tables' dicts) {t_fill * 1e3:.1f} ms")


def main() -> None:
    args = ceiling_args()
    _install()
    warm_up()
    for w in (int(x) for x in args.worlds.split(",")):
        rows = []
        for _ in range(args.rounds + 1):  # the first plan of a size costs its ops (plan_cpu.py): left out
            spent.clear()
            calls.clear()
            points.clear()
            joints.clear()
            cpu, _, _ = plan_once(w)
            rows.append((cpu, dict(spent), dict(calls), list(points)))
        rows = rows[1:]
        med = sorted(rows, key=lambda r: r[0])[len(rows) // 2]  # the median plan, its parts as timed
        cpu, parts, n, pts = med
        print(f"W={w}: plan {cpu:.3f} CPU s (median of {args.rounds} warm plans: "
              f"{', '.join(f'{r[0]:.3f}' for r in rows)})")
        for p in PARTS:
            print(f"  {p:18s} {parts.get(p, 0.0):.3f} s  {n.get(p, 0)} calls")
        rest = cpu - sum(parts.values())
        print(f"  {'the rest':18s} {rest:.3f} s  ({rest / cpu:.0%} of the plan)")
        print(f"  Pareto-sums minima: {len(pts)}; points each: {_quantiles(pts)}")
        t = built[-1]
        per_layout = [len(idx) for idx in t.layouts().values()]
        print(f"  attention choices per layout: {_quantiles(per_layout)} ({len(per_layout)} layouts)")
        per_stage = [sum(c[-1] == pp for c in opts) for g, opts in t.choices.items() if g != "attn"
                     for pp in sorted({c[-1] for c in opts})]
        print(f"  other groups' choices per stage count: {_quantiles(per_stage)}")
        built.clear()
        if w == 128:
            _joint_arrays(list(joints))
    for r, c in ((3, 2), (8, 2), (30, 4)):
        t_np, t_py = _numpy_against_python(r, c)
        print(f"a minimum over {r} kept rows x {c} coordinates: numpy {t_np:.1f} us, Python {t_py:.1f} us")


if __name__ == "__main__":
    main()
