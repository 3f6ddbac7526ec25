"""Thirteenth round of families outside the catalog (tests/data/configs_unseen/round13/, SOURCES.md's "Thirteenth
round (stop 35)"): families no earlier round nor the catalog holds (mimo_v2_flash, cwm, helium, nanochat,
openai-gpt, ctrl, vipllava, llava_next_video, aria; chameleon refused); round 12's Idefics2 stays refused (its
perceiver connector is left open, SOURCES.md). Each counts to the total worked out by hand, tensor by tensor, from the modeling code
(transformers 5.25.0's modeling_mimo_v2_flash.py, modeling_cwm.py, modeling_helium.py, modeling_nanochat.py,
modeling_openai.py, modeling_ctrl.py, modeling_vipllava.py, modeling_llava_next_video.py, modeling_aria.py,
modeling_idefics3.py, modeling_clip.py, modeling_chameleon.py, read for this round, not installed), written before
the reader was run on them, and to within 1% of the published total where one is published with that precision."""
from __future__ import annotations

from hand_counts import UNSEEN, Round, gated, gqa, lin, ln
import pytest

from hand_counts import REFUSED, count
from solver.specs.dtypes import KV16
from solver.errors import InputError
from solver.specs.config.read import parse_model_config
from test_unseen_configs_round12 import clip_tower, siglip_like_tower

DATA = UNSEEN / "round13"
ROUND = Round(DATA)
_load, _spec, _total = ROUND.load, ROUND.spec, ROUND.total


def llama_text(vocab: int, h: int, inter: int, layers: int, heads: int, kv: int, d: int, tied: bool = False) -> int:
    """A Llama-lineage decoder: embedding (and an untied head), per layer GQA without biases, a gated MLP and two
    RMSNorms, the final RMSNorm"""
    return (1 if tied else 2) * vocab * h + layers * (gqa(h, heads, kv, d) + gated(h, inter) + 2 * h) + h


# ------------------------------------------------------------------ MiMo-V2-Flash (modeling_mimo_v2_flash.py)
# MiMoV2FlashAttention: q of 64 heads x head_dim 192, k of K/V heads x 192, v of K/V heads x v_head_dim 128, o from
# 64 x 128; a sliding-window layer holds twice the full layers' K/V heads (8, the config's swa_num_key_value_heads)
# and one sink logit per head (sinks: 64; add_swa_attention_sink_bias), a full layer 4 K/V heads and no sinks.
# Layer 0 is dense (gate / up / down of 16384), the other 47 MoE: 256 experts of 2048 (gate_up_proj, down_proj), a
# router of 256 x 4096 (its e_score_correction_bias a buffer), no shared expert. Two RMSNorms a layer; untied.
# Full layers: 0 and every sixth from 5 (hybrid_layer_pattern 0): 9; sliding: 39
def mimo_attention(kv: int, sinks: bool) -> int:
    return (lin(4096, 64 * 192) + lin(4096, kv * 192) + lin(4096, kv * 128) + lin(64 * 128, 4096)
            + (64 if sinks else 0))


MIMO_EXPERT = gated(4096, 2048)
# the router 256 x 4096 and its score-correction bias of 256 (a persistent buffer, in the checkpoint: transformers
# 5.25.0's count, stop 37)
MIMO_MOE = 256 * MIMO_EXPERT + 256 * 4096 + 256
MIMO_LAYERS = (9 * mimo_attention(4, False) + 39 * mimo_attention(8, True) + gated(4096, 16384) + 47 * MIMO_MOE
               + 48 * 2 * 4096)
MIMO = 2 * 152576 * 4096 + MIMO_LAYERS + 4096
MIMO_ACTIVE = MIMO - 47 * (256 - 8) * MIMO_EXPERT

