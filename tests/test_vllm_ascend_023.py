"""vllm-ascend 0.23.0.post1 read against the vLLM it runs on, 0.23.0 (vllm-ascend docs/source/community/
versioning_policy.md:26): one test per rule the profile takes from vLLM's shared code.

Sources: the vLLM 0.23.0 wheel (PyPI) and the vllm-ascend 0.23.0.post1 sdist (PyPI), read, not installed.
"""
from __future__ import annotations

import pytest

from solver.errors import InputError
from solver.estimate.closed_loop import ServingPolicy
from solver.estimate.compute import factors_for
from solver.specs.framework import load_framework
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import load_model
from solver.specs.parallel import ParallelConfig
from solver.specs.rule_env import model_env

VA = load_framework("vllm-ascend")
A3 = load_hardware("atlas_a3")


def _errors(model: str, world: int, attn_tp: int, kvp: int) -> list[str]:
    """vllm-ascend's error rules broken by a model at TP = attn_tp x kvp (every rank one engine)."""
    pc = ParallelConfig(world_size=world, attn_tp_size=attn_tp, kvp_size=kvp, dense_tp_size=world,
                        embed_tp_size=world, lmhead_tp_size=world)
    env = model_env(pc.settings(), load_model(model), 16, world=world, batch=4)
    return [r.id for r in VA.violated(env, "error")]


def test_every_ascend_device_takes_the_2048_token_budget_whatever_its_hbm() -> None:
    """vLLM 0.23.0 engine/arg_utils.py:2305-2335 picks 8192 tokens where current_platform.get_device_total_memory()
    >= 70 GiB, and reads 0 (2048 tokens) where the call raises; vllm-ascend's NPU platform raises
    NotImplementedError there (platform.py:274-281). So a 128 GiB Ascend device gets 2048 as a 64 GiB one does."""
    assert VA.scheduler.token_budget_for("ascend 128 GiB", 128 * 2**30) == 2048
    assert VA.scheduler.token_budget_for("atlas_a3", A3.memory_bytes) == 2048
    assert VA.efficiency_for(A3)["token_budget"] == 2048


def test_a_token_streams_as_its_step_ends_under_default_async_scheduling() -> None:
    """vLLM 0.23.0 config/vllm.py:957-997 turns async_scheduling (None by default) on unless the model pools, the
    draft method is not an Eagle type (MTP is one: config/speculative.py:56-58) or the executor lacks it (uniproc
    and multiproc support it); vllm-ascend's runner runs it (worker/model_runner_v1.py use_async_scheduling).
    Step i + 1 is launched before step i's output is processed, which streams as step i ends: no whole iteration
    before the first token (first_token_iterations 0, as vLLM's profile, whose calibration rows measure it)."""
    policy = ServingPolicy.of(factors_for(A3, VA.efficiency_for(A3)))
    h100 = load_hardware("h100_sxm")  # vLLM's profile on a device it runs on (on Ascend vLLM is vllm-ascend)
    vllm = ServingPolicy.of(factors_for(h100, load_framework("vllm").efficiency_for(h100)))
    assert policy.first_token_iterations == vllm.first_token_iterations == 0.0 and policy.decode_first


def test_gqa_decode_context_parallel_beyond_the_kv_head_replicas_is_refused() -> None:
    """vLLM 0.23.0 config/model.py:1209-1224 asserts tp > num_kv_heads and dcp <= tp // num_kv_heads on a model
    without MLA; vllm-ascend keeps it (patch_pp_mtp.py wraps it for PP drafters only). Llama-3.1-70B, 8 KV heads:
    TP 8 = attn_tp 4 x DCP 2: 8 // 8 = 1 < 2 (8 x 2 = 16 > 8): refused. TP 16 = 8 x 2: 16 // 8 = 2: admitted."""
    assert "C.dcp_gqa_within_kv_replicas" in _errors("llama-3.1-70b", 8, 4, 2)
    assert _errors("llama-3.1-70b", 16, 8, 2) == []


def test_gqa_decode_context_parallel_that_splits_a_query_group_unevenly_is_refused() -> None:
    """vLLM 0.23.0 config/model.py:1226-1232 asserts (heads // kv_heads) % dcp == 0. Llama-4-Scout: 40 / 8 = 5
    query heads per KV head; DCP 2 at TP 16 (8 x 2 = 16 <= 16, within the replicas): 5 % 2 = 1, refused.
    Qwen3-235B-A22B (64 heads, 4 KV heads): TP 16 = attn_tp 4 x DCP 4: 4 x 4 = 16 <= 16 and 16 % 4 = 0, admitted
    (docs/examples/engines/vllm-ascend-gqa-dcp.yaml)."""
    assert "C.dcp_gqa_query_groups_divisible" in _errors("llama-4-scout", 16, 8, 2)
    assert _errors("qwen3-235b-a22b", 16, 4, 4) == []


def test_a_dcp_launch_vllm_refuses_at_start_is_bad_input() -> None:
    """`launch` on Llama-3.1-70B, 8 Atlas A3 dies, attn_tp 4 x kvp 2 would print `--tensor-parallel-size 8
    --decode-context-parallel-size 2`, which vLLM 0.23.0 asserts against at start (8 KV heads, TP 8)."""
    from solver.one_config import knob_rules

    pc = ParallelConfig(world_size=8, attn_tp_size=4, kvp_size=2, dense_tp_size=8, embed_tp_size=8,
                        lmhead_tp_size=8)
    with pytest.raises(InputError, match="C.dcp_gqa_within_kv_replicas"):
        knob_rules(VA, load_model("llama-3.1-70b"), A3, pc, batch=4, mtp=0)
