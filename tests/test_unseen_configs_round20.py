"""Twentieth round of families outside the catalog (tests/data/configs_unseen/round20/, SOURCES.md's "Twentieth
round (stop 35)"): families no earlier round nor the catalog holds by name (SOLAR, Kanana, Llama-3.2 text, Mantis,
DeepSeek-VL v1, MiniCPM-o; model_types llama / llava / multi_modality / minicpmo), chosen where a reader by convention
is likeliest wrong: a head_dim that is not hidden_size / heads (Kanana-nano: 1792 / 24 is not whole), a
depth-upscaled stack (SOLAR), a llava wrapper whose text_config is a diff against LlamaConfig's defaults and whose
SigLIP tower leaves vision_use_head to its class default (true, transformers 5.x configuration_siglip.py: the
attention-pooling head is built and saved), a hybrid SAM + SigLIP tower named by class (DeepSeek-VL), and a wrapper
with an audio tower and a TTS model beside the LM (MiniCPM-o). Each hand count is worked out tensor by tensor from the
modeling code (transformers 5.x modeling_llama.py, modeling_llava.py, modeling_siglip.py read from the wheel, not
installed), written before the reader was run on them."""
from __future__ import annotations

import pytest

from hand_counts import REFUSED, UNSEEN, Round, count, gated, gqa, lin, ln
from solver.errors import InputError
from solver.specs.config.read import parse_model_config

DATA = UNSEEN / "round20"
ROUND = Round(DATA)
_load, _spec, _total = ROUND.load, ROUND.spec, ROUND.total


def llama_layer(h: int, heads: int, kv: int, d: int, inter: int) -> int:
    """q / k / v / o bias-free, the gated MLP, two RMSNorm weight vectors."""
    return gqa(h, heads, kv, d) + gated(h, inter) + 2 * h


def llama(vocab: int, h: int, layers: int, heads: int, kv: int, d: int, inter: int, tied: bool) -> int:
    """embed_tokens, the layers, the final RMSNorm, lm_head unless tied."""
    return (1 if tied else 2) * vocab * h + layers * llama_layer(h, heads, kv, d, inter) + h


# ------------------------------------------------------------------ SOLAR-10.7B (LlamaForCausalLM, 48 layers:
# Mistral-7B's shape depth-upscaled, vocab 32000, untied)
SOLAR_10_7B = llama(32000, 4096, 48, 32, 8, 128, 14336, tied=False)

# ------------------------------------------------------------------ Kanana-nano-2.1B (LlamaForCausalLM): q is
# 24 heads x head_dim 128 = 3072 wide against a 1792 residual (o_proj 3072 -> 1792), k / v 8 x 128; tied
KANANA_NANO_2_1B = llama(128256, 1792, 32, 24, 8, 128, 8064, tied=True)

# ------------------------------------------------------------------ Llama-3.2-1B: 32 / 8 heads x 64, tied
LLAMA_3_2_1B = llama(128256, 2048, 16, 32, 8, 64, 8192, tied=True)


