"""Hardware: one accelerator rank, the node it sits in and the network tiers between ranks.

A hardware YAML (see `hardware/*.yaml`) validates into `Hardware`. Units are SI and carried in the field
names: bytes, bytes per second (`_Bps`), FLOP/s, seconds.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator

Dtype = Literal["fp32", "bf16", "fp16", "fp8", "int8", "fp4", "int4"]
TierName = Literal["intra_node", "scale_up", "inter_node", "inter_rack"]

# Typo guards, not figures of any device: each lies orders of magnitude beyond every shipped hardware file,
# so only a slip (a missing exponent, bytes for GB) trips them, and the planner's integers stay exact.
_STRICT = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)
MAX_BYTES = 2**50  # 1 PiB per rank
MIN_BYTES = 2**20  # 1 MiB: below it a memory figure was written in GB or GiB, not bytes
MAX_BPS = 1e16  # 10 PB/s
MIN_BPS = 1e6  # 1 MB/s
MAX_FLOPS = 1e19  # 10 EFLOP/s per rank
MIN_FLOPS = 1e9  # 1 GFLOP/s
MAX_LATENCY_S = 1.0
# the device software platforms an engine rule may name (rule_env: a flag on_<platform> per one); an engine's
# platform branch reads the runtime's (sglang: get_platform().is_hip / is_cuda / is_npu)
PLATFORMS = ("cuda", "rocm", "cann")
Platform = Literal[PLATFORMS]  # type: ignore[valid-type]
# the device capability families an engine's kernel choice reads (rule_env: a flag on_<capability> per one), with
# the platform each runs on. CUDA: the compute capability's major version, as vLLM's is_device_capability_family
# tests it (8.9 is sm80, 10.3 is sm100); ROCm: the LLVM target; Ascend: the chip
CAPABILITY_PLATFORM: dict[str, str] = {"sm80": "cuda", "sm90": "cuda", "sm100": "cuda", "sm120": "cuda",
                                       "gfx942": "rocm", "gfx950": "rocm", "ascend910b": "cann", "ascend910c": "cann"}
CAPABILITIES = tuple(CAPABILITY_PLATFORM)
Capability = Literal[CAPABILITIES]  # type: ignore[valid-type]
VENDOR = re.compile(r"[a-z][a-z0-9_-]*")  # a vendor name as device files and engine profiles write it
# a device name as the outputs label it and the per-hardware options take it (`--price NAME=USD`, `--weight-dtype
# NAME=DTYPE`): no blank, no `=` or `,` that those options split on
DEVICE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]*")


def _bps_unit(value: object) -> object:
    """A rate below MIN_BPS was written in GB/s or TB/s (3.35 for 3.35 TB/s): say the unit, before the range check
    refuses it without one."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value < MIN_BPS:
        raise ValueError(f"below 1 MB/s: the field is in bytes per second (3.35 TB/s = 3.35e12), got {value}")
    return value


class Tier(BaseModel):
    """A network tier: the link a collective uses when its group spans this level of the topology."""

    model_config = _STRICT

    bandwidth_Bps: float = Field(ge=MIN_BPS, le=MAX_BPS, description="per-rank one-direction line rate, bytes/s")
    latency_s: float = Field(ge=0, le=MAX_LATENCY_S,
                             description="per-hop latency added to each collective step, seconds")
    efficiency: float = Field(gt=0, le=1, description="achieved bus bandwidth / line rate")
    span_ranks: int = Field(gt=0, le=2**31, description="largest group that stays inside this tier")
    peer_access: bool = Field(
        True, description="ranks on this link read each other's memory directly (NVLink, Infinity Fabric, UB), "
        "what the engines' custom all-reduce kernels need; false for a PCIe-only node, where vLLM and SGLang "
        "switch the kernel off past two GPUs and NCCL's ring runs (the outer RDMA tiers never have it)")
    mesh_links: int = Field(
        0, ge=0, le=1024, description="peer links of a switchless full mesh (Infinity Fabric, HCCS): "
        "bandwidth_Bps is their sum, each peer reached over one link, so a group reaching k peers over this tier "
        "drives k of them; 0 = a switched fabric, where one peer gets the whole rate")

    @field_validator("bandwidth_Bps", mode="before")
    @classmethod
    def _in_bps(cls, value: object) -> object:
        return _bps_unit(value)


