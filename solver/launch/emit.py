"""One parallel_config -> {"engine", "nodes": [{"node_rank", "argv", "env"}], "files"} for one engine.

The config must pass the engine's rules first (the same FrameworkProfile.check that `check` and the planner
use): what the engine cannot express is refused, one line naming the knob, never emitted approximately.

A worker of a disaggregated pool (`role` "prefill" or "decode") also gets the profile's `launch.disagg` args and
documents (its role, the KV-cache transfer); the launch then carries "role" and, where the profile says the facts
do not give a flag, "missing" (the line the output shows instead of inventing it). A weight format the profile
has no flag for, or whose flag's `map` lacks it, is the checkpoint's to carry, and so are mixed formats (routed
experts in another format: one quantization flag cannot name both): the launch says so in "notes" (a KV format
without a spelling is refused: it is the engine's runtime choice).
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping

import yaml

from solver.errors import InputError
from solver.estimate.closed_loop import synced_ranks
from solver.specs.context import derived_context
from solver.specs.dtypes import number_format
from solver.specs.framework import FrameworkProfile
from solver.specs.profile_rules import KNOB_NAMES
from solver.specs.profile_serving import ep_kernels_hold, graph_cap_at, graph_cap_env, step_default
from solver.specs.knobs import DERIVED_NAMES, SETTINGS
from solver.specs.rule_env import device_facts, device_flags, model_env, unstated_platform_note
from solver.specs.hardware import Hardware
from solver.specs.launch_spec import (DISAGG_ROLES, PLAN_MEMORY_NAMES, POOL_NAMES, DisaggLaunch,
                                     LaunchArg, pool_role)
from solver.specs.model import ModelSpec
from solver.specs.notes import derived_said
from solver.specs.model_rules import model_problems, stage_sizes
from solver.specs.parallel import ParallelConfig, absent_knobs
from solver.space.domains import node_counts
from solver.launch.memory_share import (free_fraction, kv_pool_bytes, memory_fraction, static_fraction,
                                        static_fraction_refusal)
from solver.space.placement import as_launched, placement_note

if TYPE_CHECKING:
    from solver.estimate.memory import MemoryReport

# the workload's figures a profile rule may read (model_env's batch and mtp), named in a refusal beside the knobs
WORKLOAD_NAMES = ("batch", "mtp")

# Placeholders a user replaces before running (README, "Launch commands"): shell variables, so the printed
# command runs once they are exported, and fails loudly (empty argument) when they are not.
MODEL_PATH = "${MODEL_PATH}"
HEAD_ADDR = "${HEAD_NODE_ADDR}"
_TEMPLATE = re.compile(r"\{([a-z_]+)\}")


@dataclass(frozen=True)
class LaunchInputs:
    """What the estimate assumed besides the knobs: concurrency, sequence length, MTP, formats."""

    batch: int
    max_model_len: int
    mtp: int = 0
    weight_dtype: str | None = None
    moe_weight_dtype: str | None = None
    kv_dtype: str | None = None
    model_path: str = MODEL_PATH
    head_addr: str = HEAD_ADDR
    # the estimate's memory of one rank at this batch (None: the emitter computes it, memory_per_rank, where an
    # argument reads one of PLAN_MEMORY_NAMES)
    memory: "MemoryReport | None" = None
    # False: the memory shares and pool (PLAN_MEMORY_NAMES) left at 0 and unchecked, for a caller that compares
    # only the parallel flags (launch.read_command's first pass over many configurations); the rest as emitted
    with_memory: bool = True
    # a prefill-only worker's tokens in one step of one attention replica, as its estimate prices the step (all its
    # prompts at once, their uncached tokens: estimate.figures, estimate.disagg); 0: not one (step_budget)
    prefill_tokens: int = 0


def model_len(phase: str, longest: int) -> int:
    """The engine's maximum model length for a deployment whose longest sequence (prompt + output, or a
    prefill-only deployment's prompt) is `longest`: a prefill-only instance still emits one token per request
    (vLLM and SGLang refuse a request whose prompt plus requested tokens exceed it), so it gets prompt + 1."""
    return longest + 1 if phase == "prefill" else longest


def step_budget(fw: FrameworkProfile, default: int, prefill_tokens: int, synced: int) -> int:
    """The tokens per forward step a command gives one engine (the `token_budget` launch name): the profile's
    default, raised for a prefill-only worker to its priced step (LaunchInputs.prefill_tokens, one attention
    replica's), times the attention-DP ranks of one engine where the engine divides its budget over them (the
    scheduler's budget_split_by_attention_dp; `synced`: closed_loop.synced_ranks), so each rank holds its prompts
    in one step rather than the default's chunks."""
    need = prefill_tokens * (synced if fw.scheduler.budget_split_by_attention_dp else 1)
    return max(default, need)


def _plan_memory(fw: FrameworkProfile, model: ModelSpec, hw: Hardware, pc: ParallelConfig,
                 inputs: LaunchInputs) -> "MemoryReport":
    """The estimate's memory of one rank at the launch's batch and length, under the engine's layout
    (inputs.memory where the caller has it)."""
    if inputs.memory is not None:
        return inputs.memory
    from solver.estimate.memory import memory_per_rank
    from solver.estimate.memory_options import framework_options
    from solver.specs.precision import resolve_precision

    prec = resolve_precision(model, hw, inputs.weight_dtype, inputs.moe_weight_dtype, inputs.kv_dtype)
    return memory_per_rank(model, hw, pc, prec, inputs.batch, inputs.max_model_len, framework_options(fw, hw=hw),
                           mtp_layers=inputs.mtp)


def _memory_names(fw: FrameworkProfile, model: ModelSpec, hw: Hardware, pc: ParallelConfig, inputs: LaunchInputs,
                  shares: bool) -> dict[str, float | int]:
    """PLAN_MEMORY_NAMES from the plan's memory of one rank. A share (`shares`: the profile reads one) is refused
    where the plan does not fit or its formats do not resolve on the device; a pool alone is then left out
    (kv_pool_bytes 0, the engine sizing its own): a KV format the device lacks is said in the notes instead."""
    try:
        mem = _plan_memory(fw, model, hw, pc, inputs)
    except InputError:
        if shares:
            raise
        return {"static_fraction": 0.0, "free_fraction": 0.0, "kv_pool_bytes": 0}
    refusal = static_fraction_refusal(mem)
    if refusal and shares:
        raise InputError(f"--engine {fw.name}", refusal)
    return {"static_fraction": static_fraction(mem), "free_fraction": free_fraction(mem),
            "kv_pool_bytes": kv_pool_bytes(mem)}


def _node_addr(i: int, head: str) -> str:
    return head if i == 0 else f"${{NODE{i}_ADDR}}"


def _text(arg: LaunchArg, names: dict[str, Any], engine: str) -> str:
    def fill(m: re.Match) -> str:
        value = names.get(m.group(1))
        if value is None:
            raise InputError(f"--engine {engine}", f"{arg.knob or arg.flag}: {m.group(1)} is not set")
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, (int, float)):
            return str(int(value)) if float(value).is_integer() else str(value)
        return value
    text = _TEMPLATE.sub(fill, arg.text or "")
    spelt = arg.spelling(text)
    if spelt is None:
        raise InputError(f"--engine {engine}", f"{arg.knob or arg.flag} {text}: {engine} has no spelling for it "
                         f"(it takes {', '.join(sorted(arg.map or ()))})")
    return spelt


