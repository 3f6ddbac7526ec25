"""A deployment file for `shardplan check`: the seed's parallel_config keys (top level or under
`parallel_config:`), plus what is needed to estimate it.

    model: deepseek-v3.2          # catalog name, HF id or config path (or --model)
    hardware: atlas_a3            # (or --hardware)
    framework: cann-recipes       # default generic
    world_size: 64                # (or --cards)
    parallel_config: {attn_tp_size: 1, dense_tp_size: 4, moe_tp_size: 1, embed_tp_size: 16, ...}
    workload: {phase: decode, batch: 64, seq_len: 65536}   # or {isl: 4096, osl: 256, concurrency: 64}
    # serving and prefill may add prefix_hit: 0.5 (the share of each prompt in the prefix cache, as --prefix-hit)
    # a decode may name its prompt and output lengths instead of seq_len: {phase: decode, batch: 64, isl: 4096, osl: 1024}
    quant: {weights: int8, moe_weights: int8, kv_cache: int8}
    mtp: 0
    # workload and dtype keys may also sit at the top level (phase, batch, seq_len | isl, osl, concurrency;
    # weight_dtype, moe_weight_dtype, kv_dtype), the spelling `shardplan calibrate --config` documents
    enable_online_split_weight: false
    previous_parallel_config: {...}   # the config the offline-split weights were converted for
"""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, PrivateAttr, StrictInt, model_validator

from solver.catalog import DEFAULT_FRAMEWORK
from solver.errors import InputError
from solver.specs.dtypes import given_dtype
from solver.specs.limits import MAX_CARDS, MAX_CONCURRENCY, MAX_MTP, MAX_TOKENS
from solver.specs.parallel import CONFIG_KEYS, replica_group
from solver.specs.scenario import AcceptRate, PrefixHit, accept_unread, hit_unread
# the derived sizes a seed YAML may state; each must equal world_size // its tp size
from solver.specs.knobs import DERIVED, neutral
from solver.specs.validation import FieldProblem, load_yaml, validate_model


# integers are strict: `attn_tp_size: true` or `batch: 8.5` is an error, not 1 or 8
_STRICT = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)

# An engine's own parallel sizes (facts/engines.md, Flags table: --tp-size / tensor_parallel_size, --dp-size,
# --ep-size / moe_expert_parallel_size, --pp-size, context_parallel_size, --dcp-size) written into a
# parallel_config: what each stands for in the seed's keys, so the error says what to write instead
_ENGINE_SIZES: dict[str, str] = {
    **dict.fromkeys(("tp_size", "tp", "tensor_parallel_size"),
                    "an engine's TP size is not one knob here: set attn_tp_size, and the module sizes "
                    "(dense_tp_size, moe_tp_size, embed_tp_size, lmhead_tp_size) that follow it"),
    **dict.fromkeys(("dp_size", "dp", "data_parallel_size"),
                    "DP is derived (attn_dp_size = world_size // attn_tp_size): set attn_tp_size"),
    **dict.fromkeys(("ep_size", "ep", "expert_parallel_size", "moe_expert_parallel_size", "moe_ep"),
                    "EP is derived (moe_ep_size = world_size // moe_tp_size): set moe_tp_size (1 for EP over "
                    "every rank)"),
    **dict.fromkeys(("pipeline_parallel_size", "pp"), "write it as pp_size"),
    **dict.fromkeys(("context_parallel_size", "prefill_context_parallel_size", "pcp_size", "attn_cp_size"),
                    "write it as cp_size (prefill context parallel)"),
    **dict.fromkeys(("dcp_size", "decode_context_parallel_size"), "write it as kvp_size (decode context parallel)"),
}


