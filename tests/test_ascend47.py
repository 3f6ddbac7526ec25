"""Stop 47's user-level hunt on Ascend (Atlas A2 / A3, vllm-ascend and cann-recipes): one test per rule found."""
from __future__ import annotations

from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import load_model
from solver.specs.precision import resolve_precision


def test_weight_only_note_names_the_format_the_user_typed() -> None:
    # `solve deepseek-r1 --hardware atlas_a2 --weight-dtype w4a8` said "--weight-dtype int4: ...", a flag value
    # the user never gave; the note names w4a8 and the missing int4 compute it is weight-only for
    prec = resolve_precision(load_model("deepseek-r1"), load_hardware("atlas_a2"), weight_dtype="w4a8")
    note = next(n for n in prec.notes if "weight-only" in n)
    assert note.startswith("--weight-dtype w4a8: atlas_a2 has no int4 compute"), note
