"""Rules the fuzz run over sweep --price, recommend --price and the disaggregated inputs found wanting
(benchmarks/fuzz.py, tests/fuzz_cases.py sweep_price_cases): bad prices are refused in one line naming --price."""
from __future__ import annotations

import pytest
from click.testing import CliRunner

from solver.capacity.pricing import parse_prices
from solver.cli.main import main
from solver.errors import InputError

SWEEP = ("sweep", "qwen3-8b", "--hardware", "h100_sxm", "--cards", "2", "--scenarios", "latency",
         "--max-concurrency", "16", "--time-limit", "2", "--format", "json")


def _refusal(*argv: str) -> str:
    r = CliRunner().invoke(main, list(argv))
    assert r.exit_code == 2, r.output
    assert r.stderr.startswith("error: --price: ") and r.stderr.count("\n") == 1, r.stderr
    return r.stderr


def test_a_price_past_the_largest_float_is_refused_as_not_finite() -> None:
    """float('1e400') is inf: not a price, and not a number <= 0 either, so the line says finite."""
    assert "must be a finite number, got h100_sxm=1e400" in _refusal(*SWEEP, "--price", "h100_sxm=1e400")


@pytest.mark.parametrize("price", ["h100_sxm=3,", "h100_sxm=3,,h100_sxm=3", ",h100_sxm=3"])
def test_an_empty_price_item_is_refused(price: str) -> None:
    """'a,,b', a leading or trailing comma: an item meant and not written (--cards refuses '1,,2' alike)."""
    assert "an empty item" in _refusal(*SWEEP, "--price", price)


def test_an_empty_price_is_refused_not_read_as_no_price() -> None:
    """recommend --price '' used to recommend without prices (the empty item skipped)."""
    with pytest.raises(InputError) as err:
        parse_prices([""], ["h100_sxm"])
    assert err.value.field == "--price" and "an empty item" in err.value.problem
    assert "an empty item" in _refusal("recommend", "qwen3-8b", "--hardware", "h100_sxm", "--cards", "1",
                                       "--target-output-tokens-per-s", "500", "--price", "")


def test_the_same_price_twice_and_a_catalog_spelling_are_one_price() -> None:
    """h100_sxm=3 twice says one thing; H100-SXM names the same catalog hardware: {h100_sxm: 3.0}."""
    assert parse_prices(["h100_sxm=3", "H100-SXM=3"], ["h100_sxm"]) == {"h100_sxm": 3.0}
