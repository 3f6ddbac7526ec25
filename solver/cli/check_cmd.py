"""`shardplan check CONFIG.yaml`: validate a user's parallel_config and estimate it (seed Step 4 review)."""
from __future__ import annotations

import sys

import click

from solver.cli.options import CARDS, NAME, format_option
from solver.errors import InputError
from solver.report.render import console, dump


@click.command("check")
@click.argument("config", type=click.Path(dir_okay=False))
@click.option("--model", type=NAME, default=None, help="overrides the file's model")
@click.option("--hardware", type=NAME, default=None, help="overrides the file's hardware")
@click.option("--cards", type=CARDS, default=None, help="overrides the file's world_size")
@click.option("--framework", type=NAME, default=None, help="overrides the file's framework profile")
@click.option("--candidate", type=NAME, default=None,
              help="the candidate_x block to read from a file of several (a, b, c or 1, 2, 3: solve --format yaml)")
@format_option()
def check_cmd(config, model, hardware, cards, framework, candidate, fmt) -> None:
    """Validate a parallel_config (the seed's YAML keys, solve's YAML, or a verified deployment in references/) by
    class A/B/C, flag common errors, estimate it. Exit 1 when a hard constraint is violated."""
    from solver.one_config import check_deployment
    from solver.specs.deployment import load_deployment
    from solver.specs.model_catalog import model_title

    try:
        dep = load_deployment(config, candidate)
    except InputError as exc:
        whole = exc.problem.startswith(("not valid YAML", "expected a mapping"))
        if exc.field != str(config) or not whole:  # a field of a deployment file: the line says what to fix
            raise
        # not YAML, or no mapping: say what check reads (a launch command, solve --format launch, is not it)
        raise InputError(exc.field, f"{exc.problem}; check reads a deployment file, the YAML `shardplan solve "
                                    "--format yaml` writes (not the command lines of --format launch)") from None
    flags = {"model": "--model" if model else None, "hardware": "--hardware" if hardware else None,
             "framework": "--framework" if framework else None}  # else the file's key names a bad name
    model = model or dep.model
    hardware = hardware or dep.hardware
    world = cards or dep.world_size
    for flag, value in (("model", model), ("hardware", hardware), ("world_size", world)):
        if value is None:
            raise InputError(flag, f"missing: give it in {config} or as --{flag.replace('world_size', 'cards')}")
    res = check_deployment(dep, model, hardware, world, framework, str(config), flags)
    spec, hw, fw, r = res.model, res.hardware, res.framework, res.review
    data = res.as_dict()
    if fmt != "table":
        click.echo(dump(data, fmt))
    else:
        con = console()
        con.print(f"[bold]{model_title(model, spec.name)}[/bold] on {world} x {hw.name} ({fw.name}): "
                  + ("[green]valid[/green]" if r.valid else "[red]invalid[/red]"))
        for cls, name in (("A", "model"), ("B", "hardware"), ("C", "framework")):
            for v in r.violations[cls]:
                con.print(f"  [red]{cls}[/red] ({name}): {v}")
            for v in r.warnings[cls]:
                con.print(f"  [yellow]{cls}[/yellow] ({name}, warning): {v}")
        for e in r.common_errors:
            con.print(f"  common error: {e}")
        for n in r.notes:
            con.print(f"  note: {n}")
        if data["estimation"]:
            con.print("  estimate: " + ", ".join(f"{k}={v}" for k, v in data["estimation"].items()))
        for k, v in data["comparisons"].items():
            con.print(f"  compare {k}: " + ", ".join(f"{kk}={vv}" for kk, vv in v.items()))
    if not r.valid:
        sys.exit(1)


COMMANDS = [check_cmd]
