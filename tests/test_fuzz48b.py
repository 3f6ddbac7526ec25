"""Stop 48's fuzz on the merged code (seeds 915-918; tests/fuzz_cases.py strategies factors, calibrate_fit,
refused_model): the rules its findings broke."""
from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from solver.cli.main import main

ESTIMATE = ("estimate", "qwen3-8b", "--hardware", "h100_sxm", "--cards", "1", "--framework", "vllm", "--isl", "1024",
            "--osl", "128", "--concurrency", "8")


def _estimate_with(tmp_path: Path, pair: str):
    f = tmp_path / "f.yaml"
    f.write_text("factors:\n  vllm:\n    h100_sxm: {%s}\n" % pair)
    return CliRunner().invoke(main, [*ESTIMATE, "--factors", str(f)])


@pytest.mark.parametrize("value", ["true", '"0.9"'])
def test_a_factor_spelt_as_a_bool_or_a_quoted_number_is_refused(tmp_path: Path, value: str) -> None:
    res = _estimate_with(tmp_path, f"gemm: {value}")
    lines = res.stderr.strip().splitlines()
    assert res.exit_code == 2 and len(lines) == 1, res.output
    assert lines[0].startswith("error: --factors") and "factors.vllm.h100_sxm.gemm" in lines[0], lines[0]


def test_an_integer_factor_is_read_as_its_number(tmp_path: Path) -> None:
    res = _estimate_with(tmp_path, "gemm: 1")
    assert res.exit_code == 0, res.output
    assert "priced vllm x h100_sxm" in res.stderr


def test_a_pair_that_sets_no_factor_is_refused(tmp_path: Path) -> None:
    res = _estimate_with(tmp_path, "")
    lines = res.stderr.strip().splitlines()
    assert res.exit_code == 2 and len(lines) == 1, res.output
    assert "factors.vllm.h100_sxm: sets no factor" in lines[0], lines[0]
