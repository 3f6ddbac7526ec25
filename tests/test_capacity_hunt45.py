"""Capacity planning as a team reads it: a sweep's Pareto front is one set per deployment (hardware, cards,
lengths) whatever the scenario, and it holds every point no other point of the deployment dominates."""
from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

from solver import api
from solver.capacity.sweep import PLAIN_NOTE, PLANNER_FRONT, share_front
from solver.specs.parallel import KNOBS


def _row(scenario: str, tp: int, conc: int, lat: float, tps: float, planner_front: bool,
         candidate: int | None = None) -> dict[str, Any]:
    return {**{k: 1 for k in KNOBS}, "attn_tp_size": tp, "concurrency": conc, "scenario": scenario,
            "feasible": True, "request_latency_ms": lat, "output_tokens_per_s_per_rank": tps,
            "on_front": planner_front, "candidate": candidate, "binding_constraint": "", "note": f"as #{candidate}",
            PLANNER_FRONT: planner_front, PLAIN_NOTE: "plain", "rank": None}


def _front(rows: list[dict[str, Any]]) -> set[tuple[int, int]]:
    return {(r["attn_tp_size"], r["concurrency"]) for r in rows if r["on_front"]}


def test_a_candidate_no_point_dominates_is_on_the_front_of_every_scenario() -> None:
    """The planner's front: P1 (TP1 at 64: 10 ms, 100 tok/s/rank) and P2 (TP1 at 128: 20 ms, 150).
    Throughput's candidate C (TP2 at 96: 15 ms, 120) is beaten by neither (P1 is faster but carries less, P2
    carries more but is slower): on the front, in latency's rows too, there no candidate.
    Throughput's candidate D (TP4 at 120: 25 ms, 140): P2 has 20 <= 25 ms and 150 >= 140: off, and only its own.
    Latency's candidate E (TP8 at 128: 20 ms, 150) has P2's figures exactly: a tie, off the front."""
    thr = [_row("throughput", 1, 64, 10, 100, True), _row("throughput", 1, 128, 20, 150, True),
           _row("throughput", 2, 96, 15, 120, False, 1), _row("throughput", 4, 120, 25, 140, False, 2)]
    lat = [_row("latency", 1, 64, 10, 100, True, 1), _row("latency", 1, 128, 20, 150, True),
           _row("latency", 8, 128, 20, 150, False, 2)]
    share_front([thr, lat])
    assert _front(thr) == _front(lat) == {(1, 64), (1, 128), (2, 96)}
    copied = next(r for r in lat if r["attn_tp_size"] == 2)
    assert copied["scenario"] == "latency" and copied["candidate"] is None and copied["note"] == "plain"
    assert [r["attn_tp_size"] for r in lat].count(4) == 0  # a dominated candidate stays its scenario's own
    # ranks by tok/s per rank: latency's rows 150 (P2), 150 (E: the knobs break the tie), 120 (C), 100 (P1)
    assert [(r["attn_tp_size"], r["rank"]) for r in lat] == [(1, 1), (8, 2), (2, 3), (1, 4)]


def test_a_front_point_a_scenarios_candidate_dominates_leaves_the_front_of_every_scenario() -> None:
    """Latency's candidate F (TP2 at 64: 9 ms, 110 tok/s/rank) beats P1 (10 ms, 100) on both axes: P1 is off the
    front in throughput's rows as well, and F is on it in both."""
    thr = [_row("throughput", 1, 64, 10, 100, True, 1), _row("throughput", 1, 128, 20, 150, True)]
    lat = [_row("latency", 1, 64, 10, 100, True), _row("latency", 1, 128, 20, 150, True),
           _row("latency", 2, 64, 9, 110, False, 1)]
    share_front([thr, lat])
    assert _front(thr) == _front(lat) == {(1, 128), (2, 64)}


