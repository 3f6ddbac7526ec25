"""An option given twice with different values: click keeps the last and drops the earlier without a word, so
`--isl 1024 ... --isl 2048` would answer for 2048 while the user reads 1024 in their own line. Refused here, before
the command parses, naming the option and both values; the same value twice drops nothing and passes, and so do
the options that take several (multiple=True)."""
from __future__ import annotations

from collections.abc import Sequence

import click


def _single_options(command: click.Command) -> dict[str, click.Option]:
    """Each spelling of a single-valued option (long, short, --no- form) -> the option."""
    return {spelling: p for p in command.params if isinstance(p, click.Option) and not p.multiple and not p.count
            for spelling in (*p.opts, *p.secondary_opts)}


def _occurrences(command: click.Command, args: Sequence[str]) -> dict[str, list[str]]:
    """Per single-valued option (by name), each value it is given in `args`, as typed: the value token(s), or the
    spelling for a flag (--x / --no-x). Tokens after a bare "--" are arguments, not options."""
    spellings = _single_options(command)
    takes = {s: p for p in command.params if isinstance(p, click.Option)
             for s in (*p.opts, *p.secondary_opts)}  # every option's spellings, so their values are skipped
    seen: dict[str, list[str]] = {}
    i = 0
    while i < len(args):
        token = args[i]
        if token == "--":
            break
        name, eq, attached = token.partition("=") if token.startswith("--") else (token, "", "")
        if not eq and len(token) > 2 and token[0] == "-" and token[1] != "-" and token[:2] in takes:
            name, eq, attached = token[:2], "=", token[2:]  # a short option with its value attached: -j4
        param = takes.get(name)
        if param is None:
            i += 1
            continue
        if param.is_flag:
            value, i = name, i + 1
        elif eq:
            value, i = attached, i + 1
        else:
            value, i = " ".join(args[i + 1:i + 1 + param.nargs]), i + 1 + param.nargs
        if name in spellings:
            seen.setdefault(param.name or name, []).append(value)
    return seen


def refuse_repeats(command: click.Command, args: Sequence[str]) -> None:
    """A click.BadParameter naming the first single-valued option given twice with different values."""
    by_name = {p.name: p for p in command.params if isinstance(p, click.Option)}
    for name, values in _occurrences(command, args).items():
        if len(set(values)) > 1:
            shown = ", then ".join(repr(v) if len(v) <= 40 else repr(v[:37] + "...") for v in values)
            times = "twice" if len(values) == 2 else f"{len(values)} times"
            raise click.BadParameter(f"given {times} ({shown}): only one value is read; give it once",
                                     param=by_name[name])
