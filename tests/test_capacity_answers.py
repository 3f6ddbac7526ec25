"""Capacity planning's answers read as a team sizing a cluster reads them: a row whose throughput the concurrency
range holds down says so, the plots keep every group apart, and the summary's notes say which lengths they are of."""
from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from solver import api
from solver.capacity.plots import plot_sweep
from solver.capacity.table import to_frame
from solver.cli.main import main

TOP = "this row's concurrency is at the largest concurrency tried"


def test_a_sweep_row_at_the_top_of_the_concurrency_range_says_so_whichever_row_is_recommended() -> None:
    """Qwen3-8B on 2 H100, latency scenario, --max-concurrency 64: the range is 1, 2, ..., 64. The latency
    scenario recommends a row at 16 requests; the front's best per rank (3,086 tok/s at 64, against 2,038 at 32)
    sits at the top of the range, so its note says the range, not the cards, stopped it. Rows below 64 do not."""
    df = api.sweep("qwen3-8b", "h100_sxm", [2], "latency", isl=1024, osl=256, max_concurrency=64)
    top = df[df["concurrency"] == 64]
    assert len(top) == 1 and pd.isna(top["candidate"].iloc[0])
    assert top["note"].iloc[0].startswith(f"{TOP}, 64 (--max-concurrency 64): throughput may keep growing")
    assert not df.loc[df["concurrency"] < 64, "note"].str.contains(TOP).any()
    # the front's best row per rank is that row
    assert df.loc[df["output_tokens_per_s_per_rank"].idxmax(), "concurrency"] == 64


def _synthetic_sweep(hardware: list[str], lengths: list[tuple[int, int]]) -> pd.DataFrame:
    """Two front rows per (hardware, lengths, cards 1 and 2), the one at 2 cards recommended: enough to draw."""
    rows = []
    for hw in hardware:
        for isl, osl in lengths:
            for cards in (1, 2):
                for conc, tps in ((1, 100.0), (8, 400.0)):
                    rows.append(dict(hardware=hw, cards=cards, scenario="throughput", model="m", isl=isl, osl=osl,
                                     feasible=True, on_front=True, candidate=1 if conc == 8 else None,
                                     concurrency=conc, request_latency_ms=1000.0 * conc,
                                     output_tokens_per_s_per_rank=tps, output_tokens_per_s=tps * cards,
                                     attn_tp_size=1))
    return to_frame(rows)


def test_the_scale_out_panel_draws_each_group_in_a_colour_and_style_of_its_own() -> None:
    """Three hardware x two lengths = six groups: six 'best on the front' lines whose (colour, marker, line
    style) are pairwise distinct (the sixth took the first's colour and marker when the colour cycle advanced
    on the recommended markers too)."""
    fig = plot_sweep(_synthetic_sweep(["h200_sxm", "b200_sxm", "mi355x"], [(1024, 1024), (8192, 1024)]))
    scale_out = next(ax for ax in fig.axes if ax.get_title().startswith("Scale-out"))
    best = [ln for ln in scale_out.get_lines() if ln.get_label().endswith("best on the front")]
    assert len(best) == 6
    looks = {(ln.get_color(), ln.get_marker(), ln.get_linestyle()) for ln in best}
    assert len(looks) == 6
    assert len({ln.get_color() for ln in best}) == 6  # colour alone tells them apart up to ten groups


def test_the_figure_title_sits_clear_above_every_panel_title() -> None:
    """A 3 x 3 grid (six frontier panels, the scale-out panel, the legend's) drawn at the dpi save_figure writes
    (120): between the suptitle's bottom and the highest panel title's top lies at least a quarter of the
    suptitle's own height (the titles touched: 1.6 px apart against a 22 px title)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig = plot_sweep(_synthetic_sweep(["h200_sxm", "b200_sxm", "mi355x"], [(1024, 1024), (8192, 1024)]))
    fig.set_dpi(120)
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    sup = fig._suptitle.get_window_extent(renderer)
    titles = [ax.title.get_window_extent(renderer) for ax in fig.axes if ax.get_visible() and ax.get_title()]
    assert len(titles) == 7
    assert sup.y0 - max(t.y1 for t in titles) >= sup.height / 4


def test_a_frontier_panel_names_one_card_in_the_singular() -> None:
    fig = plot_sweep(_synthetic_sweep(["h200_sxm"], [(1024, 1024)]))
    labels = {t.get_text() for ax in fig.axes if (leg := ax.get_legend()) for t in leg.get_texts()}
    assert "1 card" in labels and "2 cards" in labels and "1 cards" not in labels


def test_the_sweep_summary_notes_name_the_lengths_they_are_of(tmp_path: Path) -> None:
    """Two lengths on one card with --max-concurrency 8: the throughput answer of each sits at 8 requests, the
    top of the range, and each note says which ISL/OSL it is of (both read 'h100_sxm x 1 throughput' before)."""
    out = tmp_path / "s.csv"
    r = CliRunner().invoke(main, ["sweep", "qwen3-8b", "--hardware", "h100_sxm", "--cards", "1", "--scenarios",
                                  "throughput", "--seq-lens", "1024:256,2048:256", "--max-concurrency", "8",
                                  "--out", str(out)])
    assert r.exit_code == 0, r.output
    notes = re.findall(r"note: h100_sxm x 1 throughput (\d+/\d+): the best score is at the largest", r.output)
    assert notes == ["1024/256", "2048/256"]


def test_copies_on_one_host_win_a_tie_in_cards_over_copies_spanning_hosts() -> None:
    """Llama-3.3-70B on H100 (8 per host), 20,000 output tok/s at TPOT <= 50 ms under vLLM: one TP4 replica
    carries 501.2 tok/s at its SLA edge, so 8 cards (TP4 x DP2, 1,002.4 tok/s) need 20 copies and 16 cards (TP4 x
    DP4, 2,004.8) 10: 160 cards either way. The 16-card copy is a two-host launch, so the 8-card copies win the
    tie (one host each), ahead of the count of engines (10 against 20) that picked 16 before."""
    from solver import api
    o = api.recommend("llama-3.3-70b", hardware="h100_sxm", target_output_tokens_per_s=20000, tpot_ms=50,
                      framework="vllm", cards="8,16").best
    assert (o.cards, o.copies, o.total_cards) == (8, 20, 160)
