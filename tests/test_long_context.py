"""Long-context serving (32K to 1M-token prompts) as a team would ask for it: one test per rule.

Decode context parallel (-dcp) is the long-context knob vLLM offers a GQA model; vLLM 0.34.0 config/model.py
(ModelConfig.verify_with_parallel_config) refuses two layouts the profile must not plan, check as valid, or launch."""
from __future__ import annotations

import pytest

from solver.errors import InputError
from solver.specs.framework import load_framework
from solver.specs.model_catalog import load_model
from solver.specs.parallel import ParallelConfig
from solver.specs.rule_env import model_env


def _errors(model: str, world: int, attn_tp: int, kvp: int) -> list[str]:
    """The vllm profile's error rules broken by a dense GQA model at TP = attn_tp x kvp (every rank one engine)."""
    pc = ParallelConfig(world_size=world, attn_tp_size=attn_tp, kvp_size=kvp, dense_tp_size=world,
                        embed_tp_size=world, lmhead_tp_size=world)
    env = model_env(pc.settings(), load_model(model), 8, world=world, batch=4)
    return [r.id for r in load_framework("vllm").violated(env, "error")]


def test_vllm_refuses_gqa_decode_context_parallel_beyond_the_kv_head_replicas() -> None:
    """Llama-3.1-70B has 8 KV heads. TP 8 = attn_tp 4 x DCP 2: 8 KV heads x 2 = 16 > 8 = TP, so no rank holds a
    replica for DCP to split (vLLM: dcp <= tp // num_kv_heads = 8 // 8 = 1; ValueError). TP 16 = attn_tp 8 x
    DCP 2: 8 x 2 = 16 <= 16, each head on two ranks, each holding half its tokens: admitted."""
    assert "C.dcp_gqa_within_kv_replicas" in _errors("llama-3.1-70b", 8, 4, 2)
    assert _errors("llama-3.1-70b", 16, 8, 2) == []


def test_vllm_refuses_gqa_decode_context_parallel_that_splits_a_query_group_unevenly() -> None:
    """Llama-4-Scout: 40 query heads over 8 KV heads = 5 per KV head. TP 16 = attn_tp 8 x DCP 2 stays within the
    replicas (8 x 2 = 16 <= 16) but 5 % 2 != 0 (vLLM: query heads per KV head divisible by the DCP size;
    ValueError; TP 16 also leaves 40 heads uneven, the model rule beside it). Llama-3.1-70B at the same layout
    has 64 / 8 = 8 per KV head, 8 % 2 == 0: admitted (above)."""
    assert "C.dcp_gqa_query_groups_divisible" in _errors("llama-4-scout", 16, 8, 2)
    assert "C.dcp_gqa_query_groups_divisible" not in _errors("llama-3.1-70b", 16, 8, 2)


def test_the_vllm_launch_prints_no_dcp_command_vllm_refuses() -> None:
    """`launch` on Llama-3.1-70B, 8 x H200, attn_tp 4 x kvp 2 printed `--tensor-parallel-size 8
    --decode-context-parallel-size 2` (ISL 131,072), which vLLM 0.34.0 refuses at start (8 KV heads, TP 8): the
    knobs are bad input for vllm, naming the rule."""
    from solver.one_config import knob_rules
    from solver.specs.hardware_catalog import load_hardware

    pc = ParallelConfig(world_size=8, attn_tp_size=4, kvp_size=2, dense_tp_size=8, embed_tp_size=8,
                        lmhead_tp_size=8)
    with pytest.raises(InputError, match="C.dcp_gqa_within_kv_replicas"):
        knob_rules(load_framework("vllm"), load_model("llama-3.1-70b"), load_hardware("h200_sxm"), pc,
                   batch=4, mtp=0)
