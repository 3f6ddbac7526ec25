"""`shardplan check CONFIG.yaml` (or `--command "<engine command>"`): validate a user's parallel_config and estimate
it (seed Step 4 review)."""
from __future__ import annotations

import sys

import click

from solver.cli.options import MODEL, factors_option, mtp_accept_option
from solver.cli.options import CARDS, CONCURRENCY, MTP, NAME, TOKENS, dtype_options, format_option
from solver.errors import InputError
from solver.report.render import console, dump


@click.command("check")
@click.argument("config", type=click.Path(dir_okay=False), required=False)
@click.option("--command", "command", default=None,
              help="the engine command you run (or a `solve --format launch` script) instead of CONFIG: read back "
                   "to the parallel_config whose launch prints it")
@click.option("--model", type=MODEL, default=None, help="overrides the file's model")
@click.option("--hardware", type=NAME, default=None, help="overrides the file's hardware")
@click.option("--cards", type=CARDS, default=None, help="overrides the file's world_size")
@click.option("--framework", type=NAME, default=None, help="overrides the file's framework profile")
@click.option("--candidate", type=NAME, default=None,
              help="the candidate_x block to read from a file of several (a, b, c or 1, 2, 3: solve --format yaml)")
@click.option("--isl", type=TOKENS, default=None, help="with --command: input tokens per request")
@click.option("--osl", type=TOKENS, default=None, help="with --command: output tokens per request")
@click.option("--concurrency", type=CONCURRENCY, default=None,
              help="with --command: requests in flight; for a disaggregated prefill worker's command, the prompts of one "
                   "step (default: what the command's running-request cap admits)")
@click.option("--mtp", type=MTP, default=None, help="with --command: next-n (MTP) depth (default: the command's)")
@mtp_accept_option
@dtype_options
@format_option()
@factors_option
def check_cmd(config, command, model, hardware, cards, framework, candidate, isl, osl, concurrency, mtp, mtp_accept,
              weight_dtype, moe_weight_dtype, kv_dtype, fmt) -> None:
    """Validate a parallel_config (the seed's YAML keys, solve's YAML, or a verified deployment in references/) by
    class A/B/C, flag common errors, estimate it. Exit 1 when a hard constraint is violated."""
    from solver.specs.deployment import load_deployment
    from solver.specs.model_catalog import model_title

    read = None
    if command is not None:
        from solver.launch.check_command import command_deployment, pool_settings_notes
        from solver.one_config import check_command_deployment

        if config is not None or candidate is not None:
            raise InputError("--command", f"reads the command instead of {config or '--candidate'}: give one")
        if hardware is None:
            raise InputError("--hardware", "missing (required with --command)")
        read, dep = command_deployment(command, hardware, cards, framework, model, isl, osl, concurrency, mtp,
                                       weight_dtype, moe_weight_dtype, kv_dtype, mtp_accept)
        model, world = read.model, read.world
        res = check_command_deployment(read, dep, hardware)
        if read.role is not None and read.role.role is not None:  # compared with its pool's launch, at its memory
            est = res.review.estimate
            read.notes += pool_settings_notes(read, dep, hardware, isl, osl, est.memory if est else None)
    else:
        if config is None:
            raise InputError("CONFIG", "missing: give a deployment file, or --command with the engine command")
        for flag, value in (("--isl", isl), ("--osl", osl), ("--concurrency", concurrency), ("--mtp", mtp),
                            ("--mtp-accept", mtp_accept),
                            ("--weight-dtype", weight_dtype), ("--moe-weight-dtype", moe_weight_dtype),
                            ("--kv-dtype", kv_dtype)):
            if value is not None:
                raise InputError(flag, f"reads with --command only; {config} gives the workload and formats")
        res, model, world = _check_file(config, model, hardware, cards, framework, candidate)
    spec, hw, fw, r = res.model, res.hardware, res.framework, res.review
    data = res.as_dict()
    if read is not None:
        data = {"command": read.as_dict(), **data}
    if fmt != "table":
        click.echo(dump(data, fmt))
    else:
        con = console()
        if read is not None:
            _print_read(con, read)
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


def _print_read(con, read) -> None:
    """What the command was read as: engine, world, the parallel_config, the workload figures it sets (its
    running-request cap, the concurrency where --concurrency is not given), and what was not read."""
    knobs = ", ".join(f"{k}={v}" for k, v in read.parallel_config.items())
    con.print(f"read: {read.framework} command, {read.world} ranks: {knobs}")
    figures = [f"{read.concurrency_cap:,} requests at once" if read.concurrency_cap else "",
               f"a model length of {read.max_model_len:,}" if read.max_model_len else "",
               f"MTP depth {read.mtp}" if read.mtp else ""]
    if any(figures):
        con.print(f"  the command's own figures: {', '.join(f for f in figures if f)}")
    for other in read.also:
        con.print("  also printed by: " + ", ".join(f"{k}={v}" for k, v in other.items()))
    if read.site:
        con.print("  read as the site's (compared with nothing): "
                  + ", ".join(f"{k} {v}" if v != "true" else k for k, v in read.site.items()))
    if read.role is not None and read.role.role is not None:
        transfer = [n for n in read.pool_flags if n != read.role.setting]
        con.print(f"  read as a {read.role.role} pool's worker ({read.role.said}"
                  + (f"; its KV transfer: {', '.join(transfer)}" if transfer else "") + "): checked as that pool")
    elif read.pool_flags:  # the disaggregated launch prints them, but no role is read: the estimate is not a pool's
        con.print(f"  not read (a disaggregated pool's role and KV transfer, as `solve --serving disagg` prints them, "
                  f"without a role the profile maps; the estimate is of this command as one aggregated server, "
                  f"prefill and decode on its ranks): {', '.join(read.pool_flags)}")
    if read.not_read:
        con.print(f"  not read (the {read.framework} launch never prints them): {', '.join(read.not_read)}")
    for n in read.notes:
        con.print(f"  command: {n}")


def _check_file(config, model, hardware, cards, framework, candidate):
    """check of a deployment file: (the result, the model's name, the world size)."""
    from solver.one_config import check_deployment
    from solver.specs.deployment import load_deployment

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
    return res, model, world


COMMANDS = [check_cmd]
