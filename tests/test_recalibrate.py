"""Recalibration: synthetic traces whose kernel times ARE the estimate under known 'true' efficiencies; the fit
must recover those efficiencies, write a hardware YAML that estimate/solve accept, and shrink the error.

`write_estimate_run` is also what docs/examples/make_examples.py uses to build the worked example.
"""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Sequence

import pytest
import yaml
from click.testing import CliRunner

import traces_synth as ts
from solver.calibrate.classify import ATTENTION, COMMUNICATION, GEMM_MOE
from solver.calibrate.compare import Setup, compare, estimate_classes, make_setup, measured_classes
from solver.calibrate.config import parse_profiled_config
from solver.calibrate.fit import Observation, calibrated_data, factor_values, fit_factors, recalibrate, with_factors
from solver.calibrate.metrics import summarize
from solver.calibrate.synth import COMM_STREAM, step_timeline
from solver.calibrate.trace import load_traces
from solver.cli.main import main
from solver.specs.hardware import Hardware
from solver.specs.hardware_catalog import load_hardware

# per-rank slowdown of the synthetic ranks: mean exactly 1, (1.02 - 0.98) / 1 = 4% rank variance
JITTER = (1.0, 1.01, 0.99, 1.02, 0.98, 1.005, 0.995, 1.0)
TRUE = {"gemm": 0.62, "attention": 0.55, "hbm": 0.70, "tiers.intra_node": 0.65}
MODEL = "qwen3-30b-a3b"
HARDWARE = "h200_sxm"
PREFILL = {"parallel_config": {"attn_tp_size": 4, "moe_tp_size": 1}, "world_size": 8,
           "phase": "prefill", "batch": 2, "seq_len": 4096}
DECODE = {"attn_tp_size": 4, "moe_tp_size": 1, "world_size": 8, "phase": "decode", "batch": 128, "seq_len": 4096}


def write_estimate_run(folder: Path, setup: Setup, true_hw: Hardware, *, jitter: Sequence[float] = JITTER,
                       steps: int = 2, peak_factor: float | None = 1.04) -> None:
    """One rank_N.pt.trace.json per rank: `steps` GPU-annotated steps whose kernels are the estimate of the
    setup's config on `true_hw` (solver.calibrate.synth), every duration of rank r times jitter[r], and a
    [memory] peak of the estimated allocation x peak_factor (None: no memory events)."""
    folder.mkdir(parents=True, exist_ok=True)
    step = setup.step(true_hw)
    mem = setup.memory()
    for rank, scale in enumerate(jitter):
        kernels, length = step_timeline(step, scale)
        events = []
        t0 = 0.0
        for i in range(steps):
            events.append(ts.annotation(f"ProfilerStep#{i + 1}", t0, round(length, 3), gpu=True))
            for k in kernels:
                stream = ts.COMM_STREAM if k.stream == COMM_STREAM else ts.COMPUTE_STREAM
                events.append(ts.kernel(k.name, round(t0 + k.start_us, 3), round(k.dur_us, 3), stream=stream))
            t0 += length
        if peak_factor is not None:
            alloc = int((mem.total - mem.reserved_bytes) * peak_factor)
            events.append(ts.memory(1.0, alloc, int(alloc * 1.1)))
        trace = ts.chrome_trace(events, rank=rank, world_size=len(jitter))
        ts.write_trace(folder / f"rank_{rank}.pt.trace.json", trace)


