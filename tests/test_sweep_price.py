"""`sweep --price HARDWARE=USD` (and api.sweep(prices=...)): every row priced by its own figures, the columns only
when prices are given, one price parser with recommend, bad prices refused in one line, and the cheapest front
row per hardware named in a note."""
from __future__ import annotations

import json
import math

import pandas as pd
import pytest
from click.testing import CliRunner

from solver import api
from solver.capacity.pricing import cheapest_notes, parse_prices, price_rows
from solver.capacity.table import COLUMNS, PRICE_COLUMNS, read_table
from solver.cli.main import main
from solver.errors import InputError

# the tests sweep the same small deployments and patch no estimator: they share the planner's cache
SHARES_PLANS = True

# Qwen3-235B-A22B on H100: one card does not hold the weights (an infeasible row), eight do (a front)
SWEEP = ["sweep", "qwen3-235b-a22b", "--hardware", "h100_sxm", "--cards", "1,8", "--scenarios", "balanced"]
PRICE = 2.5  # USD per H100 card-hour


def _run(*args: str):
    return CliRunner().invoke(main, list(args))


@pytest.fixture(scope="module")
def priced() -> pd.DataFrame:
    return api.sweep("qwen3-235b-a22b", "h100_sxm", "1,8", "balanced", prices={"h100_sxm": PRICE})


# ------------------------------------------------------------------------------------------------ the rule


def test_cost_per_hour_is_cards_times_price_and_per_million_divides_by_an_hour_of_tokens() -> None:
    """16 cards at $3.50: $56.00/hour; at 10,000 output tokens/s an hour serves 36e6 tokens, so a million costs
    56 / 36 = $1.5556 (4 decimals, as recommend writes its costs)."""
    row = {"hardware": "h200_sxm", "cards": 16, "feasible": True, "output_tokens_per_s": 10_000.0}
    out = price_rows([row], {"h200_sxm": 3.5})[0]
    assert out["usd_per_hour"] == 56.0
    assert out["usd_per_million_output_tokens"] == 1.5556


def test_a_disaggregated_row_pays_for_its_pools_ranks_not_the_whole_size() -> None:
    """A 16-card budget whose plan deploys 12 ranks (prefill and decode pools together) at $2: $24/hour; at 6,000
    tokens/s, 24 / (6000 x 3600) x 1e6 = $1.1111 per million."""
    row = {"hardware": "h200_sxm", "cards": 16, "ranks_used": 12, "feasible": True, "output_tokens_per_s": 6000.0}
    out = price_rows([row], {"h200_sxm": 2.0}, cards_key="ranks_used")[0]
    assert (out["usd_per_hour"], out["usd_per_million_output_tokens"]) == (24.0, 1.1111)


def test_an_infeasible_row_has_no_price() -> None:
    """No deployment to pay for: both columns empty, whether it has figures (an SLA missed by the full estimate)
    or none (nothing fits)."""
    rows = [{"hardware": "h100_sxm", "cards": 8, "feasible": False, "output_tokens_per_s": 900.0},
            {"hardware": "h100_sxm", "cards": 1, "feasible": False, "output_tokens_per_s": None}]
    assert all(r[c] is None for r in price_rows(rows, {"h100_sxm": 2.5}) for c in PRICE_COLUMNS)


def test_every_priced_row_is_its_cards_times_the_price_over_its_own_tokens(priced: pd.DataFrame) -> None:
    """Each feasible row, from the figures it carries: usd_per_hour = cards x 2.5 (8 cards: $20.00) and
    usd_per_million = usd_per_hour / (output_tokens_per_s x 3600) x 1e6, to the 4 decimals written; the 1-card
    row (nothing fits) has neither."""
    ok = priced[priced["feasible"].fillna(False).astype(bool)]
    assert not ok.empty
    for _, r in ok.iterrows():
        assert r["usd_per_hour"] == r["cards"] * PRICE == 20.0
        assert r["usd_per_million_output_tokens"] == pytest.approx(
            r["usd_per_hour"] / (r["output_tokens_per_s"] * 3600) * 1e6, abs=5e-5)
    bad = priced[~priced["feasible"].fillna(False).astype(bool)]
    assert len(bad) >= 1 and bad[list(PRICE_COLUMNS)].isna().all().all()
    assert list(priced.columns) == [*COLUMNS, *PRICE_COLUMNS]


