"""Plots of a sweep (matplotlib; figures are built without pyplot and rendered by the Agg backend, so no display
is needed and a notebook's own backend is left alone).

- Pareto frontier: output tokens/s per rank (y) vs request latency (x), one curve per cluster size, one panel
  per (hardware, ISL/OSL). x is the axis the front is taken on (sweep.on_front: request latency, not tokens/s
  per user: a row with the lower TTFT but the higher TPOT is on the front and would fold the curve back on a
  per-user axis). The front does not depend on the scenario (only the recommendation does), so each
  configuration is drawn once; the scenarios' recommended points are marked.
- Scale-out: cards (x) vs total output tokens/s (y), per hardware and ISL/OSL: the front's best, and each
  scenario's recommended configuration.
"""
from __future__ import annotations

import os
from typing import Any

import pandas as pd

from solver.errors import InputError
from solver.specs.parallel import KNOBS

PLOT_EXTENSIONS = (".png", ".svg", ".pdf")  # what save_figure writes, by extension
FRONT_X = "request_latency_ms"  # the front's own axis beside tokens/s per rank (sweep.on_front)
SCENARIO_MARKERS = {"throughput": "s", "latency": "^", "balanced": "o"}
# a configuration on the front is drawn once whatever scenarios share it: these columns tell configurations apart
KNOB_COLUMNS = (*KNOBS, "concurrency")
# the sweep table's columns the plots read (capacity.table.COLUMNS)
PLOTTED_COLUMNS = ("hardware", "cards", "scenario", "isl", "osl", "feasible", "on_front", "candidate", "model",
                   FRONT_X, "output_tokens_per_s_per_rank", "output_tokens_per_s", *KNOB_COLUMNS)


def _group_label(hw: str, isl: int, osl: int, many_lengths: bool) -> str:
    def k(n: int) -> str:
        return f"{n // 1024}K" if n % 1024 == 0 and n >= 1024 else str(n)

    return f"{hw}, ISL {k(isl)} / OSL {k(osl)}" if many_lengths else hw


