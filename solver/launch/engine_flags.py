"""Whether a launch command's argv parses under its engine's own command-line parser, as engine_flags.yaml records
it (docs/engine_flags_from_wheels.py reads the parsers): every flag exists, a switch carries no value, a value has
the flag's type and is among its choices (or the values the engine's config knows), no flag is given twice, and a
JSON value parses with its keys fields of the engine's config class; and every environment variable the command
sets is one the engine reads."""
from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from solver.launch.command_text import is_flag

DATA = Path(__file__).with_name("engine_flags.yaml")


@lru_cache(maxsize=1)
def engine_flags() -> dict[str, dict[str, Any]]:
    """engine name -> {version, read, source, program, env, flags, json_keys}."""
    return yaml.safe_load(DATA.read_text())


def flag_read_as(flags: dict[str, Any], flag: str) -> list[str]:
    """The recorded flags a parser reads `flag` as: itself where recorded, else every recorded long flag it begins
    (argparse's allow_abbrev, on unless a parser turns it off: SGLang 0.5.23 server_args.py:679 builds a plain
    argparse.ArgumentParser, vLLM 0.23.0 utils/argparse_utils.py:113-134 FlexibleArgumentParser passes no
    allow_abbrev; so SGLang takes `--tp 8` as `--tp-size 8`). One: that flag; several: ambiguous; none: unknown."""
    if flag in flags:
        return [flag]
    return [f for f in flags if f.startswith(flag)] if flag.startswith("--") and len(flag) > 2 else []


_HUMAN = re.compile(r"(\d+(?:\.\d+)?)([kmgt])|(\d+)([KMGT])")


def human_int(value: str, auto: bool = False) -> int:
    """`value` as vLLM's human_readable_int reads it (utils/argparse_utils.py:30-74 in 0.34.0, :29-72 in 0.23.0):
    a plain int, or digits with k / m / g / t (powers of 1,000, decimals allowed) or K / M / G / T (of 1,024, whole
    numbers only); `auto` (human_readable_int_or_auto, :77-95): "-1" or "auto" (any case) too, read as -1, the
    model's own length. ValueError otherwise."""
    value = value.strip()
    if auto and (value == "-1" or value.lower() == "auto"):
        return -1
    m = _HUMAN.fullmatch(value)
    if m is None:
        return int(value)
    if m.group(1) is not None:
        return int(float(m.group(1)) * 1000 ** (" kmgt".index(m.group(2))))
    return int(m.group(3)) * 1024 ** (" KMGT".index(m.group(4)))


def typed_int(kind: str, value: str) -> int | None:
    """An int-typed flag's value as its parser reads it (None: not an int kind, or not a value it takes)."""
    try:
        if kind == "int":
            return int(value)
        if kind in ("human_int", "human_int_or_auto"):
            return human_int(value, auto=kind == "human_int_or_auto")
    except ValueError:
        return None
    return None


def flag_int(engine: str, flag: str, value: str) -> int | None:
    """`value` of `flag` as `engine`'s parser reads it where the flag takes an int written its way (vLLM's 32k for
    --max-model-len); None where the engine or flag is not recorded or the flag takes no int."""
    spec = engine_flags().get(engine, {}).get("flags", {}).get(flag)
    return typed_int(spec["type"], value) if spec and spec.get("kind") == "value" else None


# what a value of these kinds is, in a refusal's words (the kind names are the flags record's, not the user's)
_HUMAN_INT = ("a whole number, or digits with k / m / g / t (x 1,000, decimals allowed) or K / M / G / T (x 1,024, "
              "whole numbers only)")
KIND_WORDS = {"human_int": _HUMAN_INT, "human_int_or_auto": f"{_HUMAN_INT}, or auto / -1"}


def _typed(kind: str, value: str) -> bool:
    try:
        if kind in ("int", "human_int", "human_int_or_auto"):
            if typed_int(kind, value) is None:
                raise ValueError(value)
        elif kind == "float":
            float(value)
        elif kind == "json":
            json.loads(value)
        elif kind == "bool":
            return value.lower() in ("true", "false", "1", "0", "yes", "no")
    except ValueError:
        return False
    return True


