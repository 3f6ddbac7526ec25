"""Thirty-second round of families outside the catalog (tests/data/configs_unseen/round32/, SOURCES.md's "Thirty-second
round (stop 36)"): 2026 model_types in transformers 5.25.0 that no earlier round nor models/ holds. Each file is its
config classes' defaults (the docstring names the checkpoint), written as to_dict would. Hand counts tensor by
tensor from transformers 5.25.0's modeling_*.py (read from the unzipped wheel, not installed); written before the
reader was run on them."""
from __future__ import annotations

import pytest

from hand_counts import UNSEEN, Round, count, gated, gqa, lin, ln
from solver.errors import InputError
from solver.specs.config.read import parse_model_config

DATA = UNSEEN / "round32"
ROUND = Round(DATA)
_load, _spec, _total = ROUND.load, ROUND.spec, ROUND.total


# ------------------------------------------------------------------ Gemma-4-unified (Gemma4UnifiedConfig() defaults).
# Text (Gemma4UnifiedTextModel): 30 layers, 2304 wide, layer_types 5 sliding : 1 full (full at 5, 11, ..., 29).
# Sliding layers: q / k / v / o of 8 / 4 heads x head_dim 256; full layers take per_layer_config's head_dim =
# global_head_dim 512 (kv heads stay 4: num_global_key_value_heads unset, attention_k_eq_v false), no biases. q_norm
# and k_norm of head_dim carry weights; v_norm is scale-free (with_scale=False). Four RMSNorms a layer, a gated MLP
# 2304 -> 9216 (use_double_wide_mlp false, no kv-shared layers); final norm; embedding 262144 x 2304 tied to the
# lm_head. Each layer's layer_scalar is a one-element buffer, not a parameter: not counted (as the catalog's Gemma-4).
# No vision tower: Gemma4UnifiedVisionEmbedder is patch_ln1 LayerNorm over the merged patch (16 x 3)^2 x 3 = 6912,
# a biased patch_dense 6912 -> mm_embed_dim 3840, patch_ln2, a factorized position table mm_posemb_size 1120 x 2 x
# 3840, pos_norm, then the multimodal embedder: a scale-free RMSNorm and a bias-free 3840 (output_proj_dims) -> 2304.
# No audio tower: the audio embedder is the same scale-free norm and a bias-free audio_embed_dim 640 -> 2304
def gemma4u_attention(h: int, d: int) -> int:
    return gqa(h, 8, 4, d) + 2 * d  # q_norm, k_norm of head_dim; v_norm has no weight


G4U_LAYER_SLIDING = gemma4u_attention(2304, 256) + 4 * 2304 + gated(2304, 9216)
G4U_LAYER_FULL = gemma4u_attention(2304, 512) + 4 * 2304 + gated(2304, 9216)
G4U_TEXT = 262144 * 2304 + 25 * G4U_LAYER_SLIDING + 5 * G4U_LAYER_FULL + 2304
G4U_VISION = ln(6912) + lin(6912, 3840, True) + ln(3840) + 1120 * 2 * 3840 + ln(3840) + lin(3840, 2304)
G4U_AUDIO = lin(640, 2304)
GEMMA4_UNIFIED = G4U_TEXT + G4U_VISION + G4U_AUDIO


HAND: dict[str, int] = {
    "google--gemma-4-12B-it": GEMMA4_UNIFIED,
}
ACTIVE: dict[str, tuple[int, float | None]] = {}
# Published totals precise enough for a 1% check: none (the class defaults are not the 12B checkpoint's sizes)
PUBLISHED: dict[str, float] = {}

# Bytes of K/V per token of context at bf16: Gemma-4-unified's 5 full layers of 4 K/V heads x 512; its 25 sliding
# layers stop at the 1024-token window
KV_BYTES_PER_TOKEN: dict[str, int] = {
    "google--gemma-4-12B-it": 5 * 2 * 4 * 512 * 2,
}


def test_gemma4_unified_hand_count_holds_five_full_layers() -> None:
    assert [i for i in range(30) if (i + 1) % 6 == 0] == [5, 11, 17, 23, 29]