class WorkloadSpec(BaseModel):
    model_config = _STRICT

    phase: Literal["prefill", "decode", "serving"] | None = None
    batch: int | None = Field(None, gt=0, le=MAX_CONCURRENCY)
    seq_len: int | None = Field(None, gt=0, le=MAX_TOKENS)
    isl: int | None = Field(None, gt=0, le=MAX_TOKENS)
    osl: int | None = Field(None, gt=0, le=MAX_TOKENS)
    concurrency: int | None = Field(None, gt=0, le=MAX_CONCURRENCY)
    prefix_hit: PrefixHit = 0.0  # the share of each prompt found in the prefix cache (solve --prefix-hit writes it)

    @model_validator(mode="after")
    def _complete(self) -> "WorkloadSpec":
        unread = hit_unread(self.phase, self.prefix_hit, "prefix_hit")
        if unread:
            raise ValueError(f"prefix_hit: {unread}")
        lengths = self.isl is not None or self.osl is not None
        if self.phase == "decode" and lengths:
            # decode steps over the output of ISL-token prompts: costed at ISL + OSL/2, memory holding ISL + OSL
            stray = [k for k in ("seq_len", "concurrency") if getattr(self, k) is not None]
            if stray:
                raise ValueError(f"{' and '.join(stray)} beside a decode's isl/osl: a decode reads batch and isl + "
                                 "osl (or batch and seq_len); drop them")
            if None in (self.isl, self.osl, self.batch):
                raise ValueError("a decode over isl/osl needs batch, isl and osl")
            return self
        serving = lengths or self.concurrency is not None
        if serving and self.phase in ("prefill", "decode"):
            raise ValueError("give either phase/batch/seq_len or isl/osl/concurrency, not both")
        if serving:
            if None in (self.isl, self.osl, self.concurrency):
                raise ValueError("serving needs isl, osl and concurrency")
            stray = [k for k in ("batch", "seq_len") if getattr(self, k) is not None]
            if stray:  # a serving workload reads neither: they would be dropped unread
                raise ValueError(f"{' and '.join(stray)} beside isl/osl/concurrency: a serving workload reads "
                                 "concurrency and isl + osl; drop them")
            self.phase = "serving"
        else:
            if self.phase is None or self.batch is None or self.seq_len is None:
                raise ValueError("needs phase, batch and seq_len (or isl, osl and concurrency)")
        return self

    @property
    def longest(self) -> int:
        """Tokens a sequence holds at its longest: ISL + OSL where given, else seq_len."""
        return self.isl + self.osl if self.isl is not None and self.osl is not None else self.seq_len  # type: ignore[return-value]

    @property
    def sequences(self) -> int:
        """Sequences in flight across the deployment: the concurrency of serving, else the batch."""
        return self.concurrency if self.phase == "serving" else self.batch  # type: ignore[return-value]


# a number-format name as the command line reads it (dtypes.given_dtype: FP8 is fp8)
DtypeName = Annotated[str, AfterValidator(given_dtype)]


class QuantSpecIn(BaseModel):
    model_config = _STRICT

    weights: DtypeName | None = None
    moe_weights: DtypeName | None = None
    kv_cache: DtypeName | None = None


# a lookup draft's acceptance is the prompts' own (how often the next tokens repeat what the request holds): no
# source gives a default, so it is asked for, never MTP's
LOOKUP_ACCEPT_MISSING = ("missing: a lookup draft (ngram) accepts as often as the prompts repeat themselves, which "
                         "no source gives a default for; give the acceptance of each draft token")


