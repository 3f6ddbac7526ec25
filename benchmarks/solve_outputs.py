"""The full JSON output of a few representative `solve` runs, printed one after another: a speed-up of the
planner must leave it byte-identical (save it before, diff it after). Also prints each run's CPU seconds on
stderr (not part of the compared output).

Run: python benchmarks/solve_outputs.py > before.txt; ...; python benchmarks/solve_outputs.py | diff before.txt -
(--only NAME runs one case).
"""
from __future__ import annotations

import argparse
import sys
import time

from click.testing import CliRunner

from solver.cli.main import main as cli
from solver.plan import solve

DS = ["deepseek-v3.2", "--hardware", "atlas_a3", "--weight-dtype", "int8", "--isl", "4096", "--osl", "256"]
CASES: dict[str, list[str]] = {
    "ds-generic-16": [*DS, "--cards", "16", "--framework", "generic"],
    "ds-generic-128": [*DS, "--cards", "128", "--framework", "generic", "--scenario", "throughput"],
    "ds-cann-16": [*DS, "--cards", "16", "--framework", "cann-recipes", "--scenario", "latency"],
    "ds-cann-128": [*DS, "--cards", "128", "--framework", "cann-recipes", "--scenario", "throughput"],
    "ds-cann-32-mtp-decode": [*DS, "--cards", "32", "--framework", "cann-recipes", "--phase", "decode",
                              "--mtp", "2"],
    "qwen3-30b-h200-sglang": ["qwen3-30b-a3b", "--hardware", "h200_sxm", "--cards", "8", "--framework", "sglang"],
    "llama70b-h100-vllm-tpot": ["llama-3.1-70b", "--hardware", "h100_sxm", "--cards", "8", "--framework", "vllm",
                                "--tpot-ms", "30", "--scenario", "throughput"],
    "llama70b-h100-generic-prefill-ttft": ["llama-3.1-70b", "--hardware", "h100_sxm", "--cards", "16",
                                           "--framework", "generic", "--phase", "prefill", "--isl", "16384",
                                           "--ttft-ms", "2000"],
    # a TTFT SLA below the fastest TTFT at most concurrencies (benchmarks/slow_solves.py): answers missing it alone
    "ds-generic-128-ttft-edge": [*DS, "--cards", "128", "--framework", "generic", "--ttft-ms", "100"],
    "ds-h200-sglang-32k": ["deepseek-v3.2", "--hardware", "h200_sxm", "--cards", "8", "--framework", "sglang",
                           "--isl", "32768", "--osl", "512", "--scenario", "latency"],
}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", action="append", default=None)
    args = ap.parse_args()
    runner = CliRunner()
    for name, argv in CASES.items():
        if args.only and name not in args.only:
            continue
        t0 = time.process_time()
        res = runner.invoke(cli, ["solve", *argv, "--format", "json", "--explain"])
        print(f"=== {name} (exit {res.exit_code})")
        print(res.output)
        if res.exception is not None and not isinstance(res.exception, SystemExit):
            print(f"exception: {res.exception!r}")
        print(f"{name}: {time.process_time() - t0:.2f} CPU s", file=sys.stderr)
        # the planners' exact answers (every class optimum, full float precision), not only the rounded figures
        for key, (_, value) in solve._CACHE.items():
            if key[0] == "tables":
                continue
            planner = value[0] if isinstance(value, tuple) else value
            for (b, q), p in sorted(getattr(planner, "_classes", {}).items()):
                print(f"class {b} {q!r}: {p!r}")
        solve.clear_cache()


if __name__ == "__main__":
    main()
