"""Capacity planning: `shardplan sweep` (Pareto tables to CSV/JSON/Parquet, plots, parallel jobs) and
`shardplan recommend` (fewest cards for a load, cheapest hardware), and their Python API."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from solver import api
from solver.capacity.inputs import make_scenario, parse_cards
from solver.capacity.recommend import cluster_cap_note
from solver.capacity.table import COLUMNS, atomic_write, read_table, write_table
from solver.cli.main import main
from solver.specs.hardware_catalog import load_hardware
from solver.errors import InputError
from solver.specs.limits import MAX_CARDS
from solver.specs.parallel import KNOBS

# the tests sweep and recommend the same deployments and patch no estimator: they share the planner's cache
# (conftest._fresh_planner_cache)
SHARES_PLANS = True

# DeepSeek-V3.2 on Atlas A3 in W8A8: 8 cards do not fit (an infeasible row), 16 do (a front).
SWEEP = ["sweep", "deepseek-v3.2", "--hardware", "atlas_a3", "--weight-dtype", "int8", "--cards", "8,16",
         "--scenarios", "throughput,latency"]
DOCUMENTED = ["hardware", "cards", "scenario", "rank", *KNOBS, "attn_dp_size", "moe_ep_size", "memory_per_rank_gb",
              "ttft_ms", "tpot_ms", "output_tokens_per_s_per_rank", "output_tokens_per_s", "tokens_per_s_per_user",
              "feasible", "binding_constraint"]


def _run(*args: str):
    return CliRunner().invoke(main, list(args))


@pytest.fixture(scope="module")
def swept(tmp_path_factory) -> dict:
    folder = tmp_path_factory.mktemp("sweep")
    out, png = folder / "pareto.csv", folder / "pareto.png"
    result = _run(*SWEEP, "--out", str(out), "--plot", str(png))
    assert result.exit_code == 0, result.output
    return {"csv": out, "png": png, "result": result, "folder": folder}


# ------------------------------------------------------------------------------------------------ parsing


@pytest.mark.parametrize("text, expected", [
    ("8,16,32", [8, 16, 32]),
    ("8..1024", [8, 16, 32, 64, 128, 256, 512, 1024]),
    ("6..100", [6, 8, 16, 32, 64, 100]),
    ("9..15", [9, 15]),
    ("8..32,24, 8", [8, 16, 24, 32]),
    ("1..1", [1]),
])
def test_parse_cards(text: str, expected: list[int]) -> None:
    assert parse_cards(text) == expected


def test_a_cards_range_sweeps_the_sizes_at_its_ends() -> None:
    """`--cards 6..32` swept 8, 16, 32 and said nothing of the 6 the user named (only powers of two were kept,
    and 9..15 was refused): a range's ends are sizes too, with the powers of two between them."""
    assert parse_cards("6..32") == [6, 8, 16, 32]
    assert parse_cards("12..24") == [12, 16, 24]


@pytest.mark.parametrize("text", ["", "  ", "abc", "8,,x", "0..2", "0", "32..8", "8-16", "1.5"])
def test_parse_cards_rejects(text: str) -> None:
    with pytest.raises(InputError, match="--cards"):
        parse_cards(text)


# -------------------------------------------------------------------------------------- the sweep's table


def test_sweep_csv_has_the_documented_columns_and_reads_back_with_pandas(swept: dict) -> None:
    df = pd.read_csv(swept["csv"])
    assert list(df.columns[:len(DOCUMENTED)]) == DOCUMENTED
    assert list(df.columns) == list(COLUMNS)
    assert set(df["scenario"]) == {"throughput", "latency"}
    assert set(df["cards"]) == {8, 16}
    assert (df["hardware"] == "atlas_a3").all()
    # summary on stderr: rows, combinations, infeasible count; no progress bar when not on a terminal
    assert "4 combinations, 2 infeasible" in swept["result"].stderr
    assert "\r" not in swept["result"].stderr and "━" not in swept["result"].stderr


