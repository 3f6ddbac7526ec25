"""The launch part of an engine profile: how the engine's command line and config files spell a
parallel_config, and which features it has that the planner does not model yet. Data only; solver.launch
emits from it and decides nothing.

Every argv token, document key and environment variable is one `LaunchArg`: a `when` condition and either a
numeric `value` expression, a `text` template, or a bare `switch`. Expressions use the rule language
(solver.specs.expr) over the rule names plus LAUNCH_NAMES; templates fill {name} from LAUNCH_TEXT_NAMES and
the numeric names.
"""
from __future__ import annotations

import re
from typing import Any, Literal, Mapping

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator

from solver.errors import InputError
from solver.specs.expr import NOT_A_CONDITION, Expr, compile_expr, is_condition
from solver.specs.profile_rules import Rule

DISAGG_ROLES = ("prefill", "decode")
# Disaggregated serving: a pool worker's command may name both pools' sizes (a KV connector that maps the prefill
# ranks onto the decode ranks is told both layouts): `<role>_<figure>`, e.g. decode_tp_group_size, the figure of
# that pool's parallel_config (specs.framework.FrameworkProfile.pool_figures computes them)
# the knobs a KV connector's pair checks compare (attention TP, context-parallel and decode-CP sizes) beside the groups
POOL_FIGURES = ("world", "tp_group_size", "attn_group_size", "pp_size", "attn_tp_size", "cp_size", "kvp_size")
POOL_NAMES = frozenset(f"{role}_{figure}" for role in DISAGG_ROLES for figure in POOL_FIGURES)


def pool_role(name: str) -> str:
    """The pool whose figure a POOL_NAMES name is (decode_tp_group_size: decode)."""
    return name.split("_", 1)[0]


# numeric names an emitter adds to the rule names (solver.launch.emit computes them)
LAUNCH_NAMES = POOL_NAMES | frozenset({
    "nnodes",            # nodes the world spans: ceil(world / ranks_per_node)
    "node_rank",         # this node's index (0 = head)
    "gpus_per_node",     # ranks on one node: min(world, ranks_per_node)
    "max_model_len",     # longest sequence the estimate assumed (prompt + output)
    "token_budget",      # tokens per forward step the estimate assumed (the profile's scheduler default; a
                         # prefill-only worker's: its step's prompts, launch.emit.step_budget)
    "prefill_tokens",    # a prefill-only worker's tokens in one step of one attention replica (0: not one)
    "weight_dtype_set",  # the user chose a weight format (else the checkpoint's is served)
    "kv_dtype_set",      # the user chose a KV-cache format (else the engine's default, the model dtype)
    "memory_fraction",   # the memory model's limit over the capacity, min(0.95, 1 - reserve / capacity), down at 1e-4
    "static_fraction",   # the share weights + caches may hold: that limit less the planned activations and comm
                         # buffers, over the capacity, down at 1e-4 (launch/memory_share.static_fraction)
    "free_fraction",     # the share of the memory free after weights, activations, buffers and reserve that the
                         # caches may take, down at 1e-4 (launch/memory_share.free_fraction)
    "kv_pool_bytes",     # the KV pool per rank in bytes: the limit less the weights, planned activations and comm
                         # buffers, never below the plan's caches (launch/memory_share.kv_pool_bytes)
    "remote_code",       # 1 when the model's config names code of its own (auto_map): the engine's trust switch
    "replica_batch",     # the planned requests of one attention replica: max(1, ceil(batch x attn_group_size / world))
    "graph_cap",         # the engine's default largest decode graph at this config (serving.graph_max_batch; 0: none)
    "past_context",      # 1 when max_model_len exceeds the model's config context (ModelSpec.max_position_embeddings)
    "ep_kernels",        # 1 where the profile's EP-kernel condition holds (serving.ep_kernels.when): the estimate
                         # prices its exchange there, so the args selecting it read this
    "pp_uneven",         # 1 where pp_size > 1 does not divide the layers: the engines' own splits of the remainder
                         # differ (vLLM the stages before the last, SGLang the last), so the launch names the priced one
})
# the launch names read off the plan's memory of one rank (the estimate's MemoryReport at the planned batch)
PLAN_MEMORY_NAMES = frozenset({"static_fraction", "free_fraction", "kv_pool_bytes"})
# replica_batch over the rule names (the profile's attn_group_size: its own product of knobs, group_products).
# `world` is one pipeline stage's ranks (rule_env), so this is batch / ParallelConfig.attn_replicas, the requests the
# estimate gives one replica (request_state.held_per_replica): with PP a replica's requests are its whole
# pipeline's, which the engines' caps count (the profiles' --max-num-seqs / --max-running-requests comments)
REPLICA_BATCH = "max(1, (batch * attn_group_size + world - 1) // world)"
# the names a `step_budget` value may read: the estimate knows them at any workload (workload.token_budget)
STEP_BUDGET_NAMES = frozenset({"token_budget", "replica_batch", "mtp"})
# the launch names that are yes/no (a `when` may be one of them alone)
# (prefill_role, the serving role, is a rule name: profile_rules.DEPLOYMENT_NAMES)
LAUNCH_FLAGS = frozenset({"weight_dtype_set", "kv_dtype_set", "remote_code", "past_context",
                          "ep_kernels", "pp_uneven"})
