"""Stop 47's review: one test per rule the review found broken in the stop's merged work and mended."""
from __future__ import annotations

from pathlib import Path

from tests.test_byo47 import _csv_notes


def test_a_measured_time_of_zero_is_not_named_as_seconds_in_an_ms_column(tmp_path: Path) -> None:
    # a TPOT of 0 ms (a row with no decode step) was said to be "below 1/100 of the prediction ... seconds written
    # in a milliseconds column?": 0 is the same in any unit
    assert _csv_notes(tmp_path, "350,0") == []


def test_a_context_read_at_its_class_default_is_one_a_longer_plan_is_told_it_exceeds() -> None:
    # Gemma-3's text_config writes no max_position_embeddings (Gemma3TextConfig's default 131,072 fills it): a
    # 201,000-token plan under vLLM gets the context note; before the default, no note at any length
    from solver.specs.framework import load_framework
    from solver.specs.model_catalog import load_model
    from solver.specs.notes import context_notes

    notes = context_notes(load_model("gemma-3-27b-it"), 201_000, load_framework("vllm"))
    assert len(notes) == 1 and "exceeds gemma-3-27b-it's max_position_embeddings 131,072: " in notes[0]
    assert context_notes(load_model("gemma-3-27b-it"), 131_072, load_framework("vllm")) == []
