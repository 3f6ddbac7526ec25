"""Fortieth round of families outside the catalog (tests/data/configs_unseen/round40/, SOURCES.md's "Fortieth round
(stop 37)"): 2025-2026 model_types in transformers 5.25.0 that no earlier round nor models/ holds. Each file is its
config classes' defaults (the docstring names the checkpoint) written as to_dict would, except where SOURCES.md says
a sub-config is recalled. Hand counts tensor by tensor from transformers 5.25.0's modeling_*.py (read from the
unzipped wheel, not installed); written before the reader was run on them."""
from __future__ import annotations

import pytest

from hand_counts import REFUSED, UNSEEN, Round, count, gated, gqa, lin, ln
from solver.errors import InputError
from solver.specs.config.read import parse_model_config

DATA = UNSEEN / "round40"
ROUND = Round(DATA)
_load, _spec, _total = ROUND.load, ROUND.spec, ROUND.total


# ------------------------------------------------------------------ Ovis2.5 (ovis2_5; Ovis2_5Config() /
# Ovis2_5VisionConfig() defaults; the text config is SubConfigSpec(model_type="qwen3") with no init_kwargs:
# Qwen3Config()'s defaults, 4096 x 32, MHA 32 x 128, 22016 MLP, untied).
# Text (Qwen3Model): q / k / v / o bias-free (attention_bias false), q_norm / k_norm RMSNorms over head_dim, a gated
# MLP, two RMSNorms a layer, a final norm; a 151936 x 4096 embedding and an untied lm_head (the wrapper's own
# nn.Linear(text hidden, text vocab)).
def qwen3_layer(h: int, heads: int, kv: int, d: int, ff: int) -> int:
    return gqa(h, heads, kv, d) + 2 * d + gated(h, ff) + 2 * h


OVIS2_5_TEXT = 2 * 151936 * 4096 + 32 * qwen3_layer(4096, 32, 32, 128, 22016) + 4096


# Tower (Ovis2_5VisionModel, SigLIP2-NaViT-like): a biased Conv2d 3 x 16 x 16 -> 1152, a learned table of
# (image_size 512 / 16)^2 = 1024 rows (bicubically resampled to each grid), 27 layers of layer_norm1 / layer_norm2
# (LayerNorms with bias), biased q / k / v / out_proj, a biased fc1 / fc2 MLP 1152 -> 4304; post_layernorm; the
# rotary embedding holds buffers only and the window layers no weights.
def siglip_layer(h: int, ff: int) -> int:
    return 4 * lin(h, h, True) + lin(h, ff, True) + lin(ff, h, True) + 2 * ln(h)


OVIS2_5_TOWER = lin(3 * 16 * 16, 1152, True) + 1024 * 1152 + 27 * siglip_layer(1152, 4304) + ln(1152)


# Ovis2_5MultiModalProjector: the visual tokenizer's bias-free linear over a spatial_merge_size^2 = 4 merge
# (1152 x 4 -> vocab 65536 - 4 indicators) and a LayerNorm over those 65532; the visual embedding table an
# nn.Linear(65536, text hidden 4096, bias=False).
def ovis2_5_projector(h: int, merge: int, vocab: int, indicators: int, text_h: int) -> int:
    return lin(h * merge * merge, vocab - indicators) + ln(vocab - indicators) + vocab * text_h


OVIS2_5 = OVIS2_5_TEXT + OVIS2_5_TOWER + ovis2_5_projector(1152, 2, 65536, 4, 4096)

HAND: dict[str, int] = {
    "ovis-community--Ovis2.5-2B": OVIS2_5,
}
ACTIVE: dict[str, tuple[int, float | None]] = {}
PUBLISHED: dict[str, float] = {}  # class defaults, not the releases' files

# Bytes of K/V per token of context at bf16
KV_BYTES_PER_TOKEN: dict[str, int] = {
    "ovis-community--Ovis2.5-2B": 32 * 2 * 32 * 128 * 2,
}

REFUSALS: dict[str, str] = {}


# ------------------------------------------------------------------ reading rules added this round
_OVIS = "ovis-community--Ovis2.5-2B"


def test_ovis2_5_tower_ends_in_a_visual_tokenizer_over_its_spatial_merge() -> None:
    # Before this round: 12,503,114,736, 530,418,936 short with notes only: the visual tokenizer over the 2 x 2 merge
    # and the 65536 x 4096 visual embedding table read as the convention's one linear and a norm, the patch bias
    # and the 1024-row position table not counted
    assert _total(_OVIS) == OVIS2_5


def test_ovis2_5_merge_of_one_narrows_the_tokenizer_head_four_times() -> None:
    cfg = _load(_OVIS)
    cfg["vision_config"]["spatial_merge_size"] = 1
    assert count(cfg) == OVIS2_5 - 3 * 1152 * 65532


def test_ovis2_5_indicator_tokens_narrow_the_head_not_the_table() -> None:
    cfg = _load(_OVIS)
    cfg["vision_config"]["num_visual_indicator_tokens"] = 0
    assert count(cfg) == OVIS2_5 + ovis2_5_projector(1152, 2, 65536, 0, 4096) - ovis2_5_projector(1152, 2, 65536, 4, 4096)


@pytest.mark.parametrize("key", ["vocab_size", "spatial_merge_size", "num_visual_indicator_tokens", "image_size",
                                 "patch_size", "hidden_size", "intermediate_size", "num_hidden_layers", "layer_types"])
def test_ovis2_5_vision_fields_left_out_take_the_class_defaults(key: str) -> None:
    cfg = _load(_OVIS)
    del cfg["vision_config"][key]
    assert count(cfg) == OVIS2_5


@pytest.mark.parametrize("key", ["layer_types", "num_key_value_heads", "use_sliding_window"])
def test_ovis2_5_text_pattern_fields_left_out_count_the_qwen3_class_defaults(key: str) -> None:
    cfg = _load(_OVIS)
    del cfg["text_config"][key]
    assert count(cfg) == OVIS2_5
