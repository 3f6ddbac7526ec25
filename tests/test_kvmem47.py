"""vLLM's KV pool equal to the plan's (stop 47): the launch gives vLLM and vllm-ascend the pool's bytes per rank
(--kv-cache-memory-bytes = launch/memory_share.kv_pool_bytes), which the worker takes as they are, where the
utilization share alone loses the CUDA-graph estimate the memory model keeps in the runtime reserve; `check
--command` reads the flag back as a setting."""
from __future__ import annotations

import math
from dataclasses import replace
from functools import lru_cache

import pytest

from solver.entry import run_solve
from solver.launch.candidates import candidate_launch
from solver.launch.memory_share import kv_pool_bytes, memory_fraction
from solver.specs.framework import load_framework
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import load_model
from solver.specs.scenario import Scenario
from tests.deployment_files import run_json

LLAMA = "meta-llama/Llama-3.1-70B-Instruct"
FLAG = "--kv-cache-memory-bytes"


@lru_cache(maxsize=None)
def _top(model: str, hardware: str, cards: int, framework: str):
    """The top candidate of a throughput solve at 4K/1K and its launch's argv."""
    scenario = Scenario(kind="throughput", isl=4096, osl=1024)
    _, cands = run_solve(model, hardware, cards, scenario, framework, top=1)
    cand = cands[0]
    launch = candidate_launch(load_framework(framework), load_model(model), load_hardware(hardware), cand, scenario)
    return cand, launch["nodes"][0]["argv"]


def _flag(argv: list[str], flag: str) -> str:
    return argv[argv.index(flag) + 1]


@pytest.mark.parametrize("model, hardware, cards, framework", [("llama-3.1-70b", "h100_sxm", 4, "vllm"),
                                                               ("qwen3-30b-a3b", "atlas_a3", 8, "vllm-ascend")])
def test_vllm_kv_pool_bytes_are_the_limit_less_the_planned_weights_activations_and_buffers(model, hardware, cards,
                                                                                           framework):
    cand, argv = _top(model, hardware, cards, framework)
    mem = cand.planned.estimate.memory
    rest = mem.weights_total + mem.activation_bytes + mem.comm_buffer_bytes
    assert int(_flag(argv, FLAG)) == math.floor(mem.limit_bytes - rest)
    assert int(_flag(argv, FLAG)) >= mem.cache_total


def test_vllm_kv_pool_of_a_plan_filled_to_its_limit_holds_its_caches_and_less_than_one_request_more():
    """Llama-3.1-70B TP4 on 4 H100 at 4K/1K throughput plans 107 requests of 0.419 GB KV per rank at its limit:
    the pool is their 44.88 GB and under one request beside (45.29 GB, 108 requests), where the utilization
    share alone holds fewer by the engine's CUDA-graph estimate (2.4 requests per GB of graphs)."""
    cand, argv = _top("llama-3.1-70b", "h100_sxm", 4, "vllm")
    mem = cand.planned.estimate.memory
    per_request = mem.cache_total / cand.planned.batch  # one TP4 replica holds the whole batch
    pool = int(_flag(argv, FLAG))
    assert mem.cache_total <= pool < mem.cache_total + per_request
    assert pool // per_request in (cand.planned.batch, cand.planned.batch + 1)


def test_the_utilization_is_still_given_beside_the_pool_as_the_worker_checks_it_at_start():
    """vLLM's worker refuses to start where less than --gpu-memory-utilization of the device is free (0.34.0
    v1/worker/utils.py:783-797), the pool's bytes given or not: the share stays the memory model's limit."""
    _, argv = _top("llama-3.1-70b", "h100_sxm", 4, "vllm")
    assert float(_flag(argv, "--gpu-memory-utilization")) == memory_fraction(load_hardware("h100_sxm"))


