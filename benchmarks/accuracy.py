"""Accuracy benchmark: the serving estimator against measured TTFT / TPOT.

    python benchmarks/accuracy.py [--csv PATH] [--factors PATH] [--waves K] [--no-cv] [--rows N] [--residuals]
                                  [--oracle]

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
stop ttft8).

It also reports rows skipped (with the InputError each raised) and predicted vs published figures for the rows
of facts/measurements.md the estimator can express (PUBLISHED below, with the source row number).

Fast path: the fit and the cross-validation evaluate thousands of factor settings. Every op of a step costs
max(compute_s, memory_s) + overhead_s, where compute_s scales as 1 / (achieved FLOP/s fraction: the GEMM's, the
attention kernel's, or for the routed experts the GEMM's times the grouped-GEMM fraction) and memory_s as
1 / (HBM fraction). `prepare` computes each row's prefill and decode steps once at the hardware's own factors and
keeps those per-op terms; `predict` rescales them for new factors and calls the same `serving_times` formulas as
`estimate`. Communication is scaled as a whole by 1 / comm, which is exact only for comm = 1 (link latency does
not scale); comm is never fitted and every shipped profile has 1. `check_fast_path` compares both paths on every
run and the report says so.
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from solver.errors import InputError  # noqa: E402
from solver.estimate.compute import factors_for  # noqa: E402
from solver.estimate.serving import (  # noqa: E402
    DEFAULT_REQUEST_OVERHEAD_S, ServingPolicy, ServingShape, ServingTimes, estimate, kernels_launched,
    kv_capacity_per_replica, serving_shape, serving_steps, serving_times, step_layers, step_time, synced_ranks,
    token_budget,
)
from solver.estimate.factors import Factors  # noqa: E402
from solver.estimate.step import StepCost  # noqa: E402
from solver.measured import Case, case_from_row, factors  # noqa: E402
from solver.specs.fitted import apply_fitted, fitted_factors  # noqa: E402

DEFAULT_CSV = REPO.parent / "shared" / "facts" / "calibration" / "measured_agg_calibration.csv"
FACTORS_YAML = REPO / "solver" / "frameworks" / "fitted" / "factors.yaml"

# The factors a fit may set per (framework, hardware), with their physically plausible bounds. Multipliers
# scale the hardware YAML's achieved fractions (gemm 0.78 x 1.3 ~ 1.0 is the ceiling); *_s are absolute seconds.
#   gemm                achieved GEMM FLOP/s (prefill GEMMs and the decode attention kernel's compute)
#   hbm                 achieved HBM bandwidth (decode weight and KV reads)
#   kernel_overhead_s   GPU time per kernel launched (1 - 12 us; the hardware YAML's 3 us is the neutral value):
#                       the step's fixed cost scales with layers x kernels, so it carries over between models
#                       (a per-step constant fitted instead, step_overhead_s, gave leave-one-model-out TPOT 15.2%
#                       against 13.8% with this; step_overhead_s stays a profile setting, not fitted)
#   request_overhead_s  fixed per-request cost on the TTFT path: HTTP, tokenizer, scheduler hand-off (0 - 0.3 s)
# (seq_layer_s, per framework: FRAMEWORK_PARAMS below)
# The attention and comm multipliers of the framework profile are honoured but not fitted: the CSV does not
# constrain them (fits with them moved the median error by < 1 point while drifting to their bounds).
PARAMS = ("gemm", "hbm", "kernel_overhead_s", "request_overhead_s")
# Factors fitted once per framework over all its rows (every hardware pooled) and written into each of its pairs:
#   seq_layer_s         cost per running sequence per layer the step runs (0 - 4 us; serving.step_layers): the
#                       per-sequence work inside each layer's kernels (the decode attention kernel's setup,
#                       page-table walk and split-KV reduction), so it scales with the model's layers and carries
#                       over between models. The kernels are the engine's own (TRT-LLM's, FlashInfer / FA3 in
#                       SGLang, vLLM's), so one value per engine: fitted per (framework, hardware) it took
#                       0 - 1.9 us depending on which models a pair held (trtllm x h200: 0.2 us with Llama-3.1-70B,
#                       1.87 us without it, whose held-out TPOT then came out 35% high); leave-one-model-out TPOT
#                       13.5% (p90 38.0%) per pair, 12.6% (p90 36.3%) per framework, 12.5% (p90 40.6%) once over
#                       every row (benchmarks/README.md, issue 15). Fitted per step instead (seq_overhead_s, a
#                       host cost per sequence): 15.9%; per kernel launched (seq_kernel_s, 160b017): 13.8% with
#                       group regressions. seq_overhead_s stays a profile setting, not fitted
FRAMEWORK_PARAMS = ("seq_layer_s",)
# Factors fitted once over all rows (every framework and hardware pooled) and written into every fitted pair:
#   grouped_gemm        routed-expert grouped-GEMM FLOP/s as a fraction of the dense GEMM's (0.1 - 1). Fitted per
#                       pair it would be unconstrained wherever a pair has one MoE model (held out, none is left).
#   allreduce_latency_s launch-to-done latency of the engines' custom one-shot / two-shot all-reduce kernels
#                       (comm.py; 2 - 20 us): a kernel property, the same for every engine that ships one.
GLOBAL_PARAMS = ("grouped_gemm", "allreduce_latency_s")
BOUNDS: dict[str, tuple[float, float]] = {
    "gemm": (0.3, 1.3),
    "hbm": (0.5, 1.25),
    "request_overhead_s": (0.0, 0.3),
    "grouped_gemm": (0.1, 1.0),
    "seq_layer_s": (0.0, 4e-6),
    "allreduce_latency_s": (2e-6, 2e-5),
    "kernel_overhead_s": (1e-6, 1.2e-5),
}
NEUTRAL: dict[str, float] = {"gemm": 1.0, "attention": 1.0, "hbm": 1.0, "comm": 1.0, "grouped_gemm": 1.0,
                             "step_overhead_s": 0.0, "request_overhead_s": DEFAULT_REQUEST_OVERHEAD_S,
                             "seq_overhead_s": 0.0, "seq_layer_s": 0.0, "allreduce_latency_s": 1e-5,
                             "kernel_overhead_s": 3e-6}
# the custom all-reduce latency the steps are prepared with (its time is linear in it: StepTerms.ar_count)
AR_PROBE_S = 1e-5


# ---------------------------------------------------------------------------------------------- fast path


@dataclass(frozen=True)
class StepTerms:
    """A step's cost split into terms that scale with one factor each (seconds at the hardware's factors)."""

    compute_s: np.ndarray  # per op
    kind: np.ndarray  # per op: the fraction its compute ran at (GEMM, ATTENTION or GROUPED below)
    memory_s: np.ndarray  # per op
    kernel_s: float  # launch overheads, summed
    comm_s: float  # exposed communication, summed, with the custom all-reduce at latency 0
    step_s: float  # the step overhead it was computed with
    kernels: float = 0.0  # kernels launched (serving.kernels_launched)
    layers: float = 0.0  # layer passes per sequence (serving.step_layers)
    ar_count: float = 0.0  # custom all-reduce latencies on the critical path: comm = comm_s + L x ar_count

    GEMM, ATTENTION, GROUPED = 0, 1, 2

    @classmethod
    def of(cls, step: StepCost, phase: str, f: Factors, probe: StepCost | None = None,
           layers: float = 0.0) -> "StepTerms":
        """`step` computed with the custom all-reduce latency AR_PROBE_S, `probe` the same step at latency 0;
        `layers` its layer passes per sequence (serving.step_layers)."""
        def kind(name: str) -> int:
            if name == "indexer_score" or (name == "attention_core" and phase == "prefill"):
                return cls.ATTENTION
            return cls.GROUPED if name == "routed_experts" else cls.GEMM

        comm0 = float((probe or step).exposed_comm_s)
        ar = (float(step.exposed_comm_s) - comm0) / AR_PROBE_S if probe is not None else 0.0
        return cls(np.array([o.compute_s for o in step.ops]), np.array([kind(o.name) for o in step.ops], dtype=int),
                   np.array([o.memory_s for o in step.ops]), float(sum(o.overhead_s for o in step.ops)),
                   comm0, float(step.overhead_s), kernels_launched(step, f), layers, ar)

    def time_s(self, r_gemm: float, r_attn: float, r_hbm: float, r_comm: float, step_overhead_s: float,
               r_grouped: float | None = None, ar_latency_s: float = AR_PROBE_S, r_kernel: float = 1.0) -> float:
        """Step time when the compute, memory and communication terms are scaled by the given ratios
        (r_grouped: the routed-expert GEMMs; None = r_gemm)."""
        ratio = np.array([r_gemm, r_attn, r_gemm if r_grouped is None else r_grouped])
        comp = self.compute_s * ratio[self.kind]
        comm = self.comm_s + ar_latency_s * self.ar_count
        return float(np.maximum(comp, self.memory_s * r_hbm).sum()) + self.kernel_s * r_kernel + comm * r_comm \
            + step_overhead_s


@dataclass(frozen=True)
class Prepared:
    """One CSV row ready for fast re-evaluation."""

    index: int
    row: Mapping[str, Any]
    case: Case
    shape: ServingShape
    prefill: StepTerms
    decode: StepTerms
    framework: str
    hardware: str
    model: str
    family: str  # architecture: models with identical shapes share it (DeepSeek-V3 and -R1)
    ttft_s: float
    tpot_s: float
    base: Factors | None = None  # the factors the steps were prepared with (the framework's serving loop)


def family_of(case: Case) -> str:
    m = case.model
    return "|".join(str(x) for x in (m.model_type, m.hidden_size, m.num_layers, m.num_experts, m.vocab_size,
                                     m.num_attention_heads, m.intermediate_size))


def _measured(row: Mapping[str, Any], col: str) -> float:
    try:
        value = float(row[col])
    except (KeyError, TypeError, ValueError):
        raise InputError(col, f"not a number: {row.get(col)!r}") from None
    if not value > 0 or math.isnan(value):
        raise InputError(col, f"must be > 0, got {row.get(col)!r}")
    return value / 1e3


def prepare(row: Mapping[str, Any], index: int = 0, waves: int | None = None) -> Prepared:
    """Specs, serving shape and per-op step terms of a row (InputError names the column it cannot use)."""
    case = case_from_row(row, waves=waves)
    ttft, tpot = _measured(row, "ttft_ms"), _measured(row, "tpot_ms")
    # the hardware's own factors (multipliers 1, no step overhead) with the framework's serving loop: its
    # graphs and custom all-reduce, the latter at AR_PROBE_S and at 0 (the step is linear in that latency)
    loop = case.framework.serving_factors()
    base = factors_for(case.hw, {**loop, "allreduce_latency_s": AR_PROBE_S})
    zero = factors_for(case.hw, {**loop, "allreduce_latency_s": 0.0})
    # the framework's scheduler token budget (profile default for this hardware), as estimate() resolves it
    framework_f = factors(case)
    wl = replace(case.workload, token_budget=token_budget(case.workload, framework_f, case.pc))
    case = replace(case, workload=wl)
    cap = kv_capacity_per_replica(case.model, case.hw, case.pc, case.prec, wl.context_len)
    shape = serving_shape(wl, case.pc.attn_replicas, cap, synced_ranks(case.model, case.pc), base.graph_sizes)
    pre, dec = serving_steps(case.model, case.hw, case.pc, case.prec, base, wl, shape)
    pre0, dec0 = serving_steps(case.model, case.hw, case.pc, case.prec, zero, wl, shape)
    draft = wl.mtp if case.model.num_mtp_layers else 0
    pre_layers = step_layers(case.model, case.pc, "prefill", shape.prompts_per_step)
    dec_layers = step_layers(case.model, case.pc, "decode", shape.graph_batch or shape.running, draft)
    return Prepared(index, row, case, shape, StepTerms.of(pre, "prefill", base, pre0, pre_layers),
                    StepTerms.of(dec, "decode", base, dec0, dec_layers), case.framework.name, case.hw.name, case.model.name,
                    family_of(case), ttft, tpot, base)


def load_rows(path: Path) -> list[dict[str, Any]]:
    import pandas as pd

    return pd.read_csv(path, keep_default_na=False).to_dict("records")


def prepare_all(rows: Sequence[Mapping[str, Any]], waves: int | None = None
                ) -> tuple[list[Prepared], list[tuple[int, Mapping[str, Any], str]]]:
    """(evaluable rows, skipped rows with the error each raised). Only InputError is expected."""
    ok, skipped = [], []
    for i, row in enumerate(rows):
        try:
            ok.append(prepare(row, i, waves))
        except InputError as exc:
            skipped.append((i, row, str(exc)))
    return ok, skipped


def _ratio(hw_fraction: float, mult: float) -> float:
    """compute time at multiplier `mult` / compute time at the hardware's own fraction (factors_for clamps at 1)."""
    return min(1.0, hw_fraction) / min(1.0, hw_fraction * mult)


