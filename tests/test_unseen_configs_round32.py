"""Thirty-second round of families outside the catalog (tests/data/configs_unseen/round32/, SOURCES.md's "Thirty-second
round (stop 36)"): 2026 model_types in transformers 5.25.0 that no earlier round nor models/ holds. Each file is its
config classes' defaults (the docstring names the checkpoint), written as to_dict would. Hand counts tensor by
tensor from transformers 5.25.0's modeling_*.py (read from the unzipped wheel, not installed); written before the
reader was run on them."""
from __future__ import annotations

import pytest

from hand_counts import UNSEEN, Round, count, gated, gqa, lin, ln
from solver.errors import InputError
from solver.specs.config.read import parse_model_config

DATA = UNSEEN / "round32"
ROUND = Round(DATA)
_load, _spec, _total = ROUND.load, ROUND.spec, ROUND.total


# ------------------------------------------------------------------ Gemma-4-unified (Gemma4UnifiedConfig() defaults).
# Text (Gemma4UnifiedTextModel): 30 layers, 2304 wide, layer_types 5 sliding : 1 full (full at 5, 11, ..., 29).
# Sliding layers: q / k / v / o of 8 / 4 heads x head_dim 256; full layers take per_layer_config's head_dim =
# global_head_dim 512 (kv heads stay 4: num_global_key_value_heads unset, attention_k_eq_v false), no biases. q_norm
# and k_norm of head_dim carry weights; v_norm is scale-free (with_scale=False). Four RMSNorms a layer, a gated MLP
# 2304 -> 9216 (use_double_wide_mlp false, no kv-shared layers); final norm; embedding 262144 x 2304 tied to the
# lm_head. Each layer's layer_scalar is a one-element buffer, not a parameter: not counted (as the catalog's Gemma-4).
# No vision tower: Gemma4UnifiedVisionEmbedder is patch_ln1 LayerNorm over the merged patch (16 x 3)^2 x 3 = 6912,
# a biased patch_dense 6912 -> mm_embed_dim 3840, patch_ln2, a factorized position table mm_posemb_size 1120 x 2 x
# 3840, pos_norm, then the multimodal embedder: a scale-free RMSNorm and a bias-free 3840 (output_proj_dims) -> 2304.
# No audio tower: the audio embedder is the same scale-free norm and a bias-free audio_embed_dim 640 -> 2304
def gemma4u_attention(h: int, d: int) -> int:
    return gqa(h, 8, 4, d) + 2 * d  # q_norm, k_norm of head_dim; v_norm has no weight


G4U_LAYER_SLIDING = gemma4u_attention(2304, 256) + 4 * 2304 + gated(2304, 9216)
G4U_LAYER_FULL = gemma4u_attention(2304, 512) + 4 * 2304 + gated(2304, 9216)
G4U_TEXT = 262144 * 2304 + 25 * G4U_LAYER_SLIDING + 5 * G4U_LAYER_FULL + 2304
G4U_VISION = ln(6912) + lin(6912, 3840, True) + ln(3840) + 1120 * 2 * 3840 + ln(3840) + lin(3840, 2304)
G4U_AUDIO = lin(640, 2304)
GEMMA4_UNIFIED = G4U_TEXT + G4U_VISION + G4U_AUDIO


HAND: dict[str, int] = {
    "google--gemma-4-12B-it": GEMMA4_UNIFIED,
}  # Muse-Spark's below its hand count (counted since stop 38, fixf)
ACTIVE: dict[str, tuple[int, float | None]] = {}
# Published totals precise enough for a 1% check: none (the class defaults are not the 12B checkpoint's sizes)
PUBLISHED: dict[str, float] = {}

# Bytes of K/V per token of context at bf16: Gemma-4-unified's 5 full layers of 4 K/V heads x 512; its 25 sliding
# layers stop at the 1024-token window
KV_BYTES_PER_TOKEN: dict[str, int] = {
    "google--gemma-4-12B-it": 5 * 2 * 4 * 512 * 2,
}


def test_gemma4_unified_hand_count_holds_five_full_layers() -> None:
    assert [i for i in range(30) if (i + 1) % 6 == 0] == [5, 11, 17, 23, 29]


# ------------------------------------------------------------------ reading rules added this round
_G4U = "google--gemma-4-12B-it"
SLIDING_KV = lin(2304, 4 * 256)  # one sliding layer's k or v projection
FULL_KV = lin(2304, 4 * 512)


