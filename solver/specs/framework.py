"""FrameworkProfile: which parallel knobs an inference framework exposes and the rules its code enforces.

A framework is data (`solver/frameworks/<name>.yaml`), not a code branch. Each rule is a pair of expressions
in the safe language of `solver.specs.expr` over a fixed set of names (`RULE_NAMES`); the planner turns the
same rules into constraints, and `shardplan check` evaluates them on one configuration. Knobs a framework
does not expose are fixed at 1.
"""
from __future__ import annotations

import itertools
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Mapping

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator

from solver.catalog import frameworks_dir
from solver.errors import InputError, quoted
from solver.specs.limits import MAX_MTP, MAX_TOKENS
from solver.specs.knobs import ATTN_GROUP_KNOBS, DERIVED, DERIVED_NAMES, FOLLOWS, KNOBS, SETTINGS
from solver.specs.expr import NOT_A_CONDITION, Expr, Value, compile_expr, is_condition
from solver.specs.fitted import apply_fitted, fitted_factors, fitted_global, pair_factors
from solver.specs.hardware import VENDOR
from solver.specs.launch_spec import Feature, FeatureName, LaunchSpec
from solver.specs.rule_env import PLATFORM_FLAGS

if TYPE_CHECKING:
    from solver.specs.hardware import Hardware

KNOB_NAMES: tuple[str, ...] = KNOBS  # re-exported: the registry's knob names (specs.knobs)
KnobName = Literal[KNOBS]  # type: ignore[valid-type]

# What a rule may read. Model facts come from the model's config.json; `afd` (attention-FFN disaggregation)
# is a deployment switch, not a knob, but one framework rule depends on it.
DEPLOYMENT_NAMES = ("world", "batch", "mtp", "ranks_per_node", "afd", *PLATFORM_FLAGS)
# parallel_config settings that are not group sizes (parallel.SETTINGS): the redundant expert copies (EPLB)
MODEL_NAMES = (
    "num_attention_heads", "num_key_value_heads", "n_routed_experts", "has_mla", "has_dsa", "has_csa", "is_moe",
    "o_proj_dim", "has_recurrent_mixer",
)
# Group sizes a rule or launch line reads by name, each the product of some knobs (FrameworkProfile.group_products):
# tp_group_size, the engine's tensor-parallel size (its -tp: attention TP times the knobs it carves out of the TP
# ranks, tp_group_knobs); attn_group_size, the ranks one attention group spans, TP x CP x KVP x SP
# (ParallelConfig.attn_group_size; the engine's DP is world // it)
GROUP_NAMES = ("tp_group_size", "attn_group_size")
RULE_NAMES: frozenset[str] = frozenset((*KNOB_NAMES, *SETTINGS, *DERIVED_NAMES, *DEPLOYMENT_NAMES, *MODEL_NAMES,
                                        *GROUP_NAMES))
# the rule names that are yes/no (a `when` or `require` may be one of them alone); the others are numbers
RULE_FLAGS: frozenset[str] = frozenset(("has_mla", "has_dsa", "has_csa", "is_moe", "afd", "has_recurrent_mixer",
                                        *PLATFORM_FLAGS))


