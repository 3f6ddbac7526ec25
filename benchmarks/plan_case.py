"""The planner-speed benchmarks' one case (plan_cpu.py, first_bound_ceiling.py, seed_ceiling.py): DeepSeek-V3.2 on
atlas_a3, int8, ISL 4096 / OSL 256, balanced, planned in a warm process after `solve.clear_cache()` (no reused
tables, fronts or rule tables; the estimator's own memos persist, as in a sweep)."""
from __future__ import annotations

import argparse
import time

from solver.api import run_solve
from solver.plan import solve
from solver.specs.scenario import Scenario

SC = Scenario(kind="balanced", isl=4096, osl=256)


def warm_up(framework: str = "generic") -> None:
    """One plan at 16 ranks: imports, the catalogs and the estimator's first memos out of the timings."""
    run_solve("deepseek-v3.2", "atlas_a3", 16, SC, framework, "int8", explain_binding=False)


def plan_once(world: int, framework: str = "generic") -> tuple[float, float, object]:
    """(CPU s, wall s, the answer) of one plan at `world` ranks, its caches cleared first."""
    solve.clear_cache()
    c0, w0 = time.process_time(), time.perf_counter()
    out = run_solve("deepseek-v3.2", "atlas_a3", world, SC, framework, "int8", explain_binding=False)
    return time.process_time() - c0, time.perf_counter() - w0, out


def ceiling_args() -> argparse.Namespace:
    """The ceiling benchmarks' options: the world sizes and the alternated rounds."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--worlds", default="128,1024")
    ap.add_argument("--rounds", type=int, default=3)
    return ap.parse_args()
