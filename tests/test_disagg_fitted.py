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


# The aggregated file's global factors (fitted once over every framework and hardware) on pairs without a fit: the
# disaggregated rows on GB200 / GB300 under SGLang run such pairs (benchmarks/README.md, "Disaggregated prefill/decode").


def _write_agg(tmp_path: Path) -> Path:
    p = tmp_path / "factors.yaml"
    p.write_text("global:\n  nvidia: {grouped_gemm: 0.25, allreduce_latency_s: 2.0e-05}\n"
                 "factors:\n  eng:\n    hwa: {gemm: 0.8, grouped_gemm: 0.25, allreduce_latency_s: 2.0e-05}\n")
    return p


def test_a_pair_without_a_fit_carries_the_global_factors(tmp_path: Path) -> None:
    from solver.specs.fitted import fitted_factors, fitted_global, pair_factors

    path = _write_agg(tmp_path)
    pairs, shared = fitted_factors(path), fitted_global("nvidia", path)
    assert shared == {"grouped_gemm": 0.25, "allreduce_latency_s": 2.0e-05}
    assert pair_factors(pairs, shared, "eng", "hwb") == shared
    # an engine the fit saw no row of: its profile stands but for the grouped-GEMM fraction (specs/fitted.CARRIED)
    assert pair_factors(pairs, shared, "other", "hwa") == {"grouped_gemm": 0.25}
    assert pair_factors(pairs, shared, "eng", "hwa") == {"gemm": 0.8, "grouped_gemm": 0.25,
                                                          "allreduce_latency_s": 2.0e-05}


def test_a_file_without_a_global_block_adds_nothing(tmp_path: Path) -> None:
    from solver.specs.fitted import fitted_global

    p = tmp_path / "old.yaml"
    p.write_text("factors:\n  eng:\n    hwa: {gemm: 0.8}\n")
    assert fitted_global("nvidia", p) == {}
    assert fitted_global("nvidia", tmp_path / "missing.yaml") == {}


def test_a_vendor_the_fit_saw_no_row_of_carries_only_the_grouped_gemm_fraction(tmp_path: Path) -> None:
    from solver.specs.fitted import fitted_global

    # grouped GEMMs lose to dense ones on every accelerator; the custom all-reduce's latency is the vendor's own
    assert fitted_global("huawei", _write_agg(tmp_path)) == {"grouped_gemm": 0.25}


def test_an_unfitted_hardware_runs_the_grouped_gemm_fraction_every_fitted_pair_runs() -> None:
    from solver.specs.fitted import fitted_factors, fitted_global
    from solver.specs.framework import load_framework

    shared = fitted_global("nvidia")
    assert "gb300" not in fitted_factors().get("sglang", {})  # the aggregated CSV has no SGLang GB300 row
    fw = load_framework("sglang")
    # the profile's multiplier (1.0) times the global fraction, as on a fitted pair
    assert fw.efficiency_for("gb300")["grouped_gemm"] == fw.efficiency.grouped_gemm * shared["grouped_gemm"]
    assert fw.efficiency_for("h200_sxm")["grouped_gemm"] == (
        fw.efficiency.grouped_gemm * fitted_factors()["sglang"]["h200_sxm"]["grouped_gemm"])
    # the generic profile (no calibration row) and an NPU (no row of its vendor) run it too, times their own
    # multiplier
    for name, hw in (("generic", "gb300"), ("cann-recipes", "atlas_a3")):
        other = load_framework(name)
        assert other.efficiency_for(hw)["grouped_gemm"] == other.efficiency.grouped_gemm * shared["grouped_gemm"]


def test_an_unfitted_pair_carries_its_engines_own_factors_too(tmp_path):
    """A pair without its own fit carries the global factors and its framework's per-engine ones (`engines`:
    seq_layer_s, the engine's decode kernels), for the vendor the fit saw; another vendor gets only the grouped-GEMM
    fraction."""
    from solver.specs.fitted import fitted_global

    p = tmp_path / "factors.yaml"
    p.write_text("global:\n  nvidia:\n    grouped_gemm: 0.25\n"
                 "engines:\n  eng:\n    nvidia:\n      seq_layer_s: 1.0e-06\n"
                 "factors:\n  eng:\n    hwa:\n      gemm: 0.8\n      grouped_gemm: 0.25\n      seq_layer_s: 1.0e-06\n")
    assert fitted_global("nvidia", p, framework="eng") == {"grouped_gemm": 0.25, "seq_layer_s": 1.0e-06}
    assert fitted_global("nvidia", p, framework="other") == {"grouped_gemm": 0.25}
    assert fitted_global("amd", p, framework="eng") == {"grouped_gemm": 0.25}


def test_an_engine_or_vendor_without_a_fit_carries_the_weight_only_gemm_fraction_too(tmp_path: Path) -> None:
    from solver.specs.fitted import fitted_factors, fitted_global, pair_factors

    # weight-only experts run without grouped_gemm: left at 1 they would run at the dense 16-bit GEMM's rate
    p = tmp_path / "factors.yaml"
    p.write_text("global:\n  nvidia: {grouped_gemm: 0.25, dequant_gemm: 0.5, allreduce_latency_s: 2.0e-05}\n"
                 "factors:\n  eng:\n    hwa: {gemm: 0.8, grouped_gemm: 0.25, dequant_gemm: 0.5}\n")
    assert fitted_global("huawei", p) == {"grouped_gemm": 0.25, "dequant_gemm": 0.5}
    assert pair_factors(fitted_factors(p), fitted_global("nvidia", p), "other", "hwa") == {
        "grouped_gemm": 0.25, "dequant_gemm": 0.5}