# ------------------------------------------------------------------ Aria (modeling_aria.py, modeling_idefics3.py)
# AriaTextDecoderLayer: attention of 20 heads x 128, no biases; AriaTextMoELayer: 64 experts of intermediate_size
# 1664 (gate_up_proj, down_proj), a router of 64 x 2560, shared experts as one gated MLP of 1664 x 2 = 3328; two
# RMSNorms a layer; untied. The tower: Idefics3VisionTransformer at 980 / 14 (Idefics2's shape). AriaProjector: a
# query table of max(projector_patch_to_query_dict) = 256 rows x 1152; AriaCrossAttention: q / k / v 1152 x 1152
# without bias, an nn.MultiheadAttention (in_proj 3 x 1152 x 1152 with bias, out_proj 1152 x 1152 with bias), a
# biased linear 1152 x 1152, two LayerNorms (layer_norm, layer_norm_kv); the projector's LayerNorm; AriaProjectorMLP
# linear_in 1152 -> 2560 and linear_out 2560 -> 2560, both without bias
ARIA_EXPERT = gated(2560, 1664)
ARIA_LAYER = gqa(2560, 20, 20, 128) + 64 * ARIA_EXPERT + 64 * 2560 + gated(2560, 2 * 1664) + 2 * 2560
ARIA_TEXT = 2 * 100352 * 2560 + 28 * ARIA_LAYER + 2560
ARIA_TOWER = siglip_like_tower(1152, 4304, 27, 980, 14)
ARIA_CROSS = (3 * lin(1152, 1152) + lin(1152, 3 * 1152, bias=True) + lin(1152, 1152, bias=True)
              + lin(1152, 1152, bias=True) + 2 * ln(1152))
ARIA_PROJECTOR = 256 * 1152 + ARIA_CROSS + ln(1152) + lin(1152, 2560) + lin(2560, 2560)
ARIA = ARIA_TEXT + ARIA_TOWER + ARIA_PROJECTOR
ARIA_ACTIVE = ARIA_TEXT - 28 * (64 - 6) * ARIA_EXPERT  # the tower is not counted as active (round 9's convention)

# ------------------------------------------------------------------ LLaVA wrappers on Vicuna-7B (vocab 32064)
VICUNA = llama_text(32064, 4096, 11008, 32, 32, 32, 128)
CLIP_336 = clip_tower(1024, 4096, 24, 336, 14)
# VipLlavaMultiModalProjector: a LayerNorm over the 5 concatenated feature layers (vision_feature_layers), linear_1
# 5 x 1024 -> 4096 and linear_2, both biased
VIP_PROJECTOR = ln(5 * 1024) + lin(5 * 1024, 4096, bias=True) + lin(4096, 4096, bias=True)
# LlavaNextVideoModel: LLaVA-NeXT's projector (linear_1 / linear_2, biased) and image_newline (4096); the video
# pooler (spatial_pool_mode "average") an AvgPool2d, no weights
NEXT_VIDEO_PROJECTOR = lin(1024, 4096, bias=True) + lin(4096, 4096, bias=True) + 4096


def gpt1_layer(h: int) -> int:
    """OpenAI GPT's Block: c_attn (h -> 3h) and c_proj Conv1Ds, biased; ln_1 after attention; MLP c_fc (h -> 4h) and
    c_proj, biased; ln_2"""
    return lin(h, 3 * h, bias=True) + lin(h, h, bias=True) + lin(h, 4 * h, bias=True) + lin(4 * h, h, bias=True) + 2 * ln(h)


def ctrl_layer(h: int, dff: int) -> int:
    """CTRL's EncoderLayer: Wq / Wk / Wv / dense biased; ffn Linear(h, dff), ReLU, Linear(dff, h), biased; two
    LayerNorms"""
    return 4 * lin(h, h, bias=True) + lin(h, dff, bias=True) + lin(dff, h, bias=True) + 2 * ln(h)


# refused this round (hybrid_layer_pattern, swa_num_key_value_heads and the sink switches unread); by hand it holds
# MIMO = 308,778,768,832 (-0.07% of the card's 309B), MIMO_ACTIVE 15,445,924,288 with the embedding and head.
# Counted from round 14 (round14/, test_unseen_configs_round14.py)