# text names: placeholders the user replaces, documented in README ("Launch commands")
# role: "prefill" or "decode" (disaggregated serving; `map` spells it); node_addr: the address of the node this
# command runs on (the head's for node 0)
# pp_layer_partition: the layers of each pipeline stage as the estimate prices them (model_rules.stage_sizes),
# comma-joined in stage order
LAUNCH_TEXT_NAMES = frozenset({"model_path", "head_addr", "node_addr", "hosts", "weight_dtype", "kv_dtype",
                               "moe_weight_dtype", "role", "pp_layer_partition"})
_TEMPLATE = re.compile(r"\{([a-z_]+)\}")


def launch_expr(attr: str, src: str, condition: bool) -> Expr:
    """A launch line's expression (`attr` names it in a refusal): it compiles, reads only the rules' names and the
    launch's (LAUNCH_NAMES), and a `condition` is true / false (a when, a pair check's require)."""
    from solver.specs.profile_rules import RULE_FLAGS, RULE_NAMES

    try:
        expr = compile_expr(src)
    except InputError as exc:
        raise ValueError(f"{attr}: {exc}") from None
    unknown = sorted(expr.names - RULE_NAMES - LAUNCH_NAMES)
    if unknown:
        raise ValueError(f"{attr} uses unknown name(s) {', '.join(unknown)}")
    if condition and not is_condition(expr, RULE_FLAGS | LAUNCH_FLAGS):
        raise ValueError(f"{attr}: {expr.text!r} {NOT_A_CONDITION}")
    return expr


