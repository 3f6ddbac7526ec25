"""`shardplan sweep` (Pareto tables across cluster sizes) and `shardplan recommend` (the fewest cards for a load):
thin layers over solver.capacity."""
from __future__ import annotations

import sys
import time
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Callable, Iterator

import click

from solver.catalog import DEFAULT_FRAMEWORK
from solver.cli.options import MODEL, factors_option
from solver.cli.options import (CONCURRENCY, COPIES, DTYPE, JOBS, MTP, NAME, RATE, SECONDS, SEED, TOKENS, TOP,
                                DEFAULT_FORMAT, given, mtp_accept_option, pool_workers_options,
                                prefix_hit_option, sla_options)
from solver.errors import InfeasibleError, InputError
from solver.one_config import check_mtp
from solver.specs.knobs import nondefault_label
from solver.specs.limits import DEFAULT_MAX_CONCURRENCY, PLAN_METHODS
from solver.specs.pool_workers import pool_workers
from solver.report.render import FORMATS, console, dump, table

if TYPE_CHECKING:
    from solver.plan.points import SolverParams

SWEEP_FORMATS = ("csv", "json", "table")
_HW_HELP = "hardware name or YAML path; repeat it, or list several (--hardware atlas_a3 h200_sxm, or a,b)"
_DTYPE_HELP = "for every hardware (int8) or per hardware (atlas_a3=int8); repeatable"
_PRICE_HELP = "price per card-hour, HARDWARE=PRICE (repeatable)"


def _common(func: Callable) -> Callable:
    """Workload, SLA, framework and dtype options shared by sweep and recommend."""
    opts = [
        click.option("--isl", type=TOKENS, default=4096, show_default=True, help="input tokens per request"),
        click.option("--osl", type=TOKENS, default=256, show_default=True, help="output tokens per request"),
        sla_options,
        click.option("--max-concurrency", type=CONCURRENCY, default=None,
                     help=f"upper bound on concurrent requests the planner considers [default: "
                          f"{DEFAULT_MAX_CONCURRENCY}; recommend, aggregated, raises it where a cluster size "
                          "falls short at it]"),
        click.option("--mtp", type=MTP, default=0, show_default=True, help="next-n (MTP) depth"),
        mtp_accept_option,
        prefix_hit_option,
        click.option("--framework", type=NAME, default=DEFAULT_FRAMEWORK, show_default=True,
                     help="framework profile name or YAML path"),
        click.option("--weight-dtype", type=DTYPE, multiple=True, help="weights of every linear layer: " + _DTYPE_HELP),
        click.option("--moe-weight-dtype", type=DTYPE, multiple=True, help="routed-expert weights: " + _DTYPE_HELP),
        click.option("--kv-dtype", type=DTYPE, multiple=True, help="KV-cache dtype: " + _DTYPE_HELP),
        click.option("--allow-cross-node", is_flag=True, help="let TP groups leave the node (a cost, not a wall)"),
        click.option("--time-limit", type=SECONDS, default=10.0, show_default=True,
                     help="seconds per CP-SAT solve (--method exhaustive: per enumeration)"),
        click.option("--seed", type=SEED, default=0, show_default=True, help="CP-SAT random seed"),
    ]
    for opt in reversed(opts):
        func = opt(func)
    return func


def _dtype(values: tuple[str, ...]) -> list[str] | None:
    return list(values) or None


def _hardware(hardware: tuple[str, ...], more: tuple[str, ...]) -> list[str]:
    items = [*hardware, *more]
    if not items:
        raise InputError("--hardware", "give at least one hardware name or YAML path")
    return items


def _params(time_limit: float, seed: int) -> SolverParams:
    from solver.plan.points import SolverParams

    if time_limit <= 0:
        raise InputError("--time-limit", f"must be > 0, got {time_limit}")
    return SolverParams(workers=1, seed=seed, time_limit_s=time_limit)


