"""What the hand counts of configs outside the catalog are written with (tests/test_unseen_configs*.py): the
tensor sizes of a LayerNorm, a linear and a gated MLP, and a round's folder of configs, read and counted."""
from __future__ import annotations

import json
from pathlib import Path

from solver.estimate.params import count_params
from solver.specs.config.read import parse_model_config
from solver.specs.model import ModelSpec

UNSEEN = Path(__file__).parent / "data" / "configs_unseen"
REFUSED = UNSEEN / "refused"
CATALOG = Path(__file__).parent.parent / "models"


def ln(h: int) -> int:  # a LayerNorm with a bias
    return 2 * h


def lin(i: int, o: int, bias: bool = False) -> int:  # a linear i -> o
    return i * o + (o if bias else 0)


def gated(h: int, f: int) -> int:  # gate, up, down without biases
    return 3 * h * f


def gqa(h: int, heads: int, kv: int, d: int, qkv_bias: bool = False, out_bias: bool = False) -> int:
    """q / k / v / o of heads and kv heads x d."""
    return lin(h, heads * d, qkv_bias) + 2 * lin(h, kv * d, qkv_bias) + lin(heads * d, h, out_bias)


def count(cfg: dict) -> int:
    """The reader's total of a config given as a dict (a variant of a round's file)."""
    return count_params(parse_model_config(cfg, "x")).total


class Round:
    """One round's folder of configs (a file's stem is its name)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def load(self, name: str, folder: Path | None = None) -> dict:
        return json.loads(((folder or self.folder) / f"{name}.json").read_text())

    def spec(self, name: str) -> ModelSpec:
        return parse_model_config(self.load(name), name)

    def total(self, name: str) -> int:
        return count_params(self.spec(name)).total