def plot_sweep(df: pd.DataFrame, path: str | os.PathLike | None = None, title: str | None = None) -> Any:
    """Draw the two views of a sweep; save to `path` (PNG, SVG or PDF by extension) when given. Returns the
    matplotlib Figure."""
    from solver.capacity.table import is_disagg
    from solver.outfile import check_extension

    if not isinstance(df, pd.DataFrame):
        raise InputError("df", f"must be a sweep's DataFrame (api.sweep, read_table), got {type(df).__name__}")
    if is_disagg(df.columns):  # no Pareto front per cluster size to draw: refused, not drawn empty
        raise InputError("df", "the plots draw an aggregated sweep's Pareto front; a disaggregated sweep "
                         "(serving disagg) has none")
    missing = [c for c in PLOTTED_COLUMNS if c not in df.columns]
    if missing:
        raise InputError("df", f"not a sweep's table: it lacks the column{'s' if len(missing) > 1 else ''} "
                         f"{', '.join(missing)}")
    if path is not None:  # before drawing: a bad extension is said at once
        check_extension(path, "path", PLOT_EXTENSIONS)
    import matplotlib
    from matplotlib.figure import Figure

    feasible = df[df["feasible"].fillna(False).astype(bool)]
    if feasible.empty:
        raise InputError("df", "nothing to plot: no combination of the sweep is feasible")
    groups = list(feasible.groupby(["hardware", "isl", "osl"], sort=False).groups)
    many_lengths = feasible[["isl", "osl"]].drop_duplicates().shape[0] > 1
    n = len(groups) + 1
    ncols = min(n, 3)
    nrows = -(-n // ncols)
    # constrained layout keeps the suptitle above the panels' own titles (tight_layout let it run over the top
    # row's on a grid of several rows)
    fig = Figure(figsize=(6.4 * ncols, 4.8 * nrows), layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False)
    flat = list(axes.flat)
    cmap = matplotlib.colormaps["viridis"]
    all_cards = sorted(int(c) for c in feasible["cards"].unique())

    def color(cards: int):
        i = all_cards.index(cards)
        return cmap(0.05 + 0.8 * i / max(1, len(all_cards) - 1))  # the palest yellow is hard to read

    knob_cols = list(KNOB_COLUMNS)
    for ax, (hw, isl, osl) in zip(flat, groups):
        g = feasible[(feasible["hardware"] == hw) & (feasible["isl"] == isl) & (feasible["osl"] == osl)]
        front = g[g["on_front"].fillna(False).astype(bool)]
        for cards, c in front.groupby("cards"):
            c = c.drop_duplicates(subset=knob_cols).sort_values(FRONT_X)
            ax.plot(c[FRONT_X], c["output_tokens_per_s_per_rank"], "-o", ms=3.5, lw=1.6,
                    color=color(int(cards)), label=f"{int(cards)} card{'' if int(cards) == 1 else 's'}")
        rec = g[g["candidate"] == 1]
        for kind, r in rec.groupby("scenario"):
            ax.scatter(r[FRONT_X], r["output_tokens_per_s_per_rank"], s=70,
                       marker=SCENARIO_MARKERS.get(kind, "D"), facecolors="none", edgecolors="crimson", lw=1.4,
                       label=f"recommended ({kind})", zorder=5)
        _log_axes(ax)
        ax.set_xlabel("request latency, ms (TTFT + (OSL - 1) x TPOT)")
        ax.set_ylabel("output tokens/s per rank")
        ax.set_title(f"Pareto frontier: {_group_label(hw, int(isl), int(osl), many_lengths)}")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8, loc="best")

    ax = flat[len(groups)]
    line_styles = ["-", "--", ":", "-."]
    for gi, (hw, isl, osl) in enumerate(groups):
        g = feasible[(feasible["hardware"] == hw) & (feasible["isl"] == isl) & (feasible["osl"] == osl)]
        best = g.groupby("cards")["output_tokens_per_s"].max().sort_index()
        label = _group_label(hw, int(isl), int(osl), many_lengths)
        everything = df[(df["hardware"] == hw) & (df["isl"] == isl) & (df["osl"] == osl)]
        none_fit = sorted(int(c) for c in set(everything["cards"]) - set(g["cards"]))
        note = f" (none fits at {', '.join(map(str, none_fit))} cards)" if none_fit else ""
        # a colour of its own per group: the axes' colour cycle also advances on the recommended markers' plots,
        # so the sixth group took the first one's colour (and its marker)
        line, = ax.plot(best.index.astype(int), best.values, line_styles[gi % 4], marker="oDsv^"[gi % 5], lw=2,
                        color=f"C{gi % 10}", label=f"{label}: best on the front{note}")
        rec = g[g["candidate"] == 1]
        for kind, r in rec.groupby("scenario"):
            r = r.sort_values("cards")
            ax.plot(r["cards"].astype(int), r["output_tokens_per_s"], ls="none",
                    marker=SCENARIO_MARKERS.get(kind, "D"), mfc="none", mec=line.get_color(), ms=7,
                    label=f"{label}: recommended ({kind})")
    ax.set_xscale("log", base=2)
    _log_axes(ax, x=False)
    ax.set_xticks(all_cards)
    ax.set_xticklabels([str(c) for c in all_cards])
    ax.set_xlabel("cards (world size)")
    ax.set_ylabel("total output tokens/s")
    ax.set_title("Scale-out: cards vs total throughput")
    ax.grid(True, which="both", alpha=0.3)
    if len(flat) > n:  # a spare panel: the legend goes there, off the curves
        spare = flat[n]
        spare.axis("off")
        spare.legend(*ax.get_legend_handles_labels(), loc="center left", fontsize=9, title="scale-out panel",
                     frameon=False)
    else:
        ax.legend(fontsize=7, loc="best")
    for extra in flat[n + 1:]:
        extra.set_visible(False)
    models = ", ".join(sorted(set(df["model"].dropna().astype(str)) - {""}))
    fig.suptitle(title or f"{models}: capacity sweep", fontsize=13)
    if path is not None:
        save_figure(fig, path, "path")
    return fig


def _log_axes(ax: Any, x: bool = True) -> None:
    """Log axes labelled with plain numbers (1, 2, 5 x 10^k), not 3x10^0-style minor labels that collide."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    def plain(v: float, _pos: int) -> str:
        return f"{v:,.0f}" if v >= 1 else f"{v:g}"

    axes = [ax.xaxis, ax.yaxis] if x else [ax.yaxis]
    if x:
        ax.set_xscale("log")
    ax.set_yscale("log")
    for axis in axes:
        axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        axis.set_major_formatter(FuncFormatter(plain))
        axis.set_minor_formatter(NullFormatter())


def save_figure(fig: Any, path: str | os.PathLike, field: str = "path") -> None:
    """Save atomically (a temporary file, then a rename); the format follows the extension (.png, .svg, .pdf).
    A refused target is an InputError under `field`."""
    from solver.outfile import atomic_write, check_extension

    fmt = check_extension(path, field, PLOT_EXTENSIONS).lstrip(".")
    atomic_write(path, lambda tmp: fig.savefig(tmp, format=fmt, dpi=120), flag=field)
