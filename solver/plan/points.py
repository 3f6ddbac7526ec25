"""What the planner answers with and is asked under: a configuration scored (Point), the pattern and attention
family it belongs to, its tie-break penalty, the non-dominated set of points; the CP-SAT parameters and how a
solve ended when it did not prove its answer. No OR-Tools here: the command line reads SolverParams before it
imports the solver."""
from __future__ import annotations

import math
from dataclasses import dataclass

from solver.errors import InputError
from solver.plan.bound import nondominated
from solver.plan.groups import GROUPS, SHARED
from solver.plan.tables import Tables
from solver.specs.limits import MAX_SEED, MAX_TIME_LIMIT_S, MAX_WORKERS


@dataclass(frozen=True)
class SolverParams:
    workers: int = 1  # 1 keeps results reproducible run to run
    seed: int = 0
    time_limit_s: float = 10.0

    def __post_init__(self) -> None:
        # CP-SAT takes an int32 seed and a positive finite time limit; anything else crashes or means "no search"
        if isinstance(self.workers, bool) or not isinstance(self.workers, int) or not 1 <= self.workers <= MAX_WORKERS:
            raise InputError("--workers", f"must be an integer in [1, {MAX_WORKERS}], got {self.workers!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or not 0 <= self.seed <= MAX_SEED:
            raise InputError("--seed", f"must be an integer in [0, {MAX_SEED}], got {self.seed!r}")
        t = self.time_limit_s
        if isinstance(t, bool) or not isinstance(t, (int, float)) or not math.isfinite(t) or not 0 < t <= MAX_TIME_LIMIT_S:
            raise InputError("--time-limit", f"must be a number of seconds in (0, {MAX_TIME_LIMIT_S:g}], got {t!r}")


@dataclass(frozen=True)
class SolveStatus:
    """How one CP-SAT solve ended when it did not prove its answer: a time-out with or without a solution."""

    batch: int
    found: bool  # a feasible solution was found before the limit (FEASIBLE), else UNKNOWN
    gap: float | None  # (objective - best bound) / objective of the solution found, when found


@dataclass(frozen=True)
class CutStop:
    """A concurrency where the cut loop stopped before it proved its answer. `rejected`: `cuts` answers were
    rejected (memory or an SLA the additive tables put within bounds) and the budget (Planner.max_cuts) ran
    out, so the concurrency is not shown infeasible, only not searched further. `rounds`: a layout's dominance
    search reached its bound of `cuts` rounds (Planner.max_rounds), so its best answer stands unproven."""

    batch: int
    cuts: int
    asked: str  # what the solve looked for: "the front", "another pattern", "another attention backbone"
    reason: str = "rejected"  # or "rounds"


@dataclass(frozen=True)
class Point:
    """One configuration with its objective values exactly as the model scores them."""

    picks: tuple[tuple[str, int], ...]  # (group, choice index)
    batch: int
    latency: int  # request latency of the full figures (Scenario.request_latency), TIME_SCALE units
    inv_throughput: float  # seconds per output token per rank (W / throughput), TIME_SCALE units
    simplicity: int = 0  # tie-break: bits of the parallel degrees
    served: float = 0.0  # sequences in flight (StepPlan.served): with the batch, what makes latency ~ inverse throughput

    def key(self) -> tuple:
        return (self.picks, self.batch)


def simplicity(values: tuple[int, ...]) -> int:
    """Tie-break penalty: bits of the parallel degrees (TP1 costs 0, TP8 costs 3)."""
    return sum(max(0, v - 1).bit_length() for v in values)  # a setting may be 0 (redundant experts)


def pattern_key(t: Tables, picks: dict[str, int]) -> tuple:
    """What makes two configurations the same pattern: the attention layout (TP, CP, KVP, SP), dense TP and
    MoE TP. Embedding/LM-head/o_proj degrees refine a pattern rather than change it."""
    return (t.choices["attn"][picks["attn"]][:4], t.choices["dense"][picks["dense"]],
            t.choices["moe"][picks["moe"]])


def attention_family(choice: tuple[int, ...]) -> str:
    """The attention backbone a choice (attn_tp, cp, kvp, sp, ...) belongs to: the seed's Layer 1 decision
    (TP over heads or DP) and its Layer 3 add-ons (CP, KVP) plus the RFC's SP."""
    tp, cp, kvp, sp = choice[:4]
    if sp > 1:
        return "sp"
    if cp > 1:
        return "cp"
    if kvp > 1:
        return "kvp"
    return "tp" if tp > 1 else "dp"


def choice_simplicity(t: Tables, g: str, i: int) -> int:
    # the stage count is carried by every group: its tie-break penalty counts once, with attention
    own = t.choices[g][i] if g == "attn" else t.choices[g][i][:len(GROUPS[g]) - len(SHARED)]
    return simplicity(own)


def picks_simplicity(t: Tables, picks: dict[str, int]) -> int:
    """A configuration's tie-break penalty: its choices' summed."""
    return sum(choice_simplicity(t, g, i) for g, i in picks.items())


def pareto(points: list[Point]) -> list[Point]:
    """Non-dominated points in (inverse throughput, latency), sorted by inverse throughput; one point per
    distinct objective pair (the first seen)."""
    best: dict[tuple[float, int], Point] = {}
    for p in points:
        best.setdefault((p.inv_throughput, p.latency), p)
    return [best[k] for k in nondominated(best)]
