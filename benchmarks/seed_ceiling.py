"""The most a better first incumbent could save: CPU seconds of one plan of DeepSeek-V3.2 on atlas_a3 (int8, ISL 4096
/ OSL 256, balanced; the estimator's memos warm, as in plan_cpu.py) against the same plan where an oracle seeds
every question of Planner.best with that question's own final answer (Planner._seed takes the answer found at
the concurrency before; the oracle learns each question's answer from a recording plan). With the optimum as the
incumbent from the start, every layout whose bound reaches it is dropped unsearched, so the oracle's CPU time and
CP-SAT solves bound from below what any cheaper seed or order of the concurrencies could reach with this search.
Also prints, per question of the plain plan, how far the seed it got lay above its answer (request latency ratio).
A measurement only: the oracle is no planner. Its answers must equal the plain plan's (printed).

Run: python benchmarks/seed_ceiling.py [--worlds 128,1024] [--rounds 3]
"""
from __future__ import annotations

import statistics

from plan_case import ceiling_args, plan_once, warm_up

from solver.plan import cpsat


class Oracle:
    """Wraps Planner.__init__, _search and _seed: records each question's answer and the seed it was given, or
    (once `perfect` is on) seeds each question with its recorded answer."""

    def __init__(self) -> None:
        self.recording, self.perfect = True, False
        self.answers: dict[tuple, dict | None] = {}
        self.gaps: list[tuple[int, str, float | None]] = []
        self.planners: list[cpsat.Planner] = []
        P = cpsat.Planner
        init, search, seed = P.__init__, P._search, P._seed
        oracle = self

        def init_(planner, *args, **kwargs):
            init(planner, *args, **kwargs)
            oracle.planners.append(planner)

        def seed_(planner, b, exclude_patterns, relaxed, exclude_families, served):
            q = (b, tuple(exclude_patterns), relaxed, exclude_families, served)
            picks = oracle.answers.get(q)
            if oracle.perfect and picks is not None:
                hit = planner.admissible(b, picks, relaxed, served)
                return None if hit is None else (hit[0], hit[1].simplicity, hit[1])
            out = seed(planner, b, exclude_patterns, relaxed, exclude_families, served)
            planner._bench_seed = None if out is None else out[0]
            return out

        def search_(planner, b, exclude_patterns, relaxed, exclude_families, served):
            point = search(planner, b, exclude_patterns, relaxed, exclude_families, served)
            if oracle.recording:
                q = (b, tuple(exclude_patterns), relaxed, exclude_families, served)
                oracle.answers[q] = None if point is None else dict(point.picks)
                asked = ("another attention backbone" if exclude_families else
                         "another pattern" if exclude_patterns else "the front")
                seeded = planner._bench_seed
                ratio = None if seeded is None or point is None else seeded * cpsat.TIME_SCALE / point.latency
                oracle.gaps.append((b, asked, ratio))
            return point

        P.__init__, P._search, P._seed = init_, search_, seed_

    def plan(self, world: int, perfect: bool) -> tuple[float, str, int, int]:
        """(CPU s, the answers' repr, layouts searched, CP-SAT solves) of one plan."""
        self.perfect, self.planners = perfect, []
        cpu, _, out = plan_once(world)
        return (cpu, repr(out), sum(p.funnel["searched"] for p in self.planners),
                sum(p.solves for p in self.planners))


def main() -> None:
    args = ceiling_args()
    oracle = Oracle()
    warm_up()
    for w in (int(x) for x in args.worlds.split(",")):
        oracle.recording, oracle.answers, oracle.gaps = True, {}, []
        oracle.plan(w, perfect=False)  # the estimator's memos for this world size
        oracle.gaps = []
        _, ref, searched, solves = oracle.plan(w, perfect=False)
        oracle.recording = False
        plain, seeded, same = [], [], True
        for _ in range(args.rounds):  # alternated: the machine's drift falls on both
            t, out, _, _ = oracle.plan(w, perfect=False)
            plain.append(t)
            same &= out == ref
            t, out, o_searched, o_solves = oracle.plan(w, perfect=True)
            seeded.append(t)
            same &= out == ref
        gaps = " ".join(f"{b}{'' if asked == 'the front' else '*'}:{'-' if r is None else f'{r:.4f}'}"
                        for b, asked, r in oracle.gaps)
        p, s = statistics.median(plain), statistics.median(seeded)
        print(f"W={w} seed / answer per question (* a question after the front): {gaps}", flush=True)
        print(f"W={w} plan cpu_s {p:.3f} ({searched} layouts searched, {solves} CP-SAT solves), oracle seed {s:.3f} "
              f"({o_searched} searched, {o_solves} solves; ratio {s / p:.3f}, medians of {args.rounds}); "
              f"answers {'identical' if same else 'DIFFER'}", flush=True)


if __name__ == "__main__":
    main()
