"""The long fuzz run (issue 11): generated command lines over every subcommand, with mutated and truncated
hardware, framework, model, deployment and profiled-config files, traces, CSVs, output targets and option
values (tests/fuzz_cases.py: the generator and its labels). Prints totals by subcommand and outcome, and every
failure: a traceback (exit 3 or a Python traceback), a hang (over --hang-s), exit 0 on input the labels call
invalid, a refusal in other than one "error:" line, or a valid request no plan meets answered as met or without
naming what binds and what would fit. Failures in the "model-config" family (a mutated model config is the only
bad part) are listed as "model-config, layers branch": model-field parsing is that work's.

    python benchmarks/fuzz.py --cases 3200 --workers 2            # the issue's run (>= 3,000 cases)
    python benchmarks/fuzz.py --cases 200 --seed 1                # a quick look

Each case runs through solver.cli.main in a long-lived worker process (the command line's own entry point,
without paying Python's start-up per case); a case over --hang-s seconds is a hang: its worker is killed and
replaced. Cases are drawn by hypothesis (derandomized by --seed, no shrinking): without --only, by strategy group
(tests/fuzz_cases.py GROUPS): the strategies of earlier runs first (a seed's earlier cases, in order), then the
previous session's, then those added since.
"""
from __future__ import annotations

import argparse
import collections
import multiprocessing as mp
import sys
import tempfile
import time
from multiprocessing.connection import wait
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import fuzz_cases as fc  # noqa: E402


def _worker(conn) -> None:
    import fuzz_cases as wfc

    while True:
        case = conn.recv()
        if case is None:
            return
        t = time.perf_counter()
        try:
            code, out, exc = wfc.run_in_process(case)
        except BaseException as e:  # noqa: BLE001 - report, never die
            code, out, exc = None, repr(e), e
        conn.send((code, wfc.stderr_tail(out), wfc.classify(case, code, out, exc), time.perf_counter() - t))


class Pool:
    def __init__(self, n: int, hang_s: float):
        self.ctx = mp.get_context("spawn")
        self.hang_s = hang_s
        self.slots = [self._start() for _ in range(n)]

    def _start(self):
        parent, child = self.ctx.Pipe()
        proc = self.ctx.Process(target=_worker, args=(child,), daemon=True)
        proc.start()
        return {"proc": proc, "conn": parent, "case": None, "t0": 0.0}

    def run(self, cases: list, on_done) -> None:
        queue = collections.deque(cases)
        while queue or any(s["case"] is not None for s in self.slots):
            for i, s in enumerate(self.slots):
                if s["case"] is None and queue:
                    s["case"], s["t0"] = queue.popleft(), time.perf_counter()
                    s["conn"].send(s["case"])
            busy = [s for s in self.slots if s["case"] is not None]
            ready = wait([s["conn"] for s in busy], timeout=1.0)
            now = time.perf_counter()
            for i, s in enumerate(self.slots):
                if s["case"] is None:
                    continue
                if s["conn"] in ready:
                    try:
                        code, tail, kind, secs = s["conn"].recv()
                    except EOFError:  # the worker died (a crash of the interpreter itself)
                        code, tail, kind, secs = None, "worker process died", "traceback", now - s["t0"]
                        self.slots[i] = self._start()
                    on_done(fc.Outcome(s["case"], code, tail, secs, kind))
                    if self.slots[i] is s:
                        s["case"] = None
                elif now - s["t0"] > self.hang_s:
                    s["proc"].kill()
                    s["proc"].join()
                    on_done(fc.Outcome(s["case"], None, f"no answer in {self.hang_s:g} s", now - s["t0"], "hang"))
                    self.slots[i] = self._start()

    def close(self) -> None:
        for s in self.slots:
            try:
                s["conn"].send(None)
            except (BrokenPipeError, OSError):
                pass
            s["proc"].join(timeout=5)


