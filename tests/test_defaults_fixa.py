"""Stop 38 (fixa): facts of the transformers 5.25.0 classes that their default configs leave unwritten (router
correction biases, MiniMax-M2's and Beam's attention, MiMo-V2-Flash's class layout, GLM-4V's q/k/v bias, Gemma-4's
padded per_layer_config keys, floored head widths, Ling-3's KDA sizes). Each config is `ConfigClass()` as
save_pretrained writes it (tests/data/configs_defaults/); each total is transformers' meta-device count of it
(parameters plus the router-bias buffers, benchmarks/README.md "Stop 38"), and each test checks the part the reader
missed by hand."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from solver.errors import InputError
from solver.estimate.params import count_params
from solver.specs.config.read import parse_model_config
from solver.specs.layers.attention import Attention
from solver.specs.layers.linear import KDA
from solver.specs.layers.moe import MoE

DATA = Path(__file__).parent / "data" / "configs_defaults"
UNSEEN = Path(__file__).parent / "data" / "configs_unseen"


def _raw(name: str) -> dict:
    return json.loads((DATA / f"{name}.json").read_text())


def _parse(raw: dict, name: str = "x"):
    return parse_model_config(raw, name)


def _blocks(spec, kind: type) -> list:
    return [b for layer in spec.layers for b in layer.blocks if isinstance(b, kind)]


@pytest.mark.parametrize("name, moe_layers, experts, oracle", [
    ("deepseek_v3", 61 - 3, 256, 671_026_419_200),   # 58 x 256 = 14,848
    ("deepseek_v32", 61 - 3, 256, 671_877_944_064),  # 58 x 256 = 14,848
    ("glm_moe_dsa", 78 - 3, 256, 743_911_218_432),   # 75 x 256 = 19,200
    ("exaone_moe", 32 - 1, 64, 28_550_641_600),      # 31 x 64 = 1,984
    ("ernie4_5_moe", 28 - 1, 64, 21_825_437_888),    # 27 x 64 = 1,728 (a Parameter in Ernie4_5_MoeStatics)
])
def test_the_router_correction_bias_is_built_whatever_topk_method_or_moe_use_aux_free_say(
        name: str, moe_layers: int, experts: int, oracle: int) -> None:
    spec = _parse(_raw(name))
    moes = _blocks(spec, MoE)
    assert len(moes) == moe_layers and all(m.router_bias and m.experts == experts for m in moes)
    assert count_params(spec).total == oracle


def test_deepseek_v2_greedy_router_keeps_no_correction_bias() -> None:
    # DeepseekV2Moe's gate has no e_score_correction_bias; the remote-code condition (topk_method noaux_tc) stands
    raw = json.loads((UNSEEN / "deepseek-ai--DeepSeek-V2-Lite.json").read_text())
    assert raw["topk_method"] == "greedy"
    assert not any(m.router_bias for m in _blocks(_parse(raw), MoE))


def test_minimax_m2_norms_q_and_k_over_every_head_and_biases_its_router() -> None:
    spec = _parse(_raw("minimax_m2"))
    attn = _blocks(spec, Attention)
    assert all(a.qk_norm == "layer" for a in attn)
    assert all(m.router_bias for m in _blocks(spec, MoE))
    # 62 x (48 + 8) x 128 = 444,416 norm weights + 62 x 256 = 15,872 bias: the 460,288 the reader lacked
    assert count_params(spec).total == 228_689_764_864


def test_mimo_v2_flash_class_layout_doubles_the_sliding_kv_heads_and_gives_them_sinks() -> None:
    spec = _parse(_raw("mimo_v2_flash"))
    attn = _blocks(spec, Attention)
    sliding = [a for a in attn if a.window is not None]
    full = [a for a in attn if a.window is None]
    # full at 0 and every 6th (5, 11, ..., 47): 9; sliding 39
    assert (len(full), len(sliding)) == (9, 39)
    assert all((a.kv_heads, a.v_head_dim, a.sinks) == (8, 128, True) for a in sliding)
    assert all((a.kv_heads, a.v_head_dim, a.sinks) == (4, 128, False) for a in full)
    # 39 x 4 more K/V heads x (192 + 128) x 4096 = 204,472,320, sinks 39 x 64 = 2,496
    assert count_params(spec).total == 308_778_780_864


def test_mimo_v2_flash_remote_layout_counts_as_before() -> None:
    # swa_* sizes and the sink switches written: they win over the class layout's defaults, and agree with it
    raw = json.loads((UNSEEN / "round14" / "XiaomiMiMo--MiMo-V2-Flash.json").read_text())
    assert count_params(_parse(raw)).total == 308_778_780_864


def test_beam_attention_gates_every_channel_with_a_head_bias_and_sandwich_norms() -> None:
    spec = _parse(_raw("beam"))
    attn = _blocks(spec, Attention)
    assert all(a.output_gate and a.gate_bias and a.qk_norm == "head" for a in attn)
    assert all(m.router_bias for m in _blocks(spec, MoE))
    assert all(layer.norms == 4 for layer in spec.layers)
    # gate_proj 52 x 5120 x 48 x 128 = 1,635,778,560; gate_bias 52 x 48 = 2,496; two more norms 52 x 2 x 5120 =
    # 532,480; q / k norms 52 x 2 x 128 = 13,312; router bias 49 x 256 = 12,544: 1,636,339,392 in all
    assert count_params(spec).total == 501_267_612_352


@pytest.mark.parametrize("name", ["glm4v", "glm46v", "glmga"])
def test_glm4v_text_attention_biases_q_k_v_whatever_attention_bias_says(name: str) -> None:
    raw = _raw(name)
    assert not raw["text_config"].get("attention_bias", False)
    spec = _parse(raw)
    assert all(a.qkv_bias for a in _blocks(spec, Attention) if a.hidden == 4096)
    # 40 layers x (32 x 128 + 2 x 2 x 128) = 40 x 4,608 = 184,320 biases
    assert count_params(spec).total == 10_292_777_472


@pytest.mark.parametrize("name", ["gemma4_unified", "gemma4_unified_text"])
def test_per_layer_config_keys_are_layer_indices_whatever_their_padding(name: str) -> None:
    raw = _raw(name)
    text = raw.get("text_config", raw)
    assert "05" in text["per_layer_config"]
    spec = _parse(raw)
    dims = [a.head_dim for a in _blocks(spec, Attention) if a.hidden == 2304]
    assert [i for i, d in enumerate(dims) if d == 512] == [5, 11, 17, 23, 29]
    # layer 5 ("05") at head_dim 512, not 256: 256 more channels in q (8 heads), k and v (4 each) and o (8):
    # 2304 x (8 + 4 + 4 + 8) x 256 = 14,155,776, and its q / k norms 2 x 256 = 512
    assert count_params(spec).total == 3_010_758_400


def test_a_padded_per_layer_config_key_that_is_no_index_is_refused_by_name() -> None:
    raw = _raw("gemma4_unified_text")
    raw["per_layer_config"]["last"] = {"head_dim": 512}
    with pytest.raises(InputError, match=r"per_layer_config\.last"):
        _parse(raw)


@pytest.mark.parametrize("name, oracle", [("glm4_moe", 103_481_206_400), ("glm4v_moe", 104_372_872_640)])
def test_head_dim_left_out_is_floored_where_the_class_floors_it(name: str, oracle: int) -> None:
    spec = _parse(_raw(name))
    # Glm4MoeConfig has no head_dim: getattr(config, "head_dim", 4096 // 96) = 42
    assert {a.head_dim for a in _blocks(spec, Attention) if a.hidden == 4096} == {42}
    assert count_params(spec).total == oracle


def test_a_family_without_the_floor_still_refuses_a_non_dividing_head_count() -> None:
    raw = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
           "num_attention_heads": 96, "num_hidden_layers": 2, "intermediate_size": 11008, "vocab_size": 32000}
    with pytest.raises(InputError, match="num_attention_heads"):
        _parse(raw)


def test_qwen3_omni_thinker_text_floors_head_dim_and_norms_q_k() -> None:
    raw = _raw("qwen3_omni_moe_thinker")
    text = dict(raw["text_config"], architectures=raw["architectures"])
    spec = _parse(text)
    assert {(a.head_dim, a.qk_norm) for a in _blocks(spec, Attention)} == {(73, "head")}  # 2048 // 28
    # transformers' model.language_model of the class default (lm_head apart): 17,194,145,784
    report = count_params(spec)
    assert report.total - sum(m.params for m in report.modules if m.name == "lm_head") == 17_194_145_784
    # the whole thinker, its audio tower counted since stop 38 (audio; tests/test_defaults_audio.py)
    assert count_params(_parse(raw)).total == 18_418_329_704


def test_kda_is_sized_by_linear_head_fields_where_written() -> None:
    raw = _raw("bailing_hybrid")
    assert (raw["head_dim"], raw["linear_head_dim"], raw["linear_num_heads"]) == (64, 128, 32)
    spec = _parse(raw)
    assert {(k.heads, k.head_dim) for k in _blocks(spec, KDA)} == {(32, 128)}
    # num_shared_experts, BailingHybridConfig's name for n_shared_experts: one shared expert of 768
    assert {m.shared_inter for m in _blocks(spec, MoE)} == {768}
    assert count_params(spec).total == 124_414_211_552


def test_ling3_remote_layout_counts_as_before() -> None:
    raw = json.loads((UNSEEN / "round23" / "inclusionAI--Ling-3.0-Flash.json").read_text())
    assert count_params(_parse(raw)).total == 124_414_211_552


def test_deepseek_v4_layer_types_and_hash_moe_stand_for_compress_ratios_and_num_hash_layers() -> None:
    raw = _raw("deepseek_v4")
    assert "compress_ratios" not in raw and "num_hash_layers" not in raw
    spec = _parse(raw)
    moes = _blocks(spec, MoE)
    # mlp_layer_types: 3 hash_moe then 40 moe; the hash layers hold no correction bias: 40 x 256 = 10,240
    assert [m.router_bias for m in moes] == [False] * 3 + [True] * 40
    from solver.specs.layers.compressed import CompressedAttention
    ratios = [a.ratio for a in _blocks(spec, CompressedAttention)]
    # heavily_compressed 128, compressed_sparse 4 (compress_rates): HCA, HCA, then CSA / HCA in turn
    assert ratios[:6] == [128, 128, 128, 4, 128, 4] and set(ratios) == {4, 128}
    assert count_params(spec).total == 284_325_879_255


def test_deepseek_v4_hash_moe_after_a_routed_layer_is_refused_by_name() -> None:
    raw = _raw("deepseek_v4")
    raw["mlp_layer_types"][5] = "hash_moe"
    with pytest.raises(InputError, match="mlp_layer_types"):
        _parse(raw)


def test_deepseek_v4_unknown_layer_type_is_refused_by_name() -> None:
    raw = _raw("deepseek_v4")
    raw["layer_types"][7] = "lightly_compressed_attention"
    with pytest.raises(InputError, match=r"layer_types\[7\]"):
        _parse(raw)