def as_read(v: Any) -> str:
    """A launch argument's value as a command's slot holds it (bools true / false, whole floats as integers): how
    check --command reads a command and how the ranking's notes spell a launch."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


# strict, as the rest of a profile is (specs/framework.py): switch: 1 or per_node: 0 is refused, not read as a bool
class LaunchArg(BaseModel):
    """One argv token pair (`flag value`), bare flag (`switch`), positional `text`, document key or env var."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    flag: str | None = None
    value: str | None = Field(None, description="numeric expression; rendered as an integer (bool: true/false)")
    text: str | None = Field(None, description="template, {name} from the launch names")
    map: dict[str, str] | None = Field(None, description="translates the rendered text (dtype spellings); "
                                       "a text missing from it cannot be expressed")
    switch: bool = False
    when: str = "true"
    doc: str | None = Field(None, description="document (LaunchSpec.documents) this key goes into")
    key: str | None = Field(None, description="dotted key inside `doc`")
    env: str | None = Field(None, description="environment variable name instead of argv")
    env_on: list[str] | None = Field(None, description="for an env switch: the values (lower-cased) the engine "
                                           "reads as on, as its source parses the variable; another value is off")
    env_off: list[str] | None = Field(None, description="for an env switch the engine parses strictly: the values "
                                      "(lower-cased) it reads as off; a value in neither list it does not parse "
                                      "(it keeps its default, off)")
    env_strip: bool = Field(False, description="for an env switch: the engine strips surrounding whitespace from "
                            "the value before it parses it (vLLM's envs.py .strip().lower()); off, the value is "
                            "parsed as written (SGLang's EnvBool lower-cases only)")
    knob: str | None = Field(None, description="what a refusal names (the knob or setting this spells)")
    source: str | None = Field(None, description="where the spelling is read when the facts' engines.md does not "
                               "spell it (an engine wheel's file and version)")
    step_budget: bool = Field(False, description="the value is the engine's tokens per forward step: the estimate "
                              "prices the budget it renders (FrameworkProfile.step_budget_rule)")
    unsourced: str | None = Field(None, description="why the spelling has no source read here (neither engines.md "
                                  "nor an engine wheel): the launch prints it as a note beside the command")
    default: int | str | None = Field(None, description="the engine's value when the flag or document key is absent "
                                      "(its source's default): a number, or an expression of the configuration "
                                      "(an engine that derives the key from others: TensorRT-LLM's MoE TP is TP "
                                      "over the EP size); a value equal to it is left out of the command")

    def env_parsed(self, value: str) -> str:
        """An env switch's value as the engine compares it with env_on / env_off: lower-cased, stripped first
        where it strips (env_strip)."""
        return (value.strip() if self.env_strip else value).lower()

    _when: Expr = PrivateAttr()
    _value: Expr | None = PrivateAttr(None)
    _default: Expr | None = PrivateAttr(None)

    @field_validator("value", mode="before")
    @classmethod
    def _number_is_expression(cls, v: object) -> object:
        return str(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else v

    @model_validator(mode="after")
    def _compile(self) -> "LaunchArg":
        kinds = sum(x is not None and x is not False for x in (self.value, self.text, self.switch or None))
        if kinds != 1:
            raise ValueError("give exactly one of value, text, switch")
        if (self.doc is None) != (self.key is None):
            raise ValueError("doc and key go together")
        if self.switch and self.flag is None:
            raise ValueError("switch needs a flag")
        if self.doc is None and self.env is None and self.flag is None and self.text is None:
            raise ValueError("a value needs a flag, a doc key or an env name")
        from solver.specs.profile_rules import RULE_NAMES

        for attr in ("when", "value"):
            src = getattr(self, attr)
            if src is not None:
                setattr(self, f"_{attr}", launch_expr(attr, src, condition=attr == "when"))
        if self.text is not None:
            unknown = sorted(set(_TEMPLATE.findall(self.text)) - LAUNCH_TEXT_NAMES - RULE_NAMES - LAUNCH_NAMES)
            if unknown:
                raise ValueError(f"text uses unknown placeholder(s) {', '.join(unknown)}")
        if self.env_on is not None and self.env is None:
            raise ValueError("env_on needs an env name")
        if self.env_strip and self.env_on is None:
            raise ValueError("env_strip needs env_on (the values the engine parses as on)")
        if self.env_off is not None and self.env_on is None:
            raise ValueError("env_off needs env_on (the values the engine parses as on)")
        if self.default is not None and (self.value is None or self.env or (self.flag is None and self.doc is None)):
            raise ValueError("default needs a flag or document key with a value (one the engine reads a default for)")
        if isinstance(self.default, str):
            self._default = launch_expr("default", self.default, condition=False)
        if self.step_budget:
            # the estimate evaluates it at every workload, with no knob or launch figure beside these names
            if self.value is None or self.when != "true":
                raise ValueError("step_budget needs a value and no when")
            other = sorted(self._value.names - STEP_BUDGET_NAMES) if self._value is not None else []
            if other:
                raise ValueError(f"step_budget value reads {', '.join(other)}; it may read "
                                 f"{', '.join(sorted(STEP_BUDGET_NAMES))} only")
        return self

    def bind(self, products: tuple[tuple[str, tuple[str, ...]], ...]) -> None:
        """Read the profile's group names as its products of knobs (FrameworkProfile.group_products)."""
        self._when = compile_expr(self.when, products)
        self._value = compile_expr(self.value, products) if self.value is not None else None
        self._default = compile_expr(self.default, products) if isinstance(self.default, str) else None

    @property
    def when_expr(self) -> Expr:
        return self._when

    def default_value(self, names: Mapping[str, Any]) -> Any:
        """The engine's value where the command leaves this argument out, in `names` (the launch's or a
        configuration's rule names); None where no default is recorded."""
        return self._default.evaluate(names) if self._default is not None else self.default

    @property
    def value_expr(self) -> Expr | None:
        return self._value

    def spelling(self, text: str) -> str | None:
        """`map`'s spelling of rendered `text`: its own entry, else that of the number format it is another name of
        (fp8_e4m3 is fp8: specs/dtypes.py's aliases), so a map listing the format once takes every name of it;
        None where neither is in the map (the engine cannot express it)."""
        if self.map is None or text in self.map:
            return text if self.map is None else self.map[text]
        from solver.specs.dtypes import number_format

        try:
            name = number_format(text, "").name
        except InputError:  # not a number format: a text the map does not list
            return None
        return self.map.get(name)


class LaunchDocument(BaseModel):
    """A structured block the engine reads: inline JSON after a flag (vLLM --additional-config,
    --speculative-config), or a file (TensorRT-LLM --extra_llm_api_options, cann-recipes' model YAML)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    format: Literal["json", "yaml"]
    flag: str | None = Field(None, description="argv flag that takes the document (inline) or its file name")
    file: str | None = Field(None, description="file name; the document is written there (launch.files)")
    when: str = "true"
    source: str | None = Field(None, description="where the flag is read when the facts' engines.md does not spell "
                               "it (an engine wheel's file and version), as LaunchArg.source")

    _when: Expr = PrivateAttr()

    @model_validator(mode="after")
    def _check(self) -> "LaunchDocument":
        if self.flag is None and self.file is None:
            raise ValueError("a document needs a flag, a file, or both")
        self._when = launch_expr("when", self.when, condition=True)
        return self

    def bind(self, products: tuple[tuple[str, tuple[str, ...]], ...]) -> None:
        """Read the profile's group names as its products of knobs (FrameworkProfile.group_products)."""
        self._when = compile_expr(self.when, products)

    @property
    def when_expr(self) -> Expr:
        return self._when


class PairCheck(BaseModel):
    """What the two pools' layouts must hold together for the KV transfer to run (a connector that refuses a
    prefill TP below the decode TP): `require` over the launch names, both pools' figures among them
    (POOL_NAMES); the emitter refuses a pair that fails, with `message`."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    id: str = Field(pattern=r"^[A-Z]\.[a-z0-9_]+$")
    require: str
    message: str = Field(min_length=1)
    source: str = Field(min_length=1)

    _require: Expr = PrivateAttr()

    @model_validator(mode="after")
    def _compile(self) -> "PairCheck":
        self._require = launch_expr("require", self.require, condition=True)
        return self

    def bind(self, products: tuple[tuple[str, tuple[str, ...]], ...]) -> None:
        self._require = compile_expr(self.require, products)

    @property
    def require_expr(self) -> Expr:
        return self._require


class DisaggLaunch(BaseModel):
    """What a worker of a disaggregated pool adds to the engine's command: its role (prefill or decode) and the
    KV-cache transfer it uses, as more `args` / `documents` (appended to the launch's own, the `role` text name
    and `prefill_role` set, both pools' sizes as POOL_NAMES). `missing` says, in the output, what the facts do
    not give (a flag that is not known is not emitted; the user is told to add it). `rules`: what one pool's
    parallel_config must hold beyond the engine's rules under this transfer (the planner plans that pool within
    them, the emitter refuses a config outside them); `pairs`: what the two pools must hold together."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    args: list[LaunchArg] = Field(default_factory=list)
    documents: dict[str, LaunchDocument] = Field(default_factory=dict)
    source: str = Field(min_length=1)
    missing: str = ""
    notes: str = ""
    rules: dict[Literal["prefill", "decode"], list[Rule]] = Field(default_factory=dict)
    pairs: list[PairCheck] = Field(default_factory=list)

    @model_validator(mode="after")
    def _complete_or_said(self) -> "DisaggLaunch":
        if not self.args and not self.missing:
            raise ValueError("give the role/transfer args or say in `missing` why there are none")
        for a in self.args:
            if a.doc is not None and a.doc not in self.documents:
                raise ValueError(f"argument {a.flag or a.key}: unknown document {a.doc}")
        ids = [r.id for rules in self.rules.values() for r in rules] + [p.id for p in self.pairs]
        twice = sorted({i for i in ids if ids.count(i) > 1})
        if twice:
            raise ValueError(f"rule id(s) {', '.join(twice)} used twice")
        return self

    def failed_pair(self, names: Mapping[str, Any]) -> PairCheck | None:
        """The first pair check that fails on `names` (both pools' figures, POOL_NAMES, and whatever else is
        known), of those `names` can answer: the planner knows only the pools' figures, the emitter its whole env."""
        return next((c for c in self.pairs if c.require_expr.names <= names.keys()
                     and not c.require_expr.evaluate(names)), None)

    def pool_reads(self) -> set[str]:
        """The pool figures (POOL_NAMES) the args read: a command needs both pools' configs exactly when this is
        not empty. The pair checks are not among them: they run where both pools are known (the planner always;
        the emitter when given both, failed_pair), and a command that does not spell the other pool runs alone."""
        names = {n for a in self.args for n in (*a.when_expr.names,
                                                 *(a.value_expr.names if a.value_expr is not None else ()))}
        return names & POOL_NAMES


class OtherProgram(BaseModel):
    """Another program that runs the same server with the same flags (vLLM's `python3 -m
    vllm.entrypoints.openai.api_server` beside `vllm serve`): a pasted command running it is read as the launch's."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    argv: list[str] = Field(min_length=1, description="its tokens before the engine's arguments")
    positional_model: bool = Field(description="it serves a positional model token (false: by the launch's "
                                   "model_flag only, a positional one parsed and ignored)")
    source: str = Field(min_length=1)


class Respelling(BaseModel):
    """Another spelling the engine's parser resolves to one of the launch's flags: `flag`'s value, where switch
    `with_switch` is on, is `reads_as`'s (SGLang's deprecated `--dp-size N --enable-dp-attention`, its
    `--attn-dp-size N`); the switch is spent either way, and a command giving `reads_as` keeps `flag` as it is."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    flag: str
    with_switch: str
    reads_as: str
    source: str = Field(min_length=1)


