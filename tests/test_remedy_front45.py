"""A memory remedy names the smallest card count that fits, the same whatever size it is asked from: no fewer
cards hold the weights and the least cache (least_world), and of the sizes from there up the first that the
memory screen passes (heads, experts with the engine's redundant copies, the node) and the planner confirms."""
from __future__ import annotations

import pandas as pd
import pytest
from click.testing import CliRunner

from solver import api
from solver.cli.main import main
from solver.plan.memory_remedies import least_world
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import load_model
from solver.specs.parallel import KNOBS, model_knobs
from solver.specs.precision import resolve_precision
from solver.specs.scenario import Scenario


def _remedy(*args: str) -> str:
    r = CliRunner().invoke(main, ["solve", *args])
    assert r.exit_code == 1, r.output
    return r.stderr.split("what would fit: ", 1)[1]


def test_the_least_world_is_the_weights_and_least_cache_over_one_cards_usable_memory() -> None:
    """DeepSeek-V3.2 in fp8: 674.0 GB of weights over 293.8 GB usable per MI355X = 2.29 -> 3 cards.
    Llama-3.3-70B in bf16: 141.1 GB over 81.6 GB per H100 = 1.73 -> 2. Qwen3-235B in bf16: 470.2 / 81.6 = 5.76 -> 6.
    DeepSeek-V3.2 in int8: 674.5 GB over 65.0 GB per Atlas A3 die = 10.38 -> 11."""
    for name, hw_name, dtype, least in [("deepseek-v3.2", "mi355x", None, 3), ("llama-3.3-70b", "h100_sxm", None, 2),
                                        ("qwen3-235b", "h100_sxm", None, 6), ("deepseek-v3.2", "atlas_a3", "int8", 11)]:
        model, hw = load_model(name), load_hardware(hw_name)
        assert least_world(model, hw, resolve_precision(model, hw, dtype), Scenario(max_concurrency=1), None) == least


@pytest.mark.parametrize("cards", ["1", "2"])
def test_the_remedy_names_the_same_smallest_size_whatever_size_it_is_asked_from(cards: str) -> None:
    """DeepSeek-V3.2 on MI355X: 3 cards is the least (above) and plans; from 1 card and from 2 cards alike the
    remedy is 3 cards, not a multiple of the size asked (4 from 2)."""
    assert _remedy("deepseek-v3.2", "--hardware", "mi355x", "--cards", cards).startswith(
        "3 cards fit (the planner found a configuration there)")


def test_a_dense_models_remedy_is_its_least_world() -> None:
    """Llama-3.3-70B on one H100: 2 cards (above), TP2 divides its 64 heads and 8 KV heads."""
    assert _remedy("llama-3.3-70b", "--hardware", "h100_sxm", "--cards", "1").startswith("2 cards fit")


def test_a_moe_remedy_passes_over_a_size_the_experts_overfill() -> None:
    """Qwen3-235B on H100s: 6 cards hold the 470.2 GB in sum, but 128 experts on 6 ranks take 4 redundant copies,
    22 a rank: 470.2 x 22/128 = 80.8 GB of experts alone against 81.6 usable, no room for attention and cache.
    7 ranks hold 19 (133 = 7 x 19): 69.8 GB of them. Asked from 2 cards the remedy is 7, not 8 (a multiple)."""
    assert _remedy("qwen3-235b", "--hardware", "h100_sxm", "--cards", "2").startswith("7 cards fit")


@pytest.mark.parametrize("framework", ["vllm-ascend", "cann-recipes"])
def test_an_ascend_remedy_is_a_size_the_engines_rules_run(framework: str) -> None:
    """DeepSeek-V3.2 in int8 on 4 Atlas A3 dies: 11 is the least (above); 256 experts on 11 ranks need 24 a rank
    (264 = 11 x 24 with 8 copies), 24/256 of the experts' weights over what the die holds beside attention;
    12 holds 22 (264 = 12 x 22) and plans under either engine, cann-recipes' attention DP at a batch it divides."""
    assert _remedy("deepseek-v3.2", "--hardware", "atlas_a3", "--weight-dtype", "int8", "--cards", "4",
                   "--framework", framework).startswith("12 cards fit")


# solve's front is the deployment's: the same set as the sweep's on_front rows, whatever the kind asked

def _solve_front(model: str, hardware: str, cards: int, kind: str, **sla: int) -> set[tuple]:
    """solve's front as (the model's own knobs, concurrency), the other knobs None as the sweep writes them."""
    own = model_knobs(load_model(model))
    front = api.solve(model, hardware, cards, kind, **sla).result.front
    return {(*(p.config.knobs()[k] if k in own else None for k in KNOBS), p.batch) for p in front}


def _sweep_front(rows: pd.DataFrame) -> set[tuple]:
    on = rows[rows["on_front"].fillna(False).astype(bool)]
    return {(*(None if pd.isna(r[k]) else int(r[k]) for k in KNOBS), int(r["concurrency"]))
            for r in on.to_dict("records")}


@pytest.mark.parametrize("model, hardware, cards, sla", [
    # TTFT <= 2 s, TPOT <= 50 ms: throughput's #2 and #3 move to their own SLA edges (928 and 912 from 512), points
    # no power holds; no point beats them, so they are on the front, whatever kind solve is asked for
    pytest.param("qwen3.5-122b-a10b", "b200_sxm", 16, {"ttft_ms": 2000, "tpot_ms": 50},
                 marks=pytest.mark.slow),  # three kinds' plans under SLAs and a sweep (6 s)
    ("llama-3.1-8b", "h200_sxm", 2, {}),
    ("qwen3.5-35b-a3b", "h100_sxm", 4, {"tpot_ms": 30}),
])
def test_solves_front_is_the_sweeps_front_for_the_same_deployment(model, hardware, cards, sla) -> None:
    df = api.sweep(model, hardware=[hardware], cards=str(cards), scenarios="throughput,latency,balanced", **sla)
    for kind, rows in df.groupby("scenario"):
        assert _solve_front(model, hardware, cards, str(kind), **sla) == _sweep_front(rows), kind
