"""Accuracy benchmark: the serving estimator against measured TTFT / TPOT.

    python benchmarks/accuracy.py [--csv PATH] [--factors PATH] [--waves K] [--no-cv] [--rows N] [--residuals]
                                  [--oracle] [--ceiling] [--device] [--by-model]

Runs every row of the calibration CSV (facts/calibration/measured_agg_calibration.csv: aggregated serving at
fixed ISL/OSL/concurrency) through `solver.measured` + `solver.estimate.serving`, and prints the median, mean
and p90 absolute percentage error of TTFT and TPOT, overall and per model / system / framework, for

  (a) default factors: the hardware YAML's efficiency factors and the framework profile's own multipliers;
  (b) fitted factors, in-sample: solver/frameworks/fitted/factors.yaml (written by fit_efficiency.py);
  (c) leave-one-model-out: for every (framework, hardware) group and every model architecture in it, the
      factors are refitted on the group's other models and evaluated on the held-out one (models with the
      same architecture, DeepSeek-V3 and -R1, are held out together so the fit has never seen the shapes);
      the factor fitted once over all rows (grouped_gemm) is refitted without the held-out architecture too.

`--residuals` adds the predicted TTFT split into its parts (front end, first-token delay, queue + prefill, slot
wait) and the median ln(measured / predicted) by benchmark source (read from the row id), prefill groups, ISL and
model x prompt length. `--oracle` adds (c) with the fixed TTFT cost (request_overhead_s) refitted on each held-out
model's own rows: how far held-out TTFT would get if that cost were known per model (benchmarks/README.md, issue 15
stop ttft8). `--ceiling` adds (d): every factor of the pair fit (gemm, hbm, kernel_overhead_s, request_overhead_s)
refitted per (framework, hardware, model architecture) on that group's own rows, in-sample, the global and
per-engine factors as shipped: what the serving formulas can reach when nothing has to carry over between models,
the limit of any fit of these factors (the shipped fit allows none per model). A diagnosis, not an estimate.
`--device` adds (e), leave one device out: every factor refitted without the held-out hardware's rows, which are
then priced as the shipped code prices a device the fit has no rows of (`accuracy_device.py`): what a user of a
device without calibration rows can expect, on the devices that have some. `--by-model` adds (b) and (c) by model x
framework and model x framework x hardware: which held-out models carry the error, on which engines.

It also reports rows skipped (with the InputError each raised) and predicted vs published figures for the rows
of facts/measurements.md the estimator can express (PUBLISHED below, with the source row number).

The rows and their fast prediction are `accuracy_rows.py`; the published figures `published_rows.py`.
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

sys.path.insert(0, str(Path(__file__).resolve().parent))
from accuracy_rows import (  # noqa: E402
    BOUNDS, DEFAULT_CSV, FACTORS_YAML, FRAMEWORK_PARAMS, GLOBAL_PARAMS, NEUTRAL, Prepared, check_fast_path,
    load_factors, load_rows, predict, predict_times, prepare_all, profile_params,
)
from published_rows import published_report  # noqa: E402


# ---------------------------------------------------------------------------------------------- statistics


def errors(prepared: Sequence, params_of: Callable[[Any], Mapping[str, float]], predict_fn=None
           ) -> tuple[np.ndarray, np.ndarray]:
    """Signed relative errors (predicted / measured - 1) of TTFT and TPOT, one per row; `predict_fn(row,
    params)` -> (TTFT, TPOT), `predict` by default (the disaggregated benchmark passes its own)."""
    predict_fn = predict_fn or predict
    et, ep = [], []
    for p in prepared:
        t, s = predict_fn(p, params_of(p))
        et.append(t / p.ttft_s - 1)
        ep.append(s / p.tpot_s - 1)
    return np.array(et), np.array(ep)


def summary(e: np.ndarray) -> tuple[float, float, float]:
    """(median, mean, p90) of the absolute percentage error."""
    a = np.abs(e) * 100
    if not len(a):
        return (math.nan,) * 3
    return float(np.median(a)), float(np.mean(a)), float(np.percentile(a, 90))


def short_model(name: str) -> str:
    return name.split("/")[-1]


def group_table(et: np.ndarray, ep: np.ndarray, title: str, groups: Sequence[tuple[str, list[int]]]) -> list[str]:
    """Plain-text table, a line per (label, row indices) group: the TTFT and TPOT relative errors' median, mean
    and p90 of |error|, and their signed medians (bias)."""
    lines = [title, f"{'group':<44}{'rows':>5}  {'TTFT med':>8} {'mean':>7} {'p90':>7}  {'TPOT med':>8} {'mean':>7}"
             f" {'p90':>7}  {'TTFT bias':>9} {'TPOT bias':>9}"]
    for label, idx in groups:
        t, s = summary(et[idx]), summary(ep[idx])
        bt, bs = float(np.median(et[idx]) * 100), float(np.median(ep[idx]) * 100)
        lines.append(f"{label:<44}{len(idx):>5}  {t[0]:>7.1f}% {t[1]:>6.1f}% {t[2]:>6.1f}%  {s[0]:>7.1f}% "
                     f"{s[1]:>6.1f}% {s[2]:>6.1f}%  {bt:>+8.1f}% {bs:>+8.1f}%")
    return lines


def setup_groups(prepared: Sequence[Any]) -> list[tuple[str, list[int]]]:
    """The rows of each model, then each system, then each framework: (label, row indices)."""
    out = []
    for key, label in (("model", "model"), ("hardware", "system"), ("framework", "framework")):
        groups: dict[str, list[int]] = defaultdict(list)
        for i, p in enumerate(prepared):
            groups[getattr(p, key)].append(i)
        out += [(f"  {label}: {short_model(name)}", groups[name]) for name in sorted(groups)]
    return out


def model_engine_groups(prepared: Sequence[Any]) -> list[tuple[str, list[int]]]:
    """The rows of each model x framework, then each model x framework x hardware: (label, row indices); where a
    held-out model's error sits (`--by-model`)."""
    out = []
    for keys in (("model", "framework"), ("model", "framework", "hardware")):
        groups: dict[tuple[str, ...], list[int]] = defaultdict(list)
        for i, p in enumerate(prepared):
            groups[tuple(getattr(p, k) for k in keys)].append(i)
        out += [("  " + " x ".join([short_model(key[0]), *key[1:]]), groups[key]) for key in sorted(groups)]
    return out


