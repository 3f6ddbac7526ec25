"""Thirty-fifth round of families outside the catalog (tests/data/configs_unseen/round35/, SOURCES.md's "Thirty-fifth
round (stop 37)"): 2025-2026 model_types in transformers 5.25.0 that no earlier round nor models/ holds. Each file is
its config classes' defaults (the docstring names the checkpoint), written as to_dict would. Hand counts tensor by
tensor from transformers 5.25.0's modeling_*.py (read from the unzipped wheel, not installed); written before the
reader was run on them."""
from __future__ import annotations

import pytest

from hand_counts import UNSEEN, Round, count, gated, gqa, lin, ln
from solver.errors import InputError
from solver.specs.config.read import parse_model_config

DATA = UNSEEN / "round35"
ROUND = Round(DATA)
_load, _spec, _total = ROUND.load, ROUND.spec, ROUND.total


# ------------------------------------------------------------------ Molmo2-8B (Molmo2Config() defaults)
# Text (Molmo2TextModel): embed_tokens over vocab_size + additional_vocab_size = 151936 + 128 rows x 4096; 36 layers
# of q / k / v / o of 32 / 8 heads x 128 without bias, q_norm / k_norm of head_dim (qk_norm_type "qwen3"; "olmo"
# would norm the whole 32 x 128 / 8 x 128 projections), gated MLP 4096 -> 12288, two RMSNorms; final norm; the
# untied lm_head 4096 -> vocab_size 151936 (the extra 128 rows are input-only).
def molmo2_text(qk_norm: int, kv_norm: int) -> int:
    layer = gqa(4096, 32, 8, 128) + qk_norm + kv_norm + gated(4096, 12288) + 2 * 4096
    return (151936 + 128) * 4096 + 36 * layer + 4096 + 151936 * 4096


# Tower (Molmo2VisionModel): positional_embedding (378 // 14)^2 = 729 x 1152, patch_embedding a biased linear
# 14 x 14 x 3 = 588 -> 1152; 25 layers of two LayerNorms, q / k / v / o 1152 -> 16 x 72 biased (attention_bias),
# fc1 1152 -> 4304 / fc2 biased; no final norm.
def molmo2_tower(layers: int) -> int:
    layer = 2 * ln(1152) + gqa(1152, 16, 16, 72, True, True) + lin(1152, 4304, True) + lin(4304, 1152, True)
    return 729 * 1152 + lin(588, 1152, True) + layers * layer


# Adapter (Molmo2Adapter, adapter_config): image_pooling_2d, an attention whose q / k / v read the two
# vision_feature_layer outputs concatenated (2 x 1152 = 2304) -> 16 x 72, o 1152 -> 1152, all biased; then
# image_projector gate / up 1152 -> 18944 (mlp_bias false) and down 18944 -> text_hidden_size 3584 (the class
# default, though the default text is 4096 wide: counted as built).
MOLMO2_ADAPTER = 3 * lin(2304, 1152, True) + lin(1152, 1152, True) + 2 * lin(1152, 18944) + lin(18944, 3584)
MOLMO2_TEXT = molmo2_text(128, 128)
MOLMO2 = MOLMO2_TEXT + molmo2_tower(25) + MOLMO2_ADAPTER

# ------------------------------------------------------------------ LLaVA-OneVision-1.5 (LlavaOnevision15Config())
# Text: Qwen3Config defaults (32 layers 4096 wide, 32 / 32 heads x 128 without bias, q / k norms of 128, gated MLP
# 4096 -> 22016, two RMSNorms, final norm, embedding 151936 x 4096, untied lm_head). Tower (RiceViT,
# LlavaOnevision15VisionModel): patch_embed a bias-free Conv2d 3 x 14 x 14 -> 1024; cls_embeddings: class_embedding
# 1024 and class_pos_emb 1 x 1024 / 16 / 2 = 32; pre_layernorm LayerNorm(1024); 24 blocks of norm1 / norm2
# (LayerNorms), qkv 1024 -> 3072 and proj biased, fc1 1024 -> 4096 / fc2 biased; merger: LayerNorm(1024) (before
# the 2 x 2 shuffle), linear_fc1 4096 -> 4096 and linear_fc2 4096 -> out_hidden_size 4096, biased.
QWEN3_TEXT = 2 * 151936 * 4096 + 32 * (gqa(4096, 32, 32, 128) + 2 * 128 + gated(4096, 22016) + 2 * 4096) + 4096
RICE_BLOCK = 2 * ln(1024) + lin(1024, 3072, True) + lin(1024, 1024, True) + lin(1024, 4096, True) + \
    lin(4096, 1024, True)
RICE_TOWER = 3 * 14 * 14 * 1024 + 1024 + 32 + ln(1024) + 24 * RICE_BLOCK
RICE_MERGER = ln(1024) + lin(4096, 4096, True) + lin(4096, 4096, True)
LLAVA_OV15 = QWEN3_TEXT + RICE_TOWER + RICE_MERGER

