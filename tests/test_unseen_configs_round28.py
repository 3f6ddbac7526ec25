"""Twenty-eighth round of families outside the catalog (tests/data/configs_unseen/round28/, SOURCES.md's
"Twenty-eighth round (stop 36)"): the 2026 flagship model_types in transformers 5.25.0 that round 27 left for their
size (mistral_large4, step3p7 counted; glm5_next refused; qwen4_exp refused, counted since stop 36's qwen4
helper). Each config is its class's defaults (the docstring names the checkpoint), written as to_dict would; hand
counts tensor by tensor from transformers 5.25.0's modeling_*.py with their configuration_*.py (read from the wheel,
not installed); written before the reader was run on them."""
from __future__ import annotations

import pytest

from hand_counts import UNSEEN, Round, count, gated, gqa, lin
from solver.specs.dtypes import KV16
from solver.errors import InputError
from solver.specs.config.read import parse_model_config
from solver.estimate.params import count_params, layer_shares
from test_unseen_configs_round23 import pixtral_tower

DATA = UNSEEN / "round28"
ROUND = Round(DATA)
_load, _spec, _total = ROUND.load, ROUND.spec, ROUND.total


def layer_norm(d: int) -> int:  # nn.LayerNorm: weight and bias
    return 2 * d


def conv(cin: int, cout: int, k: int, bias: bool) -> int:  # a k x k Conv2d
    return cin * cout * k * k + (cout if bias else 0)


# ------------------------------------------------------------------ Mistral-Large-4-1T-A52B (MistralLarge4Config()
# defaults). Text: 72 layers, 6144 wide; MLA without a query LoRA (q_proj 6144 -> 64 x (64 + 64)), kv_a_proj_with_mqa
# 6144 -> 512 + rope, kv_a_layernorm 512, kv_b 512 -> 64 x (nope + 128), o 64 x 128 -> 6144, no bias, and a per-head
# softmax scale and bias on the queries (MistralLarge4TextSoftmaxScaling(64)). NoPE layers (no_rope_layers 0: every
# 4th, 18 of 72) have no rope slice: kv_a 6144 -> 512 and nope 64 + 64 = 128 in kv_b (q_proj keeps 64 x 128).
# A DSA indexer on every layer (indexer_types all "full"): without a query LoRA its queries come from the hidden
# state (q_input_norm LayerNorm 6144, wq_b 6144 -> 32 x 128), wk 6144 -> 128, k_norm LayerNorm 128, weights_proj
# 6144 -> 32 and its own per-head softmax scale and bias (32). Layer 0 the dense 24576 MLP, 71 MoE of 128 x 6144
# top-4 (router weight only, fp32, softmax: no correction bias) and one shared of 6144; two RMSNorms a layer; a
# learned LeRoPE alpha over the rotary's 32 inverse frequencies (rotary_emb.alpha, a Parameter); untied 204800.
# Vision: the Pixtral tower of init_kwargs (2048 wide, 30 layers, gated 6144, patch 14); projector norm RMSNorm 2048,
# patch merger 4 x 2048 -> 2048, linear_1 2048 -> 6144, linear_2 6144 -> 6144, no bias
def ml4_attention(h: int, heads: int, kv_rank: int, nope: int, rope: int, v: int) -> int:
    return (lin(h, heads * (nope + rope)) + lin(h, kv_rank + rope) + kv_rank + lin(kv_rank, heads * (nope + v))
            + lin(heads * v, h) + 2 * heads)


def ml4_attention_nope(h: int, heads: int, kv_rank: int, nope: int, rope: int, v: int) -> int:
    """A NoPE layer: the rope slice joins the nope part in kv_b and leaves kv_a; q_proj is unchanged."""
    return (lin(h, heads * (nope + rope)) + lin(h, kv_rank) + kv_rank + lin(kv_rank, heads * (nope + rope + v))
            + lin(heads * v, h) + 2 * heads)


def ml4_indexer(h: int, heads: int, d: int) -> int:
    return layer_norm(h) + lin(h, heads * d) + lin(h, d) + layer_norm(d) + lin(h, heads) + 2 * heads


ML4_ROPE_LAYER = ml4_attention(6144, 64, 512, 64, 64, 128) + ml4_indexer(6144, 32, 128) + 2 * 6144
ML4_NOPE_LAYER = ml4_attention_nope(6144, 64, 512, 64, 64, 128) + ml4_indexer(6144, 32, 128) + 2 * 6144
ML4_MOE = lin(6144, 128) + 128 * gated(6144, 6144) + gated(6144, 6144)
ML4_TEXT = (2 * 204800 * 6144 + 54 * ML4_ROPE_LAYER + 18 * ML4_NOPE_LAYER + gated(6144, 24576) + 71 * ML4_MOE
            + 6144 + 32)
