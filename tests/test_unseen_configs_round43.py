"""Forty-third round of families outside the catalog (tests/data/configs_unseen/round43/, SOURCES.md's "Forty-third
round (stop 37)"): 2025-2026 speech model_types in transformers 5.25.0 that no earlier round nor models/ holds, and
round 42's gap (an audio wrapper whose text_config is not written). Each file is its config classes' defaults (the
docstring names the checkpoint) written as to_dict would, sub-configs of another class abbreviated. Hand counts tensor
by tensor from transformers 5.25.0's modeling_*.py (read from the unzipped wheel, not installed)."""
from __future__ import annotations

import pytest

from hand_counts import REFUSED, UNSEEN, Round, count, gated, gqa, lin
from solver.errors import InputError
from solver.specs.config.read import parse_model_config
from test_unseen_configs_round9 import HAND as ROUND9, whisper_encoder
from test_unseen_configs_round42 import AF3, GLM_ASR_TIED, MUSIC_FLAMINGO, QWEN2_DEFAULT

DATA = UNSEEN / "round43"
ROUND = Round(DATA)


# ------------------------------------------------------------------ Higgs Audio v2 (higgs_audio_v2; HiggsAudioV2Config()'s
# defaults): a Llama of 3072 x 28, GQA 24 / 8 x 128, whose every layer holds two gated MLPs of 8192 (mlp for text
# tokens, audio_mlp for audio tokens: the "DualFFN") and four RMSNorms (input / post_attention, and the audio_ pair);
# a 128256 x 3072 text table and an 8 x 1024 x 3072 audio-code table (embed_audio_tokens); the final norm; the head
# is audio_lm_head, 3072 -> num_codebooks x codebook_size, bias-free; text_lm_head is not built (use_text_head false,
# and _keys_to_ignore_on_load_unexpected drops it from the checkpoint)
def higgs_layer(h: int, heads: int, kv: int, d: int, ff: int) -> int:
    return gqa(h, heads, kv, d) + 2 * gated(h, ff) + 4 * h


def higgs(vocab: int, h: int, layers: int, heads: int, kv: int, d: int, ff: int, codebooks: int, size: int) -> int:
    return vocab * h + codebooks * size * h + layers * higgs_layer(h, heads, kv, d, ff) + h + h * codebooks * size


HIGGS_AUDIO_V2 = higgs(128256, 3072, 28, 24, 8, 128, 8192, 8, 1024)
# The same config read as a plain Llama (one MLP, two norms, an untied 128256-row head): what the reader gave before
HIGGS_AS_LLAMA = 2 * 128256 * 3072 + 28 * (gqa(3072, 24, 8, 128) + gated(3072, 8192) + 2 * 3072) + 3072



# VibeVoice-ASR (vibevoice_asr; stop 38, audio: counted since, refused here before): VibeVoiceAsrConfig()'s defaults.
# Two VibeVoiceAcousticTokenizerEncoderModels (acoustic hidden_size 64, semantic 128, the class's 32 filters, kernel 7,
# ratios [2, 2, 4, 5, 5, 8], depths [3, 3, 3, 3, 3, 3, 8]): a stem conv 1 -> 32 and 3 ConvNeXt blocks; stage i a conv
# 32 x 2^i -> 32 x 2^(i+1) of 2 r taps and its blocks; a head conv 2048 -> hidden of 7 taps; all convs biased. A block
# of width c: two RMSNorms, a biased depthwise conv of 7 taps, linear1 / linear2 through 4 c (biased), gamma and
# ffn_gamma. Each path's projector: a linear hidden -> 4096 (biased), an RMSNorm, a linear 4096 -> 4096 (biased); the
# Qwen2 language model of QWEN2_DEFAULT (12,049,846,272, untied)
def convnext_block(c: int) -> int:
    return 2 * c + (7 * c + c) + lin(c, 4 * c, True) + lin(4 * c, c, True) + 2 * c


def vibevoice_encoder(hidden: int) -> int:
    ratios, depths = [2, 2, 4, 5, 5, 8], [3, 3, 3, 3, 3, 3, 8]
    total = lin(7, 32, True) + 3 * convnext_block(32)
    for i, r in enumerate(ratios):
        total += lin(32 * 2 ** i * 2 * r, 32 * 2 ** (i + 1), True) + depths[i + 1] * convnext_block(32 * 2 ** (i + 1))
    return total + lin(2048 * 7, hidden, True)


def vibevoice_path(hidden: int) -> int:
    return vibevoice_encoder(hidden) + lin(hidden, 4096, True) + 4096 + lin(4096, 4096, True)


VIBEVOICE_ASR = QWEN2_DEFAULT + vibevoice_path(64) + vibevoice_path(128)

HAND: dict[str, int] = {"microsoft--VibeVoice-ASR-HF": VIBEVOICE_ASR}
ACTIVE: dict[str, tuple[int, float | None]] = {}
PUBLISHED: dict[str, float] = {}  # class defaults, not the releases' files
KV_BYTES_PER_TOKEN: dict[str, int] = {}

# ------------------------------------------------------------------ refused this round: one line each (class defaults)
REFUSALS: dict[str, str] = {
    "bosonai--higgs-audio-v2-generation-3B-base": r"model_type: 'higgs_audio_v2': a DualFFN decoder",
    "kmhf--hf-moshika": r"model_type: 'moshi': a temporal decoder over num_codebooks audio-code tables",
    "kyutai--stt-2.6b-en-trfs": r"model_type: 'kyutai_speech_to_text': num_codebooks x codebook_vocab_size",
}