def _beats(o: dict[str, Any], r: dict[str, Any]) -> bool:
    return (o["request_latency_ms"] <= r["request_latency_ms"]
            and o["output_tokens_per_s_per_rank"] >= r["output_tokens_per_s_per_rank"]
            and (o["request_latency_ms"] < r["request_latency_ms"]
                 or o["output_tokens_per_s_per_rank"] > r["output_tokens_per_s_per_rank"]))


def _ties(o: dict[str, Any], r: dict[str, Any]) -> bool:
    return (o["request_latency_ms"] == r["request_latency_ms"]
            and o["output_tokens_per_s_per_rank"] == r["output_tokens_per_s_per_rank"])


@pytest.mark.parametrize("hardware, cards", [("b200_sxm", 16), ("h200_sxm", 16)])
def test_the_sweeps_front_is_every_undominated_point_and_the_same_in_every_scenario(hardware, cards) -> None:
    """Qwen3.5-122B-A10B under TTFT <= 2 s and TPOT <= 50 ms: the throughput scenario's #2 and #3 run at their own
    SLA edges, points the other scenarios never plan; where no point beats them they are on the front (one set
    per deployment), in every scenario's rows. Within each scenario a front row is beaten by no row, and a row off
    the front is beaten by a row, or has a front row's figures exactly."""
    df = api.sweep("qwen3.5-122b-a10b", hardware=[hardware], cards=str(cards),
                   scenarios="throughput,latency,balanced", ttft_ms=2000, tpot_ms=50)
    ok = df[df["feasible"].astype(bool)]
    point = [*KNOBS, "concurrency"]

    def front_of(g) -> frozenset:
        return frozenset(g[g["on_front"].astype(bool)][point].fillna(0).itertuples(index=False))

    fronts = {s: front_of(g) for s, g in ok.groupby("scenario")}
    assert len(set(fronts.values())) == 1, fronts
    for _, g in ok.groupby("scenario"):
        rows = g.to_dict("records")
        for r in rows:
            if r["on_front"]:
                assert not any(_beats(o, r) for o in rows), r
            else:
                assert any(_beats(o, r) or (o["on_front"] and _ties(o, r)) for o in rows), r
    thr = ok[ok["scenario"] == "throughput"].to_dict("records")
    own_edges = [r for r in thr if r["candidate"] in (2, 3) and not pd.isna(r["sla_edge_from"])
                 and not any(_beats(o, r) or _ties(o, r) for o in thr if o is not r)]
    assert own_edges  # the case at hand: throughput's #2/#3 at their own edges, beaten by no point
    lat = front_of(ok[ok["scenario"] == "latency"])
    assert {tuple(0 if pd.isna(r[k]) else r[k] for k in point) for r in own_edges} <= lat


def test_a_recommendations_counts_stay_integers_beside_an_option_not_met() -> None:
    """gpt-oss-120b at 5 requests/s on 1 or 2 cards: Atlas A3 serves its experts as bf16 (no fp4 there), 233.7 GB
    of weights, over 2 x 65.0 GB usable: not met, its counts empty. H200 holds it on one card. The cards, copies,
    concurrency and knobs of the H200 row are integers (nullable), as in the sweep's table, not 1.0."""
    from solver.capacity.recommend import COUNT_FIELDS

    rec = api.recommend("gpt-oss-120b", ["atlas_a3", "h200_sxm"], target_requests_per_s=5, cards="1,2")
    frame = rec.to_frame()
    assert frame["met"].tolist() == [False, True]
    for col in (*COUNT_FIELDS, "attn_dp_size", "moe_ep_size"):
        assert str(frame[col].dtype) == "Int64", col
        assert pd.isna(frame[col].iloc[0])
    h200 = rec.options[1]
    assert frame["total_cards"].iloc[1] == h200.copies * h200.cards == h200.total_cards


