"""Thirty-ninth round of families outside the catalog (tests/data/configs_unseen/round39/, SOURCES.md's
"Thirty-ninth round (stop 37)"): 2025-2026 model_types in transformers 5.25.0 that no earlier round nor models/
holds. Each file is its config classes' defaults (the docstring names the checkpoint) written as to_dict would, except
where SOURCES.md says a sub-config is recalled. Hand counts tensor by tensor from transformers 5.25.0's
modeling_*.py (read from the unzipped wheel, not installed); written before the reader was run on them."""
from __future__ import annotations

import json

import pytest

from hand_counts import CATALOG, UNSEEN, Round, count, gated, gqa, lin, ln
from solver.specs.config.read import parse_model_config
from test_unseen_configs_round30 import hy_text
from test_unseen_configs_round38 import MINICPMV46

DATA = UNSEEN / "round39"
DEFAULTS = UNSEEN.parent / "configs_defaults"  # transformers' class-default configs (test_transformers_defaults.py)
ROUND = Round(DATA)
_load, _spec, _total = ROUND.load, ROUND.spec, ROUND.total


# ------------------------------------------------------------------ MiniCPM-V-4.7-1B (minicpmv4_7; MiniCPMV4_7Config()'s
# defaults). modular_minicpmv4_7.py subclasses every MiniCPM-V-4.6 module unchanged (the only new code is the canvas
# M-RoPE position ids, no weights), and the config classes' defaults are 4.6's: the same Qwen3_5TextConfig() text, the
# same SigLIP tower with its window merger after insert_layer_id, the same one DownsampleMLP merger (round 38's count).
MINICPMV47 = MINICPMV46

# MiniCPM-OCR-1.0 (minicpm_ocr; MiniCPMOcrConfig()'s defaults): modular_minicpm_ocr.py subclasses 4.6's modules and
# configs unchanged but for the wrapper's tie_word_embeddings true (and downsample_mode "4x", a token count, no
# weights). PreTrainedModel ties lm_head to embed_tokens on the top-level config's flag (modeling_utils.py reads
# self.config.tie_word_embeddings), whatever the text_config's own false (Qwen3_5TextConfig()'s): transformers builds
# one 248320 x 4096 table fewer (MINICPM_OCR_TIED). The reader's standing rule (read.py: where the wrapper's and the
# language model's flags disagree the head is read as the language model's, as engines read it, and the difference
# named in a warning) counts the untied head: the hand count follows that rule (SOURCES.md asks the lead).
MINICPM_OCR = MINICPMV46
MINICPM_OCR_TIED = MINICPMV46 - 248320 * 4096


