"""An engine command as a user pastes it, read into tokens: the command of one node (a `solve --format launch` script
is read too: its comments skipped, its heredoc files kept, its first command taken), the environment it sets, and its
argv split into positional tokens and flags. What each flag means is the profile's to say (read_command)."""
from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field

from solver.errors import InputError

_HEREDOC = re.compile(r"^cat\s+>\s*(\S+)\s+<<\s*'?(\w+)'?\s*$")
_ENV = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
# the shell's, not the program's: a token ending the command (a background `&`, a pipe, a list) and a redirection
# (`> log`, `2>&1`, `>>log`), the target in the next token where the operator stands alone
_ENDS = frozenset({"&", "|", "|&", ";", "&&", "||"})
_REDIRECT = re.compile(r"^\d*(?:&>>?|>>?|<|>&)(.*)$")


@dataclass(frozen=True)
class CommandText:
    """One node's command: `argv` (the environment assignments before it taken out into `env`), the files the
    text writes before it (heredocs), and how many more commands it holds (the other nodes')."""

    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)
    more_commands: int = 0
    shell: list[str] = field(default_factory=list)  # the shell's tokens after the program's: redirections, `&`


def read_text(text: str) -> CommandText:
    """The first command of `text` with the files written before it and the environment its `export NAME=value`
    lines set; InputError where there is none or its quoting does not parse."""
    lines = text.replace("\\\n", " ").splitlines()
    files: dict[str, str] = {}
    commands: list[str] = []
    exported: dict[str, str] = {}
    i = 0
    while i < len(lines):
        line = lines[i].strip()
        i += 1
        if not line or line.startswith("#"):
            continue
        doc = _HEREDOC.match(line)
        if doc:  # a file the script writes: its lines up to the end marker
            body = []
            while i < len(lines) and lines[i].strip() != doc.group(2):
                body.append(lines[i])
                i += 1
            i += 1
            files[doc.group(1).strip("'\"")] = "\n".join(body) + "\n"
            continue
        words = _split(line)
        if not commands and words[:1] == ["export"] and words[1:] and all(_ENV.match(w) for w in words[1:]):
            exported.update(w.partition("=")[::2] for w in words[1:])  # the environment of the command after it
            continue
        commands.append(line)
    if not commands:
        raise InputError("--command", "no command in it (only comments, blank lines or files)")
    tokens, shell = _program_tokens(_split(commands[0]))
    env = dict(exported)
    while tokens and _ENV.match(tokens[0]):
        name, _, value = tokens.pop(0).partition("=")
        env[name] = value
    if not tokens:
        raise InputError("--command", "only environment assignments, no program")
    return CommandText(tokens, env, files, len(commands) - 1, shell)


def _split(line: str) -> list[str]:
    try:
        return shlex.split(line)
    except ValueError as exc:
        raise InputError("--command", f"its quoting does not parse ({exc})") from None


def _program_tokens(tokens: list[str]) -> tuple[list[str], list[str]]:
    """(the tokens the program is given, the shell's: its redirections and everything from a token that ends the
    command on)."""
    argv: list[str] = []
    shell: list[str] = []
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if token in _ENDS:
            return argv, shell + tokens[i:]
        redirect = _REDIRECT.match(token)
        if redirect:
            take = 1 if redirect.group(1) else 2
            shell += tokens[i:i + take]
            i += take
            continue
        argv.append(token)
        i += 1
    return argv, shell


def is_flag(token: str) -> bool:
    """A token a parser reads as an option: a dash and no number (argparse takes `-1` as a value)."""
    if not token.startswith("-") or token == "-":
        return False
    try:
        float(token)
    except ValueError:
        return True
    return False


@dataclass
class ParsedArgv:
    """Positional tokens in order, and each flag with its value (True for a switch), in the order given."""

    positional: list[str] = field(default_factory=list)
    flags: dict[str, str | bool] = field(default_factory=dict)


def parse_argv(argv: list[str], switches: set[str], valued: set[str]) -> ParsedArgv:
    """Split `argv`: a flag in `switches` takes no value, one in `valued` takes the next token, any other takes the
    next token unless that is a flag; `--flag=value` carries its own. A flag in `valued` with no token after it, or
    a flag there, is refused as a recorded parser's is (engine_flags.argv_problems): argparse takes no value there."""
    out = ParsedArgv()
    i = 0
    while i < len(argv):
        token = argv[i]
        i += 1
        if not is_flag(token):
            out.positional.append(token)
            continue
        flag, eq, inline = token.partition("=")
        if eq:
            out.flags[flag] = inline
        elif flag in switches:
            out.flags[flag] = True
        elif flag in valued:
            if i == len(argv) or is_flag(argv[i]):
                raise InputError("--command", f"{flag}: takes a value, given none")
            out.flags[flag] = argv[i]
            i += 1
        elif i < len(argv) and not is_flag(argv[i]):
            out.flags[flag] = argv[i]
            i += 1
        else:
            out.flags[flag] = True
    return out
