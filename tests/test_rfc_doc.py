"""The RFC pages quote what their benchmarks print: every line `benchmarks/rfc_attention_sp.py` prints, and every
row of the MI355X tables `benchmarks/rfc_planner.py` prints, appears in docs/rfc-attention-sp.md verbatim; every
line `benchmarks/rfc_planner.py` prints (MI355X, H200 and Atlas A3 tables) appears in docs/planner.md verbatim.
The scripts run in-process."""
from __future__ import annotations

import contextlib
import functools
import io
from collections.abc import Callable
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
RFC_PAGE = REPO / "docs" / "rfc-attention-sp.md"
PLANNER_PAGE = REPO / "docs" / "planner.md"


def _printed(main: Callable[[], None]) -> str:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        main()
    return buf.getvalue()


@functools.cache
def _rfc_planner_printed() -> str:
    """One run of the twelve planner cases (about 5 s), shared by the two pages' tests."""
    from benchmarks import rfc_planner

    return _printed(rfc_planner.main)


def _missing(page: Path, lines: list[str]) -> list[str]:
    held = set(page.read_text().splitlines())
    return [line for line in lines if line not in held]


def _message(missing: list[str], total: int, script: str, page: Path, where: str) -> str:
    shown = "\n".join(missing[:8])
    return (f"{len(missing)} of {total} lines that benchmarks/{script} prints are not in docs/{page.name} "
            f"verbatim, e.g.\n{shown}\nRegenerate: `python benchmarks/{script}` and paste its tables over the "
            f"page's ({where}), then re-read the prose figures beside them.")


def test_every_line_rfc_attention_sp_prints_is_in_the_page() -> None:
    """The script prints the claims table, the SP-degree, MoE-option and memory tables and the per-deployment
    tables (about 0.5 s): each of its non-blank lines (headings, rows, commands, the verdict count) is a line of
    the page."""
    from benchmarks import rfc_attention_sp

    lines = [line for line in _printed(rfc_attention_sp.main).splitlines() if line.strip()]
    assert len(lines) > 150  # 225 today: a guard against a script that prints (almost) nothing
    missing = _missing(RFC_PAGE, lines)
    assert not missing, _message(missing, len(lines), "rfc_attention_sp.py", RFC_PAGE,
                                 "the page's 'Regenerate:' paragraph says where")


@pytest.mark.slow  # about 5 s: twelve planner runs
def test_every_mi355x_planner_row_is_in_the_page() -> None:
    """rfc_planner.py prints one table per (hardware, profile, ISL); the page holds the MI355X ones (generic and
    ATOM at 8K, 32K, 64K: 6 headings + 6 x 5 table lines)."""
    sections = _rfc_planner_printed().split("\n### ")
    lines = [line for s in sections if s.startswith("mi355x") for line in ("### " + s).splitlines() if line.strip()]
    assert len(lines) == 36
    missing = _missing(RFC_PAGE, lines)
    assert not missing, _message(missing, len(lines), "rfc_planner.py", RFC_PAGE, "the MI355X ones")


@pytest.mark.slow  # about 5 s: twelve planner runs (shared with the test above when both run)
def test_every_line_rfc_planner_prints_is_in_the_planner_page() -> None:
    """docs/planner.md's RFC section holds every table rfc_planner.py prints: 4 (hardware, profile) cases x
    3 ISLs = 12 headings, each table a header, a rule and the top 3 rows, 12 + 12 x 5 = 72 non-blank lines."""
    lines = [line for line in _rfc_planner_printed().splitlines() if line.strip()]
    assert len(lines) == 72
    missing = _missing(PLANNER_PAGE, lines)
    assert not missing, _message(missing, len(lines), "rfc_planner.py", PLANNER_PAGE,
                                 "under '## The RFC case', all twelve")
