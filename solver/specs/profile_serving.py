"""A framework profile's serving model: its efficiency multipliers, the scheduler's token budget and policy, and
the serving features (CUDA-graph batch ranges, ...) the estimator reads (specs/framework.py holds the profile).
"""
from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from solver.errors import InputError
from solver.specs.expr import compile_expr, condition_over
from solver.specs.hardware import VENDOR
from solver.specs.limits import MAX_TOKENS
from solver.specs.rule_env import DEVICE_FLAGS, device_flags

if TYPE_CHECKING:
    from solver.specs.expr import Expr
    from solver.specs.hardware import Hardware
    from solver.specs.parallel import ParallelConfig

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


def command_budget(default: int, rule: str | None, replica_batch: int, mtp: int) -> int:
    """The tokens per forward step the engine's command gives one engine instance: its `rule` (the profile's
    step_budget launch argument, e.g. max(token_budget, replica_batch * (1 + mtp))) over the `default` budget,
    the `replica_batch` requests the command gives the instance and the MTP depth; the default where it sets
    none. One reading for the step the estimate prices (workload.token_budget) and the chunk memory holds
    (MemoryOptions.chunk_tokens)."""
    if rule is None:
        return default
    return int(_budget_rule(rule).evaluate({"token_budget": default, "replica_batch": max(1, replica_batch),
                                            "mtp": mtp}))


@lru_cache(maxsize=64)
def _budget_rule(text: str) -> "Expr":
    return compile_expr(text)


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

    @model_validator(mode="after")
    def _one_reading(self) -> "FrameworkScheduler":
        from solver.specs.validation import FieldProblem

        by_device_problems("token_budget_tiers", [t.min_memory_gib for t in self.token_budget_tiers],
                           "token_budget_by_device_name", self.token_budget_by_device_name)
        for word, budget in self.token_budget_by_device_name.items():
            if not 0 < budget <= MAX_TOKENS:
                raise FieldProblem(f"token_budget_by_device_name.{word}", f"{budget} tokens is outside "
                                                                          f"[1, {MAX_TOKENS}]")
        return self

    def token_budget_for(self, device_name: str, memory_bytes: float | None) -> int:
        """The default budget on a device named `device_name` (its file's name and description) with
        `memory_bytes` of HBM (None: unknown)."""
        return by_device(self.token_budget, [(t.min_memory_gib, t.tokens) for t in self.token_budget_tiers],
                         self.token_budget_by_device_name, device_name, memory_bytes)


def by_device_problems(tiers_field: str, thresholds: list[float], names_field: str, by_name: dict[str, int]) -> None:
    """Refuse (FieldProblem) a by-device default by_device would read ambiguously or never: two tiers at one
    threshold (the value left to their order, silently), or a device word that is empty or not lower case (matched
    against the lower-cased name: an upper-case word never matches, an empty one always)."""
    from solver.specs.validation import FieldProblem

    seen: set[float] = set()
    for i, gib in enumerate(thresholds):
        if gib in seen:
            raise FieldProblem(f"{tiers_field}.{i}.min_memory_gib", f"{gib:g} GiB given twice; keep one tier per "
                                                                    "threshold")
        seen.add(gib)
    for word in by_name:
        if not word.strip() or word != word.lower():
            raise FieldProblem(f"{names_field}.{word}", "a non-empty lower-case word of the device's name or "
                                                        "description (matched against them lower-cased)")


def by_device(default: int, tiers: list[tuple[float, int]], by_name: dict[str, int], device_name: str,
              memory_bytes: float | None) -> int:
    """An engine's default picked as it picks it: a word of the device's name (lower case) first, else the
    largest memory tier (min GiB, value) the device reaches, else `default` (memory unknown: `default`)."""
    name = device_name.lower()
    for word, value in by_name.items():
        if word in name:
            return value
    picked = default
    if memory_bytes is not None:
        for min_gib, value in sorted(tiers):
            if memory_bytes >= min_gib * 2**30:
                picked = value
    return picked