# ------------------------------------------------------------------ Mantis-8B-siglip-llama3 (LlavaForConditional-
# Generation): text_config a diff against LlamaConfig (hidden 4096, 32 layers, 32 heads: Llama-3-8B) with vocab
# 128320, untied; SiglipVisionModel (so400m): patch Conv2d 14 x 14 biased, (384 // 14)^2 = 729 learned positions
# (no class token), 27 layers of layer_norm1 / layer_norm2, q / k / v / out_proj biased, fc1 / fc2 biased;
# post_layernorm; the attention-pooling head (vision_use_head's class default true): probe, MultiheadAttention
# in_proj 3h x h + 3h and out_proj h x h + h, a LayerNorm, the MLP; the projector linear_1 1152 -> 4096 and
# linear_2 4096 -> 4096, both biased (multimodal_projector_bias's default true)
def siglip_tower(h: int, layers: int, inter: int, patch: int, image: int, head: bool) -> int:
    mlp = lin(h, inter, True) + lin(inter, h, True)
    layer = 2 * ln(h) + 4 * lin(h, h, True) + mlp
    pooling = h + lin(h, 3 * h, True) + lin(h, h, True) + ln(h) + mlp
    return (3 * patch * patch * h + h + (image // patch) ** 2 * h + layers * layer + ln(h)
            + (pooling if head else 0))


MANTIS_TEXT = llama(128320, 4096, 32, 32, 8, 128, 14336, tied=False)
MANTIS_8B = (MANTIS_TEXT + siglip_tower(1152, 27, 4304, 14, 384, head=True)
             + lin(1152, 4096, True) + lin(4096, 4096, True))

# ------------------------------------------------------------------ refused files: what a count would hold
# DeepSeek-VL-7B-chat: language_config a diff against LlamaConfig (hidden 4096, 11008, 32 heads MHA) with 30 layers
# and vocab 102400, untied; the SAM-B + SigLIP-L hybrid tower and its split projector are not counted by hand here
DEEPSEEK_VL_7B_TEXT = llama(102400, 4096, 30, 32, 32, 128, 11008, tied=False)
# MiniCPM-o-2.6: Qwen2-7B's shape (q / k / v biased) beside SigLIP, a Whisper-medium encoder and ChatTTS
MINICPM_O_TEXT = (2 * 151700 * 3584 + 28 * (llama_layer(3584, 28, 4, 128, 18944) + 3584 + 2 * 512) + 3584)


HAND: dict[str, int] = {
    "upstage--SOLAR-10.7B-v1.0": SOLAR_10_7B,
    "kakaocorp--kanana-nano-2.1b-instruct": KANANA_NANO_2_1B,
    "meta-llama--Llama-3.2-1B": LLAMA_3_2_1B,
    "TIGER-Lab--Mantis-8B-siglip-llama3": MANTIS_8B,
}
# Published totals precise enough for a 1% check: SOLAR's 10.7B (name and paper), Kanana-nano's 2.1B (name),
# Llama-3.2-1B's card (1.23B)
PUBLISHED: dict[str, float] = {"upstage--SOLAR-10.7B-v1.0": 10.7e9, "kakaocorp--kanana-nano-2.1b-instruct": 2.1e9,
                               "meta-llama--Llama-3.2-1B": 1.23e9}

# Bytes of K/V per token of context at bf16 (attention layers x K/V heads x 2 x head_dim x 2)
KV_BYTES_PER_TOKEN: dict[str, int] = {
    "upstage--SOLAR-10.7B-v1.0": 48 * 8 * 128 * 4,
    "kakaocorp--kanana-nano-2.1b-instruct": 32 * 8 * 128 * 4,
    "meta-llama--Llama-3.2-1B": 16 * 8 * 64 * 4,
    "TIGER-Lab--Mantis-8B-siglip-llama3": 32 * 8 * 128 * 4,
}



# ------------------------------------------------------------------ reading rules added this round


def test_a_sub_config_beside_a_top_level_language_model_is_refused_naming_it() -> None:
    # Before this round: MiniCPM-o without its audio_config counted 8,050,038,848 and tts_config (ChatTTS) was dropped
    # without a word: only a language model under text_config / llm_config had its unread sub-configs named
    cfg = {k: v for k, v in _load("openbmb--MiniCPM-o-2_6", REFUSED).items() if k != "audio_config"}
    with pytest.raises(InputError, match=r"tts_config: given \(model_type 'conditional_chattts'\): a module beside the "
                                         r"language model \(the top level's fields\)"):
        parse_model_config(cfg, "x")


def test_sub_configs_that_build_no_module_are_not_refused() -> None:
    # MPT's init_config (weight initialization) and MiniCPM-V's slice_config (the processor's image slicing)
    cfg = _load("upstage--SOLAR-10.7B-v1.0")
    assert count({**cfg, "init_config": {"init_std": 0.02}, "slice_config": {"max_slice_nums": 9}}) == SOLAR_10_7B


def test_a_head_dim_wider_than_hidden_over_heads_sizes_q_and_o() -> None:
    # Kanana-nano: 24 x 128 = 3072 against 1792; read as hidden / heads it would be 74.67, not whole
    assert _total("kakaocorp--kanana-nano-2.1b-instruct") == KANANA_NANO_2_1B


def test_llavas_siglip_tower_builds_its_pooling_head_unless_vision_use_head_says_false() -> None:
    cfg = _load("TIGER-Lab--Mantis-8B-siglip-llama3")
    off = {**cfg, "vision_config": {**cfg["vision_config"], "vision_use_head": False}}
    assert count(off) == MANTIS_8B - siglip_tower(1152, 27, 4304, 14, 384, True) \
        + siglip_tower(1152, 27, 4304, 14, 384, False)


# ------------------------------------------------------------------ refused this round: one line each

REFUSALS: dict[str, str] = {
    # language_config a diff against LlamaConfig (DEEPSEEK_VL_7B_TEXT by hand 6,910,365,696); the first unread
    # module named (vision_config's class-named hybrid tower would be next)
    "deepseek-ai--deepseek-vl-7b-chat": r"aligner_config: given \(model_type 'aligner'\): a module beside the language "
                                        r"model \(language_config\)",
    # the Whisper-medium encoder first; without it the tts_config (this round's rule)
    "openbmb--MiniCPM-o-2_6": r"audio_config: an audio encoder of model_type 'whisper' has no counting convention",
}
