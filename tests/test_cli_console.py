"""The one console every command prints through (solver.report.render.console): text is printed as given, and
rich's highlighting colours a terminal's output exactly as before while a pipe or a file gets plain text."""
from __future__ import annotations

import re

import pytest

from solver.report.render import console, table

TEXT = "3 x [MLA 128] :fire: bf16:989 fp8:1979 :+1: 61 layers"


def _printed(*objects) -> str:
    con = console()
    with con.capture() as cap:
        for obj in objects:
            con.print(obj)
    return cap.get()


@pytest.mark.parametrize("terminal", [False, True])
def test_text_and_cells_are_printed_as_given_with_no_emoji_codes(monkeypatch, terminal: bool) -> None:
    if terminal:
        monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.delenv("NO_COLOR", raising=False)
    out = _printed(TEXT, table("t", ["a"], [[":smile:"]]))
    plain = re.sub(r"\x1b\[[0-9;]*m", "", out)
    assert TEXT in plain and ":smile:" in plain, plain


def test_a_colour_terminal_still_highlights_numbers(monkeypatch) -> None:
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.delenv("NO_COLOR", raising=False)
    assert "\x1b[1;36m61\x1b[0m" in _printed("61 layers")


def test_a_pipe_gets_plain_text(monkeypatch) -> None:
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    assert _printed("61 layers", table("t", ["a"], [[2.5]])).count("\x1b") == 0
