"""Sixteenth round of families outside the catalog (tests/data/configs_unseen/round16/, SOURCES.md's "Sixteenth round
(stop 35)"): families no earlier round nor the catalog holds (btlm, grok-1, instructblip, idefics; bark refused),
and held families' variants whose switches the held files leave untried (Falcon-RW's ALiBi with biases and two
LayerNorms a layer, RedPajama-INCITE's sequential GPT-NeoX residual, Jamba-1.5-Large's size). Each counts to the
total worked out by hand, tensor by tensor, from the modeling code (transformers 5.25.0's modeling_falcon.py,
modeling_instructblip.py, modeling_idefics.py / perceiver.py / vision.py, modeling_jamba.py, configuration_bark.py,
read for this round, not installed; the remote modeling_btlm.py and modeling_grok1.py as recalled), written before
the reader was run on them, and to within 1% of the published total where one is published with that precision."""
from __future__ import annotations

import pytest

from hand_counts import UNSEEN, Round, count, gated, gqa, lin, ln
from solver.specs.dtypes import KV16
from solver.errors import InputError
from solver.specs.config.read import parse_model_config
from test_unseen_configs_round15 import BLIP2_VISION, jais_layer

DATA = UNSEEN / "round16"
ROUND = Round(DATA)
_load, _spec, _total = ROUND.load, ROUND.spec, ROUND.total


# ------------------------------------------------------------------ BTLM-3B-8K (remote modeling_btlm.py, GPT-2's names)
# BTLMBlock: ln_1 / ln_2 LayerNorms (biased); BTLMAttention: c_attn (h -> 3h) and c_proj, Conv1D with biases; BTLMMLP
# under swiglu: c_fc and c_fc2 (h -> n_inner) and c_proj (n_inner -> h), biased; ALiBi (no wpe); ln_f; head tied to
# wte (BTLMConfig leaves tie_word_embeddings to PretrainedConfig's True). JAIS's block (round 15's jais_layer), as
# Cerebras wrote both
BTLM = 50257 * 2560 + 32 * jais_layer(2560, 6826) + ln(2560)


# ------------------------------------------------------------------ Falcon-RW-1B (modeling_falcon.py)
# FalconAttention: query_key_value h -> 3h (multi_query false, new_decoder_architecture false: every head its own K / V)
# and dense h -> h, both biased under bias true; FalconMLP dense_h_to_4h / dense_4h_to_h (4h: ffn_hidden_size unset),
# biased; parallel_attn false: input_layernorm and post_attention_layernorm (nn.LayerNorm, biased); ALiBi (no rotary,
# no table); ln_f; lm_head tied (FalconConfig's tie_word_embeddings True)
def falcon_rw_layer(h: int) -> int:
    return lin(h, 3 * h, bias=True) + lin(h, h, bias=True) + lin(h, 4 * h, bias=True) + lin(4 * h, h, bias=True) \
        + 2 * ln(h)


FALCON_RW_1B = 50304 * 2048 + 24 * falcon_rw_layer(2048) + ln(2048)


# ------------------------------------------------------------------ RedPajama-INCITE-7B-Base (modeling_gpt_neox.py)
# GPTNeoXLayer: input_layernorm / post_attention_layernorm (biased LayerNorms, two whatever use_parallel_residual),
# query_key_value h -> 3h and dense (biased), dense_h_to_4h / dense_4h_to_h (biased); final_layer_norm; embed_out untied
REDPAJAMA_7B = 2 * 50432 * 4096 + 32 * (lin(4096, 3 * 4096, True) + lin(4096, 4096, True) + lin(4096, 16384, True)
                                        + lin(16384, 4096, True) + 2 * ln(4096)) + ln(4096)


# ------------------------------------------------------------------ Jamba-1.5-Large (modeling_jamba.py)
# JambaMambaMixer at d_inner = 2 x 8192: in_proj (h -> 2 d_inner), conv1d (d_inner x 4, biased), x_proj (d_inner ->
# dt_rank + 2 d_state), dt_proj (dt_rank -> d_inner, biased), A_log (d_inner x 16), D (d_inner), out_proj, and the
# dt / B / C RMSNorms (dt_rank, 16, 16); attention 64 / 8 heads x 128, no biases; 72 layers, attention where
# i % 8 == 4 (9), Mamba in 63; experts where i % 2 == 1 (36: router h -> 16, 16 gated experts of 24576), the dense
# gated 24576 MLP in 36; two RMSNorms a layer; final norm; untied head
def jamba_mamba(h: int, expand: int, rank: int, state: int, conv: int) -> int:
    d = expand * h
    return (lin(h, 2 * d) + d * conv + d + lin(d, rank + 2 * state) + lin(rank, d, True) + d * state + d + lin(d, h)
            + rank + 2 * state)


