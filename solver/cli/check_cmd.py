"""`shardplan check CONFIG.yaml`: validate a user's parallel_config and estimate it (seed Step 4 review)."""
from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click

from solver.cli.options import CARDS, NAME, check_mtp, format_option, load_from
from solver.errors import InputError
from solver.report.render import console, dump
from solver.specs.knobs import KNOBS

if TYPE_CHECKING:
    from solver.rank.review import Review
    from solver.specs.parallel import ParallelConfig


def _est(e, prompt_len: int | None = None) -> dict:
    """The figures of one estimate; `prompt_len`: a prefill-only workload's prompt length, whose throughput is
    the prompt tokens (one token is emitted a prompt), as `estimate` and `solve` show it."""
    if e is None:
        return {}
    prompts = ({"input_tokens_per_s_per_rank": round(e.output_tokens_per_s_per_rank * prompt_len, 1)}
               if prompt_len is not None and not e.has_tpot else {})
    return {"ttft_ms": round(e.ttft_s * 1e3, 2) if e.has_ttft else None,
            "tpot_ms": round(e.tpot_s * 1e3, 3) if e.has_tpot else None,
            "output_tokens_per_s_per_rank": round(e.output_tokens_per_s_per_rank, 1),
            "memory_per_rank_gb": round(e.memory.model_bytes / 1e9, 2),
            "memory_limit_gb": round(e.memory.limit_bytes / 1e9, 2), "memory_feasible": e.memory.feasible,
            "params_per_card_gb": round(e.memory.weights_total / 1e9, 2),
            "kv_cache_per_card_gb": round(e.memory.cache_total / 1e9, 2), **prompts}


def review_dict(r: Review, pc: ParallelConfig, knobs: tuple[str, ...] = KNOBS, prompt_len: int | None = None) -> dict:
    return {"valid": r.valid, "parallel_config": pc.model_view(knobs),
            "violations": r.violations, "warnings": r.warnings, "common_errors": r.common_errors,
            "notes": r.notes, "estimation": _est(r.estimate, prompt_len),
            "comparisons": {k: _est(v, prompt_len) for k, v in r.comparisons.items()}}


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
    from solver.estimate.serving import Workload
    from solver.rank.review import review
    from solver.specs.deployment import load_deployment
    from solver.specs.framework import load_framework
    from solver.specs.hardware_catalog import load_hardware
    from solver.specs.model_catalog import load_model
    from solver.specs.notes import context_notes
    from solver.specs.parallel import ParallelConfig, make_parallel_config, model_knobs
    from solver.specs.precision import resolve_precision

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
    if dep.workload is None:
        raise InputError("workload", f"missing in {config}: phase/batch/seq_len or isl/osl/concurrency")
    spec = load_from(load_model, model, "model", flags["model"], config)
    hw = load_from(load_hardware, hardware, "hardware", flags["hardware"], config)
    fw = load_from(load_framework, framework or dep.framework, "framework", flags["framework"], config)
    # a pairing the engine does not run on, named where the framework came from (the flag or the file's key)
    fw.check_vendor(hw.name, hw.vendor, flags["framework"] or f"{config}: framework")
    dep.check_derived(world, config, fw.replica_knobs)  # attn_dp_size may be the engine's DP
    check_mtp(spec, dep.mtp, f"{config}: mtp")
    w = dep.workload
    if w.phase == "prefill" and dep.mtp_accept is not None:  # as estimate --phase prefill refuses --mtp-accept
        raise InputError(f"{config}: mtp_accept", "a prefill-only workload decodes nothing: its acceptance rate "
                                                  "would be read by nothing; drop it")
    mtp = {"mtp": dep.mtp, **({"mtp_accept": dep.mtp_accept} if dep.mtp_accept is not None else {})}
    if w.phase == "serving":
        wl = Workload("serving", isl=w.isl, osl=w.osl, concurrency=w.concurrency, **mtp)
    elif w.phase == "decode" and w.isl is not None:
        wl = Workload.decode_of(w.batch, w.isl, w.osl, **mtp)  # type: ignore[arg-type]
    else:
        wl = Workload(w.phase, batch=w.batch, seq_len=w.seq_len, **mtp)
    try:
        pc = make_parallel_config(world, fields=dep.fields, **dep.parallel_config)
    except InputError as exc:
        # a knob that does not divide the world is a class A violation to report, not bad input
        pc = ParallelConfig(world_size=world, **dep.parallel_config)
        note = str(exc)
    else:
        note = None
    prev = ParallelConfig(world_size=world, **dep.previous_parallel_config) if dep.previous_parallel_config else None
    prec = resolve_precision(spec, hw, dep.quant.weights, dep.quant.moe_weights, dep.quant.kv_cache,
                             fields=dep.fields)
    r = review(spec, hw, fw, pc, prec, wl, dep.mtp, dep.enable_online_split_weight, prev)
    # what runs in which precision (weight-only W4A16 / W8A16, a format served as bf16), as estimate and memory say
    r.notes += [n for n in prec.notes if n not in r.notes] + list(context_notes(spec, wl.context_len))
    kv_refusal = fw.kv_dtype_refusal(dep.quant.kv_cache)  # the engine cannot run it: launch refuses, solve too
    if kv_refusal:
        r.violations["C"].append(f"quant.kv_cache: {kv_refusal}; launch refuses it and solve does not plan it")
    if note and not r.violations["A"]:  # else the model check already names it, in the file's own keys
        r.violations["A"].insert(0, note)
    data = review_dict(r, pc, model_knobs(spec), wl.seq_len if wl.kind == "prefill" else None)
    if fmt != "table":
        click.echo(dump(data, fmt))
    else:
        con = console()
        con.print(f"[bold]{spec.name}[/bold] on {world} x {hw.name} ({fw.name}): "
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
