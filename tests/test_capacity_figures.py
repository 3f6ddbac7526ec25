"""The figures sweep and recommend print and write, and their refusals, as the engineer who sizes a cluster reads them."""
import pytest
from click.testing import CliRunner

from solver.capacity.sweep import UNROUNDED, build_plan, recommended_figures, solve_task
from solver.capacity.table import to_frame
from solver.report.digits import DIGITS
from solver.cli.main import main
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
    _print_summary(df, "m", None, recommended_figures(rows))
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


@pytest.mark.parametrize("args", [
    ["sweep", "gpt-oss-120b", "h100_sxm", "--serving", "disagg", "--cards", "8", "--plot", "p.png"],
    ["recommend", "gpt-oss-120b", "h100_sxm", "--serving", "disagg", "--target-requests-per-s", "10",
     "--cards", "8", "--price", "h100_sxm=abc"],
])
def test_bad_input_to_a_disaggregated_capacity_command_is_one_line_with_no_note_before_it(args):
    """gpt-oss-120b on H100 has an input note (its mxfp4 experts run weight-only there); a refused --plot or
    --price is still the one error line, exit 2: the notes are said only once every input is checked."""
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 2
    assert res.stderr.strip().splitlines() == [res.stderr.strip()] and res.stderr.startswith("error: ")


def test_a_disaggregated_recommend_still_says_its_input_notes():
    """The same note is the answer's when the input is good: one note line of the answer, as the aggregated
    recommend's (and in its JSON notes: tests/test_session44_hunt.py), not a line on stderr besides."""
    res = CliRunner().invoke(main, ["recommend", "gpt-oss-120b", "h100_sxm", "--serving", "disagg",
                                    "--target-requests-per-s", "10", "--cards", "8", "--time-limit", "2"])
    assert res.exit_code == 0
    note = "note: h100_sxm: experts weights stay mxfp4"
    assert res.stdout.count(note) == 1 and note not in res.stderr


def test_recommend_table_prints_the_unrounded_headroom_and_cost():
    """Headroom 20,905 / 20,000 = 1.04525: the JSON's 1.045 (three decimals) prints 1.04 with two (its binary value
    sits below 1.045), the unrounded 1.04525 prints 1.05. $/M tokens 35 / (20,000 x 3600) x 1e6 = 0.486111: shown
    with three figures, 0.486."""
    from solver.capacity.recommend import Option, costs
    from solver.report.render import fmt_cell

    exact = costs(7, 5.0, 20000.0, 20905.0, None)
    assert round(exact["cost_per_million_output_tokens"], 6) == 0.486111
    o = Option("b200_sxm", True, headroom=round(20905 / 20000, 3),
               unrounded={"headroom": 20905 / 20000, **exact})
    assert fmt_cell(o.headroom) == "1.04" and fmt_cell(o.shown("headroom")) == "1.05"
    assert fmt_cell(o.shown("cost_per_million_output_tokens")) == "0.486"
    assert o.shown("tpot_ms") is None  # a figure with no unrounded value is the field's own
    assert "unrounded" not in o.record()


def test_recommends_unrounded_figures_round_to_the_ones_it_writes():
    """Llama-3.1-70B on H100 at 1,000 output tokens/s: the answer's unrounded TTFT, TPOT and tok/s per copy round
    (the sweep's DIGITS) to the JSON's, and its total is copies x tok/s per copy."""
    from solver.capacity.recommend import recommend

    rec = recommend("llama-3.3-70b", ["h100_sxm"], target_output_tokens_per_s=1000, cards="4,8",
                    params=SolverParams(time_limit_s=3), prices=["h100_sxm=2.5"])
    b = rec.best
    assert b is not None and b.unrounded
    for k in ("ttft_ms", "tpot_ms", "output_tokens_per_s"):
        assert round(b.unrounded[k], DIGITS[k]) == getattr(b, k)
    assert b.unrounded["total_output_tokens_per_s"] == b.unrounded["output_tokens_per_s"] * b.copies
    assert round(b.unrounded["cost_per_hour"], 4) == b.cost_per_hour == b.total_cards * 2.5


