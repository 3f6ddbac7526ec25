"""Long contexts and the context-parallel family tried as a user would (round 39e): one test per rule."""
from __future__ import annotations

import pytest

from solver.rank.select import pattern_name
from solver.specs.model_catalog import load_model
from solver.specs.parallel import ParallelConfig


def _pc(**knobs: int) -> ParallelConfig:
    return ParallelConfig(world_size=8, embed_tp_size=8, lmhead_tp_size=8, **knobs)


def test_a_pattern_name_counts_shared_experts_as_the_dense_tp_module() -> None:
    """Qwen3-Next has shared experts and no dense layer: dense_tp_size runs the shared experts, so attention TP8 +
    MoE EP with shared experts TP8 and with them replicated were both named "Attn TP8 + MoE EP" (two rows alike in
    one solve table, 8 x B200, SGLang, ISL 262,000); the TP8 one is "+ Dense TP8" as on a model with dense layers."""
    model = load_model("qwen3-next-80b-a3b")
    split, replicated = _pc(attn_tp_size=8, dense_tp_size=8), _pc(attn_tp_size=8)
    assert pattern_name(split, model) == "Attn TP8 + Dense TP8 + MoE EP"
    assert pattern_name(replicated, model) == "Attn TP8 + MoE EP"


def test_a_model_whose_shared_experts_are_replicated_is_not_pure_tp() -> None:
    """Every module TP8 but the shared experts (dense_tp_size 1: replicated on each rank) is not "Pure TP8"."""
    model = load_model("qwen3-next-80b-a3b")
    assert pattern_name(_pc(attn_tp_size=8, moe_tp_size=8), model) == "Attn TP8 + MoE TP8"
    assert pattern_name(_pc(attn_tp_size=8, moe_tp_size=8, dense_tp_size=8), model) == "Pure TP8"


@pytest.mark.parametrize("engine", ["atom", "vllm", "vllm-ascend"])
def test_decode_context_parallel_on_compressed_attention_draws_no_kv_head_advice(engine: str) -> None:
    """DeepSeek-V4's compressed attention has one KV head (config num_key_value_heads 1) replicated on every TP
    rank, so -dcp 8 inside TP 8 splits its cache 8 ways (the estimate's KV falls, 8 x MI355X, ISL 524,288: 120.87
    -> 114.55 GB a rank under ATOM). The advice dcp <= tp / num_kv_heads read the model's 128 query heads as KV
    heads (128 x 8 > 8) and warned that DCP "saves no KV per rank"."""
    from solver.one_config import knob_rules
    from solver.specs.framework import load_framework
    from solver.specs.hardware_catalog import load_hardware

    pc = ParallelConfig(world_size=8, kvp_size=8, dense_tp_size=8, embed_tp_size=8, lmhead_tp_size=8)
    hw = load_hardware("atlas_a3" if engine == "vllm-ascend" else "mi355x")
    notes = knob_rules(load_framework(engine), load_model("deepseek-v4-pro"), hw, pc, batch=2, mtp=0)
    assert not [n for n in notes if "C.dcp_gqa_" in n]


def test_decode_context_parallel_past_the_kv_head_replicas_is_refused_by_vllm() -> None:
    """Llama-3.1-70B has 8 KV heads: -tp 8 -dcp 8 (attn_tp_size 1 x kvp_size 8) holds one KV head per rank and
    splits no more KV than TP alone; 8 x 8 > 8 breaks dcp <= tp // num_kv_heads = 1, which vLLM 0.34.0 refuses
    (config/model.py), so the knobs are bad input for vllm (tests/test_long_context.py holds the rule)."""
    from solver.errors import InputError
    from solver.one_config import knob_rules
    from solver.specs.framework import load_framework
    from solver.specs.hardware_catalog import load_hardware

    pc = ParallelConfig(world_size=8, kvp_size=8, dense_tp_size=8, embed_tp_size=8, lmhead_tp_size=8)
    with pytest.raises(InputError, match="C.dcp_gqa_within_kv_replicas"):
        knob_rules(load_framework("vllm"), load_model("llama-3.1-70b"), load_hardware("h200_sxm"), pc,
                   batch=2, mtp=0)


def test_a_framework_refusal_names_the_flags_the_user_set_not_the_ones_its_message_suggests() -> None:
    """vLLM refuses prefill CP on a GQA model and suggests kvp_size in its message: the refusal is about --cp,
    which the user gave, not --kvp, which the message names as the alternative."""
    from click.testing import CliRunner

    from solver.cli.main import main

    r = CliRunner().invoke(main, ["memory", "qwen3-235b-a22b", "--hardware", "h200_sxm", "--cards", "8", "--cp", "2",
                                  "--framework", "vllm", "--batch", "1", "--seq-len", "1000"])
    assert r.exit_code == 2 and r.stderr.startswith("error: --cp: not runnable under framework vllm: [C.pcp_mla_only]")
