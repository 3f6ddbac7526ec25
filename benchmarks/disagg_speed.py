"""Median wall and CPU time of the disaggregated commands (a sweep over two sizes and the three scenario kinds, a
solve, a recommend), each run as a user runs it: a fresh process of `shardplan`. With --base, another checkout
(a `git worktree add` of an earlier revision) runs the same commands, alternating with this one, so that a shared
machine's load falls on both alike; CPU time (user + system of the process) is the figure a loaded machine moves
least. Each command's output digest (the sweep's CSV, the others' stdout with the elapsed-time figures taken out)
is printed per checkout: equal digests, the same answers.

Run: python benchmarks/disagg_speed.py [--repeats 3] [--base /tmp/base_checkout] [--only sweep,solve,recommend]
"""
from __future__ import annotations

import argparse
import hashlib
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
COMMANDS = {
    "sweep": ["sweep", "deepseek-v3", "--hardware", "gb200", "--cards", "32,64", "--serving", "disagg",
              "--framework", "sglang", "--isl", "4096", "--osl", "1024", "--tpot-ms", "50", "--out", "{csv}"],
    "solve": ["solve", "deepseek-v3", "--hardware", "gb200", "--cards", "64", "--framework", "sglang", "--isl", "4096",
              "--osl", "1024", "--serving", "disagg", "--ttft-ms", "2000", "--tpot-ms", "50"],
    "recommend": ["recommend", "deepseek-v3", "--hardware", "gb200", "--target-requests-per-s", "20", "--serving",
                  "disagg", "--framework", "sglang", "--tpot-ms", "50"],
}
# an elapsed time a command prints ("in 8.2 s"): the one part of its output that differs between runs
ELAPSED = re.compile(r"\bin \d+(\.\d+)? s\b")


def run(checkout: Path, name: str) -> tuple[float, float, str]:
    """(wall s, CPU s of the process, digest of its output) of one command in a fresh process."""
    with tempfile.TemporaryDirectory() as tmp:
        csv = Path(tmp) / "out.csv"
        argv = [a.format(csv=csv) for a in COMMANDS[name]]
        env = {**os.environ, "PYTHONPATH": str(checkout)}
        code = "import sys; from solver.cli.main import main; sys.argv[0] = 'shardplan'; sys.exit(main())"
        before = os.times()
        t0 = time.perf_counter()
        done = subprocess.run([sys.executable, "-c", code, *argv], cwd=checkout, env=env, capture_output=True,
                              text=True)
        wall = time.perf_counter() - t0
        after = os.times()
        if done.returncode != 0:
            raise SystemExit(f"{checkout}: {name} exited {done.returncode}: {done.stderr.strip()[-500:]}")
        cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
        body = csv.read_bytes() if name == "sweep" else ELAPSED.sub("in _ s", done.stdout).encode()
        return wall, cpu, hashlib.md5(body).hexdigest()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--base", type=Path, help="another checkout to time alternately (e.g. a worktree of main)")
    ap.add_argument("--only", default=",".join(COMMANDS), help="commands to time: " + ",".join(COMMANDS))
    args = ap.parse_args()
    names = [n for n in args.only.split(",") if n]
    unknown = [n for n in names if n not in COMMANDS]
    if unknown:
        raise SystemExit(f"--only: unknown {', '.join(unknown)}; known: {', '.join(COMMANDS)}")
    checkouts = {"this": HERE, **({"base": args.base.resolve()} if args.base else {})}
    print(f"{'command':10} {'checkout':8} {'wall_s':>8} {'cpu_s':>8}  output md5")
    for name in names:
        times: dict[str, list[tuple[float, float]]] = {k: [] for k in checkouts}
        digests: dict[str, set[str]] = {k: set() for k in checkouts}
        for _ in range(args.repeats):
            for label, path in checkouts.items():  # alternating: the load falls on both alike
                wall, cpu, digest = run(path, name)
                times[label].append((wall, cpu))
                digests[label].add(digest)
        for label in checkouts:
            wall = statistics.median(t[0] for t in times[label])
            cpu = statistics.median(t[1] for t in times[label])
            print(f"{name:10} {label:8} {wall:8.2f} {cpu:8.2f}  {','.join(sorted(digests[label]))}", flush=True)


if __name__ == "__main__":
    main()
