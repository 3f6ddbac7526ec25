"""docs/rfc-attention-sp.md quotes what its benchmarks print: every line `benchmarks/rfc_attention_sp.py` prints,
and every row of the MI355X tables `benchmarks/rfc_planner.py` prints (its H200 and A3 tables live in
docs/planner.md), appears in the page verbatim. The scripts run in-process."""
from __future__ import annotations

import contextlib
import io
from collections.abc import Callable
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PAGE = REPO / "docs" / "rfc-attention-sp.md"


def _printed(main: Callable[[], None]) -> str:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        main()
    return buf.getvalue()


def _missing(lines: list[str]) -> list[str]:
    page = set(PAGE.read_text().splitlines())
    return [line for line in lines if line not in page]


def _message(missing: list[str], total: int, script: str) -> str:
    shown = "\n".join(missing[:8])
    return (f"{len(missing)} of {total} lines that benchmarks/{script} prints are not in docs/rfc-attention-sp.md "
            f"verbatim, e.g.\n{shown}\nRegenerate: `python benchmarks/{script}` and paste its tables over the page's "
            "(the page's 'Regenerate:' paragraph says where), then re-read the prose figures beside them.")


def test_every_line_rfc_attention_sp_prints_is_in_the_page() -> None:
    """The script prints the claims table, the SP-degree, MoE-option and memory tables and the per-deployment
    tables (about 0.5 s): each of its non-blank lines (headings, rows, commands, the verdict count) is a line of
    the page."""
    from benchmarks import rfc_attention_sp

    lines = [line for line in _printed(rfc_attention_sp.main).splitlines() if line.strip()]
    assert len(lines) > 150  # 225 today: a guard against a script that prints (almost) nothing
    missing = _missing(lines)
    assert not missing, _message(missing, len(lines), "rfc_attention_sp.py")


@pytest.mark.slow  # about 5 s: twelve planner runs
def test_every_mi355x_planner_row_is_in_the_page() -> None:
    """rfc_planner.py prints one table per (hardware, profile, ISL); the page holds the MI355X ones (generic and
    ATOM at 8K, 32K, 64K: 6 headings + 6 x 5 table lines)."""
    from benchmarks import rfc_planner

    sections = _printed(rfc_planner.main).split("\n### ")
    lines = [line for s in sections if s.startswith("mi355x") for line in ("### " + s).splitlines() if line.strip()]
    assert len(lines) == 36
    missing = _missing(lines)
    assert not missing, _message(missing, len(lines), "rfc_planner.py")
