"""Agreement with the published NVIDIA and Ascend deployments the planner never saw (facts/measurements.md rows
5, 6, 7, 10, 11, 12, 13, 14, 16, 17; the row definitions are published_rows.PUBLISHED, one home).

For each published layout: `solve` the same model, hardware, cards, engine (the row's backend; generic where none
is named), precision, workload and concurrency, in the scenario the row implies (concurrency 1 = latency; 'max
load' and the blogs' max-throughput configs = throughput; a moderate fixed concurrency whose source reports TTFT
and TPOT beside throughput = balanced), then price the published layout with the estimator at the same workload
(the planner's, Workload.for_scenario; at a 'max load' row the published layout runs at its own KV capacity,
or at the benchmark's prompts sent at once in one wave (#12), published_rows.published_case) and report:

- the published pattern (verified_agreement.pattern: attention TP, CP, KVP, MoE TP, dense TP on/off) and whether
  it is in the planner's top 3; whether its exact knobs (the model's own knobs the engine sets) are;
- how much worse the estimator finds it than the planner's #1: the scenario's objective (the weighted geometric
  mean of request latency and inverse throughput per rank that the ranking uses), and throughput per rank;
- the top 3 with their concurrency;
- for the side-by-side row (#12) whether the estimator orders the published layouts as measured (within each
  engine, and all four), at the assumed ShareGPT lengths and at 1K/1K.

Run: python benchmarks/published_agreement.py [--only 12,16] [--top 3]
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
for p in (HERE.parent, HERE):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

from published_rows import PUBLISHED, Published, metric_value, published_case  # noqa: E402
from verified_agreement import pattern  # noqa: E402
from solver.specs.dtypes import KVFormat
from solver.api import run_solve  # noqa: E402
from solver.errors import ShardplanError  # noqa: E402
from solver.estimate.compute import factors_for  # noqa: E402
from solver.estimate.serving import Estimate, Workload, estimate  # noqa: E402
from solver.measured import Case, factors, weight_formats  # noqa: E402
from solver.specs.parallel import ParallelConfig, model_knobs  # noqa: E402
from solver.specs.precision import resolve_precision  # noqa: E402
from solver.specs.scenario import Scenario  # noqa: E402

# rows whose source publishes them as the engine's max-throughput configuration at a fixed concurrency (the
# TensorRT-LLM DeepSeek blogs' "max throughput" tables): planned as throughput
THROUGHPUT_ROWS = (5, 6, 10)


@dataclass(frozen=True)
class Deployment:
    """One published layout: the first PUBLISHED entry of its (row, setup) and every figure published on it."""

    pub: Published
    figures: tuple[Published, ...]

    @property
    def row(self) -> dict:
        return self.pub.row


def deployments(only: set[int] | None = None) -> list[Deployment]:
    out: dict[str, list[Published]] = {}
    for pub in PUBLISHED:
        if only and pub.source_row not in only:
            continue
        out.setdefault(repr((pub.source_row, sorted(pub.row.items(), key=str))), []).append(pub)
    return [Deployment(pubs[0], tuple(pubs)) for pubs in out.values()]


def scenario_for(dep: Deployment, isl: int | None = None, osl: int | None = None) -> Scenario:
    """The scenario the row implies (module docstring); a 'max load' row lets the planner pick the concurrency up
    to the benchmark's prompt count where it has one."""
    row = dep.row
    conc = int(row["concurrency"])
    kind = ("latency" if conc == 1 else "throughput" if not conc or dep.pub.source_row in THROUGHPUT_ROWS
            else "balanced")
    extra = {"max_concurrency": int(row["burst"])} if not conc and row.get("burst") else {}
    return Scenario(kind=kind, isl=isl or int(row["isl"]), osl=osl or int(row["osl"]), concurrency=conc or None,
                    mtp=int(row.get("mtp", 0)), **extra)


def solve_dtypes(case: Case, row: dict) -> tuple[str | None, str | None, str | None]:
    """The --weight-dtype / --moe-weight-dtype / --kv-dtype a user types to get the row's precision (the one
    case_from_row resolves): the row's formats, else the checkpoint's where the row's GEMM format applies to the
    experts only (an NVFP4 MoE checkpoint) or to groups the checkpoint keeps in 16 bits."""
    gemm, moe = weight_formats(row)
    kv = {KVFormat(1): "fp8", KVFormat(2): None}.get(case.prec.kv_format)
    for w, m in ((gemm, moe), (None, moe), (None, None)):
        try:
            prec = resolve_precision(case.model, case.hw, w, m if case.model.is_moe else None, kv)
        except ShardplanError:
            continue
        if (prec.weights, prec.activation, prec.kv_format) == (case.prec.weights, case.prec.activation,
                                                               case.prec.kv_format):
            return w, (m if case.model.is_moe else None), kv
    raise SystemExit(f"{case.model.name}: no solve flags give the row's precision {case.prec}")


