"""Eleventh round of families outside the catalog (tests/data/configs_unseen/round11/, SOURCES.md's "Eleventh round
(stop 34)"): 2025-2026 releases, VLM wrappers and decoder variants. Each counts to the total worked out by hand,
tensor by tensor, from the modeling code (transformers 5.25.0's modeling_llava_next.py, modeling_siglip.py,
modeling_granite.py, modeling_llama4.py, modeling_mistral.py, modeling_vaultgemma.py, modeling_flex_olmo.py,
modeling_cohere2_vision.py, modeling_cohere2.py and modeling_qwen3.py, read for this round), written before the
reader was run on them, and to within 1% of the published total where one is published with that precision. One
test per reading rule follows the table; the configs refused this round are in configs_unseen/refused/
(test_unseen_configs.py takes every one there through `inspect`: one line, exit 2) and their lines are checked
here."""
from __future__ import annotations

from pathlib import Path

import pytest

from hand_counts import Round, gated, lin, ln
from solver.errors import InputError
from solver.estimate.params import count_params
from solver.specs.config.read import parse_model_config

UNSEEN = Path(__file__).parent / "data" / "configs_unseen"
DATA = UNSEEN / "round11"
REFUSED = UNSEEN / "refused"
ROUND = Round(DATA)
_load, _spec, _total = ROUND.load, ROUND.spec, ROUND.total


def gqa(h: int, heads: int, kv: int, d: int) -> int:
    """q / k / v / o of heads and kv heads x d, no biases."""
    return lin(h, heads * d) + 2 * lin(h, kv * d) + lin(heads * d, h)


