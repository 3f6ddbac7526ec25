"""Capacity planning as a user drives it: sweep and recommend inputs, refusals and the answers' wording."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from solver.capacity.inputs import make_scenario
from solver.capacity.recommend import cluster_cap_note
from solver.capacity.table import COLUMNS
from solver.cli.main import main
from solver.errors import InputError
from solver.specs.limits import MAX_CARDS

README = Path(__file__).resolve().parents[1] / "README.md"


def _run(*args: str):
    return CliRunner().invoke(main, list(args))


def test_a_scenario_check_across_fields_is_refused_under_the_field_it_names() -> None:
    """concurrency 4 over max_concurrency 2 is the user's --concurrency, not a 'scenario' or pydantic's text."""
    with pytest.raises(InputError) as exc:
        make_scenario(kind="throughput", isl=4096, osl=256, concurrency=4, max_concurrency=2)
    assert exc.value.field == "--concurrency"
    assert not exc.value.problem.startswith("Value error")
    assert "exceeds max_concurrency 2" in exc.value.problem


def test_a_scenario_field_out_of_range_is_refused_under_its_flag() -> None:
    with pytest.raises(InputError) as exc:
        make_scenario(kind="throughput", isl=4096, osl=256, max_concurrency=0)
    assert exc.value.field == "--max-concurrency"


def test_solve_names_the_field_a_check_across_fields_starts_with() -> None:
    """solve reads its scenario through the same rule as sweep (specs.scenario.scenario_of)."""
    r = _run("solve", "qwen3-8b", "--hardware", "h100_sxm", "--cards", "1", "--concurrency", "4",
             "--max-concurrency", "2")
    assert r.exit_code == 2 and r.stderr.startswith("error: --concurrency: concurrency 4 exceeds max_concurrency 2")


@pytest.mark.parametrize("serving", ["agg", "disagg"])
def test_sweep_concurrency_over_its_bound_is_one_line_naming_concurrency(serving: str) -> None:
    r = _run("sweep", "qwen3-8b", "--hardware", "h200_sxm", "--cards", "8", "--serving", serving,
             "--concurrency", "4", "--max-concurrency", "2")
    assert r.exit_code == 2
    assert r.stderr.startswith("error: --concurrency: concurrency 4 exceeds max_concurrency 2")
    assert r.stderr.count("\n") == 1 and "Value error" not in r.stderr


def test_a_load_past_the_cluster_cap_names_the_cap_and_the_load_that_fits() -> None:
    """65,536 copies of 1 card at 1,443 tok/s carry 65,536 x 1,443 = 94,568,448 tok/s; a 500M target is past it,
    and fits split over ceil(500,000,000 / 94,568,448) = ceil(5.29) = 6 clusters."""
    note = cluster_cap_note(MAX_CARDS * 1443.0, MAX_CARDS, 1, 1443.0, 5e8)
    assert f"binding: the cap of {MAX_CARDS:,} cards in all" in note
    assert "at most 94,568,448 output tokens/s (65,536 copies of 1 card at 1,443 each)" in note
    assert "a target up to 94,568,448 (the load split over 6 clusters)" in note


def test_recommend_past_the_cluster_cap_takes_the_size_that_carries_most_per_card() -> None:
    """Llama-3.1-8B on H100 at 1e9 tok/s: the cap binds. Its figure is the best copies of any size tried within
    the cap (most per card), not copies of the size with the most tok/s alone."""
    r = _run("recommend", "llama-3.1-8b", "--hardware", "h100_sxm", "--target-output-tokens-per-s", "1e9",
             "--cards", "1..8", "--format", "json")
    assert r.exit_code == 1
    m = re.search(r"at most ([\d,]+) output tokens/s \(([\d,]+) copies of (\d+) cards? at ([\d,]+) each\)", r.stderr)
    assert m, r.stderr
    most, copies, cards, each = (int(g.replace(",", "")) for g in m.groups())
    assert copies == MAX_CARDS // cards
    assert abs(most - copies * each) <= copies  # each is rounded to a whole tok/s


def test_a_many_copies_answer_writes_the_copies_with_thousands_separators() -> None:
    """The recommended line and its note read 34,644 copies as the table does, not 34644."""
    r = _run("recommend", "llama-3.1-8b", "--hardware", "h100_sxm", "--target-output-tokens-per-s", "3e6",
             "--cards", "1")
    assert r.exit_code == 0, r.output
    line = next(x for x in r.stdout.splitlines() if x.startswith("recommended"))
    copies = re.search(r"\): (\S+) x \(", line).group(1)
    assert "," in copies and int(copies.replace(",", "")) >= 1000


def test_every_column_of_the_sweeps_table_is_in_the_readmes_schema() -> None:
    text = README.read_text()
    schema = text[text.index("### The sweep's table"):text.index("A disaggregated sweep")]
    named = set(re.findall(r"`([a-z_]+)`", schema))
    assert [c for c in COLUMNS if c not in named] == []


def test_a_price_for_some_hardware_only_names_the_hardware_without_one() -> None:
    """A price for h200_sxm and none for b200_sxm: the answer is by cards, and the note says which price is missing
    rather than asking for every hardware's."""
    r = _run("recommend", "qwen3-8b", "--hardware", "h200_sxm", "b200_sxm", "--target-output-tokens-per-s", "1000",
             "--price", "h200_sxm=3", "--cards", "1..2")
    assert r.exit_code == 0, r.output
    assert "note: no --price for b200_sxm, so the answer is the fewest cards" in r.stdout
    assert "--price b200_sxm=USD_PER_CARD_HOUR" in r.stdout
