"""The planner's lower bounds on a layout's request latency L, and the memory screen before them.

A layout's configurations are one option per group, and with the memory cap and the rules set aside L is F_v of
the summed shares, non-decreasing in every per-stage coordinate: so its least L lies on the Pareto set of the
groups' sums (plan.bound), whose minimum bounds the layout's feasible L from below. The memory screen drops the
choices whose memory plus the other groups' smallest exceeds the cap; floors of the tables not yet costed
(plan.floor) bound a layout before its groups are. cpsat.Planner's branch and bound over layouts reads these
(LayoutBounds is one of its bases: the state it reads is set in Planner.__init__).
"""
from __future__ import annotations

import bisect
import math
from typing import Callable

from solver.estimate.figures import ttft_floor
from solver.plan.bound import (Sums, combined, corner_figure, front_of_sums, joint_part, minimum_unless_below,
                               option_part, sums_of_parts)
from solver.plan.floor import FLOOR_GROUPS, JOINT
from solver.plan.group_cost import Share
from solver.plan.groups import GROUPS
from solver.plan.points import choice_simplicity
from solver.plan.tables import ViewCosts
from solver.plan.view_model import memory_cap, memory_coef


def _kept(opts: dict, keep: set[int] | frozenset[int]) -> dict:
    """A group's options that the memory screen keeps."""
    return {j: sh for j, sh in opts.items() if j in keep}


def _low_share(vc, attn: dict, other: dict[str, dict], idx: int, pipe) -> Share | None:
    """Step `idx`'s per-stage sum of every group's smallest kept share, with the most negative pairwise
    correction: no configuration's sum is below it."""
    if pipe is None:
        return None
    gpu = [0.0] * pipe.stages
    launch = [0.0] * pipe.stages
    for part in [[sh[idx] for sh in attn.values()]] + [[sh[idx] for sh in opts.values()] for opts in other.values()]:
        shs = [sh for sh in part if sh is not None]
        if not shs:
            continue
        for s in range(pipe.stages):
            gpu[s] += min(sh.gpu_s[s] for sh in shs)
            launch[s] += min(sh.launch_s[s] for sh in shs)
    if vc.pairs:  # pairwise corrections lower the sum: the most negative one
        corr = [c[idx] for c in vc.pairs.values() if c[idx] is not None]
        for s in range(pipe.stages):
            gpu[s] += min(0.0, min(c.gpu_s[s] for c in corr))
            launch[s] += min(0.0, min(c.launch_s[s] for c in corr))
    return Share(tuple(gpu), tuple(launch))


