"""The smallest deployments: one to four cards of a PCIe or older device, a 4-bit checkpoint, low traffic."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from solver.cli.main import main
from solver.estimate.compute import CommCost, OpCost
from solver.estimate.step import StepCost
from solver.rank.explain import _shares
from solver.specs.hardware_catalog import load_hardware

MODELS = Path(__file__).resolve().parents[1] / "models"


def _json(*args: str) -> dict:
    r = CliRunner().invoke(main, [*args, "--format", "json"])
    assert r.exit_code == 0, r.stderr
    return json.loads(r.stdout)


def _awq_70b(tmp_path: Path) -> str:
    """Llama-3.1-70B as an AWQ checkpoint (4-bit, group 128, zero points): the config the user downloads."""
    cfg = json.loads((MODELS / "meta-llama--Meta-Llama-3.1-70B.json").read_text())
    cfg["quantization_config"] = {"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True,
                                  "version": "gemm"}
    cfg["torch_dtype"] = "float16"
    path = tmp_path / "llama70b-awq.json"
    path.write_text(json.dumps(cfg))
    return str(path)


def test_a_bf16_70b_model_does_not_fit_one_80gb_card() -> None:
    """Llama-3.1-70B in bf16: 70.55e9 parameters x 2 bytes = 141.1 GB of weights, above the one A100's limit
    min(0.95 x 85.9, 85.9 - 3.76) = 81.6 GB before any KV cache."""
    d = _json("memory", "llama-3.3-70b", "--hardware", "a100_sxm", "--cards", "1", "--batch", "1",
              "--seq-len", "8192")
    assert d["params_per_card_gb"] == pytest.approx(141.1, abs=0.1)
    assert d["limit_gb"] == pytest.approx(81.6, abs=0.01)
    assert not d["feasible"] and d["max_batch"] == 0


@pytest.mark.parametrize("seq_len, fits", [(11300, True), (11400, False)])
def test_an_int4_70b_model_on_one_48gb_card_holds_about_11k_tokens_of_context(seq_len: int, fits: bool) -> None:
    """Llama-3.1-70B, int4 weights (embedding and LM head stay bf16) on one L40S: 39.50 GB of weights, 1.34 GB
    of activations, the limit 48.306 - 3.758 = 44.548 GB. KV per token: 80 layers x 8 KV heads x 128 x (K, V)
    x 2 bytes = 327,680 B, so one sequence holds (44.548 - 39.500 - 1.342) GB / 327,680 B = 11,307 tokens."""
    d = _json("memory", "llama-3.3-70b", "--hardware", "l40s", "--cards", "1", "--batch", "1",
              "--seq-len", str(seq_len), "--weight-dtype", "int4")
    assert d["params_per_card_gb"] == pytest.approx(39.50, abs=0.01)
    assert d["kv_cache_per_card_gb"] == pytest.approx(seq_len * 327_680 / 1e9, rel=1e-6)
    assert d["feasible"] is fits


def test_the_engines_memory_share_holds_a_one_card_plan_filled_to_its_limit(tmp_path: Path) -> None:
    """The AWQ 70B on one L40S under vLLM plans 4 requests in 44.47 GB of the 44.548 GB limit. The command's
    --gpu-memory-utilization must give vLLM at least that: 0.9222 x 48.306 = 44.547 GB does; a share rounded
    down to 0.92 (44.44 GB) would hold 0.03 GB less than the plan and the engine would cut its KV pool."""
    d = _json("solve", _awq_70b(tmp_path), "--hardware", "l40s", "--cards", "1", "--framework", "vllm",
              "--isl", "2048", "--osl", "512", "--top", "1")
    cand = d["candidates"][0]
    argv = cand["launch"]["nodes"][0]["argv"]
    share = float(argv[argv.index("--gpu-memory-utilization") + 1])
    capacity = load_hardware("l40s").memory_bytes / 1e9
    assert share == 0.9222
    assert share * capacity >= cand["estimation"]["memory_per_rank_gb"]
    assert "--quantization" not in argv  # vLLM reads AWQ from the checkpoint's quantization_config


def _op(module: str, memory_s: float) -> OpCost:
    return OpCost(name=module, module=module, flops=0.0, bytes=0.0, compute_s=0.0, memory_s=memory_s,
                  overhead_s=0.0)


def _all_reduce(module: str, s: float) -> CommCost:
    return CommCost(name=f"{module}_allreduce", module=module, primitive="all_reduce", group=2, bytes=0.0,
                    time_s=s, exposed_s=s, tier="intra_node")


def test_why_not_counts_tps_all_reduces_over_one_link_as_one_share() -> None:
    """A TP2 decode step on two L40S: 8 ms of memory-bound FFN, and an all-reduce of 1 ms after o_proj and 1 ms
    after the dense FFN over the same PCIe link. The link costs 2 ms, one share: the all-reduce over
    intra_node (32 GB/s, the L40S file's PCIe Gen4 x16 line rate) is 2 / 10 = 20% of the step, not two 10%s."""
    step = StepCost(ops=[_op("dense_ffn", 8e-3)],
                    comms=[_all_reduce("o_proj", 1e-3), _all_reduce("dense_ffn", 1e-3)])
    seconds, names = _shares(step, load_hardware("l40s"))
    comm = [k for k in seconds if k not in ("dense_ffn (memory-bound)",)]
    assert len(comm) == 1
    assert seconds[comm[0]] / step.time_s == pytest.approx(0.20)
    assert names[comm[0]] == "all-reduce (o_proj, dense_ffn) over intra_node (32 GB/s)"


def test_tokens_per_s_per_rank_is_concurrency_times_osl_over_the_request_time_over_the_ranks() -> None:
    """Qwen3-32B on 4 L40S: each candidate's figure is concurrency x OSL / (TTFT + (OSL - 1) x TPOT) / ranks,
    e.g. 32 x 512 / (1.4455 + 511 x 0.05873) s / 4 = 130 tok/s per rank."""
    d = _json("solve", "qwen3-32b", "--hardware", "l40s", "--cards", "4", "--framework", "vllm", "--isl", "2048",
              "--osl", "512")
    for c in d["candidates"]:
        e = c["estimation"]
        request_s = e["ttft_ms"] / 1e3 + 511 * e["tpot_ms"] / 1e3
        assert e["output_tokens_per_s_per_rank"] == pytest.approx(e["concurrency"] * 512 / request_s / 4, rel=2e-3)


def test_low_traffic_is_answered_with_one_card_where_one_card_carries_it() -> None:
    """Qwen3-8B (16.4 GB of bf16 weights) at 200 output tokens/s, TPOT <= 50 ms on L40S: one card at 8 requests
    in flight runs 8 x 512 / (0.27 + 511 x 0.0287) s = 274 tok/s within the TPOT, so the answer is one copy of
    one card, not a larger deployment."""
    d = _json("recommend", "qwen3-8b", "--hardware", "l40s", "--target-output-tokens-per-s", "200", "--tpot-ms",
              "50", "--isl", "2048", "--osl", "512", "--framework", "vllm")
    opt = d["options"][0]
    assert opt["met"] and opt["total_cards"] == 1 and opt["copies"] == 1
    assert opt["tpot_ms"] <= 50 and opt["output_tokens_per_s"] >= 200
