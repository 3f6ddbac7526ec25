"""What `sweep`, `recommend` and `solve --serving disagg` put out: recommend agrees with the sweep, the table
reads back, every figure of a row is at the row's concurrency, and the remedies speak of the whole deployment."""
from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from solver.capacity.disagg import recommend_disagg, sweep_disagg
from solver.capacity.table import DISAGG_COLUMNS, DISAGG_INT_COLUMNS, read_table, write_table
from solver.errors import InfeasibleError, InputError
from solver.plan.disagg import plan_disagg
from solver.plan.disagg_pools import FILLS_REPLICAS
from solver.specs.framework import load_framework
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import load_model
from solver.specs.precision import resolve_precision
from solver.specs.scenario import Scenario

# the tests sweep and recommend the same deployments and patch no estimator: they share the planner's cache
# (conftest._fresh_planner_cache)
SHARES_PLANS = True

QWEN = "qwen3-30b-a3b"


@pytest.fixture(scope="module")
def qwen8() -> pd.DataFrame:
    """The plans the sweep lists for Qwen3-30B-A3B on 8 H200 (ISL 4096 / OSL 256, throughput)."""
    return sweep_disagg(QWEN, ["h200_sxm"], "8", ["throughput"])


@pytest.fixture(scope="module")
def dsv3() -> pd.DataFrame:
    """DeepSeek-V3 on 8 H100 (no worker holds it: the first row is infeasible) and on 16 H200 (plans)."""
    return pd.concat([sweep_disagg("deepseek-v3", ["h100_sxm"], "8", ["throughput"], isl=2048, osl=512),
                      sweep_disagg("deepseek-v3", ["h200_sxm"], "16", ["throughput"], isl=2048, osl=512)],
                     ignore_index=True)


def _plan(model: str, hw: str, cards: int, **scenario) -> None:
    spec, h = load_model(model), load_hardware(hw)
    plan_disagg(spec, h, resolve_precision(spec, h, None, None, None), load_framework("generic"), cards,
                Scenario(kind="throughput", **scenario))


def _remedy(model: str, hw: str, cards: int, **scenario) -> str:
    with pytest.raises(InfeasibleError) as err:
        _plan(model, hw, cards, **scenario)
    return err.value.remedy or ""


# ------------------------------------------------------------------------------------------------ recommend


def test_recommend_takes_a_size_when_any_plan_the_sweep_lists_for_it_carries_the_load(qwen8) -> None:
    # the sweep's most throughput on 8 cards need not be its rank-1 plan (chosen by score, not by load)
    most = qwen8["output_tokens_per_s"].max()
    rec = recommend_disagg(QWEN, ["h200_sxm"], target_output_tokens_per_s=most, cards="8,16")
    assert rec.best["cards"] == 8
    assert rec.best["output_tokens_per_s"] in set(qwen8["output_tokens_per_s"])


@pytest.mark.parametrize("model, hw, cards, scenario, binding", [
    (QWEN, "h200_sxm", "8", {"ttft_ms": 20}, "SLA.ttft"),
    ("deepseek-v3", "h100_sxm", "8,16", {"isl": 2048, "osl": 512}, "B.memory_per_rank"),
])
def test_recommend_names_the_binding_constraint_when_no_size_carries_the_load(model, hw, cards, scenario,
                                                                              binding) -> None:
    rec = recommend_disagg(model, [hw], target_output_tokens_per_s=1000, cards=cards, **scenario)
    assert rec.best is None
    note = rec.options[0]["note"]
    assert f"binding: {binding}" in note and "what would fit (a disaggregated deployment on " in note and "cards, the load target aside): " in note


# ------------------------------------------------------------------------------------------------ the table


def test_the_disaggregated_table_has_its_documented_columns_whichever_row_comes_first(dsv3, tmp_path) -> None:
    assert not dsv3["feasible"].iloc[0]
    assert list(dsv3.columns) == list(DISAGG_COLUMNS)
    path = write_table(dsv3, tmp_path / "dd.csv")
    header, *lines = path.read_text().splitlines()
    assert header.split(",") == list(DISAGG_COLUMNS)
    ints = [DISAGG_COLUMNS.index(c) for c in DISAGG_INT_COLUMNS]
    for line in lines[1:]:  # feasible rows: integer columns written as integers
        cells = line.split(",")
        assert all(re.fullmatch(r"\d+", cells[i]) for i in ints if cells[i]), line


