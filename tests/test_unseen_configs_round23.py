"""Twenty-third round of families outside the catalog (tests/data/configs_unseen/round23/, SOURCES.md's "Twenty-third
round (stop 36)"): 2025-2026 families no earlier round nor the catalog holds (model_types hunyuan_vl, bailing_hybrid;
Granite-Docling's idefics3 over a 576-wide Granite / Llama LM and Apriel-1.5's LLaVA over Pixtral and a 48-layer
Mistral, layouts held but not at these sizes), chosen where a reader by convention is likeliest wrong: a vision tower
whose merger is two convolutions, a linear and four learned vectors (HunyuanOCR), a hybrid of KDA linear attention
with full-rank gates and MLA with a head-wise output gate whose layout comes from layer_group_size alone (Ling 3),
a pixel shuffle of 4 into a narrow LM (Granite-Docling) and a Pixtral tower with a LLaVA projector (Apriel).
Hand counts tensor by tensor from transformers 5.25.0 modeling_hunyuan_vl.py / configuration_hunyuan_vl.py,
modeling_bailing_hybrid.py / configuration_bailing_hybrid.py, modeling_idefics3.py, modeling_llava.py and
modeling_pixtral.py (read from the wheel, not installed); written before the reader was run on them."""
from __future__ import annotations

from hand_counts import UNSEEN, Round, count, gated, gqa, lin, ln

DATA = UNSEEN / "round23"
ROUND = Round(DATA)
_load, _spec, _total = ROUND.load, ROUND.spec, ROUND.total


# ------------------------------------------------------------------ HunyuanOCR (HunYuanVLForConditionalGeneration, the
# flat layout: text fields at the top level): the text model is HunYuanVLTextModel: GQA 16 / 8 heads x 128 (q 2048
# wide from a 1024-wide stream) without biases, query_layernorm / key_layernorm of head_dim, the gated MLP, two
# RMSNorms, tied (the class ties lm_head to embed_tokens). The tower (HunYuanVLVisionTransformer): a biased Conv2d
# patch 3 x 16 x 16 -> 1152, a learned table of (max_image_size / patch)^2 + 1 rows, 27 blocks of two LayerNorms,
# biased q / k / v / o 1152 square and a biased fc1 / fc2 of 4304 (GELU, not gated), no final norm; the merger
# (HunYuanVLVisionPatchMerger): before_rms (1152), proj_conv Conv2d 1152 -> 2304 with a 2 x 2 kernel (biased),
# proj_out Conv2d 2304 -> 4608 1 x 1 (biased), mlp Linear 4608 -> text 1024 (biased), image_newline (4608),
# image_begin / image_end / image_sep (1024 each), after_rms (1024)
def hunyuan_text(vocab: int, h: int, layers: int, heads: int, kv: int, d: int, inter: int) -> int:
    layer = gqa(h, heads, kv, d) + 2 * d + gated(h, inter) + 2 * h
    return vocab * h + layers * layer + h


