"""Issue 15, stop 49: the prefill and decode steps of the calibration rows whose held-out error is largest
(DeepSeek-R1, gpt-oss-120b, Qwen3-32B), counted by hand per layer type and compared with what the estimator
charges them (benchmarks/README.md, "Stop 49"; `benchmarks/step_ops.py ROW` prints the same ops).

Each case is built the way the accuracy harness reads a calibration row (solver.measured.case_from_row), so the
formats are the ones the rows run in (an NVFP4 DeepSeek row quantizes the routed experts only; an FP8 / FP4 row
keeps its KV cache in FP8). FLOPs and bytes are per rank, summed over the layer stack.
"""
from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from solver.estimate.compute import factors_for
from solver.estimate.serving import decode_step, prefill_step
from solver.measured import case_from_row

REL = 1e-9

# DeepSeek-R1 (models/deepseek-ai--DeepSeek-R1.json): 61 layers (3 dense, 58 MoE), hidden 7168, 128 heads, q_lora 1536,
# kv_lora 512, qk_nope 128 + qk_rope 64, v_head 128, 256 routed experts top-8 of width 2048, one shared expert of
# 2048, dense FFN 18432, vocabulary 129280
R1 = dict(layers=61, dense=3, moe=58, hidden=7168, heads=128, q_lora=1536, kv_lora=512, nope=128, rope=64, v=128,
          experts=256, topk=8, expert_inter=2048, dense_inter=18432, vocab=129280)
# gpt-oss-120b: 36 layers alternating full and 128-token sliding-window attention, 64 query heads and 8 KV heads
# of 64
OSS = dict(layers=36, full=18, window_layers=18, window=128, heads=64, kv_heads=8, head_dim=64, hidden=2880)
# Qwen3-32B: 64 layers, 64 query heads of 128 (8 KV heads)
QWEN32 = dict(layers=64, heads=64, head_dim=128)


def _row(model: str, system: str, precision: str, gemm: str, moe: str, tp: int, backend: str = "trtllm") -> dict:
    return {"id": "stop49", "backend": backend, "backend_version": "", "model": model, "system": system,
            "precision": precision, "gemm_quant_mode": gemm, "moe_quant_mode": moe, "isl": 8192, "osl": 1024,
            "concurrency": 4, "tp": tp, "pp": 1, "attention_dp": 1, "moe_tp": tp, "moe_ep": 1, "ttft_ms": 1.0,
            "tpot_ms": 1.0}


def _case(row: dict):
    c = case_from_row(row)
    return c, factors_for(c.hw)


def _sum(step, name: str, field: str) -> float:
    return sum(getattr(o, field) for o in step.ops if o.name == name)


@pytest.fixture(scope="module")
def r1_tp8():
    """DeepSeek-R1 NVFP4, TensorRT-LLM, 8 x B200, TP 8 (calibration row 159's deployment)."""
    return _case(_row("deepseek-ai/DeepSeek-R1", "b200_sxm", "fp4", "nvfp4", "nvfp4", 8))


@pytest.fixture(scope="module")
def r1_prefill_8k(r1_tp8):
    c, f = r1_tp8
    return prefill_step(c.model, c.hw, c.pc, c.prec, f, 8192, 1)


def test_mla_prefill_attention_is_the_non_absorbed_causal_form_over_the_ranks_heads(r1_prefill_8k) -> None:
    # each of the rank's 128 / 8 heads: Q K^T at 192 (nope + rope) and P V at 128 per (query, key) pair, the
    # 8192-token prompt's queries seeing 8193 / 2 keys on average
    pairs = 8192 * 8193 / 2
    hand = R1["layers"] * 2 * (R1["heads"] / 8) * (R1["nope"] + R1["rope"] + R1["v"]) * pairs
    assert _sum(r1_prefill_8k, "attention_core", "flops") == pytest.approx(hand, rel=REL)  # 20.96 TFLOP


