"""The configuration a trace was profiled under: CONFIG.yaml for `shardplan calibrate --config`.

Schema (every key optional unless noted; unknown keys are an error):

    parallel_config:          # the seed's knobs, under this mapping or at the top level (not both)
      attn_tp_size: 8         # attn_tp_size dense_tp_size moe_tp_size embed_tp_size lmhead_tp_size
      moe_tp_size: 1          # o_proj_tp_size cp_size kvp_size attn_sp_size; each defaults to 1
    world_size: 8             # or `cards`; default: the traces' distributedInfo.world_size, else the rank count
    phase: decode             # prefill | decode: what one profiled step is
    batch: 64                 # prompts (prefill) / running sequences (decode) across the deployment
    seq_len: 4096             # prefill: prompt length; decode: context length
    isl: 4096                 # instead of seq_len: prefill prompt = isl; decode context = isl + osl / 2
    osl: 512
    framework: generic        # framework profile whose efficiency multipliers the estimate uses
    weight_dtype: fp8         # precision overrides, as `shardplan estimate --weight-dtype/...`
    moe_weight_dtype: fp8
    kv_dtype: bf16
    description: free text

A `shardplan check` deployment file is accepted as is: its `workload:` and `quant:` blocks are read as the
flat keys above, and `model` / `hardware` stand in for --model / --hardware.

The derived sizes (attn_dp_size, moe_ep_size, ...) are not keys: the seed derives them (world // tp).
A workload (phase + batch + seq_len or isl) is needed to compare the trace against the estimate and to
recalibrate; without one, only the parallel layout is used (which groups cross nodes).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from solver.catalog import DEFAULT_FRAMEWORK
from solver.errors import InputError
from solver.specs import limits
from solver.specs.deployment import DEPLOYMENT_ONLY, flatten_nested_keys
from solver.specs.parallel import KNOBS, ParallelConfig
from solver.specs.validation import load_yaml

WORKLOAD_KEYS = ("phase", "batch", "seq_len", "isl", "osl")
OTHER_KEYS = ("world_size", "cards", "framework", "weight_dtype", "moe_weight_dtype", "kv_dtype", "description")
# keys of a `shardplan check` deployment file that calibration reads elsewhere (model, hardware) or not at all
TOP_KEYS = ("parallel_config", *KNOBS, *WORKLOAD_KEYS, *OTHER_KEYS, *DEPLOYMENT_ONLY)
DERIVED = ("attn_dp_size", "dense_dp_size", "moe_ep_size", "moe_dp_size", "ep_size", "dp_size")


@dataclass(frozen=True)
class ProfiledConfig:
    source: str
    parallel: ParallelConfig
    world_from: str  # "config" | "traces"
    phase: str | None = None
    batch: int | None = None
    seq_len: int | None = None  # effective: prompt length (prefill) or context length (decode)
    isl: int | None = None
    osl: int | None = None
    framework: str = DEFAULT_FRAMEWORK
    weight_dtype: str | None = None
    moe_weight_dtype: str | None = None
    kv_dtype: str | None = None

    @property
    def has_workload(self) -> bool:
        return self.phase is not None

    def as_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"source": self.source, "world_size": self.parallel.world_size,
                             "world_size_from": self.world_from, "parallel_config": self.parallel.with_derived(),
                             "framework": self.framework}
        if self.phase is not None:
            d["workload"] = {"phase": self.phase, "batch": self.batch, "seq_len": self.seq_len}
            if self.isl is not None:
                d["workload"].update(isl=self.isl, osl=self.osl)
        return d


# upper bounds (solver.specs.limits): token counts, a batch, and otherwise a rank count (world size, knobs)
_CAPS = {"batch": limits.MAX_CONCURRENCY, "seq_len": limits.MAX_TOKENS, "isl": limits.MAX_TOKENS,
         "osl": limits.MAX_TOKENS}


def _int(origin: str, key: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"{origin}: {key}", f"must be an integer, got {value!r}")
    if value < 1:
        raise InputError(f"{origin}: {key}", f"must be >= 1, got {value}")
    cap = _CAPS.get(key, limits.MAX_CARDS)
    if value > cap:
        raise InputError(f"{origin}: {key}", f"{value} is over the cap of {cap:,}")
    return value


def _str(origin: str, key: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"{origin}: {key}", f"must be a non-empty string, got {value!r}")
    return value.strip()


def _unknown(origin: str, key: Any, allowed: tuple[str, ...]) -> InputError:
    if key in DERIVED:
        return InputError(f"{origin}: {key}", "is derived (world_size // the matching tp size), not set; remove it")
    import difflib

    close = difflib.get_close_matches(str(key), allowed, n=1)
    hint = f" (did you mean {close[0]}?)" if close else f"; known: {', '.join(allowed)}"
    return InputError(f"{origin}: {key}", f"unknown key{hint}")


def parse_profiled_config(data: Any, origin: str, trace_world: int | None = None,
                          trace_ranks: int | None = None) -> ProfiledConfig:
    """Validate a CONFIG.yaml mapping (see the module docstring) against the traces it describes.

    `trace_world` is the world size the traces record (distributedInfo), `trace_ranks` how many rank traces
    were given; the config's world size must agree with the first and cannot be smaller than the second.
    """
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise InputError(origin, f"expected a mapping at the top level, got {type(data).__name__}")
    data = flatten_nested_keys(data, origin)  # a `shardplan check` file (workload:/quant: blocks) works too
    for key in data:
        if key not in TOP_KEYS:
            raise _unknown(origin, key, TOP_KEYS)
    knobs: dict[str, int] = {}
    nested = data.get("parallel_config")
    if nested is not None:
        if not isinstance(nested, dict):
            raise InputError(f"{origin}: parallel_config", f"expected a mapping, got {type(nested).__name__}")
        top = [k for k in KNOBS if k in data]
        if top:
            raise InputError(f"{origin}: {top[0]}", "given both at the top level and under parallel_config; "
                                                    "use one place")
        for key, value in nested.items():
            if key not in KNOBS:
                raise _unknown(f"{origin}: parallel_config", key, KNOBS)
            knobs[key] = _int(origin, f"parallel_config.{key}", value)
    for key in KNOBS:
        if key in data:
            knobs[key] = _int(origin, key, data[key])

    # world size: the config's, checked against the traces', else the traces'
    world_cfg = {k: _int(origin, k, data[k]) for k in ("world_size", "cards") if data.get(k) is not None}
    if len(set(world_cfg.values())) > 1:
        raise InputError(f"{origin}: cards", f"world_size {world_cfg['world_size']} and cards {world_cfg['cards']} "
                                             "disagree; give one")
    if world_cfg:
        world, world_from = next(iter(world_cfg.values())), "config"
        if trace_world is not None and trace_world != world:
            raise InputError(f"{origin}: world_size", f"{world} but the traces record world_size {trace_world} "
                                                      "(distributedInfo)")
    elif trace_world is not None:
        world, world_from = trace_world, "traces"
    elif trace_ranks:
        world, world_from = trace_ranks, "traces"
    else:
        raise InputError(f"{origin}: world_size", "required (the traces do not record it)")
    if trace_ranks is not None and trace_ranks > world:
        raise InputError(f"{origin}: world_size", f"{world} but {trace_ranks} rank traces were given")
    for key, value in knobs.items():
        if world % value:
            raise InputError(f"{origin}: {key}", f"{value} does not divide world_size {world}")
    pc = ParallelConfig(world_size=world, **knobs)
    if world % pc.attn_group_size:
        raise InputError(f"{origin}: attn_tp_size*cp_size*kvp_size*attn_sp_size",
                         f"{pc.attn_group_size} does not divide world_size {world}")

    # workload
    phase = data.get("phase")
    if phase is not None and phase not in ("prefill", "decode"):
        raise InputError(f"{origin}: phase", f"must be prefill or decode, got {phase!r}")
    nums = {k: _int(origin, k, data[k]) for k in ("batch", "seq_len", "isl", "osl") if data.get(k) is not None}
    if "seq_len" in nums and ("isl" in nums or "osl" in nums):
        raise InputError(f"{origin}: seq_len", "give seq_len or isl/osl, not both")
    if "osl" in nums and "isl" not in nums:
        raise InputError(f"{origin}: osl", "needs isl")
    seq_len = nums.get("seq_len")
    if phase is not None:
        missing = [k for k in ("batch",) if k not in nums]
        if seq_len is None and "isl" not in nums:
            missing.append("seq_len (or isl)")
        if missing:
            raise InputError(f"{origin}: phase", f"{phase} workload also needs {', '.join(missing)}")
        if seq_len is None:
            seq_len = nums["isl"] if phase == "prefill" else nums["isl"] + nums.get("osl", 0) // 2
    elif nums:
        raise InputError(f"{origin}: phase", f"required with {', '.join(nums)} (prefill or decode)")

    extra = {k: _str(origin, k, data[k]) for k in ("framework", "weight_dtype", "moe_weight_dtype", "kv_dtype")
             if data.get(k) is not None}
    if data.get("description") is not None and not isinstance(data["description"], str):
        raise InputError(f"{origin}: description", "must be text")
    return ProfiledConfig(
        source=origin, parallel=pc, world_from=world_from, phase=phase, batch=nums.get("batch"), seq_len=seq_len,
        isl=nums.get("isl"), osl=nums.get("osl"), framework=extra.get("framework", DEFAULT_FRAMEWORK),
        weight_dtype=extra.get("weight_dtype"), moe_weight_dtype=extra.get("moe_weight_dtype"),
        kv_dtype=extra.get("kv_dtype"),
    )


def load_profiled_config(path: str | Path, trace_world: int | None = None,
                         trace_ranks: int | None = None, flag: str = "--config") -> ProfiledConfig:
    """`flag`: the option that named the file (--config, or --run for another run's config)."""
    p = Path(path)
    if not p.is_file():
        raise InputError(flag, f"file not found: {path}")
    return parse_profiled_config(load_yaml(p), str(path), trace_world, trace_ranks)


def named_target(path: str | Path) -> tuple[str | None, str | None]:
    """(model, hardware) a config names, as a `shardplan check` deployment file does; (None, None) otherwise."""
    p = Path(path)
    data = load_yaml(p) if p.is_file() else None
    if not isinstance(data, dict):
        return None, None
    return (str(data["model"]) if data.get("model") else None,
            str(data["hardware"]) if data.get("hardware") else None)
