"""Twenty-first round of families outside the catalog (tests/data/configs_unseen/round21/, SOURCES.md's "Twenty-first
round (stop 36)"): 2025 families no earlier round nor the catalog holds (model_types youtu, Dream, llada,
paddleocr_vl), chosen where a reader by convention is likeliest wrong: a dense MLA stack whose class ties the head by
default (Youtu-LLM), Qwen2's q / k / v biases under a new model_type (Dream), OLMo-style field names (d_model,
n_heads, n_layers, mlp_hidden_size: LLaDA), two masked-diffusion language models (bidirectional, denoising steps, no
token-by-token decode), and a flat vision-language layout with a SigLIP-NaViT tower and a 2 x 2 merging projector
(PaddleOCR-VL). Hand counts tensor by tensor from transformers 5.25.0 modeling_youtu.py / configuration_youtu.py and
modeling_paddleocr_vl.py / configuration_paddleocr_vl.py (read from the wheel, not installed), and from the remote
modeling_dream.py / modeling_llada.py as recalled (Dream is Qwen2's decoder; LLaDA's llama block is q / k / v /
attn_out, ff_proj / up_proj / ff_out of mlp_hidden_size, RMSNorms with weights); written before the reader was run on
them."""
from __future__ import annotations

import pytest

from hand_counts import UNSEEN, Round, count, gated, gqa, lin, ln
from solver.errors import InputError

DATA = UNSEEN / "round21"
ROUND = Round(DATA)
_load, _spec, _total = ROUND.load, ROUND.spec, ROUND.total


# ------------------------------------------------------------------ Youtu-LLM-2B (YoutuForCausalLM): DeepSeek-V3's
# MLA in a dense stack: q_a 2048 -> 1536, q_a_layernorm, q_b 1536 -> 16 x (128 + 64), kv_a_proj_with_mqa 2048 ->
# 512 + 64, kv_a_layernorm, kv_b 512 -> 16 x (128 + 128), o 16 x 128 -> 2048 (attention_bias false), the gated MLP,
# two RMSNorms; tied (YoutuConfig's tie_word_embeddings default true: the file does not write it)
def mla(h: int, heads: int, q_rank: int, kv_rank: int, nope: int, rope: int, v: int) -> int:
    return (lin(h, q_rank) + q_rank + lin(q_rank, heads * (nope + rope)) + lin(h, kv_rank + rope) + kv_rank
            + lin(kv_rank, heads * (nope + v)) + lin(heads * v, h))


def youtu(vocab: int, h: int, layers: int, heads: int, inter: int, tied: bool) -> int:
    layer = mla(h, heads, 1536, 512, 128, 64, 128) + gated(h, inter) + 2 * h
    return (1 if tied else 2) * vocab * h + layers * layer + h


YOUTU_LLM_2B = youtu(128256, 2048, 32, 16, 6144, tied=True)


# ------------------------------------------------------------------ Dream-v0-Instruct-7B (DreamModel): Qwen2.5-7B's
# decoder (q / k / v biased, o not), untied
def qwen2(vocab: int, h: int, layers: int, heads: int, kv: int, d: int, inter: int, tied: bool) -> int:
    layer = gqa(h, heads, kv, d, qkv_bias=True) + gated(h, inter) + 2 * h
    return (1 if tied else 2) * vocab * h + layers * layer + h


DREAM_7B = qwen2(152064, 3584, 28, 28, 4, 128, 18944, tied=False)


# ------------------------------------------------------------------ LLaDA-8B-Instruct (LLaDAModelLM, block_type
# llama): q / k / v / attn_out 4096 x 4096 (include_bias false), ff_proj and up_proj 4096 -> mlp_hidden_size 12288
# each, ff_out back, attn_norm and ff_norm (RMS with weights, bias_for_layer_norm false); wte 126464 rows
# (embedding_size), ln_f, an untied ff_out head (weight_tying false)
def llada(vocab: int, d: int, layers: int, mlp: int) -> int:
    layer = 4 * d * d + gated(d, mlp) + 2 * d
    return 2 * vocab * d + layers * layer + d