def _value(arg: LaunchArg, names: dict[str, Any], engine: str) -> Any:
    if arg.switch:
        return True
    if arg.value_expr is not None:
        v = arg.value_expr.evaluate(names)
        return v if isinstance(v, bool) else (int(v) if float(v).is_integer() else float(v))
    return _text(arg, names, engine)


def _at_default(arg: LaunchArg, v: Any, names: Mapping[str, Any]) -> bool:
    """Whether `v` is the engine's own value for `arg` (LaunchArg.default): the command leaves it out."""
    return arg.default is not None and v == arg.default_value(names)


def _put(doc: dict, dotted: str, value: Any) -> None:
    *path, last = dotted.split(".")
    for p in path:
        doc = doc.setdefault(p, {})
    doc[last] = value


def _argv_token(v: Any) -> str:
    return ("true" if v else "false") if isinstance(v, bool) else str(v)


def checkpoint_own(model: ModelSpec, inputs: LaunchInputs) -> set[str]:
    """The weight formats the user named that the checkpoint already stores (every layer they cover is in it): the
    engine serves them as stored, so there is nothing to tell it. An unquantized one is the checkpoint's own 16-bit
    dtype (a 32-bit checkpoint is served at 16 bits: that note stays, _unspelled_weights); a quantized one matches
    the checkpoint's quantization_config in element type and width (fp8 names an fp8_ch checkpoint too), which the
    engine reads from the config: vLLM's `--quantization fp8` on it would only restate or contradict it."""
    def served_as_stored(name: str | None, formats: set[str]) -> bool:
        if name is None:
            return False
        fmt = number_format(name, "weights")
        if not fmt.quantized:
            return formats == {name} and fmt.bits <= 16
        stored = [number_format(f, "weights") for f in formats]
        return all(s.quantized and (s.compute, s.bits) == (fmt.compute, fmt.bits) for s in stored)

    q = model.quant
    covered = {q.attention, q.dense} | ({q.experts} if model.is_moe and inputs.moe_weight_dtype is None else set())
    out = {"weight_dtype"} if served_as_stored(inputs.weight_dtype, covered) else set()
    if model.is_moe and served_as_stored(inputs.moe_weight_dtype, {q.experts}):
        out.add("moe_weight_dtype")
    return out


