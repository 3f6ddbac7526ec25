"""Thirty-eighth round of families outside the catalog (tests/data/configs_unseen/round38/, SOURCES.md's
"Thirty-eighth round (stop 37)"): 2025-2026 model_types in transformers 5.25.0 that no earlier round nor models/
holds. Each file is its config classes' defaults (the docstring names the checkpoint) written as to_dict would, or
recalled from the public file where SOURCES.md says so. Hand counts tensor by tensor from transformers 5.25.0's
modeling_*.py (read from the unzipped wheel, not installed); written before the reader was run on them."""
from __future__ import annotations

import pytest

from hand_counts import UNSEEN, Round, count, gated, lin, ln
from solver.errors import InputError
from solver.specs.config.read import parse_model_config

DATA = UNSEEN / "round38"
ROUND = Round(DATA)
_load, _spec, _total = ROUND.load, ROUND.spec, ROUND.total


# ------------------------------------------------------------------ MiniCPM-V-4.6 (minicpmv4_6; MiniCPMV4_6Config()'s
# defaults, its text Qwen3_5TextConfig()'s). Text (Qwen3_5TextModel): 32 layers, layer_types every 4th full
# attention (8), the rest Gated DeltaNet (24); two RMSNorms a layer and a gated 12288 MLP without bias in every layer.
# Full attention: q_proj 4096 -> 16 x 256 x 2 (the output gate rides on q), k / v 4096 -> 4 x 256, o 4096 back, q_norm /
# k_norm over head_dim 256. Gated DeltaNet: in_proj_qkv 4096 -> 2 x 16 x 128 + 32 x 128, in_proj_z -> 32 x 128,
# in_proj_b / in_proj_a -> 32, a depthwise conv1d over the 8192 qkv channels x kernel 4 without bias, dt_bias and
# A_log (32 each), a gated RMSNorm over head_v_dim 128, out_proj 4096 -> 4096. Final norm; 248320 x 4096 embedding
# and an untied head (tie_word_embeddings false on both).
def qwen35_full_attention(h: int, heads: int, kv: int, d: int) -> int:
    return lin(h, heads * d * 2) + 2 * lin(h, kv * d) + lin(heads * d, h) + 2 * d


def qwen35_deltanet(h: int, k_heads: int, v_heads: int, dk: int, dv: int, kernel: int) -> int:
    conv = 2 * k_heads * dk + v_heads * dv
    return (lin(h, conv) + lin(h, v_heads * dv) + 2 * lin(h, v_heads) + conv * kernel + 2 * v_heads + dv
            + lin(v_heads * dv, h))


MINICPMV46_TEXT = (2 * 248320 * 4096 + 4096 + 32 * (gated(4096, 12288) + 2 * 4096)
                   + 8 * qwen35_full_attention(4096, 16, 4, 256) + 24 * qwen35_deltanet(4096, 16, 32, 128, 128, 4))


# Tower (MiniCPMV4_6VisionModel): a biased Conv2d 3 x 16 x 16 -> 768, a learned position table of (224 / 16)^2 = 196
# rows (the vision config's image_size; no class row), 12 SigLIP layers (layer_norm1 / 2, biased q / k / v / out_proj,
# biased fc1 768 -> 3072 / fc2 back), post_layernorm; vit_merger (the window-attention merger after insert_layer_id):
# one more biased attention 768, layer_norm1 (768), pre_norm over the 2 x 2 window 3072, linear_1 3072 -> 4 x 3072 =
# 12288 and linear_2 12288 -> 768, biased. Merger (merger_times 1): one DownsampleMLP: pre_norm LayerNorm(4 x 768),
# linear_1 3072 -> 3072 and linear_2 3072 -> 4096, biased.
def siglip_layer(h: int, ff: int) -> int:
    return 2 * ln(h) + 4 * lin(h, h, True) + lin(h, ff, True) + lin(ff, h, True)


def minicpmv46_vit_merger(h: int, ff: int, window: int = 4) -> int:
    return 4 * lin(h, h, True) + ln(h) + ln(h * window) + lin(h * window, ff * window, True) + lin(ff * window, h, True)


def minicpmv46_downsample_mlp(h: int, out: int) -> int:
    return ln(4 * h) + lin(4 * h, 4 * h, True) + lin(4 * h, out, True)


MINICPMV46_TOWER = (lin(3 * 16 * 16, 768, True) + 196 * 768 + 12 * siglip_layer(768, 3072) + ln(768)
                    + minicpmv46_vit_merger(768, 3072))
MINICPMV46_MERGER = minicpmv46_downsample_mlp(768, 4096)
MINICPMV46 = MINICPMV46_TEXT + MINICPMV46_TOWER + MINICPMV46_MERGER

