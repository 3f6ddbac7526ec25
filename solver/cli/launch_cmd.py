"""`shardplan launch DEPLOYMENT.yaml --engine E`: the engine's command for a user's own parallel_config, or
one line naming the knob the engine cannot express (exit 2)."""
from __future__ import annotations

from dataclasses import replace

import click

from solver.cli.options import MODEL, factors_option
from solver.cli.options import CARDS, HOST, NAME, Deferred, given
from solver.errors import InputError
from solver.one_config import check_mtp, deployment_workload, load_from
from solver.report.render import dump


def _engine_help() -> str:
    from solver.specs.framework import list_frameworks

    return (f"engine profile: {', '.join(list_frameworks())}, or a YAML path; overrides the file's framework "
            "(required where the file names none)")


def _model_path() -> str:
    from solver.launch import MODEL_PATH

    return MODEL_PATH


def _head_addr() -> str:
    from solver.launch import HEAD_ADDR

    return HEAD_ADDR


@click.command("launch")
@click.argument("config", type=NAME)
@click.option("--engine", type=NAME, default=None, cls=Deferred, help_fn=_engine_help)
@click.option("--model", type=MODEL, default=None, help="overrides the file's model")
@click.option("--hardware", type=NAME, default=None, help="overrides the file's hardware")
@click.option("--cards", type=CARDS, default=None, help="overrides the file's world_size")
@click.option("--model-path", type=NAME, default=_model_path, show_default=True, cls=Deferred,
              help="checkpoint path or HF id in the command")
@click.option("--head-addr", type=HOST, default=_head_addr, show_default=True, cls=Deferred, help="head node address (multi-node)")
@click.option("--candidate", type=NAME, default=None,
              help="the candidate_x block to read from a file of several (a, b, c or 1, 2, 3: solve --format yaml)")
@click.option("--format", "fmt", type=click.Choice(["shell", "json", "yaml"]), default="shell", show_default=True,
              help="shell: the commands to paste; json/yaml: the launch document (argv, env, files per node)")