# ------------------------------------------------------------------ reading rules added this round
@pytest.mark.parametrize("name, keys", [
    ("kmhf--hf-moshika", ["depth_decoder_config", "audio_encoder_config"]),
    ("kyutai--stt-2.6b-en-trfs", ["codec_config"]),
])
def test_speech_model_whose_class_builds_its_sub_configs_is_refused_with_them_left_out(name: str,
                                                                                      keys: list[str]) -> None:
    # Before this round: Moshi 11,268,263,936, Kyutai-STT 4,143,781,888 (each its temporal decoder read as a plain
    # one), VibeVoice-ASR 12,049,846,272 (the Qwen2 text alone), each with no note of what was left out
    cfg = ROUND.load(name, REFUSED)
    for key in keys:
        del cfg[key]
    with pytest.raises(InputError, match=REFUSALS[name]):
        parse_model_config(cfg, "x")


def test_vibevoice_asr_tokenizer_encoders_count_to_transformers_figures() -> None:
    # transformers 5.25.0: model.acoustic_tokenizer_encoder 343,696,032, model.semantic_tokenizer_encoder 344,613,600,
    # model.multi_modal_projector 34,365,440; the whole 12,772,521,344
    assert (vibevoice_encoder(64), vibevoice_encoder(128)) == (343_696_032, 344_613_600)
    assert VIBEVOICE_ASR == 12_772_521_344


def test_vibevoice_asr_with_a_tokenizer_config_left_out_is_refused_naming_it() -> None:
    # Before round 43: 12,049,846,272 (the Qwen2 text alone); the class builds each from its own defaults (the
    # semantic one at hidden_size 128, its init_kwargs), which no family line holds
    cfg = ROUND.load("microsoft--VibeVoice-ASR-HF")
    del cfg["semantic_tokenizer_encoder_config"]
    with pytest.raises(InputError, match=r"semantic_tokenizer_encoder_config: not written"):
        parse_model_config(cfg, "x")


def test_higgs_audio_v2_is_refused_not_read_as_a_plain_llama() -> None:
    # Before this round: 3,606,752,256 (HIGGS_AS_LLAMA: one MLP a layer, a text head), the hand count 5,377,182,720
    assert HIGGS_AS_LLAMA == 3_606_752_256 and HIGGS_AUDIO_V2 == 5_377_182_720
    with pytest.raises(InputError, match=REFUSALS["bosonai--higgs-audio-v2-generation-3B-base"]):
        parse_model_config(ROUND.load("bosonai--higgs-audio-v2-generation-3B-base", REFUSED), "x")


@pytest.mark.parametrize("name, total", [("round42/nvidia--audio-flamingo-3-hf", AF3),
                                         ("round42/nvidia--music-flamingo-2601-hf", MUSIC_FLAMINGO),
                                         ("round42/zai-org--GLM-ASR-Nano-2512", GLM_ASR_TIED)])
def test_text_config_not_written_is_the_wrappers_default_language_model_and_said(name: str, total: int) -> None:
    # Before this round: refused on "hidden_size: missing" (the wrapper's top level read as the language model).
    # GLM-ASR's default text config is tied by the wrapper's tie_word_embeddings true (no text_config to disagree)
    cfg = Round(UNSEEN).load(name)
    del cfg["text_config"]
    spec = parse_model_config(cfg, "x")
    assert count(cfg) == total
    assert any(w.startswith("text_config: not written; read as") for w in spec.warnings)


def test_qwen2_audio_without_text_config_counts_qwen2s_defaults_beside_its_tower() -> None:
    # Qwen2AudioConfig builds Qwen2Config() (SubConfigSpec model_type qwen2): round 9's file with its text_config
    # dropped (and the wrapper's unread top-level vocab_size with it) counts Qwen2Config()'s 12,049,846,272 beside round
    # 9's Whisper tower and one biased 1280 -> 4096 projector. Before this round: refused on "hidden_size: missing"
    cfg = Round(UNSEEN).load("round9/Qwen--Qwen2-Audio-7B-Instruct")
    del cfg["text_config"], cfg["vocab_size"]
    assert count(cfg) == QWEN2_DEFAULT + whisper_encoder(1280, 32, 5120) + lin(1280, 4096, True)


def test_a_wrapper_top_level_field_with_no_text_config_is_named_not_dropped() -> None:
    # Qwen2-Audio's file writes vocab_size 156032 at the top level too; with no text_config the language model is
    # Qwen2Config()'s 151936, so the top-level one would be dropped unread: one line naming it
    cfg = Round(UNSEEN).load("round9/Qwen--Qwen2-Audio-7B-Instruct")
    del cfg["text_config"]
    with pytest.raises(InputError, match=r"vocab_size: the top level says 156032 and text_config.vocab_size says 151936"):
        parse_model_config(cfg, "x")


def test_voxtral_without_text_config_reads_its_top_level_sizes_agreeing_with_the_built_default() -> None:
    # VoxtralConfig builds LlamaConfig with its init_kwargs (3072 x 30, GQA 32 / 8 x 128, 8192, 131072 rows); round 9's
    # file also writes hidden_size 3072 and vocab_size 131072 at the top level, which agree: the same total as written
    cfg = Round(UNSEEN).load("round9/mistralai--Voxtral-Mini-3B-2507")
    del cfg["text_config"]
    assert count(cfg) == ROUND9["mistralai--Voxtral-Mini-3B-2507"]