ML4_VISION = pixtral_tower(2048, 30, 6144, 14) + 2048 + lin(4 * 2048, 2048) + lin(2048, 6144) + lin(6144, 6144)
MISTRAL_LARGE_4 = ML4_TEXT + ML4_VISION
# 4 of 128 and the shared one, with the embedding and head; the tower runs per image, not per token (round 28's
# first figure, 54,802,806,304, kept the tower's 1,704,218,624)
MISTRAL_LARGE_4_ACTIVE = ML4_TEXT - 71 * (128 - 4) * gated(6144, 6144)


# ------------------------------------------------------------------ Step-3.7-Flash (Step3p7Config() defaults).
# Text (model_type step3p5): 45 layers, 4096 wide, GQA 64 / 8 heads x 128 without bias, q_norm / k_norm of 128 and
# a per-head output gate g_proj 4096 -> 64 (the class attribute gating = True: no field in the file); layers 0-2 the
# dense 11264 MLP, 42 MoE of 288 x 1280 top-8 with a router weight and its e_score_correction_bias (a persistent
# buffer), one shared of 1280 (share_expert_dim); two RMSNorms a layer; untied 128815.
# Vision (step3p5_vision): Conv2d patch 3 x 14 x 14 -> 1536 without bias, a learned position table of
# (728 / 14)^2 = 2704, pre_layernorm; 47 layers of two LayerNorms, biased q / k / v / out 1536 square, biased fc1
# 1536 -> 8960 / fc2 and two layer-scale vectors (lambda_1 / lambda_2); no post norm; two biased 3 x 3 stride-2
# Conv2d downsamplers 1536 -> 3072 -> 6144; projector 6144 -> 4096 without bias (projector_bias false)
STEP37_ATTENTION = gqa(4096, 64, 8, 128) + 2 * 128 + lin(4096, 64)
STEP37_MOE = lin(4096, 288) + 288 + 288 * gated(4096, 1280) + gated(4096, 1280)
STEP37_TEXT = (2 * 128815 * 4096 + 45 * (STEP37_ATTENTION + 2 * 4096) + 3 * gated(4096, 11264) + 42 * STEP37_MOE
               + 4096)
STEP37_VISION_LAYER = (2 * layer_norm(1536) + 4 * lin(1536, 1536, True) + lin(1536, 8960, True)
                       + lin(8960, 1536, True) + 2 * 1536)
STEP37_VISION = (conv(3, 1536, 14, False) + 2704 * 1536 + layer_norm(1536) + 47 * STEP37_VISION_LAYER
                 + conv(1536, 3072, 3, True) + conv(3072, 6144, 3, True))
STEP37 = STEP37_TEXT + STEP37_VISION + lin(6144, 4096)
STEP37_ACTIVE = STEP37_TEXT - 42 * (288 - 8) * gated(4096, 1280)  # the tower runs per image, not per token


HAND: dict[str, int] = {
    "mistralai--Mistral-Large-4-1T-A52B": MISTRAL_LARGE_4,
    "stepfun-ai--Step-3.7-Flash": STEP37,
}
# Published totals precise enough for a 1% check: none recalled (Mistral-Large-4's "1T" and Step-3.7-Flash's name
# are rounder than 1%)
PUBLISHED: dict[str, float] = {}

ACTIVE: dict[str, tuple[int, float | None]] = {
    # "A52B" is the name's, rounder than 2% is worth asserting against (53.1B)
    "mistralai--Mistral-Large-4-1T-A52B": (MISTRAL_LARGE_4_ACTIVE, None),
    # 8 of 288 and the shared one, with the embedding and head (the tower runs per image)
    "stepfun-ai--Step-3.7-Flash": (STEP37_ACTIVE, None),
}

# Bytes of K/V per token of context at bf16: Step-3.7's 45 full layers of 8 K/V heads x 128; Mistral-Large-4's MLA
# latent 512 + rope 64 on its 54 RoPE layers, 512 alone on its 18 NoPE layers (the indexer's keys apart: 72 x (128
# fp8 + a 4 B scale) = 9,504 B, test_ml4_indexer_keys_beside_the_latent)
KV_BYTES_PER_TOKEN: dict[str, int] = {
    "mistralai--Mistral-Large-4-1T-A52B": 54 * (512 + 64) * 2 + 18 * 512 * 2,
    "stepfun-ai--Step-3.7-Flash": 45 * 2 * 8 * 128 * 2,
}


