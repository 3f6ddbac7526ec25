"""Cold start of the command line: the median wall time (and CPU time) of 5 fresh processes for `shardplan --help`,
`shardplan inspect deepseek-v3.2` and a cold `solve` (the README example at --cards 128).

Run: python benchmarks/cli_start.py [--repeats 5] [--root CHECKOUT ...] [--bytecode env|cached] [--phases]
(--root times another checkout's code; several roots are timed interleaved, run by run, so that a before/after
comparison on a shared machine sees the same load.)

--bytecode env (the default) runs under this environment's setting: with PYTHONDONTWRITEBYTECODE=1 (set on the
project's machine) the checkout's own modules are compiled from source on every start, while the libraries'
.pyc files in the venv are used. --bytecode cached is how an installed package starts (pip writes .pyc files):
every module's bytecode goes to a private PYTHONPYCACHEPREFIX per root, filled by one untimed run per command.

--phases splits the cold solve (wall, CPU in brackets; medians): the interpreter's start and the CLI's import,
the imports the solve command makes (solver.api, solver.entry and what they pull in, rich), the specs and the
plan (entry.run_solve: load the model, hardware and profile, plan, rank), the report (the rest of main), and the exit
(from the end of main, marked by an atexit callback, to the process's end: the interpreter's teardown).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SOLVE = ["solve", "deepseek-v3.2", "--hardware", "atlas_a3", "--cards", "128", "--scenario", "throughput",
         "--framework", "cann-recipes", "--weight-dtype", "int8", "--isl", "4096", "--osl", "256"]
CASES = {"--help": ["--help"], "inspect deepseek-v3.2": ["inspect", "deepseek-v3.2"], "solve W=128 (cold)": SOLVE}
RUN = "from solver.cli.main import main; main(prog_name='shardplan')"
# the same process as RUN, with clocks read between the phases; the marks go to the file named by argv[1]
PHASES = """\
import atexit, json, sys, time
marks = [("start", time.monotonic(), time.process_time())]
def mark(name):
    marks.append((name, time.monotonic(), time.process_time()))
out = sys.argv.pop(1)
def save():
    mark("main")
    with open(out, "w") as f:
        json.dump(marks, f)
atexit.register(save)
from solver.cli.main import main
mark("cli import")
import solver.api, solver.entry, solver.cli.solve_cmd, rich.console, rich.table
mark("solve imports")
run_solve = solver.entry.run_solve
def timed(*args, **kwargs):
    mark("run_solve start")
    try:
        return run_solve(*args, **kwargs)
    finally:
        mark("run_solve")
solver.entry.run_solve = timed  # what solve_cmd imports when it runs
main(prog_name="shardplan")
"""


def _env(root: Path, pycache: Path | None) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(root)}
    if pycache is not None:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(pycache)
    return env


def once(root: Path, args: list[str], pycache: Path | None = None) -> tuple[float, float]:
    """(wall s, CPU s) of one fresh process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", RUN, *args], env=_env(root, pycache), cwd=root,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def phases_once(root: Path, pycache: Path | None, marks_file: Path) -> dict[str, tuple[float, float]]:
    """Wall and CPU seconds of each phase of one cold solve."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()  # the same clock as the child's marks (system-wide on Linux)
    subprocess.run([sys.executable, "-c", PHASES, str(marks_file), *SOLVE], env=_env(root, pycache), cwd=root,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    t_end = time.monotonic()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_total = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    m = {name: (t, c) for name, t, c in json.loads(marks_file.read_text())}
    marks = [("start", t0, 0.0), *[(n, *m[n]) for n in ("cli import", "solve imports", "run_solve start",
                                                       "run_solve", "main")], ("exit", t_end, cpu_total)]
    names = {"cli import": "start + CLI import", "solve imports": "solve's imports", "run_solve start": "options",
             "run_solve": "specs + plan + rank", "main": "report", "exit": "exit (teardown)"}
    # the child's CPU clock starts at its first mark: its start-up CPU counts in the first phase
    out = {names[b[0]]: (b[1] - a[1], b[2] - a[2]) for a, b in zip(marks, marks[1:])}
    out["start + CLI import"] = (out["start + CLI import"][0], m["cli import"][1])
    out["total"] = (t_end - t0, cpu_total)
    return out


def _cell(wall: list[float], cpu: list[float]) -> str:
    return f"{statistics.median(wall):.2f} ({statistics.median(cpu):.2f})"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--root", type=Path, action="append", default=None)
    ap.add_argument("--bytecode", choices=("env", "cached"), default="env")
    ap.add_argument("--phases", action="store_true", help="split the cold solve into phases (see the docstring)")
    args = ap.parse_args()
    roots = args.root or [Path(__file__).resolve().parent.parent]
    tmp = Path(tempfile.mkdtemp(prefix="cli_start_"))
    cached = args.bytecode == "cached"
    pycache = {r: (tmp / str(i) if cached else None) for i, r in enumerate(roots)}
    how = ("bytecode cached" if cached else
           f"PYTHONDONTWRITEBYTECODE={os.environ.get('PYTHONDONTWRITEBYTECODE', '')!s}")
    print(f"median s of {args.repeats} fresh processes, wall (CPU) ({how})")
    print(f"{'command':<24}" + "".join(f" {str(r):>26}" for r in roots))
    try:
        if args.phases:
            if cached:
                for r in roots:
                    once(r, SOLVE, pycache[r])  # untimed: writes the bytecode
            runs: dict[Path, list[dict[str, tuple[float, float]]]] = {r: [] for r in roots}
            for _ in range(args.repeats):
                for r in roots:
                    runs[r].append(phases_once(r, pycache[r], tmp / "marks.json"))
            for phase in runs[roots[0]][0]:
                print(f"{phase:<24}" + "".join(
                    f" {_cell([p[phase][0] for p in runs[r]], [p[phase][1] for p in runs[r]]):>26}" for r in roots))
            return
        for name, argv in CASES.items():
            times: dict[Path, list[tuple[float, float]]] = {r: [] for r in roots}
            if cached:
                for r in roots:
                    once(r, argv, pycache[r])  # untimed: writes the bytecode
            for _ in range(args.repeats):
                for r in roots:
                    times[r].append(once(r, argv, pycache[r]))
            print(f"{name:<24}" + "".join(
                f" {_cell([t[0] for t in times[r]], [t[1] for t in times[r]]):>26}" for r in roots))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
