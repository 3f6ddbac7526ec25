"""Twelfth round of families outside the catalog (tests/data/configs_unseen/round12/, SOURCES.md's "Twelfth round
(stop 35)"): families no earlier round nor the catalog holds (qwen v1, persimmon, fuyu, xglm, biogpt, internlm3,
glm, video_llava, smolvlm, idefics2), chosen where fields, class defaults and towers are read least. Each counts to
the total worked out by hand, tensor by tensor, from the modeling code (transformers 5.25.0's
modeling_persimmon.py, modeling_fuyu.py, modeling_xglm.py, modeling_biogpt.py, modular_internlm3.py,
modeling_glm.py, modeling_video_llava.py, modeling_clip.py, modeling_smolvlm.py and modeling_idefics2.py, read for
this round; Qwen-7B's remote modeling_qwen.py as recalled), written before the reader was run on them, and to within
1% of the published total where one is published with that precision. One test per reading rule follows the table;
the configs refused this round are in configs_unseen/refused/ and their lines are checked here."""
from __future__ import annotations

from hand_counts import UNSEEN, Round, gated, gqa, lin, ln

DATA = UNSEEN / "round12"
ROUND = Round(DATA)
_load, _spec, _total = ROUND.load, ROUND.spec, ROUND.total


def clip_tower(h: int, inter: int, layers: int, image: int, patch: int) -> int:
    """CLIPVisionModel (modeling_clip.py): class_embedding (h), a bias-free patch Conv2d 3 x patch^2 -> h, a learned
    position table of (image / patch)^2 + 1 rows, pre_layrnorm, per layer two LayerNorms, biased q / k / v /
    out_proj and fc1 / fc2, post_layernorm"""
    layer = 2 * ln(h) + 4 * lin(h, h, bias=True) + lin(h, inter, bias=True) + lin(inter, h, bias=True)
    return h + 3 * patch * patch * h + ((image // patch) ** 2 + 1) * h + ln(h) + layers * layer + ln(h)


def siglip_like_tower(h: int, inter: int, layers: int, image: int, patch: int) -> int:
    """Idefics2 / SmolVLM's vision transformer (modeling_idefics2.py, modeling_smolvlm.py): a biased patch Conv2d,
    a learned table of (image / patch)^2 rows, per layer two LayerNorms, biased q / k / v / out_proj, fc1 / fc2,
    post_layernorm; no class token, no pooling head (Idefics2MultiheadAttentionPoolingHead is defined, not built)"""
    layer = 2 * ln(h) + 4 * lin(h, h, bias=True) + lin(h, inter, bias=True) + lin(inter, h, bias=True)
    return lin(3 * patch * patch, h, bias=True) + (image // patch) ** 2 * h + layers * layer + ln(h)


def fairseq_layer(h: int, ffn: int) -> int:
    """XGLM / BioGPT's decoder layer: biased q / k / v / out_proj, fc1 / fc2 (not gated), two LayerNorms"""
    return 4 * lin(h, h, bias=True) + lin(h, ffn, bias=True) + lin(ffn, h, bias=True) + 2 * ln(h)


# ------------------------------------------------------------------ Qwen-7B (qwen, remote modeling_qwen.py)
# QWenBlock: ln_1 / ln_2 RMSNorms; QWenAttention's c_attn one fused q / k / v of 3 x heads x kv_channels WITH a bias
# (always), c_proj without (no_bias); QWenMLP: w1 / w2 of intermediate_size // 2 (ff_dim_in: the config's
# intermediate_size counts both halves of the SwiGLU) and c_proj back, no biases; wte and lm_head untied; ln_f
QWEN_LAYER = (lin(4096, 3 * 32 * 128, bias=True) + lin(32 * 128, 4096) + 2 * lin(4096, 22016 // 2)
              + lin(22016 // 2, 4096) + 2 * 4096)

# ------------------------------------------------------------------ persimmon-8b-base (modeling_persimmon.py)
# PersimmonAttention: query_key_value (h -> 3h, biased), dense (biased), q_layernorm / k_layernorm: LayerNorms of
# head_dim (64) with weight and bias; PersimmonMLP: dense_h_to_4h / dense_4h_to_h, biased, relu2, not gated; two
# LayerNorms a layer and the final one, all biased; untied
PERSIMMON_LAYER = (lin(4096, 3 * 4096, bias=True) + lin(4096, 4096, bias=True) + 2 * ln(4096 // 64)
                   + lin(4096, 16384, bias=True) + lin(16384, 4096, bias=True) + 2 * ln(4096))
PERSIMMON = 2 * 262144 * 4096 + 36 * PERSIMMON_LAYER + ln(4096)

# ------------------------------------------------------------------ fuyu-8b (modeling_fuyu.py)
# FuyuModel: Persimmon's language model and vision_embed_tokens, one biased nn.Linear of patch_size^2 x num_channels
# (30 x 30 x 3 = 2700) -> hidden: no vision tower at all
FUYU_PATCHES = lin(30 * 30 * 3, 4096, bias=True)

# ------------------------------------------------------------------ Video-LLaVA-7B-hf (modeling_video_llava.py)
# VideoLlavaModel builds TWO CLIP towers from the one vision_config (video_tower and image_tower, separate weights),
# one projector (linear_1 / linear_2, biased); the text_config leaves the sizes to LlamaConfig()'s defaults (4096,
# 11008, 32 layers, 32 heads); vocab 32064, untied. The vision_config writes no image_size: CLIPVisionConfig()'s 224
VIDEO_LLAVA_TOWER = clip_tower(1024, 4096, 24, 224, 14)
VIDEO_LLAVA_PROJECTOR = lin(1024, 4096, bias=True) + lin(4096, 4096, bias=True)
VIDEO_LLAVA_TEXT = 2 * 32064 * 4096 + 32 * (gqa(4096, 32, 32, 128) + gated(4096, 11008) + 2 * 4096) + 4096

# ------------------------------------------------------------------ SmolVLM2-2.2B-Instruct (modeling_smolvlm.py)
# SmolVLMConnector: pixel shuffle by scale_factor 3, one bias-free linear 1152 x 9 -> 2048; the tower at 384 / 14
SMOLVLM2_TOWER = siglip_like_tower(1152, 4304, 27, 384, 14)
SMOLVLM2_PROJECTOR = lin(1152 * 9, 2048)
SMOLVLM2_TEXT = 2 * 49280 * 2048 + 24 * (gqa(2048, 32, 32, 64) + gated(2048, 8192) + 2 * 2048) + 2048

# ------------------------------------------------------------------ idefics2-8b (modeling_idefics2.py)
# Idefics2Connector: modality_projection, a gated MLP vision hidden -> text intermediate_size -> text hidden (no
# biases), then the perceiver resampler: 64 latents x text hidden, 3 layers of two input RMSNorms, GQA cross-attention
# of 16 heads / 4 K/V heads x 96 (no biases), a post-attention RMSNorm and a gated MLP of 4 x hidden, and a final
# RMSNorm (the perceiver's hidden_size is the text's: Idefics2Config.__post_init__). Text: MistralConfig()'s sizes
# (4096, 14336, 32 layers, 32 / 8 heads) with vocab 32003, untied. Tower at 980 / 14 (4900 positions)
IDEFICS2_TOWER = siglip_like_tower(1152, 4304, 27, 980, 14)
IDEFICS2_PERCEIVER_LAYER = 3 * 4096 + gqa(4096, 16, 4, 96) + gated(4096, 4 * 4096)
IDEFICS2_CONNECTOR = (2 * lin(1152, 14336) + lin(14336, 4096)) + 64 * 4096 + 3 * IDEFICS2_PERCEIVER_LAYER + 4096
IDEFICS2_TEXT = 2 * 32003 * 4096 + 32 * (gqa(4096, 32, 8, 128) + gated(4096, 14336) + 2 * 4096) + 4096

HAND: dict[str, int] = {
    "Qwen--Qwen-7B": 2 * 151936 * 4096 + 32 * QWEN_LAYER + 4096,
    "adept--persimmon-8b-base": PERSIMMON,
    "adept--fuyu-8b": PERSIMMON + FUYU_PATCHES,
    # XGLMModel: a scaled token embedding, SINUSOIDAL positions (a non-persistent buffer: no parameters), 24
    # fairseq layers, the final LayerNorm; lm_head tied (XGLMConfig's default)
    "facebook--xglm-564M": 256008 * 1024 + 24 * fairseq_layer(1024, 4096) + ln(1024),
    # BioGptModel: a scaled token embedding, a LEARNED position table of max_position_embeddings + 2 rows
    # (BioGptLearnedPositionalEmbedding's offset), 24 fairseq layers, the final LayerNorm; output_projection tied
    "microsoft--biogpt": 42384 * 1024 + (1024 + 2) * 1024 + 24 * fairseq_layer(1024, 4096) + ln(1024),
    # InternLM3 (Llama's layer): 32 / 2 heads x 128, a gated 10240 MLP, no biases (bias / qkv_bias false); untied
    "internlm--internlm3-8b-instruct": 2 * 128512 * 4096
    + 48 * (gqa(4096, 32, 2, 128) + gated(4096, 10240) + 2 * 4096) + 4096,
    # GlmForCausalLM: q / k / v biased (attention_bias), o_proj not; gate_up_proj fused (2 x 13696), down_proj; two
    # RMSNorms a layer (GLM-4-0414's four are glm4's); untied
    "THUDM--glm-4-9b-chat-hf": 2 * 151552 * 4096
    + 40 * (gqa(4096, 32, 2, 128, qkv_bias=True) + gated(4096, 13696) + 2 * 4096) + 4096,
    "LanguageBind--Video-LLaVA-7B-hf": VIDEO_LLAVA_TEXT + 2 * VIDEO_LLAVA_TOWER + VIDEO_LLAVA_PROJECTOR,
    "HuggingFaceTB--SmolVLM2-2.2B-Instruct": SMOLVLM2_TEXT + SMOLVLM2_TOWER + SMOLVLM2_PROJECTOR,
    "HuggingFaceM4--idefics2-8b": IDEFICS2_TEXT + IDEFICS2_TOWER + IDEFICS2_CONNECTOR,
}

# Published totals precise enough for a 1% check (SOURCES.md names each)
PUBLISHED: dict[str, float] = {
    "facebook--xglm-564M": 564e6,  # the name
    "microsoft--biogpt": 347e6,  # the BioGPT paper: "347M parameters"
}