# ------------------------------------------------------------------ reading rules added this round


def test_step37_counts_its_head_gate_q_k_norms_shared_expert_and_correction_bias() -> None:
    # Before this round 196,917,066,496 with notes only: no g_proj (45 x 64 x 4096), q / k norms (45 x 256), shared
    # expert (share_expert_dim unread: 42 x 3 x 4096 x 1280), correction bias (42 x 288), and the tower's
    # downsamplers, projector and position table miscounted
    assert _total("stepfun-ai--Step-3.7-Flash") == STEP37


def test_step37_text_stack_alone_counts_exactly() -> None:
    cfg = _load("stepfun-ai--Step-3.7-Flash")["text_config"]
    assert count(cfg) == STEP37_TEXT


def test_step37_class_defaults_fill_the_pattern_fields_a_file_leaves_out() -> None:
    cfg = _load("stepfun-ai--Step-3.7-Flash")
    for key in ("mlp_layer_types", "layer_types", "num_sliding_attention_heads", "per_layer_config"):
        del cfg["text_config"][key]
    assert count(cfg) == STEP37
    cfg["text_config"]["moe_layers_enum"] = ",".join(str(i) for i in range(3, 45))
    assert count(cfg) == STEP37


def test_step37_gating_per_element_gates_every_channel() -> None:
    cfg = _load("stepfun-ai--Step-3.7-Flash")
    cfg["text_config"]["gating"] = "per-element"
    assert count(cfg) == STEP37 + 45 * (lin(4096, 64 * 128) - lin(4096, 64))


def test_step37_tower_downsamples_through_two_biased_convolutions() -> None:
    cfg = _load("stepfun-ai--Step-3.7-Flash")
    cfg["projector_bias"] = True
    assert count(cfg) == STEP37 + 4096


# ------------------------------------------------------------------ Mistral-Large-4 (stop 36, flagships): the rules
# that count it. A 1T model at bf16 is 2.1 TB: 32 H100s hold it
SOLVE_CARDS: dict[str, int] = {"mistralai--Mistral-Large-4-1T-A52B": 32}
ML4 = "mistralai--Mistral-Large-4-1T-A52B"


def _ml4_text() -> dict:
    return _load(ML4)["text_config"]


def _ml4_mixers(cfg: dict) -> list:
    return [layer.mixer for layer in parse_model_config(cfg, "x").layers]


def test_ml4_nope_mla_layers_fold_the_rope_slice_into_the_nope_part() -> None:
    # every 4th layer: kv_a without the 64-wide rope slice, kv_b 64 x 64 wider, q_proj unchanged
    cfg = _ml4_text()
    cfg["no_rope_layers"] = [1] * 72
    assert count(cfg) == ML4_TEXT - 18 * (ML4_NOPE_LAYER - ML4_ROPE_LAYER)
    assert ML4_NOPE_LAYER - ML4_ROPE_LAYER == 512 * 64 * 64 - 6144 * 64


def test_ml4_no_rope_layers_must_mark_every_layer_zero_or_one() -> None:
    cfg = _ml4_text()
    cfg["no_rope_layers"] = [1] * 71
    with pytest.raises(InputError, match="no_rope_layers: must hold a 0 .* of the 72 layers"):
        parse_model_config(cfg, "x")


def test_ml4_a_kv_source_layer_holds_no_kv_a_and_caches_no_latent() -> None:
    # layer 2 reads layer 1's latent (both RoPE; 1 the nearest that caches): no kv_a_proj_with_mqa 6144 -> 576 nor
    # kv_a_layernorm 512; its kv_b, queries and indexer (and the indexer's keys) are its own
    cfg = _ml4_text()
    cfg["kv_source_layers"] = [0, 1, 1] + list(range(3, 72))
    assert count(cfg) == ML4_TEXT - lin(6144, 576) - 512
    mixers = _ml4_mixers(cfg)
    assert mixers[2].state(KV16, 1).per_token_bytes == 0 and mixers[2].state(KV16, 1).index_per_token_bytes == 132
    # a NoPE layer reads the last NoPE latent: layer 7 from layer 3
    cfg["kv_source_layers"] = list(range(7)) + [3] + list(range(8, 72))
    assert count(cfg) == ML4_TEXT - lin(6144, 512) - 512