HAND: dict[str, int] = {
    # CwmForCausalLM: Llama-3's layer (48 / 8 heads x 128, gated 21504, no biases) x 64; untied
    "facebook--cwm": llama_text(128256, 6144, 21504, 64, 48, 8, 128),
    # HeliumForCausalLM: Llama's layer (20 / 20 heads x 128, gated 7040) x 24; untied
    "kyutai--helium-1-preview-2b": llama_text(48000, 2560, 7040, 24, 20, 20, 128),
    # NanoChatForCausalLM: q / k / v / o without biases, fc1 / fc2 (relu2, not gated) without biases; EVERY norm
    # (input, post-attention, q / k, final) is NanoChatRMSNorm, which holds no weight; untied
    "karpathy--nanochat-d32": 2 * 65536 * 2048 + 32 * (gqa(2048, 16, 16, 128) + 2 * lin(2048, 8192)),
    # OpenAIGPTLMHeadModel: tokens_embed, a learned positions_embed of n_positions rows, 12 post-norm Blocks and NO
    # final LayerNorm; lm_head tied
    "openai-community--openai-gpt": 40478 * 768 + 512 * 768 + 12 * gpt1_layer(768),
    # CTRLLMHeadModel: w (vocab x 1280), SINUSOIDAL positions (a non-persistent buffer of n_positions rows: no
    # parameters), 48 layers, the final LayerNorm; lm_head tied to w but with its own bias (vocab)
    "Salesforce--ctrl": 246534 * 1280 + 48 * ctrl_layer(1280, 8192) + ln(1280) + 246534,
    "llava-hf--vip-llava-7b-hf": VICUNA + CLIP_336 + VIP_PROJECTOR,
    "llava-hf--LLaVA-NeXT-Video-7B-hf": VICUNA + CLIP_336 + NEXT_VIDEO_PROJECTOR,
    "rhymes-ai--Aria": ARIA,
}

# Published totals precise enough for a 1% check (SOURCES.md names each)
PUBLISHED: dict[str, float] = {
    "openai-community--openai-gpt": 117e6,  # the GPT-2 paper's Table 2 sizes GPT-1 as 117M
    "Salesforce--ctrl": 1.63e9,  # the CTRL paper: "1.63 billion parameters"
    "rhymes-ai--Aria": 25.3e9,  # the hub badge, as recalled
}

# MoE active (hand, published or None): Aria's paper says 3.5B activated per text token (3.60B here without the
# embedding and head, 4.12B with them), not held
ACTIVE: dict[str, tuple[int, float | None]] = {
    "rhymes-ai--Aria": (ARIA_ACTIVE, None),
}

# CTRL's and GPT-1's contexts are 256 / 512 positions (CTRL's sinusoidal table is 50000 long, the model was trained on
# 256; GPT-1's learned table holds 512)
SOLVE_ARGS: dict[str, list[str]] = {"openai-community--openai-gpt": ["--isl", "384", "--osl", "128"],
                                    "Salesforce--ctrl": ["--isl", "384", "--osl", "128"],
                                    "karpathy--nanochat-d32": ["--isl", "1536", "--osl", "512"]}

# Bytes of K/V per token of context at bf16 (layers x K/V heads x head_dim x 2 x 2), for the layers whose cache grows
# with the context; CWM's 48 sliding layers (8192-token window) hold at most 8192 tokens each
KV_BYTES_PER_TOKEN: dict[str, int] = {
    "kyutai--helium-1-preview-2b": 24 * 20 * 128 * 4, "karpathy--nanochat-d32": 32 * 16 * 128 * 4,
    "openai-community--openai-gpt": 12 * 12 * 64 * 4, "Salesforce--ctrl": 48 * 16 * 80 * 4,
    "llava-hf--vip-llava-7b-hf": 32 * 32 * 128 * 4, "llava-hf--LLaVA-NeXT-Video-7B-hf": 32 * 32 * 128 * 4,
    "rhymes-ai--Aria": 28 * 20 * 128 * 4,
}



# ------------------------------------------------------------------ reading rules added this round


def test_nanochat_norms_hold_no_weights() -> None:
    # Before this round: 1,879,181,312, the 65 RMSNorms counted with weights (+133,120), the family unknown
    spec = _spec("karpathy--nanochat-d32")
    assert {layer.norms for layer in spec.layers} == {0} and not spec.final_norm


def test_gpt1_is_post_norm_with_no_final_norm_and_a_4x_mlp() -> None:
    # Before this round: refused, misleadingly, "intermediate_size: missing"
    spec = _spec("openai-community--openai-gpt")
    assert not spec.final_norm and spec.position_embeddings == 512 and spec.tie_word_embeddings


def test_ctrl_reads_dff_and_its_tied_head_keeps_a_bias() -> None:
    # Before this round: refused, misleadingly, "intermediate_size: missing" (CTRL writes dff)
    cfg = _load("Salesforce--ctrl")
    cfg["dff"] = 4096
    assert HAND["Salesforce--ctrl"] - count(cfg) == 48 * (2 * 1280 * 4096 + 4096)
    assert _spec("Salesforce--ctrl").lm_head_bias


