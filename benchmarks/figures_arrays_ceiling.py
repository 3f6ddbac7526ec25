"""The ceiling of the L figure over arrays in the first-bound pass (issue 12, stop 49): the figures the exact
attention-only bounds of one question evaluate (plan.bound.minimum_unless_below over each layout's attention Pareto
sums, the planner's latency function), evaluated once per question over arrays instead, on plan_case's
DeepSeek-V3.2 case (benchmarks/README.md, "Stop 49").

A prototype for the measurement only: `_latency_arrays` spells the decode-first serving figures
(closed_loop.serving_figures), the steps as the engine runs them (ViewCosts.step_times, figures._steps) and the
request latency over numpy arrays, operation for operation in the scalar order, and the script checks every value
equal to the planner's own, bit for bit; the planner does not use it (the estimator's formulas have one home,
estimate.closed_loop: a vectorised planner needs them over arrays there). Points the prototype does not spell (a
lockstep policy, an SLA, a degenerate step that needs the bisection) are left to the scalar figure and counted.

Each question's bounds are captured as the plan runs; afterwards, per question, the scalar minima are timed (the
planner's latency function over each layout's points, as minimum_unless_below calls it) against one array pass
(gathering the points and their layouts' constants into arrays, the figures, the per-layout minima).

Run: python benchmarks/figures_arrays_ceiling.py [--worlds 128,1024] [--rounds 3]
"""
from __future__ import annotations

import gc
import math
import time

import numpy as np

from plan_case import ceiling_args, plan_once, warm_up
from solver.estimate.figures import _TERMS, _terms
from solver.plan import cpsat, layout_bounds
from solver.plan.bound import minimum_unless_below

clock = time.process_time
questions: list[list[tuple]] = []  # per question: (planner, view, caps, Sums) of each exact attention-only bound
gathered: list[float] = []  # when each array pass had its arrays (the gathering's end)


def _record() -> None:
    """Wrap the planner so each question's exact attention-only bounds (their memo's misses) land in `questions`."""
    bound_of, run = layout_bounds.LayoutBounds._bound_of, cpsat.Planner._search

    def _search(self, *a, **k):
        questions.append([])
        return run(self, *a, **k)

    def _bound_of(self, vc, attention_only, screen, excluded, caps, at_least=None):
        if attention_only and questions:
            sums = self._attn_sums(vc.attn, screen)
            if sums is not None:
                questions[-1].append((self, vc, caps, sums))
        return bound_of(self, vc, attention_only, screen, excluded, caps, at_least)

    cpsat.Planner._search = _search
    layout_bounds.LayoutBounds._bound_of = _bound_of


def _scalar(q: list[tuple]) -> list[float]:
    """The minima as the bounds take them (at_least None: the exact minimum)."""
    return [minimum_unless_below(sums, pl._latency_fn(vc, caps), None)[0] for pl, vc, caps, sums in q]


def _spelled(pl, vc, caps) -> bool:
    """Whether the prototype spells this layout's figure: serving, decode-first, no SLA."""
    sp = vc.plan
    if caps != (None, None) or sp.kind != "serving" or vc.pre_pipe is None or vc.dec_pipe is None:
        return False
    hit = _TERMS.get(id(sp))
    if hit is None or hit[1] is not pl.t.f:
        hit = _terms(sp, pl.t.f)
    return hit[4].decode_first


