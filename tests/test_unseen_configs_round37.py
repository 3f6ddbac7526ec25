"""Thirty-seventh round of families outside the catalog (tests/data/configs_unseen/round37/, SOURCES.md's
"Thirty-seventh round (stop 37)"): 2025-2026 model_types in transformers 5.25.0 that no earlier round nor models/
holds. Each file is its config classes' defaults (the docstring names the checkpoint) written as to_dict would.
Hand counts tensor by tensor from transformers 5.25.0's modeling_*.py (read from the unzipped wheel, not
installed); written before the reader was run on them."""
from __future__ import annotations

import pytest

from hand_counts import REFUSED, UNSEEN, Round, count, gated, gqa, lin, ln
from solver.errors import InputError
from solver.specs.config.read import parse_model_config

DATA = UNSEEN / "round37"
ROUND = Round(DATA)
_load, _spec, _total = ROUND.load, ROUND.spec, ROUND.total


# ------------------------------------------------------------------ North-Micro-Vision (cohere_compass;
# CohereCompassConfig()'s defaults, CohereLabs/North-Micro-Vision-Instruct). Text (CohereCompassTextModel): 40 layers
# of MHA 64 x 128 (8192 wide, num_key_value_heads None -> heads) without bias, a gated 22528 MLP without bias, ONE
# bias-free LayerNorm a layer (input_layernorm; attention and MLP run in parallel off it), no q / k norms; final norm;
# 256000 x 8192 embedding, the head tied (text tie_word_embeddings true; the wrapper's false, round 36's rule reads
# the language model's). layer_types: __post_init__ writes all full_attention before the sliding pattern is read.
COMPASS_TEXT = 256000 * 8192 + 40 * (gqa(8192, 64, 64, 128) + gated(8192, 22528) + 8192) + 8192


# Tower (CohereCompassVisionModel, Qwen3-VL's): a biased Conv3d 3 x 2 x 16 x 16 -> 1152, a learned table pos_embed
# of num_position_embeddings (2304) rows; 27 blocks of norm1 / norm2 (LayerNorms), qkv 1152 -> 3456 and proj, biased,
# linear_fc1 1152 -> 4304 / linear_fc2 back, biased (not gated); no final norm. merger: LayerNorm(1152), fc1 4608 ->
# 4608, fc2 4608 -> out_hidden_size 3584, biased; one deepstack merger per deepstack_visual_indexes entry (3), the
# same with its LayerNorm over 4608 (use_postshuffle_norm). No projector after the tower (CohereCompassModel).
def qwen3_vl_merger(h: int, out: int, norm: int) -> int:
    return ln(norm) + lin(4 * h, 4 * h, True) + lin(4 * h, out, True)


def compass_tower(h: int, depth: int, ff: int, out: int, table: int, deep: int, patch: int = 16) -> int:
    block = 2 * ln(h) + lin(h, 3 * h, True) + lin(h, h, True) + lin(h, ff, True) + lin(ff, h, True)
    return (3 * 2 * patch * patch * h + h + table * h + depth * block + qwen3_vl_merger(h, out, h)
            + deep * qwen3_vl_merger(h, out, 4 * h))


COMPASS_TOWER = compass_tower(1152, 27, 4304, 3584, 2304, 3)
COMPASS = COMPASS_TEXT + COMPASS_TOWER


# ------------------------------------------------------------------ GLM-Image's autoregressive model (glm_image;
# GlmImageConfig()'s defaults, zai-org/GLM-Image). Text (GlmImageTextModel): 40 layers of GQA 32 / 2 heads x 128 (4096
# wide; head_dim hidden / heads), q / k / v biased (attention_bias true), o_proj bias-free; gate_up 4096 -> 2 x 13696
# and down, bias-free; FOUR RMSNorms a layer; final norm; 168064 x 4096 embedding. The head (GlmImageForConditional-
# Generation.lm_head) is vision_vocab_size (16512) x 4096, untied: it scores image tokens only.
GLM_IMAGE_TEXT = (168064 * 4096 + 40 * (gqa(4096, 32, 2, 128, qkv_bias=True) + gated(4096, 13696) + 4 * 4096)
                  + 4096)
GLM_IMAGE_HEAD = 16512 * 4096


