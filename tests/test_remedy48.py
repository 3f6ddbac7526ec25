"""Every remedy the CLI names, applied, works (benchmarks/remedies.py runs them at random; these are its findings,
one hand-written case per remedy fixed): the value a remedy quotes passes when given back as the flag, and a remedy
checked with something set aside says what it set aside."""
from __future__ import annotations

import math
import re

import pytest
from click.testing import CliRunner

from solver.cli.main import main as cli
from solver.errors import three_figures


def _run(*argv: str) -> tuple[int, str]:
    res = CliRunner(env={"COLUMNS": "400"}).invoke(cli, list(argv), catch_exceptions=False)
    return res.exit_code, res.stderr


def _with(argv: tuple[str, ...], flag: str, value: str | None) -> tuple[str, ...]:
    """argv with `flag` set to `value` (None: dropped), appended where absent."""
    out, skip = [], False
    for i, a in enumerate(argv):
        if skip:
            skip = False
            continue
        if a == flag:
            skip = True
            continue
        out.append(a)
    return tuple(out) + ((flag, value) if value is not None else ())


@pytest.mark.parametrize("value", [33.14, 33.1, 478.65, 4424.0, 0.01234, 999.6, 15.94, 100.0, 1234567.0])
def test_a_figure_rounded_up_to_three_figures_is_never_below_it_and_one_step_less_is(value: float) -> None:
    shown = float(three_figures(value, up=True).replace(",", ""))
    step = 10.0 ** (math.floor(math.log10(shown)) - 2)
    assert shown >= value and shown - step < value * (1 - 1e-12)


def test_the_fastest_configuration_an_sla_remedy_quotes_passes_at_the_figures_quoted() -> None:
    """Llama-3.1-70B on 2 H100 under TTFT 50 ms / TPOT 5 ms: the remedy quoted TPOT 33.1 ms for a TPOT of 33.14 ms,
    and --tpot-ms 33.1 was still refused; the figures are now rounded up (33.2), so the SLA as quoted is met."""
    argv = ("solve", "llama-3.1-70b", "--hardware", "h100_sxm", "--cards", "2", "--ttft-ms", "50", "--tpot-ms", "5")
    code, err = _run(*argv)
    m = re.search(r"shows TPOT ([\d.]+) ms, TTFT ([\d,]+) ms", err)
    assert code == 1 and m, err
    assert m.group(1) == "31.6"  # its decode step at one sequence (33.2 before stop 49)
    fixed = _with(_with(argv, "--tpot-ms", m.group(1)), "--ttft-ms", m.group(2).replace(",", ""))
    assert _run(*fixed)[0] == 0


def test_an_sla_remedy_names_the_smallest_concurrency_that_has_a_configuration_once_the_sla_is_set_aside() -> None:
    """Qwen3-235B on 16 Atlas A2 under cann-recipes, TTFT 150 ms: the smallest concurrency has no configuration
    (cann-recipes' batch rules), and the remedy was a bare 'relax --ttft-ms'; it now reads the next concurrency's
    fastest configuration, whose TTFT passes as the SLA."""
    argv = ("solve", "qwen3-235b-a22b", "--hardware", "atlas_a2", "--cards", "16", "--framework", "cann-recipes",
            "--ttft-ms", "150", "--time-limit", "3")
    code, err = _run(*argv)
    m = re.search(r"relax --ttft-ms: the configuration with the least TTFT at concurrency (\d+) .* shows TTFT ([\d,]+) ms", err)
    assert code == 1 and m, err
    assert _run(*_with(argv, "--ttft-ms", m.group(2).replace(",", "")))[0] == 0


def test_a_disaggregated_sla_floor_passes_as_the_sla_quoted() -> None:
    """Gemma-3-4B disaggregated on 2 GB200, TTFT 30 ms: the floor was printed with :.3g (rounded either way, and in
    exponent form past 999); --ttft-ms at the floor as printed is now met."""
    argv = ("solve", "gemma-3-4b", "--hardware", "gb200", "--framework", "trtllm", "--cards", "2", "--serving",
            "disagg", "--isl", "8192", "--osl", "1024", "--ttft-ms", "30", "--time-limit", "3")
    code, err = _run(*argv)
    m = re.search(r"the lowest TTFT is ([\d,.]+) ms", err)
    assert code == 1 and m, err
    assert _run(*_with(argv, "--ttft-ms", m.group(1).replace(",", "")))[0] == 0


def test_a_memory_remedy_checked_with_the_slas_set_aside_says_so_and_works_without_them() -> None:
    """EXAONE-4.0-32B on 1 A100 at ISL 500,000 under TTFT 30 / TPOT 12 ms: '--isl 238443 or shorter (...; the
    planner found a configuration there)' was checked without the SLAs, and with them it still failed; the line
    now says 'SLAs aside', and so applied (the SLAs dropped) it plans."""
    argv = ("solve", "exaone-4.0-32b", "--hardware", "a100_sxm", "--cards", "1", "--framework", "trtllm", "--isl",
            "500000", "--osl", "256", "--ttft-ms", "30", "--tpot-ms", "12", "--time-limit", "3")
    code, err = _run(*argv)
    m = re.search(r"--isl (\d+) or shorter \([^()]*the planner found a configuration there, SLAs aside\)", err)
    assert code == 1 and m, err
    assert _run(*_with(_with(_with(argv, "--isl", m.group(1)), "--ttft-ms", None), "--tpot-ms", None))[0] == 0


