"""`check --command`: the command read back (read_command), the workload it implies completed by the user's flags,
as the deployment the review of a file gets (one_config.check_deployment, which the caller runs), and the settings
the command gives that differ from what the launch of the configuration prints at that workload, said beside it.

A disaggregated pool's worker (its role read back: command_role) is checked as that phase's worker, as `solve
--serving disagg` plans each pool (plan.disagg_pools.phase_scenario): a decode worker as decode steps of its
running requests at ISL + OSL/2, a prefill worker as one step of the prompts it takes at once, both with the memory
of that phase; its settings are compared with its pool's launch (pool_settings_notes). The deployment's TTFT (the
prefill queue, the KV transfer, the first decode step) needs the other pool's plan, which one command does not
give: a note says so."""
from __future__ import annotations

from typing import Any

from solver.errors import InputError
from solver.launch.command_reading import launch_reading, slot_name, slot_of
from solver.launch.command_layout import command_offload, command_split, command_towers, unread_tower_flags
from solver.launch.draft_method import command_draft, lookup_depth, lookup_verify_tokens, method_slot
from solver.launch.read_command import CommandReading, model_len_arg, read_command, spells_depth
from solver.specs.dtypes import number_format


def mtp_unread(fw: Any, r: CommandReading) -> str | None:
    """Where the command turns MTP on without its depth: the arguments it gives that the launch prints only with MTP
    on (a condition reading `mtp`) while it leaves out the one that spells the depth, as the command writes them;
    None where it sets the depth or nothing of MTP. The engine then picks a depth of its own or refuses the command
    (SGLang 0.5.23 arg_groups/speculative_hook.py:1159-1174 chooses steps, top-k and draft tokens by architecture;
    vLLM 0.34.0 config/speculative.py:1653-1658 raises without num_speculative_tokens), so no depth is read."""
    if r.mtp is not None or fw.launch is None:
        return None
    on = [a for a in fw.launch.args if "mtp" in a.when_expr.names and not spells_depth(a)
          and slot_of(fw, a) in r.given]
    depth = [slot_name(s, fw) for a in fw.launch.args if spells_depth(a) and (s := slot_of(fw, a)) is not None]
    if not on or not depth:
        return None
    given = ", ".join(f"{slot_name(s, fw)} {r.given[s]}" for s in dict.fromkeys(slot_of(fw, a) for a in on))
    return f"the command turns MTP on ({given}) but sets no depth ({depth[0]})"


