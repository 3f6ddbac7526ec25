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


# --- PP stages per DP engine: B.pp_stage_whole_nodes reads the engine's rank order ---

def _placed(fw_name: str, world: int):
    from solver.space.placement import as_launched
    from solver.specs.framework import load_framework
    from solver.specs.hardware_catalog import load_hardware
    fw = load_framework(fw_name)
    return as_launched(load_hardware("h100_sxm"), fw, world), fw


def test_a_dp_major_stage_is_judged_per_dp_engine() -> None:
    """12 H100 under vLLM run 2 nodes x 6; TP2 x PP3 x DP2 is two engines of 6 ranks, each stage 2 ranks inside
    its engine's node: it fits. TP4 x PP3 (one engine's stage, 4 ranks) would straddle: it does not."""
    from solver.space.domains import pp_fits_nodes
    from solver.specs.framework import DP_MAJOR
    hw, _ = _placed("vllm", 12)
    assert hw.ranks_per_node == 6
    assert pp_fits_nodes(12, 3, hw, DP_MAJOR, engine=2)
    assert not pp_fits_nodes(12, 3, hw, DP_MAJOR, engine=4)


def test_a_stage_major_stage_is_judged_whole() -> None:
    """Stage-major (SGLang) numbers a stage's 12 / 3 = 4 ranks consecutively: against 6 a node it straddles."""
    from solver.space.domains import pp_fits_nodes
    from solver.specs.framework import STAGE_MAJOR
    hw, _ = _placed("sglang", 12)
    assert not pp_fits_nodes(12, 3, hw, STAGE_MAJOR, engine=2)


def test_the_space_keeps_pp3_on_12_h100_under_a_dp_major_engine_only() -> None:
    """The pp value alone: kept under vLLM (its layouts judge it with their engine), pruned under SGLang."""
    from solver.space.domains import build_space
    from solver.specs.model_catalog import load_model
    sc = Scenario(kind="throughput", isl=8192, osl=1024)
    m = load_model("llama-3.3-70b")
    hw, fw = _placed("vllm", 12)
    assert 3 in build_space(m, hw, fw, 12, sc).domains["pp_size"]
    hw, fw = _placed("sglang", 12)
    space = build_space(m, hw, fw, 12, sc)
    assert 3 not in space.domains["pp_size"]
    assert any(p.knob == "pp_size" and p.value == 3 and p.rule == "B.pp_stage_whole_nodes" for p in space.pruned)


def test_the_attention_layouts_keep_a_dp_major_stage_inside_its_engines_node() -> None:
    """Under vLLM on 12 H100 the attention layouts keep TP2 x PP3 and TP1 x PP3 (engines of 2 and 1 ranks a stage,
    6 and 3 ranks a node); every layout kept has each engine's stage tiling the 6-rank node."""
    from solver.plan.table_build import attention_tuples
    from solver.space.domains import build_space
    from solver.specs.model_catalog import load_model
    sc = Scenario(kind="throughput", isl=8192, osl=1024)
    m = load_model("llama-3.3-70b")
    hw, fw = _placed("vllm", 12)
    layouts = {(t[0], t[-1]) for t in attention_tuples(build_space(m, hw, fw, 12, sc), m, fw, 12, hw, sc)
               if t[1] == t[2] == t[3] == 1}
    assert (2, 3) in layouts and (1, 3) in layouts
    assert all(6 % tp == 0 for tp, _ in layouts)


def test_check_names_no_straddling_stage_for_a_dp_major_engine() -> None:
    """`check` and the planner read one rule: TP2 x PP3 x DP2 on 12 H100 breaks no one-knob rule under vLLM, and
    TP4 x PP3 does (B.tp_groups_tile_nodes for its 4-rank TP as well)."""
    from solver.space.domains import config_violations
    from solver.specs.model_catalog import load_model
    from solver.specs.parallel import ParallelConfig
    sc = Scenario(kind="throughput", isl=8192, osl=1024)
    m = load_model("llama-3.3-70b")
    hw, fw = _placed("vllm", 12)
    tp2 = ParallelConfig(world_size=12, attn_tp_size=2, dense_tp_size=2, embed_tp_size=2, lmhead_tp_size=2,
                         pp_size=3)
    assert config_violations(m, hw, fw, tp2, sc) == []
    hw_s, fw_s = _placed("sglang", 12)
    assert "B.pp_stage_whole_nodes" in config_violations(m, hw_s, fw_s, tp2, sc)


def test_vllm_on_12_h100_plans_tp2_x_pp3_x_dp2() -> None:
    """Llama-3.3-70B on 12 H100 under vLLM, 8K/1K throughput: TP2 x PP3 x DP2 at 128 requests (98.3 tok/s per
    rank), where the answer pruned it and stopped at 61.8."""
    _, cands = run_solve("llama-3.3-70b", "h100_sxm", 12, Scenario(kind="throughput", isl=8192, osl=1024), "vllm",
                         explain_binding=False)
    pc = cands[0].planned.config
    assert (pc.attn_tp_size, pc.pp_size, pc.attn_replicas) == (2, 3, 2)
    assert cands[0].planned.estimate.output_tokens_per_s_per_rank > 90


def test_the_range_note_names_a_count_its_configuration_cannot_pass_below_the_cap() -> None:
    """DP768 at 3,840 under a cap of 4,096 runs no larger count there: the answer is at the top of its range, and
    the note says so (recommend widens the range on it); a configuration that runs more gets no note."""
    from solver.space.domains import range_note
    sc = Scenario(kind="throughput", isl=8192, osl=1024)
    assert range_note(3840, sc) is None
    assert range_note(3840, sc, more=lambda cap: True) is None
    note = range_note(3840, sc, more=lambda cap: False)
    assert note is not None and "3,840" in note and "batch rules" in note


def test_runs_more_reads_the_engines_batch_rule() -> None:
    """Under cann-recipes attention DP768 on 768 dies runs 3,840 and 4,608, nothing between: none past 3,840 up to
    4,096, one up to 4,608; an engine without batch rules runs every count."""
    from solver.plan.sla_edge import runs_more
    from solver.specs.framework import load_framework
    from solver.specs.hardware_catalog import load_hardware
    from solver.specs.model_catalog import load_model
    m, hw = load_model("deepseek-v3.2"), load_hardware("atlas_a3")
    dp768 = {"attn_tp_size": 1, "o_proj_tp_size": 4, "lmhead_tp_size": 32}
    cann = load_framework("cann-recipes")
    assert not runs_more(dp768, m, hw, cann, 768, 3840, 4096)
    assert runs_more(dp768, m, hw, cann, 768, 3840, 4608)
    assert runs_more(dp768, m, hw, load_framework("generic"), 768, 3840, 4096)
