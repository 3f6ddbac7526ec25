"""Quantized checkpoints and number formats, tried as a user: what inspect, memory and launch say of them."""
from __future__ import annotations

import json
from pathlib import Path

import yaml
from click.testing import CliRunner

from solver.cli.main import main
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import load_model
from solver.specs.precision import held_groups, resolve_precision

QUANT = Path(__file__).parent / "data" / "configs_quant"
SINGLE = {"attn_tp_size": 1, "dense_tp_size": 1, "embed_tp_size": 1, "lmhead_tp_size": 1}


def _launch(tmp_path: Path, model: str, engine: str, quant: dict, hardware: str = "h100_sxm") -> dict:
    path = tmp_path / "dep.yaml"
    path.write_text(yaml.safe_dump({"model": model, "hardware": hardware, "world_size": 1, "framework": engine,
                                    "parallel_config": SINGLE, "quant": quant,
                                    "workload": {"isl": 1024, "osl": 128, "concurrency": 8}}))
    r = CliRunner().invoke(main, ["launch", str(path), "--format", "json"])
    assert r.exit_code == 0, r.stderr
    return json.loads(r.stdout)


def test_a_dense_model_holds_no_expert_group_and_a_moe_without_dense_layers_no_dense_group() -> None:
    """Llama-3.1-8B: attention, dense, embedding, lm_head, norm (no routed experts); Qwen3-30B-A3B has no dense
    FFN and no shared experts (no dense_tp_size knob); DeepSeek-R1 holds all six."""
    assert held_groups(load_model(str(QUANT / "nvidia--Llama-3.1-8B-Instruct-FP8.json"))) == \
        ("attention", "dense", "embedding", "lm_head", "norm")
    assert held_groups(load_model(str(QUANT / "RedHatAI--Qwen3-30B-A3B-FP8-dynamic.json"))) == \
        ("attention", "experts", "embedding", "lm_head", "norm")
    assert len(held_groups(load_model(str(QUANT / "nvidia--DeepSeek-R1-FP4.json")))) == 6


def test_inspect_names_the_formats_of_the_groups_the_model_holds_only() -> None:
    """An FP8 Llama's formats line said "experts fp8" for a model without experts."""
    model = str(QUANT / "nvidia--Llama-3.1-8B-Instruct-FP8.json")
    r = CliRunner().invoke(main, ["inspect", model, "--format", "json"])
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["basic"]["checkpoint formats"] == \
        "attention fp8, dense fp8, embedding bf16, lm_head bf16"


def test_a_weight_only_note_names_no_group_the_model_lacks() -> None:
    """AWQ Qwen3-8B on A100 (no int4 rate): int4 runs weight-only for attention and dense; the note for "experts"
    of a dense model said a format for weights that do not exist."""
    prec = resolve_precision(load_model(str(QUANT / "Qwen--Qwen3-8B-AWQ.json")), load_hardware("a100_sxm"))
    assert [n.split(" weights")[0] for n in prec.notes] == ["attention", "dense"]


def test_an_fp8_checkpoint_asked_for_in_fp8_gets_no_quantization_flag(tmp_path: Path) -> None:
    """vLLM reads an FP8 checkpoint's quantization_config (modelopt); `--quantization fp8` beside it names another
    method, which vLLM refuses. `--weight-dtype fp8` on it is the checkpoint's own format: nothing to say."""
    out = _launch(tmp_path, str(QUANT / "nvidia--Llama-3.1-8B-Instruct-FP8.json"), "vllm", {"weights": "fp8"})
    assert "--quantization" not in out["nodes"][0]["argv"]
    assert not out.get("notes")


def test_fp8_names_a_per_channel_fp8_checkpoint_too(tmp_path: Path) -> None:
    """compressed-tensors FP8_DYNAMIC stores fp8_ch (8-bit floats with a per-row scale): fp8 and fp8_ch are one
    element type and width, so SGLang's `--quantization fp8` is left out as well."""
    out = _launch(tmp_path, str(QUANT / "RedHatAI--Meta-Llama-3.1-8B-Instruct-FP8-dynamic.json"), "sglang",
                  {"weights": "fp8"})
    assert "--quantization" not in out["nodes"][0]["argv"] and not out.get("notes")


