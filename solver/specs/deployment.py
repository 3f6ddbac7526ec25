"""A deployment file for `shardplan check`: the seed's parallel_config keys (top level or under
`parallel_config:`), plus what is needed to estimate it.

    model: deepseek-v3.2          # catalog name, HF id or config path (or --model)
    hardware: atlas_a3            # (or --hardware)
    framework: cann-recipes       # default generic
    world_size: 64                # (or --cards)
    parallel_config: {attn_tp_size: 1, dense_tp_size: 4, moe_tp_size: 1, embed_tp_size: 16, ...}
    workload: {phase: decode, batch: 64, seq_len: 65536}   # or {isl: 4096, osl: 256, concurrency: 64}
    quant: {weights: int8, moe_weights: int8, kv_cache: int8}
    mtp: 0
    # workload and dtype keys may also sit at the top level (phase, batch, seq_len | isl, osl, concurrency;
    # weight_dtype, moe_weight_dtype, kv_dtype), the spelling `shardplan calibrate --config` documents
    enable_online_split_weight: false
    previous_parallel_config: {...}   # the config the offline-split weights were converted for
"""
from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from solver.errors import InputError
from solver.specs.parallel import KNOBS
from solver.specs.validation import load_yaml, validate_model


class WorkloadSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    phase: Literal["prefill", "decode", "serving"] | None = None
    batch: int | None = Field(None, gt=0)
    seq_len: int | None = Field(None, gt=0)
    isl: int | None = Field(None, gt=0)
    osl: int | None = Field(None, gt=0)
    concurrency: int | None = Field(None, gt=0)

    @model_validator(mode="after")
    def _complete(self) -> "WorkloadSpec":
        serving = self.isl is not None or self.osl is not None or self.concurrency is not None
        if serving and self.phase in ("prefill", "decode"):
            raise ValueError("give either phase/batch/seq_len or isl/osl/concurrency, not both")
        if serving:
            if None in (self.isl, self.osl, self.concurrency):
                raise ValueError("serving needs isl, osl and concurrency")
            self.phase = "serving"
        else:
            if self.phase is None or self.batch is None or self.seq_len is None:
                raise ValueError("needs phase, batch and seq_len (or isl, osl and concurrency)")
        return self


class QuantSpecIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    weights: str | None = None
    moe_weights: str | None = None
    kv_cache: str | None = None


class Deployment(BaseModel):
    model_config = ConfigDict(extra="forbid")

    model: str | None = None
    hardware: str | None = None
    framework: str = "generic"
    world_size: int | None = Field(None, gt=0)
    parallel_config: dict[str, int] = Field(default_factory=dict)
    workload: WorkloadSpec | None = None
    quant: QuantSpecIn = QuantSpecIn()
    mtp: int = Field(0, ge=0)
    enable_online_split_weight: bool | None = None
    previous_parallel_config: dict[str, int] | None = None

    @model_validator(mode="after")
    def _knobs(self) -> "Deployment":
        for field in ("parallel_config", "previous_parallel_config"):
            cfg = getattr(self, field) or {}
            unknown = sorted(set(cfg) - set(KNOBS))
            if unknown:
                raise ValueError(f"{field}: unknown key(s) {', '.join(unknown)}; known: {', '.join(KNOBS)}")
            for k, v in cfg.items():
                if v < 1:
                    raise ValueError(f"{field}.{k}: must be >= 1, got {v}")
        return self


# The flat spelling `shardplan calibrate --config` also reads: workload and dtype keys at the top level.
FLAT_WORKLOAD = ("phase", "batch", "seq_len", "isl", "osl", "concurrency")
FLAT_QUANT = {"weight_dtype": "weights", "moe_weight_dtype": "moe_weights", "kv_dtype": "kv_cache"}
DEPLOYMENT_ONLY = ("model", "hardware", "mtp", "enable_online_split_weight", "previous_parallel_config")


def nest_flat_keys(data: dict, origin: str) -> dict:
    """Move top-level workload and dtype keys into `workload:` and `quant:` (one file serves check and
    calibrate)."""
    data = dict(data)
    data.pop("description", None)
    for flat, nested in ((FLAT_WORKLOAD, "workload"), (tuple(FLAT_QUANT), "quant")):
        found = {k: data.pop(k) for k in flat if k in data}
        if not found:
            continue
        if isinstance(data.get(nested), dict):
            raise InputError(f"{origin}: {next(iter(found))}", f"given both at the top level and under {nested}:")
        data[nested] = {FLAT_QUANT.get(k, k): v for k, v in found.items()}
    return data


def flatten_nested_keys(data: dict, origin: str) -> dict:
    """The inverse: `workload:` and `quant:` mappings become top-level keys."""
    data = dict(data)
    inverse = {v: k for k, v in FLAT_QUANT.items()}
    for nested, rename in (("workload", {}), ("quant", inverse)):
        block = data.pop(nested, None)
        if block is None:
            continue
        if not isinstance(block, dict):
            raise InputError(f"{origin}: {nested}", f"expected a mapping, got {type(block).__name__}")
        for k, v in block.items():
            key = rename.get(k, k)
            if key in data:
                raise InputError(f"{origin}: {key}", f"given both at the top level and under {nested}:")
            data[key] = v
    return data


def load_deployment(path: str | Path) -> Deployment:
    data = load_yaml(Path(path))
    if not isinstance(data, dict):
        raise InputError(str(path), "expected a mapping of the seed's parallel_config keys")
    data = nest_flat_keys(data, str(path))
    # the seed's YAML puts the knobs at the top level (or under a candidate_x block); gather them
    for key in list(data):
        if isinstance(data[key], dict) and key.startswith("candidate_") and "parallel_config" in data[key]:
            data.setdefault("parallel_config", data.pop(key)["parallel_config"])
    top = {k: data.pop(k) for k in list(data) if k in KNOBS}
    if "cards" in data:
        data.setdefault("world_size", data.pop("cards"))
    for derived in ("attn_dp_size", "moe_ep_size"):
        data.pop(derived, None)
        if isinstance(data.get("parallel_config"), dict):
            data["parallel_config"] = {k: v for k, v in data["parallel_config"].items() if k != derived}
    if top:
        data["parallel_config"] = {**(data.get("parallel_config") or {}), **top}
    return validate_model(Deployment, data, str(path))
