"""The SLA edge: where the SLAs stop the planned concurrencies, the most requests the best configurations of the
last concurrency that meets them still run within them (docs/planner.md, "How it decides").

The planner plans powers of two. With a TPOT or TTFT bound, the last power some configuration meets can be far
below what that configuration runs within the bound (Llama-3.1-70B on 8 H100 under vLLM, 2K/512, TPOT <= 40 ms:
TP8 meets it at 64 and at 120, not at 128): a throughput plan stopping at the power would leave up to half of the
load the bound allows. Between that power and the next planned concurrency (which no configuration meets, or
memory does not hold), each class optimum of the power is followed to its own edge; the largest is planned like
any concurrency, so the planner proves the optimum there. A configuration the power's optima do not include could
run more still: the edge is a lower bound of the deployment's, found at the cost of one bisection per optimum.
"""
from __future__ import annotations

from typing import Callable

from solver.plan.memory_edge import bisect_edge
from solver.plan.points import Point


def sla_edge(classes: dict[tuple[int, float], Point], batches: tuple[int, ...],
             meets: Callable[[Point, int], bool], runs: Callable[[Point, int], bool]) -> int | None:
    """The concurrency to plan between the largest one with a class optimum and the next planned one, or None
    where the last planned concurrency has an optimum (the SLAs stop nothing) or no optimum runs more.

    `meets(p, c)`: p's configuration at c concurrent requests meets the SLAs and fits (monotone: what meets c
    meets fewer); `runs(p, c)`: the engine may run that many (its batch rules, not monotone)."""
    if not classes:
        return None
    top = max(b for b, _ in classes)
    later = [b for b in batches if b > top]
    if not later:
        return None
    edge = None
    for (b, _), p in sorted(classes.items(), key=lambda kv: kv[0]):
        if b != top:
            continue
        most = bisect_edge(top, later[0], lambda c, p=p: meets(p, c))
        # under a batch rule (the batch a multiple of the attention replicas) the most it also runs
        ran = next((c for c in range(most, top, -1) if runs(p, c)), None) if most is not None else None
        if ran is not None and (edge is None or ran > edge):
            edge = ran
    return edge


__all__ = ["sla_edge"]
