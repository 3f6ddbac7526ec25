"""Thirty-fourth round of families outside the catalog (tests/data/configs_unseen/round34/, SOURCES.md's "Thirty-fourth
round (stop 37)"): 2026 model_types in transformers 5.25.0 that no earlier round nor models/ holds. Each file is its
config classes' defaults (the docstring names the checkpoint), written as to_dict would. Hand counts tensor by
tensor from transformers 5.25.0's modeling_*.py (read from the unzipped wheel, not installed); written before the
reader was run on them."""
from __future__ import annotations

import pytest

from hand_counts import UNSEEN, Round, count, gated, gqa, lin, ln
from solver.errors import InputError
from solver.specs.config.read import parse_model_config

DATA = UNSEEN / "round34"
ROUND = Round(DATA)
_load, _spec, _total = ROUND.load, ROUND.spec, ROUND.total


# ------------------------------------------------------------------ LFM3-1.7B (Lfm3Config() defaults)
# Lfm3Model: 24 layers 2048 wide; layer_types (from __post_init__) "full_attention" where i % 4 == 2 (6 layers),
# "sliding_attention" where i % 4 == 0 and i > 0 (5 layers), "conv" elsewhere (13 layers). An attention layer:
# q / k / v / o of 16 / 4 heads x head_dim 128 (attention_bias false), q_norm and k_norm of head_dim, g_proj
# hidden -> heads without bias (use_attention_gate). A conv layer (Lfm3ShortConv): a depthwise Conv1d of
# conv_L_cache 7 taps a channel (conv_bias false), in_proj hidden -> 3 hidden, out_proj hidden -> hidden. Every
# layer: the gated MLP w1 / w3 hidden -> 7680, w2 back (no auto-adjusted width, unlike LFM2), four RMSNorms
# (operator_norm, ffn_norm and, under use_sandwich_norm, post_operator_norm and post_ffn_norm). The model ends in
# embedding_norm (applied last, the final norm); embedding 128000 x 2048 tied to the lm_head.
def lfm3_attention(h: int, heads: int, kv: int, d: int) -> int:
    return gqa(h, heads, kv, d) + 2 * d + lin(h, heads)


def lfm3_conv(h: int, taps: int) -> int:
    return h * taps + lin(h, 3 * h) + lin(h, h)


LFM3_MLP_NORMS = gated(2048, 7680) + 4 * 2048
LFM3_ATTENTION_LAYER = lfm3_attention(2048, 16, 4, 128) + LFM3_MLP_NORMS
LFM3_CONV_LAYER = lfm3_conv(2048, 7) + LFM3_MLP_NORMS
LFM3_TEXT = 128000 * 2048 + 11 * LFM3_ATTENTION_LAYER + 13 * LFM3_CONV_LAYER + 2048

# ------------------------------------------------------------------ LFM3-VL-2B (Lfm3VlConfig() defaults)
# The text model is the LFM3 above (text_config written as Lfm3Config's defaults; tied head). Lfm3VlVisionModel:
# patch_embed a bias-free linear over in_channels x temporal_patch_size x patch_size^2 = 3 x 2 x 16^2 = 1536 ->
# 1024, embedding_norm (RMSNorm 1024), 14 layers with layer_types "conv" where i < 2 or i odd (8 layers) and
# "full_attention" at 2, 4, ..., 12 (6 layers); no final norm. An attention layer: q / k / v / out_proj of 16 / 8
# heads x 1024 / 16 = 64 without bias, q_norm and k_norm of 64. A conv layer (Lfm3VlVisionShortConv): in_proj
# 1024 -> 3072, a depthwise Conv2d 3 x 3 a channel (conv_kernel_size, no bias), out_proj 1024 -> 1024. Every layer:
# gated MLP 1024 -> 2560 (w1 / w3 / w2), two RMSNorms. Projector (Lfm3VlMultiModalProjector): LayerNorm(1024) with a
# bias, linear_1 1024 x 2^2 = 4096 -> projector_hidden_size 4096 and linear_2 4096 -> 2048, biased (projector_bias)
LFM3V_MLP_NORMS = gated(1024, 2560) + 2 * 1024
LFM3V_ATTENTION_LAYER = gqa(1024, 16, 8, 64) + 2 * 64 + LFM3V_MLP_NORMS
LFM3V_CONV_LAYER = lin(1024, 3072) + 1024 * 3 * 3 + lin(1024, 1024) + LFM3V_MLP_NORMS
LFM3V_TOWER = lin(1536, 1024) + 1024 + 6 * LFM3V_ATTENTION_LAYER + 8 * LFM3V_CONV_LAYER
LFM3V_PROJECTOR = ln(1024) + lin(4096, 4096, True) + lin(4096, 2048, True)
LFM3_VL = LFM3_TEXT + LFM3V_TOWER + LFM3V_PROJECTOR