JAMBA_L_MLP = gated(8192, 24576)
JAMBA_LARGE = (2 * 65536 * 8192 + 63 * jamba_mamba(8192, 2, 512, 16, 4) + 9 * gqa(8192, 64, 8, 128)
               + 36 * JAMBA_L_MLP + 36 * (lin(8192, 16) + 16 * JAMBA_L_MLP) + 72 * 2 * 8192 + 8192)
JAMBA_LARGE_ACTIVE = JAMBA_LARGE - 36 * 14 * JAMBA_L_MLP


# ------------------------------------------------------------------ Grok-1 (remote modeling_grok1.py, hpcai-tech)
# DecoderLayer: MultiHeadAttention (q / k / v / o, 48 / 8 heads x 128, no biases); MoeBlock: gate (h -> 8, no bias)
# and 8 MoeMLP experts (linear, linear_v: h -> 32768; linear_1: 32768 -> h); four RMSNorms with weights
# (pre_attn_norm, post_attn_norm, pre_moe_norm, post_moe_norm); final norm; lm_head tied (tie_word_embeddings true)
def grok_layer(experts: int) -> int:
    return gqa(6144, 48, 8, 128) + lin(6144, 8) + experts * gated(6144, 32768) + 4 * 6144


GROK_1 = 131072 * 6144 + 64 * grok_layer(8) + 6144
GROK_1_ACTIVE = 131072 * 6144 + 64 * grok_layer(2) + 6144


# ------------------------------------------------------------------ InstructBLIP-Vicuna-7B (modeling_instructblip.py)
# Vision: Blip2's tower (class token, biased patch Conv2d, 257 positions, 39 layers with the q / v-biased fused qkv,
# post_layernorm): round 15's BLIP2_VISION. Q-Former (InstructBlipQFormerModel): embeddings (word_embeddings
# vocab_size x h, position_embeddings 512 x h, a LayerNorm; no other top-level norm); 12 layers of self-attention
# (query / key / value / dense biased, a LayerNorm), cross-attention on layers 0, 2, ..., 10 (key / value from 1408),
# and BOTH feed-forwards (intermediate / output for the instruction tokens, intermediate_query / output_query for the
# queries), each biased with a LayerNorm. query_tokens 32 x 768, language_projection 768 -> 4096 (biased). Vicuna-7B:
# Llama-7B with 32001 rows, untied
def instructblip_qformer(h: int, inter: int, layers: int, every: int, enc: int, vocab: int, positions: int) -> int:
    attn = 4 * lin(h, h, bias=True) + ln(h)
    cross = lin(h, h, bias=True) + 2 * lin(enc, h, bias=True) + lin(h, h, bias=True) + ln(h)
    ffn = lin(h, inter, bias=True) + lin(inter, h, bias=True) + ln(h)
    embeddings = vocab * h + positions * h + ln(h)
    return embeddings + sum(attn + (cross if i % every == 0 else 0) + 2 * ffn for i in range(layers))


VICUNA_7B = 2 * 32001 * 4096 + 32 * (gqa(4096, 32, 32, 128) + gated(4096, 11008) + 2 * 4096) + 4096
INSTRUCTBLIP_QFORMER = 32 * 768 + instructblip_qformer(768, 3072, 12, 2, 1408, 30523, 512) + lin(768, 4096, True)
INSTRUCTBLIP = VICUNA_7B + BLIP2_VISION + INSTRUCTBLIP_QFORMER


