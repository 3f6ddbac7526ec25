"""Twenty-sixth round of families outside the catalog (tests/data/configs_unseen/round26/, SOURCES.md's "Twenty-sixth
round (stop 36)"): 2026 model_types in transformers 5.25.0 that no earlier round nor the catalog holds (granite_swa,
granitemoe_swa, kolibri1, axk1, apertus1p5_text, hrm_text, ergo), chosen where a reader by convention is likeliest
wrong: a learned sink logit per head on every layer and a full layer first in each group of four (Granite SWA dense
and MoE), a sliding / full MoE with q / k norms, a router correction bias and four norms a layer (Kolibri-1), an MLA
MoE whose MoE block ends in its own RMSNorm (A.X K1), a text model whose head may be pruned below the embedding's
vocabulary (Apertus 1.5), two weight stacks run in cycles whose config writes the unrolled layer count (HRM-Text) and a
MoE with a norm per expert and per-channel residual gates (Ergo). Hand counts tensor by tensor from transformers
5.25.0's modeling_*.py with their configuration_*.py (read from the wheel, not installed); written before the reader
was run on them."""
from __future__ import annotations

from hand_counts import UNSEEN, Round, gated, gqa, lin

DATA = UNSEEN / "round26"
ROUND = Round(DATA)
_load, _spec, _total = ROUND.load, ROUND.spec, ROUND.total


def router(h: int, experts: int, correction_bias: bool) -> int:
    """A router experts x h and, where the class builds one, its e_score_correction_bias (in the checkpoint)."""
    return lin(h, experts) + (experts if correction_bias else 0)


def qk_norm(d: int) -> int:  # q_norm / k_norm RMSNorms over one head's channels
    return 2 * d


# ------------------------------------------------------------------ granite-swash-2b (GraniteSWAForCausalLM, the
# class defaults): 24 layers, full attention at i % 4 == 0 (6), sliding (128) elsewhere; GQA 20 / 4 heads x 128
# (hidden / heads: the class has no head_dim field) without bias and a learned sink logit a head (self_attn.sinks, an
# nn.Parameter of num_attention_heads) on every layer; gated MLP of 8192 without bias; two RMSNorms a layer; tied
GRANITE_SWA_LAYER = gqa(2560, 20, 4, 128) + 20 + gated(2560, 8192) + 2 * 2560
GRANITE_SWASH_2B = 100352 * 2560 + 24 * GRANITE_SWA_LAYER + 2560


# ------------------------------------------------------------------ granite-swash-3b-a600m (GraniteMoeSWAForCausalLM,
# the class defaults, which are GraniteMoE's generic ones, not the named checkpoint's sizes): 32 layers, full at
# i % 4 == 0; MHA 32 heads x 128 (num_key_value_heads None -> 32) and 32 sinks a layer; 8 experts of intermediate_size
# 11008 top-2 (GraniteMoeSWAExperts takes intermediate_size), router weight only, no shared MLP
# (shared_intermediate_size 0); two RMSNorms a layer; untied 32000
GRANITEMOE_SWA_LAYER = gqa(4096, 32, 32, 128) + 32 + router(4096, 8, False) + 8 * gated(4096, 11008) + 2 * 4096
GRANITE_SWASH_3B = 2 * 32000 * 4096 + 32 * GRANITEMOE_SWA_LAYER + 4096
GRANITE_SWASH_3B_ACTIVE = GRANITE_SWASH_3B - 32 * (8 - 2) * gated(4096, 11008)


# ------------------------------------------------------------------ Kolibri-1 (Kolibri1ForCausalLM, the class
# defaults): 50 layers, full attention at (i + 1) % 5 == 0 (10), sliding (513) elsewhere; GQA 48 / 4 heads x 128
# without bias, q_norm / k_norm of 128; every layer a MoE of 384 experts of 512 top-6 whose router carries an
# e_score_correction_bias (a buffer) and one shared expert of shared_expert_intermediate_size 512; four RMSNorms a
# layer (input, post_attention, post_self_attn, post_mlp); untied
KOLIBRI_LAYER = (gqa(2560, 48, 4, 128) + qk_norm(128) + router(2560, 384, True) + 385 * gated(2560, 512)
                 + 4 * 2560)
KOLIBRI_1 = 2 * 128000 * 2560 + 50 * KOLIBRI_LAYER + 2560
KOLIBRI_1_ACTIVE = KOLIBRI_1 - 50 * (384 - 6) * gated(2560, 512)


