"""The lead's stop-51 rules."""
from __future__ import annotations

import re

import yaml

from solver.catalog import catalog_dir

_ACTIVE = re.compile(r"^(?P<short>.*-\d+(\.\d+)?b)-a\d+(\.\d+)?b$")


def test_a_moe_model_answers_to_its_size_without_the_active_suffix():
    # users type "qwen3.5-122b" as they type "qwen3-235b": a short name ending in -<total>b-a<active>b answers to
    # -<total>b, unless another catalog file claims that name
    index = yaml.safe_load((catalog_dir("models") / "index.yaml").read_text())["models"]
    owner = {a.lower(): f for f, names in index.items() for a in names}
    missing = []
    for f, names in index.items():
        for a in names:
            m = None if "/" in a else _ACTIVE.match(a.lower())  # hub repo ids are what the hub names
            if m and owner.get(m["short"], f) == f and m["short"] not in owner:
                missing.append(f"{f}: {m['short']}")
    assert not missing, missing