def _prequantized(method: str, name: str, value: str) -> str:
    """The note for a weight format other than a quantized checkpoint's own: an engine's quantization flag
    quantizes a 16-bit checkpoint at load (vLLM / SGLang `--quantization fp8`) and refuses one whose
    quantization_config names another method, so the flag is left out and the format is the checkpoint's to
    change."""
    return (f"{name} {value}: the checkpoint is already quantized ({method}), which the engine reads from its "
            f"config and no flag converts; serve a checkpoint stored in {value} (the model path)")


def _formats(fw: FrameworkProfile, args: list[LaunchArg], names: dict[str, Any], skip: set[str],
             inputs: LaunchInputs, own: set[str] = frozenset(),
             method: str = "none") -> tuple[list[str], set[int]]:
    """The formats the user chose that the command cannot spell: (notes, ids of the args to leave out).

    A KV-cache format without a spelling is refused (FrameworkProfile.kv_dtype_refusal, InputError), unless the
    profile says where it is set instead (`launch.kv_dtype_elsewhere`: a note). A weight format is the
    checkpoint's: an engine with no flag for it, or whose flag takes other values (a map without it), serves the
    format it is given, and a note says so, unless it is the checkpoint's own 16-bit dtype (`own`,
    checkpoint_own: nothing to tell the engine). On a checkpoint already quantized (`method`, its
    quantization_config's) any other weight format is left out of the command (_prequantized)."""
    refusal = fw.launch.kv_dtype_refusal(inputs.kv_dtype, fw.name, names) if fw.launch is not None else None
    for value in (inputs.weight_dtype, inputs.moe_weight_dtype):
        refusal = refusal or (fw.launch.weight_dtype_refusal(value, fw.name, names) if fw.launch else None)
    if refusal:
        raise InputError(f"--engine {fw.name}", refusal)
    elsewhere = fw.launch.kv_dtype_elsewhere if fw.launch is not None else ""
    given = {"weight_dtype": inputs.weight_dtype, "kv_dtype": inputs.kv_dtype,
             "moe_weight_dtype": inputs.moe_weight_dtype if inputs.moe_weight_dtype != inputs.weight_dtype else None}
    spelled: set[str] = set()
    notes: list[str] = []
    unspelled: set[int] = set()

    def weight_note(name: str, value: str, why: str) -> str:
        # a 16-bit model dtype does not dequantize a quantized checkpoint: its format is the checkpoint's to change
        if method != "none" and not number_format(value, name).quantized:
            return _prequantized(method, name, value)
        return _unspelled_weights(fw, name, value, why)

    for arg in args:
        uses = set(_TEMPLATE.findall(arg.text or "")) & set(given)
        if not uses or arg.knob in skip or not arg.when_expr.evaluate({**names, "node_rank": 0}):
            continue
        if uses <= own:  # the checkpoint's own format: nothing to tell the engine
            unspelled.add(id(arg))
            spelled |= uses
            continue
        try:
            _text(arg, names, fw.name)
        except InputError:
            unspelled.add(id(arg))
            for name in sorted(uses - own):
                takes = f"{fw.name}'s {arg.flag or arg.key} takes {', '.join(sorted(arg.map or ()))}, not {given[name]}"
                notes.append(f"kv_dtype {given[name]}: {takes}; {elsewhere}" if name == "kv_dtype"
                             else weight_note(name, given[name], takes))
                spelled.add(name)
            spelled |= uses & own
            continue
        converts = sorted(n for n in uses - own - {"kv_dtype"} if given[n] is not None) if method != "none" else []
        if converts:  # a load-time quantization flag on a checkpoint that is quantized already
            unspelled.add(id(arg))
            notes += [_prequantized(method, n, given[n]) for n in converts if n not in spelled]
        spelled |= uses
    for name, value in given.items():
        if value is None or name in spelled or name in own:
            continue
        if name == "kv_dtype":  # not refused (kv_dtype_refusal): the profile says where it is set
            notes.append(f"kv_dtype {value}: {fw.name} takes no flag for it; {elsewhere}")
            continue
        # weights are the checkpoint's: an engine without a flag serves the format it is given
        flags = sorted({a.flag or a.key or "" for a in args if name in _TEMPLATE.findall(a.text or "")} - {""})
        why = (f"{fw.name} takes no flag for it" if not flags else
               f"{', '.join(flags)} names one format for every layer, and the routed experts' differs")
        notes.append(weight_note(name, value, why))
    return notes, unspelled


