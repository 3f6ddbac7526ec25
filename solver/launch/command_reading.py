"""A command's argv read into a profile's slots: its flags in the profile's spelling (the engine's aliases and
unique prefixes, launch.respellings, underscore flags), its environment, the keys of its documents, and its site
flags. What the slots mean (which are parallel) is read_command's to say."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import yaml

from solver.errors import InputError
from solver.launch.command_engine import program, program_at
from solver.launch.command_text import ParsedArgv, parse_argv
from solver.specs.framework import FrameworkProfile
from solver.specs.launch_spec import LaunchArg, as_read

Slot = tuple[str, ...]  # ("flag", --x) | ("doc", document, dotted key) | ("env", NAME)


def dashed(token: str) -> str:
    """A long flag's name with `_` read as `-` (its value after `=`, and a dotted JSON key after `.`, kept)."""
    if not token.startswith("--"):
        return token
    name, eq, value = token.partition("=")
    head, dot, tail = name.partition(".")
    return head.replace("_", "-") + dot + tail + eq + value


def all_args(fw: FrameworkProfile) -> list[LaunchArg]:
    """The launch's arguments and those a disaggregated pool's worker adds (launch.disagg): a command is read
    against both, so a pool's role and KV transfer are read as the launch prints them."""
    spec = fw.launch
    return [*(spec.args if spec else ()), *(spec.disagg.args if spec and spec.disagg else ())]


def all_documents(fw: FrameworkProfile) -> dict[str, Any]:
    """The launch's documents and a pool worker's (launch.disagg.documents: vLLM's --kv-transfer-config JSON)."""
    spec = fw.launch
    return {**(spec.documents if spec else {}), **(spec.disagg.documents if spec and spec.disagg else {})}


def site_flags(fw: FrameworkProfile) -> set[str]:
    """The flags whose value is the site's (launch.site_flags): read, compared with nothing."""
    return set(fw.launch.site_flags) if fw.launch else set()


def flag_kinds(fw: FrameworkProfile) -> tuple[set[str], set[str]]:
    """The flags the engine takes as switches and as flags with a value: its parser's record where there is one
    (engine_flags.yaml), with the profile's own arguments."""
    from solver.launch.engine_flags import engine_flags

    record = engine_flags().get(fw.name, {}).get("flags", {})
    switches = {f for f, s in record.items() if s["kind"] != "value"}
    valued = {f for f, s in record.items() if s["kind"] == "value"}
    args = all_args(fw)
    switches |= {a.flag for a in args if a.switch and a.flag}
    valued |= {a.flag for a in args if not a.switch and a.flag and a.doc is None}
    valued |= {d.flag for d in all_documents(fw).values() if d.flag}
    return switches, valued


def aliases(fw: FrameworkProfile) -> dict[str, str]:
    """Each spelling the engine's parser takes for a flag the profile prints (the same destination in its record,
    engine_flags.yaml: vLLM's -tp for --tensor-parallel-size) -> the profile's spelling."""
    from solver.launch.engine_flags import engine_flags

    record = engine_flags().get(fw.name, {}).get("flags", {})
    spec = fw.launch
    own = {a.flag for a in (spec.args if spec else ()) if a.flag} | site_flags(fw) | \
        ({spec.model_flag} if spec and spec.model_flag else set())
    dest = {record[f]["dest"]: f for f in own if f in record}
    # a --no-X switch sets the same destination the other way: not a spelling of X
    return {f: dest[s["dest"]] for f, s in record.items() if s["dest"] in dest and f not in own
            and not f.startswith("--no-")}


def slot_of(fw: FrameworkProfile, arg: LaunchArg) -> Slot | None:
    if arg.doc is not None:
        return ("doc", arg.doc, arg.key or "")
    if arg.env is not None:
        return ("env", arg.env)
    return ("flag", arg.flag) if arg.flag else None


def _leaves(doc: dict, known: set[str], at: str = "") -> list[str]:
    """The dotted keys of `doc`'s values (a list or a scalar is one value), each profile key (`known`) taken whole
    however its value nests."""
    out = []
    for k, v in doc.items():
        key = f"{at}{k}"
        if isinstance(v, dict) and v and key not in known:
            out += _leaves(v, known, f"{key}.")
        else:
            out.append(key)
    return out


def _dotted(doc: dict, key: str) -> Any:
    for part in key.split("."):
        if not isinstance(doc, dict) or part not in doc:
            return None
        doc = doc[part]
    return doc


