"""The accuracy pipeline: CSV rows -> specs (blank-cell convention), serving formulas, fitted factors, benchmark."""
from __future__ import annotations

import math
from dataclasses import replace
import sys
from pathlib import Path

import pytest

from solver.errors import InputError
from solver.estimate.serving import (
    ServingShape, Workload, first_wave_groups, serving_times,
)
from solver.measured import case_from_row, parallel_sizes, predict_row, predict_rows, weight_formats
from solver.specs.framework import list_frameworks, load_framework
from solver.specs.hardware_catalog import list_hardware, load_hardware
from solver.specs.precision import resolve_precision
from solver.specs.model_catalog import load_model
from solver.specs.validation import load_yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))
import accuracy  # noqa: E402
import accuracy_rows  # noqa: E402
import fit_efficiency  # noqa: E402

CSV = accuracy_rows.DEFAULT_CSV
needs_csv = pytest.mark.skipif(not CSV.is_file(), reason="calibration CSV (../shared/facts) not present")

ROW = {"backend": "trtllm", "model": "Qwen/Qwen3-235B-A22B-FP8", "system": "h100_sxm", "precision": "fp8",
       "gemm_quant_mode": "fp8_block", "moe_quant_mode": "fp8_block", "isl": "512", "osl": "256",
       "concurrency": "8", "tp": "4", "pp": "1", "attention_dp": "1", "moe_tp": "1", "moe_ep": "4"}


# ------------------------------------------------------------------------------------------ every CSV row


@needs_csv
def test_every_csv_row_evaluates_or_raises_input_error() -> None:
    rows = accuracy_rows.load_rows(CSV)
    assert len(rows) >= 300
    out = predict_rows(rows)  # batch mode: only InputError is turned into the error column
    ok = [r for r in out if not r["error"]]
    bad = [r for r in out if r["error"]]
    assert len(ok) >= 0.95 * len(rows)
    for r in ok:
        assert r["pred_ttft_ms"] > 0 and r["pred_tpot_ms"] > 0 and math.isfinite(r["pred_ttft_ms"])
    known_columns = {"attention_dp", "moe_tp", "moe_ep", "tp", "pp", "model", "system", "backend", "precision",
                     "gemm_quant_mode", "moe_quant_mode", "isl", "osl", "concurrency"}
    for r in bad:
        assert r["error"].split(":")[0] in known_columns, r["error"]  # the message names the column


# ------------------------------------------------------------------------------------------ blank-cell convention


def test_blank_attention_dp_is_one_and_blank_moe_columns_follow_the_world() -> None:
    assert parallel_sizes({**ROW, "attention_dp": ""}, is_moe=True) == (4, 1, 1, 4)
    assert parallel_sizes({**ROW, "attention_dp": float("nan")}, is_moe=True) == (4, 1, 1, 4)
    assert parallel_sizes({**ROW, "moe_tp": ""}, is_moe=True) == (4, 1, 1, 4)  # world / moe_ep
    assert parallel_sizes({**ROW, "moe_ep": ""}, is_moe=True) == (4, 1, 1, 4)  # world / moe_tp
    assert parallel_sizes({**ROW, "moe_tp": "", "moe_ep": ""}, is_moe=True) == (4, 1, 4, 1)  # TP over the world
    assert parallel_sizes({**ROW, "tp": "2", "attention_dp": "4", "moe_tp": "", "moe_ep": "8"}, True) == (2, 4, 1, 8)
    assert parallel_sizes({**ROW, "moe_tp": "", "moe_ep": ""}, is_moe=False) == (4, 1, 4, 1)  # dense: moe_tp = tp


@pytest.mark.parametrize("col", ["tp", "attention_dp", "moe_tp", "moe_ep", "isl", "osl", "concurrency"])
@pytest.mark.parametrize("value", ["0", "-2", "0.0"])
def test_zero_or_negative_sizes_name_the_column(col: str, value: str) -> None:
    with pytest.raises(InputError) as err:
        case_from_row({**ROW, col: value})
    assert err.value.field == col


def test_inconsistent_moe_split_and_unknown_names_name_the_column() -> None:
    for patch, col in (({"moe_tp": "2", "moe_ep": "1"}, "moe_tp"), ({"model": "no/such"}, "model"),
                       ({"system": "h300"}, "system"), ({"backend": "nope"}, "backend"),
                       ({"gemm_quant_mode": "fp7"}, "gemm_quant_mode"), ({"tp": ""}, "tp"), ({"pp": "2"}, "pp")):
        with pytest.raises(InputError) as err:
            case_from_row({**ROW, **patch})
        assert err.value.field == col, patch


