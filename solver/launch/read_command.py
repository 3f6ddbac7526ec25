"""`check --command`: an engine command read back into the parallel_config that prints it, by the forward path.

No parser per engine: the engine is the profile whose launch program (its unconditional literal tokens, `vllm
serve`) the command runs; the model is the token (or flag) the profile writes `{model_path}` into, resolved in the
catalog; the parallel configuration is found among those the space admits for that engine at each world size the
command's numbers allow (or --cards): the ones whose emitted launch (emit.emit_launch) prints the same values for
every parallel argument (one that reads a knob, a derived size or the world and no workload figure). Flags the
engine's parser refuses are refused (engine_flags.argv_problems), flags the profile never prints are listed as not
read, and the values the profile derives from the workload are read back where the argument's value is a function
of the concurrency (a cap: the largest concurrency it prints no more than) or is the maximum model length or the
MTP depth, and reported beside the launch's own where they differ.

The engine and its program are command_engine's, the argv read into the profile's slots command_reading's, the
model command_model's; this module says which slots are parallel, matches the configuration and reads the settings.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field, replace
from typing import Any

from solver.errors import InputError
from solver.launch.command_engine import find_engine, program, run_of
from solver.launch.command_model import model_token, resolve_model
from solver.launch.command_reading import (Reading, Slot, as_read, dashed, flag_kinds, launch_reading, reading,
                                           site_flags, slot_name, slot_of)
from solver.launch.command_role import PoolRole, pool_settings, pool_slots, read_role
from solver.launch.engine_flags import flag_int
from solver.launch.command_text import CommandText, parse_argv, read_text
from solver.launch.emit import LaunchInputs, emit_launch
from solver.specs.framework import FrameworkProfile
from solver.specs.hardware import Hardware
from solver.specs.knobs import DERIVED_NAMES, FOLLOWS, KNOBS, SETTINGS
from solver.specs.launch_spec import PLAN_MEMORY_NAMES, LaunchArg
from solver.specs.limits import MAX_CARDS
from solver.specs.model import ModelSpec
from solver.specs.parallel import ParallelConfig

# what an argument reads that is the workload's or the node's, not the parallel configuration's: an argument
# reading one of them is a setting (read back or reported), never a parallel flag the configuration is matched on
NOT_PARALLEL = frozenset({"batch", "replica_batch", "max_model_len", "token_budget", "graph_cap", "memory_fraction",
                          *PLAN_MEMORY_NAMES, "mtp", "ep_kernels", "prefill_role", "role",
                          "model_path", "head_addr", "node_addr", "hosts", "weight_dtype_set", "kv_dtype_set",
                          "weight_dtype", "kv_dtype", "moe_weight_dtype", "remote_code", "past_context", "node_rank",
                          "pp_uneven", "pp_layer_partition"})
# the most flag values whose products are tried as world sizes (2^n subsets)
MAX_WORLD_FACTORS = 8


def _reads(arg: LaunchArg) -> set[str]:
    from solver.launch.emit import _reads as reads

    return reads(arg)


def spells_depth(arg: LaunchArg) -> bool:
    """The argument prints the MTP depth itself, which a command's value reads back as (SGLang's
    --speculative-num-draft-tokens, mtp + 1, does not)."""
    return arg.value == "mtp"


def config_names(fw: FrameworkProfile) -> set[str]:
    """The names whose value is the parallel configuration's: knobs, derived sizes, settings, the profile's group
    products and the world."""
    return {*KNOBS, *DERIVED_NAMES, *SETTINGS, "world", *(name for name, _ in fw.group_products)}


def is_parallel(fw: FrameworkProfile, arg: LaunchArg) -> bool:
    """The argument spells the parallel configuration: it reads a knob, a derived size or the world, no workload
    figure, and is no site flag (a port printed only for some configurations still reads the world in its when)."""
    reads = _reads(arg)
    return bool(reads & config_names(fw)) and not reads & NOT_PARALLEL and arg.flag not in site_flags(fw)


def world_candidates(fw: FrameworkProfile, user: Reading, hw: Hardware) -> list[int]:
    """The world sizes the command's parallel numbers allow: the products of the integer values of its parallel
    flags (every subset: a flag may be a factor of the world, the world itself, or a group inside it), within the
    cards any hardware describes."""
    # a size, not a constant (a port): the arguments whose value reads the configuration
    slots = {slot_of(fw, a) for a in (fw.launch.args if fw.launch else ()) if is_parallel(fw, a)
             and a.value_expr is not None and a.value_expr.names & config_names(fw)}
    numbers = sorted(int(v) for s, v in user.values.items() if s in slots and v.isdigit() and int(v) > 1)
    numbers = numbers[:MAX_WORLD_FACTORS]
    worlds = {math.prod(c) for n in range(len(numbers) + 1) for c in itertools.combinations(numbers, n)}
    return sorted(w for w in worlds if w <= MAX_CARDS)


@dataclass
class CommandReading:
    """A command read back: the engine, model and world, the parallel_config that prints it (and any other that
    prints the same), the workload figures it sets, and what was not read."""

    framework: str
    model: str
    world: int
    parallel_config: dict[str, int]
    also: list[dict[str, int]]            # other configurations whose launch prints the same parallel flags
    concurrency_cap: int | None           # the largest concurrency the command's batch caps print
    max_model_len: int | None
    mtp: int | None
    read: dict[str, str]                  # the parallel flags matched, as given
    not_read: list[str]                   # flags and variables the profile never prints
    site: dict[str, str] = field(default_factory=dict)  # the site's flags (launch.site_flags), as given
    notes: list[str] = field(default_factory=list)
    given: dict[Slot, str] = field(default_factory=dict, repr=False)  # every slot the command sets
    # a disaggregated pool's worker: the role read back (command_role), and the pool's flags the command gives
    # (its role and KV transfer: launch.disagg), read where the role is, else named as not read
    role: PoolRole | None = None
    pool_flags: list[str] = field(default_factory=list)
    # class C violations of the workload checked (check_command.long_request_findings): what the engine will not serve
    violations: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"engine": self.framework, "model": self.model, "world_size": self.world,
                               "parallel_config": self.parallel_config, "read": self.read}
        if self.role is not None and self.role.role is not None:
            out["pool_role"] = self.role.role
        elif self.pool_flags:
            out["pool_flags_not_read"] = self.pool_flags
        if self.also:
            out["also_printed_by"] = self.also
        for key in ("concurrency_cap", "max_model_len", "mtp"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        if self.site:
            out["site_settings"] = self.site
        if self.not_read:
            out["not_read"] = self.not_read
        if self.notes:
            out["notes"] = self.notes
        return out


def _cap(fw: FrameworkProfile, model: ModelSpec, hw: Hardware, pc, world: int, arg: LaunchArg, given: int,
         mtp: int) -> int | None:
    """The largest concurrency whose value of `arg` (a function of the batch and the configuration) is at most
    `given`: what a per-engine or per-rank cap admits over the deployment. None where the argument reads more."""
    from solver.specs.limits import MAX_CONCURRENCY
    from solver.specs.rule_env import device_facts, model_env

    def env_at(batch: int) -> dict:
        env = dict(model_env(pc.settings(), model, **device_facts(hw), world=world, batch=batch, mtp=mtp))
        env["replica_batch"] = fw.replica_batch(env)
        return env

    def value(batch: int) -> float:
        return float(arg.value_expr.evaluate(env_at(batch)))  # type: ignore[union-attr]

    try:  # a flag spelled by several arguments (each under its own `when`): the one this configuration prints
        if not arg.when_expr.evaluate(env_at(1)):
            return None
    except InputError:  # a condition over the launch's own figures (no value here): not a cap it can judge
        return None
    if value(1) > given:
        return None
    lo, hi = 1, MAX_CONCURRENCY
    while lo < hi:  # the values are non-decreasing in the batch
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if value(mid) <= given else (lo, mid - 1)
    return lo


def _absent_bound(fw: FrameworkProfile, model: ModelSpec, hw: Hardware, pc, world: int, args: list[LaunchArg],
                  parallel: set, given: dict, cap: int, mtp: int) -> tuple[int, str]:
    """The largest concurrency up to `cap` at which the launch would leave out every batch-dependent cap the
    command leaves out: the engine runs its default there, which the launch prints the flag to override (SGLang's
    PP microbatch cap, max_running_requests // pp_size unset: 6 requests over PP4 without
    --pp-max-micro-batch-size run 4). `cap` where no such flag is left out; with the flags' names."""
    from solver.specs.rule_env import device_facts, model_env

    absent = [a for a in args if (slot := slot_of(fw, a)) is not None and slot not in parallel
              and slot not in given and a.value_expr is not None and a.when_expr.names & {"batch", "replica_batch"}
              and _reads(a) & {"batch", "replica_batch"} and not _reads(a) & (NOT_PARALLEL - {"batch", "replica_batch"})
              and not any(slot_of(fw, b) == slot and b is not a for b in args)]
    if not absent:
        return cap, ""

    def printed(batch: int) -> bool:
        env = dict(model_env(pc.settings(), model, **device_facts(hw), world=world, batch=batch, mtp=mtp))
        env["replica_batch"] = fw.replica_batch(env)
        return any(a.when_expr.evaluate(env) for a in absent)

    bound = next((b for b in range(cap, 0, -1) if not printed(b)), cap)
    return bound, ", ".join(sorted({slot_name(slot_of(fw, a), fw) for a in absent}))


