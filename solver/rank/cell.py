"""How a figure is written in a table cell, and so in every sentence printed beside the table (rank.explain,
rank.reason): a TTFT reads "2,369" in both, not "2,369" in the column and "2369" in the line under it."""
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