# ------------------------------------------------------------------ VideoLLaMA3 (VideoLlama3Config() defaults)
# Text: Qwen2Config defaults (32 layers 4096 wide, 32 / 32 heads x 128, q / k / v biased and o not, gated MLP
# 4096 -> 22016, two RMSNorms, final norm, embedding 151936 x 4096, untied lm_head). Tower (VideoLlama3VisionModel,
# SigLIP-like with 2D rotary and no position table): a biased Conv2d 3 x 16 x 16 -> 768, 12 layers of two
# LayerNorms, q / k / v / out_proj 768 -> 768 biased, fc1 768 -> 3072 / fc2 biased, post_layernorm. Projector:
# readout linear 768 -> 4096 and 4096 -> 4096, biased (no merge width: the tower's tokens are pooled, not stacked).
QWEN2_TEXT = 2 * 151936 * 4096 + 32 * (gqa(4096, 32, 32, 128, qkv_bias=True) + gated(4096, 22016) + 2 * 4096) + 4096
VL3_LAYER = 2 * ln(768) + gqa(768, 12, 12, 64, True, True) + lin(768, 3072, True) + lin(3072, 768, True)
VL3_TOWER = lin(3 * 16 * 16, 768, True) + 12 * VL3_LAYER + ln(768)
VL3_PROJECTOR = lin(768, 4096, True) + lin(4096, 4096, True)
VIDEOLLAMA3 = QWEN2_TEXT + VL3_TOWER + VL3_PROJECTOR


HAND: dict[str, int] = {
    "allenai--Molmo2-8B": MOLMO2,
    "Deep-VLM--LLaVA-OneVision-1.5-4B-Instruct-hf": LLAVA_OV15,
    "lkhl--VideoLLaMA3-2B-Image-HF": VIDEOLLAMA3,
}
ACTIVE: dict[str, tuple[int, float | None]] = {}
# Published totals precise enough for a 1% check: none (class defaults, which are not the named checkpoints' sizes)
PUBLISHED: dict[str, float] = {}

# Bytes of K/V per token of context at bf16: Molmo2's 36 layers of 8 K/V heads x 128; the Qwen3 / Qwen2 texts'
# 32 layers of 32 K/V heads x 128
KV_BYTES_PER_TOKEN: dict[str, int] = {
    "allenai--Molmo2-8B": 36 * 2 * 8 * 128 * 2,
    "Deep-VLM--LLaVA-OneVision-1.5-4B-Instruct-hf": 32 * 2 * 32 * 128 * 2,
    "lkhl--VideoLLaMA3-2B-Image-HF": 32 * 2 * 32 * 128 * 2,
}


# ------------------------------------------------------------------ reading rules added this round
_MOLMO2, _OV15, _VL3 = "allenai--Molmo2-8B", "Deep-VLM--LLaVA-OneVision-1.5-4B-Instruct-hf", \
    "lkhl--VideoLLaMA3-2B-Image-HF"


def test_molmo2_adapter_is_counted_as_its_pooling_attention_and_gated_mlp() -> None:
    # Before this round refused "adapter_config: given (model_type 'molmo2_adapter'): a module beside the language
    # model"; without the adapter the text was 524,288 short (additional_vocab_size unread) and the tower 2,304 over
    # (a final LayerNorm it does not build)
    assert _total(_MOLMO2) == MOLMO2


def test_molmo2_adapter_reads_one_tower_width_per_feature_layer() -> None:
    cfg = _load(_MOLMO2)
    cfg["adapter_config"]["vision_feature_layer"] = [24, 18, 12]
    assert count(cfg) == MOLMO2 + 3 * 1152 * 1152


def test_molmo2_adapter_written_empty_is_its_class_defaults() -> None:
    cfg = _load(_MOLMO2)
    cfg["adapter_config"] = {"model_type": "molmo2_adapter"}
    assert count(cfg) == MOLMO2


def test_molmo2_adapter_with_no_layer_list_is_refused_naming_it() -> None:
    cfg = _load(_MOLMO2)
    cfg["adapter_config"]["vision_feature_layer"] = 24
    with pytest.raises(InputError, match=r"adapter_config\.vision_feature_layer: missing or not a list"):
        parse_model_config(cfg, "x")


def test_molmo2_additional_vocab_rows_are_in_the_embedding_not_the_head() -> None:
    cfg = _load(_MOLMO2)
    cfg["text_config"]["additional_vocab_size"] = 1024
    assert count(cfg) == MOLMO2 + (1024 - 128) * 4096
    del cfg["text_config"]["additional_vocab_size"]  # the class default, 128
    assert count(cfg) == MOLMO2


def test_molmo2_olmo_qk_norms_span_every_heads_channels() -> None:
    # Before: "olmo" read as one head_dim vector per norm, 36 x (31 + 7) x 128 = 175,104 short, silently
    cfg = _load(_MOLMO2)
    cfg["text_config"]["qk_norm_type"] = "olmo"
    assert count(cfg) == MOLMO2 - MOLMO2_TEXT + molmo2_text(32 * 128, 8 * 128)


def test_qk_norm_type_of_an_unknown_layout_is_refused_naming_it() -> None:
    cfg = _load(_MOLMO2)
    cfg["text_config"]["qk_norm_type"] = "gemma"
    with pytest.raises(InputError, match=r"qk_norm_type: 'gemma': a q / k norm layout not counted"):
        parse_model_config(cfg, "x")


def test_molmo2_tower_without_its_position_count_sizes_the_table_from_image_size() -> None:
    cfg = _load(_MOLMO2)
    del cfg["vision_config"]["num_position_embeddings"]
    assert count(cfg) == MOLMO2


def test_llava_onevision15_tower_counts_its_class_token_rotary_and_pre_norm_without_a_patch_bias() -> None:
    # Before: 12,385,938,432, silently but for a note on the projector: no class_embedding (1024), class_pos_emb
    # (32) nor pre_layernorm (2048), a patch bias (1024) the Conv2d does not have: 2,080 short
    assert _total(_OV15) == LLAVA_OV15


def test_videollama3_projector_is_two_biased_linears_into_the_text() -> None:
    # Before: 12,138,639,360, silently but for a note: one linear 768 -> 4096 and a norm, 16,784,640 short
    assert _total(_VL3) == VIDEOLLAMA3
