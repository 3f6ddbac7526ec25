"""Twenty-fifth round of families outside the catalog (tests/data/configs_unseen/round25/, SOURCES.md's "Twenty-fifth
round (stop 36)"): 2025-2026 model_types in transformers 5.25.0 that no earlier round nor the catalog holds
(cohere2_moe, laguna, hy_v3, mellum, minicpm5_moe, jais2, lfm3), chosen where a reader by convention is likeliest
wrong: a parallel-block MoE whose experts take intermediate_size and whose one norm is a bias-free LayerNorm (Command
A+), an attention with a per-head sigmoid gate and a head count per layer (Laguna), routers whose class builds an
e_score_correction_bias no config field names (Laguna, Hy3, MiniCPM5), a query projection doubled into an output gate
(MiniCPM5), a non-gated relu2 MLP with biases under LayerNorms (Jais 2) and a conv / sliding / full hybrid with
sandwich norms and a per-head attention gate (LFM3). Hand counts tensor by tensor from transformers 5.25.0's
modeling_*.py with their configuration_*.py (read from the wheel, not installed); written before the reader was run
on them."""
from __future__ import annotations

from hand_counts import UNSEEN, Round, gated, gqa, lin, ln

DATA = UNSEEN / "round25"
ROUND = Round(DATA)
_load, _spec, _total = ROUND.load, ROUND.spec, ROUND.total


def router(h: int, experts: int, correction_bias: bool) -> int:
    """A router experts x h and, where the class builds one, its e_score_correction_bias (in the checkpoint)."""
    return lin(h, experts) + (experts if correction_bias else 0)


def qk_norm(d: int) -> int:  # q_norm / k_norm RMSNorms over one head's channels
    return 2 * d


# ------------------------------------------------------------------ command-a-plus-05-2026 (Cohere2MoeForCausalLM,
# the class defaults): 40 parallel-block layers (attention and MoE read the same normed input), one bias-free
# LayerNorm a layer (rms_norm_eps None: Cohere2MoeLayerNorm, weight only); MHA 64 heads x 128 (num_key_value_heads
# None -> 64) without bias; 8 experts of intermediate_size 22528 top-2 (Cohere2MoeExperts takes intermediate_size;
# no moe width), router weight only, no shared expert; tied 256000 x 8192; final LayerNorm weight only
COMMAND_A_PLUS_LAYER = gqa(8192, 64, 64, 128) + 8192 + router(8192, 8, False) + 8 * gated(8192, 22528)
COMMAND_A_PLUS = 256000 * 8192 + 40 * COMMAND_A_PLUS_LAYER + 8192
COMMAND_A_PLUS_ACTIVE = COMMAND_A_PLUS - 40 * (8 - 2) * gated(8192, 22528)


# ------------------------------------------------------------------ laguna-XS.2 (LagunaForCausalLM, the class
# defaults): 40 layers of GQA 48 / 8 heads x 128 without bias, q_norm / k_norm of 128, g_proj 2048 -> 48 (gating True:
# one sigmoid gate per head); layer 0 the dense 8192 MLP, 39 MoE of 256 experts of 512 top-8 whose router carries an
# e_score_correction_bias (an nn.Parameter) and one shared expert of 512; two RMSNorms a layer; untied
def laguna_attention(h: int, heads: int, kv: int, d: int) -> int:
    return gqa(h, heads, kv, d) + qk_norm(d) + lin(h, heads)


LAGUNA_MOE = router(2048, 256, True) + 257 * gated(2048, 512)
LAGUNA_XS2 = (2 * 100352 * 2048 + 40 * (laguna_attention(2048, 48, 8, 128) + 2 * 2048) + gated(2048, 8192)
              + 39 * LAGUNA_MOE + 2048)
LAGUNA_XS2_ACTIVE = LAGUNA_XS2 - 39 * (256 - 8) * gated(2048, 512)


# ------------------------------------------------------------------ Hy3-preview (HYV3ForCausalLM, the class
# defaults): 80 layers of GQA 64 / 8 heads x 128 without bias, q_norm / k_norm of 128; layer 0 the dense 13312 MLP
# (mlp_layer_types' default), 79 MoE of 192 experts of 1536 top-8, router weight (fp32) and the MoE block's
# e_score_correction_bias (a persistent buffer), one shared expert of 1536 x num_shared_experts; two RMSNorms a layer;
# untied. Layer 80 (the next-n layer) is dropped at load (_keys_to_ignore_on_load_unexpected): outside the total
HY3_MOE = router(4096, 192, True) + 193 * gated(4096, 1536)
HY3_LAYER = gqa(4096, 64, 8, 128) + qk_norm(128) + 2 * 4096
HY3_PREVIEW = 2 * 120832 * 4096 + 80 * HY3_LAYER + gated(4096, 13312) + 79 * HY3_MOE + 4096
HY3_PREVIEW_ACTIVE = HY3_PREVIEW - 79 * (192 - 8) * gated(4096, 1536)


