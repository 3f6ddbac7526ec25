"""Rules found reading sweep and recommend as the engineer who sizes a cluster (hunt40e)."""
from solver.capacity.sweep import UNROUNDED, build_plan, recommended_figures, solve_task
from solver.capacity.table import DIGITS, to_frame
from solver.plan.points import SolverParams


def _row(tok_s_rank: float, cards: int = 8) -> dict:
    """A recommended sweep row as solve_task writes it: its figures rounded to DIGITS, the estimate's beside."""
    exact = {"ttft_ms": 675.4996, "tpot_ms": 12.3, "output_tokens_per_s_per_rank": tok_s_rank,
             "output_tokens_per_s": tok_s_rank * cards}
    row = {"hardware": "h100_sxm", "cards": cards, "scenario": "throughput", "isl": 4096, "osl": 256,
           "rank": 1, "candidate": 1, "on_front": True, "feasible": True, "pattern": "Pure TP8", "concurrency": 16,
           "binding_constraint": "", "note": "", "placement": "", UNROUNDED: exact}
    row.update({k: round(v, DIGITS[k]) for k, v in exact.items()})
    return row


def test_sweep_summary_prints_the_estimates_figures_not_the_files_rounding(capsys):
    """tok/s/rank 1.3749 is 1.375 in the file (three decimals), which two decimals print as 1.38 (half to even);
    the estimate's figure prints 1.37, as `solve` prints it. TTFT 675.4996 ms is 675.5 in the file, printed 676;
    the estimate's is 675. TPOT 12.3 ms (no rounding either way) prints 12.30; total 1.3749 x 8 = 10.9992 ->
    11.00."""
    from solver.cli.capacity_cmds import _print_summary

    rows = [_row(1.3749)]
    df = to_frame(rows)
    assert df["output_tokens_per_s_per_rank"].iloc[0] == 1.375 and df["ttft_ms"].iloc[0] == 675.5
    _print_summary(df, "m", recommended_figures(rows))
    out = capsys.readouterr().out
    line = next(ln for ln in out.splitlines() if "h100_sxm" in ln)
    cells = [c.strip() for c in line.strip("│ ").split("│")]
    assert cells[-4:] == ["675", "12.30", "1.37", "11.00"]


def test_every_sweep_row_carries_figures_that_round_to_its_columns():
    """The summary's figures are the row's own: each unrounded figure rounds (DIGITS) to the file's value
    (Llama-3.1-70B on 4 x H100, throughput, 4096/256)."""
    sp = build_plan("llama-3.3-70b", "h100_sxm", "4", "throughput", params=SolverParams(time_limit_s=3))
    rows = solve_task(sp.tasks[0])
    assert rows and all(r["feasible"] for r in rows)
    for r in rows:
        for k, v in r[UNROUNDED].items():
            assert round(v, DIGITS[k]) == r[k]
    assert len(recommended_figures(rows)) == 1
