"""What an engine does, as profile data (FrameworkProfile's records): how it pages a hybrid model's state and the
KV blocks, the draft methods its command names and the tree a lookup verifies, the models it serves without a
prefix cache, its decode indexer bound, the context it derives from a config, what it does with an over-long
request, and the flags that place the vision / audio towers. Each record carries the engine source it is read from.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Literal, Mapping

from pydantic import BaseModel, ConfigDict, Field, model_validator

from solver.errors import InputError
from solver.specs.expr import compile_expr, condition_over, is_condition
from solver.specs.rule_env import DEVICE_FLAGS, device_flags, model_facts

if TYPE_CHECKING:
    from solver.specs.hardware import Hardware
    from solver.specs.model import ModelSpec

# what a decode indexer bound's condition reads (IndexerDecodeBound.when): the rank's KV-parallel and context-parallel
# sizes, the indexer's top-k and the device's flags (rule_env.DEVICE_FLAGS)
DECODE_BOUND_NAMES = frozenset({"kvp_size", "cp_size", "index_topk", *DEVICE_FLAGS})



class HybridStateLayout(BaseModel):
    """How the engine allocates a hybrid model's constant per-request state (linear attention, SSM) beside its
    growing KV: in the KV pages of one shared pool (`block_alignment`), or in a pool of its own taking a fixed
    share of the cache memory (`state_pool_share`). Read by request_state (CacheLayout) for models with both."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    block_alignment: int | None = Field(None, ge=1, description="one pool of equal pages: the attention block "
                                        "is raised to the least multiple of this many tokens whose page (block "
                                        "tokens x one layer's KV per token) holds one layer's state, each state "
                                        "layer's page padded to it, layers grouped so every group has the "
                                        "smallest layer count of a type (vLLM's hybrid KV cache manager)")
    latent_block_alignment: int | None = Field(None, ge=1, description="with block_alignment: the alignment "
                                               "where the attention layers cache a latent (MLA), if larger "
                                               "(vLLM: 128, its MLA decode kernels' block multiple)")
    state_pages: int = Field(1, ge=1, description="state pages (block_alignment) or pool slots "
                             "(state_pool_share) one running request holds per state layer")
    pages_per_draft: int = Field(0, ge=0, description="more state pages / slots a request holds per draft "
                                 "token it verifies (a state kept per draft position)")
    pages_when_drafting: int = Field(0, ge=0, description="more state pages / slots a request holds once "
                                     "while it drafts at all (SGLang: one intermediate state per verified "
                                     "token, speculative_num_draft_tokens = depth + 1, so one beyond "
                                     "pages_per_draft's)")
    key_page_holds_ssm: bool = Field(False, description="with block_alignment: the block sized so its K half "
                                     "(block x one token's K in one layer) holds the SSM state exactly, every "
                                     "page (attention and state) the attention page (K + V) plus the conv state "
                                     "(vllm-ascend's contiguous layout: [kv padding | conv], [K | SSM], [V | "
                                     "padding]); false: the page holds the whole state (vLLM)")
    state_pool_share: float | None = Field(None, gt=0, lt=1, description="a separate state pool sized to this "
                                           "share of the cache memory, the KV pool the rest (SGLang's "
                                           "mamba_full_memory_ratio r: r / (1 + r))")
    spare_slots: int = Field(0, ge=0, description="with state_pool_share: slots the state pool keeps on each "
                             "rank beyond its running requests', each with a request's draft states while it drafts "
                             "(SGLang: one padding slot, the pool sized budget // slot - 1)")
    source: str = Field(description="where the engine does it")

    @model_validator(mode="after")
    def _one_form(self) -> "HybridStateLayout":
        if (self.block_alignment is None) == (self.state_pool_share is None):
            raise ValueError("set one of block_alignment (shared pages) and state_pool_share "
                               "(a state pool of its own)")
        if self.key_page_holds_ssm and self.block_alignment is None:
            raise ValueError("key_page_holds_ssm needs block_alignment (pages shared with the KV)")
        if self.spare_slots and self.state_pool_share is None:
            raise ValueError("spare_slots needs state_pool_share (a state pool of its own)")
        return self