def predict(p: Prepared, params: Mapping[str, float]) -> tuple[float, float]:
    """(TTFT s, TPOT s) of a prepared row under factor settings `params` (keys of PARAMS; missing = NEUTRAL)."""
    t, _, _ = predict_times(p, params)
    return t.ttft_s, t.tpot_s


def predict_times(p: Prepared, params: Mapping[str, float]) -> tuple[ServingTimes, float, float]:
    """(the serving formulas' parts, prefill step s, decode step s) of a prepared row under `params`."""
    e = p.case.hw.efficiency
    q = {**NEUTRAL, **params}
    r = (_ratio(e.gemm, q["gemm"]), _ratio(e.attention, q["attention"]), _ratio(e.hbm, q["hbm"]), 1.0 / q["comm"])
    grouped = r[0] / min(1.0, q["grouped_gemm"])  # the steps were computed at grouped_gemm = 1
    step = q["step_overhead_s"]
    lat = q["allreduce_latency_s"]
    hw_kernel = e.kernel_overhead_s
    rk = q["kernel_overhead_s"] / hw_kernel if q.get("kernel_overhead_s") is not None and hw_kernel > 0 else 1.0
    pre = p.prefill.time_s(r[0], r[1], r[2], r[3], step, grouped, lat, rk)
    dec = p.decode.time_s(r[0], r[1], r[2], r[3], step, grouped, lat, rk)
    f = replace(p.base, seq_overhead_s=q["seq_overhead_s"], seq_layer_s=q["seq_layer_s"])  # type: ignore[type-var]
    pre = step_time(pre, p.prefill.kernels, p.shape.prompts_per_step, True, f, layers=p.prefill.layers)
    dec = step_time(dec, p.decode.kernels, p.shape.running, p.shape.eager_decode, f, layers=p.decode.layers)
    wl = replace(p.case.workload, request_overhead_s=q["request_overhead_s"])
    return serving_times(p.shape, pre, dec, wl, ServingPolicy.of(f)), pre, dec


