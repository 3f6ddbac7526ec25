"""A lower bound on the best request latency of one attention layout: the exact minimum of the figure over the
sums of the groups' shares, with the memory cap and the framework rules set aside.

A configuration of the layout is one option per group; its steps are the per-stage sums of the options'
shares (plan.group_cost), and its latency F(step_times(sums)) is non-decreasing in every coordinate of those
sums (estimate.figures, tests/test_planner_exact.py). So the minimum over all configurations lies on the Pareto
set of the sums, which is the Pareto set of the Minkowski sum of the groups' own Pareto sets: built group by
group, pruning dominated partial sums. Kernel-launch seconds enter only an eager step's launch floor; they are
relaxed to each group's smallest (a bound on the sums), which keeps the vectors short (GPU seconds per stage of
each step). A group not yet costed adds nothing (its shares are >= 0); dense and MoE, when both are costed,
are one joint group of their pairs with the fused all-reduce's correction, so the bound is exact there too.
Without the memory cap and the rules the feasible set only grows, so the minimum found is at most the best
feasible latency: a valid bound, and a tight one where neither binds (the usual case).
"""
from __future__ import annotations

from dataclasses import dataclass
from operator import add as _add
from typing import Callable, Iterable, Sequence

from solver.plan.group_cost import Share

Option = tuple[Share | None, Share | None]  # (prefill share, decode share) of one choice
# the work allowed per group (partial sums x the group's Pareto options); past it the group enters as its
# per-coordinate minimum, which lowers every sum: still a bound, a looser one
MAX_SUMS = 4096


def _vector(opt: Option) -> tuple[float, ...]:
    pre, dec = opt
    return (*(pre.gpu_s if pre is not None else ()), *(dec.gpu_s if dec is not None else ()))


def _launch_floor(opts: Iterable[Option]) -> tuple[tuple[float, ...], tuple[float, ...]]:
    pres = [o[0].launch_s for o in opts if o[0] is not None]
    decs = [o[1].launch_s for o in opts if o[1] is not None]
    return (tuple(map(min, zip(*pres))) if pres else (), tuple(map(min, zip(*decs))) if decs else ())


def nondominated(points: Iterable[tuple[float, ...]]) -> list[tuple[float, ...]]:
    """The points no other point is <= in every coordinate (one copy of equal points)."""
    pts = sorted(set(points))  # lexicographic: a point's dominators come before it
    if len(pts) <= 1:
        return pts
    if len(pts[0]) <= 2:  # one or two coordinates (no PP): a sweep keeps the falling second one
        out, low = [], float("inf")
        for p in pts:
            if len(p) < 2 or p[1] < low:
                if len(p) < 2 and out:
                    break
                out.append(p)
                low = p[1] if len(p) == 2 else low
        return out
    out = []
    for p in pts:
        if not any(all(a <= b for a, b in zip(q, p)) for q in out):
            out.append(p)
    return out


@dataclass(frozen=True)
class Sums:
    """The Pareto set of the summed GPU seconds (per stage of each step) over one option per group of some
    groups, with the groups' launch floors summed: what relaxed_minimum evaluates the figure on."""

    points: tuple[tuple[float, ...], ...]
    launch_pre: tuple[float, ...]
    launch_dec: tuple[float, ...]
    n_pre: int  # prefill coordinates at the front of each point
    has_pre: bool
    has_dec: bool

    @property
    def corner(self) -> tuple[float, ...]:
        """The per-coordinate minimum of the points: no sum is below it in any coordinate."""
        return tuple(map(min, zip(*self.points)))

    def shares(self, v: tuple[float, ...]) -> tuple[Share | None, Share | None]:
        """(prefill, decode) summed shares of point `v` (one of the points, or the corner), with the launch floors."""
        return (Share(v[:self.n_pre], self.launch_pre) if self.has_pre else None,
                Share(v[self.n_pre:], self.launch_dec) if self.has_dec else None)