def test_gemma4_unified_counts_its_qk_norms_four_norms_and_encoder_free_embedders() -> None:
    # Before this round refused, misleadingly: "vision_config.depth: missing" (the embedder has no tower); the text
    # model alone counted 3,010,602,240: no family line, so no q / k norms and two norms a layer of four (156,160 short)
    assert _total(_G4U) == GEMMA4_UNIFIED


@pytest.mark.parametrize("key", ["layer_types", "global_head_dim"])
def test_gemma4_unified_text_fields_left_out_take_the_class_pattern_and_global_head_dim(key: str) -> None:
    # Before: 70,781,440 short, the five full layers read at head_dim 256 (layer_types left out: every layer sliding)
    cfg = _load(_G4U)
    del cfg["text_config"][key]
    assert count(cfg) == GEMMA4_UNIFIED


def test_gemma4_unified_last_layer_is_full_whatever_layer_types_says() -> None:
    cfg = _load(_G4U)
    cfg["text_config"]["layer_types"][-1] = "sliding_attention"  # the class forces it back to full
    assert count(cfg) == GEMMA4_UNIFIED


def test_gemma4_kv_shared_layers_hold_no_k_v_projections_nor_k_norm() -> None:
    # Before: the last num_kv_shared_layers layers kept their k / v / k_norm (Gemma-3n's stored-but-unrun reading);
    # layers 20..29 hold two full (23, 29) and eight sliding layers
    cfg = _load(_G4U)
    cfg["text_config"]["num_kv_shared_layers"] = 10
    assert count(cfg) == GEMMA4_UNIFIED - 2 * (2 * FULL_KV + 512) - 8 * (2 * SLIDING_KV + 256)


def test_gemma4_double_wide_mlp_doubles_the_kv_shared_layers_mlp_only() -> None:
    # Before: use_double_wide_mlp was not read
    cfg = _load(_G4U)
    cfg["text_config"].update(num_kv_shared_layers=10, use_double_wide_mlp=True)
    assert count(cfg) == (GEMMA4_UNIFIED - 2 * (2 * FULL_KV + 512) - 8 * (2 * SLIDING_KV + 256)
                          + 10 * gated(2304, 9216))
    cfg["text_config"]["num_kv_shared_layers"] = 0
    assert count(cfg) == GEMMA4_UNIFIED


def test_gemma4_global_kv_heads_apply_only_under_attention_k_eq_v() -> None:
    # Before: num_global_key_value_heads 1 cut the full layers' K/V to one head though attention_k_eq_v was false
    cfg = _load(_G4U)
    cfg["text_config"]["num_global_key_value_heads"] = 1
    assert count(cfg) == GEMMA4_UNIFIED
    cfg["text_config"]["attention_k_eq_v"] = True  # one K/V head of 512, the value reusing the key: no v_proj
    assert count(cfg) == GEMMA4_UNIFIED - 5 * (2 * FULL_KV - lin(2304, 512))


def test_gemma4_per_layer_config_sizes_the_layers_it_lists() -> None:
    # the class saves per_layer_config (global_head_dim is popped): written, it alone sizes the layers it lists.
    # Before: not read (a per_layer_config other than the derived one silently miscounted)
    cfg = _load(_G4U)
    del cfg["text_config"]["global_head_dim"]
    cfg["text_config"]["per_layer_config"] = {str(i): {"head_dim": 512} for i in (5, 11, 17, 23, 29)}
    assert count(cfg) == GEMMA4_UNIFIED
    cfg["text_config"]["per_layer_config"]["29"] = {"head_dim": 512, "num_key_value_heads": 2}
    assert count(cfg) == GEMMA4_UNIFIED - 2 * lin(2304, 2 * 512)


def test_gemma4_per_layer_config_override_it_cannot_read_is_refused_naming_it() -> None:
    cfg = _load(_G4U)
    cfg["text_config"]["per_layer_config"] = {"5": {"head_dim": 512, "intermediate_size": 4096}}
    with pytest.raises(InputError, match=r"per_layer_config\.5\.intermediate_size"):
        parse_model_config(cfg, "x")


