"""The calibration rows of the accuracy benchmark, prepared once, and their fast prediction under new factors.

Fast path: the fit and the cross-validation evaluate thousands of factor settings. Every op of a step costs
max(compute_s, memory_s) + overhead_s, where compute_s scales as 1 / (achieved FLOP/s fraction: the GEMM's, the
attention kernel's, for the routed experts the GEMM's times the grouped-GEMM fraction, for a weight-only GEMM the
GEMM's times the dequantizing GEMM's fraction) and memory_s as
1 / (HBM fraction). `prepare` computes each row's prefill and decode steps once at the hardware's own factors and
keeps those per-op terms; `predict` rescales them for new factors and calls the same `serving_times` formulas as
`estimate`. Communication is scaled as a whole by 1 / comm, which is exact only for comm = 1 (link latency does
not scale); comm is never fitted and every shipped profile has 1. `check_fast_path` compares both paths on every
run and the report says so.

The factors a fit may set, their bounds and neutral values are defined here too (solver.calibrate.factor_fit reads
them; benchmarks/accuracy_rows.py re-exports this module for the benchmark scripts).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from solver.errors import InputError
from solver.estimate.compute import factors_for
from solver.estimate.serving import (
    DEFAULT_REQUEST_OVERHEAD_S, ServingPolicy, ServingShape, ServingTimes, estimate, estimate_memory_options,
    kernels_launched,
    kv_capacity_per_replica, serving_shape, serving_steps, serving_times, step_layers, step_time, synced_ranks,
    token_budget,
)
from solver.estimate.engine_step import stage_layer_passes
from solver.estimate.factors import Factors
from solver.estimate.step import StepCost
from solver.estimate.workload import config_budget, prompt_draft_passes
from solver.measured import Case, case_from_row, factors
from solver.specs.fitted import apply_fitted, fitted_factors

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
#   seq_layer_s         cost per running sequence per layer the step runs (0 - 4 us; engine_step.step_layers): the
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
#   dequant_gemm        a weight-only GEMM's FLOP/s (W4A16: Precision.weight_only, the weights dequantized in the
#                       kernel; the routed experts' MoE kernel included) as a fraction of the dense 16-bit GEMM's
#                       (0.1 - 1). The rows that run one are gpt-oss-120b's MXFP4 experts on H100 / H200 (34 of
#                       313, two engines, two Hopper devices): one kernel family, one number; per hardware it
#                       would be that one model fitted twice, and no other device has a row of it.
GLOBAL_PARAMS = ("grouped_gemm", "allreduce_latency_s", "dequant_gemm")
BOUNDS: dict[str, tuple[float, float]] = {
    "gemm": (0.3, 1.3),
    "hbm": (0.5, 1.25),
    "request_overhead_s": (0.0, 0.3),
    "grouped_gemm": (0.1, 1.0),
    "dequant_gemm": (0.1, 1.0),
    "seq_layer_s": (0.0, 4e-6),
    "allreduce_latency_s": (2e-6, 2e-5),
    "kernel_overhead_s": (1e-6, 1.2e-5),
}
NEUTRAL: dict[str, float] = {"gemm": 1.0, "attention": 1.0, "hbm": 1.0, "comm": 1.0, "grouped_gemm": 1.0,
                             "dequant_gemm": 1.0, "step_overhead_s": 0.0, "request_overhead_s": DEFAULT_REQUEST_OVERHEAD_S,
                             "seq_overhead_s": 0.0, "seq_layer_s": 0.0, "allreduce_latency_s": 1e-5,
                             "kernel_overhead_s": 3e-6}
# the custom all-reduce latency the steps are prepared with (its time is linear in it: StepTerms.ar_count)
AR_PROBE_S = 1e-5
# the dequant_gemm a row with a weight-only GEMM is prepared with a second time: the ops it slows are those GEMMs
DEQUANT_PROBE = 0.5


# ---------------------------------------------------------------------------------------------- fast path


@dataclass(frozen=True)
class StepTerms:
    """A step's cost split into terms that scale with one factor each (seconds at the hardware's factors)."""

    compute_s: np.ndarray  # per op
    kind: np.ndarray  # per op: the fraction its compute ran at (GEMM, ATTENTION, GROUPED or DEQUANT below)
    memory_s: np.ndarray  # per op
    kernel_s: float  # launch overheads, summed
    comm_s: float  # exposed communication, summed, with the custom all-reduce at latency 0
    step_s: float  # the step overhead it was computed with
    kernels: float = 0.0  # kernels launched (engine_step.kernels_launched)
    layers: float = 0.0  # layer passes per sequence (engine_step.step_layers)
    ar_count: float = 0.0  # custom all-reduce latencies on the critical path: comm = comm_s + L x ar_count

    GEMM, ATTENTION, GROUPED, DEQUANT = 0, 1, 2, 3

    @classmethod
    def of(cls, step: StepCost, phase: str, f: Factors, probe: StepCost | None = None,
           layers: float = 0.0, dequant: StepCost | None = None) -> "StepTerms":
        """`step` computed with the custom all-reduce latency AR_PROBE_S, `probe` the same step at latency 0;
        `layers` its layer passes per sequence (engine_step.step_layers); `dequant` the same step at
        dequant_gemm = DEQUANT_PROBE (None: no GEMM of the row runs weight-only), whose slower ops are DEQUANT."""
        def kind(i: int, name: str) -> int:
            if dequant is not None and dequant.ops[i].compute_s > step.ops[i].compute_s * (1 + 1e-9):
                return cls.DEQUANT
            if name == "indexer_score" or (name == "attention_core" and phase == "prefill"):
                return cls.ATTENTION
            return cls.GROUPED if name == "routed_experts" else cls.GEMM

        comm0 = float((probe or step).exposed_comm_s)
        ar = (float(step.exposed_comm_s) - comm0) / AR_PROBE_S if probe is not None else 0.0
        return cls(np.array([o.compute_s for o in step.ops]),
                   np.array([kind(i, o.name) for i, o in enumerate(step.ops)], dtype=int),
                   np.array([o.memory_s for o in step.ops]), float(sum(o.overhead_s for o in step.ops)),
                   comm0, float(step.overhead_s), kernels_launched(step, f), layers, ar)

    def time_s(self, r_gemm: float, r_attn: float, r_hbm: float, r_comm: float, step_overhead_s: float,
               r_grouped: float | None = None, ar_latency_s: float = AR_PROBE_S, r_kernel: float = 1.0,
               r_dequant: float | None = None) -> float:
        """Step time when the compute, memory and communication terms are scaled by the given ratios
        (r_grouped: the routed-expert GEMMs, r_dequant: the weight-only GEMMs; None = r_gemm)."""
        ratio = np.array([r_gemm, r_attn, r_gemm if r_grouped is None else r_grouped,
                          r_gemm if r_dequant is None else r_dequant])
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
    loop = case.framework.serving_factors(case.hw.vendor)
    base = factors_for(case.hw, {**loop, "allreduce_latency_s": AR_PROBE_S})
    zero = factors_for(case.hw, {**loop, "allreduce_latency_s": 0.0})
    # the framework's scheduler token budget (profile default for this hardware), as estimate() resolves it
    framework_f = factors(case)
    synced = synced_ranks(case.model, case.pc)
    wl = replace(case.workload, token_budget=token_budget(
        case.workload, framework_f, synced, math.ceil(case.workload.concurrency / case.pc.attn_replicas),
        config_budget(case.model, case.hw, case.pc, framework_f)))
    case = replace(case, workload=wl)
    # the sequences a replica holds under the memory options estimate() sizes them with (the engine's layout,
    # this prompt's activations): without them row 137 held 298 where estimate holds 294 (TTFT 1.6% apart)
    cap = kv_capacity_per_replica(case.model, case.hw, case.pc, case.prec, wl.context_len,
                                  estimate_memory_options(framework_f, wl), wl.mtp)
    draft = wl.mtp if case.model.num_mtp_layers else 0
    shape = serving_shape(wl, case.pc.attn_replicas, cap, synced, base.graph_sizes, case.pc.pp_size,
                          ServingPolicy.of(framework_f).decode_first_for(synced),
                          stage_layer_passes(case.model, case.pc.pp_size, prompt_draft_passes(draft)))
    pre, dec = serving_steps(case.model, case.hw, case.pc, case.prec, base, wl, shape)
    pre0, dec0 = serving_steps(case.model, case.hw, case.pc, case.prec, zero, wl, shape)
    pre_d = dec_d = None
    if any(case.prec.weight_only(g) for g in case.prec.weights):
        pre_d, dec_d = serving_steps(case.model, case.hw, case.pc, case.prec,
                                     replace(base, dequant_gemm=DEQUANT_PROBE), wl, shape)
    pre_layers = step_layers(case.model, case.pc, "prefill", shape.prompts_per_step, prompt_draft_passes(draft))
    dec_layers = step_layers(case.model, case.pc, "decode", shape.graph_batch or shape.running, draft)
    return Prepared(index, row, case, shape, StepTerms.of(pre, "prefill", base, pre0, pre_layers, pre_d),
                    StepTerms.of(dec, "decode", base, dec0, dec_layers, dec_d), case.framework.name, case.hw.name, case.model.name,
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


def rescaled_steps(e, prefill: StepTerms, decode: StepTerms, q: Mapping[str, float]) -> tuple[float, float]:
    """(prefill, decode) GPU seconds of prepared step terms under the factor settings `q` (NEUTRAL filled in),
    `e` the hardware efficiency they were prepared at; before the serving loop (step_time)."""
    r = (_ratio(e.gemm, q["gemm"]), _ratio(e.attention, q["attention"]), _ratio(e.hbm, q["hbm"]), 1.0 / q["comm"])
    grouped = r[0] / min(1.0, q["grouped_gemm"])  # the steps were computed at grouped_gemm = 1
    dequant = r[0] / min(1.0, q["dequant_gemm"])  # and dequant_gemm = 1
    step = q["step_overhead_s"]
    lat = q["allreduce_latency_s"]
    hw_kernel = e.kernel_overhead_s
    rk = q["kernel_overhead_s"] / hw_kernel if q.get("kernel_overhead_s") is not None and hw_kernel > 0 else 1.0
    return (prefill.time_s(r[0], r[1], r[2], r[3], step, grouped, lat, rk, dequant),
            decode.time_s(r[0], r[1], r[2], r[3], step, grouped, lat, rk, dequant))


def predict_times(p: Prepared, params: Mapping[str, float]) -> tuple[ServingTimes, float, float]:
    """(the serving formulas' parts, prefill step s, decode step s) of a prepared row under `params`."""
    q = {**NEUTRAL, **params}
    pre, dec = rescaled_steps(p.case.hw.efficiency, p.prefill, p.decode, q)
    f = replace(p.base, seq_overhead_s=q["seq_overhead_s"], seq_layer_s=q["seq_layer_s"])  # type: ignore[type-var]
    pre = step_time(pre, p.prefill.kernels, p.shape.prompts_per_step, True, f, layers=p.prefill.layers)
    dec = step_time(dec, p.decode.kernels, p.shape.running, p.shape.eager_decode, f, layers=p.decode.layers)
    wl = replace(p.case.workload, request_overhead_s=q["request_overhead_s"])
    return serving_times(p.shape, pre, dec, wl, ServingPolicy.of(f)), pre, dec


def profile_params(p: Prepared, fitted: Mapping[str, Mapping[str, Mapping[str, float]]] | None) -> dict[str, float]:
    """The factor settings `estimate` uses for this row: framework profile x fitted file (None = no fit)."""
    eff = p.case.framework.efficiency
    out = {"gemm": eff.gemm, "attention": eff.attention, "hbm": eff.hbm, "comm": eff.comm,
           "grouped_gemm": eff.grouped_gemm, "dequant_gemm": eff.dequant_gemm, "step_overhead_s": eff.step_overhead_s,
           "request_overhead_s": DEFAULT_REQUEST_OVERHEAD_S, "seq_overhead_s": 0.0, "seq_layer_s": 0.0,
           "allreduce_latency_s": p.case.hw.tiers["intra_node"].latency_s,
           "kernel_overhead_s": eff.kernel_overhead_s if eff.kernel_overhead_s is not None
           else p.case.hw.efficiency.kernel_overhead_s}
    return apply_fitted(out, ((fitted or {}).get(p.framework, {}).get(p.hardware, {}) or {}))


def load_factors(path: Path | None = None) -> dict[str, dict[str, dict[str, float]]]:
    """A fitted file's factors (None: the shipped solver/frameworks/fitted/factors.yaml)."""
    return fitted_factors(path)


def check_fast_path(prepared: Sequence[Prepared], limit: int | None = None) -> float:
    """Largest relative difference between the fast path and `estimate` (with the shipped factor file), over
    every row by default: a drift that only some rows' shapes reach (the KV capacity binding) hides from the
    first few (stop 48: row 137 alone was 1.6% off)."""
    worst = 0.0
    fitted = load_factors()
    for p in prepared[:limit]:
        c = p.case
        est = estimate(c.model, c.hw, c.pc, c.prec, factors(c), c.workload)
        t, s = predict(p, profile_params(p, fitted))
        worst = max(worst, abs(t / est.ttft_s - 1), abs(s / est.tpot_s - 1))
    return worst
