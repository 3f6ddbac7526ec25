"""Reference: one verified deployment (a row of the verified-configs table) with its provenance and results.

References are the seed's step-3 starting points and the ranker's "distance to a verified config". Each lives
in `references/<id>.yaml`; `list_references()` loads them all.
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from solver.catalog import catalog_dir
from solver.errors import InputError
from solver.specs.dtypes import spelled_with
from solver.specs.hardware import Hardware
from solver.specs.model import ModelSpec
from solver.specs.knobs import SEED_KNOBS
from solver.specs.parallel import ParallelConfig
from solver.specs.precision import Precision, resolve_precision
from solver.specs.scenario import Scenario

# The seed's eight parallel_config keys (attn_sp_size is newer than every verified deployment): specs.knobs.
SeedKnob = Literal[SEED_KNOBS]  # type: ignore[valid-type]
ScenarioLabel = Literal["throughput", "latency", "long_context", "prefill"]
# the planner's scenario kind for each label: long-context and prefill deployments are run for throughput
PLANNING_KIND = {"throughput": "throughput", "latency": "latency", "long_context": "throughput",
                 "prefill": "throughput"}
WeightDtype = Literal["bf16", "int8", "int4"]
ActDtype = Literal["bf16", "int8"]


class ReferenceKnobs(BaseModel):
    """All eight keys, as the deployment ran them (an absent key is recorded as 1, the framework default)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    attn_tp_size: int = Field(ge=1)
    dense_tp_size: int = Field(ge=1)
    moe_tp_size: int = Field(ge=1)
    embed_tp_size: int = Field(ge=1)
    lmhead_tp_size: int = Field(ge=1)
    o_proj_tp_size: int = Field(ge=1)
    cp_size: int = Field(ge=1)
    kvp_size: int = Field(ge=1)

    def as_dict(self) -> dict[str, int]:
        return {k: getattr(self, k) for k in SEED_KNOBS}


class Quant(BaseModel):
    """Number formats the deployment ran; `scheme` is the label it was published under (W8A8C8, ...)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    scheme: str
    weights: WeightDtype
    activations: ActDtype
    kv_cache: ActDtype
    moe_weights: WeightDtype | None = Field(None, description="routed-expert weights when they differ")

    def spelled(self, weights: str | None) -> str | None:
        """A weight format as the planner reads it with these activations (dtypes.spelled_with: int4 beside int8
        activations is W4A8; a plain int4 prices W4A16, the published W4A8C8 recipes run W4A8)."""
        return spelled_with(weights, self.activations)


class Provenance(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    source: str
    facts_file: str


class Result(BaseModel):
    """One published measurement on this deployment (or its family at another batch/context)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    metric: str = Field(pattern=r"^[a-z0-9_]+$")
    value: float = Field(gt=0)
    unit: str
    conditions: str
    batch: int | None = Field(None, ge=1)
    context_len: int | None = Field(None, ge=1)


