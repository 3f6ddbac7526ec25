"""Candidate mechanisms for the TPOT error at TP 1, each refitted and measured as benchmarks/accuracy.py does.

    python benchmarks/tpot_hypotheses.py [VARIANT ...] [--parts]

Each variant adds one physical term to the fast path of the calibration rows (accuracy_rows.predict_times) and
one fitted factor (once over all rows, or once per engine: never per model or row), refits every factor as
fit_efficiency.py does, and prints in-sample and leave-one-model-out TTFT / TPOT (median, mean, p90, median bias)
over all rows and by parallel mode. A variant earns a place in the estimator only if it improves held-out TPOT
without making held-out TTFT worse. `--parts` prints the TP 1 rows' decode step split into its parts (weights and
KV read, compute, kernel launches, communication, per-sequence costs) at the shipped factors.

Variants (the term; where it is fitted):
  base               the shipped model
  comm_global        a multiplier on communication time (the all-reduce a TP > 1 fit may absorb); all rows
  comm_engine        the same, once per engine
  seq_host_engine    host time per running sequence per step (scheduling, sampling, detokenizing: seq_overhead_s)
  step_host_engine   host time per step (step_overhead_s), once per engine
  lowbit_hbm         8-bit and 4-bit weight GEMMs read HBM at a fitted fraction of the 16-bit GEMMs' bandwidth
                     (scale-factor reads, small-M tiles of the quantized kernels); all rows
  fp4_hbm            the 4-bit fraction alone; all rows
  fp4_hbm_engine     the 4-bit fraction, once per engine (each engine's own FP4 kernels)
  heads_kv, heads_q  the per-sequence cost per layer (seq_layer_s) charged per KV head / query head the rank runs
                     (the decode attention kernel's work units split by attention TP) instead of per layer
  heads_kv_extra, heads_q_extra   that per-head cost beside the per-layer one, once per engine
  vocab_engine       a per-sequence cost per vocabulary entry (sampling over the full vocabulary), once per engine
Runtime about 40-90 s per variant (all thirteen: 13 min on a shared 2-core machine).

Measured on measured_agg_calibration.csv (313 rows; TPOT / TTFT median and p90 |error|, TP 1 TPOT median bias):

    variant            fitted                               held out TPOT   TTFT          TP 1 bias   in-sample TPOT
    base               -                                    12.4% / 34.8%   31.8 / 92.6   -12.7%      9.9% / 32.9%
    comm_global        comm 0.91                            13.0% / 36.1%   32.7 / 92.9   -12.7%     10.2% / 32.0%
    comm_engine        comm 1.01 / 1.05 / 0.98 (sg/trt/v)   13.2% / 35.7%   31.7 / 92.2   -12.6%     10.0% / 32.4%
    seq_host_engine    9.3 us sglang, 0 trtllm, 0 vllm      12.6% / 34.8%   32.8 / 92.9   -12.7%     10.0% / 32.6%
    step_host_engine   1.15 / 0.07 / 0.31 ms                12.5% / 35.4%   31.8 / 92.8   -12.7%      9.9% / 32.1%
    lowbit_hbm         q8 0.92, q4 0.95                     12.2% / 37.0%   32.7 / 92.8    -4.9%      9.4% / 32.2%
    fp4_hbm            q4 0.98                              12.8% / 35.9%   31.6 / 92.9   -11.4%      9.9% / 32.7%
    fp4_hbm_engine     q4 0.75 / 1.09 / 0.95                13.1% / 38.9%   32.0 / 92.5   -11.6%      9.9% / 32.7%
    heads_kv           0.44 / 0.04 / 0.04 us per KV head    12.8% / 34.6%   31.8 / 93.4    -8.8%     10.4% / 31.4%
    heads_q            per query head                       11.9% / 36.2%   31.8 / 93.0   -12.0%     10.3% / 33.8%
    heads_kv_extra     beside seq_layer_s                   12.4% / 35.9%   31.9 / 93.0   -12.3%     10.0% / 32.2%
    heads_q_extra      beside seq_layer_s                   12.1% / 35.9%   31.7 / 93.0   -12.2%     10.1% / 32.1%
    vocab_engine       4.1 us / 1e5 entries sglang, 0, 0    12.5% / 35.4%   32.7 / 93.0   -12.6%     10.0% / 33.0%

None improves held-out TPOT (median and p90) without a cost elsewhere, so none is in the estimator. What the TP 1
rows show (`--parts`): at prefill share < 0.05 (pure decode) TP 1 rows run 8-11% slower than predicted in sample
(mean ln(measured / predicted): vLLM +0.106 over 13 rows, TRT-LLM +0.082 over 7) where TP > 1 rows sit at -0.02 to
-0.05. Those steps are 80-93% weight and KV reads, so the gap points to the HBM bandwidth a whole model's
weights achieve on one GPU (vLLM B200 Llama-3.1-70B C4 1024/1024: FP8 16.3 ms, NVFP4 13.1 ms where the bytes
halve; lowbit_hbm moves the TP 1 bias most), not to a host or per-sequence cost: the engines overlap their
scheduler with the GPU step, and a cost outside the kernels weighs more at TP > 1, where the step is short.
CUDA-graph buckets move no TP 1 row: SGLang captures up to 256 sequences at TP < 4 on 60-160 GB GPUs (sglang
0.5.23 srt/arg_groups/memory_hook.py, the H100 / H200 branches; the profile assumes 512), but the three rows past
256 run a batch that is a captured size anyway and their eager launch floor (291 kernels x 5 us = 1.5 ms) is
below their 25-34 ms step. The largest TP 1 errors are SGLang H200 Llama-3.1-8B rows (ISL 1000-4000, C 80-352):
TPOT 36-57% low and TTFT 133-261% high held out, the prefill time that lockstep cohorts put in TTFT rather than
in TPOT (mechanism 1 of issue 15, closed_loop.py).
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Callable, Iterator, Sequence

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import accuracy as A  # noqa: E402
import accuracy_rows as AR  # noqa: E402
import fit_efficiency as FE  # noqa: E402
from solver.estimate.serving import ServingPolicy, serving_steps, serving_times, step_time  # noqa: E402

# weight group of each GEMM op (Precision.weights keys), for the bit-width variants
GEMM_GROUP = {"qkv_proj": "attention", "o_proj": "attention", "dense_ffn": "dense", "shared_experts": "dense",
              "routed_experts": "experts"}


def _set_params(scope: str, values: tuple[str, ...]) -> None:
    """Rebind a parameter tuple (PARAMS, FRAMEWORK_PARAMS, GLOBAL_PARAMS) wherever the fit reads it."""
    for m in (AR, FE, A):
        if hasattr(m, scope):
            setattr(m, scope, values)


@contextmanager
def variant(name: str) -> Iterator[None]:
    """The fit and the fast path with `name`'s term and factor; everything restored on exit."""
    saved = {s: getattr(AR, s) for s in ("PARAMS", "FRAMEWORK_PARAMS", "GLOBAL_PARAMS")}
    bounds, neutral = dict(AR.BOUNDS), dict(AR.NEUTRAL)
    prepare, predict_times = AR.prepare, AR.predict_times

    def add(key: str, scope: str, lo: float, hi: float, neutral_value: float | None = None) -> None:
        AR.BOUNDS[key] = (lo, hi)
        if neutral_value is not None:
            AR.NEUTRAL[key] = neutral_value
        _set_params(scope, (*getattr(AR, scope), key))

    try:
        if name.startswith("comm_"):
            add("comm", "GLOBAL_PARAMS" if name == "comm_global" else "FRAMEWORK_PARAMS", 0.5, 3.0)
        elif name == "seq_host_engine":
            add("seq_overhead_s", "FRAMEWORK_PARAMS", 0.0, 1e-4)
        elif name == "step_host_engine":
            add("step_overhead_s", "FRAMEWORK_PARAMS", 0.0, 3e-3)
        elif name in ("lowbit_hbm", "fp4_hbm", "fp4_hbm_engine"):
            keys = ("q8_hbm", "q4_hbm") if name == "lowbit_hbm" else ("q4_hbm",)
            for k in keys:
                add(k, "FRAMEWORK_PARAMS" if name.endswith("_engine") else "GLOBAL_PARAMS", 0.4, 1.5, 1.0)
            AR.prepare = _with_bits(prepare)
            AR.predict_times = _bits_predict(predict_times)
        elif name.startswith("heads_") or name == "vocab_engine":
            unit = "vocab" if name == "vocab_engine" else name.split("_")[1]
            extra = name.endswith("_extra") or unit == "vocab"
            AR.prepare = _with_units(prepare, unit)
            if extra:
                add("seq_unit_s", "FRAMEWORK_PARAMS", 0.0, {"kv": 2e-6, "q": 3e-7, "vocab": 5e-5}[unit], 0.0)
                AR.predict_times = _units_predict(per_layer=unit != "vocab")
            else:  # seq_layer_s itself becomes a cost per layer per head
                AR.BOUNDS["seq_layer_s"] = (0.0, 4e-6 if unit == "kv" else 5e-7)
                AR.prepare = _units_in_layers(AR.prepare)
        elif name != "base":
            raise SystemExit(f"error: variant: unknown {name!r} (see --help)")
        yield
    finally:
        for s, v in saved.items():
            _set_params(s, v)
        AR.BOUNDS.clear(), AR.BOUNDS.update(bounds)
        AR.NEUTRAL.clear(), AR.NEUTRAL.update(neutral)
        AR.prepare, AR.predict_times = prepare, predict_times