# ------------------------------------------------------------------ IDEFICS-9B (modeling_idefics.py, perceiver.py, vision.py)
# Text: Llama-7B (32 layers, untied) with IdeficsDecoupledEmbedding / IdeficsDecoupledLinear: additional_vocab_size 2
# more rows in the embedding and 2 more outputs in the head. Gated cross-attention layers, num_hidden_layers //
# cross_layer_interval = 8 of them beside the 32: q (h -> h), k / v (vision embed_dim 1280 -> h), o (h -> h), no
# biases; the gated MLP of intermediate_size; two RMSNorms; alpha_cross_attn and alpha_dense (alpha_type float: one
# value each). Vision: IdeficsVisionTransformer (CLIP ViT-H/14: class token, patch Conv2d without bias, 257 positions,
# pre_layrnorm, 32 layers of biased q / k / v / out_proj, fc1 / fc2, two LayerNorms; post_layernorm). Perceiver
# (embed_dim 1280, depth 6, 16 heads x 96, 64 latents): latents; per block IdeficsPerceiverAttention (context and
# latents LayerNorms, q / k / v 1280 -> 1536 and output_proj back, no biases) and IdeficsMLP (a LayerNorm, fc 1280 ->
# 5120, c_proj back, no biases); a closing LayerNorm
def clip_tower(h: int, inter: int, layers: int, image: int, patch: int) -> int:
    layer = 4 * lin(h, h, True) + lin(h, inter, True) + lin(inter, h, True) + 2 * ln(h)
    return h + 3 * patch * patch * h + ((image // patch) ** 2 + 1) * h + ln(h) + layers * layer + ln(h)


def idefics_perceiver(h: int, depth: int, heads: int, d: int, latents: int) -> int:
    block = 2 * ln(h) + 3 * lin(h, heads * d) + lin(heads * d, h) + ln(h) + lin(h, 4 * h) + lin(4 * h, h)
    return latents * h + depth * block + ln(h)


IDEFICS_CROSS = lin(4096, 4096) + 2 * lin(1280, 4096) + lin(4096, 4096) + gated(4096, 11008) + 2 * 4096 + 2
IDEFICS_9B = (2 * (32000 + 2) * 4096 + 32 * (gqa(4096, 32, 32, 128) + gated(4096, 11008) + 2 * 4096) + 4096
              + 8 * IDEFICS_CROSS + clip_tower(1280, 5120, 32, 224, 14) + idefics_perceiver(1280, 6, 16, 96, 64))


HAND: dict[str, int] = {
    "cerebras--btlm-3b-8k-base": BTLM,
    "tiiuae--falcon-rw-1b": FALCON_RW_1B,
    "togethercomputer--RedPajama-INCITE-7B-Base": REDPAJAMA_7B,
    "ai21labs--AI21-Jamba-Large-1.5": JAMBA_LARGE,
    "hpcai-tech--grok-1": GROK_1,
    "Salesforce--instructblip-vicuna-7b": INSTRUCTBLIP,
}  # IDEFICS-9B is refused (REFUSALS): IDEFICS_9B above is its hand count, for the day the reader counts it

# Published totals precise enough for a 1% check (SOURCES.md names each)
PUBLISHED: dict[str, float] = {
    "ai21labs--AI21-Jamba-Large-1.5": 398e9,  # the card: 398B total
    "hpcai-tech--grok-1": 314e9,  # xAI's release: 314B
    "togethercomputer--RedPajama-INCITE-7B-Base": 6.9e9,  # the card: a 6.9B parameter model
}

# MoE active (hand, published or None): Jamba-1.5-Large's card says 94B active; Grok-1's release says only "25% of
# the weights active on a given token" (78.5B of 314B): 83.76B here with the tied table, not held to it
ACTIVE: dict[str, tuple[int, float | None]] = {
    "ai21labs--AI21-Jamba-Large-1.5": (JAMBA_LARGE_ACTIVE, 94e9),
    "hpcai-tech--grok-1": (GROK_1_ACTIVE, None),
}

# 398B and 316B at bf16 do not fit 8 x 80 GB
SOLVE_CARDS: dict[str, int] = {"ai21labs--AI21-Jamba-Large-1.5": 16, "hpcai-tech--grok-1": 16}
# contexts: RedPajama-INCITE's and Vicuna's 2,048 positions; Falcon-RW-1B's 2,048 (ALiBi, trained at 2,048)
SOLVE_ARGS: dict[str, list[str]] = {name: ["--isl", "1536", "--osl", "512"] for name in (
    "togethercomputer--RedPajama-INCITE-7B-Base", "Salesforce--instructblip-vicuna-7b", "tiiuae--falcon-rw-1b")}

# Bytes of K/V per token of context at bf16 (attention layers x K/V heads x 2 x head_dim x 2)
KV_BYTES_PER_TOKEN: dict[str, int] = {
    "cerebras--btlm-3b-8k-base": 32 * 32 * 80 * 4, "tiiuae--falcon-rw-1b": 24 * 32 * 64 * 4,
    "togethercomputer--RedPajama-INCITE-7B-Base": 32 * 32 * 128 * 4, "ai21labs--AI21-Jamba-Large-1.5": 9 * 8 * 128 * 4,
    "hpcai-tech--grok-1": 64 * 8 * 128 * 4, "Salesforce--instructblip-vicuna-7b": 32 * 32 * 128 * 4,
}



def test_jamba_large_keeps_a_conv_tail_and_an_ssm_state_per_mamba_layer_per_sequence() -> None:
    # 63 Mamba layers x (d_inner 16384 x d_state 16 + (d_conv 4 - 1) x 16384) x 2 bytes = 39,223,296 B a sequence
    per_seq = sum(layer.blocks[0].state(KV16, 1).constant_bytes for layer in _spec("ai21labs--AI21-Jamba-Large-1.5").layers)
    assert per_seq == 63 * (16384 * 16 + 3 * 16384) * 2


# ------------------------------------------------------------------ reading rules added this round


def test_btlm_biases_every_linear_and_norm_and_ties_its_head() -> None:
    # Before this round: 2,773,900,800 (unknown family): no biases, RMSNorms, an untied head (+128,657,920)
    spec = _spec("cerebras--btlm-3b-8k-base")
    assert spec.tie_word_embeddings and spec.norm_bias and spec.position_encoding == "alibi"
    cfg = _load("cerebras--btlm-3b-8k-base")
    cfg["position_embedding_type"] = "learned"
    with pytest.raises(InputError, match="position_embedding_type"):
        parse_model_config(cfg, "x")


def test_grok_1_norms_before_and_after_attention_and_the_moe_block() -> None:
    # Before this round: 315,684,034,560, two RMSNorms a layer read for Grok-1's four (64 x 2 x 6144 short)
    assert {layer.norms for layer in _spec("hpcai-tech--grok-1").layers} == {4}


def test_instructblip_qformer_embeds_the_instruction_and_runs_both_feed_forwards() -> None:
    # Before this round: refused naming qformer_config (round 15's unread sub-config rule); counted now
    (enc,) = _spec("Salesforce--instructblip-vicuna-7b").encoders
    assert enc.params == BLIP2_VISION + INSTRUCTBLIP_QFORMER
    cfg = _load("Salesforce--instructblip-vicuna-7b")
    cfg["qformer_config"]["vocab_size"] = 30522  # the class default: one [DEC] row fewer
    assert HAND["Salesforce--instructblip-vicuna-7b"] - count(cfg) == 768
    cfg["qformer_config"] = {"model_type": "instructblip_qformer"}  # InstructBlipQFormerConfig's defaults
    assert HAND["Salesforce--instructblip-vicuna-7b"] - count(cfg) == 768


def test_a_blip2_qformer_has_no_embeddings_of_its_own() -> None:
    # the same file read as BLIP-2: one LayerNorm for the embeddings, the text branch only under use_qformer_text_input
    cfg = _load("Salesforce--instructblip-vicuna-7b")
    cfg["model_type"], cfg["vision_config"]["model_type"] = "blip-2", "blip_2_vision_model"
    del cfg["qformer_config"]["vocab_size"]
    without = (30523 + 512) * 768 + 12 * (lin(768, 3072, True) + lin(3072, 768, True) + ln(768))
    assert HAND["Salesforce--instructblip-vicuna-7b"] - count(cfg) == without


def test_falcon_rw_gives_every_head_its_kv_and_a_layernorm_before_each_sublayer() -> None:
    # multi_query false: K / V of every head in query_key_value; parallel_attn false: input_layernorm and
    # post_attention_layernorm; under parallel_attn true one input_layernorm feeds both
    cfg = _load("tiiuae--falcon-rw-1b")
    cfg["parallel_attn"] = True
    assert HAND["tiiuae--falcon-rw-1b"] - count(cfg) == 24 * ln(2048)
    cfg = _load("tiiuae--falcon-rw-1b")
    cfg["bias"] = False
    assert HAND["tiiuae--falcon-rw-1b"] - count(cfg) == 24 * (3 * 2048 + 2048 + 4 * 2048 + 2048)


def test_falcon_without_max_position_embeddings_takes_falcon_configs_2048() -> None:
    # FalconConfig(max_position_embeddings=2048): Falcon-RW-1B (and Falcon-7B / 40B) write none. Before: no context,
    # so the default 4,352-token request passed without a note; a written value still wins (Falcon-11B's 8192)
    from solver.specs.notes import context_notes

    spec = _spec("tiiuae--falcon-rw-1b")
    assert spec.max_position_embeddings == 2048
    assert "exceeds tiiuae--falcon-rw-1b's max_position_embeddings 2,048" in context_notes(spec, 4352)[0]
    assert context_notes(spec, 2048) == []
    cfg = _load("tiiuae--falcon-rw-1b")
    cfg["max_position_embeddings"] = 8192
    assert parse_model_config(cfg, "x").max_position_embeddings == 8192


def test_gpt_neox_sequential_residual_keeps_two_layernorms_a_layer() -> None:
    cfg = _load("togethercomputer--RedPajama-INCITE-7B-Base")
    cfg["use_parallel_residual"] = True
    assert count(cfg) == HAND["togethercomputer--RedPajama-INCITE-7B-Base"]


# ------------------------------------------------------------------ refused this round: one line each

IDEFICS = "HuggingFaceM4--idefics-9b"

REFUSALS: dict[str, str] = {
    # before: 7,374,422,016 for IDEFICS_9B's 8,929,675,280 by hand: the Llama and the CLIP tower alone (the 8 gated
    # cross-attention layers, the perceiver and the 2 extra rows of embedding and head dropped without a word)
    IDEFICS: r"model_type: 'idefics': IDEFICS-1's gated cross-attention layers",
    # before: the same line (Bark: three GPT-style sub-models and an EnCodec codec, no text_config)
    "suno--bark": r"codec_config: given: a neural audio codec",
}
