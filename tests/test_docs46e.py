"""The user docs and the command line agree: what `--help` offers is described where a user reads, and what the
docs offer exists."""
from __future__ import annotations

import re
from pathlib import Path

import click

from solver.cli.main import main

ROOT = Path(__file__).resolve().parent.parent
# what a new user reads: the README and the pages under docs/ (engine-conformance.md quotes engine flags only)
USER_DOCS = [ROOT / "README.md", *sorted(p for p in (ROOT / "docs").glob("*.md") if p.name != "engine-conformance.md")]
OPTION = re.compile(r"--[a-z][a-z0-9-]*")


def _docs_text() -> str:
    return "\n".join(p.read_text() for p in USER_DOCS)


def _command_options() -> dict[str, set[str]]:
    ctx = click.Context(main)
    out: dict[str, set[str]] = {}
    for name in main.list_commands(ctx):
        cmd = main.get_command(ctx, name)
        out[name] = {o for p in cmd.params for o in p.opts + p.secondary_opts if o.startswith("--")} - {"--help"}
    return out


def _named_in_docs(option: str, text: str) -> bool:
    # the whole option, not a prefix of a longer one (--mem-fraction is not --mem-fraction-static)
    return re.search(re.escape(option) + r"(?![a-z0-9-])", text) is not None


def test_every_option_a_command_offers_is_described_in_the_user_docs() -> None:
    text = _docs_text()
    missing = sorted(f"{cmd} {opt}" for cmd, opts in _command_options().items() for opt in opts
                     if not _named_in_docs(opt, text))
    assert not missing, missing


def test_every_shardplan_option_the_docs_show_in_a_command_exists() -> None:
    # the options of each `shardplan CMD ...` line the docs show (inline or in a fenced block) are CMD's own
    options = _command_options()
    wrong = []
    for path in USER_DOCS:
        for m in re.finditer(r"shardplan ([a-z]+)\b((?:[^`\n]|\\\n)*)", path.read_text()):
            cmd, rest = m.group(1), m.group(2)
            if cmd not in options:
                continue
            # a line that names several commands (`memory / check / sweep`) is a list, not one command
            if " / " in rest:
                continue
            # a quoted argument's own flags (check --command "vllm serve ... --max-num-seqs 64") are not CMD's
            rest = re.sub(r'"[^"]*"|\'[^\']*\'', "", rest)
            wrong += [f"{path.name}: shardplan {cmd} {o}" for o in OPTION.findall(rest) if o not in options[cmd]]
    assert not wrong, wrong


def test_the_memory_options_help_gives_their_defaults() -> None:
    # memory's --prefill-chunk defaults to the framework's step budget and --mem-fraction to the seed's 0.95
    from solver.estimate.memory_options import TOTAL_FRACTION

    cmd = main.get_command(click.Context(main), "memory")
    helps = {p.opts[0]: p.help for p in cmd.params if isinstance(p, click.Option)}
    assert "(default: the framework's step budget on the hardware" in helps["--prefill-chunk"]
    assert f"(default {TOTAL_FRACTION})" in helps["--mem-fraction"]