ONLINE_SPLIT_KEY = "enable_online_split_weight"  # the seed's deployment key (specs.deployment.Deployment)



def _format_flags() -> set[str]:
    """What a FormatRequire reads: the model's yes/no facts and the device's flags."""
    from solver.specs.profile_rules import MODEL_NAMES, RULE_FLAGS
    from solver.specs.rule_env import DEVICE_FLAGS

    return (set(MODEL_NAMES) & RULE_FLAGS) | set(DEVICE_FLAGS)


class FormatRequire(BaseModel):
    """Where an engine runs a format (LaunchSpec.kv_dtype_requires, weight_dtype_requires)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    require: str = Field(min_length=1)  # a condition over the model's flags and the device's (_format_flags)
    runs_on: str = Field(min_length=1)  # what runs it, in words
    source: str = Field(min_length=1)

    @field_validator("require")
    @classmethod
    def _flags_only(cls, v: str) -> str:
        unknown = compile_expr(v).names - _format_flags()
        if unknown:
            raise ValueError(f"reads {', '.join(sorted(unknown))}: only the model's and the device's flags "
                             f"({', '.join(sorted(_format_flags()))})")
        return v

    def fails(self, facts: Mapping[str, Any] | None) -> bool:
        """The condition is false on `facts`; a name it reads that `facts` lacks (None: none given) is not
        checked."""
        expr = compile_expr(self.require)
        if facts is None or not expr.names <= set(facts):
            return False
        return not expr.evaluate({k: bool(facts[k]) for k in expr.names})


class SourcedFormats(BaseModel):
    """The weight formats a profile's sources show the engine loading (LaunchSpec.weight_formats)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    formats: list[str] = Field(default_factory=list)  # format names as --weight-dtype spells them
    source: str = Field(min_length=1)  # what the sources say (or that they name none)


