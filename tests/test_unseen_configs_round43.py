"""Forty-third round of families outside the catalog (tests/data/configs_unseen/round43/, SOURCES.md's "Forty-third
round (stop 37)"): 2025-2026 speech model_types in transformers 5.25.0 that no earlier round nor models/ holds, and
round 42's gap (an audio wrapper whose text_config is not written). Each file is its config classes' defaults (the
docstring names the checkpoint) written as to_dict would, sub-configs of another class abbreviated. Hand counts tensor
by tensor from transformers 5.25.0's modeling_*.py (read from the unzipped wheel, not installed)."""
from __future__ import annotations

import pytest

from hand_counts import REFUSED, UNSEEN, Round, gated, gqa

DATA = UNSEEN / "round43"
ROUND = Round(DATA)


# ------------------------------------------------------------------ Higgs Audio v2 (higgs_audio_v2; HiggsAudioV2Config()'s
# defaults): a Llama of 3072 x 28, GQA 24 / 8 x 128, whose every layer holds two gated MLPs of 8192 (mlp for text
# tokens, audio_mlp for audio tokens: the "DualFFN") and four RMSNorms (input / post_attention, and the audio_ pair);
# a 128256 x 3072 text table and an 8 x 1024 x 3072 audio-code table (embed_audio_tokens); the final norm; the head
# is audio_lm_head, 3072 -> num_codebooks x codebook_size, bias-free; text_lm_head is not built (use_text_head false,
# and _keys_to_ignore_on_load_unexpected drops it from the checkpoint)
def higgs_layer(h: int, heads: int, kv: int, d: int, ff: int) -> int:
    return gqa(h, heads, kv, d) + 2 * gated(h, ff) + 4 * h


def higgs(vocab: int, h: int, layers: int, heads: int, kv: int, d: int, ff: int, codebooks: int, size: int) -> int:
    return vocab * h + codebooks * size * h + layers * higgs_layer(h, heads, kv, d, ff) + h + h * codebooks * size


HIGGS_AUDIO_V2 = higgs(128256, 3072, 28, 24, 8, 128, 8192, 8, 1024)
# The same config read as a plain Llama (one MLP, two norms, an untied 128256-row head): what the reader gave before
HIGGS_AS_LLAMA = 2 * 128256 * 3072 + 28 * (gqa(3072, 24, 8, 128) + gated(3072, 8192) + 2 * 3072) + 3072

HAND: dict[str, int] = {}
