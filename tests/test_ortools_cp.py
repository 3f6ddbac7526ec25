"""OR-Tools' cp_model imported with pandas deferred (solver/ortools_cp.py): the planner's path loads no pandas, and
cp_model's own pandas API (the `*_series` methods, isinstance checks) still works with the real pandas."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _probe(code: str) -> dict:
    """Run `code` in a fresh interpreter; it leaves its findings in a dict named `out`."""
    probe = f"import json, sys\nout = {{}}\n{code}\nprint(json.dumps(out))"
    run = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, check=True)
    return json.loads(run.stdout.strip().splitlines()[-1])


def test_the_api_and_a_cli_solve_load_ortools_but_not_pandas() -> None:
    out = _probe("import solver.api\n"
                 "out['cp_model'] = 'ortools.sat.python.cp_model' in sys.modules\n"
                 "out['pandas'] = 'pandas' in sys.modules\n"
                 "from solver.cli.main import main\n"
                 "try:\n    main(['solve', 'qwen3-8b', '--hardware', 'h200_sxm', '--cards', '8'])\n"
                 "except SystemExit as exc:\n    out['code'] = exc.code\n"
                 "out['pandas_after_solve'] = 'pandas' in sys.modules\n")
    assert out == {"cp_model": True, "pandas": False, "code": 0, "pandas_after_solve": False}


def test_cp_model_pandas_api_still_works_with_the_real_pandas() -> None:
    out = _probe("from solver.ortools_cp import cp_model\n"
                 "out['deferred'] = 'pandas' not in sys.modules\n"
                 "out['not_a_series'] = isinstance([1], cp_model.pd.Series)\n"
                 "import pandas as pd\n"
                 "m = cp_model.CpModel()\n"
                 "x = m.new_int_var_series(name='x', index=pd.Index([1, 2, 3]), lower_bounds=0, upper_bounds=4)\n"
                 "out['series'] = type(x) is pd.Series and list(x.index) == [1, 2, 3]\n"
                 "out['isinstance'] = isinstance(x, cp_model.pd.Series) and isinstance(x.index, cp_model.pd.Index)\n"
                 "out['subclass'] = issubclass(pd.Series, cp_model.pd.Series)\n"
                 "m.add(sum(x) >= 5)\n"
                 "s = cp_model.CpSolver()\n"
                 "out['solved'] = s.solve(m) == cp_model.OPTIMAL\n"
                 "out['values'] = type(s.values(x)) is pd.Series\n"
                 "out['forwards'] = cp_model.pd.DataFrame is pd.DataFrame\n"
                 "out['version'] = cp_model.pd.__version__ == pd.__version__\n")
    assert out == {"deferred": True, "not_a_series": False, "series": True, "isinstance": True, "subclass": True,
                   "solved": True, "values": True, "forwards": True, "version": True}


def test_with_pandas_already_loaded_cp_model_gets_pandas_itself() -> None:
    out = _probe("import pandas\nfrom solver.ortools_cp import cp_model\n"
                 "out['same'] = cp_model.pd is pandas\n")
    assert out == {"same": True}


def test_a_module_using_more_of_pandas_at_import_is_imported_the_ordinary_way(tmp_path: Path) -> None:
    (tmp_path / "needs_frame.py").write_text("import pandas as pd\nFRAME = pd.DataFrame\n")
    (tmp_path / "builds_series.py").write_text("import pandas as pd\nS = pd.Series([1, 2])\n")
    head = f"sys.path.insert(0, {str(tmp_path)!r})\nfrom solver.ortools_cp import import_without_pandas\n"
    out = _probe(head + "frame = import_without_pandas('needs_frame')\n"
                 "import pandas\n"
                 "out['real'] = frame.FRAME is pandas.DataFrame and frame.pd is pandas\n"
                 "out['pandas_is_pandas'] = type(sys.modules['pandas']).__name__ == 'module'\n")
    assert out == {"real": True, "pandas_is_pandas": True}
    out = _probe(head + "series = import_without_pandas('builds_series')\n"
                 "import pandas\n"
                 "out['series'] = type(series.S) is pandas.Series and list(series.S) == [1, 2]\n")
    assert out == {"series": True}