def test_blank_quant_takes_the_precision_column_then_the_checkpoint() -> None:
    assert weight_formats({**ROW, "gemm_quant_mode": "", "moe_quant_mode": ""}) == ("fp8", "fp8")
    assert weight_formats({**ROW, "precision": "fp4", "gemm_quant_mode": "", "moe_quant_mode": ""}) == \
        ("nvfp4", "nvfp4")
    assert weight_formats({**ROW, "precision": "", "gemm_quant_mode": "", "moe_quant_mode": ""}) == (None, None)
    case = case_from_row({**ROW, "precision": "", "gemm_quant_mode": "", "moe_quant_mode": ""})
    assert case.prec.fmt("experts").name == "fp8_block"  # the checkpoint's own format


def test_hopper_runs_4bit_weights_weight_only_and_atlas_rejects_fp8() -> None:
    case = case_from_row({**ROW, "model": "openai/gpt-oss-120b", "system": "h200_sxm", "precision": "fp4",
                          "gemm_quant_mode": "nvfp4", "moe_quant_mode": "nvfp4", "tp": "1", "moe_ep": "1"})
    assert case.prec.fmt("experts").name == "nvfp4"
    assert case.prec.gemm_dtype("experts") == "fp8"  # dequantized in-kernel, FP8 activations (fp4 not in W4A16_ON_DEVICES_WITHOUT)
    assert any("weight-only" in n for n in case.prec.notes)
    a3 = load_hardware("atlas_a3")
    assert "int4" in a3.weight_only_formats and "fp8" not in a3.weight_only_formats
    model = load_model("Qwen/Qwen3-235B-A22B")
    assert resolve_precision(model, a3, weight_dtype="w4a8").gemm_dtype("dense") == "int8"  # W4A8 spelled
    assert resolve_precision(model, a3, weight_dtype="int4").gemm_dtype("dense") == "bf16"  # W4A16
    with pytest.raises(InputError) as err:
        resolve_precision(model, a3, weight_dtype="fp8")
    assert err.value.field == "--weight-dtype"
    with pytest.raises(InputError) as err:
        case_from_row({**ROW, "system": "atlas_a3"})
    assert err.value.field == "gemm_quant_mode"


def test_a_moe_size_mismatch_says_a_blank_attention_dp_was_read_as_1() -> None:
    """The calibration CSV's vLLM Qwen3-235B rows leave attention_dp blank beside moe_tp 2: tp 1 x (blank -> 1)
    = 1 rank, moe_tp 2 x moe_ep 1 = 2; the line says which cell was read as what."""
    row = {"tp": "1.0", "attention_dp": "", "moe_tp": "2.0", "moe_ep": "1.0"}
    try:
        parallel_sizes(row, is_moe=True)
    except InputError as exc:
        assert exc.field == "moe_tp"
        assert exc.problem == "moe_tp x moe_ep = 2 differs from tp x attention_dp = 1 (attention_dp blank, read as 1)"
    else:
        raise AssertionError("a mismatch must be refused")


def test_a_zero_moe_cell_on_a_moe_model_says_zero_stands_only_for_a_dense_models_column() -> None:
    row = {"tp": "4", "attention_dp": "1", "moe_tp": "0", "moe_ep": "4"}
    with pytest.raises(InputError, match="0 on a MoE model") as err:
        parallel_sizes(row, is_moe=True)
    assert err.value.field == "moe_tp"
    assert parallel_sizes(row, is_moe=False) == (4, 1, 4, 1)  # dense: 0 = not applicable


# ------------------------------------------------------------------------------------------ serving formulas


def test_first_wave_groups_is_the_mean_of_ceil() -> None:
    for requests in (1, 5, 16, 17):
        for n in (1, 3, 8):
            exact = sum(math.ceil(i / n) for i in range(1, requests + 1)) / requests
            assert first_wave_groups(requests, n) == pytest.approx(exact)


def test_serving_times_limits() -> None:
    wl = Workload("serving", isl=1024, osl=512, concurrency=8, request_overhead_s=0.0, benchmark_waves=1)
    shape = ServingShape(per_replica=8, running=8, prompts_per_step=8, chunks=1)
    t = serving_times(shape, prefill_s=0.1, decode_s=0.01, wl=wl)
    assert t.ttft_s == pytest.approx(0.1)  # one wave, all eight prompts in one step
    assert t.tpot_s > 0.01  # prefill of later requests stalls the decode steps
    many = serving_times(shape, 0.1, 0.01, replace(wl, benchmark_waves=1000))
    assert many.ttft_s < t.ttft_s  # later waves are staggered
    # KV capacity below the concurrency: all but the first 8 of the run's 16 requests wait for a slot, a whole
    # request time each turn
    capped = serving_times(ServingShape(16, 8, 8, 1), 0.1, 0.01, wl)
    assert capped.slot_wait_s == pytest.approx(t.request_s * (1 - 8 / 16), rel=0.05)


