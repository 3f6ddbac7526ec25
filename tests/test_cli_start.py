"""A cold CLI start: the command modules import click and light constants only; OR-Tools, pandas, numpy, rich,
the planner and the estimators load when a command that needs them runs (benchmarks/cli_start.py times it)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
HEAVY = ("ortools", "pandas", "numpy", "rich", "solver.plan", "solver.estimate", "solver.calibrate", "solver.rank",
         "solver.capacity", "solver.api", "solver.launch")


def _loaded_after(code: str) -> list[str]:
    probe = (f"import sys\n{code}\nimport json\n"
             f"print(json.dumps(sorted({{m.split('.')[0] if m.split('.')[0] != 'solver' else '.'.join(m.split('.')[:2]) "
             f"for m in sys.modules}})))")
    out = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, check=True)
    return [m for m in json.loads(out.stdout.strip().splitlines()[-1]) if m in HEAVY]


def test_importing_the_cli_loads_no_heavy_library() -> None:
    assert _loaded_after("import solver.cli.main") == []


def test_help_lists_every_command_without_loading_a_heavy_library() -> None:
    code = ("from solver.cli.main import main\n"
            "try:\n    main(['--help'], prog_name='shardplan')\nexcept SystemExit:\n    pass")
    assert _loaded_after(code) == []


def test_inspect_loads_neither_the_planner_nor_ortools_nor_pandas() -> None:
    code = ("from solver.cli.main import main\n"
            "try:\n    main(['inspect', 'qwen3-8b', '--format', 'json'], prog_name='shardplan')\nexcept SystemExit:\n    pass")
    loaded = _loaded_after(code)
    assert not {"ortools", "pandas", "solver.plan", "solver.capacity", "solver.api"} & set(loaded), loaded


def test_help_names_each_command_with_the_first_line_of_its_docstring() -> None:
    from solver.cli.main import main

    text = subprocess.run([sys.executable, "-c", "from solver.cli.main import main; main(['--help'], "
                           "prog_name='shardplan')"], cwd=REPO, capture_output=True, text=True).stdout
    for name, cmd in main.commands.items():
        first = cmd.help.split("\n")[0].split()[0]
        assert any(line.split()[:2] == [name, first] for line in text.splitlines() if line.strip()), name
