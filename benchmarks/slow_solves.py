"""A hunt for pathologically slow solves: a deterministic (seeded) grid of `solve` runs through the CLI runner,
over catalog models of every kind (dense, MoE, MLA/DSA, hybrid linear attention, PP-heavy dense), hardware,
engines, card counts, scenarios, phases, concurrency bounds and MTP, and above all SLAs at the edge of
feasibility: each sampled deployment is solved once without an SLA, and its Pareto front's least TTFT T* and
least TPOT P* (the best achievable, up to the front) set SLAs just below, at and just above them, both at once,
and impossible ones. A few deployments run with `--serving disagg` too.

Per case it prints the CPU seconds, the CP-SAT solves made (every CpSolver.solve call in the process: the
planner's front, the binding-constraint explanation, a diagnosis's relaxed and remedy plans, disagg's pools) and
the exit code; then the slowest 20 and the median. Each case starts with solve.clear_cache() (no reused tables
or planners); the estimator's own memos persist across cases, as in a sweep, so a case's time depends on the
cases before it: the grid's order is fixed by the seed.

Run: python benchmarks/slow_solves.py [--seed 0] [--bases 40] [--variants 4] [--disagg 4]
     python benchmarks/slow_solves.py --only 17 --profile   (one case by its index, under cProfile)
"""
from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import random
import statistics
import sys
import time

from click.testing import CliRunner

from solver.cli.main import main as cli
from solver.ortools_cp import cp_model
from solver.plan import solve

# catalog models by kind: dense, MoE, MLA/DSA, hybrid linear attention, PP-heavy dense (many layers, large)
MODELS = {
    "dense": ["llama-3.1-8b", "qwen3-32b", "llama-3.1-70b", "gemma-3-27b"],
    "moe": ["qwen3-30b-a3b", "mixtral-8x7b", "gpt-oss-120b", "qwen3-235b-a22b"],
    "mla": ["deepseek-v3.2", "deepseek-v3", "kimi-k2", "glm-5"],
    "hybrid": ["qwen3-next-80b-a3b", "minimax-m1", "nemotron-3-nano", "qwen3.5-35b-a3b"],
    "pp-dense": ["llama-3.1-405b", "devstral-2-123b"],
}


def _mtp_models() -> set[str]:
    """The grid's models whose config has MTP layers (--mtp on another is bad input: Qwen3-Next's published
    config names none, so seed 104's six --mtp cases on it exited 2 before any solve)."""
    from solver.specs.model_catalog import load_model

    return {m for names in MODELS.values() for m in names if load_model(m).num_mtp_layers > 0}


MTP_MODELS = _mtp_models()
# each hardware with the engines its vendor runs (the profiles' `vendors`)
ENGINES = {
    "h100_sxm": ["generic", "vllm", "sglang", "trtllm"],
    "h200_sxm": ["generic", "vllm", "sglang", "trtllm"],
    "b200_sxm": ["generic", "vllm", "sglang", "trtllm"],
    "atlas_a3": ["generic", "cann-recipes", "vllm-ascend", "sglang"],
    "mi355x": ["generic", "vllm", "sglang", "atom"],
}
CARDS = [1, 2, 4, 8, 16, 32, 64, 128, 256]
LENGTHS = [(1024, 256), (4096, 256), (4096, 1024), (16384, 512), (32768, 512)]
# larger worlds are drawn more often: they hold the most layouts (and the slowest solves)
CARD_WEIGHTS = [1, 1, 1, 2, 2, 3, 3, 3, 3]
# SLA variants, as multiples of the unconstrained front's least TTFT (T*) and least TPOT (P*): just below, at and
# just above the best achievable, both at once, and impossible ones
SLA_VARIANTS = [
    ("ttft x0.98", 0.98, None), ("ttft x1.00", 1.0, None), ("ttft x1.02", 1.02, None), ("ttft x1.5", 1.5, None),
    ("tpot x0.98", None, 0.98), ("tpot x1.00", None, 1.0), ("tpot x1.02", None, 1.02), ("tpot x1.5", None, 1.5),
    ("both x1.01", 1.01, 1.01), ("both x1.3", 1.3, 1.3), ("both x0.99", 0.99, 0.99),
    ("ttft x0.3 (impossible)", 0.3, None), ("tpot x0.3 (impossible)", None, 0.3), ("both x0.5 (impossible)", 0.5, 0.5),
]

SOLVES = [0]  # CpSolver.solve calls in this process


def _count_solves() -> None:
    orig = cp_model.CpSolver.solve

    def counted(self, *a, **k):
        SOLVES[0] += 1
        return orig(self, *a, **k)

    cp_model.CpSolver.solve = counted


