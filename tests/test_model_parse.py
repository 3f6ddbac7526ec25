"""ModelSpec parsing: what the catalog configs parse to, the one-line errors, and a fuzz of real configs."""
from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solver.specs.dtypes import KVFormat
from solver.catalog import catalog_dir
from solver.errors import InputError, ShardplanError
from solver.estimate.request_state import kv_bytes_per_token_layer
from solver.estimate.params import count_params
from solver.specs.config.read import parse_model_config
from solver.specs.model_catalog import load_model, resolve_model_file
from solver.specs.validation import load_json

CONFIG_FILES = sorted(catalog_dir("models").glob("*.json"))
CONFIGS: dict[str, dict[str, Any]] = {p.name: json.loads(p.read_text()) for p in CONFIG_FILES}


def _config(stem: str) -> dict[str, Any]:
    return copy.deepcopy(CONFIGS[f"{stem}.json"])


# ------------------------------------------------------------------------------------------ catalog configs


@pytest.mark.parametrize("path", CONFIG_FILES, ids=lambda p: p.stem)
def test_every_catalog_config_parses(path: Path) -> None:
    spec = parse_model_config(load_json(path), path.stem)
    assert spec.layers and all(layer.blocks for layer in spec.layers)
    assert count_params(spec).total > 0


def test_every_index_entry_resolves_to_a_file() -> None:
    index = (catalog_dir("models") / "index.yaml").read_text()
    for path in CONFIG_FILES:
        assert path.name in index, f"{path.name} has no entry in models/index.yaml"
        assert resolve_model_file(path.stem)[0] == path


@pytest.mark.parametrize("alias, architecture, attention", [
    ("deepseek-v3", "moe+mla", "mla"),
    ("deepseek-v3.2", "moe+dsa", "dsa"),
    ("glm-5", "moe+dsa", "dsa"),
    ("kimi-k2", "moe+mla", "mla"),
    ("longcat-flash", "moe+mla", "mla"),
    ("qwen3-235b-a22b", "moe", "gqa"),
    ("qwen3-32b", "dense", "gqa"),
    ("llama-3.1-70b", "dense", "gqa"),
    ("mixtral-8x7b", "moe", "gqa"),
    ("gpt-oss-120b", "hybrid-attention", "gqa"),
    ("llama-4-scout", "hybrid-attention", "gqa"),
])
def test_architecture_class_follows_the_config(alias: str, architecture: str, attention: str) -> None:
    spec = load_model(alias)
    assert (spec.architecture, spec.attention_kind) == (architecture, attention)


def test_deepseek_v3_layer_split_is_3_dense_58_moe() -> None:
    spec = load_model("deepseek-v3")
    assert (spec.num_layers, spec.num_dense_layers, spec.num_moe_layers) == (61, 3, 58)
    assert spec.num_mtp_layers == 1
    assert (spec.kv_lora_rank, spec.qk_rope_head_dim, spec.head_dim, spec.v_head_dim) == (512, 64, 192, 128)


@pytest.mark.parametrize("stem, field", [("Qwen--Qwen3-30B-A3B", "moe_intermediate_size"),
                                         ("Qwen--Qwen3-Next-80B-A3B-Instruct", "moe_intermediate_size"),
                                         ("Qwen--Qwen3-Next-80B-A3B-Instruct", "shared_expert_intermediate_size")])
def test_an_expert_width_left_out_takes_the_config_class_default(stem: str, field: str) -> None:
    """Qwen3MoeConfig() sizes the experts 768 wide and Qwen3NextConfig() 512 (its shared expert too): a config
    that leaves the field out is built with that default, not the dense intermediate_size (Mixtral's convention,
    the reader's fallback: 6,144 for Qwen3-30B-A3B, 232B parameters for its 30.5B). The catalog files write
    the defaults, so dropping the field counts the same."""
    cfg = _config(stem)
    whole = count_params(parse_model_config(cfg, stem)).total
    del cfg[field]
    assert count_params(parse_model_config(cfg, stem)).total == whole


def test_fp8_checkpoint_formats_are_read_from_quantization_config() -> None:
    spec = load_model("deepseek-v3")
    assert spec.quant.method == "fp8"
    assert spec.quant.experts == "fp8_block" and spec.quant.block_size == (128, 128)
    assert spec.quant.embedding == "bf16" and spec.quant.lm_head == "bf16"


