"""`shardplan` command line: a thin layer over the library. Errors become one line and an exit code:
2 bad input (the tool's InputError, a click usage error, a pydantic error at the boundary), 1 infeasible,
3 an internal error (the traceback with --debug or SHARDPLAN_DEBUG=1)."""
from __future__ import annotations

import atexit
import importlib
import os
import sys
import threading
from collections.abc import Iterator, MutableMapping
from typing import NoReturn

import click

from solver.errors import DEBUG_ENV, InternalError, ShardplanError


def _debug() -> bool:
    return os.environ.get(DEBUG_ENV, "").strip().lower() not in ("", "0", "false", "no")


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


class _Group(click.Group):
    """Runs a subcommand and turns every failure into one stderr line and a documented exit code."""

    def main(self, *args, **kwargs):  # type: ignore[override]
        kwargs["standalone_mode"] = False
        try:
            rv = super().main(*args, **kwargs)
        except ShardplanError as exc:
            click.echo(f"error: {_one_line(exc)}", err=True)
            _leave(args, kwargs, exc.exit_code)
        except click.BadParameter as exc:
            # the tool's own shape: "error: --flag: problem", as an InputError would print it
            name = _param_name(exc.param) or exc.param_hint or "input"
            problem = "missing (required)" if isinstance(exc, click.MissingParameter) else exc.message
            click.echo(f"error: {_one_line(name)}: {_one_line(problem)}", err=True)
            _leave(args, kwargs, 2)
        except click.UsageError as exc:
            where = f" (see '{exc.ctx.command_path} --help')" if exc.ctx is not None else ""
            click.echo(f"error: {_one_line(exc.format_message())}{where}", err=True)
            _leave(args, kwargs, 2)
        except click.ClickException as exc:
            click.echo(f"error: {_one_line(exc.format_message())}", err=True)
            _leave(args, kwargs, exc.exit_code)
        except click.Abort:
            click.echo("error: aborted", err=True)
            _leave(args, kwargs, 130)
        except BrokenPipeError:
            _quiet_stdout()
            _leave(args, kwargs, 0)
        except KeyboardInterrupt:
            click.echo("error: interrupted", err=True)
            _leave(args, kwargs, 130)
        except Exception as exc:  # noqa: BLE001 - the last resort: one line, exit 3, traceback on request
            if _is_validation_error(exc):
                # the specs are the boundary: a pydantic error escaping a command is still the user's input
                from solver.specs.validation import first_error

                click.echo(f"error: {_one_line(first_error(exc, 'input'))}", err=True)
                _leave(args, kwargs, 2)
            if _debug() or _flag_debug(args, kwargs):
                import traceback

                traceback.print_exc()
            err = InternalError(f"internal error: {type(exc).__name__}: {_one_line(exc)[:300]} "
                                f"(a fault of shardplan, not of the input; rerun with --debug or {DEBUG_ENV}=1 "
                                "for the traceback)")
            click.echo(f"error: {err}", err=True)
            _leave(args, kwargs, err.exit_code)
        _leave(args, kwargs, rv if isinstance(rv, int) else 0)

    def invoke(self, ctx: click.Context):
        if ctx.params.get("debug"):
            os.environ[DEBUG_ENV] = "1"
        return super().invoke(ctx)

    def resolve_command(self, ctx: click.Context, args: list[str]):
        name, command, rest = super().resolve_command(ctx, args)
        if command is not None:  # before it parses: click would keep a repeated option's last value silently
            from solver.cli.options import refuse_repeats

            refuse_repeats(command, rest)
        return name, command, rest


def _leave(args: tuple, kwargs: dict, code: int) -> NoReturn:
    """Exit with `code`. As the process's own command line, once the output is written, the interpreter's
    teardown (freeing every cached table entry one by one: 0.2-0.3 s after a solve) is skipped: what Python runs
    at exit still runs first (other threads' shutdown, atexit callbacks, the final flush of stdout and stderr).
    Called in-process (a test, a caller passing `args`) it raises SystemExit as before."""
    if _own_process(args, kwargs):
        threading._shutdown()  # what the interpreter does first at exit: join threads, run threading's atexits
        atexit._run_exitfuncs()  # then atexit's callbacks (the sweep executors' clean-up among them)
        try:
            for stream in (sys.stdout, sys.stderr):
                stream.flush()
        except Exception:  # noqa: BLE001 - a failing flush: the interpreter reports it, as it always did
            sys.exit(code)
        os._exit(code)
    sys.exit(code)


