"""The parallel_config's vocabulary, one record per knob: its name, CLI flag, the seed's short name, the planner
group that owns it, the module it splits and the size derived from it. Everything that names a knob (the
config model, the CLI, the framework rules, the planner's groups, reports, profiling advice) reads this
registry. Plain data with no imports beyond `collections`, so the command line builds its options without
loading pydantic (solver.specs.parallel re-exports the names with ParallelConfig)."""
from __future__ import annotations

from collections import namedtuple

KnobSpec = namedtuple("KnobSpec", "name flag short group module derived seed splits_weights")
KnobSpec.__doc__ = """One knob. name: the parallel_config key; flag: its CLI option; short: the seed's column name;
group: the planner group whose choice sets it (plan.groups.GROUPS; "stage" = every group shares it); module:
the module it splits, in the parameter report's names; derived: the size world // knob the seed also states
("" if none); seed: one of the seed's eight parallel_config keys; splits_weights: it shards its module's
weights (CP, KVP, SP and PP split tokens, cache or layers instead)."""

KNOB_SPECS: tuple[KnobSpec, ...] = (
    KnobSpec("attn_tp_size", "--attn-tp", "attn_tp", "attn", "attention", "attn_dp_size", True, True),
    KnobSpec("dense_tp_size", "--dense-tp", "dense_tp", "dense", "dense_ffn", "", True, True),
    KnobSpec("moe_tp_size", "--moe-tp", "moe_tp", "moe", "routed_experts", "moe_ep_size", True, True),
    KnobSpec("embed_tp_size", "--embed-tp", "embed_tp", "embed", "embedding", "", True, True),
    KnobSpec("lmhead_tp_size", "--lmhead-tp", "lmhead_tp", "lmhead", "lm_head", "", True, True),
    KnobSpec("o_proj_tp_size", "--oproj-tp", "o_proj_tp", "attn", "o_proj", "", True, True),
    KnobSpec("cp_size", "--cp", "cp", "attn", "attention", "", True, False),
    KnobSpec("kvp_size", "--kvp", "kvp", "attn", "attention", "", True, False),
    # the RFC's attention sequence parallelism (seeds/000): newer than the seed's eight keys
    KnobSpec("attn_sp_size", "--attn-sp", "attn_sp", "attn", "attention", "", False, False),
    KnobSpec("pp_size", "--pp", "pp", "stage", "layers", "", False, False),
)
KNOB: dict[str, KnobSpec] = {k.name: k for k in KNOB_SPECS}
# a knob left at 1 takes another's value: o_proj follows attention TP (row-parallel after it) unless split on its
# own, so o_proj_tp_size equal to attn_tp_size is the same split as 1; outside MLA o_proj is part of attention and
# its knob takes attention TP's value (seed output format note)
FOLLOWS: dict[str, str] = {"o_proj_tp_size": "attn_tp_size"}

KNOBS: tuple[str, ...] = tuple(k.name for k in KNOB_SPECS)
SEED_KNOBS: tuple[str, ...] = tuple(k.name for k in KNOB_SPECS if k.seed)
# CLI flag for each knob (the seed's names with dashes, shortened as in design.md)
KNOB_FLAGS: dict[str, str] = {k.name: k.flag for k in KNOB_SPECS}
# derived size -> the knob it is world // of (attn_dp_size = world // attn_tp_size)
DERIVED: dict[str, str] = {k.derived: k.name for k in KNOB_SPECS if k.derived}
DERIVED_NAMES: tuple[str, ...] = tuple(DERIVED)

# Settings of a parallel_config that are not group sizes (so not divisors of the world): redundant experts are
# extra physical copies of routed experts (EPLB), placed so EP divides experts + redundant (engines.md,
# "redundant experts" row: vLLM --num-redundant-experts, SGLang --ep-num-redundant-experts, TRT-LLM num_slots).
# The planner places them with MoE TP (the group of `SETTING_GROUP`).
SETTINGS = ("redundant_experts",)
SETTING_FLAGS = {"redundant_experts": "--redundant-experts"}
# every parallel_config key a single-config command takes as a flag: the knobs, then the settings
CONFIG_FLAGS: dict[str, str] = {**KNOB_FLAGS, **SETTING_FLAGS}
SETTING_GROUP = {"redundant_experts": "moe"}
CONFIG_KEYS = KNOBS + SETTINGS


def neutral(key: str) -> int:
    """A parallel_config key's value that turns it off: 1 for a knob (a group of one), 0 for a setting (no
    redundant expert copies)."""
    return 0 if key in SETTINGS else 1
# the knobs whose product is the ranks one attention group spans (TP x KVP x SP x CP): ParallelConfig.attn_group_size
# multiplies them, the profiles' rules read the product as attn_group_size
ATTN_GROUP_KNOBS: tuple[str, ...] = ("attn_tp_size", "kvp_size", "attn_sp_size", "cp_size")


def nondefault_label(config: dict[str, int]) -> str:
    """The knobs above 1 and the settings above 0 (`attn_tp=2 redundant_experts=8`), or "all 1": a setting's
    default is 0, so a `v > 1` filter alone would hide redundant expert copies a launch then carries."""
    shown = [f"{k.replace('_size', '')}={v}" for k, v in config.items() if v > neutral(k)]
    return " ".join(shown) or "all 1"

# Split knobs a layer may declare for a module beyond the parallel_config's: shared experts follow the
# framework's choice of knob (MemoryOptions.shared_experts_knob: dense TP by default), encoders follow the
# attention group where the engine splits them like attention (MemoryOptions.encoder_split_model_types),
# else stay whole. Each maps to the planner group that owns the module.
SPLIT_ONLY: dict[str, str | None] = {"shared_experts_tp": "dense", "encoder_tp_size": "attn"}
SPLIT_KNOBS: tuple[str, ...] = (*(k.name for k in KNOB_SPECS if k.splits_weights), *SPLIT_ONLY)


def knob_module(name: str) -> str:
    """The module a knob (or a derived size) splits, in the parameter report's names; the name itself for
    anything else."""
    spec = KNOB.get(DERIVED.get(name, name))
    return spec.module if spec else name


def group_knobs(group: str) -> tuple[str, ...]:
    """The knobs a planner group's choice sets, in registry order."""
    return tuple(k.name for k in KNOB_SPECS if k.group == group)


# An engine profile's layout switches (FrameworkProfile fields of these names, framework YAML): written into
# Factors as 1.0 / 0.0 by FrameworkProfile.efficiency_for, read as booleans by estimate.factors
LAYOUT_SWITCHES = ("kvp_splits_attention_weights", "cp_replicates_kv_cache", "sp_decode_repeats_batch",
                   "cp_decode_repeats_batch", "cp_decode_shards_kv", "indexer_keys_unquantised",
                   "kvp_replicates_indexer_keys", "kv_handoff_over_nics", "indexer_decode_logits_unbounded",
                   "zero_expert_picks_computed", "pp_handoff_residual", "pp_drafter_own_embedding")