class Deployment(BaseModel):
    model_config = _STRICT

    model: str | None = None
    hardware: str | None = None
    framework: str = DEFAULT_FRAMEWORK
    world_size: int | None = Field(None, gt=0, le=MAX_CARDS)
    parallel_config: dict[str, StrictInt] = Field(default_factory=dict)
    workload: WorkloadSpec | None = None
    quant: QuantSpecIn = QuantSpecIn()
    mtp: int = Field(0, ge=0, le=MAX_MTP)
    mtp_accept: AcceptRate | None = Field(None, description="acceptance of each draft token (None: default)")
    draft: Literal["next_n", "lookup"] = Field("next_n", description="what drafts the mtp tokens: the model's "
                                               "next-n layers, or a lookup in the request's tokens (ngram: no "
                                               "draft forward; its acceptance is the prompts', so mtp_accept is "
                                               "required)")
    verify_tokens: int | None = Field(None, gt=0, le=MAX_TOKENS,
                                      description="tokens the target verifies a sequence each decode step where a "
                                      "lookup draft is a tree of them (SGLang NGRAM's draft tokens); None: 1 + mtp")
    towers: Literal["engine", "whole", "none"] = Field("engine", description="the vision / audio towers as the "
                                                       "command runs them: engine, the profile's layout; whole, "
                                                       "replicated on every rank; none, not loaded "
                                                       "(FrameworkProfile.tower_flags)")
    stage_layers: list[int] | None = Field(None, description="the engine's decoder layers of each pipeline stage "
                                           "as the command runs them (VLLM_PP_LAYER_PARTITION, or the engine's own "
                                           "split); None: the balanced split")
    unloaded_towers: list[str] = Field(default_factory=list, description="towers (vision, audio) not loaded "
                                       "beside `towers`' placement of the rest (a command limiting every modality "
                                       "they serve to 0); each must be one of the model's")
    running_cap: int | None = Field(None, gt=0, le=MAX_CONCURRENCY,
                                    description="requests the engine runs at once over the deployment (a "
                                    "command's --max-num-seqs / --max-running-requests, or the cap the engine sets "
                                    "itself); the rest of a serving workload's concurrency waits for a slot. None: "
                                    "the concurrency runs, as memory holds it")
    enable_online_split_weight: bool | None = None
    afd: bool = Field(False, description="attention-FFN disaggregation: half the ranks attention, half FFN")
    previous_parallel_config: dict[str, StrictInt] | None = None
    derived: dict[str, StrictInt] = Field(default_factory=dict, description="attn_dp_size / moe_ep_size as stated")
    # where the file states each dtype and knob, for errors: "FILE: quant.weights" (load_deployment sets it)
    _fields: dict[str, str] = PrivateAttr(default_factory=dict)

    @property
    def fields(self) -> dict[str, str]:
        return dict(self._fields)

    @model_validator(mode="after")
    def _knobs(self) -> "Deployment":
        unread = accept_unread(self.mtp, self.mtp_accept, "mtp")
        if unread:
            raise FieldProblem("mtp_accept", unread)
        if self.draft == "lookup" and self.mtp and self.mtp_accept is None:
            raise FieldProblem("mtp_accept", LOOKUP_ACCEPT_MISSING)
        if self.verify_tokens is not None and not (self.draft == "lookup" and self.mtp):
            raise FieldProblem("verify_tokens", "only a lookup draft (draft: lookup, mtp > 0) verifies a tree")
        for field in ("parallel_config", "previous_parallel_config"):
            cfg = getattr(self, field) or {}
            unknown = sorted(set(cfg) - set(CONFIG_KEYS))
            if unknown:
                import difflib

                # a misspelt knob (cpsize for cp_size) is named with the knob it stands for
                meant = difflib.get_close_matches(unknown[0], CONFIG_KEYS, n=1, cutoff=0.75)
                engine = next((k for k in unknown if k in _ENGINE_SIZES), None)
                hint = (f"{engine}: {_ENGINE_SIZES[engine]}; " if engine
                        else f"did you mean {meant[0]}? " if meant else "")
                raise FieldProblem(field, f"unknown key(s) {', '.join(unknown)}; {hint}known: {', '.join(CONFIG_KEYS)}")
            for k, v in cfg.items():
                low = neutral(k)  # redundant_experts may be 0
                if not low <= v <= MAX_CARDS:
                    raise FieldProblem(f"{field}.{k}", f"must be in [{low}, {MAX_CARDS:,}], got {v}")
        return self

    def check_derived(self, world: int, origin: str, replica_knobs: tuple[str, ...] = ()) -> None:
        """A stated attn_dp_size / moe_ep_size must be what the knobs give on this world size (the seed derives
        them; a mismatch means the file says two different things). `replica_knobs`: the engine's
        (FrameworkProfile.replica_knobs), so its attention DP is world // (attn_tp x those) as solve writes it
        (KVP inside TP, SGLang's CP); the seed's value passes too."""
        for name, knob in DERIVED.items():
            if name in self.derived:
                expected = world // self.parallel_config.get(knob, 1)
                engine = (world // replica_group(self.parallel_config, replica_knobs) if name == "attn_dp_size"
                          else expected)
                if self.derived[name] not in (expected, engine):
                    raise InputError(f"{origin}: {name}", f"{self.derived[name]} but world_size {world} // {knob} "
                                                          f"{self.parallel_config.get(knob, 1)} = {expected}; "
                                                          "remove it or make the two agree")


# The flat spelling `shardplan calibrate --config` also reads: workload and dtype keys at the top level.
FLAT_WORKLOAD = ("phase", "batch", "seq_len", "isl", "osl", "concurrency")
FLAT_QUANT = {"weight_dtype": "weights", "moe_weight_dtype": "moe_weights", "kv_dtype": "kv_cache"}
DEPLOYMENT_ONLY = ("model", "hardware", "mtp", "mtp_accept", "enable_online_split_weight", "previous_parallel_config")


def nest_flat_keys(data: dict, origin: str) -> dict:
    """Move top-level workload and dtype keys into `workload:` and `quant:` (one file serves check and
    calibrate)."""
    data = dict(data)
    data.pop("description", None)
    for flat, nested in ((FLAT_WORKLOAD, "workload"), (tuple(FLAT_QUANT), "quant")):
        found = {k: data.pop(k) for k in flat if k in data}
        if not found:
            continue
        if isinstance(data.get(nested), dict):
            raise InputError(f"{origin}: {next(iter(found))}", f"given both at the top level and under {nested}:")
        data[nested] = {FLAT_QUANT.get(k, k): v for k, v in found.items()}
    return data