@pytest.mark.parametrize("sources, problem", [
    ([0, 2, 2], "layer 1 reads layer 2, which is not an earlier layer"),
    ([0, 0, 1], "layer 2 reads layer 1, which is not an earlier layer that caches its own K/V"),
    ([0, 1, 2, 2], "both RoPE or both NoPE"),
    ([0, 1, 0], "layer 2 reads layer 0, but layer 1 caches K/V of the same kind later"),
])
def test_ml4_kv_source_layers_must_name_the_nearest_earlier_owner_of_the_same_kind(sources: list, problem: str) -> None:
    cfg = _ml4_text()
    cfg["kv_source_layers"] = sources + list(range(len(sources), 72))
    with pytest.raises(InputError, match=f"kv_source_layers: .*{problem}"):
        parse_model_config(cfg, "x")


def test_ml4_indexer_reads_the_hidden_state_through_its_own_layernorm_and_scales() -> None:
    # wq_b 6144 -> 32 x 128 (no query LoRA), q_input_norm 2 x 6144, softmax scale and bias 2 x 32
    (idx,) = {m.indexer for m in _ml4_mixers(_ml4_text())}
    assert sum(p.params for p in idx.parts(6144, None)) == ml4_indexer(6144, 32, 128) - layer_norm(128) + 2 * 128


def test_ml4_indexer_keys_beside_the_latent() -> None:
    states = [m.state(KV16, 1) for m in _ml4_mixers(_ml4_text())]
    assert sum(s.index_per_token_bytes for s in states) == 72 * (128 + 4)


def test_ml4_prefill_of_one_layer_costs_the_indexer_from_the_hidden_state() -> None:
    """A 1,000-token prefill on one rank: the indexer's projections 2 x 1000 x (wq_b 6144 x 4096 + wk 6144 x 128 +
    weights_proj 6144 x 32 + its norms and scales 2 x 6144 + 2 x 128 + 2 x 32) and its scores 2 x 32 x 128 x 1000
    x 1000 (every past key); attention's q / kv_a / kv_b with the per-head scale and bias 2 x 1000 x (6144 x 8192 +
    6144 x 576 + 512 + 512 x 12288 + 2 x 64); a NoPE layer's kv_a 6144 x 512 and kv_b 512 x 16384."""
    from solver.estimate.compute import Kit, Work, factors_for
    from solver.specs.hardware_catalog import load_hardware
    from solver.specs.parallel import make_parallel_config
    from solver.specs.precision import resolve_precision

    spec = parse_model_config(_ml4_text(), "x")
    hw = load_hardware("h200_sxm")
    kit = Kit(hw, make_parallel_config(1), resolve_precision(spec, hw), factors_for(hw),
              Work("prefill", new_tokens=1000, context=1000, sequences=1, logits_tokens=1))
    ops = {o.name: o.flops for o in spec.layers[0].mixer.ops(kit)}
    assert ops["indexer_proj"] == 2 * 1000 * (6144 * 4096 + 6144 * 128 + 6144 * 32 + 2 * 6144 + 2 * 128 + 2 * 32)
    assert ops["indexer_score"] == 2 * 32 * 128 * 1000 * 1000
    assert ops["qkv_proj"] == 2 * 1000 * (6144 * 8192 + 6144 * 576 + 512 + 512 * 12288 + 2 * 64)
    nope = {o.name: o.flops for o in spec.layers[3].mixer.ops(kit)}
    assert nope["qkv_proj"] == 2 * 1000 * (6144 * 8192 + 6144 * 512 + 512 + 512 * 16384 + 2 * 64)


def test_ml4_learned_rope_scales_are_half_the_rotary_width() -> None:
    spec = parse_model_config(_ml4_text(), "x")
    assert spec.rope_scales == 32
    cfg = _ml4_text()
    cfg["partial_rotary_factor"] = 0.5
    assert parse_model_config(cfg, "x").rope_scales == 16


def test_shared_indexer_layers_hold_no_indexer() -> None:
    # MistralLarge4TextAttention builds no indexer where indexer_types says "shared" (it reuses the latest full
    # layer's top-k): 36 of 72 layers drop ml4_indexer (once refused naming indexer_types)
    cfg = _ml4_text()
    cfg["indexer_types"] = ["full", "shared"] * 36
    assert count(cfg) == count(_ml4_text()) - 36 * ml4_indexer(6144, 32, 128)


