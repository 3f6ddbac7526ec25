"""Thirty-ninth round of families outside the catalog (tests/data/configs_unseen/round39/, SOURCES.md's
"Thirty-ninth round (stop 37)"): 2025-2026 model_types in transformers 5.25.0 that no earlier round nor models/
holds. Each file is its config classes' defaults (the docstring names the checkpoint) written as to_dict would, except
where SOURCES.md says a sub-config is recalled. Hand counts tensor by tensor from transformers 5.25.0's
modeling_*.py (read from the unzipped wheel, not installed); written before the reader was run on them."""
from __future__ import annotations

from hand_counts import UNSEEN, Round, gated, gqa, lin, ln
from test_unseen_configs_round38 import MINICPMV46

DATA = UNSEEN / "round39"
ROUND = Round(DATA)
_load, _spec, _total = ROUND.load, ROUND.spec, ROUND.total


# ------------------------------------------------------------------ MiniCPM-V-4.7-1B (minicpmv4_7; MiniCPMV4_7Config()'s
# defaults). modular_minicpmv4_7.py subclasses every MiniCPM-V-4.6 module unchanged (the only new code is the canvas
# M-RoPE position ids, no weights), and the config classes' defaults are 4.6's: the same Qwen3_5TextConfig() text, the
# same SigLIP tower with its window merger after insert_layer_id, the same one DownsampleMLP merger (round 38's count).
MINICPMV47 = MINICPMV46


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

HAND: dict[str, int] = {
    "openbmb--MiniCPM-V-4.7-1B": MINICPMV47,
    "thisisiron--Ovis2-1B-hf": OVIS2,
}
ACTIVE: dict[str, tuple[int, float | None]] = {}
PUBLISHED: dict[str, float] = {}  # class defaults, not the releases' files

# Bytes of K/V per token of context at bf16
KV_BYTES_PER_TOKEN: dict[str, int] = {
    "openbmb--MiniCPM-V-4.7-1B": 8 * 2 * 4 * 256 * 2,  # the 8 full-attention layers (Gated DeltaNet's state is fixed)
    "thisisiron--Ovis2-1B-hf": 28 * 2 * 2 * 128 * 2,
}

# ------------------------------------------------------------------ refused this round: one line each
# Hy4 (HYV4VLConfig() defaults): the text model is HYV4Config's (HYV4VLTextConfig subclasses it; HYV4VLTextModel is
# HYV4Model): MLA with sinks and a gate_proj, hyper-connections without a comb map: refused as Hy4-preview is.
REFUSALS: dict[str, str] = {
    "tencent--Hy4": r"text_config.*MLA with attention sinks",
}