@pytest.mark.parametrize("name", ["sweep.csv", "sweep.json", "sweep.parquet"])
def test_read_table_reads_either_kind_of_sweep_back_with_its_types(dsv3, tmp_path: Path, name: str) -> None:
    from solver import api

    agg = api.sweep("llama-3.1-8b", "h200_sxm", "1", ["latency"])
    for df in (agg, dsv3):
        back = read_table(write_table(df, tmp_path / name))
        pd.testing.assert_frame_equal(back, df, check_exact=False)


def test_a_plot_of_a_disaggregated_table_is_refused(dsv3) -> None:
    from solver.capacity.plots import plot_sweep

    with pytest.raises(InputError, match="^df: .*disaggregated"):
        plot_sweep(dsv3)


def test_every_figure_of_a_row_is_at_the_rows_concurrency(qwen8) -> None:
    fixed = sweep_disagg(QWEN, ["h200_sxm"], "8", ["throughput"], concurrency=100)
    assert (fixed["concurrency"] == 100).all()
    for df in (qwen8, fixed):
        for _, r in df.iterrows():  # throughput = C x OSL / (TTFT + (OSL - 1) TPOT) (docs/disagg.md)
            assert r["output_tokens_per_s"] == pytest.approx(
                r["concurrency"] * r["osl"] / ((r["ttft_ms"] + (r["osl"] - 1) * r["tpot_ms"]) / 1e3), rel=2e-3)


