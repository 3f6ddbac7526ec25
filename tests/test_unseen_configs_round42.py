"""Forty-second round of families outside the catalog (tests/data/configs_unseen/round42/, SOURCES.md's "Forty-second
round (stop 37)"): 2025-2026 audio-language model_types in transformers 5.25.0 that no earlier round nor models/ holds,
each an LLM decoder beside an audio encoder. Each file is its config classes' defaults (the docstring names the
checkpoint) written as to_dict would. Hand counts tensor by tensor from transformers 5.25.0's modeling_*.py (read from
the unzipped wheel, not installed); written before the reader was run on them."""
from __future__ import annotations

import pytest

from hand_counts import REFUSED, UNSEEN, Round, count, gated, gqa, lin, ln
from solver.errors import InputError
from solver.specs.config.read import parse_model_config

DATA = UNSEEN / "round42"
ROUND = Round(DATA)
_load, _spec, _total = ROUND.load, ROUND.spec, ROUND.total


# ------------------------------------------------------------------ Qwen2Config()'s defaults (the text of Audio
# Flamingo 3 and Music Flamingo: SubConfigSpec(model_type="qwen2") with no init_kwargs): 4096 x 32, MHA 32 x 128 with
# q / k / v biases, o bias-free, a 22016 gated MLP, two RMSNorms a layer, a final norm, a 151936 x 4096 table and an
# untied lm_head (the wrapper's own nn.Linear; _tied_weights_keys None)
def qwen2_layer(h: int, heads: int, kv: int, d: int, ff: int) -> int:
    return gqa(h, heads, kv, d, qkv_bias=True) + gated(h, ff) + 2 * h


QWEN2_DEFAULT = 2 * 151936 * 4096 + 32 * qwen2_layer(4096, 32, 32, 128, 22016) + 4096


# AudioFlamingo3Encoder (AudioFlamingo3EncoderConfig()'s defaults, Whisper-large-v3's encoder): conv1 Conv1d 128 ->
# 1280 and conv2 1280 -> 1280, kernel 3, biased; embed_positions 1500 x 1280; 32 layers of q / v / out_proj biased,
# k_proj bias-free, self_attn_layer_norm / final_layer_norm LayerNorms, fc1 / fc2 biased 1280 -> 5120; the closing
# layer_norm; the avg_pooler holds no weights
def whisper_layer(d: int, ff: int) -> int:
    return 3 * lin(d, d, True) + lin(d, d) + 2 * ln(d) + lin(d, ff, True) + lin(ff, d, True)


def whisper_encoder(mels: int, d: int, layers: int, ff: int, positions: int) -> int:
    return lin(3 * mels, d, True) + lin(3 * d, d, True) + positions * d + layers * whisper_layer(d, ff) + ln(d)


AF3_ENCODER = whisper_encoder(128, 1280, 32, 5120, 1500)


# AudioFlamingo3MultiModalProjector: linear_1 audio hidden -> text hidden and linear_2 text -> text, both biased
# (projector_bias true), a GELU between
def af3_projector(d: int, text: int, bias: bool = True) -> int:
    return lin(d, text, bias) + lin(text, text, bias)


AF3 = QWEN2_DEFAULT + AF3_ENCODER + af3_projector(1280, 4096)
# Music Flamingo: AudioFlamingo3's tower (its audio_config is audioflamingo3_encoder), projector and Qwen2 text; its
# rotary time embedding (pos_emb) holds buffers only. The wrapper's head_dim (1280) and max_position_embeddings (the
# rope_theta 1200) are that embedding's, not the language model's
MUSIC_FLAMINGO = AF3


# ------------------------------------------------------------------ GLM-ASR-Nano (glmasr; GlmAsrConfig()'s defaults:
# its text_config init_kwargs are a Llama of 2048 x 28, GQA 16 / 4 x 128, a 6144 MLP, a 59264 table; the wrapper's
# tie_word_embeddings true ties lm_head to the table (_tied_weights_keys), while the text_config, as to_dict writes
# LlamaConfig's default, says false: the reader's rule (round 33) keeps the language model's, an untied head, and
# names the disagreement; GLM_ASR_TIED is transformers' build)
def llama_layer(h: int, heads: int, kv: int, d: int, ff: int) -> int:
    return gqa(h, heads, kv, d) + gated(h, ff) + 2 * h


GLM_ASR_TEXT = 2 * 59264 * 2048 + 28 * llama_layer(2048, 16, 4, 128, 6144) + 2048