def test_gemma4_unified_vision_embedder_is_sized_by_its_merged_patch() -> None:
    cfg = _load(_G4U)
    cfg["vision_config"]["pooling_kernel_size"] = 2  # a 32 x 32 merged patch: 3072 pixels of RGB
    assert count(cfg) == GEMMA4_UNIFIED - (6912 - 3072) * (2 + 3840)


def test_gemma4_unified_vision_projection_must_read_the_patch_dense_width() -> None:
    cfg = _load(_G4U)
    cfg["vision_config"]["output_proj_dims"] = 2304
    with pytest.raises(InputError, match="output_proj_dims"):
        parse_model_config(cfg, "x")


def test_gemma4_unified_sub_configs_written_empty_take_the_class_defaults() -> None:
    cfg = _load(_G4U)
    cfg["vision_config"] = {"model_type": "gemma4_unified_vision"}
    cfg["audio_config"] = {"model_type": "gemma4_unified_audio"}
    assert count(cfg) == GEMMA4_UNIFIED
    cfg["audio_config"]["audio_embed_dim"] = 320
    assert count(cfg) == GEMMA4_UNIFIED - 320 * 2304


# ------------------------------------------------------------------ refused this round: one line each
# Muse-Spark-Open-816B-A42B counts since stop 38 (fixf; round32/, its hand count below); Inkling-2-Small since stop
# 38 (inkling: its text; inkling2b: its tower)
# ------------------------------------------------------- dots3-note-prev (Dots3NoteConfig() defaults; stop 37).
# refused/dots-studio--dots3-note-prev.json: the class defaults written as to_dict would, the __post_init__ lists and
# per_layer_config written out. Hand count tensor by tensor from modeling_dots3_note.py (transformers 5.25.0).
# Text (Dots3NoteTextModel): 46 layers, 5120 wide; layer_types "indexed_attention" at 0, 1 and every i % 4 == 1 (13
# layers), "sliding_attention" elsewhere (33). Every layer an MLA (Dots3NoteTextAttention) with q_a_proj, q_a_layernorm,
# q_b_proj, kv_a_proj_with_mqa, kv_a_layernorm, kv_b_proj, o_proj (no biases), a k_rope_only_layernorm of
# qk_rope_head_dim and a per-head gate g_proj hidden -> heads. The indexed layers take the top-level sizes (128 heads,
# q_lora 1024, kv_lora 512, nope 128, rope 64, v 128) and a DSA indexer (Dots3NoteTextIndexer: wq_b q_lora -> 64 x
# 128, wk hidden -> 128, a k_norm LayerNorm with a bias, weights_proj hidden -> 64); the sliding layers take
# per_layer_config's (64 heads, q_lora 1024, kv_lora 1024, nope 192, rope 64, v 128) and no indexer. MLP: layer 0
# dense 5120 -> 13824 gated; the other 45 an MoE of a router 256 x 5120 with an e_score_correction_bias buffer (256,
# persistent), 256 experts of gate_up 2 x 1536 x 5120 and down 5120 x 1536, one shared gated MLP of 1536. Two RMSNorms a
# layer, a final norm; embedding and lm_head 152064 x 5120 each (untied).
def dots3_mla(heads: int, q_lora: int, kv_lora: int, nope: int, rope: int, v: int, h: int = 5120) -> int:
    return (lin(h, q_lora) + q_lora + lin(q_lora, heads * (nope + rope)) + lin(h, kv_lora + rope) + kv_lora
            + lin(kv_lora, heads * (nope + v)) + lin(heads * v, h) + rope + lin(h, heads))


DOTS3_INDEXER = lin(1024, 64 * 128) + lin(5120, 128) + ln(128) + lin(5120, 64)
DOTS3_INDEXED = dots3_mla(128, 1024, 512, 128, 64, 128) + DOTS3_INDEXER
DOTS3_SLIDING = dots3_mla(64, 1024, 1024, 192, 64, 128)
DOTS3_MOE = 256 * 5120 + 256 + 256 * gated(5120, 1536) + gated(5120, 1536)
DOTS3_TEXT = (2 * 152064 * 5120 + 13 * DOTS3_INDEXED + 33 * DOTS3_SLIDING + 46 * 2 * 5120 + gated(5120, 13824)
              + 45 * DOTS3_MOE + 5120)
