"""Disaggregated serving, round two (stop 49): each rule a user met deploying prefill / decode pools."""
from __future__ import annotations

import pytest


@pytest.mark.slow
def test_disagg_comparison_takes_the_aggregated_plans_best_within_the_cards() -> None:
    """gpt-oss-120b on 16 x H200 under vLLM (8K/1K, TPOT <= 20 ms): the rate match deploys 14 cards (6 one-rank
    prefill workers, one 8-rank decode worker). vLLM places 14 ranks as 2 nodes x 7, where the aggregated plan
    runs PP7 at 168.3 output tokens/s per rank; on all 16 it runs attention DP + EP at 1,230. The comparison
    takes the aggregated plan's better of the two (it may use every card too), not the 14 alone (disagg 10.41x
    before, 1.42x after), and says on how many cards and why."""
    from solver.entry import run_disagg, run_solve
    from solver.specs.scenario import Scenario

    sc = Scenario(kind="balanced", isl=8192, osl=1024, tpot_ms=20)
    rep = run_disagg("gpt-oss-120b", "h200_sxm", 16, sc, "vllm")
    used = rep.plan.cards
    assert used == 14 and rep.aggregated_cards == 16
    _, on_used = run_solve("gpt-oss-120b", "h200_sxm", used, sc, "vllm", top=1, explain_binding=False)
    _, on_all = run_solve("gpt-oss-120b", "h200_sxm", 16, sc, "vllm", top=1, explain_binding=False)
    here = rep.aggregated.planned.estimate.output_tokens_per_s_per_rank
    assert here == on_all[0].planned.estimate.output_tokens_per_s_per_rank
    assert here > 2 * on_used[0].planned.estimate.output_tokens_per_s_per_rank
    idle = [w for w in rep.comparison.why if "of the 16 cards" in w]
    assert idle and "the aggregated plan on all 16, which it runs better than on 14" in idle[0], rep.comparison.why


def test_the_better_aggregated_plan_is_the_one_the_scenarios_score_prefers() -> None:
    """entry.better_aggregated: of two aggregated plans, the one of lower score (request latency and inverse
    output tokens/s per rank against the better of each); equal scores keep the first (the cards used)."""
    from types import SimpleNamespace

    from solver.entry import better_aggregated
    from solver.specs.scenario import Scenario

    def cand(ttft: float, tpot: float, per_rank: float):
        est = SimpleNamespace(ttft_s=ttft, tpot_s=tpot, output_tokens_per_s_per_rank=per_rank)
        return SimpleNamespace(planned=SimpleNamespace(estimate=est))

    sc = Scenario(kind="balanced", isl=1024, osl=1024)
    assert better_aggregated({14: cand(1.0, 0.02, 100.0), 16: cand(1.0, 0.02, 400.0)}, sc) == 16
    assert better_aggregated({14: cand(1.0, 0.02, 400.0), 16: cand(1.0, 0.02, 100.0)}, sc) == 14
    assert better_aggregated({14: cand(1.0, 0.02, 400.0), 16: cand(1.0, 0.02, 400.0)}, sc) == 14