HAND: dict[str, int] = {
    "openbmb--MiniCPM-V-4.6": MINICPMV46,
}
ACTIVE: dict[str, tuple[int, float | None]] = {}
PUBLISHED: dict[str, float] = {}  # class defaults, not the releases' files

# Bytes of K/V per token of context at bf16: the full-attention layers only (Gated DeltaNet's state is fixed)
KV_BYTES_PER_TOKEN: dict[str, int] = {
    "openbmb--MiniCPM-V-4.6": 8 * 2 * 4 * 256 * 2,
}

# ------------------------------------------------------------------ refused this round: one line each
# FastVLM-7B (FastVlmConfig() defaults): the tower is timm's fastvit_mci3 (TimmWrapperConfig: timm.create_model of
# vision_config.architecture), whose sizes no field holds. Perception-LM-1B (recalled, SOURCES.md): timm's
# vit_pe_core_large_patch14_336 with model_args.
REFUSALS: dict[str, str] = {
    "KamilaMila--FastVLM-7B": r"vision_config.architecture: 'fastvit_mci3': a timm model's name",
    "facebook--Perception-LM-1B": r"vision_config.architecture: 'vit_pe_core_large_patch14_336': a timm model's name",
}


# ------------------------------------------------------------------ reading rules added this round
_MCV = "openbmb--MiniCPM-V-4.6"


def test_minicpmv4_6_tower_holds_its_window_merger_and_the_merger_its_downsample_mlp() -> None:
    # Before this round: 8,908,529,152, 202,673,664 short, silently (a note: projector by convention): the window
    # merger (49,569,024) and the DownsampleMLP (22,033,408 for the convention's 3,146,496) not read, and the
    # Qwen3.5 attention's output gate (8 x 16,777,216) dropped where the text config writes no attn_output_gate
    assert _total(_MCV) == MINICPMV46


def test_qwen3_5_text_attention_carries_its_output_gate_without_the_field() -> None:
    spec = _spec(_MCV)
    full = [b for layer in spec.layers for b in layer.blocks if type(b).__name__ == "Attention"]
    assert len(full) == 8 and all(b.params == qwen35_full_attention(4096, 16, 4, 256) for b in full)


@pytest.mark.parametrize("key", ["layer_types", "num_key_value_heads", "head_dim", "linear_num_key_heads",
                                 "linear_num_value_heads", "linear_key_head_dim", "linear_value_head_dim",
                                 "linear_conv_kernel_dim"])
def test_qwen3_5_text_fields_left_out_take_the_class_defaults(key: str) -> None:
    # before: layer_types left out refused on linear_conv_kernel_dim, num_key_value_heads read as MHA (201,326,592
    # over), the linear_* sizes refused as missing
    cfg = _load(_MCV)
    del cfg["text_config"][key]
    assert count(cfg) == MINICPMV46


def test_qwen3_5_text_full_attention_interval_places_the_attention_layers() -> None:
    cfg = _load(_MCV)
    del cfg["text_config"]["layer_types"]
    cfg["text_config"]["full_attention_interval"] = 2  # 16 full, 16 Gated DeltaNet
    full, delta = qwen35_full_attention(4096, 16, 4, 256), qwen35_deltanet(4096, 16, 32, 128, 128, 4)
    assert count(cfg) == MINICPMV46 + 8 * (full - delta)


@pytest.mark.parametrize("key", ["window_kernel_size", "image_size", "patch_size", "hidden_size",
                                 "intermediate_size", "num_hidden_layers"])
def test_minicpmv4_6_vision_fields_left_out_take_the_class_defaults(key: str) -> None:
    cfg = _load(_MCV)
    del cfg["vision_config"][key]
    assert count(cfg) == MINICPMV46


def test_minicpmv4_6_window_merger_grows_with_its_window() -> None:
    cfg = _load(_MCV)
    cfg["vision_config"]["window_kernel_size"] = [3, 3]
    assert count(cfg) == MINICPMV46 - minicpmv46_vit_merger(768, 3072) + minicpmv46_vit_merger(768, 3072, 9)


def test_minicpmv4_6_merger_times_adds_a_downsample_mlp_into_the_tower_width() -> None:
    cfg = _load(_MCV)
    cfg["merger_times"] = 2
    assert count(cfg) == MINICPMV46 + minicpmv46_downsample_mlp(768, 768)


@pytest.mark.parametrize("name", sorted(REFUSALS))
def test_timm_tower_is_refused_whatever_the_wrapper(name: str) -> None:
    from hand_counts import REFUSED
    cfg = ROUND.load(name, REFUSED)
    cfg["model_type"] = "llava"  # the rule reads the tower's architecture field, not the wrapper's family
    with pytest.raises(InputError, match=r"vision_config.architecture: .*a timm model's name"):
        parse_model_config(cfg, "x")
