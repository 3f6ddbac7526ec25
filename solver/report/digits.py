"""The decimals each figure is written with in machine-readable outputs (solve / check JSON and YAML, sweep files):
far below the estimator's accuracy, fine enough that a small figure keeps its digits (1.35 tok/s per rank on a
large cluster is not 1.4), and one rounding everywhere, so a figure reads the same in every file."""
from __future__ import annotations

import math

DIGITS = {"memory_per_rank_gb": 3, "memory_limit_gb": 3, "ttft_ms": 3, "tpot_ms": 4,
          "output_tokens_per_s_per_rank": 3, "output_tokens_per_s": 2, "input_tokens_per_s": 2,
          "input_tokens_per_s_per_rank": 3, "tokens_per_s_per_user": 4, "request_latency_ms": 3, "requests_per_s": 4}


def rounded(value: float, figure: str) -> float:
    """`value` at `figure`'s decimals (DIGITS); a non-finite value as it is."""
    return round(float(value), DIGITS[figure]) if math.isfinite(value) else float(value)
