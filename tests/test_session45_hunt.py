"""Rules the session's new behaviour broke when tried as a user would, each checked on hand arithmetic or on a
relation the physics fixes (more cards under the same SLA never carry less)."""
from __future__ import annotations

import json
import pickle
from pathlib import Path
from types import SimpleNamespace

import pytest

from solver import api
from solver.plan.disagg import _Pair, burst_ttft

ROOT = Path(__file__).resolve().parent.parent
QWEN3_8B = ROOT / "models" / "Qwen--Qwen3-8B.json"
QWEN3_DEFAULT_NOTE = ("num_hidden_layers absent from config.json: read at Qwen3Config's default 32 "
                      "(transformers 5.25.0 configuration_qwen3.py)")


@pytest.fixture(scope="module")
def qwen3_without_layers(tmp_path_factory) -> Path:
    cfg = json.loads(QWEN3_8B.read_text())
    del cfg["num_hidden_layers"]
    path = tmp_path_factory.mktemp("cfg") / "qwen3-no-layers.json"
    path.write_text(json.dumps(cfg))
    return path


def test_a_solution_pickles_with_its_notes_result_and_json(qwen3_without_layers) -> None:
    """api.solve's Solution crosses a process boundary (worker pools, caches): the candidates, .notes, .result and
    .as_dict() come back the same."""
    sol = api.solve(qwen3_without_layers, "h100_sxm", 8, isl=2048, osl=256)
    back = pickle.loads(pickle.dumps(sol))
    assert type(back) is type(sol) and list(back) == list(sol)
    assert back.notes == sol.notes == [QWEN3_DEFAULT_NOTE]
    assert back.result.front == sol.result.front
    assert back.as_dict() == sol.as_dict()


def test_check_says_a_field_read_at_its_class_default_once(qwen3_without_layers) -> None:
    """`check` of a config leaving num_hidden_layers out says it was read at Qwen3Config's 32, once, as solve,
    estimate and memory do (ModelSpec.warnings)."""
    r = api.check(qwen3_without_layers, "h100_sxm", 8, isl=2048, osl=128, concurrency=8, dense_tp_size=8)
    assert r.review.notes.count(QWEN3_DEFAULT_NOTE) == 1
    assert json.dumps(r.as_dict()).count("num_hidden_layers absent") == 1


def test_a_pairs_burst_ttft_weighs_the_first_wave_by_the_burst_share() -> None:
    """x = 2 prefill workers of 40 prompts/s at a 0.1 s step: 2 x 40 x 0.1 = 8 prompts a step; 64 clients in a
    burst wait mean(ceil(i / 8), i = 1..64) = 8 x (1 + ... + 8) / 64 = 4.5 steps = 0.45 s; with phi = 0.2 and a
    steady TTFT of 0.3 s: 0.2 x 0.45 + 0.8 x 0.3 = 0.33 s."""
    pair = _Pair(0.0, 0.0, SimpleNamespace(estimate=SimpleNamespace(ttft_s=0.1)), None, 2, 1, 0.0, 40.0, 64, 0.3)
    assert burst_ttft(pair, 0.2) == pytest.approx(0.33)


@pytest.mark.slow  # two GB200 disaggregated plans under SLAs (3.4 s)
def test_more_cards_under_the_same_ttft_sla_never_carry_less() -> None:
    """DeepSeek-V3 on GB200 under SGLang, 4K/1K, TTFT 2 s and TPOT 50 ms: 64 cards hold four copies of the 16-card
    plan (1P1D of 8 + 8 ranks), so they carry at least its output tokens/s. The densest pairs' first-wave burst is
    past 2 s; the plan was the lowest-TTFT pairs (1 sequence a replica: 1,099 tok/s on 64 vs 9,969 on 16)."""
    sc = api.Scenario(kind="throughput", isl=4096, osl=1024, ttft_ms=2000, tpot_ms=50)
    from solver.entry import run_disagg

    small = run_disagg("deepseek-v3", "gb200", 16, sc, "sglang", compare_aggregated=False).plan
    large = run_disagg("deepseek-v3", "gb200", 64, sc, "sglang", compare_aggregated=False).plan
    assert large.estimate.ttft_s <= 2.0
    assert large.estimate.output_tokens_per_s >= small.estimate.output_tokens_per_s


def test_memory_json_carries_what_the_inputs_noted(qwen3_without_layers) -> None:
    """`memory --format json` (MemoryResult.as_dict) says the config's class default as `estimate --format json`
    does, once, beside the report's own notes."""
    r = api.memory(qwen3_without_layers, "h100_sxm", 8, 8, 4096, dense_tp_size=8)
    assert r.as_dict()["notes"].count(QWEN3_DEFAULT_NOTE) == 1


def test_fp8_weights_beside_fp4_experts_run_weight_only_at_the_devices_bf16_rate() -> None:
    """DeepSeek-V4-Pro on A100 (bf16 312, int8 624 TFLOP/s; no FP8, no FP4): the MXFP4 experts and the FP8
    attention and dense weights are all weight-only, dequantized into 16-bit GEMMs (Marlin W4A16 / W8A16; no
    engine's FP4 or FP8 kernel takes INT8 activations): 312 TFLOP/s, not a KeyError for an FP8 rate A100 lacks,
    and not the INT8 rate, which priced these GEMMs above A100's BF16 peak (stop 48)."""
    from solver.specs.hardware_catalog import load_hardware
    from solver.specs.model_catalog import load_model
    from solver.specs.precision import resolve_precision

    hw = load_hardware("a100_sxm")
    prec = resolve_precision(load_model("deepseek-v4-pro"), hw, None, None, None)
    assert prec.activation == "bf16"
    assert prec.gemm_dtype("attention") == prec.gemm_dtype("dense") == prec.gemm_dtype("experts") == "bf16"
    assert all(prec.weight_only(g) for g in ("attention", "dense", "experts"))
    assert hw.flops(prec.gemm_dtype("attention")) == pytest.approx(312e12)


@pytest.mark.parametrize("moe_dtype", [None, "nvfp4", "mxfp4"])
def test_every_gemm_runs_at_a_rate_the_device_has(moe_dtype) -> None:
    """Every catalog model on every catalog device, with its checkpoint's formats or 4-bit experts: each GEMM
    group's dtype (Precision.gemm_dtype) is one of the device's peak rates."""
    from solver.errors import InputError
    from solver.specs.hardware_catalog import list_hardware, load_hardware
    from solver.specs.model_catalog import load_model
    from solver.specs.precision import resolve_precision

    for path in sorted((ROOT / "models").glob("*.json")):
        model = load_model(str(path))
        for name in list_hardware():
            hw = load_hardware(name)
            try:
                prec = resolve_precision(model, hw, None, moe_dtype, None)
            except InputError:
                continue  # a format no engine on the device loads: refused, not priced
            for group in ("attention", "dense", "experts"):
                assert prec.gemm_dtype(group) in hw.peak_flops, (path.stem, name, group)