# Every model of a profile is strict, as a device file is (specs/hardware.py): true is not an efficiency of 1.0 or
# an MTP bound of 1, 0 is not false, "3" is not 3; a YAML slip is refused naming the field rather than coerced.
class Rule(BaseModel):
    """`require` must hold whenever `when` holds; `message` is the one line a user sees otherwise."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)

    id: str = Field(pattern=r"^[A-Z]\.[a-z0-9_]+$", description="class letter + name, e.g. C.cp_full_world")
    when: str = "true"
    require: str
    message: str
    source: str = Field(min_length=1)
    # "warning" marks the engine's advice: a violation is legal but slow or pointless (a fallback path, a split
    # that saves nothing), so `check` accepts such a file with a warning while the planner plans within the rule
    # (a configuration against the engine's advice is never recommended)
    severity: Literal["error", "warning"] = "error"
    # True marks the planner's own bookkeeping (a rule of its cost model, e.g. a disaggregated prefill pool's
    # step filling every replica), not the engine's nor the user's: no one can act on it, so a diagnosis never
    # relaxes it nor names it as binding (cpsat.Planner.families)
    bookkeeping: bool = False

    _when: Expr = PrivateAttr()
    _require: Expr = PrivateAttr()
    _read: tuple[str, ...] = PrivateAttr()  # the names, sorted: what reading() looks up

    @field_validator("message")
    @classmethod
    def _one_line(cls, value: str) -> str:
        value = value.strip()
        if not value or "\n" in value:
            raise ValueError("must be one non-empty line")
        return value

    @model_validator(mode="after")
    def _compile(self) -> "Rule":
        for attr in ("when", "require"):
            try:
                expr = compile_expr(getattr(self, attr))
            except InputError as exc:
                raise ValueError(f"rule {self.id}: {attr}: {exc}") from None
            unknown = sorted(expr.names - RULE_NAMES)
            if unknown:
                raise ValueError(
                    f"rule {self.id}: {attr} uses unknown name(s) {', '.join(unknown)}; "
                    f"allowed: {', '.join(sorted(RULE_NAMES))}"
                )
            if not is_condition(expr, RULE_FLAGS):
                raise ValueError(f"rule {self.id}: {attr}: {expr.text!r} {NOT_A_CONDITION}")
            setattr(self, f"_{attr}", expr)
        self._read = tuple(sorted(self._when.names | self._require.names))
        return self

    def bind(self, products: tuple[tuple[str, tuple[str, ...]], ...]) -> None:
        """Read the group names (GROUP_NAMES) as the profile's products of knobs: `names` then holds the knobs."""
        self._when = compile_expr(self.when, products)
        self._require = compile_expr(self.require, products)
        self._read = tuple(sorted(self._when.names | self._require.names))

    @property
    def names(self) -> frozenset[str]:
        return self._when.names | self._require.names

    @property
    def when_names(self) -> frozenset[str]:
        return self._when.names

    def _evaluate(self, attr: str, env: Mapping[str, Value]) -> bool:
        try:
            return bool(getattr(self, f"_{attr}").evaluate(env))
        except InputError as exc:  # a division by a knob that is 0 here: name the rule, not only its text
            raise InputError(f"framework rule {self.id}", f"{attr}: {exc}") from None

    def applies(self, env: Mapping[str, Value]) -> bool:
        return self._evaluate("when", env)

    def _holds_at(self, env: Mapping[str, Value]) -> bool:
        return not self.applies(env) or self._evaluate("require", env)

    def reading(self, env: Mapping[str, Value]) -> tuple:
        """What `holds(env)` reads of `env`: its names' values, the world (over whose divisors a free knob
        ranges) and which knobs are free. Two environments with equal readings get the same verdict."""
        return tuple(map(env.get, self._read)), env.get("world"), tuple(getattr(env, "free", ()))

    def holds(self, env: Mapping[str, Value]) -> bool:
        """True when the rule does not apply or its requirement is met. A knob of a module the model lacks
        (rule_env.RuleEnv.free) has no value: the rule holds when some value of it would satisfy it, so a rule about a
        missing module never constrains the others."""
        free = [k for k in getattr(env, "free", ())
                if k in self.names or any(d in self.names for d, src in DERIVED.items() if src == k)]
        if not free:
            return self._holds_at(env)
        world = int(env["world"])
        values = [d for d in range(1, world + 1) if world % d == 0]
        for combo in itertools.product(values, repeat=len(free)):
            trial = {**env, **dict(zip(free, combo))}
            for derived, src in DERIVED.items():
                trial[derived] = world // int(trial[src])
            if self._holds_at(trial):
                return True
        return False


class FrameworkEfficiency(BaseModel):
    """Per-framework multipliers on the hardware's achieved-vs-peak factors; fitted later, 1.0 until then."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)

    gemm: float = Field(1.0, gt=0, le=100)
    attention: float = Field(1.0, gt=0, le=100)
    hbm: float = Field(1.0, gt=0, le=100)
    comm: float = Field(1.0, gt=0, le=100)
    grouped_gemm: float = Field(
        1.0, gt=0, le=100, description="multiplier on the routed-expert grouped GEMM's fraction of the dense GEMM's FLOP/s"
    )
    dequant_gemm: float = Field(
        1.0, gt=0, le=100, description="multiplier on a weight-only (W4A16 / W8A16) GEMM's fraction of the dense "
        "16-bit GEMM's FLOP/s"
    )
    kernel_overhead_s: float | None = Field(None, ge=0, le=1, description="overrides the hardware's when set")
    step_overhead_s: float = Field(0.0, ge=0, le=1, description="fixed scheduler/launch cost per forward step")


class TokenBudgetTier(BaseModel):
    """A larger scheduler token budget the framework picks by default on devices with more memory."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)

    min_memory_gib: float = Field(gt=0, le=2**20, description="applies to devices with at least this much HBM (GiB)")
    tokens: int = Field(gt=0, le=MAX_TOKENS)


