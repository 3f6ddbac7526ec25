"""Shared test paths. The public facts live in ../shared beside the checkout (CI lays a copy there too)."""
from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FACTS = REPO.parent / "shared" / "facts"
REAL_TRACE = FACTS / "traces" / "deepseek-v3-train-ep64.trace.json"


def examples(n: int) -> int:
    """Examples a hypothesis test of the planner's exactness draws: its default `n` times
    SHARDPLAN_EXAMPLES_SCALE (default 1), so a thorough run is the same tests with more draws
    (SHARDPLAN_EXAMPLES_SCALE=10: hundreds of planner instances against exhaustive enumeration)."""
    import os

    return max(1, round(n * float(os.environ.get("SHARDPLAN_EXAMPLES_SCALE", "1"))))


def rules_of(name: str):
    """A framework profile for its rules and factors on any device: the planner's tests pair a rule-rich profile
    (cann-recipes) with devices it does not run on, which the CLI refuses (FrameworkProfile.vendors)."""
    from solver.specs.framework import load_framework

    return load_framework(name).model_copy(update={"vendors": []})


def toy_hardware(**over):
    """A round-number device for hand-computed cases: 1 PFLOP/s bf16 (2 fp8), 1 TB/s HBM, 1 GB/s in the node,
    0.1 GB/s between nodes, no latencies, no overheads, perfect efficiencies."""
    from solver.specs.hardware import Hardware

    data = dict(
        name="toy", vendor="toy", memory_bytes=10**11, hbm_bandwidth_Bps=1e12, peak_flops={"bf16": 1e15, "fp8": 2e15},
        ranks_per_node=8, scale_up_domain=8,
        tiers={"intra_node": dict(bandwidth_Bps=1e9, latency_s=0.0, efficiency=1.0, span_ranks=8),
               "inter_node": dict(bandwidth_Bps=1e8, latency_s=0.0, efficiency=1.0, span_ranks=1 << 20)},
        efficiency=dict(gemm=1.0, attention=1.0, hbm=1.0, kernel_overhead_s=0.0), reserved_bytes=0,
    )
    data.update(over)
    return Hardware(**data)


def one_catalog_config_per_class() -> list[Path]:
    """The first catalog model (models/*.json, by name) of each configuration class (its model_type, and its
    language model's where a wrapper nests one): the default suite's sample of the config sweeps
    (benchmarks/class_defaults.py, benchmarks/unread_fields.py), whose other configs run in the slow pass."""
    import json

    from benchmarks.class_defaults import _NESTED, configs

    first: dict[tuple, Path] = {}
    for path in configs():
        if path.parent == REPO / "models":
            cfg = json.loads(path.read_text())
            inner = next((cfg[k] for k in _NESTED if isinstance(cfg.get(k), dict) and cfg[k]), {})
            first.setdefault((cfg.get("model_type"), inner.get("model_type")), path)
    return list(first.values())


import pytest  # noqa: E402


def _clear_planner_cache() -> None:
    import sys

    solve = sys.modules.get("solver.plan.solve")
    if solve is not None and hasattr(solve, "clear_cache"):
        solve.clear_cache()


@pytest.fixture(autouse=True, scope="module")
def _fresh_planner_cache_per_module():
    """Each test module plans from an empty cache."""
    _clear_planner_cache()
    yield


@pytest.fixture(autouse=True)
def _fresh_planner_cache(request):
    """Each test plans from an empty cache (solve.plan reuses tables and fronts across calls): a test that
    patches the estimator or the solver sees its own patch, not an earlier test's answer. A module that patches
    neither and plans the same deployments in many tests sets SHARES_PLANS = True: its tests reuse what the
    module's earlier tests built (the cache hands out only what equal inputs built)."""
    if not getattr(request.module, "SHARES_PLANS", False):
        _clear_planner_cache()
    yield


def pytest_runtest_teardown(item, nextitem) -> None:
    """At the end of each test module, what the suite still holds (catalogs, memos, fixtures) joins the collector's
    permanent generation: later full collections then walk only what later modules make, not the whole suite's heap
    (the planner freezes its own tables the same way, solver/plan/solve.py). Measured on 8 heavy files: 4.9 s of
    collections down to 1.6 s."""
    import gc

    if nextitem is None or nextitem.module is not item.module:
        gc.freeze()
