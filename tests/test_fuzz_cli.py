"""The fuzz generator's fast subset (tests/fuzz_cases.py): generated command lines over every subcommand with
bad option values and mutated files; none may end in a traceback or accept what the generator's own rules call
invalid. The long run (>= 3,000 cases, with the slow valid solves) is benchmarks/fuzz.py."""
from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

import fuzz_cases as fc

FX: fc.Fixtures | None = None


def _fixtures(tmp: Path) -> fc.Fixtures:
    global FX
    if FX is None:
        FX = fc.build_fixtures(tmp)
    return FX


@pytest.fixture(scope="module")
def fixtures(tmp_path_factory) -> fc.Fixtures:
    return _fixtures(tmp_path_factory.mktemp("fuzz"))


def test_fuzzed_command_lines_never_trace_back_nor_accept_invalid_input(fixtures: fc.Fixtures) -> None:
    @settings(max_examples=40, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(case=fc.cases(fixtures, fast=True))
    def one(case: fc.Case) -> None:
        code, out, exc = fc.run_in_process(case)
        kind = fc.classify(case, code, out, exc)
        if case.family == "model-config" and kind == "traceback":
            return  # model-field parsing is the layers work's (benchmarks/fuzz.py lists these)
        assert kind not in fc.FAILURES, f"{kind}: shardplan {' '.join(case.argv)} -> {code}: {fc.stderr_tail(out)}"
        if code == 2:
            err = [ln for ln in out.splitlines() if ln.startswith("error:")]
            assert len(err) == 1, out

    one()


@pytest.mark.slow  # the generator drawn over every subcommand (~13 s)
def test_the_generator_labels_every_subcommand_both_ways(fixtures: fc.Fixtures) -> None:
    """The labels must mean something: each subcommand gets valid and invalid cases."""
    seen: dict[str, set[str]] = {}

    @settings(max_examples=1500, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(case=fc.cases(fixtures))
    def collect(case: fc.Case) -> None:
        seen.setdefault(case.cmd, set()).add(case.label)

    collect()
    assert set(seen) == set(fc.SUBCOMMANDS)
    for cmd, labels in seen.items():
        assert "valid" in labels, cmd
        if cmd not in ("models", "hardware"):
            assert "invalid" in labels, cmd
