"""The context an engine derives from a RoPE-scaled config (specs/context.derived_context, read from each profile's
max_context): the note and the launch's allow switch compare the planned length with it, not with the field alone.
Sources: vLLM 0.34.0 config/model.py:2643-2678, vLLM 0.23.0 config/model.py:2171-2197 (vllm-ascend runs on it),
sglang 0.5.23 utils/hf_transformers/common.py:677-694 under transformers 5.19.0."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from solver.launch import LaunchInputs, emit_launch
from solver.specs.config.read import parse_model_config
from solver.specs.context import derived_context
from solver.specs.framework import load_framework
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model import ModelSpec
from solver.specs.model_catalog import load_model
from solver.specs.notes import context_notes
from solver.specs.parallel import make_parallel_config

MODELS = Path(__file__).resolve().parents[1] / "models"
LINEAR = {"max_position_embeddings": 32_768, "rope_scaling": {"type": "linear", "factor": 4.0}}
# Qwen3's model card's YaRN block: 32,768 x 4 with the field at 40,960
YARN = {"max_position_embeddings": 40_960,
        "rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32_768}}


def _qwen3(name: str, **over: Any) -> ModelSpec:
    raw = json.loads((MODELS / "Qwen--Qwen3-8B.json").read_text())
    return parse_model_config({**raw, **over}, name)


def _derived(model: ModelSpec, engine: str) -> int | None:
    return derived_context(model, load_framework(engine).max_context)


def _env(engine: str, model: ModelSpec, max_len: int) -> dict[str, str]:
    device = "atlas_a3" if engine == "vllm-ascend" else "h100_sxm"
    launch = emit_launch(load_framework(engine), model, load_hardware(device), make_parallel_config(1),
                         LaunchInputs(batch=1, max_model_len=max_len, with_memory=False))
    return launch["nodes"][0]["env"]


def test_a_linear_scaling_multiplies_the_context_every_sourced_engine_derives() -> None:
    """32,768 x 4 = 131,072: vLLM, vllm-ascend and SGLang take 101,000 tokens without their allow switch."""
    model = _qwen3("linear", **LINEAR)
    for engine in ("vllm", "vllm-ascend", "sglang"):
        assert _derived(model, engine) == 131_072, engine
        assert context_notes(model, 101_000, load_framework(engine)) == [], engine
    assert "VLLM_ALLOW_LONG_MAX_MODEL_LEN" not in _env("vllm", model, 101_000)
    assert "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN" not in _env("sglang", model, 101_000)


def test_past_the_scaled_context_the_switch_is_set_and_the_note_names_the_derived_length() -> None:
    model = _qwen3("linear", **LINEAR)
    assert _env("vllm", model, 140_000)["VLLM_ALLOW_LONG_MAX_MODEL_LEN"] == "1"
    (note,) = context_notes(model, 140_000, load_framework("vllm"))
    assert note.startswith("the longest sequence, 140,000 tokens, exceeds linear's max_position_embeddings 32,768 "
                           "(131,072 as vllm derives it with the config's RoPE scaling factor): ")


def test_vllm_0_34_takes_a_yarn_configs_field_as_already_scaled() -> None:
    model = _qwen3("yarn", **YARN)
    assert _derived(model, "vllm") == 40_960
    assert _env("vllm", model, 101_000)["VLLM_ALLOW_LONG_MAX_MODEL_LEN"] == "1"


def test_vllm_0_23_multiplies_yarns_original_context_by_its_factor() -> None:
    """vllm-ascend (vLLM 0.23.0): derived_max_model_len = original_max_position_embeddings x factor."""
    model = _qwen3("yarn", **YARN)
    assert _derived(model, "vllm-ascend") == 131_072
    assert "VLLM_ALLOW_LONG_MAX_MODEL_LEN" not in _env("vllm-ascend", model, 101_000)


def test_vllm_0_23_reads_yarns_original_context_from_the_configs_top_level() -> None:
    """patch_rope_parameters copies a top-level original_max_position_embeddings into the scaling."""
    model = _qwen3("yarn-top", max_position_embeddings=40_960, original_max_position_embeddings=16_384,
                   rope_scaling={"type": "yarn", "factor": 4.0})
    assert _derived(model, "vllm-ascend") == 65_536


def test_sglang_leaves_a_scaling_that_carries_its_original_context_unscaled() -> None:
    carried = _qwen3("carried", max_position_embeddings=32_768, rope_scaling={
        "type": "dynamic", "factor": 2.0, "original_max_position_embeddings": 8_192})
    assert _derived(carried, "sglang") == 32_768
    assert _derived(carried, "vllm") == 65_536
    assert _derived(_qwen3("yarn", **YARN), "sglang") == 40_960


def test_a_llama3_scaling_leaves_the_field_as_is_in_every_engine() -> None:
    model = load_model("llama-3.1-8b")
    for engine in ("vllm", "vllm-ascend", "sglang", "trtllm", "atom", "generic"):
        assert _derived(model, engine) == 131_072, engine


def test_a_gemma3_config_is_skipped_by_vllm_and_sglang() -> None:
    """vLLM skips 'gemma3' in model_type; SGLang's transformers nests Gemma-3's scaling under full_attention, where
    get_context_length reads no factor."""
    raw = json.loads((MODELS / "google--gemma-3-4b-it.json").read_text())
    raw["text_config"] = {**raw["text_config"], "max_position_embeddings": 131_072}
    model = parse_model_config(raw, "gemma3")
    for engine in ("vllm", "vllm-ascend", "sglang"):
        assert _derived(model, engine) == 131_072, engine


def test_a_scaling_nested_per_layer_type_counts_in_vllm_not_in_sglang() -> None:
    model = _qwen3("nested", max_position_embeddings=32_768, rope_parameters={
        "full_attention": {"rope_type": "linear", "factor": 4.0}, "sliding_attention": {"rope_type": "default"}})
    assert _derived(model, "vllm") == 131_072
    assert _derived(model, "sglang") == 32_768


@pytest.mark.parametrize("engine", ["trtllm", "atom", "generic"])
def test_an_engine_without_a_sourced_rule_takes_the_field_alone(engine: str) -> None:
    assert _derived(_qwen3("linear", **LINEAR), engine) == 32_768


def test_without_a_scaling_every_engine_takes_the_field() -> None:
    model = _qwen3("plain")
    for engine in ("vllm", "vllm-ascend", "sglang", "trtllm", "atom", "generic"):
        assert _derived(model, engine) == 40_960, engine
    assert _env("vllm", model, 101_000)["VLLM_ALLOW_LONG_MAX_MODEL_LEN"] == "1"


def test_without_an_engine_the_note_compares_with_the_field() -> None:
    (note,) = context_notes(_qwen3("linear", **LINEAR), 101_000)
    assert note.startswith("the longest sequence, 101,000 tokens, exceeds linear's max_position_embeddings 32,768: ")
