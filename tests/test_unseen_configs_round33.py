"""Thirty-third round of families outside the catalog (tests/data/configs_unseen/round33/, SOURCES.md's "Thirty-third
round (stop 37)"): 2025-2026 model_types in transformers 5.25.0 that no earlier round nor models/ holds. Each file
is written from the config classes' defaults (the docstring names the checkpoint) and the writer's memory of the
public config.json; SOURCES.md says which. Hand counts tensor by tensor from transformers 5.25.0's modeling_*.py
(read from the unzipped wheel, not installed); written before the reader was run on them."""
from __future__ import annotations

import pytest

from hand_counts import UNSEEN, Round, count, gated, gqa, lin, ln
from solver.errors import InputError
from solver.specs.config.read import parse_model_config
from test_unseen_configs_round5 import glm4v_tower

DATA = UNSEEN / "round33"
ROUND = Round(DATA)
_load, _spec, _total = ROUND.load, ROUND.spec, ROUND.total


# ------------------------------------------------------------------ Hunyuan-A13B as transformers writes it
# (hunyuan_v1_moe, HunYuanMoEV1ForCausalLM). 32 layers of GQA 32 / 8 heads x head_dim 128, no biases
# (attention_bias false), query_layernorm / key_layernorm RMSNorms of head_dim in every layer (no switch: the class
# has no use_qk_norm); two RMSNorms a layer. Every layer is HunYuanMoEV1Moe: the gate wg 4096 -> num_experts without
# bias, num_experts routed experts whose gate_up / down are intermediate_size wide (the class has no
# moe_intermediate_size), and one shared_mlp, a gated MLP of intermediate_size. Final norm; the 128167 x 4096
# embedding tied to the head (tie_word_embeddings true as written).
def hunyuan_moe_layer(h: int, experts: int, f: int) -> int:
    return gqa(h, 32, 8, 128) + 2 * 128 + 2 * h + lin(h, experts) + experts * gated(h, f) + gated(h, f)


HUNYUAN_A13B = 128167 * 4096 + 32 * hunyuan_moe_layer(4096, 64, 3072) + 4096
HUNYUAN_A13B_ACTIVE = HUNYUAN_A13B - 32 * (64 - 8) * gated(4096, 3072)