def table(prepared: Sequence[Prepared], et: np.ndarray, ep: np.ndarray, title: str) -> list[str]:
    """Plain-text table: overall, then per model / system / framework."""
    return group_table(et, ep, title, [("ALL", list(range(len(prepared)))), *setup_groups(prepared)])


def first_rows(path: Path, n: int) -> list[dict[str, Any]]:
    """The CSV's rows, only the first `n` where n > 0 (--rows, smoke runs)."""
    rows = load_rows(path)
    return rows[:n] if n else rows


def ranking(prepared: Sequence[Prepared], et: np.ndarray, ep: np.ndarray) -> list[str]:
    """Side-by-side groups (same model, hardware, framework, ISL, OSL, concurrency; several parallel configs):
    does the estimate (measured x (1 + signed error)) pick the measured best? By output tokens/s per GPU
    (C x OSL / (TTFT + (OSL - 1) TPOT) / world) and by TPOT. Rows repeated under one config are averaged.
    Each miss is listed with how far the measured best stands from the config picked, in the measurements
    themselves: a gap of a few percent is a tie the rows cannot order."""
    groups: dict[tuple, dict[tuple, list[tuple[float, float, float, float]]]] = defaultdict(lambda: defaultdict(list))
    labels: dict[tuple, str] = {}
    for i, p in enumerate(prepared):
        w, pc = p.case.workload, p.case.pc
        t, s = p.ttft_s * (1 + et[i]), p.tpot_s * (1 + ep[i])
        key = (short_model(p.model), p.hardware, p.framework, w.isl, w.osl, w.concurrency)
        cfg = (pc.attn_tp_size, pc.attn_replicas, pc.moe_tp_size, pc.moe_ep_size, str(p.case.prec.fmt("dense").name))
        labels[cfg] = _cfg_label(pc.attn_tp_size, pc.attn_replicas, pc.moe_ep_size, str(p.row.get("precision", "")))

        def per_gpu(ttft: float, tpot: float) -> float:
            return w.concurrency * w.osl / (ttft + (w.osl - 1) * tpot) / pc.world_size

        groups[key][cfg].append((per_gpu(p.ttft_s, p.tpot_s), per_gpu(t, s), p.tpot_s, s))
    n = hit_tput = hit_tpot = 0
    misses = []
    for key, cfgs in groups.items():
        if len(cfgs) < 2:
            continue
        n += 1
        mean = {c: [float(np.mean([v[i] for v in vals])) for i in range(4)] for c, vals in cfgs.items()}
        best_t, pick_t = max(mean, key=lambda c: mean[c][0]), max(mean, key=lambda c: mean[c][1])
        best_p, pick_p = min(mean, key=lambda c: mean[c][2]), min(mean, key=lambda c: mean[c][3])
        hit_tput += best_t == pick_t
        hit_tpot += best_p == pick_p
        for what, best, pick, gap in (("tok/s/GPU", best_t, pick_t, mean[best_t][0] / mean[pick_t][0] - 1),
                                      ("TPOT", best_p, pick_p, mean[pick_p][2] / mean[best_p][2] - 1)):
            if best != pick:
                misses.append((gap, f"  miss by {what}: {' '.join(str(x) for x in key)}: measured best "
                                    f"{labels[best]}, picked {labels[pick]}, measured {100 * gap:.1f}% apart"))
    if not n:
        return ["ranking: no side-by-side groups"]
    return [f"ranking within {n} side-by-side groups (same model, hardware, framework, ISL/OSL, concurrency): "
            f"picks the measured best by tok/s/GPU in {hit_tput} ({100 * hit_tput / n:.0f}%), by TPOT in "
            f"{hit_tpot} ({100 * hit_tpot / n:.0f}%)"] + [line for _, line in sorted(misses)]


