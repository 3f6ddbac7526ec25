"""What reading the inputs noted: the one list every answer carries (solve, sweep, recommend, estimate, memory,
calibrate), so that none of them drops a note another shows. The model's warnings (a family read by convention,
a config field not read), the precision's notes (weights kept in the checkpoint's format), and, where figures
are timed, a device of a vendor no calibration row measured (its efficiencies are its file's, several of them
assumptions), and an engine profile of the user's whose name no fit knows (a renamed copy of a fitted engine
loses that engine's factors unless it says `fitted_as`)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from solver.specs.fitted import calibrated_devices, calibrated_vendors, fitted_factors, fitted_global
from solver.specs.context import derived_context
from solver.specs.hardware import Hardware
from solver.specs.model import ModelSpec
from solver.specs.precision import Precision

if TYPE_CHECKING:
    from solver.specs.framework import FrameworkProfile


def device_notes(hw: Hardware, prec: Precision, timed: bool = True) -> list[str]:
    """The notes of one device: the precision's, and (`timed`) whether calibration rows measured its vendor, or
    the device itself (a device of a measured vendor without rows of its own takes that vendor's shared factors
    on its own file's efficiencies: an L40S or an A100 priced as the H100s and B200s were fitted)."""
    out = list(prec.notes)
    vendors = calibrated_vendors()
    if timed and vendors and hw.vendor not in vendors:
        out.append(f"the calibration rows measured no {hw.vendor} device: the figures on {hw.name} use its file's "
                   f"efficiencies ({_assumed(hw)}) and the grouped-GEMM fraction fitted "
                   f"on {', '.join(vendors)} devices")
    elif timed and vendors and not set(hw.fit_keys) & set(calibrated_devices()):
        shared = ", ".join(sorted(fitted_global(hw.vendor)))
        out.append(f"the calibration rows measured no {hw.name}: its figures use its file's efficiencies "
                   f"({_assumed(hw)}) and the factors fitted over other {hw.vendor} devices "
                   f"({shared}, and the engine's own where it has them)")
    return out


def engine_notes(fw: FrameworkProfile) -> list[str]:
    """A profile file of the user's (not a shipped profile) whose name, or `fitted_as`, has no fitted factors:
    the fitted factors are keyed by engine name, so the figures use none of an engine's own; said, with how a
    copy of a fitted engine carries them."""
    from solver.specs.framework import list_frameworks

    fitted = fitted_factors()
    key = fw.fitted_as or fw.name
    if not fitted or key in fitted or fw.name in list_frameworks():
        return []
    return [f"no factors are fitted for the engine name {key}: its figures use the profile's own efficiencies and "
            f"the factors shared over every engine, none of an engine's own; a copy of a fitted engine "
            f"({', '.join(sorted(fitted))}) carries that engine's with `fitted_as: NAME` (docs/bring-your-own.md)"]


def _assumed(hw: Hardware) -> str:
    """Where the device's efficiencies are assumptions: the file's sources say, or it gives none for some."""
    missing = hw.unsourced_efficiencies()
    if not missing:
        return "its sources say which are assumptions"
    return f"no source given for {', '.join(missing)}: assumptions until measured"


def past_position_table(model: ModelSpec, max_len: int | None) -> str | None:
    """Why no configuration serves `max_len` tokens on a model with a learned absolute position table (GPT-2's
    wpe): the table has no rows past its size and, unlike RoPE, no scaling extends it, so its context is a hard cap
    (None: within it, or no such table)."""
    limit = model.max_position_embeddings
    if not model.position_embeddings or max_len is None or limit is None or max_len <= limit:
        return None
    return (f"the longest sequence, {max_len:,} tokens, exceeds {model.context_field} {limit:,}, the rows of its "
            "learned position table (no scaling extends it)")


# what lies past the trained context, by ModelSpec.position_encoding (the learned table: past_position_table).
# Rotary: each engine derives its limit from the field, times a RoPE scaling's factor as its loader multiplies it
# (specs/context.derived_context, read from the profile's max_context), and refuses a longer one unless told to
# allow it; each profile's args that read past_context and its launch.long_context say the engine's own switch and
# config override
_PAST_CONTEXT = {
    "rope": "engines take {field} (times a RoPE scaling's factor where the engine's loader multiplies it: the "
            "profile's max_context) as the longest maximum model length and refuse a longer one unless told to "
            "allow it, and positions past it run outside the RoPE scaling the config trained: "
            "raise the scaling factor and {field} in the config (the engine's config override) to extend it; the "
            "launch commands set each engine's switch and name its override",
    "alibi": "ALiBi has no position table that limits the length, but {field} is the context it was trained on and "
             "quality past it is not guaranteed; engines cap the maximum model length at that field unless told "
             "to allow a longer one",
    "sinusoidal": "sinusoidal positions have no learned table that limits the length (the buffer is computed for "
                  "any position), but {field} is the context it was trained on and quality past it is not "
                  "guaranteed; engines cap the maximum model length at that field unless told to allow a longer one",
    "none": "the model encodes no positions (NoPE attention, or no attention), so no table limits the length, but "
            "{field} is the context it was trained on and quality past it is not guaranteed; engines cap the maximum "
            "model length at that field unless told to allow a longer one",
}


def context_notes(model: ModelSpec, max_len: int | None, fw: FrameworkProfile | None = None) -> list[str]:
    """A sequence longer than the model's context (as `fw` derives it from the config: derived_context; without an
    engine, the field alone): the figures are computed, and the note says what the length means for the model's
    position encoding (_PAST_CONTEXT): a RoPE scaling can extend a rotary model; ALiBi and NoPE have no table to
    outrun, only a trained context; past a learned position table no engine serves it at all
    (past_position_table; the planner refuses to plan it)."""
    field = model.max_position_embeddings
    limit = derived_context(model, fw.max_context if fw is not None else None)
    if max_len is None or field is None or limit is None or max_len <= limit:
        return []
    table = past_position_table(model, max_len)
    if table:
        return [f"{model.name}: {table}: no engine serves that length; keep --isl + --osl within {field:,}"]
    past = _PAST_CONTEXT.get(model.position_encoding, _PAST_CONTEXT["rope"]).format(field=model.context_field)
    return [f"the longest sequence, {max_len:,} tokens, exceeds {model.name}'s {model.context_field} {field:,}"
            f"{derived_said(model, limit, fw)}: {past}"]


def derived_said(model: ModelSpec, limit: int, fw: FrameworkProfile | None) -> str:
    """The engine's derived context where its RoPE scaling makes it other than the field ("" where it is the
    field)."""
    if fw is None or limit == model.max_position_embeddings:
        return ""
    return f" ({limit:,} as {fw.name} derives it with the config's RoPE scaling factor)"


def encoder_notes(model: ModelSpec, timed: bool = True) -> list[str]:
    """What the answer holds of a vision / audio tower: its weights, not an image's pass through it. The workload
    is text tokens, so the tower's compute (and the image tokens it makes) is outside TTFT, and the activations and
    encoder cache an engine reserves for images (vLLM's multimodal profile run) are outside memory."""
    out = []
    for enc in model.encoders:
        timing = "; TTFT, TPOT and throughput price text prompts: an image's pass through it and the tokens it " \
            "adds are not in them" if timed else ""
        out.append(f"{model.name}: its {enc.name} tower ({enc.params / 1e9:.3g}B parameters, {enc.layers} layers) is "
                   f"counted in weights; the activations and encoder cache of its inputs are not{timing}")
    return out


def input_notes(model: ModelSpec, hw: Hardware, prec: Precision, timed: bool = True,
                max_len: int | None = None, fw: FrameworkProfile | None = None,
                served_by: FrameworkProfile | None = None) -> tuple[str, ...]:
    """The model's warnings, the sequence against the model's context (`max_len`: the longest sequence the
    answer serves; the context as `served_by`, else `fw`, derives it), what a tower's figures hold, the device's
    notes and (`timed`, `fw` given) the engine's, in that order."""
    engine = engine_notes(fw) if timed and fw is not None else []
    return (*model.warnings, *context_notes(model, max_len, served_by or fw), *encoder_notes(model, timed),
            *device_notes(hw, prec, timed), *engine)
