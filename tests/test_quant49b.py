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
