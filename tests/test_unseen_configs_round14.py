"""Fourteenth round of families outside the catalog (tests/data/configs_unseen/round14/, SOURCES.md's "Fourteenth
round (stop 35)"): families no earlier round nor the catalog holds (internlm, orion, gpt_neox_japanese,
modernbert-decoder; zamba, csm, t5gemma and modernbert refused) and round 13's MiMo-V2-Flash, refused then, counted
now. Each counts to the total worked out by hand, tensor by tensor, from the modeling code (transformers 5.25.0's
modeling_gpt_neox_japanese.py, modeling_modernbert_decoder.py, modeling_mimo_v2_flash.py, modeling_zamba.py, read for
this round, not installed; InternLM's and Orion's remote modeling_internlm.py / modeling_orion.py as recalled), written
before the reader was run on them, and to within 1% of the published total where one is published with that
precision."""
from __future__ import annotations

import pytest

from hand_counts import UNSEEN, Round, gated, gqa, lin, ln
from test_unseen_configs_round13 import MIMO, MIMO_ACTIVE

DATA = UNSEEN / "round14"
ROUND = Round(DATA)
_load, _spec, _total = ROUND.load, ROUND.spec, ROUND.total


# ------------------------------------------------------------------ InternLM (v1, remote modeling_internlm.py)
# InternLMAttention: q / k / v / o_proj all take bias=config.bias; InternLMMLP: gate / up / down without bias;
# RMSNorms (weight only); untied
def internlm_layer(h: int, inter: int, heads: int) -> int:
    return gqa(h, heads, heads, h // heads, qkv_bias=True, out_bias=True) + gated(h, inter) + 2 * h


INTERNLM = 2 * 103168 * 4096 + 32 * internlm_layer(4096, 11008, 32) + 4096


# ------------------------------------------------------------------ Orion (remote modeling_orion.py, vLLM orion.py)
# OrionDecoderLayer: Llama's attention and gated MLP without biases, but input_layernorm / post_attention_layernorm
# and the final norm are nn.LayerNorm (a weight and a bias each, eps from rms_norm_eps); untied
ORION = 2 * 84608 * 5120 + 40 * (gqa(5120, 40, 40, 128) + gated(5120, 15360) + 2 * ln(5120)) + ln(5120)


# ------------------------------------------------------------------ GPT-NeoX-Japanese (modeling_gpt_neox_japanese.py)
# GPTNeoXJapaneseAttention: query_key_value (h -> 3h) and dense without bias; dense_bias (h) ONLY in the last layer
# (use_bias = layer_number == num_hidden_layers - 1); MLP dense_h_to_4h / dense_4h_to_h of hidden x
# intermediate_multiple_size, no bias, GELU (not gated); two LayerNorms a layer, the final LayerNorm; embed_out untied
# (the file writes tie_word_embeddings false)
def neoxj_layer(h: int, mult: int) -> int:
    return lin(h, 3 * h) + lin(h, h) + lin(h, mult * h) + lin(mult * h, h) + 2 * ln(h)


NEOX_JAPANESE = 2 * 32000 * 2560 + 32 * neoxj_layer(2560, 4) + 2560 + ln(2560)


# ------------------------------------------------------------------ Ettin decoder (modeling_modernbert_decoder.py)
# ModernBertDecoderEmbeddings: tok_embeddings and a LayerNorm (norm_bias false: weight only). Each layer: attn_norm
# (nn.Identity in layer 0), q / k / v / Wo without bias, mlp_norm, Wi (h -> 2 x intermediate: input and gate) and Wo;
# final_norm. ModernBertDecoderForCausalLM: lm_head is a prediction head (dense h x h, bias classifier_bias false, GELU,
# a LayerNorm), then decoder (tied to tok_embeddings) with a bias of vocab (decoder_bias true)
def ettin_layer(h: int, inter: int) -> int:
    return 4 * lin(h, h) + lin(h, 2 * inter) + lin(inter, h) + h  # + mlp_norm; attn_norm counted apart


ETTIN = 50368 * 768 + 768 + 22 * ettin_layer(768, 1152) + 21 * 768 + 768 + lin(768, 768) + 768 + 50368


HAND: dict[str, int] = {
    "internlm--internlm-7b": INTERNLM,
    "OrionStarAI--Orion-14B-Base": ORION,
    "abeja--gpt-neox-japanese-2.7b": NEOX_JAPANESE,
    "jhu-clsp--ettin-decoder-150m": ETTIN,
    # round 13's hand count (test_unseen_configs_round13.py): 9 full layers of 4 K/V heads, 39 sliding of 8 with a sink
    # per head, head_dim 192 and v_head_dim 128; layer 0 dense, 47 MoE of 256 experts
    "XiaomiMiMo--MiMo-V2-Flash": MIMO,
}

# Published totals precise enough for a 1% check (SOURCES.md names each)
PUBLISHED: dict[str, float] = {
    "XiaomiMiMo--MiMo-V2-Flash": 309e9,  # the model card: 309B total parameters
}

# MoE active (hand, published or None): the card's 15B active is not met within 2% (15.45B with the embedding and the
# head, 14.20B without), not held
ACTIVE: dict[str, tuple[int, float | None]] = {
    "XiaomiMiMo--MiMo-V2-Flash": (MIMO_ACTIVE, None),
}

# MiMo-V2-Flash's 309B at bf16 (618 GB) does not fit 8 H100s with room for a cache
SOLVE_CARDS: dict[str, int] = {"XiaomiMiMo--MiMo-V2-Flash": 16}
# contexts: InternLM-7B's and GPT-NeoX-Japanese's 2048 positions
SOLVE_ARGS: dict[str, list[str]] = {"internlm--internlm-7b": ["--isl", "1536", "--osl", "512"],
                                    "abeja--gpt-neox-japanese-2.7b": ["--isl", "1536", "--osl", "512"]}

# Bytes of K/V per token of context at bf16 of the layers whose cache grows with the context (layers x K/V heads x
# (head_dim + v_head_dim) x 2): Ettin's 8 full layers (0, 3, ..., 21) of 12 heads x 64; MiMo's 9 full layers of 4 heads
# x (192 + 128); the sliding layers hold a window apiece (test below)
KV_BYTES_PER_TOKEN: dict[str, int] = {
    "internlm--internlm-7b": 32 * 32 * 128 * 4, "OrionStarAI--Orion-14B-Base": 40 * 40 * 128 * 4,
    "abeja--gpt-neox-japanese-2.7b": 32 * 32 * 80 * 4, "jhu-clsp--ettin-decoder-150m": 8 * 12 * 64 * 4,
    "XiaomiMiMo--MiMo-V2-Flash": 9 * 4 * (192 + 128) * 2,
}


@pytest.mark.parametrize("name", sorted(KV_BYTES_PER_TOKEN))
def test_kv_cache_per_token_is_the_hand_figure(name: str) -> None:
    layers = [layer for layer in _spec(name).layers if layer.mixer.window is None]
    assert sum(layer.blocks[0].state(2, 1).per_token_bytes for layer in layers) == KV_BYTES_PER_TOKEN[name]


# Zamba-7B-v1 (refused; modeling_zamba.py): 76 Mamba layers (in_proj 3712 -> 2 x 7424, a biased depthwise conv of 4,
# x_proj / dt_proj / dt bias / A_log / D per mamba head (2 heads of 3712), out_proj, an RMSNorm); 13 of them hybrid
# (layers_block_type: 2, then every 6th from 7), each with its own linear 3712 x 3712 and a run of ONE shared
# attention + MLP block (attention from 2 x hidden = 7424 wide input: q / k / v 7424 x 7424, o 7424 -> 3712; gated
# MLP 14848; RMSNorms of 7424 and 3712), whose weights are stored once; tied head
def zamba_mamba_layer(h: int, expand: int, heads: int, dt_rank: int, d_state: int, conv: int) -> int:
    inner = expand * h
    head_dim = inner // heads
    return (lin(h, 2 * inner) + inner * conv + inner + heads * (dt_rank + 2 * d_state) * head_dim
            + heads * head_dim * dt_rank + inner + inner * d_state + inner + lin(inner, h) + h)


ZAMBA_SHARED = 3 * lin(7424, 7424) + lin(7424, 3712) + gated(3712, 14848) + 7424 + 3712
ZAMBA = 32000 * 3712 + 76 * zamba_mamba_layer(3712, 2, 2, 232, 16, 4) + 13 * lin(3712, 3712) + ZAMBA_SHARED + 3712
