"""The dominance search inside one attention layout: CP-SAT minimises a linear surrogate of L over the
layout's model (plan.view_model), each answer is evaluated exactly and cut off with every point it dominates in
(Pe, Te), and the loop ends when CP-SAT proves nothing is left. DominanceSearch is one of cpsat.Planner's bases:
the state it reads (the tables, the scenario, the solver parameters, the incumbent's bookkeeping) is set in
Planner.__init__, and the exact figures it evaluates are the planner's (Planner.latency_of, Planner.point).
"""
from __future__ import annotations

import math
from typing import Callable

from solver.errors import InternalError
from solver.estimate.figures import ttft_floor, ttft_floor_at_steps
from solver.ortools_cp import cp_model  # OR-Tools' cp_model without its eager pandas import
from solver.plan.points import SolveStatus, attention_family, choice_simplicity
from solver.plan.view_model import MAX_STEP_S, TIE_WEIGHT, TIME_SCALE, ViewModel

LEVEL_PRECISION = 1e-4  # relative precision of a level-curve corner


class DominanceSearch:
    """The Planner's search inside one layout (_solve_view) and the cuts it makes: where L reaches the
    incumbent's along one step (_cut_at), down the segment from the layout's lower bound (_shrink), and on the
    level curve (level_corners)."""

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

    def _solve_view(self, b, key, vc, pe_lo, te_lo, exclude_patterns, relaxed, exclude_families, state,
                    settled: Callable[[tuple], bool] = lambda inc: False) -> bool:
        """Search layout `key` at concurrency b (its complete view vc, its step bounds pe_lo, te_lo) until
        nothing left in it can beat the incumbent (state["best"], updated here). False where the time limit or
        the full estimate's rejections (more than max_cuts) stopped it, and the question stops with it.
        `settled(incumbent)`: whether the layout's bounds alone show nothing in it can replace that incumbent
        (Planner._settled): the search ends there, before the solves that would prove it."""
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
        if vm.pe is not None and self.scenario.ttft_ms is not None and "SLA.ttft" not in relaxed:
            # a prefill step whose TTFT floor (figures.ttft_floor: TTFT at any decode step) misses the SLA cannot
            # meet it, nor can any slower one: cut them all at once, not answer by answer
            cut = self._ttft_floor_cut(vc)
            if math.isfinite(cut):
                work.add(vm.pe <= math.ceil(cut * TIME_SCALE) + vm.slack)
        cut_for = checked = None
        for _ in range(self.max_rounds):
            inc = state["best"]
            if inc is not None and inc is not checked:
                checked = inc
                if settled(inc):
                    return True
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
            if not verified or (sla_missed == ["SLA.ttft"] and not self._ttft_floor_misses(vc, fig)):
                # the full estimate's memory check rejects this configuration, not its figures; or it misses
                # the TTFT bound only, and TTFT can fall a little as the decode step grows (a slower decode
                # lowers the request rate and the prefill queue: estimate/closed_loop.py), while its TTFT floor
                # at both steps meets the bound: cut it alone. A floor that misses too is missed by every point
                # dominating this one, which the cut below removes (as for a TPOT miss)
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
        state["rounds_out"] = state.get("rounds_out", 0) + 1  # not proven: Planner.best reports it (CutStop)
        return True

    def _cut_at(self, vc, best_l: float, other_lo: float, prefill: bool, rel: float = 2e-2) -> float:
        """The smallest step time (seconds) at which L reaches best_l with the other step at its bound."""
        f = (lambda v: self._lf(vc, v, other_lo)) if prefill else (lambda v: self._lf(vc, other_lo, v))
        return _crossing(lambda v: f(v) >= best_l, rel)

    def _ttft_floor_misses(self, vc, fig) -> bool:
        """Whether the TTFT floor at this answer's two steps (figures.ttft_floor_at_steps: every point dominating
        it in (Pe, Te) has a TTFT at least that floor) misses the TTFT SLA, with a relative 1e-12 to spare for the
        float rounding between the floor and the figure."""
        floor = ttft_floor_at_steps(vc.plan, self.t.f, fig.prefill_step_s, fig.decode_step_s)
        return bool(self.scenario.sla_misses(floor * (1 - 1e-12), 0.0, frozenset({"SLA.tpot"})))

    def _ttft_floor_cut(self, vc, rel: float = 2e-2) -> float:
        """The smallest prefill step [s] (to `rel`) whose TTFT floor misses the TTFT SLA (infinite: none below
        MAX_STEP_S): every prefill step from there on misses it at any decode step."""
        return _crossing(lambda v: bool(self.scenario.sla_misses(ttft_floor(vc.plan, self.t.f, max(v, 1e-12)), 0.0,
                                                               frozenset({"SLA.tpot"}))), rel)

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


def _crossing(reaches: Callable[[float], bool], rel: float) -> float:
    """The smallest step time [s] (to `rel`, and half a TIME_SCALE unit) from which `reaches` holds, for a
    property that, once true, stays true as the step grows; infinite where it does not hold below MAX_STEP_S.
    `reaches(hi)` holds throughout the bisection, so any precision gives a valid cut."""
    lo, hi = 0.0, 1.0
    while not reaches(hi):
        hi *= 2
        if hi > MAX_STEP_S:
            return math.inf
    while hi - lo > rel * hi + 0.5 / TIME_SCALE:
        mid = (lo + hi) / 2
        if reaches(mid):
            hi = mid
        else:
            lo = mid
    return hi


def _any(m: cp_model.CpModel, lits: list) -> cp_model.IntVar:
    """A literal true iff one of `lits` (members of an exactly-one group) is true."""
    v = m.new_bool_var("any")
    m.add(sum(lits) == v)
    return v