def _speculative_cap(fw: FrameworkProfile, given: dict[Slot, str]) -> tuple[dict[Slot, str], str] | None:
    """({the batch-cap flag's slot: the cap the engine sets}, a note) where the command names a speculative
    method its profile says resets the cap (speculative_running_cap) and gives no cap of its own; else None."""
    from solver.launch.draft_method import method_slot

    rule = fw.speculative_running_cap
    slot = method_slot(fw)
    if rule is None or slot is None or slot not in given or ("flag", rule.flag) in given:
        return None
    method = given[slot]
    exempt = fw.draft_methods.among(method, rule.except_methods) if fw.draft_methods is not None else \
        method in rule.except_methods
    if exempt:
        return None
    return ({("flag", rule.flag): str(rule.value)},
            f"{rule.flag}: not given; with {slot_name(slot, fw)} {method} {fw.name} sets it to {rule.value} "
            f"({fw.name}'s profile: speculative_running_cap): read as {rule.value} requests at once, the rest wait for a slot")


def _default_cap(fw: FrameworkProfile, model: ModelSpec, hw: Hardware, pc, world: int, args, values: dict,
                 concurrency: int | None, mtp: int) -> tuple[int, dict[Slot, str], str] | None:
    """(the concurrency the engine's default cap admits, {the cap flag's slot: the cap the engine sets}, a note)
    where the command leaves the profile's default_running_cap flag out and the concurrency asked exceeds what that
    default runs; else None."""
    rule, value = fw.default_running_cap, fw.running_cap_on(hw)
    if rule is None or value is None or concurrency is None or ("flag", rule.flag) in values:
        return None
    caps = [c for arg in args if slot_of(fw, arg) == ("flag", rule.flag) and arg.value_expr is not None
            for c in [_cap(fw, model, hw, pc, world, arg, value, mtp)] if c is not None]
    if not caps or concurrency <= min(caps):
        return None
    return min(caps), {("flag", rule.flag): str(value)}, (
        f"{rule.flag}: not given; {fw.name} sets it to {value:,} on {hw.name} ({fw.name}'s profile: "
        f"default_running_cap): read as {min(caps):,} requests at once, the rest wait for a slot")


