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


def default_notes(filled: dict[str, str], defaulted: dict[str, Any], read: set, nested: dict[str, str],
                  prefix: str, family_defaults: Mapping[str, Any]) -> list[str]:
    """One note per field the config leaves out and the reader took at its class's default (`filled`: field ->
    the model_type whose line gave it; `family_defaults`: those lines), naming the class and its file where
    transformers has it (a line key that is no field of the class is a fact of its modeling code, not said), else
    the family line. Only fields the reader looked up (`read`) and no nested block gave (`nested`); what the
    family's class derives from other fields (derive_defaults) is no default taken, so it is not here."""
    classes = _family_classes()
    version = classes.get("_transformers", "")
    out = []
    for k, family in filled.items():
        # a value another step set since (a nested block; derive_defaults over a null default) is not the default
        if k not in read or k in nested or defaulted.get(k) != (family_defaults.get(family) or {}).get(k):
            continue
        value = json.dumps(defaulted[k])
        value = value if len(value) <= 60 else value[:57] + "..."
        cls = classes.get(family)
        if cls and k not in cls[2]:  # a fact of the modeling code (Qwen3's use_qk_norm), no field to write
            continue
        where = (f"{cls[0]}'s default {value} (transformers {version} {cls[1].split('/')[-1]})" if cls else
                 f"the model_type {family} line's default {value} (family_defaults.yaml; its class is not in "
                 f"transformers {version})")
        out.append(f"{prefix}{k} absent from config.json: read at {where}")
    return out