def test_sweep_invariants(swept: dict) -> None:
    df = pd.read_csv(swept["csv"])
    feasible = df[df["feasible"]]
    infeasible = df[~df["feasible"]]
    # 8 Atlas A3 cards cannot hold DeepSeek-V3.2: one row per scenario, naming the constraint and a remedy
    assert len(infeasible) == 2 and (infeasible["cards"] == 8).all()
    assert infeasible["binding_constraint"].fillna("").str.len().gt(0).all()
    assert infeasible["binding_constraint"].str.contains("memory").all()
    # the smallest size that fits: 674.5 GB over 65.0 GB a die needs 11; 256 experts on 11 ranks take 24 a rank, 12
    # hold 22 (tests/test_remedy_front45.py)
    assert infeasible["note"].str.contains("12 cards fit").all()
    assert infeasible[list(KNOBS)].isna().all().all()
    assert len(feasible) > 4
    for _, r in feasible.iterrows():
        w = int(r["cards"])
        for k in KNOBS:
            assert w % int(r[k]) == 0, f"{k}={r[k]} does not divide {w}"
        # the seed's *_dp_size = world // *_tp_size, inside one pipeline stage
        assert int(r["attn_dp_size"]) * int(r["attn_tp_size"]) * int(r["pp_size"]) == w
        assert int(r["moe_ep_size"]) * int(r["moe_tp_size"]) * int(r["pp_size"]) == w
        assert r["memory_per_rank_gb"] <= load_hardware("atlas_a3").memory_bytes / 1e9
        assert r["output_tokens_per_s"] == pytest.approx(r["output_tokens_per_s_per_rank"] * w, rel=1e-3)
        assert r["request_latency_ms"] == pytest.approx(r["ttft_ms"] + (r["osl"] - 1) * r["tpot_ms"], rel=1e-3)
    for (hw, w, kind), g in feasible.groupby(["hardware", "cards", "scenario"]):
        assert list(g["rank"]) == list(range(1, len(g) + 1))
        assert g["output_tokens_per_s_per_rank"].is_monotonic_decreasing
        assert (g["candidate"] == 1).sum() == 1, f"{hw} x{w} {kind}: one recommended configuration"
        front = g[g["on_front"]]
        assert len(front) >= 3
        # non-dominated in (request latency, throughput per rank), by every feasible row of the combination
        lat, thr = "request_latency_ms", "output_tokens_per_s_per_rank"
        for _, a in front.iterrows():
            dominated_by = g[(g[lat] <= a[lat]) & (g[thr] >= a[thr]) & ((g[lat] < a[lat]) | (g[thr] > a[thr]))]
            assert dominated_by.empty, f"{hw} x{w} {kind}: front rank {a['rank']} is dominated"


def test_sweep_jobs_2_writes_the_same_file_as_jobs_1(swept: dict, tmp_path: Path) -> None:
    out = tmp_path / "j2.csv"
    result = _run(*SWEEP, "--jobs", "2", "--out", str(out))
    assert result.exit_code == 0, result.output
    assert out.read_bytes() == swept["csv"].read_bytes()


def test_json_and_parquet_round_trip(swept: dict, tmp_path: Path) -> None:
    df = read_table(swept["csv"])
    for name in ("pareto.json", "pareto.parquet"):
        path = write_table(df, tmp_path / name)
        back = read_table(path)
        pd.testing.assert_frame_equal(back, df, check_exact=False)
    records = json.loads((tmp_path / "pareto.json").read_text())
    assert records[0]["feasible"] is False and records[0]["attn_tp_size"] is None
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temporary files left


def test_plot_is_a_png(swept: dict) -> None:
    import matplotlib.image as mpimg

    data = swept["png"].read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    h, w = mpimg.imread(swept["png"]).shape[:2]
    assert w > 1000 and h > 400


def test_sweep_without_out_writes_csv_to_stdout() -> None:
    result = _run("sweep", "llama-3.1-8b", "--hardware", "h200_sxm", "--cards", "1", "--scenarios", "latency")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].split(",")[:4] == ["hardware", "cards", "scenario", "rank"]
    assert len(lines) >= 3 and all(line.startswith("h200_sxm,1,latency,") for line in lines[1:])


# ---------------------------------------------------------------------------------------------- bad input


@pytest.mark.parametrize("args, needle", [
    (["--cards", ""], "--cards"),
    (["--cards", "eight"], "--cards"),
    (["--cards", "0..4"], "1 <= LOW <= HIGH"),
    (["--cards", "8", "--scenarios", "fastest"], "unknown scenario 'fastest'"),
    (["--cards", "8", "--jobs", "0"], "--jobs"),
    (["--cards", "8", "--seq-lens", "8k:x"], "--seq-lens"),
    (["--cards", "8", "--weight-dtype", "h200_sxm=int8"], "--weight-dtype"),
])
def test_sweep_bad_input_is_one_line_exit_2_and_no_file(tmp_path: Path, args: list[str], needle: str) -> None:
    out = tmp_path / "pareto.csv"
    result = _run("sweep", "deepseek-v3.2", "--hardware", "atlas_a3", *args, "--out", str(out))
    assert result.exit_code == 2, result.output
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("error: ")
    assert needle in result.stderr
    assert "Traceback" not in result.output
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("where", ["missing-folder", "folder", "file-as-folder"])
def test_sweep_unwritable_out_fails_before_solving(tmp_path: Path, where: str) -> None:
    (tmp_path / "afile").write_text("x")
    out = {"missing-folder": tmp_path / "nope" / "p.csv", "folder": tmp_path,
           "file-as-folder": tmp_path / "afile" / "p.csv"}[where]
    result = _run(*SWEEP, "--out", str(out))
    assert result.exit_code == 2, result.output
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("error: --out:")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile"]


def test_written_file_gets_the_usual_permissions(swept: dict) -> None:
    import os

    umask = os.umask(0)
    os.umask(umask)
    assert swept["csv"].stat().st_mode & 0o777 == 0o666 & ~umask  # not the 0600 of a private temporary file


def test_atomic_write_leaves_nothing_behind_when_the_writer_fails(tmp_path: Path) -> None:
    target = tmp_path / "p.csv"
    target.write_text("old")

    def broken(tmp: str) -> None:
        Path(tmp).write_text("half")
        raise OSError(28, "No space left on device")

    with pytest.raises(InputError, match="No space left"):
        atomic_write(target, broken)
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["p.csv"]