def _settings_notes(r: CommandReading, hardware: str, isl: int, osl: int, concurrency: int, mtp: int,
                    formats: dict[str, str | None], memory: Any = None, skip: frozenset = frozenset()) -> list[str]:
    """One line per setting (a non-parallel argument of the profile) the command gives otherwise than the launch
    of its configuration at this workload and number formats (`formats`: LaunchInputs' weight_dtype,
    moe_weight_dtype, kv_dtype, as the check estimates them), or leaves out where the launch sets it. A pool's
    worker is compared with its pool's launch (candidates.pool_launch): its role's arguments, a prefill worker's
    budget for the prompts of its step, and `memory`, the phase estimate's memory of one rank, as the plan's."""
    from solver.launch.command_reading import all_args, site_flags
    from solver.estimate.request_state import held_per_replica
    from solver.launch.emit import LaunchInputs, emit_launch, model_len
    from solver.launch.read_command import is_parallel, pool_stand_in
    from solver.specs.launch_spec import POOL_NAMES, pool_role
    from solver.specs.framework import load_framework
    from solver.specs.hardware_catalog import load_hardware
    from solver.specs.model_catalog import load_model
    from solver.specs.parallel import ParallelConfig

    fw, hw, spec = load_framework(r.framework), load_hardware(hardware), load_model(r.model)
    pc = ParallelConfig(world_size=r.world, **r.parallel_config)
    phase = r.role.role if r.role is not None else None
    # a prefill worker's step: its busiest replica's prompts, each ISL tokens (candidates._prefill_tokens)
    tokens = held_per_replica(concurrency, pc) * isl if phase == "prefill" else 0
    try:
        launch = emit_launch(fw, spec, hw, pc, LaunchInputs(batch=concurrency, mtp=mtp,
                                                            max_model_len=model_len("serving", isl + osl),
                                                            memory=memory, prefill_tokens=tokens, **formats),
                             phase, pool_stand_in(fw, phase, pc))
    except InputError as exc:
        return [f"the launch of this configuration at this workload: {exc}"]
    printed = launch_reading(fw, launch).values
    out = []
    args = all_args(fw) if phase is not None else (fw.launch.args if fw.launch else ())
    other = {n for n in POOL_NAMES if pool_role(n) != phase}  # the other pool's sizes: its command's, not this one's
    # a slot's spellings are every map's on it, as formats_spelled reads them (vLLM's --kv-cache-dtype has one map
    # for a DSA model, a wider one else: a value the wider one spells is read, so it is not "not read")
    spellings: dict[Any, set[str]] = {}
    for arg in args:
        if arg.map:
            spellings.setdefault(slot_of(fw, arg), set()).update(str(v) for v in arg.map.values())
    for arg in args:
        slot = slot_of(fw, arg)
        reads_other = arg.value_expr is not None and arg.value_expr.names & other
        if slot is None or slot in skip or is_parallel(fw, arg) or reads_other \
                or slot not in printed and slot not in r.given \
                or slot[0] == "flag" and slot[1] in site_flags(fw) \
                or "{model_path}" in (arg.text or ""):  # the site's, compared with nothing; the model, read
            continue
        mine, plan = r.given.get(slot), printed.get(slot)
        # a value outside the profile's spellings of a format (ATOM's --kv_cache_dtype: bf16 / fp8, engines.md) is
        # not the engine's default: the estimate cannot read it, so it says which format it priced instead
        spelled = sorted(spellings.get(slot, ()))
        unspelled = mine is not None and spelled and str(mine) not in spelled
        line = f"{slot_name(slot, fw)}: " + (f"not given; the launch sets {plan}" if mine is None else
                                             f"{mine}, none of the values {fw.name}'s profile spells "
                                             f"({', '.join(spelled)}): not read, the estimate prices the engine's "
                                             "default" if unspelled else
                                             f"{mine}, the launch's {plan}" if plan is not None else
                                             f"{mine}, which the launch leaves at the engine's default")
        if mine != plan and line not in out:
            out.append(line)
    return out


def formats_spelled(fw: Any, r: CommandReading, quantized: bool) -> dict[str, tuple[str, str]]:
    """The number formats the command itself sets, read back through the profile's own spelling of them (the launch
    args whose text is `{weight_dtype}` or `{kv_dtype}`, their `map` inverted): vLLM's `--kv-cache-dtype fp8`, SGLang's
    `fp8_e4m3`, TRT-LLM's kv_cache_config.dtype, a `--quantization fp8` that quantizes a 16-bit checkpoint at load.
    A 16-bit value the engine takes as its default keyword (`auto`: the model dtype, or a checkpoint's own FP8 KV
    scheme) is not read; one naming the format itself (`bfloat16`) is, as it overrides that scheme. On a
    quantized checkpoint (`quantized`) the weights are the checkpoint's, which no flag converts (emit's
    _prequantized), so a weight flag is not read. Each: (the format, as the command spells it)."""
    out: dict[str, tuple[str, str]] = {}
    for arg in (fw.launch.args if fw.launch is not None else ()):
        name = (arg.text or "").strip("{}")
        if arg.text != f"{{{name}}}" or name not in ("weight_dtype", "kv_dtype") or name in out or \
                (name == "weight_dtype" and quantized):
            continue
        slot = slot_of(fw, arg)
        given = r.given.get(slot) if slot is not None else None
        if given is None:
            continue
        keys = [k for k, v in (arg.map or {given: given}).items() if str(v) == str(given)]
        if keys and (number_format(keys[0], name).quantized or _names_a_format(str(given))):
            out[name] = (keys[0], str(given))
    return out


def _names_a_format(value: str) -> bool:
    """Whether a command's dtype value names a number format itself (`bfloat16`, `fp8_e4m3`), not an engine's
    keyword for its default (`auto`)."""
    try:
        number_format(value)
    except InputError:
        return False
    return True


