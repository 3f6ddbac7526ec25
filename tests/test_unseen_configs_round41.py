"""Forty-first round of families outside the catalog (tests/data/configs_unseen/round41/, SOURCES.md's "Forty-first
round (stop 37)"): 2025-2026 model_types in transformers 5.25.0 that no earlier round nor models/ holds. Each file is
its config classes' defaults (the docstring names the checkpoint) written as to_dict would. Hand counts tensor by
tensor from transformers 5.25.0's modeling_*.py (read from the unzipped wheel, not installed); written before the
reader was run on them."""
from __future__ import annotations

import pytest

from hand_counts import REFUSED, UNSEEN, Round, count, gated, gqa
from solver.errors import InputError
from solver.specs.config.read import parse_model_config

DATA = UNSEEN / "round41"
ROUND = Round(DATA)
_load, _spec, _total = ROUND.load, ROUND.spec, ROUND.total


# ------------------------------------------------------------------ Ministral-8B (ministral; MinistralConfig()'s
# defaults, the docstring's mistralai/Ministral-8B-Instruct-2410: 4096 x 32, GQA 32 / 8 heads of 128, a 14336 gated
# MLP, vocab 32000 untied, sliding_window 4096 on every layer (layer_types' default where a window is set)).
# MinistralModel: q / k / v / o bias-free ("Match Mistral"), a gated bias-free MLP, input / post-attention RMSNorms,
# a final norm; an embedding and an untied lm_head.
def ministral_layer(h: int, heads: int, kv: int, d: int, ff: int) -> int:
    return gqa(h, heads, kv, d) + gated(h, ff) + 2 * h


MINISTRAL = 2 * 32000 * 4096 + 32 * ministral_layer(4096, 32, 8, 128, 14336) + 4096
_MINISTRAL = "mistralai--Ministral-8B-Instruct-2410"

HAND: dict[str, int] = {
    _MINISTRAL: MINISTRAL,
}
ACTIVE: dict[str, tuple[int, float | None]] = {}
PUBLISHED: dict[str, float] = {}  # class defaults, not the releases' files

# Bytes of K/V per token of context at bf16 over the blocks whose cache grows with the context
KV_BYTES_PER_TOKEN: dict[str, int] = {
    _MINISTRAL: 0,  # every layer slides over 4096 tokens: its cache stops at the window
}

# ------------------------------------------------------------------ refused this round: one line each
# Each file is its classes' defaults (the docstring's checkpoint), the sub-configs written with their size fields
# (SOURCES.md). pi0 / pi05: PaliGemma (Gemma-2B + SigLIP) with a Gemma action expert run over flow-matching steps;
# Gemma-4's assistant: a drafter reading the target's K/V and hidden states; T5Gemma-2: an encoder-decoder; BLT:
# patcher, local encoder / decoder and global transformer; Kosmos-2.5; Unlimited-OCR (SAM + CLIP-style encoder);
# Apertus-v1.5-8B's wrapper (a VQ image tokenizer and WavTokenizer beside round 26's text model)
REFUSALS: dict[str, str] = {
    "lerobot--pi0_base": r"model_type: 'pi0': an action expert \(dit_config",
    "lerobot--pi05_base": r"model_type: 'pi05': an action expert \(dit_config",
    "google--gemma-4-e2b-it-assistant": r"model_type: 'gemma4_assistant': a speculative-decoding draft model: .*"
                                        r"text_config.num_kv_shared_layers",
    "google--t5gemma-2-270m-270m": r"is_encoder_decoder: true: an encoder-decoder model \('t5gemma2'",
    "itazap--blt-1b-hf": r"model_type: 'blt': a byte latent transformer \(patcher_config",
    "microsoft--kosmos-2.5": r"model_type: 'kosmos_2_5_text_model': Kosmos-2.5's text decoder",
    "baidu--Unlimited-OCR": r"model_type: 'unlimited_ocr_text': a SAM tower feeding a CLIP-style encoder "
                            r"\(vision_config.sam_config",
    "swiss-ai--Apertus-v1.5-8B": r"model_type: 'apertus1p5': a VQ image tokenizer \(vision_config",
}


