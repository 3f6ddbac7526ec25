"""Thirty-sixth round of families outside the catalog (tests/data/configs_unseen/round36/, SOURCES.md's "Thirty-sixth
round (stop 37)"): 2025-2026 model_types in transformers 5.25.0 that no earlier round nor models/ holds. Each file
is its config classes' defaults (the docstring names the checkpoint) written as to_dict would; SOURCES.md says where
a sub-config is another file's. Hand counts tensor by tensor from transformers 5.25.0's modeling_*.py (read from the
unzipped wheel, not installed); written before the reader was run on them."""
from __future__ import annotations

import pytest

from hand_counts import UNSEEN, Round, count, gated, gqa, lin, ln
from solver.errors import InputError
from solver.specs.config.read import parse_model_config

DATA = UNSEEN / "round36"
ROUND = Round(DATA)
_load, _spec, _total = ROUND.load, ROUND.spec, ROUND.total


# ------------------------------------------------------------------ ERNIE-4.5-VL-28B-A3B (ernie4_5_vl_moe;
# Ernie4_5_VLMoeConfig()'s defaults). Text (Ernie4_5_VLMoeTextModel): 28 layers of GQA 20 / 4 heads x 128 (2560 wide)
# without bias (use_bias false), two RMSNorms a layer; mlp_layer_types: layer 0 "dense" (a gated MLP of
# intermediate_size 12288), layers 1-27 "sparse": Ernie4_5_VLMoeMoeBlock holds TWO routed sets of num_experts (64)
# each, text_moe at moe_intermediate_size[0] 1536 and vision_moe at moe_intermediate_size[1] 512, each with its own
# router (weight 64 x 2560 and e_score_correction_bias 1 x 64), and shared_experts, one gated MLP of 1536 x
# moe_num_shared_experts (2) = 3072. Final norm; 103424 x 2560 embedding tied to the head.
def ernie_vl_router(h: int, experts: int) -> int:
    return experts * h + experts  # weight + e_score_correction_bias


def ernie_vl_sparse_mlp(h: int, experts: int, f_text: int, f_vision: int, shared: int) -> int:
    return (2 * ernie_vl_router(h, experts) + experts * gated(h, f_text) + experts * gated(h, f_vision)
            + gated(h, f_text * shared))


ERNIE_VL_TEXT = (103424 * 2560 + 28 * (gqa(2560, 20, 4, 128) + 2 * 2560) + gated(2560, 12288)
                 + 27 * ernie_vl_sparse_mlp(2560, 64, 1536, 512, 2) + 2560)


# Tower (Ernie4_5_VLMoeVisionTransformerPretrainedModel): patch_embed a bias-free Linear 3 x 14 x 14 -> 1280; 32
# blocks of norm1 / norm2 (LayerNorms with bias), a fused qkv 1280 -> 3840 and proj, both biased, fc1 1280 -> 5120 /
# fc2 back, biased (quick_gelu, not gated); a final LayerNorm ln. Rotary positions: no table.
def ernie_vl_tower(h: int, depth: int, ff: int, patch: int = 14) -> int:
    block = 2 * ln(h) + lin(h, 3 * h, True) + lin(h, h, True) + lin(h, ff, True) + lin(ff, h, True)
    return lin(3 * patch * patch, h) + depth * block + ln(h)


# Resampler (Ernie4_5_VLMoeVariableResolutionResamplerModel): spatial_dim = 1280 x 2^2 = 5120, temporal_dim = 5120 x 2
# = 10240; spatial_linear: fc1 5120 -> 5120, fc2 5120 -> 5120 (biased), ln LayerNorm(5120); temporal_linear: fc1
# 10240 -> 5120, fc2 5120 -> 5120, ln(5120); mlp 5120 -> 2560 biased; after_norm an RMSNorm of 2560.
def ernie_vl_resampler(v: int, text: int, merge: int = 2, temporal: int = 2) -> int:
    s = v * merge * merge
    return (lin(s, s, True) + lin(s, s, True) + ln(s) + lin(s * temporal, s, True) + lin(s, s, True) + ln(s)
            + lin(s, text, True) + text)