# ------------------------------------------------------------------ hand counts of the two refused below (stop 36,
# flag3), tensor by tensor from modeling_glm5_next.py / modeling_qwen4_exp.py with their configuration_*.py (read from
# the unzipped 5.25.0 wheel, not installed), written before any reader change; the reader refuses both (REFUSALS)

# GLM-5.3-Flash (Glm5NextConfig() defaults). Text: 45 layers, 4096 wide; layer_types idx % 4 == 3 indexed (11), the
# rest KDA (34). KDA (Glm5NextTextLinearAttention, 64 heads x 128): q / k / v hidden -> 8192, a depthwise conv of
# 3 x 8192 channels x kernel 4 without bias, forget gate f_a hidden -> 128, f_b 128 -> 8192, dt_bias 8192, A_log 64,
# b_proj hidden -> 64, output gate g_a hidden -> 128, g_b 128 -> 8192, o_norm (gated RMSNorm) 128, o_proj 8192 ->
# hidden. Indexed: NoPE MLA (qk_rope_head_dim 0): q_a hidden -> 1536, q_a_layernorm, q_b 1536 -> 64 x 256, kv_a
# hidden -> 512, kv_a_layernorm, kv_b 512 -> 64 x (256 + 256), o 64 x 256 -> hidden, no bias; indexer_types all
# "full": a DSA indexer on every indexed layer, wq_b from the query LoRA 1536 -> 32 x 128, wk hidden -> 128, k_norm
# LayerNorm 128, weights_proj hidden -> 32, and the pooled keys' index_kpool_compress_ape 16 x 128 and
# index_kpool_compress_gate 128 x hidden. Every layer: input / post-attention RMSNorms and two mHC maps (attn_hc,
# ffn_hc: fn (2 + 4) x 4 rows x 4 x hidden, base 24, scale 3); the final hc_head is an unweighted mean (no weights).
# Layers 0-2 dense 12288; 42 MoE: router 288 x hidden (fp32) with e_score_correction_bias 288 (a persistent buffer,
# counted as Step-3.7's is), 288 experts of 2048, one shared of 2048. Final norm, untied 154880 embedding and head.
def glm53_kda(h: int, heads: int, d: int, kernel: int) -> int:
    width = heads * d
    forget = lin(h, d) + lin(d, width) + width + heads  # f_a, f_b, dt_bias, A_log
    out_gate = lin(h, d) + lin(d, width) + d  # g_a, g_b, o_norm
    return 3 * lin(h, width) + 3 * width * kernel + forget + lin(h, heads) + out_gate + lin(width, h)


def glm53_nope_mla(h: int, heads: int, q_rank: int, kv_rank: int, nope: int, v: int) -> int:
    return (lin(h, q_rank) + q_rank + lin(q_rank, heads * nope) + lin(h, kv_rank) + kv_rank
            + lin(kv_rank, heads * (nope + v)) + lin(heads * v, h))


def glm53_pooled_indexer(h: int, q_rank: int, heads: int, d: int, kpool: int) -> int:
    return lin(q_rank, heads * d) + lin(h, d) + layer_norm(d) + lin(h, heads) + kpool * d + d * h


def mhc(h: int, m: int) -> int:  # one sub-block's manifold-constrained hyper-connection map
    rows = (2 + m) * m
    return rows * m * h + rows + 3


GLM53_KDA = glm53_kda(4096, 64, 128, 4)
GLM53_INDEXED = glm53_nope_mla(4096, 64, 1536, 512, 256, 256) + glm53_pooled_indexer(4096, 1536, 32, 128, 16)
GLM53_MOE = lin(4096, 288) + 288 + 288 * gated(4096, 2048) + gated(4096, 2048)
GLM53_TEXT = (2 * 154880 * 4096 + 34 * GLM53_KDA + 11 * GLM53_INDEXED + 45 * (2 * 4096 + 2 * mhc(4096, 4))
              + 3 * gated(4096, 12288) + 42 * GLM53_MOE + 4096)
# Vision (Glm5NextVisionModel): Conv3d patch embed 3 -> 1024 (2 x 14 x 14, biased); 24 blocks of RMSNorm 1024 x 2,
# qkv 1024 -> 3072 and proj biased (attention_bias), q_norm / k_norm RMSNorm 64, a biased gated MLP 4096; no learned
# position table (axial rope buffers only); post_layernorm 1024; downsample Conv2d 1024 -> 1536 (2 x 2, biased);
# merger proj 1536 -> 1536, LayerNorm 1536, gated 10240, no bias. Unsure: out_hidden_size 1536 is the class default
# and the text is 4096 wide, with no projection between (the released file must write other widths)
GLM53_VISION_BLOCK = (2 * 1024 + lin(1024, 3072, True) + lin(1024, 1024, True) + 2 * 64
                      + 2 * lin(1024, 4096, True) + lin(4096, 1024, True))