def test_estimate_serving_reports_its_parts() -> None:
    est = predict_row(ROW)
    assert est.ttft_s > est.ttft_steady_s > 0
    assert 0 <= est.prefill_share < 1
    assert est.running_per_replica == 8
    assert est.output_tokens_per_s == pytest.approx(8 * 256 / (est.ttft_s + 255 * est.tpot_s), rel=1e-6)


# ------------------------------------------------------------------------------------------ fitted factors


def test_fitted_factors_load_are_per_framework_and_hardware_and_within_bounds() -> None:
    path = accuracy_rows.FACTORS_YAML
    assert path.is_file()
    assert "benchmarks/fit_efficiency.py" in path.read_text().splitlines()[1]  # how it was produced
    data = load_yaml(path)
    assert set(data) == {"factors", "global", "engines"}
    frameworks, hardware = set(list_frameworks()), set(list_hardware())
    shared = set()
    for fw, per_hw in data["factors"].items():
        assert fw in frameworks  # no model keys: framework -> hardware -> factor only
        for hw, values in per_hw.items():
            assert hw in hardware
            assert set(values) <= set(accuracy_rows.PARAMS) | set(accuracy_rows.FRAMEWORK_PARAMS) | set(accuracy_rows.GLOBAL_PARAMS)
            for key, value in values.items():
                lo, hi = accuracy_rows.BOUNDS[key]
                assert lo <= value <= hi, (fw, hw, key, value)
            eff = load_framework(fw).efficiency_for(hw)
            assert eff["request_overhead_s"] == values["request_overhead_s"]
            assert eff["grouped_gemm"] == pytest.approx(values["grouped_gemm"])
            shared.add(values["grouped_gemm"])
    assert len(shared) == 1  # fitted once over all rows: one value, not one per pair
    # the global block carries it for the fitted rows' vendor; a pair the file does not list of that vendor runs
    # it too, and so do a framework the fit never saw and a vendor it saw no row of (specs/fitted.CARRIED), while
    # their other factors stay the profile's and the hardware's
    assert {v["grouped_gemm"] for v in data["global"].values()} == shared
    value = shared.pop()
    assert load_framework("sglang").efficiency_for("gb300")["grouped_gemm"] == pytest.approx(value)
    for fw, hw in (("cann-recipes", "atlas_a3"), ("generic", "h200_sxm"), ("vllm", "mi355x")):
        eff = load_framework(fw).efficiency_for(hw)
        assert eff["grouped_gemm"] == pytest.approx(value)
        assert "request_overhead_s" not in eff and "seq_layer_s" not in eff
    # the per-engine factors: one value per framework, in its pairs and in the `engines` block for its others
    for fw, per_hw in data["factors"].items():
        for key in accuracy_rows.FRAMEWORK_PARAMS:
            (value,) = {v[key] for v in per_hw.values()}
            assert {e[key] for e in data["engines"][fw].values()} == {value}
            assert load_framework(fw).efficiency_for("gb300")[key] == pytest.approx(value)


def test_the_refit_file_names_its_csv_by_content_not_by_the_day(tmp_path: Path) -> None:
    csv_path = tmp_path / "rows.csv"
    csv_path.write_text("id\n1\n")
    factors = {"vllm": {"h200_sxm": {"gemm": 0.9, "seq_layer_s": 1e-7}}}
    text = fit_efficiency.render_yaml(factors, csv_path, 1)
    assert text == fit_efficiency.render_yaml(factors, csv_path, 1)
    assert f"from rows.csv (sha256 {fit_efficiency.csv_digest(csv_path)}...)" in text.splitlines()[1]
    assert " on 20" not in text.splitlines()[1]


def test_check_mode_passes_on_an_identical_file_and_fails_with_a_diff(tmp_path: Path, capsys) -> None:
    shipped = tmp_path / "factors.yaml"
    shipped.write_text("a: 1\n")
    assert fit_efficiency.check_shipped("a: 1\n", shipped) == 0
    assert fit_efficiency.check_shipped("a: 2\n", shipped) == 1
    assert "-a: 1\n+a: 2" in capsys.readouterr().out