# Vision (Dots3NoteVisionModel): a biased Conv2d 3 x 14 x 14 -> 1536 and its RMSNorm; 42 blocks of norm1 / norm2
# RMSNorms, a bias-free qkv 1536 -> 3 x 1536 and proj, q_norm / k_norm of head_dim 64; blocks 0-24 a bias-free gated
# MLP 1536 -> 4224, blocks 25-41 routed experts only (Dots3NoteVisionMoE: pyramid_num_routed 4, 8, ..., 64, 64 experts
# of 2112, a router of experts x 1536, an e_score_correction_bias buffer of experts); a final RMSNorm; the merger: ln_q
# LayerNorm(1536) with a bias, Linear 4 x 1536 -> 6144 and 6144 -> adapter_out_dim 5120, both biased
DOTS3_VISION_EXPERTS = list(range(4, 65, 4)) + [64]
DOTS3_VISION = (lin(3 * 14 * 14, 1536, True) + 1536
                + 42 * (2 * 1536 + lin(1536, 3 * 1536) + lin(1536, 1536) + 2 * 64)
                + 25 * gated(1536, 4224) + sum(e * (gated(1536, 2112) + 1536 + 1) for e in DOTS3_VISION_EXPERTS)
                + 1536 + ln(1536) + lin(6144, 6144, True) + lin(6144, 5120, True))
# Audio (Dots3NoteAudioModel): a conv stem of three biased Conv2d 3 x 3 (1 -> 480, 480 -> 480 twice) and a bias-free
# conv_out 480 x 16 (conv_output_size, 128 mel bins / 8) -> 1280; 32 layers of q (biased), k (bias-free), v and o
# (biased) 1280 square, two RMSNorms, a biased gate_up 1280 -> 2 x 5120 and down 5120 -> 1280; a final RMSNorm; the
# adapter: a LayerNorm(1280) with a bias, fc1 1280 -> 5120 and fc2 5120 -> 5120, both biased
DOTS3_AUDIO = (lin(9, 480, True) + 2 * lin(480 * 9, 480, True) + lin(7680, 1280)
               + 32 * (3 * lin(1280, 1280, True) + lin(1280, 1280) + 2 * 1280 + lin(1280, 10240, True)
                       + lin(5120, 1280, True))
               + 1280 + ln(1280) + lin(1280, 5120, True) + lin(5120, 5120, True))
DOTS3_NOTE = DOTS3_TEXT + DOTS3_VISION + DOTS3_AUDIO


def test_dots3_note_hand_count_holds_thirteen_indexed_layers() -> None:
    assert [i for i in range(46) if i < 2 or i % 4 == 1] == [0, 1] + list(range(5, 46, 4))


def test_dots3_note_text_alone_counts_its_sliding_layers_at_per_layer_config_sizes() -> None:
    # since stop 38 (vlm2): the 33 sliding layers' MLA sizes (64 heads, kv_lora 1024, nope 192) come from
    # per_layer_config, attend over the 512 window and hold no indexer
    from hand_counts import REFUSED
    text = ROUND.load("dots-studio--dots3-note-prev", REFUSED)["text_config"]
    assert count(text) == DOTS3_TEXT


REFUSALS: dict[str, str] = {
    # the vision tower's routed experts (Dots3NoteVisionMoE, 17 blocks of 4 .. 64 experts: 5,918,048,864 of the
    # 6,871,277,920) are not modelled in a tower (its text model counts since stop 38, vlm2)
    "dots-studio--dots3-note-prev": r"vision_config\.num_local_experts: 64 experts in a vision tower",
}


def _refused(name: str) -> dict:
    from hand_counts import REFUSED
    return ROUND.load(name, REFUSED)