GLM53_VISION = (3 * 1024 * 2 * 14 * 14 + 1024 + 24 * GLM53_VISION_BLOCK + 1024 + conv(1024, 1536, 2, True)
                + lin(1536, 1536) + layer_norm(1536) + gated(1536, 10240))
GLM53_FLASH = GLM53_TEXT + GLM53_VISION  # 313,786,901,310
GLM53_FLASH_ACTIVE = GLM53_TEXT - 42 * (288 - 8) * gated(4096, 2048)  # 17,376,738,622 (the tower runs per image)

# Qwen4-Exp (Qwen4ExpConfig() defaults). Text: 40 layers, 2048 wide; layer_types (i + 1) % 4 == 0 indexed (10), the
# rest Gated DeltaNet (30). GDN: in_proj_qkv hidden -> 2 x 16 x 128 + 32 x 128, in_proj_z -> 4096, in_proj_b / a ->
# 32, depthwise conv 8192 x 4 without bias, dt_bias 32, A_log 32, gated norm 128, out_proj 4096 -> hidden. Indexed:
# gated attention (q_proj hidden -> 16 x 256 x 2), k / v -> 2 x 256, o 16 x 256 -> hidden, q_norm / k_norm 256, no
# bias; the QSA indexer (index_qk_proj hidden -> (n + kv) x d, q / k layernorms d) takes its widths from
# indexer_n_heads / indexer_kv_heads / indexer_head_dim, all null in the class (the docstring: "Setting this enables
# QSA"): counted as none. Unsure: Qwen4ExpTextQSAIndexer is built unconditionally and computes
# indexer_budget // indexer_compress_ratio in __init__, so the class defaults as written cannot build (None // None).
# Every layer: an MoE of 512 experts of 512, top-10 (router 512 x hidden, no bias), one shared of 512 with a
# shared_expert_gate hidden -> 1; no input / post-attention norms: two gated residuals (attn_ / mlp_hyper_connection:
# hc_norm 4 x hidden, input_mix_weight_down 4 x hidden -> 320, up 320 -> 4 x hidden, block_inject 4 x hidden -> 4).
# ple_layer_ids empty: no PLE / n-gram tables. Model: the hyper_connection_mixer (a gated residual without
# block_inject) in place of a final norm; untied 248320 embedding and head.
def qwen4_gdn(h: int, k_heads: int, v_heads: int, dk: int, dv: int, kernel: int) -> int:
    key, value = k_heads * dk, v_heads * dv
    return (lin(h, 2 * key + value) + lin(h, value) + 2 * lin(h, v_heads) + (2 * key + value) * kernel
            + 2 * v_heads + dv + lin(value, h))


def gated_residual(h: int, streams: int, rank: int, inject: bool = True) -> int:
    wide = streams * h
    return wide + lin(wide, rank) + lin(rank, wide) + (lin(wide, streams) if inject else 0)


QWEN4_GDN = qwen4_gdn(2048, 16, 32, 128, 128, 4)
QWEN4_ATTENTION = lin(2048, 16 * 256 * 2) + 2 * lin(2048, 2 * 256) + lin(16 * 256, 2048) + 2 * 256
QWEN4_MOE = lin(2048, 512) + 512 * gated(2048, 512) + gated(2048, 512) + lin(2048, 1)
QWEN4_TEXT = (2 * 248320 * 2048 + 30 * QWEN4_GDN + 10 * QWEN4_ATTENTION + 40 * QWEN4_MOE
              + 40 * 2 * gated_residual(2048, 4, 320) + gated_residual(2048, 4, 320, inject=False))
# Vision (Qwen4ExpVisionModel, Qwen3.5's): Conv3d 3 -> 1152 (2 x 16 x 16, biased), learned positions 2304 x 1152,
# 27 blocks of LayerNorm x 2, qkv and proj biased, MLP fc1 / fc2 4304 biased; merger LayerNorm 1152, fc1 4608 ->
# 4608, fc2 4608 -> 3584 biased. Unsure: out_hidden_size 3584 against a 2048-wide text, as GLM's
QWEN4_VISION_BLOCK = (2 * layer_norm(1152) + lin(1152, 3456, True) + lin(1152, 1152, True) + lin(1152, 4304, True)
                      + lin(4304, 1152, True))
