"""Stop 49's items left open, closed: the int8 KV cache's scales, a max-model-len below the workload in `check`, and
a disaggregated memory remedy that names a change."""
from __future__ import annotations

import pytest

from solver.estimate.compute import Work, factors_for, layer_ops
from solver.estimate.memory import memory_per_rank
from solver.estimate.request_state import kv_bytes_per_token_layer
from solver.specs.framework import load_framework
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import load_model
from solver.specs.parallel import ParallelConfig
from solver.specs.precision import resolve_precision

# Llama-3.1-70B: 80 layers, 8 KV heads of head_dim 128 (K and V each)
LAYERS, KV_HEADS, HEAD_DIM = 80, 8, 128
TP8 = ParallelConfig(world_size=8, attn_tp_size=8, o_proj_tp_size=8, dense_tp_size=8, moe_tp_size=8,
                     embed_tp_size=8, lmhead_tp_size=8)


def _llama70b(kv_dtype: str):
    m, h = load_model("llama-3.1-70b"), load_hardware("h100_sxm")
    return m, h, resolve_precision(m, h, kv_dtype=kv_dtype)


def test_int8_kv_cache_stores_one_fp32_scale_for_k_and_one_for_v_per_token_and_kv_head() -> None:
    """vLLM's int8_per_token_head: (128 + 128) x 1 B + 2 x 4 B per KV head and token (triton_attn.py:309-319); fp8
    is per-tensor scaled and stays 1 B an element."""
    m, _, int8 = _llama70b("int8")
    _, _, fp8 = _llama70b("fp8")
    assert kv_bytes_per_token_layer(m, int8.kv_format, 1) == KV_HEADS * (2 * HEAD_DIM + 8) == 2112
    assert kv_bytes_per_token_layer(m, fp8.kv_format, 1) == KV_HEADS * 2 * HEAD_DIM == 2048
    assert kv_bytes_per_token_layer(m, int8.kv_format, 8) == 2 * HEAD_DIM + 8 == 264


def test_int8_kv_cache_memory_counts_the_scales() -> None:
    """64 sequences x 5,120 tokens x 80 layers x 264 B on each of 8 TP ranks (one KV head a rank)."""
    m, h, int8 = _llama70b("int8")
    mem = memory_per_rank(m, h, TP8, int8, 64, 5120)
    assert mem.kv_cache_bytes == pytest.approx(64 * 5120 * LAYERS * 264) == 6_920_601_600


def test_a_decode_step_reads_the_int8_caches_scales() -> None:
    """16 sequences at 4,096 tokens of context read 16 x 4,096 x 8 heads x 8 B of scales more than fp8 a layer."""
    f = factors_for(load_hardware("h100_sxm"), load_framework("vllm").efficiency_for(load_hardware("h100_sxm")))
    w = Work("decode", new_tokens=16, context=4096, sequences=16, logits_tokens=16)
    pc = ParallelConfig(world_size=1)
    core = {}
    for dtype in ("int8", "fp8"):
        m, h, prec = _llama70b(dtype)
        core[dtype] = next(o for o in layer_ops(m, h, pc, prec, f, w, ffn=False)["attention"]
                           if o.name == "attention_core").bytes
    assert core["int8"] - core["fp8"] == pytest.approx(16 * 4096 * KV_HEADS * 8) == 4_194_304


QWEN_SG = "python -m sglang.launch_server --model-path Qwen/Qwen3-8B --tp 1 --context-length 4096"
QWEN_VLLM = "vllm serve Qwen/Qwen3-8B -tp 1 --max-model-len"


def _check(command: str):
    from tests.deployment_files import run_json

    r, out = run_json("check", "--command", command, "--hardware", "h100_sxm", "--isl", "4000", "--osl", "1000",
                      "--concurrency", "8")
    assert out is not None, r.output
    return r.exit_code, " ".join(out["violations"]["C"]), " ".join(out["command"].get("notes", []))


def test_a_model_length_below_isl_plus_osl_is_a_violation_where_the_engine_refuses_such_requests() -> None:
    """SGLang refuses input + max_new_tokens past --context-length (tokenizer_manager.py:1352-1377): 4,000 + 1,000
    past 4,096 serves none of the workload, so check exits 1 naming the flag, its value, ISL + OSL and the fix."""
    code, violations, _ = _check(QWEN_SG)
    assert code == 1
    assert "--context-length 4,096 is below ISL + OSL = 5,000: sglang refuses every such request" in violations
    assert "set --context-length 5,000" in violations


def test_a_model_length_below_isl_plus_osl_is_a_note_where_the_engine_cuts_the_output() -> None:
    """vLLM cuts max_tokens to max_model_len - prompt (api_utils.py:234-270), as SGLang does under
    --allow-auto-truncate: valid, with a note of the 96 tokens left."""
    for command, engine in ((f"{QWEN_VLLM} 4096", "vllm"), (f"{QWEN_SG} --allow-auto-truncate",
                                                            "sglang under --allow-auto-truncate")):
        code, violations, notes = _check(command)
        assert (code, violations) == (0, "")
        assert f"{engine} cuts each output to 96 tokens, not the OSL of 1,000" in notes


def test_a_model_length_at_or_below_the_prompt_is_a_violation_whatever_the_engine() -> None:
    """A prompt of 4,000 under --max-model-len 3,000 leaves no room for an output token."""
    code, violations, _ = _check(f"{QWEN_VLLM} 3000")
    assert code == 1
    assert "--max-model-len 3,000 holds no output token after a prompt of ISL = 4,000 tokens" in violations
    assert "set --max-model-len 5,000" in violations


@pytest.mark.slow
def test_a_disaggregated_memory_error_says_what_the_planner_tried_as_the_constraint_not_as_what_would_fit() -> None:
    """Mixtral-8x22B on 4 L40S at ISL 500,000 under trtllm (the remedies run's seed 13 case): no prefill worker at
    the sizes the screen passes, none across nodes either, so the sizes tried are the binding constraint in the
    message, and no "what would fit" offers nothing to change."""
    from click.testing import CliRunner

    from solver.cli.main import main

    r = CliRunner(env={"COLUMNS": "400"}).invoke(main, [
        "solve", "mixtral-8x22b", "--hardware", "l40s", "--isl", "500000", "--osl", "256", "--framework", "trtllm",
        "--cards", "4", "--serving", "disagg", "--ttft-ms", "30", "--tpot-ms", "12", "--time-limit", "3"])
    assert r.exit_code == 1
    text = " ".join(r.output.split())
    assert "); the planner found no prefill worker at 16, 24, 32 ranks (the sizes a memory screen passes)" in text
    assert "what would fit" not in text