# Tower (GlmImageVisionModel): a biased Conv2d 3 x 16 x 16 -> 1536, a learned table of (2048 / 16)^2 = 16384 rows; 40
# blocks of norm1 / norm2 (LayerNorms), qkv 1536 -> 4608 and proj biased (attention_bias), fc1 1536 -> 6144 / fc2
# back, biased (GELU, not gated); no final norm, no merger, no projector: its features are quantised by the VQ model
# into image tokens the text embedding reads. VQ model (GlmImageVQVAE): codebook 16384 x 2048, quant_conv a biased
# 1 x 1 Conv2d 1536 -> 2048, post_quant_conv 2048 -> 1536 (held, unused by generation).
def glm_image_tower(h: int, depth: int, ff: int, image: int = 2048, patch: int = 16) -> int:
    block = 2 * ln(h) + lin(h, 3 * h, True) + lin(h, h, True) + lin(h, ff, True) + lin(ff, h, True)
    return lin(3 * patch * patch, h, True) + (image // patch) ** 2 * h + depth * block


def glm_image_vq(codes: int, embed: int, latent: int) -> int:
    return codes * embed + lin(latent, embed, True) + lin(embed, latent, True)


GLM_IMAGE = GLM_IMAGE_TEXT + GLM_IMAGE_HEAD + glm_image_tower(1536, 40, 6144) + glm_image_vq(16384, 2048, 1536)

HAND: dict[str, int] = {
    "CohereLabs--North-Micro-Vision-Instruct": COMPASS,
}
ACTIVE: dict[str, tuple[int, float | None]] = {}
# Published totals precise enough for a 1% check: none (class defaults, not the releases' files)
PUBLISHED: dict[str, float] = {}

# Bytes of K/V per token of context at bf16: every layer full attention
KV_BYTES_PER_TOKEN: dict[str, int] = {
    "CohereLabs--North-Micro-Vision-Instruct": 40 * 2 * 64 * 128 * 2,
}

# ------------------------------------------------------------------ refused this round: one line each
# JEV-9B (JevConfig() defaults, text_config Qwen3_5TextConfig()'s): a decision head (proj hidden -> num_verbalizers)
# read at marked tokens of one prompt, the model run with use_cache false: no decode to plan.
# NeoMME-260M (NeoMMEConfig() defaults): a bidirectional encoder (NeoMMEAttention is_causal false) for retrieval /
# masked LM.
# GLM-Image (GlmImageConfig() defaults, hand count GLM_IMAGE above): a VQ codebook beside the tower and a head of
# vision_vocab_size rows: refused on vq_config (unseen.py's rule; not counted for time)
REFUSALS: dict[str, str] = {
    "zai-org--GLM-Image": r"vq_config: given: a VQ-VAE image tokenizer",
    "autotrust--JEV-9B": r"architectures: JevForDecision: ",
    "Hcompany--NeoMME-260M": r"architectures: NeoMMEForRetrieval: ",
}


# ------------------------------------------------------------------ reading rules added this round
_COMPASS = "CohereLabs--North-Micro-Vision-Instruct"


def test_cohere_compass_text_has_one_layernorm_a_layer() -> None:
    # Before this round: 35,548,108,016, 327,680 over (40 x 8192: two norms a layer read by convention), silently
    assert _total(_COMPASS) == COMPASS


@pytest.mark.parametrize("key", ["num_key_value_heads", "head_dim", "layer_types"])
def test_cohere_compass_text_fields_left_out_take_the_class_defaults(key: str) -> None:
    cfg = _load(_COMPASS)
    del cfg["text_config"][key]
    assert count(cfg) == COMPASS


def test_cohere_compass_without_layer_types_is_full_attention_in_every_layer() -> None:
    # CohereCompassTextConfig.__post_init__ writes all full_attention before its sliding_window_pattern branch
    cfg = _load(_COMPASS)
    del cfg["text_config"]["layer_types"]
    blocks = [b for layer in parse_model_config(cfg, "x").layers for b in layer.blocks]
    assert all(getattr(b, "window", None) is None for b in blocks)


def test_cohere_compass_sliding_layers_are_windowed_where_written() -> None:
    cfg = _load(_COMPASS)
    cfg["text_config"]["layer_types"] = ["sliding_attention" if (i + 1) % 4 else "full_attention" for i in range(40)]
    windows = [getattr(b, "window", None) for layer in parse_model_config(cfg, "x").layers for b in layer.blocks
               if hasattr(b, "window")]
    assert sorted(set(windows), key=str) == [4096, None] and count(cfg) == COMPASS


def test_cohere_compass_text_without_tie_word_embeddings_takes_the_wrappers_untied_head() -> None:
    # the wrapper's false is written, the text class's true is a default: the written value is read
    cfg = _load(_COMPASS)
    del cfg["text_config"]["tie_word_embeddings"]
    assert count(cfg) == COMPASS + 256000 * 8192


def test_cohere_compass_tie_disagreement_is_named() -> None:
    assert any("tie_word_embeddings: the wrapper's false disagrees" in w for w in _spec(_COMPASS).warnings)


@pytest.mark.parametrize("name, arch", [("autotrust--JEV-9B", "JevForDecision"),
                                        ("Hcompany--NeoMME-260M", "NeoMMEForRetrieval")])
def test_heads_without_decode_are_refused_by_architectures(name: str, arch: str) -> None:
    with pytest.raises(InputError, match=rf"architectures: {arch}: .*no token-by-token decode"):
        parse_model_config(ROUND.load(name, REFUSED), "x")


@pytest.mark.parametrize("name, field", [("autotrust--JEV-9B", "model_type: 'jev'"),
                                         ("Hcompany--NeoMME-260M", "model_type: 'neomme'")])
def test_heads_without_decode_are_refused_by_model_type_without_architectures(name: str, field: str) -> None:
    # before this round: JEV counted 8,819,585,536 (its qwen3_5_text model) and NeoMME 303,598,592, silently;
    # JEV's refusal names the wrapper's model_type, not the qwen3_5_text model it wraps
    cfg = ROUND.load(name, REFUSED)
    del cfg["architectures"]
    with pytest.raises(InputError, match=rf"^x: {field}: .*no token-by-token decode"):
        parse_model_config(cfg, "x")


def test_a_classifier_head_beside_a_causal_lm_is_still_read() -> None:
    cfg = _load(_COMPASS)
    cfg["architectures"] = ["CohereCompassForConditionalGeneration", "CohereCompassForRetrieval"]
    assert count(cfg) == COMPASS


def test_glm_image_hand_count_holds_the_tower_the_codebook_and_an_image_token_head() -> None:
    # the head scores vision_vocab_size (16,512) image tokens, not the 168,064-row vocabulary
    assert GLM_IMAGE - GLM_IMAGE_TEXT == (16512 * 4096 + glm_image_tower(1536, 40, 6144)
                                          + glm_image_vq(16384, 2048, 1536))