def own_knobs(pc: ParallelConfig, model, fw_knobs: tuple[str, ...]) -> dict[str, int]:
    """The knobs the comparison reads: the model's own (model_knobs) the engine sets (its profile's knobs)."""
    present = set(model_knobs(model))
    return {k: v for k, v in pc.knobs().items() if k in present and k in fw_knobs}


def objective_gap(sc: Scenario, mine: Estimate, best: Estimate) -> float:
    """How much worse `mine` is than `best` in the ranking's objective (Scenario.score: the weighted log-ratio
    of request latency and inverse throughput per rank), as a ratio - 1."""
    lat = [sc.request_latency(e.ttft_s, e.tpot_s) for e in (mine, best)]
    inv = [1 / e.output_tokens_per_s_per_rank for e in (mine, best)]
    return math.exp(sc.score(lat[0], inv[0], lat[1], inv[1])) - 1


def evaluate(dep: Deployment, top: int) -> dict:
    case, wl_row, note = published_case(dep.pub)
    fw = case.framework
    sc = scenario_for(dep)
    w, m, kv = solve_dtypes(case, dep.row)
    t0 = time.perf_counter()
    res: dict = {"dep": dep, "scenario": sc, "framework": fw.name, "flags": (w, m, kv), "model": case.model,
                 "fw_knobs": tuple(fw.knobs)}
    try:
        _, cands = run_solve(str(dep.row["model"]), case.hw.name, case.pc.world_size, sc, fw.name, w, m, kv, top=top,
                             explain_binding=False)
    except ShardplanError as exc:
        return {**res, "status": f"error: {exc}", "seconds": time.perf_counter() - t0}
    res["seconds"] = time.perf_counter() - t0
    truth = own_knobs(case.pc, case.model, tuple(fw.knobs))
    got = [own_knobs(c.planned.config, case.model, tuple(fw.knobs)) for c in cands]
    exact = next((i + 1 for i, g in enumerate(got) if g == truth), None)
    pat = next((i + 1 for i, g in enumerate(got) if pattern(g) == pattern(truth)), None)
    best = next((c for c in cands if c.planned.role == "best score"), cands[0]).planned
    # the published layout at the planner's workload and load: the row's concurrency where it fixes one, else
    # the #1's (so the gap is the layout's alone), with the planner's factors
    f = factors_for(case.hw, fw.efficiency_for(case.hw))
    conc = sc.concurrency or best.batch
    mine = estimate(case.model, case.hw, case.pc, case.prec, f, Workload.for_scenario(sc, conc))
    env_errors = fw.check(_env(case, conc), "error")
    return {**res, "status": "ok", "cands": cands, "truth": truth, "exact": exact, "pattern": pat, "mine": mine,
            "mine_c": conc, "best": best, "gap": objective_gap(sc, mine, best.estimate),
            "thr": mine.output_tokens_per_s_per_rank / best.estimate.output_tokens_per_s_per_rank - 1,
            "refused": env_errors, "note": note}


def _env(case: Case, batch: int):
    from solver.specs.rule_env import device_facts, model_env

    return model_env(case.pc.settings(), case.model, **device_facts(case.hw), world=case.pc.world_size, batch=batch)


def knobs_text(k: dict[str, int]) -> str:
    return " ".join(f"{n.replace('_size', '')}={v}" for n, v in k.items() if v > 1) or "all 1"


