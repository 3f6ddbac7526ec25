"""`recommend --serving disagg --price`: the cheapest hardware for a disaggregated deployment, chosen by the rule the
aggregated recommend follows (recommend.choose), with the cost on the prefill and decode pools' ranks.

The runs: Qwen3-8B at ISL 1024 / OSL 256, 5,000 output tokens/s, cluster sizes 2, 4 and 8 (one solve per size
and hardware, well under a second each), one deployment each (--max-copies 1). There H200 carries the load on 2
cards and L40S needs 8, of which its pools use 7 (a rate match that leaves one card idle).
"""
from __future__ import annotations

import json

import pytest
import yaml
from click.testing import CliRunner

from solver.capacity.disagg import recommend_disagg
from solver.capacity.recommend import choose
from solver.cli.main import main
from solver.errors import InputError

LOAD = 5000.0
RUN = dict(target_output_tokens_per_s=LOAD, cards="2,4,8", isl=1024, osl=256, max_copies=1)  # one deployment each
ARGV = ["recommend", "qwen3-8b", "l40s", "h200_sxm", "--target-output-tokens-per-s", "5000", "--cards", "2,4,8",
        "--isl", "1024", "--osl", "256", "--serving", "disagg", "--max-copies", "1"]


def _by_hw(rec) -> dict:
    return {o["hardware"]: o for o in rec.options}


@pytest.fixture(scope="module")
def priced():
    return recommend_disagg("qwen3-8b", ["l40s", "h200_sxm"], prices=["l40s=0.5", "h200_sxm=3.5"], **RUN)


def test_the_cheaper_per_hour_wins_even_with_more_cards(priced) -> None:
    """L40S: 7 ranks x $0.5 = $3.5/hour; H200: 2 x $3.5 = $7/hour. L40S takes more cards and still wins."""
    o = _by_hw(priced)
    assert o["l40s"]["cards"] > o["h200_sxm"]["cards"]  # the premise: by cards H200 would win
    assert o["l40s"]["cost_per_hour"] < o["h200_sxm"]["cost_per_hour"]
    assert priced.best["hardware"] == "l40s"
    assert priced.basis == "cost per hour"


def test_the_cost_is_on_the_pools_ranks_not_the_cluster_size(priced) -> None:
    """Cards paid for = prefill workers x ranks per worker + decode workers x ranks per worker (ranks_used), not
    the size tried; on L40S those differ (7 of 8), so the figure tells them apart."""
    for o in priced.options:
        pools = (o["prefill_workers"] * o["prefill_ranks_per_worker"]
                 + o["decode_workers"] * o["decode_ranks_per_worker"])
        assert pools == o["ranks_used"]
        assert o["cost_per_hour"] == pytest.approx(pools * o["price_per_card_hour"])
    l40s = _by_hw(priced)["l40s"]
    assert l40s["ranks_used"] < l40s["cards"]  # the premise: a card left idle
    assert l40s["cost_per_hour"] == pytest.approx(l40s["ranks_used"] * 0.5)


def test_the_cost_per_million_tokens_is_the_hour_over_the_tokens_of_an_hour(priced) -> None:
    """At the target: $/hour / (5,000 x 3,600 tokens) x 1e6 (H200: 7 / 18e6 x 1e6 = $0.3889); at capacity: over
    the plan's own output tokens/s instead."""
    for o in priced.options:
        assert o["cost_per_million_output_tokens"] == pytest.approx(o["cost_per_hour"] / (LOAD * 3600) * 1e6,
                                                                    abs=1e-4)
        assert o["cost_per_million_output_tokens_at_capacity"] == pytest.approx(
            o["cost_per_hour"] / (o["output_tokens_per_s"] * 3600) * 1e6, abs=1e-4)
    assert _by_hw(priced)["h200_sxm"]["cost_per_million_output_tokens"] == pytest.approx(0.3889, abs=1e-4)


