"""`solve --serving disagg`: two pools in the seed's format, the rate match, the aggregated comparison."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from solver.cli.main import main

ARGS = ["solve", "qwen3-30b-a3b", "--hardware", "h200_sxm", "--cards", "4", "--scenario", "throughput",
        "--isl", "1024", "--osl", "512", "--tpot-ms", "30", "--serving", "disagg"]


@pytest.fixture(scope="module")
def plan() -> dict:
    res = CliRunner().invoke(main, [*ARGS, "--format", "json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.output)


def test_both_pools_come_in_the_seed_candidate_format(plan: dict) -> None:
    for key in ("prefill_pool", "decode_pool"):
        pool = plan[key]
        assert {"workers", "pattern", "reason", "reference", "parallel_config", "estimation", "tradeoff"} <= set(pool)
        assert pool["parallel_config"]["attn_dp_size"] * pool["parallel_config"]["attn_tp_size"] \
            == pool["estimation"]["ranks_per_worker"]


def test_pools_fit_the_cards_and_meet_the_sla(plan: dict) -> None:
    used = plan["prefill_pool"]["estimation"]["ranks"] + plan["decode_pool"]["estimation"]["ranks"]
    assert used == plan["estimation"]["ranks_used"] <= 4
    assert plan["estimation"]["tpot_ms"] <= 30
    assert all(plan[k]["estimation"]["memory_feasible"] for k in ("prefill_pool", "decode_pool"))


def test_the_prefill_pool_is_at_most_the_rate_match_at_the_decode_demand(plan: dict) -> None:
    """The pairs' prefill workers run from one to the rate match at the decode demand (the fewest whose capacity
    meets C / (OSL TPOT), the most the decode pool could finish): one worker fewer than the answer's falls short of
    that demand, so no prefill worker is past what the decode pool could keep busy (plan.disagg.pool_pairs)."""
    rm = plan["estimation"]["rate_match"]
    workers = plan["prefill_pool"]["workers"]
    assert workers >= 1
    assert (workers - 1) * rm["prefill_requests_per_s_per_worker"] < rm["decode_demand_requests_per_s"]


def test_the_comparison_names_a_winner_and_why(plan: dict) -> None:
    c = plan["comparison"]
    assert c["winner"] in ("disagg", "agg")
    assert c["throughput_per_rank_ratio"] > 0
    assert any("KV transfer" in w for w in c["why"])
    assert "parallel_config" in plan["aggregated"]


def test_the_comparison_says_the_score_that_picks_the_winner_and_the_load_each_plan_runs(plan: dict) -> None:
    # "disagg wins (throughput per rank disagg / agg 0.81x)" read as a contradiction without the score's weights,
    # and the two plans ran different concurrencies unsaid (DeepSeek-V3.2 32K/2K on 32 B200: 256 vs 1,024)
    first = plan["comparison"]["why"][0]
    assert "throughput score (0.2 x log request latency + 0.8 x log 1 / output tokens/s per rank" in first
    assert (f"concurrency {plan['estimation']['concurrency']:,} vs "
            f"{plan['aggregated']['estimation']['concurrency']:,}, each the load its own plan picks") in first
    res = CliRunner().invoke(main, [*ARGS, "--concurrency", "300", "--format", "json"])
    assert res.exit_code == 0, res.output
    fixed = json.loads(res.output)
    assert fixed["aggregated"]["estimation"]["concurrency"] == 300
    assert "both at --concurrency 300" in fixed["comparison"]["why"][0]


def test_yaml_and_table_formats() -> None:
    for fmt, needle in (("yaml", "prefill_pool:"), ("table", "vs aggregated")):
        res = CliRunner().invoke(main, [*ARGS, "--format", fmt])
        assert res.exit_code == 0, res.output
        assert needle in res.output


def test_a_fixed_concurrency_is_the_load_both_pools_serve() -> None:
    res = CliRunner().invoke(main, [*ARGS, "--concurrency", "300", "--format", "json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["estimation"]["concurrency"] == 300


def test_disaggregation_needs_a_card_per_pool() -> None:
    res = CliRunner().invoke(main, [*ARGS[:5], "1", *ARGS[6:]])
    assert res.exit_code == 2
    assert "--cards" in res.output and "Traceback" not in res.output


def test_sweep_writes_one_row_per_disaggregated_plan(tmp_path) -> None:
    import pandas as pd

    out = tmp_path / "d.csv"
    res = CliRunner().invoke(main, ["sweep", "qwen3-30b-a3b", "--hardware", "h200_sxm", "--cards", "2,4",
                                    "--scenarios", "throughput", "--isl", "1024", "--osl", "512", "--serving",
                                    "disagg", "--out", str(out)])
    assert res.exit_code == 0, res.output
    df = pd.read_csv(out)
    assert set(df["cards"]) == {2, 4}
    assert (df["ranks_used"] <= df["cards"]).all()
    assert (df["prefill_workers"] * df["prefill_ranks_per_worker"] + df["decode_workers"]
            * df["decode_ranks_per_worker"] == df["ranks_used"]).all()
    assert set(df.loc[df["rank"] == 1, "winner"]) <= {"agg", "disagg"}


def test_recommend_finds_the_fewest_cards_whose_pools_carry_the_load() -> None:
    args = ["recommend", "qwen3-30b-a3b", "--hardware", "h200_sxm", "--isl", "1024", "--osl", "512",
            "--tpot-ms", "30", "--serving", "disagg", "--format", "json"]
    res = CliRunner().invoke(main, [*args, "--cards", "2..16", "--target-output-tokens-per-s", "40000"])
    assert res.exit_code == 0, res.output
    best = json.loads(res.output)["recommended"]
    assert best["output_tokens_per_s"] >= 40000 and best["ranks_used"] <= best["cards"]
    res = CliRunner().invoke(main, [*args, "--cards", "2", "--target-output-tokens-per-s", "1e9"])
    assert res.exit_code == 1


def test_cards_that_cannot_hold_a_worker_per_pool_name_the_cards_needed() -> None:
    # DeepSeek-R1 (FP8) needs 16 H100 per worker: two pools need 32 cards, 24 are given
    res = CliRunner().invoke(main, ["solve", "deepseek-r1", "--hardware", "h100_sxm", "--cards", "24",
                                    "--serving", "disagg"])
    assert res.exit_code == 1
    assert "need 32 cards" in res.output and "Traceback" not in res.output


def test_each_pool_carries_its_workers_launch_with_its_role(plan: dict) -> None:
    # the default framework is generic (the seed's format, not an engine): the launch says what it lacks
    for key, role in (("prefill_pool", "prefill"), ("decode_pool", "decode")):
        launch = plan[key]["launch"]
        assert launch["role"] == role and launch["missing"]


def test_launch_format_prints_both_pools_commands_with_the_engines_role_flags() -> None:
    res = CliRunner().invoke(main, [*ARGS, "--framework", "sglang", "--format", "launch"])
    assert res.exit_code == 0, res.output
    assert "# prefill pool:" in res.output and "# decode pool:" in res.output
    assert "--disaggregation-mode prefill" in res.output and "--disaggregation-mode decode" in res.output
    assert "# missing:" in res.output


def test_a_prefill_workers_request_cap_is_the_prompts_all_its_replicas_take_in_a_step() -> None:
    # every attention replica prefills at least one prompt per step (the estimate's prefill workload), so a
    # DP8 prefill worker planned at one prompt per step must admit 8 requests, not 1
    from solver.launch.candidates import pool_launch
    from solver.plan.solve import Planned
    from solver.rank.select import Candidate
    from solver.specs.framework import load_framework
    from solver.specs.hardware_catalog import load_hardware
    from solver.specs.model_catalog import load_model
    from solver.specs.parallel import make_parallel_config

    spec, hw, fw = load_model("deepseek-r1"), load_hardware("h100_sxm"), load_framework("sglang")
    pc = make_parallel_config(16, attn_tp_size=2, moe_tp_size=1, dense_tp_size=1, lmhead_tp_size=2)
    assert pc.attn_replicas == 8
    for batch, cap in ((1, 8), (8, 8), (9, 16)):
        planned = Planned(config=pc, batch=batch, estimate=None, latency_s=0.0, on_front=True)
        cand = Candidate(1, planned, "p", "", "", [], {}, False, False)
        argv = pool_launch(fw, spec, hw, cand, "prefill", 3072)["nodes"][0]["argv"]
        assert argv[argv.index("--max-running-requests") + 1] == str(cap)