ERNIE_VL = ERNIE_VL_TEXT + ernie_vl_tower(1280, 32, 5120) + ernie_vl_resampler(1280, 2560)
# a text token runs 6 of the 64 text experts, the shared MLP and the text router; the vision experts, their
# router, the tower and the resampler run for image tokens only
ERNIE_VL_ACTIVE = ERNIE_VL_TEXT - 27 * ((64 - 6) * gated(2560, 1536) + 64 * gated(2560, 512)
                                        + ernie_vl_router(2560, 64))


# ------------------------------------------------------------------ HyperCLOVAX-SEED-Think-32B's classes
# (hyperclovax_vision_v2; HyperCLOVAXVisionV2Config with HyperCLOVAXConfig()'s text defaults and Qwen2.5-VL-7B's
# tower sizes, SOURCES.md). Text (HyperCLOVAXModel): 32 layers of MHA 32 x 128 (4096 wide) without bias, a gated
# 11008 MLP without bias, FOUR RMSNorms a layer (input, post_attention, and Peri-LN's post_norm1 / post_norm2 under
# use_post_norm true, the class default); final norm; 32000 x 4096 embedding and a head. The class defaults disagree
# on tying (the wrapper's true, which transformers reads; HyperCLOVAXConfig's false, which engines read): the reader's
# rule (read.py) takes the language model's and names the other in a warning, so the head is counted untied here
HCX_TEXT = 32000 * 4096 + 32 * (gqa(4096, 32, 32, 128) + gated(4096, 11008) + 4 * 4096) + 4096
HCX_HEAD = 32000 * 4096


# Tower (Qwen2_5_VisionTransformerPretrainedModel, built by AutoModel from qwen2_5_vl_vision): Conv3d 3 x 2 x 14 x 14
# -> 1280 without bias; 32 blocks of norm1 / norm2 (RMSNorm), qkv 1280 -> 3840 and proj, biased, a gated 3420 MLP
# WITH biases; no final norm; the merger inside the tower: ln_q RMSNorm(1280), 5120 -> 5120 and 5120 -> 3584,
# biased. Then the wrapper's projector: ONE biased Linear out_hidden_size 3584 -> 4096.
def qwen25_vl_tower(h: int, depth: int, ff: int, out: int, patch: int = 14) -> int:
    block = 2 * h + lin(h, 3 * h, True) + lin(h, h, True) + 2 * lin(h, ff, True) + lin(ff, h, True)
    merger = h + lin(4 * h, 4 * h, True) + lin(4 * h, out, True)
    return 3 * 2 * patch * patch * h + depth * block + merger


HCX_TOWER = qwen25_vl_tower(1280, 32, 3420, 3584)
HCX_PROJECTOR = lin(3584, 4096, True)
HCX_VL = HCX_TEXT + HCX_HEAD + HCX_TOWER + HCX_PROJECTOR



# ------------------------------------------------------------------ granite-docling (granite_docling;
# GraniteDoclingConfig()'s defaults, ibm-granite/granite-for-docling-500m). Text (GraniteDoclingTextModel): 28 layers
# of GQA 16 / 4 heads x 64 (1024 wide) without bias, a gated 2048 MLP, two RMSNorms; final norm; 133800 x 1024 tied.
# Tower (GraniteDoclingVisionModel): a biased Conv2d 3 x 16 x 16 -> 768, a learned table of (512 / 16)^2 = 1024 rows
# (no class row), 12 layers of layer_norm1 / 2 (LayerNorms), biased q / k / v / out_proj, fc1 / fc2 biased;
# post_layernorm. Connector: ln_in (LayerNorm 768); the coarse path (scale_factor 4): projection 768 x 16 -> 1024
# bias-free and one DeepStack merger per deepstack_visual_indexes entry (3: LayerNorm over 12288, linear_1 12288 ->
# 1024 and linear_2 1024 -> 1024, biased); the fine path (use_fine_route, factor 2) the same at 768 x 4; shared
# ln_mid, mlp_fc2 1024 -> 1024 bias-free, ln_out. No density router (density_router_hidden_size None)
def docling_path(h: int, factor: int, out: int, deep: int) -> int:
    wide = h * factor * factor
    return lin(wide, out) + deep * (ln(wide) + lin(wide, out, True) + lin(out, out, True))


