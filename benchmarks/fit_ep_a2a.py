"""Fit the EP dispatch/combine kernel latency (Hardware.ep_a2a) on DeepEP's published low-latency figures.

    python benchmarks/fit_ep_a2a.py

Source: /work/shared/facts/hardware.md, row "DeepEP all-to-all" (DeepEP README): on H800 (NVLink ~155 GB/s
achieved, one 50 GB/s RDMA NIC per GPU), decode dispatch 77-194 us and combine 114-369 us for 128 tokens at
EP8-EP256 (the README's DeepSeek-V3 setting: hidden 7168, top-8, FP8 dispatch, BF16 combine). The range ends are
read as the EP8 and EP256 points.

Model (comm.ep_all_to_all_s): t(n) = latency + per_doubling x log2(n) + bytes over the tiers, where the bytes
term is the project's own all-to-all transfer time on hardware/h800.yaml (each rank sends tokens x top-k x hidden
x bytes per element, spread over the n ranks; the slowest level decides). The fit subtracts that transfer time
from each published time and fits the rest, a kernel latency, as a line in log2(n) by least squares (both
coefficients >= 0). Dispatch and combine share the line: the same GPU-initiated send + wait-on-flags kernel.
Prints the points, the residual latency of each, the fit, and the value hardware YAMLs carry.
"""
from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from solver.estimate.comm import all_to_all_transfer_s  # noqa: E402
from solver.specs.hardware import load_hardware_file  # noqa: E402

TOKENS, HIDDEN, TOPK = 128, 7168, 8  # DeepEP README low-latency setting (DeepSeek-V3 shapes)
# (op, EP size, bytes per element, published time in seconds): facts/hardware.md "DeepEP all-to-all"
POINTS = (("dispatch", 8, 1, 77e-6), ("dispatch", 256, 1, 194e-6),
          ("combine", 8, 2, 114e-6), ("combine", 256, 2, 369e-6))


def transfer_s(n: int, elem_bytes: int) -> float:
    """The project's all-to-all transfer time (no latency) for the published message on H800."""
    hw = load_hardware_file(REPO / "hardware" / "h800.yaml").model_copy(update={"ep_a2a": None})
    return all_to_all_transfer_s(hw, n, TOKENS * TOPK * HIDDEN * elem_bytes)


def fit() -> tuple[float, float, list[tuple[str, int, float, float, float]]]:
    """(latency_s, per_doubling_s, rows of (op, n, published, transfer, residual latency))."""
    rows = [(op, n, t, transfer_s(n, b), t - transfer_s(n, b)) for op, n, b, t in POINTS]
    x = np.array([math.log2(r[1]) for r in rows])
    y = np.array([r[4] for r in rows])
    slope, icept = np.polyfit(x, y, 1)
    if slope < 0:  # no growth in the data beyond the bytes: a constant
        slope, icept = 0.0, float(y.mean())
    if icept < 0:
        icept, slope = 0.0, float((x * y).sum() / (x * x).sum())
    return float(icept), float(slope), rows


def main() -> None:
    a, b, rows = fit()
    print(f"{'op':9} {'EP':>4} {'published us':>13} {'transfer us':>12} {'latency us':>11} {'fit us':>8}")
    for op, n, t, tr, lat in rows:
        print(f"{op:9} {n:4d} {t * 1e6:13.1f} {tr * 1e6:12.1f} {lat * 1e6:11.1f} {(a + b * math.log2(n)) * 1e6:8.1f}")
    print(f"fit: latency_s = {a:.3e}, per_doubling_s = {b:.3e}  (EP8 {(a + 3 * b) * 1e6:.1f} us, "
          f"EP256 {(a + 8 * b) * 1e6:.1f} us)")
    print(f"hardware YAML:\nep_a2a:\n  latency_s: {a:.2e}\n  per_doubling_s: {b:.2e}")


if __name__ == "__main__":
    main()
