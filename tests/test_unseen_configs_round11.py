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


import pytest

from hand_counts import REFUSED, UNSEEN, Round, count, gated, gqa, lin, ln
from solver.errors import InputError
from solver.estimate.params import count_params
from solver.specs.config.read import parse_model_config

DATA = UNSEEN / "round11"
ROUND = Round(DATA)
_load, _spec, _total = ROUND.load, ROUND.spec, ROUND.total



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



# ------------------------------------------------------------------ reading rules added this round


def test_moe_layers_written_empty_makes_every_llama4_layer_dense() -> None:
    # Before this round Llama-Guard-4 was refused, misleadingly: "text_config.n_shared_experts: 1 experts in a field
    # shardplan does not read" (llama4_text's family default, unread in a model without routed experts)
    spec = _spec("meta-llama--Llama-Guard-4-12B")
    assert {type(layer.blocks[-1]).__name__ for layer in spec.layers} == {"DenseFFN"}
    assert _total("meta-llama--Llama-Guard-4-12B") - spec.encoders[0].params == GUARD_TEXT


def test_moe_layers_places_the_moe_layers_over_interleave_moe_layer_step() -> None:
    cfg = _load("meta-llama--Llama-Guard-4-12B")
    cfg["text_config"].update(num_local_experts=16, interleave_moe_layer_step=1, moe_layers=[0, 47])
    kinds = [type(layer.blocks[-1]).__name__ for layer in parse_model_config(cfg, "x").layers]
    assert [i for i, k in enumerate(kinds) if k == "MoE"] == [0, 47]
    cfg["text_config"].update(num_local_experts=0)
    with pytest.raises(InputError, match=r"moe_layers: lists MoE layers \[0, 47\] but the config has no routed"):
        parse_model_config(cfg, "x")


def test_llama4_vision_tower_counts_class_token_positions_pixel_shuffle_mlp_and_projector() -> None:
    # Before this round: 817,510,144, the class embedding, the 577-row position table, the vision_adapter's two
    # linears and the vision_output_dim projector left out or read as one linear 1408 -> 5120 (-54,422,272)
    assert _spec("meta-llama--Llama-Guard-4-12B").encoders[0].params == GUARD_VISION


def test_cohere2_vision_projector_is_aya_visions_swiglu_without_the_layernorm() -> None:
    # Before this round: 111,485,271,408, the wrapper unknown and its projector read as one linear 1152 -> 12288
    (enc,) = _spec("CohereLabs--command-a-vision-07-2025").encoders
    assert enc.params == CMD_A_VISION_TOWER + CMD_A_VISION_PROJECTOR


def test_vaultgemma_ties_its_embedding_by_the_class_default() -> None:
    # Before this round: 1,287,646,848, an untied head (256000 x 1152) read where the config writes no tie
    assert _spec("google--vaultgemma-1b").tie_word_embeddings
    cfg = _load("google--vaultgemma-1b")
    cfg["tie_word_embeddings"] = False  # a config's own switch wins
    assert count(cfg) - HAND["google--vaultgemma-1b"] == 256000 * 1152


def test_flex_olmo_q_and_k_norms_span_every_head() -> None:
    # Before this round: 33,270,403,072, the q / k norms (2 x 4096 a layer) left out
    cfg = _load("allenai--FlexOlmo-7x7B-1T")
    cfg["use_qk_norm"] = False
    assert HAND["allenai--FlexOlmo-7x7B-1T"] - count(cfg) == 32 * 2 * 4096


def test_a_decoder_used_for_embeddings_counts_as_its_causal_lm() -> None:
    # Qwen3-Embedding's config is a Qwen3ForCausalLM's: nothing in it tells the embedding use apart (SOURCES.md); the
    # tied head adds nothing, so the count is the checkpoint's
    assert _total("Qwen--Qwen3-Embedding-0.6B") == HAND["Qwen--Qwen3-Embedding-0.6B"]


# ------------------------------------------------------------------ refused this round: one line each


# the configs this round refuses, each in one line naming the field (test_unseen_rounds.py checks them)
REFUSALS: dict[str, str] = {
    # before: counted, 302,863,104, as a 24-layer causal decoder
    "google--embeddinggemma-300m": r"use_bidirectional_attention: true: an encoder \('gemma3_text'",
    # before: counted, 3,658,058,240, as 32 sliding-window attention layers, mb_per_layer only named in a note
    "microsoft--Phi-4-mini-flash-reasoning": r"model_type: 'phi4flash': SambaY decoder-hybrid layers",
}


def test_bidirectional_attention_refuses_a_nested_text_config_too() -> None:
    cfg = {"model_type": "wrapper", "text_config": _load("google--embeddinggemma-300m", REFUSED)}
    with pytest.raises(InputError, match=r"text_config\.use_bidirectional_attention: true"):
        parse_model_config(cfg, "x")


def test_mb_per_layer_refuses_a_sambay_config_under_another_model_type() -> None:
    cfg = _load("microsoft--Phi-4-mini-flash-reasoning", REFUSED)
    cfg["model_type"] = "phi4flash_renamed"
    with pytest.raises(InputError, match=r"mb_per_layer: 2: describes a mixer other than attention"):
        parse_model_config(cfg, "x")


def test_an_unknown_wrappers_projector_is_said_to_be_the_conventions() -> None:
    """Command A Vision before its family line: the projector was read as one linear without a word (382M short).
    A wrapper without family facts still gets the convention's projector, and a note says so; with the line, none."""
    cfg = _load("CohereLabs--command-a-vision-07-2025")
    assert not [w for w in _spec("CohereLabs--command-a-vision-07-2025").warnings if "projector into" in w]
    cfg["model_type"] = "new_vision_wrapper"
    (note,) = [w for w in parse_model_config(cfg, "x").warnings if "projector into the text width" in w]
    assert "'new_vision_wrapper' has no family facts" in note
