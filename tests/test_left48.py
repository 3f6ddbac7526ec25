"""Rules closed from earlier stops' left-open items (stop 48): each comparison, memory figure and sentence on
like terms with the one it stands beside."""
from __future__ import annotations

import pytest


def test_disagg_comparison_prices_the_aggregated_plan_on_the_cards_the_disaggregated_one_uses() -> None:
    """Qwen3-30B-A3B on 8 x H200 under SGLang at --max-concurrency 64 (2K/1K, throughput): the disaggregated plan
    carries the capped load on 5 cards; the aggregated plan it is compared with is planned on those 5, not on all
    8 where the same capped load would be spread over 3 more cards than the disaggregated figures count."""
    from solver.entry import run_disagg, run_solve
    from solver.specs.scenario import Scenario

    sc = Scenario(kind="throughput", isl=2048, osl=1024, tpot_ms=50, max_concurrency=64)
    rep = run_disagg("qwen3-30b-a3b", "h200_sxm", 8, sc, "sglang")
    used = rep.plan.cards
    assert used < 8 and rep.aggregated_cards == used
    _, on_used = run_solve("qwen3-30b-a3b", "h200_sxm", used, sc, "sglang", top=1, explain_binding=False)
    a, b = rep.aggregated.planned.estimate, on_used[0].planned.estimate
    assert a.output_tokens_per_s_per_rank == b.output_tokens_per_s_per_rank
    idle = [w for w in rep.comparison.why if f"of the 8 cards" in w]
    assert idle and idle[0].endswith(f"the aggregated plan is priced on the same {used}"), rep.comparison.why


def test_a_request_holds_whole_kv_blocks_and_the_pool_keeps_its_null_block() -> None:
    """vLLM 0.34.0 (block 64, one null block): Llama-3.1-70B on a TP4 rank caches 2 KV heads x 128 x (K, V) x 2 B
    = 1,024 B a token a layer; a request of 4,000 tokens holds ceil(4,000 / 64) = 63 blocks = 4,032 tokens in each
    of the 80 layers, and the pool keeps one 64-token block beside its requests. Without blocks (SGLang's page
    of 1): the 4,000 tokens, nothing reserved."""
    from solver.estimate.memory_options import framework_options
    from solver.estimate.request_state import cache_per_rank
    from solver.specs.framework import load_framework
    from solver.specs.hardware_catalog import load_hardware
    from solver.specs.model_catalog import load_model
    from solver.specs.parallel import make_parallel_config
    from solver.specs.precision import resolve_precision

    model, hw = load_model("llama-3.1-70b"), load_hardware("h100_sxm")
    pc, prec = make_parallel_config(4, attn_tp_size=4), resolve_precision(model, hw)
    vllm = framework_options(load_framework("vllm")).cache_layout
    kv, _, seqs = cache_per_rank(model, pc, prec, 3, 4000, layout=vllm)
    assert seqs == 3 and kv == 80 * 1024 * (3 * 4032 + 64)
    sglang = framework_options(load_framework("sglang")).cache_layout
    assert cache_per_rank(model, pc, prec, 3, 4000, layout=sglang)[0] == 80 * 1024 * 3 * 4000


def test_kv_blocks_cost_a_plan_at_its_memory_edge_a_request() -> None:
    """Llama-3.1-70B TP4 on 4 x H100 under vLLM at 3,000 / 1,000 tokens: 138 requests fit as exact tokens, 137 in
    64-token blocks (4,032 tokens each) beside the null block."""
    from dataclasses import replace

    from solver.estimate.memory import max_batch
    from solver.estimate.memory_options import framework_options
    from solver.specs.framework import load_framework
    from solver.specs.hardware_catalog import load_hardware
    from solver.specs.model_catalog import load_model
    from solver.specs.parallel import make_parallel_config
    from solver.specs.precision import resolve_precision

    model, hw = load_model("llama-3.1-70b"), load_hardware("h100_sxm")
    pc = make_parallel_config(4, attn_tp_size=4, dense_tp_size=4, embed_tp_size=4, lmhead_tp_size=4)
    prec = resolve_precision(model, hw)
    opts = framework_options(load_framework("vllm"), None, hw)
    assert max_batch(model, hw, pc, prec, 4000, opts) == 137
    assert max_batch(model, hw, pc, prec, 4000, replace(opts, kv_blocks=None)) == 138


