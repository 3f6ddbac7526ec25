"""Stop 27's catalog sweep: the tool tried as a demanding user would, over every catalog model.

For each case (model, hardware, cards, framework, scenario) it runs what `shardplan solve` runs (solver.api.run_solve,
then the renderers of its output), then for the first candidate the `launch` command for the framework's engine
and the `check` command on the parallel_config it emitted (both through solver.cli.main, in process). Outcomes:

    ok        a feasible answer whose figures, check and launch hold
    refusal   a clean refusal: InputError / InfeasibleError with one non-empty line (an InfeasibleError also
              names the binding constraint and a remedy)
    defect    a traceback (any exception that is not the tool's own clean error, or an InternalError); a figure
              that is NaN, inf, zero or negative on a feasible answer; memory over the wall marked as fitting;
              a recommended config that `check` rejects (exit 1) or cannot read, or prices with other figures
              than solve printed; a launch that fails or names a
              flag the engine does not have per facts/engines.md ("Flags" table); a solve over --slow-s seconds

Prints counts by outcome, by framework and by hardware, median and worst timings, then one line per defect
with the command that reproduces it.

    python benchmarks/catalog_sweep.py                      # the stop-27 run: a stratified sample, < 10 min
    python benchmarks/catalog_sweep.py --per-stratum 0      # every case of the grid (about an hour)

Sampling: the grid is models x hardware x cards x frameworks x scenarios (frameworks per hardware below, each
only on the devices its profile's `vendors` names). Each
(model, hardware, scenario) stratum contributes --per-stratum cases drawn without replacement (seeded), so every
model meets every hardware and both scenarios; a case over --case-limit-s is killed and counted as slow.
"""
from __future__ import annotations

import argparse
import collections
import math
import multiprocessing as mp
import random
import re
import statistics
import sys
import tempfile
import time
import traceback
from multiprocessing.connection import wait
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

HARDWARE = ["h100_sxm", "h200_sxm", "b200_sxm", "mi355x", "atlas_a3", "l40s"]
CARDS = [1, 8, 16, 64]
SCENARIOS = ["latency", "throughput"]
BASE_FRAMEWORKS = ["generic", "vllm", "sglang", "trtllm"]
# the brief's extra engines per hardware (data: which profiles a user of that hardware would try)
EXTRA_FRAMEWORKS = {"atlas_a3": ["vllm-ascend", "cann-recipes"], "mi355x": ["atom"]}
# framework profile -> the engines.md "Flags" column its launch command must keep to (data, not a branch)
# (a column is named by its header's first word)
FLAG_COLUMN = {"vllm": "vLLM", "vllm-ascend": "vLLM", "sglang": "SGLang", "trtllm": "TensorRT-LLM",
               "atom": "ATOM"}
# argv tokens outside the facts' parallelism table that are not the engine's parallelism flags: the launcher's own
# (python -m, mpirun -n/-H), the checkpoint argument, and the file that carries TensorRT-LLM's LLM API arguments
# (whose keys the table does list)
NOT_TABLE_FLAGS = {"-m", "-n", "-H", "--model", "--model-path", "--extra_llm_api_options"}
ENGINES_MD = ROOT.parent / "shared" / "facts" / "engines.md"  # the facts beside the checkout
ISL, OSL = 4096, 256


def grid() -> list[tuple[str, str, int, str, str]]:
    from solver.specs.framework import load_framework
    from solver.specs.hardware_catalog import load_hardware
    from solver.specs.model_catalog import list_models

    models = [names[0] if names else file for file, names in list_models()]
    out = []
    for m in models:
        for h in HARDWARE:
            vendor = load_hardware(h).vendor
            # the engines that run on the device (a profile's vendors; the others are refused by design)
            engines = [fw for fw in BASE_FRAMEWORKS + EXTRA_FRAMEWORKS.get(h, []) if load_framework(fw).runs_on(vendor)]
            for c in CARDS:
                for fw in engines:
                    for s in SCENARIOS:
                        out.append((m, h, c, fw, s))
    return out


