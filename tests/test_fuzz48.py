"""Stop 48's fuzz (seeds 909-914, benchmarks/fuzz.py, with the "s48" strategies) and relations (seeds 30-35,
benchmarks/metamorphic.py): each finding's rule."""
from __future__ import annotations

from click.testing import CliRunner

from solver.cli.main import main

MEMORY = ["memory", "qwen3-8b", "--hardware", "h100_sxm", "--batch", "8", "--seq-len", "2048"]


def _errors(output: str) -> list[str]:
    return [ln for ln in output.splitlines() if ln.startswith("error:")]


def test_an_option_given_twice_with_two_values_is_refused_naming_both():
    """click keeps a repeated option's last value and drops the earlier silently (was: `--cards 1 --cards 2`
    answered for 2 cards)."""
    r = CliRunner().invoke(main, [*MEMORY, "--cards", "1", "--cards", "2"])
    assert r.exit_code == 2
    assert _errors(r.output) == ["error: --cards: given twice ('1', then '2'): only one value is read; give it once"]


def test_an_option_repeated_in_its_equals_spelling_is_refused():
    r = CliRunner().invoke(main, [*MEMORY, "--cards", "1", "--hardware=h200_sxm"])
    assert r.exit_code == 2 and _errors(r.output)[0].startswith("error: --hardware: given twice ('h100_sxm', then")


def test_a_short_option_with_its_value_attached_counts_as_given():
    r = CliRunner().invoke(main, ["sweep", "qwen3-8b", "--hardware", "h100_sxm", "--cards", "1", "--jobs", "1", "-j2"])
    assert r.exit_code == 2 and _errors(r.output)[0].startswith("error: --jobs: given twice ('1', then '2')")


def test_the_same_value_twice_drops_nothing_and_passes():
    r = CliRunner().invoke(main, [*MEMORY, "--cards", "1", "--cards", "1"])
    assert r.exit_code == 0, r.output


def test_an_option_that_takes_several_values_may_repeat():
    """sweep's --hardware gathers every device it is given (multiple=True): no value is dropped."""
    from solver.cli.capacity_cmds import COMMANDS
    from solver.cli.options import refuse_repeats

    sweep = next(c for c in COMMANDS if c.name == "sweep")
    refuse_repeats(sweep, ["qwen3-8b", "--hardware", "h100_sxm", "--hardware", "h200_sxm", "--cards", "1"])


def test_a_value_that_spells_an_option_is_a_value_not_a_repeat():
    """`check --command "... --cards 2"` is one token: the command's text, not a second --cards."""
    from solver.cli.check_cmd import COMMANDS
    from solver.cli.options import refuse_repeats

    check = next(c for c in COMMANDS if c.name == "check")
    refuse_repeats(check, ["--command", "--hardware", "--hardware", "h100_sxm"])


def test_an_sla_remedy_on_one_card_says_one_card():
    """The unmet strategy's remedy line counted one card in the plural ("on 1 cards")."""
    r = CliRunner().invoke(main, ["solve", "qwen3-8b", "--hardware", "h100_sxm", "--cards", "1", "--tpot-ms", "0.05",
                                  "--max-concurrency", "16", "--time-limit", "2"])
    assert r.exit_code == 1
    (line,) = _errors(r.output)
    assert "at concurrency 1 on 1 card (" in line and "SLA.tpot binds" in line


def test_a_request_no_plan_meets_is_answered_infeasible_naming_what_binds_and_what_would_fit():
    """The fuzz's `unmet` rule (tests/fuzz_cases.py explains_infeasible): exit 1, one error line with the binding
    constraint and a remedy: a TPOT no device reaches under recommend, weights over the cards' memory under solve."""
    import fuzz_cases as fc

    for argv in (["recommend", "qwen3-8b", "--hardware", "h100_sxm", "--tpot-ms", "0.05", "--cards", "1,2",
                  "--target-requests-per-s", "1", "--max-concurrency", "16", "--time-limit", "2"],
                 ["solve", "qwen3-235b-a22b", "--hardware", "h200_sxm", "--cards", "2", "--max-concurrency", "16",
                  "--time-limit", "2"]):
        r = CliRunner().invoke(main, argv)
        assert r.exit_code == 1 and fc.explains_infeasible(r.output), r.output


def test_the_memory_limit_is_written_at_the_memory_figures_digits():
    """solve's JSON wrote the memory per rank to 3 decimals and its limit to 2: a candidate at the edge read
    "81.604 GB of 81.6" beside memory_feasible true (Qwen3-235B-A22B-FP8 on 4 H100 under trtllm, relation R3
    figures_by_definition, seed 31). Both now at the memory figure's digits."""
    from solver.report.digits import DIGITS

    assert DIGITS["memory_limit_gb"] == DIGITS["memory_per_rank_gb"]
    r = CliRunner().invoke(main, ["solve", "qwen3-8b", "--hardware", "h100_sxm", "--cards", "1", "--max-concurrency",
                                  "16", "--time-limit", "2", "--format", "json"])
    import json

    est = json.loads(r.stdout)["candidates"][0]["estimation"]
    assert est["memory_limit_gb"] == 81.604  # 0.95 x 85.899 GB, not 81.6
