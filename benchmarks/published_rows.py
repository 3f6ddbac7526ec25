"""The published figures of facts/measurements.md the estimator can express, predicted (never fitted on):
the last block of `python benchmarks/accuracy.py`.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from solver.errors import InputError  # noqa: E402
from solver.estimate.serving import Estimate, Workload, estimate, kv_capacity_per_replica  # noqa: E402
from solver.measured import Case, case_from_row, factors  # noqa: E402
from solver.specs.parallel import ParallelConfig  # noqa: E402

# ---------------------------------------------------------------------------------------------- published rows


@dataclass(frozen=True)
class Published:
    """A row of facts/measurements.md the estimator can express, and what it published."""

    source_row: int
    label: str
    row: dict[str, Any]  # CSV-style columns (serving) or a decode/prefill workload (kind)
    metric: str  # tok_s_gpu | tok_s_user | ttft_ms | tpot_ms | tok_s_node | in_tok_s_node | in_tok_s_npu | tok_s_total |
    # tok_s_all (input + output tokens/s)
    value: float
    note: str = ""


def _srv(model: str, system: str, backend: str, precision: str, isl: int, osl: int, conc: int, tp: int, dp: int,
         moe_tp: int, moe_ep: int, **extra: Any) -> dict[str, Any]:
    return {"model": model, "system": system, "backend": backend, "precision": precision, "isl": isl, "osl": osl,
            "concurrency": conc, "tp": tp, "attention_dp": dp, "moe_tp": moe_tp, "moe_ep": moe_ep, **extra}


# ShareGPT (facts/measurements.md #12 names the dataset only): vLLM's and SGLang's benchmark_serving sample
# 1,000 conversations (their default --num-prompts) of ShareGPT_V3_unfiltered_cleaned_split, the first human turn
# as the prompt and the reply's length as the output length; their reported totals come to roughly 220 input and
# 200 output tokens per request (an assumption, not in facts/; published_agreement.py also orders the four
# layouts at 1K/1K to show whether the conclusion depends on it).
SHAREGPT_ISL, SHAREGPT_OSL, SHAREGPT_PROMPTS = 220, 200, 1000


def _v32_sharegpt(backend: str, tp: int, dp: int, moe_tp: int, moe_ep: int, **extra: Any) -> dict[str, Any]:
    return _srv("deepseek-ai/DeepSeek-V3.2", "h200_sxm", backend, "", SHAREGPT_ISL, SHAREGPT_OSL, 0, tp, dp, moe_tp,
                moe_ep, burst=SHAREGPT_PROMPTS, **extra)


R1, L70, Q235, OSS = "deepseek-ai/DeepSeek-R1", "meta-llama/Meta-Llama-3.1-70B", "Qwen/Qwen3-235B-A22B", \
    "openai/gpt-oss-120b"
PUBLISHED: tuple[Published, ...] = (
    Published(5, "R1 FP4 8xB200 DP8+EP8 1K/2K c7168",
              _srv(R1, "b200_sxm", "trtllm", "fp4", 1024, 2048, 7168, 1, 8, 1, 8), "tok_s_gpu", 5393),
    Published(5, "  same, per user", _srv(R1, "b200_sxm", "trtllm", "fp4", 1024, 2048, 7168, 1, 8, 1, 8),
              "tok_s_user", 6.2),
    Published(6, "R1 FP8 8xH200 DP8+EP8 1K/2K c1024 maxbatch128",
              _srv(R1, "h200_sxm", "trtllm", "fp8", 1024, 2048, 1024, 1, 8, 1, 8, max_running=128), "tok_s_gpu", 1436),
    Published(6, "  same, per user", _srv(R1, "h200_sxm", "trtllm", "fp8", 1024, 2048, 1024, 1, 8, 1, 8,
                                          max_running=128), "tok_s_user", 11.3),
    Published(7, "R1 FP4 B200 TP8/EP2 c1 MTP3", _srv(R1, "b200_sxm", "trtllm", "fp4", 1024, 2048, 1, 8, 1, 4, 2,
                                                     mtp=3), "tok_s_user", 274, "ISL/OSL not published: 1K/2K assumed"),
    Published(7, "R1 FP8 H200 TP8/EP4 c1 MTP3", _srv(R1, "h200_sxm", "trtllm", "fp8", 1024, 2048, 1, 8, 1, 2, 4,
                                                     mtp=3), "tok_s_user", 158, "ISL/OSL not published: 1K/2K assumed"),
    Published(10, "V3.2 FP4-MoE 8xB200 DP8+EP8 MTP1 8K/1K c256",
              _srv("deepseek-ai/DeepSeek-V3.2", "b200_sxm", "trtllm", "", 8192, 1024, 256, 1, 8, 1, 8, mtp=1,
                   moe_quant_mode="nvfp4"), "ttft_ms", 19500,
              "the three figures disagree at C 256: C x OSL / (TTFT + (OSL - 1) TPOT) = 272 tok/s/GPU; they agree "
              "at C ~ 1012"),
    Published(10, "  same, TPOT", _srv("deepseek-ai/DeepSeek-V3.2", "b200_sxm", "trtllm", "", 8192, 1024, 256, 1, 8,
                                       1, 8, mtp=1, moe_quant_mode="nvfp4"), "tpot_ms", 98.5),
    Published(10, "  same, per GPU", _srv("deepseek-ai/DeepSeek-V3.2", "b200_sxm", "trtllm", "", 8192, 1024, 256, 1,
                                          8, 1, 8, mtp=1, moe_quant_mode="nvfp4"), "tok_s_gpu", 1077),
    Published(11, "V3.2 B200 TP4 c1 MTP3", _srv("deepseek-ai/DeepSeek-V3.2", "b200_sxm", "trtllm", "", 8192, 1024, 1,
                                                 4, 1, 4, 1, mtp=3), "ttft_ms", 426,
              "ISL/OSL not published: #10's 8K/1K (the same blog); the checkpoint's FP8; MoE TP4"),
    Published(11, "  same, TPOT", _srv("deepseek-ai/DeepSeek-V3.2", "b200_sxm", "trtllm", "", 8192, 1024, 1, 4, 1, 4, 1,
                                       mtp=3), "tpot_ms", 3.23, "MTP3 at the default acceptance (0.7 per draft)"),
    # #12: one 8xH200 box, four launches, ShareGPT through the engines' benchmark_serving ('total token
    # throughput' = input + output tok/s). ISL/OSL are not published: SHAREGPT_ISL / SHAREGPT_OSL. The client
    # sends every prompt at once (vLLM 0.34.0 benchmarks/serve.py: --request-rate default inf, --max-concurrency
    # default None, --num-prompts default 1000), so the run is one burst: C = the prompt count, one wave (k = 1),
    # and the engine runs what its KV cache and running cap admit while the rest wait (closed_loop's slot wait).
    # SGLang TP8 + DP8 attention at its defaults: --moe-dense-tp-size unset (dense MLP TP over all 8), no
    # --enable-dp-lm-head (LM head TP8), no --ep-size (MoE TP8); sglang.yaml's header.
    Published(12, "V3.2 8xH200 vLLM TP8 ShareGPT max load", _v32_sharegpt("vllm", 8, 1, 8, 1), "tok_s_all", 5714),
    Published(12, "V3.2 8xH200 vLLM DP8+EP8 ShareGPT max load", _v32_sharegpt("vllm", 1, 8, 1, 8), "tok_s_all",
              6343),
    Published(12, "V3.2 8xH200 SGLang TP8 ShareGPT max load", _v32_sharegpt("sglang", 8, 1, 8, 1), "tok_s_all",
              3012),
    Published(12, "V3.2 8xH200 SGLang TP8+DP8-attn ShareGPT max load",
              _v32_sharegpt("sglang", 1, 8, 8, 1, knobs={"dense_tp_size": 8, "lmhead_tp_size": 8}), "tok_s_all",
              8968),
    Published(13, "Qwen3-235B W8A8 A3 TP4xDP4+EP16 3584/1536 c144",
              _srv(Q235, "atlas_a3", "vllm-ascend", "", 3584, 1536, 144, 4, 4, 1, 16, gemm_quant_mode="int8",
                   moe_quant_mode="int8"), "ttft_ms", 4720, "vllm-ascend"),
    Published(13, "  same, TPOT", _srv(Q235, "atlas_a3", "vllm-ascend", "", 3584, 1536, 144, 4, 4, 1, 16,
                                       gemm_quant_mode="int8", moe_quant_mode="int8"), "tpot_ms", 48.7),
    Published(13, "  same, total tok/s", _srv(Q235, "atlas_a3", "vllm-ascend", "", 3584, 1536, 144, 4, 4, 1, 16,
                                              gemm_quant_mode="int8", moe_quant_mode="int8"), "tok_s_total", 2762),
    Published(14, "Llama-3.3-70B FP8 2xH100 TP2 5000/500 c1", _srv(L70, "h100_sxm", "trtllm", "fp8", 5000, 500, 1, 2,
                                                                   1, 2, 1), "ttft_ms", 407,
              "NIM (TRT-LLM); Llama-3.1-70B architecture"),
    Published(14, "  same, ITL", _srv(L70, "h100_sxm", "trtllm", "fp8", 5000, 500, 1, 2, 1, 2, 1), "tpot_ms", 18.6),
    Published(14, "Llama-3.3-70B FP8 2xH100 TP2 5000/500 c50", _srv(L70, "h100_sxm", "trtllm", "fp8", 5000, 500, 50,
                                                                    2, 1, 2, 1), "ttft_ms", 835),
    Published(14, "  same, ITL", _srv(L70, "h100_sxm", "trtllm", "fp8", 5000, 500, 50, 2, 1, 2, 1), "tpot_ms", 59.7),
    Published(14, "  same, total output tok/s", _srv(L70, "h100_sxm", "trtllm", "fp8", 5000, 500, 50, 2, 1, 2, 1),
              "tok_s_total", 814),
    Published(16, "Qwen3-235B FP8 H200 DP4+EP4 1K/1K max load", _srv("Qwen/Qwen3-235B-A22B-FP8", "h200_sxm", "trtllm",
                                                                     "fp8", 1024, 1024, 0, 1, 4, 1, 4),
              "tok_s_gpu", 3268, "'max load': concurrency = the KV-cache capacity the estimator computes"),
    Published(17, "GPT-OSS-120B H200 TP1 1K/1K max load", _srv(OSS, "h200_sxm", "trtllm", "", 1024, 1024, 0, 1, 1, 1,
                                                                1, gemm_quant_mode="mxfp4", moe_quant_mode="mxfp4"),
              "tok_s_gpu", 6798, "'max load' as #16; MXFP4 weight-only on Hopper"),
)


def published_case(pub: Published) -> tuple[Case, Workload, str]:
    """The row as the estimator runs it: its case (the published layout, with the row's `knobs` overrides of
    what the engine's defaults set beyond the CSV columns), its workload (MTP depth, max running requests; 'max
    load' = the KV-cache capacity the estimator computes; a `burst` of N prompts sent at once = C = N in one
    wave, k = 1: the benchmark sends no request after them) and a note."""
    row = dict(pub.row)
    mtp = int(row.pop("mtp", 0))
    max_running = int(row.pop("max_running", 0))
    knobs = row.pop("knobs", {})
    burst = int(row.pop("burst", 0))
    note = pub.note
    if burst:  # every prompt in flight at once; the engine admits what it can and the rest wait
        row["concurrency"] = burst
        note = f"{note}; C = {burst} at once, one wave".lstrip("; ")
    elif not row["concurrency"]:  # 'max load': the KV-cache capacity of the deployment
        probe = _with_knobs(case_from_row({**row, "concurrency": 1}), knobs)
        cap = kv_capacity_per_replica(probe.model, probe.hw, probe.pc, probe.prec, probe.workload.context_len)
        row["concurrency"] = max(1, int(cap) * probe.pc.attn_replicas)
        note = f"{note}; C = {row['concurrency']}".lstrip("; ")
    case = _with_knobs(case_from_row(row), knobs)
    wl = replace(case.workload, mtp=mtp, max_running=max_running)
    return case, (replace(wl, benchmark_waves=1) if burst else wl), note


def _with_knobs(case: Case, knobs: dict[str, int]) -> Case:
    return replace(case, pc=ParallelConfig(**{**case.pc.model_dump(), **knobs})) if knobs else case


def metric_value(pub: Published, est: Estimate, wl: Workload) -> float:
    """The estimate in the row's published metric (tok_s_all: input + output tokens/s of the deployment, the
    'total token throughput' of vLLM's and SGLang's benchmark_serving)."""
    return {
        "tok_s_gpu": est.output_tokens_per_s_per_rank,
        "tok_s_user": est.tokens_per_s_per_user,
        "ttft_ms": est.ttft_s * 1e3,
        "tpot_ms": est.tpot_s * 1e3,
        "tok_s_total": est.output_tokens_per_s,
        "tok_s_all": est.output_tokens_per_s * (wl.isl + wl.osl) / wl.osl,
    }[pub.metric]


def _published_estimate(pub: Published) -> tuple[float, str]:
    """(predicted value in the published metric, note)."""
    case, wl, note = published_case(pub)
    est = estimate(case.model, case.hw, case.pc, case.prec, factors(case), wl)
    return metric_value(pub, est, wl), note


def published_report() -> list[str]:
    lines = ["Published figures (facts/measurements.md; never fitted on):",
             f"{'#':>3}  {'setup':<50}{'metric':<12}{'published':>10}{'predicted':>11}{'error':>8}  note"]
    for pub in PUBLISHED:
        try:
            value, note = _published_estimate(pub)
            err = f"{(value / pub.value - 1) * 100:+.0f}%"
            lines.append(f"{pub.source_row:>3}  {pub.label:<50}{pub.metric:<12}{pub.value:>10g}{value:>11.4g}"
                         f"{err:>8}  {note}")
        except InputError as exc:
            lines.append(f"{pub.source_row:>3}  {pub.label:<50}{pub.metric:<12}{pub.value:>10g}{'-':>11}{'-':>8}"
                         f"  not expressible: {exc}")
    return lines
