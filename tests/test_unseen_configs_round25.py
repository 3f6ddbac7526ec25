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

import pytest

from hand_counts import UNSEEN, Round, count, gated, gqa, lin, ln
from solver.errors import InputError
from solver.specs.config.read import parse_model_config

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
# Published totals precise enough for a 1% check: MiniCPM5's 15B (name; hand 15.00B). The others' names are rounder
# than 1% (Mellum2 12B: hand 12.15B; Jais-2 8B: 8.09B; LFM3 1.7B: 1.73B) or not recalled (Command A+, Laguna XS.2,
# Hy3): not asserted
PUBLISHED: dict[str, float] = {
    "openbmb--MiniCPM5-15B-A2.5B": 15e9,
}

ACTIVE: dict[str, tuple[int, float | None]] = {
    # 2 of 8 experts: 57.13B with the tied embedding
    "CohereLabs--command-a-plus-05-2026": (COMMAND_A_PLUS_ACTIVE, None),
    # 8 of 256 and the shared one: 2.76B with the embedding and head
    "poolside--laguna-XS.2": (LAGUNA_XS2_ACTIVE, None),
    # 8 of 192 and the shared one: 20.68B with the embedding and head
    "tencent--Hy3-preview": (HY3_PREVIEW_ACTIVE, None),
    # 8 of 64: 2.44B with the embedding and head, 2.5% under the name's "A2.5B": not held to it
    "JetBrains--Mellum2-12B-A2.5B-Base": (MELLUM2_ACTIVE, None),
    # 16 of 160 and the shared one: 2.77B with the embedding and head; the name's "A2.5B" does not say which
    "openbmb--MiniCPM5-15B-A2.5B": (MINICPM5_ACTIVE, None),
}

# Bytes of K/V per token of context at bf16 over the full-attention layers (a sliding layer's cache stops at its
# window): Command A+'s 10 full layers of 64 K/V heads x 128 (its 30 sliding layers hold 4,096 tokens); LFM3's 6 full
# layers of 4 x 128 (5 sliding of 256 tokens; 13 short convs hold 6 x 2048 x 2 B a sequence each)
KV_BYTES_PER_TOKEN: dict[str, int] = {
    "CohereLabs--command-a-plus-05-2026": 10 * 2 * 64 * 128 * 2,
    "poolside--laguna-XS.2": 40 * 2 * 8 * 128 * 2,
    "tencent--Hy3-preview": 80 * 2 * 8 * 128 * 2,
    "JetBrains--Mellum2-12B-A2.5B-Base": 28 * 2 * 4 * 128 * 2,
    "openbmb--MiniCPM5-15B-A2.5B": 28 * 2 * 2 * 128 * 2,
    "inceptionai--Jais-2-8B-Chat": 32 * 2 * 26 * 128 * 2,
    "LiquidAI--LFM3-1.7B": 6 * 2 * 4 * 128 * 2,
}


# ------------------------------------------------------------------ reading rules added this round


def _mixers(name: str, cfg: dict | None = None) -> list[str]:
    spec = _spec(name) if cfg is None else parse_model_config(cfg, name)
    return [b.label() for layer in spec.layers for b in layer.blocks if b.role == "mixer"]


def test_a_parallel_moe_block_has_one_input_norm_a_layer() -> None:
    # Cohere2MoeDecoderLayer: attention and MoE read one bias-free LayerNorm. Before this round 190,005,256,192
    # (+40 x 8192: two norms a layer), with only the unknown-family note
    assert _total("CohereLabs--command-a-plus-05-2026") == COMMAND_A_PLUS


def test_a_dense_prefix_takes_prefix_dense_intermediate_size_and_intermediate_size_where_it_is_null() -> None:
    # Before this round the prefix layers were sized intermediate_size whatever prefix_dense_intermediate_size said
    cfg = _load("CohereLabs--command-a-plus-05-2026")
    cfg["mlp_layer_types"] = ["dense"] * 2 + ["sparse"] * 38
    moe_layer = lin(8192, 8) + 8 * gated(8192, 22528)
    assert count(cfg) == COMMAND_A_PLUS - 2 * moe_layer + 2 * gated(8192, 22528)
    cfg["prefix_dense_intermediate_size"] = 40000
    assert count(cfg) == COMMAND_A_PLUS - 2 * moe_layer + 2 * gated(8192, 40000)


def test_cohere2_moe_shared_experts_are_intermediate_size_times_their_count() -> None:
    cfg = _load("CohereLabs--command-a-plus-05-2026")
    cfg["num_shared_experts"] = 1
    assert count(cfg) == COMMAND_A_PLUS + 40 * gated(8192, 22528)