def test_the_front_is_shared_only_by_scenarios_of_one_workload() -> None:
    """Two Scenarios given as objects, the same lengths, throughput with no SLA and latency with TPOT <= 50 ms: two
    workloads, two fronts. Without the SLA the front runs past 50 ms (its largest concurrency's TPOT), with it no
    row does."""
    from solver.specs.scenario import Scenario

    loose, tight = Scenario(kind="throughput", isl=4096, osl=256), Scenario(kind="latency", isl=4096, osl=256,
                                                                            tpot_ms=50)
    df = api.sweep("qwen3.5-122b-a10b", hardware=["b200_sxm"], cards="16", scenarios=[loose, tight])
    front = df[df["on_front"].astype(bool)]
    assert front[front["scenario"] == "throughput"]["tpot_ms"].max() > 50
    assert front[front["scenario"] == "latency"]["tpot_ms"].max() <= 50
    assert not df.duplicated().any()


@pytest.mark.parametrize("beside", [{"tpot_ms": 5}, {"seq_lens": "2048,4096"}, {"prefix_hit": 0.5}])
def test_a_workload_option_beside_a_scenario_object_is_refused_not_dropped(beside) -> None:
    """A Scenario object carries its own lengths and SLAs: tpot_ms=5 beside it went unread (every row's
    tpot_sla_ms empty), seq_lens="2048,4096" ran it twice at its own 1024/128 (11 duplicated rows)."""
    from solver.errors import InputError
    from solver.specs.scenario import Scenario

    with pytest.raises(InputError) as err:
        api.sweep("llama-3.1-8b", "h200_sxm", [1], scenarios=[Scenario(kind="throughput", isl=1024, osl=128)],
                  **beside)
    assert err.value.field == next(iter(beside))


def test_two_scenarios_labelling_the_same_rows_are_refused() -> None:
    """Two throughput Scenarios of 1024/128 (TPOT 20 and 40 ms) would both write rows labelled `throughput
    1024/128`, with two candidate-1 rows where a combination has one."""
    from solver.errors import InputError
    from solver.specs.scenario import Scenario

    two = [Scenario(kind="throughput", isl=1024, osl=128, tpot_ms=t) for t in (20, 40)]
    with pytest.raises(InputError) as err:
        api.sweep("llama-3.1-8b", "h200_sxm", [1], scenarios=two)
    assert err.value.field == "scenarios" and "throughput 1024/128" in str(err.value)  # the API names its keyword


def test_the_frontier_plot_draws_front_points_that_differ_only_in_pipeline_stages() -> None:
    """16 cards, TP8 for attention and dense layers, 8 requests, PP1 (1,000 ms, 80 tok/s/rank) and PP2 (900 ms,
    60): neither beats the other, both on the front, in two scenarios each. The curve of 16 cards has two
    points, not one (the plot told front points apart by every knob but pp_size)."""
    from solver.capacity.plots import plot_sweep
    from solver.capacity.table import to_frame

    def row(scenario: str, pp: int, lat: float, tps: float) -> dict[str, Any]:
        return {"hardware": "h100_sxm", "cards": 16, "scenario": scenario, "model": "m", "isl": 4096, "osl": 256,
                **{k: 1 for k in KNOBS}, "attn_tp_size": 8, "dense_tp_size": 8, "pp_size": pp,
                "concurrency": 8, "request_latency_ms": lat, "output_tokens_per_s_per_rank": tps,
                "output_tokens_per_s": tps * 16, "feasible": True, "on_front": True,
                "candidate": 1 if pp == 1 else None}

    df = to_frame([row(s, pp, lat, tps) for s in ("throughput", "latency")
                   for pp, lat, tps in ((1, 1000.0, 80.0), (2, 900.0, 60.0))])
    fig = plot_sweep(df)
    curve = next(ln for ln in fig.axes[0].get_lines() if ln.get_label() == "16 cards")
    assert sorted(curve.get_xdata()) == [900.0, 1000.0]


