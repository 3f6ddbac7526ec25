"""Stop 49, precisions left open by the quant hunt (tests/test_quant49.py): a catalog name that names a format the
file does not store, vLLM's int8 KV cache, W4A8 where no kernel runs it. One test per rule."""
from __future__ import annotations

import re

from solver.catalog import catalog_dir
from solver.specs.model_catalog import list_models, load_model

# a format a checkpoint's name spells -> the formats of QuantSpec's groups that store it
NAMED_FORMATS = {"fp8": ("fp8", "fp8_block"), "nvfp4": ("nvfp4",), "mxfp4": ("mxfp4",), "awq": ("int4",),
                 "gptq": ("int4",), "int4": ("int4",), "w4a16": ("int4",), "int8": ("int8",)}
NEMOTRON_SUPER_FP8 = "nvidia--NVIDIA-Nemotron-3-Super-120B-A12B-FP8.json"


def _named(stem: str) -> list[str]:
    tokens = re.split(r"[-_.]", stem.lower())
    return [t for t in tokens if t in NAMED_FORMATS]


def test_a_catalog_name_naming_a_format_stores_it_or_says_it_does_not() -> None:
    """Every catalog file whose name spells a format (-FP8, -NVFP4, -AWQ ...) stores it in some group, or every
    answer on it carries a note saying it is sized without it."""
    for file, _ in list_models():
        spec = load_model(file.removesuffix(".json"))
        q = spec.quant
        stored = {q.attention, q.dense, q.experts, q.embedding, q.lm_head}
        for token in _named(file.removesuffix(".json")):
            if not stored & set(NAMED_FORMATS[token]):
                assert any(token in n.lower() and "sized" in n for n in spec.warnings), (file, token, stored)


def test_nemotron_3_super_fp8_says_it_is_sized_bf16_and_how_to_size_it_fp8() -> None:
    """Its hf_quant_config.json is not in the facts (facts/model_configs/SOURCES.md): sized bf16, and said so
    with --weight-dtype fp8 and the downloaded folder as the ways to its formats."""
    spec = load_model("nemotron-3-super")
    assert spec.quant.method == "none" and spec.quant.experts == "bf16"
    note = next(n for n in spec.warnings if "hf_quant_config.json" in n)
    assert "--weight-dtype fp8" in note and "--download" in note and "sized bf16" in note


def test_the_catalog_note_is_not_said_on_a_checkpoint_carrying_its_formats(tmp_path) -> None:
    """A folder holding the same config.json with its hf_quant_config.json is its own: no catalog note."""
    import json
    import shutil
    folder = tmp_path / "NVIDIA-Nemotron-3-Super-120B-A12B-FP8"
    folder.mkdir()
    shutil.copy(catalog_dir("models") / NEMOTRON_SUPER_FP8, folder / "config.json")
    (folder / "hf_quant_config.json").write_text(json.dumps(
        {"producer": {"name": "modelopt", "version": "0.29.0"}, "quantization": {"quant_algo": "FP8"}}))
    spec = load_model(str(folder))
    assert spec.quant.experts.startswith("fp8")
    assert not any("hf_quant_config.json, which the catalog lacks" in n for n in spec.warnings)


# --- vLLM 0.34.0's int8 KV cache (solver/frameworks/vllm.yaml: the --kv-cache-dtype map, launch.kv_dtype_requires)

def _solve(model: str, hardware: str = "h100_sxm", cards: int = 1):
    from click.testing import CliRunner

    from solver.cli.main import main
    return CliRunner().invoke(main, ["solve", model, "--hardware", hardware, "--cards", str(cards), "--framework",
                                     "vllm", "--kv-dtype", "int8", "--format", "launch"])


def test_vllm_spells_an_int8_kv_cache_int8_per_token_head() -> None:
    """vLLM 0.34.0 names its int8 cache int8_per_token_head (config/cache.py:63): the launch asks for it."""
    res = _solve("llama-3.1-8b")
    assert res.exit_code == 0, res.output
    assert "--kv-cache-dtype int8_per_token_head" in res.output


def test_vllm_int8_kv_runs_on_sliding_window_attention() -> None:
    """Its one backend, Triton, runs sliding windows (triton_attn.py supports_sliding_window): gemma-3 launches."""
    res = _solve("gemma-3-4b")
    assert res.exit_code == 0, res.output
    assert "--kv-cache-dtype int8_per_token_head" in res.output


def test_vllm_refuses_an_int8_kv_cache_on_mla_in_one_line() -> None:
    """No MLA backend lists int8_per_token_head (Triton is not MLA: v1/attention/backend.py:317-321): DeepSeek's
    MLA under vllm with --kv-dtype int8 is bad input, one line, exit 2."""
    from solver.specs.framework import load_framework
    from solver.specs.model_catalog import load_model as load

    refusal = load_framework("vllm").kv_dtype_refusal("int8", load("deepseek-v3"))
    assert refusal is not None and "non-MLA" in refusal and "\n" not in refusal
    assert load_framework("vllm").kv_dtype_refusal("int8", load("llama-3.1-8b")) is None
    res = _solve("deepseek-v3", "h200_sxm", 8)
    assert res.exit_code == 2 and "non-MLA" in res.output and res.output.count("\n") == 1, res.output


def test_a_format_requirement_reads_model_and_device_flags_only() -> None:
    """A profile's kv_dtype_requires / weight_dtype_requires condition reads model flags (has_mla ...) and device
    flags (on_cuda ...), not knobs: a knob is refused."""
    import pytest
    from pydantic import ValidationError

    from solver.specs.launch_spec import FormatRequire

    FormatRequire(require="not has_mla and on_cuda", runs_on="x", source="y")
    with pytest.raises(ValidationError):
        FormatRequire(require="attn_tp_size > 1", runs_on="x", source="y")


# --- W4A8 where no kernel runs it (solver/frameworks/vllm.yaml: launch.weight_dtype_requires)

def test_vllm_refuses_w4a8_on_rocm_naming_the_flag_and_what_runs() -> None:
    """vLLM 0.34.0's ROCm int4 kernels take 16-bit activations only (kernels/linear/__init__.py:550-556): w4a8 on
    MI300X is refused in one line naming --weight-dtype and w4a16, exit 2; w4a16 there plans."""
    from click.testing import CliRunner

    from solver.cli.main import main
    base = ["solve", "llama-3.1-8b", "--hardware", "mi300x", "--cards", "1", "--framework", "vllm"]
    res = CliRunner().invoke(main, [*base, "--weight-dtype", "w4a8"])
    assert res.exit_code == 2 and res.output.startswith("error: --weight-dtype: weight dtype w4a8") \
        and "w4a16 runs" in res.output and res.output.count("\n") == 1, res.output
    assert CliRunner().invoke(main, [*base, "--weight-dtype", "w4a16"]).exit_code == 0


def test_vllm_runs_w4a8_on_every_cuda_device() -> None:
    """On CUDA, Humming (a requirement of the wheel, SM 7.5+) runs W4A8 beside CUTLASS's SM 9.0 kernel: B200 and
    A100 are not refused."""
    from solver.specs.framework import load_framework
    from solver.specs.hardware_catalog import load_hardware
    from solver.specs.model_catalog import load_model as load

    fw, model = load_framework("vllm"), load("llama-3.1-8b")
    for hw in ("b200_sxm", "a100_sxm", "h100_sxm", "l40s"):
        assert fw.weight_dtype_refusal("w4a8", model, load_hardware(hw)) is None, hw
    assert fw.weight_dtype_refusal("w4a8", model, load_hardware("mi355x")) is not None