def _cfg_label(tp: int, dp: int, ep: int, precision: str) -> str:
    """A side-by-side config as the CSV names it: attention TP, DP, EP and the row's precision column."""
    return f"TP{tp}" + (f" DP{dp}" if dp > 1 else "") + (f" EP{ep}" if ep > 1 else "") + f" {precision}"


def mode_table(prepared: Sequence[Prepared], et: np.ndarray, ep: np.ndarray) -> list[str]:
    """The same statistics by parallel mode: TP only, TP + EP, attention DP (+ EP)."""
    def mode(p: Prepared) -> str:
        pc = p.case.pc
        if pc.attn_replicas > 1:
            return "attention DP" + (" + EP" if pc.moe_ep_size > 1 else "")
        return "TP + EP" if pc.moe_ep_size > 1 else f"TP{'' if pc.world_size > 1 else ' 1'}"
    groups: dict[str, list[int]] = defaultdict(list)
    for i, p in enumerate(prepared):
        groups[mode(p)].append(i)
    lines = []
    for name in sorted(groups):
        idx = groups[name]
        t, s = summary(et[idx]), summary(ep[idx])
        lines.append(f"  {'mode: ' + name:<42}{len(idx):>5}  {t[0]:>7.1f}% {t[1]:>6.1f}% {t[2]:>6.1f}%  {s[0]:>7.1f}% "
                     f"{s[1]:>6.1f}% {s[2]:>6.1f}%  {float(np.median(et[idx]) * 100):>+8.1f}% "
                     f"{float(np.median(ep[idx]) * 100):>+8.1f}%")
    return lines


# ---------------------------------------------------------------------------------------------- residuals


