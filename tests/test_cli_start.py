"""A cold CLI start: the command modules import click and light constants only; pydantic, OR-Tools, pandas, numpy,
rich, the planner and the estimators load when a command that needs them runs, and a command imports only its own
command module (benchmarks/cli_start.py times it)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
HEAVY = ("pydantic", "yaml", "ortools", "pandas", "numpy", "rich", "solver.plan", "solver.estimate", "solver.calibrate", "solver.rank",
         "solver.capacity", "solver.api", "solver.launch")


def _modules_after(code: str) -> list[str]:
    """Every module loaded in a fresh interpreter after running `code`."""
    probe = f"import sys\n{code}\nimport json\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _loaded_after(code: str) -> list[str]:
    """The HEAVY packages (solver's by subpackage) loaded after running `code`."""
    tops = {m.split(".")[0] if m.split(".")[0] != "solver" else ".".join(m.split(".")[:2]) for m in _modules_after(code)}
    return sorted(m for m in tops if m in HEAVY)


def _run(argv: list[str]) -> str:
    return (f"from solver.cli.main import main\n"
            f"try:\n    main({argv!r}, prog_name='shardplan')\nexcept SystemExit:\n    pass")


def test_importing_the_cli_loads_no_heavy_library() -> None:
    assert _loaded_after("import solver.cli.main") == []


def test_help_lists_every_command_without_loading_a_heavy_library() -> None:
    code = ("from solver.cli.main import main\n"
            "try:\n    main(['--help'], prog_name='shardplan')\nexcept SystemExit:\n    pass")
    assert _loaded_after(code) == []


def test_inspect_loads_neither_the_planner_nor_ortools_nor_pandas() -> None:
    loaded = _loaded_after(_run(["inspect", "qwen3-8b", "--format", "json"]))
    assert not {"ortools", "pandas", "solver.plan", "solver.capacity", "solver.api"} & set(loaded), loaded


def test_inspect_loads_neither_the_memory_estimator_nor_the_hardware_nor_the_framework_specs() -> None:
    loaded = set(_modules_after(_run(["inspect", "qwen3-8b", "--format", "json"])))
    assert "solver.estimate.params" in loaded  # what it shows is counted, not guessed
    unwanted = {"solver.estimate.memory", "solver.estimate.weights", "solver.estimate.request_state",
                "solver.estimate.activations", "solver.estimate.buffers", "solver.specs.hardware",
                "solver.specs.framework", "solver.specs.parallel"}
    assert not unwanted & loaded, unwanted & loaded


def test_inspect_of_a_transformer_loads_neither_the_linear_attention_nor_the_ssm_layers() -> None:
    # specs.layers imports those on first use: a hybrid model loads them, a transformer does not pay for them
    layers = ("solver.specs.layers.linear", "solver.specs.layers.mamba", "solver.specs.layers.recurrent")
    dense = set(_modules_after(_run(["inspect", "deepseek-v3.2", "--format", "json"])))
    assert not set(layers) & dense, set(layers) & dense
    hybrid = set(_modules_after(_run(["inspect", "qwen3-next-80b-a3b", "--format", "json"])))
    assert "solver.specs.layers.linear" in hybrid


def test_inspect_loads_neither_rich_emoji_table_nor_difflib_nor_gzip() -> None:
    # the table output prints text as given (no emoji codes), so rich's 4,000-name emoji table never loads;
    # difflib and gzip load only for an unknown name and a gzip file
    loaded = set(_modules_after(_run(["inspect", "deepseek-v3.2"])))
    assert not {"rich._emoji_codes", "difflib", "gzip"} & loaded, {"rich._emoji_codes", "difflib", "gzip"} & loaded


def test_a_command_imports_only_its_own_command_module() -> None:
    for argv, own in ((["inspect", "qwen3-8b", "--format", "json"], "catalog_cmds"),
                      (["solve", "--help"], "solve_cmd"), (["launch", "--help"], "launch_cmd")):
        cli = {m for m in _modules_after(_run(argv)) if m.startswith("solver.cli.")}
        assert cli == {"solver.cli.main", "solver.cli.options", f"solver.cli.{own}"}, (argv, cli)


def test_the_command_table_names_every_command_of_every_command_module() -> None:
    import importlib

    from solver.cli.main import COMMAND_MODULES

    files = {p.stem for p in (REPO / "solver" / "cli").glob("*.py") if p.stem not in ("__init__", "main", "options")}
    assert set(COMMAND_MODULES) == files
    for module, names in COMMAND_MODULES.items():
        assert tuple(c.name for c in importlib.import_module(f"solver.cli.{module}").COMMANDS) == names, module


def test_help_names_each_command_with_the_first_line_of_its_docstring() -> None:
    from solver.cli.main import main

    text = subprocess.run([sys.executable, "-c", "from solver.cli.main import main; main(['--help'], "
                           "prog_name='shardplan')"], cwd=REPO, capture_output=True, text=True).stdout
    for name, cmd in main.commands.items():
        first = cmd.help.split("\n")[0].split()[0]
        assert any(line.split()[:2] == [name, first] for line in text.splitlines() if line.strip()), name


def test_a_pydantic_error_escaping_a_command_is_still_bad_input(capsys) -> None:
    # main no longer imports pydantic to catch ValidationError: it recognises one once pydantic is loaded
    import click
    import pytest
    from pydantic import BaseModel

    from solver.cli.main import main

    class Probe(BaseModel):
        cards: int

    @click.command("_probe")
    def probe() -> None:
        Probe(cards="many")

    main.add_command(probe)
    try:
        with pytest.raises(SystemExit) as exc:
            main(["_probe"], prog_name="shardplan")
    finally:
        del main.commands["_probe"]
    err = capsys.readouterr().err
    assert exc.value.code == 2
    assert err.count("\n") == 1 and err.startswith("error: ") and "cards" in err, err
