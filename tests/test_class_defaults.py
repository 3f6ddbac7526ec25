"""A config that leaves a field out was built with its transformers class's default for it: the reader counts that
default (family_defaults.yaml) or refuses naming the field, never a fallback of its own. The figures compared
are the released configs', whose values equal the class defaults (DeepseekV3Config, GptOssConfig, transformers
5.25.0)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from solver.errors import InputError
from solver.estimate.params import count_params
from solver.specs.config.read import parse_model_config
from solver.specs.layers import MLA, MoE

from conftest import one_catalog_config_per_class  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEEPSEEK_V3 = ROOT / "models" / "deepseek-ai--DeepSeek-V3.json"
GPT_OSS = ROOT / "models" / "openai--gpt-oss-120b.json"
WHEEL = Path("/tmp/tfw39/transformers")  # the unzipped transformers 5.25.0 wheel, where present


def _read(path: Path, drop: str | None = None, **given):
    cfg = json.loads(path.read_text())
    if drop is not None:
        del cfg[drop]
    cfg.update(given)
    return parse_model_config(cfg, path.stem)


def test_deepseek_v3_without_kv_lora_rank_is_mla_of_the_class_default() -> None:
    spec = _read(DEEPSEEK_V3, "kv_lora_rank")
    assert isinstance(spec.layers[0].mixer, MLA) and spec.layers[0].mixer.kv_lora_rank == 512
    assert count_params(spec).total == count_params(_read(DEEPSEEK_V3)).total == 671_026_419_200


def test_deepseek_v3_without_moe_intermediate_size_has_2048_wide_experts() -> None:
    # before: the experts took intermediate_size (18,432): 5,922,731,234,816 parameters
    assert count_params(_read(DEEPSEEK_V3, "moe_intermediate_size")).total == 671_026_419_200


def test_gpt_oss_without_head_dim_has_the_class_head_dim_64() -> None:
    # before: hidden / heads = 2880 / 64 = 45
    assert _read(GPT_OSS, "head_dim").layers[0].mixer.head_dim == 64


def test_gpt_oss_without_num_key_value_heads_has_8() -> None:
    # before: MHA, 64 KV heads (117,572,592,960 parameters)
    spec = _read(GPT_OSS, "num_key_value_heads")
    assert spec.layers[0].mixer.kv_heads == 8
    assert count_params(spec).total == 116_829_156_672


def test_gpt_oss_without_layer_types_alternates_sliding_and_full() -> None:
    # GptOssConfig.__post_init__: sliding where (i + 1) % 2, full otherwise; before: every layer sliding
    written = [layer.mixer.kind for layer in _read(GPT_OSS).layers]
    left_out = [layer.mixer.kind for layer in _read(GPT_OSS, "layer_types").layers]
    assert left_out == written and left_out[:2] == ["SWA", "GQA"]


def test_gpt_oss_without_experts_is_refused_naming_the_field() -> None:
    # before: counted as a dense FFN (3,010,388,544 parameters); GptOssMLP has no dense path
    with pytest.raises(InputError, match="num_local_experts: 0"):
        _read(GPT_OSS, num_local_experts=0)


def test_a_field_written_null_keeps_its_null_over_the_class_default() -> None:
    # DeepSeek-V2-Lite writes q_lora_rank null (q_proj straight from the hidden state); DeepseekV2Config's 1536 is
    # for a config that leaves the field out
    spec = _read(ROOT / "tests" / "data" / "configs_unseen" / "deepseek-ai--DeepSeek-V2-Lite.json")
    assert spec.layers[0].mixer.q_lora_rank is None


def _miscounts(paths: list[Path]) -> list[tuple[str, str]]:
    from benchmarks.class_defaults import check, class_table

    table = class_table(WHEEL)
    found = []
    for path in paths:
        cfg = json.loads(path.read_text())
        found += [(path.name, field) for kind, field, *_ in check(cfg, table) if kind == "MISCOUNT"
                  # the layer count written twice (LongCat's num_layers 28 beside num_hidden_layers 56, Mamba's n_layer
                  # beside num_hidden_layers): left out, the other name still sizes the model
                  and field not in ("num_layers", "num_hidden_layers")
]
    return found


@pytest.mark.skipif(not (WHEEL / "models").is_dir(), reason="needs the unzipped transformers 5.25.0 wheel")
@pytest.mark.slow  # every catalog class (~6 s)
def test_every_left_out_field_of_each_catalog_class_counts_as_its_class_default() -> None:
    # one catalog model per configuration class (29 of the 42 catalog configs, a fifth of the whole sweep's time)
    assert _miscounts(one_catalog_config_per_class()) == []


@pytest.mark.slow
@pytest.mark.skipif(not (WHEEL / "models").is_dir(), reason="needs the unzipped transformers 5.25.0 wheel")
def test_every_left_out_field_of_every_other_config_counts_as_its_class_default() -> None:
    # the rest of benchmarks/class_defaults.py's configs (the catalog's other models of a class, every unseen
    # config): with the default test above, every config it lists
    from benchmarks.class_defaults import configs

    checked = set(one_catalog_config_per_class())
    assert _miscounts([p for p in configs() if p not in checked]) == []


def test_a_nested_text_config_leaving_a_field_out_takes_its_own_class_default() -> None:
    # transformers builds a given text_config dict as TextClass(**text_config): LLaVA-NeXT's Mistral text config
    # without intermediate_size is MistralConfig's 14336 (before: LlamaConfig's 11008 from LLaVA's default text
    # config, 6,258,124,800 parameters)
    path = ROOT / "tests" / "data" / "configs_unseen" / "llava-hf--llava-v1.6-mistral-7b-hf.json"
    cfg = json.loads(path.read_text())
    written = count_params(parse_model_config(json.loads(path.read_text()), path.stem)).total
    del cfg["text_config"]["intermediate_size"]
    assert count_params(parse_model_config(cfg, path.stem)).total == written == 7_566_747_648


def test_paligemma_text_config_leaving_hidden_size_out_is_gemma_config_s_3072() -> None:
    # PaliGemmaConfig's init_kwargs (hidden_size 2048, ...) build the text config given none, not a given one's
    # missing fields (before: 2048)
    path = ROOT / "tests" / "data" / "configs_unseen" / "multi" / "google--paligemma-3b-pt-224.json"
    cfg = json.loads(path.read_text())
    del cfg["text_config"]["hidden_size"]
    assert parse_model_config(cfg, path.stem).hidden_size == 3072


def test_a_nested_text_config_leaving_tie_word_embeddings_out_ties_by_the_rule_of_the_version_that_saved_it() -> None:
    # transformers 5.x ties the head by the model class's own config (get_expanded_tied_weights_keys reads
    # self.config.tie_word_embeddings; the head is LlavaNextForConditionalGeneration's): granite-vision's wrapper
    # writes true. The file is stamped 4.50.0.dev0, and 4.x tied by the text config's flag, GraniteConfig's default
    # false where left out (config/head_tie.py)
    path = ROOT / "tests" / "data" / "configs_unseen" / "round11" / "ibm-granite--granite-vision-3.3-2b.json"
    cfg = json.loads(path.read_text())
    del cfg["text_config"]["tie_word_embeddings"]
    assert parse_model_config(cfg, path.stem).tie_word_embeddings is False
    cfg["transformers_version"] = "5.25.0"
    assert parse_model_config(cfg, path.stem).tie_word_embeddings is True


def test_step_3_7_text_config_leaving_its_sizes_out_takes_step3p7_text_config_s_defaults() -> None:
    # transformers 5.25.0 maps model_type step3p5 to Step3p7TextConfig: 8 KV heads of 128, 1280-wide experts
    # (before: MHA, head_dim 4096 / 64, experts intermediate_size 11,264 wide: 1,681,803,169,600 parameters)
    path = ROOT / "tests" / "data" / "configs_unseen" / "round28" / "stepfun-ai--Step-3.7-Flash.json"
    cfg = json.loads(path.read_text())
    written = count_params(parse_model_config(json.loads(path.read_text()), path.stem)).total
    for field in ("num_key_value_heads", "head_dim", "moe_intermediate_size", "share_expert_dim"):
        del cfg["text_config"][field]
    assert count_params(parse_model_config(cfg, path.stem)).total == written == 197_824_859_968


UNSEEN = ROOT / "tests" / "data" / "configs_unseen"


def _nested(path: Path, drop: str):
    """The config with one field of its nested text config left out."""
    cfg = json.loads(path.read_text())
    del cfg["text_config"][drop]
    return parse_model_config(cfg, path.stem)


def test_layer_types_without_num_hidden_layers_is_refused_naming_num_hidden_layers() -> None:
    # the class takes its own num_hidden_layers default and validate_layer_type refuses a list of another length
    # (GptOssConfig's 36 beside gpt-oss-20b's 24 entries); before: counted as 24 layers
    with pytest.raises(InputError, match=r"num_hidden_layers: missing beside layer_types' 24 entries"):
        _read(ROOT / "models" / "openai--gpt-oss-20b.json", "num_hidden_layers")


@pytest.mark.parametrize("path, drop, kv, heads", [
    (ROOT / "models" / "LGAI-EXAONE--EXAONE-4.0-32B.json", "num_key_value_heads", 32, 40),  # Exaone4Config
    (UNSEEN / "round8" / "Qwen--Qwen2-57B-A14B.json", "num_key_value_heads", 16, 28),  # Qwen2MoeConfig
])
def test_a_left_out_num_key_value_heads_not_dividing_the_heads_is_refused_naming_it(path: Path, drop: str, kv: int,
                                                                                     heads: int) -> None:
    # the class default builds the weights and fails the first forward (repeat_kv); before: counted as MHA
    with pytest.raises(InputError, match=rf"num_key_value_heads: {kv} must divide num_attention_heads \({heads}\)"):
        _read(path, drop)


def test_paligemma_text_config_leaving_num_key_value_heads_out_is_refused_by_gemma_config_s_16() -> None:
    path = UNSEEN / "multi" / "google--paligemma-3b-pt-224.json"
    with pytest.raises(InputError, match=r"text_config.num_key_value_heads: 16 must divide num_attention_heads \(8\)"):
        _nested(path, "num_key_value_heads")


def test_mla_never_reads_num_key_value_heads() -> None:
    # DeepseekV3Config's default 128 beside Moonlight's 16 heads builds and runs: MLA's heads are the query heads
    path = UNSEEN / "round10" / "moonshotai--Moonlight-16B-A3B.json"
    written = count_params(_read(path)).total
    assert count_params(_read(path, "num_key_value_heads")).total == written
    assert count_params(_read(path, num_key_value_heads=128)).total == written


FALCON_H1 = UNSEEN / "round7" / "tiiuae--Falcon-H1-0.5B-Instruct.json"


@pytest.mark.parametrize("drop, shown", [("mamba_d_ssm", r"1024 is not .* \(24 x 64\)"),
                                         ("mamba_n_heads", r"1536 is not .* \(128 x 64\)")])
def test_falcon_h1_leaving_a_mixer_size_out_is_refused_as_validate_architecture_does(drop: str, shown: str) -> None:
    # FalconH1Config's mamba_d_ssm 1024 / mamba_n_heads 128 beside the other written sizes; before: counted (the
    # mixer 24 x 64 wide, or a Mamba-1 mixer where mamba_n_heads was left out)
    with pytest.raises(InputError, match=rf"mamba_d_ssm: {shown}"):
        _read(FALCON_H1, drop)


def test_falcon_h1_leaving_mamba_d_head_out_splits_mamba_d_ssm_over_the_heads() -> None:
    # FalconH1Config's mamba_d_head "auto": mamba_d_ssm / mamba_n_heads = 1536 / 24 = 64 (not expand x hidden's)
    assert count_params(_read(FALCON_H1, "mamba_d_head")).total == count_params(_read(FALCON_H1)).total


def _kinds(spec) -> dict[str, int]:
    out: dict[str, int] = {}
    for layer in spec.layers:
        out[layer.mixer.kind] = out.get(layer.mixer.kind, 0) + 1
    return out


@pytest.mark.parametrize("path, kinds", [
    # VaultGemmaConfig.__post_init__: sliding at even i, full at odd (before: every layer sliding)
    (UNSEEN / "round11" / "google--vaultgemma-1b.json", {"SWA": 13, "MQA": 13}),
    # Olmo3Config: every 4th layer full
    (UNSEEN / "text" / "allenai--Olmo-3-1025-7B.json", {"SWA": 24, "MHA": 8}),
    # Kolibri1_1Config: every 5th layer indexed_attention (full), the rest sliding
    (UNSEEN / "round29" / "Aleph-Alpha--Kolibri-1.1.json", {"SWA": 40, "GQA": 10}),
    # MellumConfig / LagunaConfig: every layer full_attention, the written sliding_window unused
    (UNSEEN / "round25" / "JetBrains--Mellum2-12B-A2.5B-Base.json", {"GQA": 28}),
    (UNSEEN / "round25" / "poolside--laguna-XS.2.json", {"GQA": 40}),
])
def test_layer_types_left_out_follow_the_class_s_post_init_pattern(path: Path, kinds: dict[str, int]) -> None:
    assert _kinds(_read(path, "layer_types")) == kinds


def test_mllama_text_config_leaving_cross_attention_layers_out_has_the_class_s_eight() -> None:
    # MllamaTextConfig.__post_init__: [3, 8, 13, 18, 23, 28, 33, 38] (before: no cross-attention layer)
    spec = _nested(UNSEEN / "meta-llama--Llama-3.2-11B-Vision-Instruct.json", "cross_attention_layers")
    assert _kinds(spec) == {"GQA": 32, "CrossAttn": 8}


@pytest.mark.parametrize("path, nested, kinds", [
    # MiniMaxConfig.__post_init__: full at even i, linear at odd (the released list is 7 linear : 1 full)
    (UNSEEN / "round10" / "MiniMaxAI--MiniMax-Text-01-hf.json", False, {"GQA": 40, "Lightning": 40}),
    # Lfm3Config.__post_init__: full at i % 4 == 2, sliding at i % 4 == 0 but layer 0, conv elsewhere: the
    # released list's 13 conv + 6 full + 5 sliding
    (UNSEEN / "round34" / "LiquidAI--LFM3-1.7B.json", False, {"ShortConv": 13, "GQA": 6, "SWA": 5}),
    (UNSEEN / "round34" / "LiquidAI--LFM3-VL-2B.json", True, {"ShortConv": 13, "GQA": 6, "SWA": 5}),
])
def test_layer_types_left_out_are_the_family_s_layer_types_default(path: Path, nested: bool,
                                                                   kinds: dict[str, int]) -> None:
    # before: refused, the layers read as attention beside the conv / linear-attention fields
    assert _kinds(_nested(path, "layer_types") if nested else _read(path, "layer_types")) == kinds


def test_num_hidden_layers_left_out_beside_layer_types_of_the_class_default_s_length_counts() -> None:
    # GptOssConfig's 36 = gpt-oss-120b's 36 layer_types entries (before: refused naming num_hidden_layers)
    assert count_params(_read(GPT_OSS, "num_hidden_layers")).total == count_params(_read(GPT_OSS)).total


@pytest.mark.parametrize("drop", ["linear_num_key_heads", "linear_num_value_heads", "linear_key_head_dim",
                                  "linear_value_head_dim"])
def test_olmo_hybrid_linear_sizes_left_out_are_derived_as_the_class_does(drop: str) -> None:
    # OlmoHybridConfig: key / value heads = num_attention_heads (30), key dim int(0.75 x 3840 / 30) = 96, value dim
    # 2 x 96 = 192, the released values (before: refused naming the field)
    path = UNSEEN / "round24" / "allenai--Olmo-Hybrid-7B.json"
    assert count_params(_read(path, drop)).total == count_params(_read(path)).total == 7_430_870_688


def test_dory_n_recurrent_layers_left_out_is_the_layers_between_input_and_output() -> None:
    # DoryConfig: num_hidden_layers - n_input_layers - n_output_layers = 72 - 16 - 16 = 40 as written (20 stored
    # layers once halved); before: refused naming n_recurrent_layers
    path = UNSEEN / "round27" / "nvidia--NVIDIA-Nemotron-Labs-Dory1.0-4B-BF16.json"
    assert count_params(_read(path, "n_recurrent_layers")).total == count_params(_read(path)).total == 3_975_229_440


def test_llama_head_dim_left_out_beside_heads_not_dividing_hidden_is_refused() -> None:
    # LlamaConfig's __post_init__ would floor 1792 // 24 = 74, but its validate_architecture refuses a hidden size
    # the heads do not divide (transformers 5.25.0 configuration_llama.py): so does the reader, naming the heads;
    # kanana-nano writes head_dim 128 and is read as written
    path = UNSEEN / "round20" / "kakaocorp--kanana-nano-2.1b-instruct.json"
    with pytest.raises(InputError, match="num_attention_heads: 24 does not divide hidden_size"):
        _read(path, "head_dim")
    assert _read(path).layers[0].mixer.head_dim == 128


LONGCAT = ROOT / "models" / "meituan-longcat--LongCat-Flash-Chat.json"


@pytest.mark.parametrize("drop", ["num_layers", "num_hidden_layers"])
def test_longcat_leaving_one_layer_count_out_derives_it_from_the_other_as_the_class_does(drop: str) -> None:
    # LongcatFlashConfig: num_hidden_layers is the property 2 x num_layers, its setter num_layers = value // 2
    # (before, num_layers left out: 56 blocks of one sub-layer each, 1,089,279,383,552 parameters; the count holds
    # the router's score-correction bias, the oracle's fix)
    assert count_params(_read(LONGCAT, drop)).total == count_params(_read(LONGCAT)).total == 560_664_980_480


def test_longcat_num_layers_written_unlike_half_num_hidden_layers_is_refused_naming_num_layers() -> None:
    # the class reads num_hidden_layers and overwrites num_layers (60 // 2 = 30): the written 28 would be dropped
    with pytest.raises(InputError, match=r"num_layers: 28 disagrees with num_hidden_layers // 2 = 30"):
        _read(LONGCAT, num_hidden_layers=60)


MAMBA = UNSEEN / "state-spaces--mamba-2.8b-hf.json"


def test_mamba_leaving_num_hidden_layers_out_beside_n_layer_is_refused_naming_n_layer() -> None:
    # MambaConfig builds num_hidden_layers layers (32 where left out) and never reads n_layer (before: 64 layers read
    # from n_layer, 2,768,345,600 parameters where transformers builds 32)
    with pytest.raises(InputError, match=r"n_layer: 64 differs from num_hidden_layers = 32"):
        _read(MAMBA, "num_hidden_layers")


def test_mamba_n_layer_left_out_or_equal_changes_nothing() -> None:
    assert count_params(_read(MAMBA, "n_layer")).total == count_params(_read(MAMBA)).total == 2_768_345_600


@pytest.mark.parametrize("path, layers", [(UNSEEN / "tiiuae--falcon-mamba-7b.json", 32),
                                          (UNSEEN / "mistralai--Mamba-Codestral-7B-v0.1.json", 64)])
def test_pure_ssm_num_hidden_layers_left_out_is_the_class_default(path: Path, layers: int) -> None:
    # FalconMambaConfig 32, Mamba2Config 64 (before: refused naming num_hidden_layers)
    assert len(_read(path, "num_hidden_layers").layers) == layers


def test_gemma4_text_config_leaving_hidden_size_per_layer_input_out_reads_the_class_default_256() -> None:
    # Gemma4TextConfig's default 256 builds per-layer input embeddings (Gemma-4-31B writes 0): 262,144 x 60 x 256
    # table + 5,376 x 15,360 projection + 256 norm + 60 x (2 x 5,376 x 256 + 5,376) per layer = 4,274,580,736
    path = ROOT / "models" / "google--gemma-4-31B-it.json"
    written = count_params(parse_model_config(json.loads(path.read_text()), path.stem)).total
    left_out = count_params(_nested(path, "hidden_size_per_layer_input")).total
    assert left_out - written == 262_144 * 15_360 + 5376 * 15_360 + 256 + 60 * (2 * 5376 * 256 + 5376) == 4_274_580_736


STEP_3_7 = UNSEEN / "round28" / "stepfun-ai--Step-3.7-Flash.json"


def test_step_3_7_mlp_layer_types_left_out_are_the_first_three_dense() -> None:
    # Step3p7TextConfig without moe_layers_enum: MoE at layers 3..n-1 (the line's first_k_dense_replace 3)
    assert count_params(_nested(STEP_3_7, "mlp_layer_types")).total == 197_824_859_968


def test_moe_layers_enum_written_for_mlp_layer_types_places_the_moe_layers() -> None:
    # Step3p7TextConfig reads the legacy moe_layers_enum where mlp_layer_types is left out (before: ignored, 42 MoE
    # layers counted for 3)
    cfg = json.loads(STEP_3_7.read_text())
    del cfg["text_config"]["mlp_layer_types"]
    cfg["text_config"]["moe_layers_enum"] = "3,4,5"
    spec = parse_model_config(cfg, STEP_3_7.stem)
    assert [i for i, layer in enumerate(spec.layers) if any(isinstance(b, MoE) for b in layer.blocks)] == [3, 4, 5]