class Reference(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    model: str = Field(description="catalog alias")
    model_name: str = Field(description="the name the deployment was published under")
    hardware: Literal["atlas_a3", "atlas_a2"]
    world_size: int = Field(ge=1)
    afd: bool = Field(False, description="attention-FFN disaggregation: half the ranks attention, half FFN")
    phase: Literal["prefill", "decode"]
    batch: int = Field(ge=1)
    input_len: int = Field(ge=1)
    output_len: int | None = Field(None, ge=1)
    parallel_config: ReferenceKnobs
    absent_keys: list[SeedKnob] = Field(default_factory=list, description="keys the deployment left unset (= 1)")
    quant: Quant
    mtp: int = Field(0, ge=0)
    other: str = ""
    pattern: str
    scenario: ScenarioLabel
    provenance: Provenance
    results: list[Result] = Field(default_factory=list)

    @model_validator(mode="after")
    def _consistent(self) -> "Reference":
        knobs = self.parallel_config.as_dict()
        for key, value in knobs.items():
            if self.world_size % value:
                raise ValueError(f"parallel_config.{key} = {value} does not divide world_size {self.world_size}")
        for key in self.absent_keys:
            if knobs[key] != 1:
                raise ValueError(f"absent_keys lists {key} but parallel_config sets it to {knobs[key]}")
        if len(set(self.absent_keys)) != len(self.absent_keys):
            raise ValueError("absent_keys: listed twice")
        if self.phase == "decode" and self.output_len is None:
            raise ValueError("output_len is required for a decode deployment")
        return self

    # derived sizes, as the framework computes them (never stored)
    @property
    def attn_dp_size(self) -> int:
        return self.world_size // self.parallel_config.attn_tp_size

    @property
    def moe_ep_size(self) -> int:
        return self.world_size // self.parallel_config.moe_tp_size

    @property
    def knobs(self) -> dict[str, int]:
        return self.parallel_config.as_dict()

    def config(self) -> ParallelConfig:
        return ParallelConfig(world_size=self.world_size, **self.knobs)

    def planning_scenario(self) -> Scenario:
        """The deployment's workload as the planner takes it: its phase (prefill or decode alone), batch as
        the fixed concurrency, lengths and MTP depth."""
        return Scenario(kind=PLANNING_KIND[self.scenario], isl=self.input_len, osl=self.output_len or 1,
                        concurrency=self.batch, mtp=self.mtp, phase=self.phase,
                        max_concurrency=max(self.batch, Scenario.model_fields["max_concurrency"].default))

    def precision(self, model: ModelSpec, hw: Hardware) -> Precision:
        q = self.quant
        return resolve_precision(model, hw, q.spelled(q.weights), q.spelled(q.moe_weights), q.kv_cache)


# Every reference is a row of verified-configs.md, whose source is hicann/cann-recipes-infer: the profile that
# encodes that framework's rules is the one its deployments ran under
REFERENCE_FRAMEWORK = "cann-recipes"


def is_reference_record(data: dict) -> bool:
    """A mapping in this module's format (its provenance and id), not a deployment file."""
    return "provenance" in data and "id" in data


def deployment_data(ref: Reference) -> dict:
    """The reference as a deployment file's mapping (specs.deployment): its framework, world, knobs, workload
    (a prefill's batch of input_len prompts; a decode's batch over input_len + output_len), formats and MTP
    depth, attention-FFN disaggregation where it ran it, so `check` reviews and estimates a verified deployment as it
    ran."""
    workload = ({"phase": "prefill", "batch": ref.batch, "seq_len": ref.input_len} if ref.phase == "prefill"
                else {"phase": "decode", "batch": ref.batch, "isl": ref.input_len, "osl": ref.output_len})
    q = ref.quant
    quant = {"weights": q.spelled(q.weights), "kv_cache": q.kv_cache,
             **({"moe_weights": q.spelled(q.moe_weights)} if q.moe_weights else {})}
    return {"model": ref.model, "hardware": ref.hardware, "framework": REFERENCE_FRAMEWORK,
            "world_size": ref.world_size, "parallel_config": ref.knobs, "workload": workload, "quant": quant,
            "mtp": ref.mtp, **({"afd": True} if ref.afd else {})}


def references_dir() -> Path:
    return catalog_dir("references")


def load_reference_file(path: Path) -> Reference:
    from solver.specs.validation import load_yaml, validate_model

    ref = validate_model(Reference, load_yaml(path), str(path))
    if ref.id != Path(path).stem:
        raise InputError(f"{path}: id", f"'{ref.id}' does not match the file name '{Path(path).stem}'")
    return ref


@lru_cache(maxsize=1)
def _all() -> tuple[Reference, ...]:
    return tuple(sorted((load_reference_file(p) for p in references_dir().glob("*.yaml")), key=lambda r: r.id))


def list_references() -> list[Reference]:
    """Every shipped reference, sorted by id."""
    return list(_all())


def load_reference(ref_id: str) -> Reference:
    path = references_dir() / f"{ref_id.strip().lower()}.yaml"
    if not path.is_file():
        known = ", ".join(r.id for r in _all())
        raise InputError("reference", f"unknown reference '{ref_id}'; known: {known}")
    return load_reference_file(path)