def profile_params(p: Prepared, fitted: Mapping[str, Mapping[str, Mapping[str, float]]] | None) -> dict[str, float]:
    """The factor settings `estimate` uses for this row: framework profile x fitted file (None = no fit)."""
    eff = p.case.framework.efficiency
    out = {"gemm": eff.gemm, "attention": eff.attention, "hbm": eff.hbm, "comm": eff.comm,
           "grouped_gemm": eff.grouped_gemm, "step_overhead_s": eff.step_overhead_s,
           "request_overhead_s": DEFAULT_REQUEST_OVERHEAD_S, "seq_overhead_s": 0.0, "seq_layer_s": 0.0,
           "allreduce_latency_s": p.case.hw.tiers["intra_node"].latency_s,
           "kernel_overhead_s": eff.kernel_overhead_s if eff.kernel_overhead_s is not None
           else p.case.hw.efficiency.kernel_overhead_s}
    return apply_fitted(out, ((fitted or {}).get(p.framework, {}).get(p.hardware, {}) or {}))


def load_factors(path: Path = FACTORS_YAML) -> dict[str, dict[str, dict[str, float]]]:
    return fitted_factors(path)


def check_fast_path(prepared: Sequence[Prepared], limit: int = 12) -> float:
    """Largest relative difference between the fast path and `estimate` (with the shipped factor file)."""
    worst = 0.0
    fitted = load_factors()
    for p in prepared[:limit]:
        c = p.case
        est = estimate(c.model, c.hw, c.pc, c.prec, factors(c), c.workload)
        t, s = predict(p, profile_params(p, fitted))
        worst = max(worst, abs(t / est.ttft_s - 1), abs(s / est.tpot_s - 1))
    return worst


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