# GlmAsrEncoder (GlmAsrEncoderConfig()'s defaults): conv1 / conv2 as Whisper's, no position table (a partial rotary
# embedding, buffers only); 32 layers of q_proj (biased), k_proj (bias-free), v_proj (biased) over num_key_value_heads
# (default: the 20 heads) x 64, o_proj biased, input_layernorm / post_attention_layernorm LayerNorms, fc1 / fc2 biased
# 1280 -> 5120; the closing norm (a LayerNorm)
def glm_asr_layer(d: int, heads: int, kv: int, ff: int) -> int:
    hd = d // heads
    return (lin(d, heads * hd, True) + lin(d, kv * hd) + lin(d, kv * hd, True) + lin(heads * hd, d, True)
            + 2 * ln(d) + lin(d, ff, True) + lin(ff, d, True))


def glm_asr_encoder(mels: int, d: int, layers: int, heads: int, kv: int, ff: int) -> int:
    return lin(3 * mels, d, True) + lin(3 * d, d, True) + layers * glm_asr_layer(d, heads, kv, ff) + ln(d)


# GlmAsrMultiModalProjector: linear_1 from the audio intermediate_size (four frames of 1280 stacked: 5120) to twice the
# text width, linear_2 back to it, both biased
def glm_asr_projector(audio_inter: int, text: int) -> int:
    return lin(audio_inter, 2 * text, True) + lin(2 * text, text, True)


GLM_ASR = GLM_ASR_TEXT + glm_asr_encoder(128, 1280, 32, 20, 20, 5120) + glm_asr_projector(5120, 2048)
GLM_ASR_TIED = GLM_ASR - 59264 * 2048

# Qwen3-ASR-1.7B (qwen3_asr; stop 38, audio: counted since): Qwen3ASREncoder, Whisper's layers with k_proj biased
# under a sinusoid position buffer, a Conv2d stem (three stride-2 3 x 3 convs of downsample_hidden_size 480 and a
# bias-free conv_out from 480 x 16 (128 mels halved thrice) into 1024) and ln_post; the projector linear_1 1024 -> 1024
# and linear_2 1024 -> output_dim 3584, biased; a tied Qwen3 text model of 2048 x 28 (GQA 16 / 8 x 128, q / k norms)
def qwen3_asr_layer(d: int, ff: int) -> int:
    return 4 * lin(d, d, True) + 2 * ln(d) + lin(d, ff, True) + lin(ff, d, True)


QWEN3_ASR = (151936 * 2048 + 28 * (gqa(2048, 16, 8, 128) + gated(2048, 6144) + 2 * 2048 + 2 * 128) + 2048
             + lin(9, 480, True) + 2 * lin(9 * 480, 480, True) + lin(480 * 16, 1024) + 24 * qwen3_asr_layer(1024, 4096)
             + ln(1024) + lin(1024, 1024, True) + lin(1024, 3584, True))

# Voxtral-Mini-4B-Realtime (voxtral_realtime; stop 38, audio: counted since): VoxtralRealtimeEncoder, Whisper's conv1 /
# conv2, 32 layers of q (biased) / k / v (biased) / o (biased) over 32 heads x head_dim 64, two RMSNorms, a gated MLP
# 1280 -> 5120 with down biased, a closing RMSNorm; the projector 1280 x 4 (downsample_factor) -> 4096 -> 4096,
# bias-free; the tied text model (VoxtralRealtimeTextConfig()'s 4096 x 32, GQA 32 / 8 x 128, 14336 MLP, 32000 table)
# with ada_rms_norm in every layer, linear1 4096 -> 32 and linear2 back, bias-free
def voxtral_rt_audio_layer(d: int, heads: int, hd: int, ff: int) -> int:
    return (lin(d, heads * hd, True) + lin(d, heads * hd) + lin(d, heads * hd, True) + lin(heads * hd, d, True)
            + 2 * d + gated(d, ff) + d)


VOXTRAL_RT = (32000 * 4096 + 32 * (llama_layer(4096, 32, 8, 128, 14336) + 2 * 32 * 4096) + 4096
              + lin(3 * 128, 1280, True) + lin(3 * 1280, 1280, True) + 32 * voxtral_rt_audio_layer(1280, 32, 64, 5120)
              + 1280 + lin(1280 * 4, 4096) + lin(4096, 4096))

