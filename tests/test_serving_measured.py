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