QWEN4_VISION = (3 * 1152 * 2 * 16 * 16 + 1152 + 2304 * 1152 + 27 * QWEN4_VISION_BLOCK + layer_norm(1152)
                + lin(4608, 4608, True) + lin(4608, 3584, True))
QWEN4_EXP = QWEN4_TEXT + QWEN4_VISION  # 67,775,279,984
QWEN4_EXP_ACTIVE = QWEN4_TEXT - 40 * (512 - 10) * gated(2048, 512)  # 4,155,411,072

# Cache per token at bf16 as transformers keeps it: GLM-5.3-Flash's 11 NoPE latents of 512 (11,264 B) and its
# indexer's packed states (k 128, gate score 128, valid 1) 11 x 257 x 2 = 5,654 B; Qwen4-Exp's 10 gated-attention
# layers of 2 K/V heads x 256: 20,480 B. Per sequence, not per token: GLM's 34 KDA states of 64 x 128 x 128 with
# conv tails 3 x 8192 x 3; Qwen4's 30 GDN states of 32 x 128 x 128 with conv tails 8192 x 3
GLM53_FLASH_KV_BYTES = 11 * 512 * 2 + 11 * (128 + 128 + 1) * 2
QWEN4_EXP_KV_BYTES = 10 * 2 * 2 * 256 * 2
QWEN4_EXP_GDN_STATE_BYTES = 30 * (32 * 128 * 128 + 8192 * 3) * 2  # per sequence at bf16: 32,931,840 B

# GLM-5.3-Flash counts since stop 38 (fixf): the pooled-key indexer (dsa.Indexer.kpool), KDA from linear_num_heads,
# the all-NoPE MLA's head_dim 0, the weightless hc_head and the GLM-OCR-like tower are read. Its K/V bytes here are
# the latents alone (the indexer's packed keys apart, as Mistral-Large-4's: test_glm53_indexer_caches_packed_keys)
HAND["zai-org--GLM-5.3-Flash"] = GLM53_FLASH
ACTIVE["zai-org--GLM-5.3-Flash"] = (GLM53_FLASH_ACTIVE, None)  # "Flash": no published figure recalled
KV_BYTES_PER_TOKEN["zai-org--GLM-5.3-Flash"] = 11 * 512 * 2

# Qwen4-Exp counts since stop 36 (qwen4 helper): its low-rank hyper-connections are read (config/outside.py
# gated_residual), the indexer left null by the class runs its layers as full attention
HAND["Qwen--Qwen4-Exp"] = QWEN4_EXP
ACTIVE["Qwen--Qwen4-Exp"] = (QWEN4_EXP_ACTIVE, None)  # "A4B"-class: no published figure recalled
KV_BYTES_PER_TOKEN["Qwen--Qwen4-Exp"] = QWEN4_EXP_KV_BYTES


# ------------------------------------------------------------------ refused this round: one line each

REFUSALS: dict[str, str] = {}


def _glm53_indexers() -> list:
    return [m.indexer for m in (layer.mixer for layer in ROUND.spec("zai-org--GLM-5.3-Flash").layers)
            if getattr(m, "indexer", None) is not None]


@pytest.mark.parametrize("key", ["index_kpool", "index_kpool_always_select_tail"])
def test_glm53_pooled_indexer_fields_left_out_read_as_the_class_defaults(key: str) -> None:
    # Glm5NextTextConfig: index_kpool 16, index_kpool_always_select_tail true (the family line and the field default)
    cfg = ROUND.load("zai-org--GLM-5.3-Flash")
    del cfg["text_config"][key]
    assert count_params(parse_model_config(cfg, "x")).total == GLM53_FLASH


def test_glm53_indexer_caches_packed_keys() -> None:
    # 11 indexed layers x (k 128 + gate score 128 + valid 1) x 2 B, no fp32 scale: 5,654 B a token
    assert sum(i.bytes_per_token for i in _glm53_indexers()) == 11 * (128 + 128 + 1) * 2


def test_glm53_indexer_keeps_top_pools_and_the_tail() -> None:
    # index_topk 2048 / kpool 16 = 128 pools of 16 keys, plus the incomplete tail pool's up to 15: 2,063 keys
    assert {(i.topk, i.block, i.local_tokens, i.selected_keys) for i in _glm53_indexers()} == {(128, 16, 15, 2063)}