def read_command(text: str, hw: Hardware, cards: int | None = None, framework: str | None = None,
                 model: str | None = None, concurrency: int | None = None, max_model_len: int | None = None,
                 mtp: int | None = None) -> CommandReading:
    """The command `text` read back (module docstring); InputError naming what cannot be read."""
    from solver.launch.config_search import admitted
    from solver.launch.engine_flags import argv_problems, engine_flags
    from solver.specs.scenario import Scenario

    cmd: CommandText = read_text(text)
    fw, picked = find_engine(cmd.argv, hw, framework)
    run = run_of(cmd.argv, fw)
    if run is None:  # find_engine found one of its programs
        raise InputError("--command", f"{' '.join(cmd.argv[:3])}: not {fw.name}'s program")
    start = run.start
    after = cmd.argv[start + len(run.program):]  # the engine's arguments
    if fw.launch is not None and fw.launch.underscore_flags:  # `--max_num_seqs=8` is `--max-num-seqs=8` there
        after = [dashed(t) for t in after]
    record = engine_flags().get(fw.name)
    if record:  # checked as the recorded program's (another program of the profile takes the same flags)
        problems = argv_problems(fw.name, list(record["program"]) + after)
        if problems:
            raise InputError("--command", "; ".join(problems))  # one line: the CLI prints errors on one
    switches, valued = flag_kinds(fw)
    user = reading(fw, parse_argv(after, switches, valued), cmd.env, cmd.files)
    args = fw.launch.args if fw.launch else []
    # a wrapper's arguments before the program (mpirun's -n ahead of trtllm-serve) are not read from the command,
    # so not compared: the engine's own flags spell the same configuration
    prog = program(fw)
    own = next((i for i, a in enumerate(args) if prog and a.text == prog[0] and a.flag is None), 0)
    parallel = {slot_of(fw, a) for a in args[own:] if is_parallel(fw, a)} - {None}
    _documents_needed(fw, user, parallel)
    notes: list[str] = ([picked] if picked else []) + user.respelt
    name, spec = resolve_model(model_token(fw, user, run, notes), model)
    pooled = pool_slots(fw)  # a pool worker's role and KV transfer: read as its role below, never "not printed"
    printed = {slot_of(fw, a) for a in args} | {("flag", d.flag) for d in fw.launch.documents.values() if d.flag} \
        | pooled
    role = read_role(fw, user)
    phase = role.role if role is not None else None
    if role is not None and phase is None:
        notes.append(f"{role.said}: {role.why}: read as one aggregated server")
    site = {s[1]: user.values[s] for s in user.values if s[0] == "flag" and s[1] in site_flags(fw)}
    model_flag = fw.launch.model_flag if fw.launch else None
    not_read = [slot_name(s, fw) for s in user.values if s not in printed
                and not (s[0] == "flag" and (s[1] in site or s[1] == model_flag))]
    notes += [f"{u} (not read)" for u in user.unread.values()]
    if not_read and not record:
        notes.append(f"{fw.name}'s parser is not recorded here (solver/launch/engine_flags.yaml): a flag it does "
                     "not take is listed as not read, not refused")
    if cmd.argv[:start] or cmd.shell:
        shell = " ".join(cmd.argv[:start]) + (" ... " if cmd.argv[:start] else "... ") + " ".join(cmd.shell)
        notes.append(f"{shell.strip()}: the shell's or a wrapper's, not {fw.name}'s: not read")
    if cmd.more_commands:
        notes.append(f"read the first command; the {cmd.more_commands} after it (other nodes) are not read")
    worlds = [cards] if cards else world_candidates(fw, user, hw)
    mtp_read = mtp or 0
    matches: list[tuple[int, dict[str, int]]] = []
    refused: list[str] = []  # why the launch of a configuration that prints the flags is refused
    unset: set[Slot] = set()  # document keys a configuration prints that the command's document leaves out
    left_out: set[Slot] = set()  # flags a configuration prints beside the command's own that the command leaves out
    as_read = fw.for_role(phase)  # its rules read the role the command names (prefill_role)
    for world in worlds:
        scenario = Scenario(concurrency=concurrency or world, mtp=mtp_read)
        batch = concurrency or world
        inputs = LaunchInputs(batch=batch, max_model_len=max_model_len or 2, mtp=mtp_read)
        for cfg in admitted(spec, hw, as_read, world, scenario, batch):
            pc = ParallelConfig(world_size=world, **cfg)
            # the parallel flags first, without the memory shares (a memory estimate per configuration); the
            # launch in full only for a configuration that prints them, as its refusals still apply
            try:
                printed_by = launch_reading(fw, emit_launch(as_read, spec, hw, pc, replace(inputs, with_memory=False)))
            except InputError:
                continue
            # a flag given at the engine's own default (`-tp 1`) is the flag left out, which is how the launch prints it
            default = _defaults(fw, spec, hw, pc, world, batch, mtp_read)
            differ = [s for s in parallel if printed_by.values.get(s, default.get(s)) != user.values.get(s, default.get(s))]
            if differ:
                # a key the document leaves out is the engine's default, which the profile does not record
                if all(s[0] == "doc" and s not in user.values and s not in default for s in differ):
                    unset.update(differ)
                # a switch the configuration needs beside the flags given (SGLang's --enable-eplb with redundant
                # experts): named, not a bare "no configuration"
                elif all(s[0] == "flag" and s not in user.values for s in differ):
                    left_out.update(differ)
                continue
            try:  # as its pool's worker where the command names its role: the transfer's rules for that role apply
                emit_launch(fw, spec, hw, pc, inputs, phase, pool_stand_in(fw, phase, pc))
            except InputError as exc:
                refused.append(f"world size {world}: {exc.problem}")
                continue
            matches.append((world, cfg))
        if matches:  # the smallest world size the flags fit: a larger one is a factor more, said below
            break
    given = {slot_name(s, fw): user.values[s] for s in sorted(parallel, key=str) if s in user.values}
    if not matches:
        shown = ", ".join(f"{k} {v}" for k, v in given.items()) or "no parallel flag"
        at = f"{cards} cards" if cards else f"any world size its numbers allow ({', '.join(map(str, worlds))})"
        why = f"; the launch that prints them is refused ({refused[0]})" if refused else ""
        if unset and not refused:
            keys = ", ".join(sorted(slot_name(s, fw) for s in unset))
            why = (f"; the command leaves {keys} out, which {fw.name}'s launch sets for the configurations these "
                   "flags fit, and the profile records no default for them: write them")
        elif left_out and not refused:
            keys = ", ".join(sorted(slot_name(s, fw) for s in left_out))
            why = f"; the command leaves {keys} out, which {fw.name}'s launch sets for the configurations these flags fit"
        if not why:  # the configuration the flags spell, where one does, and the rule it breaks
            broken = _rule_broken(fw, spec, hw, worlds, [a for a in args[own:] if is_parallel(fw, a)], user,
                                  concurrency or 1, mtp_read)
            why = f"; the configuration they spell {broken}" if broken else ""
        raise InputError("--command", f"{shown}: no configuration {fw.name} admits for {spec.name} on {hw.name} at "
                                      f"{at} prints these parallel flags{why}")
    matches = _distinct(matches)
    world, cfg = matches[0]
    pc = ParallelConfig(world_size=world, **cfg)
    others = [c for w, c in matches[1:] if w == world]
    larger = [w for w in worlds if w > world]
    if not cards and larger:
        notes.append(f"read at {world} ranks, the smallest world size these flags are printed at (not tried: "
                     f"{', '.join(map(str, larger))}); give --cards for another")
    if others:
        notes.append(f"{len(others)} other configuration(s) print the same parallel flags; read as the first")
    # the settings the profile derives from the workload: read back where it says what they mean
    cap = read_len = read_mtp = None
    capped = _speculative_cap(fw, user.values)
    if capped is not None:
        notes.append(capped[1])
    values = {**user.values, **(capped[0] if capped else {})}
    for arg in args:
        slot = slot_of(fw, arg)
        if slot is None or slot in parallel or slot not in values or arg.value_expr is None:
            continue
        reads = _reads(arg)
        raw = values[slot]
        if slot[0] == "doc" and spells_depth(arg) and not (raw.isdigit() and int(raw) >= 1):
            # argparse types a flag's depth; a document's is a JSON / YAML number the engine validates at start
            # (vLLM 0.34.0 config/speculative.py:455: int, gt=0), and the launch writes one only with MTP on
            raise InputError("--command", f"{slot_name(slot, fw)}: {raw} is not a speculative depth (a whole number "
                                          "of draft tokens, 1 or more); give the depth the engine runs, or leave "
                                          "speculation out")
        if slot[0] == "flag":  # an int its parser reads in its own spelling (vLLM's --max-model-len 32k): the number
            spelt = flag_int(fw.name, slot[1], raw)
            raw = str(spelt) if spelt is not None and spelt >= 0 else raw  # -1 / auto: the model's own length
        if not raw.replace(".", "", 1).isdigit():
            continue
        if arg.value_expr.names == {"max_model_len"}:
            read_len = int(float(raw))
        elif spells_depth(arg):
            read_mtp = int(float(raw))
        elif reads & {"batch", "replica_batch"} and not reads & (NOT_PARALLEL - {"batch", "replica_batch"}):
            given_cap = _cap(fw, spec, hw, pc, world, arg, int(float(raw)), mtp_read)
            # several caps (SGLang's running requests and its PP microbatch's): the smallest binds
            cap = min(c for c in (cap, given_cap) if c is not None) if given_cap is not None else cap
    defaulted = _default_cap(fw, spec, hw, pc, world, args, values, concurrency, mtp_read) if cap is None else None
    if defaulted is not None:
        cap, set_by_engine, note = defaulted
        notes.append(note)
        values.update(set_by_engine)
    if cap is not None:
        bound, flags = _absent_bound(fw, spec, hw, pc, world, args, parallel, values, cap, mtp_read)
        if bound < cap:
            notes.append(f"read as {bound:,} requests at once, not {cap:,}: the command leaves out {flags}, which "
                         f"{fw.name}'s launch prints for {cap:,} requests; the engine's default runs {bound:,}")
            cap = bound
    refusal = past_context_refusal(fw, spec, user.values, read_len)
    if refusal:  # the engine stops at start, as its parser stops at a flag it does not take (above)
        raise InputError("--command", refusal)
    order = [*KNOBS, *SETTINGS]
    # its role and KV transfer as written: a document's keys, not the flag that carries them
    pool_flags = [slot_name(s, fw) for s in user.values if s in pool_settings(fw)]
    return CommandReading(fw.name, name, world, {k: cfg[k] for k in order}, [{k: c[k] for k in order} for c in others],
                          cap, read_len, read_mtp, given, not_read, site, notes, dict(user.values), role, pool_flags)


