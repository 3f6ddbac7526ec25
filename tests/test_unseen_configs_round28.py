"""Twenty-eighth round of families outside the catalog (tests/data/configs_unseen/round28/, SOURCES.md's
"Twenty-eighth round (stop 36)"): the 2026 flagship model_types in transformers 5.25.0 that round 27 left for their
size (mistral_large4, step3p7 counted; glm5_next, qwen4_exp refused). Each config is its class's defaults (the
docstring names the checkpoint), written as to_dict would; hand counts tensor by tensor from transformers 5.25.0's
modeling_*.py with their configuration_*.py (read from the wheel, not installed); written before the reader was run
on them."""
from __future__ import annotations

from hand_counts import UNSEEN, Round, gated, gqa, lin
from test_unseen_configs_round23 import pixtral_tower

DATA = UNSEEN / "round28"
ROUND = Round(DATA)
_load, _spec, _total = ROUND.load, ROUND.spec, ROUND.total


def layer_norm(d: int) -> int:  # nn.LayerNorm: weight and bias
    return 2 * d


def conv(cin: int, cout: int, k: int, bias: bool) -> int:  # a k x k Conv2d
    return cin * cout * k * k + (cout if bias else 0)


# ------------------------------------------------------------------ Mistral-Large-4-1T-A52B (MistralLarge4Config()
# defaults). Text: 72 layers, 6144 wide; MLA without a query LoRA (q_proj 6144 -> 64 x (64 + 64)), kv_a_proj_with_mqa
# 6144 -> 512 + rope, kv_a_layernorm 512, kv_b 512 -> 64 x (nope + 128), o 64 x 128 -> 6144, no bias, and a per-head
# softmax scale and bias on the queries (MistralLarge4TextSoftmaxScaling(64)). NoPE layers (no_rope_layers 0: every
# 4th, 18 of 72) have no rope slice: kv_a 6144 -> 512 and nope 64 + 64 = 128 in kv_b (q_proj keeps 64 x 128).
# A DSA indexer on every layer (indexer_types all "full"): without a query LoRA its queries come from the hidden
# state (q_input_norm LayerNorm 6144, wq_b 6144 -> 32 x 128), wk 6144 -> 128, k_norm LayerNorm 128, weights_proj
# 6144 -> 32 and its own per-head softmax scale and bias (32). Layer 0 the dense 24576 MLP, 71 MoE of 128 x 6144
# top-4 (router weight only, fp32, softmax: no correction bias) and one shared of 6144; two RMSNorms a layer; a
# learned LeRoPE alpha over the rotary's 32 inverse frequencies (rotary_emb.alpha, a Parameter); untied 204800.
# Vision: the Pixtral tower of init_kwargs (2048 wide, 30 layers, gated 6144, patch 14); projector norm RMSNorm 2048,
# patch merger 4 x 2048 -> 2048, linear_1 2048 -> 6144, linear_2 6144 -> 6144, no bias
def ml4_attention(h: int, heads: int, kv_rank: int, nope: int, rope: int, v: int) -> int:
    return (lin(h, heads * (nope + rope)) + lin(h, kv_rank + rope) + kv_rank + lin(kv_rank, heads * (nope + v))
            + lin(heads * v, h) + 2 * heads)


def ml4_attention_nope(h: int, heads: int, kv_rank: int, nope: int, rope: int, v: int) -> int:
    """A NoPE layer: the rope slice joins the nope part in kv_b and leaves kv_a; q_proj is unchanged."""
    return (lin(h, heads * (nope + rope)) + lin(h, kv_rank) + kv_rank + lin(kv_rank, heads * (nope + rope + v))
            + lin(heads * v, h) + 2 * heads)


def ml4_indexer(h: int, heads: int, d: int) -> int:
    return layer_norm(h) + lin(h, heads * d) + lin(h, d) + layer_norm(d) + lin(h, heads) + 2 * heads


ML4_ROPE_LAYER = ml4_attention(6144, 64, 512, 64, 64, 128) + ml4_indexer(6144, 32, 128) + 2 * 6144
ML4_NOPE_LAYER = ml4_attention_nope(6144, 64, 512, 64, 64, 128) + ml4_indexer(6144, 32, 128) + 2 * 6144
ML4_MOE = lin(6144, 128) + 128 * gated(6144, 6144) + gated(6144, 6144)
ML4_TEXT = (2 * 204800 * 6144 + 54 * ML4_ROPE_LAYER + 18 * ML4_NOPE_LAYER + gated(6144, 24576) + 71 * ML4_MOE
            + 6144 + 32)