# ------------------------------------------------------------------ GLM-OCR (glm_ocr; GlmOcrForConditionalGeneration)
# Text (GlmOcrTextModel): 16 layers of GQA 16 / 8 heads x head_dim 128 (1536 wide) with no bias at all (the q / k / v
# projections are bias=False, unlike GLM-4's), gate_up_proj 1536 -> 2 x 4608 and down_proj, four RMSNorms a layer
# (input, post_self_attn, post_attention, post_mlp); final norm; 59392 x 1536 embedding and an untied head.
# Tower (GlmOcrVisionModel): a Conv3d 3 x 2 x 14 x 14 -> 1024 with its default bias and NO learned position table
# nor post-conv norm (unlike Glm4v's); 24 blocks of norm1 / norm2 (RMSNorm), a fused qkv 1024 -> 3072 and proj with
# bias (attention_bias true), q_norm / k_norm RMSNorms of head_dim 64, a gated MLP 1024 -> intermediate_size 4096 with
# biases (bias=attention_bias); post_layernorm (RMSNorm); downsample Conv2d 1024 -> out_hidden_size 1536 over 2 x 2
# with its bias; the merger: proj 1536 -> 1536, post_projection_norm (LayerNorm with bias), gate / up 1536 -> 1536 x
# in_channels (context_dim = out_hidden_size * in_channels = 4608) and down, no biases.
def glm_ocr_tower(h: int, depth: int, heads: int, ff: int, out: int, merge: int = 2, patch: int = 14) -> int:
    block = (2 * h + lin(h, 3 * h, True) + lin(h, h, True) + 2 * (h // heads)
             + lin(h, ff, True) * 2 + lin(ff, h, True))
    return (lin(3 * 2 * patch * patch, h, True) + depth * block + h + lin(h * merge * merge, out, True)
            + lin(out, out) + ln(out) + gated(out, 3 * out))


GLM_OCR_TEXT = (2 * 59392 * 1536 + 16 * (gqa(1536, 16, 8, 128) + gated(1536, 4608) + 4 * 1536) + 1536)
GLM_OCR = GLM_OCR_TEXT + glm_ocr_tower(1024, 24, 16, 4096, 1536)


# ------------------------------------------------------------------ LightOnOCR-1B-1025 (lighton_ocr; the class's
# sub-config defaults). Text: Qwen3 (qwen3), 28 layers of GQA 16 / 8 heads x 128 (1024 wide, q 1024 -> 2048), no
# biases, q_norm / k_norm of 128, a gated 3072 MLP, two RMSNorms a layer; final norm; 151936 x 1024 tied.
# Tower: Pixtral (pixtral): patch_conv 3 x 14 x 14 -> 1024 WITHOUT bias, ln_pre (RMSNorm), 24 layers of
# attention_norm / ffn_norm (RMSNorm), q / k / v / o 1024 -> 1024 without bias, a gated 4096 MLP without bias; no
# final norm, rotary positions (no table). Projector (LightOnOcrMultiModalProjector): an RMSNorm of 1024, the patch
# merger's merging_layer 1024 x 2^2 -> 1024, linear_1 1024 -> 1024 and linear_2 1024 -> 1024, none with a bias
# (Mistral3's projector has biases under multimodal_projector_bias; this one has no switch).
LIGHTON_TEXT = 151936 * 1024 + 28 * (gqa(1024, 16, 8, 128) + 2 * 128 + gated(1024, 3072) + 2 * 1024) + 1024
PIXTRAL_1024 = lin(3 * 14 * 14, 1024) + 1024 + 24 * (2 * 1024 + 4 * lin(1024, 1024) + gated(1024, 4096))
LIGHTON_PROJECTOR = 1024 + lin(4 * 1024, 1024) + lin(1024, 1024) + lin(1024, 1024)
LIGHTON_OCR = LIGHTON_TEXT + PIXTRAL_1024 + LIGHTON_PROJECTOR


# ------------------------------------------------------------------ GLM-4.6V-Flash (glm46v; Glm46VConfig's docstring
# names GLM-4.1V-9B-Thinking: the sizes are round 5's GLM-4.1V file's, its sub-configs written with the model_types
# the class writes, glm4v_text and glm4v_vision). Glm46VModel holds Glm4vVisionModel and Glm4vTextModel: the same
# tensors as GLM-4.1V (round 5's hand count): 40 layers of 32 / 2 heads x 128 with q / k / v bias, gate_up 13696,
# four RMSNorms; 151552 x 4096 untied; the glm4v tower with its learned 24 x 24 table
GLM46V_FLASH = (2 * 151552 * 4096
                + 40 * (lin(4096, 4096, True) + 2 * lin(4096, 256, True) + lin(4096, 4096) + gated(4096, 13696)
                        + 4 * 4096)
                + 4096 + glm4v_tower(1536, 24, 4096, 13696))


# ------------------------------------------------------------------ Qianfan-OCR (qianfan_ocr; QianfanOCRConfig()'s
# defaults: the text config is Qwen3Config()'s, 4096 wide, not the release's). Text: 32 layers of MHA 32 / 32 heads
# x 128 without bias, q_norm / k_norm of 128, a gated 22016 MLP, two RMSNorms a layer; final norm; 151936 x 4096
# embedding and an untied head. Tower (QianfanOCRVisionModel, InternVL's HF tower): embeddings a cls_token, a biased
# Conv2d 3 x 14 x 14 -> 1024, a learned table of (448 / 14)^2 + 1 rows (no mask token: use_mask_token false); 24
# layers of layernorm_before / after (LayerNorm with bias), q / k / v with bias (attention_bias), projection_layer
# with its bias, no q / k norms (use_qk_norm false), fc1 / fc2 with biases, lambda_1 / lambda_2; no final norm
# (use_mean_pooling: Identity). Projector: a LayerNorm over the pixel-shuffled 1024 x (1 / 0.5)^2 = 4096, linear_1
# 4096 -> 4096 and linear_2 4096 -> 4096, both biased
QIANFAN_TEXT = 2 * 151936 * 4096 + 32 * (gqa(4096, 32, 32, 128) + 2 * 128 + gated(4096, 22016) + 2 * 4096) + 4096
QIANFAN_TOWER = (1024 + lin(3 * 14 * 14, 1024, True) + (32 * 32 + 1) * 1024
                 + 24 * (4 * lin(1024, 1024, True) + lin(1024, 4096, True) + lin(4096, 1024, True) + 2 * ln(1024)
                         + 2 * 1024))
QIANFAN_PROJECTOR = ln(4096) + lin(4096, 4096, True) + lin(4096, 4096, True)
QIANFAN_OCR = QIANFAN_TEXT + QIANFAN_TOWER + QIANFAN_PROJECTOR


HAND: dict[str, int] = {
    "baidu--Qianfan-OCR": QIANFAN_OCR,
    "tencent--Hunyuan-A13B-Instruct-hf": HUNYUAN_A13B,
    "zai-org--GLM-OCR": GLM_OCR,
    "lightonai--LightOnOCR-1B-1025": LIGHTON_OCR,
    "zai-org--GLM-4.6V-Flash": GLM46V_FLASH,
}
# Hunyuan-A13B's card: 13B active (models/published.yaml: rounding 1)
ACTIVE: dict[str, tuple[int, float | None]] = {
    "tencent--Hunyuan-A13B-Instruct-hf": (HUNYUAN_A13B_ACTIVE, None),
}
# Published totals precise enough for a 1% check: none ("80B", "0.9B", "1B", "9B" are rounded)
PUBLISHED: dict[str, float] = {}

# Bytes of K/V per token of context at bf16: every layer full attention
KV_BYTES_PER_TOKEN: dict[str, int] = {
    "tencent--Hunyuan-A13B-Instruct-hf": 32 * 2 * 8 * 128 * 2,
    "zai-org--GLM-OCR": 16 * 2 * 8 * 128 * 2,
    "lightonai--LightOnOCR-1B-1025": 28 * 2 * 8 * 128 * 2,
    "zai-org--GLM-4.6V-Flash": 40 * 2 * 2 * 128 * 2,
    "baidu--Qianfan-OCR": 32 * 2 * 32 * 128 * 2,
}


def test_hunyuan_a13b_hand_count_is_the_catalogs_hunyuan_a13b() -> None:
    # the same checkpoint as the catalog's remote-code (hunyuan) file: one sum, two spellings
    from hand_counts import CATALOG
    from solver.estimate.params import count_params
    cat = count_params(parse_model_config(Round(CATALOG).load("tencent--Hunyuan-A13B-Instruct"), "x"))
    assert (cat.total, cat.active) == (HUNYUAN_A13B, HUNYUAN_A13B_ACTIVE)


# ------------------------------------------------------------------ reading rules added this round
_HY, _OCR, _LO, _G46 = ("tencent--Hunyuan-A13B-Instruct-hf", "zai-org--GLM-OCR", "lightonai--LightOnOCR-1B-1025",
                        "zai-org--GLM-4.6V-Flash")


def test_hunyuan_v1_moe_counts_its_qk_norms_and_shared_mlp() -> None:
    # Before this round: 79,185,215,488, 1,207,967,744 short: no query / key layernorms, no shared_mlp (a note only)
    assert _total(_HY) == HUNYUAN_A13B


def test_hunyuan_v1_moe_without_num_experts_takes_the_class_default_of_one_expert() -> None:
    cfg = _load(_HY)
    del cfg["num_experts"], cfg["moe_topk"]
    assert count(cfg) == 128167 * 4096 + 32 * hunyuan_moe_layer(4096, 1, 3072) + 4096


def test_hunyuan_v1_moe_reads_the_attribute_map_names_of_experts_and_top_k() -> None:
    cfg = _load(_HY)
    cfg["num_local_experts"], cfg["num_experts_per_tok"] = cfg.pop("num_experts"), cfg.pop("moe_topk")
    assert count(cfg) == HUNYUAN_A13B


def test_glm_ocr_tower_biases_follow_attention_bias() -> None:
    # Before this round: 1,100,218,368, 7,187,456 short: two text norms a layer of four, the tower's MLP without
    # biases and no q / k norms, a Qwen2-VL merger in place of the downsample conv and the 4608-wide gated merger
    cfg = _load(_OCR)
    cfg["vision_config"]["attention_bias"] = False
    per_block = 3 * 1024 + 1024 + 2 * 4096 + 1024  # qkv, proj, gate / up, down
    assert count(cfg) == GLM_OCR - 24 * per_block


def test_glm_ocr_merger_is_out_hidden_size_times_in_channels_wide() -> None:
    cfg = _load(_OCR)
    cfg["vision_config"]["intermediate_size"] = 2048  # the blocks' MLP only; the merger stays 1536 x 3
    assert count(cfg) == GLM_OCR + 24 * (2 * lin(1024, 2048, True) + lin(2048, 1024, True)
                                         - 2 * lin(1024, 4096, True) - lin(4096, 1024, True))


def test_lighton_ocr_projector_has_no_biases_whatever_the_switch_says() -> None:
    # Before this round: 1,020,333,056, 14,685,184 over: the projector read as Qwen2-VL's 4096-wide merger MLP
    cfg = _load(_LO)
    cfg["multimodal_projector_bias"] = True
    spec = parse_model_config(cfg, "x")
    assert count(cfg) == LIGHTON_OCR
    assert any("multimodal_projector_bias" in w for w in spec.warnings)


def test_glm46v_tower_written_as_glm4v_vision_is_glm4vs_tower() -> None:
    # Before this round: 11,206,245,888, 913,468,416 over: the glm4v_vision tower read by convention (a note only)
    assert _total(_G46) == GLM46V_FLASH


def test_qianfan_ocr_projector_is_internvls_norm_and_two_biased_linears() -> None:
    # Before this round: 12,357,668,864, 29,375,488 short: the projector read as one linear and a norm (a note)
    assert _total("baidu--Qianfan-OCR") == QIANFAN_OCR


@pytest.mark.parametrize("name, folder", [("baidu--Qianfan-OCR", "round33"), ("OpenGVLab--InternVL3-1B-hf", "round4")])
def test_internvl_tower_without_mean_pooling_holds_a_final_layernorm(name: str, folder: str) -> None:
    # Before: use_mean_pooling false counted no final norm (InternVLVisionModel's layernorm is then an nn.LayerNorm)
    cfg = Round(UNSEEN / folder).load(name)
    base = count(cfg)
    cfg["vision_config"]["use_mean_pooling"] = False
    assert count(cfg) == base + ln(cfg["vision_config"]["hidden_size"])

# ------------------------------------------------------------------ refused this round: one line each
# Switch-Base-8 (SwitchTransformersConfig() defaults): an encoder-decoder (T5's stacks, every fourth FFN a top-1
# router over 8 experts): shardplan plans decoder-only stacks
REFUSALS: dict[str, str] = {
    "google--switch-base-8": r"is_encoder_decoder: true: an encoder-decoder model",
}


@pytest.mark.parametrize("keys, field", [
    ([], "is_encoder_decoder"),
    (["is_encoder_decoder"], "num_decoder_layers"),  # the class defaults it true; before: "intermediate_size: missing"
    (["is_encoder_decoder", "num_decoder_layers"], "intermediate_size"),  # no sign left: T5's d_ff is unread
])
def test_switch_transformers_is_refused_as_an_encoder_decoder_whatever_it_leaves_out(keys: list[str],
                                                                                    field: str) -> None:
    from hand_counts import REFUSED
    cfg = ROUND.load("google--switch-base-8", REFUSED)
    for key in keys:
        del cfg[key]
    with pytest.raises(InputError, match=rf"{field}"):
        parse_model_config(cfg, "x")
