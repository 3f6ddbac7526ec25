"""How a figure is written in a table cell, and so in every sentence printed beside the table (rank.explain,
rank.reason, rank.compared): a TTFT reads "2,369" in both, not "2,369" in the column and "2369" in the line under
it; and the digits a sentence comparing two figures needs to show how they differ."""
from __future__ import annotations

from typing import Any


def fmt_cell(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if value == 0:
            return "0"
        if abs(value) >= 100:
            return f"{value:,.0f}"
        if abs(value) >= 1:
            return f"{value:.2f}"
        return f"{value:.3g}"
    if isinstance(value, int):
        return f"{value:,}"
    return "" if value is None else str(value)


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
