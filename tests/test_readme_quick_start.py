"""README's quick start: the two commands a new user runs on a fresh machine (install + the main job on a built-in
example; install + the tests) are there, the job runs, and the test command is the one CI runs."""
from __future__ import annotations

import re
import shlex
from pathlib import Path

from click.testing import CliRunner

from solver.cli.main import main

ROOT = Path(__file__).resolve().parents[1]


def _quick_start_commands() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    return [block.strip() for block in re.findall(r"```bash\n(.*?)```", section, re.S)]


def test_the_quick_start_gives_an_install_and_run_command_and_an_install_and_test_command() -> None:
    run, test = _quick_start_commands()[:2]
    assert "python3 -m venv .venv" in run and ".venv/bin/pip install . " in run and ".venv/bin/shardplan " in run
    assert "python3 -m venv .venv" in test and '.venv/bin/pip install ".[test]"' in test
    assert test.endswith(".venv/bin/python -m pytest -q")


def test_the_quick_start_job_runs_on_a_built_in_example() -> None:
    run = _quick_start_commands()[0]
    argv = shlex.split(run.split(".venv/bin/shardplan ", 1)[1])
    result = CliRunner().invoke(main, argv)
    assert result.exit_code == 0, result.output
    assert "solver status: OPTIMAL" in result.stdout


def test_ci_runs_the_quick_starts_test_command() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert '"$VENV/bin/pip" install --quiet ".[test]"' in ci
    assert '"$VENV/bin/python" -m pytest -q\n' in ci