# ------------------------------------------------------------------ Ovis2 (ovis2; Ovis2Config() / Ovis2VisionConfig()
# defaults, the text config a Qwen2.5-1.5B-Instruct one at the wrapper's hidden_size 1536, SOURCES.md).
# Text (Qwen2Model): 28 layers, q / k / v biased (Qwen2 always), 12 heads / 2 KV heads of 128, o_proj bias-free, a
# gated 8960 MLP, two RMSNorms a layer, final norm; a 151936 x 1536 embedding; the lm_head (wrapper hidden_size x
# vocab_size 151643) is tied to it (tie_word_embeddings true): counted once.
def qwen2_layer(h: int, heads: int, kv: int, ff: int) -> int:
    return gqa(h, heads, kv, h // heads, qkv_bias=True) + gated(h, ff) + 2 * h


OVIS2_TEXT = 151936 * 1536 + 28 * qwen2_layer(1536, 12, 2, 8960) + 1536


# Tower (Ovis2VisionModel): Ovis2VisionEmbeddings: a biased Conv2d 3 x 14 x 14 -> 1024, an RMSNorm (1024) on the patch
# embeddings, a learned table of (224 / 14)^2 = 256 rows; 24 layers of rms_norm1 / rms_norm2, q / k / v / out_proj
# without bias (qkv_bias false), a gated SiLU MLP 1024 -> 2816 without bias (mlp_bias false); the transformer's final
# RMSNorm; the visual tokenizer's head_linear 1024 x hidden_stride^2 -> vocab 16384 - 5 indicator tokens, bias-free,
# and head_norm, a LayerNorm over those 16379 (weight and bias). Ovis2Model's visual_embeddings_table: vision vocab
# 16384 x the wrapper's hidden_size 1536.
def ovis2_vision_layer(h: int, ff: int) -> int:
    return 4 * lin(h, h) + gated(h, ff) + 2 * h


def ovis2_visual_tokenizer(h: int, stride: int, vocab: int, indicators: int) -> int:
    return lin(h * stride * stride, vocab - indicators) + ln(vocab - indicators)


OVIS2_TOWER = (lin(3 * 14 * 14, 1024, True) + 1024 + 256 * 1024 + 24 * ovis2_vision_layer(1024, 2816) + 1024
               + ovis2_visual_tokenizer(1024, 1, 16384, 5))
OVIS2_VISUAL_TABLE = 16384 * 1536
OVIS2 = OVIS2_TEXT + OVIS2_TOWER + OVIS2_VISUAL_TABLE

# ------------------------------------------------------------------ Hy4 (HYV4VLConfig() defaults; counts since stop 38
# vlm2). Text (HYV4VLTextModel = HYV4Model, round 30's layout): 78 layers, 6144 wide; MLA of 64 heads (q_lora 2048,
# kv_lora 512, nope 192, rope 64, v 256) with a per-channel gate_proj and sinks; DSA indexers (wq_b 2048 -> 32 x 128,
# wk, k_norm LayerNorm, weights_proj) on the "full" indexer_types layers, 0 and (i - 1) % 4 == 0 (21 of 78); two
# RMSNorms and two comb-free hyper-connections (m 4) a layer; layer 0 dense 18432, 77 MoE of 256 x 2048 top-8 with a
# router and e_score_correction_bias, one shared of 2048; hc_head, final norm, untied 120832 embedding and lm_head.
# Vision (HYV4VLVisionModel): 40 blocks of biased q / k / v / o 1536 square, biased fc1 / fc2 1536 <-> 6144, two
# LayerNorms; a biased patch Conv2d 3 x 16 x 16 -> 1536; a position table (2048 / 16)^2 + 1 rows; no final norm.
# HYV4VLVisionPatchMerger: before_rms (1536), proj_conv a biased Conv2d 2 x 2 1536 -> 6144, proj_out a biased 1 x 1
# Conv2d 6144 -> out_hidden_size 6144, image_newline (6144)
HY4_VL_TEXT = hy_text(6144, 78, 64, 2048, 32, 18432, 2048)
HY4_VL_VISION = (40 * (4 * lin(1536, 1536, True) + lin(1536, 6144, True) + lin(6144, 1536, True) + 2 * ln(1536))
                 + lin(3 * 16 * 16, 1536, True) + ((2048 // 16) ** 2 + 1) * 1536
                 + 1536 + lin(1536 * 4, 6144, True) + lin(6144, 6144, True) + 6144)
HY4_VL = HY4_VL_TEXT + HY4_VL_VISION

HAND: dict[str, int] = {
    "tencent--Hy4": HY4_VL,
    "openbmb--MiniCPM-V-4.7-1B": MINICPMV47,
    "openbmb--MiniCPM-OCR-1.0": MINICPM_OCR,
    "thisisiron--Ovis2-1B-hf": OVIS2,
}
ACTIVE: dict[str, tuple[int, float | None]] = {}
SOLVE_CARDS: dict[str, int] = {"tencent--Hy4": 24}  # 771 B parameters: 1.54 TB at bf16, past 8 x 80 GB
PUBLISHED: dict[str, float] = {}  # class defaults, not the releases' files

# Bytes of K/V per token of context at bf16
KV_BYTES_PER_TOKEN: dict[str, int] = {
    "tencent--Hy4": 78 * (512 + 64) * 2,  # one latent + rope key a layer, as Hy4-preview's (round 30)
    "openbmb--MiniCPM-OCR-1.0": 8 * 2 * 4 * 256 * 2,
    "openbmb--MiniCPM-V-4.7-1B": 8 * 2 * 4 * 256 * 2,  # the 8 full-attention layers (Gated DeltaNet's state is fixed)
    "thisisiron--Ovis2-1B-hf": 28 * 2 * 2 * 128 * 2,
}

# ------------------------------------------------------------------ refused this round: none since stop 38 (vlm2)
REFUSALS: dict[str, str] = {}


# ------------------------------------------------------------------ reading rules added this round
_MCV, _OVIS = "openbmb--MiniCPM-V-4.7-1B", "thisisiron--Ovis2-1B-hf"


def test_minicpmv4_7_tower_holds_its_window_merger_and_the_merger_its_downsample_mlp() -> None:
    # Before this round: 9,042,746,880, 68,455,936 short, silently (notes only): the window merger (49,569,024) not
    # read and the DownsampleMLP read as the convention's linear and norm (3,146,496 for 22,033,408)
    assert _total(_MCV) == MINICPMV47


@pytest.mark.parametrize("key", ["layer_types", "num_key_value_heads", "head_dim", "linear_num_value_heads"])
def test_minicpmv4_7_text_fields_left_out_take_the_qwen3_5_class_defaults(key: str) -> None:
    cfg = _load(_MCV)
    del cfg["text_config"][key]
    assert count(cfg) == MINICPMV47


@pytest.mark.parametrize("key", ["window_kernel_size", "image_size", "num_hidden_layers"])
def test_minicpmv4_7_vision_fields_left_out_take_the_class_defaults(key: str) -> None:
    cfg = _load(_MCV)
    del cfg["vision_config"][key]
    assert count(cfg) == MINICPMV47


def test_minicpm_ocr_wrapper_tie_disagreeing_with_its_text_config_is_named() -> None:
    # before: 9,042,746,880 (the window merger and the merge MLP not read, as MiniCPM-V-4.7), no family line
    spec = parse_model_config(_load("openbmb--MiniCPM-OCR-1.0"), "x")
    assert any(w.startswith("tie_word_embeddings: the wrapper's true disagrees") and "248,320 x 4,096 parameters fewer" in w
               for w in spec.warnings)
    assert _total("openbmb--MiniCPM-OCR-1.0") - MINICPM_OCR_TIED == 248320 * 4096


def test_ovis2_tower_ends_in_a_visual_tokenizer_and_embedding_table() -> None:
    # Before this round: refused on vocab_size (the wrapper's 151643 against the text's 151936); with the two
    # agreeing, 1,854,221,824, 40,660,982 short with notes only: the visual tokenizer (16,804,854) and the
    # 16384 x 1536 visual embedding table read as one 1024 -> 1536 linear and a norm, the patch RMSNorm, the
    # Conv2d's bias and the 256-row position table not counted
    assert _total(_OVIS) == OVIS2


def test_ovis2_wrapper_vocab_and_width_are_its_own_fields() -> None:
    spec = parse_model_config(_load(_OVIS), "x")
    assert any("vocab_size: the wrapper's own field (151643)" in n for n in spec.warnings)


def test_ovis2_visual_tokenizer_head_grows_with_hidden_stride() -> None:
    cfg = _load(_OVIS)
    cfg["vision_config"]["hidden_stride"] = 2
    assert count(cfg) == OVIS2 + 3 * 1024 * (16384 - 5)


def test_ovis2_indicator_tokens_narrow_the_head_not_the_table() -> None:
    cfg = _load(_OVIS)
    cfg["vision_config"]["num_visual_indicator_tokens"] = 0
    assert count(cfg) == OVIS2 + ovis2_visual_tokenizer(1024, 1, 16384, 0) - ovis2_visual_tokenizer(1024, 1, 16384, 5)


@pytest.mark.parametrize("key", ["vocab_size", "hidden_stride", "num_visual_indicator_tokens", "image_size",
                                 "patch_size", "intermediate_size", "num_hidden_layers", "hidden_act"])
def test_ovis2_vision_fields_left_out_take_the_class_defaults(key: str) -> None:
    cfg = _load(_OVIS)
    del cfg["vision_config"][key]
    assert count(cfg) == OVIS2


def test_hy4_vl_counts_its_conv_merger_and_the_text_as_hy4_preview_layout() -> None:
    # before stop 38 (vlm2): refused on vision_config (HYV4VLVisionPatchMerger); the merger's convolutions are the
    # patch merger MLP's weights (6144 x 1536 x 2 x 2 = 6144^2), its norm an RMSNorm and one newline vector more
    assert _total("tencent--Hy4") == HY4_VL == 771_142_515_869 + 77 * 256


_QWEN3_NEXT = "Qwen--Qwen3-Next-80B-A3B-Instruct"


@pytest.mark.parametrize("key", ["full_attention_interval", "linear_conv_kernel_dim", "linear_key_head_dim",
                                 "linear_value_head_dim", "linear_num_key_heads", "linear_num_value_heads"])
def test_qwen3_next_fields_left_out_take_the_class_defaults(key: str) -> None:
    # before: full_attention_interval left out (and no layer_types: the class builds every 4th layer full attention)
    # was refused on linear_conv_kernel_dim, a linear_* size left out refused as missing
    cfg = json.loads((CATALOG / f"{_QWEN3_NEXT}.json").read_text())
    assert "layer_types" not in cfg
    whole = count(cfg)
    del cfg[key]
    assert count(cfg) == whole


# ------------------------------------------------------------------ Inkling (inkling_text; InklingTextConfig()'s defaults,
# tests/data/configs_defaults/inkling_text.json). InklingDecoderLayer: 66 layers 6144 wide, every 6th "hybrid" (full:
# 64 heads / 8 KV of 128, rel_extent 1024), the rest "hybrid_sliding" (64 / 16 KV of 128, window 512). InklingAttention:
# bias-free q / k / v / o, r_proj 6144 -> 64 x d_rel 16, q_norm / k_norm of 128, k_sconv / v_sconv (depthwise Conv1d of
# kernel 4 over kv x 128 channels, no bias), rel_logits_proj.proj 16 x extent. Two RMSNorms, attn_sconv / mlp_sconv
# (6144 x 4 each). InklingMoE: experts 256 x gated(6144, 3072); InklingTopkRouter's weight (256 + 2 shared) x 6144, a
# global_scale (1) and e_score_correction_bias (256, persistent); InklingSharedExperts 2 x gated(6144, 3072). Normed
# embedding 201024 x 6144 + 6144, final norm, untied lm_head 201024 x 6144.
def inkling_attention(h: int, heads: int, kv: int, d: int, d_rel: int, extent: int, kernel: int) -> int:
    return gqa(h, heads, kv, d) + lin(h, heads * d_rel) + d_rel * extent + 2 * kv * d * kernel + 2 * d


def inkling_moe(h: int, experts: int, shared: int, inter: int) -> int:
    return experts * gated(h, inter) + (experts + shared) * h + 1 + experts + shared * gated(h, inter)


INK_H = 6144
INK_REST = 2 * INK_H + 2 * INK_H * 4 + inkling_moe(INK_H, 256, 2, 3072)  # norms, output convs, MoE
INKLING_TEXT = (11 * (inkling_attention(INK_H, 64, 8, 128, 16, 1024, 4) + INK_REST)
                + 55 * (inkling_attention(INK_H, 64, 16, 128, 16, 512, 4) + INK_REST)
                + 2 * 201024 * INK_H + 2 * INK_H)


def _inkling() -> dict:
    return json.loads((DEFAULTS / "inkling_text.json").read_text())


def test_inkling_text_counts_as_the_modeling_code_builds_it() -> None:
    # before: refused ("Inkling's layers ... not read"); transformers' meta count (oracle.tsv) is 975,340,287,042
    assert count(_inkling()) == INKLING_TEXT == 975_340_287_042


def test_inkling_router_scores_the_shared_experts_beside_the_routed_ones() -> None:
    # a third shared expert: one more router row (6144) and one more gated(6144, 3072) a layer, 66 layers
    cfg = _inkling()
    cfg["n_shared_experts"] = 3
    assert count(cfg) == INKLING_TEXT + 66 * (INK_H + gated(INK_H, 3072))


def test_inkling_dense_mlp_holds_its_global_scale() -> None:
    # layer 0 "dense": InklingMLP gated(6144, 24576) and its global_scale (1) in place of the MoE
    cfg = _inkling()
    cfg["mlp_layer_types"][0] = "dense"
    assert count(cfg) == INKLING_TEXT - inkling_moe(INK_H, 256, 2, 3072) + gated(INK_H, 24576) + 1


def test_inkling_sliding_layers_size_their_bias_table_by_the_window() -> None:
    # window 512 -> 256: each of the 55 sliding layers' 16 x extent table holds 16 x 256 fewer
    cfg = _inkling()
    cfg["sliding_window_size"] = 256
    assert count(cfg) == INKLING_TEXT - 55 * 16 * 256


def test_inkling_text_fields_left_out_take_the_class_defaults() -> None:
    cfg = {k: v for k, v in _inkling().items()
           if k in ("model_type", "architectures", "layer_types", "mlp_layer_types")}
    assert count(cfg) == INKLING_TEXT


def test_the_shared_expert_count_is_the_configs_not_one_per_width() -> None:
    # n_shared_experts 2 of 3072 each: one 6144-wide shared block, reported as the two experts it holds (seed 1.1's
    # parameter table); DeepSeek-V3 writes 1, Qwen3-235B-A22B none
    assert parse_model_config(_inkling(), "inkling_text").num_shared_experts == 2
    for name, shared in (("deepseek-ai--DeepSeek-V3", 1), ("Qwen--Qwen3-235B-A22B", 0)):
        cfg = json.loads((CATALOG / f"{name}.json").read_text())
        assert parse_model_config(cfg, name).num_shared_experts == shared
