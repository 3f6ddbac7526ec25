"""The prefill steps a TTFT floor need not plan (disagg_remedies._sla_floor).

The floor of a binding TTFT SLA evaluates the MAX_EVALUATED pairs of lowest TTFT estimate without queueing,
k(t) = prefill point's TTFT + decode point's TPOT (disagg.ttft_order: then the concurrency, then the pairs'
order), over the pools planned with the SLA set aside. A prefill step (W ranks, b prompts) whose points all have
a TTFT above tau = K - D, with K the MAX_EVALUATED-th lowest k over pairs already formed and D the least TPOT of
the decode points, adds only pairs with k > K, none of which is among the first MAX_EVALUATED: the pairs formed
are some of the final ones, so the final MAX_EVALUATED-th lowest k is at most K; and leaving pairs out keeps the
others in their order. So the pairs evaluated, and the floor, are those of the unscreened fronts.

Whether a step has a point at or below tau is asked of the planner itself: the same step planned with a TTFT
SLA of tau (a little above it). A point q of the step's plan without the SLA is a configuration the planner
admits (memory cap, the full estimate's memory check, the rules) at its full-estimate TTFT; the planner's figures
equal the full estimate's (tests/test_planner_exact.py), so with TTFT(q) <= tau q meets the SLA and the plan
with it, exact per class of sequences in flight (plan.cpsat), finds a point: a plan with the SLA that finds
none proves that no point of the step is at or below tau, unless a time limit or the cut budget stopped it
(InfeasibleError.proven). A plan with the SLA that fails early (the TTFT bound of each layout past tau) costs
no CP-SAT solve; the steps it does not rule out are planned without the SLA as before.
"""
from __future__ import annotations

import heapq
from typing import TYPE_CHECKING

from solver.errors import InfeasibleError
from solver.plan.disagg import MAX_EVALUATED, pool_pairs
from solver.plan.disagg_pools import phase_scenario, pool_framework
from solver.plan.solve import Planned, plan
from solver.specs.scenario import Scenario

if TYPE_CHECKING:
    from solver.plan.disagg import _Job

# tau is screened a relative 1e-3 above K - D: past the planner's step-time resolution (0.1 us) and the SLA
# check's float tolerance (1e-6), so a point at tau is found; and k > K for every pair of a step ruled out
MARGIN = 1e-3


class PrefillScreen:
    """Rules out the prefill steps of `job` whose points all lie past the first MAX_EVALUATED pairs by k, in
    `scenario` (the SLAs set aside, a TTFT floor's): module docstring."""

    def __init__(self, job: "_Job", scenario: Scenario):
        self.job, self.scenario = job, scenario
        self.decode: list[tuple[int, Planned]] = []  # (W_d, point), by TPOT
        self.lowest: list[float] = []  # the MAX_EVALUATED lowest k formed so far, negated (a max-heap)
        self.screened = 0  # steps asked about (tests and benchmarks read them)
        self.ruled_out = 0

    def start(self, decode: dict[int, list[Planned]]) -> None:
        self.decode = sorted(((wd, d) for wd, pts in decode.items() for d in pts), key=lambda t: t[1].estimate.tpot_s)

    def bound(self) -> float | None:
        """K: the MAX_EVALUATED-th lowest k over the pairs formed so far (None while fewer are formed)."""
        return -self.lowest[0] if len(self.lowest) >= MAX_EVALUATED else None

    def note(self, wp: int, points: list[Planned]) -> None:
        """Form the pairs of the prefill points of a W_p-rank worker just planned: their k, where below K."""
        for p in points:
            for wd, d in self.decode:
                k = p.estimate.ttft_s + d.estimate.tpot_s  # disagg.ttft_order's
                bound = self.bound()
                if bound is not None and k >= bound:
                    break  # the decode points come by TPOT: the rest are larger still
                for _ in pool_pairs(self.scenario, self.job.cards, wp, [p], wd, d, self.job.fw, self.job.model,
                                    fixed=self.job.fixed):
                    heapq.heappush(self.lowest, -k)
                    if len(self.lowest) > MAX_EVALUATED:
                        heapq.heappop(self.lowest)

    def reaches(self, w: int, b: int) -> bool:
        """Whether the prefill step of b prompts on W ranks may have a point at or below tau (it is planned);
        False where the planner proves it has none."""
        bound = self.bound()
        if bound is None or not self.decode:
            return True
        # K is a pair's k, a prefill TTFT (> 0) above the least TPOT: tau > 0
        tau_ms = (bound - self.decode[0][1].estimate.tpot_s) * 1e3 * (1 + MARGIN)
        self.screened += 1
        j = self.job
        asked = phase_scenario(self.scenario.model_copy(update={"ttft_ms": tau_ms}), "prefill", b)
        try:
            plan(j.model, j.hw, j.prec, pool_framework(j.fw), w, asked, j.params, method=j.method,
                 allow_cross_node=j.allow_cross_node, mem_opts=j.mem_opts, explain_binding=False, diagnose=False)
        except InfeasibleError as exc:
            if exc.proven:
                self.ruled_out += 1
                return False
        return True