def command_deployment(command: str, hardware: str, cards: int | None = None, framework: str | None = None,
                       model: str | None = None, isl: int | None = None, osl: int | None = None,
                       concurrency: int | None = None, mtp: int | None = None, weight_dtype: str | None = None,
                       moe_weight_dtype: str | None = None, kv_dtype: str | None = None,
                       mtp_accept: float | None = None) -> tuple[CommandReading, Any]:
    """(the command read back, the Deployment of its configuration at the workload: what check reviews). The
    number formats are the given ones, else the checkpoint's (a command names a served checkpoint, not its
    format): a note says which were read so."""
    from solver.specs.context import derived_context
    from solver.specs.deployment import Deployment, QuantSpecIn, WorkloadSpec
    from solver.specs.framework import load_framework
    from solver.specs.hardware_catalog import load_hardware
    from solver.specs.model_catalog import load_model

    r = read_command(command, load_hardware(hardware), cards, framework, model, concurrency,
                     None if isl is None or osl is None else isl + osl, mtp)
    concurrency = concurrency or r.concurrency_cap
    if concurrency is None:
        raise InputError("--concurrency", "missing: give it (the command sets no running-request cap to read it from)")
    for flag, value in (("--isl", isl), ("--osl", osl)):
        if value is None:
            bound = f" (the command's maximum model length {r.max_model_len:,} bounds ISL + OSL)" if r.max_model_len \
                else ""
            raise InputError(flag, f"missing: give --isl and --osl{bound}")
    # the command's depth: what it sets, or none where the profile spells the depth and the command leaves it out
    fw, spec = load_framework(r.framework), load_model(r.model)
    spells = any(spells_depth(a) for a in fw.launch.args) if fw.launch else False
    unread = mtp_unread(fw, r)
    # the method the command names, priced as it runs: a lookup drafts with no forward and has no default acceptance
    draft = command_draft(fw, r.given)
    # a lookup whose engine derives the depth from its tree where the command leaves it out: read as it derives it
    derived = lookup_depth(fw, r.given) if unread and draft is not None and draft.kind == "lookup" else None
    if unread and mtp is None and derived is None:
        raise InputError("--mtp", f"missing: {unread}, so the engine picks a depth of its own or refuses it; give "
                                  "--mtp N (the depth it runs) or the depth in the command")
    if derived is not None:
        breadth_flag = fw.draft_methods.lookup_verify.depth_breadth.flag  # type: ignore[union-attr]
        r.not_read = [n for n in r.not_read if n != breadth_flag]  # read: it gives the depth
        r.notes.append(f"{unread.split(' but ')[0]}: the engine derives the depth from the tree, {derived[1]}")  # type: ignore[union-attr]
    own = r.mtp if r.mtp is not None else derived[0] if derived else 0 if spells and not unread else None
    if mtp is not None and own is not None and mtp != own:
        raise InputError("--mtp", f"{mtp}, while the command runs MTP depth {own}"
                                  f"{'' if r.mtp or derived else ' (it sets no draft tokens)'}: leave --mtp out to "
                                  "check the command's depth, or change the command")
    depth = mtp if mtp is not None else r.mtp or (derived[0] if derived else 0)
    skip = frozenset({method_slot(fw)}) if draft is not None else frozenset()
    lookup = draft is not None and draft.kind == "lookup" and depth > 0
    if lookup and mtp_accept is None:
        raise InputError("--mtp-accept", f"missing: {draft.said} {draft.method} drafts by a lookup in the "  # type: ignore[union-attr]
                                         "request's tokens (no draft forward) and accepts as often as the prompts "
                                         "repeat themselves, which no source gives a default for; give --mtp-accept "
                                         "A (the engine's per-position acceptance rate at position 1)")
    if mtp_accept is not None and not depth:
        raise InputError("--mtp-accept", "the command drafts no tokens (no speculative depth): nothing to accept")
    verify = lookup_verify_tokens(fw, r.given) if lookup else None
    if lookup:
        width = (f"a tree of {verify} tokens a sequence ({fw.draft_methods.lookup_verify.flag}" +  # type: ignore[union-attr]
                 ("" if ("flag", fw.draft_methods.lookup_verify.flag) in r.given else ", the engine's default") +  # type: ignore[union-attr]
                 f"), accepting as a chain of depth {depth}" if verify else f"1 + {depth} tokens a sequence")
        r.notes.append(f"{draft.said} {draft.method}: a lookup draft, no draft forward: priced as the target "  # type: ignore[union-attr]
                       f"verifying {width} at --mtp-accept {mtp_accept}, no next-n layers loaded or run")
    phase = r.role.role if r.role is not None else None
    # the formats the command spells are the ones it runs, unless the user gives them
    spelled = formats_spelled(fw, r, spec.quant.method != "none")
    for key, (value, as_given) in spelled.items():
        if {"weight_dtype": weight_dtype, "kv_dtype": kv_dtype}[key] is None:
            r.notes.append(f"--{key.replace('_', '-')} {value}: read from the command's {as_given}")
    weight_dtype = weight_dtype or spelled.get("weight_dtype", (None,))[0]
    kv_dtype = kv_dtype or spelled.get("kv_dtype", (None,))[0]
    # the engine's maximum model length: the command's, else the context it derives from the config
    limit = r.max_model_len or derived_context(spec, fw.max_context)
    if limit is not None:
        flag = slot_name(slot_of(fw, model_len_arg(fw)), fw)
        problem, note = long_request_findings(fw, r.not_read, flag, r.max_model_len is not None, limit, isl, osl,  # type: ignore[arg-type]
                                              phase)
        r.violations += [problem] if problem else []
        r.notes += [note] if note else []
    if r.concurrency_cap is not None and concurrency > r.concurrency_cap:
        r.notes.append(f"concurrency {concurrency:,} exceeds the {r.concurrency_cap:,} requests the command's cap "
                       "runs at once: the rest wait for a slot, and the estimate prices that wait")
    # the launch compared with is sized at the formats the check estimates (an int8 model path's pool, not the
    # checkpoint's own format's); a pool's, at the memory its phase estimate gives (pool_settings_notes, after it)
    if phase is None:
        r.notes += _settings_notes(r, hardware, isl, osl, concurrency, depth,  # type: ignore[arg-type]
                                   {"weight_dtype": weight_dtype, "moe_weight_dtype": moe_weight_dtype,
                                    "kv_dtype": kv_dtype}, skip=skip)
    else:
        r.notes.append(_pool_note(r, phase, concurrency))
    unsaid = [flag for flag, v in (("--weight-dtype", weight_dtype), ("--kv-dtype", kv_dtype)) if v is None]
    if unsaid:
        r.notes.append(f"{' and '.join(unsaid)} not given: read as the checkpoint's own format where the device runs "
                       f"it; give {'them' if len(unsaid) > 1 else 'it'} for a checkpoint stored in another (an int8 or fp8 "
                       "model path)")
    # a pool's worker: its phase's workload, as plan.disagg_pools.phase_scenario plans the pool
    workload = (WorkloadSpec(isl=isl, osl=osl, concurrency=concurrency) if phase is None else
                WorkloadSpec(phase="decode", batch=concurrency, isl=isl, osl=osl) if phase == "decode" else
                WorkloadSpec(phase="prefill", batch=concurrency, seq_len=isl))
    # the towers as the command places them: replicated whole on every rank, or not loaded
    towers = command_towers(fw, r.given, spec)
    flags = {f for tf in fw.tower_flags for f in (tf.flag, tf.off_flag) if f}
    r.not_read = [n for n in r.not_read if n not in flags]  # read: they place the towers (or leave them be)
    if towers is not None:
        mode, said, unloaded = towers
        names = "/".join(e.name for e in spec.encoders)
        if mode == "none":
            r.notes.append(f"{said}: the model's {names} tower is not loaded: priced without it")
        elif unloaded:
            r.notes.append(f"{said}: the model's {'/'.join(unloaded)} tower is not loaded (every modality it serves "
                           "is limited to 0): priced without it" +
                           ("; the rest held whole on every rank" if mode == "whole" else ""))
        else:
            r.notes.append(f"{said}: the model's {names} tower is held whole on every rank (replicated, not split "
                           "over TP)")
    r.notes.extend(unread_tower_flags(fw, r.given, spec))
    # the KV offload flags: read and named, not priced (command_offload says why)
    offload = command_offload(fw, r.given)
    if offload is not None:
        env = [fw.kv_offload.needs_env.name] if fw.kv_offload.needs_env else []
        r.not_read = [n for n in r.not_read if n not in fw.kv_offload.flags + env]
        r.notes.append(offload)
    split = command_split(fw, r.given, r.parallel_config.get("pp_size", 1), spec)
    if split is not None:
        r.notes.append(split[1])
    dep = Deployment(model=r.model, hardware=hardware, framework=r.framework, world_size=r.world,
                     parallel_config=r.parallel_config, mtp=depth, mtp_accept=mtp_accept,
                     towers=towers[0] if towers is not None else "engine",
                     unloaded_towers=list(towers[2]) if towers is not None else [],
                     stage_layers=split[0] if split is not None else None,
                     running_cap=r.concurrency_cap if phase is None and r.concurrency_cap is not None
                     and concurrency > r.concurrency_cap else None,
                     draft="lookup" if lookup else "next_n", verify_tokens=verify,
                     quant=QuantSpecIn(weights=weight_dtype, moe_weights=moe_weight_dtype, kv_cache=kv_dtype),
                     workload=workload)
    return r, dep


