"""Rows of measured-serving tables (the calibration CSV's columns) turned into specs and workloads.

Column meaning (facts/measurements.md): tp = attention TP, attention_dp = attention DP, world = tp x
attention_dp = moe_tp x moe_ep; gemm_quant_mode / moe_quant_mode are the weight formats; backend is the
framework. Dense models run every module at TP = tp.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

from solver.errors import InputError
from solver.estimate.compute import Factors
from solver.estimate.serving import Workload
from solver.specs.framework import FrameworkProfile, load_framework
from solver.specs.hardware import Hardware
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model import ModelSpec
from solver.specs.model_catalog import load_model
from solver.specs.parallel import ParallelConfig, make_parallel_config
from solver.specs.precision import Precision, resolve_precision

REQUIRED_COLUMNS = ("model", "system", "gemm_quant_mode", "moe_quant_mode", "isl", "osl", "concurrency", "tp",
                    "attention_dp", "moe_tp", "moe_ep")


@dataclass(frozen=True)
class Case:
    model: ModelSpec
    hw: Hardware
    pc: ParallelConfig
    prec: Precision
    framework: FrameworkProfile
    workload: Workload


def _int(row: Mapping[str, Any], col: str, minimum: int = 1) -> int:
    value = row.get(col)
    try:
        f = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise InputError(col, f"not a number: {value!r}") from None
    if math.isnan(f) or f != int(f) or f < minimum:
        raise InputError(col, f"must be an integer >= {minimum}, got {value!r}")
    return int(f)


def _fmt(mode: str) -> str:
    mode = str(mode).lower()
    return {"fp8_block": "fp8_block", "fp8": "fp8", "nvfp4": "nvfp4", "w4afp8": "int4", "int8_wo": "int8",
            "float16": "bf16", "bf16": "bf16", "w8a8": "int8"}.get(mode, mode)


def case_from_row(row: Mapping[str, Any], framework: str | None = None) -> Case:
    missing = [c for c in REQUIRED_COLUMNS if c not in row]
    if missing:
        raise InputError("csv", f"missing column(s): {', '.join(missing)}")
    model = load_model(str(row["model"]))
    hw = load_hardware(str(row["system"]))
    fw = load_framework(framework or str(row.get("backend") or "generic"))
    tp, dp = _int(row, "tp"), _int(row, "attention_dp")
    moe_tp, moe_ep = _int(row, "moe_tp"), _int(row, "moe_ep")
    if "pp" in row and row["pp"] not in (None, "") and _int(row, "pp") != 1:
        raise InputError("pp", "pipeline parallel is not modelled")
    world = tp * dp
    if model.is_moe and moe_tp * moe_ep != world:
        raise InputError("moe_tp", f"moe_tp x moe_ep = {moe_tp * moe_ep} differs from tp x attention_dp = {world}")
    # dense FFN and vocabulary layers follow attention TP in these frameworks; MoE has its own TP
    pc = make_parallel_config(world, attn_tp_size=tp, dense_tp_size=tp, embed_tp_size=tp, lmhead_tp_size=tp,
                              moe_tp_size=moe_tp if model.is_moe else tp)
    gemm, moe = _fmt(row["gemm_quant_mode"]), _fmt(row["moe_quant_mode"])
    kv = "fp8" if str(row.get("precision", "")).lower() in ("fp8", "fp4") and hw.supports("fp8") else None
    prec = resolve_precision(model, hw, weight_dtype=gemm, moe_weight_dtype=moe if model.is_moe else None,
                             kv_dtype=kv)
    wl = Workload("serving", isl=_int(row, "isl"), osl=_int(row, "osl"), concurrency=_int(row, "concurrency"))
    return Case(model, hw, pc, prec, fw, wl)


def factors(case: Case) -> Factors:
    """Hardware factors scaled by the framework's fitted multipliers for this hardware."""
    from solver.estimate.compute import factors_for

    return factors_for(case.hw, case.framework.efficiency_for(case.hw.name))
