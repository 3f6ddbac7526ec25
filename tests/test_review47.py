"""Stop 47's review: one test per rule the review found broken in the stop's merged work and mended."""
from __future__ import annotations

from pathlib import Path

import pytest

from solver.errors import InputError
from solver.specs.framework import load_framework
from tests.test_byo47 import _csv_notes


def test_a_measured_time_of_zero_is_not_named_as_seconds_in_an_ms_column(tmp_path: Path) -> None:
    # a TPOT of 0 ms (a row with no decode step) was said to be "below 1/100 of the prediction ... seconds written
    # in a milliseconds column?": 0 is the same in any unit
    assert _csv_notes(tmp_path, "350,0") == []


def test_a_context_read_at_its_class_default_is_one_a_longer_plan_is_told_it_exceeds() -> None:
    # Gemma-3's text_config writes no max_position_embeddings (Gemma3TextConfig's default 131,072 fills it): a
    # 201,000-token plan under vLLM gets the context note; before the default, no note at any length
    from solver.specs.model_catalog import load_model
    from solver.specs.notes import context_notes

    notes = context_notes(load_model("gemma-3-27b-it"), 201_000, load_framework("vllm"))
    assert len(notes) == 1 and "exceeds gemma-3-27b-it's max_position_embeddings 131,072: " in notes[0]
    assert context_notes(load_model("gemma-3-27b-it"), 131_072, load_framework("vllm")) == []


def _profile(tmp_path: Path, engine: str, edit) -> Path:
    text = (Path(__file__).resolve().parents[1] / "solver" / "frameworks" / f"{engine}.yaml").read_text()
    path = tmp_path / f"my-{engine}.yaml"
    path.write_text(edit(text).replace(f"name: {engine}\n", f"name: my-{engine}\n", 1))
    return path


def _refusal(path: Path) -> str:
    with pytest.raises(InputError) as e:
        load_framework(str(path))
    return str(e.value)


def test_a_site_flag_without_its_dash_is_refused_as_no_flag(tmp_path: Path) -> None:
    # before: "host is not a flag (it starts with -)", which said the opposite of the problem
    path = _profile(tmp_path, "vllm", lambda t: t.replace("site_flags: [--host,", "site_flags: [host,"))
    assert _refusal(path).endswith("launch: site_flags / model_flag: host: not a flag (a flag starts with -)")


def test_a_program_that_reads_the_model_by_flag_only_needs_the_model_flag(tmp_path: Path) -> None:
    path = _profile(tmp_path, "vllm", lambda t: t.replace("  model_flag: --model\n", ""))
    assert _refusal(path).endswith("programs: one reads the model by flag only (positional_model false): give "
                                   "model_flag")


def test_a_model_flag_needs_a_positional_model_to_stand_beside(tmp_path: Path) -> None:
    # SGLang writes the model by --model-path: a model_flag there has no positional token to stand beside
    path = _profile(tmp_path, "sglang",
                    lambda t: t.replace("  site_flags:", "  model_flag: --model\n  site_flags:", 1))
    assert _refusal(path).endswith("model_flag: the launch writes no positional {model_path} for it to stand beside")