def test_glm53_index_topk_must_be_a_multiple_of_index_kpool() -> None:
    cfg = ROUND.load("zai-org--GLM-5.3-Flash")
    cfg["text_config"]["index_topk"] = 2050
    with pytest.raises(InputError, match="index_topk: 2050: not a multiple of index_kpool"):
        parse_model_config(cfg, "x")


def test_ml4_a_stage_boundary_between_a_latent_and_its_reader_is_named() -> None:
    # layer 36 (RoPE) reads layer 34, the last RoPE layer before it (35 is NoPE); two stages split at 36
    from solver.specs.model_rules import kv_sharing_split
    cfg = _ml4_text()
    cfg["kv_source_layers"] = list(range(36)) + [34] + list(range(37, 72))
    assert kv_sharing_split(parse_model_config(cfg, "x"), 2) == (36, 34)


def test_qwen4_exp_text_differs_from_its_qwen3_next_reading_by_the_low_rank_hyper_connections_alone() -> None:
    # what the refusal leaves out, measured: read as Qwen3-Next (gated attention, GDN, shared-expert gate) with the
    # QSA-less indexed layers as full attention, the hand count's text is the reader's less its two norms a layer
    # and the final norm, plus the gated residuals (hc_count / hc_lowrank) that take their place
    text = ROUND.load("Qwen--Qwen4-Exp")["text_config"]
    text.update(model_type="qwen3_next", layer_types=[
        "full_attention" if kind == "indexed_attention" else kind for kind in text["layer_types"]])
    del text["hc_count"]
    hyper = 40 * 2 * gated_residual(2048, 4, 320) + gated_residual(2048, 4, 320, inject=False)
    assert count(text) - (40 * 2 + 1) * 2048 + hyper == QWEN4_TEXT


def _qwen4_parts() -> dict[str, int]:
    out: dict[str, int] = {}
    for share, n in layer_shares(ROUND.spec("Qwen--Qwen4-Exp").layer_groups):
        for part in share.parts:
            if part.name in ("layernorms", "hyper_connections"):
                out[part.name] = out.get(part.name, 0) + part.params * n
    return out


def test_low_rank_hyper_connections_hold_the_layers_norms() -> None:
    # two gated residuals a layer (hc_norm 4 x 2048, down 8192 -> 320, up back, inject 8192 -> 4), no other norm
    assert _qwen4_parts() == {"hyper_connections": 40 * 2 * gated_residual(2048, 4, 320)}


def test_low_rank_hyper_connections_end_in_a_mixer_in_place_of_the_final_norm() -> None:
    m = ROUND.spec("Qwen--Qwen4-Exp")
    assert not m.final_norm and m.head_transform == gated_residual(2048, 4, 320, inject=False)


def test_low_rank_hyper_connections_of_one_stream_are_still_built() -> None:
    cfg = ROUND.load("Qwen--Qwen4-Exp")
    cfg["text_config"]["hc_count"] = 1
    assert count(cfg) == QWEN4_EXP - 80 * (gated_residual(2048, 4, 320) - gated_residual(2048, 1, 320)) - (
        gated_residual(2048, 4, 320, inject=False) - gated_residual(2048, 1, 320, inject=False))


def test_low_rank_hyper_connections_need_their_rank() -> None:
    text = ROUND.load("Qwen--Qwen4-Exp")["text_config"]
    text["model_type"] = "qwen3_next"  # a line that does not default hc_lowrank
    text["layer_types"] = ["full_attention" if k == "indexed_attention" else k for k in text["layer_types"]]
    del text["hc_lowrank"]
    with pytest.raises(InputError, match="hc_lowrank: missing"):
        parse_model_config(text, "x")


def test_qwen4_exp_gated_deltanet_state_per_sequence_is_the_hand_figure() -> None:
    m = ROUND.spec("Qwen--Qwen4-Exp")
    assert sum(b.state(KV16, 1).constant_bytes for b in m.blocks) == QWEN4_EXP_GDN_STATE_BYTES


@pytest.mark.parametrize("key, value", [("ple_layer_ids", [4])])
def test_qwen4_exp_features_the_class_leaves_off_are_refused_when_set(key: str, value: object) -> None:
    # PLE n-gram tables: no layer kind sizes them (the QSA indexer is read: tests/test_defaults_qsa.py)
    cfg = ROUND.load("Qwen--Qwen4-Exp")
    cfg["text_config"][key] = value
    with pytest.raises(InputError, match=key):
        parse_model_config(cfg, "x")