def source_of(row: Mapping[str, Any]) -> str:
    """The benchmark campaign a calibration row comes from, read from its `id` (the CSV has no source column):
    ids that start with a date or `dsr1_` / `deepseek_r1_deepseek` name the dated serving sweeps (DeepSeek,
    Llama-3.1-70B, gpt-oss); ids `<model>_<model>_<system>_<backend>_agg_...` the per-model sweeps (Qwen3,
    Llama-3.1-8B). Reported only: the estimator never reads it."""
    rid = str(row.get("id", ""))
    if rid[:4].isdigit() or rid.startswith(("dsr1_", "deepseek_r1_deepseek")):
        return "dated sweeps"
    return "per-model sweeps" if rid else "unknown"


@dataclass(frozen=True)
class Residual:
    """One row's predicted TTFT split into its parts (serving formulas; seconds) against the measured one."""

    row: int
    measured_s: float
    predicted_s: float
    front_end_s: float  # o
    first_token_s: float  # ftl
    queue_prefill_s: float  # waiting for and running the prefill steps (first wave and steady state blended)
    slot_wait_s: float  # waiting for a KV slot
    prefill_step_s: float
    decode_step_s: float
    prefill_groups: int  # G = ceil(B / n): prefill steps a cohort of B running sequences takes

    @property
    def log_error(self) -> float:
        """ln(measured / predicted): > 0 where the estimate is low."""
        return math.log(self.measured_s / self.predicted_s)


def residual(p: Prepared, params: Mapping[str, float]) -> Residual:
    """The parts of `p`'s predicted TTFT: front end + first-token delay + queue and prefill + slot wait."""
    t, pre, dec = predict_times(p, params)
    o = {**NEUTRAL, **params}["request_overhead_s"]
    served = t.ttft_s - t.slot_wait_s
    return Residual(p.index, p.ttft_s, t.ttft_s, o, t.first_token_delay_s, served - o - t.first_token_delay_s,
                    t.slot_wait_s, pre, dec, math.ceil(p.shape.running / p.shape.prompts_per_step))


def residual_report(prepared: Sequence[Prepared], params_of: Callable[[Any], Mapping[str, float]]) -> list[str]:
    """Median ln(measured / predicted TTFT) by source x framework, by prefill groups G and by ISL, and the mean
    share of each part of the predicted TTFT; then which models each source holds (leave-one-model-out
    holds out part of one source)."""
    res = [residual(p, params_of(p)) for p in prepared]
    lines = ["TTFT residuals, fitted factors: median ln(measured / predicted) (> 0: estimate low), rows, and the "
             "mean share of the predicted TTFT in front end / first-token delay / queue + prefill / slot wait"]

    def add(label: str, idx: list[int]) -> None:
        r = [res[i] for i in idx]
        share = [float(np.mean([getattr(x, k) / x.predicted_s for x in r]))
                 for k in ("front_end_s", "first_token_s", "queue_prefill_s", "slot_wait_s")]
        lines.append(f"  {label:<40}{len(r):>5}  {float(np.median([x.log_error for x in r])):>+6.2f}   "
                     + " / ".join(f"{v:.2f}" for v in share))

    for title, key in (("source x framework", lambda p, r: f"{source_of(p.row)} x {p.framework}"),
                       ("framework x prefill groups G", lambda p, r: f"{p.framework} G {_bucket(r.prefill_groups)}"),
                       ("framework x ISL", lambda p, r: f"{p.framework} ISL {p.case.workload.isl}"),
                       # the DeepSeek deficit is at short prompts only (benchmarks/README.md, issue 15 prefill7)
                       ("model x prompt length", lambda p, r: f"{short_model(p.model)} ISL "
                        + ("<= 2048" if p.case.workload.isl <= 2048 else "> 2048"))):
        lines.append(f" by {title}")
        groups: dict[str, list[int]] = defaultdict(list)
        for i, (p, r) in enumerate(zip(prepared, res)):
            groups[key(p, r)].append(i)
        for name in sorted(groups, key=_natural):
            add(name, groups[name])
    by_source: dict[str, Counter] = defaultdict(Counter)
    for p in prepared:
        by_source[source_of(p.row)][short_model(p.model)] += 1
    lines.append(" models per source: " + "; ".join(
        f"{src}: " + ", ".join(f"{m} {n}" for m, n in sorted(c.items())) for src, c in sorted(by_source.items())))
    return lines