def engine_flags(path: Path = ENGINES_MD) -> dict[str, set[str]]:
    """Column (its header's first word) -> every `--flag` / `-f` the facts' "Flags" table (and the Ascend
    paragraph, for vLLM) name for that engine. A bare snake_case name (TensorRT-LLM's column: "LLM API /
    trtllm-serve") counts as its `--name` spelling too."""
    text = path.read_text()
    lines = text.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("## Flags"))
    table = [ln for ln in lines[start:] if ln.startswith("|")]
    table = table[: next((i for i, ln in enumerate(table[2:], 2) if not ln.startswith("|")), len(table))]
    heads = [h.strip().split()[0] for h in table[0].strip("|").split("|")]
    out: dict[str, set[str]] = {h: set() for h in heads[1:]}
    flag = re.compile(r"(?<![\w-])(--?[A-Za-z][\w-]*)")
    for row in table[2:]:
        if not row.startswith("| "):
            break
        cells = [c.strip() for c in row.strip().strip("|").split("|")]
        for head, cell in zip(heads[1:], cells[1:]):
            for code in re.findall(r"`([^`]*)`", cell):
                out[head].update(flag.findall(code))
                out[head].update("--" + w for w in re.findall(r"(?<![\w.-])([a-z]+_[a-z_]+)", code))
    ascend = text[text.find("Ascend engines"):]
    ascend = ascend[: ascend.find("\n\n")]
    out["vLLM"].update(f for code in re.findall(r"`([^`]*)`", ascend) for f in flag.findall(code))
    return out


def command(case) -> str:
    m, h, c, fw, s = case
    return f"shardplan solve {m} --hardware {h} --cards {c} --framework {fw} --scenario {s}"


def _one_line(exc: BaseException) -> bool:
    text = str(exc)
    return bool(text.strip()) and "\n" not in text.strip()


def _figures(cands, hw) -> list[str]:
    bad = []
    for c in cands:
        e = c.planned.estimate
        for name in ("ttft_s", "tpot_s", "output_tokens_per_s", "output_tokens_per_s_per_rank",
                     "tokens_per_s_per_user"):
            v = getattr(e, name)
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
                bad.append(f"candidate {c.rank} {name}={v!r}")
        m = e.memory
        # the wall (estimate.memory_options.memory_limit) holds what the model uses; the runtime reserve comes on top
        used = m.total - m.reserved_bytes
        if m.feasible and not (used <= m.limit_bytes * (1 + 1e-9) and m.total <= hw.memory_bytes * (1 + 1e-9)):
            bad.append(f"candidate {c.rank} marked fitting at {m.total / 1e9:.1f} GB over the wall "
                       f"{m.limit_bytes / 1e9:.1f} GB (capacity {hw.memory_bytes / 1e9:.1f} GB)")
        if not m.feasible:
            bad.append(f"candidate {c.rank} recommended while its memory does not fit ({m.total / 1e9:.1f} GB)")
        if c.planned.batch < 1:
            bad.append(f"candidate {c.rank} concurrency {c.planned.batch}")
    return bad


def _cli(argv: list[str]) -> tuple[int, str, BaseException | None]:
    from click.testing import CliRunner

    from solver.cli.main import main

    res = CliRunner().invoke(main, argv, env={"SHARDPLAN_DEBUG": None}, catch_exceptions=True)
    exc = res.exception if res.exception is not None and not isinstance(res.exception, SystemExit) else None
    return res.exit_code, (res.stdout or "") + (res.stderr or ""), exc


def _tail(text: str) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1][:200] if lines else ""