def table(prepared: Sequence[Prepared], et: np.ndarray, ep: np.ndarray, title: str) -> list[str]:
    """Plain-text table: overall, then per model / system / framework."""
    lines = [title, f"{'group':<44}{'rows':>5}  {'TTFT med':>8} {'mean':>7} {'p90':>7}  {'TPOT med':>8} {'mean':>7}"
             f" {'p90':>7}  {'TTFT bias':>9} {'TPOT bias':>9}"]

    def add(label: str, idx: list[int]) -> None:
        t, s = summary(et[idx]), summary(ep[idx])
        bt, bs = float(np.median(et[idx]) * 100), float(np.median(ep[idx]) * 100)
        lines.append(f"{label:<44}{len(idx):>5}  {t[0]:>7.1f}% {t[1]:>6.1f}% {t[2]:>6.1f}%  {s[0]:>7.1f}% "
                     f"{s[1]:>6.1f}% {s[2]:>6.1f}%  {bt:>+8.1f}% {bs:>+8.1f}%")

    add("ALL", list(range(len(prepared))))
    for key, label in (("model", "model"), ("hardware", "system"), ("framework", "framework")):
        groups: dict[str, list[int]] = defaultdict(list)
        for i, p in enumerate(prepared):
            groups[getattr(p, key)].append(i)
        for name in sorted(groups):
            add(f"  {label}: {short_model(name)}", groups[name])
    return lines