@contextmanager
def _progress(description: str) -> Iterator[Callable[[int, int, str], None] | None]:
    """A rich progress bar on stderr when it is a terminal; nothing when piped or captured."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    err = Console(stderr=True)
    if not err.is_terminal:
        yield None
        return
    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TextColumn("{task.fields[last]}"), console=err, transient=True) as bar:
        task = bar.add_task(description, total=None, last="")

        def update(done: int, total: int, label: str) -> None:
            bar.update(task, completed=done, total=total or None, last=label)

        yield update


# ---------------------------------------------------------------------------------------------------- sweep


@click.command("sweep")
@click.argument("model", type=MODEL)
@click.argument("more_hardware", nargs=-1, type=NAME, metavar="[HARDWARE...]")
@click.option("--hardware", "hardware", type=NAME, multiple=True, help=_HW_HELP)
@click.option("--cards", required=True,
              help="cluster sizes: a list (8,16,32) or a range (8..1024: its ends and the powers of two "
                   "between), or both")
@click.option("--scenarios", "--scenario", "scenarios", multiple=True,
              help="throughput, latency, balanced (comma-separated or repeated)  [default: all three]")
@click.option("--seq-lens", default=None, help="several lengths: ISL or ISL:OSL, comma-separated (8192,65536:1024); "
              "replaces --isl/--osl")
@_common
@click.option("--concurrency", type=CONCURRENCY, default=None, help="fixed concurrent requests (default: planner decides)")
@click.option("--method", type=click.Choice(PLAN_METHODS), default="cpsat", show_default=True,
              help="cpsat: the CP-SAT planner; exhaustive: enumerate every configuration (a cross-check, slower: "
              "within --time-limit as a whole)")
@click.option("--top", type=TOP, default=3, show_default=True, help="candidates marked per combination")
@click.option("--explain-binding", is_flag=True,
              help="name the constraints that bind each recommended point (slower: one solve per family)")
@click.option("--jobs", "-j", type=JOBS, default=1, show_default=True, help="solves in parallel processes")
@click.option("--executor", type=click.Choice(["local", "ray", "dask"]), default="local", show_default=True,
              help="where the solves run: this machine (--jobs processes), or an existing Ray or Dask cluster "
              "(optional extras shardplan[ray] / shardplan[dask]); the table is the same bytes either way")
@click.option("--address", type=NAME, default=None, help="the cluster's address with --executor ray|dask "
              "(Dask: tcp://HOST:8786; Ray: ray://HOST:10001 or auto)")
@click.option("--out", "out", type=NAME, default=None, help="write the Pareto table here: .csv (default), .json or .parquet; "
              "without it the CSV goes to stdout")
@click.option("--plot", "plot", type=NAME, default=None,
              help="also draw the frontier and scale-out plots (.png, .svg or .pdf)")
@click.option("--format", "fmt", type=click.Choice(SWEEP_FORMATS), default=None,
              help="without --out, what goes to stdout: csv (the whole table; the default), json (records) or "
                   "table (the summary); with --out the file's extension sets its format and the summary is shown")
@click.option("--serving", type=click.Choice(["agg", "disagg"]), default="agg", show_default=True,
              help="disagg: plan prefill and decode pools (xPyD) per combination (solver.capacity.disagg)")
@pool_workers_options
@click.option("--price", "prices", multiple=True,
              help=_PRICE_HELP + "; one for every hardware swept: adds usd_per_hour and "
                   "usd_per_million_output_tokens to every row")
@factors_option
def sweep_cmd(model, more_hardware, hardware, cards, scenarios, seq_lens, isl, osl, ttft_ms, tpot_ms,
              max_concurrency, mtp, mtp_accept, prefix_hit, framework, weight_dtype, moe_weight_dtype, kv_dtype,
              allow_cross_node,
              time_limit, seed, concurrency, method, top, explain_binding, jobs, executor, address, out,
              plot, fmt, serving, prefill_workers, decode_workers, prices) -> None:
    """Capacity planning across cluster sizes: the Pareto front of every (hardware, cards, scenario), one row per
    configuration (every knob, memory, TTFT, TPOT, throughput), or the binding constraint when none fits."""
    _seq_lens_replace_isl(seq_lens)
    check_mtp(model, mtp)
    start = time.perf_counter()
    fixed = pool_workers(serving, prefill_workers, decode_workers)
    if serving == "disagg":  # one row per disaggregated plan (solver.capacity.disagg)
        from solver.capacity.disagg import sweep_disagg
        from solver.capacity.table import check_writable, write_table

        if executor != "local" or address is not None:
            raise InputError("--executor", "runs aggregated sweeps only; --serving disagg solves on this machine")
        if fmt == "table":
            raise InputError("--format", "table is not available with --serving disagg (no summary: the rows go "
                                         "out as csv or json)")
        _format_with_out(fmt, out)
        if out is not None:
            check_writable(out, "--out")
        df = sweep_disagg(model, _hardware(hardware, more_hardware), cards, list(scenarios) or None, isl=isl,
                          osl=osl, seq_lens=seq_lens, ttft_ms=ttft_ms, tpot_ms=tpot_ms,
                          max_concurrency=max_concurrency, mtp=mtp, mtp_accept=mtp_accept, prefix_hit=prefix_hit,
                          framework=framework, weight_dtype=_dtype(weight_dtype), moe_weight_dtype=_dtype(moe_weight_dtype),
                          kv_dtype=_dtype(kv_dtype), params=_params(time_limit, seed), top=top,
                          allow_cross_node=allow_cross_node, concurrency=concurrency, method=method, jobs=jobs,
                          plot=plot, explain_binding=explain_binding, prices=list(prices) or None, checked=_say,
                          workers=fixed)
        if out is None:
            _to_stdout(df, fmt)
            _say(df.attrs["cheapest"])
        else:
            write_table(df, out)
            combos = df.groupby(["hardware", "cards", "scenario", "isl", "osl"], sort=False).ngroups
            infeasible = int(df["rank"].isna().sum())
            click.echo(f"wrote {len(df)} rows ({combos} combination{'s' if combos != 1 else ''}, {infeasible} "
                       f"infeasible) to {out} in {time.perf_counter() - start:.1f} s", err=True)
            _say(df.attrs["cheapest"])
        return
    from solver.capacity.pricing import cheapest_notes, price_rows, sweep_prices
    from solver.capacity.sweep import build_plan, recommended_figures, swept_rows
    from solver.capacity.table import check_writable, to_frame, write_table

    _format_with_out(fmt, out)
    sp = build_plan(model, _hardware(hardware, more_hardware), cards, list(scenarios) or None, isl=isl, osl=osl,
                    seq_lens=seq_lens, ttft_ms=ttft_ms, tpot_ms=tpot_ms, concurrency=concurrency,
                    max_concurrency=max_concurrency, mtp=mtp, mtp_accept=mtp_accept, prefix_hit=prefix_hit,
                    framework=framework, weight_dtype=_dtype(weight_dtype), moe_weight_dtype=_dtype(moe_weight_dtype),
                    kv_dtype=_dtype(kv_dtype), method=method, params=_params(time_limit, seed), top=top,
                    allow_cross_node=allow_cross_node, explain_binding=explain_binding)
    price = sweep_prices(list(prices) or None, sp.hardware)
    if out is not None:
        check_writable(out, "--out")
    if plot is not None:
        from solver.capacity.plots import PLOT_EXTENSIONS
        from solver.outfile import check_extension

        check_extension(plot, "--plot", PLOT_EXTENSIONS)
        check_writable(plot, "--plot")
    _say(sp.notes)  # after every input check: bad input stays one line
    with _progress(f"sweep {sp.model_name}") as progress:
        rows = swept_rows(sp, jobs, progress, executor=executor, address=address)
    df = to_frame(rows if price is None else price_rows(rows, price), priced=price is not None)
    figures = recommended_figures(rows)
    wall = time.perf_counter() - start
    if out is None and fmt == "table":
        _print_summary(df, sp.model_name, None, figures)
    elif out is None:
        _to_stdout(df, fmt)
    else:
        write_table(df, out)
    if plot is not None:
        from solver.capacity.plots import plot_sweep

        if df["feasible"].fillna(False).astype(bool).any():
            plot_sweep(df, plot)
        else:
            click.echo("note: no combination is feasible; no plot drawn", err=True)
    _say(cheapest_notes(df))
    if out is None:
        return
    _print_summary(df, sp.model_name, out, figures)
    infeasible = int((~df["feasible"].fillna(False).astype(bool) & df["rank"].isna()).sum())
    n = len(sp.tasks)
    click.echo(f"wrote {len(df)} rows ({n} combination{'s' if n != 1 else ''}, {infeasible} infeasible) to {out}"
               + (f" and a plot to {plot}" if plot else "") + f" in {wall:.1f} s", err=True)


def _format_with_out(fmt: str | None, out: str | None) -> None:
    """With --out the file's extension sets its format: a --format csv/json beside it would be dropped unread."""
    if out is not None and fmt not in (None, "table"):
        raise InputError("--format", f"{fmt} with --out: the extension of {out} sets the file's format")