def test_disaggregated_recommend_text_prints_unrounded_figures_and_json_keeps_the_rounded():
    """A disaggregated option with 10,754 tok/s against 10,000: headroom 1.0754 is 1.075 rounded (three decimals),
    printed 1.07 from it, 1.08 from the figure; TPOT 36.6549 ms is 36.655 rounded, printed 36.7 from it (its
    binary sits above), 36.7 from the figure too (a control); the JSON carries the rounded 1.075 only."""
    import json

    from solver.capacity.disagg import DisaggRecommendation

    o = {"hardware": "h200_sxm", "met": True, "cards": 16, "copies": 1, "total_cards": 16, "ratio": "2P1D",
         "prefill_workers": 2, "prefill_ranks_per_worker": 4, "decode_workers": 1, "decode_ranks_per_worker": 8,
         "ranks_used": 16, "output_tokens_per_s": 10754.0, "total_output_tokens_per_s": 10754.0, "ttft_ms": 900.0,
         "tpot_ms": 36.655, "headroom": 1.075,
         "cost_per_hour": None, "price_per_card_hour": None, UNROUNDED: {"headroom": 1.0754, "tpot_ms": 36.6549}}
    rec = DisaggRecommendation("m", 10000.0, [o], o, "cards")
    assert "headroom 1.08" in rec.render("table") and "TPOT 36.7 ms" in rec.render("table")
    d = json.loads(rec.render("json"))
    assert d["recommended"]["headroom"] == 1.075 and UNROUNDED not in d["recommended"]
    assert UNROUNDED not in d["options"][0]


def test_the_api_takes_a_dtype_per_hardware_as_the_command_line_does() -> None:
    """sweep(weight_dtype=['atlas_a3=int8']) reads as --weight-dtype atlas_a3=int8 (capacity.inputs.per_hardware);
    a value of no accepted form is refused naming the forms."""
    from solver import api
    from solver.errors import InputError

    df = api.sweep("deepseek-v3.2", ["atlas_a3"], 16, ["throughput"], weight_dtype=["atlas_a3=int8"])
    assert set(df["weight_dtype"]) == {"int8"}
    with pytest.raises(InputError, match=r"weight_dtype: .*HW=DTYPE items"):
        api.sweep("deepseek-v3.2", ["atlas_a3"], 16, ["throughput"], weight_dtype=3)


def test_a_script_without_a_main_guard_is_told_why_its_workers_died(tmp_path) -> None:
    """sweep(jobs=2) spawns workers that import the calling script: without `if __name__ == '__main__':` they
    fail to start, and the caller gets one line naming jobs and the guard, not a BrokenProcessPool traceback."""
    import subprocess
    import sys

    script = tmp_path / "plan.py"
    script.write_text("from solver import api\napi.sweep('qwen3-8b', 'h100_sxm', '1,2', ['throughput'], jobs=2)\n")
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert r.returncode != 0
    # the error is the traceback's last line; under load the dead workers' semaphores may be reported after it
    # (multiprocessing's resource_tracker warning at shutdown)
    lines = [ln for ln in r.stderr.strip().splitlines() if not ln.startswith(" ") and "resource_tracker" not in ln]
    last = lines[-1]
    assert last.startswith("solver.errors.InputError: jobs:") and "__main__" in last, r.stderr[-2000:]


def test_a_disaggregated_sweeps_cross_field_refusal_comes_before_its_notes() -> None:
    """sweep --serving disagg builds every scenario before it says its input notes: --concurrency above
    --max-concurrency is one line (exit 2), not notes and then the error."""
    from click.testing import CliRunner

    from solver.cli.main import main

    r = CliRunner().invoke(main, ["sweep", "deepseek-v3.2", "--hardware", "atlas_a3", "--cards", "16", "--serving",
                                  "disagg", "--concurrency", "8", "--max-concurrency", "4"])
    assert r.exit_code == 2, r.output
    assert r.output.strip().splitlines() == [r.output.strip()] and r.output.startswith("error: --concurrency:")