def test_missing_hidden_size_names_the_field() -> None:
    cfg = _config("meta-llama--Meta-Llama-3.1-8B")
    del cfg["hidden_size"]
    with pytest.raises(InputError, match="hidden_size: missing"):
        parse_model_config(cfg, "x")


def test_a_dense_ffn_without_its_width_is_one_error_line_naming_intermediate_size(tmp_path: Path) -> None:
    # it was read as 4 x hidden: 6.44B for Llama-3.1-8B without intermediate_size
    from click.testing import CliRunner

    from solver.cli.main import main as cli

    cfg = _config("meta-llama--Meta-Llama-3.1-8B")
    del cfg["intermediate_size"]
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    result = CliRunner().invoke(cli, ["inspect", str(path)])
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == [f"error: {path}: intermediate_size: missing (required to size "
                                                  "the dense FFN)"]


def test_gpt2_style_n_inner_unset_is_four_x_hidden_with_a_note() -> None:
    # GPT2Config: n_inner None means 4 x n_embd; the architecture's convention, said, not guessed
    cfg = {"model_type": "gpt2", "n_embd": 768, "n_layer": 12, "n_head": 12, "vocab_size": 50257, "n_inner": None}
    spec = parse_model_config(cfg, "x")
    assert spec.intermediate_size == 3072
    assert "n_inner: not given; the FFN width is read as 4 x hidden size = 3072 (the gpt2 convention)" in spec.warnings


def test_heads_not_dividing_hidden_without_head_dim_is_an_error() -> None:
    # a family of no line: nothing says how its class sizes the heads (llama's line floors, as LlamaConfig does)
    cfg = _config("meta-llama--Meta-Llama-3.1-8B")
    cfg.update(num_attention_heads=30, num_key_value_heads=10, model_type="acme_lm")
    assert "head_dim" not in cfg
    with pytest.raises(InputError, match="does not divide hidden_size"):
        parse_model_config(cfg, "x")


def test_heads_not_dividing_hidden_is_fine_with_head_dim() -> None:
    cfg = _config("meta-llama--Meta-Llama-3.1-8B")
    cfg.update(num_attention_heads=30, num_key_value_heads=10, head_dim=128)
    assert parse_model_config(cfg, "x").head_dim == 128


@pytest.mark.parametrize("key", ["hidden_size", "num_hidden_layers", "vocab_size", "intermediate_size"])
def test_negative_sizes_are_rejected(key: str) -> None:
    cfg = _config("meta-llama--Meta-Llama-3.1-8B")
    cfg[key] = -4096
    with pytest.raises(InputError, match=f"{key}: must be >= 1"):
        parse_model_config(cfg, "x")