def past_context_refusal(fw: FrameworkProfile, spec: ModelSpec, given: dict[Slot, str],
                         model_len: int | None) -> str | None:
    """Why the engine refuses to start a command whose maximum model length exceeds the context it derives from
    the model's config (specs.context.derived_context) where the command gives none of the switches the profile's
    launch sets for such a length (its args with `when: past_context`, each with the source that says the engine
    raises without it); None where it starts, or where the profile names no such switch (what that engine does
    is not recorded here: the context note says so)."""
    from solver.specs.context import derived_context
    from solver.specs.notes import derived_said

    limit = derived_context(spec, fw.max_context)
    if model_len is None or limit is None or model_len <= limit or fw.launch is None:
        return None
    switches = [a for a in fw.launch.args if "past_context" in a.when_expr.names]
    if not switches or any(_switched_on(a, given.get(slot_of(fw, a))) for a in switches):
        return None
    spelt = ", ".join(f"{a.env}={a.value}" if a.env else f"{a.flag}" + (f" {a.value}" if a.value else "")
                      for a in switches)
    # a switch given a value the engine reads as off (VLLM_ALLOW_LONG_MAX_MODEL_LEN=0), or one it does not parse
    # (SGLang's =2: it warns and keeps the default), is named as written with the values it takes
    off = [_switch_off(fw, a, given[s]) for a in switches if (s := slot_of(fw, a)) in given]
    sets = f"sets {'; '.join(off)}" if off else f"sets no {spelt}"
    sources = "; ".join(dict.fromkeys(a.source for a in switches if a.source))
    return (f"{slot_name(slot_of(fw, model_len_arg(fw)), fw)} {model_len:,} exceeds {spec.name}'s "
            f"{spec.context_field} {spec.max_position_embeddings:,}{derived_said(spec, limit, fw)} and the command "
            f"{sets}: {fw.name} refuses to start ({sources}); set {spelt}, or a length within {limit:,}")


