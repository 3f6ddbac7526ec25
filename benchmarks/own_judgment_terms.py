"""Where the planner's own judgment parts from a verified deployment, term by term: for each reference, the
planner is run as `verified_agreement.py --own` runs it (that deployment's references hidden), and the decode
(or prefill) step of the verified knobs and of the planner's #1 are set side by side per module: memory traffic
(weights, KV, activations), compute, exposed collectives and kernel overheads, in ms per step.

`--per-rank B` re-runs each reference at B sequences per rank (batch = B x world size) instead of its own batch:
whether the disagreement is the deployment's knobs or the batch it was recorded at.
Run: python benchmarks/own_judgment_terms.py [--only ID,ID] [--per-rank B] [--terms 4]
"""
from __future__ import annotations

import argparse

from solver.api import run_solve
from solver.errors import ShardplanError
from solver.estimate.compute import factors_for
from solver.estimate.serving import Estimate, Workload, estimate
from solver.estimate.step import StepCost
from solver.specs.framework import load_framework
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import load_model
from solver.specs.parallel import ParallelConfig
from solver.specs.reference import Reference, list_references

from verified_agreement import same_deployment

FRAMEWORK = "cann-recipes"


def step_of(e: Estimate, phase: str) -> StepCost:
    step = e.decode if phase == "decode" else e.prefill
    assert step is not None
    return step


def module_terms(step: StepCost) -> dict[str, dict[str, float]]:
    """Per module: memory, compute, exposed collectives and kernel overheads (seconds per step)."""
    out: dict[str, dict[str, float]] = {}
    for o in step.ops:
        d = out.setdefault(o.module, dict.fromkeys(("memory", "compute", "comm", "overhead", "time"), 0.0))
        slower = max(o.compute_s, o.memory_s)
        d["memory" if o.memory_s >= o.compute_s else "compute"] += slower
        d["overhead"] += o.overhead_s
        d["time"] += o.time_s
    for c in step.comms:
        d = out.setdefault(c.module, dict.fromkeys(("memory", "compute", "comm", "overhead", "time"), 0.0))
        d["comm"] += c.exposed_s
        d["time"] += c.exposed_s
    return out


def compare(ref: Reference, every: list[Reference], terms: int) -> str:
    sc = ref.planning_scenario()
    q = ref.quant
    try:
        _, cands = run_solve(ref.model, ref.hardware, ref.world_size, sc, FRAMEWORK, q.spelled(q.weights),
                             q.spelled(q.moe_weights), q.kv_cache, top=1, explain_binding=False,
                             references=[o for o in every if not same_deployment(o, ref)])
    except ShardplanError as exc:
        return f"| {ref.id} | {ref.batch / ref.world_size:g} | error: {exc} | | | | |"
    m, hw, fw = load_model(ref.model), load_hardware(ref.hardware), load_framework(FRAMEWORK)
    f = factors_for(hw, fw.efficiency_for(hw))
    wl = Workload.for_scenario(sc, ref.batch)
    prec = ref.precision(m, hw)
    mine = estimate(m, hw, ref.config(), prec, f, wl)
    pick: ParallelConfig = cands[0].planned.config
    best = estimate(m, hw, pick, prec, f, wl)
    gap = sc.request_latency(mine.ttft_s, mine.tpot_s) / sc.request_latency(best.ttft_s, best.tpot_s) - 1
    a, b = module_terms(step_of(mine, sc.phase)), module_terms(step_of(best, sc.phase))
    zero = dict.fromkeys(("memory", "compute", "comm", "overhead", "time"), 0.0)
    deltas = []
    for mod in set(a) | set(b):
        x, y = a.get(mod, zero), b.get(mod, zero)
        d = {k: (y[k] - x[k]) * 1e3 for k in zero}
        deltas.append((mod, d))
    deltas.sort(key=lambda t: abs(t[1]["time"]), reverse=True)
    shown = "; ".join(
        f"{mod} {d['time']:+.2f} (" + ", ".join(f"{k} {d[k]:+.2f}" for k in ("memory", "compute", "comm", "overhead")
                                                  if abs(d[k]) >= 0.005) + ")"
        for mod, d in deltas[:terms])
    sm, sb = step_of(mine, sc.phase).time_s * 1e3, step_of(best, sc.phase).time_s * 1e3
    return (f"| {ref.id} | {ref.batch / ref.world_size:g} | {gap:+.0%} | {sm:.2f} | {sb:.2f} | "
            f"{cands[0].pattern} | {shown} |")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="")
    ap.add_argument("--per-rank", type=float, default=0.0, help="sequences per rank instead of the reference's batch")
    ap.add_argument("--terms", type=int, default=4, help="modules shown per row, largest difference first")
    args = ap.parse_args()
    every = list_references()
    refs = [r for r in every if not args.only or r.id in args.only.split(",")]
    print("| id | batch per rank | verified vs #1 (estimated) | verified step ms | #1 step ms | planner #1 "
          "| largest module differences, #1 minus verified, ms per step |")
    print("|---|---|---|---|---|---|---|")
    for r in refs:
        if args.per_rank > 0:
            r = r.model_copy(update={"batch": max(1, round(args.per_rank * r.world_size))})
        print(compare(r, every, args.terms))


if __name__ == "__main__":
    main()
