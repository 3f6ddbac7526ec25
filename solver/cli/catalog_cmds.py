"""`models`, `hardware`, `inspect` and `memory`: what a model is and what a rank holds."""
from __future__ import annotations

import click

from solver.catalog import DEFAULT_FRAMEWORK
from solver.cli.options import (MODEL, CARDS, CONCURRENCY, FRACTION, MTP, NAME, TOKENS, command_imports, dtype_options,
                                format_option, knob_options)
from solver.report.render import console, dump, table


def _warn(lines) -> None:
    for line in lines:
        click.echo(f"note: {line}", err=True)


@click.command("models")
@format_option()
def models_cmd(fmt: str) -> None:
    """List the model catalog: file, architecture, total and active parameters, aliases."""
    from solver.estimate.params import count_params
    from solver.specs.model_catalog import list_models, load_model

    rows = []
    for file, aliases in list_models():
        spec = load_model(file.removesuffix(".json"))
        p = count_params(spec)
        rows.append({"file": file, "aliases": aliases, "architecture": spec.architecture,
                     "total_params": p.total, "active_params": int(round(p.active))})
    if fmt != "table":
        click.echo(dump({"models": rows}, fmt))
        return
    console().print(table("models", ["file", "architecture", "total (B)", "active (B)", "aliases"],
                          [[r["file"], r["architecture"], r["total_params"] / 1e9, r["active_params"] / 1e9,
                            ", ".join(r["aliases"])] for r in rows]))


@click.command("hardware")
@format_option()
def hardware_cmd(fmt: str) -> None:
    """List the hardware catalog: memory, HBM bandwidth, peak FLOP/s, ranks per node, scale-up domain."""
    from solver.specs.hardware_catalog import list_hardware, load_hardware

    rows = []
    for name in list_hardware():
        hw = load_hardware(name)
        rows.append({"name": name, "description": hw.description, "memory_gb": hw.memory_bytes / 1e9,
                     "memory_gib": hw.memory_gib,
                     "hbm_tb_s": hw.hbm_bandwidth_Bps / 1e12,
                     "peak_tflops": {k: v / 1e12 for k, v in hw.peak_flops.items()},
                     "ranks_per_node": hw.ranks_per_node, "scale_up_domain": hw.scale_up_domain})
    if fmt != "table":
        click.echo(dump({"hardware": rows}, fmt))
        return
    console().print(table("hardware (GB = 1e9 bytes, GiB = 2^30)", ["name", "memory (GB)", "(GiB)", "HBM (TB/s)", "peak TFLOP/s", "ranks/node",
                                       "scale-up", "description"],
                          [[r["name"], r["memory_gb"], r["memory_gib"], r["hbm_tb_s"],
                            " ".join(f"{k}:{v:g}" for k, v in r["peak_tflops"].items()), r["ranks_per_node"],
                            r["scale_up_domain"], r["description"]] for r in rows]))


@click.command("inspect")
@click.argument("model", type=MODEL)
@click.option("--download", is_flag=True, help="fetch config.json (only) from the Hugging Face hub when the "
              "name is neither in the catalog nor in the local hub cache")
@format_option()
def inspect_cmd(model: str, download: bool, fmt: str) -> None:
    """Layer stack, parameters and state per layer type, modules per group (seed Step 1)."""
    with command_imports():
        from solver.report.model_view import inspect_data
        from solver.specs.model_catalog import load_model

    spec = load_model(model, download=download)
    _warn(spec.warnings)
    data = inspect_data(spec)
    if fmt != "table":
        click.echo(dump(data, fmt))
        return
    con = console()
    con.print(f"[bold]{spec.name}[/bold]  model_type={spec.model_type}  architecture={data['architecture']}")
    con.print(f"stack ({spec.num_layers} layers, pattern from {data['pattern_source'] or 'the default: every layer alike'}): "
              f"{data['stack']}")
    con.print(table("layer types", ["block", "layers", "params/layer (M)", "params (B)", "state B/token",
                                    "window", "state const (MB)"],
                    [[r["block"], r["layers"], r["params_per_layer"] / 1e6, r["params"] / 1e9,
                      r["state_bytes_per_token"], r["state_window"] or "-", r["state_constant_bytes"] / 1e6]
                     for r in data["layer_types"]]))
    con.print(table("outside the stack", ["module", "params (B)", "placement"],
                    [[r["module"], r["params"] / 1e9, r["placement"]] for r in data["outside_stack"]]))
    con.print(table("basic parameters (seed 1.1)", ["parameter", "value"], list(data["basic"].items())))
    con.print(table("parameters per module", ["module", "params (B)", "share", "active/token (B)", "split by"],
                    [[m["name"], m["params"] / 1e9, f"{m['share']:.1%}", m["active_params"] / 1e9, m["parallel"]]
                     for m in data["modules"]]))
    con.print(f"total {data['total_params'] / 1e9:.2f}B, active {data['active_params'] / 1e9:.2f}B per token, "
              f"MTP {data['mtp_params'] / 1e9:.2f}B (checkpoint {data['checkpoint_params'] / 1e9:.1f}B)")
    con.print(table("module characteristics (seed 1.2)", ["module", "prefill", "decode", "parallel dimension"],
                    [[c["module"], c["prefill"], c["decode"], c["parallel"]] for c in data["characteristics"]]))


