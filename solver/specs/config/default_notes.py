"""What a config left to its family class's default, said: one note per field the reader took from a family
line (family_defaults.yaml), naming the transformers class and file that hold the default (family_classes.yaml,
generated from the wheel by docs/family_classes_from_wheel.py)."""
from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping

from solver.specs.validation import load_yaml

# each family's transformers configuration class and file (generated: docs/family_classes_from_wheel.py)
_CLASSES_PATH = Path(__file__).parent / "family_classes.yaml"


@lru_cache(maxsize=1)
def _family_classes() -> dict[str, Any]:
    return load_yaml(_CLASSES_PATH, own=True) or {}


def default_sources(filled: dict[str, str], defaulted: dict[str, Any], nested: dict[str, str],
                    family_defaults: Mapping[str, Any]) -> dict[str, str]:
    """Field -> where its value came from ("Qwen3Config's default 32 (transformers ... configuration_qwen3.py)"),
    for each field a family line gave the config (`filled`: field -> the model_type whose line gave it) and that
    still holds that line's value; a key that is no field of the class (a fact of its modeling code) is left out."""
    classes = _family_classes()
    version = classes.get("_transformers", "")
    out = {}
    for k, family in filled.items():
        # a value another step set since (a nested block; derive_defaults over a null default) is not the default
        if k in nested or defaulted.get(k) != (family_defaults.get(family) or {}).get(k):
            continue
        value = json.dumps(defaulted[k])
        value = value if len(value) <= 60 else value[:57] + "..."
        cls = classes.get(family)
        if cls and k not in cls[2]:  # a fact of the modeling code (Qwen3's use_qk_norm), no field to write
            continue
        out[k] = (f"{cls[0]}'s default {value} (transformers {version} {cls[1].split('/')[-1]})" if cls else
                  f"the model_type {family} line's default {value} (family_defaults.yaml; its class is not in "
                  f"transformers {version})")
    return out