def _latency_arrays(q: list[tuple]) -> tuple[list[float], int]:
    """The minima of the layouts the prototype spells (NaN for the others), and how many points needed the scalar
    figure (a degenerate step: the scalar bisection)."""
    rows, owner, consts = [], [], []
    for n, (pl, vc, caps, sums) in enumerate(q):
        if not _spelled(pl, vc, caps):
            continue
        f, sp = pl.t.f, vc.plan
        hit = _TERMS[id(sp)]
        kit = hit[4]
        c = (vc.pre_pipe.slots, vc.pre_pipe.handoff_s, vc.pre_pipe.overhead_s, vc.dec_pipe.slots,
             vc.dec_pipe.handoff_s, vc.dec_pipe.overhead_s, float(sp.dec_eager), hit[2], hit[3],
             kit.running, kit.prompts_per_step, kit.chunks, kit.tokens_per_step, kit.overhead_s,
             kit.first_token_iterations, kit.steps_out, kit.cross_shares, kit.max_prompts, kit.first_groups,
             kit.waves, kit.slots_ahead, kit.waiting_share, float(kit.osl > 1),
             max(sums.launch_pre), max(sums.launch_dec), *pl.scenario.latency_terms[:2])
        npre = sums.n_pre
        for v in sums.points:
            rows.append((max(v[:npre]), max(v[npre:])))
            owner.append(n)
            consts.append(c)
    out = [math.nan] * len(q)
    if not rows:
        return out, 0
    f = q[0][0].t.f
    g = np.array(rows)
    k = np.array(consts)
    gathered.append(clock())
    (pslots, phand, pover, dslots, dhand, dover, deager, pseq, dseq, B, n, chunks, m, o, fti, steps_out, cross, hi,
     groups, waves, ahead, waiting, has_gap, lpre, ldec, pw, steps) = k.T
    eager, kover = f.eager_launch_s, f.kernel_overhead_s
    # ViewCosts.step_times: Pipeline.gpu_s, Pipeline.kernels x the eager launch
    pe = pslots * g[:, 0] + phand + pover
    if kover > 0:
        pe = np.maximum(pe, pslots * lpre / kover * eager)
    te = dslots * g[:, 1] + dhand + dover
    if kover > 0:
        te = np.where(deager > 0, np.maximum(te, dslots * ldec / kover * eager), te)
    # Planner._fig's floor, figures._steps (no kernels: the launch floor is the step itself) and its sequence costs
    pre_s = np.maximum(np.maximum(pe, 1e-12), 0.0) + pseq
    tau = np.maximum(np.maximum(te, 1e-12), 0.0) + dseq
    # closed_loop.serving_figures, decode-first
    ftl = fti * tau
    p = pre_s / n
    S = p + (chunks - 1) * tau
    fixed = o + ftl + cross * p
    base = fixed + tau / 2 + S
    cap = (B - 1) * S

    def loop_state(qq):
        s = tau + qq * p
        lam = qq / s
        rho = lam * p
        rho = np.where(rho < 1 - 1e-12, rho, 1 - 1e-12)
        wait = rho * S / (2 * (1 - rho))
        return s, lam, base + np.where(cap < wait, cap, wait)

    step, lam, steady = loop_state(hi)
    saturated = lam * (steady + steps_out * step) - B <= 0
    queued = B / lam - steps_out * step
    steady_sat = np.where(queued > steady, queued, steady)

    def positive_root(a, b, c):
        with np.errstate(divide="ignore", invalid="ignore"):
            d = np.sqrt(b * b + 4 * a * c)
            return np.where(a <= 0, np.where(b > 0, c / b, np.inf), np.where(b >= 0, 2 * c / (b + d), (d - b) / (2 * a)))

    with np.errstate(divide="ignore", invalid="ignore"):
        c = B * tau
        head = steps_out * tau + fixed + tau / 2
        below = positive_root(p * (steps_out + S / (2 * tau)), head + (chunks - 1) * tau - (B - 1) * p, c)
        above = positive_root(p * steps_out, head + B * (chunks - 1) * tau, c)
        root = np.where(below <= 2 * tau * (B - 1) / p, below, above)
        good = (tau > 0) & (p > 0) & (root >= 0.0) & (root <= hi) & (root * p < (1 - 1e-12) * (tau + root * p))
        step_r, _, steady_r = loop_state(np.where(good, root, 0.0))
    step = np.where(saturated, step, step_r)
    steady = np.where(saturated, steady_sat, steady_r)
    scalar = ~saturated & ~good  # the bisection: left to the scalar figure
    first = o + ftl + pre_s * groups
    served = (first + (waves - 1) * steady) / waves
    request_s = served + steps_out * step
    ttft = served + ahead * request_s * waiting
    tpot = np.where(has_gap > 0, step / m, 0.0)
    lat = pw * ttft + steps * tpot
    owner_a = np.array(owner)
    lat = np.where(scalar, np.nan, lat)
    low = np.full(len(q), np.inf)
    np.minimum.at(low, owner_a, lat)
    for n in set(owner):
        out[n] = float(low[n])
    return out, int(scalar.sum())


def main() -> None:
    args = ceiling_args()
    _record()
    warm_up()
    for w in (int(x) for x in args.worlds.split(",")):
        plan_once(w)  # the size's ops costed: the plans below are warm
        for r in range(args.rounds):
            questions.clear()
            plan_once(w)
            qs = [q for q in questions if q]
            scalar = [_scalar(q) for q in qs]
            arrays = [_latency_arrays(q) for q in qs]
            t_scalar = t_arrays = gather = math.inf
            gc.disable()  # the best of 5 passes each, without the collector's pauses
            for _ in range(5):
                t0 = clock()
                for q in qs:
                    _scalar(q)
                t1 = clock()
                g = 0.0
                for q in qs:
                    gathered.clear()
                    t = clock()
                    _latency_arrays(q)
                    g += (gathered[0] if gathered else clock()) - t
                t2 = clock()
                t_scalar, t_arrays, gather = min(t_scalar, t1 - t0), min(t_arrays, t2 - t1), min(gather, g)
            gc.enable()
            bounds = sum(len(q) for q in qs)
            spelled = sum(x == x for a, _ in arrays for x in a)
            same = sum(x == y for s, (a, _) in zip(scalar, arrays) for x, y in zip(s, a) if y == y)
            left = sum(n for _, n in arrays)
            points = sum(len(e[3].points) for q in qs for e in q)
            print(f"W={w} round {r + 1}: {bounds} exact first bounds over {points} points in {len(qs)} questions; "
                  f"scalar {1e3 * t_scalar:.1f} ms, arrays {1e3 * t_arrays:.1f} ms (one pass a question; of it "
                  f"gathering the points and constants {1e3 * gather:.1f} ms); "
                  f"{spelled} spelled, {same} equal bit for bit, {left} points left to the scalar figure")


if __name__ == "__main__":
    main()