DOCLING_TEXT = 133800 * 1024 + 28 * (gqa(1024, 16, 4, 64) + gated(1024, 2048) + 2 * 1024) + 1024
DOCLING_TOWER = (lin(3 * 16 * 16, 768, True) + 1024 * 768
                 + 12 * (2 * ln(768) + 4 * lin(768, 768, True) + lin(768, 3072, True) + lin(3072, 768, True))
                 + ln(768))
DOCLING_CONNECTOR = (ln(768) + docling_path(768, 4, 1024, 3) + docling_path(768, 2, 1024, 3) + ln(1024)
                     + lin(1024, 1024) + ln(1024))
DOCLING = DOCLING_TEXT + DOCLING_TOWER + DOCLING_CONNECTOR

HAND: dict[str, int] = {
    "naver-hyperclovax--HyperCLOVAX-SEED-Think-32B": HCX_VL,
    "ibm-granite--granite-docling-500m": DOCLING,
}
ACTIVE: dict[str, tuple[int, float | None]] = {}  # ERNIE-4.5-VL's: counted in round 40 (round40/)
# Published totals precise enough for a 1% check: none (the class defaults are not the releases' exact files)
PUBLISHED: dict[str, float] = {}

# Bytes of K/V per token of context at bf16: every layer full attention
KV_BYTES_PER_TOKEN: dict[str, int] = {
    "naver-hyperclovax--HyperCLOVAX-SEED-Think-32B": 32 * 2 * 32 * 128 * 2,
    "ibm-granite--granite-docling-500m": 28 * 2 * 4 * 64 * 2,
}

# ------------------------------------------------------------------ refused this round: one line each
# OpenAI privacy-filter (OpenAIPrivacyFilterConfig() defaults): a bidirectional token classifier (the encoder layers
# run is_causal false over a symmetric sliding window; the head is a per-token label linear): no decode to plan.
# NLLB-MoE (NllbMoeConfig() defaults, facebook/nllb-moe-54b): an encoder-decoder.
# ERNIE-4.5-VL-28B-A3B (Ernie4_5_VLMoeConfig() defaults, hand count ERNIE_VL above), refused here for its two expert
# sets per MoE layer, is counted since round 40 (round40/, test_unseen_configs_round40.py)
REFUSALS: dict[str, str] = {
    "openai--privacy-filter": r"architectures: OpenAIPrivacyFilterForTokenClassification: a per-token classifier",
    "facebook--nllb-moe-54b": r"is_encoder_decoder: true: an encoder-decoder model",
}


# ------------------------------------------------------------------ reading rules added this round
_HCX = "naver-hyperclovax--HyperCLOVAX-SEED-Think-32B"


def test_hyperclovax_vision_v2_projector_is_one_biased_linear_after_the_towers_merger() -> None:
    # Before this round: 7,414,804,224 with the head untied, 15,107,840 short: no projector after the merger and the
    # qwen2_5_vl_vision tower without its biases (32 x 13,240)
    assert _total(_HCX) == HCX_VL


def test_hyperclovax_without_use_post_norm_takes_the_class_default_of_four_norms() -> None:
    # Before this round: 262,144 short (32 x 2 x 4096: Peri-LN's norms dropped where the field is left out)
    cfg = _load(_HCX)
    del cfg["text_config"]["use_post_norm"]
    assert count(cfg) == HCX_VL


