"""Stop 50: memory and pricing items stop 49 left open (benchmarks/README.md, "Stop 50: memory and pricing items
left open, closed"): a vLLM prefill worker's all-to-all buffers, SGLang NGRAM's verified tree, and int8 KV's
scale bytes as a field of the KV format."""
from __future__ import annotations

import pytest

from solver.estimate.buffers import a2a_buffer_bytes
from solver.estimate.compute import factors_for
from solver.estimate.disagg import DisaggWorkload, estimate_disagg
from solver.estimate.memory import memory_per_rank
from solver.estimate.memory_options import framework_options
from solver.plan.disagg_pools import pool_framework
from solver.plan.solve import plan_inputs
from solver.specs.framework import load_framework
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import load_model
from solver.specs.parallel import ParallelConfig
from solver.specs.precision import resolve_precision
from solver.specs.scenario import Scenario

GIB = 2**30


def _ds_ep16():
    """DeepSeek-V3.2 EP16 over two 8-H200 nodes: vLLM's DeepEP condition holds (attention DP, EP past a node)."""
    return load_model("deepseek-v3.2"), load_hardware("h200_sxm"), ParallelConfig(world_size=16)


def test_vllm_prefill_worker_allocates_the_high_throughput_buffers_not_the_low_latency_one():
    """--all2all-backend deepep_high_throughput (a prefill worker's command): 1 GiB NVLink + 1 GiB RDMA where the
    EP group spans nodes (all2all.py:257-288), whatever its step budget; the co-located command keeps the
    low-latency buffer at its 256-token budget."""
    model, hw, pc = _ds_ep16()
    fw = load_framework("vllm")
    worker = framework_options(fw.for_role("prefill"), hw=hw)
    colocated = framework_options(fw, hw=hw)
    assert worker.prefill_worker and not colocated.prefill_worker
    assert a2a_buffer_bytes(model, hw, pc, worker, 64) == 2 * GIB
    assert a2a_buffer_bytes(model, hw, pc, colocated, 64) == GIB + 2 * (2 * 2 * 470_286_336 + 1_024)


def test_prefill_workers_memory_keeps_the_schedulers_step_budget():
    """A prefill worker's command keeps --max-num-batched-tokens 8192 under DeepEP (launch.emit: step_default of
    the prefill role), so its memory holds an 8,192-token chunk, not the low-latency kernels' 256."""
    model, hw, pc = _ds_ep16()
    fw = load_framework("vllm")
    prec = resolve_precision(model, hw, None, None, None)
    worker = memory_per_rank(model, hw, pc, prec, 64, 4096, framework_options(fw.for_role("prefill"), hw=hw))
    colocated = memory_per_rank(model, hw, pc, prec, 64, 4096, framework_options(fw, hw=hw))
    assert worker.activation_bytes > 8 * colocated.activation_bytes


def test_a_prefill_pools_plan_and_estimate_size_the_workers_buffers():
    """The planner's prefill pool (its profile read as the prefill role: pool_framework) and the disaggregated
    estimate's prefill memory both size the prefill worker's buffers."""
    model, hw, pc = _ds_ep16()
    fw = load_framework("vllm")
    _, _, opts = plan_inputs(model, hw, pool_framework(fw), 16, Scenario(isl=4096, osl=1, phase="prefill",
                                                                        max_concurrency=16))
    assert opts.prefill_worker and a2a_buffer_bytes(model, hw, pc, opts, 1) == 2 * GIB
    f = factors_for(hw, fw.efficiency_for(hw))
    prec = resolve_precision(model, hw, None, None, None)
    est = estimate_disagg(model, hw, pc, pc, prec, f, f, DisaggWorkload(isl=4096, osl=1024, concurrency=256))
    # the 2 GiB and the EP staging of its 16 x 4,096-token step (1.88 GB); the low-latency buffer at 256 tokens
    # alone would be 1 GiB + 3.76 GB
    assert 2 * GIB < est.prefill_memory.comm_buffer_bytes < 4 * GIB