# ------------------------------------------- Muse-Spark (MuseSparkConfig() defaults; hand count stop 37, layerfeat6).
# refused/meta-models--Muse-Spark-Open-816B-A42B.json. Hand count tensor by tensor from modeling_muse_spark.py
# (transformers 5.25.0). Text (MuseSparkTextModel): 62 layers, 8192 wide, layer_types 3 sliding : 1 full (16 full),
# mlp_layer_types all "sparse". Attention: q / o 128 x 64, k / v 16 x 64, a bias-free gate_proj hidden -> 128 x 64;
# qk_norm and o_norm scale-free. Norms: input_layernorm and pre_feedforward_layernorm (centered, weight of hidden),
# post_feedforward_layernorm (input-scaled, weight of hidden); post_attention_layernorm scale-free. Two residual gates
# (MuseSparkResidualGate: one vector of hidden each). MoE (MuseSparkMoE): a router 256 x 8192 with an
# e_score_correction_bias buffer (256, persistent), pre_expert_proj 8192 -> moe_hidden_size 4096, a centered
# pre_expert_norm (4096), 256 experts of gate_up 2 x 4096 x 4096 and down 4096 x 4096 at the pooled width, ONE
# post_expert_norm (4096) in the experts module (not per expert), post_expert_proj 4096 -> 8192; no shared expert.
# Embedding 202048 x 8192 (its embed_norm scale-free), final RMSNorm, lm_head untied
MUSE_LAYER = (lin(8192, 8192) + 2 * lin(8192, 1024) + lin(8192, 8192) + lin(8192, 8192)
              + 3 * 8192 + 2 * 8192
              + 256 * 8192 + 256 + lin(8192, 4096) + 4096 + 256 * gated(4096, 4096) + 4096 + lin(4096, 8192))
MUSE_TEXT = 2 * 202048 * 8192 + 62 * MUSE_LAYER + 8192
# Vision (MuseSparkVisionModel): a bias-free patch linear patch_temporal 2 x 3 x 14^2 -> 1536, a position table
# pos_emb 32 x 32 x 1536, ln_pre, 50 blocks of two LayerNorms, biased q / k / v / proj 1536 square and a biased
# fc1 / fc2 1536 <-> 8960, ln_post; pixel_shuffle merges 2 x 2 (6144 = out_hidden_size), no weights. Adapter fc1
# 6144 -> 4096 and fc2 4096 -> 4096, vision_projection 4096 -> 8192, all bias-free; perception_emb_norm scale-free
MUSE_VISION = (lin(2 * 3 * 14 * 14, 1536) + 32 * 32 * 1536 + 2 * ln(1536)
               + 50 * (2 * ln(1536) + 4 * lin(1536, 1536, True) + lin(1536, 8960, True) + lin(8960, 1536, True)))
MUSE_ADAPTER = lin(6144, 4096) + lin(4096, 4096) + lin(4096, 8192)
# Audio (MuseSparkAudioModel): 4 stages; stage i a biased patch linear (previous width or 1 mono channel) x
# patch_sizes[i] -> hidden_sizes[i] and its RMSNorm, then depths[i] = 2 blocks of a biased depthwise Conv1d (kernel 7),
# an RMSNorm and a biased fc1 / fc2 at mlp_ratio 4; a final RMSNorm (2048), a biased proj 2048 -> 8192, post_proj_norm
MUSE_AUDIO_WIDTHS = [(1, 16, 256), (256, 6, 512), (512, 5, 1024), (1024, 4, 2048)]
MUSE_AUDIO = (sum(lin(i * p, o, True) + o + 2 * (o * 7 + o + o + lin(o, 4 * o, True) + lin(4 * o, o, True))
                  for i, p, o in MUSE_AUDIO_WIDTHS)
              + 2048 + lin(2048, 8192, True) + 8192)
MUSE_SPARK = MUSE_TEXT + MUSE_VISION + MUSE_ADAPTER + MUSE_AUDIO
# K/V per token at bf16: the 16 full layers x 2 x 16 x 64 x 2 B; the 46 sliding layers capped at the 2048 window
MUSE_SPARK_KV_BYTES_PER_TOKEN = 16 * 2 * 16 * 64 * 2
# 8 of 256 experts at the pooled width and everything else of the text (the towers run per image / clip): 46.09B
MUSE_SPARK_ACTIVE = MUSE_TEXT - 62 * (256 - 8) * gated(4096, 4096)
HAND["meta-models--Muse-Spark-Open-816B-A42B"] = MUSE_SPARK
ACTIVE["meta-models--Muse-Spark-Open-816B-A42B"] = (MUSE_SPARK_ACTIVE, None)  # "A42B": rounder than 2% (46.1B)
KV_BYTES_PER_TOKEN["meta-models--Muse-Spark-Open-816B-A42B"] = MUSE_SPARK_KV_BYTES_PER_TOKEN
SOLVE_CARDS: dict[str, int] = {"meta-models--Muse-Spark-Open-816B-A42B": 32}  # 1.64 TB at bf16