def ranking(prepared: Sequence[Prepared], et: np.ndarray, ep: np.ndarray) -> list[str]:
    """Side-by-side groups (same model, hardware, framework, ISL, OSL, concurrency; several parallel configs):
    does the estimate (measured x (1 + signed error)) pick the measured best? By output tokens/s per GPU
    (C x OSL / (TTFT + (OSL - 1) TPOT) / world) and by TPOT. Rows repeated under one config are averaged."""
    groups: dict[tuple, dict[tuple, list[tuple[float, float, float, float]]]] = defaultdict(lambda: defaultdict(list))
    for i, p in enumerate(prepared):
        w, pc = p.case.workload, p.case.pc
        t, s = p.ttft_s * (1 + et[i]), p.tpot_s * (1 + ep[i])
        key = (p.model, p.hardware, p.framework, w.isl, w.osl, w.concurrency)
        cfg = (pc.attn_tp_size, pc.attn_replicas, pc.moe_tp_size, pc.moe_ep_size, str(p.case.prec.fmt("dense").name))

        def per_gpu(ttft: float, tpot: float) -> float:
            return w.concurrency * w.osl / (ttft + (w.osl - 1) * tpot) / pc.world_size

        groups[key][cfg].append((per_gpu(p.ttft_s, p.tpot_s), per_gpu(t, s), p.tpot_s, s))
    n = hit_tput = hit_tpot = 0
    for cfgs in groups.values():
        if len(cfgs) < 2:
            continue
        n += 1
        mean = {c: [float(np.mean([v[i] for v in vals])) for i in range(4)] for c, vals in cfgs.items()}
        hit_tput += max(mean, key=lambda c: mean[c][0]) == max(mean, key=lambda c: mean[c][1])
        hit_tpot += min(mean, key=lambda c: mean[c][2]) == min(mean, key=lambda c: mean[c][3])
    if not n:
        return ["ranking: no side-by-side groups"]
    return [f"ranking within {n} side-by-side groups (same model, hardware, framework, ISL/OSL, concurrency): "
            f"picks the measured best by tok/s/GPU in {hit_tput} ({100 * hit_tput / n:.0f}%), by TPOT in "
            f"{hit_tpot} ({100 * hit_tpot / n:.0f}%)"]


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


# ---------------------------------------------------------------------------------------------- published rows


@dataclass(frozen=True)
class Published:
    """A row of facts/measurements.md the estimator can express, and what it published."""

    source_row: int
    label: str
    row: dict[str, Any]  # CSV-style columns (serving) or a decode/prefill workload (kind)
    metric: str  # tok_s_gpu | tok_s_user | ttft_ms | tpot_ms | tok_s_node | in_tok_s_node | in_tok_s_npu | tok_s_total
    value: float
    note: str = ""


def _srv(model: str, system: str, backend: str, precision: str, isl: int, osl: int, conc: int, tp: int, dp: int,
         moe_tp: int, moe_ep: int, **extra: Any) -> dict[str, Any]:
    return {"model": model, "system": system, "backend": backend, "precision": precision, "isl": isl, "osl": osl,
            "concurrency": conc, "tp": tp, "attention_dp": dp, "moe_tp": moe_tp, "moe_ep": moe_ep, **extra}


R1, L70, Q235, OSS = "deepseek-ai/DeepSeek-R1", "meta-llama/Meta-Llama-3.1-70B", "Qwen/Qwen3-235B-A22B", \
    "openai/gpt-oss-120b"
