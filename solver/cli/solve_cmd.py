"""`shardplan solve`: the ranked top 2-3 parallel_configs for a model, hardware, world size and scenario."""
from __future__ import annotations

import click

from solver.catalog import DEFAULT_FRAMEWORK
from solver.cli.options import MODEL, factors_option
from solver.cli.options import (CARDS, CONCURRENCY, MTP, NAME, SECONDS, SEED, TOKENS, TOP, WORKERS,
                                command_imports, dtype_options, format_option, mtp_accept_option,
                                pool_workers_options, prefix_hit_option, scenario_from_options, sla_options)
from solver.errors import InputError
from solver.one_config import check_mtp
from solver.report.render import console, dump, table
from solver.specs.knobs import nondefault_label
from solver.specs.limits import DEFAULT_MAX_CONCURRENCY, PLAN_METHODS
from solver.specs.pool_workers import pool_workers


@click.command("solve")
@click.argument("model", type=MODEL)
@click.option("--hardware", type=NAME, required=True, help="hardware name or YAML path")
@click.option("--cards", type=CARDS, required=True, help="world size W (ranks)")
@click.option("--scenario", "kind", type=click.Choice(["throughput", "latency", "balanced"]), default="balanced",
              show_default=True, help="the seed's target scenario")
@click.option("--isl", type=TOKENS, default=4096, show_default=True, help="input tokens per request")
@click.option("--osl", type=TOKENS, default=256, show_default=True, help="output tokens per request")
@click.option("--concurrency", type=CONCURRENCY, default=None, help="fixed concurrent requests (default: planner decides)")
@click.option("--max-concurrency", type=CONCURRENCY, default=DEFAULT_MAX_CONCURRENCY, show_default=True,
              help="upper bound on concurrent requests the planner considers")
@click.option("--phase", type=click.Choice(["serving", "prefill", "decode"]), default="serving", show_default=True,
              help="serving (prefill and decode together), or plan for one phase alone")
@sla_options
@click.option("--mtp", type=MTP, default=0, show_default=True, help="next-n (MTP) depth")
@mtp_accept_option
@prefix_hit_option
@click.option("--framework", type=NAME, default=DEFAULT_FRAMEWORK, show_default=True,
              help="framework profile name or YAML path")
@dtype_options
@click.option("--method", type=click.Choice(PLAN_METHODS), default="cpsat", show_default=True,
              help="cpsat: the CP-SAT planner; exhaustive: enumerate every configuration (a cross-check, slower: "
              "within --time-limit as a whole)")
@click.option("--workers", type=WORKERS, default=1, show_default=True, help="CP-SAT search workers")
@click.option("--seed", type=SEED, default=0, show_default=True, help="CP-SAT random seed")
@click.option("--time-limit", type=SECONDS, default=10.0, show_default=True,
              help="seconds per CP-SAT solve; a solve that runs out reports the best found and its gap "
              "(--method exhaustive: for the whole enumeration)")
@click.option("--top", type=TOP, default=3, show_default=True, help="candidates to list")
@click.option("--allow-cross-node", is_flag=True, help="let TP groups leave the node (a cost, not a wall)")
@click.option("--explain", is_flag=True, help="why the seed's main alternative patterns lost, and the Pareto front")
@click.option("--serving", type=click.Choice(["agg", "disagg"]), default="agg", show_default=True,
              help="disagg: plan a prefill pool and a decode pool (xPyD) and compare with the aggregated plan")
@pool_workers_options
@format_option(extra=("launch",), help="output format; launch: the engine command per candidate (--framework "
               "names the engine)")