ML4_VISION = pixtral_tower(2048, 30, 6144, 14) + 2048 + lin(4 * 2048, 2048) + lin(2048, 6144) + lin(6144, 6144)
MISTRAL_LARGE_4 = ML4_TEXT + ML4_VISION
MISTRAL_LARGE_4_ACTIVE = MISTRAL_LARGE_4 - 71 * (128 - 4) * gated(6144, 6144)


# ------------------------------------------------------------------ Step-3.7-Flash (Step3p7Config() defaults).
# Text (model_type step3p5): 45 layers, 4096 wide, GQA 64 / 8 heads x 128 without bias, q_norm / k_norm of 128 and
# a per-head output gate g_proj 4096 -> 64 (the class attribute gating = True: no field in the file); layers 0-2 the
# dense 11264 MLP, 42 MoE of 288 x 1280 top-8 with a router weight and its e_score_correction_bias (a persistent
# buffer), one shared of 1280 (share_expert_dim); two RMSNorms a layer; untied 128815.
# Vision (step3p5_vision): Conv2d patch 3 x 14 x 14 -> 1536 without bias, a learned position table of
# (728 / 14)^2 = 2704, pre_layernorm; 47 layers of two LayerNorms, biased q / k / v / out 1536 square, biased fc1
# 1536 -> 8960 / fc2 and two layer-scale vectors (lambda_1 / lambda_2); no post norm; two biased 3 x 3 stride-2
# Conv2d downsamplers 1536 -> 3072 -> 6144; projector 6144 -> 4096 without bias (projector_bias false)
STEP37_ATTENTION = gqa(4096, 64, 8, 128) + 2 * 128 + lin(4096, 64)
STEP37_MOE = lin(4096, 288) + 288 + 288 * gated(4096, 1280) + gated(4096, 1280)
STEP37_TEXT = (2 * 128815 * 4096 + 45 * (STEP37_ATTENTION + 2 * 4096) + 3 * gated(4096, 11264) + 42 * STEP37_MOE
               + 4096)
STEP37_VISION_LAYER = (2 * layer_norm(1536) + 4 * lin(1536, 1536, True) + lin(1536, 8960, True)
                       + lin(8960, 1536, True) + 2 * 1536)
STEP37_VISION = (conv(3, 1536, 14, False) + 2704 * 1536 + layer_norm(1536) + 47 * STEP37_VISION_LAYER
                 + conv(1536, 3072, 3, True) + conv(3072, 6144, 3, True))
STEP37 = STEP37_TEXT + STEP37_VISION + lin(6144, 4096)
STEP37_ACTIVE = STEP37 - 42 * (288 - 8) * gated(4096, 1280)


HAND: dict[str, int] = {
    "mistralai--Mistral-Large-4-1T-A52B": MISTRAL_LARGE_4,
    "stepfun-ai--Step-3.7-Flash": STEP37,
}
# Published totals precise enough for a 1% check: none recalled (Mistral-Large-4's "1T" and Step-3.7-Flash's name
# are rounder than 1%)
PUBLISHED: dict[str, float] = {}

ACTIVE: dict[str, tuple[int, float | None]] = {
    "mistralai--Mistral-Large-4-1T-A52B": (MISTRAL_LARGE_4_ACTIVE, None),
    "stepfun-ai--Step-3.7-Flash": (STEP37_ACTIVE, None),
}

# Bytes of K/V per token of context at bf16: Mistral-Large-4's MLA latent 512 + the rope key 64 on its 54 RoPE
# layers, 512 alone on its 18 NoPE layers, plus the indexer's key cache of 128 a layer (DSA); Step-3.7's 45 full
# layers of 8 K/V heads x 128
KV_BYTES_PER_TOKEN: dict[str, int] = {
    "mistralai--Mistral-Large-4-1T-A52B": (54 * (512 + 64) + 18 * 512 + 72 * 128) * 2,
    "stepfun-ai--Step-3.7-Flash": 45 * 2 * 8 * 128 * 2,
}
