"""Rules closed from earlier stops' left-open items (stop 48): each comparison, memory figure and sentence on
like terms with the one it stands beside."""
from __future__ import annotations

import pytest


def test_disagg_comparison_prices_the_aggregated_plan_on_the_cards_the_disaggregated_one_uses() -> None:
    """Qwen3-30B-A3B on 8 x H200 under SGLang at --max-concurrency 64 (2K/1K, throughput): the disaggregated plan
    carries the capped load on 5 cards; the aggregated plan it is compared with is planned on those 5, not on all
    8 where the same capped load would be spread over 3 more cards than the disaggregated figures count."""
    from solver.entry import run_disagg, run_solve
    from solver.specs.scenario import Scenario

    sc = Scenario(kind="throughput", isl=2048, osl=1024, tpot_ms=50, max_concurrency=64)
    rep = run_disagg("qwen3-30b-a3b", "h200_sxm", 8, sc, "sglang")
    used = rep.plan.cards
    assert used < 8 and rep.aggregated_cards == used
    _, on_used = run_solve("qwen3-30b-a3b", "h200_sxm", used, sc, "sglang", top=1, explain_binding=False)
    a, b = rep.aggregated.planned.estimate, on_used[0].planned.estimate
    assert a.output_tokens_per_s_per_rank == b.output_tokens_per_s_per_rank
    idle = [w for w in rep.comparison.why if f"of the 8 cards" in w]
    assert idle and idle[0].endswith(f"the aggregated plan is priced on the same {used}"), rep.comparison.why