def test_the_cheapest_front_row_per_hardware_is_named_in_a_note() -> None:
    """Of the front rows, the lowest cost per million: the 24-card row ($0.90) over the 16-card one ($1.00) on
    b200; the off-front row at $0.50 is not on the front, so it is not named."""
    df = pd.DataFrame([
        {"hardware": "b200", "cards": 16, "isl": 4096, "osl": 256, "scenario": "balanced", "on_front": True,
         "pattern": "Attn DP + MoE EP", "concurrency": 64, "output_tokens_per_s": 1000.0,
         "usd_per_hour": 3.6, "usd_per_million_output_tokens": 1.0},
        {"hardware": "b200", "cards": 24, "isl": 4096, "osl": 256, "scenario": "balanced", "on_front": True,
         "pattern": "Attn TP8 + MoE EP", "concurrency": 128, "output_tokens_per_s": 2000.0,
         "usd_per_hour": 6.48, "usd_per_million_output_tokens": 0.9},
        {"hardware": "b200", "cards": 32, "isl": 4096, "osl": 256, "scenario": "balanced", "on_front": False,
         "pattern": "Attn DP", "concurrency": 512, "output_tokens_per_s": 9000.0,
         "usd_per_hour": 16.2, "usd_per_million_output_tokens": 0.5},
    ])
    (note,) = cheapest_notes(df)
    assert note.startswith("b200: cheapest per million output tokens: 24 cards, Attn TP8 + MoE EP at concurrency 128")
    assert "$0.9000 per million" in note and "$6.48/hour" in note


def test_no_cheapest_note_without_prices() -> None:
    df = api.sweep("qwen3-235b-a22b", "h100_sxm", "8", "balanced")
    assert df.attrs["cheapest"] == [] and not set(PRICE_COLUMNS) & set(df.columns)


# ----------------------------------------------------------------------------------------------- the inputs


def test_recommend_and_sweep_read_prices_with_one_parser() -> None:
    import importlib

    for module in ("solver.capacity.recommend", "solver.capacity.disagg"):
        assert importlib.import_module(module).parse_prices is parse_prices


@pytest.mark.parametrize("prices, says", [
    (["h200_sxm=3"], "h200_sxm is not one of the hardware given"),  # a hardware the sweep does not run
    (["h100_sxm=0"], "must be > 0"),
    (["h100_sxm=-1"], "must be > 0"),
    (["h100_sxm=cheap"], "not a number"),
    (["h100_sxm=nan"], "must be > 0"),
    (["h100_sxm"], "expected HARDWARE=PRICE_PER_CARD_HOUR"),
])
def test_a_bad_price_is_refused_in_one_line(prices: list[str], says: str) -> None:
    r = _run(*SWEEP, *(a for p in prices for a in ("--price", p)))
    assert r.exit_code == 2, r.output
    assert r.stderr.startswith("error: --price") and r.stderr.count("\n") == 1 and says in r.stderr


def test_a_price_missing_for_a_hardware_swept_is_refused_in_one_line() -> None:
    r = _run("sweep", "qwen3-235b-a22b", "--hardware", "h100_sxm", "h200_sxm", "--cards", "8", "--scenarios",
             "balanced", "--price", "h100_sxm=2.5")
    assert r.exit_code == 2, r.output
    assert r.stderr.count("\n") == 1 and "no price for h200_sxm" in r.stderr
    assert "--price h200_sxm=USD_PER_CARD_HOUR" in r.stderr


def test_a_disaggregated_sweep_refuses_a_missing_price_too() -> None:
    r = _run("sweep", "qwen3-30b-a3b", "--hardware", "h100_sxm", "h200_sxm", "--cards", "2", "--scenarios",
             "throughput", "--serving", "disagg", "--price", "h200_sxm=3.5")
    assert r.exit_code == 2 and r.stderr.count("\n") == 1 and "no price for h100_sxm" in r.stderr, r.output


def test_the_api_refuses_a_bad_price_under_its_keyword() -> None:
    with pytest.raises(InputError) as err:
        api.sweep("qwen3-235b-a22b", "h100_sxm", "8", "balanced", prices={"h100_sxm": -2})
    assert err.value.field == "prices" and "must be > 0" in err.value.problem


# ----------------------------------------------------------------------------------------------- the files