def _to_stdout(df, fmt: str | None) -> None:
    """The table without --out: the CSV (the default), or JSON records (--format json), as --out writes them."""
    if fmt == "json":
        sys.stdout.write(df.to_json(orient="records", indent=1) + "\n")
    else:
        sys.stdout.write(df.to_csv(index=False, lineterminator="\n"))


def _say(notes: list[str]) -> None:
    """The input notes on stderr, once the inputs are checked (the aggregated and disaggregated paths alike)."""
    for line in notes:
        click.echo(f"note: {line}", err=True)


def _seq_lens_replace_isl(seq_lens: str | None) -> None:
    """--seq-lens replaces --isl (its ISL-only entries take --osl): both given, --isl would be dropped unread."""
    if seq_lens is not None and given("isl"):
        raise InputError("--isl", "--seq-lens replaces it (an entry is ISL or ISL:OSL); give the lengths there")


def _input_notes(model: str, hardware: list[str], cards: str | None, isl: int, osl: int, seq_lens: str | None,
                 framework: str, weight_dtype, moe_weight_dtype, kv_dtype) -> list[str]:
    """capacity.sweep.input_notes of the command's options (the disaggregated paths say them before solving)."""
    from solver.capacity.sweep import input_notes

    return input_notes(model, hardware, cards, isl=isl, osl=osl, seq_lens=seq_lens, framework=framework,
                       weight_dtype=_dtype(weight_dtype), moe_weight_dtype=_dtype(moe_weight_dtype),
                       kv_dtype=_dtype(kv_dtype))


