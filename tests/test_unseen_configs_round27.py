"""Twenty-seventh round of families outside the catalog (tests/data/configs_unseen/round27/, SOURCES.md's
"Twenty-seventh round (stop 36)"): 2025-2026 model_types in transformers 5.25.0 that no earlier round nor the catalog
holds (flint, param2moe, sarvam_moe, sarvam_mla, iquestcoder; dory refused), chosen where a reader by convention is
likeliest wrong: a per-head attention sink and q / k norms with an ungated shared expert beside 256 routed ones
(Flint), routers whose class builds an e_score_correction_bias no config field names (GLM-4-MoE's for Param2 and
Sarvam-30B, DeepSeek-V3's for Sarvam-105B), an MLA without a query LoRA whose legacy file writes head_dim as
kv_lora_rank + rope (Sarvam-105B) and a recurrent section run twice a token (Dory). Each config is its class's
defaults (the docstring names the checkpoint), written as to_dict would; hand counts tensor by tensor from
transformers 5.25.0's modeling_*.py / modular_*.py with their configuration_*.py (read from the wheel, not
installed); written before the reader was run on them."""
from __future__ import annotations

from hand_counts import UNSEEN, Round, count, gated, gqa, lin

DATA = UNSEEN / "round27"
ROUND = Round(DATA)
_load, _spec, _total = ROUND.load, ROUND.spec, ROUND.total


def router(h: int, experts: int, correction_bias: bool) -> int:
    """A router experts x h and, where the class builds one, its e_score_correction_bias (in the checkpoint)."""
    return lin(h, experts) + (experts if correction_bias else 0)


def qk_norm(d: int) -> int:  # q_norm / k_norm RMSNorms over one head's channels
    return 2 * d


# ------------------------------------------------------------------ flint (FlintForCausalLM, the class defaults;
# checkpoint RecursiveSI/flint): 49 layers of GQA 32 / 4 heads x 128 without bias, q_norm / k_norm of 128 (Qwen3-MoE's
# attention) and one fp32 sink logit a head (FlintAttention.sinks); layers 0 and 1 (mlp_only_layers) the dense 6144
# MLP, 47 MoE of 256 experts of 512 top-6, router weight only (sigmoid scores, no correction bias), and a shared expert
# of 1024 added in full: no shared_expert_gate (FlintSparseMoeBlock); two RMSNorms a layer (GptOssRMSNorm, weight
# only); untied 150144
FLINT_ATTENTION = gqa(2048, 32, 4, 128) + qk_norm(128) + 32
FLINT_MOE = router(2048, 256, False) + 256 * gated(2048, 512) + gated(2048, 1024)
FLINT = 2 * 150144 * 2048 + 49 * (FLINT_ATTENTION + 2 * 2048) + 2 * gated(2048, 6144) + 47 * FLINT_MOE + 2048
FLINT_ACTIVE = FLINT - 47 * (256 - 6) * gated(2048, 512)


# ------------------------------------------------------------------ GLM-4-MoE's decoder (Glm4MoeForCausalLM, which
# param2moe and sarvam_moe load): GQA with q_norm / k_norm of head_dim (use_qk_norm), no bias (attention_bias false);
# the first first_k_dense_replace layers the dense MLP of intermediate_size, the rest a MoE whose Glm4MoeTopkRouter
# holds a fp32 weight and an e_score_correction_bias buffer (persistent: in the checkpoint), and one shared MLP of
# moe_intermediate_size x n_shared_experts; two RMSNorms a layer
def glm4_moe(vocab: int, h: int, layers: int, heads: int, kv: int, d: int, dense: int, experts: int, moe: int,
             shared: int, tied: bool) -> int:
    attention = gqa(h, heads, kv, d) + qk_norm(d) + 2 * h
    block = router(h, experts, True) + experts * gated(h, moe) + gated(h, shared * moe)
    return (1 if tied else 2) * vocab * h + layers * attention + gated(h, dense) + (layers - 1) * block + h


# Param2-17B-A2.4B-Thinking (Param2MoeConfig() defaults): 21 layers, 2048 wide, 32 / 8 heads x 64, dense 9216,
# 20 MoE of 64 x 2048 top-6 with two shared (one MLP of 4096); tied 128000
PARAM2 = glm4_moe(128000, 2048, 21, 32, 8, 64, 9216, 64, 2048, 2, tied=True)
PARAM2_ACTIVE = PARAM2 - 20 * (64 - 6) * gated(2048, 2048)

# sarvam-30b (SarvamMoEConfig() defaults; hidden_size 4096 from Glm4MoeConfig): 19 layers, 64 / 4 heads x 64,
# dense 8192, 18 MoE of 128 x 1024 top-6 with one shared of 1024; untied 262144
SARVAM_30B = glm4_moe(262144, 4096, 19, 64, 4, 64, 8192, 128, 1024, 1, tied=False)
SARVAM_30B_ACTIVE = SARVAM_30B - 18 * (128 - 6) * gated(4096, 1024)


# ------------------------------------------------------------------ sarvam-105b (SarvamMLAConfig() defaults, loaded
# as DeepseekV3ForCausalLM): 32 layers of MLA without a query LoRA (q_lora_rank null: q_proj 4096 -> 64 x (128 + 64)),
# kv_a_proj_with_mqa 4096 -> 512 + 64, kv_a_layernorm 512, kv_b 512 -> 64 x (128 + 128), o 64 x 128 -> 4096, no bias;
# layer 0 the dense 16384 MLP, 31 MoE of 128 x 2048 top-8, router weight with its e_score_correction_bias (a buffer
# DeepseekV3TopkRouter always builds), one shared of 2048; two RMSNorms a layer; untied 262144
def mla_no_q_lora(h: int, heads: int, kv_rank: int, nope: int, rope: int, v: int) -> int:
    return (lin(h, heads * (nope + rope)) + lin(h, kv_rank + rope) + kv_rank + lin(kv_rank, heads * (nope + v))
            + lin(heads * v, h))


SARVAM_105B_MOE = router(4096, 128, True) + 129 * gated(4096, 2048)
SARVAM_105B = (2 * 262144 * 4096 + 32 * (mla_no_q_lora(4096, 64, 512, 128, 64, 128) + 2 * 4096)
               + gated(4096, 16384) + 31 * SARVAM_105B_MOE + 4096)
SARVAM_105B_ACTIVE = SARVAM_105B - 31 * (128 - 8) * gated(4096, 2048)


# ------------------------------------------------------------------ IQuest-Coder-V1-40B-Instruct (IQuestCoderConfig()
# defaults, loaded as LlamaForCausalLM): 80 layers of GQA 40 / 8 heads x 128 without bias, the gated 27648 MLP, two
# RMSNorms; untied 76800
IQUEST_40B = 2 * 76800 * 5120 + 80 * (gqa(5120, 40, 8, 128) + gated(5120, 27648) + 2 * 5120) + 5120


HAND: dict[str, int] = {
    "RecursiveSI--flint": FLINT,
    "bharatgenai--Param2-17B-A2.4B-Thinking": PARAM2,
    "sarvamai--sarvam-30b": SARVAM_30B,
    "sarvamai--sarvam-105b": SARVAM_105B,
    "IQuestLab--IQuest-Coder-V1-40B-Instruct": IQUEST_40B,
}
