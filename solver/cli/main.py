"""`shardplan` command line: a thin layer over the library. Errors become one line and an exit code."""
from __future__ import annotations

import sys

import click

from solver.errors import ShardplanError


class _Group(click.Group):
    """Runs a subcommand and turns the tool's own errors into one stderr line (never a traceback)."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except ShardplanError as exc:
            click.echo(f"error: {exc}", err=True)
            sys.exit(exc.exit_code)
        except click.exceptions.Exit:
            raise
        except (click.ClickException, click.Abort):
            raise
        except BrokenPipeError:
            sys.exit(0)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="shardplan")
def main() -> None:
    """Recommend per-module parallel configurations for LLM inference."""


def _register() -> None:
    # Each subcommand lives in its own module; import here so `main` stays small.
    from solver.cli import calibrate_cmd, capacity_cmds, catalog_cmds, check_cmd, estimate_cmd, launch_cmd, solve_cmd

    for module in (catalog_cmds, check_cmd, solve_cmd, estimate_cmd, calibrate_cmd, capacity_cmds, launch_cmd):
        for command in module.COMMANDS:
            main.add_command(command)


_register()
