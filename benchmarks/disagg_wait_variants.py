"""The prefill-wait variants measured against the complete disaggregated rows (issue 13), rerunnable.

    python benchmarks/disagg_wait_variants.py [--csv PATH]

Each variant replaces only the steady-state wait of the later waves (and, where named, the number of waves k);
everything else (step times with the shipped factors, KV transfer, admission, first wave, slot wait) is the
estimator's, taken from accuracy_disagg's fast path (`loop_inputs`). The shipped model is `rank M/D/1 + shared
step` (estimate.disagg.prefill_queue_wait); the script checks that its figure equals `disagg_times`'s.

    deterministic   later waves wait nothing below saturation, C_f / mu - Z above (the loop without noise)
    half step       random arrivals, W = rho P_n / 2 at the asymptotic rate lambda = min(C_f / Z, mu) (the
                    previous model's steady state)
    rank M/D/1      W = rho P_n / (2 (1 - rho)), lambda from Little's law over the loop
    + shared step   the above + (1 - rho)(1 - (1 - rho)^(R_s - 1)) P_n / 2 (shipped)

Each line gives the median / mean / p90 absolute TTFT error; nothing is fitted, so each figure is also its
leave-one-system-out figure, except the lines marked "fitted": the number of waves k fitted per framework (or per
framework x hardware, pooled below MIN_ROWS rows) in-sample, and held out (refitted without the row's hardware).
"""
from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from accuracy_rows import load_factors, load_rows  # noqa: E402
from accuracy_disagg import DEFAULT_CSV, Prepared, loop_inputs, predict, prepare_rows, shipped_params  # noqa: E402

from solver.estimate.disagg import DECODE_ADMISSION_STEPS, closed_loop_rate, prefill_queue_wait  # noqa: E402
from solver.estimate.serving import first_wave_groups, mtp_tokens_per_step  # noqa: E402

Wait = Callable[[float, float, float, float, int], float]  # (flowing, Z, mu, P_n, R_s) -> W [s]


def deterministic(flowing: float, z: float, mu: float, p: float, rs: int) -> float:
    return max(0.0, flowing / mu - z)


def half_step(flowing: float, z: float, mu: float, p: float, rs: int) -> float:
    rate = min(flowing / z, mu)
    return flowing / mu - z if rate >= mu else rate / mu * p / 2


def rank_md1(flowing: float, z: float, mu: float, p: float, rs: int) -> float:
    return max(0.0, flowing / closed_loop_rate(flowing, z, mu, p, 1) - z)


def rank_md1_shared(flowing: float, z: float, mu: float, p: float, rs: int) -> float:
    return max(0.0, flowing / closed_loop_rate(flowing, z, mu, p, rs) - z)


def ttft(p: Prepared, fitted, wait: Wait, waves: float | None = None) -> float:
    """The row's TTFT with the steady-state wait `wait` and k = `waves` (None: the workload's)."""
    li = loop_inputs(p, shipped_params(p, fitted))
    s, wl = p.shape, p.case.workload
    m = mtp_tokens_per_step(wl.mtp, wl.mtp_accept)
    tau = li.decode_s
    after = max(0.0, (wl.osl - 1) / m) * tau
    per_step = s.prefill_workers * s.prefill_replicas * s.prompts_per_step
    mu = per_step / li.prefill_s
    flowing = min(wl.concurrency, s.decode_workers * s.decode_replicas * s.running)
    admit = (DECODE_ADMISSION_STEPS + li.first_token_iterations) * tau
    base = li.overhead_s + li.prefill_s + p.transfer_s + admit
    w = wait(flowing, base + after, mu, li.prefill_s, s.prefill_synced)
    first = li.overhead_s + li.prefill_s * first_wave_groups(wl.concurrency, per_step) + p.transfer_s + admit
    k = wl.benchmark_waves if waves is None else waves
    served = (first + (k - 1) * (base + w)) / k
    return served + max(0, s.per_replica - s.running) / s.running * (served + after)


WAVE_GRID = (1, 1.25, 1.5, 1.75, 2, 2.5, 3, 4, 5, 6, 7, 8, 10, 12, 15, 20)


def fit_waves(train: Sequence[Prepared], p: Prepared, fitted, wait: Wait, per_pair: bool) -> float:
    """k minimising the mean |ln(TTFT_pred / TTFT_meas)| over `train`'s rows of p's (framework, hardware) when
    per_pair and it has MIN_ROWS of them, else of p's framework (fit_disagg's pooling rule)."""
    from fit_efficiency import MIN_ROWS

    pair = [q for q in train if q.framework == p.framework and q.hardware == p.hardware]
    use = pair if per_pair and len(pair) >= MIN_ROWS else [q for q in train if q.framework == p.framework]
    return min(WAVE_GRID, key=lambda k: sum(abs(math.log(ttft(q, fitted, wait, k) / q.ttft_s)) for q in use))


def summary(errs: Sequence[float]) -> str:
    a = np.abs(np.asarray(errs)) * 100
    return f"median {np.median(a):5.1f}%  mean {np.mean(a):5.1f}%  p90 {np.percentile(a, 90):5.1f}%"


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--csv", type=Path, default=DEFAULT_CSV)
    args = ap.parse_args(argv)
    rows = [p for p in prepare_rows(load_rows(args.csv))[0] if p.complete]
    fitted = load_factors()
    shipped = [predict(p, shipped_params(p, fitted))[0] for p in rows]
    mine = [ttft(p, fitted, rank_md1_shared) for p in rows]
    gap = max(abs(a / b - 1) for a, b in zip(mine, shipped))
    print(f"{len(rows)} complete rows; shipped variant vs disagg_times: max relative difference {gap:.1e}")
    variants = (("deterministic", deterministic), ("half step", half_step), ("rank M/D/1", rank_md1),
                ("rank M/D/1 + shared step (shipped)", rank_md1_shared))
    for name, wait in variants:
        print(f"  {name:<36} k 5   " + summary([ttft(p, fitted, wait) / p.ttft_s - 1 for p in rows]))
    for k in (3, 4, 6, 8):
        print(f"  {'rank M/D/1 + shared step':<36} k {k:<3} "
              + summary([ttft(p, fitted, rank_md1_shared, k) / p.ttft_s - 1 for p in rows]))
    for name, wait, per_pair in (("deterministic, k per framework", deterministic, False),
                                 ("shipped wait, k per (framework, hardware)", rank_md1_shared, True)):
        ins = [ttft(p, fitted, wait, fit_waves(rows, p, fitted, wait, per_pair)) / p.ttft_s - 1 for p in rows]
        held = [ttft(p, fitted, wait, fit_waves([q for q in rows if q.hardware != p.hardware], p, fitted, wait,
                                                per_pair)) / p.ttft_s - 1 for p in rows]
        print(f"  fitted: {name:<45} in-sample {summary(ins)}")
        print(f"  {'':<53} held out  {summary(held)}")
    for fw in sorted({p.framework for p in rows}):
        sub = [p for p in rows if p.framework == fw]
        print(f"  shipped, {fw:<27} {len(sub):>3} rows " + summary([ttft(p, fitted, rank_md1_shared) / p.ttft_s - 1
                                                                   for p in sub]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