def test_disaggregated_outputs_leave_out_knobs_the_model_lacks(qwen8) -> None:
    # Qwen3-30B-A3B has no dense FFN and no MLA: no dense TP, no o_proj TP (parallel.model_knobs)
    import json

    from click.testing import CliRunner

    from solver.cli.main import main

    absent = ("dense_tp_size", "o_proj_tp_size")
    for pool in ("prefill", "decode"):
        assert all(qwen8[f"{pool}_{k}"].isna().all() for k in absent)  # empty columns, as the aggregated table
        assert qwen8[f"{pool}_moe_tp_size"].notna().all()
    rec = recommend_disagg(QWEN, ["h200_sxm"], target_output_tokens_per_s=1000, cards="8")
    assert not {f"{pool}_{k}" for pool in ("prefill", "decode") for k in absent} & set(rec.best)
    res = CliRunner().invoke(main, ["solve", QWEN, "--hardware", "h200_sxm", "--cards", "8", "--serving", "disagg",
                                    "--format", "json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    configs = [out["prefill_pool"]["parallel_config"], out["decode_pool"]["parallel_config"],
               out["aggregated"]["parallel_config"],
               *(a[f"{pool}_parallel_config"] for a in out["alternatives"] for pool in ("prefill", "decode"))]
    assert all("moe_tp_size" in c and not set(absent) & set(c) for c in configs), configs


def test_every_listed_plan_gives_each_pools_workers_and_attention_dp_and_moe_ep(qwen8) -> None:
    # the alternatives used to give neither the worker counts and sizes nor DP / EP, and the table no DP / EP, so
    # an alternative's layout could not be read back (1P1D on 24 ranks: 8 + 16 or 16 + 8?)
    import json

    from click.testing import CliRunner

    from solver.cli.main import main

    for pool in ("prefill", "decode"):  # Qwen3-30B-A3B: MoE, no KVP (generic: the seed's DP)
        per_stage = qwen8[f"{pool}_ranks_per_worker"] // qwen8[f"{pool}_pp_size"]
        assert (qwen8[f"{pool}_attn_dp_size"] * qwen8[f"{pool}_attn_tp_size"] == per_stage).all()
        assert (qwen8[f"{pool}_moe_ep_size"] * qwen8[f"{pool}_moe_tp_size"] == per_stage).all()
    res = CliRunner().invoke(main, ["solve", QWEN, "--hardware", "h200_sxm", "--cards", "8", "--serving", "disagg",
                                    "--format", "json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["alternatives"]
    for a in out["alternatives"]:
        assert a["ratio"] == f"{a['prefill_workers']}P{a['decode_workers']}D"
        assert a["prefill_workers"] * a["prefill_ranks_per_worker"] + \
            a["decode_workers"] * a["decode_ranks_per_worker"] == a["ranks_used"]
        for pool in ("prefill", "decode"):
            c = a[f"{pool}_parallel_config"]
            assert {"attn_dp_size", "moe_ep_size"} <= set(c)
            assert c["attn_dp_size"] * c["attn_tp_size"] * c.get("pp_size", 1) == a[f"{pool}_ranks_per_worker"]


# ------------------------------------------------------------------------------------------------ remedies


def test_a_memory_remedy_counts_the_cards_of_both_pools_and_is_a_deployment_that_plans() -> None:
    # DeepSeek-V3 (FP8) needs 16 H100 per worker: 32 in total, not "16 cards" (the phase plan's own world)
    remedy = _remedy("deepseek-v3", "h100_sxm", 16, isl=2048, osl=512)
    total = re.search(r"(\d+) cards in total", remedy)
    assert total and int(total.group(1)) == 32, remedy
    _plan("deepseek-v3", "h100_sxm", 32, isl=2048, osl=512)


def _sglang_without_prefill_cp():
    """SGLang's profile as it was before its non-DSA prefill CP was planned (cp_size fixed at 1): the pool tests
    below pin layouts and diagnoses of that space (tests/test_sglang_prefill_cp.py covers the CP)."""
    fw = load_framework("sglang")
    return fw.model_copy(update={"knobs": [k for k in fw.knobs if k != "cp_size"], "cp_replicates_kv_cache": False,
                                 "cp_decode_repeats_batch": False})


def test_a_pool_no_worker_size_holds_names_what_binds_its_largest_worker() -> None:
    # DeepSeek-R1 8K prompts on 32 H100 under SGLang, TTFT 200 ms: workers of 1-8 ranks cannot hold the weights
    # (and SGLang's rules prune some of their layouts); at 16 ranks only the TTFT SLA stops the prefill pool.
    # The error used to list every size's constraints, framework rules included, as binding.
    spec, hw = load_model("deepseek-r1"), load_hardware("h100_sxm")
    with pytest.raises(InfeasibleError) as err:
        plan_disagg(spec, hw, resolve_precision(spec, hw, None, None, None), _sglang_without_prefill_cp(), 32,
                    Scenario(kind="balanced", isl=8192, osl=1024, ttft_ms=200, tpot_ms=20))
    assert err.value.binding == ["SLA.ttft"]
    assert "(SLA.ttft binds at 16 ranks)" in str(err.value) and "relax --ttft-ms" in (err.value.remedy or "")


def test_a_diagnosis_never_names_the_planners_bookkeeping_rule_as_binding() -> None:
    # The same pool with SGLang's prefill CP planned: at one prompt a CP layout meets the TTFT with a replica idle,
    # which the pool model never runs (FILLS_REPLICAS, bookkeeping). The diagnosis named that rule as binding and
    # lost the SLA advice; the TTFT the full layouts miss is what binds
    spec, hw = load_model("deepseek-r1"), load_hardware("h100_sxm")
    assert FILLS_REPLICAS.bookkeeping
    with pytest.raises(InfeasibleError) as err:
        plan_disagg(spec, hw, resolve_precision(spec, hw, None, None, None), load_framework("sglang"), 32,
                    Scenario(kind="balanced", isl=8192, osl=1024, ttft_ms=200, tpot_ms=20))
    assert err.value.binding == ["SLA.ttft"]
    assert FILLS_REPLICAS.id not in str(err.value) and "relax --ttft-ms" in (err.value.remedy or "")


def test_a_concurrency_remedy_only_when_a_concurrency_was_given() -> None:
    # the weights alone do not fit a worker: fewer requests would not help, and none was given
    assert "concurrency" not in _remedy("deepseek-v3", "h100_sxm", 16, isl=2048, osl=512)


@pytest.mark.slow  # seconds each: .ci/run's slow pass (the default suite stays under 5 minutes on 2 cores)
def test_a_given_concurrency_the_pools_cannot_hold_names_the_most_they_hold_not_cards_they_have() -> None:
    # both pools fit 8 cards (the old line said "need 2 cards together"); no pairing's decode workers hold 10,000
    # (1,000 is served since pairs are ordered by their closed-loop rate: 4P2D, 250 a decode replica)
    most = re.search(r"--concurrency (\d+), or ", _remedy(QWEN, "h200_sxm", 8, concurrency=10000))
    assert most and int(most.group(1)) < 10000
    _plan(QWEN, "h200_sxm", 8, concurrency=int(most.group(1)))


def test_a_given_concurrency_past_the_prefill_pool_that_fits_is_served_with_its_queue() -> None:
    """DeepSeek-R1 32K/2K on 16 H200 (SGLang), 128 requests: the decode demand C / (OSL TPOT) asks for 2 prefill
    workers of 8, which do not fit beside a decode worker of 8. The one prefill worker that fits serves the load
    with a queue (the closed loop, estimate.disagg): the answer is that deployment, its rate below the prefill
    pool's capacity and the wait in its TTFT, not a refusal naming the rate match."""
    from solver.estimate.disagg import workers_to_match

    spec, hw, fw = load_model("deepseek-r1"), load_hardware("h200_sxm"), load_framework("sglang")
    prec = resolve_precision(spec, hw, None, None, None)
    sc = Scenario(kind="balanced", isl=32768, osl=2048, concurrency=128)
    best = plan_disagg(spec, hw, prec, fw, 16, sc).best
    t = best.estimate.times
    assert best.estimate.concurrency == 128 and best.cards <= 16
    assert best.prefill.workers < workers_to_match(best.demand_rps, best.prefill_rps_per_worker)
    assert t.request_rate < t.prefill_capacity and t.prefill_wait_s > 0


def test_the_ttft_floor_is_the_lowest_end_to_end_ttft_whatever_sla_was_given() -> None:
    # 20 ms: no prefill worker's step meets it; 50 ms: pairs are planned and all miss it
    floors = set()
    for ttft in (20, 50):
        found = re.search(r"lowest TTFT is ([\d.]+) ms", _remedy(QWEN, "h200_sxm", 8, ttft_ms=ttft))
        assert found
        floors.add(float(found.group(1)))
    assert len(floors) == 1
    _plan(QWEN, "h200_sxm", 8, ttft_ms=floors.pop() * 1.001)  # and an SLA at the floor is met


def test_what_would_serve_a_given_concurrency_is_judged_by_the_sla_as_the_plan_is() -> None:
    # DeepSeek-R1 8K/1K on 16 H200 (SGLang), TTFT 700 ms, TPOT 30 ms, --concurrency 512: the remedy offered
    # "--concurrency 32, or 168 cards", from the rate match alone; on 168 cards every pair misses the TTFT SLA (the
    # 512-request burst), and at 32 too. Each suggestion is now one the full estimate serves within the SLA
    spec, hw, fw = load_model("deepseek-r1"), load_hardware("h200_sxm"), load_framework("sglang")
    prec = resolve_precision(spec, hw, None, None, None)
    sc = Scenario(kind="balanced", isl=8192, osl=1024, ttft_ms=700, tpot_ms=30, concurrency=512)
    with pytest.raises(InfeasibleError) as err:
        plan_disagg(spec, hw, prec, fw, 16, sc)
    remedy = err.value.remedy or ""
    fewer = re.search(r"--concurrency (\d+)", remedy)
    assert fewer, remedy
    assert plan_disagg(spec, hw, prec, fw, 16, sc.model_copy(update={"concurrency": int(fewer.group(1))}))
    more = re.search(r"or (\d+) cards \(", remedy)
    if more:
        assert plan_disagg(spec, hw, prec, fw, int(more.group(1)), sc)


@pytest.mark.slow  # seconds each: .ci/run's slow pass (the default suite stays under 5 minutes on 2 cores)
def test_a_given_concurrency_above_the_planners_default_range_is_served() -> None:
    # a fixed concurrency makes the planner's range (4,096 by default) moot, as in the aggregated plan
    _plan(QWEN, "h200_sxm", 128, concurrency=6000)


def test_a_prefill_pool_plans_steps_that_give_every_replica_the_same_prompts() -> None:
    """The pool model steps every attention replica of a prefill worker with n prompts (mu = x R_p n / P_n), so a
    prefill point's batch is a multiple of its replicas, and one prompt per replica is asked for as batch = R_p
    (the divisors of W), not read off a batch-1 step the estimator fills with a prompt per replica. DeepSeek-V3
    on 32 H200 (SGLang): the pick is Attn TP4 x DP2 at two prompts a step; where the batch-1 plans costed one
    prompt and the pool still priced one per replica, the pairing lost that point and took DP8 (TTFT 1,631 ->
    2,326 ms)."""
    from solver.plan import disagg_pools

    spec, hw, fw = load_model("deepseek-v3"), load_hardware("h200_sxm"), _sglang_without_prefill_cp()
    prec = resolve_precision(spec, hw, None, None, None)
    assert disagg_pools.prefill_batches(8192, 8) == [1, 2, 4, 8, 16]
    assert disagg_pools.prefill_batches(32768, 8) == [1, 2, 4, 8]  # up to one prompt's tokens per rank past the cap
    sc = Scenario(kind="balanced")  # `solve deepseek-v3 --hardware h200_sxm --cards 32 --serving disagg`'s
    best = plan_disagg(spec, hw, prec, fw, 32, sc).best.prefill.planned
    assert (best.config.attn_tp_size, best.config.attn_replicas, best.batch) == (4, 2, 2)
    fronts, _ = disagg_pools.pool_fronts(spec, hw, prec, fw, 32, sc, None, False, None, [8], "cpsat")
    points = fronts["prefill"][8]
    assert all(p.batch % p.config.attn_replicas == 0 for p in points)
    assert {p.config.attn_replicas for p in points if p.batch == p.config.attn_replicas} >= {2, 8}


@pytest.mark.slow  # seconds each: .ci/run's slow pass (the default suite stays under 5 minutes on 2 cores)
def test_the_disaggregated_ttft_is_the_sum_of_the_parts_shown() -> None:
    """The TTFT line listed wait + prefill + KV + admission (857 ms) beside a TTFT of 1,631 ms: the fixed front-end
    cost and the first wave's weight were missing. Every part is now shown and they add up. (The 2P1D plan with CP8
    prefill workers since Stop 37; its figures follow the fitted factors, so the line is checked against the JSON's
    parts; 3P1D TP4 x DP2 before: 1,631.0 = 80% x 867.9 + 20% x 4,683.6.)"""
    import json

    from click.testing import CliRunner

    from solver.cli.main import main

    r = CliRunner().invoke(main, ["solve", "deepseek-v3", "--hardware", "h200_sxm", "--cards", "32", "--serving",
                                  "disagg", "--framework", "sglang", "--format", "json"])
    assert r.exit_code == 0, r.stderr
    e = json.loads(r.stdout)["estimation"]
    p = e["ttft_parts_ms"]
    steady = p["front_end"] + p["prefill_wait"] + p["prefill"] + p["kv_transfer"] + p["first_decode_step"]
    assert steady == pytest.approx(p["steady_state"], abs=0.02)
    share = p["first_wave_share"]
    assert (1 - share) * p["steady_state"] + share * p["first_wave_mean"] + p["slot_wait"] == \
        pytest.approx(e["ttft_ms"], rel=1e-3)
    table = CliRunner().invoke(main, ["solve", "deepseek-v3", "--hardware", "h200_sxm", "--cards", "32", "--serving",
                                      "disagg", "--framework", "sglang"]).stdout
    # the table prints the JSON's parts (one decimal), whatever the fitted factors make them
    line = (f"TTFT {e['ttft_ms']:,.1f} ms = {1 - share:.0%} x steady {p['steady_state']:,.1f} (front end "
            f"{p['front_end']:,.1f} + wait {p['prefill_wait']:,.1f} + prefill {p['prefill']:,.1f} + KV ")
    assert line in table and f") + {share:.0%} x first wave {p['first_wave_mean']:,.1f}" in table


def test_pool_plans_whose_failures_go_unread_are_not_diagnosed(monkeypatch) -> None:
    """A diagnosis re-plans with each constraint family relaxed (and plans other world sizes for a remedy): the
    fronts the SLA floor re-plans with the SLAs set aside (its failures are not read) ask for none, and the
    fronts of the plan itself diagnose only the pools' first plans (what `no_pair` reads)."""
    from solver.plan import disagg_pools, solve

    calls = []
    real = solve.explain_infeasible
    monkeypatch.setattr(solve, "explain_infeasible", lambda *a, **k: calls.append(1) or real(*a, **k))
    spec, hw, fw = load_model("llama-3.1-70b"), load_hardware("h100_sxm"), load_framework("generic")
    prec = resolve_precision(spec, hw, None, None, None)
    sc = Scenario(isl=65536, osl=256)
    sizes = disagg_pools.worker_sizes(spec, hw, 16)
    _, skipped = disagg_pools.pool_fronts(spec, hw, prec, fw, 16, sc, None, False, None, sizes, "cpsat", diagnose=False)
    assert skipped and not calls  # W=1 and W=2 hold no pool, and nothing asked why
    _, skipped = disagg_pools.pool_fronts(spec, hw, prec, fw, 16, sc, None, False, None, sizes, "cpsat")
    assert len(calls) == len(skipped) == 4 and all(e.binding for e in skipped.values())


def test_a_prefill_step_holds_no_more_prompts_than_requests_in_flight() -> None:
    """`--max-concurrency 8` on 16 H100 failed with 'concurrency 16 exceeds max_concurrency 8': the prefill grid
    planned 16 prompts per step (a batch the planner made up, not the user) under the user's cap. A step holds
    at most the requests in flight, so the grid stops at the cap (or at a given --concurrency)."""
    from click.testing import CliRunner

    from solver.cli.main import main

    r = CliRunner().invoke(main, ["solve", "llama-3.1-8b", "--hardware", "h100_sxm", "--cards", "16",
                                  "--max-concurrency", "8", "--serving", "disagg", "--format", "json"])
    assert r.exit_code == 0, r.stderr