def _print_summary(df, model_name: str, out: str | None, figures: dict[tuple, dict[str, float]]) -> None:
    """One line per combination: the recommended configuration (its unrounded `figures`, as `solve` prints
    them), or why none fits; the title says where the whole front is (`out`, the file written; None: only
    --format csv or json prints it)."""
    import pandas as pd

    from solver.capacity.table import PRICE_COLUMNS

    priced = [c for c in PRICE_COLUMNS if c in df.columns]  # a sweep given --price: its costs too
    rows, notes = [], []
    for (hw, w, kind, i, o), g in df.groupby(["hardware", "cards", "scenario", "isl", "osl"], sort=False):
        rec = g[g["candidate"] == 1]
        if not rec.empty and rec.iloc[0]["note"]:  # what the planner said of the recommendation, as it said it
            # the lengths too: with --seq-lens two combinations share hardware, cards and scenario
            notes.append(f"note: {hw} x {int(w)} {kind} {int(i)}/{int(o)}: {rec.iloc[0]['note']}")
        if rec.empty:
            rows.append([hw, int(w), kind, f"{i}/{o}", "-", "infeasible: " + str(g["binding_constraint"].iloc[0]),
                         None, None, None, None, None, *(None for _ in priced)])
            continue
        r = rec.iloc[0]
        fig = figures.get((hw, int(w), kind, int(i), int(o)), r)
        front = int(g["on_front"].fillna(False).astype(bool).sum())
        rows.append([hw, _cards_cell(int(w), r.get("placement")), kind, f"{i}/{o}", front, r["pattern"],
                     int(r["concurrency"]),
                     *(float(fig[c]) for c in ("ttft_ms", "tpot_ms", "output_tokens_per_s_per_rank",
                                               "output_tokens_per_s")),
                     *(None if pd.isna(r[c]) else float(r[c]) for c in priced)])
    where = f"full front in {out}" if out is not None else "full front: --format csv or json, or --out FILE"
    console().print(table(f"{model_name}: recommended configuration per combination ({where})",
                          ["hardware", "cards", "scenario", "ISL/OSL", "front", "recommended pattern", "conc.",
                           "TTFT ms", "TPOT ms", "tok/s/rank", "tok/s total",
                           *(["$/hour", "$/M tokens"] if priced else [])], rows))
    for line in notes:
        click.echo(line, err=True)


