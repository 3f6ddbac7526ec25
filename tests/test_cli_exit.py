"""The command line's exit as its own process (solver/cli/main.py `_leave`): the interpreter's teardown is skipped
once the output is written, and nothing else about the exit changes: the output is complete on a pipe and in a
file, atexit callbacks and threads still run, the exit code is the same, and a caller passing `args` still gets
SystemExit back."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SOLVE_JSON = ["solve", "qwen3-8b", "--hardware", "h200_sxm", "--cards", "8", "--format", "json"]  # click.echo
INSPECT = ["inspect", "deepseek-v3.2"]  # rich's tables

# main on the process's own argv (how the `shardplan` script and benchmarks/cli_start.py run it)
OWN = "from solver.cli.main import main\nmain(prog_name='shardplan')\n"
# main given its arguments, as a test or a library caller does: SystemExit, the ordinary exit
GIVEN = "import sys\nfrom solver.cli.main import main\nmain(sys.argv[1:], prog_name='shardplan')\n"
# an object alive at exit whose finaliser prints: it runs at the interpreter's teardown only
SENTINEL = ("import sys\nclass _Sentinel:\n    def __del__(self):\n        sys.stderr.write('teardown ran\\n')\n"
            "sentinel = _Sentinel()\n")


def _py(code: str, argv: list[str], **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code, *argv], cwd=REPO, **kw)


@pytest.mark.parametrize("argv", [SOLVE_JSON, INSPECT], ids=["solve-json", "inspect-table"])
def test_the_output_is_complete_on_a_pipe_and_in_a_file(tmp_path: Path, argv: list[str]) -> None:
    reference = _py(GIVEN, argv, capture_output=True, check=True).stdout
    assert len(reference) > 8192  # more than stdout's buffer: written in parts
    piped = _py(OWN, argv, capture_output=True)
    assert piped.returncode == 0 and piped.stdout == reference
    out = tmp_path / "out.txt"
    with out.open("wb") as f:
        filed = _py(OWN, argv, stdout=f, stderr=subprocess.PIPE)
    assert filed.returncode == 0 and out.read_bytes() == reference


def test_text_still_buffered_at_exit_is_written() -> None:
    # an atexit callback's print() stays in stdout's buffer (no flush): the final flush comes after the callbacks
    code = "import atexit\natexit.register(print, 'y' * 5000, end='')\n" + OWN
    run = _py(code, ["models", "--format", "json"], capture_output=True, text=True)
    assert run.returncode == 0 and run.stdout.startswith("{") and run.stdout.endswith("}\n" + "y" * 5000)


def test_the_teardown_is_skipped_only_in_the_process_own_exit() -> None:
    own = _py(SENTINEL + OWN, ["models"], capture_output=True, text=True)
    given = _py(SENTINEL + GIVEN, ["models"], capture_output=True, text=True)
    assert own.returncode == given.returncode == 0
    assert own.stdout == given.stdout and "deepseek-v3.2" in own.stdout
    assert "teardown ran" not in own.stderr
    assert "teardown ran" in given.stderr


def test_atexit_callbacks_run_and_the_exit_code_stays_on_success_and_on_error() -> None:
    hook = "import atexit, sys\natexit.register(lambda: print('atexit ran', flush=True))\n"
    ok = _py(hook + OWN, ["models"], capture_output=True, text=True)
    assert ok.returncode == 0 and ok.stdout.endswith("atexit ran\n")  # after the output, as at a normal exit
    bad = _py(hook + OWN, ["inspect", "no-such-model"], capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stdout == "atexit ran\n"
    assert bad.stderr.startswith("error: model: unknown model 'no-such-model'") and bad.stderr.count("\n") == 1
    usage = _py(hook + OWN, ["solve"], capture_output=True, text=True)
    assert usage.returncode == 2 and usage.stdout == "atexit ran\n"


def test_another_thread_still_finishes_before_the_process_ends() -> None:
    code = ("import threading, time\n"
            "def late():\n    time.sleep(0.3)\n    print('thread done', flush=True)\n"
            "threading.Thread(target=late).start()\n" + OWN)
    run = _py(code, ["models"], capture_output=True, text=True)
    assert run.returncode == 0 and "thread done" in run.stdout


def test_a_caller_that_passes_args_gets_system_exit_and_carries_on() -> None:
    code = ("from solver.cli.main import main\n"
            "try:\n    main(['inspect', 'no-such-model'], prog_name='shardplan')\n"
            "except SystemExit as exc:\n    print('carried on after exit', exc.code)\n")
    run = _py(code, [], capture_output=True, text=True)
    assert run.returncode == 0 and run.stdout == "carried on after exit 2\n"


def test_the_console_script_exits_the_same_way(tmp_path: Path) -> None:
    # the script pip writes for `shardplan = "solver.cli.main:main"`: sys.exit(main()) on the process's argv
    script = tmp_path / "shardplan"
    script.write_text("import re\nimport sys\nfrom solver.cli.main import main\nif __name__ == '__main__':\n"
                      "    sys.argv[0] = re.sub(r'(-script\\.pyw|\\.exe)?$', '', sys.argv[0])\n    sys.exit(main())\n")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    bad = subprocess.run([sys.executable, str(script), "inspect", "deepseek-v4"], capture_output=True, text=True,
                         env=env, cwd=tmp_path)
    assert bad.returncode == 2 and bad.stdout == "" and bad.stderr.count("\n") == 1
    assert bad.stderr.startswith("error: model: unknown model 'deepseek-v4'")
    ok = subprocess.run([sys.executable, str(script), "models", "--format", "json"], capture_output=True,
                        text=True, env=env, cwd=tmp_path)
    assert ok.returncode == 0 and ok.stdout == _py(GIVEN, ["models", "--format", "json"], capture_output=True,
                                                   text=True, check=True).stdout
