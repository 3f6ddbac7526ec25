"""Cold start of the command line: the median wall time of 5 fresh processes for `shardplan --help`,
`shardplan inspect deepseek-v3.2` and a cold `solve` (the README example at --cards 128).

Run: python benchmarks/cli_start.py [--repeats 5] [--root CHECKOUT ...] [--bytecode env|cached]
(--root times another checkout's code; several roots are timed interleaved, run by run, so that a before/after
comparison on a shared machine sees the same load.)

--bytecode env (the default) runs under this environment's setting: with PYTHONDONTWRITEBYTECODE=1 (set on the
project's machine) the checkout's own modules are compiled from source on every start, while the libraries'
.pyc files in the venv are used. --bytecode cached is how an installed package starts (pip writes .pyc files):
every module's bytecode goes to a private PYTHONPYCACHEPREFIX per root, filled by one untimed run per command.
"""
from __future__ import annotations

import argparse
import os
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


def once(root: Path, args: list[str], pycache: Path | None = None) -> float:
    env = {**os.environ, "PYTHONPATH": str(root)}
    if pycache is not None:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(pycache)
    cmd = [sys.executable, "-c", "from solver.cli.main import main; main(prog_name='shardplan')", *args]
    t0 = time.perf_counter()
    subprocess.run(cmd, env=env, cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--root", type=Path, action="append", default=None)
    ap.add_argument("--bytecode", choices=("env", "cached"), default="env")
    args = ap.parse_args()
    roots = args.root or [Path(__file__).resolve().parent.parent]
    tmp = Path(tempfile.mkdtemp(prefix="cli_start_pyc_")) if args.bytecode == "cached" else None
    pycache = {r: (tmp / str(i) if tmp else None) for i, r in enumerate(roots)}
    how = ("bytecode cached" if tmp else
           f"PYTHONDONTWRITEBYTECODE={os.environ.get('PYTHONDONTWRITEBYTECODE', '')!s}")
    print(f"median_s of {args.repeats} fresh processes ({how})")
    print(f"{'command':<24}" + "".join(f" {str(r):>22}" for r in roots))
    for name, argv in CASES.items():
        times: dict[Path, list[float]] = {r: [] for r in roots}
        if tmp:
            for r in roots:
                once(r, argv, pycache[r])  # untimed: writes the bytecode
        for _ in range(args.repeats):
            for r in roots:
                times[r].append(once(r, argv, pycache[r]))
        print(f"{name:<24}" + "".join(f" {statistics.median(times[r]):>22.2f}" for r in roots))
    if tmp:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