@click.command("memory")
@click.argument("model", type=MODEL)
@click.option("--hardware", "hardware", type=NAME, required=True, help="hardware name or YAML path")
@click.option("--cards", type=CARDS, required=True, help="world size W (ranks)")
@knob_options
@click.option("--batch", type=CONCURRENCY, required=True, help="concurrent sequences across the deployment")
@click.option("--seq-len", type=TOKENS, required=True, help="context tokens held per sequence")
@click.option("--mtp", type=MTP, default=0, show_default=True, help="next-n (MTP) depth; 0 = off")
@click.option("--prefill-chunk", type=TOKENS, default=None,
              help="tokens per attention replica in one prefill step, which sizes the activations (default: the "
                   "framework's step budget on the hardware, an attention-DP rank's share where it divides it)")
@click.option("--mem-fraction", type=FRACTION, default=None,
              help="F of the limit min(F x capacity, capacity - reserve) (default 0.95)")
@click.option("--framework", type=NAME, default=DEFAULT_FRAMEWORK, show_default=True,
              help="framework profile whose rules the knobs must satisfy (name or YAML path)")
@dtype_options
@format_option()
def memory_cmd(model, hardware, cards, batch, seq_len, mtp, prefill_chunk, mem_fraction, framework, weight_dtype,
               moe_weight_dtype, kv_dtype, fmt, **knobs) -> None:
    """Per-rank memory of a parallel_config: feasible or not, and the largest batch that fits."""
    from solver.one_config import memory_config
    from solver.report.model_view import cache_line
    from solver.specs.model_catalog import model_title

    res = memory_config(model, hardware, cards, knobs, batch, seq_len, mtp, prefill_chunk, mem_fraction, framework,
                        weight_dtype, moe_weight_dtype, kv_dtype)
    spec, hw, opts = res.model, res.hardware, res.options
    _warn(res.notes)
    data = res.as_dict()
    if fmt != "table":
        click.echo(dump(data, fmt))
        return
    con = console()
    con.print(f"[bold]{model_title(model, spec.name)}[/bold] on {cards} x {hw.name}: "
              + " ".join(f"{k}={v}" for k, v in data["parallel_config"].items()))
    con.print(table("memory per rank (GB = 1e9 bytes)", ["item", "GB"],
                    [[k, v] for k, v in data["breakdown"].items()]))
    verdict = "[green]feasible[/green]" if data["feasible"] else "[red]does not fit[/red]"
    reserve, cap = data["reserve_gb"], data["capacity_gb"]
    # under PP the figures are the largest stage's (memory_per_rank): say which, as the JSON's notes do
    where = (f"pipeline stage {data['pipeline_stage']} of {res.parallel_config.pp_size} (the largest), "
             if "pipeline_stage" in data else "")
    con.print(f"{where}total {data['total_gb']:.2f} GB of {cap:.2f} GB ({cap * 1e9 / 2**30:.1f} GiB) = "
              f"{data['model_gb']:.2f} GB model + {reserve:.2f} GB runtime reserve; the model's limit is "
              f"{data['limit_gb']:.2f} GB = min({opts.total_fraction:g} x capacity, capacity - reserve): "
              f"{verdict}; weights+KV {data['weights_kv_share']:.0%} of capacity"
              f"{' (above the seed 0.8 mark)' if data['tight'] else ''}; max batch at {seq_len} tokens: "
              f"{data['max_batch']}")
    con.print(cache_line(data["cache"], res.parallel_config))


COMMANDS = [models_cmd, hardware_cmd, inspect_cmd, memory_cmd]
