"""transformers' class-default configs, never seen by the project (stop 38 in benchmarks/README.md).

tests/data/configs_defaults/ holds, for each model_type of transformers 5.25.0 with a decoder text-generation class
(causal-LM, image-text-to-text, multimodal-LM, or a sequence-to-sequence one that is not an encoder-decoder), `ConfigClass()` written as save_pretrained writes it (benchmarks/transformers_defaults.py): nearly every field
left out because it equals the class default, so the reader must know each family's defaults. oracle.tsv there holds
transformers' meta-device count of each (parameters plus the router-bias buffers a checkpoint stores; no torch
needed here) and what the reader did when the data was frozen. Only configs the reader counted to exactly the
oracle's figure, or refused, were frozen; the ones it miscounts are listed in the README, not here. Where the class
default leaves a size None and transformers cannot build it, `--fill` wrote a family or generic value into the file
(oracle.tsv's `filled` column) and both counts are of that file."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from solver.errors import InputError
from solver.estimate.params import count_params
from solver.specs.config.read import parse_model_config

DATA = Path(__file__).parent / "data" / "configs_defaults"


def _lines() -> list[list[str]]:
    return [ln.split("\t") for ln in (DATA / "oracle.tsv").read_text().splitlines() if not ln.startswith("#")][1:]


def _rows() -> dict[str, tuple[int | None, str]]:
    """config -> (the oracle's count or None where transformers could not build it, 'counts' or 'refuses')."""
    return {name: (int(oracle) if oracle else None, reader) for name, _cls, oracle, reader, _filled in _lines()}


ROWS = _rows()
# config -> {dotted field: "value (source)"}: the None sizes `transformers_defaults.py --fill` set in the file
FILLED = {cells[0]: json.loads(cells[4]) for cells in _lines() if cells[4]}
COUNTED = sorted(n for n, (_o, r) in ROWS.items() if r == "counts")
REFUSED = sorted(n for n, (_o, r) in ROWS.items() if r == "refuses")


def _parse(name: str):
    return parse_model_config(json.loads((DATA / f"{name}.json").read_text()), name)


def test_every_frozen_config_has_an_oracle_row_and_every_row_a_config() -> None:
    assert sorted(p.stem for p in DATA.glob("*.json")) == sorted(ROWS)
    assert len(COUNTED) == 220 and len(REFUSED) == 71


def test_a_counted_row_has_an_oracle_count() -> None:
    # a config is frozen as counted only where transformers built it and the two agreed
    assert all(ROWS[n][0] is not None for n in COUNTED)


@pytest.mark.parametrize("name", sorted(FILLED))
def test_a_filled_size_is_written_in_the_frozen_config(name: str) -> None:
    # e.g. ministral's head_dim "128 (generic)": 4096 // 32, in ministral.json, so reader and oracle read the same value
    raw = json.loads((DATA / f"{name}.json").read_text())
    for dotted, value in FILLED[name].items():
        held = raw
        for key in dotted.split("."):
            held = held[key]
        assert repr(held) == value.rsplit(" (", 1)[0]


@pytest.mark.parametrize("name", COUNTED)
def test_reader_counts_a_class_default_config_as_transformers_builds_it(name: str) -> None:
    assert count_params(_parse(name)).total == ROWS[name][0]


@pytest.mark.parametrize("name", REFUSED)
def test_a_refused_class_default_config_is_refused_in_one_line_or_counted_exactly(name: str) -> None:
    # A later reader that learns the family must count it to transformers' figure; until then a one-line refusal.
    oracle = ROWS[name][0]
    try:
        total = count_params(_parse(name)).total
    except InputError as e:
        assert "\n" not in str(e) and str(e).strip()
        return
    assert oracle is not None, "transformers could not build this default config: nothing to count it against"
    assert total == oracle