def _natural(label: str) -> tuple:
    """Sort key: the label's words, numbers by value ("G 3-4" before "G 17-32")."""
    return tuple((0, int(w.split("-")[0]), w) if w.split("-")[0].isdigit() else (1, 0, w) for w in label.split())


def _bucket(g: int) -> str:
    """1, 2, 3-4, 5-8, ... (powers of two)."""
    if g <= 2:
        return str(g)
    hi = 1 << (g - 1).bit_length()
    return f"{hi // 2 + 1}-{hi}"


# ---------------------------------------------------------------------------------------------- main


def group_key(p: Prepared) -> tuple[str, str]:
    return p.framework, p.hardware


def refit_on(rows: Sequence[Prepared], params: Mapping[str, float], keys: Sequence[str],
             grid: int = 61) -> dict[str, float]:
    """`params` with each of `keys` rescanned over its BOUNDS on `rows` alone (mean |ln| TTFT error): the
    ceiling a per-model value of those factors could reach. A diagnosis only (`--oracle`): the estimator never
    sees a held-out model's rows."""
    out = dict(params)
    for k in keys:
        lo, hi = BOUNDS[k]
        out[k] = float(min(np.linspace(lo, hi, grid), key=lambda v: sum(
            abs(math.log(predict(p, {**out, k: float(v)})[0] / p.ttft_s)) for p in rows)))
    return out


def ceiling_key(p: Prepared) -> tuple[str, str, str]:
    return p.framework, p.hardware, p.family


def per_model_fit(prepared: Sequence[Prepared], fitted: Mapping[str, Mapping[str, Mapping[str, float]]],
                  fit: Callable[..., dict[str, float] | None]) -> dict[tuple[str, str, str], dict[str, float]]:
    """The shipped factors of each (framework, hardware, model architecture) group with the pair factors
    (accuracy_rows.PARAMS) refitted on that group's rows alone, the global and per-engine ones held as shipped; a
    group the fit declines (too few rows) keeps the shipped factors."""
    groups: dict[tuple[str, str, str], list[Prepared]] = defaultdict(list)
    for p in prepared:
        groups[ceiling_key(p)].append(p)
    out = {}
    for key, rows in groups.items():
        shipped = profile_params(rows[0], fitted)
        held = {k: shipped[k] for k in (*GLOBAL_PARAMS, *FRAMEWORK_PARAMS) if k in shipped}
        out[key] = {**shipped, **(fit(rows, fixed=held) or {})}
    return out


