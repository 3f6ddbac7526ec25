"""The SLA edge of a power's optimum is planned where that optimum's own configuration misses the SLAs at the next
planned concurrency, whatever else meets them there (plan.sla_edge.power_edge): a much worse configuration meeting
the next power must not hide the load the power's optimum still carries within the SLAs."""
from __future__ import annotations

from solver.api import run_solve
from solver.estimate.compute import factors_for
from solver.estimate.memory_options import engine_options
from solver.estimate.serving import Workload, estimate
from solver.plan.points import Point
from solver.plan.sla_edge import sla_edges
from solver.specs.framework import load_framework
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import load_model
from solver.specs.parallel import ParallelConfig
from solver.specs.precision import resolve_precision
from solver.specs.scenario import Scenario

# Qwen3-30B-A3B on 64 H100 (generic), 4K prompts, 1K outputs, TPOT <= 40 ms: the plain Attn DP + MoE EP optimum of
# 2,048 (TPOT 23.4 ms) misses 40 ms at 4,096, where CP32 still meets it (a class optimum there, far worse per rank)
QWEN_64_H100 = ("qwen3-30b-a3b", "h100_sxm", 64)
TPOT_40 = Scenario(kind="throughput", isl=4096, osl=1024, tpot_ms=40.0)


def _point(batch: int, attn: int) -> Point:
    return Point((("attn", attn),), batch, 1, 1.0, 0, float(batch))


def _estimate(cfg: ParallelConfig, batch: int):
    m, h, fw = load_model(QWEN_64_H100[0]), load_hardware(QWEN_64_H100[1]), load_framework("generic")
    f = factors_for(h, fw.efficiency_for(h))
    return estimate(m, h, cfg, resolve_precision(m, h), f, Workload.for_scenario(TPOT_40, batch),
                    engine_options(None, f))


def test_an_optimum_the_slas_stop_has_its_edge_though_another_configuration_meets_the_next_power() -> None:
    """Optima at 8 (configuration 0, meets up to 13) and at 16 (configuration 1, meets up to 20): configuration 0
    misses 16 although configuration 1 meets it, so its edge 13 is planned (from 8), and 1's edge 20 (from 16)."""
    classes = {(8, 8.0): _point(8, 0), (16, 16.0): _point(16, 1)}
    most = {0: 13, 1: 20}
    assert sla_edges(classes, (8, 16, 32), lambda p, c: c <= most[dict(p.picks)["attn"]],
                     lambda p, c: True) == {13: 8, 20: 16}


def test_an_optimum_that_meets_the_next_power_has_no_edge_below_it_and_costs_no_bisection() -> None:
    """The same configuration is the optimum at 8 and 16 and meets up to 20: no edge in (8, 16); one question at 16
    for the optimum of 8, then the bisection of (16, 32) for the optimum of 16 (at most log2(16) = 4 more)."""
    classes = {(8, 8.0): _point(8, 0), (16, 16.0): _point(16, 0)}
    asked: list[int] = []

    def meets(p: Point, c: int) -> bool:
        asked.append(c)
        return c <= 20

    assert sla_edges(classes, (8, 16, 32), meets, lambda p, c: True) == {20: 16}
    assert asked[0] == 16 and all(16 < c <= 32 for c in asked[1:]) and len(asked) <= 1 + 1 + 4


def test_the_plain_optimum_of_2048_runs_at_its_edge_where_only_cp32_meets_4096() -> None:
    """The front holds the plain pattern of 2,048 at its own SLA edge between 2,048 and 4,096: within 40 ms there,
    over it one request later (by hand from the estimate: 39.6 ms at 3,904 against 23.5 at 2,048), and more output
    per rank than at 2,048 (1,461 against 1,289 tok/s per rank) or than CP32 at 4,096 (869). The edge is planned
    like any concurrency, so its optimum may split the LM head otherwise (TP2 there, TP4 at 2,048: the logits'
    all-gather grows with the head's group) but keeps the pattern: no CP, no SP, attention DP, MoE EP."""
    result, _ = run_solve(*QWEN_64_H100, TPOT_40, "generic", explain_binding=False)
    at_edge = [p for p in result.front if p.sla_edge_from == 2048]
    assert len(at_edge) == 1
    edge = at_edge[0]
    assert 2048 < edge.batch < 4096
    assert edge.estimate.tpot_s * 1e3 <= 40.0 < _estimate(edge.config, edge.batch + 1).tpot_s * 1e3
    plain = next(p for p in result.front if p.batch == 2048)
    others = {k: v for k, v in plain.config.knobs().items() if k != "lmhead_tp_size"}
    assert {k: v for k, v in edge.config.knobs().items() if k != "lmhead_tp_size"} == others
    assert edge.estimate.output_tokens_per_s > plain.estimate.output_tokens_per_s


def test_the_edge_carries_more_than_the_worse_configuration_meeting_the_next_power() -> None:
    """The next power is met, but only by a configuration far worse per rank: CP32 meets TPOT 40 ms at 4,096
    while the plain configuration misses it there, and the edge carries more than CP32 at 4,096 (both on 64
    ranks: 1,462 against 869 tok/s per rank, 1.68x, asserted above 1.5x)."""
    result, _ = run_solve(*QWEN_64_H100, TPOT_40, "generic", explain_binding=False)
    edge = next(p for p in result.front if p.sla_edge_from == 2048)
    cp32 = ParallelConfig(world_size=64, cp_size=32, lmhead_tp_size=8)
    at_4096 = _estimate(cp32, 4096)
    assert at_4096.tpot_s * 1e3 <= 40.0 < _estimate(edge.config, 4096).tpot_s * 1e3
    assert edge.estimate.output_tokens_per_s > 1.5 * at_4096.output_tokens_per_s