def test_muse_spark_hand_count_holds_the_files_layer_pattern() -> None:
    text = ROUND.load("meta-models--Muse-Spark-Open-816B-A42B")["text_config"]
    assert text["layer_types"].count("full_attention") == 16 and len(text["layer_types"]) == 62
    assert set(text["mlp_layer_types"]) == {"sparse"}
    # the tower's sizes are Muse-Glimmer's (round 31 counts that tower at the same 1,852,639,744)
    assert (MUSE_TEXT, MUSE_VISION, MUSE_ADAPTER, MUSE_AUDIO) == (
        819_990_552_064, 1_852_639_744, 75_497_472, 117_840_384)


# ------------------------------------------ Inkling-2-Small (Inkling2Config() defaults; hand count stop 37, layerfeat6)
# round32/thinkingmachines--Inkling-2-Small.json. Hand count tensor by tensor from modeling_inkling2.py
# (transformers 5.25.0). Text (Inkling2TextModel): 48 layers, 4608 wide; layer_types "hybrid" (full) where
# (i + 1) % 6 == 0 (8 layers), "hybrid_sliding" elsewhere (40); both 48 heads / 8 K/V heads x 128. Every layer:
# q linear hidden -> 48 x 128 and its clip scale (48 x 128); k and v linears hidden -> 8 x 128, each with a short
# convolution (conv_kernel_size 4): a bias-free depthwise Conv1d (1024 x 4) in a sliding layer, a static weight
# (4 x 1024) and a weight_proj hidden -> 8 x 4 in a full layer; a gated output (gate_proj hidden -> 48 x 128,
# linear back); a sink_proj hidden -> 48; a relative-position bias (linear hidden -> 48 x d_rel 16, its clip scale
# 48 x 16, a proj bank d_rel x 1024: rel_extent, and sliding_window_size for the sliding layers, both 1024); two
# post convolutions (depthwise hidden x 4, no bias); an MoE of a router 384 x 4608 with its e_score_correction_bias
# buffer (384, persistent) and 384 experts of gate_up 2 x 2304 x 4608 and down 4608 x 2304 (no shared expert; the
# softcaps hold no weights). Attention residuals (Inkling2BlockAttentionResidual, one query vector of hidden each):
# an mlp_input every layer, an attention_input from layer 1 on (3 queries in a full layer). Norms: a sliding layer
# input / post-attention RMSNorms, a full layer q / k / v input and post-attention (4). Embedding vocab_size 201024 x
# 4608 with a weighted embed_norm, a final norm, a final_input residual query, an lm_head of unpadded_vocab_size
# 200058 x 4608 (untied)
def inkling2_attention(dynamic: bool) -> int:
    kv_conv = (4 * 1024 + lin(4608, 8 * 4)) if dynamic else 1024 * 4
    return (lin(4608, 6144) + 6144 + 2 * (lin(4608, 1024) + kv_conv) + lin(4608, 6144) + lin(6144, 4608)
            + lin(4608, 48) + lin(4608, 48 * 16) + 48 * 16 + 16 * 1024)


INKLING2_SHARED = 2 * 4608 * 4 + 384 * 4608 + 384 + 384 * gated(4608, 2304) + 4608
INKLING2_SLIDING = inkling2_attention(False) + INKLING2_SHARED + 2 * 4608 + 4608  # + attention_input from layer 1
INKLING2_FULL = inkling2_attention(True) + INKLING2_SHARED + 4 * 4608 + 3 * 4608
INKLING2_TEXT = (201024 * 4608 + 4608 + 40 * INKLING2_SLIDING - 4608 + 8 * INKLING2_FULL + 4608 + 4608
                 + 200058 * 4608)
# Vision (Inkling2VisionModel): a bias-free patch linear 3 x 20^2 -> 1024, a position table 32^2 x 1024, a class
# embedding and its position (1024 each), pre_layernorm, 23 layers of two LayerNorms, two layer scales (lambda_1 /
# lambda_2, 1024 each), biased q / k / v / out 1024 square and a biased fc1 / fc2 1024 <-> 4096; the merger (bias-free,
# projector_bias false) 2^2 x 1024 -> 4096 -> 4608
INKLING2_VISION = (lin(1200, 1024) + 1024 * 1024 + 2 * 1024 + ln(1024)
                   + 23 * (2 * ln(1024) + 2 * 1024 + 4 * lin(1024, 1024, True) + lin(1024, 4096, True)
                           + lin(4096, 1024, True))
                   + lin(4096, 4096) + lin(4096, 4608))