def long_request_findings(fw: Any, not_read: list[str], flag: str, given: bool, limit: int, isl: int, osl: int,
                          phase: str | None) -> tuple[str | None, str | None]:
    """(a class C violation, a note) for a workload of ISL + OSL tokens a request under a maximum model length of
    `limit`, `flag`'s value where the command gives it (`given`), else the engine's own: a prompt of `limit` tokens or more leaves no room for an output
    token, and past that the profile's long_request says whether the engine refuses each request (a violation:
    the deployment serves none of this workload) or cuts its output (a note); unread: a note. A prefill pool's
    worker answers each prompt with one token."""
    need = isl + (1 if phase == "prefill" else osl)
    if need <= limit:
        return None, None
    said = (f"{flag} {limit:,}" if given else
             f"the maximum model length {fw.name} takes from the config when the command sets none, {limit:,}")
    # past the config's own context the engine starts only with its long-context switch (past_context_refusal)
    fix = f"set {flag} {need:,}" + ("" if given else ", with the switch it takes past the config's context")
    if isl >= limit:
        return (f"{said} holds no output token after a prompt of ISL = {isl:,} tokens: the engine serves none of "
                f"this workload's requests; {fix}"), None
    total = f"ISL + OSL = {need:,}" if phase != "prefill" else f"ISL + 1 = {need:,}"
    rule = fw.long_request
    if rule is None:
        return None, (f"{total} exceeds {said}: {fw.name}'s profile does not record whether it refuses such a "
                      f"request or cuts its output; {fix}")
    cut_by = [f for f in rule.cut_under if f in not_read]
    if rule.output == "refused" and not cut_by:
        return (f"{said} is below {total}: {fw.name} refuses every such request ({rule.source}), so this "
                f"deployment serves none of this workload; {fix}"), None
    under = f" under {', '.join(cut_by)}" if cut_by else ""
    return None, (f"{total} exceeds {said}: {fw.name}{under} cuts each output to {limit - isl:,} tokens, not the "
                  f"OSL of {osl:,} this check prices; {fix}")