def flatten_nested_keys(data: dict, origin: str) -> dict:
    """The inverse: `workload:` and `quant:` mappings become top-level keys."""
    data = dict(data)
    inverse = {v: k for k, v in FLAT_QUANT.items()}
    for nested, rename in (("workload", {}), ("quant", inverse)):
        block = data.pop(nested, None)
        if block is None:
            continue
        if not isinstance(block, dict):
            raise InputError(f"{origin}: {nested}", f"expected a mapping, got {type(block).__name__}")
        for k, v in block.items():
            key = rename.get(k, k)
            if key in data:
                raise InputError(f"{origin}: {key}", f"given both at the top level and under {nested}:")
            data[key] = v
    return data


# what a candidate_x block of `solve --format yaml` holds: the keys read back, and solve's figures about them
CANDIDATE_READ = ("parallel_config", "workload")
CANDIDATE_OUTPUT = ("estimation", "tradeoff")


def _shape(value: object) -> str:
    return f"a mapping without it ({', '.join(map(str, value))})" if isinstance(value, dict) else type(value).__name__


def candidate_key(candidate: str) -> str:
    """`--candidate` as a block name: a, candidate_a, or the rank 1 (solve's #1 is candidate_a)."""
    c = candidate.strip().lower().removeprefix("candidate_")
    if c.isdigit() and 1 <= int(c) <= 26:
        c = "abcdefghijklmnopqrstuvwxyz"[int(c) - 1]
    return f"candidate_{c}"


# what marks a value as a file rather than a catalog name (a catalog name has neither a separator nor a suffix)
_FILE_SUFFIXES = (".yaml", ".yml", ".json")


def beside(value: str | None, folder: Path, hub_ids: bool = False) -> str | None:
    """A relative path a file names, resolved against that file's folder (so the file reads the same from any
    directory); a catalog name stays a name. `hub_ids`: the value may also be a hub id (org/name, one
    separator), which stays an id unless the folder holds it."""
    if value is None:
        return None
    text = value.strip()
    if Path(text).expanduser().is_absolute() or text.startswith("~"):
        return value
    if not (text.lower().endswith(_FILE_SUFFIXES) or "/" in text or "\\" in text):
        return value  # a catalog name
    resolved = folder / text
    if hub_ids and text.count("/") == 1 and not text.startswith(("./", "../")) and not resolved.exists() \
            and not text.lower().endswith(_FILE_SUFFIXES):
        return value
    return str(resolved)


# the keys `solve --serving disagg` writes (--format yaml: the two pools; json: also `serving: disagg`)
DISAGG_PLAN_KEYS = ("prefill_pool", "decode_pool")


def refuse_disagg_plan(data: dict, origin: str) -> None:
    """A disaggregated plan is two deployments priced together (the rate match, the KV transfer) and carries
    neither model, hardware, engine nor workload: read as one deployment it would be checked half-way, so it is
    named and the command that launches its pools given instead."""
    if data.get("serving") == "disagg" or any(k in data for k in DISAGG_PLAN_KEYS):
        raise InputError(origin, "a disaggregated plan (solve --serving disagg), not a deployment file: for its pools' "
                                 "commands run the same solve with --framework ENGINE --format launch; to check one pool, write its "
                                 "parallel_config with model, hardware, world_size and workload into a file of its own")


