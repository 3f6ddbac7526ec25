"""The CPU seconds `solve` spends on the note of what #1's own configuration holds past its planned power of two
(entry._held_note: plan.config_edge's search and rank.held_note), per benchmarks/solve_outputs.py case and a few
more where the note is written, with each case's whole solve and whether it wrote the note. Medians of --repeat runs
(the first run of a case plans cold; the note's estimates are not shared with the plan's).

Run: python benchmarks/held_note_cost.py [--repeat 3]
"""
from __future__ import annotations

import argparse
import statistics
import time

from click.testing import CliRunner

from benchmarks.solve_outputs import CASES
from solver import entry
from solver.cli.main import main as cli
from solver.plan import solve

MORE = {
    "qwen3-30b-h100x4-vllm-8k-2k": ["qwen3-30b-a3b", "--hardware", "h100_sxm", "--cards", "4", "--framework", "vllm",
                                    "--isl", "8192", "--osl", "2048", "--scenario", "throughput"],
    "exaone-gb200x16-vllm-8k-1k": ["exaone-4.0-32b", "--hardware", "gb200", "--cards", "16", "--framework", "vllm",
                                   "--isl", "8192", "--osl", "1024", "--scenario", "throughput"],
}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    runner = CliRunner()
    inner = entry._held_note
    spent: list[float] = []
    notes: list[str | None] = []

    def timed(*a, **k):
        t0 = time.process_time()
        out = inner(*a, **k)
        spent.append(time.process_time() - t0)
        notes.append(out)
        return out

    entry._held_note = timed
    for name, argv in {**CASES, **MORE}.items():
        note_s, whole_s = [], []
        for _ in range(args.repeat):
            solve.clear_cache()
            spent.clear()
            notes.clear()
            t0 = time.process_time()
            runner.invoke(cli, ["solve", *argv, "--format", "json"])
            whole_s.append(time.process_time() - t0)
            note_s.append(sum(spent))
        wrote = "note" if any(notes) else "-"
        print(f"{name}: held note {statistics.median(note_s) * 1e3:.1f} ms of {statistics.median(whole_s):.2f} "
              f"CPU s ({wrote})")


if __name__ == "__main__":
    main()