class GraphBatchRange(BaseModel):
    """Captured decode batch sizes start, start + step, ..., up to stop (inclusive); no stop (the last range
    only): on up to the engine's cap, as an engine's capture list runs to its largest graph wherever the
    command lifts it (FrameworkServing.graph_max_batch_lift)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    start: int = Field(gt=0)
    stop: int | None = Field(None, gt=0)
    step: int = Field(1, gt=0)


# the names a graph-cap condition may read: the device's memory per rank in GiB (Hardware.memory_bytes / 2^30), the
# stage's ranks, one attention replica's ranks, the model's routed experts (0: dense) and the device flags: what an
# engine's default largest decode graph depends on at a config (engine_step.graph_sizes_at)
GRAPH_CAP_NAMES = frozenset({"memory_gib", "world", "attn_group_size", "n_routed_experts", *DEVICE_FLAGS})


class GraphCap(BaseModel):
    """The engine's default largest captured decode batch where `when` holds (serving.graph_max_batch: the first
    entry that holds applies; "" always holds)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    when: str = ""
    value: int = Field(gt=0)

    @model_validator(mode="after")
    def _a_condition_over_the_cap_names(self) -> "GraphCap":
        if self.when:
            condition_over(self.when, GRAPH_CAP_NAMES, "a graph-cap condition")
        return self


def graph_cap_env(pc: "ParallelConfig", memory_gib: float, flags: dict[str, bool],
                  n_routed_experts: int) -> dict[str, int | float | bool]:
    """GRAPH_CAP_NAMES' values at a config on a device of `memory_gib` per rank and device flags `flags`
    (rule_env.device_flags): the estimate (engine_step.graph_sizes_at) and the launch (launch/emit.py,
    `graph_cap`) both evaluate a graph-cap condition at."""
    return {"memory_gib": memory_gib, "world": pc.stage_world, "attn_group_size": pc.attn_group_size,
            "n_routed_experts": n_routed_experts, **flags}


def graph_cap_at(caps: "tuple[GraphCap, ...] | list[GraphCap]", env: dict[str, int | float | bool]) -> int | None:
    """The first cap whose condition holds in `env` (graph_cap_env); None: no entry holds (no cap: every
    listed size is captured)."""
    for c in caps:
        if not c.when or compile_expr(c.when).evaluate(env):
            return c.value
    return None


EpExchange = Literal["a2a_kernel", "allgather_reducescatter", "all_to_all"]
# the names an EP-kernel condition may read: the MoE group's own sizes, the layout the planner's MoE table sees
# beside it (attention DP, the stage's ranks, PP) and the device's (ranks per node, platform and capability flags). A condition on
# anything else (the dense FFN's TP, the batch) would make the MoE group's cost depend on another group's choice
# and the planner's tables stop being sums of per-group terms
EP_KERNEL_NAMES = frozenset({"moe_ep_size", "moe_tp_size", "attn_dp_size", "world", "pp_size", "ranks_per_node",
                             *DEVICE_FLAGS})


# the names an EP-kernel buffer's dispatch-token expression reads (EpBuffers.dispatch_tokens)
EP_BUFFER_NAMES = frozenset({"replica_batch", "mtp", "step_budget"})


class EpBuffers(BaseModel):
    """The communication buffers each rank allocates where the command runs the EP kernels (estimate/buffers.py
    a2a_buffer_bytes): buffers of a size the engine sets, and the low-latency kernels' RDMA buffer sized by the
    tokens a rank may dispatch in one step."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    fixed_bytes: int = Field(0, ge=0, description="bytes a rank allocates whatever the step (an engine's set "
                                                  "NVLink / RDMA buffer sizes)")
    internode_bytes: int = Field(0, ge=0, description="bytes a rank allocates besides where its EP group spans "
                                 "nodes (moe_ep_size > ranks_per_node): an RDMA buffer of a set size the engine "
                                 "leaves out inside one node")
    dispatch_tokens: str | None = Field(None, description="the low-latency RDMA buffer's tokens a rank dispatches "
                                        "at most (num_max_dispatch_tokens_per_rank), an expression over "
                                        "replica_batch, mtp and step_budget (the command's tokens a step); None: "
                                        "no low-latency buffer")
    source: str = ""

    @model_validator(mode="after")
    def _tokens_over_known_names(self) -> "EpBuffers":
        if self.dispatch_tokens is not None:
            try:
                odd = sorted(compile_expr(self.dispatch_tokens).names - EP_BUFFER_NAMES)
            except InputError as exc:
                raise ValueError(f"dispatch_tokens: {exc}") from None
            if odd:
                raise ValueError(f"dispatch_tokens: reads {', '.join(odd)}; it reads only "
                                 f"{', '.join(sorted(EP_BUFFER_NAMES))}")
        return self


class EpKernels(BaseModel):
    """The engine's fast EP exchange (dispatch / combine kernels) and the one condition under which its command
    selects it: the estimate prices `exchange` where `when` holds (Factors.ep_exchange_for) and the launch emits
    the args that read the launch name `ep_kernels` exactly there (launch/emit.py)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    exchange: EpExchange = "a2a_kernel"
    when: str = Field(description="a condition over EP_KERNEL_NAMES (rule-env names: moe_ep_size, moe_tp_size, "
                                  "attn_dp_size, world (one stage's ranks), pp_size, ranks_per_node, on_<platform>)")
    colocated_prefill: Literal["throughput", "low_latency"] = Field(
        "throughput", description="the kernels a co-located engine's command runs for prefill (a prefill-only "
        "worker runs the throughput ones, decode the low-latency ones): low_latency where its one backend serves "
        "both phases")
    buffers: EpBuffers | None = Field(None, description="the all-to-all buffers a rank allocates where `when` "
                                      "holds; None: none counted")
    prefill_buffers: EpBuffers | None = Field(None, description="those a disaggregated prefill worker allocates "
                                              "instead (its command runs other kernels: prefill_role); None: "
                                              "`buffers`, as for every other role")
    token_budget: int | None = Field(None, gt=0, le=MAX_TOKENS, description="the engine's own default tokens per "
                                     "forward step where `when` holds (a co-located or decode command; a prefill "
                                     "worker keeps the scheduler's): it replaces the scheduler's default under the "
                                     "command's step_budget rule (step_default); None: the scheduler's everywhere")
    source: str = ""

    def buffers_for(self, prefill_worker: bool) -> EpBuffers | None:
        """The buffers a worker of the role allocates: a prefill worker's own where the profile states them."""
        return self.prefill_buffers if prefill_worker and self.prefill_buffers is not None else self.buffers

    @model_validator(mode="after")
    def _a_condition_on_the_moe_groups_view(self) -> "EpKernels":
        condition_over(self.when, EP_KERNEL_NAMES, "an EP-kernel condition (what the MoE group's cost sees)")
        return self