def _with_bits(prepare: Callable) -> Callable:
    """prepare() that also keeps each prefill and decode op's weight bit width (16 for non-GEMM ops)."""
    def wrapped(row, index=0, waves=None):
        p = prepare(row, index, waves)
        c = p.case
        pre, dec = serving_steps(c.model, c.hw, c.pc, c.prec, p.base, c.workload, p.shape)

        def bits(step):
            return np.array([c.prec.weights[GEMM_GROUP[o.name]].bits if o.name in GEMM_GROUP else 16
                             for o in step.ops])
        object.__setattr__(p, "bits", (bits(pre), bits(dec)))
        return p
    return wrapped


def _bits_predict(predict_times: Callable) -> Callable:
    """Memory time of 8- / 4-bit weight GEMMs divided by q8_hbm / q4_hbm."""
    def wrapped(p, params):
        q = {**AR.NEUTRAL, **params}

        def scale(b):
            return np.where(b == 8, 1 / q.get("q8_hbm", 1.0), np.where(b == 4, 1 / q.get("q4_hbm", 1.0), 1.0))
        bp, bd = p.bits
        p2 = replace(p, prefill=replace(p.prefill, memory_s=p.prefill.memory_s * scale(bp)),
                     decode=replace(p.decode, memory_s=p.decode.memory_s * scale(bd)))
        return predict_times(p2, params)
    return wrapped