def _switch_off(fw: FrameworkProfile, arg: LaunchArg, value: str) -> str:
    """'VAR=value, which ENGINE reads as off (on: ...)', or, for a value its strict parse (env_off) takes neither
    way, that the engine does not parse it and keeps its default, off."""
    on = ", ".join(arg.env_on or ())
    if arg.env_off is not None and arg.env_parsed(value) not in arg.env_off:
        return (f"{arg.env}={value}, which {fw.name} does not parse (it takes {on} for on, "
                f"{', '.join(arg.env_off)} for off, in any case) and so keeps its default, off")
    return f"{arg.env}={value}, which {fw.name} reads as off (on: {on})"


def _switched_on(arg: LaunchArg, value: str | None) -> bool:
    """Whether a command's value for a past-context switch turns it on: given at all, and for an env switch with
    env_on, one of the values its engine parses as true (vLLM reads "1" / "true", so "=0" leaves it off)."""
    if value is None:
        return False
    return arg.env_on is None or arg.env_parsed(value) in arg.env_on


def model_len_arg(fw: FrameworkProfile) -> LaunchArg:
    """The launch argument that prints the maximum model length (its value reads max_model_len alone)."""
    return next(a for a in fw.launch.args if a.value_expr is not None and a.value_expr.names == {"max_model_len"})


