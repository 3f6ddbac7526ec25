"""What sits outside the layer stack by a family's conventions (family_defaults.yaml): a learned position table,
rows the embedding holds beyond the vocabulary (Mllama's 8), a norm on the embedding, the final norm's weights
and bias, a bias on the head, the head collapsing hyper-connection streams (hc_mult); and the layouts around
the embedding that the reader refuses rather than miscount (none now: OPT-350m's narrower embedding and its
post-norm stack are read, as modeling_opt.py builds them)."""
from __future__ import annotations

from typing import Any

from solver.specs.config.fields import Fields
from solver.specs.layers.hyper import head_weights


def layernorm_bias(f: Fields) -> bool:
    """LayerNorms with a bias: the family's fact (or the field it names), ChatGLM's rmsnorm: false, or MPT's no_bias: false (which keeps
    the bias of every norm as of every linear); a family whose fact says false has RMSNorms whatever no_bias says
    (Qwen v1: no_bias false biases its linears only)."""
    fact = f.cfg.get("_norm_bias")
    if fact is False:
        return False
    if isinstance(fact, str):  # the field that switches the norms' biases (ModernBERT's norm_bias)
        return f.bool(fact)
    return f.bool("_norm_bias") or not f.bool("rmsnorm", True) or (f.has("no_bias") and not f.bool("no_bias"))


def norm_weights(f: Fields) -> bool:
    """Whether the norms hold weights: not where the family's are non-parametric (OLMo-1's _norm_weights: false) or
    the config builds its LayerNorms with elementwise_affine false (OPTConfig's layer_norm_elementwise_affine, which
    drops weight and bias of every norm in the decoder, the final one too)."""
    return f.bool("_norm_weights", True) and f.bool("layer_norm_elementwise_affine", True)


def low_rank_streams(f: Fields) -> int:
    """Low-rank hyper-connections' residual stream count (hc_count, mixed through hc_lowrank maps), 0: none. One
    stream still builds the gated residuals (Qwen4ExpTextGatedResidual has no hc_count == 1 shortcut)."""
    return f.int("hc_count", default=0, minimum=0, maximum=64)


def dynamic_streams(f: Fields) -> int:
    """DeepSeek-V4's hyper-connection stream count (hc_mult, mixed by (2 + m) x m maps), 0: none; one stream
    builds none (a residual add)."""
    m = f.int("hc_mult", default=0, minimum=0, maximum=64)
    return m if m > 1 else 0


def gated_residual(f: Fields, hidden: int, inject: bool) -> int:
    """One low-rank gated residual over hc_count streams of hidden (Qwen4ExpTextGatedResidual): a grouped RMSNorm
    of m x hidden, a bias-free down map m x hidden -> hc_lowrank and its up map back, and (inject: a layer's
    sub-block, not the model's final mixer) a bias-free m x hidden -> m map weighting the sub-block's output into
    each stream. Its norm is the sub-block's input norm (the layer holds no other) and the final mixer's stands in
    for the final norm."""
    m = low_rank_streams(f)
    rank = f.int("hc_lowrank", maximum=1 << 20)
    wide = m * hidden
    return wide + 2 * wide * rank + (wide * m if inject else 0)


def head_transform(f: Fields, hidden: int) -> int:
    """The family's transform before the head (_head_transform: ModernBertDecoderPredictionHead, a dense hidden x
    hidden whose bias classifier_bias switches, an activation and a norm of the stack's kind): its weights."""
    if not f.bool("_head_transform"):
        return 0
    return hidden * hidden + (hidden if f.bool("classifier_bias") else 0) + (2 if layernorm_bias(f) else 1) * hidden


def rope_scales(f: Fields) -> int:
    """The family's learned scale on each rotary inverse frequency (_rope_frequency_scales: Mistral-Large-4's
    LeRoPE alpha, a Parameter beside inv_freq): half the rotary width, head_dim x partial_rotary_factor as the
    rotary embedding sizes it (qk_rope_head_dim where an MLA config writes no head_dim)."""
    if not f.bool("_rope_frequency_scales"):
        return 0
    if not f.has("head_dim", "qk_rope_head_dim"):
        raise f.err("head_dim", "missing (required to size the learned rotary frequency scales)")
    width = f.int("head_dim", "qk_rope_head_dim")
    return int(width * f.number("partial_rotary_factor", maximum=1.0)) // 2 if f.has("partial_rotary_factor") \
        else width // 2


