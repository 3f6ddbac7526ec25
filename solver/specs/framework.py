"""FrameworkProfile: which parallel knobs an inference framework exposes and the rules its code enforces.

A framework is data (`solver/frameworks/<name>.yaml`), not a code branch. Each rule is a pair of expressions
in the safe language of `solver.specs.expr` over a fixed set of names (`RULE_NAMES`, specs/profile_rules.py, with
the Rule itself); the planner turns the same rules into constraints, and `shardplan check` evaluates them on one
configuration. Knobs a framework does not expose are fixed at 1. The profile's serving model (efficiencies, the
scheduler, CUDA-graph ranges) is specs/profile_serving.py's.
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Mapping

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator

from solver.catalog import frameworks_dir
from solver.errors import InputError, quoted
from solver.specs.limits import MAX_MTP
from solver.specs.knobs import ATTN_GROUP_KNOBS, FOLLOWS, KNOBS, LAYOUT_SWITCHES
from solver.specs.expr import Value, compile_expr
from solver.specs.fitted import apply_fitted, fit_keys, fitted_factors, fitted_global, pair_factors, user_pair
from solver.specs.hardware import VENDOR
from solver.memo import IdentityMemo
from solver.specs.launch_spec import (DISAGG_ROLES, POOL_FIGURES, REPLICA_BATCH, Feature, FeatureName, LaunchSpec,
                                      PairCheck)
from solver.specs.profile_rules import KNOB_NAMES, KnobName, Rule
from solver.specs.profile_serving import EpKernels, FrameworkEfficiency, FrameworkScheduler, FrameworkServing
from solver.specs.profile_facts import (EVERY_WRAPPER, PREFIX_CACHE_NAMES, DefaultRunningCap, DraftMethods, HybridStateLayout, IndexerDecodeBound,
                                       KVBlocks, KVOffload, LongRequest, MaxContext, MoeChunk, NoPrefixCache, PPSplit,
                                       RefusedKVScheme, SpeculativeRunningCap, TowerFlag, format_facts)
from solver.specs.rule_env import model_facts

if TYPE_CHECKING:
    from solver.specs.hardware import Hardware
    from solver.specs.model import ModelSpec
    from solver.specs.parallel import ParallelConfig
    from solver.specs.precision import Precision


# how an engine numbers a deployment's ranks (FrameworkProfile.rank_order; estimate.stage_ranks reads them)
STAGE_MAJOR, DP_MAJOR = "stage_major", "dp_major"

# the knob a feature without its own `knob` field sets, by the feature's name: a refusal
# (Feature.refused_model_types) keeps that knob at its neutral value
FEATURE_KNOBS = {"pipeline_parallel": "pp_size", "redundant_experts": "redundant_experts"}


def feature_knob(name: str, feature: Feature) -> str | None:
    """The knob a feature sets: its own `knob` field, else the one its name implies (FEATURE_KNOBS), else None."""
    return feature.knob or FEATURE_KNOBS.get(name)


_FOR_ROLE = IdentityMemo(64)  # (profile, prefill role) -> FrameworkProfile.for_role(role)


class FrameworkProfile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)

    # the serving role its rules read (prefill_role): set by for_role, never by a profile file
    _prefill_role: bool = PrivateAttr(False)
    # the profile a role copy was made from without extra rules (for_role changes the role from it, and hands it
    # back for its own role)
    _base: "FrameworkProfile | None" = PrivateAttr(None)

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
    indexer_keys_unquantised: bool = Field(
        False, description="it caches a sparse-attention (DSA) indexer's keys in the activation dtype without a "
        "scale, beside the latent in one cache entry (vllm-ascend's AscendMLAAttentionSpec: head_size kv_lora_rank + "
        "qk_rope_head_dim + index_head_dim in the cache dtype), so they are read and scored at that precision; "
        "false: the layer's own format (DSA's fp8 keys plus one fp32 scale)")
    kvp_replicates_indexer_keys: bool = Field(
        False, description="each of its KV-parallel ranks keeps every token's indexer key and scores them all "
        "(vllm-ascend's sfa_dcp_replicated_indexer_size, SGLang's DSA index buffer of (size + page) x dcp - page "
        "slots), while KVP splits the latent by tokens; false: KVP splits the indexer keys as it splits the cache")
    indexer_logits_max_bytes: float | None = Field(
        None, ge=0, description="the most bytes one sparse-attention indexer's fp32 logits matrix (query rows x "
        "the keys they score) takes: the engine splits the rows so each piece fits, never below one row (vLLM's "
        "VLLM_SPARSE_INDEXER_MAX_LOGITS_MB); 0: the matrix takes no memory the plan holds (an op fusing the top-k, "
        "or a budget carved from what is free at the step), one row charged; unset: the whole matrix, the "
        "physical upper bound")
    indexer_decode_logits_unbounded: bool = Field(
        False, description="its decode step holds the whole indexer logits matrix (its rows, 1 + the draft tokens "
        "per sequence, against each one's keys), indexer_logits_max_bytes bounding the prefill's only (vLLM 0.34.0 "
        "sizes the decode logits max_num_seqs x (1 + speculative tokens) x max_model_len beside the prefill "
        "budget); false: the bound holds at decode too")
    hybrid_state: HybridStateLayout | None = Field(
        None, description="how it allocates a hybrid model's constant per-request state beside the KV "
        "(HybridStateLayout); unset: the seed's, each request's state counted once beside its exact KV")
    kv_blocks: KVBlocks | None = Field(
        None, description="the KV cache's block of tokens and the blocks its pool reserves (KVBlocks); unset: each "
        "request's exact tokens, no block reserved")
    unserved_model_types: list[str] = Field(
        default_factory=list, description="model types (the text config's model_type) it has no model for: every "
        "command refuses the pairing (vLLM 0.34.0 dropped MiniMax-M1); empty: every model the catalog reads")
    draft_methods: DraftMethods | None = Field(
        None, description="the speculative methods its command may name, by what a draft step runs (DraftMethods); "
        "unset: a command's method is read as the launch's MTP")
    no_prefix_cache: NoPrefixCache | None = Field(
        None, description="the models it serves without a prefix cache as launched (NoPrefixCache); unset: its "
        "launch caches prefixes for every model")
    indexer_decode_logits_bound: IndexerDecodeBound | None = Field(
        None, description="where its condition holds, the decode indexer logits are split to this bound although "
        "indexer_decode_logits_unbounded (vLLM 0.34.0: SM100 without DCP / PCP); unset: none")
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
    pp_handoff_residual: bool = Field(
        False, description="its pipeline stages hand on the residual beside the hidden state: a pre-norm decoder "
        "layer returns its output and the residual unsummed (the next layer's fused add + norm sums them), so a "
        "stage sends 2 x hidden values a token (vLLM's IntermediateTensors and SGLang's PPProxyTensors carry "
        "hidden_states and residual); a hyper-connection or AltUp model's streams go alone (ModelSpec."
        "residual_width); false: the hidden state alone (estimate.pipeline.handoff_width)")
    pp_drafter_own_embedding: bool = Field(
        False, description="under PP its MTP drafter loads its own embedding table on the last stage, which holds "
        "no target embedding to share (vLLM: the target's is shared only at pp_size 1), so that stage holds an "
        "embedding beside the LM head where MTP is on (estimate.pipeline.held_absent); false: none there")
    pp_handoff_hidden_only: list[str] = Field(
        default_factory=list, description="model types whose model code hands on the hidden state alone where "
        "pp_handoff_residual holds (the residual folded into it: vLLM's gemma4)")
    zero_expert_picks_computed: bool = Field(
        False, description="a token's pick of an identity (zero-computation) expert is remapped to routed expert 0 "
        "at weight 0 and runs through the MoE kernels and the dispatch like a real pick (vLLM's ZeroExpertRouter, "
        "SGLang's zero_experts_compute_triton: the kernels take no negative id), so every top-k pick costs and the "
        "zero picks all land on the rank holding expert 0; false: a zero pick costs nothing (real_topk)")
    encoder_split_model_types: tuple[str, ...] = Field(
        (), strict=False, description="the multimodal wrappers (config.json's top-level model_type) whose vision / audio tower it "
        "splits over the attention TP group, as it splits attention (vLLM's default --mm-encoder-tp-mode weights "
        "over the towers' Column/RowParallelLinear; SGLang's towers over attn_tp unless --mm-enable-dp-encoder): a "
        "rank holds 1 / (its attention TP group) of the tower; any other wrapper's tower (one the engine builds of "
        "plain linears, or not read) whole on every rank, the seed's")
    tower_flags: list[TowerFlag] = Field(
        default_factory=list, description="command arguments that place the vision / audio towers otherwise than "
        "encoder_split_model_types (check --command reads them; a tower not loaded beats one replicated)")
    pp_default_split: PPSplit | None = Field(
        None, description="how it splits the layers over pipeline stages where its command names no split "
        "(check --command prices the split a command runs); None: the balanced split, the first stages one more")
    kv_offload: KVOffload | None = Field(
        None, description="how it keeps KV blocks in host memory beside the device cache (seed 3.4's KV offload): "
        "the flags that size it, what the host tier holds; the 3.4 KV warning names its flag and check --command "
        "reads it. None: the facts give it none")
    moe_chunk: MoeChunk | None = Field(
        None, description="the setting that bounds the tokens of one MoE forward (seed 3.4's moe_chunk), where "
        "the engine has one; the 3.4 KV warning names it. None: its MoE runs a forward's tokens at once")
    speculative_running_cap: SpeculativeRunningCap | None = Field(
        None, description="the running-request cap the engine sets where a command names a speculative method and "
        "no batch cap (check --command prices it: the rest wait); None: the command's cap or memory decides")
    default_running_cap: DefaultRunningCap | None = Field(
        None, description="the running-request cap the engine sets where a command leaves its batch-cap flag out "
        "(check --command prices a concurrency above it: the rest wait); None: memory decides")
    refused_kv_schemes: list[RefusedKVScheme] = Field(
        default_factory=list, description="checkpoint KV-cache schemes the engine refuses to load (a checkpoint "
        "carrying one is refused by solve, estimate and check; FrameworkProfile.checkpoint_kv_refusal)")
    pp_tower_first_stage_model_types: tuple[str, ...] = Field(
        (), strict=False, description="the multimodal wrappers (config.json's top-level model_type) whose vision / "
        "audio tower it builds on the first pipeline stage only, where the tower's output is consumed (vLLM's "
        "_mark_tower_model: a StageMissingLayer on the later stages; SGLang's gemma4), or [\"*\"]: every wrapper's "
        "(an engine that builds every tower there): the later stages hold none (estimate.pipeline.held_absent); any "
        "other wrapper's tower on every stage")
    kv_handoff_over_nics: bool = Field(
        False, description="its disaggregated KV hand-off runs over the RDMA NICs whatever the pools span (SGLang's "
        "mooncake transfer engine: protocol rdma unless SGLANG_MOONCAKE_CUSTOM_MEM_POOL opts into NVLink), so it is "
        "priced on the tier a group one rank past the scale-up domain crosses; false: on the slowest tier the two "
        "pools' ranks span (NVLink inside a node or an NVL72 rack)")
    sp_in_tp_group: bool = Field(
        False, description="its attention sequence-parallel ranks (attn_sp_size) are TP ranks: its tensor-parallel "
        "size counts them (vllm-ascend's enable_dsa_cp splits the tokens over the TP group, the attention weights "
        "unsplit), so -tp = attn_tp_size x kvp_size x attn_sp_size; false: SP ranks beside the TP group")
    equal_ranks_per_node: bool = Field(
        False, description="its multi-node launch runs the same number of ranks on every node (vLLM's and "
        "SGLang's --nnodes: world / nnodes a node), so ranks that leave a node part-filled spread evenly over the "
        "fewest nodes that hold them (12 on 8-GPU nodes: 2 x 6; space.placement); false: nodes fill in rank "
        "order, the last one part-filled (one MPI world)")
    rank_order: Literal[STAGE_MAJOR, DP_MAJOR] = Field(  # type: ignore[valid-type]
        STAGE_MAJOR, description="how the engine numbers a deployment's ranks (estimate.stage_ranks): stage_major, "
        "PP outermost, each pipeline stage's ranks consecutive (SGLang: attention DP inside the TP group); "
        "dp_major, DP outermost, then PP, then one attention group's TP x CP ranks (vLLM: ExternalDP x DP x PP x "
        "PCP x TP), so a stage's DP engines sit PP x their size apart and each engine's stages are neighbours. The "
        "estimate prices the stage hand-off and every group of a stage on the ranks it holds under this order")
    vendors: list[str] = Field(default_factory=list, description="device vendors the engine runs on (hardware "
                               "files' `vendor`); empty: any (the generic profile, a user's own)")
    rules: list[Rule] = Field(default_factory=list)
    efficiency: FrameworkEfficiency = Field(default_factory=FrameworkEfficiency)
    scheduler: FrameworkScheduler = Field(default_factory=FrameworkScheduler)
    launch: LaunchSpec | None = Field(None, description="how the engine's flags and files spell a config")
    max_context: MaxContext | None = Field(None, description="the longest context it derives from a model's "
                                           "config (MaxContext); unset: the context field alone")
    long_request: LongRequest | None = Field(None, description="what it does with a request whose prompt + "
                                             "output exceeds its maximum model length (LongRequest); unset: not "
                                             "read")
    features: dict[FeatureName, Feature] = Field(
        default_factory=dict, description="engine features the planner does not model yet (pipeline_parallel, "
        "redundant_experts, ...), with flag and source")
    serving: FrameworkServing = Field(default_factory=FrameworkServing)
    fitted_as: str | None = Field(
        None, pattern=r"^[a-z0-9][a-z0-9-]*$", description="the engine whose fitted factors "
        "(fitted/factors.yaml, keyed by profile name) this profile carries: a fork or a copy of that engine that runs "
        "its kernels (an in-house vLLM with another token budget: `vllm`); None: its own name's, and a name the "
        "fit never saw carries only the grouped-GEMM and weight-only fractions")
    fixed_redundant_experts: int | None = Field(
        None, ge=0, le=2**17, description="redundant experts the engine always places (None: the planner picks "
        "the fewest that make EP divide the experts, when features.redundant_experts is supported)")

    @field_validator("pp_tower_first_stage_model_types")
    @classmethod
    def _wildcard_alone(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if EVERY_WRAPPER in value and len(value) > 1:
            raise ValueError(f"{EVERY_WRAPPER!r} (every wrapper) stands alone, not beside model types")
        return value

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
        (the engine's DP size flag) is world // (attn_tp x these): KVP carved out of the TP ranks, and the CP / SP
        ranks that each decode the replica's whole batch (SGLang's --attn-cp-size, NSA prefill CP). vLLM's / ATOM's
        PCP ranks each decode their own requests, separate replicas in decode: not among them."""
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

    def replica_batch(self, env: Mapping[str, Value]) -> Value:
        """One engine instance's share of the planned concurrency (launch_spec.REPLICA_BATCH) in rule env `env`:
        the one evaluation the launch, a pasted command's reading and the ranking's flag terms share."""
        return compile_expr(REPLICA_BATCH, self.group_products).evaluate(env)

    @property
    def ep_kernels(self) -> "EpKernels | None":
        """The engine's EP kernels (serving.ep_kernels): the memory side's name for them (memory_options.MEMORY_AMOUNTS)."""
        return self.serving.ep_kernels

    @property
    def prefill_role(self) -> bool:
        """Whether this profile is read as a disaggregated prefill worker's (for_role("prefill")): the memory side
        sizes that worker's own buffers (memory_options.MemoryOptions.prefill_worker)."""
        return self._prefill_role

    @property
    def rule_aliases(self) -> tuple[tuple[str, tuple[str, ...] | str], ...]:
        """What the names a rule reads by the profile's definition stand for: the group names (group_products) and
        the named expressions (profile_rules.NAMED_EXPRESSIONS), each the one text its command is built from."""
        ep = self.serving.ep_kernels
        return (*self.group_products, ("ep_kernels", ep.when if ep is not None and ep.when else "false"),
                ("replica_batch", REPLICA_BATCH), ("prefill_role", "true" if self._prefill_role else "false"))

    def for_role(self, role: str | None, extra: "tuple[Rule, ...] | list[Rule]" = ()) -> "FrameworkProfile":
        """This profile as a worker of `role` runs it (a disaggregated pool's, "prefill" or "decode"; None: one
        aggregated server), with `extra` rules beside its own: every rule reads `prefill_role` as that role. Where
        neither the role the rules read nor the rules change, the profile itself (a copy asked for its profile's role:
        that profile); otherwise a copy of the profile (its rules copied and bound again, the profile's untouched),
        one per (profile, role) without `extra`, so the planner's memos keyed by a profile's identity serve every
        plan of a role."""
        if role is not None and role not in DISAGG_ROLES:
            raise InputError("role", f"{role}: a pool is one of {', '.join(DISAGG_ROLES)}")
        prefill = role == "prefill"
        if prefill == self._prefill_role and not extra:
            return self
        base = self._base or self  # a copy's role is changed from its profile's, never stacked on the copy
        if prefill == base._prefill_role and not extra:
            return base

        def build() -> "FrameworkProfile":
            rules = [r.model_copy() for r in (*base.rules, *extra)]
            copy = base.model_copy(update={"rules": rules})
            copy._prefill_role = prefill
            copy._base = None if extra else base  # a copy with rules of its own stays their base
            for rule in rules:
                rule.bind(copy.rule_aliases)
            return copy
        return build() if extra else _FOR_ROLE.get((base,), prefill, build)

    def pool_figures(self, pools: Mapping[str, "ParallelConfig"]) -> dict[str, int]:
        """Each pool's sizes as the launch names `<role>_<figure>` (launch_spec.POOL_NAMES): its world (one pipeline
        stage's ranks, as the rules and its own command read `world`: rule_env), pp_size, and the profile's group
        sizes (tp_group_size, attn_group_size), the products its own command's flags read (group_products)."""
        out: dict[str, int] = {}
        for role, pc in pools.items():
            env = {**pc.settings(), "world": pc.stage_world}
            for figure in POOL_FIGURES:
                out[f"{role}_{figure}"] = int(compile_expr(figure, self.group_products).evaluate(env))
        return out

    def unpaired(self, prefill: "ParallelConfig", decode: "ParallelConfig") -> "PairCheck | None":
        """The first pair check of the disaggregated launch (launch_spec.DisaggLaunch.pairs) that a prefill and a
        decode pool of these layouts fail, of those read on the pools' sizes alone: the planner pairs no such pools,
        and the launch refuses them."""
        pool = self.launch.disagg if self.launch is not None else None
        if pool is None or not pool.pairs:
            return None
        return pool.failed_pair(self.pool_figures({"prefill": prefill, "decode": decode}))

    @model_validator(mode="after")
    def _consistent(self) -> "FrameworkProfile":
        from solver.specs.validation import FieldProblem

        twice = sorted({k for k in self.knobs if self.knobs.count(k) > 1})
        if twice:
            raise FieldProblem("knobs", f"{', '.join(twice)} listed twice")
        if self.kvp_splits_attention_weights and "kvp_size" not in self.knobs:
            raise FieldProblem("kvp_splits_attention_weights", "set without kvp_size among the knobs (KVP is fixed "
                                                               "at 1)")
        if self.kvp_replicates_indexer_keys and "kvp_size" not in self.knobs:
            raise FieldProblem("kvp_replicates_indexer_keys", "set without kvp_size among the knobs (KVP is fixed at 1)")
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
        pp = self.features.get("pipeline_parallel")
        if pp is not None and pp.supported != ("pp_size" in self.knobs):
            # the planner plans stages through the pp_size knob alone: the feature saying otherwise would be
            # read by nothing
            raise FieldProblem("features.pipeline_parallel.supported",
                               f"{str(pp.supported).lower()}, but pp_size is {'not ' if pp.supported else ''}among "
                               "the knobs (the planner plans pipeline stages through the pp_size knob); make the two "
                               "agree")
        for name, feature in self.features.items():
            if feature.knob is not None and feature.knob not in KNOBS:
                raise FieldProblem(f"features.{name}.knob", f"{feature.knob!r} is not a knob ({', '.join(KNOBS)})")
            if feature.refused_model_types and feature_knob(name, feature) is None:
                # refusing_feature finds a refusal by the knob it would set: without one the list is read by nothing
                raise FieldProblem(f"features.{name}.refused_model_types",
                                   "set on a feature with no knob: name the knob it sets (features.NAME.knob), "
                                   "whose value the refusal keeps at 1")
        if self.fitted_as is not None and self.fitted_as not in fitted_factors():
            raise FieldProblem("fitted_as", f"{self.fitted_as!r} has no fitted factors; fitted engines: "
                                            f"{', '.join(sorted(fitted_factors())) or 'none'}")
        seen: set[str] = set()
        for i, rule in enumerate(self.rules):
            if rule.id in seen:
                raise FieldProblem(f"rules.{i}.id", f"{rule.id}: id used twice")
            seen.add(rule.id)
        products = self.group_products
        for rule in self.rules:
            rule.bind(self.rule_aliases)
        if self.launch is not None:
            self.launch.bind(products)
        return self

    def has_feature(self, name: str) -> bool:
        feature = self.features.get(name)
        return feature is not None and feature.supported

    def refusing_feature(self, knob: str, model_type: str) -> str | None:
        """The feature setting `knob` (pipeline_parallel: pp_size; redundant_experts: the setting of its name; else
        its Feature.knob) that the engine refuses for this model type (Feature.refused_model_types), or None."""
        for name, feature in self.features.items():
            if feature_knob(name, feature) == knob and model_type in feature.refused_model_types:
                return name
        return None

    def copies_experts(self, model_type: str) -> bool:
        """It places redundant expert copies for this model type: the feature supported and not refused for it
        (refused_model_types: the model's files build no copies)."""
        return self.has_feature("redundant_experts") and not self.refusing_feature("redundant_experts", model_type)

    def feature_max(self, name: str) -> int | None:
        """The largest count a supported feature takes (Feature.max); None: no limit."""
        feature = self.features.get(name)
        return feature.max if feature is not None and feature.supported else None

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
            raise InputError(field, f"{self.name} runs on {'/'.join(self.vendors)} devices; {hardware} is {vendor}: "
                                    f"the profiles for {vendor} devices are {', '.join(profiles_for_vendor(vendor))}")

    def check_model(self, model: "ModelSpec", field: str = "--framework", vendor: str | None = None) -> None:
        """An engine serves the model types it has a model for (unserved_model_types). `vendor`: the device's, so
        the profiles offered instead are ones that run there (as check_vendor's); None: every shipped profile."""
        if model.model_type in self.unserved_model_types:
            raise InputError(field, f"{self.name} has no model for {model.name} (model type {model.model_type}: "
                                    f"the profile's unserved_model_types); profiles that do not refuse it"
                                    f"{f' on {vendor} devices' if vendor else ''}: "
                                    f"{', '.join(profiles_serving(model.model_type, vendor)) or 'none'}")

    def prefix_hit_refusal(self, model: "ModelSpec", hit: float) -> str | None:
        """Why a prefix-cache hit of `hit` cannot be priced on `model` under this engine (no_prefix_cache: its
        launch keeps no prefix cache for the model, so no prompt token is found cached); None where it can."""
        off = self.no_prefix_cache
        if not hit or off is None:
            return None
        facts = model_facts(model)
        if not compile_expr(off.when).evaluate({k: bool(facts[k]) for k in PREFIX_CACHE_NAMES}):
            return None
        return (f"{self.name} serves {model.name} without a prefix cache ({off.why}), so no prompt token is found "
                f"cached; drop the prefix hit or pick another framework")

    def kv_dtype_refusal(self, kv_dtype: str | None, model: "ModelSpec | None" = None,
                         hw: "Hardware | None" = None) -> str | None:
        """Why this engine's command cannot ask for KV-cache format `kv_dtype` (LaunchSpec.kv_dtype_refusal;
        None without a launch section): `launch` refuses it, so the planner does not plan it either. `model`,
        `hw`: where the engine runs it is checked too (kv_dtype_requires)."""
        if self.launch is None:
            return None
        return self.launch.kv_dtype_refusal(kv_dtype, self.name, format_facts(model, hw))

    def weight_dtype_refusal(self, weight_dtype: str | None, model: "ModelSpec | None" = None,
                             hw: "Hardware | None" = None) -> str | None:
        """Why the engine runs no kernel for weight format `weight_dtype` on this model and device
        (LaunchSpec.weight_dtype_refusal); None where it does or no profile data says."""
        if self.launch is None:
            return None
        return self.launch.weight_dtype_refusal(weight_dtype, self.name, format_facts(model, hw))

    def priced_weight_refusals(self, prec: "Precision", model: "ModelSpec", hw: "Hardware",
                               chosen: Mapping[str, tuple[str, str]]) -> list[tuple[str, str]]:
        """(field, why) where the engine runs no kernel for the weights the plan prices (`prec`, resolve_precision's),
        once a field: each held quantized group's format spelled with the activations its GEMMs take
        (dtypes.spelled_with: int4 beside fp8 is w4afp8), so a checkpoint's own W4A8 is held to
        weight_dtype_requires as a flag's is. `chosen`: group -> (field, the value typed) for the groups a flag or
        a file chose (that value is read first, so the refusal names what was typed); any other group is the
        checkpoint's, and the checkpoint's groups refused alike are one finding naming them all
        (quantization_config.attention; quantization_config (attention, dense))."""
        from solver.specs.dtypes import spelled_with
        from solver.specs.precision import held_groups

        found: dict[tuple[str, str], tuple[str, list[str]]] = {}  # a flag's field / the checkpoint's refusal -> ...
        for group in held_groups(model):
            fmt = prec.fmt(group)
            if not fmt.quantized:
                continue
            field, typed = chosen.get(group, (None, None))
            priced = spelled_with(fmt.name, prec.gemm_dtype(group))
            why = (typed is not None and self.weight_dtype_refusal(typed, model, hw)) \
                or self.weight_dtype_refusal(priced, model, hw)
            if why:
                found.setdefault(("flag", field) if field else ("checkpoint", why), (why, []))[1].append(group)
        return [(field if kind == "flag" else f"quantization_config.{groups[0]}" if len(groups) == 1
                 else f"quantization_config ({', '.join(groups)})", why)
                for (kind, field), (why, groups) in found.items()]

    def checkpoint_kv_refusal(self, model: "ModelSpec") -> tuple[str, str] | None:
        """(field, why) where the checkpoint carries a KV-cache scheme the engine refuses to load
        (refused_kv_schemes); None where it loads the checkpoint's scheme or the checkpoint has none."""
        q = model.quant
        for rk in self.refused_kv_schemes:
            if q.kv_cache is not None and q.method == rk.method and q.kv_cache in rk.formats:
                return (f"quantization_config.{rk.field}",
                        f"the checkpoint's {q.kv_cache} KV-cache scheme ({q.method}), which {self.name} refuses to load whatever "
                        f"its --kv-cache-dtype ({rk.source}); it loads {rk.loads}: serve a checkpoint without this "
                        "scheme, or pick another framework")
        return None

    def sets_token_budget(self) -> bool:
        """Its command gives the engine its token budget (LaunchSpec.sets_token_budget; no launch section: no
        command), so a prefill-only worker's forward holds its whole priced step (Factors.prefill_budget_set)."""
        return self.launch is not None and self.launch.sets_token_budget()

    def token_budget_on(self, hardware: Hardware | str) -> int:
        """The scheduler's default tokens per forward step on `hardware` (FrameworkScheduler.token_budget_for: by
        its name and description, else its memory; a name the catalog does not know has neither)."""
        return self.scheduler.token_budget_for(*_device_words(hardware))

    def running_cap_on(self, hardware: Hardware | str) -> int | None:
        """The running-request cap the engine sets on `hardware` where a command gives none (default_running_cap:
        by its name and description, else its memory); None where the profile names no such default."""
        return self.default_running_cap.on(*_device_words(hardware)) if self.default_running_cap else None

    def efficiency_for(self, hardware: Hardware | str) -> dict[str, float]:
        """Multipliers for the performance model on one hardware: the profile's own, times the fitted
        per-(framework, hardware) factors in `fitted/factors.yaml` (written by benchmarks/fit_efficiency.py).
        `token_budget` (tokens per forward step) and `budget_split_by_attention_dp` (1.0 / 0.0) carry the
        profile's scheduler defaults to `Factors`, `token_budget_rule` the budget its command sets (text),
        `kvp_splits_attention_weights` (1.0 / 0.0) its KVP layout. Give the Hardware where you hold it: its memory
        picks the budget tier (a name is looked up in the catalog, so a user's hardware file has none)."""
        # a name is looked up in the catalog; one it does not know has no memory, vendor or description
        dev = _catalog_device(hardware) if isinstance(hardware, str) else hardware
        name = hardware if isinstance(hardware, str) else hardware.name
        vendor = dev.vendor if dev is not None else ""
        self.check_vendor(name, vendor)
        base = self.efficiency
        out = {"gemm": base.gemm, "attention": base.attention, "hbm": base.hbm, "comm": base.comm,
               "grouped_gemm": base.grouped_gemm, "dequant_gemm": base.dequant_gemm,
               "step_overhead_s": base.step_overhead_s}
        if base.kernel_overhead_s is not None:
            out["kernel_overhead_s"] = base.kernel_overhead_s
        # a pair without its own fit still carries the factors fitted once over every pair (fitted_global)
        fitted = self.fitted_as or self.name
        shared = fitted_global(vendor, framework=fitted)
        # looked up by the profile's and the device's own names, then what each is fitted as (fit_keys: h800,
        # then H100's factors; a catalog name carries its file's fitted_as as a Hardware does), the same rule for
        # a user's own fit (--factors FILE), which replaces the shipped one
        engines = fit_keys(self.name, self.fitted_as)
        devices = dev.fit_keys if dev is not None else (name,)
        pair = user_pair(engines, devices)
        out = apply_fitted(out, pair if pair is not None else pair_factors(fitted_factors(), shared, engines, devices))
        out["token_budget"] = float(self.token_budget_on(hardware))
        out["budget_split_by_attention_dp"] = 1.0 if self.scheduler.budget_split_by_attention_dp else 0.0
        # the budget the command sets, where it sets one: the estimate prices what the launched engine gets
        rule = self.launch.step_budget_rule() if self.launch is not None else None
        if rule is not None:
            out["token_budget_rule"] = rule  # type: ignore[assignment]
        out["prefill_budget_set"] = 1.0 if self.sets_token_budget() else 0.0
        out.update({k: 1.0 if getattr(self, k) else 0.0 for k in LAYOUT_SWITCHES})
        out["dp_major_ranks"] = 1.0 if self.rank_order == "dp_major" else 0.0
        out["pp_handoff_hidden_only"] = tuple(self.pp_handoff_hidden_only)  # type: ignore[assignment]
        if self.indexer_logits_max_bytes is not None:
            out["indexer_logits_max_bytes"] = float(self.indexer_logits_max_bytes)
        if self.indexer_decode_logits_bound is not None:  # a figure and a condition: Factors carries the bound
            out["indexer_decode_logits_bound"] = self.indexer_decode_logits_bound  # type: ignore[assignment]
        if self.hybrid_state is not None:
            out["hybrid_state"] = self.hybrid_state  # type: ignore[assignment]
        if self.kv_blocks is not None:
            out["kv_blocks"] = self.kv_blocks  # type: ignore[assignment]
        if self.encoder_split_model_types:
            out["encoder_split_model_types"] = self.encoder_split_model_types  # type: ignore[assignment]
        if self.pp_tower_first_stage_model_types:
            out["pp_tower_first_stage_model_types"] = self.pp_tower_first_stage_model_types  # type: ignore[assignment]
        out.update(self.serving_factors(vendor))
        return out

    def serving_factors(self, vendor: str | None = None) -> dict[str, float]:
        """The serving block as the flat numbers `Factors` takes (factors.AMOUNTS, and the DP policy and graph
        sizes). On a device of `vendor` the engine does not build its custom all-reduce for
        (serving.allreduce_custom_vendors) the kernel's figures are left out: every all-reduce runs the ring.
        None or "" (a device the catalog does not know): kept."""
        s = self.serving
        sizes = s.graph_sizes()
        dp_policy = s.attention_dp_policy or s.policy
        out = {"decode_first": 1.0 if s.policy == "decode_first" else 0.0,
               "decode_first_synced": 1.0 if dp_policy == "decode_first" else 0.0,
               "first_token_iterations": s.first_token_iterations,
               "graph_sizes": sizes,  # type: ignore[dict-item]  (a tuple: Factors.graph_sizes)
               "graph_open": s.graph_open(),  # type: ignore[dict-item]  (a tuple: Factors.graph_open)
               "graph_sizes_mtp": s.graph_sizes(mtp=True),  # type: ignore[dict-item]  (Factors.graph_sizes_mtp)
               "graph_open_mtp": s.graph_open(mtp=True),  # type: ignore[dict-item]  (Factors.graph_open_mtp)
               "graph_caps": tuple((c.when, c.value) for c in s.graph_max_batch),  # type: ignore[dict-item]
               "graph_cap_lift": 1.0 if s.graph_max_batch_lift else 0.0,
               "eager_launch_s": s.eager_launch_s,
               "ep_exchange": s.ep_exchange,  # type: ignore[dict-item]  (a name: Factors.ep_exchange)
               "logits_exchange": s.logits_exchange}  # type: ignore[dict-item]  (a name: Factors.logits_exchange)
        if s.ep_kernels is not None:  # names and a condition: Factors.ep_exchange_for reads them
            out.update({"ep_kernels_exchange": s.ep_kernels.exchange,  # type: ignore[dict-item]
                        "ep_kernels_when": s.ep_kernels.when,  # type: ignore[dict-item]
                        "ep_kernels": s.ep_kernels})  # type: ignore[dict-item]  (the buffers: Factors.ep_kernels)
        if vendor and s.allreduce_custom_vendors and vendor not in s.allreduce_custom_vendors:
            return out
        out.update({"allreduce_oneshot_max_bytes": float(s.allreduce_oneshot_max_bytes),
                    "allreduce_custom_max_bytes": float(s.allreduce_custom_max_bytes),
                    "allreduce_oneshot_max_bytes_by_ranks": tuple(  # type: ignore[dict-item]  (Factors: a tuple)
                        sorted((int(r), float(b)) for r, b in s.allreduce_oneshot_max_bytes_by_ranks.items())),
                    "allreduce_custom_ranks": tuple(sorted(s.allreduce_custom_ranks)),  # type: ignore[dict-item]
                    "allreduce_custom_spans_nodes": 1.0 if s.allreduce_custom_spans_nodes else 0.0})
        return out

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
        too_deep = self.mtp_past_max(env.get("mtp", 0))
        if too_deep:
            problems.append(f"mtp = {too_deep}")
        r = env.get("redundant_experts", 0)
        if r and not self.has_feature("redundant_experts"):
            problems.append(f"redundant_experts = {r} but {self.name} has no redundant experts (features)")
        elif r and self.fixed_redundant_experts is not None and r != self.fixed_redundant_experts:
            problems.append(f"redundant_experts = {r} but {self.name} places {self.fixed_redundant_experts}")
        elif r and (cap := self.feature_max("redundant_experts")) is not None and r > cap:
            problems.append(f"redundant_experts = {r} exceeds {self.name}'s most redundant experts, {cap}")
        if r and not env.get("is_moe"):
            problems.append(f"redundant_experts = {r} on a model without routed experts; leave it out")
        return problems

    def mtp_past_max(self, mtp: int) -> str | None:
        """Why an MTP depth is past what the engine drafts (max_mtp); None within it."""
        return f"{mtp} exceeds {self.name}'s maximum MTP depth {self.max_mtp}" if mtp > self.max_mtp else None

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


