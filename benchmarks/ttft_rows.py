"""Calibration rows' TTFT, row by row: which term of the serving estimate carries a row's error, in-sample and
held out.

    python benchmarks/ttft_rows.py --framework FW [--hardware HW] [--model TEXT] [--held-out] [--csv PATH]

For every evaluable row of the calibration CSV (facts/calibration/measured_agg_calibration.csv) on framework FW
(and hardware HW, and a model whose name contains TEXT), it prints the setup (ISL / OSL, client concurrency C,
TP / EP / attention DP, precision, engine version), the measured TTFT and TPOT, and the predicted TTFT with the
shipped factors split into its parts (closed_loop.py): front end o, first-token delay ftl, queue + prefill, slot
wait; the prefill step P_n, the decode step tau, the running batch B, prompts per prefill step n and the prefill
groups G = ceil(B / n). Then, in units of the prefill step:

- `meas steps` = (measured TTFT - o - ftl) / P_n: the prefill steps the measured TTFT holds beyond the fixed cost;
- `lock steps` = mean over the cohort of ceil(i / n): what a prefill-first cohort that stays together waits
  (scheduler.lockstep, the shipped form for SGLang; for a decode-first row the figure is printed for comparison);
- `1by1` (prefill-first rows): the TTFT if the first wave arrives as one cohort and the later k - 1 waves one by
  one, as the decode-first steady state treats them (closed_loop.py; blended 1 : k - 1, the slot wait left out):
  a diagnosis at the shipped factors, not refitted (benchmarks/README.md, stop 50, has the refitted measurement).

`--held-out` adds each row's TTFT with the factors refitted without its model's architecture (the
leave-one-model-out fit of accuracy.py (c): global and per-framework factors refitted without it, the pair refitted
on its other models, the framework's other rows pooled where the pair has too few) and the fixed cost o that fit
gives. Footer: median |error| and signed median of each form over the rows printed.
"""
from __future__ import annotations

import argparse
import math
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from accuracy_rows import (  # noqa: E402
    DEFAULT_CSV, NEUTRAL, Prepared, load_factors, load_rows, predict_times, prepare_all, profile_params,
)

from solver.estimate.closed_loop import ServingPolicy, serving_figures, serving_kit  # noqa: E402
from solver.estimate.scheduler import lockstep, prefill_steps_mean  # noqa: E402


def measured_prefill_steps(measured_s: float, overhead_s: float, first_token_s: float, prefill_s: float) -> float:
    """Prefill steps (of P_n = prefill_s) the measured TTFT holds beyond the front end and the first-token delay."""
    return (measured_s - overhead_s - first_token_s) / prefill_s if prefill_s > 0 else math.nan


def blend_waves(first_s: float, steady_s: float, waves: int) -> float:
    """The benchmark's mean TTFT when its first wave (of k) waits `first_s` and the other k - 1 waves `steady_s`."""
    k = max(1, waves)
    return (first_s + (k - 1) * steady_s) / k


def one_by_one_after_first_wave(kit: Any, prefill_s: float, tau: float) -> float:
    """Prefill-first TTFT [s] if only the first wave arrives as one cohort (the lockstep's mean first-token time)
    and the later waves one by one (the decode-first steady state at the same step times), slot wait left out."""
    first = kit.overhead_s + lockstep(kit.running, kit.prompts_per_step, prefill_s, tau, kit.steps_out, kit.osl,
                                      kit.first_token_iterations * tau).ttft_s
    steady = serving_figures(replace(kit, decode_first=True, alone=False, slots_ahead=0.0), prefill_s, tau)[3]
    return blend_waves(first, steady, kit.waves)


def _kit(p: Prepared, params: Mapping[str, float]) -> Any:
    """The serving kit predict_times evaluates for `p` under `params`."""
    q = {**NEUTRAL, **params}
    return serving_kit(p.shape, replace(p.case.workload, request_overhead_s=q["request_overhead_s"]),
                       ServingPolicy.of(p.base))


class HeldOut:
    """Leave-one-model-out factors of a row, fitted as accuracy.loo_errors fits them (cached per fit)."""

    def __init__(self, prepared: Sequence[Prepared]) -> None:
        from fit_efficiency import fit_framework, fit_global, fit_group

        self.prepared, self.fit_global, self.fit_framework, self.fit_group = \
            prepared, fit_global, fit_framework, fit_group
        self.cache: dict[tuple, dict[str, float]] = {}

    def params(self, p: Prepared) -> dict[str, float]:
        key = (p.framework, p.hardware, p.family)
        if key not in self.cache:
            others = [q for q in self.prepared if q.family != p.family]
            glob = self.fit_global(others) or {}
            fixed = {**glob, **(self.fit_framework([q for q in others if q.framework == p.framework], fixed=glob)
                                or {})}
            train = [q for q in others if q.framework == p.framework and q.hardware == p.hardware]
            res = self.fit_group(train, fixed=fixed) if train else None
            if res is None:
                res = self.fit_group([q for q in others if q.framework == p.framework], fixed=fixed) or {}
            self.cache[key] = {**fixed, **res}
        return self.cache[key]