def draw_cases(fx, n: int, seed: int, only: str | None = None, group: str | None = None) -> list:
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hyp_seed

    out: list = []

    @hyp_seed(seed)
    @settings(max_examples=n, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(fc.cases(fx, only=only, group=group))
    def collect(case):
        out.append(case)

    collect()
    return out


def distinct_cases(fx, n: int, seed0: int, only: str | None = None, group: str | None = None,
                   known: set | None = None, per_batch: int | None = None) -> list:
    """n distinct command lines: hypothesis draws small cases often, so draw batches (of per_batch, default n) under
    seeds seed0, seed0 + 1, ... until enough."""
    seen: dict = {}
    for batch in range(40):
        for case in draw_cases(fx, per_batch or n, seed0 + batch, only, group):
            if case.argv not in (known or ()):
                seen.setdefault(case.argv, case)
        if len(seen) >= n:
            break
    return list(seen.values())[:n]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=3200)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--hang-s", type=float, default=60.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--fixtures", default=None, help="fixture folder (default: a new temporary one)")
    ap.add_argument("--only", default=None, help="draw from one strategy of tests/fuzz_cases.py (family, topology, "
                    "sweep_price, disagg_copies, disagg_sla, no_layers, long_dsa_memory, launch_solved, afd_check, "
                    "afd_estimate, afd_launch, vllm_wide_solve, vllm_wide_launch, multinode_launch, command_check, "
                    "pp_stage, repeats, spelt_numbers, device_file, unmet, draft_command, long_command, "
                    "draft_deployment, workers, dsa_pool_command, quant_beside, kv_engine, workers_elsewhere, "
                    "ngram_length, deployment_field, offload_command, partition_env, env_switch, tower_text, atom_dtype, "
                    "model_alias, amd_engine, ...)")
    args = ap.parse_args()
    folder = Path(args.fixtures) if args.fixtures else Path(tempfile.mkdtemp(prefix="shardplan-fuzz-"))
    fx = fc.build_fixtures(folder)
    if args.only:
        cases = distinct_cases(fx, args.cases, args.seed * 1000, args.only)
    else:  # the strategies of earlier runs first (a seed's cases as they were), then the ones added since
        cases = []
        for i, (group, share, offset, batch) in enumerate(fc.GROUPS):
            n = args.cases - len(cases) if i == len(fc.GROUPS) - 1 else round(args.cases * share)
            cases += distinct_cases(fx, n, args.seed * 1000 + offset, group=group,
                                    known={c.argv for c in cases}, per_batch=round(args.cases * batch))
    print(f"{len(cases)} distinct cases, {args.workers} workers, "
          f"hang limit {args.hang_s:g} s, fixtures in {folder}", flush=True)
    results: list = []
    start = time.perf_counter()

    def done(o) -> None:
        results.append(o)
        if len(results) % 100 == 0:
            print(f"  {len(results)}/{len(cases)} in {time.perf_counter() - start:.0f} s", flush=True)

    pool = Pool(args.workers, args.hang_s)
    try:
        pool.run(cases, done)
    finally:
        pool.close()
    wall = time.perf_counter() - start
    report(results, wall)


def report(results: list, wall: float) -> None:
    kinds = ["ok", "rejected-valid", "exit1-invalid", "traceback", "hang", "accepted-invalid"]
    kinds += sorted({o.kind for o in results} - set(kinds))
    by_cmd: dict = collections.defaultdict(collections.Counter)
    labels: dict = collections.defaultdict(collections.Counter)
    for o in results:
        by_cmd[o.case.cmd][o.kind] += 1
        labels[o.case.cmd][o.case.label] += 1
    print(f"\n{len(results)} cases in {wall:.0f} s (median {sorted(o.seconds for o in results)[len(results) // 2]:.3f} s"
          f" per case, slowest {max(o.seconds for o in results):.1f} s)\n")
    head = f"{'subcommand':<11}{'cases':>6}{'valid':>7}{'invalid':>8}{'any':>5} | " + " ".join(f"{k:>9}"[:max(9, len(k))]
                                                                                         for k in kinds)
    print(head)
    total = collections.Counter()
    for cmd in fc.SUBCOMMANDS:
        c = by_cmd.get(cmd, collections.Counter())
        n = sum(c.values())
        total.update(c)
        lab = labels[cmd]
        print(f"{cmd:<11}{n:>6}{lab['valid']:>7}{lab['invalid']:>8}{lab['any']:>5} | "
              + " ".join(f"{c[k]:>{max(9, len(k))}}" for k in kinds))
    lab_all = collections.Counter()
    for v in labels.values():
        lab_all.update(v)
    codes = collections.Counter((o.case.cmd, o.exit_code) for o in results)
    print("exit codes: " + ", ".join(f"{cmd} " + "/".join(f"{code}:{n}" for (c, code), n in sorted(
        codes.items(), key=lambda kv: str(kv[0][1])) if c == cmd) for cmd in fc.SUBCOMMANDS if by_cmd.get(cmd)))
    print(f"{'total':<11}{sum(total.values()):>6}{lab_all['valid']:>7}{lab_all['invalid']:>8}{lab_all['any']:>5} | "
          + " ".join(f"{total[k]:>{max(9, len(k))}}" for k in kinds))
    fails = [o for o in results if o.kind in fc.FAILURES]
    layers = [o for o in fails if o.case.family == "model-config"]
    ours = [o for o in fails if o.case.family != "model-config"]
    print(f"\nfailures ({', '.join(fc.FAILURES)}): {len(ours)}"
          + (f"; model-config, layers branch: {len(layers)}" if layers else ""))
    for o in ours[:60]:
        print(f"  [{o.kind}] {o.case.label}: shardplan {' '.join(a[:60] for a in o.case.argv)}\n      -> exit "
              f"{o.exit_code}: {o.stderr_tail}")
    for o in layers[:40]:
        print(f"  [model-config, layers branch] [{o.kind}] {o.case.why}: shardplan "
              f"{' '.join(a[:60] for a in o.case.argv)}\n      -> exit {o.exit_code}: {o.stderr_tail}")
    rejected = [o for o in results if o.kind in ("rejected-valid", "exit1-invalid")]
    if rejected:
        print(f"\nlabel disagreements (not failures): {len(rejected)}")
        for o in rejected[:25]:
            print(f"  [{o.kind}] shardplan {' '.join(a[:60] for a in o.case.argv)}\n      -> {o.stderr_tail}")


if __name__ == "__main__":
    main()