def _pool_note(r: CommandReading, phase: str, concurrency: int) -> str:
    """What a pool worker's check estimates, and what it leaves to the deployment's."""
    said = r.role.said if r.role is not None else phase
    what = (f"one step of {concurrency:,} prompt(s) of ISL tokens (the prompts its cap takes at once), its TTFT that "
            "step alone" if phase == "prefill" else
            f"decode steps of {concurrency:,} running request(s) at ISL + OSL/2, its TPOT the decode pool's")
    return (f"{said}: checked as a {phase} pool's worker, as `solve --serving disagg` plans the pool: {what}; the "
            "deployment's TTFT (the prefill queue, the KV transfer, the first decode step) needs the other pool's "
            "plan, which this command does not give")


def pool_settings_notes(r: CommandReading, dep: Any, hardware: str, isl: int, osl: int, memory: Any) -> list[str]:
    """A pool worker's settings compared with its pool's launch at the checked workload (its pool's model length
    ISL + OSL, as the plan's), sized at `memory` (the phase estimate's memory of one rank, which the plan's pool
    launch reads: candidates.pool_launch)."""
    return _settings_notes(r, hardware, isl, osl, dep.workload.batch, dep.mtp,
                           {"weight_dtype": dep.quant.weights, "moe_weight_dtype": dep.quant.moe_weights,
                            "kv_dtype": dep.quant.kv_cache}, memory)


# the flags check_deployment names where a refusal is about the model, hardware or engine a command gave
GIVEN_AS = {"model": "--model", "hardware": "--hardware", "framework": "--command"}
