"""Fifteenth round of families outside the catalog (tests/data/configs_unseen/round15/, SOURCES.md's "Fifteenth round
(stop 35)"): families no earlier round nor the catalog holds (jais, skywork_moe, stablelm_epoch, diffllama, doge,
blip-2; MiniCPM's MoE, Baichuan-2's ALiBi 13B and Mistral-Large-2 of held families; florence2, kosmos-2 and
granite_speech refused) and round 12's Idefics2, refused then. Each counts to the total worked out by hand, tensor by
tensor, from the modeling code (transformers 5.25.0's modeling_diffllama.py, modeling_doge.py, modeling_blip_2.py,
modeling_kosmos2.py, modeling_idefics2.py, read for this round, not installed; the remote modeling_jais.py,
modeling_baichuan.py, modeling_minicpm.py, modeling_skywork_moe.py and modeling_stablelm_epoch.py as recalled),
written before the reader was run on them, and to within 1% of the published total where one is published with that
precision."""
from __future__ import annotations

from hand_counts import UNSEEN, Round, gated, gqa, lin, ln
from test_unseen_configs_round12 import IDEFICS2_CONNECTOR, IDEFICS2_TEXT, IDEFICS2_TOWER

DATA = UNSEEN / "round15"
ROUND = Round(DATA)
_load, _spec, _total = ROUND.load, ROUND.spec, ROUND.total


# ------------------------------------------------------------------ JAIS-13B (remote modeling_jais.py, GPT-2's names)
# JAISBlock: ln_1 / ln_2 LayerNorms (biased); JAISAttention: c_attn (h -> 3h) and c_proj, Conv1D with biases;
# JAISMLP under activation_function swiglu: c_fc and c_fc2 (h -> n_inner) and c_proj (n_inner -> h), all biased;
# ALiBi (position_embedding_type alibi): no wpe; ln_f; lm_head tied to wte
def jais_layer(h: int, inner: int) -> int:
    return (lin(h, 3 * h, bias=True) + lin(h, h, bias=True) + 2 * lin(h, inner, bias=True) + lin(inner, h, bias=True)
            + 2 * ln(h))


JAIS = 84992 * 5120 + 40 * jais_layer(5120, 13653) + ln(5120)


# ------------------------------------------------------------------ Baichuan2-13B (remote modeling_baichuan.py)
# BaichuanLayer: W_pack (h -> 3h, no bias), o_proj, gated MLP, two RMSNorms; ALiBi (no rotary, no position table);
# NormHead: one vocab x hidden weight (untied)
BAICHUAN2_13B = 2 * 125696 * 5120 + 40 * (gqa(5120, 40, 40, 128) + gated(5120, 13696) + 2 * 5120) + 5120


# ------------------------------------------------------------------ MiniCPM-MoE-8x2B (remote modeling_minicpm.py)
# MiniCPMDecoderLayer: Llama's attention (36 heads of 64, no biases), MiniCPMMoE: gate (h -> 8, no bias) and 8
# MiniCPMMLP experts (gated 5760), top-2; two RMSNorms; MiniCPM's tied head (minicpm's family line)
def minicpm_moe_layer(experts: int) -> int:
    return gqa(2304, 36, 36, 64) + experts * gated(2304, 5760) + lin(2304, 8) + 2 * 2304


MINICPM_MOE = 122753 * 2304 + 40 * minicpm_moe_layer(8) + 2304
MINICPM_MOE_ACTIVE = 122753 * 2304 + 40 * minicpm_moe_layer(2) + 2304


# ------------------------------------------------------------------ Skywork-MoE-Base (remote modeling_skywork_moe.py)
# Skywork-13B's layer (4608 wide, 36 heads of 128, no biases) with a Mixtral-style sparse block: gate (h -> 16, no
# bias) and 16 gated experts of 12288, top-2; num_experts is written as a one-entry list [16]; untied head
def skywork_layer(experts: int) -> int:
    return gqa(4608, 36, 36, 128) + experts * gated(4608, 12288) + lin(4608, 16) + 2 * 4608


SKYWORK_MOE = 2 * 65536 * 4608 + 52 * skywork_layer(16) + 4608
SKYWORK_MOE_ACTIVE = 2 * 65536 * 4608 + 52 * skywork_layer(2) + 4608


# ------------------------------------------------------------------ StableLM-Zephyr-3B (remote stablelm_epoch)
# DecoderLayer: q / k / v (bias = use_qkv_bias, false), o_proj, gated MLP; input_layernorm / post_attention_layernorm
# and the final norm are nn.LayerNorm (weight and bias, eps norm_eps); rope_pct 0.25 (no weights); untied
STABLELM_ZEPHYR = 2 * 50304 * 2560 + 32 * (gqa(2560, 32, 32, 80) + gated(2560, 6912) + 2 * ln(2560)) + ln(2560)


# ------------------------------------------------------------------ Mistral-Large-Instruct-2407 (modeling_mistral.py)
MISTRAL_LARGE = 2 * 32768 * 12288 + 88 * (gqa(12288, 96, 8, 128) + gated(12288, 28672) + 2 * 12288) + 12288