# ---------------------------------------------------------------------------------------------- Python API


def test_api_sweep_returns_a_typed_dataframe() -> None:
    df = api.sweep("llama-3.1-8b", "h200_sxm", [1, 8], "latency", seq_lens=[(2048, 128), (8192, 128)])
    assert isinstance(df, pd.DataFrame) and list(df.columns) == list(COLUMNS)
    assert str(df["cards"].dtype) == "Int64" and str(df["feasible"].dtype) == "boolean"
    assert set(zip(df["isl"], df["cards"])) == {(2048, 1), (2048, 8), (8192, 1), (8192, 8)}
    assert df.attrs["combinations"] == 4 and df.attrs["wall_s"] > 0
    assert df["feasible"].all() and (df["osl"] == 128).all()


def test_api_sweep_sla_makes_rows_infeasible_with_the_sla_named() -> None:
    df = api.sweep("llama-3.1-70b", "h100_sxm", [8], "latency", tpot_ms=1.0)
    assert len(df) == 1 and not df["feasible"].iloc[0]
    assert "SLA.tpot" in df["binding_constraint"].iloc[0]


# ---------------------------------------------------------------------------------------------- recommend


def test_recommend_fewest_cards_and_cheapest_hardware() -> None:
    rec = api.recommend("llama-3.1-70b", ["h100_sxm", "h200_sxm"], target_output_tokens_per_s=1000,
                        cards="1..8", prices={"h100_sxm": 2.0, "h200_sxm": 3.5})
    by_hw = {o.hardware: o for o in rec.options}
    # one H100 deployment of 8 carries the load (1, 2, 4 need 2+ copies of more cards in all); 3 copies of 2 H200s
    # (about 370 tok/s each) carry it on 6, so 8 H200s are not tried
    h100, h200 = by_hw["h100_sxm"], by_hw["h200_sxm"]
    assert (h100.copies, h100.cards, h100.tried_cards) == (1, 8, [1, 2, 4, 8])
    assert (h200.copies, h200.cards, h200.total_cards, h200.tried_cards) == (3, 2, 6, [1, 2, 4])
    for o in rec.options:
        assert o.met and o.total_output_tokens_per_s >= 1000 and o.headroom >= 1
        assert o.total_cards == o.copies * o.cards
        assert o.cost_per_hour == pytest.approx(o.total_cards * o.price_per_card_hour)
        assert o.cost_per_million_output_tokens == pytest.approx(o.cost_per_hour / (1000 * 3600) * 1e6, rel=1e-3)
        assert o.cost_per_million_output_tokens_at_capacity <= o.cost_per_million_output_tokens
        assert all(o.cards % v == 0 for v in o.config.values())
    assert rec.basis == "cost per hour" and rec.best is by_hw["h100_sxm"]
    frame = rec.to_frame()
    assert frame["recommended"].tolist() == [True, False]