def test_another_format_on_a_quantized_checkpoint_is_the_checkpoints_to_change(tmp_path: Path) -> None:
    """An AWQ int4 checkpoint asked for in fp8: vLLM's `--quantization fp8` quantizes a 16-bit checkpoint at
    load and refuses one whose config names awq; the flag is left out and the note says which checkpoint to
    serve."""
    out = _launch(tmp_path, str(QUANT / "Qwen--Qwen3-8B-AWQ.json"), "vllm", {"weights": "fp8"})
    assert "--quantization" not in out["nodes"][0]["argv"]
    assert out["notes"] == ["weight_dtype fp8: the checkpoint is already quantized (awq), which the engine reads "
                            "from its config and no flag converts; serve a checkpoint stored in fp8 (the model path)"]


def test_a_16_bit_dtype_does_not_dequantize_a_quantized_checkpoint(tmp_path: Path) -> None:
    """bf16 on an AWQ checkpoint under an engine without a weight flag: the note said to set the engine's load
    dtype to bf16, which leaves the int4 weights int4; it says to serve a bf16 checkpoint instead."""
    out = _launch(tmp_path, str(QUANT / "Qwen--Qwen3-8B-AWQ.json"), "trtllm", {"weights": "bf16"})
    assert [n for n in out["notes"] if n.startswith("weight_dtype")] == ["weight_dtype bf16: the checkpoint is already quantized (awq), which the engine reads "
                            "from its config and no flag converts; serve a checkpoint stored in bf16 (the model path)"]


def test_a_16_bit_checkpoint_asked_for_in_fp8_is_quantized_at_load(tmp_path: Path) -> None:
    """The flag stays where it does its job: Llama-3.1-8B (bf16) with fp8 weights under vLLM."""
    argv = _launch(tmp_path, "llama-3.1-8b", "vllm", {"weights": "fp8"})["nodes"][0]["argv"]
    assert argv[argv.index("--quantization") + 1] == "fp8"


def test_memory_and_estimate_name_the_formats_of_the_groups_the_model_holds_only() -> None:
    """The W4A16 Llama on one H100: `estimate`'s precision line said "experts int4" for a dense model, where the
    weight-only notes beside it named attention and dense only."""
    model = str(QUANT / "RedHatAI--Meta-Llama-3.1-8B-Instruct-quantized.w4a16.json")
    r = CliRunner().invoke(main, ["memory", model, "--hardware", "h100_sxm", "--cards", "1", "--batch", "8",
                                  "--seq-len", "1024", "--format", "json"])
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["precision"] == {"attention": "int4", "dense": "int4", "embedding": "bf16",
                                                 "lm_head": "bf16", "norm": "bf16", "activation": "bf16",
                                                 "kv_bytes": 2}


def test_check_says_what_runs_weight_only_as_memory_does(tmp_path: Path) -> None:
    """The AWQ Qwen3-8B on one A100 (no int4 rate): memory and estimate note that attention and dense run
    weight-only; check said nothing of it."""
    path = tmp_path / "dep.yaml"
    path.write_text(yaml.safe_dump({"model": str(QUANT / "Qwen--Qwen3-8B-AWQ.json"), "hardware": "a100_sxm",
                                    "world_size": 1, "framework": "vllm", "parallel_config": SINGLE,
                                    "workload": {"isl": 1024, "osl": 128, "concurrency": 8}}))
    r = CliRunner().invoke(main, ["check", str(path), "--format", "json"])
    assert r.exit_code == 0, r.stderr
    notes = json.loads(r.stdout)["notes"]
    assert "attention weights stay int4_g128z (weight-only on a100_sxm: no native int4)" in notes
    assert "dense weights stay int4_g128z (weight-only on a100_sxm: no native int4)" in notes