PUBLISHED: tuple[Published, ...] = (
    Published(5, "R1 FP4 8xB200 DP8+EP8 1K/2K c7168",
              _srv(R1, "b200_sxm", "trtllm", "fp4", 1024, 2048, 7168, 1, 8, 1, 8), "tok_s_gpu", 5393),
    Published(5, "  same, per user", _srv(R1, "b200_sxm", "trtllm", "fp4", 1024, 2048, 7168, 1, 8, 1, 8),
              "tok_s_user", 6.2),
    Published(6, "R1 FP8 8xH200 DP8+EP8 1K/2K c1024 maxbatch128",
              _srv(R1, "h200_sxm", "trtllm", "fp8", 1024, 2048, 1024, 1, 8, 1, 8, max_running=128), "tok_s_gpu", 1436),
    Published(6, "  same, per user", _srv(R1, "h200_sxm", "trtllm", "fp8", 1024, 2048, 1024, 1, 8, 1, 8,
                                          max_running=128), "tok_s_user", 11.3),
    Published(7, "R1 FP4 B200 TP8/EP2 c1 MTP3", _srv(R1, "b200_sxm", "trtllm", "fp4", 1024, 2048, 1, 8, 1, 4, 2,
                                                     mtp=3), "tok_s_user", 274, "ISL/OSL not published: 1K/2K assumed"),
    Published(7, "R1 FP8 H200 TP8/EP4 c1 MTP3", _srv(R1, "h200_sxm", "trtllm", "fp8", 1024, 2048, 1, 8, 1, 2, 4,
                                                     mtp=3), "tok_s_user", 158, "ISL/OSL not published: 1K/2K assumed"),
    Published(10, "V3.2 FP4-MoE 8xB200 DP8+EP8 MTP1 8K/1K c256",
              _srv("deepseek-ai/DeepSeek-V3.2", "b200_sxm", "trtllm", "", 8192, 1024, 256, 1, 8, 1, 8, mtp=1,
                   moe_quant_mode="nvfp4"), "ttft_ms", 19500,
              "the three figures disagree at C 256: C x OSL / (TTFT + (OSL - 1) TPOT) = 272 tok/s/GPU; they agree "
              "at C ~ 1012"),
    Published(10, "  same, TPOT", _srv("deepseek-ai/DeepSeek-V3.2", "b200_sxm", "trtllm", "", 8192, 1024, 256, 1, 8,
                                       1, 8, mtp=1, moe_quant_mode="nvfp4"), "tpot_ms", 98.5),
    Published(10, "  same, per GPU", _srv("deepseek-ai/DeepSeek-V3.2", "b200_sxm", "trtllm", "", 8192, 1024, 256, 1,
                                          8, 1, 8, mtp=1, moe_quant_mode="nvfp4"), "tok_s_gpu", 1077),
    Published(13, "Qwen3-235B W8A8 A3 TP4xDP4+EP16 3584/1536 c144",
              _srv(Q235, "atlas_a3", "vllm", "", 3584, 1536, 144, 4, 4, 1, 16, gemm_quant_mode="int8",
                   moe_quant_mode="int8"), "ttft_ms", 4720, "vllm-ascend: the vllm profile"),
    Published(13, "  same, TPOT", _srv(Q235, "atlas_a3", "vllm", "", 3584, 1536, 144, 4, 4, 1, 16,
                                       gemm_quant_mode="int8", moe_quant_mode="int8"), "tpot_ms", 48.7),
    Published(13, "  same, total tok/s", _srv(Q235, "atlas_a3", "vllm", "", 3584, 1536, 144, 4, 4, 1, 16,
                                              gemm_quant_mode="int8", moe_quant_mode="int8"), "tok_s_total", 2762),
    Published(14, "Llama-3.3-70B FP8 2xH100 TP2 5000/500 c1", _srv(L70, "h100_sxm", "trtllm", "fp8", 5000, 500, 1, 2,
                                                                   1, 2, 1), "ttft_ms", 407,
              "NIM (TRT-LLM); Llama-3.1-70B architecture"),
    Published(14, "  same, ITL", _srv(L70, "h100_sxm", "trtllm", "fp8", 5000, 500, 1, 2, 1, 2, 1), "tpot_ms", 18.6),
    Published(14, "Llama-3.3-70B FP8 2xH100 TP2 5000/500 c50", _srv(L70, "h100_sxm", "trtllm", "fp8", 5000, 500, 50,
                                                                    2, 1, 2, 1), "ttft_ms", 835),
    Published(14, "  same, ITL", _srv(L70, "h100_sxm", "trtllm", "fp8", 5000, 500, 50, 2, 1, 2, 1), "tpot_ms", 59.7),
    Published(14, "  same, total output tok/s", _srv(L70, "h100_sxm", "trtllm", "fp8", 5000, 500, 50, 2, 1, 2, 1),
              "tok_s_total", 814),
    Published(16, "Qwen3-235B FP8 H200 DP4+EP4 1K/1K max load", _srv("Qwen/Qwen3-235B-A22B-FP8", "h200_sxm", "trtllm",
                                                                     "fp8", 1024, 1024, 0, 1, 4, 1, 4),
              "tok_s_gpu", 3268, "'max load': concurrency = the KV-cache capacity the estimator computes"),
    Published(17, "GPT-OSS-120B H200 TP1 1K/1K max load", _srv(OSS, "h200_sxm", "trtllm", "", 1024, 1024, 0, 1, 1, 1,
                                                                1, gemm_quant_mode="mxfp4", moe_quant_mode="mxfp4"),
              "tok_s_gpu", 6798, "'max load' as #16; MXFP4 weight-only on Hopper"),
)