def _units(case, unit: str) -> float:
    """Work units per sequence on one rank: attention heads (KV or query) after attention TP, or the vocabulary
    in 1e5 entries."""
    m, tp = case.model, case.pc.attn_tp_size
    if unit == "vocab":
        return m.vocab_size / 1e5
    if unit == "kv":
        return max(1.0, (1 if m.has_mla else m.num_key_value_heads) / tp)
    return max(1.0, m.num_attention_heads / tp)


def _with_units(prepare: Callable, unit: str) -> Callable:
    def wrapped(row, index=0, waves=None):
        p = prepare(row, index, waves)
        object.__setattr__(p, "units", _units(p.case, unit))
        return p
    return wrapped


def _units_in_layers(prepare: Callable) -> Callable:
    def wrapped(row, index=0, waves=None):
        p = prepare(row, index, waves)
        out = replace(p, prefill=replace(p.prefill, layers=p.prefill.layers * p.units),
                      decode=replace(p.decode, layers=p.decode.layers * p.units))
        object.__setattr__(out, "units", p.units)
        return out
    return wrapped


def _units_predict(per_layer: bool) -> Callable:
    """accuracy_rows.predict_times plus seq_unit_s x units (x layers) per sequence in each step."""
    def wrapped(p, params):
        q = {**AR.NEUTRAL, **params}
        pre, dec = AR.rescaled_steps(p.case.hw.efficiency, p.prefill, p.decode, q)
        f = replace(p.base, seq_overhead_s=q["seq_overhead_s"], seq_layer_s=q["seq_layer_s"])
        pre = step_time(pre, p.prefill.kernels, p.shape.prompts_per_step, True, f, layers=p.prefill.layers) \
            + q["seq_unit_s"] * p.units * (p.prefill.layers if per_layer else 1.0) * p.shape.prompts_per_step
        dec = step_time(dec, p.decode.kernels, p.shape.running, p.shape.eager_decode, f, layers=p.decode.layers) \
            + q["seq_unit_s"] * p.units * (p.decode.layers if per_layer else 1.0) * p.shape.running
        wl = replace(p.case.workload, request_overhead_s=q["request_overhead_s"])
        return serving_times(p.shape, pre, dec, wl, ServingPolicy.of(f)), pre, dec
    return wrapped


