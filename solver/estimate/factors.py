"""Factors: the achieved fractions and fixed costs of one hardware x framework (what calibration fits), and
`factors_for`, which builds them from the hardware YAML and the framework's multipliers."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from solver.specs.hardware import Hardware
from solver.specs.knobs import LAYOUT_SWITCHES
from solver.estimate.stage_ranks import DP_MAJOR, STAGE_MAJOR, launched_device
from solver.specs.profile_serving import EpKernels, ep_kernels_hold
from solver.specs.rule_env import true_device_flags

if TYPE_CHECKING:
    from solver.specs.profile_facts import HybridStateLayout, IndexerDecodeBound, KVBlocks
    from solver.specs.parallel import ParallelConfig

@dataclass(frozen=True)
class Factors:
    """Achieved fractions for one hardware x framework (the few factors calibration fits)."""

    gemm: float
    attention: float
    hbm: float
    comm: float
    kernel_overhead_s: float
    step_overhead_s: float = 0.0
    expert_imbalance: float = 1.2  # default balancing ~20% slower than ideal (SGLang large-scale EP blog)
    # achieved FLOP/s of the routed-expert grouped GEMMs as a fraction of the dense GEMM's (`gemm`); 1 = as
    # dense. One number fitted over all calibration rows by benchmarks/fit_efficiency.py (see `layer_ops`)
    grouped_gemm: float = 1.0
    # achieved FLOP/s of a weight-only GEMM (Precision.weight_only: W4A16 / W8A16, the weights dequantized in the
    # kernel) as a fraction of the dense 16-bit GEMM's (`gemm`), grouped or dense: the routed experts under it run
    # the weight-only MoE kernels (Marlin MoE, Triton matmul_ogs), not the 8-/4-bit grouped GEMMs `grouped_gemm`
    # is fitted on. 1 = as a 16-bit GEMM; fitted once over all calibration rows (benchmarks/fit_efficiency.py)
    dequant_gemm: float = 1.0
    # the framework's scheduler defaults (FrameworkScheduler): tokens per forward step, None = serving's
    # DEFAULT_TOKEN_BUDGET; and whether attention-DP ranks split that budget (SGLang)
    token_budget: int | None = None
    budget_split_by_attention_dp: bool = False
    # the budget the engine's command sets, an expression over token_budget, replica_batch and mtp (the profile's
    # step_budget launch argument); None: the command leaves the default
    token_budget_rule: str | None = None
    # the engine's command sets its token budget (a launch argument reads `token_budget`): a prefill-only worker's
    # command then holds its whole priced step (launch.emit.step_budget), and so does its memory
    prefill_budget_set: bool = False
    # the framework's KVP layout (FrameworkProfile.kvp_splits_attention_weights): its KVP ranks split the attention
    # weights with the TP ranks (ParallelConfig.attn_tp_group); the memory model reads it from MemoryOptions
    kvp_splits_attention_weights: bool = False
    # the framework's CP cache layout (FrameworkProfile.cp_replicates_kv_cache): every CP rank keeps the whole KV;
    # the memory model reads it from MemoryOptions
    cp_replicates_kv_cache: bool = False
    # the framework's indexer key format (FrameworkProfile.indexer_keys_unquantised): cached, read and scored in the
    # activation dtype; the memory model reads it from MemoryOptions
    indexer_keys_unquantised: bool = False
    # the framework's KVP indexer layout (FrameworkProfile.kvp_replicates_indexer_keys): every KVP rank keeps and
    # scores every token's indexer key; the memory model reads it from MemoryOptions
    kvp_replicates_indexer_keys: bool = False
    # the framework's bound on one indexer logits matrix (FrameworkProfile.indexer_logits_max_bytes; None: the
    # whole matrix); the memory model reads it from MemoryOptions
    indexer_logits_max_bytes: float | None = None
    # the framework's decode indexer logits (FrameworkProfile.indexer_decode_logits_unbounded): the whole matrix;
    # the memory model reads it from MemoryOptions
    indexer_decode_logits_unbounded: bool = False
    # the framework's decode indexer bound (FrameworkProfile.indexer_decode_logits_bound: bytes, condition) and the
    # device flags its condition reads (rule_env.device_flags, the true ones); the memory model reads them
    indexer_decode_logits_bound: IndexerDecodeBound | None = None
    # the framework's hybrid state allocation (FrameworkProfile.hybrid_state), read by the memory side
    hybrid_state: "HybridStateLayout | None" = None
    # the framework's KV blocks (FrameworkProfile.kv_blocks), read by the memory side
    kv_blocks: "KVBlocks | None" = None
    device_flags: frozenset[str] = frozenset()
    # the framework's zero-expert routing (FrameworkProfile.zero_expert_picks_computed): a pick of an identity
    # expert runs as routed expert 0 at weight 0 (layers.moe prices every pick, the zero ones on expert 0's rank)
    zero_expert_picks_computed: bool = False
    # the framework's tower layout (FrameworkProfile.encoder_split_model_types): the wrappers whose vision / audio
    # tower it splits over the attention TP group; the memory model reads it from MemoryOptions
    encoder_split_model_types: tuple[str, ...] = ()
    # the framework's towers under PP (FrameworkProfile.pp_tower_first_stage_model_types): the wrappers whose tower
    # it builds on the first stage only; the memory model reads it from MemoryOptions
    pp_tower_first_stage_model_types: tuple[str, ...] = ()
    # the framework's PP hand-off (FrameworkProfile.pp_handoff_residual, pp_handoff_hidden_only): the residual
    # beside the hidden state, except for these model types (estimate.pipeline.handoff_width)
    pp_handoff_residual: bool = False
    pp_handoff_hidden_only: tuple[str, ...] = ()
    # the framework's MTP drafter under PP (FrameworkProfile.pp_drafter_own_embedding), read by the memory side
    pp_drafter_own_embedding: bool = False
    # the framework's disaggregated KV transport (FrameworkProfile.kv_handoff_over_nics): over the RDMA NICs
    # whatever the pools span (estimate.disagg.transfer_tier)
    kv_handoff_over_nics: bool = False
    # the framework's rank order (FrameworkProfile.rank_order): dp_major numbers ranks DP x PP x the attention
    # group's; estimate.stage_ranks places a stage's ranks by it
    dp_major_ranks: bool = False
    # the framework's SP decode form (FrameworkProfile.sp_decode_repeats_batch): every SP rank decodes its
    # replica's whole batch (step_parts.decode_layout)
    sp_decode_repeats_batch: bool = False
    # the framework's CP decode form (FrameworkProfile.cp_decode_repeats_batch): every CP rank decodes its
    # replica's whole batch, as the SP form (step_parts.decode_layout)
    cp_decode_repeats_batch: bool = False
    # the framework's sharded-cache CP decode (FrameworkProfile.cp_decode_shards_kv): every CP rank decodes the
    # whole batch over its 1/cp of each request's KV, partial outputs merged over the group
    cp_decode_shards_kv: bool = False
    # fixed per-request cost on the TTFT path, fitted per framework x hardware (None: workload's default)
    request_overhead_s: float | None = None
    # --- the engine's serving loop (FrameworkServing; engine_step.py, closed_loop.py and scheduler.py use them)
    decode_first: bool = True  # scheduler policy: decode-first chunked mixing (vLLM) vs prefill-first batches
    decode_first_synced: bool = True  # the policy when attention-DP ranks step together
    first_token_iterations: float = 0.0  # engine iterations between a prompt's prefill and its streamed token
    graph_sizes: tuple[int, ...] = ()  # captured CUDA-graph decode batches; () = none
    graph_open: tuple[int, ...] = ()  # (start, step) of sizes captured on up to the cap (engine_step.graph_sizes_at)
    graph_sizes_mtp: tuple[int, ...] = ()  # the same two with MTP on (serving.graph_batches_mtp, else the above)
    graph_open_mtp: tuple[int, ...] = ()
    # the engine's default largest decode graph (FrameworkServing.graph_max_batch: (condition, cap), first holding
    # applies) and whether its command lifts it to the per-rank batch (graph_max_batch_lift); engine_step reads them
    graph_caps: tuple[tuple[str, int], ...] = ()
    graph_cap_lift: bool = False
    memory_gib: float = 0.0  # the device's memory per rank [GiB], which a graph-cap condition reads
    eager_launch_s: float = 0.0  # host time per eagerly launched kernel
    seq_overhead_s: float = 0.0  # host time per running sequence per step (schedule, sample, detokenize)
    # time per running sequence per layer the step runs (engine_step.step_layers): the per-sequence work inside
    # each layer's kernels beyond the FLOPs and bytes the op model counts (the decode attention kernel's
    # per-sequence setup, page-table walk and split-KV reduction); fitted once per engine (its own kernels)
    seq_layer_s: float = 0.0
    # custom small-message all-reduce (comm.all_reduce_s): one-shot up to the first size, two-shot up to the
    # second (bytes per rank), NCCL above; 0 = no custom kernel. Its launch-to-done latency is fitted once.
    allreduce_oneshot_max_bytes: float = 0.0
    allreduce_custom_max_bytes: float = 0.0
    allreduce_latency_s: float | None = None  # None: the link tier's latency
    # (ranks R, bytes): groups of at most R ranks run one-shot up to these bytes (the kernel's own dispatch)
    allreduce_oneshot_max_bytes_by_ranks: tuple[tuple[int, float], ...] = ()
    # the group sizes the kernel runs on (another size runs the ring); () = any
    allreduce_custom_ranks: tuple[int, ...] = ()
    # the kernel runs across the nodes of one peer-access domain (false: inside one node only)
    allreduce_custom_spans_nodes: bool = True
    # the EP token exchange the engine's command runs under attention DP (FrameworkServing.ep_exchange)
    ep_exchange: str = "a2a_kernel"
    # how a vocabulary-parallel LM head's logits reach the rows' ranks (FrameworkServing.logits_exchange)
    logits_exchange: str = "all_gather"
    # the exchange the command switches to where its condition holds (FrameworkServing.ep_kernels; "" = none)
    ep_kernels_exchange: str = ""
    ep_kernels_when: str = ""
    # the same kernels whole, their buffers read by the memory side (memory_options.MEMORY_AMOUNTS)
    ep_kernels: "EpKernels | None" = None

    @property
    def rank_order(self) -> str:
        """The engine's rank order (stage_ranks.RANK_ORDERS)."""
        return DP_MAJOR if self.dp_major_ranks else STAGE_MAJOR

    def ep_exchange_for(self, pc: "ParallelConfig", hw: Hardware) -> str:
        """The EP exchange a step under `pc` on `hw` runs: the kernels where the profile's condition holds at the
        MoE group's view (profile_serving.EP_KERNEL_NAMES), else the default command's."""
        if not self.ep_kernels_when:
            return self.ep_exchange
        # a stage's view of the device (stage_ranks): the command's condition reads the device it launches on
        hw = launched_device(hw)
        return self.ep_kernels_exchange if ep_kernels_hold(self.ep_kernels_when, pc, hw) else self.ep_exchange