def pool_stand_in(fw: FrameworkProfile, role: str | None, pc: ParallelConfig) -> dict[str, ParallelConfig] | None:
    """The pools a `role` worker's launch is emitted with: where its KV transfer names the other pool's sizes
    (vllm-ascend's kv_connector_extra_config), this pool's config stands in for the other's, which its command
    alone does not spell: the keys that read the other pool are compared with nothing (check_command)."""
    from solver.specs.launch_spec import DISAGG_ROLES

    block = fw.launch.disagg if fw.launch else None
    if role is None or block is None or not block.pool_reads():
        return None
    return {r: pc for r in DISAGG_ROLES}


def _defaults(fw: FrameworkProfile, model: ModelSpec, hw: Hardware, pc: ParallelConfig, world: int, batch: int,
              mtp: int) -> dict[Slot, str]:
    """The engine's value of each argument the profile records a default for (LaunchArg.default), at this
    configuration, as a command's slot holds it: what a command leaving the argument out runs."""
    from solver.specs.rule_env import device_facts, model_env

    env = dict(model_env(pc.settings(), model, **device_facts(hw), world=world, batch=batch, mtp=mtp))
    out: dict[Slot, str] = {}
    for a in (fw.launch.args if fw.launch else ()):
        try:
            out.update(_slot_default(fw, a, env))
        except InputError:  # a default over the launch's own figures: not the configuration's to say
            continue
    return out


