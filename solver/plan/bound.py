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
from functools import cached_property
from operator import add as _add, le as _le
from typing import Callable, Iterable, NamedTuple, Sequence

from solver.plan.group_cost import Share

_new = tuple.__new__  # a Share from its two fields, without the named tuple's __new__
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
    if len(pts[0]) == 1:  # one coordinate: the least
        return pts[:1]
    if len(pts[0]) == 2:  # two coordinates (no PP): a sweep keeps the falling second one
        out, low = [], float("inf")
        for p in pts:
            if p[1] < low:
                out.append(p)
                low = p[1]
        return out
    out = []
    for p in pts:
        for q in out:
            if all(map(_le, q, p)):
                break
        else:
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

    @cached_property  # memoised Sums are asked for it again by every bound that reads them
    def corner(self) -> tuple[float, ...]:
        """The per-coordinate minimum of the points: no sum is below it in any coordinate."""
        return tuple(map(min, zip(*self.points)))

    def shares(self, v: tuple[float, ...]) -> tuple[Share | None, Share | None]:
        """(prefill, decode) summed shares of point `v` (one of the points, or the corner), with the launch floors."""
        return (Share(v[:self.n_pre], self.launch_pre) if self.has_pre else None,
                Share(v[self.n_pre:], self.launch_dec) if self.has_dec else None)


class Part(NamedTuple):
    """One group as pareto_sums reads it: each option's GPU seconds (prefill stages, then decode stages), the
    group's launch floors per step, and the steps' shape."""

    vectors: list[tuple[float, ...]]
    launch_pre: tuple[float, ...]
    launch_dec: tuple[float, ...]
    n_pre: int
    has_pre: bool
    has_dec: bool


def option_part(opts: Sequence[Option]) -> Part:
    """The Part of a (non-empty) group's options."""
    lp, ld = _launch_floor(opts)
    pre, dec = opts[0]
    return Part([_vector(o) for o in opts], lp, ld, len(pre.gpu_s) if pre is not None else 0, pre is not None,
                dec is not None)


def pareto_sums(groups: Sequence[Sequence[Option]]) -> Sums:
    """The Sums of these (non-empty) groups, built group by group, dominated partial sums pruned."""
    return sums_of_parts([option_part(g) for g in groups if g])


def sums_of_parts(parts: Sequence[Part]) -> Sums:
    """pareto_sums of the groups these (non-empty) Parts stand for."""
    n_pre, has_pre, has_dec = parts[0].n_pre, parts[0].has_pre, parts[0].has_dec
    launch_pre = [0.0] * n_pre
    launch_dec = [0.0] * (len(parts[0].vectors[0]) - n_pre if has_dec else 0)
    for part in parts:
        lp, ld = part.launch_pre, part.launch_dec
        launch_pre = [a + b for a, b in zip(launch_pre, lp)] if lp else launch_pre
        launch_dec = [a + b for a, b in zip(launch_dec, ld)] if ld else launch_dec
    return Sums(tuple(front_of_sums([p.vectors for p in parts])), tuple(launch_pre), tuple(launch_dec), n_pre,
                has_pre, has_dec)


def front_of_sums(vector_sets: Sequence[Sequence[tuple[float, ...]]]) -> list[tuple[float, ...]]:
    """The Pareto set of the sums that take one vector of each (non-empty) set, built set by set, dominated
    partial sums pruned. Past MAX_SUMS partial sums a set enters as its per-coordinate minimum: its sums then
    bound the true ones from below, which is all a bound needs."""
    sums: list[tuple[float, ...]] = []
    for vectors in vector_sets:
        own = nondominated(vectors)
        if len(own) * max(len(sums), 1) > MAX_SUMS:
            own = [tuple(map(min, zip(*own)))]
        # the first set's sums are its own Pareto set, in its order
        sums = own if not sums else nondominated(tuple(map(_add, s, o)) for s in sums for o in own)
    return sums


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
    n, lp, ld = sums.n_pre, sums.launch_pre, sums.launch_dec
    has_pre, has_dec = sums.has_pre, sums.has_dec
    for v in sums.points:  # sums.shares(v), spelled out: the bounds evaluate ~10K points a plan
        x = figure(_new(Share, (v[:n], lp)) if has_pre else None, _new(Share, (v[n:], ld)) if has_dec else None)
        if at_least is not None and x < at_least:
            return x, False
        if x < best:  # min(best, x)
            best = x
    return best, True