def ep_kernel_env(pc: "ParallelConfig", hw: "Hardware") -> dict[str, int | bool]:
    """EP_KERNEL_NAMES' values at a config on a device: the one reading the estimate (Factors.ep_exchange_for) and
    the launch (launch/emit.py) both evaluate an EP-kernel condition at."""
    return {"moe_ep_size": pc.moe_ep_size, "moe_tp_size": pc.moe_tp_size, "attn_dp_size": pc.attn_dp_size,
            "world": pc.stage_world, "pp_size": pc.pp_size, "ranks_per_node": hw.ranks_per_node,
            **device_flags(hw.platform, hw.capability)}


def ep_kernels_hold(when: str, pc: "ParallelConfig", hw: "Hardware") -> bool:
    """Whether the EP-kernel condition `when` holds at `pc` on `hw` (ep_kernel_env); "" never holds."""
    return bool(when) and bool(compile_expr(when).evaluate(ep_kernel_env(pc, hw)))


def step_default(ep: EpKernels | None, default: int, moe: bool, pc: "ParallelConfig", hw: "Hardware",
                 prefill_worker: bool = False) -> int:
    """A configuration's default tokens per forward step, before the command's step_budget rule: the EP
    kernels' `token_budget` where they hold at `pc` on the launched device `hw` (a model with routed experts, not
    a prefill-only worker, whose command runs the throughput kernels), the scheduler's `default` otherwise. The
    one reading of it: the launch (emit), the step the estimate prices (figures.step_plan), the memory
    (memory.memory_per_rank's options, buffers.dispatch_tokens) and the planner's views (Tables.layouts)."""
    if ep is None or ep.token_budget is None or not moe or prefill_worker:
        return default
    return ep.token_budget if ep_kernels_hold(ep.when, pc, hw) else default


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
    graph_batches_mtp: list[GraphBatchRange] = Field(
        default_factory=list, description="the decode batch sizes captured instead where speculative decoding (MTP) "
        "is on, for an engine that keeps another list then; empty = graph_batches")
    graph_max_batch: list[GraphCap] = Field(
        default_factory=list, description="the engine's default largest captured decode batch at a config (the "
        "first entry whose condition holds): graph_batches cut there, the cap itself captured; empty or none "
        "holding: every graph_batches size")
    graph_max_batch_lift: bool = Field(
        False, description="the command raises the cap to the plan's per-rank batch where the default is below "
        "it (a launch arg reading `graph_cap`), so the estimate prices graphs up to that batch; false: past the "
        "default cap decode runs eagerly")
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
    allreduce_custom_ranks: list[int] = Field(
        default_factory=list, description="the group sizes the custom all-reduce runs on (the kernel's supported "
        "world sizes; another size runs the NCCL ring); empty = any")
    allreduce_custom_vendors: list[str] = Field(
        default_factory=list, description="the device vendors (hardware files' `vendor`) the engine builds the "
        "custom all-reduce for; on another vendor's device every all-reduce runs the collective library's ring; "
        "empty = any")
    allreduce_custom_spans_nodes: bool = Field(
        True, description="the custom all-reduce runs across the nodes of one peer-access scale-up domain (an NVL72 "
        "rack's trays); false: only inside one node, a group spanning nodes runs the ring")
    ep_exchange: EpExchange = Field(
        "a2a_kernel", description="how the default command exchanges tokens between attention-DP ranks and the "
        "expert-parallel group (comm.py): a2a_kernel: dispatch / combine kernels (DeepEP low-latency class at "
        "decode, throughput kernels at prefill); allgather_reducescatter: every rank gathers the whole MoE group's "
        "tokens, runs its experts on them and a reduce-scatter sums the outputs back; all_to_all: the collective "
        "library's plain all-to-all of each token-expert pair")
    logits_exchange: Literal["all_gather", "all_to_all"] = Field(
        "all_gather", description="how a vocabulary-parallel LM head's logits reach the rows' ranks: all_gather: "
        "every rank of the head's group receives every row's logits over the whole vocabulary (vLLM's and SGLang's "
        "logits processors); all_to_all: each rank receives its own rows' logits over the whole vocabulary "
        "(vllm-ascend's lmhead TP)")
    ep_kernels: EpKernels | None = Field(
        None, description="the exchange the command switches to where a condition holds (its launch args read "
        "`ep_kernels`); None: ep_exchange everywhere")
    source: str = ""

    @model_validator(mode="after")
    def _ordered(self) -> "FrameworkServing":
        for name, ranges in (("graph_batches", self.graph_batches), ("graph_batches_mtp", self.graph_batches_mtp)):
            for i, r in enumerate(ranges):
                if r.stop is None and (i != len(ranges) - 1 or not self.graph_max_batch):
                    raise ValueError(f"{name}: the range from {r.start} has no stop: only the last range may "
                                     "run on to the cap, and graph_max_batch must name it")
                if r.stop is not None and r.stop < r.start:
                    raise ValueError(f"{name}: stop {r.stop} < start {r.start}")
        if self.graph_batches_mtp and not self.graph_batches:
            raise ValueError("graph_batches_mtp: an engine without graphs (graph_batches empty) has none with MTP")
        if self.graph_max_batch and not self.graph_batches:
            raise ValueError("graph_max_batch: caps no graphs (graph_batches is empty)")
        if self.graph_max_batch_lift and not self.graph_max_batch:
            raise ValueError("graph_max_batch_lift: lifts no cap (graph_max_batch is empty)")
        if self.allreduce_custom_max_bytes < self.allreduce_oneshot_max_bytes:
            raise ValueError("allreduce_custom_max_bytes must be >= allreduce_oneshot_max_bytes")
        # a one-shot limit past the kernel's own range would be read by nothing (no custom kernel runs there)
        for ranks, nbytes in sorted(self.allreduce_oneshot_max_bytes_by_ranks.items()):
            if ranks < 2 or not 0 <= nbytes <= self.allreduce_custom_max_bytes:
                raise ValueError(f"allreduce_oneshot_max_bytes_by_ranks: {ranks}: {nbytes} needs a group of >= 2 "
                                 f"ranks and at most allreduce_custom_max_bytes ({self.allreduce_custom_max_bytes}; "
                                 "a build without the custom all-reduce leaves this map empty)")
        if any(r < 2 for r in self.allreduce_custom_ranks):
            raise ValueError(f"allreduce_custom_ranks: {min(self.allreduce_custom_ranks)} is not a group size (>= 2)")
        odd = [v for v in self.allreduce_custom_vendors if not VENDOR.fullmatch(v)]
        if odd:
            raise ValueError(f"allreduce_custom_vendors: {odd[0]!r} is not a lower-case vendor name such as nvidia, "
                             "amd or huawei")
        return self

    def _ranges(self, mtp: bool) -> list[GraphBatchRange]:
        return self.graph_batches_mtp if mtp and self.graph_batches_mtp else self.graph_batches

    def graph_sizes(self, mtp: bool = False) -> tuple[int, ...]:
        """Every captured batch size of the closed ranges, ascending (graph_open: the open one); `mtp`: with
        speculative decoding on (graph_batches_mtp where the engine keeps that list)."""
        return tuple(sorted({b for r in self._ranges(mtp) if r.stop is not None
                             for b in range(r.start, r.stop + 1, r.step)}))

    def graph_open(self, mtp: bool = False) -> tuple[int, ...]:
        """(start, step) of the range that runs on to the cap; () when every range stops."""
        ranges = self._ranges(mtp)
        last = ranges[-1] if ranges else None
        return (last.start, last.step) if last is not None and last.stop is None else ()