def run_case(case, folder: str, slow_s: float, time_limit_s: float, flags: dict[str, set[str]]) -> dict:
    """One case in this process: {"kind": ok|refusal|defect, "what", "detail", "solve_s", "total_s"}."""
    import json

    import yaml

    from solver.api import run_solve
    from solver.errors import InfeasibleError, InputError, InternalError
    from solver.plan.points import SolverParams
    from solver.report.candidates import own_config, result_dict, seed_yaml
    from solver.specs.hardware_catalog import load_hardware
    from solver.specs.scenario import Scenario

    m, h, c, fw, s = case
    t0 = time.perf_counter()
    out = {"kind": "ok", "what": "", "detail": "", "solve_s": 0.0, "total_s": 0.0}

    def defect(what: str, detail: str) -> dict:
        out.update(kind="defect", what=what, detail=detail, total_s=time.perf_counter() - t0)
        return out

    scenario = Scenario(kind=s, isl=ISL, osl=OSL)
    try:
        result, cands = run_solve(m, h, c, scenario, fw, params=SolverParams(time_limit_s=time_limit_s))
        result.timeout_note(), result.cut_note()
        printed = result_dict(result, cands)
        seed_yaml(result, cands)  # what `solve` prints
    except (InputError, InfeasibleError) as exc:
        out["solve_s"] = out["total_s"] = time.perf_counter() - t0
        if not _one_line(exc):
            return defect("refusal not one line", repr(str(exc))[:200])
        if isinstance(exc, InfeasibleError) and not (exc.binding and exc.remedy):
            return defect("infeasible without binding constraint or remedy", str(exc)[:200])
        out.update(kind="refusal", what=type(exc).__name__, detail=str(exc)[:200])
        return out
    except InternalError as exc:
        return defect("InternalError", str(exc)[:200])
    except Exception as exc:  # noqa: BLE001 - any other escape is the defect this sweep looks for
        return defect(f"traceback {type(exc).__name__}", f"{exc} @ {_where(exc)}"[:240])
    out["solve_s"] = time.perf_counter() - t0
    if out["solve_s"] > slow_s:
        return defect("slow solve", f"{out['solve_s']:.1f} s")
    if not cands:
        return defect("no candidate and no error", result.status)
    bad = _figures(cands, load_hardware(h))
    if bad:
        return defect("nonsense figures", "; ".join(bad)[:240])
    first = cands[0]
    dep = {"model": m, "hardware": h, "framework": fw, "world_size": c,
           "parallel_config": own_config(first.planned.config, result.knobs),
           "workload": {"isl": ISL, "osl": OSL, "concurrency": first.planned.batch}, "mtp": scenario.mtp}
    path = Path(folder) / f"{m}-{h}-{c}-{fw}-{s}.yaml".replace("/", "_")
    path.write_text(yaml.safe_dump(dep, sort_keys=False))
    code, text, exc = _cli(["check", str(path), "--format", "json"])
    if exc is not None or code not in (0, 1):
        return defect("check failed", f"exit {code}: {_tail(text)}" + (f" ({type(exc).__name__})" if exc else ""))
    if code == 1:
        try:
            v = json.loads(text[text.find("{"):])["violations"]
            why = "; ".join(f"{k}: {x}" for k, xs in v.items() for x in xs)
        except (ValueError, KeyError):
            why = _tail(text)
        return defect("check rejects the recommendation", f"{path.name}: {why}"[:300])
    # check prices the file with the estimator solve ranked by: every figure both print must be the same
    checked = json.loads(text[text.find("{"):]).get("estimation", {})
    solved = printed["candidates"][0]["estimation"]
    differ = [f"{k} {solved[k]} vs {checked[k]}" for k in sorted(set(solved) & set(checked)) if solved[k] != checked[k]]
    if differ:
        return defect("check's figures differ from solve's", f"{path.name}: {'; '.join(differ)}"[:300])
    code, text, exc = _cli(["launch", str(path), "--engine", fw, "--format", "json"])
    if exc is not None or code != 0:
        return defect("launch failed", f"exit {code}: {_tail(text)}" + (f" ({type(exc).__name__})" if exc else ""))
    column = FLAG_COLUMN.get(fw)
    if column:
        launch = json.loads(text)
        # a flag the profile reads from an engine's own source (LaunchArg.source, LaunchDocument.source) is that
        # source's, not a defect
        from solver.specs.framework import load_framework

        spec = load_framework(fw).launch
        sourced = {a.flag for a in (spec.args if spec else []) if a.source and a.flag} | \
            {d.flag for d in (spec.documents.values() if spec else []) if d.source and d.flag}
        known = flags[column] | NOT_TABLE_FLAGS | sourced
        used = {a.split("=", 1)[0] for node in launch.get("nodes", []) for a in node.get("argv", [])
                if a.startswith("-") and not _number(a)}
        unknown = sorted(used - known)
        if unknown:
            return defect("launch flag not in engines.md", f"{fw}: {' '.join(unknown)}")
    out["total_s"] = time.perf_counter() - t0
    return out


def _number(text: str) -> bool:
    try:
        float(text)
        return True
    except ValueError:
        return False


def _where(exc: BaseException) -> str:
    tb = traceback.extract_tb(exc.__traceback__)
    return f"{Path(tb[-1].filename).name}:{tb[-1].lineno}" if tb else "?"


def _worker(conn, folder, slow_s, time_limit_s) -> None:
    flags = engine_flags()
    while True:
        case = conn.recv()
        if case is None:
            return
        try:
            res = run_case(case, folder, slow_s, time_limit_s, flags)
        except BaseException as exc:  # noqa: BLE001 - the worker reports, never dies
            res = {"kind": "defect", "what": f"traceback {type(exc).__name__}", "detail": f"{exc} @ {_where(exc)}",
                   "solve_s": 0.0, "total_s": 0.0}
        conn.send(res)


