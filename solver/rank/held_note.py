"""The note on #1 where its own configuration holds more requests than the power of two it was planned at
(plan.config_edge finds the count) and scores better there than at its planned concurrency, beyond the ranking's
tie band (rank.select: the scenario's weighted log-ratio of request latency and inverse throughput per rank)."""
from __future__ import annotations

from solver.estimate.serving import Estimate
from solver.plan.config_edge import HeldEdge
from solver.rank.cell import fmt_cell
from solver.rank.explain import score_vs
from solver.specs.scenario import TIE_SCORE, Scenario


def gain_score(scenario: Scenario, here: Estimate, there: Estimate) -> float:
    """The scenario's score of `there` against `here` as the reference (rank.explain.score_vs): below
    -TIE_SCORE, it is better beyond the tie band."""
    return score_vs(scenario, there, here)


def scores_better(scenario: Scenario, here: Estimate, there: Estimate) -> bool:
    return gain_score(scenario, here, there) < -TIE_SCORE


def held_note(edge: HeldEdge, here: Estimate, solve_cmd: str) -> str:
    """The note on #1: the count its configuration holds, its figures there against #1's, the command that plans
    there (the figures written as the table's cells write them)."""
    e = edge.estimate
    tps, base = e.output_tokens_per_s_per_rank, here.output_tokens_per_s_per_rank
    figs = [f"{fmt_cell(float(tps))} tok/s per rank ({tps / base - 1:+.0%})"]
    figs += [f"TTFT {fmt_cell(float(e.ttft_s * 1e3))} ms"] if e.has_ttft else []
    figs += [f"TPOT {fmt_cell(float(e.tpot_s * 1e3))} ms"] if e.has_tpot else []
    return (f"#1's configuration holds {edge.requests:,} requests ({edge.bound}): at {edge.requests:,} it runs "
            f"{', '.join(figs)}; `{solve_cmd}` plans there")