class LaunchSpec(BaseModel):
    """The engine's command: argv entries in order, documents, and whether each node runs its own command
    (`per_node`) or one launcher on the head starts every rank (MPI); `disagg`: what a pool worker adds."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    per_node: bool = True
    args: list[LaunchArg] = Field(min_length=1)
    documents: dict[str, LaunchDocument] = Field(default_factory=dict)
    source: str = Field(min_length=1)
    notes: str = ""
    disagg: DisaggLaunch | None = None
    # Where a KV-cache format the command cannot spell is set instead (a recipe file's key the facts do not
    # name; a format with no engine at all): given, such a format is a note saying so; empty, it is refused (the
    # engine's runtime choice, which the command could not ask for)
    kv_dtype_elsewhere: str = ""
    # The weight formats the sources show the engine loading (None: not listed). A quantized format the launch
    # serves outside the list, the user's or the checkpoint's own, is said to be unverified in a note
    weight_formats: SourcedFormats | None = None
    # KV-cache formats the command spells that the engine runs on some attention only (vLLM's int8 cache: its Triton
    # backend alone, no MLA one): format -> the model and device flags that must hold, what runs it, and the
    # source; a model or device outside it is refused in one line (kv_dtype_refusal)
    kv_dtype_requires: dict[str, "FormatRequire"] = Field(default_factory=dict)
    # the same for weight formats (vLLM's W4A8 linear kernels: CUDA only): weight_dtype_refusal
    weight_dtype_requires: dict[str, "FormatRequire"] = Field(default_factory=dict)
    # How the engine serves a length past the model's config context with positions its RoPE scaling covers (the
    # config override that raises the factor), with its source: said in the launch's note beside the args that
    # read `past_context` (the engine's switch that allows a longer maximum model length)
    long_context: str = ""
    # What a pasted command (check --command) may carry that the launch does not print the same way. site_flags:
    # the flags whose value is the site's (an address, a port, a node's rank, a worker node's switch), whether the
    # launch prints them or not: read as site settings, compared with nothing. model_flag: the flag the engine's
    # parser also takes the model by, beside the positional token the launch writes. programs: other programs that
    # run the same server with the same flags. respellings: older spellings the parser resolves to the launch's.
    site_flags: list[str] = Field(default_factory=list)
    model_flag: str | None = None
    programs: list[OtherProgram] = Field(default_factory=list)
    respellings: list[Respelling] = Field(default_factory=list)
    # the parser reads `_` in a long flag's name as `-` (vLLM's FlexibleArgumentParser: --max_num_seqs)
    underscore_flags: bool = False

    def splits_weights_online(self) -> bool:
        """The command always sets the seed's `enable_online_split_weight` true: the runtime splits the checkpoint
        for whatever parallel_config it is given, so no weight conversion is bound to one (seed 003, Step 4)."""
        return any(a.key == ONLINE_SPLIT_KEY and a.value == "true" and a.when == "true" for a in self.args)

    def sets_token_budget(self) -> bool:
        """An argument gives the engine its token budget (reads `token_budget`): a prefill-only worker's command
        then holds the step its estimate prices (launch.emit.step_budget)."""
        from solver.specs.expr import compile_expr

        return any(a.value is not None and "token_budget" in compile_expr(str(a.value)).names for a in self.args)

    def step_budget_rule(self) -> str | None:
        """The expression of the engine's tokens per forward step the command sets (the `step_budget` argument;
        None: the command leaves the profile's default)."""
        rules = [a.value for a in self.args if a.step_budget]
        return rules[0] if rules else None

    def kv_dtype_refusal(self, kv_dtype: str | None, engine: str,
                         facts: Mapping[str, Any] | None = None) -> str | None:
        """Why the command cannot ask for KV-cache format `kv_dtype` (None: it can, none was chosen, or
        `kv_dtype_elsewhere` says where it is set instead): no argument spells a KV format, every one that
        does maps other formats only, or the model's facts (`facts`: rule_env.model_facts, or a launch's names;
        None: not checked) lie outside the attention the engine runs the format on (kv_dtype_requires)."""
        if kv_dtype is None or self.kv_dtype_elsewhere:
            return None
        need = self.kv_dtype_requires.get(kv_dtype)
        if need is not None and need.fails(facts):
            return f"KV-cache dtype {kv_dtype}: {engine} runs it on {need.runs_on} only ({need.require} does not hold; " \
                   f"{need.source})"
        uses = [a for a in (*self.args, *(self.disagg.args if self.disagg else ()))
                if "kv_dtype" in _TEMPLATE.findall(a.text or "")]
        if not uses:
            return (f"kv_dtype {kv_dtype}: {engine}'s profile has no flag for it (leave the KV dtype out to serve "
                    "the engine's default)")
        if any(a.spelling(kv_dtype) is not None for a in uses):
            return None
        return (f"{uses[0].knob or uses[0].flag} {kv_dtype}: {engine} has no spelling for it "
                f"(it takes {', '.join(sorted(uses[0].map or ()))})")

    def weight_dtype_refusal(self, weight_dtype: str | None, engine: str,
                             facts: Mapping[str, Any] | None = None) -> str | None:
        """Why the engine runs no kernel for weight format `weight_dtype` on this model and device
        (weight_dtype_requires; `facts`: model and device flags, None or a flag missing: not checked)."""
        need = self.weight_dtype_requires.get((weight_dtype or "").lower())
        if need is None or not need.fails(facts):
            return None
        return f"weight dtype {weight_dtype}: {engine} runs it on {need.runs_on} only ({need.require} does not " \
               f"hold; {need.source})"

    def bind(self, products: tuple[tuple[str, tuple[str, ...]], ...]) -> None:
        """Read the profile's group names (tp_group_size, ...) in every expression as its products of knobs."""
        extra = self.disagg if self.disagg is not None else None
        for part in (self, *([extra] if extra else [])):
            for a in part.args:
                a.bind(products)
            for d in part.documents.values():
                d.bind(products)
        if extra is not None:
            for rule in (*(r for rules in extra.rules.values() for r in rules), *extra.pairs):
                rule.bind(products)

    @model_validator(mode="after")
    def _docs_known(self) -> "LaunchSpec":
        for a in self.args:
            if a.doc is not None and a.doc not in self.documents:
                raise ValueError(f"argument {a.flag or a.key}: unknown document {a.doc}")
        if sum(a.step_budget for a in self.args) > 1:
            raise ValueError("at most one argument sets the step_budget")
        bad = [f for f in (*self.site_flags, *([self.model_flag] if self.model_flag else ())) if not f.startswith("-")]
        if bad:
            raise ValueError(f"site_flags / model_flag: {', '.join(bad)}: not a flag (a flag starts with -)")
        model_arg = next((a for a in self.args if a.text and "{model_path}" in a.text), None)
        if self.model_flag is not None and (model_arg is None or model_arg.flag is not None):
            raise ValueError("model_flag: the launch writes no positional {model_path} for it to stand beside")
        if any(not p.positional_model for p in self.programs) and self.model_flag is None:
            raise ValueError("programs: one reads the model by flag only (positional_model false): give model_flag")
        if self.disagg is not None:
            clash = sorted(set(self.disagg.documents) & set(self.documents))
            if clash:
                raise ValueError(f"disagg document(s) {', '.join(clash)} already defined by the launch")
        return self