class KVBlocks(BaseModel):
    """How the engine allocates the KV cache in blocks of tokens: a request holds ceil(tokens / block) blocks in
    each layer (up to block - 1 tokens past its own), and the pool keeps `reserved` blocks no request holds (vLLM's
    null block). Read by request_state (CacheLayout.kv_block) for every model whose KV is not in a hybrid's shared
    pages (hybrid_state.block_alignment sizes those)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    tokens: int = Field(ge=1, description="tokens of one KV block by default (vLLM --block-size's default, "
                        "SGLang --page-size's); 1: a request holds its exact tokens")
    reserved: int = Field(0, ge=0, description="blocks of the pool on each rank no request holds (vLLM: one, the "
                          "null block that pads block tables)")
    source: str = Field(description="where the engine does it")


# a list of multimodal wrappers (model types) that names every wrapper (FrameworkProfile.pp_tower_first_stage_model_types)
EVERY_WRAPPER = "*"


# what a draft step runs on the GPU, by kind (DraftMethods): the model's own next-n (MTP) layers, none (a lookup in
# the tokens so far), or a separate draft model the command names by a path
DRAFT_KINDS = ("next_n", "lookup", "draft_model")


class LookupBreadth(BaseModel):
    """Where a command turns a lookup draft on without its depth, the depth the engine derives: the tokens verified
    a sequence (LookupVerify) over the tree's breadth, this flag's value (its default where the command leaves it
    out), rounded down (SGLang NGRAM: --speculative-num-draft-tokens // --speculative-ngram-max-bfs-breadth)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    flag: str = Field(pattern=r"^--", description="the launch flag whose value is the tree's breadth")
    default: int = Field(gt=0, description="the engine's breadth where the command does not set the flag")
    source: str = Field(min_length=1, description="the engine source file:line")


class LookupVerify(BaseModel):
    """The tokens a lookup draft's verify step runs a sequence where the engine verifies a tree of them (its nodes,
    the last accepted token among them), not a chain of 1 + depth: the command's flag giving them, the engine's
    value where the command leaves it out."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    flag: str = Field(pattern=r"^--", description="the launch flag whose value is the tokens verified a sequence")
    default: int = Field(gt=0, description="the engine's value where the command does not set the flag")
    source: str = Field(min_length=1, description="the engine source file:line")
    depth_breadth: LookupBreadth | None = Field(None, description="where the command sets no depth, the depth the "
                                                "engine derives from the tree (None: it picks none: --mtp is asked)")


class TowerFlag(BaseModel):
    """A command argument that places the vision / audio towers otherwise than the engine's layout
    (encoder_split_model_types): replicated whole on every rank, or not loaded at all."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    flag: str = Field(pattern=r"^--", description="the engine's flag")
    value: str | None = Field(None, description="the value that sets it (None: the flag given as a switch)")
    zero_limits: bool = Field(False, description="the flag takes a JSON of per-modality limits (a count, or "
                              "{count: N}; a modality it leaves out is not 0): it sets `towers` for each tower "
                              "every modality of which (tower_modalities) is 0")
    tower_modalities: dict[str, dict[str, list[str]]] = Field(
        default_factory=dict, description="with zero_limits: the modalities each tower serves, by the wrapper's "
        "model_type ('*': any wrapper not listed), then the tower's name (vision, audio)")
    model_types: list[str] = Field(default_factory=list, description="the wrappers (model_type) whose code reads "
                                   "the flag; empty: every wrapper")
    towers: Literal["whole", "none"] = Field(description="whole: replicated on every rank; none: not loaded")
    unread: str | None = Field(None, description="what the engine does with the flag where the wrapper does not "
                               "read it (model_types), said beside the command (None: it ignores it)")
    off_flag: str | None = Field(None, pattern=r"^--", description="the switch's clearing spelling (--no-X), "
                                 "which leaves the towers as the engine's layout places them")
    source: str = Field(min_length=1, description="the engine source file:line")

    @model_validator(mode="after")
    def _modalities_with_limits(self) -> "TowerFlag":
        if self.zero_limits and "*" not in self.tower_modalities:
            raise ValueError("zero_limits needs tower_modalities with '*' (the modalities of a wrapper not listed)")
        if self.tower_modalities and not self.zero_limits:
            raise ValueError("tower_modalities is read only with zero_limits")
        return self

    def reads(self, wrapper: str) -> bool:
        """Whether the wrapper's code reads the flag (model_types)."""
        return not self.model_types or wrapper in self.model_types

    def modalities(self, wrapper: str, tower: str) -> list[str]:
        """The modalities a tower serves (tower_modalities: its wrapper's, else '*''s; a tower name neither lists
        serves a modality of its own name)."""
        by = self.tower_modalities.get(wrapper) or self.tower_modalities.get("*", {})
        return by.get(tower) or self.tower_modalities.get("*", {}).get(tower) or [tower]


class DraftMethods(BaseModel):
    """The speculative methods the engine's command may name, by what one draft step runs: `next_n` the model's
    own MTP layers (priced as --mtp N), `lookup` no draft forward (the drafts are found in the request's tokens),
    `draft_model` a separate draft model (its size is the path's, which shardplan cannot know). The verify step
    is the target over 1 + N tokens a sequence, a lookup's the tree `lookup_verify` gives where it is set."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    next_n: list[str] = Field(min_length=1, description="methods drafting with the model's next-n layers")
    lookup: list[str] = Field(default_factory=list, description="methods drafting by a lookup, no draft forward")
    draft_model: list[str] = Field(default_factory=list, description="methods drafting with a separate model")
    any_case: bool = Field(False, description="the engine reads the method in any case (upper-cases it)")
    lookup_verify: LookupVerify | None = Field(None, description="a lookup's verified tree (None: a chain of 1 + N "
                                               "tokens a sequence)")
    source: str = Field(min_length=1, description="the engine source file:line the methods are read from")

    def kind(self, method: str) -> str | None:
        """The kind of `method` as the command spells it (DRAFT_KINDS); None where the engine's list lacks it."""
        return next((kind for kind in DRAFT_KINDS if self.among(method, getattr(self, kind))), None)

    def among(self, method: str, methods: list[str]) -> bool:
        """Whether the engine reads `method`, as the command spells it, as one of `methods` (any_case: in any case)."""
        key = method.upper() if self.any_case else method
        return key in [m.upper() if self.any_case else m for m in methods]


# what a no-prefix-cache condition reads (NoPrefixCache.when): the model's yes/no facts (rule_env.model_facts)
PREFIX_CACHE_NAMES = frozenset({"has_mla", "has_dsa", "has_csa", "has_recurrent_mixer"})


def format_facts(model: "ModelSpec | None", hw: "Hardware | None") -> dict[str, Any]:
    """The flags a FormatRequire reads: the model's facts and the device's flags, those known."""
    out: dict[str, Any] = dict(model_facts(model)) if model is not None else {}
    if hw is not None:
        out.update(device_flags(hw.platform, hw.capability))
    return out


class NoPrefixCache(BaseModel):
    """Models the engine, as its command launches it, serves without a prefix cache (vLLM 0.23.0 turns prefix
    caching off by default for hybrid models): a prefix hit assumed for one is refused, never priced."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    when: str = Field(description="the condition, over the model's has_mla, has_dsa, has_csa and "
                      "has_recurrent_mixer")
    why: str = Field(min_length=1, description="what the engine does, said in the refusal")

    @model_validator(mode="after")
    def _a_condition_on_model_facts(self) -> "NoPrefixCache":
        try:
            expr = compile_expr(self.when)
        except InputError as exc:
            raise ValueError(f"when: {exc}") from None
        odd = sorted(expr.names - PREFIX_CACHE_NAMES)
        if odd:
            raise ValueError(f"when: reads {', '.join(odd)}; no_prefix_cache reads only "
                             f"{', '.join(sorted(PREFIX_CACHE_NAMES))}")
        if not is_condition(expr, PREFIX_CACHE_NAMES):
            raise ValueError(f"when: {expr.text!r} is not a yes/no condition")
        return self


class IndexerDecodeBound(BaseModel):
    """A bound the engine holds its decode indexer logits to where a condition holds (vLLM 0.34.0's
    VLLM_SPARSE_INDEXER_MAX_DECODE_LOGITS_MB, on SM100 without DCP or PCP and a top-k its kernel takes)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    max_bytes: float = Field(gt=0, description="the most bytes one decode logits piece takes (rows split to fit, "
                             "never below one row)")
    when: str = Field(description="the condition it applies under, over kvp_size, cp_size, index_topk and the "
                      "device's on_<platform> / on_<capability> flags")

    @model_validator(mode="after")
    def _a_condition_on_what_it_reads(self) -> "IndexerDecodeBound":
        condition_over(self.when, DECODE_BOUND_NAMES, "a decode bound")
        return self


class MaxContext(BaseModel):
    """The longest context the engine derives from a model's config, the one it serves without being told to
    allow a longer one (specs/context.derived_context): the context field, times a RoPE scaling's factor as its
    config loader multiplies it. Unset: the field alone."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    scaled: bool = Field(True, description="a RoPE scaling's factor multiplies the context; false: the field "
                         "alone, whatever the scaling")
    unscaled_types: list[str] = Field(default_factory=list, description="scaling types (rope_type, else the "
                                      "legacy type) whose factor leaves the field as it is (the field is already "
                                      "the scaled context)")
    from_original: list[str] = Field(default_factory=list, description="scaling types whose factor multiplies "
                                     "original_max_position_embeddings (the scaling's, else the config's), not "
                                     "the field")
    unscaled_carrying_original: bool = Field(False, description="a scaling that writes its own "
                                             "original_max_position_embeddings leaves the field as it is")
    per_layer_types: bool = Field(True, description="a scaling nested per layer type (Gemma-3's full_attention) "
                                  "counts; false: the loader reads a factor at the top of the block only")
    skip_model_types: list[str] = Field(default_factory=list, description="model types (a substring of "
                                        "model_type) whose field is taken as already scaled, whatever the scaling")
    source: str = Field(min_length=1, description="the engine source file:line the rule is read from, or "
                        "'unsourced: ...'")


class LongRequest(BaseModel):
    """What the engine does with a request whose prompt fits its maximum model length but whose prompt plus
    requested output does not (a prompt of the whole length or more leaves no room for an output token)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    output: Literal["refused", "cut"] = Field(description="refused: the request is rejected at the API; cut: it "
                                              "is served with its output cut to the length left after the prompt")
    cut_under: list[str] = Field(default_factory=list, description="command flags under which a refused request "
                                 "is cut instead")
    source: str = Field(min_length=1, description="the engine source file:line the behaviour is read from")


class RefusedKVScheme(BaseModel):
    """A checkpoint KV-cache scheme the engine refuses to load (it raises while building the attention layers,
    whatever --kv-cache-dtype the command gives): a checkpoint carrying it is refused, never priced."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    method: str = Field(min_length=1, description="the checkpoint's quant_method (quantization_config)")
    field: str = Field(min_length=1, description="the config field that writes the scheme, named in the refusal")
    formats: list[str] = Field(min_length=1, description="the scheme's formats refused (number format names, as "
                               "the checkpoint reader reads the scheme)")
    loads: str = Field(min_length=1, description="what the engine loads instead, said in the refusal")
    source: str = Field(min_length=1, description="the engine source file:line")


class PPSplit(BaseModel):
    """How the engine splits the decoder layers over pipeline stages where its command names no split: each stage
    layers // pp, the remainder one more on the stages `remainder` names (model_rules.stage_sizes)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    remainder: Literal["first", "last", "before_last"] = Field(description="first: the first stages; last: the "
                                                                "last ones; before_last: from the second-last "
                                                                "stage backward (the last holds the final norm)")
    one_stage: Literal["checked", "ignored"] = Field(
        "ignored", description="what the engine does with its partition variable without pipeline parallelism: "
        "checked, as at any stage count (one count, the model's layers: vLLM's make_layers splits at any PP size); "
        "ignored (SGLang drops it at pp_size 1)")
    negative: Literal["refused", "unchecked"] = Field(
        "refused", description="what the engine does with a negative count in its partition variable: refused "
        "(vLLM's 'Negative layer count'); unchecked (SGLang builds the stages from the running sums as given)")
    source: str = Field(min_length=1, description="the engine source file:line")


