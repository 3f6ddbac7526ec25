"""A config of a model that is not a decoder-only stack is refused in one line, before its sizes are read: the
planner shards one autoregressive stack, and reading an encoder-decoder's or an encoder's fields by the
decoder's conventions would either miscount it silently (BERT read as a 12-layer decoder: 160M, without its
token-type and position tables, pooler and biases) or fail on a field named for the wrong reason (T5's d_ff
reported as a missing intermediate_size). The signs, each a field the model's config writes:

  is_encoder_decoder: true   an encoder stack and a decoder that cross-attends to it (T5, BART, Whisper): written
                             by every such config class, since it differs from PretrainedConfig's default
  num_decoder_layers, decoder_layers  the decoder's depth written apart from the encoder's (T5, Switch
                             Transformers, NLLB-MoE): the sign where a file leaves is_encoder_decoder out (its
                             class defaults it true); before, Switch-Base-8 without it was refused as a missing
                             intermediate_size
  encoder and decoder         both written as sub-configs (T5Gemma-2: t5gemma2_encoder beside t5gemma2_decoder): the
                             sign where the file leaves is_encoder_decoder out (its class defaults it true); before,
                             T5Gemma-2 without it was refused as a missing hidden_size
  architectures ...ForMaskedLM  a masked-LM head: a bidirectional encoder (BERT, RoBERTa, DeBERTa, ModernBERT)
  architectures ...ForTokenClassification  only a per-token label head (OpenAI's privacy-filter, NER taggers): the
                             model labels the tokens it is given and decodes none
  architectures ...ForDecision, ...ForRetrieval  the same where every entry is one: JEV's decision head (label
                             scores at marked tokens, use_cache false), NeoMME's retrieval embedder
  architectures ...ForSequenceClassification, ...ForQuestionAnswering  the same: a score head over the last token
                             (a reward model) or start / end logits over the given tokens, read once per prompt;
                             counted as a generator they would carry a vocabulary head they lack and a decode they
                             never run
  type_vocab_size            a token-type (segment) embedding table, the BERT lineage's, also under a bare
                             ...Model architecture (sentence encoders)
  use_bidirectional_attention: true  every token attends to every other (EmbeddingGemma: Gemma-3's layers run as
                             an encoder for sentence embeddings): no causal decode, no KV cache to plan
"""
from __future__ import annotations

from typing import Any

from solver.errors import InputError

_PLANS = "shardplan plans decoder-only stacks and does not size it"
# architecture suffixes of heads that read the stack's hidden states once and emit no token: a config whose every
# architecture is one of them has no decode to plan (a ...ForCausalLM beside one, a reward model's pair, is read)
_HEADS_WITHOUT_DECODE = (
    ("ForTokenClassification", "a per-token classifier (it labels the tokens it is given, no token-by-token decode)"),
    ("ForDecision", "a decision head (label scores read at marked tokens of one prompt, run without a KV cache; no "
                    "token-by-token decode)"),
    ("ForRetrieval", "a retrieval embedder (it encodes queries and documents into vectors, no token-by-token "
                     "decode)"),
    ("ForSequenceClassification", "a sequence classifier (a score head read at the last token of one prompt, a "
                                  "reward model's, not the vocabulary head; no token-by-token decode)"),
    ("ForQuestionAnswering", "an extractive question-answering head (start / end logits over the given tokens; no "
                             "token-by-token decode)"),
)


def refuse_non_decoder(cfg: dict[str, Any], origin: str, prefix: str = "") -> None:
    """Raise the one-line refusal for the first sign (module docstring) the config carries; `prefix` names where
    it sits (a wrapper's text_config.)."""
    model_type = cfg.get("model_type") or "?"
    if cfg.get("is_encoder_decoder") is True:
        raise InputError(f"{origin}: {prefix}is_encoder_decoder",
                         f"true: an encoder-decoder model ({model_type!r}: an encoder stack and a decoder that "
                         f"cross-attends to it); {_PLANS}")
    for key in ("num_decoder_layers", "decoder_layers"):
        if cfg.get(key) is not None and cfg.get("is_encoder_decoder") is not False:
            raise InputError(f"{origin}: {prefix}{key}",
                             f"{cfg[key]!r}: the decoder's depth written apart from an encoder's, an encoder-decoder "
                             f"model ({model_type!r}); {_PLANS}")
    if (isinstance(cfg.get("encoder"), dict) and isinstance(cfg.get("decoder"), dict)
            and cfg.get("is_encoder_decoder") is not False):
        raise InputError(f"{origin}: {prefix}encoder",
                         f"a sub-config beside decoder: an encoder-decoder model ({model_type!r}: an encoder stack and "
                         f"a decoder that cross-attends to it); {_PLANS}")
    architectures = cfg.get("architectures")
    if isinstance(architectures, list):
        masked = [a for a in architectures if isinstance(a, str) and a.endswith("ForMaskedLM")]
        if masked:
            raise InputError(f"{origin}: {prefix}architectures",
                             f"{masked[0]}: a masked-LM encoder (bidirectional attention, no token-by-token "
                             f"decode); {_PLANS}")
        for suffix, what in _HEADS_WITHOUT_DECODE:
            heads = [a for a in architectures if isinstance(a, str) and a.endswith(suffix)]
            if heads and len(heads) == len(architectures):
                raise InputError(f"{origin}: {prefix}architectures", f"{heads[0]}: {what}; {_PLANS}")
    if cfg.get("use_bidirectional_attention") is True:
        raise InputError(f"{origin}: {prefix}use_bidirectional_attention",
                         f"true: an encoder ({model_type!r} run with bidirectional attention, an embedding model: "
                         f"no token-by-token decode); {_PLANS}")
    types = cfg.get("type_vocab_size")
    if isinstance(types, int) and not isinstance(types, bool) and types > 0:
        raise InputError(f"{origin}: {prefix}type_vocab_size",
                         f"{types}: token-type (segment) embeddings, a BERT-lineage encoder's ({model_type!r}); "
                         f"{_PLANS}")


def headless_note(cfg: dict[str, Any]) -> str | None:
    """The note for an architectures list naming only bare stacks (...Model, no head) under no auto_map generator.
    Read, not refused: checkpoints name their base class while holding a generator (Cerebras-GPT writes GPT2Model
    over GPT-2's tied head), so the stack is counted as its ...ForCausalLM, the vocabulary head included."""
    architectures = cfg.get("architectures")
    if not isinstance(architectures, list) or not architectures:
        return None
    if not all(isinstance(a, str) and a.endswith("Model") and not a.endswith("LMHeadModel") for a in architectures):
        return None
    if cfg.get("auto_map"):  # remote code names its own classes: its ...Model may hold the head (ChatGLMModel, Dream)
        return None
    return (f"architectures: {architectures[0]} is the bare stack without a head; read as its generator "
            "(...ForCausalLM: the vocabulary head counted, token-by-token decode planned), which an embedding "
            "checkpoint of that class would not run")