def test_check_command_of_a_prefill_worker_sizes_its_own_buffers():
    """check --command of a kv_producer running deepep_high_throughput (the pool's launch) prices the memory the
    planner gave its pool: 2 GiB of all-to-all buffers, not the low-latency buffer."""
    from solver.launch.check_command import command_deployment
    from solver.one_config import check_command_deployment

    command = ("vllm serve deepseek-ai/DeepSeek-V3.2 --prefill-context-parallel-size 16 --enable-expert-parallel "
               "--all2all-backend deepep_high_throughput --nnodes 2 --node-rank 0 --master-addr 10.0.0.1 "
               "--max-num-seqs 2 --max-num-batched-tokens 8192 --max-model-len 5120 --kv-cache-dtype bfloat16 "
               "--kv-transfer-config '{\"kv_connector\":\"NixlConnector\",\"kv_role\":\"kv_producer\"}'")
    r, dep = command_deployment(command, "h100_sxm", 16, isl=4096, osl=1024, concurrency=2)
    res = check_command_deployment(r, dep, "h100_sxm")
    assert res.framework.prefill_role
    # 66.92 GB a rank before (the low-latency buffer at the 256-token budget): the planner's pool figure, 64.23
    assert round(res.review.estimate.memory.model_bytes / 1e9, 2) == 64.23


SG_NGRAM = ("python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V3 --tp 8 --speculative-algorithm NGRAM "
            "--speculative-num-steps 3")
VLLM_NGRAM = ("vllm serve deepseek-ai/DeepSeek-V3.2 -tp 8 --speculative-config "
              "'{\"method\":\"ngram\",\"num_speculative_tokens\":3,\"prompt_lookup_max\":4}'")


def _command(command: str):
    from solver.launch.check_command import command_deployment

    return command_deployment(command, "h200_sxm", isl=4096, osl=512, concurrency=32, mtp_accept=0.7)[1]


def test_sglang_ngram_is_checked_at_the_tree_of_draft_tokens_its_command_verifies():
    """NGRAM's verify forward runs --speculative-num-draft-tokens tokens a request (ngram_worker.py:367-381), 12
    where the command leaves it out (speculative_hook.py:1314-1323); the depth stays --speculative-num-steps."""
    given = _command(SG_NGRAM + " --speculative-num-draft-tokens 8")
    assert (given.mtp, given.verify_tokens, given.draft) == (3, 8, "lookup")
    assert _command(SG_NGRAM).verify_tokens == 12


def test_vllm_ngram_verifies_a_chain_of_one_plus_its_depth():
    dep = _command(VLLM_NGRAM)
    assert (dep.mtp, dep.verify_tokens) == (3, None)


def test_a_verify_step_runs_the_tree_and_accepts_as_the_chain():
    """The decode step's work is verify_tokens a sequence; the tokens it yields stay 1 + a + a^2 + a^3."""
    from dataclasses import replace

    from solver.estimate.figures import step_plan
    from solver.estimate.serving import estimate
    from solver.estimate.workload import Workload, mtp_tokens_per_step

    model, hw = load_model("qwen3-8b"), load_hardware("h100_sxm")
    f = factors_for(hw, load_framework("sglang").efficiency_for(hw))
    chain = Workload.decode_of(32, 2000, 500, mtp=3, mtp_accept=0.6)
    tree = replace(chain, verify_tokens=8)
    pc = ParallelConfig(world_size=1)
    assert step_plan(model, pc, f, tree).dec_work.new_tokens == 32 * 8
    assert step_plan(model, pc, f, chain).dec_work.new_tokens == 32 * 4
    prec = resolve_precision(model, hw, None, None, None)
    a, b = estimate(model, hw, pc, prec, f, chain), estimate(model, hw, pc, prec, f, tree)
    assert b.decode.time_s > a.decode.time_s
    # the tokens a step yields are the chain's at --mtp-accept: 1 + a + a^2 + a^3
    c = estimate(model, hw, pc, prec, f, replace(tree, mtp_accept=0.8))
    assert b.tpot_s / c.tpot_s == pytest.approx(mtp_tokens_per_step(3, 0.8) / mtp_tokens_per_step(3, 0.6))


def test_int8_kv_scales_are_a_field_of_the_kv_format_not_an_int_subclass():
    """The element bytes are a plain int and the per-token-head scales an explicit field (dtypes.KVFormat) the
    layers read: int8 and fp8 caches share 1 B elements and differ in the format alone."""
    from solver.specs.dtypes import KVFormat

    model, hw = load_model("llama-3.1-70b"), load_hardware("h100_sxm")
    int8 = resolve_precision(model, hw, kv_dtype="int8")
    fp8 = resolve_precision(model, hw, kv_dtype="fp8")
    assert type(int8.kv_bytes) is int and int8.kv_bytes == fp8.kv_bytes == 1
    assert (int8.kv_format, fp8.kv_format) == (KVFormat(1, 8), KVFormat(1, 0))
    layer = next(layer.mixer for layer in model.layers)
    assert layer.state(int8.kv_format, 8).per_token_bytes == 2 * 128 + 8
    assert layer.state(fp8.kv_format, 8).per_token_bytes == 2 * 128
