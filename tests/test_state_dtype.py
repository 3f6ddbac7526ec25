"""The recurrent state's dtype a config writes (mamba_ssm_cache_dtype / mamba_ssm_dtype): read in the spellings the
checkpoint's own dtype is (config/quant.py TORCH_DTYPES), one rule for both."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from solver.errors import InputError
from solver.specs.config.read import parse_model_config

DATA = Path(__file__).parent / "data" / "configs_defaults"


def _state_bytes(**over) -> set[int]:
    raw = {**json.loads((DATA / "nemotron_h.json").read_text()), **over}
    spec = parse_model_config(raw, "x")
    return {b.state_dtype_bytes for layer in spec.layers for b in layer.blocks if hasattr(b, "state_dtype_bytes")}


def test_the_state_dtype_sizes_the_state_in_torchs_spellings() -> None:
    # float32: 4 B a state value; torch's "half" alias of float16: 2 B
    assert _state_bytes(mamba_ssm_cache_dtype="float32") == {4}
    assert _state_bytes(mamba_ssm_cache_dtype="half") == {2}


def test_an_unknown_state_dtype_is_refused_naming_the_field() -> None:
    with pytest.raises(InputError, match="mamba_ssm_cache_dtype: unknown dtype 'float8'"):
        _state_bytes(mamba_ssm_cache_dtype="float8")