def test_a_smaller_concurrency_is_offered_with_the_most_requests_the_cards_hold_and_only_where_one_fits() -> None:
    """'a smaller --concurrency' was offered wherever --concurrency was given, even where the weights alone exceed
    the cards (DeepSeek-V4-Pro on 1 H800); it now names the most requests the planner confirms, or nothing."""
    code, err = _run("solve", "deepseek-v4-pro", "--hardware", "h800", "--cards", "1", "--concurrency", "64",
                     "--isl", "8192", "--osl", "1024", "--framework", "vllm")
    assert code == 1 and "--concurrency" not in err.split("what would fit")[1], err
    argv = ("solve", "llama-3.1-70b", "--hardware", "h100_sxm", "--cards", "4", "--isl", "32768", "--concurrency",
            "256")
    code, err = _run(*argv)
    m = re.search(r"--concurrency ([\d,]+)(?: or fewer)? \(the most requests 4 x h100_sxm hold", err)
    assert code == 1 and m, err
    assert _run(*_with(argv, "--concurrency", m.group(1).replace(",", "")))[0] == 0


def test_a_disaggregated_sla_is_not_offered_alone_where_no_deployment_fits_with_it_set_aside() -> None:
    """Mixtral-8x22B disaggregated on 4 L40S under TTFT 800 / TPOT 40 ms: memory binds every worker, and the
    remedy listed 'relax --ttft-ms' beside the cards, though nothing fits with it relaxed; it now lists what fits."""
    argv = ("solve", "mixtral-8x22b", "--hardware", "l40s", "--framework", "vllm", "--cards", "4", "--serving",
            "disagg", "--isl", "32768", "--osl", "512", "--ttft-ms", "800", "--tpot-ms", "40", "--time-limit", "3")
    code, err = _run(*argv)
    assert code == 1 and "relax --" not in err, err
    m = re.search(r"(\d+) cards in total \([^:]*: the planner found a configuration for each, SLAs aside\)", err)
    assert m, err
    assert _run(*_with(_with(_with(argv, "--cards", m.group(1)), "--ttft-ms", None), "--tpot-ms", None))[0] == 0


def test_the_disaggregated_cards_in_total_name_a_given_concurrency_as_set_aside() -> None:
    """MiniMax-M1 disaggregated on 4 MI355X at --concurrency 512: '8 cards in total (... a configuration for
    each)' was found at one request; on 8 cards 512 requests are still refused, so the line names the concurrency
    it set aside."""
    code, err = _run("solve", "minimax-m1", "--hardware", "mi355x", "--cards", "4", "--serving", "disagg", "--isl",
                     "8192", "--osl", "1024", "--concurrency", "512", "--time-limit", "3")
    assert code == 1 and re.search(r"\d+ cards in total \([^:]*: the planner found a configuration for each, at one "
                                   r"request \(--concurrency 512 aside\)\)", err), err


def test_recommend_says_the_planners_remedy_is_for_a_configuration_with_the_load_aside() -> None:
    """DeepSeek-R1 on Atlas A3, 1..16 cards, one copy: no size has a configuration, and 'what would fit: 24 cards
    fit' then fell short of the load on 24 cards; the remedy now says it is for a configuration, the load aside,
    and on 24 cards a configuration is found (the answer is a shortfall of the load, not a refusal of the size)."""
    argv = ("recommend", "deepseek-r1", "--hardware", "atlas_a3", "--framework", "cann-recipes",
            "--target-output-tokens-per-s", "2000", "--cards", "1..16", "--max-copies", "1", "--time-limit", "3")
    code, err = _run(*argv)
    m = re.search(r"what would fit \(a configuration on 16 cards, the load target aside\): (\d+) cards fit", err)
    assert code == 1 and m and "what would fit:" not in err, err
    code, err = _run(*_with(argv, "--cards", m.group(1)))
    assert code == 0 or "the most found is" in err, err


def test_allow_cross_node_is_offered_only_at_a_size_the_planner_finds_a_configuration_with_it() -> None:
    """'the planner found none at 72, 80, 84 cards ... with TP inside a node (try --allow-cross-node)': DeepSeek-V3.2
    on Atlas A3 under cann-recipes at ISL 500,000 finds none with the flag either, so the hint is gone; LongCat-Flash
    on RTX PRO 6000 names the size the planner found with it, and that rerun plans."""
    code, err = _run("solve", "deepseek-v3.2", "--hardware", "atlas_a3", "--framework", "cann-recipes", "--cards", "4",
                     "--isl", "500000", "--concurrency", "64", "--time-limit", "3")
    assert code == 1 and "found none at" in err and "--allow-cross-node" not in err, err
    argv = ("solve", "longcat-flash", "--hardware", "rtx_pro_6000_blackwell", "--framework", "sglang", "--cards", "1",
            "--isl", "500000", "--ttft-ms", "800", "--time-limit", "3")
    code, err = _run(*argv)
    m = re.search(r"(\d+) cards with --allow-cross-node \(the planner found a configuration there, SLAs aside\)", err)
    assert code == 1 and m, err
    assert _run(*_with(_with(argv, "--cards", m.group(1)), "--ttft-ms", None), "--allow-cross-node")[0] == 0