class Efficiency(BaseModel):
    """Achieved-vs-peak fractions: the few physically meaningful factors that calibration fits."""

    model_config = _STRICT

    gemm: float = Field(gt=0, le=1, description="dense GEMM achieved / peak FLOP/s at large shapes")
    attention: float = Field(gt=0, le=1, description="prefill attention kernel achieved / peak FLOP/s")
    hbm: float = Field(gt=0, le=1, description="streaming HBM achieved / peak bandwidth")
    kernel_overhead_s: float = Field(ge=0, le=MAX_LATENCY_S, description="fixed launch/tail cost per kernel, seconds")


class EPKernel(BaseModel):
    """Launch-to-done latency of the expert-parallel dispatch / combine kernels (DeepEP low-latency class: GPU-
    initiated sends to every peer, then a wait on every peer's flag). One call costs
    latency_s + per_doubling_s x log2(EP size), plus its bytes over the tiers (comm.ep_all_to_all_s)."""

    model_config = _STRICT

    latency_s: float = Field(ge=0, le=MAX_LATENCY_S, description="per-call latency at EP 1 (extrapolated), seconds")
    per_doubling_s: float = Field(ge=0, le=MAX_LATENCY_S, description="added per doubling of the EP group, seconds")


class Hardware(BaseModel):
    model_config = _STRICT

    name: str
    description: str = ""
    vendor: str = Field(description="who makes the device, in lower case (nvidia, amd, huawei, intel, ...): the "
                        "engines that run on it (framework profiles' `vendors`) and the calibration it carries "
                        "(fitted/factors.yaml's per-vendor blocks)")
    platform: Platform | None = Field(None, description="the software platform the engines run the device on "
                                      "(cuda, rocm, cann): a rule may limit a feature to one (rule_env's on_* "
                                      "flags); unstated, no platform-limited rule refuses the device")
    capability: Capability | None = Field(None, description="the device's capability family, which engines choose "
                                          "kernels and defaults by (sm80, sm90, sm100, sm120, gfx942, gfx950, "
                                          "ascend910b, ascend910c): a rule reads it as on_<capability>; unstated, "
                                          "no rule limited to one is applied, and a note says so")
    fitted_as: str | None = Field(None, description="the catalog device whose fitted factors (fitted/factors.yaml, "
                                  "keyed by device name) this file carries: a variant of it measured alike (more "
                                  "memory, a clock apart); unset, the file's own name, which no fit knows for a "
                                  "device of the user's")
    memory_bytes: int = Field(gt=0, le=MAX_BYTES, description="HBM per rank")
    hbm_bandwidth_Bps: float = Field(ge=MIN_BPS, le=MAX_BPS, description="peak HBM bandwidth per rank")
    peak_flops: dict[Dtype, float] = Field(description="dense peak FLOP/s (or OP/s) per rank by dtype")
    ranks_per_node: int = Field(gt=0, le=2**31)
    scale_up_domain: int = Field(gt=0, le=2**31, description="ranks reachable over the scale-up fabric (>= node)")
    tiers: dict[TierName, Tier]
    efficiency: Efficiency
    reserved_bytes: int = Field(ge=0, le=MAX_BYTES, description="runtime/framework memory not available to the model")
    max_experts_per_rank: int | None = Field(
        default=None, gt=0, description="dispatch-path cap on routed experts per rank (Atlas A2 MC2: 24)"
    )
    sparse_attention_head_pad: int = Field(
        default=1, gt=0, description="sparse-MLA kernels pad heads per rank up to this (64 on SM90, 128 on SM100)"
    )
    weight_only_formats: list[str] = Field(
        default_factory=list,
        description="compute dtypes the device can store and dequantize in the GEMM kernel without native compute "
        "at that rate (weight-only, e.g. fp4/int4 on Hopper via Marlin-style kernels); GEMMs then run at the "
        "activation dtype. A named format (nvfp4) of a dtype the device computes natively: its rate is another "
        "format's (MI355X's FP4 is MXFP4), so that format is dequantized into 16-bit GEMMs",
    )
    kv_storage_formats: list[str] = Field(
        default_factory=list,
        description="1-byte KV-cache formats the device stores without a native rate for them: the attention "
        "kernels dequantize K and V into 16-bit math (fp8 on Ampere)",
    )
    unloaded_formats: list[str] = Field(
        default_factory=list,
        description="checkpoint formats no engine on the device loads (its quantization method is not in the "
        "platform's list): a checkpoint in one is refused, not served as bf16",
    )
    ep_a2a: EPKernel | None = Field(
        default=None, description="EP dispatch/combine kernel latency; None = the link tiers' latency (no data)"
    )
    sources: dict[str, str] = Field(default_factory=dict, description="field -> public source")
    # the device as its file gives it, when this one is that device with fewer ranks a node: the share an engine
    # whose launch runs equal ranks on every node places (space.placement.as_launched); None: the file's own
    _placed_from: "Hardware | None" = PrivateAttr(None)

    @model_validator(mode="after")
    def _capability_on_platform(self) -> "Hardware":
        if self.capability is not None and self.platform != CAPABILITY_PLATFORM[self.capability]:
            raise ValueError(f"capability {self.capability} runs on platform {CAPABILITY_PLATFORM[self.capability]}, "
                             f"the file states {self.platform or 'none'}")
        return self

    @field_validator("peak_flops")
    @classmethod
    def _positive_flops(cls, value: dict[str, float]) -> dict[str, float]:
        if "bf16" not in value:
            # attention, norms and activations run in bf16 whatever the weights are stored in
            raise ValueError("bf16 is required (attention and activations run in bf16)")
        for dtype, flops in value.items():
            if not MIN_FLOPS <= flops <= MAX_FLOPS:
                raise ValueError(f"{dtype}: {flops:g} FLOP/s is outside [{MIN_FLOPS:g}, {MAX_FLOPS:g}]")
        return value

    @model_validator(mode="after")
    def _topology(self) -> "Hardware":
        from solver.specs.validation import FieldProblem

        node, domain = self.ranks_per_node, self.scale_up_domain
        if domain < node:
            raise FieldProblem("scale_up_domain", f"must be >= ranks_per_node ({node}), got {domain}")
        if "intra_node" not in self.tiers:
            raise FieldProblem("tiers.intra_node", "required (the link inside a node)")
        if "inter_node" not in self.tiers and "inter_rack" not in self.tiers:
            raise FieldProblem("tiers", "needs inter_node or inter_rack for groups beyond the scale-up domain")
        # the planner groups ranks by ranks_per_node and scale_up_domain, the stage hand-off by span_ranks:
        # the two must describe the same machine, and a tier no group can reach would be ignored
        span = self.tiers["intra_node"].span_ranks
        if span != node:
            raise FieldProblem("tiers.intra_node.span_ranks", f"must equal ranks_per_node ({node}), got {span}")
        if domain % node:
            raise FieldProblem("scale_up_domain", f"must be whole nodes, a multiple of ranks_per_node ({node}), "
                                                  f"got {domain}")
        if "scale_up" in self.tiers:
            span = self.tiers["scale_up"].span_ranks
            if domain == node:
                raise FieldProblem("tiers.scale_up", f"reaches no rank beyond the node: scale_up_domain ({domain}) "
                                                     "equals ranks_per_node; raise scale_up_domain or drop the tier")
            if span != domain:
                raise FieldProblem("tiers.scale_up.span_ranks",
                                   f"must equal scale_up_domain ({domain}), got {span}")
        elif domain > node:
            raise FieldProblem("tiers.scale_up", f"required: scale_up_domain ({domain}) exceeds ranks_per_node "
                                                 f"({node}), and its link is not given")
        inner = domain
        for name in ("inter_node", "inter_rack"):
            if name in self.tiers:
                span = self.tiers[name].span_ranks
                if span <= inner:
                    raise FieldProblem(f"tiers.{name}.span_ranks",
                                       f"must exceed the {inner} ranks of the tiers inside it, got {span}")
                inner = span
        return self

    @property
    def fitted_name(self) -> str:
        """The device whose fitted factors this one carries: `fitted_as`, else the file's own name."""
        return self.fitted_as or self.name

    @property
    def fit_keys(self) -> tuple[str, ...]:
        """The names a fit of this device is looked up by, in order (specs.fitted.fit_keys: its own, then
        `fitted_as`), in the shipped fit and a user's file alike."""
        from solver.specs.fitted import fit_keys

        return fit_keys(self.name, self.fitted_as)

    @property
    def memory_gib(self) -> float:
        """HBM per rank in GiB: what a graph-cap condition (profile_serving.GRAPH_CAP_NAMES) and the catalog read."""
        return self.memory_bytes / 2**30

    @field_validator("name")
    @classmethod
    def _name_token(cls, value: str) -> str:
        if not DEVICE_NAME.fullmatch(value):
            raise ValueError("a device name of letters, digits and _ . + - (such as my_accel_8x), starting with a "
                             "letter or digit: outputs label the device by it and --price / --weight-dtype take "
                             "NAME=VALUE")
        return value

    @field_validator("vendor")
    @classmethod
    def _vendor_token(cls, value: str) -> str:
        # compared as written with the profiles' vendor lists: "NVIDIA" would be refused by every NVIDIA engine
        # and miss the NVIDIA calibration; an empty one would pass every engine, Ascend's on a GPU included
        if not VENDOR.fullmatch(value):
            raise ValueError("a lower-case name such as nvidia, amd, huawei or intel (engine profiles list the "
                             "vendors they run on so, and an engine runs only on its vendors' devices)")
        return value

    @field_validator("hbm_bandwidth_Bps", mode="before")
    @classmethod
    def _in_bps(cls, value: object) -> object:
        return _bps_unit(value)

    @field_validator("memory_bytes", "reserved_bytes")
    @classmethod
    def _in_bytes(cls, value: int) -> int:
        # 80 for an 80 GB card reads as 80 bytes (a reserve may still be 0: none; a capacity is > 0 by its Field)
        if 0 < value < MIN_BYTES:
            raise ValueError(f"below 1 MiB: the field is in bytes (80 GiB = {80 * 2**30})")
        return value

    @model_validator(mode="after")
    def _sources_name_fields(self) -> "Hardware":
        from solver.specs.validation import FieldProblem

        for key in self.sources:
            node: object = self
            for part in key.split("."):
                if isinstance(node, BaseModel) and part in type(node).model_fields:
                    node = getattr(node, part)
                elif isinstance(node, dict) and part in node:
                    node = node[part]
                else:  # a typo would leave the field it meant without a source, silently
                    raise FieldProblem(f"sources.{key}", "names no field of this file (a dotted path such as "
                                                         "peak_flops.bf16 or tiers.intra_node.latency_s)")
        return self

    @model_validator(mode="after")
    def _memory_and_formats(self) -> "Hardware":
        from solver.specs.validation import FieldProblem

        if self.reserved_bytes >= self.memory_bytes:
            raise FieldProblem("reserved_bytes", f"must be below memory_bytes ({self.memory_bytes}), "
                                                 f"got {self.reserved_bytes}")
        from solver.specs.dtypes import FORMATS, KV_FORMATS

        unknown = [f for f in self.weight_only_formats if f not in FORMATS]
        if unknown:
            raise FieldProblem("weight_only_formats", f"unknown format {unknown[0]!r}; known: {', '.join(FORMATS)}")
        bad_kv = [f for f in self.kv_storage_formats if f not in KV_FORMATS or FORMATS[f].bits != 8]
        if bad_kv:
            raise FieldProblem("kv_storage_formats", f"{bad_kv[0]!r} is not a 1-byte KV-cache format")
        bad = [f for f in self.unloaded_formats if f not in FORMATS]
        if bad:
            raise FieldProblem("unloaded_formats", f"unknown format {bad[0]!r}; known: {', '.join(FORMATS)}")
        native = sorted(set(self.weight_only_formats) & set(self.peak_flops))
        if native:
            # a dtype with a native peak runs at it: its weight-only entry would be ignored
            raise FieldProblem("weight_only_formats", f"{', '.join(native)} also in peak_flops (native compute); "
                                                      "list each dtype in one of them")
        return self

    def unsourced_efficiencies(self) -> list[str]:
        """The efficiency fields the file gives no source for: assumptions until calibration measures them."""
        return [f"efficiency.{k}" for k in Efficiency.model_fields if f"efficiency.{k}" not in self.sources]

    def supports(self, dtype: str) -> bool:
        return dtype in self.peak_flops

    def flops(self, dtype: str) -> float:
        """Peak FLOP/s for a compute dtype; fp16 falls back to bf16 (same tensor-core rate)."""
        if dtype in self.peak_flops:
            return self.peak_flops[dtype]  # type: ignore[index]
        if dtype == "fp16" and "bf16" in self.peak_flops:
            return self.peak_flops["bf16"]
        raise KeyError(dtype)

    def tier_for_group(self, group_ranks: int, stride: int = 1) -> TierName:
        """Slowest tier a collective of `group_ranks` ranks spaced `stride` apart crosses (one rank: its node)."""
        from solver.specs.topology import crosses

        tier = crosses(self, group_ranks, stride)
        return "intra_node" if tier == "none" else tier  # type: ignore[return-value]


def hardware_from_dict(data: dict, origin: str) -> Hardware:
    from solver.specs.validation import validate_model

    return validate_model(Hardware, data, origin)


def load_hardware_file(path: Path) -> Hardware:
    from solver.specs.validation import load_yaml

    return hardware_from_dict(load_yaml(path), str(path))