# Granite-Speech-4.1-2B-Plus (granite_speech_plus; stop 38, audio: counted since): GraniteSpeechPlusConfig()'s
# defaults. The conformer encoder 274,808,106 (10 blocks of 27,455,616, input_linear 160 -> 1024, the CTC head 1024 ->
# 42 and back; tests/test_defaults_audio.py shows each) and the windowed Q-Former projector 108,289,792 (3 queries of
# 768, 12 layers with cross-attention from 1408 on the even ones, a linear 768 -> 4096); the Granite text model of
# 4096 x 32 (MHA 32 x 128, an 11008 MLP, 32000 rows). The wrapper's tie_word_embeddings true disagrees with the
# text_config's false and the file has no transformers_version: the reader's rule (round 33) keeps the language
# model's, an untied head, and names it; transformers 5.25.0 builds it tied, 6,990,441,514 (GRANITE_PLUS_TIED)
GRANITE_PLUS = (2 * 32000 * 4096 + 32 * llama_layer(4096, 32, 32, 128, 11008) + 4096
                + 10 * 27_455_616 + lin(160, 1024, True) + lin(1024, 42, True) + lin(42, 1024, True)
                + 3 * 768 + 2 * 768 + 12 * (4 * lin(768, 768, True) + 2 * 768 + lin(768, 3072, True)
                                           + lin(3072, 768, True) + 2 * 768)
                + 6 * (2 * lin(768, 768, True) + 2 * lin(1408, 768, True) + 2 * 768) + lin(768, 4096, True))
GRANITE_PLUS_TIED = GRANITE_PLUS - 32000 * 4096

HAND: dict[str, int] = {
    "Qwen--Qwen3-ASR-1.7B-hf": QWEN3_ASR,
    "ibm-granite--granite-speech-4.1-2b-plus": GRANITE_PLUS,
    "mistralai--Voxtral-Mini-4B-Realtime-2602": VOXTRAL_RT,
    "nvidia--audio-flamingo-3-hf": AF3,
    "nvidia--music-flamingo-2601-hf": MUSIC_FLAMINGO,
    "zai-org--GLM-ASR-Nano-2512": GLM_ASR,
}
ACTIVE: dict[str, tuple[int, float | None]] = {}
PUBLISHED: dict[str, float] = {}  # class defaults, not the releases' files

# Bytes of K/V per token of context at bf16 (the decoder's; the audio encoder keeps no cache)
KV_BYTES_PER_TOKEN: dict[str, int] = {
    "ibm-granite--granite-speech-4.1-2b-plus": 32 * 2 * 32 * 128 * 2,
    "Qwen--Qwen3-ASR-1.7B-hf": 28 * 2 * 8 * 128 * 2,
    # every text layer attends within sliding_window 4096 (VoxtralRealtimeTextAttention): no cache grows past it
    "mistralai--Voxtral-Mini-4B-Realtime-2602": 0,
    "nvidia--audio-flamingo-3-hf": 32 * 2 * 32 * 128 * 2,
    "nvidia--music-flamingo-2601-hf": 32 * 2 * 32 * 128 * 2,
    "zai-org--GLM-ASR-Nano-2512": 28 * 2 * 4 * 128 * 2,
}
# ------------------------------------------------------------------ refused this round: one line each (class defaults)
# Cohere-Transcribe (cohere_asr): an encoder-decoder (Parakeet encoder)
REFUSALS: dict[str, str] = {
    "CohereLabs--cohere-transcribe-03-2026": r"is_encoder_decoder: true: an encoder-decoder model \('cohere_asr'",
}
_AF3, _MF, _GLM = "nvidia--audio-flamingo-3-hf", "nvidia--music-flamingo-2601-hf", "zai-org--GLM-ASR-Nano-2512"


# ------------------------------------------------------------------ reading rules added this round
def test_audio_flamingo_3_counts_its_whisper_tower_and_two_linear_projector() -> None:
    # Before this round: refused (audio_config: an audio encoder of model_type 'audioflamingo3_encoder' has no
    # counting convention here)
    assert _total(_AF3) == AF3


def test_audio_flamingo_3_projector_bias_false_drops_both_biases() -> None:
    cfg = _load(_AF3)
    cfg["projector_bias"] = False
    assert count(cfg) == AF3 - 2 * 4096


def test_audio_tower_not_written_is_the_wrappers_default_tower_and_said() -> None:
    # Before this round: 12,049,846,272, the text alone, no note (transformers builds AudioFlamingo3EncoderConfig()'s)
    cfg = _load(_AF3)
    del cfg["audio_config"]
    spec = parse_model_config(cfg, "x")
    assert count(cfg) == AF3
    assert any(w.startswith("audio_config: not written; read as audioflamingo3's default audio tower")
               for w in spec.warnings)


@pytest.mark.parametrize("key", ["num_mel_bins", "num_hidden_layers", "intermediate_size", "hidden_size",
                                 "max_source_positions"])