@dataclass
class Reading:
    """What a command (or an emitted launch) sets, slot by slot; `unread`: documents whose text is not at hand."""

    values: dict[Slot, str] = field(default_factory=dict)
    flags: dict[str, str | bool] = field(default_factory=dict)
    positional: list[str] = field(default_factory=list)
    unread: dict[str, str] = field(default_factory=dict)  # document name -> `flag file: why it is not read`
    documents: set[str] = field(default_factory=set)       # the documents read
    respelt: list[str] = field(default_factory=list)       # flags read in another spelling (launch.respellings)


def reading(fw: FrameworkProfile, parsed: ParsedArgv, env: dict[str, str], files: dict[str, str]) -> Reading:
    """Every slot of the profile's arguments as the command sets it: its flags, its environment, and the keys of
    its documents (a JSON flag's value, or a file the text writes or that exists on disk)."""
    from pathlib import Path

    from solver.launch.engine_flags import engine_flags, flag_read_as

    spec = fw.launch
    spelt = aliases(fw)
    record = engine_flags().get(fw.name, {}).get("flags", {})

    def full(flag: str) -> str:  # the recorded flag a unique prefix stands for (`--tp` for `--tp-size`)
        read_as = flag_read_as(record, flag)
        return read_as[0] if len(read_as) == 1 else flag

    flags = {spelt.get(full(f), full(f)): v for f, v in parsed.flags.items()}  # in the profile's spelling
    out = Reading(flags=flags, positional=list(parsed.positional))
    for r in (spec.respellings if spec else ()):
        if flags.get(r.with_switch) is True:
            del flags[r.with_switch]
            if r.flag in flags and r.reads_as not in flags:
                flags[r.reads_as] = flags.pop(r.flag)
                out.respelt.append(f"{r.flag} {flags[r.reads_as]} {r.with_switch}: read as {r.reads_as} "
                                   f"{flags[r.reads_as]}, the spelling {fw.name}'s parser resolves it to")
    for flag, v in flags.items():
        out.values[("flag", flag)] = as_read(v)
    for name, v in env.items():
        out.values[("env", name)] = v
    docs: dict[str, dict] = {}
    for name, d in all_documents(fw).items():
        text = None
        if d.file is None:
            raw = flags.get(d.flag or "")
            text = raw if isinstance(raw, str) else None
        else:
            fname = flags.get(d.flag) if d.flag else next((p for p in parsed.positional if p.endswith(d.file)),
                                                                 None)
            if isinstance(fname, str):
                said = f"{d.flag or ''} {fname}".strip()
                if fname in files:
                    text = files[fname]
                elif not Path(fname).is_file():
                    out.unread[name] = f"{said}: not in the text nor a file on disk"
                else:
                    try:
                        text = Path(fname).read_text()
                    except (OSError, UnicodeDecodeError) as exc:
                        out.unread[name] = f"{said}: cannot be read ({getattr(exc, 'strerror', None) or exc})"
        if text is None:
            continue
        try:
            doc = json.loads(text) if d.format == "json" else yaml.safe_load(text)
        except (ValueError, yaml.YAMLError) as exc:
            raise InputError("--command", f"{d.flag or d.file}: does not parse as {d.format} ({exc})") from None
        docs[name] = doc if isinstance(doc, dict) else {}
        out.documents.add(name)
    for arg in all_args(fw):
        if arg.doc is not None and arg.doc in docs:
            v = _dotted(docs[arg.doc], arg.key or "")
            if v is not None:
                out.values[("doc", arg.doc, arg.key or "")] = as_read(v)
    # a key the profile never writes is kept as given, so it is named as not read rather than dropped unseen
    for name, doc in docs.items():
        known = {a.key for a in all_args(fw) if a.doc == name and a.key}
        for key in _leaves(doc, known):
            if key not in known:
                out.values[("doc", name, key)] = as_read(_dotted(doc, key))
    return out


def launch_reading(fw: FrameworkProfile, launch: dict[str, Any]) -> Reading:
    """The head node's emitted command read as a user's is."""
    node = launch["nodes"][0]
    switches, valued = flag_kinds(fw)
    argv, prog = node["argv"], program(fw)
    start = program_at(argv, prog) or 0
    argv = argv[:start] + argv[start + len(prog):]
    return reading(fw, parse_argv(argv, switches, valued), node["env"], launch["files"])


def slot_name(slot: Slot, fw: FrameworkProfile) -> str:
    """The slot as a command writes it: the flag, the variable, or the document's flag (or file) and key."""
    if slot[0] == "doc":
        d = all_documents(fw).get(slot[1])
        return f"{(d.flag or d.file) if d else slot[1]} {slot[2]}"
    return slot[1]