class LayoutBounds:
    """The Planner's layout bounds: the memory screen, the L lower bound of a layout (from its attention
    choices alone, after MoE, with its complete view), and the floors that stand for a bound before its tables
    are costed. Its memos and the tables live on the planner (Planner.__init__)."""

    use_floors = True  # plan.floor: a layout dropped on floors before MoE is costed, or before its complete view
    use_attention_floors = True  # plan.floor.AttentionFloors: a layout's attention costed at b only when it comes first

    def _memory_screen(self, b: int, key: tuple) -> dict[str, set[int] | frozenset[int]] | None:
        """The choices of each group that can fit beside layout `key` at concurrency b (their memory plus the
        smallest of every other group within the cap: the CP-SAT model's memory constraint, relaxed to one
        group at a time), or None when no configuration of the layout fits. Memoised per (b, layout)."""
        hit = self._screens.get((b, key), False)
        if hit is not False:
            return hit
        t, pp = self.t, key[4]
        # the other groups' coefficients are the same for every layout of this stage count: once per (b, pp),
        # sorted, so a layout's kept choices are a prefix (one set per prefix, shared by the layouts keeping it)
        rest = self._screen_rest.get((b, pp))
        if rest is None:
            rest = {}
            for g in GROUPS:
                if g != "attn":
                    m = sorted((memory_coef(t, b, g, j), j) for j, c in enumerate(t.choices[g]) if c[-1] == pp)
                    rest[g] = ([v for v, _ in m], [j for _, j in m])
            self._screen_rest[(b, pp)] = rest
        attn = [(i, memory_coef(t, b, "attn", i)) for i in self._layouts[key]]
        low_attn = min(v for _, v in attn)  # integers: the sum is exact in any order
        slack = memory_cap(t) - low_attn - sum(vs[0] for vs, _ in rest.values() if vs)
        out = None
        if slack >= 0:
            out = {"attn": {i for i, v in attn if v - low_attn <= slack}}
            for g, (vs, js) in rest.items():
                # v - lo <= slack in integers: the values up to lo + slack
                cut = bisect.bisect_right(vs, vs[0] + slack) if vs else 0
                kept = self._screen_sets.get((b, pp, g, cut))
                if kept is None:
                    kept = self._screen_sets[(b, pp, g, cut)] = frozenset(js[:cut])
                out[g] = kept
        self._screens[(b, key)] = out
        return out

    def _bound(self, vc, attention_only: bool, screen: dict[str, set[int]] | None = None,
               excluded: frozenset[tuple[int, int]] = frozenset(), relaxed: frozenset[str] = frozenset(),
               at_least: float | None = None) -> tuple[float, float, float]:
        """(L lower bound, Pe lower bound, Te lower bound) of a layout, in seconds (Pe and Te NaN unless the
        view is complete and all groups are asked: only that view's solve reads them): per stage, the smallest
        share of every group (0 for the groups not yet tabled), the most negative pairwise correction; L is the
        exact minimum over the groups' sums (plan.bound). `screen`: only these choices (the memory screen);
        `excluded`: (dense, moe) choice pairs that make an excluded pattern with this layout. Under a TPOT
        SLA (not `relaxed`) only sums that meet it count, and a layout none meets has an infinite bound: TPOT is
        non-decreasing in every coordinate too, so a configuration meeting it is dominated by a Pareto sum that
        meets it; under a TTFT SLA likewise through TTFT's floor at the prefill step (TTFT itself can fall a
        little as the decode step grows: the search checks it exactly). Memoised:
        a layout's bound at one fill state is asked again by every question at its concurrency. `at_least`: the
        caller only needs to know whether the bound reaches it (the incumbent's L), so a lower value that
        already reaches it (plan.bound.corner_figure), or a sum's figure below it, may be returned instead of the
        minimum (and is not memoised)."""
        caps = self._caps(relaxed)
        memo = (id(vc), attention_only, tuple(vc.other), vc.complete, screen is not None, excluded, caps)
        hit = self._bound_memo.get(memo)
        if hit is not None and hit[0] is vc:
            return hit[1]
        *out, exact = self._bound_of(vc, attention_only, screen, excluded, caps, at_least)
        out = tuple(out)
        if exact:  # the minimum itself (a corners' figure answers only this question's comparison)
            self._bound_memo[memo] = (vc, out)
        return out

    def _bound_of(self, vc, attention_only: bool, screen: dict[str, set[int]] | None,
                  excluded: frozenset[tuple[int, int]], caps: tuple[float | None, float | None],
                  at_least: float | None = None) -> tuple[float, float, float, bool]:
        # L itself: the exact minimum over the groups' sums with memory and rules set aside (plan.bound), at
        # least F at the per-step minima (pe, te), often well above it
        latency = self._latency_fn(vc, caps)
        # the groups' Pareto sums: the attention choices' per view, the other groups' per tables they read (one
        # table serves every layout and concurrency costed alike: Tables._group_tables), so those are summed once
        sums = self._attn_sums(vc.attn, screen)
        if attention_only:
            if sums is None:
                return latency(None, None), math.nan, math.nan, True
            value, exact = minimum_unless_below(sums, latency, at_least)
            return value, math.nan, math.nan, exact
        other = vc.other if screen is None else {g: _kept(opts, screen[g]) for g, opts in vc.other.items()}
        # the per-step bounds feed the search's surrogate, which only a complete view's solve reads
        pe = te = math.nan
        if vc.complete:
            attn = vc.attn if screen is None else _kept(vc.attn, screen["attn"])
            pe, te = vc.step_times(_low_share(vc, attn, other, 0, vc.pre_pipe),
                                   _low_share(vc, attn, other, 1, vc.dec_pipe), self.t.f)
        names = [g for g in other if g not in ("dense", "moe")] if vc.complete and "dense" in other \
            and "moe" in other else list(other)
        tables, kept = [vc.other[g] for g in names], [other[g] for g in names]
        if len(names) < len(other):
            names.insert(0, "dense x moe")
            tables.insert(0, (vc.other["dense"], vc.other["moe"], vc.pairs))
            kept.insert(0, (other["dense"], other["moe"]))
        rest = self._sums(tuple(names), tuple(tables), tuple(kept), excluded)
        if rest is not None:
            if at_least is not None:  # the corners' figure may already reach it: a bound, and one call
                floor = corner_figure(sums, rest, latency)
                if floor >= at_least:
                    return floor, pe, te, False
                if sums is not None and len(sums.points) == 1 == len(rest.points):  # one sum: the corner itself
                    return floor, pe, te, False
            sums = rest if sums is None else combined(sums, rest)
        if sums is None:
            return latency(None, None), pe, te, True
        value, exact = minimum_unless_below(sums, latency, at_least)
        return value, pe, te, exact

    def _simpler_bound(self, vc, screen: dict[str, set[int]] | None, excluded: frozenset[tuple[int, int]],
                       relaxed: frozenset[str], most: int) -> float:
        """A lower bound on the latency [s] of the layout's configurations (complete view vc) whose simplicity
        (points.picks_simplicity) is at most `most`: the complete bound's minimum (_bound_of) over the Pareto
        sums with the simplicity as one more coordinate, the sums above `most` left out (simplicity adds up over
        the groups, as the GPU seconds do); infinite where none is left."""
        t = self.t
        parts = []
        other = vc.other if screen is None else {g: _kept(opts, screen[g]) for g, opts in vc.other.items()}
        attn = vc.attn if screen is None else _kept(vc.attn, screen["attn"])
        groups = [("attn", attn)] + [(g, opts) for g, opts in other.items()
                                     if not (g in ("dense", "moe") and "dense" in other and "moe" in other)]
        if "dense" in other and "moe" in other:
            part = joint_part(other["dense"], other["moe"], vc.pairs, excluded)
            if part is None:
                return math.inf
            simp = [choice_simplicity(t, "dense", jd) + choice_simplicity(t, "moe", jm)
                    for jd in other["dense"] for jm in other["moe"] if not (excluded and (jd, jm) in excluded)]
            parts.append(part._replace(vectors=[(*v, s) for v, s in zip(part.vectors, simp)]))
        for g, opts in groups:
            if not opts:
                return math.inf
            part = option_part(list(opts.values()))
            parts.append(part._replace(vectors=[(*v, choice_simplicity(t, g, j)) for v, j in zip(part.vectors, opts)]))
        points = front_of_sums([part.vectors for part in parts])  # the simplicity the last coordinate
        launch = [tuple(map(sum, zip(*(getattr(p, f) for p in parts)))) for f in ("launch_pre", "launch_dec")]
        latency = self._latency_fn(vc, self._caps(relaxed))
        n, has_pre, has_dec = parts[0].n_pre, parts[0].has_pre, parts[0].has_dec
        return min((latency(Share(v[:n], launch[0]) if has_pre else None,
                            Share(v[n:-1], launch[1]) if has_dec else None)
                    for v in points if v[-1] <= most), default=math.inf)

    def _floor_drops(self, vc, key: tuple, screen: dict[str, set[int]] | None, relaxed: frozenset[str],
                     inc: tuple | None, before_view: bool = False) -> bool:
        """Whether the layout's bound with its groups not yet costed at their floors (plan.floor: tables
        costed at the same outside and smaller works, each at most this layout's, choice by choice) already
        reaches the incumbent: a bound of a bound, so the layout cannot beat it and needs no costing. Only the
        corners' figure is taken (the sum of each group's per-coordinate minima, plan.bound.corner_figure):
        one figure call, no Pareto sums; a layout it does not drop is costed as before."""
        # `before_view`: MoE is costed, the rest not (the complete view's): dense x MoE enters as JOINT
        groups = (JOINT, "lmhead", "embed") if before_view else FLOOR_GROUPS
        if inc is None or not self.use_floors or not self._floors.on or self._floors.costed(vc, key, groups[0]):
            return False  # a table already costed is a look-up away: its own bound is as cheap and exact
        low = self._floors.corner(vc, key, screen, groups)
        if low is None:
            return False
        a = self._attn_sums(vc.attn, screen)
        if a is None:
            return False
        rest = Sums((tuple(low[0] + low[2]),), tuple(low[1]), tuple(low[3]), a.n_pre, a.has_pre, a.has_dec)
        lb = corner_figure(a, rest, self._latency_fn(vc, self._caps(relaxed)))
        if lb >= inc[0] or not math.isfinite(lb):
            return True
        return False

    def _caps(self, relaxed: frozenset[str]) -> tuple[float | None, float | None]:
        """(TPOT cap, TTFT cap) [ms] the bounds apply: the scenario's SLAs not `relaxed`."""
        return (self.scenario.tpot_ms if "SLA.tpot" not in relaxed else None,
                self.scenario.ttft_ms if "SLA.ttft" not in relaxed else None)

    def _latency_fn(self, vc, caps: tuple[float | None, float | None]
                    ) -> Callable[[Share | None, Share | None], float]:
        """L of layout vc at summed shares, infinite where the decode step misses the TPOT SLA or the prefill
        step alone misses the TTFT SLA (figures.ttft_floor: TTFT is at least that floor at any decode step, and
        the floor is non-decreasing in the prefill step, so a configuration meeting the SLA lies above a sum
        whose floor meets it)."""
        f = self.t.f
        tpot_cap_ms, ttft_cap_ms = caps

        def latency(pre, dec) -> float:
            pe_s, te_s = vc.step_times(pre, dec, f)
            if ttft_cap_ms is not None and self.scenario.sla_misses(
                    ttft_floor(vc.plan, f, max(pe_s, 1e-12)), 0.0, frozenset({"SLA.tpot"})):
                return math.inf
            ttft_s, tpot_s = self._fig(vc, pe_s, te_s)
            if tpot_cap_ms is not None and self.scenario.sla_misses(0.0, tpot_s, frozenset({"SLA.ttft"})):
                return math.inf
            return self.scenario.request_latency(ttft_s, tpot_s)

        return latency

    def _sums(self, names: tuple[str, ...], tables: tuple, kept: tuple[dict, ...],
              excluded: frozenset[tuple[int, int]]) -> Sums | None:
        """pareto_sums of these groups (the kept options of each; "dense x moe": the joint pairs of the kept
        dense and MoE options, but the `excluded`), None when none has an option; memoised per tables and
        kept choices."""
        def build() -> Sums | None:
            parts = []
            for name, opts in zip(names, kept):
                if name == "dense x moe":
                    part = joint_part(opts[0], opts[1], tables[names.index(name)][2], excluded)
                else:
                    part = option_part(list(opts.values())) if opts else None
                if part is not None:
                    parts.append(part)
            return sums_of_parts(parts) if parts else None

        objs = tuple(x for t in tables for x in (t if isinstance(t, tuple) else (t,)))
        which = tuple(tuple(o) for opts in kept for o in (opts if isinstance(opts, tuple) else (opts,)))
        return self._sums_memo.get(objs, (names, which, excluded), build)

    def _attn_sums(self, table: dict, screen: dict[str, set[int]] | None) -> Sums | None:
        """_sums of an attention table alone, over the choices the screen keeps (the same memo entries)."""
        kept = table if screen is None else _kept(table, screen["attn"])
        return self._sums_memo.get((table,), (("attn",), (tuple(kept),), frozenset()),
                                   lambda: sums_of_parts([option_part(list(kept.values()))]) if kept else None)

    def served(self, b: int) -> list[float]:
        """The distinct sequences-in-flight of the layouts at concurrency b (StepPlan.served): in serving and
        prefill just b; a decode batch smaller than the replicas still keeps each replica busy with one."""
        return sorted({self.t.step_plan_of(b, key).served for key in self._layouts
                       if self._memory_screen(b, key) is not None})

    def _attention_view(self, b: int, key: tuple) -> ViewCosts:
        """Layout `key`'s view at b with its attention choices costed, kept as a source of attention floors."""
        vc = self._attn_views.get((b, key))
        if vc is None:
            vc = self._attn_views[(b, key)] = self.t.view(b, key, full=False)
            self._attn_floors.note(key, vc)
        return vc

    def _attention_bound(self, b: int, key: tuple, screen: dict[str, set[int]] | None,
                         relaxed: frozenset[str]) -> float:
        """The L lower bound of layout `key` at b from its attention choices alone (their view costed)."""
        return self._bound(self._attention_view(b, key), attention_only=True, screen=screen, relaxed=relaxed)[0]

    def _first_bound(self, b: int, key: tuple, screen: dict[str, set[int]] | None,
                     relaxed: frozenset[str]) -> tuple[float, bool]:
        """(value, exact): the attention-only bound of layout `key` at b where its view is costed or no floor
        stands for it, else a floor of that bound that costs no share (_attention_floor). A layout the search
        visited at the concurrency before is costed at once: its floor would rarely reach the incumbent (generic
        W=128: 443 of 585 such floors were replaced by the bound, 35 of 737 of the others)."""
        if (b, key) in self._attn_views or not self.use_attention_floors or self._visited.get(key, -1) == \
                self._previous.get(b):
            return self._attention_bound(b, key, screen, relaxed), True
        caps = self._caps(relaxed)
        memo = (b, key, screen is None, caps)
        lb = self._attn_floor_memo.get(memo)
        if lb is None:
            lb = self._attention_floor(b, key, screen, caps)
            if lb is None:
                return self._attention_bound(b, key, screen, relaxed), True
            self._attn_floor_memo[memo] = lb
        return lb, False

    def _attention_floor(self, b: int, key: tuple, screen: dict[str, set[int]] | None,
                         caps: tuple[float | None, float | None]) -> float | None:
        """A floor of layout `key`'s attention-only bound at b: L with b's step plan at the per-coordinate minimum
        of the kept choices' shares in the layout's attention table costed at a concurrency whose works' reads
        are all at most b's (plan.floor.AttentionFloors: each share there is at most its share at b), launch
        seconds at their smallest. Every sum the bound ranges over is at least that corner, and L at b is
        non-decreasing in the summed shares. None when no such table was costed."""
        sp = self.t.step_plan_of(b, key)
        attn = self._attn_floors.table(key, sp)
        if attn is None:
            return None
        a = self._attn_sums(attn, screen)
        if a is None:
            return None
        return self._latency_fn(ViewCosts(sp, *self.t.pipelines(b, key), attn), caps)(*a.shares(a.corner))