def _own_process(args: tuple, kwargs: dict) -> bool:
    """Whether this exit is the process's own: main ran on the process's argv (no `args` passed), no other
    thread is alive, no tracer or profiler waits to report after the program (coverage, cProfile, pdb), no
    `python -i` waits for a prompt, and this Python has the hooks the exit above calls."""
    return (not args and kwargs.get("args") is None and threading.active_count() == 1
            and sys.gettrace() is None and sys.getprofile() is None
            and not sys.flags.inspect and not os.environ.get("PYTHONINSPECT")
            and hasattr(threading, "_shutdown") and hasattr(atexit, "_run_exitfuncs"))


def _is_validation_error(exc: Exception) -> bool:
    # pydantic loads only with a command that builds a spec (not for --help): none loaded, none raised
    pydantic = sys.modules.get("pydantic")
    return pydantic is not None and isinstance(exc, pydantic.ValidationError)


def _param_name(param) -> str | None:
    if param is None:
        return None
    if isinstance(param, click.Option):
        longs = [o for o in param.opts if o.startswith("--")]
        return (longs or param.opts)[0]
    return param.human_readable_name


def _flag_debug(args, kwargs) -> bool:
    argv = kwargs.get("args") or (args[0] if args else None) or sys.argv[1:]
    return "--debug" in list(argv)


def _quiet_stdout() -> None:
    # stdout's reader went away: point it at /dev/null so the interpreter's final flush does not complain
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="shardplan")
@click.option("--debug", is_flag=True, help=f"print the traceback of an internal error (also {DEBUG_ENV}=1)")
def main(debug: bool) -> None:
    """Recommend per-module parallel configurations for LLM inference.

    Exit codes: 0 success, 1 no feasible configuration, 2 bad input, 3 internal error."""


# Each subcommand lives in its own module of solver.cli (its COMMANDS list). A module is imported when one of its
# commands runs (or --help lists them all), so `inspect` does not build `solve`'s options; this table only says
# where each name lives (tests/test_cli_start.py checks it against the modules' COMMANDS).
COMMAND_MODULES: dict[str, tuple[str, ...]] = {
    "catalog_cmds": ("models", "hardware", "inspect", "memory"),
    "check_cmd": ("check",),
    "solve_cmd": ("solve",),
    "estimate_cmd": ("estimate",),
    "calibrate_cmd": ("calibrate",),
    "capacity_cmds": ("sweep", "recommend"),
    "launch_cmd": ("launch",),
}


class _Commands(MutableMapping):
    """The group's name -> command mapping, filled one module at a time: a lookup by name imports that command's
    module only; iterating (--help, a "did you mean") imports them all."""

    def __init__(self, modules: dict[str, tuple[str, ...]]):
        self._where = {name: module for module, names in modules.items() for name in names}
        self._loaded: dict[str, click.Command] = {}

    def _load(self, module: str) -> None:
        for command in importlib.import_module(f"solver.cli.{module}").COMMANDS:
            self._loaded.setdefault(command.name, command)

    def __getitem__(self, name: str) -> click.Command:
        if name not in self._loaded and name in self._where:
            self._load(self._where[name])
        return self._loaded[name]

    def __iter__(self) -> Iterator[str]:
        for module in dict.fromkeys(self._where.values()):
            self._load(module)
        return iter(list(self._loaded))

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __setitem__(self, name: str, command: click.Command) -> None:
        self._loaded[name] = command

    def __delitem__(self, name: str) -> None:
        self._where.pop(name, None)
        del self._loaded[name]


main.commands = _Commands(COMMAND_MODULES)


if __name__ == "__main__":  # `python -m solver.cli.main ...`, as the installed `shardplan` script
    main(prog_name="shardplan")