def loo_errors(prepared: Sequence[Prepared], fit: Callable[..., dict[str, float] | None],
               fit_global: Callable[[Sequence[Prepared]], dict[str, float] | None] | None = None,
               fit_framework: Callable[..., dict[str, float] | None] | None = None,
               oracle: Sequence[str] = ()
               ) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Leave-one-model-out: per (framework, hardware) group and architecture, fit on the rest, predict it.

    Mirrors how fit_efficiency.py fills pairs with too few rows: when the group's other models leave fewer
    rows than the fit minimum, the fit pools the framework's rows of the other models on all hardware.
    `fit_global` (fit_efficiency.fit_global) refits the once-for-all factors on every row of the other
    architectures, and the per-pair fits hold them fixed (`fit(rows, fixed=...)`), as the shipped fit does;
    `fit_framework` (fit_efficiency.fit_framework) likewise refits the per-framework factors on the framework's
    rows of the other architectures, every hardware, with the global ones fixed.
    """
    et = np.full(len(prepared), np.nan)
    ep = np.full(len(prepared), np.nan)
    notes = []
    groups: dict[tuple[str, str], list[int]] = defaultdict(list)
    for i, p in enumerate(prepared):
        groups[group_key(p)].append(i)
    held_global: dict[str, dict[str, float]] = {}

    def global_without(fam: str) -> dict[str, float]:
        if fit_global is None:
            return {}
        if fam not in held_global:
            held_global[fam] = fit_global([q for q in prepared if q.family != fam]) or {}
        return held_global[fam]

    held_framework: dict[tuple[str, str], dict[str, float]] = {}

    def fixed_without(fw: str, fam: str) -> dict[str, float]:
        glob = global_without(fam)
        if fit_framework is None:
            return glob
        if (fw, fam) not in held_framework:
            rows = [q for q in prepared if q.framework == fw and q.family != fam]
            held_framework[(fw, fam)] = (fit_framework(rows, fixed=glob) or {}) if rows else {}
        return {**glob, **held_framework[(fw, fam)]}

    def fit_fixed(rows: Sequence[Prepared], fixed: dict[str, float]) -> dict[str, float] | None:
        res = fit(rows, fixed=fixed) if fixed else fit(rows)
        return None if res is None else {**fixed, **res}

    for key, idx in sorted(groups.items()):
        fams = sorted({prepared[i].family for i in idx})
        for fam in fams:
            test = [i for i in idx if prepared[i].family == fam]
            train = [prepared[i] for i in idx if prepared[i].family != fam]
            fixed = fixed_without(key[0], fam)
            params = fit_fixed(train, fixed) if train else None
            name = short_model(prepared[test[0]].model)
            if params is None:
                pooled = [q for q in prepared if q.framework == key[0] and q.family != fam]
                params = fit_fixed(pooled, fixed) if pooled else None
                how = (f"pooled {key[0]} fit on {len(pooled)} rows of other models, all hardware" if params
                       else "default factors")
                notes.append(f"{key[0]} x {key[1]} without {name}: {len(train)} rows left -> {how}")
            if oracle and params is not None:  # diagnosis: these factors refitted on the held-out rows
                params = refit_on([prepared[i] for i in test], params, oracle)
            for i in test:
                p = prepared[i]
                t, s = predict(p, params if params is not None else {**profile_params(p, None), **fixed})
                et[i], ep[i] = t / p.ttft_s - 1, s / p.tpot_s - 1
    if fit_global is not None:
        names = {fam: "/".join(sorted({short_model(q.model) for q in prepared if q.family == fam}))
                 for fam in held_global}
        values = [f"{names[fam]} {k} {v:.3g}" for fam, g in sorted(held_global.items(), key=lambda x: names[x[0]])
                  for k, v in g.items()]
        notes.append("global factors refitted without each architecture: " + ", ".join(values))
    if held_framework:
        names = {fam: "/".join(sorted({short_model(q.model) for q in prepared if q.family == fam}))
                 for _, fam in held_framework}
        values = [f"{fw} without {names[fam]} {k} {v:.3g}" for (fw, fam), g in sorted(held_framework.items())
                  for k, v in g.items()]
        notes.append("per-framework factors refitted without each architecture: " + ", ".join(values))
    return et, ep, notes


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--csv", type=Path, default=DEFAULT_CSV)
    ap.add_argument("--factors", type=Path, default=FACTORS_YAML)
    ap.add_argument("--waves", type=int, default=None, help="benchmark waves k (default: workload.py's)")
    ap.add_argument("--no-cv", action="store_true", help="skip leave-one-model-out")
    ap.add_argument("--rows", type=int, default=0, help="only the first N rows (smoke runs)")
    ap.add_argument("--residuals", action="store_true",
                    help="also print the TTFT residuals by source, prefill groups and ISL (fitted factors)")
    ap.add_argument("--oracle", action="store_true",
                    help="also run leave-one-model-out with request_overhead_s refitted on the held-out model's own "
                         "rows: the ceiling of any per-model fixed TTFT cost (a diagnosis, not an estimate)")
    ap.add_argument("--ceiling", action="store_true",
                    help="also fit the pair factors per (framework, hardware, model) in-sample: what the serving "
                         "formulas can reach with per-model factors (a diagnosis, not an estimate)")
    ap.add_argument("--by-model", action="store_true",
                    help="also print (b) and (c) by model x framework and model x framework x hardware")
    ap.add_argument("--device", action="store_true",
                    help="also run leave-one-device-out: each hardware's rows priced as a device without a fit, "
                         "every factor refitted on the other devices' rows")
    args = ap.parse_args(argv)
    t0 = time.time()
    rows = first_rows(args.csv, args.rows)
    prepared, skipped = prepare_all(rows, args.waves)
    print(f"calibration CSV: {args.csv}  rows {len(rows)}, evaluated {len(prepared)}, skipped {len(skipped)}")
    reasons = Counter(err for _, _, err in skipped)
    for err, n in reasons.most_common():
        print(f"  skipped {n}: {err}")
    gap = check_fast_path(prepared)
    print(f"fast path vs estimate(): max relative difference {gap:.1e}"
          + ("  WARNING: the fast path no longer matches the estimator" if gap > 1e-6 else ""))
    print()
    et, ep = errors(prepared, lambda p: profile_params(p, None))
    print("\n".join(table(prepared, et, ep, "(a) default factors (hardware YAML x framework profile, no fit)")
                    + mode_table(prepared, et, ep) + ranking(prepared, et, ep)))
    print()
    fitted = load_factors(args.factors)
    et, ep = errors(prepared, lambda p: profile_params(p, fitted))
    print("\n".join(table(prepared, et, ep, f"(b) fitted factors, in-sample ({args.factors.name})")
                    + mode_table(prepared, et, ep) + ranking(prepared, et, ep)))
    print()
    if args.by_model:
        print("\n".join(group_table(et, ep, "(b) by model x framework (x hardware)", model_engine_groups(prepared))))
        print()
    if args.residuals:
        print("\n".join(residual_report(prepared, lambda p: profile_params(p, fitted))))
        print()
    if not args.no_cv:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from fit_efficiency import fit_framework, fit_global, fit_group  # noqa: E402

        et, ep, notes = loo_errors(prepared, fit_group, fit_global, fit_framework)
        print("\n".join(table(prepared, et, ep, "(c) leave-one-model-out (refit per framework x hardware without "
                                                "the held-out architecture)") + mode_table(prepared, et, ep)
                         + ranking(prepared, et, ep)))
        for n in notes:
            print(f"  note: {n}")
        print()
        if args.by_model:
            print("\n".join(group_table(et, ep, "(c) by held-out model x framework (x hardware)",
                                         model_engine_groups(prepared))))
            print()
        if args.oracle:
            et, ep, _ = loo_errors(prepared, fit_group, fit_global, fit_framework, oracle=("request_overhead_s",))
            print("\n".join(table(prepared, et, ep, "(c, oracle) leave-one-model-out with request_overhead_s refitted "
                                                    "on the held-out model's own rows (a ceiling, not an estimate)")
                             + mode_table(prepared, et, ep) + ranking(prepared, et, ep)))
            print()
    if args.ceiling:
        from fit_efficiency import fit_group  # noqa: E402

        params = per_model_fit(prepared, fitted, fit_group)
        et, ep = errors(prepared, lambda p: params[ceiling_key(p)])
        print("\n".join(table(prepared, et, ep, "(d) ceiling: the pair factors fitted per (framework, hardware, model), "
                                                "in-sample (a diagnosis, not an estimate)")
                         + mode_table(prepared, et, ep) + ranking(prepared, et, ep)))
        print()
    if args.device:
        from accuracy_device import device_errors  # noqa: E402  (it imports fit_efficiency, which imports this)

        et, ep, notes = device_errors(prepared)
        print("\n".join(table(prepared, et, ep, "(e) leave-one-device-out (each hardware priced as a device without "
                                                "a fit, every factor refitted on the other devices)")
                         + mode_table(prepared, et, ep) + ranking(prepared, et, ep)))
        for n in notes:
            print(f"  note: {n}")
        print()
    print("\n".join(published_report()))
    print(f"\nruntime {time.time() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