def pareto_sums(groups: Sequence[Sequence[Option]]) -> Sums:
    """The Sums of these (non-empty) groups, built group by group, dominated partial sums pruned."""
    groups = [g for g in groups if g]
    sample = groups[0][0]
    n_pre = len(sample[0].gpu_s) if sample[0] is not None else 0
    launch_pre = [0.0] * n_pre
    launch_dec = [0.0] * (len(sample[1].gpu_s) if sample[1] is not None else 0)
    sums: list[tuple[float, ...]] = [(0.0,) * (n_pre + len(launch_dec))]
    first = True
    for opts in groups:
        lp, ld = _launch_floor(opts)
        launch_pre = [a + b for a, b in zip(launch_pre, lp)] if lp else launch_pre
        launch_dec = [a + b for a, b in zip(launch_dec, ld)] if ld else launch_dec
        own = nondominated(_vector(o) for o in opts)
        if len(own) * len(sums) > MAX_SUMS:
            own = [tuple(map(min, zip(*own)))]
        if first:  # 0.0 + x is x: the first group's sums are its own Pareto set, in its order
            first = False
            sums = [tuple(map(_add, sums[0], o)) for o in own]
            continue
        sums = nondominated(tuple(map(_add, s, o)) for s in sums for o in own)
    return Sums(tuple(sums), tuple(launch_pre), tuple(launch_dec), n_pre, sample[0] is not None,
                sample[1] is not None)


def combined(a: Sums, b: Sums) -> Sums:
    """The Sums of the groups of `a` and of `b` together: the Pareto set of their Minkowski sum (the same set as
    pareto_sums of all the groups at once; past MAX_SUMS the smaller side enters as its per-coordinate minimum)."""
    pa, pb = a.points, b.points
    if len(pa) * len(pb) > MAX_SUMS:
        if len(pa) <= len(pb):
            pa = (tuple(map(min, zip(*pa))),)
        else:
            pb = (tuple(map(min, zip(*pb))),)
    return Sums(tuple(nondominated(tuple(map(_add, x, y)) for x in pa for y in pb)),
                tuple(map(_add, a.launch_pre, b.launch_pre)), tuple(map(_add, a.launch_dec, b.launch_dec)),
                a.n_pre, a.has_pre, a.has_dec)


def corner_figure(a: Sums, b: Sums, figure: Callable[[Share | None, Share | None], float]) -> float:
    """figure at the sum of the two corners: at most minimum(combined(a, b), figure) (every point of the
    combined set is the sum of a point of each, so it is >= that corner in every coordinate, and the figure is
    non-decreasing), from one figure call and without building the combined set."""
    v = tuple(map(_add, a.corner, b.corner))
    pre = Share(v[:a.n_pre], tuple(map(_add, a.launch_pre, b.launch_pre))) if a.has_pre else None
    dec = Share(v[a.n_pre:], tuple(map(_add, a.launch_dec, b.launch_dec))) if a.has_dec else None
    return figure(pre, dec)


def minimum(sums: Sums, figure: Callable[[Share | None, Share | None], float]) -> float:
    """min of figure(prefill sum, decode sum) over the Sums' points."""
    return minimum_unless_below(sums, figure, None)[0]


def minimum_unless_below(sums: Sums, figure: Callable[[Share | None, Share | None], float],
                         at_least: float | None) -> tuple[float, bool]:
    """(minimum of the Sums, True), or (the first point's figure below `at_least`, False): a caller asking
    whether the bound reaches `at_least` has its answer there."""
    best = float("inf")
    for v in sums.points:
        x = figure(*sums.shares(v))
        if at_least is not None and x < at_least:
            return x, False
        best = min(best, x)
    return best, True


def relaxed_minimum(groups: Sequence[Sequence[Option]], figure: Callable[[Share | None, Share | None], float]
                    ) -> float:
    """min over one option per group of figure(prefill sum, decode sum), launch seconds relaxed per group.
    `figure` maps summed shares to the latency (the layout's step times and serving figures)."""
    groups = [g for g in groups if g]
    if not groups:
        return figure(None, None)
    return minimum(pareto_sums(groups), figure)


def joint_pairs(dense: dict[int, Option], moe: dict[int, Option], pairs: dict[tuple[int, int], Option],
                excluded: frozenset[tuple[int, int]] = frozenset()) -> list[Option]:
    """Dense and MoE as one group: every pair of their options (but the `excluded` (dense, moe) pairs), with the
    pair's correction where it has one."""
    out = []
    for jd, d in dense.items():
        for jm, m in moe.items():
            if (jd, jm) in excluded:
                continue
            corr = pairs.get((jd, jm))
            parts = []
            for k in (0, 1):
                if d[k] is None:
                    parts.append(None)
                    continue
                s = d[k] + m[k]
                parts.append(s + corr[k] if corr is not None and corr[k] is not None else s)
            out.append((parts[0], parts[1]))
    return out


__all__ = ["relaxed_minimum", "pareto_sums", "combined", "corner_figure", "minimum", "minimum_unless_below", "Sums", "joint_pairs", "nondominated", "MAX_SUMS"]
