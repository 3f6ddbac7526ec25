"""Stop 49: vLLM's batched-DP step budget. Where its command runs DeepEP's low-latency kernels with attention DP
(serving.ep_kernels holds), the engine's own default max_num_batched_tokens is 256 (EpKernels.token_budget); one
function (profile_serving.step_default) gives a configuration's default budget, and the launch, the step the
estimate prices, the memory (the prefill chunk, the DeepEP buffer) and the planner's views read it."""
from __future__ import annotations

import re
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from solver.estimate.compute import factors_for
from solver.estimate.memory import memory_per_rank
from solver.estimate.memory_options import framework_options
from solver.estimate.serving import Workload, estimate
from solver.launch.emit import LaunchInputs, emit_launch
from solver.plan import cpsat
from solver.plan.exhaustive import enumerate_points, pareto
from solver.plan.table_build import build_tables
from solver.space.domains import build_space
from solver.specs.framework import load_framework
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import load_model
from solver.specs.parallel import ParallelConfig
from solver.specs.precision import resolve_precision
from solver.specs.profile_serving import step_default
from solver.specs.scenario import Scenario

sys.path.insert(0, str(Path(__file__).parent))
from test_planner_exact import configs_match_the_estimate  # noqa: E402

WIDE_EP = dict(world_size=16, moe_tp_size=1)  # DeepSeek-V3.2 on 16 H200: attention DP16, MoE EP16 over 2 nodes


def _vllm():
    return load_model("deepseek-v3.2"), load_hardware("h200_sxm"), load_framework("vllm")


def test_the_kernels_budget_is_the_default_exactly_where_they_hold() -> None:
    m, h, fw = _vllm()
    ep, default = fw.serving.ep_kernels, fw.token_budget_on(h)
    assert ep.token_budget == 256 and default == 8192
    assert step_default(ep, default, True, ParallelConfig(**WIDE_EP), h) == 256
    # inside one node (EP8 on 8 ranks), under attention TP (no DP), or MoE TP: the scheduler's default
    assert step_default(ep, default, True, ParallelConfig(world_size=8), h) == 8192
    assert step_default(ep, default, True, ParallelConfig(world_size=16, attn_tp_size=16, dense_tp_size=16), h) == 8192
    assert step_default(ep, default, True, ParallelConfig(world_size=16, moe_tp_size=16), h) == 8192
    # a prefill worker runs the throughput kernels (not batched DP); a dense model dispatches nothing
    assert step_default(ep, default, True, ParallelConfig(**WIDE_EP), h, prefill_worker=True) == 8192
    assert step_default(ep, default, False, ParallelConfig(**WIDE_EP), h) == 8192


def _argv(pc: ParallelConfig, batch: int) -> str:
    m, h, fw = _vllm()
    return " ".join(emit_launch(fw, m, h, pc, LaunchInputs(batch=batch, max_model_len=5120))["nodes"][0]["argv"])


def test_the_launch_sets_the_kernels_budget_under_the_commands_rule() -> None:
    pc = ParallelConfig(**WIDE_EP)
    # 512 requests over 16 engines: 32 each, below 256, so the engine's 256
    cmd = _argv(pc, 512)
    assert re.search(r"--max-num-batched-tokens 256\b", cmd) and "deepep_low_latency" in cmd
    # the rule still holds every running request's tokens: 8,192 requests, 512 an engine
    cmd = _argv(pc, 8192)
    assert re.search(r"--max-num-batched-tokens 512\b", cmd)
    # where the kernels do not hold, the scheduler's 8,192
    cmd = _argv(ParallelConfig(world_size=8), 512)
    assert re.search(r"--max-num-batched-tokens 8192\b", cmd)


def test_the_deepep_buffer_is_sized_at_the_kernels_budget() -> None:
    """1 GiB of NVLink buffer plus the low-latency RDMA buffer at 256 dispatch tokens (buffers.low_latency_rdma_bytes:
    DeepSeek's 7,168 hidden, 256 experts): 2 x (send 256 x 256 x 14,352 + receive the same + 1,024 of counters)."""
    m, h, fw = _vllm()
    prec = resolve_precision(m, h)
    rep = memory_per_rank(m, h, ParallelConfig(**WIDE_EP), prec, 1024, 4096, framework_options(fw, hw=h))
    slot = 16 + 2 * 7168
    ll = 2 * (2 * 256 * 256 * slot + 1024)
    assert rep.comm_buffer_bytes - 2**30 == pytest.approx(ll, rel=0.02)  # the rest: NCCL's and the EP staging


