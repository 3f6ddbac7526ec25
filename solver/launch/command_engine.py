"""`check --command`'s first step: the engine a command runs and where its program starts.

The engine is the profile whose launch program (its unconditional literal tokens, `vllm serve`, or one of
launch.programs) the command runs, after any wrapper; of several, the one made for the hardware's vendor alone.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from solver.errors import InputError
from solver.specs.framework import FrameworkProfile
from solver.specs.hardware import Hardware


def program(fw: FrameworkProfile) -> list[str]:
    """The profile's program: the literal positional tokens its launch always writes (no flag, no placeholder)."""
    if fw.launch is None:
        return []
    return [a.text for a in fw.launch.args if a.text and a.flag is None and a.doc is None and a.env is None
            and a.when == "true" and "{" not in a.text]


# a Python interpreter however the command names it (python, python3, python3.12, /usr/bin/python3): the program
# `python3 -m x` is run by any of them
_PYTHON = re.compile(r"^(?:.*/)?python(?:\d+(?:\.\d+)?)?$")


def _same(token: str, literal: str) -> bool:
    return token == literal or bool(_PYTHON.match(token) and _PYTHON.match(literal))


def program_at(argv: list[str], prog: list[str]) -> int | None:
    """Where in `argv` the program `prog` starts (after a wrapper such as `nohup`); None where it is not run."""
    n = len(prog)
    return next((i for i in range(len(argv) - n + 1) if n and all(map(_same, argv[i:i + n], prog))), None)


@dataclass(frozen=True)
class Run:
    """Which of the profile's programs a command runs, where, and whether that program reads a positional model."""

    program: list[str]
    start: int
    positional_model: bool


def run_of(argv: list[str], fw: FrameworkProfile) -> Run | None:
    """The first of the profile's programs (its launch's, then launch.programs) that `argv` runs; None: none."""
    spec = fw.launch
    progs = [(program(fw), True)] + [(p.argv, p.positional_model) for p in (spec.programs if spec else ())]
    return next((Run(prog, at, positional) for prog, positional in progs
                 if (at := program_at(argv, prog)) is not None), None)


def find_engine(argv: list[str], hw: Hardware, framework: str | None) -> tuple[FrameworkProfile, str | None]:
    """The profile whose program the command runs (of those that run on `hw`, or `framework` where given), and a
    note where another profile runs it there too."""
    from solver.specs.framework import list_frameworks, load_framework

    profiles = [load_framework(framework)] if framework else \
        [fw for fw in map(load_framework, list_frameworks()) if fw.launch is not None]
    if framework:  # a named engine that does not run here is refused as solve refuses it, naming those that do
        profiles[0].check_vendor(hw.name, hw.vendor)
    running = [fw for fw in profiles if run_of(argv, fw) is not None]
    if not running:
        known = "; ".join(f"{' '.join(program(fw))} ({fw.name})" for fw in profiles if program(fw))
        what = f"{framework}'s profile launches {known or 'no program'}" if framework else \
            f"no engine profile launches it (they launch: {known})"
        raise InputError("--command", f"{' '.join(argv[:3])}: {what}")
    on_hw = [fw for fw in running if fw.runs_on(hw.vendor)]
    # several run the program here: the one made for this vendor's devices alone is what the program is there (a
    # vendor's own build of an engine whose program a cross-vendor profile also launches)
    own = [fw for fw in on_hw if list(fw.vendors) == [hw.vendor]]
    if len(on_hw) > 1 and len(own) == 1:
        others = ", ".join(fw.name for fw in on_hw if fw is not own[0])
        return own[0], (f"read as {own[0].name}, the profile for {hw.vendor} devices alone ({others} also runs "
                        f"the program there: --framework {others.split(',')[0]} reads it so)")
    if len(on_hw) != 1:
        names = ", ".join(fw.name for fw in (on_hw or running))
        why = f"several profiles launch it on {hw.name} ({names})" if on_hw else f"{names} do not run on {hw.name}"
        raise InputError("--command", f"{' '.join(run_of(argv, running[0]).program)}: {why}; "  # type: ignore[union-attr]
                                      "name one with --framework")
    return on_hw[0], None
