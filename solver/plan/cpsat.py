"""The CP-SAT model: one Boolean per group choice, the constraint families as small named functions, and
integer-scaled sums of the cost tables as objectives.

The two objectives are request latency L = TTFT + (OSL-1) x TPOT and inverse throughput per rank
I = L x W / (B x OSL) (seconds per output token per rank; decode-only and prefill-only deployments use
OSL x TPOT and the prefill time, see Scenario.latency_terms). For a fixed concurrency B, I is proportional to L,
so both are minimised by the same configuration: the Pareto front is exactly the non-dominated set of the
per-concurrency latency optima. One small model per B (no batch x choice products) keeps solves fast.
Ties in latency are broken towards smaller parallel degrees (fewer, simpler groups), exactly, by a
lexicographic weight.
"""
from __future__ import annotations

import bisect
import heapq
import math
from typing import Callable

from solver.errors import InternalError
from solver.estimate.figures import Figures, figures
from solver.memo import IdentityMemo
from solver.ortools_cp import cp_model  # OR-Tools' cp_model without its eager pandas import
from solver.plan.bound import (Sums, combined, corner_figure, joint_pairs, minimum_unless_below,
                               pareto_sums)
from solver.plan.floor import FLOOR_GROUPS, JOINT, AttentionFloors, GroupFloors
from solver.plan.group_cost import Share
from solver.plan.points import (CutStop, Point, SolverParams, SolveStatus, picks_simplicity, choice_simplicity,
                                 attention_family, pareto, pattern_key)
from solver.plan.rule_tables import rule_tables, static_rule_tables
from solver.plan.view_model import (MAX_STEP_S, TIE_WEIGHT, TIME_SCALE, ViewModel, build_view, exact, memory_cap,
                                    memory_coef)
from solver.plan.tables import FILL_ORDER, GROUPS, Tables, ViewCosts
from solver.specs.framework import FrameworkProfile
from solver.specs.hardware import Hardware
from solver.specs.model import ModelSpec
from solver.specs.scenario import Scenario

LEVEL_PRECISION = 1e-4  # relative precision of a level-curve corner