# Tokens per scheduler step when neither the workload nor the framework profile sets one: the public default
# of vLLM max_num_batched_tokens / SGLang chunked_prefill_size (the profiles carry each framework's own)
DEFAULT_TOKEN_BUDGET = 8192


class FrameworkScheduler(BaseModel):
    """The serving scheduler's defaults that shape prefill: tokens per forward step (chunked-prefill size /
    max_num_batched_tokens / max_num_tokens), as the framework sets them when the user does not."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)

    token_budget: int = Field(DEFAULT_TOKEN_BUDGET, gt=0, le=MAX_TOKENS, description="default tokens per forward step")
    token_budget_tiers: list[TokenBudgetTier] = Field(
        default_factory=list, description="larger defaults by device memory (the framework's own thresholds)"
    )
    token_budget_by_device_name: dict[str, int] = Field(
        default_factory=dict,
        description="a word of the device's product name (lower case) -> budget, where the framework decides by "
                    "the name the driver reports (vLLM: 'a100' in it): matched in the hardware's name and description",
    )
    budget_split_by_attention_dp: bool = Field(
        False, description="the budget is divided by the attention-DP size (each DP rank gets budget / dp)"
    )
    source: str = ""

    def token_budget_for(self, device_name: str, memory_bytes: float | None) -> int:
        """The default budget on a device named `device_name` (its file's name and description) with
        `memory_bytes` of HBM (None: unknown)."""
        name = device_name.lower()
        for word, budget in self.token_budget_by_device_name.items():
            if word in name:
                return budget
        budget = self.token_budget
        if memory_bytes is not None:
            for tier in sorted(self.token_budget_tiers, key=lambda t: t.min_memory_gib):
                if memory_bytes >= tier.min_memory_gib * 2**30:
                    budget = tier.tokens
        return budget


class GraphBatchRange(BaseModel):
    """Captured decode batch sizes start, start + step, ..., up to stop (inclusive)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    start: int = Field(gt=0)
    stop: int = Field(gt=0)
    step: int = Field(1, gt=0)


class FrameworkServing(BaseModel):
    """How the engine's serving loop spends time outside the kernels (engine_step.py, closed_loop.py, scheduler.py): which work
    its scheduler puts in a forward step, the CUDA-graph batch sizes it captures, what runs eagerly, and its
    custom small-message all-reduce. Defaults describe an engine with none of these (plain formulas)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    policy: Literal["prefill_first", "decode_first"] = Field(
        "decode_first", description="prefill_first: waiting prompts run as their own context batch before "
        "decodes resume (SGLang, TRT-LLM); decode_first: running decodes first, prompts chunked into the rest "
        "of the token budget (vLLM V1)")
    attention_dp_policy: Literal["prefill_first", "decode_first"] | None = Field(
        None, description="the policy when attention-DP ranks step together (MoE with attention DP), where the "
        "scheduler balances context requests across ranks; None = `policy`")
    first_token_iterations: float = Field(
        0.0, ge=0, le=2, description="engine iterations between the end of a prompt's prefill and its first "
        "streamed token (1 with an overlap scheduler that processes step i's output during step i+1)")
    graph_batches: list[GraphBatchRange] = Field(
        default_factory=list, description="decode batch sizes captured as CUDA graphs (a batch runs padded to "
        "the next one); empty = no graphs; past the largest, decode runs eagerly")
    eager_launch_s: float = Field(
        0.0, ge=0, description="host time per kernel launched eagerly (prefill, decode past the largest graph): "
        "an eager step takes at least kernels x this")
    allreduce_oneshot_max_bytes: int = Field(
        0, ge=0, description="the custom all-reduce runs one-shot up to this message size per rank (0: no "
        "custom all-reduce kernel, NCCL ring at every size)")
    allreduce_custom_max_bytes: int = Field(
        0, ge=0, description="two-shot custom all-reduce up to this size; NCCL above")
    allreduce_oneshot_max_bytes_by_ranks: dict[int, int] = Field(
        default_factory=dict, description="groups of at most R ranks run one-shot up to this size instead of "
        "allreduce_oneshot_max_bytes (R: bytes; the smallest R that holds the group applies)")
    source: str = ""

    @model_validator(mode="after")
    def _ordered(self) -> "FrameworkServing":
        for r in self.graph_batches:
            if r.stop < r.start:
                raise ValueError(f"graph_batches: stop {r.stop} < start {r.start}")
        if self.allreduce_custom_max_bytes < self.allreduce_oneshot_max_bytes:
            raise ValueError("allreduce_custom_max_bytes must be >= allreduce_oneshot_max_bytes")
        return self

    def graph_sizes(self) -> tuple[int, ...]:
        """Every captured batch size, ascending."""
        return tuple(sorted({b for r in self.graph_batches for b in range(r.start, r.stop + 1, r.step)}))


class FrameworkProfile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    description: str
    source: str
    knobs: list[KnobName] = Field(min_length=1, description="knobs the framework exposes; others are fixed at 1")
    splits_kv_heads: bool = Field(
        description="attention TP splits KV heads, so it must divide num_key_value_heads (no replication)"
    )
    max_mtp: int = Field(ge=0, le=MAX_MTP, description="deepest MTP / next-n speculation the framework runs")
    kvp_splits_attention_weights: bool = Field(
        False, description="its KV-parallel group is carved out of the TP ranks (decode context parallel, TP = "
        "attn_tp_size x kvp_size): the attention weights and projections split over all TP x KVP ranks, KVP "
        "splitting only the KV cache by tokens; false: the seed's KVP, each KVP rank holding its attention-TP "
        "group's weights whole")
    cp_replicates_kv_cache: bool = Field(
        False, description="its context-parallel ranks each keep every request's whole KV cache (vLLM's prefill "
        "context parallel all-gathers the K/V its ranks compute into a complete replica on each): CP splits a "
        "prompt's compute, not the cache; false: the seed's CP, each CP rank holding its share of the tokens")
    sp_decode_repeats_batch: bool = Field(
        False, description="its attention sequence-parallel ranks (attn_sp_size) each decode their attention "
        "replica's whole batch with the attention weights whole (SGLang's attention CP: prefill splits a prompt's "
        "tokens over the ranks, decode repeats the DP slot on every one of them): SP adds no decode throughput, "
        "and the MoE still sees each token once; false: the RFC's SP, each SP rank decoding its share of the "
        "tokens")
    cp_decode_repeats_batch: bool = Field(
        False, description="its context-parallel ranks (cp_size) each decode their attention replica's whole batch "
        "with the attention weights whole, as sp_decode_repeats_batch (SGLang's --attn-cp-size with "
        "--enable-prefill-cp: prefill splits a prompt's tokens over the ranks, decode repeats the DP slot on every "
        "one); needs cp_replicates_kv_cache; false: each CP rank decodes its own requests (vLLM's PCP)")
    cp_decode_shards_kv: bool = Field(
        False, description="its context-parallel ranks (cp_size) each keep 1/cp of every request's KV cache and "
        "each decode the attention replica's whole batch over their shard, the partial outputs merged by "
        "log-sum-exp over the CP group (vllm-ascend's PCP: each rank stores max_model_len / pcp tokens, decode "
        "requests duplicated on every PCP rank, output and lse all-gathered); excludes cp_replicates_kv_cache")
    sp_in_tp_group: bool = Field(
        False, description="its attention sequence-parallel ranks (attn_sp_size) are TP ranks: its tensor-parallel "
        "size counts them (vllm-ascend's enable_dsa_cp splits the tokens over the TP group, the attention weights "
        "unsplit), so -tp = attn_tp_size x kvp_size x attn_sp_size; false: SP ranks beside the TP group")
    equal_ranks_per_node: bool = Field(
        False, description="its multi-node launch runs the same number of ranks on every node (vLLM's and "
        "SGLang's --nnodes: world / nnodes a node), so ranks that leave a node part-filled spread evenly over the "
        "fewest nodes that hold them (12 on 8-GPU nodes: 2 x 6; space.placement); false: nodes fill in rank "
        "order, the last one part-filled (one MPI world)")
    vendors: list[str] = Field(default_factory=list, description="device vendors the engine runs on (hardware "
                               "files' `vendor`); empty: any (the generic profile, a user's own)")
    rules: list[Rule] = Field(default_factory=list)
    efficiency: FrameworkEfficiency = Field(default_factory=FrameworkEfficiency)
    scheduler: FrameworkScheduler = Field(default_factory=FrameworkScheduler)
    launch: LaunchSpec | None = Field(None, description="how the engine's flags and files spell a config")
    features: dict[FeatureName, Feature] = Field(
        default_factory=dict, description="engine features the planner does not model yet (pipeline_parallel, "
        "redundant_experts, ...), with flag and source")
    serving: FrameworkServing = Field(default_factory=FrameworkServing)
    fixed_redundant_experts: int | None = Field(
        None, ge=0, le=2**17, description="redundant experts the engine always places (None: the planner picks "
        "the fewest that make EP divide the experts, when features.redundant_experts is supported)")

    @field_validator("vendors")
    @classmethod
    def _vendor_names(cls, value: list[str]) -> list[str]:
        odd = [v for v in value if not VENDOR.fullmatch(v)]
        if odd:  # compared as written with the hardware files' `vendor`, which is lower case
            raise ValueError(f"{odd[0]!r} is not a lower-case vendor name such as nvidia, amd or huawei")
        return value

    @property
    def replica_knobs(self) -> tuple[str, ...]:
        """The knobs beside attention TP whose ranks one attention replica of this engine spans, so that its DP
        (--dp-size) is world // (attn_tp x these): KVP carved out of the TP ranks, and the CP / SP ranks that
        each decode the replica's whole batch (SGLang's --attn-cp-size, NSA prefill CP). vLLM's / ATOM's PCP
        ranks each decode their own requests, separate replicas in decode: not among them."""
        return tuple(k for k, on in (("kvp_size", self.kvp_splits_attention_weights),
                                     ("cp_size", self.cp_decode_repeats_batch or self.cp_decode_shards_kv),
                                     ("attn_sp_size", self.sp_decode_repeats_batch)) if on)

    @property
    def tp_group_knobs(self) -> tuple[str, ...]:
        """The knobs whose product is the engine's tensor-parallel size (tp_group_size, its -tp): attention TP,
        KVP where it is carved out of the TP ranks, SP where its ranks are TP ranks."""
        return tuple(k for k, on in (("attn_tp_size", True), ("kvp_size", self.kvp_splits_attention_weights),
                                     ("attn_sp_size", self.sp_in_tp_group)) if on)

    @property
    def group_products(self) -> tuple[tuple[str, tuple[str, ...]], ...]:
        """Each group name (GROUP_NAMES) with the knobs it multiplies, of those the profile exposes (the others
        are 1): what its rules and launch lines read the names as."""
        return tuple((name, tuple(k for k in knobs if k in self.knobs))
                     for name, knobs in (("tp_group_size", self.tp_group_knobs), ("attn_group_size", ATTN_GROUP_KNOBS)))

    @model_validator(mode="after")
    def _consistent(self) -> "FrameworkProfile":
        from solver.specs.validation import FieldProblem

        twice = sorted({k for k in self.knobs if self.knobs.count(k) > 1})
        if twice:
            raise FieldProblem("knobs", f"{', '.join(twice)} listed twice")
        if self.kvp_splits_attention_weights and "kvp_size" not in self.knobs:
            raise FieldProblem("kvp_splits_attention_weights", "set without kvp_size among the knobs (KVP is fixed "
                                                               "at 1)")
        if self.cp_replicates_kv_cache and "cp_size" not in self.knobs:
            raise FieldProblem("cp_replicates_kv_cache", "set without cp_size among the knobs (CP is fixed at 1)")
        if self.cp_decode_shards_kv and "cp_size" not in self.knobs:
            raise FieldProblem("cp_decode_shards_kv", "set without cp_size among the knobs (CP is fixed at 1)")
        if self.cp_decode_shards_kv and self.cp_replicates_kv_cache:
            raise FieldProblem("cp_decode_shards_kv", "set with cp_replicates_kv_cache (a CP rank keeps either 1/cp of "
                                                      "a request's cache or all of it)")
        if self.sp_in_tp_group and "attn_sp_size" not in self.knobs:
            raise FieldProblem("sp_in_tp_group", "set without attn_sp_size among the knobs (SP is fixed at 1)")
        if self.sp_decode_repeats_batch and "attn_sp_size" not in self.knobs:
            raise FieldProblem("sp_decode_repeats_batch", "set without attn_sp_size among the knobs (SP is fixed at 1)")
        if self.cp_decode_repeats_batch and not self.cp_replicates_kv_cache:
            raise FieldProblem("cp_decode_repeats_batch", "set without cp_replicates_kv_cache (CP ranks that each "
                                                          "decode the whole batch keep the whole cache)")
        for name, feature in self.features.items():
            if feature.knob is not None and feature.knob not in KNOBS:
                raise FieldProblem(f"features.{name}.knob", f"{feature.knob!r} is not a knob ({', '.join(KNOBS)})")
        seen: set[str] = set()
        for i, rule in enumerate(self.rules):
            if rule.id in seen:
                raise FieldProblem(f"rules.{i}.id", f"{rule.id}: id used twice")
            seen.add(rule.id)
        products = self.group_products
        for rule in self.rules:
            rule.bind(products)
        if self.launch is not None:
            self.launch.bind(products)
        return self

    def has_feature(self, name: str) -> bool:
        feature = self.features.get(name)
        return feature is not None and feature.supported

    @property
    def fixed_knobs(self) -> tuple[str, ...]:
        return tuple(k for k in KNOB_NAMES if k not in self.knobs)

    @property
    def batch_rules(self) -> list[Rule]:
        """The error rules that read the batch (cann-recipes: the batch a multiple of the attention DP size): the
        engine refuses some concurrencies, which the planner's concurrencies, its memory edge and the remedies
        respect."""
        return [r for r in self.rules if r.severity == "error" and "batch" in r.names]

    def runs_on(self, vendor: str | None) -> bool:
        """Whether the engine runs on a device of this vendor (every device file names one; "" is a device name
        the catalog does not know, which passes)."""
        return not self.vendors or not vendor or vendor in self.vendors

    def check_vendor(self, hardware: str, vendor: str | None, field: str = "--framework") -> None:
        """An engine runs on its vendors' devices only (a TensorRT-LLM command for an Ascend die would be no
        command)."""
        if not self.runs_on(vendor):
            raise InputError(field, f"{self.name} runs on {'/'.join(self.vendors)} devices; {hardware} is {vendor}")

    def kv_dtype_refusal(self, kv_dtype: str | None) -> str | None:
        """Why this engine's command cannot ask for KV-cache format `kv_dtype` (LaunchSpec.kv_dtype_refusal;
        None without a launch section): `launch` refuses it, so the planner does not plan it either."""
        return self.launch.kv_dtype_refusal(kv_dtype, self.name) if self.launch is not None else None

    def efficiency_for(self, hardware: Hardware | str) -> dict[str, float]:
        """Multipliers for the performance model on one hardware: the profile's own, times the fitted
        per-(framework, hardware) factors in `fitted/factors.yaml` (written by benchmarks/fit_efficiency.py).
        `token_budget` (tokens per forward step) and `budget_split_by_attention_dp` (1.0 / 0.0) carry the
        profile's scheduler defaults to `Factors`, `kvp_splits_attention_weights` (1.0 / 0.0) its KVP layout. Give the Hardware where you hold it: its memory picks the
        budget tier (a name is looked up in the catalog, so a user's hardware file has none)."""
        # a name is looked up in the catalog; one it does not know has no memory, vendor or description
        dev = _catalog_device(hardware) if isinstance(hardware, str) else hardware
        name = hardware if isinstance(hardware, str) else hardware.name
        memory = float(dev.memory_bytes) if dev is not None else None
        vendor = dev.vendor if dev is not None else ""
        device_name = f"{name} {dev.description if dev is not None else ''}"
        self.check_vendor(name, vendor)
        base = self.efficiency
        out = {"gemm": base.gemm, "attention": base.attention, "hbm": base.hbm, "comm": base.comm,
               "grouped_gemm": base.grouped_gemm, "dequant_gemm": base.dequant_gemm,
               "step_overhead_s": base.step_overhead_s}
        if base.kernel_overhead_s is not None:
            out["kernel_overhead_s"] = base.kernel_overhead_s
        # a pair without its own fit still carries the factors fitted once over every pair (fitted_global)
        shared = fitted_global(vendor, framework=self.name)
        out = apply_fitted(out, pair_factors(fitted_factors(), shared, self.name, name))
        out["token_budget"] = float(self.scheduler.token_budget_for(device_name, memory))
        out["budget_split_by_attention_dp"] = 1.0 if self.scheduler.budget_split_by_attention_dp else 0.0
        out["kvp_splits_attention_weights"] = 1.0 if self.kvp_splits_attention_weights else 0.0
        out["cp_replicates_kv_cache"] = 1.0 if self.cp_replicates_kv_cache else 0.0
        out["sp_decode_repeats_batch"] = 1.0 if self.sp_decode_repeats_batch else 0.0
        out["cp_decode_repeats_batch"] = 1.0 if self.cp_decode_repeats_batch else 0.0
        out["cp_decode_shards_kv"] = 1.0 if self.cp_decode_shards_kv else 0.0
        out.update(self.serving_factors())
        return out

    def serving_factors(self) -> dict[str, float]:
        """The serving block as the flat numbers `Factors` takes (factors.SERVING_KEYS)."""
        s = self.serving
        sizes = s.graph_sizes()
        dp_policy = s.attention_dp_policy or s.policy
        return {"decode_first": 1.0 if s.policy == "decode_first" else 0.0,
                "decode_first_synced": 1.0 if dp_policy == "decode_first" else 0.0,
                "first_token_iterations": s.first_token_iterations,
                "graph_sizes": sizes,  # type: ignore[dict-item]  (a tuple: Factors.graph_sizes)
                "eager_launch_s": s.eager_launch_s,
                "allreduce_oneshot_max_bytes": float(s.allreduce_oneshot_max_bytes),
                "allreduce_custom_max_bytes": float(s.allreduce_custom_max_bytes),
                "allreduce_oneshot_max_bytes_by_ranks": tuple(  # type: ignore[dict-item]  (Factors: a tuple)
                    sorted((int(r), float(b)) for r, b in s.allreduce_oneshot_max_bytes_by_ranks.items()))}

    def rule(self, rule_id: str) -> Rule:
        for rule in self.rules:
            if rule.id == rule_id:
                return rule
        raise KeyError(rule_id)

    def violated(self, env: Mapping[str, Value], severity: str | None = None) -> list[Rule]:
        """Rules that apply to `env` and fail (optionally only those of one severity)."""
        return [r for r in self.rules if (severity is None or r.severity == severity) and not r.holds(env)]

    def limits(self, env: Mapping[str, Value]) -> list[str]:
        """What the framework cannot express at all (class C, outside its rules): knobs it lacks must be 1,
        MTP depth is capped."""
        absent = getattr(env, "absent", ())  # the model's missing modules: absent_knob_problems reports them
        problems = [self._unexpressed(k, env[k]) for k in self.fixed_knobs
                    if k not in absent and env.get(k, 1) not in (1, self._followed(k, env))]
        if env.get("mtp", 0) > self.max_mtp:
            problems.append(f"mtp = {env['mtp']} exceeds {self.name}'s maximum of {self.max_mtp}")
        r = env.get("redundant_experts", 0)
        if r and not self.has_feature("redundant_experts"):
            problems.append(f"redundant_experts = {r} but {self.name} has no redundant experts (features)")
        elif r and self.fixed_redundant_experts is not None and r != self.fixed_redundant_experts:
            problems.append(f"redundant_experts = {r} but {self.name} places {self.fixed_redundant_experts}")
        if r and not env.get("is_moe"):
            problems.append(f"redundant_experts = {r} on a model without routed experts; leave it out")
        return problems

    def _followed(self, knob: str, env: Mapping[str, Value]) -> Value:
        """The value a knob the engine lacks takes from the one it follows (knobs.FOLLOWS): o_proj runs over the
        ranks that split the heads, attention TP times KVP where the engine's KVP reuses its TP ranks."""
        base = FOLLOWS.get(knob)
        if base is None:
            return 1
        value = env.get(base, 1)
        return value * env.get("kvp_size", 1) if base == "attn_tp_size" and self.kvp_splits_attention_weights else value

    def _unexpressed(self, knob: str, value: Value) -> str:
        """Why a knob this profile fixes cannot be set: the engine lacks it (with the profile's note on the missing
        feature where it has one: what the engine has instead, who proposes it), or has it (a feature) unmodelled."""
        feature = next((f for f in self.features.values() if f.knob == knob), None)
        if feature is None or not feature.supported:
            why = f": {feature.note}" if feature is not None and feature.note else ""
            return f"{knob} = {value} but {self.name} has no such knob (fixed at 1){why}"
        return (f"{knob} = {value}: {self.name} has it ({feature.flag}) but shardplan does not model it"
                + (f" ({feature.note})" if feature.note else "") + "; plan and launch it at 1 here")

    def check(self, env: Mapping[str, Value], severity: str | None = None) -> list[str]:
        """Every problem with `env` under this framework, one line each ('' list = accepted); `severity`
        "error" or "warning" keeps only those (the limits and the KV-head split are errors).

        Besides the rules: the limits, and a framework that splits KV heads needs attention TP to divide them.
        """
        errors = severity in (None, "error")
        problems = self.limits(env) if errors else []
        if errors and self.splits_kv_heads and env["num_key_value_heads"] % env["attn_tp_size"]:
            problems.append(
                f"attn_tp_size = {env['attn_tp_size']} does not divide num_key_value_heads = "
                f"{env['num_key_value_heads']} ({self.name} splits KV heads)"
            )
        problems += [f"[{r.id}] {r.message}" for r in self.violated(env, severity)]
        return problems

    def refusal(self, problems: list[str]) -> str:
        """The one line that refuses a configuration with these problems: the first in full, the others named
        (by rule id where they have one), so a user fixes them in one pass rather than one run each."""
        rest = [p.split("]", 1)[0] + "]" if p.startswith("[") else quoted(p) for p in problems[1:]]
        more = f" (and {len(rest)} more: {', '.join(rest)})" if rest else ""
        return f"not runnable under framework {self.name}: {problems[0]}{more}"


def _catalog_device(hardware: str) -> Hardware | None:
    """The catalog device of that name (None for a name the catalog does not know, e.g. a user's file)."""
    from solver.specs.hardware_catalog import load_hardware

    try:
        return load_hardware(hardware)
    except (InputError, OSError, ValueError):
        return None


def _norm(name: str) -> str:
    return name.strip().lower().replace("_", "-")


def list_frameworks() -> list[str]:
    """Names of the shipped profiles, sorted."""
    return sorted(p.stem for p in frameworks_dir().glob("*.yaml"))


def load_framework_file(path: Path) -> FrameworkProfile:
    st = path.stat()
    return _load_framework_cached(str(path), st.st_mtime_ns, st.st_size)


@lru_cache(maxsize=64)
def _load_framework_cached(path: str, mtime_ns: int, size: int) -> FrameworkProfile:
    # profiles are frozen: one parse per file version serves every solve of a process (a sweep, a benchmark)
    from solver.specs.validation import load_yaml, validate_model

    return validate_model(FrameworkProfile, load_yaml(Path(path)), path)


def load_framework(name_or_path: str | Path) -> FrameworkProfile:
    """A shipped profile by name ('cann-recipes', 'cann_recipes', 'vLLM') or a user's YAML by path."""
    path = Path(name_or_path).expanduser()
    # a profile name never holds a separator: with one (or a YAML suffix, or an existing file) it is a path
    if path.suffix in (".yaml", ".yml") or "/" in str(name_or_path) or path.is_file():
        if not path.is_file():
            raise InputError("framework", f"{name_or_path}: a folder, not a profile YAML" if path.is_dir()
                             else f"file not found: {name_or_path}")
        return load_framework_file(path)
    candidate = frameworks_dir() / f"{_norm(str(name_or_path))}.yaml"
    if not candidate.is_file():
        raise InputError("framework", f"unknown framework '{name_or_path}'; known: {', '.join(list_frameworks())}")
    return load_framework_file(candidate)
