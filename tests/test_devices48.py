"""Stop 48: a user-level hunt across the 16 catalog devices. One test per rule found broken or worth holding."""
from __future__ import annotations

import pytest

from solver.errors import InputError
from solver.specs.hardware_catalog import list_hardware, load_hardware
from solver.specs.model_catalog import load_model
from solver.specs.precision import resolve_precision


@pytest.mark.parametrize("fmt", ["mxfp4", "nvfp4"])
def test_fp4_weights_on_a_device_without_fp4_or_fp8_run_at_its_bf16_rate(fmt: str) -> None:
    """FP4 weights on a device with neither an FP4 nor an FP8 rate (A100) are dequantized into 16-bit GEMMs: the
    GEMM runs at the device's BF16 rate, never its INT8 one (no engine's FP4 kernel takes INT8 activations)."""
    model = load_model("meta-llama--Meta-Llama-3.1-70B")
    checked = 0
    for name in list_hardware():
        hw = load_hardware(name)
        if hw.supports("fp4") or hw.supports("fp8"):
            continue
        try:
            prec = resolve_precision(model, hw, weight_dtype=fmt)
        except InputError:  # a device that loads no FP4 at all (Ascend) refuses it: another rule
            continue
        checked += 1
        assert prec.gemm_dtype("dense") == "bf16" and prec.weight_only("dense"), name
    assert checked >= 1  # A100 is in the catalog


@pytest.mark.parametrize("framework", ["vllm", "sglang", "trtllm"])
def test_h800_carries_h100s_fitted_factors(framework: str) -> None:
    """H800 is H100 silicon (compute, HBM) with a cut-down NVLink (facts/hardware.md): an engine's fitted factors
    for H100 price it too, so a TP1 decode, which no NVLink touches, is the same on both (it was 4% faster on the
    H800 under vLLM before, its file's unfitted 0.8 HBM against H100's fitted 0.766), looked up by name or file."""
    from solver.specs.framework import load_framework

    fw = load_framework(framework)
    assert fw.efficiency_for("h800") == fw.efficiency_for("h100_sxm")
    assert fw.efficiency_for(load_hardware("h800")) == fw.efficiency_for(load_hardware("h100_sxm"))


@pytest.mark.parametrize(("device", "fmt", "rate"), [
    ("a100_sxm", "mxfp4", "into 16-bit GEMMs"), ("a100_sxm", "fp8", "into 16-bit GEMMs"),
    ("h100_sxm", "mxfp4", "GEMMs at the fp8 rate"), ("a100_sxm", "w4a8", "GEMMs at the int8 rate")])
def test_a_weight_only_format_names_the_rate_its_gemms_run_at(device: str, fmt: str, rate: str) -> None:
    """A weight-only choice is explained in one line that names the rate priced (16-bit, or the 8-bit
    activations'), not 'the activation dtype', and that rate is the one Precision.gemm_dtype runs."""
    prec = resolve_precision(load_model("meta-llama--Meta-Llama-3.1-70B"), load_hardware(device), weight_dtype=fmt)
    [line] = [n for n in prec.notes if "weight-only" in n]
    assert rate in line
    assert (prec.gemm_dtype("dense") == "bf16") == ("16-bit" in rate)
