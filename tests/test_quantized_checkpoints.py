"""Quantized checkpoints priced and refused as the engines run them: int4 weights, an FP8 KV cache on Ampere,
AWQ / GPTQ on ROCm, NVFP4 on Ascend."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from solver.errors import InputError
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import load_model
from solver.specs.precision import resolve_precision

LLAMA_70B = Path("/work/shared/facts/model_configs/meta-llama--Meta-Llama-3.1-70B.json")
AWQ = {"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True, "version": "gemm"}
NVFP4 = {"quant_method": "modelopt", "quant_algo": "NVFP4", "group_size": 16}


def _ckpt(tmp_path: Path, quant: dict) -> str:
    cfg = json.loads(LLAMA_70B.read_text())
    cfg["quantization_config"] = quant
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    return str(path)


@pytest.mark.parametrize("device", ["l40s", "a100_sxm", "h100_sxm", "rtx_pro_6000_blackwell", "atlas_a3"])
def test_int4_weights_run_w4a16_whether_named_by_flag_or_by_an_awq_checkpoint(tmp_path: Path, device: str) -> None:
    """No device has an int4 rate; the engines run AWQ / GPTQ int4 through W4A16 kernels (Marlin, Machete,
    Triton): --weight-dtype int4 and an AWQ config.json both price bf16 GEMMs over 4-bit weights."""
    hw = load_hardware(device)
    flag = resolve_precision(load_model(str(LLAMA_70B)), hw, weight_dtype="int4")
    awq = resolve_precision(load_model(_ckpt(tmp_path, AWQ)), hw)
    for prec in (flag, awq):
        assert prec.gemm_dtype("dense") == "bf16" and prec.weight_only("dense")
        assert prec.fmt("dense").bits == 4


def test_w4a8_spelled_runs_at_the_devices_8bit_rate() -> None:
    """w4a8 names its activations: FP8 on an L40S (fp8 733 TFLOP/s), INT8 on an A100 (no FP8 rate)."""
    model = load_model(str(LLAMA_70B))
    assert resolve_precision(model, load_hardware("l40s"), weight_dtype="w4a8").gemm_dtype("dense") == "fp8"
    assert resolve_precision(model, load_hardware("a100_sxm"), weight_dtype="w4a8").gemm_dtype("dense") == "int8"


def test_an_activation_dtype_that_contradicts_the_spelled_one_is_refused() -> None:
    with pytest.raises(InputError) as err:
        resolve_precision(load_model(str(LLAMA_70B)), load_hardware("l40s"), weight_dtype="w4a16",
                          activation_dtype="fp8")
    assert err.value.field == "--weight-dtype"


@pytest.mark.parametrize("device", ["mi300x", "mi325x", "mi355x"])
def test_an_awq_checkpoint_on_rocm_stays_int4_weight_only(tmp_path: Path, device: str) -> None:
    """vLLM's ROCm platform serves AWQ (Triton AWQ) and GPTQ (Triton W4A16 / ExLlama): 4-bit weights, bf16 GEMMs,
    no 'served as bf16' note."""
    prec = resolve_precision(load_model(_ckpt(tmp_path, AWQ)), load_hardware(device))
    assert prec.fmt("dense").name == "int4_g128z" and prec.weight_only("dense")
    assert not any("served as bf16" in n for n in prec.notes)


def test_an_fp8_kv_cache_on_a100_is_one_byte_storage() -> None:
    """vLLM's FlashInfer and Triton attention backends store an fp8 KV cache on SM 8.0: 1 byte per element, the
    attention math 16-bit (the GEMMs keep the bf16 rate)."""
    prec = resolve_precision(load_model(str(LLAMA_70B)), load_hardware("a100_sxm"), kv_dtype="fp8")
    assert prec.kv_bytes == 1 and prec.gemm_dtype("attention") == "bf16"
    assert any("16-bit attention math" in n for n in prec.notes)


def test_an_fp8_kv_cache_on_ascend_stays_refused() -> None:
    with pytest.raises(InputError) as err:
        resolve_precision(load_model(str(LLAMA_70B)), load_hardware("atlas_a3"), kv_dtype="fp8")
    assert err.value.field == "--kv-dtype" and "no fp8 support" in err.value.problem


@pytest.mark.parametrize("device", ["atlas_a2", "atlas_a3"])
def test_an_nvfp4_checkpoint_on_ascend_is_refused_in_one_line(tmp_path: Path, device: str) -> None:
    """vllm-ascend loads no modelopt / NVFP4 checkpoint: refused, naming the format and the device."""
    with pytest.raises(InputError) as err:
        resolve_precision(load_model(_ckpt(tmp_path, NVFP4)), load_hardware(device))
    assert err.value.field.startswith("quantization_config.")
    assert "nvfp4" in err.value.problem and device in err.value.problem


def test_declared_8bit_activations_spell_int4_weights_with_them():
    """A deployment's int4 weights beside declared int8 activations are W4A8, beside fp8 W4AFP8 (the spellings of
    dtypes.ACTIVATION_SPELLINGS); 16-bit activations leave the plain int4 (its W4A16 default), and a format without
    an activation spelling stays as given."""
    from solver.specs.dtypes import spelled_with

    assert spelled_with("int4", "int8") == "w4a8"
    assert spelled_with("int4", "fp8") == "w4afp8"
    assert spelled_with("int4", "bf16") == "int4"
    assert spelled_with("int8", "int8") == "int8"
    assert spelled_with(None, "int8") is None