def outside_stack(f: Fields, hidden: int) -> dict[str, Any]:
    """The weights outside the stack that a family's conventions add or remove (family_defaults.yaml), and the
    layouts the reader refuses rather than miscount."""
    # OPTDecoder: embed_tokens and lm_head are word_embed_proj_dim wide; where that is not hidden_size, bias-free
    # project_in / project_out sit between them and the stack (ModelSpec.embedding_width)
    width = f.opt_int("word_embed_proj_dim")
    embedding_width = width if width is not None and width != hidden else 0
    # a post-norm stack (do_layer_norm_before false: each layer norms after its residual add) builds no final norm,
    # nor does a config that sets _remove_final_layer_norm (OPTDecoder: final_layer_norm is None under either)
    final_norm = f.bool("do_layer_norm_before", True) and not f.bool("_remove_final_layer_norm")
    positions = 0
    if f.bool("_learned_positions"):
        if not f.has("n_positions", "max_position_embeddings"):
            raise f.err("max_position_embeddings", "missing (required to size the learned position table)")
        rows = f.int("n_positions", "max_position_embeddings", maximum=2**24)
        positions = rows + f.int("_position_offset", default=0, minimum=0)
    # the family's field for the head's bias (ModernBERT's decoder_bias), lm_head_bias otherwise
    head_bias_field = str(f.cfg.get("_lm_head_bias_field") or "lm_head_bias")
    # use_stable_embedding (Open-Llama's, BlueLM's): an nn.LayerNorm, weight and bias, right after embed_tokens,
    # whatever the stack's norms are
    stable = f.bool("use_stable_embedding")
    return {"position_embeddings": positions, "embedding_norm": f.bool("_embedding_norm") or stable,
            "embedding_norm_bias": stable,
            "final_norm": norm_weights(f) and f.bool("post_layer_norm", True) and final_norm
            and not low_rank_streams(f),
            "embedding_width": embedding_width,
            "lm_head_bias": f.bool(head_bias_field),
            # a learned scale per vocabulary entry on the logits (Dory's DoryLMHead.logit_scale)
            "lm_head_scale": f.bool("_lm_head_scale"),
            # learned hidden-size vectors outside the layers (HRM-Text's z_L_init, the L stack's initial state)
            "stack_vectors": f.int("_stack_vectors", default=0, minimum=0, maximum=8),
            "rope_scales": rope_scales(f),
            # low-rank hyper-connections end in a mixer of the streams (a gated residual without the inject map) in
            # place of the final norm, before the head
            "head_transform": head_transform(f, hidden) + (gated_residual(f, hidden, inject=False)
                                                           if low_rank_streams(f) else 0),
            "embedding_extra_rows": _embedding_extra_rows(f),
            # dynamic hyper-connections end in a head collapsing the streams, before the final norm; a family's
            # _hyper_head_mean collapses them by an unweighted mean (Glm5NextTextHyperHead): no weights
            "hyper_head": head_weights(dynamic_streams(f), hidden)
            if dynamic_streams(f) and not low_rank_streams(f) and not f.bool("_hyper_head_mean") else 0}


def _embedding_extra_rows(f: Fields) -> int:
    """Rows of the token embedding beyond vocab_size (the fact _embedding_extra_rows): a number (Mllama's 8), or
    the field that holds it (Molmo2's additional_vocab_size: embed_tokens over vocab_size + it, the head over
    vocab_size)."""
    fact = f.cfg.get("_embedding_extra_rows")
    if isinstance(fact, str):
        return f.int(fact, default=0, minimum=0, maximum=2**20)
    return f.int("_embedding_extra_rows", default=0, minimum=0, maximum=2**20)
