"""The estimator against the published results of the verified Atlas A3 deployments (references/*.yaml, from
facts/verified-configs.md "Published results"): each result is re-estimated on the deployment's own
parallel_config, quantization, MTP depth, batch and context with the cann-recipes profile. Nothing here was
fitted: the calibration CSV holds NVIDIA rows only, so these are the estimator's only checks on Ascend.

    .venv/bin/python benchmarks/verified_results.py          # the table
    .venv/bin/python benchmarks/verified_results.py --fit    # + a (gemm, hbm) fit, checked on the other points

Decode TPOT is per output token: the step time over the tokens one step emits, so with MTP it depends on the
acceptance rate. The results state one only for the V3.2 family, "~1.44 accepted" with MTP3, which reads two
ways: 1.44 tokens per step in all, or 1.44 accepted drafts (2.44 tokens per step). The table shows the default
(0.7 per draft, the CloudMatrix384 paper's MTP1 figure: 2.53 tokens per MTP3 step) and, where a rate is
stated, both readings. Throughput per card = 2 dies x tokens/s per die. Micro-batched prefill is not modelled.
"""
from __future__ import annotations

import argparse
import math
import re
import statistics

from solver.estimate.compute import factors_for
from solver.estimate.serving import Workload, estimate, mtp_tokens_per_step
from solver.specs.framework import load_framework
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import load_model
from solver.specs.reference import Reference, Result, list_references
from solver.specs.scenario import DEFAULT_MTP_ACCEPT

DIES_PER_CARD = 2  # Atlas A3: a card (package) holds two dies, one rank each (facts/verified-configs.md)
ACCEPTED = re.compile(r"~?([0-9.]+) accepted")  # "(MTP3, ~1.44 accepted)" in the v32-d128-q results
PRIMARY = ("tpot", "prefill_batch_latency")  # the throughput metrics restate these


def accept_for_tokens(depth: int, tokens: float) -> float:
    """Per-draft acceptance a with 1 + a + ... + a^depth = tokens (bisection)."""
    lo, hi = 0.0, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if mtp_tokens_per_step(depth, mid) < tokens else (lo, mid)
    return (lo + hi) / 2


def readings(ref: Reference) -> list[tuple[str, float]]:
    """(label, per-draft acceptance) to evaluate: the default, and both readings of a stated rate (a rate
    stated on one result of a deployment family holds for its other results)."""
    out = [("default", DEFAULT_MTP_ACCEPT)]
    stated = [float(m.group(1)) for r in ref.results if (m := ACCEPTED.search(r.conditions))]
    if ref.mtp and stated:
        x = stated[0]
        out += [(f"{x} tokens/step", accept_for_tokens(ref.mtp, x)),
                (f"{x} drafts accepted", accept_for_tokens(ref.mtp, 1 + x))]
    return out


def predicted(ref: Reference, res: Result, accept: float, scale: dict[str, float] | None = None) -> float | None:
    """The estimator's value of `res.metric` in `res.unit`, or None for a metric it does not model. `scale`
    multiplies the profile's factors (the --fit trial values)."""
    if "micro-batching" in res.conditions:
        return None
    model, hw, fw = load_model(ref.model), load_hardware(ref.hardware), load_framework("cann-recipes")
    prec, pc = ref.precision(model, hw), ref.config()
    eff = fw.efficiency_for(hw)
    for key, mult in (scale or {}).items():
        eff[key] = eff.get(key, 1.0) * mult
    f = factors_for(hw, eff)
    batch, ctx = res.batch or ref.batch, res.context_len or ref.input_len
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
    """Fit on the points that need no acceptance guess (no MTP, or MTP1 at the CloudMatrix384 paper's 0.7,
    all DeepSeek-R1) and check every other point, under each acceptance reading, with that fit."""
    train, test = [], []
    for ref in list_references():
        for res in ref.results:
            if res.metric not in PRIMARY or "micro-batching" in res.conditions:
                continue
            if ref.mtp <= 1:
                train.append((ref, res, DEFAULT_MTP_ACCEPT))
            else:
                test += [(ref, res, a, label) for label, a in readings(ref)]
    g, h = fit(train)
    print(f"\n(gemm, hbm) fit on the {len(train)} points that need no acceptance guess: gemm x{g:.3f}, hbm x{h:.3f}")
    print("| reference | metric | conditions | acceptance | published | unfitted | fitted |")
    print("|---|---|---|---|---|---|---|")
    rows = [(r, s, a, "none" if not r.mtp else "MTP1 0.70") for r, s, a in train] + test
    for r, s, a, label in rows:
        cells = [predicted(r, s, a, sc) / s.value - 1 for sc in ({}, {"gemm": g, "hbm": h})]
        role = "fitted on" if (r, s, a) in train else "held out"
        print(f"| {r.id} ({role}) | {s.metric} | {s.conditions} | {label} | {s.value:,.1f} | "
              + " | ".join(f"{c:+.0%}" for c in cells) + " |")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--fit", action="store_true", help="also fit (gemm, hbm) and check it on the other points")
    args = ap.parse_args()
    print("| reference | metric | conditions | acceptance | published | predicted | error |")
    print("|---|---|---|---|---|---|---|")
    errs: dict[str, list[float]] = {}
    for ref in list_references():
        for res in ref.results:
            for label, a in (readings(ref) if ref.mtp else [("-", DEFAULT_MTP_ACCEPT)]):
                value = predicted(ref, res, a)
                if value is None:
                    shown, err = "not modelled", ""
                else:
                    shown, err = f"{value:,.1f}", f"{value / res.value - 1:+.0%}"
                    if res.metric in PRIMARY:
                        errs.setdefault("default" if label in ("-", "default") else label.split(" ", 1)[1],
                                        []).append(abs(value / res.value - 1))
                mtp = f"MTP{ref.mtp} {label}: {a:.2f}/draft, {mtp_tokens_per_step(ref.mtp, a):.2f} tok/step" \
                    if ref.mtp else "-"
                print(f"| {ref.id} | {res.metric} ({res.unit}) | {res.conditions} | {mtp} | {res.value:,.1f} | "
                      f"{shown} | {err} |")
    d = errs["default"]
    print(f"\nTPOT and prefill latency at the default acceptance: median absolute error {statistics.median(d):.0%} "
          f"over {len(d)} results (max {max(d):.0%})")
    if args.fit:
        fit_report()


if __name__ == "__main__":
    main()
