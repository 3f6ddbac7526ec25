"""Stop 48: speculative decoding as the engines count it. `--mtp-accept` is each draft's chance of acceptance once
the drafts before it stood (tokens per step = 1 + a + ... + a^N); the engines log that sum as their mean acceptance
length and a different rate, accepted / drafted (vLLM 0.34.0 v1/spec_decode/metrics.py, SGLang 0.5.23
metrics_reporter.py spec_accept_rate), which a user must not pass as --mtp-accept at N > 1."""
from __future__ import annotations

import pytest
from click.testing import CliRunner

from solver.cli.main import main
from solver.estimate.workload import Workload, engine_accept_rate, mtp_tokens_per_step
from solver.rank.explain import mtp_clause
from solver.specs.model_catalog import load_model


def test_the_engines_acceptance_rate_is_accepted_over_drafted() -> None:
    """Depth 3 at 0.7 per draft: 2.533 tokens per step, 1.533 accepted of 3 drafted = 51.1%; at depth 1 the two
    rates are one number."""
    assert mtp_tokens_per_step(3, 0.7) == pytest.approx(2.533)
    assert engine_accept_rate(3, 0.7) == pytest.approx(1.533 / 3)
    assert engine_accept_rate(1, 0.7) == pytest.approx(0.7)


def test_the_engines_rate_is_below_the_per_draft_chance_deeper_than_one_draft() -> None:
    """A later draft stands only if every earlier one did, so the mean over positions falls short of a."""
    for a in (0.3, 0.7, 0.95):
        for n in (2, 3, 5):
            assert engine_accept_rate(n, a) < a


def test_the_mtp_accept_help_says_which_engine_figure_it_takes() -> None:
    """estimate's and solve's --help name the per-position rate and warn off the accepted / drafted rate."""
    for cmd in ("estimate", "solve"):
        text = " ".join(CliRunner().invoke(main, [cmd, "--help"], terminal_width=400).output.split())
        assert "per-position acceptance rate at position 1" in text, cmd
        assert "not the engines' accepted / drafted rate" in text, cmd


def test_the_explain_mtp_line_gives_the_rate_the_engines_log() -> None:
    """Depth 3 at 0.7: the line says the engines log 2.53 as their mean acceptance length and a 51.1% accepted /
    drafted rate, the figures a running server's metrics are held against."""
    line, = mtp_clause(load_model("mimo-7b-base"),
                       Workload("serving", isl=1024, osl=128, concurrency=8, mtp=3, mtp_accept=0.7))
    assert "= 2.53 tokens per decode step" in line
    assert "mean acceptance length, and an accepted / drafted rate of 51.1%" in line
