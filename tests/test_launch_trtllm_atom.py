"""TensorRT-LLM and ATOM commands read as the team pasting them: every value the plan decided is in the command,
and a key the facts (engines.md) do not spell is said to be unverified beside it."""
from __future__ import annotations

import json

import yaml
from click.testing import CliRunner

from solver.cli.main import main
from solver.estimate.memory import MemoryReport
from solver.launch.memory_share import free_fraction

GB = 1e9


def _launch(*args: str) -> dict:
    r = CliRunner().invoke(main, [*args, "--format", "json"])
    assert r.exit_code == 0, r.stderr
    return json.loads(r.stdout)["candidates"][0]["launch"]


def _report(weights: float, kv: float, act: float, capacity: float = 100 * GB, reserve: float = 5 * GB) -> MemoryReport:
    return MemoryReport(weights_bytes={"all": weights}, kv_cache_bytes=kv, indexer_cache_bytes=0.0,
                        activation_bytes=act, comm_buffer_bytes=0.0, reserved_bytes=reserve,
                        capacity_bytes=capacity, total_fraction=0.95, weights_kv_fraction=0.8, sequences_per_rank=1)


def test_the_free_memory_share_is_the_limit_less_weights_and_activations_over_the_free_memory() -> None:
    """Capacity 100 GB, reserve 5 GB: limit min(95, 95) = 95 GB. Weights 40 GB, activations 5 GB, KV 30 GB.
    Free once loaded: 100 - 5 - 40 - 5 = 50 GB; the caches may take 95 - 45 = 50 GB of it: share 1.0.
    With reserve 2 GB: limit min(95, 98) = 95, free 100 - 2 - 45 = 53 GB, share 50 / 53 = 0.94339 -> 0.9433
    (down at 1e-4); weights + activations + reserve + 0.9433 x 53 = 47 + 49.995 = 96.995 GB <= 100."""
    assert free_fraction(_report(40 * GB, 30 * GB, 5 * GB)) == 1.0
    assert free_fraction(_report(40 * GB, 30 * GB, 5 * GB, reserve=2 * GB)) == 0.9433


def test_the_free_memory_share_never_falls_below_the_caches_the_plan_holds() -> None:
    """A plan filled to the limit: weights 40, activations 5, KV 49.99995 GB, reserve 2 GB: limit 95 GB,
    free 53 GB. Down at 1e-4 the limit's share is 0.9433 (49.995 GB < KV); the KV's own share rounds up:
    49.99995 / 53 = 0.943395 -> 0.9434."""
    assert free_fraction(_report(40 * GB, 49.99995 * GB, 5 * GB, reserve=2 * GB)) == 0.9434


def test_trtllm_sets_the_kv_pool_share_and_graphs_up_to_the_per_rank_batch() -> None:
    """DeepSeek-R1 on 8 B200, concurrency 128 under attention DP 8: 128 / 8 = 16 requests per rank, so
    --max_batch_size 16 and cuda_graph_config {enable_padding: true, max_batch_size: 16}; the KV pool's share
    of the free memory is in kv_cache_config (a number in (0, 1])."""
    out = _launch("solve", "deepseek-r1", "--hardware", "b200_sxm", "--cards", "8", "--framework", "trtllm",
                  "--isl", "8192", "--osl", "1024", "--concurrency", "128", "--top", "1")
    argv = out["nodes"][0]["argv"]
    per_rank = int(argv[argv.index("--max_batch_size") + 1])
    extra = yaml.safe_load(out["files"]["extra_llm_api_options.yaml"])
    assert extra["enable_attention_dp"] is True and per_rank == 128 // 8
    assert extra["cuda_graph_config"] == {"enable_padding": True, "max_batch_size": per_rank}
    assert 0 < extra["kv_cache_config"]["free_gpu_memory_fraction"] <= 1


def test_trtllm_keys_without_a_source_are_said_to_be_unverified() -> None:
    """engines.md spells neither enable_chunked_prefill, trust_remote_code nor cuda_graph_config: each key the
    command writes is named in a note saying so. ISL 8192 + OSL 1024 = 9216 > 8192 tokens per step, so chunked
    prefill is on; DeepSeek-R1's config has auto_map, so trust_remote_code is on."""
    out = _launch("solve", "deepseek-r1", "--hardware", "b200_sxm", "--cards", "8", "--framework", "trtllm",
                  "--isl", "8192", "--osl", "1024", "--top", "1")
    notes = "\n".join(out["notes"])
    for key in ("enable_chunked_prefill", "trust_remote_code", "cuda_graph_config.enable_padding",
                "cuda_graph_config.max_batch_size", "kv_cache_config.free_gpu_memory_fraction"):
        assert key in notes
    extra = yaml.safe_load(out["files"]["extra_llm_api_options.yaml"])
    assert extra["enable_chunked_prefill"] is True and extra["trust_remote_code"] is True