def _unverified_weights_note(fw: FrameworkProfile, model: ModelSpec, inputs: LaunchInputs,
                             hw: Hardware) -> str | None:
    """The quantized weight formats the command serves (the user's, else the checkpoint's own) that the profile's
    sources do not show the engine loading (launch.weight_formats): said to be unverified rather than pass for a
    format the engine is known to run. None where the profile lists no formats or every one served is listed."""
    listed = fw.launch.weight_formats if fw.launch is not None else None
    if listed is None:
        return None
    q = model.quant
    groups = [inputs.weight_dtype or q.attention, inputs.weight_dtype or q.dense]
    if model.is_moe:
        groups.append(inputs.moe_weight_dtype or inputs.weight_dtype or q.experts)
    served = [f for f in dict.fromkeys(g for g in groups if g) if number_format(f, "weights").quantized]
    missing = [f for f in served if f not in listed.formats]
    if not missing:
        return None
    return (f"weights {', '.join(missing)}: {fw.name}'s sources do not show it loading this format "
            f"({listed.source}); unverified on {hw.name}: check it against your {fw.name} version")


def _unspelled_weights(fw: FrameworkProfile, name: str, value: str, why: str) -> str:
    """The note for a weight format the command does not spell. A quantized format is the checkpoint's own; an
    unquantized one (fp32) is the engine's model dtype, which a checkpoint stored in it does not set (the engines'
    default dtype serves an fp32 checkpoint at 16 bits, where the estimate priced its weights and KV at 32). No
    profile names a model-dtype flag (facts/engines.md has none), so the note says what to set, not a flag."""
    fmt = number_format(value, name)
    if fmt.quantized:
        return f"{name} {value}: {why}; serve a checkpoint stored in {value} (the model path)"
    default = f"; its default dtype serves a checkpoint stored in {value} at 16 bits" if fmt.bits > 16 else ""
    return (f"{name} {value}: a model dtype, not a quantization ({why}): set {fw.name}'s model (load) dtype to "
            f"{value}, which its profile has no flag for{default}")