def test_mla_down_projections_run_whole_on_every_rank_and_up_projections_split_over_tp(r1_prefill_8k) -> None:
    down = R1["hidden"] * R1["q_lora"] + R1["hidden"] * (R1["kv_lora"] + R1["rope"])  # q_a, kv_a (with the rope key)
    up = (R1["q_lora"] * R1["heads"] * (R1["nope"] + R1["rope"])
          + R1["kv_lora"] * R1["heads"] * (R1["nope"] + R1["v"])) / 8  # q_b, kv_b
    norms = R1["q_lora"] + R1["kv_lora"]  # the two latent norms, replicated, at 2 FLOPs per weight like the rest
    hand = 2 * 8192 * R1["layers"] * (down + up + norms)
    assert _sum(r1_prefill_8k, "qkv_proj", "flops") == pytest.approx(hand, rel=REL)  # 21.94 TFLOP


def test_each_ffn_costs_two_flops_per_weight_per_token_a_routed_token_topk_times(r1_prefill_8k) -> None:
    expert = 3 * R1["hidden"] * R1["expert_inter"]  # gate, up, down
    routed = R1["moe"] * 2 * 8192 * R1["topk"] * expert / 8  # MoE TP 8: each rank holds 1/8 of every expert
    shared = R1["moe"] * 2 * 8192 * expert / 8
    dense = R1["dense"] * 2 * 8192 * 3 * R1["hidden"] * R1["dense_inter"] / 8
    assert _sum(r1_prefill_8k, "routed_experts", "flops") == pytest.approx(routed, rel=REL)  # 41.85 TFLOP
    assert _sum(r1_prefill_8k, "shared_experts", "flops") == pytest.approx(shared, rel=REL)  # 5.23
    assert _sum(r1_prefill_8k, "dense_ffn", "flops") == pytest.approx(dense, rel=REL)  # 2.44


def test_a_prefill_computes_logits_for_each_prompts_last_token_only(r1_prefill_8k) -> None:
    assert _sum(r1_prefill_8k, "lm_head", "flops") == pytest.approx(2 * R1["hidden"] * R1["vocab"] / 8, rel=REL)


def test_an_nvfp4_moe_row_runs_its_experts_at_the_fp4_rate_and_the_rest_in_its_block_fp8(r1_tp8) -> None:
    prec = r1_tp8[0].prec
    assert (prec.fmt("experts").name, prec.gemm_dtype("experts")) == ("nvfp4", "fp4")
    assert (prec.fmt("attention").name, prec.gemm_dtype("attention")) == ("fp8_block", "fp8")
    assert (prec.fmt("dense").name, prec.fmt("lm_head").name) == ("fp8_block", "bf16")


def test_decode_reads_the_weights_of_the_distinct_experts_the_batch_touches(r1_tp8) -> None:
    c, f = r1_tp8
    step = decode_step(c.model, c.hw, c.pc, c.prec, f, 4, 1536)
    touched = R1["experts"] * (1 - (1 - R1["topk"] / R1["experts"]) ** 4)  # 30.53 of 256 at 4 tokens
    weights = touched * 3 * R1["hidden"] * R1["expert_inter"] / 8 * (0.5 + 1 / 16)  # NVFP4: 4 bits + a scale per 16
    pairs = 4 * R1["topk"]  # each pair reads its token and writes gate / up on the rank's 2048 / 8 columns
    acts = pairs * (R1["hidden"] + 2 * R1["expert_inter"] / 8) * 2
    assert _sum(step, "routed_experts", "bytes") == pytest.approx(R1["moe"] * (weights + acts), rel=REL)  # 5.51 GB


def test_mla_decode_reads_the_whole_latent_cache_on_every_tp_rank(r1_tp8) -> None:
    c, f = r1_tp8
    step = decode_step(c.model, c.hw, c.pc, c.prec, f, 4, 1536)
    latent = (R1["kv_lora"] + R1["rope"]) * 1  # FP8 KV: 576 bytes per token per layer, not split by the heads
    per_layer = 4 * 1536 * latent + 4 * R1["hidden"] * 2  # + the step's hidden states in
    assert _sum(step, "attention_core", "bytes") == pytest.approx(R1["layers"] * per_layer, rel=REL)


@pytest.fixture(scope="module")
def oss_tp1():
    """gpt-oss-120b, TensorRT-LLM, one B200 (calibration row 154's deployment)."""
    return _case(_row("openai/gpt-oss-120b", "b200_sxm", "fp4", "nvfp4", "nvfp4", 1))


