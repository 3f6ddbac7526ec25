"""What a cold `solve` does before and after the plan: the reference models are named without parsing their
configs, and the table format loads no launch emitter (benchmarks/cli_start.py times the whole)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def test_reference_models_are_named_as_load_model_names_them_without_parsing_a_config(monkeypatch) -> None:
    import solver.api as api
    import solver.specs.model_catalog as catalog
    from solver.specs.reference import list_references

    expected = {}
    for ref in list_references():
        try:
            expected[ref.id] = catalog.load_model(ref.model).name
        except Exception:  # noqa: BLE001 - as _ref_models: a model outside the catalog matches by name
            expected[ref.id] = ref.model
    parsed = []
    monkeypatch.setattr(catalog, "parse_model_config", lambda *a, **k: parsed.append(a) or None)
    api._ref_models.cache_clear()
    catalog._load_cached.cache_clear()  # a parsed config cached by the loop above would hide a parse
    try:
        assert api._ref_models() == expected
    finally:
        api._ref_models.cache_clear()
    assert parsed == []
    assert len(expected) == len(list_references()) and {"DeepSeek-V3.2", "Kimi-K2-Instruct"} <= set(expected.values())


def test_a_table_solve_loads_no_launch_emitter_and_a_json_solve_does() -> None:
    def loaded(fmt: str) -> set[str]:
        code = ("import json, sys\nfrom solver.cli.main import main\n"
                f"try:\n    main(['solve', 'qwen3-8b', '--hardware', 'h200_sxm', '--cards', '8', '--format', {fmt!r}])\n"
                "except SystemExit:\n    pass\nprint(json.dumps(sorted(sys.modules)))")
        run = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
        return {m for m in json.loads(run.stdout.strip().splitlines()[-1]) if m.startswith("solver.launch")}

    assert loaded("table") == set()
    assert "solver.launch.emit" in loaded("json")


def test_command_imports_pause_the_collector_and_freeze_what_they_made() -> None:
    import gc

    import pytest

    from solver.cli.options import command_imports

    assert gc.isenabled()
    try:
        with command_imports():
            assert not gc.isenabled()
            made = [[i] for i in range(1000)]  # container objects the collector tracks
        assert gc.isenabled() and gc.get_freeze_count() >= len(made)
        gc.unfreeze()
        with pytest.raises(ZeroDivisionError), command_imports():
            1 / 0
        assert gc.isenabled()  # resumed after a failed import too
    finally:
        gc.unfreeze()
        gc.enable()


def test_inspect_and_solve_run_with_their_imports_frozen() -> None:
    # the objects the command's imports made sit in the permanent generation: no collection rescans them
    for argv in (["inspect", "deepseek-v3.2"], ["solve", "qwen3-8b", "--hardware", "h200_sxm", "--cards", "8"]):
        code = ("import gc, json, sys\nfrom solver.cli.main import main\nfrozen = []\n"
                "import solver.specs.model_catalog as catalog\n"
                "load = catalog.load_model\n"
                "def spy(*a, **k):\n    frozen.append(gc.get_freeze_count())\n    return load(*a, **k)\n"
                "catalog.load_model = spy\n"
                f"try:\n    main({argv!r})\nexcept SystemExit:\n    pass\nprint(json.dumps(frozen))")
        run = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
        frozen = json.loads(run.stdout.strip().splitlines()[-1])
        assert frozen and frozen[0] > 10_000, (argv, frozen)