def _published_estimate(pub: Published) -> tuple[float, str]:
    """(predicted value in the published metric, note)."""
    row = dict(pub.row)
    mtp = int(row.pop("mtp", 0))
    max_running = int(row.pop("max_running", 0))
    note = pub.note
    if not row["concurrency"]:  # 'max load': the KV-cache capacity of the deployment
        probe = case_from_row({**row, "concurrency": 1})
        cap = kv_capacity_per_replica(probe.model, probe.hw, probe.pc, probe.prec, probe.workload.context_len)
        row["concurrency"] = max(1, int(cap) * probe.pc.attn_replicas)
        note = f"{note}; C = {row['concurrency']}".lstrip("; ")
    case = case_from_row(row)
    wl = replace(case.workload, mtp=mtp, max_running=max_running)
    est = estimate(case.model, case.hw, case.pc, case.prec, factors(case), wl)
    value = {
        "tok_s_gpu": est.output_tokens_per_s_per_rank,
        "tok_s_user": est.tokens_per_s_per_user,
        "ttft_ms": est.ttft_s * 1e3,
        "tpot_ms": est.tpot_s * 1e3,
        "tok_s_total": est.output_tokens_per_s,
    }[pub.metric]
    return value, note


def published_report() -> list[str]:
    lines = ["Published figures (facts/measurements.md; never fitted on):",
             f"{'#':>3}  {'setup':<50}{'metric':<12}{'published':>10}{'predicted':>11}{'error':>8}  note"]
    for pub in PUBLISHED:
        try:
            value, note = _published_estimate(pub)
            err = f"{(value / pub.value - 1) * 100:+.0f}%"
            lines.append(f"{pub.source_row:>3}  {pub.label:<50}{pub.metric:<12}{pub.value:>10g}{value:>11.4g}"
                         f"{err:>8}  {note}")
        except InputError as exc:
            lines.append(f"{pub.source_row:>3}  {pub.label:<50}{pub.metric:<12}{pub.value:>10g}{'-':>11}{'-':>8}"
                         f"  not expressible: {exc}")
    return lines


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
    ap.add_argument("--waves", type=int, default=None, help="benchmark waves k (default: serving.py's)")
    ap.add_argument("--no-cv", action="store_true", help="skip leave-one-model-out")
    ap.add_argument("--rows", type=int, default=0, help="only the first N rows (smoke runs)")
    ap.add_argument("--residuals", action="store_true",
                    help="also print the TTFT residuals by source, prefill groups and ISL (fitted factors)")
    ap.add_argument("--oracle", action="store_true",
                    help="also run leave-one-model-out with request_overhead_s refitted on the held-out model's own "
                         "rows: the ceiling of any per-model fixed TTFT cost (a diagnosis, not an estimate)")
    args = ap.parse_args(argv)
    t0 = time.time()
    rows = load_rows(args.csv)
    if args.rows:
        rows = rows[: args.rows]
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
        if args.oracle:
            et, ep, _ = loo_errors(prepared, fit_group, fit_global, fit_framework, oracle=("request_overhead_s",))
            print("\n".join(table(prepared, et, ep, "(c, oracle) leave-one-model-out with request_overhead_s refitted "
                                                    "on the held-out model's own rows (a ceiling, not an estimate)")
                             + mode_table(prepared, et, ep) + ranking(prepared, et, ep)))
            print()
    print("\n".join(published_report()))
    print(f"\nruntime {time.time() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