# The engine features a profile may record: redundant_experts is read by name (the planner adds copies only where
# it is supported), a feature with a `knob` by that knob; the others document what the planner does not model.
# A name outside the list would be read by nothing (a typo of redundant_experts would silently turn copies off).
FEATURE_NAMES = ("pipeline_parallel", "redundant_experts", "prefill_context_parallel", "context_parallel",
                 "decode_context_parallel", "attention_sequence_parallel", "attention_ffn_disaggregation")
FeatureName = Literal[FEATURE_NAMES]  # type: ignore[valid-type]


class Feature(BaseModel):
    """An engine feature, with its flag and source: recorded so the planner can model it (pipeline parallel,
    redundant experts) without re-reading the docs."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    supported: bool
    flag: str = ""
    note: str = ""
    # the parallel knob the feature would set (cp_size for prefill context parallel): a file setting it is told
    # the engine has it and the planner does not model it, not that the engine lacks it
    knob: str | None = None
    # the largest count the engine takes (redundant experts: vLLM's MAX_EXPERT_REDUNDANCY); None: no limit in its source
    max: int | None = Field(None, ge=0)
    # model types (ModelSpec.model_type) whose model the engine refuses the feature for: their model file lacks
    # it (SGLang's pipeline parallel: a forward without pp_proxy_tensors)
    refused_model_types: list[str] = Field(default_factory=list)
    source: str = Field(min_length=1)
