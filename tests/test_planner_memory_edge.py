"""The memory edge: where memory stops the powers of two, the planner also tries the most sequences a
configuration holds (plan.table_build), so a throughput plan fills the KV cache as the engine would."""
from __future__ import annotations

from solver.api import run_solve
from solver.estimate.compute import factors_for
from solver.estimate.memory import engine_options, max_batch
from solver.plan.kind_edges import memory_edge
from solver.plan.table_build import build_tables
from solver.space.domains import build_space
from solver.specs.framework import load_framework
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import load_model
from solver.specs.parallel import ParallelConfig
from solver.specs.precision import resolve_precision
from solver.specs.scenario import Scenario

# Llama-3.1-70B on 4 H100 under vLLM, 4K prompts, 1K outputs: TP4 holds 64 requests (63 GB a rank), not 128
LLAMA_4_H100 = ("llama-3.1-70b", "h100_sxm", 4, "vllm")


def _tables(scenario: Scenario):
    name, hw_name, world, fw_name = LLAMA_4_H100
    m, h, fw = load_model(name), load_hardware(hw_name), load_framework(fw_name)
    prec = resolve_precision(m, h)
    fac = factors_for(h, fw.efficiency_for(h))
    return m, h, fw, prec, fac, build_tables(m, h, prec, fac, fw, build_space(m, h, fw, world, scenario), scenario)


def test_the_memory_edge_is_the_most_sequences_a_configuration_holds() -> None:
    """The powers stop at 64 (128 fit nowhere); the last edge is TP4's own largest batch by the memory model (107
    at 5,120 tokens), the one before it PP4's (104), and the tables hold no other concurrency above 64."""
    sc = Scenario(kind="throughput", isl=4096, osl=1024)
    m, h, fw, prec, fac, t = _tables(sc)
    opts = engine_options(None, fac)
    tp4 = ParallelConfig(world_size=4, attn_tp_size=4, dense_tp_size=4, embed_tp_size=4, lmhead_tp_size=4)
    pp4 = ParallelConfig(world_size=4, pp_size=4)
    assert t.batches[:-2] == (1, 2, 4, 8, 16, 32, 64)
    assert t.batches[-2:] == (max_batch(m, h, pp4, prec, sc.max_seq_len, opts),
                              max_batch(m, h, tp4, prec, sc.max_seq_len, opts)) == (104, 107)


def test_a_throughput_plan_fills_the_kv_cache_to_the_edge() -> None:
    """The throughput scenario's first candidate runs at the edge: more output tokens per rank than at 64."""
    result, cands = run_solve(*LLAMA_4_H100[:3], Scenario(kind="throughput", isl=4096, osl=1024),
                              LLAMA_4_H100[3], explain_binding=False)
    first = cands[0].planned
    assert first.batch in (104, 107)  # an edge: PP4's (104, where TP4 also runs, at a lower latency) or TP4's
    at_64 = max((p for p in result.front if p.batch == 64), key=lambda p: p.estimate.output_tokens_per_s)
    assert first.estimate.output_tokens_per_s > at_64.estimate.output_tokens_per_s


def test_a_fixed_concurrency_or_one_phase_keeps_its_batches() -> None:
    """No edge where the scenario does not choose its concurrency from the powers: a fixed concurrency, a
    decode-only plan (a disaggregated decode pool's buckets are the intervals between the powers)."""
    assert _tables(Scenario(isl=4096, osl=1024, concurrency=64))[-1].batches == (64,)
    assert _tables(Scenario(isl=4096, osl=1024, phase="decode"))[-1].batches == (1, 2, 4, 8, 16, 32, 64)


def test_no_edge_where_the_range_ends_before_memory_does() -> None:
    """--max-concurrency 32: every power up to it fits, so nothing stops the powers and no edge is added."""
    assert _tables(Scenario(isl=4096, osl=1024, max_concurrency=32))[-1].batches == (1, 2, 4, 8, 16, 32)


def test_the_edge_search_finds_the_largest_that_holds() -> None:
    """memory_edge: the largest integer in (fitting, failing) a monotone test holds; None where none does."""
    assert memory_edge(64, 128, lambda c: c <= 107) == 107
    assert memory_edge(64, 128, lambda c: c <= 64) is None
    assert memory_edge(64, 65, lambda c: True) is None


# DeepSeek-V3 on 48 Atlas A3 dies under cann-recipes (batch a multiple of the attention DP size), 8K prompts, 1K
# outputs: memory alone stops at 1,996 requests, a count no layout the engine runs divides
V3_48_A3 = ("deepseek-v3", "atlas_a3", 48, "cann-recipes")


