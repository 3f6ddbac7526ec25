"""Projectors into the text width built of attention layers of their own over the tower's output: a Q-Former,
a perceiver resampler, a pooling attention adapter. The wrapper family's facts (family_defaults.yaml):
  _vision_projector_pooling_attention  {field}: the wrapper's config object `field` is an adapter that pools the
                            concatenated vision_feature_layer outputs through one attention and projects them with
                            a gated MLP into text_hidden_size (Molmo2Adapter; pooling_adapter)
  _vision_projector_qformer {field, num_query_tokens, defaults, text_embeddings}: a BLIP-2 Q-Former of the
                            wrapper's FIELD config over num_query_tokens learned queries, then one biased linear into
                            the text width (qformer); text_embeddings: the Q-Former reads the instruction too
                            (InstructBLIP): its own BERT embeddings and the text branch's FFN in every layer
  _vision_projector_perceiver {field, defaults}: Idefics2's connector, a gated MLP through the text intermediate_size,
                            then a perceiver resampler of the wrapper's FIELD config at the text width (perceiver)
"""
from __future__ import annotations

from typing import Any

from solver.specs.config.fields import Fields


def _sub_config(wrapper: Fields, key: str, defaults: dict[str, Any]) -> Fields:
    """A projector's own config object of the wrapper (BLIP-2's qformer_config, Idefics2's perceiver_config),
    its config class's defaults (the fact's values) where it leaves a field out."""
    sub = wrapper.cfg.get(key)
    if sub is None:
        sub = {}
    if not isinstance(sub, dict):
        raise wrapper.err(key, f"must be a JSON object, got {type(sub).__name__}")
    return Fields({**defaults, **sub}, wrapper.origin, prefix=f"{key}.")


def qformer(wrapper: Fields, h: int, text_hidden: int, spec: dict[str, Any]) -> int:
    """Blip2QFormerModel and what sits around it (modeling_blip_2.py): num_query_tokens learned queries of the
    Q-Former's width q; a LayerNorm; per layer a BERT self-attention (query / key / value / dense, biased, and a
    LayerNorm), a cross-attention to the tower's output on every cross_attention_frequency-th layer from the first
    (key / value from the tower's width h: Blip2Config sets encoder_hidden_size to it), intermediate_query /
    output_query (biased, a LayerNorm), and the text branch's own intermediate / output where
    use_qformer_text_input; then language_projection, one biased linear q -> the text width. Under the fact's
    text_embeddings (InstructBlipQFormerModel) the Q-Former embeds the instruction itself: word_embeddings
    (vocab_size x q), position_embeddings (max_position_embeddings x q) and a LayerNorm in place of BLIP-2's lone
    LayerNorm, and every layer builds the text branch's intermediate / output (the config has no switch for it)."""
    q_cfg = _sub_config(wrapper, str(spec.get("field", "qformer_config")), spec.get("defaults") or {})
    q = q_cfg.int("hidden_size")
    inter = q_cfg.int("intermediate_size")
    layers = q_cfg.int("num_hidden_layers", maximum=1024)
    every = q_cfg.int("cross_attention_frequency", maximum=1024)
    queries = wrapper.int("num_query_tokens", default=int(spec.get("num_query_tokens", 32)))
    attn = 4 * (q * q + q) + 2 * q
    cross = 2 * (q * q + q) + 2 * (h * q + q) + 2 * q
    ffn = q * inter + inter + inter * q + q + 2 * q
    embeds_text = bool(spec.get("text_embeddings"))
    text_ffn = ffn if embeds_text or q_cfg.bool("use_qformer_text_input") else 0
    embeddings = 2 * q  # Blip2QFormerModel's LayerNorm
    if embeds_text:
        embeddings += (q_cfg.int("vocab_size") + q_cfg.int("max_position_embeddings")) * q
    stack = sum(attn + (cross if i % every == 0 else 0) + ffn + text_ffn for i in range(layers))
    return queries * q + embeddings + stack + q * text_hidden + text_hidden


def pooling_adapter(wrapper: Fields, text_hidden: int, spec: dict[str, Any], notes: list[str]) -> int:
    """Molmo2Adapter (modeling_molmo2.py), the wrapper's own config object `field`: image_pooling_2d, an attention
    whose q / k / v read the tower outputs of vision_feature_layer concatenated (hidden_size x its length) into
    heads x head_dim, o back to hidden_size, all biased under attention_bias; image_projector, gate / up
    hidden_size -> intermediate_size (biased under mlp_bias) and a bias-free down into text_hidden_size."""
    a = _sub_config(wrapper, str(spec["field"]), spec.get("defaults") or {})
    fed = a.cfg.get("vision_feature_layer")
    if not isinstance(fed, list) or not fed or not all(isinstance(i, int) and not isinstance(i, bool) for i in fed):
        raise a.err("vision_feature_layer", "missing or not a list of layer indices (their outputs, concatenated, "
                                            "size the pooling attention's input)")
    width = a.int("hidden_size")
    heads = a.int("num_attention_heads")
    kv = a.int("num_key_value_heads", default=heads)
    d = a.int("head_dim", default=width // heads)
    inp = width * len(fed)
    attn = inp * heads * d + 2 * inp * kv * d + heads * d * width
    if a.bool("attention_bias"):
        attn += heads * d + 2 * kv * d + width
    inter = a.int("intermediate_size")
    out = a.int("text_hidden_size")
    if out != text_hidden:  # the class builds it so; the merged features would not fit the text width
        notes.append(f"{a.prefix}text_hidden_size: {out} is not the language model's hidden size {text_hidden}; "
                     "the projector is counted as the class builds it")
    return attn + 2 * width * inter + (2 * inter if a.bool("mlp_bias") else 0) + inter * out


def perceiver(wrapper: Fields, h: int, text_hidden: int, text_inter: int | None, spec: dict[str, Any]) -> int:
    """Idefics2Connector (modeling_idefics2.py): modality_projection, a bias-free gated MLP from the tower's width h
    through the text model's intermediate_size into the text width; then the perceiver resampler at the text width
    (Idefics2Config sets the perceiver's hidden_size to the text's): resampler_n_latents learned latents, per layer
    three RMSNorms (latents, context, post-attention), bias-free GQA of resampler_n_heads x resampler_head_dim
    with num_key_value_heads K/V heads, a bias-free gated MLP of 4 x the width; a closing RMSNorm."""
    if text_inter is None:
        raise wrapper.err("text_config", "intermediate_size: missing (the connector's modality projection runs "
                                         "through it)")
    p = _sub_config(wrapper, str(spec.get("field", "perceiver_config")), spec.get("defaults") or {})
    d = text_hidden
    latents = p.int("resampler_n_latents")
    depth = p.int("resampler_depth", maximum=1024)
    heads, head_dim = p.int("resampler_n_heads"), p.int("resampler_head_dim")
    kv = p.int("num_key_value_heads")
    if heads % kv:
        raise p.err("num_key_value_heads", f"{kv} does not divide resampler_n_heads ({heads})")
    attn = d * heads * head_dim + 2 * d * kv * head_dim + heads * head_dim * d
    layer = 3 * d + attn + 3 * d * 4 * d
    modality = 2 * h * text_inter + text_inter * text_hidden  # gate / up from h, down into the text width
    return modality + latents * d + depth * layer + d