def relaxed_minimum(groups: Sequence[Sequence[Option]], figure: Callable[[Share | None, Share | None], float]
                    ) -> float:
    """min over one option per group of figure(prefill sum, decode sum), launch seconds relaxed per group.
    `figure` maps summed shares to the latency (the layout's step times and serving figures)."""
    groups = [g for g in groups if g]
    if not groups:
        return figure(None, None)
    return minimum(pareto_sums(groups), figure)


def _flat(opt: Option) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """(GPU, launch) seconds of an option's steps, prefill stages then decode stages."""
    pre, dec = opt
    if pre is None:
        return dec
    if dec is None:
        return pre
    return (*pre[0], *dec[0]), (*pre[1], *dec[1])


def joint_part(dense: dict[int, Option], moe: dict[int, Option], pairs: dict[tuple[int, int], Option],
               excluded: frozenset[tuple[int, int]] = frozenset()) -> Part | None:
    """Dense and MoE as one group: every pair of their options (but the `excluded` (dense, moe) pairs), with the
    pair's correction where it has one, as a Part (None when no pair is left): dense + MoE, then the
    correction, coordinate by coordinate, without making Shares."""
    if not dense or not moe:
        return None
    pre, dec = next(iter(dense.values()))
    n_pre = len(pre.gpu_s) if pre is not None else 0
    flat_moe = [(jm, *_flat(m)) for jm, m in moe.items()]
    vectors, launches = [], []
    for jd, d in dense.items():
        dg, dl = _flat(d)
        for jm, mg, ml in flat_moe:
            pk = (jd, jm)
            if excluded and pk in excluded:
                continue
            if len(dg) == 2:  # one stage of each step (no PP), spelled out: most pairs
                g, k = (dg[0] + mg[0], dg[1] + mg[1]), (dl[0] + ml[0], dl[1] + ml[1])
            else:
                g, k = tuple(map(_add, dg, mg)), tuple(map(_add, dl, ml))
            corr = pairs.get(pk)
            if corr is not None:
                g, k = _corrected(g, k, corr, n_pre)
            vectors.append(g)
            launches.append(k)
    if not vectors:
        return None
    low = tuple(map(min, zip(*launches)))
    return Part(vectors, low[:n_pre], low[n_pre:], n_pre, pre is not None, dec is not None)


def _corrected(g: tuple[float, ...], k: tuple[float, ...], corr: Option, n_pre: int
               ) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """A pair's flat (GPU, launch) seconds plus its correction's, on the steps the correction has."""
    c_pre, c_dec = corr
    if c_pre is not None and c_dec is not None:
        return tuple(map(_add, g, (*c_pre[0], *c_dec[0]))), tuple(map(_add, k, (*c_pre[1], *c_dec[1])))
    if c_pre is not None:
        return (*map(_add, g[:n_pre], c_pre[0]), *g[n_pre:]), (*map(_add, k[:n_pre], c_pre[1]), *k[n_pre:])
    if c_dec is not None:
        return (*g[:n_pre], *map(_add, g[n_pre:], c_dec[0])), (*k[:n_pre], *map(_add, k[n_pre:], c_dec[1]))
    return g, k


__all__ = ["relaxed_minimum", "pareto_sums", "sums_of_parts", "option_part", "joint_part", "Part", "combined", "corner_figure", "minimum", "minimum_unless_below", "Sums", "nondominated", "MAX_SUMS"]