# the framework's switches (FrameworkProfile.efficiency_for writes each as 1.0 / 0.0): off where unset
SWITCHES = ("budget_split_by_attention_dp", "dp_major_ranks", "prefill_budget_set", *LAYOUT_SWITCHES)
# the serving loop's and custom all-reduce's figures (FrameworkProfile.serving_factors): 0 where unset
AMOUNTS = ("first_token_iterations", "eager_launch_s", "seq_overhead_s", "seq_layer_s", "allreduce_oneshot_max_bytes",
           "allreduce_custom_max_bytes")


def factors_for(hw: Hardware, scale: dict[str, float] | None = None) -> Factors:
    """Hardware factors times the framework's multipliers (`FrameworkProfile.efficiency_for`).

    Keys ending in `_s` are absolute seconds, not multipliers: `kernel_overhead_s` replaces the hardware's
    per-kernel cost (FrameworkEfficiency documents it as an override, and fitted factors write it that way;
    before this fix it was silently ignored and only a `kernel_overhead` multiplier was read).
    `grouped_gemm` and `dequant_gemm` are fractions of the GEMM efficiency (capped at 1); `token_budget` and
    `budget_split_by_attention_dp` are the framework's scheduler defaults, `kvp_splits_attention_weights` its
    KVP layout, `cp_replicates_kv_cache` its CP cache layout, `indexer_keys_unquantised` and
    `kvp_replicates_indexer_keys` its indexer key layout and `sp_decode_repeats_batch` its SP decode form,
    passed through.
    """
    s = scale or {}
    kernel = s.get("kernel_overhead_s")
    if kernel is None:
        kernel = hw.efficiency.kernel_overhead_s * s.get("kernel_overhead", 1.0)
    return Factors(
        gemm=min(1.0, hw.efficiency.gemm * s.get("gemm", 1.0)),
        attention=min(1.0, hw.efficiency.attention * s.get("attention", 1.0)),
        hbm=min(1.0, hw.efficiency.hbm * s.get("hbm", 1.0)),
        comm=s.get("comm", 1.0),
        kernel_overhead_s=float(kernel),
        step_overhead_s=s.get("step_overhead_s", 0.0),
        expert_imbalance=s.get("expert_imbalance", 1.2),
        grouped_gemm=min(1.0, s.get("grouped_gemm", 1.0)),
        dequant_gemm=min(1.0, s.get("dequant_gemm", 1.0)),
        token_budget=int(s["token_budget"]) if s.get("token_budget") else None,
        token_budget_rule=s.get("token_budget_rule"),  # type: ignore[arg-type]
        **{k: bool(s.get(k, 0.0)) for k in SWITCHES},
        request_overhead_s=s.get("request_overhead_s"),
        decode_first=bool(s.get("decode_first", 1.0)),
        decode_first_synced=bool(s.get("decode_first_synced", s.get("decode_first", 1.0))),
        **{k: float(s.get(k, 0.0)) for k in AMOUNTS},
        graph_sizes=tuple(int(b) for b in s.get("graph_sizes", ())),  # type: ignore[union-attr]
        graph_open=tuple(int(b) for b in s.get("graph_open", ())),  # type: ignore[union-attr]
        graph_sizes_mtp=tuple(int(b) for b in s.get("graph_sizes_mtp", ())),  # type: ignore[union-attr]
        graph_open_mtp=tuple(int(b) for b in s.get("graph_open_mtp", ())),  # type: ignore[union-attr]
        graph_caps=tuple((str(w), int(v)) for w, v in s.get("graph_caps", ())),  # type: ignore[union-attr]
        graph_cap_lift=bool(s.get("graph_cap_lift", 0.0)),
        memory_gib=hw.memory_gib,
        allreduce_latency_s=s.get("allreduce_latency_s"),
        allreduce_oneshot_max_bytes_by_ranks=tuple(
            (int(r), float(b)) for r, b in s.get("allreduce_oneshot_max_bytes_by_ranks", ())),  # type: ignore[union-attr]
        allreduce_custom_ranks=tuple(int(r) for r in s.get("allreduce_custom_ranks", ())),  # type: ignore[union-attr]
        allreduce_custom_spans_nodes=bool(s.get("allreduce_custom_spans_nodes", 1.0)),
        ep_exchange=str(s.get("ep_exchange", "a2a_kernel")),
        pp_handoff_hidden_only=tuple(str(t) for t in s.get("pp_handoff_hidden_only", ())),  # type: ignore[union-attr]
        logits_exchange=str(s.get("logits_exchange", "all_gather")),
        ep_kernels_exchange=str(s.get("ep_kernels_exchange", "")),
        ep_kernels_when=str(s.get("ep_kernels_when", "")),
        ep_kernels=s.get("ep_kernels"),  # type: ignore[arg-type]
        indexer_logits_max_bytes=s.get("indexer_logits_max_bytes"),
        indexer_decode_logits_bound=s.get("indexer_decode_logits_bound"),  # type: ignore[arg-type]
        hybrid_state=s.get("hybrid_state"),  # type: ignore[arg-type]
        kv_blocks=s.get("kv_blocks"),  # type: ignore[arg-type]
        encoder_split_model_types=tuple(s.get("encoder_split_model_types", ())),  # type: ignore[arg-type]
        pp_tower_first_stage_model_types=tuple(s.get("pp_tower_first_stage_model_types", ())),  # type: ignore[arg-type]
        device_flags=true_device_flags(hw),
    )