def _cards_cell(cards: int, placement: Any) -> int | str:
    """The card count, with the nodes the engine's launch runs it on where they are not whole nodes."""
    return f"{cards} ({placement})" if isinstance(placement, str) and placement else cards


# ------------------------------------------------------------------------------------------------ recommend


@click.command("recommend")
@click.argument("model", type=MODEL)
@click.argument("more_hardware", nargs=-1, type=NAME, metavar="[HARDWARE...]")
@click.option("--hardware", "hardware", type=NAME, multiple=True, help=_HW_HELP)
@click.option("--target-output-tokens-per-s", type=RATE, default=None, help="load: output tokens/s in total")
@click.option("--target-requests-per-s", type=RATE, default=None, help="load: requests/s (x OSL output tokens)")
@click.option("--price", "prices", multiple=True, help=_PRICE_HELP)
@click.option("--cards", default=None, help="deployment sizes to try, cards per copy: a list or a range (its ends "
              "and the powers of two between) [default: 1..1024, and each hardware's whole scale-up domains: 72, "
              "144, 288, 576 on an NVL72]")
@click.option("--max-copies", type=COPIES, default=None,
              help="most copies of one deployment behind a load balancer (requests spread evenly) [default: no "
                   "bound; 1: one deployment carries the whole load]")
@_common
@click.option("--format", "fmt", type=click.Choice(FORMATS), default=DEFAULT_FORMAT, show_default=True,
              help="output format (data on stdout, notes and errors on stderr)")
@click.option("--serving", type=click.Choice(["agg", "disagg"]), default="agg", show_default=True,
              help="disagg: plan prefill and decode pools (xPyD) per combination (solver.capacity.disagg)")
@pool_workers_options
@factors_option
def recommend_cmd(model, more_hardware, hardware, target_output_tokens_per_s, target_requests_per_s, prices, cards,
                  max_copies, isl, osl, ttft_ms, tpot_ms, max_concurrency, mtp, mtp_accept, prefix_hit, framework,
                  weight_dtype,
                  moe_weight_dtype, kv_dtype, allow_cross_node, time_limit, seed, fmt, serving, prefill_workers,
                  decode_workers) -> None:
    """The fewest cards (and the configuration) that carry a load within the SLA, as copies of one deployment
    behind a load balancer; with several hardware and prices per card-hour, the cheapest, with its cost per million
    output tokens."""
    check_mtp(model, mtp)
    fixed = pool_workers(serving, prefill_workers, decode_workers)
    if serving == "disagg":  # the fewest cards whose xPyD plan carries the load (solver.capacity.disagg)
        from solver.capacity.disagg import recommend_disagg

        # the input notes are the answer's (rec.notes: its JSON and its note lines), as the aggregated answer's
        rec = recommend_disagg(model, _hardware(hardware, more_hardware),
                               target_output_tokens_per_s=target_output_tokens_per_s,
                               target_requests_per_s=target_requests_per_s, isl=isl, osl=osl, ttft_ms=ttft_ms,
                               tpot_ms=tpot_ms, cards=cards, framework=framework, weight_dtype=_dtype(weight_dtype),
                               moe_weight_dtype=_dtype(moe_weight_dtype), kv_dtype=_dtype(kv_dtype), mtp=mtp,
                               mtp_accept=mtp_accept, prefix_hit=prefix_hit,
                               max_concurrency=max_concurrency, allow_cross_node=allow_cross_node,
                               params=_params(time_limit, seed), prices=list(prices) or None,
                               max_copies=max_copies, workers=fixed)
        click.echo(rec.render(fmt), nl=False)
        if rec.best is None:
            notes = "; ".join(f"{o['hardware']}: {o['note']}" for o in rec.options)
            raise InfeasibleError(f"no cluster size tried carries {rec.target_output_tokens_per_s:,.0f} output "
                                  f"tokens/s for {rec.title} disaggregated ({notes})", [o["note"] for o in rec.options])
        return
    from solver.capacity.recommend import recommend

    hw = _hardware(hardware, more_hardware)
    with _progress("recommend") as progress:
        rec = recommend(model, hw, target_output_tokens_per_s=target_output_tokens_per_s,
                        target_requests_per_s=target_requests_per_s, isl=isl, osl=osl, ttft_ms=ttft_ms,
                        tpot_ms=tpot_ms, prices=list(prices) or None, cards=cards, framework=framework,
                        weight_dtype=_dtype(weight_dtype), moe_weight_dtype=_dtype(moe_weight_dtype),
                        kv_dtype=_dtype(kv_dtype), mtp=mtp, mtp_accept=mtp_accept, prefix_hit=prefix_hit,
                        max_concurrency=max_concurrency,
                        allow_cross_node=allow_cross_node, params=_params(time_limit, seed), max_copies=max_copies,
                        progress=(lambda label: progress(0, 0, label)) if progress else None)
    if fmt in ("json", "yaml"):
        click.echo(dump(rec.as_dict(), fmt), nl=fmt == "json")
    else:
        _print_recommendation(rec)
    if rec.best is None:
        notes = "; ".join(f"{o.hardware}: {o.note}" for o in rec.options)
        raise InfeasibleError(f"no cluster size tried meets {rec.target_output_tokens_per_s:,.0f} output tokens/s "
                              f"for {rec.title} ({notes})", [o.note for o in rec.options])


