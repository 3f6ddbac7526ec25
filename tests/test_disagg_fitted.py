"""The disaggregated factors file (solver/frameworks/fitted/disagg.yaml): a pair's fit, else its framework's
pooled fit, else the estimator's defaults; and the rows read from the CSV carry them."""
from __future__ import annotations

from pathlib import Path

from solver.specs.disagg_fitted import burst_share, disagg_factors, handoff_s


def _write(tmp_path: Path) -> Path:
    p = tmp_path / "disagg.yaml"
    p.write_text("factors:\n  eng:\n    _pooled: {handoff_s: 0.1, burst_share: 0.5, rows: 9}\n"
                 "    hwa: {handoff_s: 0.02, burst_share: 0.9, rows: 6}\n")
    return p


def test_a_fitted_pair_uses_its_own_factors(tmp_path: Path) -> None:
    p = _write(tmp_path)
    assert handoff_s("eng", "hwa", p) == 0.02 and burst_share("eng", "hwa", p) == 0.9


def test_an_unfitted_pair_takes_the_frameworks_pooled_fit(tmp_path: Path) -> None:
    p = _write(tmp_path)
    assert disagg_factors("eng", "hwb", p) == {"handoff_s": 0.1, "burst_share": 0.5}


def test_an_unfitted_framework_gets_the_estimators_defaults(tmp_path: Path) -> None:
    p = _write(tmp_path)
    assert handoff_s("other", "hwa", p) == 0.0 and burst_share("other", "hwa", p) is None
    assert disagg_factors("eng", "hwa", tmp_path / "missing.yaml") == {}