def _json_problems(flag: str, value: str, keys: list[str]) -> list[str]:
    doc = json.loads(value)
    if not isinstance(doc, dict):
        return [f"{flag}: {value} is not a JSON object"]
    known = set(keys)
    nested = {k.split(".", 1)[0] for k in keys if "." in k}
    out = []
    for k, v in doc.items():
        if k not in known:
            out.append(f"{flag}: key {k} is not a field the engine reads")
        elif k in nested and isinstance(v, dict):
            out += [f"{flag}: key {k}.{s} is not a field the engine reads" for s in v if f"{k}.{s}" not in known]
    return out


def env_problems(engine: str, env: dict[str, str]) -> list[str]:
    """One line per variable of a launch node's environment that the engine does not read."""
    data = engine_flags()[engine]
    return [f"{name}: {engine} {data['version']} reads no such environment variable" for name in sorted(env)
            if name not in set(data["env"])]


def argv_problems(engine: str, argv: list[str]) -> list[str]:
    """One line per token of `argv` (a launch node's) that the engine's parser refuses or misreads; [] when it
    parses. The argv starts with the engine's program (`program`); the tokens after it and before the first flag are
    positional arguments (vLLM's model)."""
    data = engine_flags()[engine]
    flags, json_keys, program = data["flags"], data.get("json_keys", {}), data["program"]
    out: list[str] = []
    if argv[:len(program)] != program:
        out.append(f"{' '.join(argv[:len(program)])}: not {engine}'s program ({' '.join(program)})")
    seen: set[str] = set()
    i = next((j for j, t in enumerate(argv) if j >= len(program) and is_flag(t)), len(argv))
    while i < len(argv):
        token = argv[i]
        if not is_flag(token):
            out.append(f"{token}: a value no flag takes (after {argv[i - 1]})")
            i += 1
            continue
        flag, eq, inline = token.partition("=")
        read_as = flag_read_as(flags, flag)
        spec = flags[read_as[0]] if len(read_as) == 1 else None
        i += 1
        if spec is None:
            shown = ", ".join(read_as[:4]) + (f" and {len(read_as) - 4} more" if len(read_as) > 4 else "")
            out.append(f"{flag}: ambiguous in {engine} {data['version']}'s parser (it begins {shown})"
                       if read_as else f"{flag}: {engine} {data['version']} has no such flag")
            while i < len(argv) and not is_flag(argv[i]):
                i += 1
            continue
        if spec["dest"] in seen:
            out.append(f"{flag}: given twice (the parser keeps the last)")
        seen.add(spec["dest"])
        if spec["kind"] != "value":
            if eq or (i < len(argv) and not is_flag(argv[i])):
                out.append(f"{flag}: a switch, given a value ({inline if eq else argv[i]})")
                i += 0 if eq else 1
            continue
        if eq:
            values = [inline]
        elif spec.get("nargs") in ("+", "*"):
            values = []
            while i < len(argv) and not is_flag(argv[i]):
                values.append(argv[i])
                i += 1
        else:  # argparse takes no flag-like token as a value: `--max-num-seqs --port 1` is a flag given none
            values = argv[i:i + 1] if i < len(argv) and not is_flag(argv[i]) else []
            i += len(values)
        if not values:
            out.append(f"{flag}: takes a value, given none")
        for v in values:
            if not _typed(spec["type"], v):
                kind = spec["type"]
                out.append(f"{flag}: {v} is not {KIND_WORDS[kind]}" if kind in KIND_WORDS else
                           f"{flag}: {v} is not of type {kind}")
            elif "choices" in spec and v not in spec["choices"]:
                out.append(f"{flag}: {v} is not one of {', '.join(spec['choices'])}")
            elif "known" in spec and v not in spec["known"]:
                out.append(f"{flag}: {v} is none of the values {engine}'s config knows ({', '.join(spec['known'])})")
            elif spec["type"] == "json" and flag in json_keys:
                out += _json_problems(flag, v, json_keys[flag]["keys"])
    return out
