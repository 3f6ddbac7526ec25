"""Accuracy benchmark of the disaggregated serving model against measured xPyD rows.

    python benchmarks/accuracy_disagg.py [--csv PATH] [--no-cv] [--rows N]

Runs every row of facts/calibration/measured_disagg_calibration.csv (260 measured disaggregated rows: each pool's
parallel sizes, worker counts, batches; client concurrency; TTFT and TPOT) through `solver.measured_disagg` +
`solver.estimate.disagg`, and prints the median, mean and p90 absolute percentage error of TTFT and TPOT,
overall, per model / system / framework, and for two subsets: the rows that give the worker counts and batches
("complete") and those that leave them blank (read by the blank-cell convention: one worker per pool; their
`tp` is the worker's size with attention DP recorded as 1, see the README), for

  (a) shipped factors: the hardware YAML x framework profile x solver/frameworks/fitted/factors.yaml (the
      aggregated fit of benchmarks/fit_efficiency.py, which never saw a disaggregated row): what the planner uses;
  (b) refitted on the disaggregated rows, in-sample: the same few factors (accuracy_rows.PARAMS: GEMM and HBM
      multipliers, per-step and per-request overheads) per (framework, hardware), fewer than MIN_ROWS rows ->
      the framework's pooled fit; never per model or row;
  (b2) the same refit on the complete rows only (they hold one architecture: no leave-one-model-out there);
  (c) leave-one-model-out, the shipped path's fold: per architecture (DeepSeek-V3 and -R1 together), the
      aggregated fit (fit_efficiency.fit_all: factors.yaml's pairs and global factors) refitted on the aggregated
      CSV without it, applied as the shipped file is; (c5) the older fold: the step factors refitted on the other
      architectures' disaggregated rows (convention rows, worker counts guessed);
  (c2) / (c6) leave-one-system-out on the complete rows: the disaggregated factors (none shipped) without the
      system, and (c6) the aggregated fit without the system's aggregated rows too.

Fast path, as in accuracy.py: each row's prefill and decode steps are computed once at the hardware's factors and
kept as per-op terms (accuracy.StepTerms); a factor setting rescales them and calls the same `disagg_times` as
`estimate_disagg` (the KV transfer does not depend on the fitted factors). `check_fast_path` compares both paths.
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from accuracy import first_rows, group_table, setup_groups, short_model  # noqa: E402
from accuracy_rows import (  # noqa: E402
    AR_PROBE_S, DEQUANT_PROBE, NEUTRAL, PARAMS, StepTerms, _measured, family_of, load_factors, load_rows,
    rescaled_steps,
)
from accuracy_rows import DEFAULT_CSV as AGG_CSV  # noqa: E402
from accuracy_rows import prepare_all as prepare_agg  # noqa: E402
from fit_efficiency import MIN_ROWS, coordinate_search, engine_factors  # noqa: E402
from fit_efficiency import loss as fit_loss  # noqa: E402
from accuracy import errors as agg_errors  # noqa: E402

from solver.errors import InputError  # noqa: E402
from solver.estimate.compute import factors_for  # noqa: E402
from solver.estimate.disagg import (  # noqa: E402
    PoolShape, disagg_times, estimate_disagg, kv_transfer, pool_memory_options, pool_shape, prompts_per_step,
)
from solver.estimate.serving import (  # noqa: E402
    DEFAULT_REQUEST_OVERHEAD_S, ServingPolicy, decode_step, kv_capacity_per_replica, prefill_step, step_layers, step_time,
    synced_ranks,
)
from solver.estimate.engine_step import graph_sizes_at  # noqa: E402
from solver.estimate.factors import Factors  # noqa: E402
from solver.measured import factors  # noqa: E402
from solver.measured_disagg import (  # noqa: E402
    POOL_SIZE_COLUMNS, POOLS, DisaggCase, case_from_disagg_row, is_complete, predict_disagg_row, worker_count_spread,
)
from solver.specs.fitted import apply_fitted, fitted_global, pair_factors  # noqa: E402

DEFAULT_CSV = REPO.parent / "shared" / "facts" / "calibration" / "measured_disagg_calibration.csv"


@dataclass(frozen=True)
class Prepared:
    index: int
    case: DisaggCase
    shape: PoolShape
    prefill: StepTerms
    decode: StepTerms
    transfer_s: float
    framework: str
    hardware: str
    model: str
    family: str
    complete: bool  # the row gives both worker counts
    ttft_s: float
    tpot_s: float
    base_p: Factors  # the prefill and decode engines' loops (graphs, eager launch, first-token iterations)
    base_d: Factors


def prepare(row: Mapping[str, Any], index: int = 0, waves: int | None = None) -> Prepared:
    predict_disagg_row(row)  # rejects rows the labels make impossible (a pool that cannot hold the model)
    c = case_from_disagg_row(row, waves=waves)
    ttft, tpot = _measured(row, "ttft_ms"), _measured(row, "tpot_ms")
    d, p = c.decode, c.prefill
    # the hardware's own factors with the custom all-reduce at AR_PROBE_S and at 0: the step is linear in that
    # latency (accuracy.StepTerms.ar_count), so a fitted latency rescales it exactly
    loop_d, loop_p = d.framework.serving_factors(d.hw.vendor), p.framework.serving_factors(p.hw.vendor)
    base = factors_for(d.hw, {**loop_d, "allreduce_latency_s": AR_PROBE_S})
    base_p = factors_for(d.hw, {**loop_p, "allreduce_latency_s": AR_PROBE_S})
    zero = factors_for(d.hw, {**loop_d, "allreduce_latency_s": 0.0})
    zero_p = factors_for(d.hw, {**loop_p, "allreduce_latency_s": 0.0})
    wl = c.workload
    # the decode pool's sequences under estimate_disagg's memory options (the engine's layout, this prompt's
    # activations): with none, 16 of 234 rows held more than estimate_disagg does (TTFT/TPOT up to 9.8% apart)
    cap = kv_capacity_per_replica(d.model, d.hw, d.pc, d.prec, wl.isl + wl.osl,
                                  pool_memory_options(factors(d), wl), wl.mtp)
    # the framework's scheduler budget decides the prompts per step when the row leaves prefill_batch blank
    n = prompts_per_step(wl, factors(p), synced_ranks(d.model, p.pc),
                         math.ceil(wl.concurrency / (wl.prefill_workers * p.pc.attn_replicas)))
    shape = pool_shape(wl.concurrency, wl.prefill_workers, p.pc.attn_replicas, n, wl.decode_workers,
                       d.pc.attn_replicas, cap, wl.decode_batch or 0,
                       # the graphs the decode command captures, cut at its cap as estimate_disagg cuts them
                       graph_sizes_at(factors(d), d.pc, d.model.num_experts,
                                      wl.decode_batch or math.ceil(wl.concurrency / (wl.decode_workers
                                                                                     * d.pc.attn_replicas))),
                       synced_ranks(d.model, p.pc))
    batch = shape.graph_batch or shape.running  # the decode step's GPU work runs the padded batch
    pre = prefill_step(d.model, d.hw, p.pc, d.prec, base_p, wl.isl, shape.prompts_per_step)
    dec = decode_step(d.model, d.hw, d.pc, d.prec, base, batch, wl.isl + wl.osl / 2, wl.mtp, wl.osl)
    pre0 = prefill_step(d.model, d.hw, p.pc, d.prec, zero_p, wl.isl, shape.prompts_per_step)
    dec0 = decode_step(d.model, d.hw, d.pc, d.prec, zero, batch, wl.isl + wl.osl / 2, wl.mtp, wl.osl)
    pre_d = dec_d = None  # a row with a weight-only GEMM prepared again at dequant_gemm = DEQUANT_PROBE
    if any(d.prec.weight_only(g) for g in d.prec.weights):
        pre_d = prefill_step(d.model, d.hw, p.pc, d.prec, replace(base_p, dequant_gemm=DEQUANT_PROBE), wl.isl,
                             shape.prompts_per_step)
        dec_d = decode_step(d.model, d.hw, d.pc, d.prec, replace(base, dequant_gemm=DEQUANT_PROBE), batch,
                            wl.isl + wl.osl / 2, wl.mtp, wl.osl)
    xfer = kv_transfer(d.model, d.hw, p.pc, d.pc, d.prec.kv_format, wl.isl, prefill_workers=wl.prefill_workers,
                       decode_workers=wl.decode_workers, over_nics=d.framework.kv_handoff_over_nics)
    complete = is_complete(row)
    draft = wl.mtp if d.model.num_mtp_layers else 0
    layers_p = step_layers(d.model, p.pc, "prefill", shape.prompts_per_step)
    layers_d = step_layers(d.model, d.pc, "decode", batch, draft)
    return Prepared(index, c, shape, StepTerms.of(pre, "prefill", base_p, pre0, layers_p, pre_d),
                    StepTerms.of(dec, "decode", base, dec0, layers_d, dec_d),
                    xfer.time_s,
                    d.framework.name, d.hw.name, d.model.name, family_of(d), complete, ttft, tpot, base_p, base)


def prepare_rows(rows: Sequence[Mapping[str, Any]], waves: int | None = None
                 ) -> tuple[list[Prepared], list[tuple[str, str]]]:
    """The evaluable rows and, for the others, (row id, the one-line reason)."""
    prepared, skipped = [], []
    for i, row in enumerate(rows):
        try:
            prepared.append(prepare(row, i, waves))
        except InputError as exc:
            skipped.append((str(row.get("id") or f"row {i}"), str(exc)))
    return prepared, skipped


def skipped_lines(skipped: Sequence[tuple[str, str]]) -> list[str]:
    """Every skipped row by id, grouped by the reason."""
    by: dict[str, list[str]] = defaultdict(list)
    for rid, err in skipped:
        by[err].append(rid)
    out = []
    for err, ids in sorted(by.items(), key=lambda kv: -len(kv[1])):
        out.append(f"  skipped {len(ids)}: {err}")
        out += [f"      {rid}" for rid in ids]
    return out


LABEL_COLUMNS = tuple(f"{pool}_{col}" for pool in POOLS for col in POOL_SIZE_COLUMNS)


def label_evidence(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """What the convention's labels lose, read off the table itself: a row without worker counts that repeats a
    complete row's measurement (same system, ISL, OSL, concurrency, TTFT and TPOT; the model is labelled
    DeepSeek-V3 on one and -R1 on the other, one architecture) is the same run; the size columns where the two
    disagree are the ones the convention does not record as run."""
    def key(r: Mapping[str, Any]) -> tuple:
        return (r.get("system"), str(r.get("isl")), str(r.get("osl")), str(r.get("concurrency")),
                round(float(r["ttft_ms"]), 6), round(float(r["tpot_ms"]), 7))
    complete = {key(r): r for r in rows if is_complete(r)}
    pairs = [(complete[key(r)], r) for r in rows if not is_complete(r) and key(r) in complete]
    if not pairs:
        return ["  no row without worker counts repeats a complete row"]
    differ: dict[str, list[str]] = defaultdict(list)
    for full, conv in pairs:
        for col in LABEL_COLUMNS:
            a, b = _num(full.get(col)), _num(conv.get(col))
            if a != b:
                differ[col].append(f"{a:g}->{b:g}")
    out = [f"  {len(pairs)} rows without worker counts repeat a complete row's run; size columns that differ "
           f"(complete -> convention):"]
    for col in LABEL_COLUMNS:
        if differ[col]:
            seen = Counter(differ[col])
            out.append(f"    {col:<22} {len(differ[col]):>3} of {len(pairs)}: "
                       + ", ".join(f"{v} x{n}" for v, n in seen.most_common()))
    return out


def _num(v: Any) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return float("nan")


SPREAD_TOLERANCE = 0.15  # the TPOT goal: a row whose unknowns can move it further cannot score the model


def spread_lines(rows: Sequence[Mapping[str, Any]], prepared: Sequence[Prepared]) -> list[str]:
    """For the evaluated rows without worker counts whose labels carry no EP (the duplicates show attention DP
    is not recorded on EP rows): how far the unknown worker counts move the prediction
    (measured_disagg.worker_count_spread), and how many stay within SPREAD_TOLERANCE on both TTFT and TPOT."""
    tp_only = [p for p in prepared if not p.complete
               and p.case.prefill.pc.moe_ep_size == 1 and p.case.decode.pc.moe_ep_size == 1]
    spreads = [worker_count_spread(rows[p.index]) for p in tp_only]
    if not spreads:
        return []
    st, sp = np.array([s[0] for s in spreads]), np.array([s[1] for s in spreads])
    ok = [p for p, (a, b) in zip(tp_only, spreads) if a <= SPREAD_TOLERANCE and b <= SPREAD_TOLERANCE]
    conc = np.array([p.case.workload.concurrency for p in tp_only])
    out = [f"  {len(tp_only)} evaluated rows without worker counts carry no EP; over the worker counts they leave "
           f"blank (x, y in 1..concurrency) their predicted TTFT moves by median {np.median(st) * 100:.0f}%, TPOT "
           f"by median {np.median(sp) * 100:.0f}%"]
    for lo, hi in ((1, 2), (3, 8), (9, 64), (65, 10 ** 9)):
        m = (conc >= lo) & (conc <= hi)
        if m.any():
            out.append(f"    concurrency {lo}-{hi if hi < 10 ** 9 else 'up'}: {int(m.sum())} rows, TTFT spread median "
                       f"{np.median(st[m]) * 100:.0f}%, TPOT {np.median(sp[m]) * 100:.0f}%")
    models = sorted({short_model(p.model) for p in ok})
    out.append(f"  within {SPREAD_TOLERANCE:.0%} on both: {len(ok)} rows ({', '.join(models) or 'none'}): too few, "
               f"and no other architecture, to score on; the complete rows stay the scored set")
    return out


def coverage(rows: Sequence[Mapping[str, Any]], prepared: Sequence[Prepared]) -> list[str]:
    """Which rows count as complete, and how many of the others repeat a complete row's measurement (the same
    TTFT and TPOT under the convention's labels: the table's later rows re-list earlier runs)."""
    complete = [p for p in prepared if p.complete]
    seen = {(round(p.ttft_s, 6), round(p.tpot_s, 7)) for p in complete}
    repeats = sum(1 for p in prepared if not p.complete and (round(p.ttft_s, 6), round(p.tpot_s, 7)) in seen)
    return [f"  complete rows (prefill_workers, decode_workers, both batches given): {len(complete)}; rows read by "
            f"the blank-cell convention: {len(prepared) - len(complete)} ({repeats} of them repeat a complete row's "
            f"TTFT and TPOT under the convention's labels)"]


@dataclass(frozen=True)
class LoopInputs:
    """What `disagg_times` takes for one row under a factor setting (seconds; first_token_iterations in steps)."""

    prefill_s: float
    decode_s: float
    overhead_s: float
    first_token_iterations: float
    burst_share: float | None


def loop_inputs(p: Prepared, params: Mapping[str, float]) -> LoopInputs:
    """The step times (each pool's serving loop applied) and the TTFT constants under `params`."""
    q = {**NEUTRAL, **params}
    pre, dec = rescaled_steps(p.case.decode.hw.efficiency, p.prefill, p.decode, q)
    fp = replace(p.base_p, seq_overhead_s=q["seq_overhead_s"], seq_layer_s=q["seq_layer_s"])
    fd = replace(p.base_d, seq_overhead_s=q["seq_overhead_s"], seq_layer_s=q["seq_layer_s"])
    pre = step_time(pre, p.prefill.kernels, p.shape.prompts_per_step, True, fp, layers=p.prefill.layers)
    dec = step_time(dec, p.decode.kernels, p.shape.running, p.shape.eager_decode, fd, layers=p.decode.layers)
    return LoopInputs(pre, dec, q["request_overhead_s"], ServingPolicy.of(fd).first_token_iterations,
                      q.get("burst_share"))


def predict(p: Prepared, params: Mapping[str, float]) -> tuple[float, float]:
    """(TTFT s, TPOT s) under factor settings `params` (keys of accuracy_rows.PARAMS / NEUTRAL)."""
    li = loop_inputs(p, params)
    wl = p.case.workload
    t = disagg_times(p.shape, li.prefill_s, li.decode_s, p.transfer_s, wl.concurrency, wl.osl, li.overhead_s,
                     wl.benchmark_waves, wl.mtp, wl.mtp_accept, li.first_token_iterations, li.burst_share)
    return t.ttft_s, t.tpot_s


def shipped_params(p: Prepared, fitted: Mapping[str, Mapping[str, Mapping[str, float]]] | None,
                   shared: Mapping[str, float] | None = None) -> dict[str, float]:
    """The factor settings estimate_disagg uses for the row: the profile x the pair's fit in `fitted`, else the
    global factors every pair shares (`shared`; None: fitted/factors.yaml's `global` block), as
    Framework.efficiency_for applies them."""
    eff = p.case.decode.framework.efficiency
    out = {"gemm": eff.gemm, "attention": eff.attention, "hbm": eff.hbm, "comm": eff.comm,
           "grouped_gemm": eff.grouped_gemm, "dequant_gemm": eff.dequant_gemm, "step_overhead_s": eff.step_overhead_s,
           "request_overhead_s": DEFAULT_REQUEST_OVERHEAD_S, "seq_overhead_s": 0.0, "seq_layer_s": 0.0,
           "burst_share": p.case.workload.burst_share,
           "allreduce_latency_s": p.case.decode.hw.tiers["intra_node"].latency_s,
           "kernel_overhead_s": eff.kernel_overhead_s if eff.kernel_overhead_s is not None
           else p.case.decode.hw.efficiency.kernel_overhead_s}
    common = fitted_global(p.case.decode.hw.vendor, framework=p.framework) if shared is None else shared
    return apply_fitted(out, pair_factors(fitted or {}, common, p.framework, p.hardware))


def check_fast_path(prepared: Sequence[Prepared], limit: int | None = None) -> float:
    """Largest relative difference between the fast path and `estimate_disagg`, over every row by default (stop
    48: the first 12 agreed while 16 later rows were up to 9.8% off)."""
    worst = 0.0
    fitted = load_factors()
    for p in prepared[:limit]:
        c = p.case
        est = estimate_disagg(c.decode.model, c.decode.hw, c.prefill.pc, c.decode.pc, c.decode.prec,
                              factors(c.prefill), factors(c.decode), c.workload)
        t, s = predict(p, shipped_params(p, fitted))
        worst = max(worst, abs(t / est.ttft_s - 1), abs(s / est.tpot_s - 1))
    return worst


# ---------------------------------------------------------------------------------------------- fit


def loss(rows: Sequence[Prepared], params: Mapping[str, float]) -> float:
    """fit_efficiency.loss over the disaggregated prediction."""
    return fit_loss(rows, params, predict)


def fit_group(rows: Sequence[Prepared], start: Mapping[str, float]) -> dict[str, float] | None:
    """fit_efficiency.fit_group's bounded coordinate search (same grid, sweeps and bounds) over PARAMS, the
    other factors held at `start`. None when fewer than MIN_ROWS rows."""
    if len(rows) < MIN_ROWS:
        return None
    return coordinate_search(lambda factors: loss(rows, factors), start, PARAMS)


def fixed_start(rows: Sequence[Prepared], fitted) -> dict[str, float]:
    """The factors a refit does not move (attention, comm, grouped_gemm: the shipped values), PARAMS neutral."""
    base = shipped_params(rows[0], fitted)
    return {**NEUTRAL, **{k: v for k, v in base.items() if k not in PARAMS}}


def fit_all(prepared: Sequence[Prepared], fitted) -> dict[tuple[str, str], dict[str, float]]:
    groups: dict[tuple[str, str], list[Prepared]] = defaultdict(list)
    by_fw: dict[str, list[Prepared]] = defaultdict(list)
    for p in prepared:
        groups[(p.framework, p.hardware)].append(p)
        by_fw[p.framework].append(p)
    pooled = {fw: fit_group(rows, fixed_start(rows, fitted)) for fw, rows in by_fw.items()}
    out = {}
    for key, rows in sorted(groups.items()):
        res = fit_group(rows, fixed_start(rows, fitted)) or pooled.get(key[0])
        if res is not None:
            out[key] = res
    return out


def disagg_factors_without(prepared: Sequence[Prepared], fam: str, fitted) -> Callable[[Prepared], dict]:
    """The burst share refitted (fit_disagg.fit_all) on the complete rows of the other
    architectures: a held-out row gets its pair's, else its framework's pooled, else the defaults."""
    from fit_disagg import fit_all as fit_disagg_all

    fit = fit_disagg_all([q for q in prepared if q.family != fam], fitted)  # the shipped factors (none: {})

    def of(p: Prepared) -> dict:
        pairs = fit.get(p.framework, {})
        v = pairs.get(p.hardware) or pairs.get("_pooled") or {}
        return {"burst_share": v.get("burst_share")}
    return of


def loo_disagg_errors(prepared: Sequence[Prepared], fitted) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Leave one architecture out, refitting on the disaggregated rows (c5): the step factors (PARAMS) refitted
    on the group's other architectures' disaggregated rows (else the framework's, else shipped), the
    disaggregated factors on the other architectures' complete rows. The other architectures' rows are all
    convention rows (worker counts guessed), so this fold fits request_overhead_s and the GEMM / HBM factors to
    guessed queues; (c) is the fold of the shipped path."""
    et, ep = np.full(len(prepared), np.nan), np.full(len(prepared), np.nan)
    without = {fam: disagg_factors_without(prepared, fam, fitted) for fam in sorted({p.family for p in prepared})}
    notes = []
    groups: dict[tuple[str, str], list[int]] = defaultdict(list)
    for i, p in enumerate(prepared):
        groups[(p.framework, p.hardware)].append(i)
    for key, idx in sorted(groups.items()):
        for fam in sorted({prepared[i].family for i in idx}):
            test = [i for i in idx if prepared[i].family == fam]
            train = [prepared[i] for i in idx if prepared[i].family != fam]
            name = "/".join(sorted({short_model(q.model) for q in prepared if q.family == fam}))
            params = fit_group(train, fixed_start(train, fitted)) if train else None
            if params is None:
                pooled = [q for q in prepared if q.framework == key[0] and q.family != fam]
                params = fit_group(pooled, fixed_start(pooled, fitted)) if pooled else None
                how = (f"pooled {key[0]} fit on {len(pooled)} rows of other models" if params is not None
                       else "shipped factors (no other model's rows to fit)")
                notes.append(f"{key[0]} x {key[1]} without {name}: {len(train)} rows left -> {how}")
            for i in test:
                p = prepared[i]
                q = {**(params if params is not None else shipped_params(p, fitted)), **without[fam](p)}
                t, s = predict(p, q)
                et[i], ep[i] = t / p.ttft_s - 1, s / p.tpot_s - 1
    return et, ep, notes


@lru_cache(maxsize=1)
def agg_prepared(csv: Path = AGG_CSV) -> tuple:
    """The aggregated calibration rows as fit_efficiency fits them (accuracy_rows.prepare_all), read once."""
    return tuple(prepare_agg(load_rows(csv))[0])


def agg_fit_without(drop: Callable[[Any], bool], csv: Path = AGG_CSV
                    ) -> tuple[dict, dict[str, dict[str, float]], int] | None:
    """The aggregated fit (fit_efficiency.fit_all over the aggregated calibration CSV: the pairs' factors, the
    global ones per vendor of the rows fitted, as fit_efficiency writes them) without the rows `drop` selects,
    and how many it left out; None when it selects none (the shipped fit already never saw them)."""
    import contextlib
    import io

    from fit_efficiency import fit_all as fit_agg

    agg = agg_prepared(csv)
    train = [q for q in agg if not drop(q)]
    if len(train) == len(agg):
        return None
    with contextlib.redirect_stdout(io.StringIO()):  # fit_all prints its per-pair lines
        pairs, _, shared = fit_agg(train)
    return pairs, {q.case.hw.vendor: dict(shared) for q in train}, len(agg) - len(train)


def refit_params(p: Prepared, fitted, refit: tuple[dict, dict[str, dict[str, float]], int] | None) -> dict:
    """The row's factor settings under an aggregated refit (agg_fit_without), as the shipped file applies."""
    if refit is None:
        return shipped_params(p, fitted)
    shared = refit[1].get(p.case.decode.hw.vendor, {})
    # a pair the refit does not cover carries the global factors and its engine's own (fitted_global)
    engine = engine_factors(refit[0]).get(p.framework, {}) if shared else {}
    return shipped_params(p, refit[0], {**shared, **engine})


def refit_note(label: str, refit: tuple[dict, dict[str, dict[str, float]], int] | None) -> str:
    if refit is None:
        return f"{label}: no aggregated row -> the shipped factors (fitted without it)"
    glob = "; ".join(f"{vendor} " + ", ".join(f"{k} {v:.4g}" for k, v in g.items())
                     for vendor, g in sorted(refit[1].items()))
    pairs = ", ".join(f"{fw} x {hw}" for fw, hws in sorted(refit[0].items()) for hw in sorted(hws))
    return f"{label}: aggregated fit without its {refit[2]} rows, global {glob}; pairs {pairs}"


def loo_errors(prepared: Sequence[Prepared], fitted) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Leave one architecture out, as the shipped path would run had the architecture never been measured: the
    step factors are the aggregated fit (fit_efficiency.fit_all, the factors.yaml the estimator reads) refitted
    on the aggregated CSV without the architecture, applied per pair as the shipped file is (a pair the refit
    does not cover gets the refit's global factors); the disaggregated factors (none shipped) refitted on the
    other architectures' complete rows."""
    et, ep = np.full(len(prepared), np.nan), np.full(len(prepared), np.nan)
    fams = sorted({p.family for p in prepared})
    without = {fam: disagg_factors_without(prepared, fam, fitted) for fam in fams}
    notes = []
    for fam in fams:
        name = "/".join(sorted({short_model(q.model) for q in prepared if q.family == fam}))
        refit = agg_fit_without(lambda q, fam=fam: q.family == fam)
        notes.append(refit_note(name, refit))
        for i, p in enumerate(prepared):
            if p.family == fam:
                t, s = predict(p, {**refit_params(p, fitted, refit), **without[fam](p)})
                et[i], ep[i] = t / p.ttft_s - 1, s / p.tpot_s - 1
    return et, ep, notes


def loso_both_errors(prepared: Sequence[Prepared], fitted) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Leave one system out of both fits, on the complete rows: the aggregated fit refitted without the held-out
    hardware's aggregated rows (so its pairs fall to the global factors, as an unmeasured system does) and the
    disaggregated factors (none shipped) without its complete rows."""
    from fit_disagg import SHIPPED_FACTORS
    from fit_disagg import fit_all as fit_disagg_all

    rows = [p for p in prepared if p.complete]
    et, ep = np.full(len(rows), np.nan), np.full(len(rows), np.nan)
    notes = []
    for hw in sorted({p.hardware for p in rows}):
        refit = agg_fit_without(lambda q, hw=hw: q.hardware == hw)
        notes.append(refit_note(hw, refit))
        fit = fit_disagg_all([q for q in rows if q.hardware != hw], fitted, SHIPPED_FACTORS)
        for i, p in enumerate(rows):
            if p.hardware == hw:
                v = fit.get(p.framework, {}).get("_pooled") or {}
                t, s = predict(p, {**refit_params(p, fitted, refit), "burst_share": v.get("burst_share")})
                et[i], ep[i] = t / p.ttft_s - 1, s / p.tpot_s - 1
    return et, ep, notes


def loso_errors(prepared: Sequence[Prepared], fitted, factors: Sequence[str] | None = None
                ) -> tuple[np.ndarray, np.ndarray]:
    """Leave one system out, on the complete rows (one architecture: no model to leave out): the disaggregated
    factors (`factors`, default fit_disagg.SHIPPED_FACTORS) refitted (fit_disagg.fit_all) without the held-out
    hardware's rows, so a held-out row gets its framework's pooled fit over the other systems; the step factors
    stay the shipped (aggregated) ones. With no factor shipped nothing is refitted and this is (a) on the
    complete rows."""
    from fit_disagg import SHIPPED_FACTORS
    from fit_disagg import fit_all as fit_disagg_all

    rows = [p for p in prepared if p.complete]
    et, ep = np.full(len(rows), np.nan), np.full(len(rows), np.nan)
    for hw in sorted({p.hardware for p in rows}):
        fit = fit_disagg_all([q for q in rows if q.hardware != hw], fitted,
                             SHIPPED_FACTORS if factors is None else factors)
        for i, p in enumerate(rows):
            if p.hardware != hw:
                continue
            v = fit.get(p.framework, {}).get("_pooled") or {}
            q = {**shipped_params(p, fitted), "burst_share": v.get("burst_share")}
            t, s = predict(p, q)
            et[i], ep[i] = t / p.ttft_s - 1, s / p.tpot_s - 1
    return et, ep


def candidate_errors(prepared: Sequence[Prepared], fitted) -> tuple[np.ndarray, np.ndarray]:
    """The complete rows with the candidate factors (fit_disagg.CANDIDATE_FACTORS: the burst share) fitted on
    all of them, in-sample: what shipping them would give."""
    from fit_disagg import CANDIDATE_FACTORS
    from fit_disagg import fit_all as fit_disagg_all

    rows = [p for p in prepared if p.complete]
    fit = fit_disagg_all(rows, fitted, CANDIDATE_FACTORS)
    et, ep = np.full(len(rows), np.nan), np.full(len(rows), np.nan)
    for i, p in enumerate(rows):
        pairs = fit.get(p.framework, {})
        v = pairs.get(p.hardware) or pairs.get("_pooled") or {}
        t, s = predict(p, {**shipped_params(p, fitted), "burst_share": v.get("burst_share")})
        et[i], ep[i] = t / p.ttft_s - 1, s / p.tpot_s - 1
    return et, ep


# ---------------------------------------------------------------------------------------------- report


def table(prepared: Sequence[Prepared], et: np.ndarray, ep: np.ndarray, title: str) -> list[str]:
    """accuracy.group_table over: all rows, the complete and convention rows, per model / system / framework,
    and per framework's decode mode; a group without rows has no line."""
    modes: dict[str, list[int]] = defaultdict(list)
    for i, p in enumerate(prepared):
        modes[f"{p.framework} {decode_mode(p)}"].append(i)
    groups = [("ALL", list(range(len(prepared)))),
              ("  complete rows (workers and batches given)", [i for i, p in enumerate(prepared) if p.complete]),
              ("  rows without worker counts (convention)", [i for i, p in enumerate(prepared) if not p.complete]),
              *setup_groups(prepared),
              *((f"  decode: {name}", modes[name]) for name in sorted(modes))]
    return group_table(et, ep, title, [(label, idx) for label, idx in groups if idx])


def decode_mode(p: Prepared) -> str:
    """The decode pool's parallel mode: its attention (DP across replicas, else TP) and its experts (EP, else the
    MoE TP they are split by; none for a dense model). The EP all-to-all runs in the EP modes."""
    pc = p.case.decode.pc
    attn = "attention DP" if pc.attn_replicas > 1 else ("TP" if pc.attn_tp_size > 1 else "TP 1")
    if not p.case.decode.model.is_moe:
        return attn
    if pc.moe_ep_size > 1:
        return f"{attn} + EP{pc.moe_ep_size}"
    if pc.moe_tp_size > 1 and pc.moe_tp_size != pc.attn_tp_size:
        return f"{attn} + MoE TP{pc.moe_tp_size}"
    return attn


def errors(prepared: Sequence[Prepared], params_of: Callable[[Prepared], Mapping[str, float]]
           ) -> tuple[np.ndarray, np.ndarray]:
    """accuracy.errors over the disaggregated prediction."""
    return agg_errors(prepared, params_of, predict)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--csv", type=Path, default=DEFAULT_CSV)
    ap.add_argument("--no-cv", action="store_true", help="skip leave-one-model-out")
    ap.add_argument("--rows", type=int, default=0, help="only the first N rows (smoke runs)")
    ap.add_argument("--waves", type=int, default=None, help="benchmark waves k (default: workload.py's)")
    args = ap.parse_args(argv)
    t0 = time.time()
    rows = first_rows(args.csv, args.rows)
    prepared, skipped = prepare_rows(rows, args.waves)
    print(f"disaggregated CSV: {args.csv}  rows {len(rows)}, evaluated {len(prepared)}, skipped {len(skipped)}")
    print("\n".join(skipped_lines(skipped)))
    print("\n".join(coverage(rows, prepared)))
    print("what the rows without worker counts lose:")
    print("\n".join(label_evidence(rows)))
    print("\n".join(spread_lines(rows, prepared)))
    gap = check_fast_path(prepared)
    print(f"fast path vs estimate_disagg(): max relative difference {gap:.1e}"
          + ("  WARNING: the fast path no longer matches the estimator" if gap > 1e-6 else ""))
    print()
    fitted = load_factors()
    et, ep = errors(prepared, lambda p: shipped_params(p, fitted))
    print("\n".join(table(prepared, et, ep, "(a) shipped factors (aggregated fit, factors.yaml, + fitted/disagg.yaml: "
                                            "none; the prefill wait is the closed loop's)")))
    print()
    refit = fit_all(prepared, fitted)
    et, ep = errors(prepared, lambda p: refit.get((p.framework, p.hardware)) or shipped_params(p, fitted))
    print("\n".join(table(prepared, et, ep, "(b) refitted on the disaggregated rows, in-sample (per framework x "
                                            "hardware; pooled per framework below MIN_ROWS)")))
    for (fw, hw), v in sorted(refit.items()):
        print(f"  {fw:>7} x {hw:<9} " + ", ".join(f"{k} {v[k]:.4g}" for k in PARAMS))
    print()
    complete = [p for p in prepared if p.complete]
    refit_c = fit_all(complete, fitted)
    et, ep = errors(complete, lambda p: refit_c.get((p.framework, p.hardware)) or shipped_params(p, fitted))
    print("\n".join(table(complete, et, ep, "(b2) refitted on the complete rows only, in-sample (same rule; one "
                                           "architecture, so no leave-one-model-out on them)")[:4]))
    print()
    if not args.no_cv:
        complete = [p for p in prepared if p.complete]
        et, ep = loso_errors(prepared, fitted)
        print("\n".join(table(complete, et, ep, "(c2) complete rows, leave one system out (the shipped "
                                                "disaggregated factors, if any, refitted without the held-out "
                                                "hardware; step factors shipped)")))
        print()
        from fit_disagg import CANDIDATE_FACTORS
        et, ep = candidate_errors(prepared, fitted)
        print("\n".join(table(complete, et, ep, f"(c3) candidate, not shipped: {', '.join(CANDIDATE_FACTORS)} "
                                                f"fitted per framework x hardware on the complete rows, in-sample")[:4]))
        et, ep = loso_errors(prepared, fitted, CANDIDATE_FACTORS)
        held = table(complete, et, ep, "    the same, leave one system out")
        print("\n".join([held[0]] + held[2:4]))
        print()
        for rows, (et, ep, notes), title, head in (
                (prepared, loo_errors(prepared, fitted), "(c) leave-one-model-out: the aggregated fit (factors.yaml) "
                 "refitted without the held-out architecture, applied as the shipped file is", None),
                (complete, loso_both_errors(prepared, fitted), "(c6) complete rows, leave one system out of both fits "
                 "(the aggregated fit without the system's aggregated rows too)", None),
                (prepared, loo_disagg_errors(prepared, fitted), "(c5) leave-one-model-out refitting the step factors "
                 "on the other architectures' disaggregated (convention) rows", 5)):
            print("\n".join(table(rows, et, ep, title)[:head]))
            for n in notes:
                print(f"  note: {n}")
            print()
    print(f"runtime {time.time() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
