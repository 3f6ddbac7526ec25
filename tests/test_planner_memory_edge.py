"""The memory edge: where memory stops the powers of two, the planner also tries the most sequences a
configuration holds (plan.table_build), so a throughput plan fills the KV cache as the engine would."""
from __future__ import annotations

from solver.api import run_solve
from solver.estimate.compute import factors_for
from solver.estimate.memory import max_batch
from solver.estimate.memory_options import engine_options
from solver.plan.memory_edge import bisect_edge
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
    """The powers stop at 64 (128 fit nowhere); the edge is TP4's own largest batch by the memory model (107 at
    5,120 tokens), and the tables hold no concurrency between it and 128."""
    sc = Scenario(kind="throughput", isl=4096, osl=1024)
    m, h, fw, prec, fac, t = _tables(sc)
    tp4 = ParallelConfig(world_size=4, attn_tp_size=4, dense_tp_size=4, embed_tp_size=4, lmhead_tp_size=4)
    most = max_batch(m, h, tp4, prec, sc.max_seq_len, engine_options(None, fac))
    assert t.batches[:-1] == (1, 2, 4, 8, 16, 32, 64)
    assert t.batches[-1] == most == 107


def test_a_throughput_plan_fills_the_kv_cache_to_the_edge() -> None:
    """The throughput scenario's first candidate runs at the edge: more output tokens per rank than at 64."""
    result, cands = run_solve(*LLAMA_4_H100[:3], Scenario(kind="throughput", isl=4096, osl=1024),
                              LLAMA_4_H100[3], explain_binding=False)
    first = cands[0].planned
    assert first.batch == 107
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
    """bisect_edge: the largest integer in (fitting, failing) a monotone test holds; None where none does."""
    assert bisect_edge(64, 128, lambda c: c <= 107) == 107
    assert bisect_edge(64, 128, lambda c: c <= 64) is None
    assert bisect_edge(64, 65, lambda c: True) is None


# DeepSeek-V3 on 48 Atlas A3 dies under cann-recipes (batch a multiple of the attention DP size), 8K prompts, 1K
# outputs: memory alone stops at 1,996 requests, a count no layout the engine runs divides
V3_48_A3 = ("deepseek-v3", "atlas_a3", 48, "cann-recipes")


def test_the_memory_edge_is_a_batch_the_engines_rules_run() -> None:
    """Under an engine's batch rule the edge is the most sequences a configuration both holds and may run:
    1,920 = 40 x 48 (DP48 layouts), not 1,945, which `solve --concurrency 1945` refuses. (1,968 = 41 x 48 before
    the shared expert's width bound dense TP: 2048 % 24 and % 48 != 0 drop the layouts that held more.)"""
    name, hw_name, world, fw_name = V3_48_A3
    m, h, fw = load_model(name), load_hardware(hw_name), load_framework(fw_name)
    prec = resolve_precision(m, h)
    fac = factors_for(h, fw.efficiency_for(h))
    sc = Scenario(kind="throughput", isl=8192, osl=1024)
    t = build_tables(m, h, prec, fac, fw, build_space(m, h, fw, world, sc), sc)
    assert t.batches[-2:] == (1536, 1920)
    _, cands = run_solve(name, hw_name, world, Scenario(isl=8192, osl=1024, concurrency=1920), fw_name, top=1,
                         explain_binding=False)
    assert cands[0].planned.batch == 1920 and cands[0].planned.estimate.memory.feasible


def test_a_fixed_concurrency_the_batch_rule_refuses_names_the_nearest_it_runs() -> None:
    """--concurrency 1945 is refused naming C.batch_divisible_attn_dp and what would fit: 1,920, which a
    layout holding 1,945 sequences runs (it said only which rule binds)."""
    import pytest

    from solver.errors import InfeasibleError

    name, hw_name, world, fw_name = V3_48_A3
    with pytest.raises(InfeasibleError) as err:
        run_solve(name, hw_name, world, Scenario(isl=8192, osl=1024, concurrency=1945), fw_name, top=1)
    assert "C.batch_divisible_attn_dp" in str(err.value)
    assert "--concurrency 1,920" in (err.value.remedy or "")


def test_no_edge_where_the_engine_runs_no_attention_layout() -> None:
    """Kimi-K3 on 16 MI300X under ATOM: no attention layout passes the engine's rules, so no configuration holds
    anything; the plan is refused with its reasons, not cut short by the edge search (a KeyError before)."""
    import pytest

    from solver.errors import InfeasibleError

    with pytest.raises(InfeasibleError):
        run_solve("kimi-k3", "mi300x", 16, Scenario(kind="latency"), "atom", explain_binding=False)