def _summary(label: str, prepared: Sequence, et: np.ndarray, ep: np.ndarray) -> list[str]:
    """accuracy.py's all-rows and by-mode lines, labelled."""
    lines = A.table(prepared, et, ep, "")[2:] + A.mode_table(prepared, et, ep)
    return [f"   {label} {line.strip()}" for line in lines if line.strip().startswith(("ALL", "mode:"))]


def report(name: str) -> list[str]:
    """The variant's fitted extras and its in-sample and leave-one-model-out lines (all rows, by mode)."""
    with variant(name):
        prepared, _ = AR.prepare_all(AR.load_rows(AR.DEFAULT_CSV))
        factors, _, shared = FE.fit_all(prepared, log=lambda s: None)
        lines = [f"== {name}: global {shared}"]
        for fw, hws in sorted(factors.items()):
            first = next(iter(hws.values()))
            lines.append(f"   {fw}: " + ", ".join(f"{k} {first[k]:.4g}" for k in AR.FRAMEWORK_PARAMS))
        et, ep = A.errors(prepared, lambda p: AR.profile_params(p, factors))
        lines += _summary("in-sample", prepared, et, ep)
        et, ep, _ = A.loo_errors(prepared, FE.fit_group, FE.fit_global, FE.fit_framework)
        lines += _summary("held out ", prepared, et, ep)
    return lines


def parts() -> list[str]:
    """The TP 1 rows' decode step [ms] at the shipped factors: weights + KV read (mem), compute, kernel launches,
    communication, per-sequence costs; the measured and predicted TPOT and ln(measured / predicted)."""
    prepared, _ = AR.prepare_all(AR.load_rows(AR.DEFAULT_CSV))
    fitted = AR.load_factors()
    out = ["engine  device   model              prec C    ISL/OSL    B    | TPOT meas  pred  ln(m/p) | step  mem   "
           "compute kernels seq   prefill share"]
    for p in sorted((p for p in prepared if p.case.pc.world_size == 1),
                    key=lambda p: (p.framework, p.hardware, p.model, p.case.workload.concurrency)):
        q = {**AR.NEUTRAL, **AR.profile_params(p, fitted)}
        t, _, dec = AR.predict_times(p, q)
        e, d = p.case.hw.efficiency, p.decode
        mem = float((d.memory_s * AR._ratio(e.hbm, q["hbm"])).sum())
        comp = float((d.compute_s * AR._ratio(e.gemm, q["gemm"])).sum())
        ker = d.kernel_s * q["kernel_overhead_s"] / e.kernel_overhead_s
        seq = q["seq_layer_s"] * d.layers * p.shape.running
        wl = p.case.workload
        out.append(f"{p.framework:7} {p.hardware:8} {A.short_model(p.model):18} {p.row['precision'] or 'bf16':4} "
                   f"{wl.concurrency:<4} {wl.isl:>5}/{wl.osl:<5} {p.shape.running:>4} | {p.tpot_s * 1e3:9.2f} "
                   f"{t.tpot_s * 1e3:5.2f} {math.log(p.tpot_s / t.tpot_s):+7.2f} | {dec * 1e3:5.2f} {mem * 1e3:5.2f} "
                   f"{comp * 1e3:7.2f} {ker * 1e3:7.2f} {seq * 1e3:5.2f} {t.prefill_share:5.2f}")
    return out


VARIANTS = ("base", "comm_global", "comm_engine", "seq_host_engine", "step_host_engine", "lowbit_hbm", "fp4_hbm",
            "fp4_hbm_engine", "heads_kv", "heads_q", "heads_kv_extra", "heads_q_extra", "vocab_engine")


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("variants", nargs="*", help=f"default: all ({', '.join(VARIANTS)})")
    ap.add_argument("--parts", action="store_true", help="print the TP 1 rows' decode step parts and stop")
    args = ap.parse_args(argv)
    if args.parts:
        print("\n".join(parts()))
        return 0
    for name in args.variants or VARIANTS:
        if name not in VARIANTS:
            print(f"error: variant: unknown {name!r}; one of {', '.join(VARIANTS)}", file=sys.stderr)
            return 2
    t0 = time.time()
    for name in args.variants or VARIANTS:
        print("\n".join(report(name)), flush=True)
    print(f"runtime {time.time() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