def test_memory_sizes_a_prefill_chunk_at_the_budget_the_command_prints() -> None:
    """vllm-ascend on A3 (default budget 2,048) prints --max-num-batched-tokens max(token_budget, replica_batch x
    (1 + mtp)): a replica of 3,000 requests gets 3,000 tokens a step, 1,500 drafting one token each 3,000 too, and
    1,000 the default; memory's prefill chunk is that budget, the one the estimate prices (workload.token_budget)."""
    from dataclasses import replace

    from solver.estimate.compute import factors_for
    from solver.estimate.memory_options import framework_options
    from solver.estimate.workload import Workload, token_budget
    from solver.specs.framework import load_framework
    from solver.specs.hardware_catalog import load_hardware

    fw, hw = load_framework("vllm-ascend"), load_hardware("atlas_a3")
    opts = framework_options(fw, None, hw)
    assert opts.token_budget == 2048
    assert [opts.chunk_tokens(1, n) for n in (1000, 3000)] == [2048, 3000]
    assert replace(opts, decode_drafts=1).chunk_tokens(1, 1500) == 3000
    f = factors_for(hw, fw.efficiency_for(hw))
    for n, mtp in ((1000, 0), (3000, 0), (1500, 1)):
        wl = Workload("serving", isl=128, osl=128, concurrency=n, mtp=mtp)
        assert token_budget(wl, f, 1, n) == replace(opts, decode_drafts=mtp).chunk_tokens(1, n)


def test_tpot_at_osl_1_is_said_in_one_place_for_every_scheduler_path(monkeypatch) -> None:
    """scheduler.tpot_of is the one rule for TPOT at OSL 1 (no gap follows the only token): the closed loop, the
    lockstep cohort and the event loop all go through it, so a change there reaches every path."""
    from solver.estimate import closed_loop, scheduler

    assert closed_loop.tpot_of is scheduler.tpot_of
    assert scheduler.lockstep(4, 2, 0.1, 0.01, 0.0, 1, 0.0).tpot_s == 0.0
    seen = []
    monkeypatch.setattr(scheduler, "tpot_of", lambda gap, osl: seen.append(osl) or -1.0)
    assert scheduler.lockstep(4, 2, 0.1, 0.01, 9.0, 10, 0.0).tpot_s == -1.0 and seen == [10]


def test_launch_reads_a_deployments_prompts_from_the_workload_check_estimates() -> None:
    """A prefill-only deployment's prompts (launch's step budget) come from one_config.deployment_workload, the
    workload `check` estimates: 4,096 tokens at prefix_hit 0.25 compute 3,072 new ones a prompt."""
    from solver.one_config import deployment_workload
    from solver.specs.deployment import Deployment

    dep = Deployment(model="llama-3.1-8b", hardware="h100_sxm", world_size=1,
                     workload={"phase": "prefill", "batch": 4, "seq_len": 4096, "prefix_hit": 0.25})
    wl = deployment_workload(dep)
    assert (wl.kind, wl.batch, wl.seq_len) == ("prefill", 4, 4096)
    assert wl.prompt_tokens == (3072, 1024)


def test_memory_and_check_say_one_thing_of_cp_ranks_that_decode_as_attention_dp() -> None:
    """cann-recipes' V3.2 decode (v32-d128-q: cp_size 128 = world): its CP ranks decode as attention DP, each
    request's cache on the one rank decoding it (step_parts.decode_layout); `memory` says so, as `check` does,
    not that one request's cache is split 128 ways (the bytes a rank holds are the same either way)."""
    from solver.one_config import memory_config
    from solver.rank.kv_split import decode_cp_note
    from solver.report.model_view import cache_line

    knobs = dict(attn_tp_size=1, dense_tp_size=4, moe_tp_size=1, embed_tp_size=16, lmhead_tp_size=16,
                 o_proj_tp_size=4, cp_size=128)
    res = memory_config("deepseek-v3.2", "atlas_a3", 128, knobs, batch=256, seq_len=65792, mtp=3,
                        framework="cann-recipes", weight_dtype="int8", kv_dtype="int8")
    line = cache_line(res.as_dict()["cache"], res.parallel_config)
    assert "split 128 ways" not in line
    assert "each request on the one of the 128 CP ranks that decodes it (they decode as attention DP" in line
    assert "its ranks decode as attention DP" in decode_cp_note(128, False)


def test_check_says_vllm_ascend_pcp_ranks_each_keep_a_shard_of_every_request() -> None:
    """vllm-ascend's PCP (cp_decode_shards_kv) keeps 1/cp of every request on each CP rank and decodes the whole
    batch there: `check` says that, as `memory` splits the cache cp ways, not that the ranks decode as attention
    DP."""
    from solver.rank.kv_split import decode_cp_note
    from solver.specs.framework import load_framework

    fw = load_framework("vllm-ascend")
    note = decode_cp_note(4, fw.cp_replicates_kv_cache, fw.cp_decode_repeats_batch, fw.cp_decode_shards_kv)
    assert "keeps 1/4 of every request's KV and runs the whole batch" in note and "attention DP" not in note