def _setup(cfg: dict, hw: Hardware, world: int | None = 8) -> Setup:
    return make_setup(MODEL, hw, parse_profiled_config(cfg, "cfg.yaml", world, 8))


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Prefill and decode runs on 8 ranks built with the TRUE efficiencies, plus their configs on disk."""
    base = tmp_path_factory.mktemp("runs")
    hw = load_hardware(HARDWARE)
    true_hw = with_factors(hw, {**factor_values(hw), **TRUE})
    out = {}
    for name, cfg in (("prefill", PREFILL), ("decode", DECODE)):
        write_estimate_run(base / name, _setup(cfg, hw), true_hw)
        (base / f"{name}.yaml").write_text(yaml.safe_dump(cfg))
        out[name] = (base / name, base / f"{name}.yaml")
    out["base"] = base
    return out


def _obs(folder: Path, cfg: dict, hw: Hardware) -> Observation:
    summary = summarize(load_traces(folder))
    return Observation(_setup(cfg, hw), measured_classes(summary), str(folder))


# ------------------------------------------------------------------------------------------ the trace


def test_synthetic_run_measures_the_true_estimate(runs):
    """The builder is right: class times of the trace equal the estimate under the true factors."""
    hw = load_hardware(HARDWARE)
    true_hw = with_factors(hw, {**factor_values(hw), **TRUE})
    setup = _setup(PREFILL, hw)
    traces = load_traces(runs["prefill"][0])
    summary = summarize(traces)
    assert len(traces) == 8 and summary.steps_per_rank == 2
    est = estimate_classes(setup.step(true_hw))
    meas = measured_classes(summary)
    for cls in (ATTENTION, GEMM_MOE, COMMUNICATION):
        assert meas[cls] == pytest.approx(est[cls], rel=1e-4)  # timestamps: float us near 1.7e15
    assert summary.mean_step_time_us / 1e6 == pytest.approx(setup.step(true_hw).time_s, rel=1e-4)
    assert summary.rank_variance == pytest.approx(0.04, rel=1e-4)


# --------------------------------------------------------------------------------------------- the fit


def test_prefill_and_decode_recover_the_true_factors(runs):
    hw = load_hardware(HARDWARE)
    obs = [_obs(runs["prefill"][0], PREFILL, hw), _obs(runs["decode"][0], DECODE, hw)]
    values, fits, rounds, residual = fit_factors(obs, hw, f"{hw.name}-calibrated")
    for key, true in TRUE.items():
        assert values[key] == pytest.approx(true, rel=1e-3), key
    by = {f.key: f for f in fits}
    assert by["tiers.inter_node"].status == "not observed"  # 8 ranks never leave the node
    assert by["tiers.inter_node"].after == hw.tiers["inter_node"].efficiency
    assert {by[k].status for k in TRUE} == {"fitted"}
    assert residual < 1e-4 and rounds < 40


def test_prefill_alone_fits_compute_but_not_hbm(runs):
    """A long prefill is compute-bound: gemm and attention are observed, HBM is not (kept at the catalog's)."""
    hw = load_hardware(HARDWARE)
    values, fits, _, _ = fit_factors([_obs(runs["prefill"][0], PREFILL, hw)], hw, f"{hw.name}-calibrated")
    by = {f.key: f for f in fits}
    assert by["hbm"].status == "not observed" and values["hbm"] == hw.efficiency.hbm
    assert values["attention"] == pytest.approx(TRUE["attention"], rel=1e-3)
    assert values["gemm"] == pytest.approx(TRUE["gemm"], rel=0.05)  # a few memory-bound GEMMs keep hbm's bias


def test_single_dominant_class_is_the_plain_time_ratio(runs):
    """With one factor governing a class, the fit is measured / estimated of its variable time."""
    hw = load_hardware(HARDWARE)
    o = _obs(runs["prefill"][0], PREFILL, hw)
    step = o.setup.step(hw)
    attn_ops = [op for op in step.ops if op.name == "attention_core"]
    variable = sum(op.compute_s for op in attn_ops)
    overhead = sum(op.overhead_s for op in attn_ops)
    ratio = (o.measured[ATTENTION] - overhead) / variable
    values, *_ = fit_factors([o], hw, f"{hw.name}-calibrated")
    assert values["attention"] == pytest.approx(hw.efficiency.attention / ratio, rel=1e-6)


def test_factors_bounded_to_peak(runs):
    """Traces faster than peak allows pin the factor at 1.0 instead of writing an impossible efficiency."""
    hw = load_hardware(HARDWARE)
    o = _obs(runs["prefill"][0], PREFILL, hw)
    fast = dict(o.measured)
    fast[ATTENTION] *= 0.3  # attention 3x faster than the true factors: beyond peak
    values, fits, _, _ = fit_factors([Observation(o.setup, fast, "x")], hw, f"{hw.name}-calibrated")
    assert values["attention"] == 1.0
    assert {f.key: f.status for f in fits}["attention"] == "pinned at 1.0 (peak)"
    assert all(0 < v <= 1 for v in values.values())


def test_calibrated_yaml_schema_name_and_sources(runs):
    hw = load_hardware(HARDWARE)
    obs = [_obs(runs["prefill"][0], PREFILL, hw), _obs(runs["decode"][0], DECODE, hw)]
    result, data = recalibrate(obs, hw, "pre/ (8 rank files); dec/ (8 rank files)", date="2026-01-02")
    assert data["name"] == "h200_sxm-calibrated" and result.hardware.name == "h200_sxm-calibrated"
    assert data["efficiency"]["gemm"] == pytest.approx(0.62, rel=1e-3)
    assert data["tiers"]["intra_node"]["efficiency"] == pytest.approx(0.65, rel=1e-3)
    src = data["sources"]["efficiency.gemm"]
    assert src.startswith("calibrated from pre/ (8 rank files); dec/ (8 rank files) on 2026-01-02")
    assert "DeepGEMM" in src  # the catalog's provenance is kept
    assert data["sources"]["tiers.inter_node.efficiency"] == hw.sources["tiers.inter_node.efficiency"]
    assert set(data) == set(hw.model_dump())  # same schema, every field


def test_calibrated_data_untouched_when_nothing_observed():
    hw = load_hardware(HARDWARE)
    from solver.calibrate.fit import FactorFit

    data = calibrated_data(hw, [FactorFit("gemm", 0.78, 0.78, "not observed")], "x", date="2026-01-01")
    assert data["efficiency"] == hw.efficiency.model_dump() and data["sources"] == hw.sources


# ------------------------------------------------------------------------------------------ the CLI


def test_cli_recalibrate_writes_yaml_that_estimate_accepts(runs, tmp_path):
    pre, pre_cfg = runs["prefill"]
    dec, dec_cfg = runs["decode"]
    out = tmp_path / "h200-cal.yaml"
    res = CliRunner().invoke(main, ["calibrate", str(pre), "--config", str(pre_cfg), "--run", str(dec), str(dec_cfg),
                                    "--model", MODEL, "--hardware", HARDWARE, "--recalibrate", str(out),
                                    "--format", "json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    rec = data["recalibration"]
    factors = {f["factor"]: f for f in rec["factors"]}
    for key, true in TRUE.items():
        assert factors[key]["after"] == pytest.approx(true, rel=1e-3)
    for run in rec["runs"]:
        before, after = run["error_before"], run["error_after"]
        assert abs(before["step_time"]) > 0.05  # the catalog factors are off
        assert abs(after["step_time"]) < 1e-3
        for cls in ("attention", "gemm_moe", "communication"):
            assert abs(after[cls]) < 2e-3, (run["phase"], cls)
    # the written YAML is a hardware file that estimate and solve read
    cal = load_hardware(str(out))
    assert cal.name == "h200_sxm-calibrated" and cal.efficiency.attention == pytest.approx(0.55, rel=1e-3)
    est = CliRunner().invoke(main, ["estimate", MODEL, "--hardware", str(out), "--cards", "8", "--attn-tp", "4",
                                    "--phase", "prefill", "--batch", "2", "--seq-len", "4096", "--format", "json"])
    assert est.exit_code == 0, est.output
    ttft = json.loads(est.stdout)["ttft_ms"]
    measured = data["step_time_ms_mean"]
    assert ttft == pytest.approx(measured, rel=1e-3)  # the calibrated estimate is the measurement


def test_cli_recalibrate_table_prints_before_and_after(runs, tmp_path):
    pre, pre_cfg = runs["prefill"]
    out = tmp_path / "cal.yaml"
    res = CliRunner().invoke(main, ["calibrate", str(pre), "--config", str(pre_cfg), "--model", MODEL,
                                    "--hardware", HARDWARE, "--recalibrate", str(out)])
    assert res.exit_code == 0, res.output
    assert "Recalibrated factors" in res.stdout and "before" in res.stdout and "after" in res.stdout
    assert f"wrote {out}" in res.stdout
    assert yaml.safe_load(out.read_text())["name"] == "h200_sxm-calibrated"
    assert out.read_text().startswith("# Calibrated by `shardplan calibrate --recalibrate`")


def test_cli_recalibrate_refuses_a_training_trace(tmp_path):
    trace = ts.chrome_trace([ts.annotation("ProfilerStep#1", 0, 1000, gpu=True),
                             ts.kernel("flash_bwd_kernel", 0, 500), ts.kernel(ts.GEMM, 500, 500)], rank=0,
                            world_size=8)
    path = ts.write_trace(tmp_path / "t.json", trace)
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump(DECODE))
    res = CliRunner().invoke(main, ["calibrate", str(path), "--config", str(cfg), "--model", MODEL, "--hardware",
                                    HARDWARE, "--recalibrate", str(tmp_path / "o.yaml")])
    assert res.exit_code == 2 and res.stderr.startswith("error: --recalibrate:") and "training" in res.stderr
    assert "Traceback" not in res.output


def test_fit_converges_from_the_catalog_in_a_few_rounds(runs):
    hw = load_hardware(HARDWARE)
    obs = [_obs(runs["prefill"][0], PREFILL, hw), _obs(runs["decode"][0], DECODE, hw)]
    _, _, rounds, _ = fit_factors(obs, hw, f"{hw.name}-calibrated")
    assert rounds <= 10
    assert not math.isnan(rounds)


def test_after_error_uses_the_written_hardware(runs):
    """compare() on the calibrated hardware gives the after-error the CLI prints."""
    hw = load_hardware(HARDWARE)
    obs = [_obs(runs["prefill"][0], PREFILL, hw), _obs(runs["decode"][0], DECODE, hw)]
    result, _ = recalibrate(obs, hw, "x")
    summary = summarize(load_traces(runs["decode"][0]))
    before = compare(summary, obs[1].setup, None)
    after = compare(summary, obs[1].setup, None, hw=result.hardware)
    assert abs(before.step_deviation) > 0.05 and abs(after.step_deviation) < 1e-3