def test_hyperclovax_with_use_post_norm_false_has_two_norms_a_layer() -> None:
    cfg = _load(_HCX)
    cfg["text_config"]["use_post_norm"] = False
    assert count(cfg) == HCX_VL - 32 * 2 * 4096


def test_qwen2_5_vl_tower_counts_the_same_under_either_model_type() -> None:
    cfg = _load(_HCX)
    cfg["vision_config"]["model_type"] = "qwen2_5_vl"  # what HyperCLOVAXVisionV2Config rewrites to qwen2_5_vl_vision
    assert count(cfg) == HCX_VL


def test_hyperclovax_vision_v2_tie_disagreement_is_named() -> None:
    spec = _spec(_HCX)
    assert any("tie_word_embeddings: the wrapper's true disagrees" in w for w in spec.warnings)


def test_ernie_vl_moe_hand_count_holds_both_expert_sets() -> None:
    # 27 MoE layers x 64 experts at 1536 (text) and at 512 (vision): the vision set is 6.8B of the 29.4B
    assert ERNIE_VL - ERNIE_VL_TEXT == ernie_vl_tower(1280, 32, 5120) + ernie_vl_resampler(1280, 2560)
    assert 27 * 64 * gated(2560, 512) == 6_794_772_480


@pytest.mark.parametrize("drop, field", [([], "architectures"), (["architectures"], "model_type")])
def test_privacy_filter_is_refused_as_a_token_classifier(drop: list[str], field: str) -> None:
    from hand_counts import REFUSED
    cfg = ROUND.load("openai--privacy-filter", REFUSED)
    for key in drop:
        del cfg[key]
    with pytest.raises(InputError, match=rf"{field}: .*(token classifier|per-token classifier)"):
        parse_model_config(cfg, "x")


def test_nllb_moe_without_is_encoder_decoder_is_refused_on_its_decoder_layers() -> None:
    from hand_counts import REFUSED
    cfg = ROUND.load("facebook--nllb-moe-54b", REFUSED)
    del cfg["is_encoder_decoder"]
    with pytest.raises(InputError, match=r"decoder_layers: 12: .*encoder-decoder"):
        parse_model_config(cfg, "x")


_DOC = "ibm-granite--granite-docling-500m"


def test_granite_docling_connector_holds_both_shuffle_paths_and_their_deepstack_mergers() -> None:
    # Before this round: 473,850,880, 69,577,472 short (notes only): the connector read as one linear and a norm
    assert _total(_DOC) == DOCLING


@pytest.mark.parametrize("sub, key", [("text_config", "num_key_value_heads"), ("text_config", "tie_word_embeddings"),
                                      ("vision_config", "deepstack_visual_indexes"), ("vision_config", "scale_factor"),
                                      ("vision_config", "use_fine_route"), ("vision_config", "out_hidden_size"),
                                      ("vision_config", "image_size")])
def test_granite_docling_fields_left_out_take_the_class_defaults(sub: str, key: str) -> None:
    # before: num_key_value_heads left out read as MHA (44,040,192 over), deepstack_visual_indexes as none
    cfg = _load(_DOC)
    del cfg[sub][key]
    assert count(cfg) == DOCLING


def test_granite_docling_without_the_fine_route_has_one_path() -> None:
    cfg = _load(_DOC)
    cfg["vision_config"]["use_fine_route"] = False
    assert count(cfg) == DOCLING - docling_path(768, 2, 1024, 3)


def test_granite_docling_density_router_is_counted_where_its_width_is_written() -> None:
    cfg = _load(_DOC)
    cfg["density_router_hidden_size"] = 256
    assert count(cfg) == DOCLING + lin(768, 1, True) + ln(768) + lin(768, 256, True) + lin(256, 1, True)


def test_granite_docling_connector_out_of_the_text_width_is_refused() -> None:
    cfg = _load(_DOC)
    cfg["vision_config"]["out_hidden_size"] = 2048
    with pytest.raises(InputError, match=r"vision_config.out_hidden_size: 2048 is not the text width 1024"):
        parse_model_config(cfg, "x")