def test_a_per_head_output_gate_projects_hidden_to_one_scalar_a_head() -> None:
    # Laguna's gating true and LFM3's use_attention_gate: g_proj hidden -> heads. Before this round Laguna counted
    # 33,186,023,424 (no g_proj, q / k norms nor correction bias) and LFM3 1,728,339,968 (no g_proj, q / k norms nor
    # sandwich norms)
    assert _total("poolside--laguna-XS.2") == LAGUNA_XS2
    assert _total("LiquidAI--LFM3-1.7B") == LFM3_1P7B
    cfg = _load("LiquidAI--LFM3-1.7B")
    cfg["use_attention_gate"] = False
    assert count(cfg) == LFM3_1P7B - 11 * lin(2048, 16)


def test_laguna_per_element_gating_projects_every_channel_and_an_unknown_value_is_refused() -> None:
    cfg = _load("poolside--laguna-XS.2")
    cfg["gating"] = "per-element"
    assert count(cfg) == LAGUNA_XS2 + 40 * (lin(2048, 48 * 128) - lin(2048, 48))
    cfg["gating"] = "per-token"
    with pytest.raises(InputError, match=r"gating: 'per-token': the attention's output gate is built for"):
        count(cfg)


def test_num_attention_heads_per_layer_sizes_each_layers_queries() -> None:
    # Before this round the list was ignored: every layer read num_attention_heads (48), without a word
    cfg = _load("poolside--laguna-XS.2")
    cfg["num_attention_heads_per_layer"] = [48, 64] * 20
    assert count(cfg) == LAGUNA_XS2 + 20 * (laguna_attention(2048, 64, 8, 128) - laguna_attention(2048, 48, 8, 128))


def test_class_default_patterns_hold_where_a_config_writes_none() -> None:
    # laguna / hy_v3 / minicpm5_moe: dense first layer, then sparse (first_k_dense_replace 1); mellum: all sparse and
    # all full attention; laguna: one head count for every layer, per-head gating
    for name, total, fields in (("poolside--laguna-XS.2", LAGUNA_XS2,
                                 ("mlp_layer_types", "layer_types", "num_attention_heads_per_layer", "gating")),
                                ("tencent--Hy3-preview", HY3_PREVIEW, ("mlp_layer_types",)),
                                ("openbmb--MiniCPM5-15B-A2.5B", MINICPM5, ("mlp_layer_types",)),
                                ("JetBrains--Mellum2-12B-A2.5B-Base", MELLUM2, ("mlp_layer_types", "layer_types")),
                                ("LiquidAI--LFM3-1.7B", LFM3_1P7B, ("use_sandwich_norm", "use_attention_gate"))):
        cfg = _load(name)
        for field in fields:
            del cfg[field]
        assert count(cfg) == total, name


def test_lfm3_stacks_convs_sliding_and_full_attention_with_four_norms_a_layer() -> None:
    mixers = _mixers("LiquidAI--LFM3-1.7B")
    assert mixers[:5] == ["ShortConv 2048 L7", "ShortConv 2048 L7", "GQA 16/4 x 128", "ShortConv 2048 L7",
                          "SWA 16/4 x 128 w256"]
    cfg = _load("LiquidAI--LFM3-1.7B")
    cfg["use_sandwich_norm"] = False
    assert count(cfg) == LFM3_1P7B - 24 * 2 * 2048


def test_a_query_projection_doubled_into_an_output_gate_counts_every_channel() -> None:
    # MiniCPM5's q_gate_proj; before this round 14,767,671,296 (-28 x 2048 x 4096 gate, -27 x 160 correction bias)
    assert _total("openbmb--MiniCPM5-15B-A2.5B") == MINICPM5


def test_routers_whose_class_builds_a_correction_bias_and_head_dim_qk_norms() -> None:
    # Before this round: Hy3 295,033,507,840 (-80 x 256 q / k norms, -79 x 192 bias), Mellum2 12,149,915,904 (-28 x
    # 256 q / k norms)
    assert _total("tencent--Hy3-preview") == HY3_PREVIEW
    assert _total("JetBrains--Mellum2-12B-A2.5B-Base") == MELLUM2


def test_jais2_biases_its_layernorms_and_o_proj_and_runs_a_two_matrix_relu2_mlp() -> None:
    # Before this round 8,090,078,464: the LayerNorms' biases (65 x 3328) and o_proj's (32 x 3328) missed
    assert _total("inceptionai--Jais-2-8B-Chat") == JAIS2_8B
    cfg = _load("inceptionai--Jais-2-8B-Chat")
    cfg["attention_bias"] = False
    assert count(cfg) == JAIS2_8B - 32 * 4 * 3328
