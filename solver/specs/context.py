"""The longest context an engine serves a model at without being told to allow a longer one: the config's context
field, times a RoPE scaling's factor where the engine's profile says its loader multiplies it (the profile's
`max_context` block: which scaling types leave the field as it is, which multiply the scaling's
original_max_position_embeddings instead, which model types it skips). notes.context_notes and the launch's
`past_context` both read it here, so the note and the command agree on the one limit."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from solver.specs.profile_facts import MaxContext
    from solver.specs.model import ModelSpec


@dataclass(frozen=True)
class RopeScaling:
    """One RoPE scaling of the config (rope_scaling / rope_parameters; one per layer type where it nests them)."""

    rope_type: str  # rope_type, else the legacy `type`, else "default" (as transformers and the engines patch it)
    factor: float | None
    # the pre-scaling context: the scaling's own original_max_position_embeddings, else the config's top-level one
    # (vLLM's patch_rope_parameters and transformers' standardize_rope_params copy it in)
    original: int | None
    carries_original: bool  # the scaling block itself writes original_max_position_embeddings
    per_layer_type: bool = False  # nested under a layer type (Gemma-3's full_attention / sliding_attention)


def read_rope_scalings(cfg: dict[str, Any]) -> tuple[RopeScaling, ...]:
    """The config's RoPE scalings, rope_parameters first (the v5 name), then rope_scaling; a dict of dicts is one
    scaling per layer type. Values that are not numbers are left out (the engines read no factor from them)."""
    block = cfg.get("rope_parameters") or cfg.get("rope_scaling")
    if not isinstance(block, dict):
        return ()
    nested = [v for v in block.values() if isinstance(v, dict)]
    blocks = nested if nested and len(nested) == len(block) else [block]
    top = cfg.get("original_max_position_embeddings")
    out = []
    for b in blocks:
        kind = b.get("rope_type") or b.get("type") or "default"
        factor = b.get("factor")
        own = b.get("original_max_position_embeddings")
        original = own if _is_int(own) else top if _is_int(top) else None
        out.append(RopeScaling(str(kind), float(factor) if _is_number(factor) else None, original, _is_int(own),
                               blocks is nested))
    return tuple(out)


def derived_context(model: ModelSpec, rule: MaxContext | None) -> int | None:
    """The context the engine derives from the model's config (None: the config gives no context field). Without a
    rule, or where no scaling multiplies, the field alone. As vLLM's loop, the last multiplying scaling's factor
    wins (all layer types are taken to scale alike)."""
    field = model.max_position_embeddings
    if field is None or rule is None or not rule.scaled or any(t in model.model_type for t in rule.skip_model_types):
        return field
    base, factor = field, 1.0
    for s in model.rope_scalings:
        if s.rope_type in rule.unscaled_types or (rule.unscaled_carrying_original and s.carries_original) \
                or (s.per_layer_type and not rule.per_layer_types):
            continue
        if s.factor is not None:
            factor = s.factor
        if s.rope_type in rule.from_original:
            base = s.original if s.original is not None else field
    return int(base * factor)


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v > 0


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0