def test_a_met_hardware_without_a_price_falls_back_to_the_fewest_cards_and_the_note_names_it() -> None:
    """A price for L40S only: H200 (2 cards) wins on cards, and the table says which price is missing."""
    rec = recommend_disagg("qwen3-8b", ["l40s", "h200_sxm"], prices=["l40s=0.5"], **RUN)
    assert rec.best["hardware"] == "h200_sxm" and rec.basis == "cards"
    o = _by_hw(rec)
    assert o["h200_sxm"]["price_per_card_hour"] is None and o["h200_sxm"]["cost_per_hour"] is None
    assert o["l40s"]["cost_per_hour"] == pytest.approx(o["l40s"]["ranks_used"] * 0.5)
    text = rec.render("table")
    assert "recommended (fewest cards): h200_sxm" in text
    assert "note: no --price for h200_sxm, so the answer is the fewest cards" in text
    assert "--price h200_sxm=USD_PER_CARD_HOUR" in text


def test_only_one_hardware_that_carries_the_load_is_recommended_whatever_the_prices() -> None:
    """At 12,000 tok/s L40S falls short on 8 cards, so H200 is the answer even at 7x the price per card-hour,
    and no price is asked for."""
    rec = recommend_disagg("qwen3-8b", ["l40s", "h200_sxm"], prices=["l40s=0.5", "h200_sxm=3.5"],
                           **{**RUN, "target_output_tokens_per_s": 12000.0})
    assert not _by_hw(rec)["l40s"]["met"]  # the premise
    assert rec.best["hardware"] == "h200_sxm" and rec.basis == "only one met"
    text = rec.render("table")
    assert "recommended (the only hardware that carries the load): h200_sxm" in text
    assert "--price" not in text


def test_a_price_for_hardware_not_given_is_refused_as_the_aggregated_refuses_it() -> None:
    argv = [*ARGV, "--price", "h100_sxm=2"]
    disagg = CliRunner().invoke(main, argv)
    agg = CliRunner().invoke(main, [a for a in argv if a not in ("--serving", "disagg")])
    line = "--price: h100_sxm is not one of the hardware given (l40s, h200_sxm)"
    assert disagg.exit_code == agg.exit_code == 2
    assert line in disagg.output and line in agg.output


def test_a_price_that_is_not_a_number_is_refused_before_any_solve() -> None:
    with pytest.raises(InputError, match="not a number: h200_sxm=cheap"):
        recommend_disagg("qwen3-8b", ["h200_sxm"], prices=["h200_sxm=cheap"], **RUN)


def test_the_table_shows_each_options_cost_and_the_basis() -> None:
    """L40S: $3.50/hour, $0.194 per million at the target (3.5 / 18e6 x 1e6 = 0.1944)."""
    res = CliRunner().invoke(main, [*ARGV, "--price", "l40s=0.5", "--price", "h200_sxm=3.5"])
    assert res.exit_code == 0, res.output
    assert "recommended (cheapest per hour): l40s" in res.stdout
    assert "$3.50/hour, $0.194 per million output tokens at the target load" in res.stdout
    assert "$7.00/hour, $0.389 per million output tokens at the target load" in res.stdout


@pytest.mark.parametrize("fmt", ["json", "yaml"])
def test_json_and_yaml_carry_the_costs_and_the_basis(fmt: str) -> None:
    res = CliRunner().invoke(main, [*ARGV, "--price", "l40s=0.5", "--price", "h200_sxm=3.5", "--format", fmt])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout) if fmt == "json" else yaml.safe_load(res.stdout)
    assert data["basis"] == "cost per hour" and data["recommended"]["hardware"] == "l40s"
    for o in data["options"]:
        assert o["cost_per_hour"] == pytest.approx(o["ranks_used"] * o["price_per_card_hour"])
        assert {"cost_per_million_output_tokens", "cost_per_million_output_tokens_at_capacity"} <= set(o)


def test_the_choice_rule_is_one_function_for_both_recommends() -> None:
    """A: 4 cards at $8/hour; B: 8 cards at $4/hour. Both priced: B (cheaper); B unpriced: A (fewer cards); B not
    met: A (the only one); neither met: none."""
    a = {"met": True, "cards": 4, "cost": 8.0}
    b = {"met": True, "cards": 8, "cost": 4.0}

    def pick(*opts):
        best, basis = choose(opts, lambda o: o["met"], lambda o: o["cost"], lambda o: (o["cards"],))
        return best, basis

    assert pick(a, b) == (b, "cost per hour")
    assert pick(a, {**b, "cost": None}) == (a, "cards")
    assert pick(a, {**b, "met": False}) == (a, "only one met")
    assert pick({**a, "met": False}, {**b, "met": False}) == (None, "none met")
    assert pick(a) == (a, "cards")  # one hardware: no choice over prices to make