def _trust_note(fw: FrameworkProfile, model: ModelSpec, args: list[LaunchArg]) -> str | None:
    """A checkpoint with code of its own (auto_map) that the profile has no trust switch for: the engine would
    stop at loading it, so the launch says what to add rather than print a command that fails."""
    if not model.remote_code or any("remote_code" in a.when_expr.names for a in args):
        return None
    return (f"{model.name}'s config names code of its own (auto_map), which the engine loads only when told to "
            f"trust it; {fw.name}'s profile has no launch arg for that (one with `when: remote_code`): add the "
            "engine's trust-remote-code switch to the command")


def _context_note(fw: FrameworkProfile, model: ModelSpec, args: list[LaunchArg], names: Mapping[str, Any]) -> str | None:
    """A planned length past the model's config context (`past_context`): what the command sets so that the
    engine takes it (the args that read past_context) or that the profile has nothing for it, and the engine's
    config override that extends the RoPE scaling to it (LaunchSpec.long_context)."""
    if not names["past_context"]:
        return None
    set_ = [f"{a.env}={_argv_token(_value(a, names, fw.name))}" if a.env else a.flag or ""
            for a in args if "past_context" in a.when_expr.names and a.when_expr.evaluate(names)]
    sources = "; ".join(dict.fromkeys(a.source for a in args if "past_context" in a.when_expr.names and a.source))
    limit = derived_context(model, fw.max_context) or 0
    head = (f"max model length {names['max_model_len']:,} exceeds {model.name}'s {model.context_field} "
            f"{model.max_position_embeddings:,}{derived_said(model, limit, fw)}: ")
    allow = (f"the command sets {', '.join(set_)}, without which {fw.name} refuses it ({sources})" if set_ else
             f"{fw.name}'s profile has no launch arg that allows it (one with `when: past_context`): add the "
             "engine's switch for a longer maximum model length")
    return head + allow + (f"; {fw.launch.long_context}" if fw.launch and fw.launch.long_context else "")


def _reads(arg: LaunchArg) -> set[str]:
    """The launch names an argument reads: its condition, its value expression and its text template."""
    names = set(arg.when_expr.names) | set(_TEMPLATE.findall(arg.text or ""))
    return names | (set(arg.value_expr.names) if arg.value_expr is not None else set())


def _mtp_note(fw: FrameworkProfile, args: list[LaunchArg], mtp: int) -> str | None:
    """An MTP depth the figures assume but no argument of the profile spells: said, not dropped, since the
    TPOT and throughput the candidate was chosen by count the drafted tokens."""
    if mtp <= 0 or any("mtp" in _reads(a) for a in args):
        return None
    return (f"mtp {mtp}: {fw.name}'s launch has no argument for the MTP (next-n) depth; the figures assume "
            f"{mtp} draft token{'s' if mtp > 1 else ''} per step: enable MTP at depth {mtp} in the engine that serves this "
            "configuration")


def _unsourced_notes(fw: FrameworkProfile, args: list[LaunchArg], names: Mapping[str, Any], skip: set[str],
                     unspelled: set[int]) -> list[str]:
    """One note per argument the command carries whose spelling has no source read here (`unsourced`): the
    command needs it, so it is written, and says that it is unverified rather than pass for a sourced flag."""
    keys: dict[str, list[str]] = {}  # one note per reason, naming every argument it covers
    for a in args:
        at = {**names, "node_rank": 0}
        if a.unsourced is None or a.knob in skip or id(a) in unspelled or not a.when_expr.evaluate(at) or \
                _at_default(a, _value(a, at, fw.name), at):  # left out: nothing unverified is written
            continue
        keys.setdefault(a.unsourced, []).append(a.key or a.flag or a.env or "")
    return [f"{', '.join(dict.fromkeys(k))}: {why}" for why, k in keys.items()]


def _one_command_note(args: list[LaunchArg], names: Mapping[str, Any], argv: list[str], nnodes: int,
                      head: str) -> str:
    """Where the one command of a launch over several nodes (`per_node: false`) runs. One that lists every host
    (an argument reads `hosts`: an MPI launcher's host:slots) starts all ranks from one node, so it is run once,
    not pasted on each node (a second copy would start a second world); one that lists none leaves reaching the
    other nodes to its launcher, which the profile does not describe: said, not guessed."""
    if any("hosts" in _reads(a) and a.when_expr.evaluate(names) for a in args):
        return (f"run this command once, on the head node ({head}), not on each node: {argv[0]} starts the ranks "
                f"on all {nnodes} hosts it lists, which must reach each other as its launcher needs")
    return (f"one command for {nnodes} nodes: it names no host list, and the profile does not say how "
            f"{argv[0]} starts the ranks on the other nodes (once on the head, or on "
            "each node): check the launcher's own instructions before running it")


