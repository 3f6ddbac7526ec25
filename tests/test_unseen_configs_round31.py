"""Thirty-first round of families outside the catalog (tests/data/configs_unseen/round31/, SOURCES.md's "Thirty-first
round (stop 36)"): 2026 model_types in transformers 5.25.0 that no earlier round nor models/ holds. Each file is its
config classes' defaults (the docstring names the checkpoint), written as to_dict would. Hand counts tensor by
tensor from transformers 5.25.0's modeling_*.py (read from the unzipped wheel, not installed); written before the
reader was run on them."""
from __future__ import annotations

import pytest

from hand_counts import UNSEEN, Round, count, gqa, gated, lin, ln
from solver.errors import InputError
from solver.specs.config.read import parse_model_config

DATA = UNSEEN / "round31"
ROUND = Round(DATA)
_load, _spec, _total = ROUND.load, ROUND.spec, ROUND.total


# ------------------------------------------------------------------ Muse-Glimmer-30B (MuseGlimmerConfig() defaults).
# Text (MuseGlimmerTextModel): 52 layers, 6656 wide; q / k / v / o of 32 / 2 heads x 128 without bias, plus an output
# gate_proj 6656 -> 32 x 128 without bias (MuseGlimmerTextAttention); its qk_norm is weightless (with_scale=False).
# Four centred RMSNorms a layer (input, post_attention, pre_feedforward, post_feedforward), a gated SiLU MLP 6656 ->
# 19968. The embedding's embed_norm is weightless; the final norm has a weight; embedding and lm_head 202048 each
# (untied). Vision (MuseGlimmerVisionModel): a bias-free linear patch embedding patch_temporal 2 x 3 x 14 x 14 ->
# 1536, a learned table of pos_emb_height x pos_emb_width = 32 x 32 rows, ln_pre, 50 layers of norm1 / norm2
# LayerNorms, biased q / k / v / proj 1536 square, biased fc1 1536 -> 8960 / fc2 back; ln_post. The merge is a pixel
# shuffle without weights (1536 x 2^2 = out_hidden_size 6144). Projector: vision_adapter fc1 out_hidden_size 6144 ->
# projector_hidden_size 4096, fc2 4096 -> 4096, both bias-free; vision_projection 4096 -> 6656 bias-free;
# perception_emb_norm weightless
def mlp2(h: int, f: int, bias: bool = False) -> int:  # up -> act -> down, two matrices
    return lin(h, f, bias) + lin(f, h, bias)


GLIMMER_LAYER = gqa(6656, 32, 2, 128) + lin(6656, 32 * 128) + 4 * 6656 + gated(6656, 19968)
GLIMMER_TEXT = 2 * 202048 * 6656 + 52 * GLIMMER_LAYER + 6656
GLIMMER_VISION = (lin(2 * 3 * 14 * 14, 1536) + 32 * 32 * 1536 + ln(1536)
                  + 50 * (2 * ln(1536) + 4 * lin(1536, 1536, True) + mlp2(1536, 8960, True)) + ln(1536))
GLIMMER_PROJECTOR = lin(6144, 4096) + lin(4096, 4096) + lin(4096, 6656)
MUSE_GLIMMER = GLIMMER_TEXT + GLIMMER_VISION + GLIMMER_PROJECTOR


HAND: dict[str, int] = {
    "meta-models--Muse-Glimmer-30B": MUSE_GLIMMER,
}
# Published totals precise enough for a 1% check: none recalled for the class default ("30B" in the name is rounded)
PUBLISHED: dict[str, float] = {}

# Bytes of K/V per token of context at bf16: Muse-Glimmer's 13 full-attention layers (every 4th from the last) of
# 2 K/V heads x 128; its 39 sliding layers stop at the 2048-token window
KV_BYTES_PER_TOKEN: dict[str, int] = {
    "meta-models--Muse-Glimmer-30B": 13 * 2 * 2 * 128 * 2,
}


def test_muse_glimmer_hand_count_holds_thirteen_full_layers() -> None:
    assert sum(1 for i in range(52) if (51 - i) % 4 == 0) == 13