def test_the_pool_is_never_below_the_caches_the_plan_holds():
    """A plan filled to within a quarter byte of its limit gets its caches rounded up, not the limit's remainder
    rounded down below them."""
    cand, _ = _top("llama-3.1-70b", "h100_sxm", 4, "vllm")
    mem = cand.planned.estimate.memory
    full = replace(mem, activation_bytes=mem.limit_bytes - mem.weights_total - mem.comm_buffer_bytes
                   - mem.cache_total - 0.25)
    assert full.feasible and kv_pool_bytes(full) == math.ceil(full.cache_total)


def test_a_plan_that_does_not_fit_gets_no_pool_and_the_engine_sizes_one_from_its_share():
    """Llama-3.1-70B TP4 on 4 H100 at 4096 requests of 5,120 tokens: its caches exceed the limit, so no pool holds
    it; the launch prints the share alone (vLLM sizes a smaller pool and queues the rest), not a pool to OOM on."""
    cand, _ = _top("llama-3.1-70b", "h100_sxm", 4, "vllm")
    crowded = replace(cand.planned.estimate.memory, activation_bytes=100e9)
    assert not crowded.feasible and kv_pool_bytes(crowded) == 0
    from solver.launch.emit import LaunchInputs, emit_launch

    launch = emit_launch(load_framework("vllm"), load_model("llama-3.1-70b"), load_hardware("h100_sxm"),
                         cand.planned.config, LaunchInputs(batch=4096, max_model_len=5120))
    argv = launch["nodes"][0]["argv"]
    assert FLAG not in argv and "--gpu-memory-utilization" in argv


def test_check_command_reads_a_pool_other_than_the_launchs_as_a_setting_not_a_knob():
    cmd = (f"vllm serve {LLAMA} --tensor-parallel-size 4 --max-num-seqs 107 --max-num-batched-tokens 8192 "
           f"--max-model-len 5120 --gpu-memory-utilization 0.95 {FLAG} 40000000000")
    r, out = run_json("check", "--command", cmd, "--hardware", "h100_sxm", "--isl", "4096", "--osl", "1024")
    assert out is not None, r.output
    assert out["parallel_config"]["attn_tp_size"] == 4
    notes = [n for n in out["command"]["notes"] if n.startswith(FLAG)]
    assert len(notes) == 1 and notes[0].startswith(f"{FLAG}: 40000000000, the launch's ")


def test_solves_launch_with_the_pool_reads_back_with_no_setting_said_to_differ():
    """The top candidate's command of a 4K/1K throughput solve, given to `check --command` at the planned
    concurrency, prints the same pool: no note says --kv-cache-memory-bytes or the share differ."""
    cand, argv = _top("llama-3.1-70b", "h100_sxm", 4, "vllm")
    cmd = " ".join(LLAMA if a == "${MODEL_PATH}" else a for a in argv)
    r, out = run_json("check", "--command", cmd, "--model", LLAMA, "--hardware", "h100_sxm", "--isl", "4096",
                      "--osl", "1024", "--concurrency", str(cand.planned.batch))
    assert out is not None, r.output
    assert not [n for n in out["command"]["notes"] if n.startswith((FLAG, "--gpu-memory-utilization"))]


def test_a_kv_format_the_device_lacks_leaves_the_pool_to_the_engine_and_says_the_format():
    """DeepSeek-V3 TP8 + EP on 8 Atlas A3 with an fp8 KV cache the device does not run: no plan's memory to size a
    pool from, so vllm-ascend's command gives its share alone, and the note names the format it cannot spell."""
    from solver.launch.emit import LaunchInputs, emit_launch
    from solver.specs.parallel import ParallelConfig

    pc = ParallelConfig(world_size=8, attn_tp_size=8, dense_tp_size=8, embed_tp_size=8, lmhead_tp_size=8,
                        moe_tp_size=1)
    launch = emit_launch(load_framework("vllm-ascend"), load_model("deepseek-v3"), load_hardware("atlas_a3"), pc,
                         LaunchInputs(batch=32, max_model_len=4352, kv_dtype="fp8"))
    argv = launch["nodes"][0]["argv"]
    assert FLAG not in argv and "--gpu-memory-utilization" in argv
    assert any(n.startswith("kv_dtype fp8: vllm-ascend's --kv-cache-dtype takes") for n in launch["notes"])