# ------------------------------------------------------------------ reading rules added this round
def test_ministral_counts_as_the_mistral_stack_it_is() -> None:
    assert _total(_MINISTRAL) == MINISTRAL


def _windows(cfg: dict) -> set[int | None]:
    return {b.window for layer in parse_model_config(cfg, "x").layers for b in layer.blocks if hasattr(b, "window")}


@pytest.mark.parametrize("keys", [("layer_types",), ("layer_types", "sliding_window")])
def test_ministral_pattern_fields_left_out_window_every_layer_at_the_class_default(keys: tuple[str, ...]) -> None:
    # Before this round: with sliding_window left out too, every layer read as full attention (no family line), the
    # class's 4096 window not applied: a K/V cache growing with the context where it stops at 4,096
    cfg = _load(_MINISTRAL)
    for key in keys:
        del cfg[key]
    assert count(cfg) == MINISTRAL
    assert _windows(cfg) == {4096}


def test_ministral_null_window_is_full_attention_on_every_layer() -> None:
    cfg = _load(_MINISTRAL)
    del cfg["layer_types"]
    cfg["sliding_window"] = None
    assert _windows(cfg) == {None}


@pytest.mark.parametrize("key", ["num_key_value_heads", "intermediate_size"])
def test_ministral_size_fields_left_out_take_the_class_defaults(key: str) -> None:
    cfg = _load(_MINISTRAL)
    del cfg[key]
    spec = parse_model_config(cfg, "x")
    assert count(cfg) == MINISTRAL and not any("not in the family defaults" in w for w in spec.warnings)


def test_encoder_and_decoder_sub_configs_are_an_encoder_decoder_without_the_switch() -> None:
    # Before this round: T5Gemma-2 with is_encoder_decoder left out (its class defaults it true) refused as
    # "hidden_size: missing"
    cfg = ROUND.load("google--t5gemma-2-270m-270m", REFUSED)
    del cfg["is_encoder_decoder"]
    with pytest.raises(InputError, match=r"encoder: a sub-config beside decoder: an encoder-decoder model"):
        parse_model_config(cfg, "x")


@pytest.mark.parametrize("name, sub", [("lerobot--pi0_base", "dit_config"), ("lerobot--pi05_base", "dit_config"),
                                       ("itazap--blt-1b-hf", "patcher_config"),
                                       ("swiss-ai--Apertus-v1.5-8B", "vision_config"),
                                       ("swiss-ai--Apertus-v1.5-8B", "audio_config")])
def test_a_wrapper_building_an_uncountable_module_by_default_is_refused_without_its_sub_config(name: str,
                                                                                             sub: str) -> None:
    # Before this round: pi0 / pi05 / BLT refused as "hidden_size: missing", Apertus-v1.5 as "vision_config.depth:
    # missing": a field the model does not have, named as the cause
    cfg = ROUND.load(name, REFUSED)
    del cfg[sub]
    with pytest.raises(InputError, match=r"model_type: '[a-z0-9]+': "):
        parse_model_config(cfg, "x")


def test_gemma4_assistant_drafter_is_refused_naming_what_it_reads_from_its_target() -> None:
    # Before this round: refused as "text_config.num_kv_shared_layers: 30 leaves no layer of the 30 to compute the
    # K/V", true of the drafter alone but not the cause (the K/V is the target model's)
    for model_type in ("gemma4_assistant", "gemma4_unified_assistant"):
        cfg = ROUND.load("google--gemma-4-e2b-it-assistant", REFUSED) | {"model_type": model_type}
        with pytest.raises(InputError, match=rf"model_type: '{model_type}': a speculative-decoding draft model"):
            parse_model_config(cfg, "x")
