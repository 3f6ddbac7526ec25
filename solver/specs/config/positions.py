"""How a model encodes positions (ModelSpec.position_encoding), which decides what its context length means
(specs/notes.context_notes):

  learned  a learned absolute table (GPT-2's wpe, OPT): no rows past its size, a hard limit (outside.py sizes it)
  rope     rotary embeddings: a RoPE scaling (YaRN etc.) can extend the trained context
  alibi    a bias by distance (MPT, BLOOM, Baichuan-13B): no table limits the length
  sinusoidal  fixed sine / cosine positions added to the embedding (XGLM, CTRL): a buffer, no parameters; computed
           for any position, but the model was trained on its context only
  none     no position encoding in the attention (NoPE: Nemotron-H, Jamba) or no attention (pure SSM stacks)

Read, first that says wins: a learned table; the config's `alibi` switch when true (MPT's attn_config.alibi,
Falcon-RW); its `position_embedding_type` (Granite-4.0-H's "nope", Command-A's "rope_gptj"); the family's fact
(family_defaults.yaml `_position_encodings`, where the modeling code decides whatever the config writes:
Nemotron-H's attention applies no rotary even where its config carries rope_theta); a rotary field; a stack without
attention; else rope, the convention of the attention families the reader knows (a LLaVA text_config leaves its
rope_theta to the default)."""
from __future__ import annotations

from typing import Any, Literal

from solver.specs.config.fields import Fields
from solver.specs.layers import MLA, Attention, CompressedAttention, Layer

PositionEncoding = Literal["rope", "alibi", "learned", "sinusoidal", "none"]
KINDS: tuple[str, ...] = ("rope", "alibi", "learned", "sinusoidal", "none")
# fields only a rotary embedding has
ROPE_FIELDS = ("rope_theta", "rope_scaling", "rope_parameters", "partial_rotary_factor", "rotary_pct", "rotary_dim",
               "rotary_emb_base", "rope_ratio", "qk_rope_head_dim")
# position_embedding_type values (a prefix "rope" covers rope_gptj); others say nothing here
_TYPE_VALUES = {"nope": "none", "none": "none", "alibi": "alibi"}


def _from_type(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    v = value.lower()
    return "rope" if v.startswith("rope") else _TYPE_VALUES.get(v)


def _family_fact(f: Fields, fact: Any, where: str) -> str:
    """A family's fact: a kind, or {FIELD: {VALUE: KIND}, else: KIND} where the family's modeling code picks the
    encoding by a size (Baichuan: rotary at hidden_size 4096, ALiBi otherwise)."""
    if isinstance(fact, str):
        kind = fact
    elif isinstance(fact, dict) and "else" in fact and len(fact) == 2:
        field = next(k for k in fact if k != "else")
        kind = (fact[field] or {}).get(f.cfg.get(field), fact["else"])
    else:
        raise ValueError(f"{where}: a kind or {{FIELD: {{VALUE: KIND}}, else: KIND}}, got {fact!r}")
    if kind not in KINDS:
        raise ValueError(f"{where}: {kind!r} is not one of {', '.join(KINDS)}")
    return kind


def position_encoding(f: Fields, layers: tuple[Layer, ...], learned_rows: int, families: dict[str, Any],
                      model_types: tuple[str, ...]) -> PositionEncoding:
    """The module docstring's order. `families`: family_defaults.yaml; `model_types`: the text model's, then the
    wrapper's."""
    if learned_rows:
        return "learned"
    if f.cfg.get("alibi") is True:
        return "alibi"
    kind = _from_type(f.cfg.get("position_embedding_type"))
    if kind:
        return kind  # type: ignore[return-value]
    table = families.get("_position_encodings") or {}
    for t in model_types:
        if t in table:
            return _family_fact(f, table[t], f"family_defaults.yaml _position_encodings.{t}")  # type: ignore[return-value]
    if f.has(*ROPE_FIELDS):
        return "rope"
    if not any(isinstance(b, (Attention, MLA, CompressedAttention)) for layer in layers for b in layer.blocks):
        return "none"
    return "rope"