def test_the_csv_without_price_is_the_priced_one_less_its_two_last_columns() -> None:
    """Without --price the table is what it was (no cost column); with it, the same rows and two columns last."""
    plain, costed = _run(*SWEEP), _run(*SWEEP, "--price", f"h100_sxm={PRICE}")
    assert plain.exit_code == 0 and costed.exit_code == 0, (plain.output, costed.output)
    header = plain.stdout.splitlines()[0]
    assert header == ",".join(COLUMNS)
    df = pd.read_csv(pd.io.common.StringIO(costed.stdout), keep_default_na=False, dtype=str)
    assert list(df.columns[-2:]) == list(PRICE_COLUMNS)
    assert df.drop(columns=list(PRICE_COLUMNS)).to_csv(index=False, lineterminator="\n") == plain.stdout
    assert "cheapest per million output tokens" in costed.stderr and "cheapest" not in plain.stderr


# two sweeps (~3.5 s): the slow suite; test_capacity's jobs-2 test keeps the unpriced bytes in the default suite
@pytest.mark.slow
def test_jobs_2_writes_the_same_priced_bytes_as_jobs_1(tmp_path) -> None:
    args = ["sweep", "qwen3-30b-a3b", "--hardware", "h200_sxm", "--cards", "1,2,4", "--scenarios",
            "balanced,throughput", "--price", "h200_sxm=3.5"]
    one, two = tmp_path / "one.csv", tmp_path / "two.csv"
    for path, jobs in ((one, "1"), (two, "2")):
        r = _run(*args, "--jobs", jobs, "--out", str(path))
        assert r.exit_code == 0, r.output
    assert one.read_bytes() == two.read_bytes()
    assert "usd_per_million_output_tokens" in one.read_text().splitlines()[0]


@pytest.mark.parametrize("ext", [".csv", ".json"])
def test_read_table_types_the_price_columns(priced: pd.DataFrame, tmp_path, ext: str) -> None:
    from solver.capacity.table import write_table

    path = tmp_path / f"priced{ext}"
    write_table(priced, path)
    back = read_table(path)
    assert list(back.columns) == list(priced.columns)
    for c in PRICE_COLUMNS:
        assert back[c].dtype == "float64"
        pd.testing.assert_series_equal(back[c], priced[c])


def test_read_table_refuses_one_price_column_without_the_other(priced: pd.DataFrame, tmp_path) -> None:
    path = tmp_path / "half.csv"
    priced.drop(columns=["usd_per_hour"]).to_csv(path, index=False)
    with pytest.raises(InputError, match="usd_per_million_output_tokens"):
        read_table(path)


def test_json_records_carry_the_costs_and_null_on_an_infeasible_row() -> None:
    r = _run(*SWEEP, "--price", f"h100_sxm={PRICE}", "--format", "json")
    assert r.exit_code == 0, r.output
    records = json.loads(r.stdout)
    for rec in records:
        if rec["feasible"]:
            assert rec["usd_per_hour"] == rec["cards"] * PRICE
            assert math.isclose(rec["usd_per_million_output_tokens"],
                                rec["usd_per_hour"] / (rec["output_tokens_per_s"] * 3600) * 1e6, abs_tol=5e-5)
        else:
            assert rec["usd_per_hour"] is None and rec["usd_per_million_output_tokens"] is None
    assert any(not rec["feasible"] for rec in records)


def test_the_summary_table_shows_the_recommended_rows_costs() -> None:
    r = _run(*SWEEP, "--price", f"h100_sxm={PRICE}", "--format", "table")
    assert r.exit_code == 0, r.output
    assert "$/M tokens" in r.stdout and "20.00" in r.stdout  # 8 cards x $2.50


def test_a_disaggregated_sweep_prices_the_ranks_its_plans_deploy() -> None:
    df = api.sweep("qwen3-30b-a3b", "h200_sxm", "2,4", "throughput", serving="disagg", prices={"h200_sxm": 3.5})
    ok = df[df["feasible"].fillna(False).astype(bool)]
    assert not ok.empty
    for _, r in ok.iterrows():
        assert r["usd_per_hour"] == r["ranks_used"] * 3.5
        assert r["usd_per_million_output_tokens"] == pytest.approx(
            r["usd_per_hour"] / (r["output_tokens_per_s"] * 3600) * 1e6, abs=5e-5)
    best = ok.sort_values("usd_per_million_output_tokens").iloc[0]
    (note,) = df.attrs["cheapest"]
    assert f"{int(best['ranks_used'])} of {int(best['cards'])} cards" in note