def test_malformed_json_is_an_input_error(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text('{"hidden_size": 4096,')
    with pytest.raises(InputError, match="not valid JSON"):
        load_json(path)


def test_config_that_is_not_an_object_is_an_input_error() -> None:
    with pytest.raises(InputError, match="must be a JSON object"):
        parse_model_config([1, 2], "x")


@pytest.mark.parametrize("value, got", [([1, 2], "list"), (None, "null"), ("qwen3", "str")])
def test_a_nested_text_config_that_is_not_an_object_names_text_config(value: Any, got: str) -> None:
    # it fell back to the top level and said "hidden_size: missing", a field the user never left out
    cfg = _config("Qwen--Qwen3-VL-30B-A3B-Instruct")
    cfg["text_config"] = value
    with pytest.raises(InputError, match=f"text_config: must be a JSON object \\(the language model's config\\), got {got}"):
        parse_model_config(cfg, "x")


def test_a_wrapper_field_that_contradicts_the_nested_config_is_an_error_not_dropped() -> None:
    cfg = _config("Qwen--Qwen3-VL-30B-A3B-Instruct")
    cfg["num_hidden_layers"] = 12  # text_config says 48, and the model is read from there
    with pytest.raises(InputError, match="num_hidden_layers: the top level says 12 and text_config.num_hidden_layers "
                                         "says 48"):
        parse_model_config(cfg, "x")
    cfg = _config("Qwen--Qwen3-VL-30B-A3B-Instruct")
    cfg["num_nextn_predict_layers"] = 1  # only at the top level: MTP would be read as absent
    with pytest.raises(InputError, match="num_nextn_predict_layers: given at the top level \\(1\\) but the language "
                                         "model is read from text_config, which lacks it"):
        parse_model_config(cfg, "x")


# -------------------------------------------------------------------------------------------------- fuzz

_BAD_VALUES = st.sampled_from([-1, -4096, 0, "abc", "128", None, 10**30, 2**63, 0.5, 1.5, 4096.0, [], [1, 2],
                               ["a", "b"], {}, True])
_MODEL_TYPES = st.sampled_from(["llama", "qwen3_moe", "mixtral", "deepseek_v3", "deepseek_v32", "glm_moe_dsa",
                                "gpt_oss", "llama4", "llama4_text", "longcat_flash", "mistral", "nonsense", ""])


def _paths(cfg: dict[str, Any]) -> list[tuple[str, ...]]:
    """Top-level keys and the keys one level down in nested objects (text_config, quantization_config)."""
    out: list[tuple[str, ...]] = []
    for key, value in cfg.items():
        out.append((key,))
        if isinstance(value, dict):
            out += [(key, sub) for sub in value]
    return out


@st.composite
def _mutated_config(draw: st.DrawFn) -> dict[str, Any]:
    cfg = copy.deepcopy(CONFIGS[draw(st.sampled_from(sorted(CONFIGS)))])
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["delete", "set", "set", "model_type"]))
        if kind == "model_type":
            cfg["model_type"] = draw(_MODEL_TYPES)
            continue
        paths = _paths(cfg)
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent = cfg
        for key in path[:-1]:
            parent = parent[key]
        if not isinstance(parent, dict) or path[-1] not in parent:
            continue
        if kind == "delete":
            del parent[path[-1]]
        else:
            parent[path[-1]] = copy.deepcopy(draw(_BAD_VALUES))
    return cfg


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_mutated_config())
def test_mutated_configs_raise_only_shardplan_errors(cfg: dict[str, Any]) -> None:
    try:
        spec = parse_model_config(cfg, "fuzz")
    except ShardplanError:
        return
    report = count_params(spec)
    assert report.total >= 0
    for kv_bytes in (1, 2):
        for tp in (1, 8):
            assert kv_bytes_per_token_layer(spec, KVFormat(kv_bytes), tp) >= 0


# ------------------------------------------------------------------------------ bad size-bearing fields


def test_unknown_layer_types_entry_names_the_field_and_value() -> None:
    cfg = _config("LGAI-EXAONE--EXAONE-4.0-32B")
    cfg["layer_types"][3] = "mystery_attention"
    with pytest.raises(InputError, match=r"layer_types: unknown entry 'mystery_attention' at index 3"):
        parse_model_config(cfg, "x")


def test_layer_types_of_the_wrong_length_is_an_error() -> None:
    cfg = _config("LGAI-EXAONE--EXAONE-4.0-32B")
    cfg["layer_types"] = cfg["layer_types"][:-1]
    with pytest.raises(InputError, match="layer_types: has 63 entries for 64 layers"):
        parse_model_config(cfg, "x")


def test_hybrid_pattern_of_the_wrong_length_is_an_error() -> None:
    cfg = _config("nvidia--NVIDIA-Nemotron-3-Nano-30B-A3B-BF16")
    cfg["hybrid_override_pattern"] += "M"
    with pytest.raises(InputError, match="hybrid_override_pattern: has 53 entries for num_hidden_layers = 52"):
        parse_model_config(cfg, "x")


def test_unknown_pattern_character_is_an_error() -> None:
    cfg = _config("nvidia--NVIDIA-Nemotron-3-Nano-30B-A3B-BF16")
    cfg["hybrid_override_pattern"] = "X" + cfg["hybrid_override_pattern"][1:]
    with pytest.raises(InputError, match="hybrid_override_pattern: unknown layer character"):
        parse_model_config(cfg, "x")


def test_negative_window_is_an_error() -> None:
    cfg = _config("LGAI-EXAONE--EXAONE-4.0-32B")
    cfg["sliding_window"] = -4096
    with pytest.raises(InputError, match="sliding_window: must be >= 1, got -4096"):
        parse_model_config(cfg, "x")


@pytest.mark.parametrize("value", [float("inf"), float("nan"), 1e300, 2**62])
def test_non_finite_or_absurd_layer_counts_are_refused(value: float) -> None:
    cfg = _config("meta-llama--Meta-Llama-3.1-8B")
    cfg["num_hidden_layers"] = value
    with pytest.raises(InputError, match="num_hidden_layers: must be"):
        parse_model_config(cfg, "x")


def test_huge_integer_in_a_size_field_is_refused() -> None:
    cfg = _config("meta-llama--Meta-Llama-3.1-8B")
    cfg["intermediate_size"] = 10**15
    with pytest.raises(InputError, match="intermediate_size: must be <="):
        parse_model_config(cfg, "x")


