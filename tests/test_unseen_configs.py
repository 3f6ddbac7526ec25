"""Configs of families outside the catalog (tests/data/configs_unseen/, SOURCES.md there): each counts to the total
worked out by hand from the architecture's modeling code, tensor by tensor, and to within 1% of the published
total where one is published with that precision. One test per reading rule follows the table."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from hand_counts import Round, gated, lin, ln  # noqa: F401
from solver.errors import InputError
from solver.estimate.params import count_params
from solver.specs.config.encoders import read_encoders
from solver.specs.layers import DenseFFN
from solver.specs.config.read import parse_model_config

DATA = Path(__file__).parent / "data" / "configs_unseen"
ROUND = Round(DATA)
_load, _spec, _total = ROUND.load, ROUND.spec, ROUND.total


# Mllama's vision tower (Llama-3.2-11B and 90B-Vision share it): the patch conv without bias, class embedding,
# position embedding and its tiled copy (9 aspect ratios x 4 tiles), the pre / post tile embeddings with their
# gates, layernorm_pre / layernorm_post, 32 local layers (q / k / v / o 1280 x 1280 without bias, fc1 1280 -> 5120
# and fc2 with bias, two LayerNorms) and 8 global layers (the same, with gate_attn and gate_ffn)
MLLAMA_VISION_TOWER = (3 * 14 * 14 * 1280 + 1280 + (1 + 1601 * 1280 + 9 * 4 * 1601 * 1280) + 2 * (9 * 4 * 1280 + 1)
                       + 2 * ln(1280)
                       + 32 * (4 * lin(1280, 1280) + lin(1280, 5120, True) + lin(5120, 1280, True) + 2 * ln(1280))
                       + 8 * (4 * lin(1280, 1280) + lin(1280, 5120, True) + lin(5120, 1280, True) + 2 * ln(1280) + 2))


def mllama(h: int, inter: int, self_layers: int, cross_layers: int) -> int:
    """A Llama-3.2-Vision model (the layout HAND's comment gives), h wide with KV heads of 1024 in all: the
    embedding with its 8 extra rows, the head, self- and cross-attention layers (q / k norms of 128 and two
    one-value gates), the final norm, the vision tower and the projector 7680 -> h with bias."""
    attn = lin(h, h) + 2 * lin(h, 1024) + lin(h, h)
    return ((128256 + 8) * h + 128256 * h + self_layers * (attn + gated(h, inter) + 2 * h)
            + cross_layers * (attn + 2 * 128 + gated(h, inter) + 2 * h + 2) + h + MLLAMA_VISION_TOWER
            + lin(7680, h, True))


# CLIP ViT-L/14 at 336 px (CLIPVisionModel, LLaVA-1.5 and LLaVA-NeXT's tower): class_embedding 1024, patch Conv2d 3 x 14
# x 14 -> 1024 without bias, position_embedding (24^2 + 1) x 1024, pre_layrnorm and post_layernorm, 24 layers of q /
# k / v / out_proj with bias, fc1 1024 -> 4096 and fc2 with bias, two LayerNorms (every layer is in the checkpoint,
# though vision_feature_layer -2 leaves the last unused)
CLIP_L_336 = (1024 + 3 * 14 * 14 * 1024 + 577 * 1024 + 2 * ln(1024)
              + 24 * (4 * lin(1024, 1024, True) + lin(1024, 4096, True) + lin(4096, 1024, True) + 2 * ln(1024)))

# Hand counts: the sum of every tensor in the checkpoint, as the modeling code builds it (comments name them).
# Embedding tables are V x h; "tied" means the head reuses the embedding.
HAND: dict[str, int] = {
    # GPT-2: wte + wpe (1024 x 768); per block ln_1, c_attn (h -> 3h, bias), c_proj (bias), ln_2, c_fc (h -> 4h,
    # bias), c_proj (bias); ln_f; head tied
    "openai-community--gpt2": 50257 * 768 + 1024 * 768
    + 12 * (ln(768) + lin(768, 3 * 768, True) + lin(768, 768, True) + ln(768) + lin(768, 3072, True)
            + lin(3072, 768, True)) + ln(768),
    # StarCoderBase (GPT-BigCode, multi-query): c_attn h -> h + 2 x 128 (one K/V head), biases everywhere, wpe
    # 8192 x h, tied
    "bigcode--starcoderbase": 49152 * 6144 + 8192 * 6144
    + 40 * (ln(6144) + lin(6144, 6144 + 2 * 128, True) + lin(6144, 6144, True) + ln(6144)
            + lin(6144, 24576, True) + lin(24576, 6144, True)) + ln(6144),
    # GPT-J-6B: one ln_1 (attention and MLP in parallel), q/k/v/out without bias, fc_in / fc_out with bias,
    # ln_f, untied lm_head with a bias
    "EleutherAI--gpt-j-6b": 50400 * 4096
    + 28 * (ln(4096) + 4 * lin(4096, 4096) + lin(4096, 16384, True) + lin(16384, 4096, True))
    + ln(4096) + lin(4096, 50400, True),
    # GPT-Neo-1.3B: wte + wpe (2048 x h); q/k/v without bias, out_proj with; c_fc / c_proj with; ln_1, ln_2; tied
    "EleutherAI--gpt-neo-1.3B": 50257 * 2048 + 2048 * 2048
    + 24 * (ln(2048) + 3 * lin(2048, 2048) + lin(2048, 2048, True) + ln(2048) + lin(2048, 8192, True)
            + lin(8192, 2048, True)) + ln(2048),
    # CodeGen-350M: like GPT-J (qkv_proj fused, no bias), untied head with bias
    "Salesforce--codegen-350M-mono": 51200 * 1024
    + 20 * (ln(1024) + lin(1024, 3 * 1024) + lin(1024, 1024) + lin(1024, 4096, True) + lin(4096, 1024, True))
    + ln(1024) + lin(1024, 51200, True),
    # Pythia-6.9B (GPT-NeoX): input and post-attention LayerNorms, query_key_value and dense with bias,
    # dense_h_to_4h / dense_4h_to_h with bias, final LayerNorm, untied embed_out; rotary has no weights
    "EleutherAI--pythia-6.9b": 2 * 50432 * 4096
    + 32 * (2 * ln(4096) + lin(4096, 3 * 4096, True) + lin(4096, 4096, True) + lin(4096, 16384, True)
            + lin(16384, 4096, True)) + ln(4096),
    # Falcon-7B: multi-query query_key_value h -> h + 2 x 64, dense, no linear biases; parallel block with one
    # input_layernorm; MLP 4h non-gated; tied
    "tiiuae--falcon-7b": 65024 * 4544
    + 32 * (ln(4544) + lin(4544, 4544 + 2 * 64) + lin(4544, 4544) + 2 * 4544 * 18176) + ln(4544),
    # Falcon-40B (new_decoder_architecture): ln_attn and ln_mlp, query_key_value h -> (128 + 2 x 8) x 64
    "tiiuae--falcon-40b": 65024 * 8192
    + 60 * (2 * ln(8192) + lin(8192, (128 + 16) * 64) + lin(8192, 8192) + 2 * 8192 * 32768) + ln(8192),
    # OPT-125m: embed_tokens, embed_positions (2048 + 2 offset rows); q/k/v/out with bias, fc1/fc2 with bias,
    # self_attn_layer_norm + final_layer_norm per layer, a final LayerNorm; tied
    "facebook--opt-125m": 50272 * 768 + 2050 * 768
    + 12 * (4 * lin(768, 768, True) + lin(768, 3072, True) + lin(3072, 768, True) + 2 * ln(768)) + ln(768),
    # BLOOM-176B: word_embeddings + word_embeddings_layernorm; per block input LN, query_key_value (bias), dense
    # (bias), post-attention LN, 4h MLP with biases; ln_f; tied; ALiBi has no weights
    "bigscience--bloom": 250880 * 14336 + ln(14336)
    + 70 * (2 * ln(14336) + lin(14336, 3 * 14336, True) + lin(14336, 14336, True) + lin(14336, 4 * 14336, True)
            + lin(4 * 14336, 14336, True)) + ln(14336),
    # Phi-2: q/k/v/dense with bias, fc1/fc2 with bias, one input_layernorm (parallel), final_layernorm,
    # untied lm_head with a bias
    "microsoft--phi-2": 51200 * 2560
    + 32 * (4 * lin(2560, 2560, True) + lin(2560, 10240, True) + lin(10240, 2560, True) + ln(2560))
    + ln(2560) + lin(2560, 51200, True),
    # Phi-4 (phi3): fused qkv_proj h -> (40 + 2 x 10) x 128, o_proj, fused gate_up_proj h -> 2 x 17920, down_proj;
    # two RMSNorms; untied
    "microsoft--phi-4": 2 * 100352 * 5120
    + 40 * (lin(5120, 60 * 128) + lin(5120, 5120) + gated(5120, 17920) + 2 * 5120) + 5120,
    # StarCoder2-15B: use_bias on q/k/v/o and c_fc/c_proj, LayerNorms with bias, GQA 48/4, untied
    "bigcode--starcoder2-15b": 2 * 49152 * 6144
    + 40 * (lin(6144, 6144, True) + 2 * lin(6144, 512, True) + lin(6144, 6144, True) + lin(6144, 24576, True)
            + lin(24576, 6144, True) + 2 * ln(6144)) + ln(6144),
    # Gemma-7B: head_dim 256 x 16 heads (4096 wide), gated GELU MLP, two RMSNorms, tied
    "google--gemma-7b": 256000 * 3072
    + 28 * (lin(3072, 4096) + 2 * lin(3072, 4096) + lin(4096, 3072) + gated(3072, 24576) + 2 * 3072) + 3072,
    # Gemma-2-9B: 16 heads / 8 KV x 256, four RMSNorms per layer, tied
    "google--gemma-2-9b": 256000 * 3584
    + 42 * (lin(3584, 4096) + 2 * lin(3584, 2048) + lin(4096, 3584) + gated(3584, 14336) + 4 * 3584) + 3584,
    # Command-R+ (cohere): one input_layernorm (weight only), q/k norms of (heads x head_dim) and
    # (kv_heads x head_dim) weights, tied
    "CohereForAI--c4ai-command-r-plus": 256000 * 12288
    + 64 * (12288 + lin(12288, 12288) + 2 * lin(12288, 1024) + lin(12288, 12288) + (96 + 8) * 128
            + gated(12288, 33792)) + 12288,
    # Command-A (cohere2): as Command-R without q/k norms
    "CohereForAI--c4ai-command-a-03-2025": 256000 * 12288
    + 64 * (12288 + lin(12288, 12288) + 2 * lin(12288, 1024) + lin(12288, 12288) + gated(12288, 36864)) + 12288,
    # OLMo-7B-0724: non-parametric LayerNorms (no weights at all), untied
    "allenai--OLMo-7B-0724-hf": 2 * 50304 * 4096 + 32 * (4 * lin(4096, 4096) + gated(4096, 11008)),
    # OLMo-2-7B: q_norm over 32 x 128, k_norm over 32 x 128, post-attention and post-feedforward RMSNorms
    "allenai--OLMo-2-1124-7B": 2 * 100352 * 4096
    + 32 * (4 * lin(4096, 4096) + 2 * 4096 + gated(4096, 11008) + 2 * 4096) + 4096,
    # Granite-3.1-8B: a Llama with multipliers (no weights), tied
    "ibm-granite--granite-3.1-8b-instruct": 49155 * 4096
    + 40 * (2 * lin(4096, 4096) + 2 * lin(4096, 1024) + gated(4096, 12800) + 2 * 4096) + 4096,
    # Qwen2.5-72B: q/k/v with bias, o_proj without, untied
    "Qwen--Qwen2.5-72B-Instruct": 2 * 152064 * 8192
    + 80 * (lin(8192, 8192, True) + 2 * lin(8192, 1024, True) + lin(8192, 8192) + gated(8192, 29568)
            + 2 * 8192) + 8192,
    # GLM-4-9B (chatglm): query_key_value h -> 4096 + 2 x 2 x 128 with bias (add_qkv_bias), dense without,
    # dense_h_to_4h h -> 2 x 13696, dense_4h_to_h; two RMSNorms; final_layernorm; separate output_layer
    "THUDM--glm-4-9b-chat": 2 * 151552 * 4096
    + 40 * (lin(4096, 4096 + 512, True) + lin(4096, 4096) + gated(4096, 13696) + 2 * 4096) + 4096,
    # GLM-4-9B-0414 (glm4): the same weights plus post_self_attn_layernorm and post_mlp_layernorm
    "THUDM--GLM-4-9B-0414": 2 * 151552 * 4096
    + 40 * (lin(4096, 4096, True) + 2 * lin(4096, 256, True) + lin(4096, 4096) + gated(4096, 13696) + 4 * 4096)
    + 4096,
    # ERNIE-4.5-21B-A3B: layer 0 dense (12288), layers 1..27 MoE: 64 experts x 1536, 2 shared (one 3072-wide MLP),
    # gate 64 x h, e_score_correction_bias 64 (moe_use_aux_free); GQA 20/4 x 128; tied
    "baidu--ERNIE-4.5-21B-A3B-PT": 103424 * 2560
    + 28 * (lin(2560, 2560) + 2 * lin(2560, 512) + lin(2560, 2560) + 2 * 2560)
    + gated(2560, 12288) + 27 * (64 * gated(2560, 1536) + gated(2560, 3072) + 64 * 2560 + 64) + 2560,
    # Ling-lite (bailing_moe): fused query_key_value h -> (16 + 2 x 4) x 128, dense; every layer MoE: 64 experts x
    # 1408, 2 shared (2816 wide), gate; untied
    "inclusionAI--Ling-lite": 2 * 126464 * 2048
    + 28 * (lin(2048, 24 * 128) + lin(2048, 2048) + 64 * gated(2048, 1408) + gated(2048, 2816) + 64 * 2048
            + 2 * 2048) + 2048,
    # dots.llm1: MHA 32 x 128 with q/k RMSNorms of head_dim; layer 0 dense 10944; 61 MoE layers: 128 experts x
    # 1408, 2 shared (2816), gate + e_score_correction_bias; untied
    "rednote-hilab--dots.llm1.inst": 2 * 152064 * 4096
    + 62 * (4 * lin(4096, 4096) + 2 * 128 + 2 * 4096) + gated(4096, 10944)
    + 61 * (128 * gated(4096, 1408) + gated(4096, 2816) + 128 * 4096 + 128) + 4096,
    # Phi-3.5-MoE: q/k/v/o with bias, 16 experts x 6400, router, LayerNorms with bias, lm_head with a bias
    "microsoft--Phi-3.5-MoE-instruct": 32064 * 4096
    + 32 * (2 * lin(4096, 4096, True) + 2 * lin(4096, 1024, True) + 16 * gated(4096, 6400) + 16 * 4096
            + 2 * ln(4096)) + ln(4096) + lin(4096, 32064, True),
    # Mamba-2.8B: in_proj h -> 2 x 5120, conv1d 5120 x 4 + bias, x_proj 5120 -> 160 + 2 x 16, dt_proj 160 -> 5120
    # + bias, A_log 5120 x 16, D 5120, out_proj, one RMSNorm per layer; norm_f; tied
    "state-spaces--mamba-2.8b-hf": 50280 * 2560
    + 64 * (lin(2560, 10240) + 5120 * 4 + 5120 + lin(5120, 192) + lin(160, 5120, True) + 5120 * 16 + 5120
            + lin(5120, 2560) + 2560) + 2560,
    # Mamba-Codestral-7B (Mamba-2): in_proj h -> 2 x 8192 + 2 x 8 x 128 + 128 heads, conv1d over 8192 + 2048
    # channels (kernel 4, bias), dt_bias / A_log / D per head, gated RMSNorm 8192, out_proj, one norm per layer;
    # untied
    "mistralai--Mamba-Codestral-7B-v0.1": 2 * 32768 * 4096
    + 64 * (lin(4096, 16384 + 2048 + 128) + 10240 * 4 + 10240 + 3 * 128 + 8192 + lin(8192, 4096) + 4096) + 4096,
    # InternLM2.5-7B: fused wqkv h -> (32 + 2 x 8) x 128, wo, w1/w3/w2 (bias: false), untied
    "internlm--internlm2_5-7b-chat": 2 * 92544 * 4096
    + 32 * (lin(4096, 48 * 128) + lin(4096, 4096) + gated(4096, 14336) + 2 * 4096) + 4096,
    # MiniCPM-2B: a Llama with muP scales (no weights), tied
    "openbmb--MiniCPM-2B-sft-bf16": 122753 * 2304 + 40 * (4 * lin(2304, 2304) + gated(2304, 5760) + 2 * 2304) + 2304,
    # ---- second round: 2025-2026 families
    # SmolLM3-3B: a Llama (NoPE in every 4th layer sizes nothing), GQA 16/4 x 128, tied
    "HuggingFaceTB--SmolLM3-3B": 128256 * 2048
    + 36 * (2 * lin(2048, 2048) + 2 * lin(2048, 512) + gated(2048, 11008) + 2 * 2048) + 2048,
    # DeepSeek-V2-Lite: MLA without q_lora (q_proj h -> 16 x (128 + 64)), kv_a_proj_with_mqa h -> 512 + 64,
    # kv_a_layernorm 512, kv_b_proj 512 -> 16 x (128 + 128), o_proj 16 x 128 -> h; layer 0 dense 10944; 26 MoE
    # layers: 64 experts x 1408, 2 shared (2816), gate (greedy top-k: no correction bias); untied
    "deepseek-ai--DeepSeek-V2-Lite": 2 * 102400 * 2048
    + 27 * (lin(2048, 16 * 192) + lin(2048, 512 + 64) + 512 + lin(512, 16 * 256) + lin(16 * 128, 2048) + 2 * 2048)
    + gated(2048, 10944) + 26 * (64 * gated(2048, 1408) + gated(2048, 2816) + 64 * 2048) + 2048,
    # Seed-OSS-36B: q / k / v with bias (attention_bias), o_proj without (attention_out_bias), 80 / 8 x 128, untied
    "ByteDance-Seed--Seed-OSS-36B-Instruct": 2 * 155136 * 5120
    + 64 * (lin(5120, 10240, True) + 2 * lin(5120, 1024, True) + lin(10240, 5120) + gated(5120, 27648) + 2 * 5120)
    + 5120,
    # Apertus-8B: q_norm / k_norm of head_dim, non-gated MLP up_proj / down_proj with xIELU (alpha_p, alpha_n: two
    # learned scalars per layer; beta and eps are buffers), attention_layernorm + feedforward_layernorm, untied
    "swiss-ai--Apertus-8B-2509": 2 * 131072 * 4096
    + 32 * (2 * lin(4096, 4096) + 2 * lin(4096, 1024) + 2 * 128 + 2 * 4096 * 21504 + 2 + 2 * 4096) + 4096,
    # AFM-4.5B (arcee): non-gated ReLU^2 MLP (up, down), GQA 20/4 x 128, untied
    "arcee-ai--AFM-4.5B": 2 * 128004 * 2560
    + 36 * (2 * lin(2560, 2560) + 2 * lin(2560, 512) + 2 * 2560 * 18432 + 2 * 2560) + 2560,
    # Falcon-Mamba-7B (Mamba-1): in_proj h -> 2 x 8192, conv1d 8192 x 4 + bias, x_proj 8192 -> 256 + 2 x 16,
    # dt_proj 256 -> 8192 + bias, A_log 8192 x 16, D 8192, out_proj; its RMSNorms on B / C / dt have no weights;
    # one norm per layer, norm_f; untied
    "tiiuae--falcon-mamba-7b": 2 * 65024 * 4096
    + 64 * (lin(4096, 16384) + 8192 * 4 + 8192 + lin(8192, 256 + 32) + lin(256, 8192, True) + 8192 * 16 + 8192
            + lin(8192, 4096) + 4096) + 4096,
    # LFM2-1.2B: 10 conv layers (in_proj h -> 3h, depthwise conv h x 3, out_proj; conv_bias false), 6 attention
    # layers (32 / 8 x 64, q_layernorm / k_layernorm of head_dim); every layer a SwiGLU w1 / w3 / w2 of
    # int(2 x 12288 / 3) = 8192 (block_auto_adjust_ff_dim, multiplier 1.0, multiple of 256), operator_norm +
    # ffn_norm; the final norm (embedding_norm); tied (tie_embedding)
    "LiquidAI--LFM2-1.2B": 65536 * 2048
    + 10 * (lin(2048, 3 * 2048) + 2048 * 3 + lin(2048, 2048))
    + 6 * (2 * lin(2048, 2048) + 2 * lin(2048, 512) + 2 * 64)
    + 16 * (gated(2048, 8192) + 2 * 2048) + 2048,
    # Llama-4-Maverick (text): MoE in every other layer (interleave_moe_layer_step 2: layers 1, 3, ..., 47): 128
    # experts x 8192 + one shared 8192 + router; the other 24 layers a dense 16384 MLP; q / k L2 norms have no
    # weights; untied
    "meta-llama--Llama-4-Maverick-17B-128E-Instruct": 2 * 202048 * 5120
    + 48 * (2 * lin(5120, 5120) + 2 * lin(5120, 1024) + 2 * 5120) + 24 * gated(5120, 16384)
    + 24 * (128 * gated(5120, 8192) + gated(5120, 8192) + 128 * 5120) + 5120,
    # Qwen2.5-VL-7B: the Qwen2-7B text model (q / k / v bias, untied) and the vision tower: 32 blocks of norm1 /
    # norm2 (RMSNorm 1280), qkv 1280 -> 3840 and proj with bias, gated SiLU MLP gate / up 1280 -> 3420 and down with
    # bias; patch_embed Conv3d 3 x 2 x 14 x 14 -> 1280 without bias; merger ln_q (RMSNorm 1280), mlp 5120 -> 5120 ->
    # 3584 with biases
    "Qwen--Qwen2.5-VL-7B-Instruct": 2 * 152064 * 3584
    + 28 * (lin(3584, 3584, True) + 2 * lin(3584, 512, True) + lin(3584, 3584) + gated(3584, 18944) + 2 * 3584)
    + 3584
    + 32 * (2 * 1280 + lin(1280, 3840, True) + lin(1280, 1280, True) + 2 * lin(1280, 3420, True)
            + lin(3420, 1280, True)) + 3 * 2 * 14 * 14 * 1280 + 1280 + lin(5120, 5120, True) + lin(5120, 3584, True),
    # Qwen3-VL-8B: the Qwen3-8B-like text model (q_norm / k_norm of head_dim, untied) and the vision tower: 27
    # blocks of LayerNorms norm1 / norm2 (weight + bias), qkv and proj with bias, linear_fc1 1152 -> 4304 and
    # linear_fc2 with bias (GELU, not gated); patch_embed Conv3d 3 x 2 x 16 x 16 -> 1152 with bias; pos_embed
    # 2304 x 1152; merger LayerNorm(1152), 4608 -> 4608 -> 4096 with biases; three deepstack mergers
    # LayerNorm(4608), 4608 -> 4608 -> 4096 with biases
    "Qwen--Qwen3-VL-8B-Instruct": 2 * 151936 * 4096
    + 36 * (2 * lin(4096, 4096) + 2 * lin(4096, 1024) + 2 * 128 + gated(4096, 12288) + 2 * 4096) + 4096
    + 27 * (2 * ln(1152) + lin(1152, 3456, True) + lin(1152, 1152, True) + lin(1152, 4304, True)
            + lin(4304, 1152, True)) + 3 * 2 * 16 * 16 * 1152 + 1152 + 2304 * 1152
    + ln(1152) + lin(4608, 4608, True) + lin(4608, 4096, True)
    + 3 * (ln(4608) + lin(4608, 4608, True) + lin(4608, 4096, True)),
    # Hunyuan-Large (use_cla, cla_share_factor 2): head_dim 6400 / 80 = 80; layers 0, 2, ..., 62 have q_proj,
    # k_proj / v_proj (8 x 80 each), o_proj, query_layernorm and key_layernorm (80 each); layers 1, 3, ..., 63
    # attend with the previous layer's K/V: q_proj, o_proj and query_layernorm only. Every layer: 16 experts of
    # gate / up / down x 18304, one shared MLP 18304 wide (use_mixed_mlp_moe, num_shared_expert 1), the gate's
    # wg 6400 -> 16 without bias, two RMSNorms; the final norm; untied head
    "tencent--Tencent-Hunyuan-Large": 2 * 128512 * 6400
    + 32 * (lin(6400, 6400) + 2 * lin(6400, 640) + lin(6400, 6400) + 2 * 80)
    + 32 * (lin(6400, 6400) + lin(6400, 6400) + 80)
    + 64 * (16 * gated(6400, 18304) + gated(6400, 18304) + lin(6400, 16) + 2 * 6400) + 6400,
    # Llama-3.2-11B-Vision: the text model (MllamaTextModel: embed_tokens of vocab_size + 8 rows, an untied
    # 128256-row head): 32 self-attention layers (q / k / v / o, 32 / 8 x 128, SwiGLU 14336, two RMSNorms) and 8
    # cross-attention layers (3, 8, ..., 38: the same q / k / v / o, q_norm and k_norm of 128, the MLP, two
    # RMSNorms, cross_attn_attn_gate and cross_attn_mlp_gate of one value each); the final norm. The vision tower
    # (MllamaVisionModel): patch Conv2d 3 x 14 x 14 -> 1280 without bias, class_embedding 1280, the gated
    # position embedding (gate, 1601 x 1280 table, tile_embedding (8 + 1) x 4 x 1601 x 1280), pre- and post-tile
    # embeddings ((8 + 1) x 4 x 1280 and a gate each), layernorm_pre / layernorm_post, 32 local layers (q / k /
    # v / o 1280 x 1280 without bias, fc1 1280 -> 5120 and fc2 with bias, two LayerNorms) and 8 global layers
    # (the same, gate_attn and gate_ffn); the multi_modal_projector 7680 -> 4096 with bias
    "meta-llama--Llama-3.2-11B-Vision-Instruct": mllama(4096, 14336, 32, 8),
    # Llama-3.2-90B-Vision: the same layout at 8192 wide, 100 layers of which 20 cross-attention (3, 8, ..., 98),
    # 64 / 8 heads x 128, SwiGLU 28672; the same vision tower; the projector 7680 -> 8192 with bias
    "meta-llama--Llama-3.2-90B-Vision-Instruct": mllama(8192, 28672, 80, 20),
    # ---- fourth round: multimodal wrappers
    # LLaVA-1.5-7B: the Vicuna-7B text model (LlamaConfig defaults where text_config leaves them out: 4096 wide, 32
    # layers of 32 heads, SwiGLU 11008; vocab 32064, untied), the CLIP tower, the multi_modal_projector linear_1 1024 ->
    # 4096 and linear_2 4096 -> 4096 with biases
    "llava-hf--llava-1.5-7b-hf": 2 * 32064 * 4096
    + 32 * (4 * lin(4096, 4096) + gated(4096, 11008) + 2 * 4096) + 4096
    + CLIP_L_336 + lin(1024, 4096, True) + lin(4096, 4096, True),
    # LLaVA-NeXT (1.6) Mistral-7B: the Mistral-7B text model (32 / 8 heads x 128, SwiGLU 14336, vocab 32064, untied),
    # the same tower and projector, and image_newline (4096)
    "llava-hf--llava-v1.6-mistral-7b-hf": 2 * 32064 * 4096
    + 32 * (2 * lin(4096, 4096) + 2 * lin(4096, 1024) + gated(4096, 14336) + 2 * 4096) + 4096
    + CLIP_L_336 + lin(1024, 4096, True) + lin(4096, 4096, True) + 4096,
    # InternVL3-8B: the Qwen2.5-7B text model (q / k / v bias, vocab 151674, untied); InternViT-300M-448px-V2_5:
    # class_embedding 1024, patch Conv2d 3 x 14 x 14 -> 1024 with bias, position_embedding (32^2 + 1) x 1024, 24
    # layers of qkv 1024 -> 3072 and proj with bias, fc1 / fc2 with bias, norm1 / norm2 LayerNorms, ls1 / ls2 (1024
    # each), no final norm; mlp1: LayerNorm(4096) over the pixel-shuffled (downsample_ratio 0.5: 2 x 2) width,
    # 4096 -> 3584 and 3584 -> 3584 with biases
    "OpenGVLab--InternVL3-8B": 2 * 151674 * 3584
    + 28 * (lin(3584, 3584, True) + 2 * lin(3584, 512, True) + lin(3584, 3584) + gated(3584, 18944) + 2 * 3584)
    + 3584
    + 1024 + lin(3 * 14 * 14, 1024, True) + 1025 * 1024
    + 24 * (lin(1024, 3072, True) + lin(1024, 1024, True) + lin(1024, 4096, True) + lin(4096, 1024, True)
            + 2 * ln(1024) + 2 * 1024)
    + ln(4096) + lin(4096, 3584, True) + lin(3584, 3584, True),
    # Kimi-VL-A3B: the Moonlight-16B-A3B text model (deepseek_v3: MLA without q_lora, 16 heads, kv_lora 512; layer 0
    # dense 11264; 26 MoE layers of 64 experts x 1408, 2 shared (2816), gate and e_score_correction_bias (noaux_tc);
    # untied); MoonViT: 27 layers of norm0 / norm1 LayerNorms, wqkv 1152 -> 3456 and wo with bias, fc0 1152 -> 4304
    # and fc1 with bias; patch Conv2d 3 x 14 x 14 -> 1152 with bias, the learned 2D position table 64 x 64 x 1152,
    # final_layernorm; the projector pre_norm LayerNorm(1152), linear_1 4608 -> 4608 and linear_2 4608 -> 2048 with
    # biases
    "moonshotai--Kimi-VL-A3B-Instruct": 2 * 163840 * 2048
    + 27 * (lin(2048, 16 * 192) + lin(2048, 576) + 512 + lin(512, 16 * 256) + lin(16 * 128, 2048) + 2 * 2048)
    + gated(2048, 11264) + 26 * (64 * gated(2048, 1408) + gated(2048, 2816) + 64 * 2048 + 64) + 2048
    + 27 * (2 * ln(1152) + lin(1152, 3456, True) + lin(1152, 1152, True) + lin(1152, 4304, True)
            + lin(4304, 1152, True))
    + lin(3 * 14 * 14, 1152, True) + 64 * 64 * 1152 + ln(1152)
    + ln(1152) + lin(4608, 4608, True) + lin(4608, 2048, True),
    # Mistral-Small-3.1-24B: the text model (40 layers, 32 / 8 heads x 128 on 5120, SwiGLU 32768, vocab 131072,
    # untied); the Pixtral tower: patch_conv 3 x 14 x 14 -> 1024 without bias, ln_pre (RMSNorm), 24 layers of q / k /
    # v / o without bias, a SwiGLU 4096 without bias, attention_norm / ffn_norm; the projector (Mistral3): norm
    # (RMSNorm 1024), patch_merger 4096 -> 1024, linear_1 1024 -> 5120 and linear_2 5120 -> 5120, no biases
    # (multimodal_projector_bias false)
    "mistralai--Mistral-Small-3.1-24B-Instruct-2503": 2 * 131072 * 5120
    + 40 * (lin(5120, 4096) + 2 * lin(5120, 1024) + lin(4096, 5120) + gated(5120, 32768) + 2 * 5120) + 5120
    + 3 * 14 * 14 * 1024 + 1024 + 24 * (4 * lin(1024, 1024) + gated(1024, 4096) + 2 * 1024)
    + 1024 + lin(4096, 1024) + lin(1024, 5120) + lin(5120, 5120),
}

# Published totals precise enough to hold the count to 1% (SOURCES.md says where each is published; models
# published only by a rounded name, such as Falcon-7B's "7B", are compared there, not here)
PUBLISHED: dict[str, float] = {
    "openai-community--gpt2": 124e6,
    "bigcode--starcoderbase": 15.5e9,
    "EleutherAI--gpt-j-6b": 6_053_381_344,
    "EleutherAI--pythia-6.9b": 6_857_302_016,
    "facebook--opt-125m": 125e6,
    "bigscience--bloom": 176_247_271_424,
    "google--gemma-7b": 786_825_216 + 7_751_248_896,
    "google--gemma-2-9b": 917_504_000 + 8_324_201_984,
    "CohereForAI--c4ai-command-r-plus": 104e9,
    "CohereForAI--c4ai-command-a-03-2025": 111e9,
    "Qwen--Qwen2.5-72B-Instruct": 72.7e9,
    "inclusionAI--Ling-lite": 16.8e9,
    "rednote-hilab--dots.llm1.inst": 142e9,
    "microsoft--Phi-3.5-MoE-instruct": 41.9e9,
    "mistralai--Mamba-Codestral-7B-v0.1": 7_285_403_648,
    "deepseek-ai--DeepSeek-V2-Lite": 15.7e9,
    "LiquidAI--LFM2-1.2B": 1.17e9,
    "meta-llama--Llama-4-Maverick-17B-128E-Instruct": 400e9,
    "Qwen--Qwen2.5-VL-7B-Instruct": 8.29e9,
    "tencent--Tencent-Hunyuan-Large": 389e9,
    "meta-llama--Llama-3.2-11B-Vision-Instruct": 10.6e9,
    "meta-llama--Llama-3.2-90B-Vision-Instruct": 88.8e9,
    "llava-hf--llava-1.5-7b-hf": 7.06e9,
    "llava-hf--llava-v1.6-mistral-7b-hf": 7.57e9,
    "moonshotai--Kimi-VL-A3B-Instruct": 16.4e9,
}


def test_every_unseen_config_has_a_hand_count() -> None:
    assert sorted(p.stem for p in DATA.glob("*.json")) == sorted(HAND)


@pytest.mark.parametrize("name", sorted(HAND))
def test_every_unseen_config_counts_to_its_hand_computed_total(name: str) -> None:
    assert _total(name) == HAND[name]


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_every_unseen_config_is_within_one_percent_of_its_published_total(name: str) -> None:
    assert abs(_total(name) / PUBLISHED[name] - 1) < 0.01


# ------------------------------------------------------------------------------------------ one rule each


def test_a_non_gated_mlp_has_two_matrices() -> None:
    ffn = _spec("openai-community--gpt2").layers[0].ffn
    assert isinstance(ffn, DenseFFN) and not ffn.gated
    assert ffn.params == 2 * 768 * 3072 + 3072 + 768  # c_fc and c_proj with their biases


def test_a_gelu_activation_does_not_make_an_mlp_non_gated() -> None:
    # Gemma's MLP is gated and runs GELU: gating is the family's fact, not the activation's name
    ffn = _spec("google--gemma-7b").layers[0].ffn
    assert isinstance(ffn, DenseFFN) and ffn.gated and ffn.params == 3 * 3072 * 24576


def test_a_non_gated_mlp_costs_two_gemms_in_the_estimator() -> None:
    from solver.estimate.compute import Kit, Work, factors_for
    from solver.specs.hardware_catalog import load_hardware
    from solver.specs.parallel import make_parallel_config
    from solver.specs.precision import resolve_precision

    spec = _spec("openai-community--gpt2")
    hw = load_hardware("H100-SXM")
    kit = Kit(hw, make_parallel_config(1), resolve_precision(spec, hw), factors_for(hw),
              Work("decode", new_tokens=4, context=128, sequences=4, logits_tokens=4))
    ffn = spec.layers[0].ffn
    op = ffn.ops(kit)[0]
    gated_op = DenseFFN(hidden=ffn.hidden, inter=ffn.inter, gated=True).ops(kit)[0]
    assert op.overhead_s / gated_op.overhead_s == pytest.approx(2 / 3)  # kernels: up, down vs gate, up, down
    assert op.flops / gated_op.flops == pytest.approx(ffn.params / (3 * 768 * 3072))


def test_a_learned_position_table_counts_positions_x_hidden() -> None:
    spec = _spec("openai-community--gpt2")
    parts = {p.name: p.params for p in count_params(spec).module("embedding").parts}
    assert parts == {"embed_tokens": 50257 * 768, "embed_positions": 1024 * 768}


def test_a_position_offset_adds_rows_to_the_position_table() -> None:
    assert _spec("facebook--opt-125m").position_embeddings == 2048 + 2  # OPT's learned offset of 2


def test_a_learned_position_table_needs_its_size() -> None:
    # every family with the fact has its class default for the rows (family_defaults.yaml); without one, one line
    cfg = {"model_type": "newfamily", "_learned_positions": True, "hidden_size": 64, "num_hidden_layers": 2,
           "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 100}
    with pytest.raises(InputError, match="max_position_embeddings: missing .*learned position table"):
        parse_model_config(cfg, "x")


def test_layernorms_with_a_bias_count_two_vectors() -> None:
    spec = _spec("EleutherAI--pythia-6.9b")
    parts = {p.name: p.params for p in count_params(spec).module("norms").parts}
    assert parts == {"layernorms": 32 * 2 * 4096, "layernorm_biases": 32 * 2 * 4096, "final_norm": 2 * 4096}


def test_non_parametric_layernorms_have_no_weights() -> None:
    assert "norms" not in count_params(_spec("allenai--OLMo-7B-0724-hf")).by_name()


def test_a_parallel_block_sharing_one_norm_has_one_norm_per_layer() -> None:
    assert {layer.norms for layer in _spec("tiiuae--falcon-7b").layers} == {1}  # parallel_attn
    assert {layer.norms for layer in _spec("tiiuae--falcon-40b").layers} == {2}  # new_decoder_architecture
    assert {layer.norms for layer in _spec("microsoft--phi-2").layers} == {1}  # the family's fact
    cfg = _load("tiiuae--falcon-40b")
    cfg["num_ln_in_parallel_attn"] = 1
    assert {layer.norms for layer in parse_model_config(cfg, "x").layers} == {1}


def test_every_linear_has_a_bias_when_the_config_says_bias() -> None:
    cfg = _load("internlm--internlm2_5-7b-chat")
    base = count_params(parse_model_config(cfg, "x")).total
    cfg["bias"] = True  # wqkv, wo, w1, w2, w3
    assert count_params(parse_model_config(cfg, "x")).total - base == 32 * (48 * 128 + 4096 + 2 * 14336 + 4096)


def test_a_qkv_only_bias_leaves_the_other_linears_bare() -> None:
    attention = _spec("THUDM--glm-4-9b-chat").layers[0].mixer  # add_qkv_bias true, add_bias_linear false
    assert attention.qkv_bias and not attention.out_bias
    assert not _spec("THUDM--glm-4-9b-chat").layers[0].ffn.bias


def test_a_model_type_without_a_qkv_bias_field_gets_its_family_bias() -> None:
    attention = _spec("Qwen--Qwen2.5-72B-Instruct").layers[0].mixer  # Qwen2Config has no field for it
    assert attention.qkv_bias and not attention.out_bias


def test_an_lm_head_bias_counts_one_per_vocabulary_entry() -> None:
    parts = {p.name: p.params for p in count_params(_spec("microsoft--phi-2")).module("lm_head").parts}
    assert parts == {"lm_head": 51200 * 2560, "lm_head_bias": 51200}


def test_an_embedding_norm_counts_outside_the_stack() -> None:
    parts = {p.name: p.params for p in count_params(_spec("bigscience--bloom")).module("norms").parts}
    assert parts["embedding_norm"] == 2 * 14336


def test_multi_query_means_one_kv_head_unless_a_count_is_given() -> None:
    assert _spec("tiiuae--falcon-7b").num_key_value_heads == 1
    assert _spec("bigcode--starcoderbase").num_key_value_heads == 1
    assert _spec("tiiuae--falcon-40b").num_key_value_heads == 8  # num_kv_heads wins


def test_multi_query_attention_reads_its_group_count() -> None:
    spec = _spec("THUDM--glm-4-9b-chat")
    assert (spec.num_key_value_heads, spec.head_dim, spec.vocab_size) == (2, 128, 151552)  # kv_channels, padded


def test_qk_norms_over_all_heads_count_heads_x_head_dim() -> None:
    parts = {p.name: p.params for p in _spec("CohereForAI--c4ai-command-r-plus").layers[0].mixer.proj_parts()}
    assert parts["qk_norm"] == (96 + 8) * 128


def test_a_family_with_tied_embeddings_by_class_default_has_no_head() -> None:
    for name in ("openai-community--gpt2", "google--gemma-7b", "CohereForAI--c4ai-command-r-plus",
                 "openbmb--MiniCPM-2B-sft-bf16"):
        assert "tie_word_embeddings" not in _load(name)
        assert count_params(_spec(name)).by_name()["lm_head"] == 0


def test_a_family_fixed_ffn_width_is_four_x_hidden_without_a_note() -> None:
    spec = _spec("bigscience--bloom")  # BLOOM has no width field
    assert spec.intermediate_size == 4 * 14336
    assert not any("4 x hidden" in w for w in spec.warnings)


def test_gemma2_alternates_sliding_and_global_layers() -> None:
    kinds = ["SWA" if layer.mixer.window else "full" for layer in _spec("google--gemma-2-9b").layers]
    assert kinds[:4] == ["SWA", "full", "SWA", "full"] and kinds.count("SWA") == 21


def test_attention_layers_and_window_size_pattern_gpt_neo() -> None:
    spec = _spec("EleutherAI--gpt-neo-1.3B")
    assert [layer.mixer.window for layer in spec.layers[:2]] == [None, 256]


def test_a_pure_mamba_stack_has_one_mixer_and_no_ffn_per_layer() -> None:
    for name, kind in (("state-spaces--mamba-2.8b-hf", "Mamba1"), ("mistralai--Mamba-Codestral-7B-v0.1", "Mamba2")):
        spec = _spec(name)
        assert {layer.label() for layer in spec.layers} == {spec.layers[0].label()}
        assert all(layer.blocks[0].kind == kind and layer.ffn is None and layer.norms == 1 for layer in spec.layers)
        assert spec.architecture == "ssm" and spec.attention_kind == "none"


def test_moe_layer_start_end_and_interval_place_the_experts() -> None:
    spec = _spec("baidu--ERNIE-4.5-21B-A3B-PT")
    assert (spec.num_dense_layers, spec.num_moe_layers) == (1, 27)
    assert (spec.num_experts, spec.experts_per_token, spec.shared_expert_intermediate_size) == (64, 6, 3072)
    cfg = _load("baidu--ERNIE-4.5-21B-A3B-PT")
    cfg.update(moe_layer_interval=2, moe_layer_end_index=-1)
    assert parse_model_config(cfg, "x").num_moe_layers == 14  # layers 1, 3, ..., 27


def test_an_expert_count_given_per_modality_is_refused() -> None:
    cfg = _load("baidu--ERNIE-4.5-21B-A3B-PT")
    cfg["moe_num_experts"] = [64, 64]  # ERNIE-4.5-VL: text and vision experts
    with pytest.raises(InputError, match=r"moe_num_experts: must be an integer, got \[64, 64\]"):
        parse_model_config(cfg, "x")


def test_cross_attention_layers_without_a_tiled_vision_config_are_refused() -> None:
    cfg = _load("Qwen--Qwen2.5-72B-Instruct")
    cfg["cross_attention_layers"] = [3, 8, 13]  # Mllama's text model, without the tower its K/V come from
    with pytest.raises(InputError, match="cross_attention_layers: .*a tiled vision_config .*which the config lacks"):
        parse_model_config(cfg, "x")
    cfg = _load("meta-llama--Llama-3.2-11B-Vision-Instruct")
    cfg["text_config"]["cross_attention_layers"] = [3, 40]
    with pytest.raises(InputError, match=r"text_config.cross_attention_layers: layer indices \[40\] outside 0..39"):
        parse_model_config(cfg, "x")


# OPT-350m's narrower embedding and post-norm stack are read since stop 36 (test_unseen_configs_round19.py)


def test_phi_qk_layernorms_are_refused() -> None:
    cfg = _load("microsoft--phi-2")
    cfg["qk_layernorm"] = True
    with pytest.raises(InputError, match="qk_layernorm: true"):
        parse_model_config(cfg, "x")


def test_a_refusal_is_one_error_line_and_exit_2(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from solver.cli.main import main as cli

    cfg = _load("microsoft--phi-2")
    cfg["qk_layernorm"] = True
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    result = CliRunner().invoke(cli, ["inspect", str(path)])
    assert result.exit_code == 2
    assert len(result.output.strip().splitlines()) == 1 and "qk_layernorm" in result.output


def test_fields_that_size_nothing_raise_no_unread_note() -> None:
    cfg = _load("ibm-granite--granite-3.1-8b-instruct")
    cfg.update(model_type="newfamily", attention_softmax_in_fp32=True, clip_qkv=8.0, attn_pdrop=0.1,
               attn_implementation="eager", moe_capacity=[64, 64], kv_share_interval=2)
    notes = [w for w in parse_model_config(cfg, "x").warnings if w.startswith("fields not read")]
    assert len(notes) == 1 and notes[0].endswith("kv_share_interval=2")  # sizes something: still named


def test_a_vision_encoder_without_intermediate_size_says_so() -> None:
    notes: list[str] = []
    vision = {"hidden_size": 1024, "num_hidden_layers": 2, "patch_size": 14, "image_size": 224}
    enc = read_encoders({"vision_config": vision}, 4096, "x", notes)[0]
    assert notes == ["vision_config.intermediate_size: not given; the encoder's MLP width is read as 4 x hidden "
                     "size = 4096 (the ViT convention)"]
    with_width = read_encoders({"vision_config": {**vision, "intermediate_size": 4096}}, 4096, "x", notes)[0]
    assert enc.params == with_width.params and len(notes) == 1


def test_the_encoder_note_reaches_the_model_warnings() -> None:
    cfg = {"model_type": "newvlm", "text_config": _load("Qwen--Qwen2.5-72B-Instruct"),
           "vision_config": {"hidden_size": 1024, "num_hidden_layers": 2, "patch_size": 14, "image_size": 224}}
    # (image_size is written: a ViT without it is refused, its position table unsized: test_unseen_configs_round4.py)
    assert any("vision_config.intermediate_size: not given" in w for w in parse_model_config(cfg, "x").warnings)


def test_a_context_written_as_n_positions_or_seq_length_is_the_models_context() -> None:
    """GPT-2's lineage writes its context as n_positions and ChatGLM as seq_length: either is the limit a sequence
    is held to, named as the config names it."""
    gpt2 = _spec("openai-community--gpt2")
    assert (gpt2.max_position_embeddings, gpt2.context_field) == (1024, "n_positions")
    glm = _spec("THUDM--glm-4-9b-chat")
    assert (glm.max_position_embeddings, glm.context_field) == (_load("THUDM--glm-4-9b-chat")["seq_length"],
                                                                "seq_length")


def test_a_sequence_past_a_learned_position_table_is_noted_as_unservable() -> None:
    """RoPE scaling can stretch a rotary model's context; a learned table has no rows past its last position, so
    the note says no engine serves that length rather than offering a RoPE scaling."""
    from solver.specs.notes import context_notes

    (note,) = context_notes(_spec("openai-community--gpt2"), 4352)
    assert "n_positions 1,024" in note and "no engine serves that length" in note and "RoPE" not in note
    (rotary,) = context_notes(_spec("EleutherAI--pythia-6.9b"), 4352)
    assert "RoPE scaling" in rotary
    assert context_notes(_spec("openai-community--gpt2"), 1024) == []


# ------------------------------------------------------------------------ second round: one rule each

REFUSED = DATA / "refused"


def test_a_conv_layer_type_is_a_gated_short_convolution() -> None:
    from solver.specs.layers.conv import ShortConv

    spec = _spec("LiquidAI--LFM2-1.2B")
    convs = [layer.mixer for layer in spec.layers if isinstance(layer.mixer, ShortConv)]
    assert len(convs) == 10 and convs[0] == ShortConv(hidden=2048, kernel=3, bias=False)
    assert convs[0].params == 3 * 2048 * 2048 + 2048 * 3 + 2048 * 2048  # in_proj, conv, out_proj
    assert spec.architecture == "hybrid-conv" and spec.attention_kind == "gqa"
    assert spec.num_attention_heads == 32  # the conv's 2048 channels split wherever the 32 heads do
    assert count_params(spec).module("short_conv").knob == "attn_tp_size"


def test_a_conv_bias_puts_a_bias_on_every_conv_layer_tensor() -> None:
    cfg = _load("LiquidAI--LFM2-1.2B")
    base = count_params(parse_model_config(cfg, "x")).total
    cfg["conv_bias"] = True
    assert count_params(parse_model_config(cfg, "x")).total - base == 10 * (3 * 2048 + 2048 + 2048)


def test_a_conv_width_other_than_hidden_is_refused() -> None:
    cfg = _load("LiquidAI--LFM2-1.2B")
    cfg["conv_dim"] = 1024
    with pytest.raises(InputError, match="conv_dim: 1024 differs from hidden_size"):
        parse_model_config(cfg, "x")


def test_an_auto_adjusted_ffn_width_is_two_thirds_times_the_multiplier_rounded_up() -> None:
    assert _spec("LiquidAI--LFM2-1.2B").intermediate_size == 8192  # int(2 x 12288 / 3), a multiple of 256
    cfg = _load("LiquidAI--LFM2-1.2B")
    cfg.update(block_ffn_dim_multiplier=1.3, block_multiple_of=1000)
    assert parse_model_config(cfg, "x").intermediate_size == 11000  # int(1.3 x 8192) = 10649, up to 11000
    cfg.update(block_auto_adjust_ff_dim=False)
    assert parse_model_config(cfg, "x").intermediate_size == 12288


def test_tie_embedding_is_read_as_tie_word_embeddings() -> None:
    cfg = _load("LiquidAI--LFM2-1.2B")
    assert count_params(parse_model_config(cfg, "x")).by_name()["lm_head"] == 0
    cfg["tie_embedding"] = False
    assert count_params(parse_model_config(cfg, "x")).by_name()["lm_head"] == 65536 * 2048


def test_attention_out_bias_switches_the_o_proj_bias_alone() -> None:
    attention = _spec("ByteDance-Seed--Seed-OSS-36B-Instruct").layers[0].mixer
    assert attention.qkv_bias and not attention.out_bias
    cfg = _load("ByteDance-Seed--Seed-OSS-36B-Instruct")
    cfg["attention_out_bias"] = True
    assert parse_model_config(cfg, "x").layers[0].mixer.out_bias


def test_an_xielu_activation_has_two_learned_scalars_per_mlp() -> None:
    ffn = _spec("swiss-ai--Apertus-8B-2509").layers[0].ffn
    assert isinstance(ffn, DenseFFN) and not ffn.gated and ffn.act_params == 2
    parts = {p.name: (p.params, p.split) for p in ffn.shares()[0].parts}
    assert parts == {"mlp": (2 * 4096 * 21504, "tp"), "activation": (2, "none")}


def test_mla_without_a_q_lora_rank_has_a_full_q_proj() -> None:
    attention = _spec("deepseek-ai--DeepSeek-V2-Lite").layers[0].mixer
    parts = {p.name: p.params for p in attention.proj_parts()}
    assert attention.q_lora_rank is None and parts["q_proj"] == 2048 * 16 * 192 and "q_a_proj" not in parts


def test_a_pure_mamba_stack_whose_inner_norms_have_no_weights() -> None:
    spec = _spec("tiiuae--falcon-mamba-7b")
    mixer = spec.layers[0].mixer
    assert mixer.kind == "Mamba1" and not mixer.inner_norms and (mixer.d_inner, mixer.dt_rank) == (8192, 256)


def test_moe_every_other_layer_from_interleave_moe_layer_step() -> None:
    spec = _spec("meta-llama--Llama-4-Maverick-17B-128E-Instruct")
    kinds = ["moe" if layer.ffn.kind == "MoE" else "dense" for layer in spec.layers]
    assert kinds[:4] == ["dense", "moe", "dense", "moe"] and (spec.num_dense_layers, spec.num_moe_layers) == (24, 24)
    assert abs(count_params(spec).active / 17e9 - 1) < 0.02  # the card's 17B active


def test_the_dense_qwen3_vl_text_model_has_qk_norms() -> None:
    parts = {p.name: p.params for p in _spec("Qwen--Qwen3-VL-8B-Instruct").layers[0].mixer.proj_parts()}
    assert parts["qk_norm"] == 2 * 128


def test_a_vision_tower_with_biases_on_its_gated_mlp_by_family_fact() -> None:
    cfg = _load("Qwen--Qwen2.5-VL-7B-Instruct")
    (enc,) = read_encoders(cfg, 3584, "x", [], {"_vision_linear_bias": True})
    (bare,) = read_encoders(cfg, 3584, "x", [])  # a gated tower without the fact: Pixtral's, no biases
    assert enc.params - bare.params == 32 * (3840 + 1280 + 2 * 3420 + 1280)
    assert _spec("Qwen--Qwen2.5-VL-7B-Instruct").encoders[0].params == enc.params


@pytest.mark.parametrize("path", sorted(REFUSED.glob("*.json")), ids=lambda p: p.stem)
def test_every_refused_config_is_one_error_line_and_exit_2(path: Path) -> None:
    from click.testing import CliRunner

    from solver.cli.main import main as cli

    result = CliRunner().invoke(cli, ["inspect", str(path)])
    assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1


# ------------------------------------------------------------------------ fourth round: one rule each


def test_a_nested_text_config_takes_the_wrappers_default_text_config() -> None:
    """LLaVA's text_config is written as its diff against LlamaConfig(): no hidden_size, layers or heads."""
    cfg = _load("llava-hf--llava-1.5-7b-hf")
    assert "hidden_size" not in cfg["text_config"]
    spec = _spec("llava-hf--llava-1.5-7b-hf")
    assert (spec.hidden_size, spec.num_layers, spec.num_attention_heads, spec.intermediate_size) == (4096, 32, 32,
                                                                                                     11008)
    cfg["model_type"] = "newvlm"  # a wrapper whose default text config is not known: the field is missing
    with pytest.raises(InputError, match="text_config.hidden_size: missing"):
        parse_model_config(cfg, "x")


def test_a_top_level_llama_config_takes_no_class_size_defaults() -> None:
    cfg = _load("llava-hf--llava-1.5-7b-hf")["text_config"]
    with pytest.raises(InputError, match="hidden_size: missing"):
        parse_model_config(cfg, "x")


def test_tower_facts_are_read_by_the_towers_own_model_type() -> None:
    cfg = _load("llava-hf--llava-1.5-7b-hf")
    (enc,) = _spec("llava-hf--llava-1.5-7b-hf").encoders
    projector = lin(1024, 4096, True) + lin(4096, 4096, True)
    assert enc.params == CLIP_L_336 + projector
    cfg["vision_config"]["model_type"] = "siglip_vision_model"  # no class token, biased patch conv, one norm
    cfg["vision_config"]["vision_use_head"] = False  # else SiglipVisionConfig's default builds the pooling head
    (other,) = parse_model_config(cfg, "x").encoders
    assert enc.params - other.params == 1024 + 1024 + ln(1024) - 1024  # class embedding and its row, pre-norm, bias


def test_a_list_vision_feature_layer_widens_the_projector_input() -> None:
    cfg = _load("llava-hf--llava-1.5-7b-hf")
    base = parse_model_config(cfg, "x").encoders[0].params
    cfg["vision_feature_layer"] = [-2, -5, -8]
    assert parse_model_config(cfg, "x").encoders[0].params - base == 2 * 1024 * 4096


def test_a_pixel_shuffle_projector_reads_its_factor_from_downsample_ratio() -> None:
    cfg = _load("OpenGVLab--InternVL3-8B")
    base = parse_model_config(cfg, "x").encoders[0].params
    cfg["downsample_ratio"] = 1.0  # no shuffle: the projector sees 1024 channels
    assert base - parse_model_config(cfg, "x").encoders[0].params == ln(4096) - ln(1024) + (4096 - 1024) * 3584
    cfg["downsample_ratio"] = 0.3
    with pytest.raises(InputError, match="downsample_ratio: 0.3 is not 1 / an integer"):
        parse_model_config(cfg, "x")


def test_a_learned_2d_position_table_counts_height_x_width_rows() -> None:
    cfg = _load("moonshotai--Kimi-VL-A3B-Instruct")
    base = parse_model_config(cfg, "x").encoders[0].params
    cfg["vision_config"]["init_pos_emb_height"] = 32
    assert base - parse_model_config(cfg, "x").encoders[0].params == 32 * 64 * 1152


def test_a_tower_without_a_counting_convention_is_refused_and_the_text_model_still_counts() -> None:
    # GLM-4.1V was this case until its tower was read (round5/, test_unseen_configs_round5.py); DeepSeek-VL2's
    # timm tower is now
    cfg = json.loads((REFUSED / "deepseek-ai--deepseek-vl2-tiny.json").read_text())
    with pytest.raises(InputError, match="vision_config: DeepSeek-VL2's .* not counted rather than miscounted"):
        parse_model_config(cfg, "x")
    # its projector_config goes with it: a wrapper's sub-config no reader looks up is refused (round 15)
    del cfg["vision_config"], cfg["projector_config"]
    # DeepSeek-MoE without MLA: 129280 x 1280 untied; 12 layers of MHA 10 x 128 (four 1280 x 1280 projections), two
    # RMSNorms; the first layer's gated 6848 MLP; 11 MoE layers of a router 1280 -> 64, 64 gated experts of 896 and
    # two shared ones; the final norm
    h = 1280
    moe = h * 64 + 66 * 3 * h * 896
    assert count_params(parse_model_config(cfg, "x")).total == (2 * 129280 * h + 12 * (4 * h * h + 2 * h)
                                                                 + 3 * h * 6848 + 11 * moe + h)


def test_an_fp32_checkpoint_is_served_at_16_bits_unless_asked() -> None:
    """Engines load a 32-bit checkpoint at 16 bits by default (--dtype auto): its weights are held and priced at
    2 bytes, with one note; --weight-dtype fp32 keeps 4 bytes."""
    from solver.specs.hardware_catalog import load_hardware
    from solver.specs.precision import resolve_precision

    spec, hw = _spec("state-spaces--mamba-2.8b-hf"), load_hardware("h100_sxm")
    served = resolve_precision(spec, hw)
    assert {served.fmt(g).bytes_per_param for g in ("attention", "dense", "embedding", "lm_head")} == {2}
    assert [n for n in served.notes if "fp32" in n] == [
        "the checkpoint's fp32 weights are served at 16 bits, as the engines' default dtype does (pass "
        "--weight-dtype fp32 to hold them at 32)"]
    assert resolve_precision(spec, hw, weight_dtype="fp32").fmt("attention").bytes_per_param == 4


def test_a_model_without_attention_shows_no_attention_heads() -> None:
    """inspect's basic parameters: a pure SSM has no N_h / N_kv / D_h (it showed its channels as heads and a
    head dim of 0); its mixer's heads are in the layer table."""
    from solver.report.model_view import inspect_data

    basic = inspect_data(_spec("state-spaces--mamba-2.8b-hf"))["basic"]
    assert basic["attention"] == "none" and not any(k.startswith(("N_h", "N_kv", "D_h")) for k in basic)
    assert "N_h (heads)" in inspect_data(_spec("openai-community--gpt2"))["basic"]


def test_fields_read_from_the_wrappers_default_text_config_are_named() -> None:
    """LLaVA's text_config leaves out what equals the wrapper's default text config (hidden_size for a 4096-wide
    Llama): the sizes read from that default are said in a note, not taken silently."""
    (note,) = [w for w in _spec("llava-hf--llava-1.5-7b-hf").warnings if "default text config" in w]
    assert note.startswith("text_config.") and "hidden_size" in note and "read as llava's default text config" in note
