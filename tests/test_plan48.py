"""Stop 48's planner rules: an engine's batch rule can make the planned concurrencies skip every count a layout
runs between two of them, so such a layout is followed to the most it runs below the next planned concurrency it
runs (plan.sla_edge.power_edge); and PP's whole-node rule counts a stage per DP engine where the engine's rank
order keeps each engine's ranks together (space.domains.pp_fits_nodes)."""
from __future__ import annotations

import pytest

from solver.api import run_solve
from solver.plan.points import Point
from solver.plan.sla_edge import power_edge, sla_edge_note
from solver.specs.scenario import Scenario


def _point(batch: int, attn: int = 0) -> Point:
    return Point((("attn", attn),), batch, 1, 1.0, 0, float(batch))


def _multiple_of(n: int):
    return lambda p, c: c % n == 0


def test_a_layout_the_grid_skips_runs_its_largest_count_below_the_last_planned() -> None:
    """DP768 on the grid (..., 3072, 4096): 4096 is no multiple of 768, so without SLAs it runs 3840, not 3072."""
    batches = (1536, 2048, 3072, 4096)
    assert power_edge([_point(3072)], 3072, batches, lambda p, c: True, _multiple_of(768), slas=False) == 3840


def test_a_layout_the_grid_skips_stops_where_the_slas_stop_it_before_the_next_count_it_runs() -> None:
    """Grid (3072, 4096, 6144): DP768 meets TPOT at 4096 (which it cannot run) and not at 6144, the next it runs;
    the edge is the most multiple of 768 within the SLA below 6144 (4608 where 5000 is the SLA's last count)."""
    batches = (3072, 4096, 6144)
    assert power_edge([_point(3072)], 3072, batches, lambda p, c: c <= 5000, _multiple_of(768)) == 4608


def test_a_layout_that_carries_on_to_the_next_count_it_runs_has_no_edge() -> None:
    """DP384 at 1536: 2048 is skipped, 2304 (= 3 x 768, planned) meets and runs: nothing to plan between."""
    batches = (1536, 2048, 2304, 3072)
    assert power_edge([_point(1536)], 1536, batches, lambda p, c: True, _multiple_of(384), slas=False) is None


def test_without_slas_a_layout_that_runs_the_next_count_has_no_edge() -> None:
    """The memory edge stays the deployment's (plan.memory_edge): without SLAs a layout that runs the next planned
    concurrency is not followed, whatever it holds."""
    assert power_edge([_point(8)], 8, (8, 16), lambda p, c: c <= 12, lambda p, c: True, slas=False) is None


def test_the_runnable_edge_note_names_the_batch_rule_not_an_sla() -> None:
    note = sla_edge_note(3840, 3072, Scenario(kind="throughput", isl=8192, osl=1024))
    assert "batch rules" in note and "SLA" not in note


@pytest.mark.slow
def test_768_atlas_a3_dies_under_cann_recipes_run_their_best_runnable_load() -> None:
    """DeepSeek-V3.2 W8A8 on 768 A3 dies, 8K/1K, throughput: attention DP768 runs 3,840 requests (5 x 768) within
    the default cap 4,096, not 3,072; under TPOT <= 50 ms with the cap at 16,384, 4,608 (6 x 768)."""
    sc = Scenario(kind="throughput", isl=8192, osl=1024)
    spec = dict(weight_dtype="int8", explain_binding=False)
    _, cands = run_solve("deepseek-v3.2", "atlas_a3", 768, sc, "cann-recipes", **spec)
    first = cands[0].planned
    assert first.batch == 3840 and first.sla_edge_from == 3072
    _, cands = run_solve("deepseek-v3.2", "atlas_a3", 768, sc.model_copy(update={"tpot_ms": 50.0,
                                                                                  "max_concurrency": 16384}),
                         "cann-recipes", **spec)
    first = cands[0].planned
    assert first.batch == 4608 and first.estimate.tpot_s * 1e3 <= 50.0