# ------------------------------------------------------------------ A.X-K1 (AXK1ForCausalLM, the class defaults):
# DeepSeek-V3's MLA (q_a 7168 -> 1536, its norm, q_b 1536 -> 64 x 192; kv_a 7168 -> 512 + 64, its norm, kv_b 512 ->
# 64 x (128 + 128); o 64 x 128 -> 7168; no bias); layer 0 the dense 18432 MLP, 60 MoE layers of 192 experts of 2048
# top-8, router weight (fp32) with its e_score_correction_bias (a buffer), one shared expert of 2048, and the MoE
# block's own post_mlp_layernorm (7168) on its output; two RMSNorms a layer besides; untied
def mla(h: int, heads: int, q_rank: int, kv_rank: int, nope: int, rope: int, v: int) -> int:
    return (lin(h, q_rank) + q_rank + lin(q_rank, heads * (nope + rope)) + lin(h, kv_rank + rope) + kv_rank
            + lin(kv_rank, heads * (nope + v)) + lin(heads * v, h))


AXK1_MLA = mla(7168, 64, 1536, 512, 128, 64, 128)
AXK1_MOE = router(7168, 192, True) + 193 * gated(7168, 2048) + 7168
AXK1 = 2 * 163840 * 7168 + 61 * (AXK1_MLA + 2 * 7168) + gated(7168, 18432) + 60 * AXK1_MOE + 7168
AXK1_ACTIVE = AXK1 - 60 * (192 - 8) * gated(7168, 2048)


# ------------------------------------------------------------------ Apertus-v1.5-8B's text model
# (Apertus1p5TextForCausalLM, the class defaults): 32 layers of MHA 32 heads x 128 without bias, q_norm / k_norm of
# 128; the MLP up 4096 -> 14336 -> xIELU (alpha_p, alpha_n: two parameters) -> down; two RMSNorms a layer; embedding
# 266752 rows, lm_head output_vocab_size rows (None: vocab_size), untied
def apertus1p5_text(head_rows: int) -> int:
    layer = gqa(4096, 32, 32, 128) + qk_norm(128) + 2 * lin(4096, 14336) + 2 + 2 * 4096
    return 266752 * 4096 + head_rows * 4096 + 32 * layer + 4096


APERTUS_1P5_TEXT = apertus1p5_text(266752)


# ------------------------------------------------------------------ HRM-Text-1B (HrmTextForCausalLM, the class
# defaults as __post_init__ leaves them: num_layers_per_stack 16, num_hidden_layers written as 16 x H_cycles 2 x
# (L_cycles 3 + 1) = 128 cache slots): two stacks (L_module, H_module) of 16 layers each, run in cycles; a layer is
# MHA 12 heads x 128 (q / k / v / o 1536 square) with a sigmoid gate_proj 1536 -> 1536, a gated MLP of 4096, and two
# weightless RMSNorms (HrmTextRMSNorm has no weight; each stack's final_norm neither); z_L_init (1536, an
# nn.Parameter); untied 151808
HRM_LAYER = 5 * lin(1536, 12 * 128) + gated(1536, 4096)
HRM_TEXT_1B = 2 * 151808 * 1536 + 2 * 16 * HRM_LAYER + 1536


# ------------------------------------------------------------------ Ergo (ErgoForCausalLM, the class defaults): 64
# layers, full attention at (i + 1) % 4 == 0; a fused qkv_proj 8192 -> (64 + 2 x 8) x 128, o_proj, q_norm / k_norm of
# 128; layer 0 a non-gated relu2 MLP up / down of 32768; 63 MoE layers of 256 non-gated relu2 experts of 4096 (up,
# down) top-8, each expert followed by its own RMSNorm (post_expert_norm: 256 x 8192), a router (fp32) with its
# correction bias, a shared relu2 expert of 8192 ending in an RMSNorm; four RMSNorms and two residual gates (8192 each)
# a layer; lm_head untied (ErgoForCausalLM names no tied weights)
ERGO_ATTENTION = lin(8192, (64 + 2 * 8) * 128) + lin(64 * 128, 8192) + qk_norm(128)
ERGO_MOE = (router(8192, 256, True) + 256 * (2 * 8192 * 4096 + 8192) + 2 * 8192 * 8192 + 8192)
ERGO = (2 * 262144 * 8192 + 64 * (ERGO_ATTENTION + 6 * 8192) + 2 * 8192 * 32768 + 63 * ERGO_MOE + 8192)


HAND: dict[str, int] = {
    "ibm-granite--granite-swash-2b": GRANITE_SWASH_2B,
    "ibm-granite--granite-swash-3b-a600m": GRANITE_SWASH_3B,
    "Aleph-Alpha--Kolibri-1": KOLIBRI_1,
    "skt--A.X-K1": AXK1,
    "swiss-ai--Apertus-v1.5-8B-text": APERTUS_1P5_TEXT,
    "sapientinc--HRM-Text-1B": HRM_TEXT_1B,
    "Amazon-FMR--Ergo": ERGO,
}