def _slot_default(fw: FrameworkProfile, arg: LaunchArg, env: dict[str, Any]) -> dict[Slot, str]:
    """{arg's slot: the engine's value where a command leaves it out, at `env`}; empty where none is recorded."""
    slot = slot_of(fw, arg)
    return {slot: as_read(arg.default_value(env))} if arg.default is not None and slot is not None else {}


# the most configurations a refusal searches for the rule a command's flags break (one 8-rank MoE world's whole
# space under TensorRT-LLM's fixed knobs, about 1 s here): past it the refusal names no rule rather than keep the
# user waiting. An engine with every knob free is past it at 8 ranks (vLLM, DeepSeek-V3.2 on 8 x mi355x: 4^9 =
# 262,144), so its refusals name none (C.dcp_dsa_not_on_rocm's command among them)
EXPLAIN_CONFIGS = 4096


def _rule_broken(fw: FrameworkProfile, model: ModelSpec, hw: Hardware, worlds: list[int], args: list[LaunchArg],
                 user: Reading, batch: int, mtp: int) -> str | None:
    """What breaks in the first configuration of the space (its knobs' domains, no rule applied) whose parallel
    arguments print what the command gives: the model's rules (model_problems) or the engine's hard rules, as the
    launch refuses them (TensorRT-LLM's attention DP on a dense model: `breaks [C.attention_dp_moe_only]: ...`).
    None where no configuration prints them (a size outside every domain) or the one that does breaks none."""
    from solver.space.domains import build_space
    from solver.specs.model_rules import model_problems
    from solver.specs.parallel import absent_knobs
    from solver.specs.rule_env import device_facts, model_facts, rule_env
    from solver.specs.scenario import Scenario

    slots = {slot_of(fw, a) for a in args}
    facts = dict(device_facts(hw), batch=batch, mtp=mtp, **model_facts(model))
    fixed = set(fw.fixed_knobs) | set(absent_knobs(model))
    for world in worlds:
        domains = build_space(model, hw, fw, world, Scenario(concurrency=batch, mtp=mtp),
                              allow_cross_node=True).domains
        names = list(domains)
        ranges = [(1,) if k in fixed else domains[k] for k in names]
        if math.prod(len(r) for r in ranges) > EXPLAIN_CONFIGS:
            continue
        for values in itertools.product(*ranges):
            cfg = dict(zip(names, values))
            try:
                env = dict(rule_env(cfg, world=world, **facts))
                printed: dict[Slot, str] = {}
                default: dict[Slot, str] = {}
                for a in args:
                    default.update(_slot_default(fw, a, env))
                    slot = slot_of(fw, a)
                    if slot is not None and a.value_expr is not None and a.when_expr.evaluate(env):
                        printed[slot] = as_read(a.value_expr.evaluate(env))
            except InputError:  # a world this configuration does not divide
                continue
            if any(printed.get(s, default.get(s)) != user.values.get(s, default.get(s)) for s in slots):
                continue
            pc = ParallelConfig(world_size=world, **cfg)
            bad = model_problems(model, pc, fw)
            if bad:
                return f"is not runnable on {model.name}: {bad[0]}"
            rule = next(iter(fw.violated(env, severity="error")), None)
            if rule is not None:
                return f"breaks [{rule.id}]: {rule.message}"
    return None


