"""Re-point docs/engine-conformance.md's line references after an engine profile was edited.

    python docs/remap_conformance_refs.py ABBR OLD [NEW]

ABBR is the page's abbreviation of the profile (v, va, sg, trt, at). OLD is the profile's text before the edit: a
file, or a git revision whose solver/frameworks/<profile>.yaml is read (HEAD, a commit). NEW defaults to the
working tree's profile. Every `ABBR:N`, `ABBR:N-M` and `ABBR:N, K` of the page (plain and rule-id references
alike) is carried over a difflib line map from OLD to NEW and the page is rewritten in place; a line the edit
deleted or rewrote into a block of another size is reported and left as it was (re-point it by hand: the
conformance test names what the row spells).
"""
from __future__ import annotations

import difflib
import re
import subprocess
import sys
from pathlib import Path
from typing import Callable, Optional

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "engine-conformance.md"
ABBREV = {"v": "vllm", "va": "vllm-ascend", "sg": "sglang", "trt": "trtllm", "at": "atom"}
# `va:245`, `va:245-248`, and a list that shares the abbreviation: `trt:107, 112`
REF = re.compile(r"\b(v|va|sg|trt|at):(\d+(?:-\d+)?(?:, \d+(?:-\d+)?)*)(?!\d)")
SPAN = re.compile(r"(\d+)(?:-(\d+))?")


def profile_path(abbr: str) -> Path:
    return ROOT / "solver" / "frameworks" / f"{ABBREV[abbr]}.yaml"


def spans(numbers: str) -> list[tuple[int, int]]:
    """'245-248, 250' -> [(245, 248), (250, 250)]."""
    return [(int(a), int(b or a)) for a, b in SPAN.findall(numbers)]


def line_map(old: list[str], new: list[str]) -> Callable[[int], Optional[int]]:
    """1-based old line -> 1-based new line, or None where the edit removed it or rewrote it into a block of
    another size (no line there is the same one)."""
    mapping: dict[int, int] = {}
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if tag == "equal" or (tag == "replace" and i2 - i1 == j2 - j1):
            for k in range(i2 - i1):
                mapping[i1 + k + 1] = j1 + k + 1
    return mapping.get


def remap(doc: str, abbr: str, move: Callable[[int], Optional[int]]) -> tuple[str, list[str], list[str]]:
    """The page with every reference of `abbr` moved; the changes made and the references left alone."""
    changed: list[str] = []
    lost: list[str] = []

    def one(m: re.Match) -> str:
        if m.group(1) != abbr:
            return m.group(0)
        parts = []
        for a, b in spans(m.group(2)):
            na, nb = move(a), move(b)
            if na is None or nb is None:
                lost.append(f"{abbr}:{a}" + (f"-{b}" if b != a else ""))
                na, nb = a, b
            parts.append(str(na) if na == nb else f"{na}-{nb}")
        new = f"{abbr}:" + ", ".join(parts)
        if new != m.group(0):
            changed.append(f"{m.group(0)} -> {new}")
        return new

    return REF.sub(one, doc), changed, lost


def _old_text(abbr: str, old: str) -> str:
    if Path(old).is_file():
        return Path(old).read_text()
    rel = profile_path(abbr).relative_to(ROOT).as_posix()
    shown = subprocess.run(["git", "-C", str(ROOT), "show", f"{old}:{rel}"], capture_output=True, text=True)
    if shown.returncode:
        raise ValueError(f"OLD: {old!r} is neither a file nor a git revision holding {rel}")
    return shown.stdout


def main(argv: list[str]) -> int:
    if len(argv) not in (2, 3) or argv[0] not in ABBREV:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    abbr, old = argv[0], argv[1]
    new_text = Path(argv[2]).read_text() if len(argv) == 3 else profile_path(abbr).read_text()
    try:
        old_text = _old_text(abbr, old)
    except ValueError as e:
        print(e, file=sys.stderr)
        return 2
    move = line_map(old_text.splitlines(), new_text.splitlines())
    doc, changed, lost = remap(DOC.read_text(), abbr, move)
    DOC.write_text(doc)
    for c in changed:
        print(c)
    for ref in lost:
        print(f"{ref}: the edit removed or rewrote that line; re-point it by hand", file=sys.stderr)
    print(f"{len(changed)} references moved, {len(lost)} left for a hand", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