def test_the_estimate_prices_the_kernels_budget() -> None:
    m, h, fw = _vllm()
    prec, f = resolve_precision(m, h), factors_for(h, fw.efficiency_for(h))
    wl = Workload("serving", isl=4096, osl=1024, concurrency=512)
    pc = ParallelConfig(**WIDE_EP)
    e = estimate(m, h, pc, prec, f, wl)
    assert e.memory.feasible  # at 8,192 the DeepEP buffer alone was 123 GB
    at = {n: estimate(m, h, pc, prec, f, replace(wl, token_budget=n)) for n in (256, 8192)}
    assert (e.ttft_s, e.tpot_s) == (at[256].ttft_s, at[256].tpot_s) != (at[8192].ttft_s, at[8192].tpot_s)


def _wide_ep_instance(batches: tuple[int, ...], kind: str):
    """DeepSeek-V3.2 on 16 H200 under vLLM at these concurrencies, one pipeline stage (the enumerator's size)."""
    m, h, fw = _vllm()
    prec = resolve_precision(m, h)
    sc = Scenario(kind=kind, isl=4096, osl=128, max_concurrency=max(batches))
    f = factors_for(h, fw.efficiency_for(h))
    space = build_space(m, h, fw, 16, sc)
    space = replace(space, domains={**space.domains, "pp_size": (1,)}, batches=batches)
    return m, h, fw, prec, f, sc, build_tables(m, h, prec, f, fw, space, sc)


@pytest.mark.parametrize("kind", ["throughput", "latency"])
def test_the_planner_front_is_the_exhaustive_one_where_the_views_split_by_budget(kind: str) -> None:
    """Where some MoE choices of a layout run the EP kernels and some do not, the layout's two views (Tables.layouts)
    still give the planner the exhaustive front, and the tables the full estimate's figures and memory."""
    m, h, fw, prec, f, sc, t = _wide_ep_instance((16, 64, 256, 512), kind)
    budgets = {t.view_budget(k) for k in t.layouts()}
    assert budgets == {256, 8192}, "the views split by the kernels' budget"
    assert any(t.moe_in(k) is not None for k in t.layouts()), "a layout's MoE choices fall in two views"
    front = cpsat.Planner(t, m, h, fw, sc).front()
    exhaustive = pareto(enumerate_points(t, m, h, fw, sc))
    assert [(p.latency, p.inv_throughput) for p in front] == [(p.latency, p.inv_throughput) for p in exhaustive]
    assert any(t.view_budget(t.key_of(dict(p.picks))) == 256 for p in front), "a view at the kernels' budget wins"
    wide = [(b, p) for b in (64, 512) for p in ({"attn": i, "dense": d, "moe": j, "embed": e, "lmhead": e2}
                                       for key, attn in t.layouts().items() for i in attn[:1]
                                       for j in sorted(t.moe_in(key) or range(len(t.choices["moe"])))
                                       for d in range(len(t.choices["dense"])) if t.choices["dense"][d][0] == 1
                                       for e in range(len(t.choices["embed"])) if t.choices["embed"][e][0] == 1
                                       for e2 in range(len(t.choices["lmhead"])) if t.choices["lmhead"][e2][0] == 1)]
    assert configs_match_the_estimate(m, h, prec, f, sc, t, wide) > 0


def test_split_views_under_pp_give_the_full_estimates_figures_and_memory() -> None:
    """DeepSeek-V3.2 on 32 H100 under vLLM: with 2 stages a stage's 16 ranks still span nodes, so layouts of PP2
    split by budget too; every split view's configurations (dense, embed, LM head at TP 1) give the full estimate's
    figures and memory, stage by stage."""
    m, _, fw = _vllm()
    h = load_hardware("h100_sxm")
    prec, f = resolve_precision(m, h), factors_for(h, fw.efficiency_for(h))
    sc = Scenario(isl=4096, osl=128, max_concurrency=256)
    space = build_space(m, h, fw, 32, sc)
    t = build_tables(m, h, prec, f, fw, replace(space, domains={**space.domains, "pp_size": (2,)}, batches=(64, 256)), sc)
    split = [k for k in t.layouts() if t.moe_in(k) is not None]
    assert split and all(k[4] == 2 for k in split)
    configs = []
    for key in split:
        ones = {g: next(j for j, c in enumerate(t.choices[g]) if c[0] == 1) for g in ("dense", "embed", "lmhead")}
        configs += [(b, {"attn": t.layouts()[key][0], "moe": j, **ones}) for j in sorted(t.moe_in(key)) for b in (64, 256)]
    assert configs_match_the_estimate(m, h, prec, f, sc, t, configs) > 0