def _device_words(hardware: Hardware | str) -> tuple[str, float | None]:
    """(the device's name and description, its memory in bytes) as an engine's by-device default reads them
    (profile_serving.by_device); a name the catalog does not know has no description nor memory."""
    dev = _catalog_device(hardware) if isinstance(hardware, str) else hardware
    name = hardware if isinstance(hardware, str) else hardware.name
    memory = float(dev.memory_bytes) if dev is not None else None
    return f"{name} {dev.description if dev is not None else ''}", memory


def _catalog_device(hardware: str) -> Hardware | None:
    """The catalog device of that name (None for a name the catalog does not know, e.g. a user's file)."""
    from solver.specs.hardware_catalog import load_hardware

    try:
        return load_hardware(hardware)
    except (InputError, OSError, ValueError):
        return None


def _norm(name: str) -> str:
    return name.strip().lower().replace("_", "-")


def _checked_vendors(fw: FrameworkProfile, path: Path) -> FrameworkProfile:
    """A user's profile whose vendor lists misspell no catalog vendor (nvdia): the engine would run on no device of
    the vendor meant, or build its all-reduce kernel for none. A new vendor's name (intel) is taken as written."""
    from solver.specs.hardware_catalog import catalog_vendors, vendor_slip

    for field, names in (("vendors", fw.vendors), ("serving.allreduce_custom_vendors",
                                                   fw.serving.allreduce_custom_vendors)):
        for i, vendor in enumerate(names):
            meant = vendor_slip(vendor)
            if meant is not None:
                raise InputError(f"{path}: {field}.{i}", f"{vendor!r} is no catalog vendor; did you mean {meant}? "
                                                         f"(known: {', '.join(catalog_vendors())})")
    return fw


def list_frameworks() -> list[str]:
    """Names of the shipped profiles, sorted."""
    return sorted(p.stem for p in frameworks_dir().glob("*.yaml"))


def profiles_for_vendor(vendor: str | None) -> list[str]:
    """The shipped profiles that run on this vendor's devices, sorted (those with no vendor list, generic, run on
    any): what a refusal offers in place of an engine that does not run there."""
    return [name for name in list_frameworks() if load_framework(name).runs_on(vendor)]


def profiles_serving(model_type: str, vendor: str | None = None) -> list[str]:
    """The shipped profiles with a model for this model type (FrameworkProfile.unserved_model_types), sorted; with
    `vendor`, those that run on its devices only (profiles_for_vendor)."""
    return [name for name in profiles_for_vendor(vendor) if model_type not in load_framework(name).unserved_model_types]


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
        return _checked_vendors(load_framework_file(path), path)
    candidate = frameworks_dir() / f"{_norm(str(name_or_path))}.yaml"
    if not candidate.is_file():
        raise InputError("framework", f"unknown framework '{name_or_path}'; known: {', '.join(list_frameworks())}")
    return load_framework_file(candidate)