def siglip(h: int, inter: int, layers: int, heads: int, image: int, patch: int, head: bool) -> int:
    """SiglipVisionTransformer (modeling_siglip.py): a biased patch Conv2d of 3 x patch^2 -> h, a learned position
    table of (image / patch)^2 rows, per layer two LayerNorms, biased q / k / v / out_proj and a biased fc1 / fc2,
    the post_layernorm, and where vision_use_head the attention-pooling head (probe, nn.MultiheadAttention's
    in_proj 3h x h + 3h and out_proj, a LayerNorm and an MLP); `heads` sizes nothing (the projections are h x h)"""
    del heads
    layer = 2 * ln(h) + 4 * lin(h, h, bias=True) + lin(h, inter, bias=True) + lin(inter, h, bias=True)
    pooling = h + 3 * h * h + 3 * h + lin(h, h, bias=True) + ln(h) + lin(h, inter, True) + lin(inter, h, True)
    return (lin(3 * patch * patch, h, bias=True) + (image // patch) ** 2 * h + layers * layer + ln(h)
            + (pooling if head else 0))


# ------------------------------------------------------------------ granite-vision-3.3-2b (llava_next)
# LlavaNextForConditionalGeneration: the SigLIP So400m tower at 384 / 14 (729 positions; vision_config writes no
# vision_use_head, so SiglipVisionConfig's default, true, builds the pooling head), the projector linear_1 of
# hidden x len(vision_feature_layer) (four layers concatenated: 4608) -> text hidden and linear_2, both biased
# (multimodal_projector_bias), image_newline (text hidden); GraniteForCausalLM: Llama's layer (no biases), tied
GRANITE_VISION_TOWER = siglip(1152, 4304, 27, 16, 384, 14, head=True)
GRANITE_VISION_PROJECTOR = lin(4 * 1152, 2048, bias=True) + lin(2048, 2048, bias=True) + 2048
GRANITE_VISION_TEXT = 49156 * 2048 + 40 * (gqa(2048, 32, 8, 64) + gated(2048, 8192) + 2 * 2048) + 2048

# ------------------------------------------------------------------ Llama-Guard-4-12B (llama4, modeling_llama4.py)
# Llama4TextDecoderLayer: moe_layers is written empty, so every layer's feed_forward is Llama4TextMLP of
# intermediate_size_mlp; q / k / v / o without bias, the qk_norm weightless (Llama4TextL2Norm); two RMSNorms.
# Llama4VisionModel: the unfold patch linear (3 x 14 x 14 -> 1408, no bias), class_embedding, the position table of
# (336 / 14)^2 + 1 rows, layernorm_pre / _post, 34 layers of biased q / k / v / o and fc1 / fc2 with two LayerNorms,
# the vision_adapter's pixel-shuffle MLP (fc1 intermediate_size -> projector_input_dim, fc2 projector_output_dim
# square, no biases); Llama4MultiModalProjector: one bias-free linear vision_output_dim -> text hidden
GUARD_VISION_LAYER = 4 * lin(1408, 1408, bias=True) + lin(1408, 5632, True) + lin(5632, 1408, True) + 2 * ln(1408)
GUARD_VISION = (lin(3 * 14 * 14, 1408) + 1408 + (24 * 24 + 1) * 1408 + 2 * ln(1408) + 34 * GUARD_VISION_LAYER
                + lin(5632, 4096) + lin(4096, 4096) + lin(4096, 5120))
GUARD_TEXT = 2 * 202048 * 5120 + 48 * (gqa(5120, 40, 8, 128) + gated(5120, 8192) + 2 * 5120) + 5120

# ------------------------------------------------------------------ Command A Vision (cohere2_vision)
# Cohere2VisionMultiModalProjector: a pixel shuffle by downsample_factor 2 (1152 x 4 = 4608), linear_1 (biased) into
# alignment_intermediate_size 36864, SwiGLU halves it, linear_2 (biased) 18432 -> 12288; no norm (Aya Vision's
# projector has one). The SigLIP tower at 512 / 16 (1024 positions) without the pooling head (vision_use_head
# false); Cohere2: one weight-only LayerNorm a layer (attention and MLP in parallel), tied embedding
CMD_A_VISION_TOWER = siglip(1152, 4304, 27, 16, 512, 16, head=False)
CMD_A_VISION_PROJECTOR = lin(4 * 1152, 36864, bias=True) + lin(36864 // 2, 12288, bias=True)
CMD_A_TEXT = 256000 * 12288 + 64 * (gqa(12288, 96, 8, 128) + gated(12288, 36864) + 12288) + 12288

# ------------------------------------------------------------------ FlexOlmo-7x7B-1T (modeling_flex_olmo.py)
# FlexOlmoAttention: q / k / v / o without bias, q_norm over heads x head_dim and k_norm over kv_heads x head_dim
# (OLMo-2's whole-width norms); two RMSNorms a layer (post_attention, post_feedforward); FlexOlmoSparseMoeBlock:
# the router's weight (experts x hidden, no bias) and 7 gated experts of intermediate_size (FlexOlmoExperts'
# intermediate_dim); untied
FLEXOLMO_LAYER = gqa(4096, 32, 32, 128) + 2 * 4096 + 2 * 4096 + lin(4096, 7) + 7 * gated(4096, 11008)

HAND: dict[str, int] = {
    "ibm-granite--granite-vision-3.3-2b": GRANITE_VISION_TOWER + GRANITE_VISION_PROJECTOR + GRANITE_VISION_TEXT,
    "meta-llama--Llama-Guard-4-12B": GUARD_TEXT + GUARD_VISION,
    # MistralForCausalLM: 131072 x 5120 untied, 50 layers of 32 / 8 heads x 128 and a gated 14336 MLP
    "ServiceNow-AI--Apriel-Nemotron-15b-Thinker": 2 * 131072 * 5120
    + 50 * (gqa(5120, 32, 8, 128) + gated(5120, 14336) + 2 * 5120) + 5120,
    # VaultGemmaDecoderLayer: two RMSNorms (input, pre_feedforward: Gemma-2's post-norms dropped), MQA of 4 heads x
    # 256, a gated 6912 MLP; tied (VaultGemmaConfig's default)
    "google--vaultgemma-1b": 256000 * 1152 + 26 * (gqa(1152, 4, 1, 256) + gated(1152, 6912) + 2 * 1152) + 1152,
    "allenai--FlexOlmo-7x7B-1T": 2 * 100352 * 4096 + 32 * FLEXOLMO_LAYER + 4096,
    "CohereLabs--command-a-vision-07-2025": CMD_A_TEXT + CMD_A_VISION_TOWER + CMD_A_VISION_PROJECTOR,
    # Qwen3ForCausalLM: 151669 x 1024 tied, 28 layers of 16 / 8 heads x 128 with q / k RMSNorms of head_dim, a
    # gated 3072 MLP
    "Qwen--Qwen3-Embedding-0.6B": 151669 * 1024 + 28 * (gqa(1024, 16, 8, 128) + 2 * 128 + gated(1024, 3072)
                                                        + 2 * 1024) + 1024,
}

# Published totals precise enough for a 1% check (SOURCES.md names each)
PUBLISHED: dict[str, float] = {
    "CohereLabs--command-a-vision-07-2025": 112e9,  # the card: "112 billion parameters"
}
# Active counts by hand (the embedding and head included, as count_params counts them); None: not asserted
ACTIVE: dict[str, tuple[int, float | None]] = {
    # 5 of 7 experts (num_experts_per_tok as written; see SOURCES.md)
    "allenai--FlexOlmo-7x7B-1T": (HAND["allenai--FlexOlmo-7x7B-1T"] - 32 * 2 * gated(4096, 11008), None),
}

# 224 GB of bf16 weights (Command A Vision) fit 8 H100s only without room for the cache at long context: 16
SOLVE_CARDS: dict[str, int] = {"CohereLabs--command-a-vision-07-2025": 16}


def _count(cfg: dict) -> int:
    return count_params(parse_model_config(cfg, "x")).total
