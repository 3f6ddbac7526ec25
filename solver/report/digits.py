"""The decimals each figure is written with in machine-readable outputs (solve / check JSON and YAML, sweep files):
far below the estimator's accuracy, fine enough that a small figure keeps its digits (1.35 tok/s per rank on a
large cluster is not 1.4), and one rounding everywhere, so a figure reads the same in every file."""
from __future__ import annotations

import math

DIGITS = {"memory_per_rank_gb": 3, "ttft_ms": 3, "tpot_ms": 4, "output_tokens_per_s_per_rank": 3,
          "output_tokens_per_s": 2, "input_tokens_per_s": 2, "input_tokens_per_s_per_rank": 3, "tokens_per_s_per_user": 4,
          "request_latency_ms": 3, "requests_per_s": 4}


def rounded(value: float, figure: str) -> float:
    """`value` at `figure`'s decimals (DIGITS); a non-finite value as it is."""
    return round(float(value), DIGITS[figure]) if math.isfinite(value) else float(value)


def apart(a: float, b: float, decimals: int = 1, most: int = 6) -> tuple[str, str]:
    """`a` and `b` written at `decimals`, or at the fewest more (up to `most`) that tell two different values
    apart: a sentence comparing 64.94 with its limit 64.86 must not read "64.9, limit 64.9"."""
    d = decimals
    while d < most and a != b and f"{a:.{d}f}" == f"{b:.{d}f}":
        d += 1
    return f"{a:.{d}f}", f"{b:.{d}f}"


def change_pct(new: float, old: float) -> str:
    """The change from `old` to `new` in whole percent; one below half a percent keeps the decimals that show it
    (-0.2%, +0.04%: not -0%, which reads as no change in one direction), and only none at all is 0%."""
    if not old:
        return "n/a"
    r = new / old - 1
    if r == 0:
        return "0%"
    for d in range(4):
        text = f"{r:+.{d}%}"
        if text.strip("+-0.%"):
            return text
    return f"{'+' if r > 0 else '-'}<0.001%"