def test_the_memory_edge_is_a_batch_the_engines_rules_run() -> None:
    """Under an engine's batch rule the edge is the most sequences a configuration both holds and may run:
    1,968 = 41 x 48 (DP48 layouts), not 1,996, which `solve --concurrency 1996` refuses."""
    name, hw_name, world, fw_name = V3_48_A3
    m, h, fw = load_model(name), load_hardware(hw_name), load_framework(fw_name)
    prec = resolve_precision(m, h)
    fac = factors_for(h, fw.efficiency_for(h))
    sc = Scenario(kind="throughput", isl=8192, osl=1024)
    t = build_tables(m, h, prec, fac, fw, build_space(m, h, fw, world, sc), sc)
    assert t.batches[-3:] == (1536, 1722, 1968)  # 1,722: the KVP8 kind's edge (six replicas)
    _, cands = run_solve(name, hw_name, world, Scenario(isl=8192, osl=1024, concurrency=1968), fw_name, top=1,
                         explain_binding=False)
    assert cands[0].planned.batch == 1968 and cands[0].planned.estimate.memory.feasible


def test_a_fixed_concurrency_the_batch_rule_refuses_names_the_nearest_it_runs() -> None:
    """--concurrency 1996 is refused naming C.batch_divisible_attn_dp and what would fit: 1,968, which a
    layout holding 1,996 sequences runs (it said only which rule binds)."""
    import pytest

    from solver.errors import InfeasibleError

    name, hw_name, world, fw_name = V3_48_A3
    with pytest.raises(InfeasibleError) as err:
        run_solve(name, hw_name, world, Scenario(isl=8192, osl=1024, concurrency=1996), fw_name, top=1)
    assert "C.batch_divisible_attn_dp" in str(err.value)
    assert "--concurrency 1,968" in (err.value.remedy or "")


# Qwen3-235B-FP8 on 4 H200 under TRT-LLM (embedding TP = attention TP), 1K/1K: every configuration stops at 512
QWEN_4_H200 = ("qwen3-235b-a22b-fp8", "h200_sxm", 4, "trtllm")


def _qwen():
    from solver.space.placement import as_launched

    name, hw_name, world, fw_name = QWEN_4_H200
    m, fw = load_model(name), load_framework(fw_name)
    h = as_launched(load_hardware(hw_name), fw, world)
    prec = resolve_precision(m, h)
    fac = factors_for(h, fw.efficiency_for(h))
    sc = Scenario(kind="throughput", isl=1024, osl=1024)
    return m, h, fw, prec, fac, sc, build_tables(m, h, prec, fac, fw, build_space(m, h, fw, world, sc), sc)


def test_each_configuration_kind_plans_its_own_edge() -> None:
    """Attention DP4 holds fewer requests than attention TP4: its kind (one stage, four replicas) plans its own
    edge, 768 = `memory`'s max batch of the DP4 configuration the engine runs that holds the most (MoE EP4, LM
    head TP4), and the throughput #1 runs there (it ran at 512, the power below)."""
    m, h, fw, prec, fac, sc, t = _qwen()
    from solver.plan.kind_edges import KindEdges

    probe = KindEdges(t, m, h, fw, sc, lambda c: None)
    w = probe.holds(768, (1, 4))
    assert 768 in t.batches and w is not None
    pc = ParallelConfig(world_size=4, **t.config(w))
    assert max_batch(m, h, pc, prec, sc.max_seq_len, engine_options(None, fac)) == 768
    _, cands = run_solve(*QWEN_4_H200[:3], sc, QWEN_4_H200[3], explain_binding=False)
    first = cands[0].planned
    assert first.batch == 768 and first.config.attn_replicas == 4


def test_a_kinds_edge_keeps_the_rules_that_tie_groups() -> None:
    """TRT-LLM ties the embedding's TP to attention TP: a DP4 configuration with the least-memory embedding
    (TP4) is not one the engine runs, so it does not set the DP4 kind's edge (group by group it said 780-811)."""
    m, h, fw, prec, fac, sc, t = _qwen()
    assert not any(769 <= b <= 810 for b in t.batches)


def test_edges_within_ten_percent_above_a_planned_concurrency_are_served_by_it() -> None:
    """The deployment's own edge is always planned; another kind's only where no concurrency planned lies within
    MIN_EDGE_GAIN below it (the fewest concurrencies leaving every kind one within 10% of its edge)."""
    from solver.plan.kind_edges import thinned

    assert thinned({768, 811, 818, 845, 846}, (256, 512)) == [768, 845, 846]
    assert thinned({1584, 1722, 1968}, (1024, 1536)) == [1722, 1968]
    assert thinned(set(), (1, 2)) == []
