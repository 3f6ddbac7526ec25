"""What a rank's memory is held to and asked under: the seed's thresholds, the wall they make, and the options of
one estimate (prefill chunk, the engine's weight and cache layout).

Thresholds follow the seed (Step 3.2/3.4): what the model uses must stay under min(0.95 x capacity, capacity -
runtime reserve) (a wall, `memory_limit`); weights + KV above 0.8 of capacity is a strong warning (class B, may be
justified).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from solver.estimate.factors import Factors
from solver.estimate.request_state import CacheLayout, block_fields, hybrid_fields
from solver.specs.framework import FrameworkProfile
from solver.specs.profile_facts import HybridStateLayout, IndexerDecodeBound, KVBlocks
from solver.estimate.stage_ranks import launched_device
from solver.specs.profile_serving import EpKernels, step_default
from solver.specs.hardware import Hardware
from solver.specs.model import ModelSpec
from solver.specs.parallel import ParallelConfig
from solver.specs.rule_env import true_device_flags
from solver.specs.profile_serving import DEFAULT_TOKEN_BUDGET, command_budget

TOTAL_FRACTION = 0.95  # seed 3.4: total memory > capacity x 0.95 -> increase parallelism or reduce batch
WEIGHTS_KV_FRACTION = 0.8  # seed 3.2: parameters + KV close to capacity x 0.8 -> tight


@dataclass(frozen=True)
class MemoryOptions:
    total_fraction: float = TOTAL_FRACTION
    weights_kv_fraction: float = WEIGHTS_KV_FRACTION
    # tokens of one prefill forward where the caller sets them (memory --prefill-chunk, a prefill-only worker's whole
    # step: workload_options); None: the engine's own step budget below, an attention-DP rank's share of it
    prefill_chunk: int | None = None
    # the engine's default tokens per forward step on the device (FrameworkScheduler.token_budget_for, as Factors
    # carry it: engine_options; framework_options given the device), and whether its attention-DP ranks split it
    token_budget: int = DEFAULT_TOKEN_BUDGET
    budget_split_by_attention_dp: bool = False
    # the budget the engine's command sets over that default (Factors.token_budget_rule, the profile's
    # step_budget launch argument; None: the default), which chunk_tokens evaluates at a replica's requests
    token_budget_rule: str | None = None
    # which knob splits the shared experts: frameworks differ (dense MLP TP vs the MoE module's TP)
    shared_experts_knob: str = "dense_tp_size"
    include_mtp: bool = False
    # the engine's KVP layout (FrameworkProfile.kvp_splits_attention_weights, as Factors carry it: engine_options):
    # the modules attention TP splits (attention, linear attention, SSM, conv) split over attention TP x KVP, and
    # so do the heads and state of the mixers KVP does not split (base.heads_split)
    kvp_splits_attention_weights: bool = False
    # the engine's CP cache layout (FrameworkProfile.cp_replicates_kv_cache): every CP rank keeps each request's
    # whole KV (vLLM's prefill context parallel), so CP does not divide the cache
    cp_replicates_kv_cache: bool = False
    # the engine's indexer key format (FrameworkProfile.indexer_keys_unquantised): the activation dtype, no scale
    indexer_keys_unquantised: bool = False
    # the engine's KVP indexer layout (FrameworkProfile.kvp_replicates_indexer_keys): every KVP rank keeps every
    # token's indexer key, so KVP does not divide them
    kvp_replicates_indexer_keys: bool = False
    # how the engine's CP ranks decode a cached request (FrameworkProfile.cp_decode_repeats_batch,
    # cp_decode_shards_kv; neither: each request on one of them, the ranks decoding as attention DP), which the
    # memory answer says of the cache it splits (rank.kv_split.cp_decode_form)
    cp_decode_repeats_batch: bool = False
    cp_decode_shards_kv: bool = False
    # the engine's MTP drafter under PP (FrameworkProfile.pp_drafter_own_embedding): its own embedding table on the
    # last stage (estimate.pipeline.held_absent)
    pp_drafter_own_embedding: bool = False
    # the engine's bound on one indexer logits matrix (FrameworkProfile.indexer_logits_max_bytes; None: the whole
    # matrix), read by the indexer's scratch (activations)
    indexer_logits_max_bytes: float | None = None
    # the engine's decode indexer logits (FrameworkProfile.indexer_decode_logits_unbounded): the whole matrix, the
    # bound above held to prefill
    indexer_decode_logits_unbounded: bool = False
    # the engine's decode indexer bound and its condition (FrameworkProfile.indexer_decode_logits_bound), read at
    # each configuration (activations.decode_logits_bound) with the device's flags that hold (rule_env.
    # true_device_flags: the Factors' or memory_per_rank's device; none known, no condition on one holds)
    indexer_decode_logits_bound: IndexerDecodeBound | None = None
    # how the engine allocates a hybrid model's constant state beside the KV (FrameworkProfile.hybrid_state; None:
    # the seed's, each request's exact state and KV)
    hybrid_state: HybridStateLayout | None = None
    # the engine's KV blocks (FrameworkProfile.kv_blocks; None: each request's exact tokens, none reserved)
    kv_blocks: KVBlocks | None = None
    device_flags: frozenset[str] = frozenset()
    # the prompt tokens a prefill of one request holds, its output aside (the workload's ISL; None: the whole
    # seq_len, where the caller knows no split): the prefill's tokens and the keys its queries score
    prompt_tokens: int | None = None
    # draft tokens a decode step verifies per sequence beside its own (MTP depth; memory_per_rank sets it from its
    # mtp_layers): the decode step's rows
    decode_drafts: int = 0
    # tokens a decode step runs each sequence where the workload says (Workload.verify_width: its own and the
    # drafts it verifies, a lookup's whole tree where the engine verifies one: SGLang's NGRAM runs bs x
    # --speculative-num-draft-tokens rows, sglang 0.5.23 speculative/ngram_worker.py:299-303, 367-381); 0: 1 +
    # decode_drafts. The decode step's rows
    decode_rows: int = 0
    # the engine's zero-expert routing (FrameworkProfile.zero_expert_picks_computed): every zero pick runs as expert 0,
    # so the rank holding it holds their activations too (layers.moe.MoE.hot_rank_activation)
    zero_expert_picks_computed: bool = False
    # the engine's tower layout (FrameworkProfile.encoder_split_model_types): the wrappers whose vision / audio
    # tower splits over the attention TP group (weights.split_degree); any other's whole on every rank
    encoder_split_model_types: tuple[str, ...] = ()
    # the engine's towers under PP (FrameworkProfile.pp_tower_first_stage_model_types): the wrappers whose tower
    # only the first stage holds (estimate.pipeline.held_absent)
    pp_tower_first_stage_model_types: tuple[str, ...] = ()
    # the engine's EP kernels, their condition and the buffers they allocate (FrameworkProfile.ep_kernels), read
    # by buffers.a2a_buffer_bytes
    ep_kernels: EpKernels | None = None
    # a disaggregated prefill worker's memory (its profile read as that role: FrameworkProfile.prefill_role, set by
    # framework_options and role_options): its command keeps the scheduler's step budget and runs that role's EP
    # kernels, whose buffers it allocates (EpKernels.buffers_for)
    prefill_worker: bool = False

    def chunk_tokens(self, synced: int, replica_batch: int = 1) -> int:
        """Tokens of one prefill forward of an attention replica holding `replica_batch` requests, where `synced`
        attention-DP ranks step together (closed_loop.synced_ranks): the caller's chunk, else the budget the
        engine's command sets (profile_serving.command_budget: its rule at those requests and the draft depth,
        else its default), its share where the engine divides it over those ranks (workload.token_budget's rule)."""
        if self.prefill_chunk is not None:
            return self.prefill_chunk
        budget = command_budget(self.token_budget, self.token_budget_rule, replica_batch, self.decode_drafts)
        if self.budget_split_by_attention_dp and synced > 1:
            return max(1, budget // synced)
        return budget

    def prompt_of(self, seq_len: int) -> int:
        """The prompt tokens of a request holding `seq_len` tokens: `prompt_tokens`, never above seq_len."""
        return seq_len if self.prompt_tokens is None else min(self.prompt_tokens, seq_len)

    @property
    def cache_layout(self) -> CacheLayout:
        """The engine's cache layout as request_state reads it."""
        return CacheLayout(cp_replicates_kv=self.cp_replicates_kv_cache,
                           index_unquantised=self.indexer_keys_unquantised,
                           kvp_replicates_index=self.kvp_replicates_indexer_keys,
                           **block_fields(self.kv_blocks),
                           **hybrid_fields(self.hybrid_state, self.decode_drafts))


# the engine's layout facts a memory estimate reads: fields of the same name on FrameworkProfile, Factors and
# MemoryOptions (the profile's YAML, the step costs, the memory side)
MEMORY_LAYOUT = ("kvp_splits_attention_weights", "cp_replicates_kv_cache", "indexer_keys_unquantised",
                 "kvp_replicates_indexer_keys", "indexer_decode_logits_unbounded", "cp_decode_repeats_batch",
                 "cp_decode_shards_kv", "zero_expert_picks_computed", "pp_drafter_own_embedding")
# the engine's amounts a memory estimate reads, the same way (None where the engine sets none)
MEMORY_AMOUNTS = ("indexer_logits_max_bytes", "indexer_decode_logits_bound", "hybrid_state", "kv_blocks",
                  "ep_kernels", "encoder_split_model_types", "pp_tower_first_stage_model_types")


def engine_options(opts: MemoryOptions | None, f: Factors) -> MemoryOptions:
    """`opts` with the engine's layout facts the step costs read from `f`, so that one configuration's memory
    and step costs price one layout. Whoever holds the engine's factors passes them here."""
    return _with_layout(opts, f)


def framework_options(fw: FrameworkProfile, opts: MemoryOptions | None = None,
                      hw: Hardware | None = None) -> MemoryOptions:
    """`opts` under the engine's layout read from its profile (the KVP split of attention weights, the CP cache
    replication, the indexer keys' format and KVP replication) and, given the device `hw`, its step budget there:
    what engine_options gives from the engine's factors, for a caller holding the profile alone (a launch, a
    memory answer), so that its memory is the estimate's."""
    opts = _with_layout(opts, fw)
    if hw is None:
        return opts
    budget = {"token_budget": fw.token_budget_on(hw),
              "budget_split_by_attention_dp": fw.scheduler.budget_split_by_attention_dp}
    return opts if all(getattr(opts, k) == v for k, v in budget.items()) else replace(opts, **budget)


def _with_layout(opts: MemoryOptions | None, src: Factors | FrameworkProfile) -> MemoryOptions:
    """`opts` (default ones where None) with the layout facts (MEMORY_LAYOUT, MEMORY_AMOUNTS) of `src`; the same
    object where it has them."""
    opts = opts or MemoryOptions()
    layout = {k: bool(getattr(src, k)) for k in MEMORY_LAYOUT}
    layout.update({k: getattr(src, k) for k in MEMORY_AMOUNTS})
    if isinstance(src, Factors):  # the profile knows no device: the caller's (memory_per_rank: device_options) stays
        layout["device_flags"] = src.device_flags
        layout["token_budget"] = src.token_budget or DEFAULT_TOKEN_BUDGET
        layout["budget_split_by_attention_dp"] = bool(src.budget_split_by_attention_dp)
        layout["token_budget_rule"] = src.token_budget_rule
    else:  # the rule is the command's, whatever the device; the role the profile is read as
        layout["token_budget_rule"] = src.launch.step_budget_rule() if src.launch is not None else None
        layout["prefill_worker"] = src.prefill_role
    if all(getattr(opts, k) == v for k, v in layout.items()):
        return opts
    return replace(opts, **layout)


def config_options(opts: MemoryOptions, model: ModelSpec, pc: ParallelConfig, hw: Hardware) -> MemoryOptions:
    """`opts` with configuration `pc`'s default tokens per step on `hw` (profile_serving.step_default: the EP
    kernels' where they hold), which chunk_tokens and the EP buffers read: memory_per_rank's options."""
    budget = step_default(opts.ep_kernels, opts.token_budget, model.is_moe, pc, launched_device(hw),
                          opts.prefill_worker)
    return opts if budget == opts.token_budget else replace(opts, token_budget=budget)


def role_options(opts: MemoryOptions, fw: FrameworkProfile) -> MemoryOptions:
    """`opts` for a worker of the role `fw` is read as (FrameworkProfile.prefill_role): what a caller holding the
    engine's factors (engine_options, which know no role) and the profile passes on."""
    return opts if opts.prefill_worker == fw.prefill_role else replace(opts, prefill_worker=fw.prefill_role)


def device_options(opts: MemoryOptions, hw: Hardware) -> MemoryOptions:
    """`opts` with the flags of `hw` (rule_env.true_device_flags), which a device-limited engine fact reads."""
    flags = true_device_flags(hw)
    return opts if opts.device_flags == flags else replace(opts, device_flags=flags)


def workload_options(opts: MemoryOptions, prompt_tokens: int, drafts: int | None = None,
                     step_prompts: int | None = None, rows: int | None = None) -> MemoryOptions:
    """`opts` for requests of `prompt_tokens` prompt tokens decoding with `drafts` draft tokens a step (None: as
    `opts` has it): what a caller holding the workload passes on, so that the planner's tables and
    memory_per_rank size one prefill and one decode step. `step_prompts`: a prefill-only worker's prompts, which
    its estimate prices as one step (estimate.figures, estimate.disagg) and its command's token budget holds
    (launch.emit.step_budget): a forward then holds all of them, past the engine's budget (the command gives each
    attention-DP rank the larger of the two where the engine divides it, so no share is taken). `rows`: the tokens
    a decode step runs each sequence (decode_rows; None: as `opts` has it)."""
    drafts = opts.decode_drafts if drafts is None else drafts
    rows = opts.decode_rows if rows is None else rows
    chunk = (max(opts.prefill_chunk or opts.token_budget, step_prompts * prompt_tokens) if step_prompts
             else opts.prefill_chunk)
    if (opts.prompt_tokens == prompt_tokens and opts.decode_drafts == drafts and opts.prefill_chunk == chunk
            and opts.decode_rows == rows):
        return opts
    return replace(opts, prompt_tokens=prompt_tokens, decode_drafts=drafts, prefill_chunk=chunk, decode_rows=rows)


def memory_limit(capacity_bytes: float, reserved_bytes: float, total_fraction: float) -> float:
    """The wall: the seed's 0.95 x capacity for what the model uses, and the runtime reserve must fit too."""
    return min(total_fraction * capacity_bytes, capacity_bytes - reserved_bytes)
