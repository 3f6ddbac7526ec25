"""The estimator against the published results of the verified Atlas A3 deployments (references/*.yaml, from
facts/verified-configs.md "Published results"): each result is re-estimated on the deployment's own
parallel_config, quantization, MTP depth, batch and context with the cann-recipes profile. Nothing here was
fitted: the calibration CSV holds NVIDIA rows only, so these are the estimator's only checks on Ascend.

    .venv/bin/python benchmarks/verified_results.py          # the table
    .venv/bin/python benchmarks/verified_results.py --fit    # + a (gemm, hbm) fit and leave-one-model-out

Decode TPOT is per output token: the step time over the tokens one step emits. With MTP that depends on the
acceptance rate, which the results do not give except for the V3.2 family ("~1.44 accepted" with MTP3). The
table shows the default (0.7 per draft token, the CloudMatrix384 paper's MTP1 figure) and, where a result
states it, the rate for which an MTP3 step emits 1.44 tokens (the reading that the step emits 1.44 tokens in
all; the other reading, 1.44 accepted drafts = 2.44 tokens, is within 4% of the default's 2.53 tokens).
Throughput per card = 2 dies x tokens/s per die. Micro-batched prefill results are listed but not modelled.
"""
from __future__ import annotations

import argparse
import math
import re
import statistics

from solver.estimate.compute import factors_for
from solver.estimate.serving import DEFAULT_MTP_ACCEPT, Workload, estimate, mtp_tokens_per_step
from solver.specs.framework import load_framework
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import load_model
from solver.specs.parallel import ParallelConfig
from solver.specs.precision import resolve_precision
from solver.specs.reference import Reference, Result, list_references

DIES_PER_CARD = 2  # Atlas A3: a card (package) holds two dies, one rank each (facts/verified-configs.md)
ACCEPTED = re.compile(r"~?([0-9.]+) (?:tokens )?accepted")  # e.g. "(MTP3, ~1.44 accepted)" in the v32-d128-q results


def accept_for_tokens(depth: int, tokens: float) -> float:
    """Per-draft acceptance a with 1 + a + ... + a^depth = tokens (bisection)."""
    lo, hi = 0.0, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if mtp_tokens_per_step(depth, mid) < tokens else (lo, mid)
    return (lo + hi) / 2


def predicted(ref: Reference, res: Result, accept: float, scale: dict[str, float] | None = None) -> float | None:
    """The estimator's value of `res.metric` in `res.unit`, or None for a metric it does not model. `scale`
    multiplies the profile's factors (the --fit trial values)."""
    model, hw, fw = load_model(ref.model), load_hardware(ref.hardware), load_framework("cann-recipes")
    q = ref.quant
    prec = resolve_precision(model, hw, q.weights, q.moe_weights, q.kv_cache if q.kv_cache != "bf16" else None)
    pc = ParallelConfig(world_size=ref.world_size, **ref.parallel_config.as_dict())
    eff = fw.efficiency_for(hw.name)
    for key, mult in (scale or {}).items():
        eff[key] = eff.get(key, 1.0) * mult
    f = factors_for(hw, eff)
    batch, ctx = res.batch or ref.batch, res.context_len or ref.input_len
    if "micro-batching" in res.conditions:
        return None
    if ref.phase == "prefill":
        e = estimate(model, hw, pc, prec, f, Workload("prefill", batch=batch, seq_len=ctx))
        if res.metric == "prefill_batch_latency":
            return e.ttft_s * 1e3
        if res.metric == "prefill_throughput_per_card":
            return batch * ctx / e.ttft_s / ref.world_size * DIES_PER_CARD
        return None
    e = estimate(model, hw, pc, prec, f, Workload("decode", batch=batch, seq_len=ctx, mtp=ref.mtp, mtp_accept=accept))
    if res.metric == "tpot":
        return e.tpot_s * 1e3
    if res.metric == "output_throughput_per_card":
        return e.output_tokens_per_s_per_rank * DIES_PER_CARD
    return None