def test_infinity_in_a_field_that_sizes_nothing_is_fine() -> None:
    # Nemotron-3-Super's time_step_limit holds the bare JSON token Infinity (SOURCES.md)
    spec = load_model("nemotron-3-super")
    assert spec.num_layers == 88


def test_one_based_index_list_outside_the_layers_is_an_error() -> None:
    cfg = _config("moonshotai--Kimi-K3")
    cfg["text_config"]["linear_attn_config"]["full_attn_layers"].append(200)
    with pytest.raises(InputError, match="linear_attn_config"):
        parse_model_config(cfg, "x")


def test_nested_field_errors_name_the_nested_path() -> None:
    cfg = _config("Qwen--Qwen3.5-9B")
    cfg["text_config"]["linear_num_value_heads"] = -2
    with pytest.raises(InputError, match=r"text_config\.linear_num_value_heads: must be >= 1"):
        parse_model_config(cfg, "x")


def test_vision_index_list_that_is_not_a_list_names_the_field() -> None:
    cfg = _config("Qwen--Qwen3.5-35B-A3B")
    cfg["vision_config"]["deepstack_visual_indexes"] = -1
    with pytest.raises(InputError, match=r"deepstack_visual_indexes: must be a list of integers"):
        parse_model_config(cfg, "x")