def load_deployment(path: str | Path, candidate: str | None = None) -> Deployment:
    """`candidate`: the candidate_x block to read from a file of several (solve --format yaml writes one per
    candidate, each with its parallel_config and workload, the deployment's model / hardware / world size at
    the top level); the other blocks are left unread because the user chose."""
    data = load_yaml(Path(path))
    if not isinstance(data, dict):
        raise InputError(str(path), "expected a mapping of the seed's parallel_config keys")
    refuse_disagg_plan(data, str(path))
    from solver.specs.reference import deployment_data, is_reference_record, load_reference_file

    if is_reference_record(data):  # a verified deployment (references/*.yaml) reads as the deployment it ran
        data = deployment_data(load_reference_file(Path(path)))
    flat_quant = any(k in data for k in FLAT_QUANT)
    flat_workload = [k for k in FLAT_WORKLOAD if k in data]  # folded into `workload:` next, named as written
    data = nest_flat_keys(data, str(path))
    # the seed's YAML puts the knobs at the top level (or under a candidate_x block); gather them
    candidates = [k for k in data if k.startswith("candidate_")]
    for key in candidates:
        if not isinstance(data[key], dict) or "parallel_config" not in data[key]:
            raise InputError(f"{path}: {key}", "a candidate block is a mapping holding parallel_config (and "
                                               f"workload), got {_shape(data[key])}")
    if candidate is not None:
        key = candidate_key(candidate)
        if key not in candidates:
            raise InputError("--candidate", f"{candidate!r}: {path} holds "
                                            f"{', '.join(candidates) if candidates else 'no candidate_x block'}")
        for other in candidates:
            if other != key:
                data.pop(other)
        candidates = [key]
    if len(candidates) > 1:  # checking one would drop the others unread
        raise InputError(f"{path}: {candidates[1]}", f"the file holds {len(candidates)} candidates "
                                                     f"({', '.join(candidates)}); keep the one to read, or "
                                                     "name it with --candidate")
    for key in candidates:
        block = data.pop(key)
        # solve's own figures beside the knobs are output, not read back; anything else there would be dropped
        unread = [k for k in block if k not in CANDIDATE_READ + CANDIDATE_OUTPUT]
        if unread:
            raise InputError(f"{path}: {key}.{unread[0]}", "a candidate block is read for its parallel_config and "
                                                           "workload only; give it at the top level of the file")
        data.setdefault("parallel_config", block["parallel_config"])
        # solve writes each candidate's workload (its own concurrency) beside its knobs
        if "workload" in block:
            if data.get("workload") is not None and flat_workload:
                raise InputError(f"{path}: {flat_workload[0]}", f"a workload key at the top level beside "
                                                                f"{key}.workload; give it once, inside {key}.workload")
            if data.get("workload") is not None:
                raise InputError(f"{path}: {key}.workload", "given both at the top level and in the candidate block")
            data["workload"] = block["workload"]
    top = {k: data.pop(k) for k in list(data) if k in CONFIG_KEYS}
    engine = next((k for k in data if k in _ENGINE_SIZES), None)
    if engine is not None:
        raise InputError(f"{path}: {engine}", f"not a parallel_config key; {_ENGINE_SIZES[engine]}")
    if "cards" in data:
        if "world_size" in data and data["world_size"] != data["cards"]:
            raise InputError(f"{path}: cards", f"{data['cards']!r} but world_size {data['world_size']!r}; give one")
        data.setdefault("world_size", data.pop("cards"))
        data.pop("cards", None)
    nested = data.get("parallel_config")
    if nested is not None and not isinstance(nested, dict):
        raise InputError(f"{path}: parallel_config", f"expected a mapping, got {type(nested).__name__}")
    if "derived" in data:  # the model's field for what the file states below, not a key of the file: an unknown
        # name in it was dropped and a value it gave was overwritten by the stated one
        raise InputError(f"{path}: derived", f"not a deployment key; state {' / '.join(DERIVED)} at the top level "
                                             "or under parallel_config")
    derived: dict = {}
    for block in (data, nested or {}):
        for name in DERIVED:
            if name in block:
                value = block.pop(name)
                if name in derived and derived[name] != value:
                    raise InputError(f"{path}: {name}", f"{derived[name]!r} at one place and {value!r} at another")
                derived[name] = value
    if derived:
        data["derived"] = derived
    for knob, value in top.items():
        # a knob both at the top level and under parallel_config must say the same thing: never pick one
        if nested is not None and knob in nested and nested[knob] != value:
            raise InputError(f"{path}: {knob}", f"{value!r} at the top level but {nested[knob]!r} under "
                                                "parallel_config; give it once")
    if top:
        data["parallel_config"] = {**(nested or {}), **top}
    dep = validate_model(Deployment, data, str(path))
    folder = Path(path).parent
    for key in ("model", "hardware", "framework"):
        resolved = beside(getattr(dep, key), folder, hub_ids=key == "model")
        if resolved != getattr(dep, key):  # set only where it moves: an unset key (framework) stays unset
            setattr(dep, key, resolved)
    # errors about a format name the key the file used (weight_dtype at the top level, else quant.weights)
    spelled = {k: k if flat_quant else f"quant.{v}" for k, v in FLAT_QUANT.items()}
    dep._fields = {**{k: f"{path}: {v}" for k, v in spelled.items()},
                   **{k: f"{path}: {k}" if k in top else f"{path}: parallel_config.{k}" for k in CONFIG_KEYS}}
    return dep