class OffloadEnv(BaseModel):
    """The environment variable an engine's KV offload flags start only with (vllm-ascend: the simple connector,
    whose NPU override it registers; the default connector's spec raises on an NPU)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    name: str = Field(min_length=1, description="the variable")
    reads_on: list[str] = Field(min_length=1, description="the values the engine reads as set (the first is "
                                "printed; YAML reads a bare `on` key as true)")
    backend_flag: str | None = Field(None, description="the flag that picks the offload backend (None: one "
                                     "backend)")
    backends: list[str] = Field(default_factory=list, description="the backends that need the variable; the "
                                "first is the engine's default, where the command leaves backend_flag out")
    why: str = Field(min_length=1, description="what the engine does without it, in its own words")
    source: str = Field(min_length=1, description="the engine source file:line")


class OffloadSize(BaseModel):
    """The sizing flag's values the engine refuses to start on under some backends: any but a finite number above
    0 (vLLM's native backend: 0 reads as unset, nan / inf fail int(); lmcache never reads the size)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    flag: str = Field(min_length=1, description="the sizing flag")
    backend_flag: str | None = Field(None, description="the flag that picks the offload backend (None: one "
                                     "backend)")
    backends: list[str] = Field(min_length=1, description="the backends that refuse such a size; the first is the "
                                "engine's default, where the command leaves backend_flag out")
    why: str = Field(min_length=1, description="what the engine does on such a size, in its own words")
    source: str = Field(min_length=1, description="the engine source file:line")

    def refusal(self, given: Mapping) -> str | None:
        """Why the command's size stops the engine (`given`: the command's flags as read_command keys them);
        None where it does not."""
        value = given.get(("flag", self.flag))
        backend = given.get(("flag", self.backend_flag)) if self.backend_flag else None
        if value is None or (backend or self.backends[0]) not in self.backends:
            return None
        try:
            size = float(value)
        except (TypeError, ValueError):
            return None  # not a number: the flag's kind refuses it
        if math.isfinite(size) and size > 0:
            return None
        return (f"{self.flag} {value}: not a finite size above 0; under the {backend or self.backends[0]} backend "
                f"{self.why}")


class KVOffload(BaseModel):
    """How the engine keeps KV blocks in host memory beside its device cache (seed 3.4's "KVCache Offload"). In
    the engines read so far the host tier is a second tier of the prefix cache: blocks computed or evicted from
    device memory, loaded back on a prefix hit; the running batch's KV stays in device memory, so the tier does
    not raise the batch that fits, and without prefix reuse it changes no figure of the estimate."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    flags: list[str] = Field(min_length=1, description="the engine's flags that turn it on and size it, as its "
                             "parser spells them (check --command reads them; the first is the one the 3.4 warning "
                             "names)")
    size: str = Field(min_length=1, description="what the sizing flag gives, in the engine's terms: the host "
                      "memory the tier takes (GiB over the engine's ranks, a ratio to the device pool, ...)")
    built_by: list[str] | None = Field(None, description="those of `flags` that build the tier, any one of them "
                                       "(SGLang's --enable-hierarchical-cache, vLLM's --kv-offloading-size): the "
                                       "others only size or place a tier one of these builds. None: any of `flags` "
                                       "builds it")
    holds: Literal["prefix"] = Field(description="prefix: blocks for prefix reuse (evicted or computed), loaded "
                                     "back on a hit; the running batch's KV is not moved to host")
    needs_env: OffloadEnv | None = Field(None, description="a variable the engine needs beside the flags, "
                                           "else it refuses to start (check --command refuses such a command)")
    positive_size: OffloadSize | None = Field(None, description="the sizes the engine refuses to start on, "
                                              "under the backends named (check --command refuses such a command)")
    source: str = Field(min_length=1, description="the engine source file:line")

    @model_validator(mode="after")
    def _on_among_flags(self) -> "KVOffload":
        stray = [f for f in self.built_by or () if f not in self.flags]
        if stray or self.built_by == []:
            raise ValueError(f"kv_offload.built_by: {', '.join(stray) or 'empty'}: give some of kv_offload.flags")
        return self


class RunningCapTier(BaseModel):
    """A larger default running-request cap the engine picks on devices with at least this much memory."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)

    min_memory_gib: float = Field(gt=0, le=2**20, description="applies to devices with at least this much HBM (GiB)")
    value: int = Field(gt=0, description="the cap on such a device")


class DefaultRunningCap(BaseModel):
    """The running-request cap the engine sets where a command leaves its batch-cap flag out (vLLM's
    --max-num-seqs: 1024 on a device of 70 GiB or more but an A100, else 256): `check --command` reads a command
    without the flag at it where the concurrency asked exceeds it, so the rest wait for a slot."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    flag: str = Field(min_length=1, description="the batch-cap flag as the launch prints it")
    value: int = Field(gt=0, description="the cap on a device no tier or name below picks")
    tiers: list[RunningCapTier] = Field(default_factory=list, description="larger caps by device memory")
    by_device_name: dict[str, int] = Field(default_factory=dict, description="a word of the device's name or "
                                           "description (lower case) -> the cap, where the engine decides by name")
    source: str = Field(min_length=1, description="the engine source file:line")

    @model_validator(mode="after")
    def _one_reading(self) -> "DefaultRunningCap":
        from solver.specs.profile_serving import by_device_problems
        from solver.specs.validation import FieldProblem

        by_device_problems("default_running_cap.tiers", [t.min_memory_gib for t in self.tiers],
                           "default_running_cap.by_device_name", self.by_device_name)
        for word, cap in self.by_device_name.items():
            if cap < 1:
                raise FieldProblem(f"default_running_cap.by_device_name.{word}", f"{cap}: a cap of 1 or more")
        return self

    def on(self, device_name: str, memory_bytes: float | None) -> int:
        """The cap the engine sets on a device named `device_name` (name and description) with `memory_bytes`."""
        from solver.specs.profile_serving import by_device

        return by_device(self.value, [(t.min_memory_gib, t.value) for t in self.tiers], self.by_device_name,
                         device_name, memory_bytes)


class SpeculativeRunningCap(BaseModel):
    """The running-request cap the engine sets itself where a command names a speculative method and leaves its
    batch-cap flag out (SGLang resets --max-running-requests to 48): `check --command` reads it as if the command
    gave `flag value`, so the rest of the concurrency waits for a slot."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    flag: str = Field(min_length=1, description="the batch-cap flag as the launch prints it")
    value: int = Field(gt=0, description="the cap the engine sets where the command leaves the flag out")
    except_methods: list[str] = Field(default_factory=list, description="methods (as draft_methods spells them) "
                                      "whose handler leaves the cap alone")
    source: str = Field(min_length=1, description="the engine source file:line")


class MoeChunk(BaseModel):
    """A setting that bounds how many tokens one MoE forward runs at once (seed 3.4's "reducing moe_chunk"), named
    where the engine has one. `priced`: false where the facts give its values but not what it bounds, so the
    activation estimate does not read it."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    knob: str = Field(min_length=1, description="its name where the engine reads it (a model-YAML key, a flag)")
    priced: Literal[False] = Field(description="false: named, not priced (no engine source says what it bounds)")
    source: str = Field(min_length=1, description="where the knob is recorded")
