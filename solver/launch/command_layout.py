"""How a command places what the engine's defaults place otherwise: the vision / audio towers (replicated whole or
not loaded, by the profile's tower flags) and the pipeline stages' decoder layers (its partition variable, else
the engine's own split of a remainder). Read by check_command.command_deployment into the Deployment it prices."""
from __future__ import annotations

import json
from typing import Any

from solver.errors import InputError
from solver.launch.command_reading import slot_name, slot_of


def command_towers(fw: Any, given: dict, model: Any) -> tuple[str, str, tuple[str, ...]] | None:
    """(how the command places `model`'s vision / audio towers, "whole", "none" or "engine"; the arguments that
    say so, as written; the towers it leaves unloaded beside that) where it gives a tower flag of the profile
    (FrameworkProfile.tower_flags) that sets one: a flag the tower's wrapper does not read (TowerFlag.model_types)
    places nothing, a per-modality limit leaves a tower unloaded where every modality it serves is 0
    (TowerFlag.modalities), and a tower not loaded beats one replicated. "none": no tower is loaded; None: the
    engine's layout."""
    towers = {e.name: e.wrapper for e in model.encoders}
    whole, unloaded = None, {}  # the arguments that replicate; tower -> the arguments that leave it unloaded
    for tf in fw.tower_flags:
        value = given.get(("flag", tf.flag))
        read = [name for name, wrapper in towers.items() if tf.reads(wrapper)]
        if value is None or not read or tf.off_flag is not None and ("flag", tf.off_flag) in given:
            continue
        said = _said(tf, value)
        if tf.zero_limits:
            try:
                limits = json.loads(value)
            except ValueError:
                continue  # not JSON: the engine refuses it, not a placement to price
            if not isinstance(limits, dict):
                continue

            def limit(m: str) -> Any:
                v = limits.get(m)
                return v.get("count") if isinstance(v, dict) else 999 if v is None else v  # unset: the engine's 999
            hit = [name for name in read if all(limit(m) == 0 for m in tf.modalities(towers[name], name))]
        elif tf.value is not None and value != tf.value or tf.value is None and value.lower() in ("false", "0"):
            continue
        else:
            hit = read
        if tf.towers == "none":
            for name in hit:
                unloaded.setdefault(name, said)
        elif hit and whole is None:
            whole = said
    if towers and set(unloaded) == set(towers):
        return "none", ", ".join(dict.fromkeys(unloaded.values())), ()
    if whole is None and not unloaded:
        return None
    said = ", ".join(dict.fromkeys([*([whole] if whole else []), *unloaded.values()]))
    return ("whole" if whole else "engine"), said, tuple(unloaded)


def _said(tf: Any, value: str) -> str:
    """A tower flag as the command writes it: a switch bare, a valued flag with its value."""
    return f"{tf.flag}{'' if tf.value is None and not tf.zero_limits else f' {value}'}"


def unread_tower_flags(fw: Any, given: dict, model: Any) -> list[str]:
    """A note for each tower flag the command gives that `model`'s wrapper does not read (TowerFlag.model_types):
    the tower stays where the engine's layout places it, and what the engine does with the flag
    (TowerFlag.unread: vLLM warns and falls back to --mm-encoder-tp-mode weights); on a model without a tower, a
    note that it places nothing (the flag is read, so not listed as unread, and the estimate holds no tower)."""
    out = []
    for tf in fw.tower_flags:
        value = given.get(("flag", tf.flag))
        if value is None:
            continue
        said = _said(tf, value)
        if not model.encoders:
            out.append(f"{said}: {model.name} has no vision or audio tower: the flag places nothing")
            continue
        wrappers = sorted({e.wrapper for e in model.encoders if not tf.reads(e.wrapper)})
        if not wrappers:
            continue
        does = tf.unread or f"{fw.name} ignores it"
        out.append(f"{said}: the {'/'.join(wrappers)} wrapper does not read it ({does}): its tower priced as the "
                   "engine's layout places it")
    return out