def test_recommend_requests_per_s_target_and_cli(tmp_path: Path) -> None:
    result = _run("recommend", "llama-3.1-70b", "--hardware", "h200_sxm", "--target-requests-per-s", "2",
                  "--osl", "256", "--cards", "1..8", "--format", "json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["target"]["output_tokens_per_s"] == pytest.approx(512)
    opt = data["options"][0]
    assert data["recommended"] == "h200_sxm" and opt["met"] and opt["requests_per_s"] >= 2
    table = _run("recommend", "llama-3.1-70b", "h100_sxm", "--hardware", "h200_sxm",
                 "--target-requests-per-s", "2", "--osl", "256", "--cards", "1..8")
    assert table.exit_code == 0, table.output
    assert "recommended (fewest cards)" in table.stdout and "--price" in table.stdout


def test_recommend_unreachable_load_exits_1_and_bad_input_exits_2() -> None:
    result = _run("recommend", "llama-3.1-70b", "--hardware", "h100_sxm", "--target-output-tokens-per-s", "1e9",
                  "--cards", "1,2", "--max-copies", "4")
    assert result.exit_code == 1
    assert result.stderr.startswith("error: no cluster size tried meets") and result.stderr.count("\n") == 1
    for args in (["--target-output-tokens-per-s", "5", "--target-requests-per-s", "1"],
                 ["--target-output-tokens-per-s", "-5"],
                 ["--target-output-tokens-per-s", "5", "--price", "h200_sxm=3"],
                 ["--target-output-tokens-per-s", "5", "--price", "h100_sxm=cheap"]):
        bad = _run("recommend", "llama-3.1-70b", "--hardware", "h100_sxm", *args)
        assert bad.exit_code == 2, (args, bad.output)
        assert bad.stderr.startswith("error: ") and bad.stderr.count("\n") == 1


def test_recommend_with_no_feasible_size_gives_the_remedy_solve_gives_at_the_largest() -> None:
    """An impossible TPOT on every size tried: the refusal names the binding SLA and what would fit, in the words
    `solve` uses for the largest size (recommend used to drop the planner's remedy)."""
    args = ["qwen3-8b", "--hardware", "h100_sxm", "--tpot-ms", "0.5", "--time-limit", "2"]
    rec = _run("recommend", *args, "--target-output-tokens-per-s", "5000", "--cards", "1,2")
    solo = _run("solve", *args, "--cards", "2")
    assert rec.exit_code == 1 and solo.exit_code == 1, (rec.output, solo.output)
    remedy = solo.stderr.split("binds; ", 1)[1].strip()
    assert remedy.startswith("what would fit: relax --tpot-ms")
    # recommend says the planner's remedy is for a configuration on those cards, the load aside
    said = remedy.replace("what would fit: ", "what would fit (a configuration on 2 cards, the load target aside): ")
    assert "(binding: SLA.tpot); " + said in rec.stderr and rec.stderr.count("\n") == 1


def test_the_front_rows_are_the_same_for_every_scenario(swept: dict) -> None:
    """One front per (hardware, cards, workload): the scenario only picks candidate 1 from it."""
    df = pd.read_csv(swept["csv"])
    front = df[df["on_front"].fillna(False).astype(bool)]
    sets = {kind: sorted(map(tuple, g[[*KNOBS, "concurrency"]].astype(int).values.tolist()))
            for kind, g in front.groupby("scenario")}
    assert len(sets) == 2 and sets["throughput"] == sets["latency"]


def test_an_answer_at_the_top_of_the_concurrency_range_says_to_raise_max_concurrency() -> None:
    from solver.space.domains import capped_concurrency, range_note
    from solver.specs.scenario import Scenario

    capped = Scenario(kind="throughput", max_concurrency=48)  # the range is 1, 2, ..., 32, 48
    assert capped_concurrency(capped) == 48
    assert range_note(32, capped) is None
    assert "--max-concurrency 48" in range_note(48, capped) and "raise --max-concurrency" in range_note(48, capped)
    assert range_note(32, Scenario(kind="throughput", concurrency=32)) is None  # the user fixed it
    # a throughput plan of a small model on one card keeps gaining past 8 requests: the answer says so
    result, cands = api.run_solve("qwen3-8b", "h100_sxm", 1, Scenario(kind="throughput", max_concurrency=8))
    assert cands[0].planned.batch == 8 and "largest concurrency tried, 8" in result.range_note
    assert api.run_solve("qwen3-8b", "h100_sxm", 1, Scenario(kind="latency", max_concurrency=8))[0].range_note is None


def test_recommend_names_the_concurrency_range_when_it_stops_a_smaller_cluster() -> None:
    # with at most 8 requests in flight one H100 falls short of the load and two carry it: the answer says that
    # one card stopped at the top of the concurrency range, and the failure names the range, not an SLA
    # (one card reaches about 670 output tokens/s at 8 requests, two about 990)
    rec = api.recommend("qwen3-8b", "h100_sxm", target_output_tokens_per_s=800, cards="1,2", max_concurrency=8,
                        max_copies=1)
    opt = rec.options[0]
    assert opt.met and opt.cards == 2
    assert "on 1 card is at the largest concurrency tried, 8" in opt.note and "fewer cards" in opt.note
    short = api.recommend("qwen3-8b", "h100_sxm", target_output_tokens_per_s=1e6, cards="1,2", max_concurrency=8,
                          max_copies=1)
    assert not short.options[0].met
    assert "raise --max-concurrency" in short.options[0].note and "SLA" not in short.options[0].note


def test_recommend_widens_the_default_concurrency_range_where_a_count_falls_short_at_its_top(monkeypatch) -> None:
    # with a default range of 8 requests, one H100 falls short of 800 output tokens/s at its top (about 670); no
    # --max-concurrency was given, so the count is planned again up to 32 requests and one card carries the load
    import importlib

    rec_module = importlib.import_module("solver.capacity.recommend")
    monkeypatch.setattr(rec_module, "DEFAULT_MAX_CONCURRENCY", 8)
    opt = api.recommend("qwen3-8b", "h100_sxm", target_output_tokens_per_s=800, cards="1,2").options[0]
    assert opt.met and opt.cards == 1 and opt.concurrency > 8
    assert "planned up to 32 requests in flight on 1 card" in opt.note
    # a given --max-concurrency is kept: two cards, and the note says one fell short at its top
    kept = api.recommend("qwen3-8b", "h100_sxm", target_output_tokens_per_s=800, cards="1,2",
                         max_concurrency=8).options[0]
    assert kept.met and kept.cards == 2 and kept.concurrency <= 8


def test_a_max_concurrency_between_two_powers_is_tried_itself() -> None:
    """The serving plan tries powers of two up to the cap, and the cap itself where the user named one between
    two powers (--max-concurrency 1000: 512 alone stops short of the load named); a decode pool keeps the powers
    (its buckets of a fixed concurrency are the intervals between them)."""
    from solver.space.domains import _batch_values
    from solver.specs.scenario import Scenario

    assert _batch_values(Scenario(max_concurrency=1000), 8)[-2:] == (512, 1000)
    assert _batch_values(Scenario(max_concurrency=1024), 8)[-1] == 1024
    assert _batch_values(Scenario(max_concurrency=1000, phase="decode"), 8)[-1] == 512


def test_a_shortfall_says_what_would_fit_where_the_larger_size_has_no_configuration() -> None:
    """Llama-3.3-70B under vLLM on 6 and 11 H100s: 11 spread evenly over no node count (C.nodes_whole), so the most
    found is on 6; the note named the binding rule and dropped the planner's remedy, which the same 11 under
    `solve` gives (12 cards fit, as 2 nodes x 6)."""
    r = _run("recommend", "llama-3.3-70b", "--hardware", "h100_sxm", "--framework", "vllm", "--isl", "1024",
             "--osl", "1024", "--target-output-tokens-per-s", "20000", "--cards", "6,11", "--max-copies", "1")
    assert r.exit_code == 1
    assert "the larger sizes tried (11 cards) have no feasible configuration" in r.stderr
    assert "C.nodes_whole" in r.stderr and "at 11 cards, no attn layout is left" in r.stderr
    assert ("what would fit (a configuration on 11 cards, the load target aside): 10 (2 nodes x 5) or 12 "
            "(2 nodes x 6) ranks spread evenly") in r.stderr
    assert "12 cards fit" in r.stderr


def test_a_size_that_is_not_whole_nodes_records_its_placement_in_every_row() -> None:
    """A sweep row says on which nodes the engine's launch runs its cards where they are not whole nodes, as
    `solve`'s placement note does: 12 H100s are 2 nodes x 6 under vLLM (equal ranks per node) and 8 + 4 under
    TRT-LLM (rank order); 11 under vLLM has no placement (refused); whole nodes or one node leave it empty."""
    vllm = api.sweep("qwen3-32b", "h100_sxm", [8, 11, 12], "throughput", framework="vllm")
    trt = api.sweep("qwen3-32b", "h100_sxm", [12], "throughput", framework="trtllm")
    assert {w: set(g) for w, g in vllm.groupby("cards")["placement"]} == {8: {""}, 11: {"none"}, 12: {"2 nodes x 6"}}
    assert set(trt["placement"]) == {"2 nodes: 8 + 4"}
    assert not vllm.loc[vllm["cards"] == 11, "feasible"].any()


def test_recommend_names_the_placement_of_a_size_that_is_not_whole_nodes() -> None:
    """The recommended 12 H100s under vLLM (one deployment: --max-copies 1; three copies of 4 on one host each
    would win the tie in cards) run as 2 nodes x 6: the option carries it and the answer says it."""
    r = _run("recommend", "qwen3-32b", "--hardware", "h100_sxm", "--framework", "vllm", "--cards", "4,12",
             "--target-output-tokens-per-s", "3500", "--max-copies", "1", "--format", "json")
    assert r.exit_code == 0, r.output
    opt = json.loads(r.stdout)["options"][0]
    assert (opt["cards"], opt["placement"]) == (12, "2 nodes x 6")
    table = _run("recommend", "qwen3-32b", "--hardware", "h100_sxm", "--framework", "vllm", "--cards", "4,12",
                 "--target-output-tokens-per-s", "3500", "--max-copies", "1")
    assert "12 x h100_sxm as 2 nodes x 6" in table.stdout


def test_recommend_with_one_hardware_carrying_the_load_says_so_and_asks_no_prices() -> None:
    """Of two hardware, only H100 carries the load in one deployment of up to 4 cards: that is the basis, and with
    a price for each the answer does not ask for prices (before: 'fewest cards' and 'give --price ... for every
    hardware')."""
    r = _run("recommend", "qwen3-32b", "--hardware", "h100_sxm", "l40s", "--cards", "1,2,4", "--max-copies", "1",
             "--target-output-tokens-per-s", "1000", "--price", "h100_sxm=2.5", "--price", "l40s=1")
    assert r.exit_code == 0, r.output
    assert "recommended (the only hardware that carries the load): 4 x h100_sxm" in r.stdout
    assert "give --price" not in r.stdout
    rec = api.recommend("qwen3-32b", ["h100_sxm", "l40s"], target_output_tokens_per_s=1000, cards=[1, 2, 4],
                        max_copies=1)
    assert (rec.basis, rec.best.hardware) == ("only one met", "h100_sxm")


# ------------------------------------------------------------------------------------- recommend: copies

# Qwen3-235B-A22B FP8 at 20,000 output tok/s, TPOT <= 50 ms, on H100 (Stop 35's capacity review). One copy of 8
# or 16 cards carries at most 1,592 (84 in flight) / 3,567 (192 in flight) output tok/s within the SLA, at the SLA
# edge between the powers (plan.sla_edge), so the fewest copies are ceil(20,000 / that) = 13 / 6: 104 / 96 cards in
# all; 128 and 256 cards need 2 and 1 copies (256 cards each).
QWEN = dict(model="qwen3-235b-a22b-fp8", hardware="h100_sxm", target_output_tokens_per_s=20000, tpot_ms=50)


def test_recommend_serves_the_load_with_copies_of_a_smaller_deployment_where_they_need_fewer_cards() -> None:
    rec = api.recommend(**QWEN, cards="8,16,128,256", prices={"h100_sxm": 2.5})
    o = rec.best
    assert (o.copies, o.cards, o.total_cards) == (6, 16, 96)
    assert o.tried_cards == [8, 16]  # one copy of 128 cards needs more than 96: not solved
    assert o.output_tokens_per_s == pytest.approx(3567.02, abs=0.1) and o.concurrency == 192
    assert o.total_output_tokens_per_s == pytest.approx(6 * 3567.02, abs=1)
    assert o.copy_load_output_tokens_per_s == pytest.approx(20000 / 6, abs=0.1)
    assert o.headroom == pytest.approx(6 * 3567.02 / 20000, abs=1e-3)
    assert o.cost_per_hour == pytest.approx(96 * 2.5)  # $240/h against one deployment's $640/h
    assert o.cost_per_million_output_tokens_at_capacity == pytest.approx(240 / (6 * 3567.02 * 3600) * 1e6, rel=1e-3)


def test_each_copy_runs_the_lowest_latency_configuration_that_carries_its_share_of_the_load() -> None:
    # 2 copies of 128 H100s carry 10,000 tok/s each: of the 128-card rows that reach it (10,265 at 256 in flight,
    # and the rows at 512 and 1,024), 256 in flight has the lowest request latency
    o = api.recommend(**QWEN, cards="128").best
    assert (o.copies, o.concurrency) == (2, 256)
    assert o.output_tokens_per_s == pytest.approx(10264.5, abs=0.1) and o.tpot_ms < 25


def test_max_copies_1_gives_the_one_deployment_answer() -> None:
    # the first size whose one deployment carries 20,000: 256 cards, and of its rows that do (512, 1,024, 2,048 in
    # flight) the lowest latency, 512 ($640/h)
    o = api.recommend(**QWEN, cards="8,16,128,256", prices={"h100_sxm": 2.5}, max_copies=1).best
    assert (o.copies, o.cards, o.total_cards, o.concurrency) == (1, 256, 256, 512)
    assert o.tried_cards == [8, 16, 128, 256]
    assert o.output_tokens_per_s == o.total_output_tokens_per_s == pytest.approx(20149.85, abs=0.1)
    assert o.cost_per_hour == pytest.approx(640)


def test_max_copies_bounds_the_copies_and_a_shortfall_names_it() -> None:
    # at most 7 copies: 8 cards (13 needed) is out, 16 cards carry it in 6; at most 5, only 128 (2 copies) does
    assert api.recommend(**QWEN, cards="8,16", max_copies=7).best.total_cards == 96
    o = api.recommend(**QWEN, cards="8,16,128", max_copies=5).best
    assert (o.copies, o.cards) == (2, 128)
    short = api.recommend(**QWEN, cards="8,16", max_copies=5).options[0]
    assert not short.met
    assert "3,567 output tokens/s on 16 cards (17,835 in 5 copies), below the target 20,000" in short.note
    assert "--max-copies 6 (6 copies of 16 cards carry 21,402 output tokens/s)" in short.note


# Qwen3-235B W8A8 on Atlas A3 at TPOT <= 50 ms reaches 1,261 output tok/s on 16 dies, 2,962 on 32 and 6,416 on 64
# (79, 93, 100 per die: a larger deployment carries more per die).
A3 = dict(model="qwen3-235b-a22b-fp8", hardware="atlas_a3", weight_dtype="int8", tpot_ms=50)


def test_one_deployment_wins_where_copies_of_a_smaller_one_need_more_cards() -> None:
    # 2,600 tok/s: 3 copies of 16 dies (48) against one deployment of 32
    o = api.recommend(**A3, target_output_tokens_per_s=2600, cards="16,32").best
    assert (o.copies, o.cards, o.total_cards) == (1, 32, 32)


def test_a_tie_in_cards_goes_to_fewer_copies() -> None:
    # 5,300 tok/s: 2 copies of 32 dies (5,940) and one deployment of 64 both take 64 dies: one deployment
    o = api.recommend(**A3, target_output_tokens_per_s=5300, cards="32,64").best
    assert (o.copies, o.cards, o.total_cards) == (1, 64, 64)
    assert o.tried_cards == [32, 64]


def test_copies_needed_is_the_ceiling_of_the_load_over_one_copy() -> None:
    from solver.capacity.recommend import copies_needed

    assert copies_needed(2989.53, 20000) == 7 and copies_needed(20000, 20000) == 1
    assert copies_needed(50000, 20000) == 1 and copies_needed(5000, 20000) == 4
    # 2.1 / 0.3 is 7.000000000000001 in floating point, while 7 x 0.3 carries 2.1 (the rows are tested so)
    assert copies_needed(0.3, 2.1) == 7


def test_recommend_says_the_copies_in_the_table_and_the_json_and_refuses_them_disaggregated() -> None:
    args = ["recommend", "qwen3-235b-a22b-fp8", "--hardware", "h100_sxm", "--target-output-tokens-per-s", "20000",
            "--tpot-ms", "50", "--cards", "8,16"]
    table = _run(*args)
    assert table.exit_code == 0, table.output
    assert ("recommended (fewest cards): 6 x (16 x h100_sxm: Attn DP + SP2 + MoE EP, 192 requests in flight per "
            "copy) = 96 cards") in table.stdout
    assert "spreads the requests evenly: each carries 3,333 output tokens/s" in " ".join(table.stdout.split())
    data = json.loads(_run(*args, "--format", "json").stdout)
    opt = data["options"][0]
    assert (data["max_copies"], opt["copies"], opt["cards"], opt["total_cards"]) == (None, 6, 16, 96)
    one = json.loads(_run(*args, "--max-copies", "1", "--format", "json").stdout)
    assert one["max_copies"] == 1 and one["recommended"] is None
    for bad in (["--max-copies", "0"], ["--max-copies", "0", "--serving", "disagg"]):
        r = _run(*args, *bad)
        assert r.exit_code == 2 and r.stderr.startswith("error: ") and r.stderr.count("\n") == 1, (bad, r.output)
        assert "--max-copies" in r.stderr


def test_copies_stay_within_the_cards_a_cluster_may_have() -> None:
    """Copies are bounded by the tool's bound on a cluster's cards (MAX_CARDS, --cards' own): a load that needs
    more cards in all is not answered with 82,345 copies: the cap is named as binding, with the most it holds."""
    from solver.specs.limits import MAX_CARDS

    r = _run("recommend", "llama-3.1-8b", "--hardware", "h100_sxm", "--target-output-tokens-per-s", "1e9",
             "--cards", "1..8")
    assert r.exit_code == 1
    assert f"binding: the cap of {MAX_CARDS:,} cards in all" in r.stderr


README = Path(__file__).resolve().parents[1] / "README.md"


def test_a_scenario_check_across_fields_is_refused_under_the_field_it_names() -> None:
    """concurrency 4 over max_concurrency 2 is the user's --concurrency, not a 'scenario' or pydantic's text."""
    with pytest.raises(InputError) as exc:
        make_scenario(kind="throughput", isl=4096, osl=256, concurrency=4, max_concurrency=2)
    assert exc.value.field == "--concurrency"
    assert not exc.value.problem.startswith("Value error")
    assert "exceeds max_concurrency 2" in exc.value.problem


def test_a_scenario_field_out_of_range_is_refused_under_its_flag() -> None:
    with pytest.raises(InputError) as exc:
        make_scenario(kind="throughput", isl=4096, osl=256, max_concurrency=0)
    assert exc.value.field == "--max-concurrency"


def test_solve_names_the_field_a_check_across_fields_starts_with() -> None:
    """solve reads its scenario through the same rule as sweep (specs.scenario.scenario_of)."""
    r = _run("solve", "qwen3-8b", "--hardware", "h100_sxm", "--cards", "1", "--concurrency", "4",
             "--max-concurrency", "2")
    assert r.exit_code == 2 and r.stderr.startswith("error: --concurrency: concurrency 4 exceeds max_concurrency 2")


@pytest.mark.parametrize("serving", ["agg", "disagg"])
def test_sweep_concurrency_over_its_bound_is_one_line_naming_concurrency(serving: str) -> None:
    r = _run("sweep", "qwen3-8b", "--hardware", "h200_sxm", "--cards", "8", "--serving", serving,
             "--concurrency", "4", "--max-concurrency", "2")
    assert r.exit_code == 2
    assert r.stderr.startswith("error: --concurrency: concurrency 4 exceeds max_concurrency 2")
    assert r.stderr.count("\n") == 1 and "Value error" not in r.stderr


def test_a_load_past_the_cluster_cap_names_the_cap_and_the_load_that_fits() -> None:
    """65,536 copies of 1 card at 1,443 tok/s carry 65,536 x 1,443 = 94,568,448 tok/s; a 500M target is past it,
    and fits split over ceil(500,000,000 / 94,568,448) = ceil(5.29) = 6 clusters."""
    note = cluster_cap_note(MAX_CARDS * 1443.0, MAX_CARDS, 1, 1443.0, 5e8)
    assert f"binding: the cap of {MAX_CARDS:,} cards in all" in note
    assert "at most 94,568,448 output tokens/s (65,536 copies of 1 card at 1,443 each)" in note
    assert "a target up to 94,568,448 (the load split over 6 clusters)" in note


def test_the_most_within_the_cluster_cap_is_the_size_whose_copies_carry_most() -> None:
    """Copies of 8 cards at 100 tok/s: 65,536 // 8 = 8,192 of them carry 819,200 tok/s. 16 cards at 150: 4,096
    copies, 614,400, less: the 8-card copies stay. 16 cards at 250: 1,024,000, more: they replace them."""
    from solver.capacity.recommend import most_in_cap

    best = most_in_cap(None, 100.0, 8)
    assert best == (819_200.0, 8_192, 8, 100.0)
    assert most_in_cap(best, 150.0, 16) == best
    assert most_in_cap(best, 250.0, 16) == (1_024_000.0, 4_096, 16, 250.0)


def test_recommend_past_the_cluster_cap_takes_the_size_that_carries_most_per_card() -> None:
    """Llama-3.1-8B on H100 at 1e9 tok/s: the cap binds. Its figure is the best copies of any size tried within
    the cap (most per card), not copies of the size with the most tok/s alone."""
    r = _run("recommend", "llama-3.1-8b", "--hardware", "h100_sxm", "--target-output-tokens-per-s", "1e9",
             "--cards", "1..8", "--format", "json")
    assert r.exit_code == 1
    m = re.search(r"at most ([\d,]+) output tokens/s \(([\d,]+) copies of (\d+) cards? at ([\d,]+) each\)", r.stderr)
    assert m, r.stderr
    most, copies, cards, each = (int(g.replace(",", "")) for g in m.groups())
    assert copies == MAX_CARDS // cards
    assert abs(most - copies * each) <= copies  # each is rounded to a whole tok/s


def test_a_many_copies_answer_writes_the_copies_with_thousands_separators() -> None:
    """The recommended line and its note read 34,644 copies as the table does, not 34644."""
    r = _run("recommend", "llama-3.1-8b", "--hardware", "h100_sxm", "--target-output-tokens-per-s", "3e6",
             "--cards", "1")
    assert r.exit_code == 0, r.output
    line = next(x for x in r.stdout.splitlines() if x.startswith("recommended"))
    copies = re.search(r"\): (\S+) x \(", line).group(1)
    assert "," in copies and int(copies.replace(",", "")) >= 1000


def test_every_column_of_the_sweeps_table_is_in_the_readmes_schema() -> None:
    text = README.read_text()
    schema = text[text.index("### The sweep's table"):text.index("A disaggregated sweep")]
    named = set(re.findall(r"`([a-z_]+)`", schema))
    assert [c for c in COLUMNS if c not in named] == []


def test_a_price_for_some_hardware_only_names_the_hardware_without_one() -> None:
    """A price for h200_sxm and none for b200_sxm: the answer is by cards, and the note says which price is missing
    rather than asking for every hardware's."""
    r = _run("recommend", "qwen3-8b", "--hardware", "h200_sxm", "b200_sxm", "--target-output-tokens-per-s", "1000",
             "--price", "h200_sxm=3", "--cards", "1..2")
    assert r.exit_code == 0, r.output
    assert "note: no --price for b200_sxm, so the answer is the fewest cards" in r.stdout
    assert "--price b200_sxm=USD_PER_CARD_HOUR" in r.stdout


def _front_rows() -> pd.DataFrame:
    """One hardware, one card count, three front rows (sweep.on_front: request latency vs tokens/s per rank),
    OSL 100: request latency = TTFT + 99 x TPOT. a: 505 + 99 x 5 = 1,000 ms, 100 tok/s per rank, 1,000 / 5 = 200
    tok/s per user; b: 200 + 99 x 2 = 398 ms, 50 per rank, 500 per user; c: 50 + 99 x 3 = 347 ms, 20 per rank,
    333 per user. On the per-user axis b (500) lies right of c (333) with the higher throughput, and a left of
    both: sorted by tokens/s per user the curve would fold back (200 -> 333 -> 500 per user: 100, 20, 50)."""
    rows = [dict(ttft_ms=1000.0 - 99 * 5.0, tpot_ms=5.0, output_tokens_per_s_per_rank=100.0),
            dict(ttft_ms=200.0, tpot_ms=2.0, output_tokens_per_s_per_rank=50.0),
            dict(ttft_ms=50.0, tpot_ms=3.0, output_tokens_per_s_per_rank=20.0)]
    df = pd.DataFrame(rows)
    df["request_latency_ms"] = df["ttft_ms"] + 99 * df["tpot_ms"]
    df["tokens_per_s_per_user"] = 1e3 / df["tpot_ms"]
    df["output_tokens_per_s"] = df["output_tokens_per_s_per_rank"] * 8
    for k in ("attn_tp_size", "dense_tp_size", "moe_tp_size", "embed_tp_size", "lmhead_tp_size", "o_proj_tp_size",
              "cp_size", "kvp_size", "attn_sp_size", "pp_size"):
        df[k] = 1
    df["concurrency"] = [64, 16, 4]
    df = df.assign(hardware="h200_sxm", cards=8, scenario="throughput", isl=2048, osl=100, feasible=True,
                   on_front=True, candidate=[1, None, None], model="m")
    return df


def test_the_front_is_drawn_on_the_axis_it_is_taken_on() -> None:
    """Request latencies 1,000 / 398 / 347 ms with 100 / 50 / 20 tok/s per rank: on request latency the front
    rises monotonically; the x label names the quantity and its unit."""
    from solver.capacity.plots import plot_sweep

    fig = plot_sweep(_front_rows())
    ax = fig.axes[0]
    (line,) = ax.get_lines()
    x, y = list(line.get_xdata()), list(line.get_ydata())
    assert x == sorted(x) and y == sorted(y)
    assert x == [347.0, 398.0, 1000.0]
    assert "request latency, ms" in ax.get_xlabel() and "tokens/s" in ax.get_ylabel()
    assert "tokens/s" in fig.axes[1].get_ylabel() and "cards" in fig.axes[1].get_xlabel()


@pytest.mark.parametrize("ext, magic", [(".png", b"\x89PNG"), (".svg", b"<?xml"), (".pdf", b"%PDF")])
def test_a_sweep_of_one_hardware_and_one_card_count_plots_in_every_format(tmp_path: Path, ext: str,
                                                                          magic: bytes) -> None:
    from solver.capacity.plots import plot_sweep

    path = tmp_path / f"one{ext}"
    plot_sweep(_front_rows(), path)
    assert path.read_bytes().startswith(magic)