@pytest.mark.parametrize("command", ["sweep", "recommend"])
@pytest.mark.parametrize("cards", ["1,2", "1..4", [1, 8]])
def test_a_size_under_two_cards_is_refused_by_both_disaggregated_commands(command, cards) -> None:
    """A disaggregated deployment needs a worker per pool, so 1 card cannot run at all: both commands refuse the
    size in one line naming it, as any command refuses a size under one card, before the first solve (recommend
    tried 2 alone and said nothing of the 1)."""
    from solver.capacity.disagg import recommend_disagg, sweep_disagg
    from solver.errors import InputError

    said: list[Any] = []
    with pytest.raises(InputError) as err:
        if command == "sweep":
            sweep_disagg("deepseek-v3.2", ["h200_sxm"], cards, ["throughput"], checked=said.append)
        else:
            recommend_disagg("deepseek-v3.2", ["h200_sxm"], target_output_tokens_per_s=1000, cards=cards,
                             checked=lambda: said.append(True))
    assert err.value.field == "--cards" and str(err.value).endswith("(one per pool), got 1"), str(err.value)
    assert said == []  # refused before the inputs' notes are said and anything is solved


def test_a_disaggregated_recommendations_frame_holds_each_options_record_typed_as_the_aggregated_one() -> None:
    """gpt-oss-120b at 5 requests/s (1,280 output tokens/s at OSL 256) on 2 cards, priced: Atlas A3's two dies
    cannot hold the bf16 experts (not met: its counts, pools and costs empty), H200 runs a 1P1D pair. Each row is
    its option's record (`feasible` aside, `met` says it) under FRAME_COLUMNS with both pools' columns before
    `recommended`; counts and pools nullable integers, figures and costs floats, as Recommendation.to_frame."""
    from solver.capacity.disagg import FRAME_COLUMNS
    from solver.capacity.recommend import COST_FIELDS, COUNT_FIELDS

    rec = api.recommend("gpt-oss-120b", ["atlas_a3", "h200_sxm"], target_requests_per_s=5, cards="2",
                        serving="disagg", prices=["atlas_a3=2", "h200_sxm=3.5"])
    frame = rec.to_frame()
    a3, h200 = rec.options
    assert not a3["met"] and h200["met"] and rec.best is h200
    pools = [c for c in frame.columns if c.startswith(("prefill_", "decode_")) and c != "prefill_utilization"]
    assert list(frame.columns) == [*FRAME_COLUMNS[:-1], *pools, "recommended"]
    assert {"prefill_workers", "decode_ranks_per_worker", "prefill_attn_tp_size", "decode_moe_ep_size"} <= set(pools)
    assert frame["recommended"].tolist() == [False, True] and frame["met"].tolist() == [False, True]
    row = frame.iloc[1]
    for key, value in h200.items():
        if key not in ("feasible", "unrounded"):
            assert row[key] == value, key
    # the cards paid for are the pools' ranks: 2 used x 1 copy x $3.5
    assert row["cost_per_hour"] == h200["ranks_used"] * h200["copies"] * 3.5
    for col in (*COUNT_FIELDS, "ranks_used", *pools):
        assert str(frame[col].dtype) == "Int64", col
        assert pd.isna(frame[col].iloc[0]), col
    for col in (*COST_FIELDS, "ttft_ms", "headroom", "kv_transfer_ms"):
        assert str(frame[col].dtype) == "float64", col
    assert pd.isna(frame["cost_per_hour"].iloc[0]) and frame["note"].iloc[0] == a3["note"]


def test_a_disaggregated_recommendation_with_no_option_has_the_frame_columns_and_no_row() -> None:
    """As the aggregated frame: no option, the fixed columns and no row (no pool's columns: no knob is known)."""
    from solver.capacity.disagg import FRAME_COLUMNS, DisaggRecommendation

    frame = DisaggRecommendation("m", 1000.0, [], None, "none met").to_frame()
    assert list(frame.columns) == list(FRAME_COLUMNS) and frame.empty


def test_a_slice_of_a_solution_is_a_plain_list_of_its_candidates() -> None:
    """solve()'s notes, result and JSON are of the whole answer; a slice keeps candidates only, as a list."""
    sol = api.solve("llama-3.1-8b", "h200_sxm", 2)
    assert len(sol) >= 2
    head = sol[:1]
    assert type(head) is list and head == [sol[0]]
    assert not hasattr(head, "notes") and isinstance(sol.notes, list) and sol.result is not None