def test_bad_config_on_the_command_line_is_one_line_and_exit_2(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from solver.cli.main import main as cli

    cfg = _config("LGAI-EXAONE--EXAONE-4.0-32B")
    cfg["layer_types"][0] = "bogus"
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    result = CliRunner().invoke(cli, ["inspect", str(path)])
    assert result.exit_code == 2
    lines = [line for line in result.output.strip().splitlines() if line]
    assert len(lines) == 1 and "layer_types: unknown entry 'bogus'" in lines[0]


# ------------------------------------------------------------------------------------ fields never read


def test_an_expert_count_in_a_field_the_parser_does_not_read_is_refused() -> None:
    # a family spelling its expert count in a field the parser does not read (ERNIE-4.5's moe_num_experts was
    # one until it was read): read by convention, the model would be dense
    cfg = _config("mistralai--Mixtral-8x7B-v0.1")
    cfg["n_experts"] = cfg.pop("num_local_experts")
    with pytest.raises(InputError, match=r"n_experts: 8 experts in a field shardplan does not read .*"
                                         r"n_routed_experts, num_local_experts, num_experts, moe_num_experts"):
        parse_model_config(cfg, "x")


def test_unread_structural_fields_of_a_family_without_defaults_are_named() -> None:
    cfg = _config("meta-llama--Meta-Llama-3.1-8B")
    cfg.update(model_type="newfamily", kv_share_interval=2, moe_layers_enum="3,4", router_aux_loss_coef=0.01,
               use_sliding_window=False, image_token_index=151655)
    spec = parse_model_config(cfg, "x")
    notes = [w for w in spec.warnings if w.startswith("fields not read")]
    assert len(notes) == 1
    assert "kv_share_interval=2" in notes[0] and "moe_layers_enum='3,4'" in notes[0]
    for quiet in ("router_aux_loss_coef", "image_token_index", "use_sliding_window"):  # size nothing / unset
        assert quiet not in notes[0]


def test_a_family_with_defaults_gets_no_unread_note() -> None:
    # its totals are checked against the published ones; Qwen3-MoE's unused dense intermediate_size is no news
    spec = load_model("qwen3-235b-a22b")
    assert not any(w.startswith("fields not read") for w in spec.warnings)


def test_a_feature_the_stack_does_not_model_is_named_whatever_the_family(monkeypatch: pytest.MonkeyPatch) -> None:
    import solver.specs.config.unread as unread

    monkeypatch.setattr(unread, "_UNMODELLED", ("use_new_feature",))
    cfg = _config("tencent--Hunyuan-A13B-Instruct")  # a family with defaults: only such switches are named
    cfg["use_new_feature"] = True
    notes = [w for w in parse_model_config(cfg, "x").warnings if w.startswith("fields not read")]
    assert len(notes) == 1 and "use_new_feature=True" in notes[0]


def test_kv_sharing_switches_are_read_not_named() -> None:
    # once a note (the stack did not model them), now read: config/pattern.py kv_sharing
    cfg = _config("google--gemma-4-31B-it")
    cfg["text_config"].update(num_kv_shared_layers=20)
    spec = parse_model_config(cfg, "x")
    assert not any(w.startswith("fields not read") for w in spec.warnings)
    assert [layer.mixer.kv_shared for layer in spec.layers] == [False] * 40 + [True] * 20
    cfg = _config("tencent--Hunyuan-A13B-Instruct")
    cfg["use_cla"] = True
    spec = parse_model_config(cfg, "x")
    assert not any(w.startswith("fields not read") for w in spec.warnings)
    assert [layer.mixer.kv_shared for layer in spec.layers] == [False, True] * 16


@pytest.mark.parametrize("value", [5, ["silu"], {"name": "silu"}, True])
def test_an_activation_name_that_is_not_a_string_is_refused(value: Any) -> None:
    """hidden_act decides the MLP's shape (relu2: up / down only) and its parameters (xIELU); a number, list or
    mapping was read as its repr, matching no name, so the MLP was sized as if the field said something else."""
    cfg = _config("meta-llama--Meta-Llama-3.1-8B")
    cfg["hidden_act"] = value
    with pytest.raises(InputError, match=r"hidden_act: must be a string, got"):
        parse_model_config(cfg, "x")


@pytest.mark.parametrize("value", [0, False, "", {}])
def test_mlp_only_layers_that_is_not_a_list_is_refused_even_when_falsy(value: Any) -> None:
    """Qwen-MoE's mlp_only_layers lists the layers kept dense; a falsy non-list (0, false, "") was read as the
    empty list, every layer MoE, where the writer meant something the reader cannot know."""
    cfg = _config("Qwen--Qwen3-30B-A3B")
    cfg["mlp_only_layers"] = value
    with pytest.raises(InputError, match=r"mlp_only_layers: must be a list of layer indices"):
        parse_model_config(cfg, "x")


def _llava_with_text(text: dict[str, Any]) -> dict[str, Any]:
    return {"model_type": "llava", "text_config": text,
            "vision_config": {"model_type": "clip_vision_model", "hidden_size": 1024, "intermediate_size": 4096,
                              "num_hidden_layers": 24, "num_attention_heads": 16, "patch_size": 14,
                              "image_size": 336}}


def test_a_wrapper_default_text_config_sizes_only_a_nested_config_of_its_class() -> None:
    # to_diff_dict leaves a nested field out where it equals the nested class's default: a Qwen2 text config in
    # LLaVA leaving vocab_size out is Qwen2Config's, never LlamaConfig's 32000 (LLaVA's default text config)
    qwen2 = {"model_type": "qwen2", "hidden_size": 896, "intermediate_size": 4864, "num_attention_heads": 14,
             "num_hidden_layers": 24, "num_key_value_heads": 2}
    with pytest.raises(InputError, match=r"text_config\.vocab_size: missing"):
        parse_model_config(_llava_with_text(qwen2), "llava-qwen2")
    llama = {"model_type": "llama", "num_key_value_heads": 32}
    assert parse_model_config(_llava_with_text(llama), "llava-llama").vocab_size == 32000
    mistral = {"model_type": "mistral", "vocab_size": 32064}  # MistralConfig()'s sizes, from the mistral line
    spec = parse_model_config(_llava_with_text(mistral), "llava-mistral")
    assert (spec.hidden_size, len(spec.layers)) == (4096, 32)


@pytest.mark.parametrize("value", [["qwen3"], {"type": "olmo"}, 3])
def test_a_qk_norm_layout_that_is_not_a_string_is_refused_naming_the_field(value: Any) -> None:
    cfg = _config("meta-llama--Meta-Llama-3.1-8B")
    cfg["qk_norm_type"] = value
    with pytest.raises(InputError, match=r"qk_norm_type: must be a string"):
        parse_model_config(cfg, "x")


def test_a_next_n_layer_holds_embedding_and_head_copies_only_in_the_deepseek_layout() -> None:
    # DeepSeek-V3's checkpoint stores embed_tokens and shared_head.head again in its layer 61: 2 x 129,280 x 7,168
    # beyond the model and the next-n layer; MiMo-7B's mtp_layers.0 holds none (its hub page: 7.83B in all)
    ds, mimo = (count_params(load_model(n)) for n in ("deepseek-v3", "mimo-7b"))
    assert ds.checkpoint_total == ds.total + ds.mtp_params + 2 * 129_280 * 7_168
    assert mimo.checkpoint_total == mimo.total + mimo.mtp_params
    assert round(mimo.checkpoint_total / 1e9, 2) == 7.83