# ------------------------------------------------------------------ DiffLlama (modeling_diffllama.py)
# DiffLlamaAttention: Llama's q / k / v / o (attention_bias false) and four learned vectors of head_dim (lambda_q1,
# lambda_k1, lambda_q2, lambda_k2); its groupnorm is an nn.RMSNorm without weights (elementwise_affine false)
DIFFLLAMA = 2 * 32000 * 1024 + 24 * (gqa(1024, 16, 8, 64) + 4 * 64 + gated(1024, 2816) + 2 * 1024) + 1024


# ------------------------------------------------------------------ Doge-160M (modeling_doge.py)
# DogeAttention: q / k / v / o without bias, A (one per K/V head), dt_proj (kv_heads x head_dim -> kv_heads, bias =
# attention_bias false), q_norm / k_norm RMSNorms of head_dim; DogeDecoderLayer: input_layernorm, input_residual (a
# vector of h), post_attention_layernorm, post_attention_residual (h); DogeMLP gated (is_moe false); tied head
def doge_layer(h: int, heads: int, kv: int, inter: int) -> int:
    d = h // heads
    return gqa(h, heads, kv, d) + kv + lin(kv * d, kv) + 2 * d + gated(h, inter) + 4 * h


DOGE = 32768 * 768 + 24 * doge_layer(768, 6, 3, 1536) + 768


# ------------------------------------------------------------------ BLIP-2 OPT-2.7b (modeling_blip_2.py, modeling_opt.py)
# Blip2VisionModel: class_embedding (h), a biased patch Conv2d, a position table of (224 / 14)^2 + 1 rows; per layer
# layer_norm1 / layer_norm2, qkv (h -> 3h, its bias one Parameter of 3h: q_bias, zeros, v_bias), projection (biased),
# fc1 / fc2 (biased); post_layernorm. Q-Former (Blip2QFormerModel: no embeddings of its own): a LayerNorm, 12 layers
# of self-attention (query / key / value / dense, biased, and a LayerNorm), cross-attention on layers 0, 2, ..., 10
# (cross_attention_frequency 2: key / value from encoder_hidden_size 1408), intermediate_query / output_query (biased,
# a LayerNorm); use_qformer_text_input false: no text-branch FFN. query_tokens (32 x 768); language_projection (768 ->
# 2560, biased). OPT-2.7b: biased attention and fc1 / fc2, two LayerNorms a layer, the final one, a learned position
# table of 2048 + 2 rows, tied head
def blip2_vision(h: int, inter: int, layers: int, image: int, patch: int) -> int:
    layer = 2 * ln(h) + lin(h, 3 * h, bias=True) + lin(h, h, bias=True) + lin(h, inter, bias=True) \
        + lin(inter, h, bias=True)
    return h + lin(3 * patch * patch, h, bias=True) + ((image // patch) ** 2 + 1) * h + layers * layer + ln(h)


def qformer(h: int, inter: int, layers: int, every: int, enc: int) -> int:
    attn = 4 * lin(h, h, bias=True) + ln(h)
    cross = lin(h, h, bias=True) + 2 * lin(enc, h, bias=True) + lin(h, h, bias=True) + ln(h)
    ffn = lin(h, inter, bias=True) + lin(inter, h, bias=True) + ln(h)
    return ln(h) + sum(attn + (cross if i % every == 0 else 0) + ffn for i in range(layers))


BLIP2_VISION = blip2_vision(1408, 6144, 39, 224, 14)
BLIP2_QFORMER = 32 * 768 + qformer(768, 3072, 12, 2, 1408) + lin(768, 2560, bias=True)
OPT_2_7B = (50272 * 2560 + 2050 * 2560 + 32 * (4 * lin(2560, 2560, bias=True) + lin(2560, 10240, bias=True)
                                               + lin(10240, 2560, bias=True) + 2 * ln(2560)) + ln(2560))
BLIP2_OPT = OPT_2_7B + BLIP2_VISION + BLIP2_QFORMER


HAND: dict[str, int] = {
    "inceptionai--jais-13b": JAIS,
    "baichuan-inc--Baichuan2-13B-Chat": BAICHUAN2_13B,
    "openbmb--MiniCPM-MoE-8x2B": MINICPM_MOE,
    "Skywork--Skywork-MoE-Base": SKYWORK_MOE,
    "stabilityai--stablelm-zephyr-3b": STABLELM_ZEPHYR,
    "mistralai--Mistral-Large-Instruct-2407": MISTRAL_LARGE,
    "kajuma--DiffLlama-0.3B-handcut": DIFFLLAMA,
    "SmallDoge--Doge-160M": DOGE,
    "Salesforce--blip2-opt-2.7b": BLIP2_OPT,
    # round 12's hand count (test_unseen_configs_round12.py): Mistral-7B's text model, the SigLIP-like tower at 980 / 14,
    # the modality projection (a gated MLP through the text intermediate_size) and the perceiver resampler
    "HuggingFaceM4--idefics2-8b": IDEFICS2_TEXT + IDEFICS2_TOWER + IDEFICS2_CONNECTOR,
}