def hunyuan_tower(h: int, layers: int, inter: int, patch: int, max_image: int, merge: int, text: int) -> int:
    block = 2 * ln(h) + 4 * lin(h, h, True) + lin(h, inter, True) + lin(inter, h, True)
    embed = lin(3 * patch * patch, h, True) + ((max_image // patch) ** 2 + 1) * h
    merger = (h + lin(h * merge * merge, 2 * h, True) + lin(2 * h, 4 * h, True) + lin(4 * h, text, True)
              + 4 * h + 3 * text + text)
    return embed + layers * block + merger


HUNYUAN_OCR_TEXT = hunyuan_text(120818, 1024, 24, 16, 8, 128, 3584)
HUNYUAN_OCR = HUNYUAN_OCR_TEXT + hunyuan_tower(1152, 27, 4304, 16, 2048, 2, 1024)


# ------------------------------------------------------------------ Ling-3.0-Flash (BailingHybridForCausalLM; the sizes
# are BailingHybridConfig's defaults, whose docstring names this checkpoint): 42 layers, every layer_group_size-th
# (6th) full MLA, the rest KDA. KDA (BailingHybridDeltaAttention): q / k / v 2560 -> 32 x 128 without bias, a
# depthwise Conv1d over the 3 x 4096 channels of kernel 4 without bias, the forget gate's full-rank f_proj 2560 ->
# 4096, A_log (32) and dt_bias (4096), b_proj 2560 -> 32, a gated o_norm of head_dim, o_proj 4096 -> 2560 and a
# full-rank output gate g_proj 2560 -> 4096. MLA (BailingHybridAttention, q_lora_rank null): q_proj 2560 -> 32 x
# (128 + 64), kv_a_proj_with_mqa 2560 -> 512 + 64, kv_a_layernorm (512), kv_b 512 -> 32 x (128 + 128), o_proj
# 32 x 128 -> 2560, a head-wise output gate g_proj 2560 -> 32. Layers 0-1 a dense gated MLP of 6144, the rest a MoE
# of 512 experts of 768 (gate_up fused, down), a router 512 x 2560 and its e_score_correction_bias (a persistent buffer), one shared
# expert of 768; two RMSNorms a layer; untied. The num_mtp_layers layer after the stack is dropped at load
# (_keys_to_ignore_on_load_unexpected): not counted
def kda(h: int, heads: int, d: int, kernel: int) -> int:
    p = heads * d
    return 3 * lin(h, p) + 3 * p * kernel + lin(h, p) + heads + p + lin(h, heads) + d + lin(p, h) + lin(h, p)


def gated_mla(h: int, heads: int, kv_rank: int, nope: int, rope: int, v: int) -> int:
    return (lin(h, heads * (nope + rope)) + lin(h, kv_rank + rope) + kv_rank + lin(kv_rank, heads * (nope + v))
            + lin(heads * v, h) + lin(h, heads))


def ling3(vocab: int, h: int, layers: int, group: int, dense: int, inter: int, experts: int, moe: int) -> int:
    full = layers // group
    mixers = full * gated_mla(h, 32, 512, 128, 64, 128) + (layers - full) * kda(h, 32, 128, 4)
    # experts, the router and its e_score_correction_bias (a persistent buffer, in the checkpoint: stop 37), the shared one
    sparse = experts * gated(h, moe) + lin(h, experts) + experts + gated(h, moe)
    return 2 * vocab * h + mixers + dense * gated(h, inter) + (layers - dense) * sparse + layers * 2 * h + h


LING3_FLASH = ling3(157184, 2560, 42, 6, 2, 6144, 512, 768)
LING3_FLASH_ACTIVE = LING3_FLASH - 40 * (512 - 8) * gated(2560, 768)


# ------------------------------------------------------------------ granite-docling-258M (Idefics3ForConditionalGeneration):
# the text model a 576-wide Llama (9 / 3 heads x 64, gated MLP of 1536, 30 layers), tied; the tower Idefics3's
# SigLIP (a biased Conv2d patch 3 x 16 x 16 -> 768, (512 / 16)^2 learned positions, 12 layers of two LayerNorms,
# biased q / k / v / out_proj and fc1 / fc2 of 3072, post_layernorm); the connector one bias-free linear from the
# pixel-shuffled 768 x scale_factor^2 = 12288 into 576
def llama(vocab: int, h: int, layers: int, heads: int, kv: int, d: int, inter: int, tied: bool) -> int:
    layer = gqa(h, heads, kv, d) + gated(h, inter) + 2 * h
    return (1 if tied else 2) * vocab * h + layers * layer + h


def idefics3_tower(h: int, layers: int, inter: int, patch: int, image: int) -> int:
    layer = 2 * ln(h) + 4 * lin(h, h, True) + lin(h, inter, True) + lin(inter, h, True)
    return lin(3 * patch * patch, h, True) + (image // patch) ** 2 * h + layers * layer + ln(h)


GRANITE_DOCLING = (llama(100352, 576, 30, 9, 3, 64, 1536, tied=True) + idefics3_tower(768, 12, 3072, 16, 512)
                   + lin(768 * 16, 576))


# ------------------------------------------------------------------ Apriel-1.5-15b-Thinker (LlavaForConditionalGeneration):
# a 48-layer Mistral (32 / 8 heads x 128 from a 5120 stream, 14336 gated MLP), untied; the Pixtral tower (a
# bias-free Conv2d patch 3 x 16 x 16 -> 1024, ln_pre RMSNorm, 24 layers of attention_norm / ffn_norm RMSNorms,
# bias-free q / k / v / o 1024 square and a bias-free gated MLP of 4096; 2D RoPE, no position table); LLaVA's
# projector linear_1 1024 -> 5120 and linear_2 5120 -> 5120, both biased (multimodal_projector_bias)
def pixtral_tower(h: int, layers: int, inter: int, patch: int) -> int:
    layer = 2 * h + 4 * lin(h, h) + gated(h, inter)
    return 3 * patch * patch * h + h + layers * layer


APRIEL_15 = (llama(131072, 5120, 48, 32, 8, 128, 14336, tied=False) + pixtral_tower(1024, 24, 4096, 16)
             + lin(1024, 5120, True) + lin(5120, 5120, True))


HAND: dict[str, int] = {
    "inclusionAI--Ling-3.0-Flash": LING3_FLASH,
    "ibm-granite--granite-docling-258M": GRANITE_DOCLING,
    "ServiceNow-AI--Apriel-1.5-15b-Thinker": APRIEL_15,
    # from refused/ (stop 37, layerfeat6: SOURCES.md "Left open, taken up (stop 37, layerfeat6)")
    "tencent--HunyuanOCR": HUNYUAN_OCR,
}
# Published totals precise enough for a 1% check: granite-docling's 258M (name and card). Ling-3.0-Flash's sizes are
# the class defaults (no published figure asserted); HunyuanOCR's 1B and Apriel's 15B are names (hand: 0.996B
# and 14.86B)
PUBLISHED: dict[str, float] = {"ibm-granite--granite-docling-258M": 258e6}

ACTIVE: dict[str, tuple[int, float | None]] = {
    # 8 of 512 routed experts, one shared: 5.51B with the embedding and head
    "inclusionAI--Ling-3.0-Flash": (LING3_FLASH_ACTIVE, None),
}

# Bytes of K/V per token of context at bf16: Ling 3's 7 MLA layers hold the latent (kv_lora_rank + qk_rope_head_dim)
# once for K and V; its 35 KDA layers hold a fixed state per sequence (not per token); the others plain GQA
KV_BYTES_PER_TOKEN: dict[str, int] = {
    "inclusionAI--Ling-3.0-Flash": 7 * (512 + 64) * 2,
    "ibm-granite--granite-docling-258M": 30 * 2 * 3 * 64 * 2,
    "ServiceNow-AI--Apriel-1.5-15b-Thinker": 48 * 2 * 8 * 128 * 2,
    "tencent--HunyuanOCR": 24 * 2 * 8 * 128 * 2,
}

# Ling-3.0-Flash's 124B at bf16 (249 GB) does not fit 8 H100s with room for a cache
SOLVE_CARDS: dict[str, int] = {"inclusionAI--Ling-3.0-Flash": 16}


# ------------------------------------------------------------------ reading rules added this round


def test_hunyuan_ocr_without_its_tower_counts_the_text_model_by_hand() -> None:
    cfg = _load("tencent--HunyuanOCR")
    del cfg["vision_config"]
    assert count(cfg) == HUNYUAN_OCR_TEXT


def test_hunyuan_vl_sizes_its_position_table_from_max_image_size_plus_a_class_row() -> None:
    # HunYuanVLVisionPatchEmbed: (max_image_size / patch_size)^2 + 1 rows; before stop 37 the tower was refused
    cfg = _load("tencent--HunyuanOCR")
    cfg["vision_config"]["max_image_size"] = 1024
    assert count(cfg) == HUNYUAN_OCR - ((2048 // 16) ** 2 - (1024 // 16) ** 2) * 1152


def test_hunyuan_vl_merger_is_two_convolutions_a_linear_two_norms_and_four_vectors() -> None:
    # HunYuanVLVisionPatchMerger: the first kernel is spatial_merge_size; everything else scales with the widths
    cfg = _load("tencent--HunyuanOCR")
    cfg["vision_config"]["spatial_merge_size"] = 3
    assert count(cfg) == HUNYUAN_OCR_TEXT + hunyuan_tower(1152, 27, 4304, 16, 2048, 3, 1024)


def test_layer_group_size_places_a_full_mla_layer_last_in_each_group_of_kda_layers() -> None:
    # Before this round: refused, "kda_lower_bound: -5.0: describes a mixer other than attention"
    kinds = [b.kind for layer in _spec("inclusionAI--Ling-3.0-Flash").layers for b in layer.blocks
             if b.role == "mixer"]
    assert kinds == (["KDA"] * 5 + ["MLA"]) * 7
    assert _total("inclusionAI--Ling-3.0-Flash") == LING3_FLASH


def test_a_kda_layer_with_full_rank_gates_counts_hidden_by_heads_x_head_dim_for_each_gate() -> None:
    kda_block = [b for b in _spec("inclusionAI--Ling-3.0-Flash").layers[0].blocks if b.kind == "KDA"][0]
    assert kda_block.params == kda(2560, 32, 128, 4)


def test_an_mla_with_a_head_wise_output_gate_counts_hidden_by_heads() -> None:
    mla_block = [b for b in _spec("inclusionAI--Ling-3.0-Flash").layers[5].blocks if b.kind == "MLA"][0]
    assert mla_block.params == gated_mla(2560, 32, 512, 128, 64, 128)


# ------------------------------------------------------------------ refused this round: one line each

# HunyuanOCR (refused here until stop 37: round 23's line named vision_config.image_size, a field this tower does not
# use; from round 24 the hunyuan_vl line named what was not modelled) counts to HUNYUAN_OCR
REFUSALS: dict[str, str] = {}
