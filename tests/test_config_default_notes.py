"""A config that leaves out a field its family's transformers class has a default for is read at that default, and
the answer says so: one note per field so read (ModelSpec.warnings, which `inspect` and `solve` print), naming the
class and its file (family_classes.yaml, generated from the transformers 5.25.0 wheel). What the reader derives by
the family's own rule (head_dim = hidden / heads) and facts of the modeling code that are no field of the class
(Qwen3's q / k norms, use_qk_norm in its family line) are no default taken: no note."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from solver.errors import InputError
from solver.specs.config.read import parse_model_config

ROOT = Path(__file__).resolve().parent.parent
QWEN3_8B = ROOT / "models" / "Qwen--Qwen3-8B.json"
LLAMA_8B = ROOT / "models" / "meta-llama--Meta-Llama-3.1-8B.json"
GEMMA3_4B = ROOT / "models" / "google--gemma-3-4b-it.json"


def _read(path: Path, *drop: str):
    cfg = json.loads(path.read_text())
    for key in drop:
        del cfg[key]
    return parse_model_config(cfg, path.stem)


def _default_notes(spec) -> list[str]:
    return [w for w in spec.warnings if "absent from config.json" in w]


def test_qwen3_without_num_hidden_layers_is_read_at_the_class_default_and_says_so() -> None:
    spec = _read(QWEN3_8B, "num_hidden_layers")
    assert len(spec.layers) == 32  # Qwen3Config.num_hidden_layers = 32, not the config's 36
    assert _default_notes(spec) == ["num_hidden_layers absent from config.json: read at Qwen3Config's default 32 "
                                    "(transformers 5.25.0 configuration_qwen3.py)"]


def test_one_note_per_field_taken_at_its_default() -> None:
    """Qwen3-8B without num_hidden_layers and head_dim: two notes (head_dim 128 is Qwen3Config's, also 4096 / 32)."""
    notes = _default_notes(_read(QWEN3_8B, "num_hidden_layers", "head_dim"))
    assert [n.split(" ", 1)[0] for n in notes] == ["num_hidden_layers", "head_dim"]
    assert "Qwen3Config's default 128" in notes[1]


def test_a_complete_config_gets_no_note() -> None:
    """Qwen3-8B as released writes every Qwen3Config field the reader reads; its family line's use_qk_norm is a
    fact of Qwen3Attention (q / k norms), no field of the class: not noted either."""
    assert _default_notes(_read(QWEN3_8B)) == []
    assert _default_notes(_read(LLAMA_8B)) == []


def test_a_field_the_reader_derives_gets_no_note() -> None:
    """Llama-3.1-8B writes no head_dim: hidden 4096 / 32 heads = 128, the family's own rule, not a guess."""
    spec = _read(LLAMA_8B)
    assert "head_dim" not in json.loads(LLAMA_8B.read_text())
    assert spec.layers[0].mixer.head_dim == 128
    assert _default_notes(spec) == []


def test_a_nested_language_model_names_its_own_class() -> None:
    """Gemma-3-4B's text_config leaves num_attention_heads out: Gemma3TextConfig's default 8, named under the block."""
    notes = _default_notes(_read(GEMMA3_4B))
    assert ("text_config.num_attention_heads absent from config.json: read at Gemma3TextConfig's default 8 "
            "(transformers 5.25.0 configuration_gemma3.py)") in notes


# --- num_hidden_layers, family by family: one rule. Where the family's transformers class has a default, a config
# leaving the field out is read at it with one note naming the class; where the family ships its own code (no class
# in transformers) or transformers itself refuses the default, one line naming the field.


def _without_layer_count(name: str, tmp_path: Path):
    """models/<name>.json with num_hidden_layers deleted wherever it is written (a nested text_config's too),
    read from a copy in a tmp dir, as a user's file is."""
    cfg = json.loads((ROOT / "models" / f"{name}.json").read_text())

    def drop(block: dict) -> None:
        block.pop("num_hidden_layers", None)
        for value in block.values():
            if isinstance(value, dict):
                drop(value)

    drop(cfg)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    return parse_model_config(json.loads(path.read_text()), name)


# (file, where the note says it, class, its file, its default = the layers read): the defaults are the classes'
# `num_hidden_layers: int = N` in transformers 5.25.0 (configuration_<type>.py)
READ_AT_DEFAULT = [
    ("Qwen--Qwen3-8B", "", "Qwen3Config", "configuration_qwen3.py", 32),
    ("Qwen--Qwen3-30B-A3B", "", "Qwen3MoeConfig", "configuration_qwen3_moe.py", 24),
    ("Qwen--Qwen3.5-35B-A3B", "text_config.", "Qwen3_5MoeTextConfig", "configuration_qwen3_5_moe.py", 40),
    ("Qwen--Qwen3.5-9B", "text_config.", "Qwen3_5TextConfig", "configuration_qwen3_5.py", 32),
    ("deepseek-ai--DeepSeek-V3.2", "", "DeepseekV32Config", "configuration_deepseek_v32.py", 61),
    ("meta-llama--Meta-Llama-3.1-8B", "", "LlamaConfig", "configuration_llama.py", 32),
    ("zai-org--GLM-5", "", "GlmMoeDsaConfig", "configuration_glm_moe_dsa.py", 78),
]


@pytest.mark.parametrize("name, where, cls, file, layers", READ_AT_DEFAULT, ids=[r[0] for r in READ_AT_DEFAULT])
def test_a_family_class_with_a_layer_count_default_is_read_at_it_with_one_note(name, where, cls, file, layers,
                                                                              tmp_path) -> None:
    spec = _without_layer_count(name, tmp_path)
    assert len(spec.layers) == layers
    assert _default_notes(spec) == [f"{where}num_hidden_layers absent from config.json: read at {cls}'s default "
                                    f"{layers} (transformers 5.25.0 {file})"]


def test_a_family_without_a_transformers_class_is_refused_naming_the_field(tmp_path) -> None:
    """Kimi-K2 (model_type kimi_k2) ships its own code: no class default to read, so the field is required."""
    with pytest.raises(InputError, match=r"^[^\n]*: num_hidden_layers: missing \(required to size the model\)$"):
        _without_layer_count("moonshotai--Kimi-K2-Instruct", tmp_path)


def test_a_class_default_transformers_would_refuse_is_refused_naming_the_field(tmp_path) -> None:
    """gpt-oss-20b writes 24 layer_types: GptOssConfig's default 36 layers would not match them, and transformers
    refuses that config, so the reader does too, in one line naming the field."""
    with pytest.raises(InputError, match=r"num_hidden_layers: missing beside layer_types' 24 entries: the class's "
                                         r"default 36"):
        _without_layer_count("openai--gpt-oss-20b", tmp_path)


def test_a_layer_count_written_under_the_class_alias_is_read_not_the_default() -> None:
    """EXAONE-3.5-7.8B writes num_layers 32, which ExaoneConfig's attribute_map reads as num_hidden_layers: the
    family line's default (ExaoneConfig's 32) is not taken beside it, so no note says it was."""
    path = ROOT / "tests" / "data" / "configs_unseen" / "text" / "LGAI-EXAONE--EXAONE-3.5-7.8B-Instruct.json"
    cfg = json.loads(path.read_text())
    assert "num_hidden_layers" not in cfg and cfg["num_layers"] == 32
    cfg["num_layers"] = 4  # not the default: the written count is the one read
    spec = parse_model_config(cfg, path.stem)
    assert len(spec.layers) == 4
    assert _default_notes(spec) == []