def row_line(p: Prepared, fitted: Mapping, held: HeldOut | None) -> tuple[str, dict[str, float]]:
    """One row's line and its signed errors by form (shipped, one by one after the first wave, held out)."""
    params = profile_params(p, fitted)
    t, pre, dec = predict_times(p, params)
    o, ftl, s, r = params["request_overhead_s"], t.first_token_delay_s, p.shape, p.row
    kit = _kit(p, params)
    served = t.ttft_s - t.slot_wait_s
    G = math.ceil(s.running / s.prompts_per_step)
    err = {"shipped": t.ttft_s / p.ttft_s - 1}
    text = (f"{p.index:3d} {p.model.split('/')[-1][:18]:<18} {p.hardware[:4]} v{str(r['backend_version']) or '?':<12} "
            f"{r['isl']:>5}/{r['osl']:<5} C{int(float(r['concurrency'])):<4} tp{int(float(r['tp']))} "
            f"ep{int(float(r['moe_ep'] or 1))} dp{int(float(r['attention_dp'] or 1))} {r['precision']:<4}| "
            f"meas {p.ttft_s * 1e3:6.0f} {p.tpot_s * 1e3:5.1f} | pred {t.ttft_s * 1e3:6.0f} {t.tpot_s * 1e3:5.1f} "
            f"{err['shipped'] * 100:+5.0f}% = o {o * 1e3:3.0f} ftl {ftl * 1e3:3.0f} q+P {(served - o - ftl) * 1e3:6.0f} "
            f"slot {t.slot_wait_s * 1e3:5.0f} | P {pre * 1e3:5.1f} tau {dec * 1e3:5.1f} B{s.running} n{s.prompts_per_step} "
            f"G{G} | meas steps {measured_prefill_steps(p.ttft_s, o, ftl, pre):5.1f} lock steps "
            f"{prefill_steps_mean(s.running, s.prompts_per_step):5.1f}")
    if not kit.decode_first:
        alt = one_by_one_after_first_wave(kit, pre, dec)
        err["one by one after the first wave"] = alt / p.ttft_s - 1
        text += f" | 1by1 {alt * 1e3:6.0f} {err['one by one after the first wave'] * 100:+5.0f}%"
    if held is not None:
        hp = held.params(p)
        th, _, _ = predict_times(p, hp)
        err["held out"] = th.ttft_s / p.ttft_s - 1
        text += f" | held out {th.ttft_s * 1e3:6.0f} {err['held out'] * 100:+5.0f}% o {hp['request_overhead_s'] * 1e3:3.0f}"
    return text, err


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--framework", required=True, help="sglang, trtllm, vllm, ... (the CSV's backend)")
    ap.add_argument("--hardware", default=None, help="the CSV's system, e.g. h200_sxm")
    ap.add_argument("--model", default=None, help="rows whose model name contains this text")
    ap.add_argument("--held-out", action="store_true", help="also the leave-one-model-out TTFT of each row")
    ap.add_argument("--csv", type=Path, default=DEFAULT_CSV)
    args = ap.parse_args(argv)
    if not args.csv.is_file():
        print(f"error: --csv: {args.csv}: no such file; pass --csv PATH to measured_agg_calibration.csv",
              file=sys.stderr)
        return 2
    prepared, _ = prepare_all(load_rows(args.csv))
    chosen = [p for p in prepared if p.framework == args.framework
              and (args.hardware is None or p.hardware == args.hardware)
              and (args.model is None or args.model in p.model)]
    if not chosen:
        print(f"error: --framework/--hardware/--model: no evaluable row of {args.csv} matches", file=sys.stderr)
        return 2
    fitted = load_factors()
    held = HeldOut(prepared) if args.held_out else None
    errs: dict[str, list[float]] = {}
    for p in chosen:
        text, err = row_line(p, fitted, held)
        print(text)
        for k, v in err.items():
            errs.setdefault(k, []).append(v)
    for k, v in errs.items():
        a = np.array(v)
        print(f"{k}: {len(a)} rows, TTFT median |error| {np.median(np.abs(a)) * 100:.1f}%, signed median "
              f"{np.median(a) * 100:+.1f}%")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
