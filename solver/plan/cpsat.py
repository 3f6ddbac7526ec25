"""The CP-SAT planner: per concurrency, the exact latency optimum over the cost tables (one CP-SAT model per
layout, plan.view_model: one Boolean per group choice, the constraint families as small named functions, and
integer-scaled sums of the cost tables as objectives), and the Pareto front over concurrencies.

The two objectives are request latency L = TTFT + (OSL-1) x TPOT and inverse throughput per rank
I = L x W / (B x OSL) (seconds per output token per rank; decode-only and prefill-only deployments use
OSL x TPOT and the prefill time, see Scenario.latency_terms). For a fixed concurrency B, I is proportional to L,
so both are minimised by the same configuration: the Pareto front is exactly the non-dominated set of the
per-concurrency latency optima. One small model per B (no batch x choice products) keeps solves fast.
Ties in latency are broken towards smaller parallel degrees (fewer, simpler groups), exactly, by a
lexicographic weight.

The planner's parts: the layout bounds and memory screen (plan.layout_bounds), the dominance search inside one
layout (plan.dominance), and here the branch and bound over layouts, the front and its bookkeeping.
"""
from __future__ import annotations

import heapq
import math
from collections import Counter
from typing import Callable

from solver.estimate.figures import Figures, ttft_tpot
from solver.memo import IdentityMemo
from solver.plan.dominance import DominanceSearch
from solver.plan.floor import AttentionFloors, GroupFloors
from solver.plan.groups import FILL_ORDER, GROUPS
from solver.plan.layout_bounds import LayoutBounds
from solver.plan.points import (CutStop, Point, SolverParams, SolveStatus, attention_family, pareto, pattern_key,
                                 picks_simplicity)
from solver.plan.rule_tables import rule_tables, static_rule_tables
from solver.plan.view_model import TIME_SCALE, ViewModel, build_view
from solver.plan.tables import Tables, ViewCosts
from solver.specs.framework import FrameworkProfile
from solver.specs.hardware import Hardware
from solver.specs.model import ModelSpec
from solver.specs.scenario import Scenario


