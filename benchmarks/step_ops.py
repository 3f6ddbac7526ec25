"""The prefill and decode steps of calibration rows, op by op: what to check a row's physics against by hand.

    python benchmarks/step_ops.py ROW [ROW ...] [--csv PATH]

ROW is the 0-based row of the calibration CSV (facts/calibration/measured_agg_calibration.csv). For each row it
prints the setup, the format and compute rate each GEMM group runs in, the serving shape (sequences running,
prompts per prefill step), the measured and predicted (shipped factors) TTFT and TPOT with the two step times, and
then each step's ops summed over the layer stack per rank: FLOPs, bytes, compute and memory seconds and kernel
overhead at the hardware's own factors (multipliers 1, grouped_gemm 1: the fitted factors rescale these), and the
step's exposed communication. These are the numbers `accuracy.py` rescales (solver/calibrate/rows.py); the hand
counts of issue 15's audit (benchmarks/README.md, stop 49; tests/test_fid49.py) were checked against them.
"""
from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path
from typing import Sequence

sys.path.insert(0, str(Path(__file__).resolve().parent))
from accuracy_rows import DEFAULT_CSV, load_factors, load_rows, predict_times, prepare, profile_params  # noqa: E402

from solver.errors import InputError  # noqa: E402
from solver.estimate.serving import serving_steps  # noqa: E402
from solver.estimate.step import StepCost  # noqa: E402


def op_lines(step: StepCost) -> list[str]:
    """One line per (module, op) of `step`, summed over the stack, slowest first."""
    agg: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0.0] * 5)
    for o in step.ops:
        a = agg[(o.module, o.name)]
        for i, v in enumerate((o.flops, o.bytes, o.compute_s, o.memory_s, o.overhead_s)):
            a[i] += v
    return [f"    {m:<18}{n:<20} {a[0] / 1e12:10.4f} TFLOP {a[1] / 1e9:9.4f} GB  compute {a[2] * 1e3:8.3f} ms  "
            f"memory {a[3] * 1e3:8.3f} ms  kernels {a[4] * 1e3:6.3f} ms"
            for (m, n), a in sorted(agg.items(), key=lambda kv: -max(kv[1][2], kv[1][3]))]


def row_report(row: dict, index: int, fitted: dict) -> list[str]:
    p = prepare(row, index)
    c = p.case
    groups = ", ".join(f"{g} {c.prec.fmt(g).name} at the {c.prec.gemm_dtype(g)} rate" for g in c.prec.weights)
    t, pre_s, dec_s = predict_times(p, profile_params(p, fitted))
    s = p.shape
    lines = [f"row {index}: {p.model} {p.framework} {p.hardware} ISL {row['isl']} OSL {row['osl']} "
             f"C {row['concurrency']} TP {c.pc.attn_tp_size} DP {c.pc.attn_replicas} MoE TP {c.pc.moe_tp_size} EP {c.pc.moe_ep_size}",
             f"  weights: {groups}; KV {c.prec.kv_bytes} B per element",
             f"  shape: {s.running:g} running per replica, {s.prompts_per_step:g} prompts per prefill step, "
             f"{s.chunks} chunk(s) per prompt, CUDA-graph batch {s.graph_batch}",
             f"  TTFT measured {p.ttft_s * 1e3:.1f} ms, predicted {t.ttft_s * 1e3:.1f} ms; TPOT measured "
             f"{p.tpot_s * 1e3:.2f} ms, predicted {t.tpot_s * 1e3:.2f} ms; prefill step {pre_s * 1e3:.2f} ms, decode "
             f"step {dec_s * 1e3:.2f} ms (shipped factors)"]
    pre, dec = serving_steps(c.model, c.hw, c.pc, c.prec, p.base, c.workload, s)
    for label, step in (("prefill", pre), ("decode", dec)):
        lines.append(f"  {label} step at the hardware's own factors: exposed communication "
                     f"{step.exposed_comm_s * 1e3:.2f} ms")
        lines += op_lines(step)
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("rows", type=int, nargs="+", help="0-based CSV row numbers")
    ap.add_argument("--csv", type=Path, default=DEFAULT_CSV)
    args = ap.parse_args(argv)
    rows = load_rows(args.csv)
    fitted = load_factors()
    for i in args.rows:
        if not 0 <= i < len(rows):
            print(f"error: ROW: {i} is not a row of {args.csv} (0 .. {len(rows) - 1})", file=sys.stderr)
            return 2
        try:
            print("\n".join(row_report(rows[i], i, fitted)))
        except InputError as exc:
            print(f"row {i}: not evaluable: {exc}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
