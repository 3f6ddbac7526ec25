"""Forty-second round of families outside the catalog (tests/data/configs_unseen/round42/, SOURCES.md's "Forty-second
round (stop 37)"): 2025-2026 audio-language model_types in transformers 5.25.0 that no earlier round nor models/ holds,
each an LLM decoder beside an audio encoder. Each file is its config classes' defaults (the docstring names the
checkpoint) written as to_dict would. Hand counts tensor by tensor from transformers 5.25.0's modeling_*.py (read from
the unzipped wheel, not installed); written before the reader was run on them."""
from __future__ import annotations

from hand_counts import UNSEEN, Round, gated, gqa, lin, ln

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
# tie_word_embeddings true ties lm_head to the table (_tied_weights_keys))
def llama_layer(h: int, heads: int, kv: int, d: int, ff: int) -> int:
    return gqa(h, heads, kv, d) + gated(h, ff) + 2 * h


GLM_ASR_TEXT = 59264 * 2048 + 28 * llama_layer(2048, 16, 4, 128, 6144) + 2048


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

HAND: dict[str, int] = {
    "nvidia--audio-flamingo-3-hf": AF3,
    "nvidia--music-flamingo-2601-hf": MUSIC_FLAMINGO,
    "zai-org--GLM-ASR-Nano-2512": GLM_ASR,
}
ACTIVE: dict[str, tuple[int, float | None]] = {}
PUBLISHED: dict[str, float] = {}  # class defaults, not the releases' files

# Bytes of K/V per token of context at bf16 (the decoder's; the audio encoder keeps no cache)
KV_BYTES_PER_TOKEN: dict[str, int] = {
    "nvidia--audio-flamingo-3-hf": 32 * 2 * 32 * 128 * 2,
    "nvidia--music-flamingo-2601-hf": 32 * 2 * 32 * 128 * 2,
    "zai-org--GLM-ASR-Nano-2512": 28 * 2 * 4 * 128 * 2,
}
REFUSALS: dict[str, str] = {}
