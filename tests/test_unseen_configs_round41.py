"""Forty-first round of families outside the catalog (tests/data/configs_unseen/round41/, SOURCES.md's "Forty-first
round (stop 37)"): 2025-2026 model_types in transformers 5.25.0 that no earlier round nor models/ holds. Each file is
its config classes' defaults (the docstring names the checkpoint) written as to_dict would. Hand counts tensor by
tensor from transformers 5.25.0's modeling_*.py (read from the unzipped wheel, not installed); written before the
reader was run on them."""
from __future__ import annotations

import pytest

from hand_counts import REFUSED, UNSEEN, Round, count, gated, gqa
from solver.errors import InputError
from solver.specs.config.read import parse_model_config

DATA = UNSEEN / "round41"
ROUND = Round(DATA)
_load, _spec, _total = ROUND.load, ROUND.spec, ROUND.total


# ------------------------------------------------------------------ Ministral-8B (ministral; MinistralConfig()'s
# defaults, the docstring's mistralai/Ministral-8B-Instruct-2410: 4096 x 32, GQA 32 / 8 heads of 128, a 14336 gated
# MLP, vocab 32000 untied, sliding_window 4096 on every layer (layer_types' default where a window is set)).
# MinistralModel: q / k / v / o bias-free ("Match Mistral"), a gated bias-free MLP, input / post-attention RMSNorms,
# a final norm; an embedding and an untied lm_head.
def ministral_layer(h: int, heads: int, kv: int, d: int, ff: int) -> int:
    return gqa(h, heads, kv, d) + gated(h, ff) + 2 * h


MINISTRAL = 2 * 32000 * 4096 + 32 * ministral_layer(4096, 32, 8, 128, 14336) + 4096
_MINISTRAL = "mistralai--Ministral-8B-Instruct-2410"

HAND: dict[str, int] = {
    _MINISTRAL: MINISTRAL,
}
ACTIVE: dict[str, tuple[int, float | None]] = {}
PUBLISHED: dict[str, float] = {}  # class defaults, not the releases' files

# Bytes of K/V per token of context at bf16 over the blocks whose cache grows with the context
KV_BYTES_PER_TOKEN: dict[str, int] = {
    _MINISTRAL: 0,  # every layer slides over 4096 tokens: its cache stops at the window
}