class Planner:
    """Exact per-concurrency optima of the full serving figures, and the Pareto front over concurrencies.

    At concurrency B a configuration's request latency L is F_v(Pe, Te): v its attention layout (which fixes
    the serving transform, tables.ViewCosts), Pe and Te its prefill and decode steps as the engine runs them,
    both sums over group choices (max over stages under PP), and F_v non-decreasing in each
    (estimate.figures). So the best configuration of a layout lies on the Pareto set of (Pe, Te) within it,
    and CP-SAT finds it by a dominance search: minimise a linear surrogate, evaluate F_v exactly at the
    answer, cut off every point it dominates (they cannot do better, nor meet an SLA it misses) and every point
    whose Pe or Te alone already reaches the incumbent's L (F_v at the layout's lower bound of the other), and
    repeat until no point is left. Layouts are visited in the order of a lower bound on their L (F_v of the
    per-group minima) and skipped once the bound reaches the incumbent: branch and bound over layouts, CP-SAT
    inside each. The answer is the exact minimum of the figure shown, up to the integer resolution of the
    step times (`slack` x 0.1 us). docs/planner.md has the argument; tests/test_planner_exact.py checks it
    against exhaustive enumeration of the full estimate."""

    use_floors = True  # plan.floor: a layout dropped on floors before MoE is costed, or before its complete view
    use_attention_floors = True  # plan.floor.AttentionFloors: a layout's attention costed at b only when it comes first

    def __init__(self, t: Tables, model: ModelSpec, hw: Hardware, fw: FrameworkProfile, scenario: Scenario,
                 params: SolverParams | None = None):
        self.t, self.model, self.hw, self.fw, self.scenario = t, model, hw, fw, scenario
        self.params = params or SolverParams()
        self._models: dict[tuple[int, tuple], ViewModel] = {}
        self.verify: Callable[[Point], bool] | None = None
        self.max_cuts = 12  # answers the full estimate may reject per question before the search stops there
        self.max_rounds = 400  # dominance-search rounds per layout (a bound, never reached on the test suite)
        self._static = static_rule_tables(t, model, hw, fw, scenario)
        self._rules: dict[int, list] = {}
        self.timeouts: dict[tuple[int, frozenset[str]], SolveStatus] = {}
        self.cut_stops: list[CutStop] = []
        self._front: list[Point] | None = None
        self._classes: dict[tuple[int, float], Point] = {}
        self._front_log: tuple[dict, list] = ({}, [])
        self.solves = 0  # CP-SAT calls made (benchmarks report it)
        self._answers: dict[tuple, dict[str, int]] = {}  # answers so far: seeds for the next questions
        self._layouts = t.layouts()
        self._screens: dict[tuple[int, tuple], dict[str, set[int]] | None] = {}
        self._screen_rest: dict[tuple[int, int], dict[str, tuple[list[int], list[int]]]] = {}  # sorted values, choices
        self._screen_sets: dict[tuple, frozenset[int]] = {}  # (b, stages, group, kept count) -> the kept choices
        self._bound_memo: dict[tuple, tuple] = {}
        self._sums_memo = IdentityMemo(200_000)  # Planner._sums
        self._floors = GroupFloors(t)  # the groups' tables seen so far, as floors for other layouts
        self.floor_drops = 0  # layouts dropped on floors, before costing a group (benchmarks report it)
        self._attn_floors = AttentionFloors(t)  # the attention tables seen so far, as floors at other concurrencies
        self._attn_views: dict[tuple[int, tuple], ViewCosts] = {}  # (b, layout) -> its view, attention costed
        self._attn_floor_memo: dict[tuple, float] = {}
        self._visited: dict[tuple, int] = {}  # layout -> the last concurrency whose search visited it
        self._previous = dict(zip(t.batches[1:], t.batches))  # concurrency -> the one before it

    def rules(self, b: int) -> list:
        if b not in self._rules:
            self._rules[b] = rule_tables(self.t, self.model, self.hw, self.fw, self.scenario, b, self._static)
        return self._rules[b]

    def cached_models(self) -> dict[tuple[int, tuple], ViewModel]:
        """The per-(concurrency, layout) models built so far (each built once, then only copied)."""
        return dict(self._models)

    def view_model(self, b: int, key: tuple) -> ViewModel:
        if (b, key) not in self._models:
            self._models[(b, key)] = build_view(self.t, self.model, self.hw, self.fw, self.scenario, b, key,
                                                self.rules(b))
        return self._models[(b, key)]

    def _solver(self) -> cp_model.CpSolver:
        s = cp_model.CpSolver()
        s.parameters.num_workers = self.params.workers
        s.parameters.random_seed = self.params.seed
        s.parameters.max_time_in_seconds = self.params.time_limit_s
        # these models are small (a few hundred Booleans): probing and symmetry detection cost more than the
        # search. Presolve is off: with it, OR-Tools 9.15 returned OPTIMAL for a worse front than the
        # exhaustive enumerator on 6 of the 30 verified deployments while the families were on through
        # assumptions (tests/test_planner.py); the search alone proves the optimum.
        s.parameters.cp_model_probing_level = 0
        s.parameters.symmetry_level = 0
        s.parameters.cp_model_presolve = False
        return s

    # -------------------------------------------------------------------------------------- exact figures

    def latency_of(self, b: int, picks: dict[str, int]) -> tuple[float, Figures]:
        fig = self.t.figures(b, picks)
        return self.scenario.request_latency(fig.ttft_s, fig.tpot_s), fig

    def meets_sla(self, fig: Figures, relaxed: frozenset[str]) -> bool:
        """The SLAs (TTFT, TPOT bounds not relaxed) on the exact figures."""
        return not self.scenario.sla_misses(fig.ttft_s, fig.tpot_s, relaxed)

    def point(self, b: int, picks: dict[str, int], lat_s: float, fig: Figures) -> Point:
        """A configuration at concurrency b as the front holds it, from its exact figures."""
        inv = self.t.world / max(fig.output_tokens_per_s, 1e-300)
        served = self.t.step_plan_of(b, self.t.layout_key(self.t.choices["attn"][picks["attn"]])).served
        return Point(tuple(sorted(picks.items(), key=lambda kv: list(GROUPS).index(kv[0]))), b,
                     exact(lat_s * TIME_SCALE, "a latency"), inv * TIME_SCALE,
                     picks_simplicity(self.t, picks), served)

    def _fig(self, vc, pe_s: float, te_s: float) -> Figures:
        """The figures of layout vc at step times (as the engine runs them, less per-sequence costs)."""
        # a bound with nothing tabled yet can be 0 s: a picosecond floor keeps the figures defined, and below
        # any step the tables hold
        return figures(vc.plan, self.t.f, max(pe_s, 1e-12), 0.0, max(te_s, 1e-12), 0.0)

    def _lf(self, vc, pe_s: float, te_s: float) -> float:
        """L of layout vc at step times pe_s, te_s."""
        fig = self._fig(vc, pe_s, te_s)
        return self.scenario.request_latency(fig.ttft_s, fig.tpot_s)

    def _excluded_pairs(self, key: tuple, exclude_patterns) -> frozenset[tuple[int, int]]:
        """The (dense, moe) choice pairs that make an excluded pattern beside layout `key`."""
        pats = {(pk[1], pk[2]) for pk in exclude_patterns if pk[0] == key[:4]}
        if not pats:
            return frozenset()
        dense, moe = self.t.choices["dense"], self.t.choices["moe"]
        return frozenset((jd, jm) for jd, cd in enumerate(dense) for jm, cm in enumerate(moe)
                         if cd[-1] == key[4] and cm[-1] == key[4] and (cd, cm) in pats)

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
        meets it (TTFT can fall a little as the decode step grows, so its SLA is left to the search). Memoised:
        a layout's bound at one fill state is asked again by every question at its concurrency. `at_least`: the
        caller only needs to know whether the bound reaches it (the incumbent's L), so a lower value that
        already reaches it (plan.bound.corner_figure), or a sum's figure below it, may be returned instead of the
        minimum (and is not memoised)."""
        tpot_cap = self.scenario.tpot_ms if "SLA.tpot" not in relaxed else None
        memo = (id(vc), attention_only, tuple(vc.other), vc.complete, screen is not None, excluded, tpot_cap)
        hit = self._bound_memo.get(memo)
        if hit is not None and hit[0] is vc:
            return hit[1]
        *out, exact = self._bound_of(vc, attention_only, screen, excluded, tpot_cap, at_least)
        out = tuple(out)
        if exact:  # the minimum itself (a corners' figure answers only this question's comparison)
            self._bound_memo[memo] = (vc, out)
        return out

    def _bound_of(self, vc, attention_only: bool, screen: dict[str, set[int]] | None,
                  excluded: frozenset[tuple[int, int]], tpot_cap_ms: float | None, at_least: float | None = None
                  ) -> tuple[float, float, float, bool]:
        def keep(g: str, opts: dict) -> dict:
            return opts if screen is None else {j: sh for j, sh in opts.items() if j in screen[g]}

        attn = keep("attn", vc.attn)
        other = {g: keep(g, opts) for g, opts in vc.other.items()}

        def low(idx: int):
            parts = [[sh[idx] for sh in attn.values()]]
            if not attention_only:
                parts += [[sh[idx] for sh in opts.values()] for opts in other.values()]
            return parts

        def low_share(idx: int, pipe):
            if pipe is None:
                return None
            gpu = [0.0] * pipe.stages
            launch = [0.0] * pipe.stages
            for part in low(idx):
                shs = [sh for sh in part if sh is not None]
                if not shs:
                    continue
                for s in range(pipe.stages):
                    gpu[s] += min(sh.gpu_s[s] for sh in shs)
                    launch[s] += min(sh.launch_s[s] for sh in shs)
            if not attention_only and vc.pairs:  # pairwise corrections lower the sum: the most negative one
                corr = [c[idx] for c in vc.pairs.values() if c[idx] is not None]
                for s in range(pipe.stages):
                    gpu[s] += min(0.0, min(c.gpu_s[s] for c in corr))
                    launch[s] += min(0.0, min(c.launch_s[s] for c in corr))
            return Share(tuple(gpu), tuple(launch))

        # the per-step bounds feed the search's surrogate, which only a complete view's solve reads
        pe = te = math.nan
        if vc.complete and not attention_only:
            pe, te = vc.step_times(low_share(0, vc.pre_pipe), low_share(1, vc.dec_pipe), self.t.f)
        # L itself: the exact minimum over the groups' sums with memory and rules set aside (plan.bound), at
        # least F at the per-step minima (pe, te), often well above it
        latency = self._latency_fn(vc, tpot_cap_ms)

        # the groups' Pareto sums: the attention choices' per view, the other groups' per tables they read (one
        # table serves every layout and concurrency costed alike: Tables._group_tables), so those are summed once
        sums = self._sums(("attn",), (vc.attn,), (attn,), frozenset())
        if not attention_only:
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
                sums = rest if sums is None else combined(sums, rest)
        if sums is None:
            return latency(None, None), pe, te, True
        value, exact = minimum_unless_below(sums, latency, at_least)
        return value, pe, te, exact

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
        attn = vc.attn if screen is None else {i: sh for i, sh in vc.attn.items() if i in screen["attn"]}
        a = self._sums(("attn",), (vc.attn,), (attn,), frozenset())
        if a is None:
            return False
        rest = Sums((tuple(low[0] + low[2]),), tuple(low[1]), tuple(low[3]), a.n_pre, a.has_pre, a.has_dec)
        tpot_cap = self.scenario.tpot_ms if "SLA.tpot" not in relaxed else None
        lb = corner_figure(a, rest, self._latency_fn(vc, tpot_cap))
        if lb >= inc[0] or not math.isfinite(lb):
            self.floor_drops += 1
            return True
        return False

    def _latency_fn(self, vc, tpot_cap_ms: float | None) -> Callable[[Share | None, Share | None], float]:
        """L of layout vc at summed shares (infinite where the decode step misses the TPOT SLA)."""
        f = self.t.f

        def latency(pre, dec) -> float:
            fig = self._fig(vc, *vc.step_times(pre, dec, f))
            if tpot_cap_ms is not None and self.scenario.sla_misses(0.0, fig.tpot_s, frozenset({"SLA.ttft"})):
                return math.inf
            return self.scenario.request_latency(fig.ttft_s, fig.tpot_s)

        return latency

    def _sums(self, names: tuple[str, ...], tables: tuple, kept: tuple[dict, ...],
              excluded: frozenset[tuple[int, int]]) -> Sums | None:
        """pareto_sums of these groups (the kept options of each; "dense x moe": the joint pairs of the kept
        dense and MoE options, but the `excluded`), None when none has an option; memoised per tables and
        kept choices."""
        def build() -> Sums | None:
            groups = []
            for name, opts in zip(names, kept):
                if name == "dense x moe":
                    groups.append(joint_pairs(opts[0], opts[1], tables[names.index(name)][2], excluded))
                else:
                    groups.append(list(opts.values()))
            groups = [g for g in groups if g]
            return pareto_sums(groups) if groups else None

        objs = tuple(x for t in tables for x in (t if isinstance(t, tuple) else (t,)))
        which = tuple(tuple(o) for opts in kept for o in (opts if isinstance(opts, tuple) else (opts,)))
        return self._sums_memo.get(objs, (names, which, excluded), build)

    def _cut_at(self, vc, best_l: float, other_lo: float, prefill: bool, rel: float = 2e-2) -> float:
        """The smallest step time (seconds) at which L reaches best_l with the other step at its bound."""
        f = (lambda v: self._lf(vc, v, other_lo)) if prefill else (lambda v: self._lf(vc, other_lo, v))
        lo, hi = 0.0, 1.0
        while f(hi) < best_l:
            hi *= 2
            if hi > MAX_STEP_S:
                return math.inf
        while hi - lo > rel * hi + 0.5 / TIME_SCALE:  # f(hi) >= best_l throughout: any precision is a valid cut
            mid = (lo + hi) / 2
            if f(mid) < best_l:
                lo = mid
            else:
                hi = mid
        return hi

    # ------------------------------------------------------------------------------------------ the search

    def served(self, b: int) -> list[float]:
        """The distinct sequences-in-flight of the layouts at concurrency b (StepPlan.served): in serving just
        b; a prefill or decode batch smaller than the replicas still keeps each replica busy with one."""
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
        tpot_cap = self.scenario.tpot_ms if "SLA.tpot" not in relaxed else None
        memo = (b, key, screen is None, tpot_cap)
        lb = self._attn_floor_memo.get(memo)
        if lb is None:
            lb = self._attention_floor(b, key, screen, tpot_cap)
            if lb is None:
                return self._attention_bound(b, key, screen, relaxed), True
            self._attn_floor_memo[memo] = lb
        return lb, False

    def _attention_floor(self, b: int, key: tuple, screen: dict[str, set[int]] | None,
                         tpot_cap_ms: float | None) -> float | None:
        """A floor of layout `key`'s attention-only bound at b: L with b's step plan at the per-coordinate minimum
        of the kept choices' shares in the layout's attention table costed at a concurrency whose works' reads
        are all at most b's (plan.floor.AttentionFloors: each share there is at most its share at b), launch
        seconds at their smallest. Every sum the bound ranges over is at least that corner, and L at b is
        non-decreasing in the summed shares. None when no such table was costed."""
        sp = self.t.step_plan_of(b, key)
        attn = self._attn_floors.table(key, sp)
        if attn is None:
            return None
        kept = attn if screen is None else {i: sh for i, sh in attn.items() if i in screen["attn"]}
        a = self._sums(("attn",), (attn,), (kept,), frozenset())
        if a is None:
            return None
        return self._latency_fn(ViewCosts(sp, *self.t.pipelines(b, key), attn), tpot_cap_ms)(*a.shares(a.corner))

    def best(self, b: int, exclude_patterns: list[tuple] = (), relaxed: frozenset[str] = frozenset(),
             exclude_families: frozenset[str] = frozenset(), served: float | None = None) -> Point | None:
        """Lowest-latency configuration at concurrency b (exactly, by the full figures), avoiding the given
        patterns and attention families; `served`: among the layouts that keep that many sequences in flight
        only. The SLAs and the full estimate's memory check (`verify`) are checked on the exact figures; an
        answer they reject is cut off with every point it dominates."""
        queue = []
        screens = {}
        for key, idx in self._layouts.items():
            if all(attention_family(self.t.choices["attn"][i]) in exclude_families for i in idx):
                continue
            screen = None if "B.memory_per_rank" in relaxed else self._memory_screen(b, key)
            if screen is None and "B.memory_per_rank" not in relaxed:
                continue  # nothing of this layout fits: it cannot be on the front
            if served is not None and self.t.step_plan_of(b, key).served != served:
                continue
            screens[key] = screen
            lb, is_exact = self._first_bound(b, key, screen, relaxed)
            if math.isfinite(lb):  # infinite: no configuration of the layout meets the TPOT SLA
                queue.append((lb, key, is_exact))
        # the layouts in the order of (attention-only bound, layout), lazily: an entry is that bound or a floor
        # of it (_first_bound), and a floor is replaced by the bound when it comes first; the keys are unique,
        # so the bounds come out in the sorted order, and a floor reaching the incumbent ends it as its bound would
        heapq.heapify(queue)
        state = {"best": self._seed(b, exclude_patterns, relaxed, exclude_families, served), "rejected": 0}
        while queue:
            lb, key, is_exact = heapq.heappop(queue)
            inc = state["best"]
            if inc is not None and lb >= inc[0]:
                break
            if not is_exact:
                lb = self._attention_bound(b, key, screens[key], relaxed)
                if math.isfinite(lb):
                    heapq.heappush(queue, (lb, key, True))
                continue
            self._visited[key] = b
            vc = self.t.view(b, key, full=False)
            if self._floor_drops(vc, key, screens[key], relaxed, inc):
                continue
            # the first group of tables.FILL_ORDER (MoE) is costed and bounded alone: on generic W=128 that bound
            # drops 1,495 of 2,056 layouts, bounds after the LM head and the embedding 21 of 1,100 (their shares are
            # small), while the complete view's drops 577 of 607 (dense x MoE)
            self.t.fill_group(vc, key, FILL_ORDER[0])
            self._floors.note(vc, key)
            lb1 = self._bound(vc, attention_only=False, screen=screens[key], relaxed=relaxed,
                              at_least=inc[0] if inc is not None else None)[0]
            if (inc is not None and lb1 >= inc[0]) or not math.isfinite(lb1):
                continue
            if self._floor_drops(vc, key, screens[key], relaxed, inc, before_view=True):
                continue
            vc = self.t.view(b, key)
            self._floors.note(vc, key)
            lb2, pe_lo, te_lo = self._bound(vc, attention_only=False, screen=screens[key],
                                            excluded=self._excluded_pairs(key, exclude_patterns), relaxed=relaxed,
                                            at_least=inc[0] if inc is not None else None)
            if (inc is not None and lb2 >= inc[0]) or not math.isfinite(lb2):
                continue
            if not self._solve_view(b, key, vc, pe_lo, te_lo, exclude_patterns, relaxed, exclude_families, state):
                break  # the time limit: the incumbent stands, reported through self.timeouts
        if state["rejected"] > self.max_cuts:
            asked = ("another attention backbone" if exclude_families else
                     "another pattern" if exclude_patterns else "the front")
            self.cut_stops.append(CutStop(b, state["rejected"], asked))
        if state["best"] is not None:
            self._answers[state["best"][2].key()] = dict(state["best"][2].picks)
            return state["best"][2]
        return None

    def _seed(self, b: int, exclude_patterns, relaxed: frozenset[str], exclude_families, served) -> tuple | None:
        """A first incumbent: the answers found at other concurrencies, scored here, if one is admissible (the
        exclusions, then `admissible`). It only lets the bounds skip layouts sooner; the search still proves the
        optimum."""
        best = None
        for picks in list(self._answers.values())[-1:]:
            a = self.t.choices["attn"][picks["attn"]]
            if attention_family(a) in exclude_families or pattern_key(self.t, picks) in exclude_patterns:
                continue
            hit = self.admissible(b, picks, relaxed, served)
            if hit is not None and (best is None or (hit[1].latency, hit[1].simplicity) < (best[2].latency, best[1])):
                best = (hit[0], hit[1].simplicity, hit[1])
        return best

    def admissible(self, b: int, picks: dict[str, int], relaxed: frozenset[str] = frozenset(),
                   served: float | None = None) -> tuple[float, Point] | None:
        """(request latency s, the point) of these choices at concurrency b as the front would hold it, or None
        where the search would not accept them: a choice the layout does not take beside it, another number of
        sequences in flight than `served`, then each family not `relaxed` (the memory cap, the framework's
        rules, the SLAs) and, with none relaxed, the full estimate's check (verify)."""
        vc = self.t.view(b, self.t.layout_key(self.t.choices["attn"][picks["attn"]]))
        if served is not None and vc.plan.served != served:
            return None
        if any(g != "attn" and j not in vc.other[g] for g, j in picks.items()):
            return None
        if "B.memory_per_rank" not in relaxed and not self.t.fits(b, picks):
            return None
        cfg = self.t.config(picks)
        if any(rid not in relaxed and tuple(cfg[k] for k in knobs) not in {tuple(x) for x in allowed}
               for rid, knobs, allowed in self.rules(b)):
            return None
        lat_s, fig = self.latency_of(b, picks)
        if not self.meets_sla(fig, relaxed):
            return None
        point = self.point(b, picks, lat_s, fig)
        if self.verify is not None and not relaxed and not self.verify(point):
            return None
        return lat_s, point

    def _solve_view(self, b, key, vc, pe_lo, te_lo, exclude_patterns, relaxed, exclude_families, state) -> bool:
        vm = self.view_model(b, key)
        work = vm.model.clone()
        lits = [lit for name, lit in vm.families.items() if name not in relaxed]
        banned = [vm.x["attn"][i] for i in vm.x["attn"] if attention_family(self.t.choices["attn"][i]) in exclude_families]
        if banned:
            lit = work.new_bool_var("not_family")
            work.add_bool_and([v.negated() for v in banned]).only_enforce_if(lit)
            lits.append(lit)
        for pk in exclude_patterns:
            same = [vm.x["attn"][i] for i in vm.x["attn"] if self.t.choices["attn"][i][:4] == pk[0]]
            dense = [vm.x["dense"][j] for j in vm.x["dense"] if self.t.choices["dense"][j] == pk[1]]
            moe = [vm.x["moe"][j] for j in vm.x["moe"] if self.t.choices["moe"][j] == pk[2]]
            if same and (dense or not self.t.choices["dense"]) and (moe or not self.t.choices["moe"]):
                lit = work.new_bool_var("not_pattern")
                parts = [_any(work, v) for v in (same, dense, moe) if v]
                work.add_bool_or([v.negated() for v in parts]).only_enforce_if(lit)
                lits.append(lit)
        if lits:
            work.add_assumptions(lits)
        # the surrogate: L's slopes at the layout's lower bound, as small integers
        eps = 1e-6
        l0 = self._lf(vc, pe_lo, te_lo)
        a = (self._lf(vc, pe_lo + eps, te_lo) - l0) / eps if vm.pe is not None else 0.0
        c = (self._lf(vc, pe_lo, te_lo + eps) - l0) / eps if vm.te is not None else 0.0
        top = max(a, c, 1e-12)
        wa, wc = (max(1, round(1000 * a / top)) if vm.pe is not None else 0,
                  max(1, round(1000 * c / top)) if vm.te is not None else 0)
        simple = sum(choice_simplicity(self.t, g, i) * xv for g, bools in vm.x.items() for i, xv in bools.items())
        obj = TIE_WEIGHT * ((wa * vm.pe if vm.pe is not None else 0) + (wc * vm.te if vm.te is not None else 0))
        work.minimize(obj + simple)
        cut_for = None
        for _ in range(self.max_rounds):
            inc = state["best"]
            if inc is not None and cut_for != inc[0]:
                cut_for = inc[0]
                # points whose one step alone already reaches the incumbent's L cannot beat it
                for var, lo_other, is_pre in ((vm.pe, te_lo, True), (vm.te, pe_lo, False)):
                    if var is None:
                        continue
                    cut = self._cut_at(vc, inc[0], lo_other, is_pre)
                    if math.isfinite(cut):
                        work.add(var <= math.ceil(cut * TIME_SCALE) + vm.slack)
            s = self._solver()
            self.solves += 1
            status = s.solve(work)
            if status == cp_model.MODEL_INVALID:
                raise InternalError(f"CP-SAT rejected the model at concurrency {b}: {work.validate()[:200]}")
            if status == cp_model.UNKNOWN:
                self.timeouts[(b, frozenset(relaxed))] = SolveStatus(b, False, None)
                return False
            if status == cp_model.FEASIBLE:
                obj_v, bound = s.objective_value, s.best_objective_bound
                self.timeouts[(b, frozenset(relaxed))] = SolveStatus(b, True, (obj_v - bound) / max(abs(obj_v), 1.0))
            if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
                return True  # INFEASIBLE: nothing left in this layout
            picks = {g: next(i for i, v in bools.items() if s.value(v)) for g, bools in vm.x.items() if bools}
            lat_s, fig = self.latency_of(b, picks)
            point = self.point(b, picks, lat_s, fig)
            sla_missed = self.scenario.sla_misses(fig.ttft_s, fig.tpot_s, relaxed)
            sla_ok = not sla_missed
            verified = True
            improves = inc is None or (point.latency, point.simplicity) < (inc[2].latency, inc[1])
            # the full estimate's check is asked of an answer that would become the incumbent only (a worse
            # one is cut off by dominance either way)
            if sla_ok and improves and self.verify is not None and not relaxed:
                verified = self.verify(point)
                if not verified:
                    state["rejected"] += 1
                    if state["rejected"] > self.max_cuts:
                        return False
            if sla_ok and verified and improves:
                state["best"] = (lat_s, point.simplicity, point)
            if not verified or sla_missed == ["SLA.ttft"]:
                # the full estimate's memory check rejects this configuration, not its figures; or it misses
                # the TTFT bound only, and TTFT can fall a little as the decode step grows (a slower decode
                # lowers the request rate and the prefill queue: estimate/serving.py): cut it alone
                work.add_bool_or([vm.x[g][i].negated() for g, i in picks.items()])
                continue
            # every point this one dominates in (Pe, Te) has an L and a TPOT at least as large; one that
            # does not beat the incumbent also lets the cut start where L reaches the incumbent's on the segment
            # from the layout's lower bound to it, which cuts off more (L is non-decreasing in both steps)
            # The integer step times are within the slack of the exact ones, so the cut starts `slack` above this
            # point's: what it removes is no faster in exact terms either; this point itself, and the few within
            # the slack, are cut one by one
            at = {var: s.value(var) + vm.slack for var in (vm.pe, vm.te) if var is not None}
            inc = state["best"]
            if inc is not None and inc[2] is not point and lat_s >= inc[0]:
                at = self._shrink(vc, vm, at, pe_lo, te_lo, inc[0])
                if vm.pe is not None and vm.te is not None:
                    self._level_corners(work, vc, vm, s.value(vm.pe), s.value(vm.te), inc[0])
            conds = []
            for var, v in at.items():
                lit = work.new_bool_var("below")
                work.add(var <= v - 1).only_enforce_if(lit)
                conds.append(lit)
            if not conds:
                return True
            work.add_bool_or(conds)
            work.add_bool_or([vm.x[g][i].negated() for g, i in picks.items()])
        return True

    def level_corners(self, vc, best_l: float, pe_s: float, te_s: float) -> list[tuple[float, float]]:
        """Two corners on the level curve L = best_l (seconds, to LEVEL_PRECISION): at prefill step pe_s, the
        decode step where L reaches best_l, and at decode step te_s, the prefill step where it does. L is
        non-decreasing in both steps, so every point dominating a corner has L >= best_l."""
        out = [(pe_s, self._cut_at(vc, best_l, pe_s, False, LEVEL_PRECISION)),
               (self._cut_at(vc, best_l, te_s, True, LEVEL_PRECISION), te_s)]
        return [(p, t) for p, t in out if math.isfinite(p) and math.isfinite(t) and p >= 0 and t >= 0]

    def _level_corners(self, work: cp_model.CpModel, vc, vm: ViewModel, pe_int: int, te_int: int,
                       best_l: float) -> None:
        """Cut the points dominating the level corners through a point that does not beat the incumbent (its
        steps less the integer slack): the shrunk corner alone cut about one point per round, since many lie
        just above the level curve (configurations that differ in a small group's choice)."""
        for pe_k, te_k in self.level_corners(vc, best_l, (pe_int - vm.slack) / TIME_SCALE,
                                             (te_int - vm.slack) / TIME_SCALE):
            below_pe, below_te = work.new_bool_var("level_pe"), work.new_bool_var("level_te")
            work.add(vm.pe <= math.ceil(pe_k * TIME_SCALE) + vm.slack - 1).only_enforce_if(below_pe)
            work.add(vm.te <= math.ceil(te_k * TIME_SCALE) + vm.slack - 1).only_enforce_if(below_te)
            work.add_bool_or([below_pe, below_te])

    def _shrink(self, vc, vm: ViewModel, at: dict, pe_lo: float, te_lo: float, best_l: float) -> dict:
        """The corner of a cut at the first point of the segment lower bound -> `at` where L reaches best_l:
        every point dominating that corner (with the integer slack) has L >= best_l."""
        pe = at.get(vm.pe, 0) / TIME_SCALE if vm.pe is not None else 0.0
        te = at.get(vm.te, 0) / TIME_SCALE if vm.te is not None else 0.0

        def lf(lam: float) -> float:
            return self._lf(vc, pe_lo + lam * (pe - pe_lo), te_lo + lam * (te - te_lo))

        if lf(1.0) < best_l:
            return at
        lo, hi = 0.0, 1.0
        for _ in range(10):  # lf(hi) >= best_l throughout: any precision is a valid cut
            mid = (lo + hi) / 2
            if lf(mid) < best_l:
                lo = mid
            else:
                hi = mid
        out = {}
        if vm.pe is not None:
            out[vm.pe] = min(at[vm.pe], math.ceil((pe_lo + hi * (pe - pe_lo)) * TIME_SCALE) + vm.slack)
        if vm.te is not None:
            out[vm.te] = min(at[vm.te], math.ceil((te_lo + hi * (te - te_lo)) * TIME_SCALE) + vm.slack)
        return out

    def timed_out(self, relaxed: frozenset[str] = frozenset()) -> list[SolveStatus]:
        """The solves (at these relaxed families) the time limit cut short."""
        return [v for (b, r), v in sorted(self.timeouts.items(), key=lambda kv: kv[0][0]) if r == relaxed]

    def front(self) -> list[Point]:
        """The Pareto front, solved once per planner: a planner reused for another scenario kind (the same
        tables, SLAs and solver parameters: solve.plan's cache) answers from it."""
        if self._front is None:
            # at one concurrency and one number of sequences in flight, inverse throughput is proportional to
            # latency: the front is the non-dominated set of those optima
            self._classes = {(b, q): p for b in self.t.batches for q in self.served(b)
                             for p in [self.best(b, served=q)] if p is not None}
            self._front = pareto(list(self._classes.values()))
            self._front_log = (dict(self.timeouts), list(self.cut_stops))
        return list(self._front)

    def class_optima(self) -> dict[tuple[int, float], Point]:
        """(concurrency, sequences in flight) -> the best configuration of that class (the front's inputs)."""
        self.front()
        return dict(self._classes)

    def reset_log(self) -> None:
        """Forget what questions after the front recorded (time-outs, cut stops), keeping the front's own: a
        new plan reusing this planner reports only its own solves and the front's."""
        self.timeouts, self.cut_stops = dict(self._front_log[0]), list(self._front_log[1])

    def families(self, b: int) -> list[str]:
        """The constraint families at concurrency b: memory, the framework's rules that bind anything, SLAs."""
        out = ["B.memory_per_rank"] + [r[0] for r in self.rules(b)]
        out += [n for n, v in (("SLA.ttft", self.scenario.ttft_ms), ("SLA.tpot", self.scenario.tpot_ms))
                if v is not None]
        return out


def _any(m: cp_model.CpModel, lits: list) -> cp_model.IntVar:
    """A literal true iff one of `lits` (members of an exactly-one group) is true."""
    v = m.new_bool_var("any")
    m.add(sum(lits) == v)
    return v
