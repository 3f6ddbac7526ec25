"""`shardplan solve`: the ranked top 2-3 parallel_configs for a model, hardware, world size and scenario."""
from __future__ import annotations

import click

from solver.cli.options import dtype_options
from solver.errors import InputError
from solver.plan.cpsat import SolverParams
from solver.api import explain_solution, run_solve
from solver.launch.candidates import candidate_launches, launch_text
from solver.report.candidates import result_dict, seed_yaml
from solver.report.render import FORMATS, console, dump, table
from solver.specs.scenario import Scenario


@click.command("solve")
@click.argument("model")
@click.option("--hardware", required=True, help="hardware name or YAML path")
@click.option("--cards", type=int, required=True, help="world size W (ranks)")
@click.option("--scenario", "kind", type=click.Choice(["throughput", "latency", "balanced"]), default="balanced",
              show_default=True, help="the seed's target scenario")
@click.option("--isl", type=int, default=4096, show_default=True, help="input tokens per request")
@click.option("--osl", type=int, default=256, show_default=True, help="output tokens per request")
@click.option("--concurrency", type=int, default=None, help="fixed concurrent requests (default: planner decides)")
@click.option("--max-concurrency", type=int, default=4096, show_default=True)
@click.option("--phase", type=click.Choice(["serving", "prefill", "decode"]), default="serving", show_default=True)
@click.option("--ttft-ms", type=float, default=None, help="SLA: time to first token")
@click.option("--tpot-ms", type=float, default=None, help="SLA: time per output token")
@click.option("--mtp", type=int, default=0, show_default=True, help="next-n (MTP) depth")
@click.option("--framework", default="generic", show_default=True, help="framework profile name or YAML path")
@dtype_options
@click.option("--method", type=click.Choice(["cpsat", "exhaustive"]), default="cpsat", show_default=True)
@click.option("--workers", type=int, default=1, show_default=True, help="CP-SAT search workers")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--time-limit", type=float, default=10.0, show_default=True, help="seconds per CP-SAT solve")
@click.option("--top", type=int, default=3, show_default=True)
@click.option("--allow-cross-node", is_flag=True, help="let TP groups leave the node (a cost, not a wall)")
@click.option("--explain", is_flag=True, help="why the seed's main alternative patterns lost, and the Pareto front")
@click.option("--format", "fmt", type=click.Choice([*FORMATS, "launch"]), default="yaml", show_default=True,
              help="output format; launch: the engine command per candidate (--framework names the engine)")
def solve_cmd(model, hardware, cards, kind, isl, osl, concurrency, max_concurrency, phase, ttft_ms, tpot_ms, mtp,
              framework, weight_dtype, moe_weight_dtype, kv_dtype, method, workers, seed, time_limit, top,
              allow_cross_node, explain, fmt) -> None:
    """Recommend the top 2-3 parallel_configs (seed Step 4 format)."""
    for flag, value in (("--isl", isl), ("--osl", osl), ("--workers", workers), ("--top", top),
                        ("--max-concurrency", max_concurrency)):
        if value is not None and value < 1:
            raise InputError(flag, f"must be >= 1, got {value}")
    if concurrency is not None and concurrency < 1:
        raise InputError("--concurrency", f"must be >= 1, got {concurrency}")
    scenario = Scenario(kind=kind, isl=isl, osl=osl, concurrency=concurrency, max_concurrency=max_concurrency,
                        ttft_ms=ttft_ms, tpot_ms=tpot_ms, mtp=mtp, phase=phase)
    params = SolverParams(workers=workers, seed=seed, time_limit_s=time_limit)
    result, cands = run_solve(model, hardware, cards, scenario, framework, weight_dtype, moe_weight_dtype,
                              kv_dtype, method, params, top, allow_cross_node)
    why = (explain_solution(model, hardware, cards, scenario, cands[0], framework, weight_dtype,
                            moe_weight_dtype, kv_dtype) if explain and cands else [])
    launches = (candidate_launches(model, hardware, framework, cands, scenario, weight_dtype, moe_weight_dtype,
                                   kv_dtype) if fmt in ("json", "launch") else None)
    if fmt == "launch":
        click.echo(launch_text(cands, launches), nl=False)
        return
    if fmt == "json":
        data = result_dict(result, cands, launches)
        if explain:
            data["explain"] = why
        click.echo(dump(data, "json"))
        return
    if fmt == "yaml":
        click.echo(seed_yaml(result, cands), nl=False)
        if explain:
            click.echo("# why the main alternatives lost:")
            for line in why:
                click.echo(f"#   {line}")
            click.echo(dump({"pareto_front": result_dict(result, cands)["pareto_front"]}, "yaml"))
        return
    con = console()
    rows = []
    for c in cands:
        d = result_dict(result, [c])["candidates"][0]
        e = d["estimation"]
        rows.append([c.rank, c.pattern, " ".join(f"{k.replace('_size', '')}={v}" for k, v in
                                                 c.planned.config.knobs().items() if v > 1) or "all 1",
                     e["concurrency"], e["memory_per_rank_gb"], e["ttft_ms"], e["tpot_ms"],
                     e["output_tokens_per_s_per_rank"], c.reference])
    con.print(table(f"{model} on {cards} x {hardware} ({kind})",
                    ["#", "pattern", "knobs > 1", "conc.", "mem GB", "TTFT ms", "TPOT ms", "tok/s/rank", "reference"],
                    rows))
    for c in cands:
        con.print(f"[bold]{c.rank}. {c.pattern}[/bold]: {c.reason}")
    con.print("binding constraints: " + ("; ".join(result.binding) if result.binding else "none"))
    for line in why:
        con.print(f"why not {line}")


COMMANDS = [solve_cmd]
