"""Checkpoint number formats per module group, from quantization_config."""
from __future__ import annotations

from typing import Any

from dataclasses import dataclass, replace

from solver.errors import InputError


@dataclass(frozen=True)
class QuantSpec:
    """Checkpoint number formats per module group (what the published weights are stored in)."""

    method: str = "none"  # quant_method from the config, or "none"
    attention: str = "bf16"
    dense: str = "bf16"  # dense FFN and shared experts
    experts: str = "bf16"  # routed experts
    embedding: str = "bf16"
    lm_head: str = "bf16"
    block_size: tuple[int, int] | None = None


# torch_dtype / dtype (the weights' storage without a quantization_config): torch's names and their aliases
_TORCH_DTYPES = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32", "bf16": "bf16", "fp16": "fp16",
                 "fp32": "fp32", "half": "fp16", "float": "fp32"}
_EXPERT_DTYPE = {"fp4": "mxfp4", "mxfp4": "mxfp4", "fp8": "fp8_block", "bf16": "bf16"}
# quant methods whose weights no number format of the precision model holds, with what they store: refused by name
# rather than read as 16-bit weights (memory and bandwidth would be wrong several times over)
_UNREPRESENTABLE = {
    "bitnet": "ternary weights (values in {-1, 0, 1}, 1.58 bits, packed four to a byte with one scale per tensor)",
}


def read_quant(cfg: dict[str, Any], origin: str, warnings: list[str]) -> QuantSpec:
    spec = _read_quant(cfg, origin, warnings)
    expert = cfg.get("expert_dtype")  # DeepSeek-V4: routed experts stored apart from quantization_config
    if expert is not None:
        if str(expert) not in _EXPERT_DTYPE:
            raise InputError(f"{origin}: expert_dtype", f"unknown format {expert!r}")
        spec = replace(spec, experts=_EXPERT_DTYPE[str(expert)])
    return spec


def _read_quant(cfg: dict[str, Any], origin: str, warnings: list[str]) -> QuantSpec:
    q = cfg.get("quantization_config")
    if q is None:
        key = "torch_dtype" if cfg.get("torch_dtype") is not None else "dtype"
        dtype = cfg.get(key)
        if dtype is None:
            dtype = "bfloat16"
        base = _TORCH_DTYPES.get(dtype) if isinstance(dtype, str) else None
        if base is None:  # a misspelt dtype would be read as bf16 and priced as such
            raise InputError(f"{origin}: {key}", f"unknown dtype {dtype!r}; known: {', '.join(_TORCH_DTYPES)}")
        return QuantSpec(attention=base, dense=base, experts=base, embedding=base, lm_head=base)
    if not isinstance(q, dict):
        raise InputError(f"{origin}: quantization_config", "must be an object")
    method = str(q.get("quant_method", "")).lower()
    if method in _UNREPRESENTABLE:
        raise InputError(f"{origin}: quantization_config.quant_method",
                         f"{method!r}: {_UNREPRESENTABLE[method]} have no number format here; not sized")
    skip_key = next((k for k in ("modules_to_not_convert", "ignored_layers", "ignore") if q.get(k)), "ignore")
    skip_raw = q.get(skip_key) or []
    if not isinstance(skip_raw, list):
        raise InputError(f"{origin}: quantization_config.{skip_key}", "must be a list of module names")
    skip = [str(m) for m in skip_raw]

    def skipped(*needles: str) -> bool:
        return any(any(n in m for n in needles) for m in skip)

    if method == "fp8":
        block = q.get("weight_block_size")
        if block is not None and not (
            isinstance(block, list) and len(block) == 2
            and all(isinstance(b, int) and not isinstance(b, bool) and b > 0 for b in block)
        ):
            raise InputError(f"{origin}: quantization_config.weight_block_size",
                             f"must be two positive integers, got {block!r}")
        fmt = "fp8_block" if block else "fp8"
        bs = (block[0], block[1]) if block else None
        attn = "bf16" if skipped("self_attn") else fmt
        return QuantSpec(method=method, attention=attn, dense=fmt, experts=fmt, embedding="bf16",
                         lm_head="bf16", block_size=bs)
    if method == "mxfp4":
        return QuantSpec(method=method, attention="bf16" if skipped("self_attn") else "mxfp4", dense="bf16",
                         experts="mxfp4", embedding="bf16", lm_head="bf16")
    if method in ("modelopt", "nvfp4", "compressed-tensors", "awq", "gptq", "w8a8", "int8", "int4"):
        fmt = {"awq": "int4", "gptq": "int4", "w8a8": "int8", "int8": "int8", "int4": "int4"}.get(method, "nvfp4")
        if q.get("bits") == 8:
            fmt = "int8"
        fmt_name = str(q.get("format", ""))
        if "mxfp4" in fmt_name:
            fmt = "mxfp4"
        attn = "bf16" if skipped("self_attn") else fmt
        dense = "bf16" if skipped("shared_experts", "mlp.") else fmt
        warnings.append(f"quant_method {method!r} read as {fmt} for linear layers (embedding and lm_head bf16)")
        return QuantSpec(method=method, attention=attn, dense=dense, experts=fmt, embedding="bf16", lm_head="bf16")
    raise InputError(f"{origin}: quantization_config.quant_method", f"unsupported quant_method {method!r}")
