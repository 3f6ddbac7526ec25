"""The ceiling of a MoE bound per class of layouts in the first bound (issue 12, stop 48's lead 1), measured on
one warm plan of plan_case's DeepSeek-V3.2 case (benchmarks/README.md, "Stop 48").

A layout's MoE table is one object per what it is costed at (Tables.fill_group: the layout as MoE sees it and the
step's works), so the layouts sharing that object are a class. The class bound of a popped layout is the figure at
the sum of its attention Pareto sums' corner and the corner of its class's table over the choices the memory
screen keeps (plan.bound.corner_figure): a lower bound of the layout's latency, so a first bound may take it. This
script records each question's pops (a pop starts at its first `_floor_drops` call; its CPU runs to the next
pop or the question's end, so the first-bound pass is left out), then, after the plan, computes each pop's class
bound and counts the pops it reaches the question's answer at (the best case: the answer as the incumbent from
the start), their CPU, and what the class bounds cost. A pop whose complete view was built is "late" (its dense
group costed), the others "early".

Run: python benchmarks/moe_class_ceiling.py [--worlds 128,1024]
"""
from __future__ import annotations

import argparse
import math
import time

from plan_case import plan_once, warm_up
from solver.plan.bound import corner_figure
from solver.plan.cpsat import Planner
from solver.plan.tables import Tables, ViewCosts

clock = time.process_time


def _record(questions: list[dict]) -> None:
    """Wrap the planner so each question's pops land in `questions`."""
    search, drops, view = Planner._search, Planner._floor_drops, Tables.view

    def _search(self, b, exclude_patterns, relaxed, exclude_families, served):
        q = {"planner": self, "b": b, "relaxed": relaxed, "pops": [], "t0": clock()}
        questions.append(q)
        point = search(self, b, exclude_patterns, relaxed, exclude_families, served)
        q["end"] = clock()
        q["answer"] = None if point is None else self.latency_of(b, dict(point.picks))[0]
        return point

    def _floor_drops(self, vc, key, screen, relaxed, inc, before_view=False):
        if not before_view and questions:
            questions[-1]["pops"].append({"key": key, "screen": screen, "t": clock(), "late": False})
        return drops(self, vc, key, screen, relaxed, inc, before_view)

    def _view(self, b, key, full=True):
        if full and questions and questions[-1]["pops"] and "end" not in questions[-1]:
            questions[-1]["pops"][-1]["late"] = True
        return view(self, b, key, full)

    Planner._search, Planner._floor_drops, Tables.view = _search, _floor_drops, _view


def class_bound(pl: Planner, b: int, key: tuple, screen, relaxed: frozenset[str]) -> tuple[int, float]:
    """(the class's id, the class bound) of layout `key` at b: its MoE table costed on a copy of its view (the
    plan's views are left as they were)."""
    vc = pl.t.view(b, key, full=False)
    own = ViewCosts(vc.plan, vc.pre_pipe, vc.dec_pipe, vc.attn)
    pl.t.fill_group(own, key, "moe")
    table = own.other["moe"]
    kept = table if screen is None else {j: sh for j, sh in table.items() if j in screen["moe"]}
    attn = pl._attn_sums(vc.attn, screen)
    if not kept or attn is None:
        return id(table), math.inf
    moe = pl._sums(("moe",), (table,), (kept,), frozenset())
    return id(table), corner_figure(attn, moe, pl._latency_fn(own, pl._caps(relaxed)))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--worlds", default="128,1024")
    args = ap.parse_args()
    warm_up()
    questions: list[dict] = []
    _record(questions)
    for w in (int(x) for x in args.worlds.split(",")):
        plan_once(w)  # the estimator's memos warm, as plan_cpu.py's later plans find them
        questions.clear()
        cpu, _, _ = plan_once(w)
        pops = early = early_s = late_s = removed = removed_s = bound_s = 0.0
        classes: set[int] = set()
        for q in questions:
            ends = [p["t"] for p in q["pops"][1:]] + [q["end"]]
            for p, end in zip(q["pops"], ends):
                s = end - p["t"]
                pops += 1
                early += not p["late"]
                early_s += 0.0 if p["late"] else s
                late_s += s if p["late"] else 0.0
                t0 = clock()
                cls, lb = class_bound(q["planner"], q["b"], p["key"], p["screen"], q["relaxed"])
                bound_s += clock() - t0
                classes.add(cls)
                if q["answer"] is not None and lb >= q["answer"]:
                    removed += 1
                    removed_s += s
        print(f"W={w}: plan {cpu:.3f} CPU s; {pops:,.0f} pops ({early:,.0f} early: {early_s:.3f} s; the others "
              f"{late_s:.3f} s) over {len(classes):,} MoE classes; the class bound at the answer removes "
              f"{removed:,.0f} pops ({removed_s:.3f} s) and costs {bound_s:.3f} s over all pops", flush=True)


if __name__ == "__main__":
    main()