@factors_option
def launch_cmd(config, engine, model, hardware, cards, model_path, head_addr, candidate, fmt) -> None:
    """Print the engine command (per node) and files for CONFIG's parallel_config (the `check` file format)."""
    from solver.estimate.memory import memory_per_rank
    from solver.estimate.memory_options import framework_options, workload_options
    from solver.launch import LaunchInputs, emit_launch, model_len, render_shell
    from solver.rank.review import hardware_placement, straddling_groups
    from solver.space.placement import as_launched
    from solver.specs.deployment import load_deployment
    from solver.estimate.request_state import held_per_replica
    from solver.specs.framework import load_framework
    from solver.specs.hardware_catalog import load_hardware
    from solver.specs.model_catalog import load_model, model_title
    from solver.specs.notes import context_notes
    from solver.specs.parallel import make_parallel_config
    from solver.specs.precision import resolve_precision

    dep = load_deployment(config, candidate)
    if dep.afd:  # check estimates it (estimate.afd); no profile has an AFD command to write
        raise InputError(f"{config}: afd", "launch does not write attention-FFN disaggregated commands; "
                                           "`shardplan check` reviews and estimates this deployment")
    flags = {"model": "--model" if model else None, "hardware": "--hardware" if hardware else None}
    model, hardware, world = model or dep.model, hardware or dep.hardware, cards or dep.world_size
    for flag, value in (("model", model), ("hardware", hardware), ("world_size", world)):
        if value is None:
            raise InputError(flag, f"missing: give it in {config} or as --{flag.replace('world_size', 'cards')}")
    if dep.workload is None:
        raise InputError("workload", f"missing in {config}: phase/batch/seq_len or isl/osl/concurrency")
    if engine is None and "framework" not in dep.model_fields_set:
        raise InputError("--engine", f"missing: give it, or name the framework in {config}")
    try:
        fw = load_framework(engine or dep.framework)
    except InputError as exc:  # named by where the engine came from: the flag, or the file it defaults to
        raise InputError("--engine" if engine else f"{config}: framework", exc.problem) from None
    # the file must say one thing (as `check` requires); its attn_dp_size may be the engine's DP (-dcp inside TP)
    dep.check_derived(world, config, fw.replica_knobs)
    spec = load_from(load_model, model, "model", flags["model"], config)
    hw = as_launched(load_from(load_hardware, hardware, "hardware", flags["hardware"], config), fw, world)
    # a pairing the engine does not run on, named where the engine came from (the flag or the file's key)
    fw.check_vendor(hw.name, hw.vendor, "--engine" if engine else f"{config}: framework")
    check_mtp(spec, dep.mtp, f"{config}: mtp")
    w = dep.workload
    batch, max_len = w.sequences, w.longest
    pc = make_parallel_config(world, fields=dep.fields, **dep.parallel_config)
    # the file's formats, checked where the file states them before the engine spells them
    prec = resolve_precision(spec, hw, dep.quant.weights, dep.quant.moe_weights, dep.quant.kv_cache,
                             fields=dep.fields)
    engine_len = model_len(w.phase, max_len)  # a prefill-only instance still emits its one token
    # priced as the serving estimate prices the plan's memory (estimate.serving.estimate): under the engine's
    # layout, and with one request's prompt where the workload names it, so the share is the one solve prints
    # a prefill-only deployment runs each replica's prompts in one step (estimate.figures), its forward holds them
    # all and its token budget too (launch.emit.step_budget)
    opts, tokens = framework_options(fw, hw=hw), 0
    if w.phase == "prefill":
        opts = workload_options(opts, max_len, step_prompts=batch if fw.sets_token_budget() else None)
        tokens = held_per_replica(batch, pc) * deployment_workload(dep).prompt_tokens[0]  # the busiest replica's
    elif w.isl:
        opts = workload_options(opts, w.isl)
    memory = memory_per_rank(spec, hw, pc, prec, batch, max_len, opts, mtp_layers=dep.mtp)
    inputs = LaunchInputs(batch=batch, max_model_len=engine_len, mtp=dep.mtp, weight_dtype=dep.quant.weights,
                          moe_weight_dtype=dep.quant.moe_weights, kv_dtype=dep.quant.kv_cache,
                          model_path=model_path, head_addr=head_addr, memory=memory, prefill_tokens=tokens)
    try:
        launch = emit_launch(fw, spec, hw, pc, inputs)
    except InputError as exc:  # the file's knobs the model cannot run: named under the file, as check names them
        if exc.field == "--engine" and not engine:  # a profile the file named: under its key
            raise InputError(f"{config}: framework", exc.problem) from None
        if exc.field != "parallel_config":
            raise
        raise InputError(f"{config}: parallel_config", exc.problem) from None
    # an address no command reads would be dropped unread: rendered with a mark no output holds otherwise, the
    # commands show whether any argument reads it
    mark = "shardplan.head.addr.mark"
    if given("head_addr") and mark not in dump(emit_launch(fw, spec, hw, pc, replace(inputs, head_addr=mark)), "json"):
        # the nodes the placement spans, and the commands where fewer (one command for several nodes)
        nodes, cmds = len(launch.get("placement") or launch.get("nodes", ())), len(launch.get("nodes", ()))
        spans = f"{nodes} node{'s' if nodes != 1 else ''}" + (
            f" from {cmds} command{'s' if cmds != 1 else ''}" if cmds and cmds != nodes else "")
        raise InputError("--head-addr", f"{model_title(model, spec.name)} on {world} x {hw.name} ({fw.name}) "
                                        f"launches on {spans}: no command reads a head node address; drop --head-addr")
    # the engine would fail to allocate what the memory model does not fit: said, not refused (the command is
    # what the user asked for; `check` reports it as a violation)
    misfit = memory.misfit()
    # so is a placement `check` refuses (class B): a TP group across nodes, too many experts per rank
    placement = [f"{p}: `shardplan check` reports it as a class B violation"
                 for p in hardware_placement(spec, hw, pc, fw.kvp_splits_attention_weights)[1]]
    placement += [f"{p}: `shardplan check` warns"
                  for p in straddling_groups(spec, hw, pc, fw.kvp_splits_attention_weights)]
    notes = context_notes(spec, engine_len, fw) + ([misfit] if misfit else []) + placement
    if notes:
        launch["notes"] = [*launch.get("notes", ()), *notes]
    if fmt == "shell":
        click.echo(render_shell(launch, f"{model_title(model, spec.name)} on {world} x {hw.name} ({fw.name})"), nl=False)
    else:
        click.echo(dump(launch, fmt))


COMMANDS = [launch_cmd]