# ------------------------------------------------------------------ Mellum2-12B-A2.5B-Base (MellumForCausalLM, the
# class defaults): 28 layers of GQA 32 / 4 heads x 128 without bias (o_proj 4096 -> 2304), q_norm / k_norm of 128;
# every layer a MoE of 64 experts of 896 top-8, router weight only, no shared expert; two RMSNorms a layer; untied
MELLUM_LAYER = gqa(2304, 32, 4, 128) + qk_norm(128) + router(2304, 64, False) + 64 * gated(2304, 896) + 2 * 2304
MELLUM2 = 2 * 98304 * 2304 + 28 * MELLUM_LAYER + 2304
MELLUM2_ACTIVE = MELLUM2 - 28 * (64 - 8) * gated(2304, 896)


# ------------------------------------------------------------------ MiniCPM5-15B-A2.5B (MiniCPM5MoeForCausalLM, the
# class defaults): 28 layers of GQA 32 / 2 heads x 128 whose q_gate_proj 2048 -> 2 x 32 x 128 holds the queries and
# an output gate of every channel (no q / k norm); layer 0 the dense 8192 MLP (first_k_dense_replace's default 1),
# 27 MoE of 160 experts of 512 top-16, router weight (fp32) with its e_score_correction_bias (a buffer), one shared
# expert of 512; two RMSNorms a layer; untied
def gated_query_attention(h: int, heads: int, kv: int, d: int) -> int:
    return gqa(h, heads, kv, d) + lin(h, heads * d)


MINICPM5_MOE = router(2048, 160, True) + 161 * gated(2048, 512)
MINICPM5 = (2 * 130560 * 2048 + 28 * (gated_query_attention(2048, 32, 2, 128) + 2 * 2048) + gated(2048, 8192)
            + 27 * MINICPM5_MOE + 2048)
MINICPM5_ACTIVE = MINICPM5 - 27 * (160 - 16) * gated(2048, 512)


# ------------------------------------------------------------------ Jais-2-8B-Chat (Jais2ForCausalLM, the class
# defaults): 32 layers of MHA 26 heads x 128 with biases on q / k / v / o; a non-gated relu2 MLP up 3328 -> 26624 and
# down, both biased; two LayerNorms with bias a layer and a final one; untied 150272
JAIS2_LAYER = (gqa(3328, 26, 26, 128, qkv_bias=True, out_bias=True) + lin(3328, 26624, True) + lin(26624, 3328, True)
               + 2 * ln(3328))
JAIS2_8B = 2 * 150272 * 3328 + 32 * JAIS2_LAYER + ln(3328)


# ------------------------------------------------------------------ LFM3-1.7B (Lfm3ForCausalLM, the class defaults):
# 24 layers, layer_types' default: full attention at i % 4 == 2 (6), sliding (256) at i % 4 == 0, i > 0 (5), the other
# 13 LFM2 short convs (in_proj 2048 -> 3 x 2048, a depthwise Conv1d of kernel conv_L_cache 7 without bias, out_proj
# 2048 square). Attention: GQA 16 / 4 heads x 128 without bias, q_norm / k_norm of 128, g_proj 2048 -> 16 (one sigmoid
# gate per head). Every layer the gated MLP w1 / w3 / w2 of 7680 and four RMSNorms (operator, post-operator, ffn,
# post-ffn: use_sandwich_norm); embedding_norm (the final norm); tied 128000
LFM3_ATTENTION = gqa(2048, 16, 4, 128) + qk_norm(128) + lin(2048, 16)
LFM3_CONV = lin(2048, 3 * 2048) + 2048 * 7 + lin(2048, 2048)
LFM3_1P7B = 128000 * 2048 + 11 * LFM3_ATTENTION + 13 * LFM3_CONV + 24 * (gated(2048, 7680) + 4 * 2048) + 2048


HAND: dict[str, int] = {
    "CohereLabs--command-a-plus-05-2026": COMMAND_A_PLUS,
    "poolside--laguna-XS.2": LAGUNA_XS2,
    "tencent--Hy3-preview": HY3_PREVIEW,
    "JetBrains--Mellum2-12B-A2.5B-Base": MELLUM2,
    "openbmb--MiniCPM5-15B-A2.5B": MINICPM5,
    "inceptionai--Jais-2-8B-Chat": JAIS2_8B,
    "LiquidAI--LFM3-1.7B": LFM3_1P7B,
}