def sample_bases(rng: random.Random, n: int) -> list[list[str]]:
    """n deployments: model kind round-robin, the rest drawn; a deployment that cannot fit (too few cards) is kept
    (its diagnosis is a path to time too)."""
    kinds = list(MODELS)
    out = []
    for i in range(n):
        model = rng.choice(MODELS[kinds[i % len(kinds)]])
        hw = rng.choice(list(ENGINES))
        fw = rng.choice(ENGINES[hw])
        cards = rng.choices(CARDS, CARD_WEIGHTS)[0]
        isl, osl = rng.choice(LENGTHS)
        phase = rng.choice(["serving", "serving", "prefill", "decode"])
        argv = [model, "--hardware", hw, "--cards", str(cards), "--framework", fw, "--isl", str(isl), "--osl",
                str(osl), "--scenario", rng.choice(["balanced", "latency", "throughput"]), "--phase", phase]
        r = rng.random()
        if r < 0.2:
            argv += ["--concurrency", str(rng.choice([1, 4, 16, 64]))]
        elif r < 0.45:
            argv += ["--max-concurrency", str(rng.choice([8, 32, 256]))]
        if model in MTP_MODELS and rng.random() < 0.4:
            argv += ["--mtp", str(rng.choice([1, 2, 3]))]
        out.append(argv)
    return out


def run(argv: list[str], cmd: str = "solve") -> tuple[float, int, int, str, str]:
    """(CPU s, CP-SAT solves, exit code, stdout, stderr) of one `solve` (or sweep / recommend) run from a cold
    planner cache."""
    solve.clear_cache()
    runner = CliRunner()
    s0, t0 = SOLVES[0], time.process_time()
    res = runner.invoke(cli, [cmd, *argv, "--format", "csv" if cmd == "sweep" else "json"])
    cpu = time.process_time() - t0
    code = res.exit_code
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        code = -1  # a traceback: a fault of its own
    err = res.stderr + (f"exception: {res.exception!r}\n" if code == -1 else "")
    return cpu, SOLVES[0] - s0, code, res.stdout, err  # notes go to stderr: stdout is the JSON


def front_minima(output: str) -> tuple[float | None, float | None]:
    """(least TTFT, least TPOT) [ms] over the JSON output's Pareto front and candidates."""
    try:
        d = json.loads(output)
    except ValueError:
        return None, None
    pts = [(p.get("ttft_ms"), p.get("tpot_ms")) for p in d.get("pareto_front", [])]
    pts += [(c["estimation"].get("ttft_ms"), c["estimation"].get("tpot_ms")) for c in d.get("candidates", [])]
    ttft = [t for t, _ in pts if t]
    tpot = [p for _, p in pts if p]
    return (min(ttft) if ttft else None), (min(tpot) if tpot else None)


# where the base shows no front (it does not fit, or the engine refuses the model), its SLA cases take these as
# T* and P* instead: the diagnosis of an infeasible deployment under SLAs is a path to time too
FALLBACK_TTFT_MS, FALLBACK_TPOT_MS = 1000.0, 30.0


def sla_args(t_star: float | None, p_star: float | None, ft: float | None, fp: float | None) -> list[str]:
    t_star = FALLBACK_TTFT_MS if t_star is None else t_star
    p_star = FALLBACK_TPOT_MS if p_star is None else p_star
    out = []
    if ft is not None:
        out += ["--ttft-ms", f"{t_star * ft:.4g}"]
    if fp is not None:
        out += ["--tpot-ms", f"{p_star * fp:.4g}"]
    return out


def capacity_argv(base: list[str], t_star: float | None, p_star: float | None, tok_s: float | None, kind: str
                  ) -> list[str] | None:
    """A base deployment as a `sweep` over its size and half of it under SLAs just above the front's best
    (x1.02), or as a `recommend` of twice the throughput its front reached, under the TPOT SLA x1.02, over
    sizes up to twice its own. None where the base has no front (nothing to set the SLA or the load from) or is
    one phase alone (sweep and recommend plan serving)."""
    if t_star is None or p_star is None or tok_s is None or "serving" not in base:
        return None
    opts = dict(zip(base[1::2], base[2::2]))
    cards = int(opts["--cards"])
    keep = [base[0], "--hardware", opts["--hardware"], "--framework", opts["--framework"], "--isl", opts["--isl"],
            "--osl", opts["--osl"]]
    keep += [a for k in ("--mtp", "--max-concurrency") if k in opts for a in (k, opts[k])]
    if kind == "sweep":
        sizes = f"{max(1, cards // 2)},{cards}" if cards > 1 else "1"
        return [*keep, "--cards", sizes, "--scenarios", "latency,throughput,balanced",
                "--ttft-ms", f"{t_star * 1.02:.4g}", "--tpot-ms", f"{p_star * 1.02:.4g}"]
    return [*keep, "--cards", f"1..{cards * 2}", "--target-output-tokens-per-s", f"{tok_s * 2:.4g}",
            "--tpot-ms", f"{p_star * 1.02:.4g}"]