def command_split(fw: Any, given: dict, pp: int, model: Any) -> tuple[list[int], str] | None:
    """(the decoder layers of each pipeline stage as the command runs them, said) where they differ from the
    balanced split the estimate prices otherwise: the split its partition variable gives (the launch arg printing
    `{pp_layer_partition}`), else the engine's own split of a remainder (FrameworkProfile.pp_default_split); None
    where it runs the balanced one or the profile says neither."""
    from solver.specs.model_rules import stage_sizes, stage_split

    total = len(model.layers) // model.stage_unit
    arg = next((a for a in (fw.launch.args if fw.launch else ()) if a.text == "{pp_layer_partition}"), None)
    slot = slot_of(fw, arg) if arg is not None else None
    value = given.get(slot) if slot is not None else None
    one_stage = fw.pp_default_split.one_stage if fw.pp_default_split is not None else "ignored"
    if pp <= 1 and (value is None or one_stage == "ignored"):
        return None  # one stage: the engine checks a partition variable there (PPSplit.one_stage) or drops it
    if slot is not None and value is not None:
        said = f"{slot_name(slot, fw)}={value}"
        try:
            layers = [int(n) for n in str(value).split(",")]
        except ValueError:
            raise InputError("--command", f"{said}: not a comma-separated list of layer counts, which the engine "
                                          "refuses") from None
    elif fw.pp_default_split is not None:
        layers = list(stage_sizes(total, pp, remainder=fw.pp_default_split.remainder))
        unset = f"{slot_name(slot, fw)} not given: " if slot is not None else ""
        said = f"{unset}{fw.name} splits {total} layers as {','.join(map(str, layers))} ({fw.pp_default_split.source})"
    else:
        return None
    stage_split(layers, model, pp, "--command", said, fw.pp_default_split)
    if tuple(n * model.stage_unit for n in layers) == stage_sizes(len(model.layers), pp, model.stage_unit):
        return None
    return layers, (f"{said}: priced at the stages it runs, {', '.join(map(str, layers))} layers (memory per rank "
                    "the heaviest stage's, the step its stages' times as the pipeline runs them)")


def command_offload(fw: Any, given: dict) -> str | None:
    """The note on the KV offload flags a command gives (FrameworkProfile.kv_offload), as written: the host tier
    they size holds prefix blocks for reuse, not the running batch's KV, so the device memory, the batch that
    fits and the closed loop the estimate runs (no prefix reused) are as without it. None: the command gives
    none of them. Flags that only size the tier, without one that builds it (KVOffload.built_by), are noted as
    building none."""
    ko = fw.kv_offload
    if ko is None:
        return None
    said = [f if v is True or v in ("", "true") else f"{f} {v}" for f in ko.flags
            if (v := given.get(("flag", f))) is not None]
    if not said:
        return None
    if ko.built_by is not None and not any(given.get(("flag", f)) is not None for f in ko.built_by):
        return (f"{', '.join(said)}: no KV offload: {' or '.join(ko.built_by)}, which builds the host tier, is not "
                "given, so these flags size a tier the engine does not build")
    bad_size = ko.positive_size.refusal(given) if ko.positive_size is not None else None
    if bad_size:
        raise InputError("--command", f"{bad_size}, so {fw.name} refuses to start")
    need = ko.needs_env
    if need is not None:
        backend = given.get(("flag", need.backend_flag)) if need.backend_flag else None
        needed = not need.backends or (backend or need.backends[0]) in need.backends
        set_to = given.get(("env", need.name))
        if needed and (set_to or "").strip() not in need.reads_on:
            now = (f"sets {need.name}={set_to}, which {fw.name} does not read as on ({', '.join(need.reads_on)})"
                   if set_to is not None else f"leaves {need.name} unset")
            raise InputError("--command", f"{', '.join(said)}: the command {now}: {need.why}, so {fw.name} refuses "
                                          f"to start; set {need.name}={need.reads_on[0]}")
    return (f"{', '.join(said)}: KV offload to host memory ({ko.size}); it holds prefix blocks for reuse, loaded "
            "back on a prefix hit, not the running batch's KV, so the device memory and the batch that fits are "
            "as without it, and this estimate's closed loop reuses no prefix: not priced; nor is the host memory it "
            "takes checked (the hardware files give none)")
