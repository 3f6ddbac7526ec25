"""ParallelConfig: the seed's parallel_config keys. DP and EP sizes are derived, never stored."""
from __future__ import annotations

from numbers import Integral
from typing import TYPE_CHECKING, Mapping

from pydantic import BaseModel, ConfigDict, Field

from solver.errors import InputError
from solver.memo import IdentityMemo
from solver.specs.knobs import CONFIG_KEYS, FOLLOWS, KNOB_FLAGS, KNOBS, SETTING_FLAGS, SETTINGS  # noqa: F401 (re-exported)
from solver.specs.limits import MAX_CARDS

if TYPE_CHECKING:
    from solver.specs.model import ModelSpec


def smallest_redundant(experts: int, ep: int) -> int:
    """The fewest extra expert copies that make EP divide the physical expert slots: (-E) mod EP (0 when EP
    divides E). 256 experts: EP72 and EP144 need 32 (288 slots, DeepSeek's decode EP144 runs 32 redundant),
    EP320 needs 64."""
    return (-experts) % ep if ep > 1 and experts > 0 else 0




# knobs that size a group inside one pipeline stage (all but pp itself)
TP_STAGE_KNOBS = tuple(k for k in KNOBS if k != "pp_size")


# the knobs that split attention by sequence (context, KV cache, Ulysses heads): a model without attention lacks them
SEQUENCE_KNOBS = ("cp_size", "kvp_size", "attn_sp_size")


def model_knobs(model: "ModelSpec") -> tuple[str, ...]:
    """The knobs this model has, in KNOBS order: one per module it contains. No moe_tp_size without routed
    experts; no dense_tp_size without a dense FFN or shared experts; no o_proj_tp_size outside MLA models
    (o_proj follows attention TP there); no cp_size, kvp_size or attn_sp_size without an attention layer whose KV
    grows with the sequence (a pure SSM stack: its state does not grow, nothing to split by sequence). Memoised per model object (every rule environment asks: the planner's
    rule tables build tens of thousands)."""
    return _MODEL_KNOBS.get((model,), None, lambda: _model_knobs(model))


_MODEL_KNOBS = IdentityMemo(4096)
_ABSENT = IdentityMemo(4096)


def _model_knobs(model: "ModelSpec") -> tuple[str, ...]:
    absent = set()
    if not model.is_moe:
        absent.add("moe_tp_size")
    if not model.has_dense_module:
        absent.add("dense_tp_size")
    if not model.has_mla:
        absent.add("o_proj_tp_size")
    if model.attention_kind == "none":
        absent.update(SEQUENCE_KNOBS)
    return tuple(k for k in KNOBS if k not in absent)


def absent_knobs(model: "ModelSpec") -> tuple[str, ...]:
    def build() -> tuple[str, ...]:
        present = set(model_knobs(model))
        return tuple(k for k in KNOBS if k not in present)

    return _ABSENT.get((model,), None, build)


def absent_knob_problems(model: "ModelSpec", knobs: dict[str, int]) -> list[str]:
    """One line per knob a config sets for a module the model lacks (1, or the value it is tied to, is the
    knob's own default and passes)."""
    out = []
    for k in absent_knobs(model):
        v = knobs.get(k, 1)
        tied = knobs.get(FOLLOWS[k], 1) if k in FOLLOWS else 1
        if v not in (1, tied):
            why = {"moe_tp_size": "has no routed experts",
                   "dense_tp_size": "has no dense FFN or shared experts",
                   "o_proj_tp_size": "has no MLA: o_proj follows attention TP",
                   **{s: "has no attention layer whose KV grows with the sequence" for s in SEQUENCE_KNOBS}}[k]
            out.append(f"{k} = {v} but {model.name} {why}; leave {k} out")
    return out


_STAGES: dict[tuple[int, ...], "ParallelConfig"] = {}  # ParallelConfig.key() -> its stage() (frozen: shared)
_STAGES_MAX = 100_000


def replica_group(knobs: Mapping[str, int], replica_knobs: tuple[str, ...] = ()) -> int:
    """Ranks of one attention replica as the engine counts them: attention TP times its replica knobs
    (FrameworkProfile.replica_knobs); a knob not given is 1."""
    group = knobs.get("attn_tp_size", 1)
    for k in replica_knobs:
        group *= knobs.get(k, 1)
    return group


class ParallelConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    world_size: int = Field(gt=0, le=MAX_CARDS)
    attn_tp_size: int = Field(1, gt=0, le=MAX_CARDS)
    dense_tp_size: int = Field(1, gt=0, le=MAX_CARDS)
    moe_tp_size: int = Field(1, gt=0, le=MAX_CARDS)
    embed_tp_size: int = Field(1, gt=0, le=MAX_CARDS)
    lmhead_tp_size: int = Field(1, gt=0, le=MAX_CARDS)
    o_proj_tp_size: int = Field(1, gt=0, le=MAX_CARDS)
    cp_size: int = Field(1, gt=0, le=MAX_CARDS)
    kvp_size: int = Field(1, gt=0, le=MAX_CARDS)
    attn_sp_size: int = Field(1, gt=0, le=MAX_CARDS)
    # pipeline stages: world = pp x the ranks of one stage; every other knob sizes groups inside one stage
    pp_size: int = Field(1, gt=0, le=MAX_CARDS)
    redundant_experts: int = Field(0, ge=0, le=MAX_CARDS)

    # -- derived (the seed: *_dp_size = world_size // *_tp_size, inside one pipeline stage)
    @property
    def stage_world(self) -> int:
        """Ranks of one pipeline stage (the whole world without PP)."""
        return self.world_size // self.pp_size

    @property
    def attn_dp_size(self) -> int:
        return self.stage_world // self.attn_tp_size

    def attn_dp(self, replica_knobs: tuple[str, ...] = ()) -> int:
        """Attention DP as the engine counts it: attn_dp_size in the seed's; `replica_knobs`
        (FrameworkProfile.replica_knobs) are the knobs whose ranks the engine counts inside one replica beside
        attention TP: where KVP reuses the TP ranks (vLLM / SGLang / ATOM -dcp) the DP is over whole TP groups
        of attn_tp x kvp ranks (TP8 -dcp 8 on 8 ranks has no DP, not DP8); SGLang's CP ranks (--attn-cp-size)
        are one replica too (TP4 x CP2 on 8 ranks has no DP)."""
        return self.stage_world // replica_group(self.knobs(), replica_knobs)

    @property
    def moe_ep_size(self) -> int:
        return self.stage_world // self.moe_tp_size

    @property
    def token_shards(self) -> int:
        """Ranks a step's tokens are split over inside an attention group: CP (a prompt's tokens) x SP."""
        return self.cp_size * self.attn_sp_size

    @property
    def attn_group_size(self) -> int:
        """Ranks that jointly serve one request's attention: the product of knobs.ATTN_GROUP_KNOBS (written out: a
        hot path; tests/test_group_names.py holds the two equal)."""
        return self.attn_tp_size * self.cp_size * self.kvp_size * self.attn_sp_size

    @property
    def attn_replicas(self) -> int:
        """Independent attention replicas (groups that serve disjoint requests)."""
        return max(1, self.stage_world // self.attn_group_size)

    def attn_tp_group(self, kvp_splits_weights: bool) -> int:
        """Ranks that split one attention layer's weights and projections (and hold its output whole after the
        o_proj all-reduce): attention TP, times KVP where the engine carves its KVP group out of its TP ranks
        (FrameworkProfile.kvp_splits_attention_weights: vLLM's -dcp, TP = attn_tp x kvp). In the seed's KVP
        each KVP rank holds its attention-TP group's weights whole. The attention core is split either way by
        heads over attention TP and keys over KVP."""
        return self.attn_tp_size * self.kvp_size if kvp_splits_weights else self.attn_tp_size

    @property
    def oproj_shards(self) -> int:
        """o_proj split: its own TP when set, else it follows attention TP (row-parallel)."""
        return self.oproj_split(False)

    def oproj_split(self, kvp_splits_weights: bool) -> int:
        """o_proj split under the engine's KVP layout: its own TP when set, else it follows the ranks that split
        the heads before it (attn_tp_group: an engine without an o_proj knob whose KVP reuses the TP ranks, SGLang
        --dcp-size or ATOM -dcp, runs o_proj over the whole TP group)."""
        return self.o_proj_tp_size if self.o_proj_tp_size > 1 else self.attn_tp_group(kvp_splits_weights)

    def knobs(self) -> dict[str, int]:
        return {k: getattr(self, k) for k in KNOBS}

    def key(self) -> tuple[int, ...]:
        """Every field's value in declaration order (world size, knobs, settings): the config's identity for
        the estimator's caches (a pydantic model keeps exactly its fields in __dict__; 7x faster than getattr)."""
        return tuple(self.__dict__.values())

    def stage(self) -> "ParallelConfig":
        """One pipeline stage as a config of its own: the stage's ranks, no PP (one object per config: the
        planner's tables ask for it on every share, and a pydantic copy costs ~20 us)."""
        key = self.key()
        out = _STAGES.get(key)
        if out is None:
            if len(_STAGES) >= _STAGES_MAX:
                _STAGES.clear()
            out = _STAGES[key] = self.model_copy(update={"world_size": self.stage_world, "pp_size": 1})
        return out

    def settings(self) -> dict[str, int]:
        """The knobs plus the non-divisor settings (redundant experts): what a parallel_config block holds."""
        return {**self.knobs(), **{k: getattr(self, k) for k in SETTINGS}}

    def expert_slots(self, experts: int) -> int:
        """Physical routed-expert copies over the MoE group: the model's experts plus the redundant ones."""
        return experts + self.redundant_experts if experts else 0

    def knobs_and_derived(self) -> dict[str, int]:
        """The knobs plus the DP/EP sizes the framework derives: the seed's parallel_config block."""
        return {**self.knobs(), "attn_dp_size": self.attn_dp_size, "moe_ep_size": self.moe_ep_size}

    def with_derived(self) -> dict[str, int]:
        return {"world_size": self.world_size, **self.knobs_and_derived()}

    def own_with_derived(self, model: "ModelSpec") -> dict[str, int]:
        """The world size and model_view of the model's own knobs: what estimate and memory show for one
        configuration, as solve and check show theirs."""
        return {"world_size": self.world_size, **self.model_view(model_knobs(model))}

    def model_view(self, present: tuple[str, ...] | list[str], replica_knobs: tuple[str, ...] = ()) -> dict[str, int]:
        """knobs_and_derived limited to a model's own knobs (model_knobs): no MoE EP size without MoE.
        `replica_knobs`: the engine's (FrameworkProfile.replica_knobs), so attn_dp_size is its DP (attn_dp)."""
        out = {k: getattr(self, k) for k in KNOBS if k in present and (k != "pp_size" or self.pp_size > 1)}
        out["attn_dp_size"] = self.attn_dp(replica_knobs)
        if "moe_tp_size" in present:
            out["moe_ep_size"] = self.moe_ep_size
            if self.redundant_experts:
                out["redundant_experts"] = self.redundant_experts
        return out


def make_parallel_config(world_size: int, *, fields: Mapping[str, str] | None = None,
                         **knobs: int | None) -> ParallelConfig:
    """Build and check divisibility: every knob must divide the world size (seed class A). `fields` names where
    each knob was given (a file's "FILE: parallel_config.attn_tp_size") for errors; default: the flags."""
    if isinstance(world_size, bool) or not isinstance(world_size, Integral) or not 1 <= world_size <= MAX_CARDS:
        raise InputError("cards", f"must be an integer in [1, {MAX_CARDS:,}], got {world_size!r}")

    def where(knob: str) -> str:
        return (fields or {}).get(knob) or KNOB_FLAGS.get(knob, SETTING_FLAGS.get(knob, knob))

    values = {k: v for k, v in knobs.items() if v is not None}
    for knob, value in values.items():
        if knob not in CONFIG_KEYS:
            raise InputError(knob, "unknown parallel knob")
        if isinstance(value, bool) or not isinstance(value, Integral):
            raise InputError(where(knob), f"must be an integer, got {value!r}")
        if knob in SETTINGS:
            if not 0 <= value <= MAX_CARDS:
                raise InputError(where(knob), f"must be in [0, {MAX_CARDS:,}], got {value}")
            continue
        if value < 1:
            raise InputError(where(knob), f"must be >= 1, got {value}")
        if world_size % value:
            raise InputError(where(knob), f"{value} does not divide the world size {world_size}")
    pc = ParallelConfig(world_size=world_size, **values)
    if pc.stage_world % pc.attn_group_size:
        where_stage = f"the stage size {pc.stage_world} (world {world_size} / pp {pc.pp_size})" if pc.pp_size > 1 \
            else f"the world size {world_size}"
        group = "--attn-tp/--cp/--kvp/--attn-sp" if not fields else \
            (fields.get("attn_tp_size") or "attn_tp_size").rpartition(".")[0] or "parallel_config"
        raise InputError(group, f"attention group attn_tp*cp*kvp*sp = {pc.attn_group_size} does not divide "
                                f"{where_stage}")
    for knob, value in values.items():
        if knob in TP_STAGE_KNOBS and pc.stage_world % value:
            raise InputError(where(knob), f"{value} does not divide the stage size {pc.stage_world} "
                             f"(world {world_size} / pp {pc.pp_size})")
    return pc