class Worker:
    def __init__(self, folder: str, slow_s: float, time_limit_s: float):
        self.args = (folder, slow_s, time_limit_s)
        self.ctx = mp.get_context("spawn")
        self._start()

    def _start(self) -> None:
        self.conn, child = self.ctx.Pipe()
        self.proc = self.ctx.Process(target=_worker, args=(child, *self.args), daemon=True)
        self.proc.start()

    def run(self, case, limit_s: float) -> dict:
        self.conn.send(case)
        t0 = time.perf_counter()
        if wait([self.conn], timeout=limit_s):
            try:
                return self.conn.recv()
            except EOFError:
                self._start()
                return {"kind": "defect", "what": "worker died", "detail": "", "solve_s": 0.0, "total_s": 0.0}
        self.proc.kill()
        self.proc.join()
        self._start()
        took = time.perf_counter() - t0
        return {"kind": "defect", "what": "slow solve", "detail": f"killed after {took:.0f} s", "solve_s": took,
                "total_s": took}

    def close(self) -> None:
        self.conn.send(None)
        self.proc.join(timeout=5)


def sample(cases: list, per_stratum: int, seed: int) -> list:
    if per_stratum <= 0:
        return cases
    strata: dict = collections.defaultdict(list)
    for case in cases:
        strata[(case[0], case[1], case[4])].append(case)
    rng = random.Random(seed)
    out = []
    for key in strata:
        group = strata[key]
        out.extend(rng.sample(group, min(per_stratum, len(group))))
    rng.shuffle(out)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-stratum", type=int, default=2, help="cases per (model, hardware, scenario); 0: all")
    ap.add_argument("--seed", type=int, default=27)
    ap.add_argument("--slow-s", type=float, default=20.0, help="a solve over this is a defect")
    ap.add_argument("--case-limit-s", type=float, default=60.0, help="a case over this is killed (slow)")
    ap.add_argument("--time-limit", type=float, default=10.0, help="CP-SAT seconds per solve (solve's default)")
    ap.add_argument("--budget-s", type=float, default=540.0, help="stop drawing new cases after this")
    ap.add_argument("--model", action="append", help="only these models (repeatable)")
    args = ap.parse_args()
    cases = [cs for cs in grid() if not args.model or cs[0] in args.model]
    todo = sample(cases, args.per_stratum, args.seed)
    print(f"grid {len(cases)} cases; {len(todo)} drawn ({args.per_stratum or 'all'} per (model, hardware, "
          f"scenario), seed {args.seed})", flush=True)
    folder = tempfile.mkdtemp(prefix="shardplan-sweep27-")
    worker = Worker(folder, args.slow_s, args.time_limit)
    results = []
    start = time.perf_counter()
    try:
        for i, case in enumerate(todo):
            if time.perf_counter() - start > args.budget_s:
                print(f"budget of {args.budget_s:g} s spent: {i} of {len(todo)} cases run", flush=True)
                break
            results.append((case, worker.run(case, args.case_limit_s)))
            if (i + 1) % 100 == 0:
                print(f"  {i + 1}/{len(todo)} in {time.perf_counter() - start:.0f} s", flush=True)
    finally:
        worker.close()
    report(results, time.perf_counter() - start)


def report(results: list, wall: float) -> None:
    kinds = collections.Counter(r["kind"] for _, r in results)
    print(f"\n{len(results)} cases in {wall:.0f} s")
    print("| outcome | cases |\n|---|---|")
    for k in ("ok", "refusal", "defect"):
        print(f"| {k} | {kinds.get(k, 0)} |")
    for title, idx in (("framework", 3), ("hardware", 1)):
        by = collections.defaultdict(collections.Counter)
        for case, r in results:
            by[case[idx]][r["kind"]] += 1
        print(f"\nby {title}: " + "; ".join(f"{k} {v['ok']}/{v['refusal']}/{v['defect']}" for k, v in sorted(by.items()))
              + " (ok/refusal/defect)")
    solves = sorted(r["solve_s"] for _, r in results)
    totals = sorted(r["total_s"] for _, r in results)
    if solves:
        print(f"solve s: median {statistics.median(solves):.2f}, p95 {solves[int(0.95 * (len(solves) - 1))]:.2f}, "
              f"max {solves[-1]:.2f}; case s (solve + check + launch): median {statistics.median(totals):.2f}")
    refusals = collections.Counter(r["detail"].split(";")[0][:90] for _, r in results if r["kind"] == "refusal")
    print("\nmost common refusals:")
    for text, n in refusals.most_common(8):
        print(f"  {n:4d}  {text}")
    defects = [(case, r) for case, r in results if r["kind"] == "defect"]
    by_what = collections.Counter(r["what"] for _, r in defects)
    print(f"\ndefects: {len(defects)}" + ("" if not defects else " (" + ", ".join(f"{k} {v}" for k, v in by_what.items()) + ")"))
    for case, r in defects:
        print(f"  [{r['what']}] {command(case)}  # {r['detail']}")


if __name__ == "__main__":
    main()