def _print_recommendation(rec) -> None:
    from solver.capacity.recommend import BASIS_LABELS, cost_text

    con = console()
    sla = ", ".join(s for s in ((f"TTFT <= {rec.ttft_ms:g} ms" if rec.ttft_ms else ""),
                                (f"TPOT <= {rec.tpot_ms:g} ms" if rec.tpot_ms else "")) if s) or "no SLA"
    title = (f"{rec.title}: {rec.target_output_tokens_per_s:,.0f} output tokens/s "
             f"({rec.target_requests_per_s:,.2f} requests/s at ISL {rec.isl} / OSL {rec.osl}), {sla}")
    rows = []
    for o in rec.options:
        if not o.met:
            rows.append(["", o.hardware, "-", None, o.note, None, None, None, None, None, None, None, None])
            continue
        knobs = nondefault_label(o.config)
        rows.append(["*" if o is rec.best else "", o.hardware, o.copies, _cards_cell(o.cards, o.placement),
                     f"{o.pattern} ({knobs})", o.concurrency,
                     *(o.shown(k) for k in ("ttft_ms", "tpot_ms", "output_tokens_per_s", "total_output_tokens_per_s",
                                            "headroom", "cost_per_hour", "cost_per_million_output_tokens"))])
    con.print(table(title, ["", "hardware", "copies", "cards/copy", "configuration", "conc./copy", "TTFT ms",
                            "TPOT ms", "tok/s/copy", "tok/s total", "headroom", "$/hour", "$/M tokens"], rows))
    if rec.best is not None:
        b = rec.best
        cost = ""
        if b.cost_per_hour is not None:
            cost = "; " + cost_text(b.shown("cost_per_hour"), b.shown("cost_per_million_output_tokens"),
                                    b.shown("cost_per_million_output_tokens_at_capacity"))
        basis = BASIS_LABELS.get(rec.basis, rec.basis)
        placed = f" as {b.placement}" if b.placement else ""
        if b.copies == 1:
            con.print(f"recommended ({basis}): {b.cards} x {b.hardware}{placed}, {b.pattern}{cost}")
        else:
            con.print(f"recommended ({basis}): {b.copies:,} x ({b.cards} x {b.hardware}{placed}: {b.pattern}, "
                      f"{b.concurrency:,} requests in flight per copy) = {b.total_cards:,} cards, "
                      f"{b.shown('total_output_tokens_per_s'):,.0f} output tokens/s in all{cost}")
            con.print(f"note: {b.copies:,} copies behind a load balancer that spreads the requests evenly: each "
                      f"carries {b.copy_load_output_tokens_per_s:,.0f} output tokens/s of the target and reaches "
                      f"{b.shown('output_tokens_per_s'):,.0f} at {b.concurrency:,} in flight (TTFT "
                      f"{b.shown('ttft_ms'):,.0f} ms, TPOT {b.shown('tpot_ms'):,.2f} ms); each copy is one engine "
                      "launch of its own")
        priced = rec.price_note()
        if priced:
            con.print(f"note: {priced}")
    for o in rec.options:
        if o.met and o.note:
            con.print(f"note: {o.hardware}: {o.note}")
    for line in rec.notes:
        con.print(f"note: {line}")


COMMANDS = [sweep_cmd, recommend_cmd]