def test_sliding_window_layers_attend_to_at_most_the_window_in_a_prefill(oss_tp1) -> None:
    c, f = oss_tp1
    step = prefill_step(c.model, c.hw, c.pc, c.prec, f, 8192, 1)
    full = 8192 * 8193 / 2  # (query, key) pairs of a causal 8192-token prompt
    windowed = 128 * 129 / 2 + (8192 - 128) * 128  # sum over positions of min(p, 128)
    per_pair = 2 * OSS["heads"] * 2 * OSS["head_dim"]  # Q K^T and P V per head
    hand = per_pair * (OSS["full"] * full + OSS["window_layers"] * windowed)
    assert _sum(step, "attention_core", "flops") == pytest.approx(hand, rel=REL)  # 10.20 TFLOP


def test_sliding_window_layers_read_only_the_window_of_the_cache_at_decode(oss_tp1) -> None:
    c, f = oss_tp1
    step = decode_step(c.model, c.hw, c.pc, c.prec, f, 32, 8704)
    per_token = 2 * OSS["kv_heads"] * OSS["head_dim"] * 1  # K and V of the 8 KV heads, FP8
    cache = 32 * per_token * (OSS["full"] * 8704 + OSS["window_layers"] * OSS["window"])
    hidden_in = OSS["layers"] * 32 * OSS["hidden"] * 2
    assert _sum(step, "attention_core", "bytes") == pytest.approx(cache + hidden_in, rel=REL)  # 5.22 GB


def test_gqa_prefill_attention_counts_every_query_head() -> None:
    """Qwen3-32B FP8, TensorRT-LLM, one H100 (calibration row 44's deployment): the 8 KV heads save cache, not
    FLOPs."""
    c, f = _case(_row("Qwen/Qwen3-32B", "h100_sxm", "fp8", "fp8", "fp8", 1))
    step = prefill_step(c.model, c.hw, c.pc, c.prec, f, 4096, 1)
    hand = QWEN32["layers"] * 2 * QWEN32["heads"] * 2 * QWEN32["head_dim"] * 4096 * 4097 / 2
    assert _sum(step, "attention_core", "flops") == pytest.approx(hand, rel=REL)  # 17.60 TFLOP


# ------------------------------------------------------------------------------------------ the audit's tools

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCH))
import accuracy  # noqa: E402
import accuracy_rows  # noqa: E402
import step_ops  # noqa: E402

needs_csv = pytest.mark.skipif(not accuracy_rows.DEFAULT_CSV.is_file(),
                               reason="calibration CSV (../shared/facts) not present")


def test_by_model_groups_split_each_model_by_engine_then_by_engine_and_device() -> None:
    rows = [SimpleNamespace(model="org/A", framework="vllm", hardware="h100"),
            SimpleNamespace(model="org/A", framework="vllm", hardware="h200"),
            SimpleNamespace(model="org/A", framework="sglang", hardware="h100"),
            SimpleNamespace(model="org/B", framework="vllm", hardware="h100")]
    groups = dict(accuracy.model_engine_groups(rows))
    assert groups["  A x vllm"] == [0, 1] and groups["  A x sglang"] == [2] and groups["  B x vllm"] == [3]
    assert groups["  A x vllm x h100"] == [0] and groups["  A x vllm x h200"] == [1]
    assert len(groups) == 3 + 4


@needs_csv
def test_step_ops_prints_a_rows_ops_with_the_estimators_prefill_flops(capsys) -> None:
    assert step_ops.main(["159"]) == 0  # DeepSeek-R1 NVFP4 TP8 8K/1K c4 on B200 (test_mla_* above)
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if "attention_core" in x)  # the prefill step's comes first
    assert "20.9620 TFLOP" in line
    assert "experts nvfp4 at the fp4 rate" in out


def test_step_ops_refuses_a_row_outside_the_csv_with_exit_2(tmp_path, capsys) -> None:
    csv = tmp_path / "rows.csv"
    csv.write_text("model,system,isl,osl,concurrency,tp,ttft_ms,tpot_ms\nQwen/Qwen3-32B,h100_sxm,1024,128,8,1,100,10\n")
    assert step_ops.main(["5", "--csv", str(csv)]) == 2
    assert "ROW: 5 is not a row" in capsys.readouterr().err