def _documents_needed(fw: FrameworkProfile, user: Reading, parallel: set[Slot]) -> None:
    """Refuse a command that names a document holding parallel keys the launch sets but whose text is not at hand,
    or that gives none where the launch always sets a parallel key the profile records no default for (without
    the document the keys are the engine's defaults). One line naming the file and its keys."""
    spec = fw.launch
    for name, d in (spec.documents.items() if spec else ()):
        keys = [a.key for a in spec.args if a.doc == name and ("doc", name, a.key or "") in parallel]
        if name not in user.unread:  # none given: the keys left out are the engine's defaults where recorded
            keys = [a.key for a in spec.args if a.doc == name and a.key in keys and a.default is None]
        always = [a.key for a in spec.args if a.doc == name and a.when == "true" and a.key in keys]
        if name in user.documents or not keys or (name not in user.unread and (not always or d.when != "true")):
            continue
        what = user.unread.get(name) or f"no {d.flag or d.file} given"
        where = f"write it on disk or in the text before the command (cat > {d.file} <<'EOF' ... EOF)" if d.file \
            else f"give {d.flag}"
        # named but not at hand, its text decides even the keys with a recorded default; not given, only those
        # without one are asked for
        why = "its text decides them" if name in user.unread else "no default recorded for them"
        raise InputError("--command", f"{what}: it holds {', '.join(k for k in keys if k)}, the parallel keys "
                                      f"{fw.name}'s launch sets there ({why}); {where}")


def _distinct(matches: list[tuple[int, dict[str, int]]]) -> list[tuple[int, dict[str, int]]]:
    """The matches less those that differ from another only in a knob set to the value it follows (knobs.FOLLOWS:
    o_proj TP equal to attention TP is the same split as 1, the spelling solve writes)."""
    def canonical(cfg: dict[str, int]) -> dict[str, int]:
        return {**cfg, **{k: 1 for k, base in FOLLOWS.items() if cfg[k] == cfg[base]}}

    keys = [(w, tuple(sorted(c.items()))) for w, c in matches]
    out = []
    for w, c in matches:
        same = canonical(c)
        if same != c and (w, tuple(sorted(same.items()))) in keys:
            continue
        out.append((w, c))
    return out