INKLING2 = INKLING2_TEXT + INKLING2_VISION
# K/V per token at bf16: the 8 full layers x 2 x 8 x 128 x 2 B; the 40 sliding layers capped at the 1024 window (the
# short-convolution states are per sequence)
INKLING2_KV_BYTES_PER_TOKEN = 8 * 2 * 8 * 128 * 2
HAND["thinkingmachines--Inkling-2-Small"] = INKLING2
KV_BYTES_PER_TOKEN["thinkingmachines--Inkling-2-Small"] = INKLING2_KV_BYTES_PER_TOKEN
SOLVE_CARDS["thinkingmachines--Inkling-2-Small"] = 32  # 1.19 TB at bf16


def test_inkling2_hand_count_holds_the_files_layer_pattern() -> None:
    text = ROUND.load("thinkingmachines--Inkling-2-Small")["text_config"]
    full = [i for i, t in enumerate(text["layer_types"]) if t == "hybrid"]
    assert full == [i for i in range(48) if (i + 1) % 6 == 0] and len(text["layer_types"]) == 48
    assert (INKLING2_TEXT, INKLING2_VISION) == (593_718_497_280, 327_693_312)



@pytest.mark.parametrize("keys", [["moe_hidden_size"], ["layer_types", "mlp_layer_types"], ["sliding_window"]])
def test_muse_spark_fields_left_out_read_as_the_class_defaults(keys: list[str]) -> None:
    # MuseSparkTextConfig: moe_hidden_size 4096, sliding_window 2048, layer_types full where (61 - i) % 4 == 0 and
    # mlp_layer_types all sparse: the same 819,990,552,064 text (experts read at the full 8192 width would count
    # 1,608,875,745,280)
    cfg = ROUND.load("meta-models--Muse-Spark-Open-816B-A42B")
    for key in keys:
        del cfg["text_config"][key]
    del cfg["vision_config"], cfg["audio_config"]
    assert count(cfg) == MUSE_TEXT  # the adapter goes with the vision tower


def test_muse_spark_experts_run_between_two_projections_at_the_pooled_width() -> None:
    # pre_expert_proj 8192 x 4096 + post_expert_proj 4096 x 8192 = 67,108,864 and two 4096 norms, once a layer
    text = ROUND.load("meta-models--Muse-Spark-Open-816B-A42B")["text_config"]
    (moe,) = {b for layer in parse_model_config(text, "x").layers for b in layer.blocks if b.role == "ffn"}
    latent = [s for s in moe.shares() if s.module == "moe_latent"][0]
    assert (moe.expert_width, sum(p.params for p in latent.parts)) == (4096, 2 * 8192 * 4096 + 2 * 4096)


@pytest.mark.parametrize("keys", [[], ["layer_types"], ["layer_types", "conv_kernel_size", "d_rel"]])
def test_inkling2_text_counts_to_the_hand_count_whatever_class_defaults_it_leaves_out(keys: list[str]) -> None:
    # layer_types left out: Inkling2TextConfig's __post_init__ makes layer i full where (i + 1) % 6 == 0
    text = ROUND.load("thinkingmachines--Inkling-2-Small")["text_config"]
    for key in keys:
        del text[key]
    assert count(text) == INKLING2_TEXT


def test_inkling2_counts_its_tower_to_the_hand_count() -> None:
    # Inkling2VisionModel: the class token's two vectors, the 32^2-row grid, no patch bias, a bias-free norm-free merger
    assert count(ROUND.load("thinkingmachines--Inkling-2-Small")) == INKLING2 == 594_046_190_592


@pytest.mark.parametrize("key", ["intermediate_size", "projection_hidden_dim", "projector_bias", "posemb_grid_size"])
def test_inkling2_tower_fields_left_out_read_as_the_class_defaults(key: str) -> None:
    # Inkling2VisionConfig: intermediate_size mlp_ratio 4 x 1024, projection_hidden_dim 4096, projector_bias false,
    # posemb_grid_size 32: the same 327,693,312 tower
    cfg = ROUND.load("thinkingmachines--Inkling-2-Small")
    del cfg["vision_config"][key]
    assert count(cfg) == INKLING2
