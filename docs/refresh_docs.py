"""Re-run the shell examples in the docs and write their current output back, so pages never quote figures
the code no longer produces.

    .venv/bin/python docs/refresh_docs.py docs/calibration-example.md [more.md ...] [--check]

A fenced block is refreshed when its first line starts with `$ shardplan`; a block may hold several commands
(continuation lines end in `\\`). Each command's shown output is replaced by what it prints now (run from the
repository root, 160 columns), cut to as many lines as the page showed. Output abbreviated by hand (a line that
is just `...`) is left alone and listed. `--check` only reports what would change.
"""
from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARDPLAN = Path(sys.executable).parent / "shardplan"


def _blocks(lines: list[str]):
    i = 0
    while i < len(lines):
        if lines[i].startswith("```") and i + 1 < len(lines) and lines[i + 1].startswith("$ shardplan"):
            start = i + 1
            end = start
            while end + 1 < len(lines) and not lines[end + 1].startswith("```"):
                end += 1
            yield start, end + 1  # command starts at `start`; the closing fence is at end + 1
            i = end + 2
        else:
            i += 1


def _run(command: str) -> str:
    args = shlex.split(command.replace("\\\n", " "))
    args[0] = str(SHARDPLAN)
    env = {**os.environ, "COLUMNS": "160", "TERM": "dumb"}
    done = subprocess.run(args, cwd=REPO, capture_output=True, text=True, env=env)
    return (done.stdout + done.stderr).rstrip("\n")


def _segments(block: list[str]) -> list[tuple[str, list[str]]]:
    """(command, shown output) for each `$ shardplan` command of a block."""
    segs: list[tuple[str, list[str]]] = []
    i = 0
    while i < len(block):
        if block[i].startswith("$ shardplan"):
            j = i
            while block[j].rstrip().endswith("\\") and j + 1 < len(block):
                j += 1
            command = "\n".join(block[i:j + 1])[2:]
            k = j + 1
            while k < len(block) and not block[k].startswith("$ "):
                k += 1
            segs.append((command, block[i:j + 1], block[j + 1:k]))
            i = k
        else:
            i += 1
    return segs


def refresh(path: Path, check: bool) -> list[str]:
    lines = path.read_text().split("\n")
    report, out, last = [], [], 0
    for start, fence in _blocks(lines):
        out += lines[last:start]
        for command, cmd_lines, old in _segments(lines[start:fence]):
            out += cmd_lines
            if any(line.strip() == "..." for line in old):
                report.append(f"{path}: `{command[:60]}`: abbreviated by hand, left as is")
                out += old
                continue
            new = _run(command).split("\n")
            # a page may show only the head of a long output: keep as many lines as it showed
            new = new[:len(old)] if len(old) < len(new) and old else new
            if new != old:
                report.append(f"{path}: `{command[:60]}`: {'would change' if check else 'refreshed'}")
            out += old if check else new
        last = fence
    out += lines[last:]
    if not check:
        path.write_text("\n".join(out))
    return report


def main() -> None:
    if not sys.argv[1:] or {"-h", "--help"} & set(sys.argv[1:]):
        print(__doc__.strip())
        return
    check = "--check" in sys.argv
    for name in [a for a in sys.argv[1:] if a != "--check"]:
        for line in refresh(Path(name), check):
            print(line)


if __name__ == "__main__":
    main()