def _pool_checks(fw: FrameworkProfile, pool: DisaggLaunch, role: str, env: Mapping[str, Any],
                 names: Mapping[str, Any]) -> None:
    """InputError where this pool's config breaks the transfer's rules for its role, or the two pools break a
    pair check (launch_spec.DisaggLaunch: `rules`, `pairs`)."""
    for rule in pool.rules.get(role, []):
        if not rule.holds(env):
            knobs = ", ".join(f"{k} {env[k]}" for k in (*KNOB_NAMES, *DERIVED_NAMES, *SETTINGS)
                              if k in rule.names and k not in env.free)
            raise InputError(f"--engine {fw.name}", f"cannot express the {role} pool's {knobs or 'config'}: "
                             f"[{rule.id}] {rule.message}")
    check = pool.failed_pair(names)
    if check is not None:
        sizes = ", ".join(f"{n} {names[n]}" for n in sorted(check.require_expr.names & POOL_NAMES))
        raise InputError(f"--engine {fw.name}", f"cannot pair these pools ({sizes}): [{check.id}] {check.message}")


def no_command_template(fw: FrameworkProfile) -> str:
    """Why a profile without a `launch:` section gives no command, and the two ways to get one."""
    from solver.specs.framework import list_frameworks, load_framework

    engines = [n for n in list_frameworks() if load_framework(n).launch is not None]
    return (f"its profile ({fw.name}) gives no command template (no launch section): name a profile that has one "
            f"({', '.join(engines)}), or add a launch section to it (docs/bring-your-own.md)")


