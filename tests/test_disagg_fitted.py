"""The disaggregated factor file (solver/frameworks/fitted/disagg.yaml): a pair's fit, else its framework's
pooled fit, else the estimator's default."""
from __future__ import annotations

from pathlib import Path

from solver.specs.disagg_fitted import burst_share, disagg_factors


def _write(tmp_path: Path) -> Path:
    p = tmp_path / "disagg.yaml"
    p.write_text("factors:\n  eng:\n    _pooled: {burst_share: 0.5, rows: 9}\n    hwa: {burst_share: 0.9, rows: 6}\n")
    return p


def test_a_fitted_pair_uses_its_own_factor(tmp_path: Path) -> None:
    assert burst_share("eng", "hwa", _write(tmp_path)) == 0.9


def test_an_unfitted_pair_takes_the_frameworks_pooled_fit(tmp_path: Path) -> None:
    assert disagg_factors("eng", "hwb", _write(tmp_path)) == {"burst_share": 0.5}


def test_an_unfitted_framework_gets_the_estimators_default(tmp_path: Path) -> None:
    assert burst_share("other", "hwa", _write(tmp_path)) is None
    assert disagg_factors("eng", "hwa", tmp_path / "missing.yaml") == {}


def test_rows_read_from_the_csv_carry_their_pairs_fit() -> None:
    from solver.measured_disagg import case_from_disagg_row
    from test_disagg_csv import ROW

    c = case_from_disagg_row(ROW)
    assert c.workload.burst_share == burst_share(c.decode.framework.name, c.decode.hw.name)