def front_throughput(output: str) -> float | None:
    """The most output tokens/s over the JSON output's candidates."""
    try:
        d = json.loads(output)
    except ValueError:
        return None
    tok = [c["estimation"].get("output_tokens_per_s") for c in d.get("candidates", [])]
    tok = [t for t in tok if t]
    return max(tok) if tok else None


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--bases", type=int, default=40, help="sampled deployments")
    ap.add_argument("--variants", type=int, default=4, help="SLA variants per deployment")
    ap.add_argument("--disagg", type=int, default=4, help="of the deployments, how many also run --serving disagg")
    ap.add_argument("--capacity", type=int, default=0, help="of the serving deployments, how many also run as a "
                    "sweep under SLAs at the front's edge and as a recommend of twice their throughput")
    ap.add_argument("--only", type=int, action="append", default=None, help="run these case indices only")
    ap.add_argument("--profile", action="store_true", help="cProfile the --only cases (top 30 by cumulative time)")
    ap.add_argument("--list", action="store_true", help="print the cases without running them")
    ap.add_argument("--dump", default=None, help="write each case's stdout and stderr to DIR/<index>.txt (to diff "
                    "two checkouts' answers)")
    args = ap.parse_args()
    _count_solves()
    rng = random.Random(args.seed)
    bases = sample_bases(rng, args.bases)
    serving = [i for i, base in enumerate(bases) if "serving" in base]  # disagg plans serving only
    disagg = set(rng.sample(serving, min(args.disagg, len(serving))))
    # the SLAs a phase takes: prefill alone has no TPOT, decode alone no TTFT (the CLI refuses them)
    variants = [rng.sample([v for v in SLA_VARIANTS if not (v[2] is not None and "prefill" in base)
                            and not (v[1] is not None and "decode" in base)], args.variants) for base in bases]
    # drawn after the variants, so a grid without --capacity is the one earlier runs timed
    capacity = set(rng.sample(serving, min(args.capacity, len(serving)))) if args.capacity else set()
    # cases: (index, label, argv); an SLA case needs its base's front, so the argv is finished when it is reached
    rows = []
    idx = 0
    for i, base in enumerate(bases):
        front: list = []  # the base's front output, untimed (with --explain, which lists it), when first needed

        def base_front() -> str:
            if not front:
                front.append(run([*base, "--explain"])[3])
            return front[0]

        cases = [(label, ft, fp, serving) for label, ft, fp in [("no SLA", None, None), *variants[i]]
                 for serving in (["agg", "disagg"] if i in disagg else ["agg"])]
        cases += [(kind, None, None, kind) for kind in (("sweep", "recommend") if i in capacity else ())]
        for label, ft, fp, serving in cases:
            want = args.only is None or idx in args.only
            cmd = serving if serving in ("sweep", "recommend") else "solve"
            if cmd != "solve":
                name = ("sweep, SLAs x1.02 of the front's best" if cmd == "sweep"
                        else "recommend, twice the front's throughput, TPOT x1.02")
                if args.list or not want:
                    argv = [*base, "(the sweep / recommend of the base's front)"]
                else:
                    out = base_front()
                    argv = capacity_argv(base, *front_minima(out), front_throughput(out), cmd)
                    if argv is None:
                        idx += 1
                        continue
            else:
                if ft is None and fp is None:
                    extra = []
                elif args.list or not want:
                    extra = ["(SLAs from the base's front)"]
                else:
                    extra = sla_args(*front_minima(base_front()), ft, fp)
                argv = [*base, *extra] + (["--serving", "disagg"] if serving == "disagg" else [])
                name = f"{label}{' disagg' if serving == 'disagg' else ''}"
            if args.list:
                print(f"#{idx} {cmd} {name}: {' '.join(argv)}")
            elif want:
                if args.profile:
                    prof = cProfile.Profile()
                    prof.enable()
                cpu, n, code, out, err = run(argv, cmd)
                if args.dump:
                    os.makedirs(args.dump, exist_ok=True)
                    with open(os.path.join(args.dump, f"{idx}.txt"), "w") as fh:
                        fh.write(f"{'' if cmd == 'solve' else cmd + ' '}{' '.join(argv)}\nexit {code}\n{out}\n--- stderr\n{err}")
                if args.profile:
                    prof.disable()
                    pstats.Stats(prof, stream=sys.stderr).sort_stats("cumulative").print_stats(30)
                rows.append((cpu, n, code, idx, name, [cmd, *argv]))
                print(f"#{idx:<4} {cpu:7.2f} CPU s {n:6d} solves exit {code:>2}  {name}: {cmd} {' '.join(argv)}",
                      flush=True)
            idx += 1
    if args.list or not rows:
        return
    print(f"\n{len(rows)} cases, median {statistics.median(r[0] for r in rows):.2f} CPU s, "
          f"median {statistics.median(r[1] for r in rows):.0f} solves, total {sum(r[0] for r in rows):.1f} CPU s")
    print("slowest 20:")
    for cpu, n, code, i, name, argv in sorted(rows, key=lambda r: -r[0])[:20]:
        print(f"#{i:<4} {cpu:7.2f} CPU s {n:6d} solves exit {code:>2}  {name}: {' '.join(argv)}")


if __name__ == "__main__":
    main()