def emit_launch(fw: FrameworkProfile, model: ModelSpec, hw: Hardware, pc: ParallelConfig,
                inputs: LaunchInputs, role: str | None = None,
                pools: Mapping[str, ParallelConfig] | None = None) -> dict[str, Any]:
    """The engine's command per node and its files, or InputError (exit 2) naming what it cannot express.
    `role`: the worker serves that pool of a disaggregated deployment (module docstring); `pools`: every pool's
    parallel_config by role (this one's is `pc`), which a transfer that names both pools' sizes needs."""
    spec = fw.launch
    if spec is None:
        raise InputError("--engine", no_command_template(fw))
    fw.check_vendor(hw.name, hw.vendor, "--engine")
    fw.check_model(model, "--engine", hw.vendor)
    # the nodes as this engine's launch uses them (an equal share of part-filled ones: space.placement), which
    # --nnodes, the per-node counts and the placement comments below read
    hw = as_launched(hw, fw, pc.world_size)
    if role is not None and role not in DISAGG_ROLES:
        raise InputError("role", f"{role}: a pool is one of {', '.join(DISAGG_ROLES)}")
    if role is not None:  # its rules read the worker's role (prefill_role), as its launch lines do below; else
        fw = fw.for_role(role)  # the role the profile was read as (a pool's command read as its parallel flags)
    pool = spec.disagg if role is not None else None
    odd = sorted(set(pools or {}) - set(DISAGG_ROLES))
    if odd:
        raise InputError("pools", f"{odd[0]}: a pool is one of {', '.join(DISAGG_ROLES)}")
    pools = {**(pools or {}), **({role: pc} if role is not None else {})}
    lacking = sorted({pool_role(n) for n in (pool.pool_reads() if pool is not None else ())} - set(pools))
    if lacking:
        raise InputError("pools", f"{fw.name}'s {role} command names the {' and '.join(lacking)} pool's sizes "
                         "(its KV transfer is told both layouts): give every pool's parallel_config")
    args = spec.args + (pool.args if pool is not None else [])
    documents = {**spec.documents, **(pool.documents if pool is not None else {})}
    # the model's own rules first (class A: knobs of modules it lacks, heads, experts, stages): no engine runs such
    # a config, so the refusal says what the model needs, as check does, not that this engine cannot express it
    bad = model_problems(model, pc, fw)
    if bad:
        more = f" (and {len(bad) - 1} more: {'; '.join(bad[1:])})" if len(bad) > 1 else ""
        raise InputError("parallel_config", f"not runnable on {model.name}: {bad[0]}{more}")
    world = pc.world_size
    env = model_env(pc.settings(), model, **device_facts(hw), world=world, batch=inputs.batch, mtp=inputs.mtp)
    broken = fw.violated(env, severity="error")
    if broken:
        rule = broken[0]
        # the workload's figures the rule reads (batch, MTP depth) first: a batch the engine refuses is the batch's
        # to change, not the knobs' beside it
        knobs = ", ".join(f"{k} {env[k]}" for k in (*WORKLOAD_NAMES, *KNOB_NAMES, *DERIVED_NAMES, *SETTINGS)
                          if k in rule.names and k not in env.free)
        raise InputError(f"--engine {fw.name}", f"cannot express {knobs or 'this config'}: [{rule.id}] {rule.message}")
    problems = fw.check(env, severity="error")
    if problems:
        raise InputError(f"--engine {fw.name}", f"cannot express this config: {problems[0]}")
    nnodes = math.ceil(world / hw.ranks_per_node)
    gpus = min(world, hw.ranks_per_node)
    counts = node_counts(world, hw.ranks_per_node)
    derived = derived_context(model, fw.max_context)
    base = {
        **env,
        "nnodes": nnodes, "gpus_per_node": gpus, "max_model_len": inputs.max_model_len,
        # one engine instance's share of the planned concurrency: a DP rank's, or a dense model's replica's
        "replica_batch": int(fw.replica_batch(env)),
        "graph_cap": graph_cap_at(fw.serving.graph_max_batch, graph_cap_env(
            pc, hw.memory_gib, device_flags(hw.platform, hw.capability), model.num_experts)) or 0,
        "token_budget": step_budget(fw, step_default(fw.serving.ep_kernels, fw.token_budget_on(hw), model.is_moe, pc,
                                                     hw, role == "prefill"),
                                    inputs.prefill_tokens, synced_ranks(model, pc)),
        "prefill_tokens": inputs.prefill_tokens,
        # one format for every linear layer: a quantization flag names one method, so a mixed checkpoint (its
        # routed experts in another format) carries its own and the flag is left out (the notes say so)
        "weight_dtype_set": inputs.weight_dtype is not None and inputs.moe_weight_dtype in (None, inputs.weight_dtype),
        "kv_dtype_set": inputs.kv_dtype is not None,
        "model_path": inputs.model_path, "head_addr": inputs.head_addr,
        # each host's slots are the ranks the placement puts there (an MPI world fills them in rank order)
        "hosts": ",".join(f"{_node_addr(i, inputs.head_addr)}:{n}" for i, n in enumerate(counts)),
        "weight_dtype": inputs.weight_dtype, "moe_weight_dtype": inputs.moe_weight_dtype or inputs.weight_dtype,
        "kv_dtype": inputs.kv_dtype,
        "role": role, "prefill_role": role == "prefill",
        "memory_fraction": memory_fraction(hw),
        "remote_code": model.remote_code,
        # past the context the engine derives from the config (its field times the RoPE factor it multiplies)
        "past_context": derived is not None and inputs.max_model_len > derived,
        # the stages' layers as priced (estimate.pipeline): where pp leaves a remainder the engines place it
        # otherwise, so the profiles name this split (their partition variable) where pp_uneven holds
        # counted in the engine's decoder layers (ModelSpec.stage_unit sub-layers each)
        "pp_uneven": pc.pp_size > 1 and len(model.layers) // model.stage_unit % pc.pp_size != 0,
        "pp_layer_partition": ",".join(str(n // model.stage_unit)
                                       for n in stage_sizes(len(model.layers), pc.pp_size, model.stage_unit)),
        # the condition the estimate prices the profile's EP kernels under, read at this config and device; a
        # model without routed experts dispatches no tokens (a dense model's moe_ep_size is its world), so its
        # command names no MoE exchange
        "ep_kernels": model.is_moe and fw.serving.ep_kernels is not None
        and ep_kernels_hold(fw.serving.ep_kernels.when, pc, hw),
        **(fw.pool_figures(pools) if pool is not None else {}),
    }
    if not inputs.with_memory:
        base["static_fraction"] = base["free_fraction"] = 0.0
        base["kv_pool_bytes"] = 0
    elif any(PLAN_MEMORY_NAMES & _reads(a) for a in args):
        base.update(_memory_names(fw, model, hw, pc, inputs, any({"static_fraction", "free_fraction"} & _reads(a)
                                                                 for a in args)))
    if pool is not None:
        _pool_checks(fw, pool, role or "", env, base)
    skip = set(absent_knobs(model))  # no argument for a module the model lacks
    notes, unspelled = _formats(fw, args, base, skip, inputs, checkpoint_own(model, inputs), model.quant.method)
    unverified = _unverified_weights_note(fw, model, inputs, hw)
    if unverified:
        notes.append(unverified)
    notes += [n for n in (placement_note(hw, fw, world), unstated_platform_note(hw, fw)) if n]
    trust = _trust_note(fw, model, args)
    if trust:
        notes.append(trust)
    context = _context_note(fw, model, args, base)
    if context:
        notes.append(context)
    mtp = _mtp_note(fw, args, inputs.mtp)
    if mtp:
        notes.append(mtp)
    notes += _unsourced_notes(fw, args, base, skip, unspelled)
    nodes, files = [], {}
    for rank in range(nnodes if spec.per_node else 1):
        names = {**base, "node_rank": rank, "node_addr": _node_addr(rank, inputs.head_addr)}
        argv: list[str] = []
        envs: dict[str, str] = {}
        docs: dict[str, dict] = {name: {} for name in documents}
        for arg in args:
            if arg.knob in skip or id(arg) in unspelled or not arg.when_expr.evaluate(names):
                continue
            v = _value(arg, names, fw.name)
            if _at_default(arg, v, names):  # the engine's own value: nothing to tell it
                continue
            if arg.doc is not None:
                _put(docs[arg.doc], arg.key or "", v)
            elif arg.env is not None:
                envs[arg.env] = _argv_token(v)
            elif arg.switch:
                argv.append(arg.flag or "")
            else:
                argv += ([arg.flag] if arg.flag else []) + [_argv_token(v)]
        for name, d in documents.items():
            if not docs[name] or not d.when_expr.evaluate(names):
                continue
            if d.file is not None:
                fname = f"{role}_{d.file}" if role is not None else d.file  # the two pools' files side by side
                files[fname] = yaml.safe_dump(docs[name], sort_keys=False) if d.format == "yaml" else \
                    json.dumps(docs[name], indent=2) + "\n"
                if d.flag is not None:  # flag "": the file name is the command's positional argument
                    argv += ([d.flag] if d.flag else []) + [fname]
            else:
                argv += [d.flag or "", json.dumps(docs[name], separators=(",", ":"))]
        nodes.append({"node_rank": rank, "argv": argv, "env": envs})
    if nnodes > 1 and not spec.per_node and nodes[0]["argv"]:  # a profile that writes only files runs no command
        notes.append(_one_command_note(args, {**base, "node_rank": 0}, nodes[0]["argv"], nnodes, inputs.head_addr))
    out: dict[str, Any] = {"engine": fw.name, "nodes": nodes, "files": files}
    if nnodes > 1:  # what the command assumes of each node, said rather than left to the engine's default
        out["placement"] = [{"node_rank": i, "ranks": [sum(counts[:i]), sum(counts[:i + 1]) - 1], "devices": n}
                            for i, n in enumerate(counts)]
    if notes:
        out["notes"] = notes
    if role is not None:
        out["role"] = role
        missing = pool.missing if pool is not None else (f"{fw.name}'s profile has no launch.disagg entry: the "
                                                         "prefill/decode role and KV-transfer flags are not given")
        if missing:
            out["missing"] = missing
    return out