def side_by_side(isl: int | None = None, osl: int | None = None) -> list[str]:
    """#12's four layouts estimated at one workload: their total tok/s and the order against the measured one."""
    rows = []
    for pub in PUBLISHED:
        if pub.source_row != 12:
            continue
        p = pub if isl is None else replace(pub, row={**pub.row, "isl": isl, "osl": osl})
        case, wl, _ = published_case(p)
        est = estimate(case.model, case.hw, case.pc, case.prec, factors(case), wl)
        rows.append((pub, metric_value(p, est, wl), wl.concurrency, est))
    lines = []
    for engine in ("vllm", "sglang"):
        pair = [r for r in rows if r[0].row["backend"] == engine]
        meas = [r[0].label.split(" ", 2)[2].replace(" ShareGPT max load", "") for r in sorted(pair, key=lambda r: -r[0].value)]
        est_order = [r[0].label.split(" ", 2)[2].replace(" ShareGPT max load", "") for r in sorted(pair, key=lambda r: -r[1])]
        ratio_m = max(r[0].value for r in pair) / min(r[0].value for r in pair)
        best_m = max(pair, key=lambda r: r[0].value)
        other = [r for r in pair if r is not best_m][0]
        lines.append(f"  {engine}: measured {' > '.join(meas)} (x{ratio_m:.2f}); estimated {' > '.join(est_order)} "
                     f"(x{best_m[1] / other[1]:.2f}): {'same order' if meas == est_order else 'ORDER DIFFERS'}")
    meas = [r[0].label.split(" ", 2)[2].replace(" ShareGPT max load", "") for r in sorted(rows, key=lambda r: -r[0].value)]
    est_order = [r[0].label.split(" ", 2)[2].replace(" ShareGPT max load", "") for r in sorted(rows, key=lambda r: -r[1])]
    lines.append(f"  all four: measured {' > '.join(meas)}; estimated {' > '.join(est_order)}: "
                 f"{'same order' if meas == est_order else 'order differs'}")
    lines.append("  " + "; ".join(f"{r[0].label.split(' ', 2)[2].replace(' ShareGPT max load', '')} {r[0].value:,.0f} "
                                  f"measured / {r[1]:,.0f} est. (C {r[2]}, B/replica {r[3].running_per_replica:.0f}, "
                                  f"TPOT {r[3].tpot_s * 1e3:.1f} ms)" for r in rows))
    return lines


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--top", type=int, default=3)
    ap.add_argument("--only", default="", help="source rows, e.g. 12,16")
    args = ap.parse_args()
    only = {int(x) for x in args.only.split(",") if x} or None
    rows = [evaluate(d, args.top) for d in deployments(only)]
    print(f"| # | published deployment | engine; scenario | published knobs | pattern in top {args.top} | exact knobs "
          f"| published vs #1 (objective; tok/s/rank) | planner top {args.top} (conc.) |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        dep, sc = r["dep"], r["scenario"]
        head = f"| {dep.pub.source_row} | {dep.pub.label.strip()} | {r['framework']}; {sc.kind}" + \
               (f", C {sc.concurrency}" if sc.concurrency else f", C <= {sc.max_concurrency}") + \
               (f", MTP{sc.mtp}" if sc.mtp else "")
        if r["status"] != "ok":
            print(f"{head} | | | | | {r['status']} |")
            continue
        refused = f" (profile refuses: {'; '.join(x.id for x in r['refused'])})" if r["refused"] else ""
        fits = "" if r["mine"].memory.feasible else ", does not fit"
        top = "; ".join(f"{c.pattern} [{knobs_text(own_knobs(c.planned.config, r['model'], r['fw_knobs']))}] "
                        f"({c.planned.batch})" for c in r["cands"])
        print(f"{head} | {knobs_text(r['truth'])}{refused} | {'#' + str(r['pattern']) if r['pattern'] else 'no'} | "
              f"{'#' + str(r['exact']) if r['exact'] else 'no'} | {r['gap']:+.0%}; {r['thr']:+.0%}{fits} | {top} |")
    n = sum(r["status"] == "ok" for r in rows)
    pat = sum(bool(r.get("pattern")) for r in rows)
    ex = sum(bool(r.get("exact")) for r in rows)
    near = sum(bool(r.get("pattern")) or (r.get("gap", 1) <= 0.10 and r["mine"].memory.feasible)
               for r in rows if r["status"] == "ok")
    print(f"\npattern in top {args.top}: {pat}/{n}; exact knobs in top {args.top}: {ex}/{n}; pattern in top "
          f"{args.top} or published layout within 10% of #1 by the objective: {near}/{n}; median solve "
          f"{sorted(r['seconds'] for r in rows)[len(rows) // 2]:.2f} s")
    if only is None or 12 in only:
        print("\n#12 side by side (total tok/s, 'max load' = 1,000 prompts at once, one wave):")
        print("ShareGPT assumed 220/200:")
        print("\n".join(side_by_side()))
        print("sensitivity, 1024/1024:")
        print("\n".join(side_by_side(1024, 1024)))


if __name__ == "__main__":
    main()
