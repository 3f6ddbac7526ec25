"""The review of stop 49's change: each rule a mend restored."""
from __future__ import annotations

import pytest


def _qwen8b_disagg(**workers):
    from solver.entry import run_disagg
    from solver.specs.scenario import Scenario

    sc = Scenario(kind="balanced", isl=1024, osl=256, max_concurrency=workers.pop("max_concurrency", None) or 4096)
    return run_disagg("Qwen/Qwen3-8B", "h200_sxm", 8, sc, "vllm", compare_aggregated=False,
                      workers=(workers.get("prefill"), workers.get("decode")))


def test_fixed_worker_counts_that_fit_the_cards_are_not_offered_more_cards() -> None:
    """xP4D on 8 cards with --max-concurrency 1: its smallest workers fit (5 cards), but 4 decode workers hold
    more than one request, so no pair serves it. More (or fewer) cards is no remedy: the refusal says the pairs
    at those counts do not serve the load and offers other counts (it offered '--cards 5' on 8 cards before)."""
    from solver.errors import InfeasibleError

    with pytest.raises(InfeasibleError) as exc:
        _qwen8b_disagg(decode=4, max_concurrency=1)
    assert "none of its pairs pairs or serves the load" in str(exc.value)
    assert not any(c.flag == "--cards" for r in exc.value.remedies.options for c in r.changes), exc.value.remedy


def test_fixed_worker_counts_past_the_cards_are_offered_the_cards_they_take() -> None:
    """3P6D on 8 cards: the smallest feasible workers (one rank each) take 9 cards, the remedy --cards 9."""
    from solver.errors import Change, InfeasibleError

    with pytest.raises(InfeasibleError, match=r"at 3P6D within 8 cards.*takes 9 cards at least") as exc:
        _qwen8b_disagg(prefill=3, decode=6)
    assert exc.value.remedies.options[0].changes == (Change("--cards", 9),)