@factors_option
def solve_cmd(model, hardware, cards, kind, isl, osl, concurrency, max_concurrency, phase, ttft_ms, tpot_ms, mtp,
              mtp_accept, prefix_hit, framework, weight_dtype, moe_weight_dtype, kv_dtype, method, workers, seed,
              time_limit, top, allow_cross_node, explain, serving, prefill_workers, decode_workers, fmt) -> None:
    """Recommend the top 2-3 parallel_configs (seed Step 4 format)."""
    with command_imports():
        from solver.entry import explain_solution, run_solve, solve_deployment, solve_dict
        from solver.plan.points import SolverParams
        from solver.rank.select import ordering
        from solver.report.candidates import (answer_notes, binding_line, front_lines, result_dict, seed_yaml,
                                              table_figures)

    scenario = scenario_from_options(kind=kind, isl=isl, osl=osl, concurrency=concurrency,
                                     max_concurrency=max_concurrency, ttft_ms=ttft_ms, tpot_ms=tpot_ms, mtp=mtp,
                                     mtp_accept=mtp_accept, phase=phase, prefix_hit=prefix_hit)
    check_mtp(model, mtp)
    if explain and fmt == "launch":  # the engine commands are the whole output: the reasons would be dropped
        raise InputError("--explain", "not shown with --format launch (the engine commands only); use --format "
                                      "table, yaml or json for the reasons")
    params = SolverParams(workers=workers, seed=seed, time_limit_s=time_limit)
    fixed = pool_workers(serving, prefill_workers, decode_workers)
    if serving == "disagg":  # solver.entry.run_disagg plans both pools and the aggregated comparison
        from solver.entry import run_disagg
        from solver.report.disagg_view import render

        if explain:
            raise InputError("--explain", "not available with --serving disagg (the comparison says why)")
        rep = run_disagg(model, hardware, cards, scenario, framework, weight_dtype, moe_weight_dtype, kv_dtype,
                         params, top, allow_cross_node, method=method, workers=fixed)
        for line in rep.input_notes:
            click.echo(f"note: {line}", err=True)
        click.echo(render(rep, fmt), nl=False)
        return
    result, cands = run_solve(model, hardware, cards, scenario, framework, weight_dtype, moe_weight_dtype,
                              kv_dtype, method, params, top, allow_cross_node, copies_hint=True)
    from solver.specs.framework import load_framework

    fw = load_framework(framework)
    replica_knobs = fw.replica_knobs  # attn_dp_size as the engine's DP
    note = result.timeout_note()
    for line in answer_notes(result, scenario):
        click.echo(f"note: {line}", err=True)
    why = (explain_solution(model, hardware, cards, scenario, cands[0], framework, weight_dtype,
                            moe_weight_dtype, kv_dtype, cands) if explain and cands else [])
    launches = None
    if fmt in ("json", "launch"):  # the launch emitter loads only for the formats that show it
        from solver.launch.candidates import candidate_launches, launch_text

        launches = candidate_launches(model, hardware, framework, cands, scenario, weight_dtype, moe_weight_dtype,
                                      kv_dtype)
    if fmt == "launch":
        click.echo(launch_text(cands, launches), nl=False)
        return
    prompt_len = scenario.isl if scenario.phase == "prefill" else None  # its throughput is prompt tokens
    deployment = solve_deployment(model, hardware, cards, scenario, framework, weight_dtype, moe_weight_dtype, kv_dtype)
    if fmt == "json":
        data = solve_dict(model, hardware, cards, scenario, framework, weight_dtype, moe_weight_dtype, kv_dtype,
                          result, cands, launches)
        if explain:
            data["explain"] = why
        click.echo(dump(data, "json"))
        return
    if fmt == "yaml":
        click.echo(seed_yaml(result, cands, replica_knobs, prompt_len, deployment, scenario, fw.fixed_knobs),
                   nl=False)
        if explain:
            click.echo("# why the main alternatives lost:")
            for line in why:
                click.echo(f"#   {line}")
            # comments, so the file stays one `check` and `launch` read
            front = dump({"pareto_front": result_dict(result, cands, replica_knobs=replica_knobs)["pareto_front"]}, "yaml")
            click.echo("\n".join(f"# {line}" for line in front.splitlines()))
        return
    con = console()
    rows = []
    for c in cands:
        e = table_figures(c, prompt_len)
        rows.append([c.rank, c.pattern, nondefault_label(c.planned.config.settings()),
                     e["concurrency"], e["memory_per_rank_gb"], "yes" if e["memory_feasible"] else "NO",
                     *("-" if e[k] is None else e[k] for k in ("ttft_ms", "tpot_ms")),
                     e["tokens_per_s_per_rank"], c.reference])
    rate = "prompt tok/s/rank" if prompt_len is not None else "tok/s/rank"
    only = f", {scenario.phase} only" if scenario.phase != "serving" else ""  # a one-phase plan says so
    from solver.specs.hardware_catalog import load_hardware
    from solver.specs.model_catalog import load_model, model_title

    device = load_hardware(hardware).name  # a user's file is named by its `name`, its path in brackets
    where = device if device == hardware else f"{device} ({hardware})"
    con.print(table(f"{model_title(model, load_model(model).name)} on {cards} x {where} ({kind}{only})",
                    ["#", "pattern", "knobs > 1", "conc.", "mem GB", "fits", "TTFT ms", "TPOT ms", rate,
                     "reference"],
                    rows))
    for c in cands:
        con.print(f"[bold]{c.rank}. {c.pattern}[/bold]: {c.reason}")
    con.print(binding_line(result, cands))
    con.print(f"solver status: {result.status}" + (f" ({note})" if note else ""))
    con.print(f"ordering: {ordering(cands)}")
    if cands:
        mem = cands[0].planned.estimate.memory  # one hardware, one limit for every candidate
        con.print(f"mem GB: per rank, the runtime reserve aside; fits: mem GB within the limit "
                  f"{mem.limit_bytes / 1e9:.2f} GB = {mem.limit_formula()}, per the full estimate")
    for line in why:
        # the candidates' scores first (rank/explain.candidate_scores), what MTP does (mtp_clause), then why each
        # alternative lost
        con.print(line if line.startswith(("score:", "#", "MTP ", "note:")) else f"why not {line}", markup=False)
    if explain and result.front:
        con.print("Pareto front (request latency against tokens/s per rank):", markup=False)
        for line in front_lines(result, prompt_len):
            con.print(line, markup=False)


COMMANDS = [solve_cmd]
