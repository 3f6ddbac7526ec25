"""Rows of measured disaggregated-serving tables (facts/calibration/measured_disagg_calibration.csv) turned into
specs and a disaggregated workload.

Columns: the aggregated table's (model, system, backend, precision, gemm_quant_mode, moe_quant_mode, isl, osl,
concurrency; see solver.measured) with the parallel sizes given once per pool: `prefill_tp`,
`prefill_attention_dp`, `prefill_moe_tp`, `prefill_moe_ep`, `prefill_pp` and the same with `decode_`; plus
`prefill_workers` / `decode_workers` (workers in each pool) and `prefill_batch` / `decode_batch` (requests per
attention-DP rank of one worker: prompts per prefill step, and the engine's cap on running sequences).

Each pool's sizes follow solver.measured's blank-cell convention (its `case_from_row` reads them, so the rules
live there). For the disaggregated columns:

- prefill_workers / decode_workers blank -> 1 (one worker per pool; the table's later rows leave them blank);
- prefill_batch blank -> as many prompts per step as the framework's scheduler token budget holds (at least 1);
- decode_batch blank -> memory decides (the KV capacity of a decode replica).

Required and never defaulted: model, system, isl, osl, concurrency, prefill_tp, decode_tp. An error names the
table's column (`prefill_moe_ep`, not `moe_ep`). A pool whose weights do not fit its ranks cannot have been
measured as labelled: `predict_disagg_row` rejects the row, naming that pool's `_tp` column.

A row that leaves the worker counts blank is a measurement of an unknown deployment: `worker_count_spread` says how
far the counts it does not give could move its prediction (benchmarks/accuracy_disagg.py scores only the rows
that give them).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from solver.errors import InputError
from solver.estimate.disagg import DisaggEstimate, DisaggWorkload, estimate_disagg
from solver.measured import READ_COLUMNS as AGG_READ_COLUMNS, Case, _opt_int, case_from_row, factors
from solver.specs.disagg_fitted import burst_share
from solver.specs.hardware import Hardware

POOLS = ("prefill", "decode")
WORKER_COLUMNS = ("prefill_workers", "decode_workers")
POOL_SIZE_COLUMNS = ("tp", "attention_dp", "moe_tp", "moe_ep", "pp")
REQUIRED_COLUMNS = ("model", "system", "isl", "osl", "concurrency", "prefill_tp", "decode_tp")
# every column a disaggregated row is read from: the aggregated row's, each pool's sizes in place of the plain ones
# (pool_view), the worker counts and batches
READ_COLUMNS = (tuple(c for c in AGG_READ_COLUMNS if c not in POOL_SIZE_COLUMNS)
                + tuple(f"{p}_{c}" for p in POOLS for c in POOL_SIZE_COLUMNS)
                + WORKER_COLUMNS + ("prefill_batch", "decode_batch"))


@dataclass(frozen=True)
class DisaggCase:
    prefill: Case  # specs + the prefill worker's parallel_config (its workload is the aggregated one: unused)
    decode: Case
    workload: DisaggWorkload

    @property
    def hw(self) -> Hardware:
        """The hardware both pools run on (a row names one system; the aggregated fit's helpers read it)."""
        return self.decode.hw


def is_disagg(columns: Iterable[str]) -> bool:
    """A table is disaggregated when it carries both pools' TP columns."""
    cols = set(columns)
    return "prefill_tp" in cols and "decode_tp" in cols


def pool_view(row: Mapping[str, Any], pool: str) -> dict[str, Any]:
    """The row as solver.measured reads it, with this pool's sizes in the plain columns."""
    out = {k: v for k, v in row.items() if not k.startswith(POOLS)}
    for col in POOL_SIZE_COLUMNS:
        out[col] = row.get(f"{pool}_{col}")
    return out


def _pool_case(row: Mapping[str, Any], pool: str, framework: str | None, waves: int | None) -> Case:
    try:
        return case_from_row(pool_view(row, pool), framework, waves)
    except InputError as exc:
        col = f"{pool}_{exc.field}" if exc.field in POOL_SIZE_COLUMNS else exc.field
        raise InputError(col, exc.problem) from None


def case_from_disagg_row(row: Mapping[str, Any], framework: str | None = None,
                         waves: int | None = None) -> DisaggCase:
    """Specs of both pools + the workload. Raises InputError naming the column for anything unusable."""
    missing = [c for c in REQUIRED_COLUMNS if c not in row]
    if missing:
        raise InputError(missing[0], f"missing column(s): {', '.join(missing)}")
    pre = _pool_case(row, "prefill", framework, waves)
    dec = _pool_case(row, "decode", framework, waves)
    base = dec.workload
    wl = DisaggWorkload(isl=base.isl, osl=base.osl, concurrency=base.concurrency,
                        prefill_workers=_opt_int(row, "prefill_workers") or 1,
                        decode_workers=_opt_int(row, "decode_workers") or 1,
                        prefill_batch=_opt_int(row, "prefill_batch"), decode_batch=_opt_int(row, "decode_batch"),
                        benchmark_waves=base.benchmark_waves, request_overhead_s=base.request_overhead_s,
                        burst_share=burst_share(dec.framework.name, dec.hw.name), mtp=base.mtp,
                        mtp_accept=base.mtp_accept)
    return DisaggCase(pre, dec, wl)


def predict_disagg_row(row: Mapping[str, Any], framework: str | None = None) -> DisaggEstimate:
    """The disaggregated serving estimate for one row (InputError names the column when it cannot be used)."""
    c = case_from_disagg_row(row, framework)
    est = estimate_disagg(c.decode.model, c.decode.hw, c.prefill.pc, c.decode.pc, c.decode.prec,
                          factors(c.prefill), factors(c.decode), c.workload)
    check_fits(c, est)
    return est


def is_complete(row: Mapping[str, Any]) -> bool:
    """The row gives both worker counts (the table's first rows); the others are read by the convention."""
    return all(str(row.get(k, "")).strip() not in ("", "nan") for k in WORKER_COLUMNS)


def worker_count_spread(row: Mapping[str, Any], framework: str | None = None) -> tuple[float, float]:
    """How far the worker counts a row leaves blank could move its prediction: (TTFT, TPOT) largest / smallest
    - 1 over the corners x, y in {1, C} (at least one worker per pool, at most one per request). TPOT falls as
    y spreads the batch and the prefill wait as x adds capacity, so the corners bound what the unknown counts can
    do. A row that gives both counts has nothing unknown: (0, 0). InputError as `predict_disagg_row`."""
    if is_complete(row):
        return 0.0, 0.0
    c = max(1, _opt_int(row, "concurrency") or 1)
    ests = [predict_disagg_row({**row, "prefill_workers": x, "decode_workers": y}, framework)
            for x in sorted({1, c}) for y in sorted({1, c})]
    ttft = [e.ttft_s for e in ests]
    tpot = [e.tpot_s for e in ests]
    return max(ttft) / min(ttft) - 1, max(tpot) / min(tpot) - 1


def check_fits(c: DisaggCase, est: DisaggEstimate) -> None:
    """InputError on the pool's `_tp` column when a worker cannot hold the model at its smallest load (the
    decode pool's running batch is already capped by its KV capacity, so what is left is the weights)."""
    for pool, case, mem in (("prefill", c.prefill, est.prefill_memory), ("decode", c.decode, est.decode_memory)):
        if not mem.feasible:
            raise InputError(f"{pool}_tp", f"{case.model.name} does not fit a {pool} worker of "
                             f"{case.pc.world_size} x {case.hw.name} as labelled ({mem.model_bytes / 1e9:.0f} GB per "
                             f"rank over the {mem.limit_bytes / 1e9:.0f} GB limit)")