LLADA_8B = llada(126464, 4096, 32, 12288)


# ------------------------------------------------------------------ PaddleOCR-VL (PaddleOCRVLForConditionalGeneration,
# the flat layout: the text fields at the top level): ERNIE-4.5-0.3B's decoder (16 / 2 heads x 128, use_bias false),
# untied as the file says; the SigLIP-NaViT tower: patch Conv2d 14 x 14 biased, (384 // 14)^2 = 729 learned
# positions, 27 layers (two LayerNorms, q / k / v / out_proj biased, fc1 / fc2 biased), post_layernorm, no pooling
# head (the rotary embedding holds no weights); the projector: pre_norm LayerNorm(1152), linear_1 over the 2 x 2
# merged patches 4608 -> 4608 and linear_2 4608 -> 1024, both biased
def paddle_text(vocab: int, h: int, layers: int, heads: int, kv: int, d: int, inter: int, tied: bool) -> int:
    layer = gqa(h, heads, kv, d) + gated(h, inter) + 2 * h
    return (1 if tied else 2) * vocab * h + layers * layer + h


def siglip_navit(h: int, layers: int, inter: int, patch: int, image: int) -> int:
    layer = 2 * ln(h) + 4 * lin(h, h, True) + lin(h, inter, True) + lin(inter, h, True)
    return 3 * patch * patch * h + h + (image // patch) ** 2 * h + layers * layer + ln(h)


def merging_projector(vision: int, merge: int, text: int) -> int:
    wide = vision * merge * merge
    return ln(vision) + lin(wide, wide, True) + lin(wide, text, True)


PADDLEOCR_VL = (paddle_text(103424, 1024, 18, 16, 2, 128, 3072, tied=False)
                + siglip_navit(1152, 27, 4304, 14, 384) + merging_projector(1152, 2, 1024))


HAND: dict[str, int] = {
    "tencent--Youtu-LLM-2B": YOUTU_LLM_2B,
    "Dream-org--Dream-v0-Instruct-7B": DREAM_7B,
    "PaddlePaddle--PaddleOCR-VL": PADDLEOCR_VL,
    # from refused/ (stop 37, layerfeat6: SOURCES.md "Left open, taken up (stop 37, layerfeat6)")
    "GSAI-ML--LLaDA-8B-Instruct": LLADA_8B,
}
# Published totals precise enough for a 1% check: Youtu-LLM's 1.96B (card, as recalled), Dream-7B's 7.62B (Qwen2.5-7B's
# card: the same tensors), LLaDA-8B's 8.02B (paper's table, as recalled: LLADA_8B is within 0.06%)
PUBLISHED: dict[str, float] = {"tencent--Youtu-LLM-2B": 1.96e9, "Dream-org--Dream-v0-Instruct-7B": 7.62e9,
                               "GSAI-ML--LLaDA-8B-Instruct": 8.02e9}

# Bytes of K/V per token of context at bf16. Youtu: the MLA latent (kv_lora_rank + qk_rope_head_dim) per layer, one
# copy for K and V together
KV_BYTES_PER_TOKEN: dict[str, int] = {
    "tencent--Youtu-LLM-2B": 32 * (512 + 64) * 2,
    "PaddlePaddle--PaddleOCR-VL": 18 * 2 * 128 * 4,
    # LLaDA: 32 layers of 32 K/V heads x 128 (the note says a diffusion LM keeps no growing cache)
    "GSAI-ML--LLaDA-8B-Instruct": 32 * 2 * 32 * 128 * 2,
}



# ------------------------------------------------------------------ reading rules added this round


def test_a_new_model_type_with_qwen2s_decoder_counts_its_qkv_biases_from_its_family_line() -> None:
    # Before this round: Dream read as a Llama by convention, 7,615,487,488 (q / k / v biases, 28 x 4,608, missed)
    assert _total("Dream-org--Dream-v0-Instruct-7B") == DREAM_7B


def test_a_masked_diffusion_lm_is_counted_and_says_the_serving_figures_assume_autoregressive_decoding() -> None:
    warnings = _spec("Dream-org--Dream-v0-Instruct-7B").warnings
    assert any(w.startswith("mask_token_id: a masked-diffusion language model") and "autoregressive" in w
               for w in warnings)
    assert not any("masked-diffusion" in w for w in _spec("tencent--Youtu-LLM-2B").warnings)


def test_a_conv2d_patch_embedding_ignores_the_processors_temporal_patch_size() -> None:
    # Before this round: PaddleOCR-VL counted 906,279,024 (the patch conv read as 3 x 2 x 14 x 14 x 1152)
    spec = _spec("PaddlePaddle--PaddleOCR-VL")
    assert _total("PaddlePaddle--PaddleOCR-VL") == PADDLEOCR_VL
    assert any(w.startswith("vision_config.temporal_patch_size: 2 is the image processor's") for w in spec.warnings)
    cfg = _load("PaddlePaddle--PaddleOCR-VL")
    one = {**cfg, "vision_config": {k: v for k, v in cfg["vision_config"].items() if k != "temporal_patch_size"}}
    assert count(one) == PADDLEOCR_VL


def test_paddleocr_vls_projector_is_the_merger_convention_without_a_note() -> None:
    # pre_norm over 1152, linear_1 4608 square, linear_2 4608 -> 1024: the family line says so, no convention note
    assert not any("projector into the text width" in w for w in _spec("PaddlePaddle--PaddleOCR-VL").warnings)


def test_youtus_head_is_tied_by_its_class_default() -> None:
    cfg = _load("tencent--Youtu-LLM-2B")
    assert "tie_word_embeddings" not in cfg and _total("tencent--Youtu-LLM-2B") == YOUTU_LLM_2B
    assert count({**cfg, "tie_word_embeddings": False}) == youtu(128256, 2048, 32, 16, 6144, tied=False)


# ------------------------------------------------------------------ refused this round: one line each

# LLaDA-8B (refused here until stop 37; before, misleadingly, naming attention_layer_norm_with_affine as "a mixer other
# than attention", then naming model_type) counts to LLADA_8B: test_llada_* below
REFUSALS: dict[str, str] = {}


def test_llada_reads_olmo1s_layout_by_the_conventions_field_lists() -> None:
    # n_kv_heads, mlp_hidden_size (each of ff_proj / up_proj), weight_tying, embedding_size (wte / ff_out rows)
    cfg = _load("GSAI-ML--LLaDA-8B-Instruct")
    assert count({**cfg, "n_kv_heads": 8}) == LLADA_8B - 32 * 2 * 4096 * (4096 - 1024)
    assert count({**cfg, "mlp_hidden_size": 11008}) == llada(126464, 4096, 32, 11008)
    assert count({**cfg, "weight_tying": True}) == LLADA_8B - 126464 * 4096
    assert count({**cfg, "embedding_size": 126592}) == llada(126592, 4096, 32, 12288)


def test_llada_says_it_is_a_masked_diffusion_lm() -> None:
    assert any(w.startswith("mask_token_id: a masked-diffusion") for w in _spec("GSAI-ML--LLaDA-8B-Instruct").warnings)


@pytest.mark.parametrize("field, value", [
    ("block_type", "sequential"), ("attention_layer_norm", True), ("layer_norm_with_affine", False),
    ("bias_for_layer_norm", True), ("alibi", True), ("include_bias", True), ("multi_query_attention", True)])
def test_llada_refuses_olmo1_switches_whose_weights_it_does_not_count(field: str, value: object) -> None:
    with pytest.raises(InputError, match=rf"^x: {field}: {value!r}: "):
        count({**_load("GSAI-ML--LLaDA-8B-Instruct"), field: value})