def test_sinusoidal_positions_are_their_own_kind_and_hold_no_parameters() -> None:
    # Before this round XGLM's sinusoidal table was read as "rope" for the context notes; CTRL's 50000-row buffer
    # would be 64M parameters as a learned table
    from test_unseen_configs_round12 import ROUND as ROUND12
    for spec in (_spec("Salesforce--ctrl"), ROUND12.spec("facebook--xglm-564M")):
        assert spec.position_encoding == "sinusoidal" and spec.position_embeddings == 0


def test_vipllava_projector_normalises_the_concatenated_feature_layers() -> None:
    # Before this round: refused, misleadingly, "text_config.hidden_size: missing" (LlamaConfig()'s defaults)
    (enc,) = _spec("llava-hf--vip-llava-7b-hf").encoders
    assert enc.params == CLIP_336 + VIP_PROJECTOR
    cfg = _load("llava-hf--vip-llava-7b-hf")
    cfg["vision_feature_layers"] = [-2, -5]  # the plural (VipLlavaConfig's older name) sizes the projector's input
    assert HAND["llava-hf--vip-llava-7b-hf"] - count(cfg) == 3 * 1024 * (2 + 4096)


def test_llava_next_video_pooler_holds_no_weights_and_its_conv_mode_is_refused() -> None:
    # Before this round: refused, misleadingly, "text_config.hidden_size: missing"
    (enc,) = _spec("llava-hf--LLaVA-NeXT-Video-7B-hf").encoders
    assert enc.params == CLIP_336 + NEXT_VIDEO_PROJECTOR
    cfg = _load("llava-hf--LLaVA-NeXT-Video-7B-hf")
    cfg["spatial_pool_mode"] = "conv"
    with pytest.raises(InputError, match="spatial_pool_mode: 'conv': the video pooler's Conv2d"):
        parse_model_config(cfg, "x")


def test_aria_projector_is_learned_queries_cross_attending_to_the_patches() -> None:
    # Before this round: 25,289,834,352, the projector read as one linear 1152 -> 2560 and a norm (17,476,864 short)
    (enc,) = _spec("rhymes-ai--Aria").encoders
    assert enc.params == ARIA_TOWER + ARIA_PROJECTOR
    cfg = _load("rhymes-ai--Aria")
    cfg["projector_patch_to_query_dict"] = {"1225": 128}  # the largest value sizes the query table
    assert HAND["rhymes-ai--Aria"] - count(cfg) == 128 * 1152
    del cfg["projector_patch_to_query_dict"]
    with pytest.raises(InputError, match="projector_patch_to_query_dict: missing"):
        parse_model_config(cfg, "x")


def test_cwm_without_layer_types_has_every_fourth_layer_full_from_the_first() -> None:
    # Before this round: all 64 layers read as 8192-token windows (the count right, the 16 full layers' K/V capped
    # at 8192 tokens, silently)
    windows = [layer.mixer.window for layer in _spec("facebook--cwm").layers]
    assert windows == [None if i % 4 == 0 else 8192 for i in range(64)]
    # full layers' K/V grows with the context: 16 x 8 x 128 x 2 x 2 bytes a token
    full = [layer for layer in _spec("facebook--cwm").layers if layer.mixer.window is None]
    assert sum(layer.blocks[0].state(KV16, 1).per_token_bytes for layer in full) == 16 * 8 * 128 * 4


def test_rwkv4_under_another_model_type_is_refused_naming_its_mixer_field() -> None:
    # Before this round: "num_attention_heads: missing" (round 12's open item)
    cfg = _load("RWKV--rwkv-4-169m-pile", REFUSED)
    cfg["model_type"] = "rwkv_like"
    with pytest.raises(InputError, match=r"rescale_every: 6: describes a mixer other than attention.*"
                                         r"num_attention_heads: missing"):
        parse_model_config(cfg, "x")


# ------------------------------------------------------------------ refused this round: one line each


REFUSALS: dict[str, str] = {
    # before: refused on qk_layernorm (no convention); with that read, the VQ-VAE would have been left out silently
    "facebook--chameleon-7b": r"vq_config: given: a VQ-VAE image tokenizer",
}