class Planner(LayoutBounds, DominanceSearch):
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
    against exhaustive enumeration of the full estimate.

    The bases hold two of the parts: LayoutBounds (plan.layout_bounds) the lower bounds and the memory screen,
    DominanceSearch (plan.dominance) the search inside one layout; the state they read is set here."""

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
        self._asked: dict[tuple, tuple] = {}  # question -> (answer, cut stops, time-outs it logged): best()
        self._layouts = t.layouts()
        self._screens: dict[tuple[int, tuple], dict[str, set[int]] | None] = {}
        self._screen_rest: dict[tuple[int, int], dict[str, tuple[list[int], list[int]]]] = {}  # sorted values, choices
        self._screen_sets: dict[tuple, frozenset[int]] = {}  # (b, stages, group, kept count) -> the kept choices
        self._bound_memo: dict[tuple, tuple] = {}
        self._sums_memo = IdentityMemo(200_000)  # Planner._sums
        self._floors = GroupFloors(t)  # the groups' tables seen so far, as floors for other layouts
        # layouts at each stage of best()'s branch and bound, over every question (benchmarks/plan_funnel.py)
        self.funnel: Counter[str] = Counter()
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
        served = self.t.step_plan_of(b, self.t.key_of(picks)).served
        # a Python integer compared in Python only (no CP-SAT coefficient: those are the step times, bounded by
        # MAX_STEP_S), so a queue of days behind too few slots is a latency to report, not an input out of range
        return Point(tuple(sorted(picks.items(), key=lambda kv: list(GROUPS).index(kv[0]))), b,
                     round(lat_s * TIME_SCALE), inv * TIME_SCALE,
                     picks_simplicity(self.t, picks), served)

    def _fig(self, vc, pe_s: float, te_s: float) -> tuple[float, float]:
        """(TTFT, TPOT) [s] of layout vc at step times (as the engine runs them, less per-sequence costs): the
        figures' two the bounds and the search read (figures.ttft_tpot, the same floats)."""
        # a bound with nothing tabled yet can be 0 s: a picosecond floor keeps the figures defined, and below
        # any step the tables hold
        return ttft_tpot(vc.plan, self.t.f, max(pe_s, 1e-12), 0.0, max(te_s, 1e-12), 0.0)

    def _lf(self, vc, pe_s: float, te_s: float) -> float:
        """L of layout vc at step times pe_s, te_s."""
        return self.scenario.request_latency(*self._fig(vc, pe_s, te_s))

    def _excluded_pairs(self, key: tuple, exclude_patterns) -> frozenset[tuple[int, int]]:
        """The (dense, moe) choice pairs that make an excluded pattern beside layout `key`."""
        pats = {(pk[1], pk[2]) for pk in exclude_patterns if pk[0] == key[:4]}
        if not pats:
            return frozenset()
        dense, moe = self.t.choices["dense"], self.t.choices["moe"]
        return frozenset((jd, jm) for jd, cd in enumerate(dense) for jm, cm in enumerate(moe)
                         if cd[-1] == key[4] and cm[-1] == key[4] and (cd, cm) in pats)

    # ------------------------------------------------------------------------------------------ the search

    def best(self, b: int, exclude_patterns: list[tuple] = (), relaxed: frozenset[str] = frozenset(),
             exclude_families: frozenset[str] = frozenset(), served: float | None = None) -> Point | None:
        """Lowest-latency configuration at concurrency b (exactly, by the full figures), avoiding the given
        patterns and attention families; `served`: among the layouts that keep that many sequences in flight
        only. The SLAs and the full estimate's memory check (`verify`) are checked on the exact figures; an
        answer they reject is cut off with every point it dominates.

        A question asked again gets its first answer, and the time-outs and cut stops it logged: configurations
        tied in latency and simplicity are told apart by the search's order, which the answers before a question
        seed (_seed), so a planner reused by another plan (solve.plan's cache) would otherwise answer a repeated
        question with another of the ties."""
        memo = (b, tuple(exclude_patterns), relaxed, exclude_families, served)
        hit = self._asked.get(memo)
        if hit is None:
            stops, timeouts = len(self.cut_stops), dict(self.timeouts)
            point = self._search(b, exclude_patterns, relaxed, exclude_families, served)
            hit = self._asked[memo] = (point, self.cut_stops[stops:],
                                       {k: v for k, v in self.timeouts.items() if timeouts.get(k) is not v})
        else:
            self.cut_stops += [c for c in hit[1] if c not in self.cut_stops]
            self.timeouts.update(hit[2])
        return hit[0]

    def _search(self, b: int, exclude_patterns, relaxed: frozenset[str], exclude_families: frozenset[str],
                served: float | None) -> Point | None:
        """best()'s branch and bound over layouts, for one question."""
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
        self.funnel["first bounds"] += len(screens)
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
            self.funnel["popped"] += 1
            vc = self.t.view(b, key, full=False)
            if self._floor_drops(vc, key, screens[key], relaxed, inc):
                self.funnel["dropped on floors"] += 1
                continue
            # the first group of groups.FILL_ORDER (MoE) is costed and bounded alone: on generic W=128 that bound
            # drops 1,495 of 2,056 layouts, bounds after the LM head and the embedding 21 of 1,100 (their shares are
            # small), while the complete view's drops 577 of 607 (dense x MoE)
            self.t.fill_group(vc, key, FILL_ORDER[0])
            self._floors.note(vc, key)
            lb1 = self._bound(vc, attention_only=False, screen=screens[key], relaxed=relaxed,
                              at_least=inc[0] if inc is not None else None)[0]
            if (inc is not None and lb1 >= inc[0]) or not math.isfinite(lb1):
                self.funnel["dropped by the MoE bound"] += 1
                continue
            if self._floor_drops(vc, key, screens[key], relaxed, inc, before_view=True):
                self.funnel["dropped on floors after MoE"] += 1
                continue
            vc = self.t.view(b, key)
            self._floors.note(vc, key)
            lb2, pe_lo, te_lo = self._bound(vc, attention_only=False, screen=screens[key],
                                            excluded=self._excluded_pairs(key, exclude_patterns), relaxed=relaxed,
                                            at_least=inc[0] if inc is not None else None)
            if (inc is not None and lb2 >= inc[0]) or not math.isfinite(lb2):
                self.funnel["dropped by the complete bound"] += 1
                continue
            self.funnel["searched"] += 1
            excluded = self._excluded_pairs(key, exclude_patterns)
            if not self._solve_view(b, key, vc, pe_lo, te_lo, exclude_patterns, relaxed, exclude_families, state,
                                    lambda inc: self._settled(vc, screens[key], excluded, relaxed, inc)):
                break  # the time limit: the incumbent stands, reported through self.timeouts
        asked = ("another attention backbone" if exclude_families else
                 "another pattern" if exclude_patterns else "the front")
        if state["rejected"] > self.max_cuts:
            self.cut_stops.append(CutStop(b, state["rejected"], asked))
        if state.get("rounds_out"):
            self.cut_stops.append(CutStop(b, self.max_rounds, asked, "rounds"))
        if state["best"] is not None:
            self._answers[state["best"][2].key()] = dict(state["best"][2].picks)
            return state["best"][2]
        return None

    def _settled(self, vc, screen, excluded: frozenset[tuple[int, int]], relaxed: frozenset[str], inc: tuple
                 ) -> bool:
        """Whether no configuration of the layout (complete view vc, under this question's screen and excluded
        pairs) can replace the incumbent `inc`, which only a lower (rounded latency, simplicity) does: the
        layout's exact complete bound rounds above the incumbent's latency, or to it and its configurations
        simpler than the incumbent's bound (_simpler_bound) round above it. Rounding is monotone, so a bound
        rounding above the latency is above every rounded latency it bounds. Most layout searches find their
        answer in the first solve and spend the others proving it (stop 47)."""
        lat = inc[2].latency

        def above(bound_s: float) -> bool:  # an infinite bound: no configuration of the kind is left
            return not math.isfinite(bound_s) or round(bound_s * TIME_SCALE) > lat

        low = self._bound(vc, attention_only=False, screen=screen, excluded=excluded, relaxed=relaxed)[0]
        if above(low):
            return True
        if round(low * TIME_SCALE) < lat:
            return False
        return above(self._simpler_bound(vc, screen, excluded, relaxed, inc[1] - 1))

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
        vc = self.t.view(b, self.t.key_of(picks))
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

    def adopt(self, other: Planner) -> None:
        """Take another planner's answers as this one's: one over the same tables at every concurrency both plan
        (Tables.with_batch), so its answers are this one's, asked in its order (the seeds of the later questions)."""
        self._asked.update(other._asked)
        self._answers.update(other._answers)

    def reset_log(self) -> None:
        """Forget what questions after the front recorded (time-outs, cut stops), keeping the front's own: a
        new plan reusing this planner reports only its own solves and the front's."""
        self.timeouts, self.cut_stops = dict(self._front_log[0]), list(self._front_log[1])

    def families(self, b: int) -> list[str]:
        """The constraint families at concurrency b a diagnosis may relax: memory, the framework's rules that
        bind anything (the planner's bookkeeping rules left out: Rule.bookkeeping), SLAs."""
        kept = {r.id for r in self.fw.rules if r.bookkeeping}
        out = ["B.memory_per_rank"] + [r[0] for r in self.rules(b) if r[0] not in kept]
        out += [n for n, v in (("SLA.ttft", self.scenario.ttft_ms), ("SLA.tpot", self.scenario.tpot_ms))
                if v is not None]
        return out