def stated_accept(ref: Reference) -> float | None:
    """Per-draft acceptance implied by a rate one of the deployment's results states, else None."""
    stated = [float(m.group(1)) for r in ref.results if (m := ACCEPTED.search(r.conditions))]
    return accept_for_tokens(ref.mtp, stated[0]) if ref.mtp and stated else None


def fit(points: list[tuple[Reference, Result, float]], prior: float = 0.05) -> tuple[float, float]:
    """(gemm, hbm) multipliers minimising the squared log error over `points` plus a ridge on their logs,
    by grid search over 0.3..1.25 (the fit_efficiency.py bounds for gemm)."""
    grid = [math.exp(math.log(0.3) + i * (math.log(1.25) - math.log(0.3)) / 14) for i in range(15)]
    best = (math.inf, 1.0, 1.0)
    for g in grid:
        for h in grid:
            loss = sum(math.log(predicted(r, s, a, {"gemm": g, "hbm": h}) / s.value) ** 2 for r, s, a in points)
            loss += prior * (math.log(g) ** 2 + math.log(h) ** 2)
            best = min(best, (loss, g, h))
    return best[1], best[2]


def fit_report() -> None:
    """Fit on the points whose MTP acceptance is known (stated, or MTP <= 1 at the CloudMatrix384 paper's
    0.7); check each model's points with a fit that has not seen that model."""
    points, held = [], []
    for ref in list_references():
        a = stated_accept(ref)
        known = a is not None or ref.mtp <= 1
        for res in ref.results:
            if res.metric in ("tpot", "prefill_batch_latency") and "micro-batching" not in res.conditions:
                (points if known else held).append((ref, res, a if a is not None else DEFAULT_MTP_ACCEPT))
    g, h = fit(points)
    print(f"\n(gemm, hbm) fit on {len(points)} points with known acceptance: gemm x{g:.3f}, hbm x{h:.3f}")
    print("| reference | metric | published | unfitted | fitted (all) | fitted without this model |")
    print("|---|---|---|---|---|---|")
    for model in sorted({r.model for r, _, _ in points + held}):
        train = [p for p in points if p[0].model != model]
        g2, h2 = fit(train) if train else (1.0, 1.0)
        for r, s, a in [p for p in points + held if p[0].model == model]:
            cells = [predicted(r, s, a, sc) / s.value - 1
                     for sc in ({}, {"gemm": g, "hbm": h}, {"gemm": g2, "hbm": h2})]
            tag = "" if (r, s, a) in points else " (held out: acceptance unknown)"
            print(f"| {r.id}{tag} | {s.metric} | {s.value:,.1f} | " + " | ".join(f"{c:+.0%}" for c in cells) + " |")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--fit", action="store_true", help="also fit (gemm, hbm) and check leave-one-model-out")
    args = ap.parse_args()
    print("| reference | metric | conditions | published | predicted | error | MTP acceptance |")
    print("|---|---|---|---|---|---|---|")
    errs: list[float] = []  # the primary metrics only: throughput per card restates TPOT / batch latency
    for ref in list_references():
        for res in ref.results:
            accepts = [DEFAULT_MTP_ACCEPT]
            # a rate stated on one result of a deployment family holds for its other results
            if (a := stated_accept(ref)) is not None:
                accepts.append(a)
            for i, a in enumerate(accepts):
                value = predicted(ref, res, a)
                if value is None:
                    shown, err = "not modelled", ""
                else:
                    shown, err = f"{value:,.1f}", f"{value / res.value - 1:+.0%}"
                    if i == 0 and res.metric in ("tpot", "prefill_batch_latency"):
                        errs.append(abs(value / res.value - 1))
                mtp = (f"MTP{ref.mtp}: {a:.2f} per draft, {mtp_tokens_per_step(ref.mtp, a):.2f} tokens/step"
                       if ref.mtp else "-")
                print(f"| {ref.id} | {res.metric} ({res.unit}) | {res.conditions} | {res.value:,.1f} | {shown} | "
                      f"{err} | {mtp} |")
    print(f"\nTPOT and prefill latency at the default acceptance: median absolute error {statistics.median(errs):.0%} "
          f"over {len(errs)} results (max {max(errs):.0%})")
    if args.fit:
        fit_report()


if __name__ == "__main__":
    main()