def test_the_refit_without_its_csv_is_one_error_line_and_exit_2(tmp_path: Path, capsys) -> None:
    assert fit_efficiency.main(["--csv", str(tmp_path / "none.csv"), "--dry-run"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: --csv:") and "no such file" in err[0]


# ------------------------------------------------------------------------------------------ benchmark smoke


@needs_csv
def test_accuracy_functions_on_a_handful_of_rows() -> None:
    rows = accuracy_rows.load_rows(CSV)
    pick = [r for r in rows if r["backend"] == "trtllm" and r["system"] == "h100_sxm"][:14]
    prepared, skipped = accuracy_rows.prepare_all(pick)
    assert len(prepared) + len(skipped) == len(pick) and len(prepared) >= 8
    assert accuracy_rows.check_fast_path(prepared, limit=4) < 1e-9  # the fast path is the estimator
    et, ep = accuracy.errors(prepared, lambda p: accuracy_rows.profile_params(p, accuracy_rows.load_factors()))
    assert len(et) == len(prepared) and all(map(math.isfinite, et)) and all(map(math.isfinite, ep))
    med, mean, p90 = accuracy.summary(ep)
    assert 0 <= med <= p90
    lines = accuracy.table(prepared, et, ep, "smoke")
    assert lines[2].startswith("ALL")
    fitted = fit_efficiency.fit_group(prepared)
    assert fitted is not None and set(fitted) == set(accuracy_rows.PARAMS)
    for key, value in fitted.items():
        lo, hi = accuracy_rows.BOUNDS[key]
        assert lo <= value <= hi
    assert fit_efficiency.fit_group(prepared[:3]) is None  # below the minimum: no fit
    et2, ep2, notes = accuracy.loo_errors(prepared, fit_efficiency.fit_group)
    assert not any(math.isnan(x) for x in et2)


# ------------------------------------------------------------------------------------------ residuals


@needs_csv
@pytest.mark.parametrize("backend", ["sglang", "vllm"])  # prefill_first cohorts, decode_first steady state
def test_residual_parts_add_up_to_the_predicted_ttft(backend: str) -> None:
    rows = [r for r in accuracy_rows.load_rows(CSV) if r["backend"] == backend][:6]
    prepared, _ = accuracy_rows.prepare_all(rows)
    fitted = accuracy_rows.load_factors()
    for p in prepared:
        params = accuracy_rows.profile_params(p, fitted)
        r = accuracy.residual(p, params)
        assert r.predicted_s == pytest.approx(accuracy_rows.predict(p, params)[0], rel=1e-12)
        parts = r.front_end_s + r.first_token_s + r.queue_prefill_s + r.slot_wait_s
        assert parts == pytest.approx(r.predicted_s, rel=1e-9)
        assert min(r.front_end_s, r.first_token_s, r.queue_prefill_s, r.slot_wait_s) >= 0
        assert r.prefill_groups == math.ceil(p.shape.running / p.shape.prompts_per_step)
        assert r.log_error == pytest.approx(math.log(p.ttft_s / r.predicted_s))


def test_source_is_read_from_the_row_id() -> None:
    assert accuracy.source_of({"id": "2026_04_06_gpt_oss_120b_h200_sxm_vllm_fp4_agg_1024x1024_c8"}) == "dated sweeps"
    assert accuracy.source_of({"id": "dsr1_b200_sglang_fp4_agg_1024x1024_c16_cfg99"}) == "dated sweeps"
    assert accuracy.source_of({"id": "qwen_qwen3_32b_qwen_qwen3_32b_h100_sxm_sglang_agg_1024x512_c128"}) \
        == "per-model sweeps"
    assert accuracy.source_of({}) == "unknown"


@needs_csv
def test_the_fit_prior_ridges_the_per_kernel_cost_as_a_multiplier_on_the_hardwares() -> None:
    rows = [r for r in accuracy_rows.load_rows(CSV) if r["backend"] == "vllm" and r["system"] == "h100_sxm"][:3]
    prepared, _ = accuracy_rows.prepare_all(rows)
    hw = prepared[0].case.hw.efficiency.kernel_overhead_s
    exact = lambda p, params: (p.ttft_s, p.tpot_s)  # noqa: E731  (no error: the loss is the prior alone)
    base = {**accuracy_rows.NEUTRAL, "gemm": 1.0, "hbm": 1.0}
    assert fit_efficiency.loss(prepared, {**base, "kernel_overhead_s": hw}, exact) == pytest.approx(0.0, abs=1e-15)
    doubled = fit_efficiency.loss(prepared, {**base, "kernel_overhead_s": 2 * hw}, exact)
    halved = fit_efficiency.loss(prepared, {**base, "kernel_overhead_s": hw / 2}, exact)
    assert doubled == pytest.approx(fit_efficiency.PRIOR * math.log(2) ** 2) == pytest.approx(halved)
    both = fit_efficiency.loss(prepared, {**base, "gemm": 2.0, "kernel_overhead_s": 2 * hw}, exact)
    assert both == pytest.approx(2 * fit_efficiency.PRIOR * math.log(2) ** 2)


@needs_csv
def test_the_default_fixed_ttft_cost_is_the_median_of_the_pairs_fitted_on_their_own_rows() -> None:
    from collections import Counter

    from solver.estimate.serving import DEFAULT_REQUEST_OVERHEAD_S

    shipped = load_yaml(accuracy_rows.FACTORS_YAML)["factors"]
    rows = Counter((r["backend"], r["system"]) for r in accuracy_rows.load_rows(CSV))
    filled = [f"{fw} x {hw}" for fw, hws in shipped.items() for hw in hws if rows[(fw, hw)] < fit_efficiency.MIN_ROWS]
    assert filled  # the rule leaves them out: they repeat their framework's pooled fit
    assert DEFAULT_REQUEST_OVERHEAD_S == pytest.approx(fit_efficiency.default_request_overhead(shipped, filled),
                                                       rel=1e-3)


@needs_csv
def test_a_device_is_priced_without_its_own_rows() -> None:
    """Leave one device out: a held-out device's predictions do not move when its own measurements do."""
    import accuracy_device

    rows = accuracy_rows.load_rows(CSV)
    pick = [r for r in rows if r["backend"] == "trtllm" and r["system"] == "h100_sxm"][:8] \
        + [r for r in rows if r["backend"] == "trtllm" and r["system"] == "h200_sxm"][:8]
    prepared, _ = accuracy_rows.prepare_all(pick)
    et, ep, notes = accuracy_device.device_errors(prepared)
    assert all(map(math.isfinite, et)) and all(map(math.isfinite, ep))
    assert [n.split(" (")[0] for n in notes] == ["without h100_sxm", "without h200_sxm"]
    doubled = [replace(p, ttft_s=2 * p.ttft_s, tpot_s=2 * p.tpot_s) if p.hardware == "h200_sxm" else p
               for p in prepared]
    et2, ep2, _ = accuracy_device.device_errors(doubled)
    for p, q, a, b, c, d in zip(prepared, doubled, et, et2, ep, ep2):
        if p.hardware == "h200_sxm":  # the same prediction, against measurements twice as large
            assert (1 + b) * q.ttft_s == pytest.approx((1 + a) * p.ttft_s, rel=1e-12)
            assert (1 + d) * q.tpot_s == pytest.approx((1 + c) * p.tpot_s, rel=1e-12)
        else:  # the fit for h100 saw the doubled rows
            assert (a, c) != (b, d)


@needs_csv
def test_the_fast_path_rescales_the_weight_only_gemms_by_their_own_fraction(monkeypatch) -> None:
    # gpt-oss's MXFP4 experts on H200 run weight-only under the W4A16 rule with FP4 listed (vLLM's code); the
    # shipped list is empty (precision.W4A16_ON_DEVICES_WITHOUT), so the rule is set here to exercise the term
    monkeypatch.setattr("solver.specs.precision.W4A16_ON_DEVICES_WITHOUT", ("fp4",))
    from solver.estimate.serving import estimate
    from solver.measured import factors

    rows = accuracy_rows.load_rows(CSV)
    pick = [r for r in rows if r["model"].endswith("gpt-oss-120b") and r["system"] == "h200_sxm"][:3]
    prepared, _ = accuracy_rows.prepare_all(pick)
    assert prepared and all(p.case.prec.weight_only("experts") for p in prepared)
    for p in prepared:
        assert (p.prefill.kind == accuracy_rows.StepTerms.DEQUANT).sum() > 0
        q = {**accuracy_rows.profile_params(p, accuracy_rows.load_factors()), "dequant_gemm": 0.4}
        c = p.case
        est = estimate(c.model, c.hw, c.pc, c.prec, replace(factors(c), dequant_gemm=0.4), c.workload)
        t, s = accuracy_rows.predict(p, q)
        assert t == pytest.approx(est.ttft_s, rel=1e-9) and s == pytest.approx(est.tpot_s, rel=1e-9)