def test_audio_flamingo_3_tower_fields_left_out_take_the_class_defaults(key: str) -> None:
    cfg = _load(_AF3)
    del cfg["audio_config"][key]
    assert count(cfg) == AF3


@pytest.mark.parametrize("key", ["layer_types", "use_sliding_window", "num_key_value_heads"])
def test_audio_flamingo_3_text_pattern_fields_left_out_count_the_qwen2_class_defaults(key: str) -> None:
    cfg = _load(_AF3)
    del cfg["text_config"][key]
    assert count(cfg) == AF3


def test_music_flamingo_rotary_time_fields_are_the_wrappers_not_the_language_models() -> None:
    spec = _spec(_MF)
    assert count(_load(_MF)) == MUSIC_FLAMINGO
    for key in ("head_dim", "max_position_embeddings", "rope_parameters"):
        assert any(w.startswith(f"{key}: the wrapper's own field") for w in spec.warnings)


def test_glm_asr_rotary_tower_has_no_position_table_and_reads_kv_heads() -> None:
    # Before this round: refused (audio_config: an audio encoder of model_type 'glmasr_encoder' has no counting
    # convention here); read as Whisper's it would add a 1500 x 1280 table
    assert _total(_GLM) == GLM_ASR
    cfg = _load(_GLM)
    cfg["audio_config"]["num_key_value_heads"] = 4
    assert count(cfg) == GLM_ASR - 32 * 2 * 1280 * (20 - 4) * 64 - 32 * (20 - 4) * 64


def test_glm_asr_projector_reads_the_stacked_frames_through_twice_the_text_width() -> None:
    cfg = _load(_GLM)
    cfg["audio_config"]["intermediate_size"] = 2560
    assert count(cfg) == (GLM_ASR - 32 * (2 * 1280 * 2560 + 2560) - 2560 * 4096)


def test_glm_asr_wrapper_tie_disagreeing_with_the_text_config_is_named() -> None:
    spec = _spec(_GLM)
    assert any(w.startswith("tie_word_embeddings: the wrapper's true disagrees") for w in spec.warnings)
    cfg = _load(_GLM)
    del cfg["text_config"]["tie_word_embeddings"]
    assert count(cfg) == GLM_ASR_TIED  # only the wrapper's written: lifted, transformers' build


@pytest.mark.parametrize("name", ["Qwen--Qwen3-ASR-1.7B-hf", "mistralai--Voxtral-Mini-4B-Realtime-2602"])
def test_audio_tower_not_written_is_the_class_default_tower_and_said(name: str) -> None:
    # Before this round: Qwen3-ASR without audio_config 1,720,574,976, the text alone, no note; refused since round 42
    # until stop 38 (audio) counted these towers: both files write their class's default tower, so leaving it out
    # changes nothing
    cfg = ROUND.load(name)
    del cfg["audio_config"]
    spec = parse_model_config(cfg, "x")
    assert count(cfg) == HAND[name]
    assert any(w.startswith("audio_config: not written; read as") for w in spec.warnings)


def test_cohere_transcribe_with_its_subconfigs_left_out_is_refused() -> None:
    # Before this round: 167,814,144 (its decoder read as a decoder-only model)
    cfg = ROUND.load("CohereLabs--cohere-transcribe-03-2026", REFUSED)
    for key in ("is_encoder_decoder", "encoder_config"):
        del cfg[key]
    with pytest.raises(InputError, match=r"model_type: 'cohere_asr'"):
        parse_model_config(cfg, "x")


def test_granite_speech_plus_with_its_subconfigs_left_out_reads_the_class_defaults() -> None:
    # Before this round: 6,738,415,616 (the text alone); refused from round 42 until stop 38 (audio). The file writes
    # the class defaults, so leaving encoder_config and projector_config out changes nothing, and says so
    cfg = ROUND.load("ibm-granite--granite-speech-4.1-2b-plus")
    del cfg["encoder_config"], cfg["projector_config"]
    spec = parse_model_config(cfg, "x")
    assert count(cfg) == GRANITE_PLUS
    assert any(w.startswith("encoder_config: not written; read as") for w in spec.warnings)


def test_granite_speech_plus_wrapper_tie_disagreeing_with_the_text_config_is_named() -> None:
    cfg = _load("ibm-granite--granite-speech-4.1-2b-plus")
    spec = parse_model_config(cfg, "x")
    assert any(w.startswith("tie_word_embeddings: the wrapper's true disagrees") for w in spec.warnings)
    del cfg["text_config"]["tie_word_embeddings"]
    assert count(cfg) == GRANITE_PLUS_TIED  # only the wrapper's written: transformers' build
