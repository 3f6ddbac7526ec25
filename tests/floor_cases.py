"""The deployments the floor tests (test_planner_floor.py, test_planner_lazy.py) draw from: MoE models with and
without shared experts, MTP and DSA, a dense and a hybrid model, on engines without a custom all-reduce kernel,
each on its device; and the loaded specs of one (model, engine, device), loaded once."""
from __future__ import annotations

from solver.estimate.compute import factors_for
from solver.estimate.params import count_params
from solver.plan.groups import module_groups
from solver.specs.framework import load_framework
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import load_model
from solver.specs.precision import resolve_precision

MODELS = ["deepseek-v3.2", "qwen3-30b-a3b", "mixtral-8x7b", "qwen3-8b", "gpt-oss-20b", "qwen3.5-35b-a3b"]
ENGINES = [("generic", "h200_sxm"), ("generic", "atlas_a3"), ("cann-recipes", "atlas_a3"),
           ("vllm-ascend", "atlas_a3"), ("generic", "b200_sxm")]
WORLD = 16

_SETUP: dict = {}


def setup(model: str, fw: str, hw: str):
    """(model, hardware, precision, factors, module groups) of one deployment (Ascend at int8 weights)."""
    key = (model, fw, hw)
    if key not in _SETUP:
        m, h, f = load_model(model), load_hardware(hw), load_framework(fw)
        prec = resolve_precision(m, h, weight_dtype="int8" if h.name.startswith("atlas") else None)
        fac = factors_for(h, f.efficiency_for(h))
        _SETUP[key] = (m, h, prec, fac, module_groups(count_params(m)))
    return _SETUP[key]


def le(a, b) -> bool:
    """a <= b coordinate by coordinate, to the rounding of sums taken in another order."""
    return all(x <= y * (1 + 1e-12) + 1e-18 for x, y in zip(a, b))
