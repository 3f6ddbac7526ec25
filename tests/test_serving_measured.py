"""Reading measured rows (measured.py): framework rules, the CSV's conventions, weight-only int4 on Blackwell."""
from __future__ import annotations

import pytest

from solver.errors import InputError
from solver.measured import case_from_row

DENSE = {"backend": "vllm", "model": "meta-llama/Llama-3.1-8B-Instruct", "system": "h100_sxm", "precision": "fp8",
         "isl": 1024, "osl": 128, "concurrency": 8, "tp": 2}
R1 = {"backend": "trtllm", "model": "deepseek-ai/DeepSeek-R1", "system": "b200_sxm", "precision": "fp8",
      "isl": 1024, "osl": 1024, "concurrency": 64, "tp": 8, "attention_dp": 1, "moe_tp": 1, "moe_ep": 8}


def test_zero_moe_and_dp_cells_of_a_dense_model_are_blank() -> None:
    case = case_from_row({**DENSE, "attention_dp": 0, "moe_tp": 0, "moe_ep": 0})
    assert case.pc.world_size == 2 and case.pc.attn_tp_size == 2


def test_zero_moe_cell_of_a_moe_model_is_an_error() -> None:
    with pytest.raises(InputError) as err:
        case_from_row({**R1, "moe_ep": 0})
    assert err.value.field == "moe_ep"


def test_a_row_the_framework_cannot_run_is_rejected_naming_tp() -> None:
    # attention TP 28 does not divide DeepSeek's 128 heads: SGLang's rule A.heads_divisible_attn_tp
    row = {**R1, "backend": "sglang", "tp": 28, "moe_tp": 28, "moe_ep": 1, "system": "gb200"}
    with pytest.raises(InputError) as err:
        case_from_row(row)
    assert err.value.field == "tp"
    assert "heads" in err.value.problem


def test_concurrency_is_the_client_concurrency_of_the_whole_dp_group() -> None:
    case = case_from_row({**R1, "tp": 1, "attention_dp": 8, "concurrency": 256})
    assert case.workload.concurrency == 256 and case.pc.attn_replicas == 8


def test_weight_only_int4_on_blackwell_runs_w4a8() -> None:
    case = case_from_row({**R1, "precision": "", "gemm_quant_mode": "fp8", "moe_quant_mode": "w4afp8"})
    assert case.prec.fmt("experts").name == "int4"
    assert case.prec.gemm_dtype("experts") == "fp8"


GPT_OSS = {"backend": "trtllm", "model": "openai/gpt-oss-120b", "system": "b200_sxm", "precision": "fp4",
           "gemm_quant_mode": "nvfp4", "moe_quant_mode": "nvfp4", "isl": 1024, "osl": 1024, "concurrency": 4,
           "tp": 1}


def test_modules_the_checkpoint_keeps_in_bf16_stay_bf16_under_the_rows_gemm_format() -> None:
    # gpt-oss-120b's quantization_config leaves self_attn in BF16 (modules_to_not_convert): the row's nvfp4
    # applies to the experts the checkpoint quantizes, the attention GEMMs run BF16
    case = case_from_row(GPT_OSS)
    assert case.prec.fmt("attention").name == "bf16" and case.prec.gemm_dtype("attention") == "bf16"
    assert case.prec.fmt("experts").name == "nvfp4" and case.prec.gemm_dtype("experts") == "fp4"
    assert any("not converted" in n for n in case.prec.notes)


def test_a_checkpoint_that_quantizes_attention_takes_the_rows_gemm_format() -> None:
    # DeepSeek-R1's FP8 checkpoint (128 x 128 block scales) quantizes self_attn: a per-tensor fp8 row runs it so
    case = case_from_row({**R1, "gemm_quant_mode": "fp8", "moe_quant_mode": "fp8"})
    assert case.prec.fmt("attention").name == "fp8"


def test_an_nvfp4_moe_row_quantizes_the_routed_experts_only() -> None:
    # NVFP4 MoE checkpoints quantize the experts: attention and the dense GEMMs (first dense layers, shared
    # experts) keep DeepSeek's fp8_block, 1 + 4 / (128 x 128) bytes per weight, and run W8A8 at the FP8 rate
    case = case_from_row({**R1, "precision": "fp4", "gemm_quant_mode": "nvfp4", "moe_quant_mode": "nvfp4"})
    for group in ("attention", "dense"):
        assert case.prec.fmt(group).name == "fp8_block"
        assert case.prec.fmt(group).bytes_per_param == 1 + 4 / (128 * 128)
        assert case.prec.gemm_dtype(group) == "fp8"
    assert case.prec.fmt("experts").name == "nvfp4" and case.prec.gemm_dtype("experts") == "fp4"
    assert any("routed experts only" in n for n in case.prec.notes)


def test_an_nvfp4_dense_model_row_quantizes_every_gemm() -> None:
    row = {"backend": "trtllm", "model": "meta-llama/Meta-Llama-3.1-70B", "system": "b200_sxm", "precision": "fp4",
           "gemm_quant_mode": "nvfp4", "moe_quant_mode": "nvfp4", "isl": 1024, "osl": 1024, "concurrency": 4,
           "tp": 8}
    case = case_from_row(row)
    assert case.prec.fmt("attention").name == "nvfp4" and case.prec.gemm_dtype("attention") == "fp4"
    assert case.prec.fmt("dense").name == "nvfp4"