# ------------------------------------------------------------------ Cosmos3-Nano (Cosmos3OmniConfig() defaults)
# Cosmos3OmniModel is Qwen3-VL's: the sub-configs default to qwen3_vl_text / qwen3_vl_vision (Qwen3VLTextConfig /
# Qwen3VLVisionConfig defaults); the wrapper adds only an untied lm_head. Text (Qwen3VLTextModel): 32 layers 4096
# wide, q / k / v / o of 32 / 32 heads x 128 without bias, q_norm / k_norm of 128, gated MLP 4096 -> 22016, two
# RMSNorms, final norm; embedding 151936 x 4096 and an untied head. Tower (Qwen3VLVisionModel): a biased Conv3d
# 3 x 2 x 16 x 16 -> 1152, pos_embed 2304 x 1152, 27 blocks of norm1 / norm2 (LayerNorms), qkv 1152 -> 3456 and
# proj with bias, linear_fc1 1152 -> 4304 and linear_fc2 with bias; the merger (LayerNorm 1152, 4608 -> 4608 ->
# out_hidden_size 3584, biased) and three deepstack mergers (LayerNorm over 4608, the same linears)
def qwen3_vl_tower(out: int) -> int:
    h, inter, wide = 1152, 4304, 4608
    block = 2 * ln(h) + lin(h, 3 * h, True) + lin(h, h, True) + lin(h, inter, True) + lin(inter, h, True)
    merger = lin(wide, wide, True) + lin(wide, out, True)
    return lin(3 * 2 * 16 * 16, h, True) + 2304 * h + 27 * block + ln(h) + merger + 3 * (ln(wide) + merger)


COSMOS3_TEXT = 2 * 151936 * 4096 + 32 * (gqa(4096, 32, 32, 128) + 2 * 128 + gated(4096, 22016) + 2 * 4096) + 4096
COSMOS3_NANO = COSMOS3_TEXT + qwen3_vl_tower(3584)


HAND: dict[str, int] = {
    "LiquidAI--LFM3-1.7B": LFM3_TEXT,
    "LiquidAI--LFM3-VL-2B": LFM3_VL,
    "nvidia--Cosmos3-Nano": COSMOS3_NANO,
}
ACTIVE: dict[str, tuple[int, float | None]] = {}
# Published totals precise enough for a 1% check: none recalled (class defaults; the names' "1.7B" / "2B" are rounded)
PUBLISHED: dict[str, float] = {}

# Bytes of K/V per token of context at bf16: LFM3's 6 full layers of 4 K/V heads x 128 (its 5 sliding layers stop
# at the 256-token window; the conv layers hold a fixed 2048 x (7 - 1) tail a sequence); Cosmos3-Nano's 32 layers of
# 32 K/V heads x 128
KV_BYTES_PER_TOKEN: dict[str, int] = {
    "LiquidAI--LFM3-1.7B": 6 * 2 * 4 * 128 * 2,
    "LiquidAI--LFM3-VL-2B": 6 * 2 * 4 * 128 * 2,
    "nvidia--Cosmos3-Nano": 32 * 2 * 32 * 128 * 2,
}


def test_lfm3_layer_types_hold_six_full_five_sliding_thirteen_conv() -> None:
    types = _load("LiquidAI--LFM3-1.7B")["layer_types"]
    assert [types.count(t) for t in ("full_attention", "sliding_attention", "conv")] == [6, 5, 13]


# ------------------------------------------------------------------ reading rules added this round
_LFM3, _LFM3_VL, _COSMOS3 = "LiquidAI--LFM3-1.7B", "LiquidAI--LFM3-VL-2B", "nvidia--Cosmos3-Nano"


def test_lfm3_vl_tower_counts_its_conv_layers_qk_norms_gated_mlp_and_layernorm_projector() -> None:
    # Before this round 1,873,142,528, silently but for a note naming layer_types / conv_kernel_size unread: the
    # 8 conv layers read as attention, the MLP as a biased GELU pair, no q / k norms, no embedding_norm (45,039,360
    # short)
    assert _total(_LFM3_VL) == LFM3_VL


def test_lfm3_vl_tower_conv_kernel_sizes_the_depthwise_conv() -> None:
    cfg = _load(_LFM3_VL)
    cfg["vision_config"]["conv_kernel_size"] = 5
    assert count(cfg) == LFM3_VL + 8 * (25 - 9) * 1024


def test_lfm3_vl_tower_without_layer_types_is_refused_naming_it() -> None:
    cfg = _load(_LFM3_VL)
    del cfg["vision_config"]["layer_types"]
    with pytest.raises(InputError, match=r"vision_config\.layer_types: missing"):
        parse_model_config(cfg, "x")


def test_lfm3_vl_tower_layer_kind_it_cannot_count_is_refused_naming_it() -> None:
    cfg = _load(_LFM3_VL)
    cfg["vision_config"]["layer_types"][3] = "sliding_attention"
    with pytest.raises(InputError, match=r"vision_config\.layer_types: 'sliding_attention'"):
        parse_model_config(cfg, "x")


@pytest.mark.parametrize("key", ["sliding_window", "use_sandwich_norm", "use_attention_gate", "head_dim",
                                 "rope_parameters"])
def test_lfm3_fields_left_out_take_the_class_defaults(key: str) -> None:
    # Before: sliding_window left out was refused "sliding_window: missing" though the class's default is 256
    cfg = _load(_LFM3)
    del cfg[key]
    assert count(cfg) == LFM3_TEXT


def test_lfm3_switches_drop_the_sandwich_norms_and_attention_gate() -> None:
    cfg = _load(_LFM3)
    cfg.update(use_sandwich_norm=False, use_attention_gate=False)
    assert count(cfg) == LFM3_TEXT - 24 * 2 * 2048 - 11 * lin(2048, 16)


def test_cosmos3_tower_written_under_an_old_model_type_is_still_the_qwen3_vl_tower() -> None:
    # the class rewrites any other vision model_type to qwen3_vl_vision
    cfg = _load(_COSMOS3)
    cfg["vision_config"]["model_type"] = "cosmos3_omni"
    assert count(cfg) == COSMOS3_NANO
