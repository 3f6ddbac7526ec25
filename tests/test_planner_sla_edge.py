"""The SLA edge: where the SLAs stop the powers of two, the planner also plans the most requests the best
configurations of the last power run within them (plan.sla_edge), so a plan under a TPOT bound runs the load the
bound allows, not the power of two below it."""
from __future__ import annotations

from solver.api import run_solve
from solver.estimate.compute import factors_for
from solver.estimate.memory_options import engine_options
from solver.estimate.serving import Workload, estimate
from solver.plan.points import Point
from solver.plan.sla_edge import sla_edges
from solver.specs.framework import load_framework
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import load_model
from solver.specs.precision import resolve_precision
from solver.specs.scenario import Scenario

# Llama-3.1-70B on 8 H100 under vLLM, 2K prompts, 512 outputs, TPOT <= 40 ms: TP8 meets it at 64, not at 128
LLAMA_8_H100 = ("llama-3.1-70b", "h100_sxm", 8)
TPOT_40 = Scenario(kind="throughput", isl=2048, osl=512, tpot_ms=40.0)


def _point(batch: int, attn: int = 0) -> Point:
    return Point((("attn", attn),), batch, 1, 1.0, 0, float(batch))


def _tpot_ms(cfg, batch: int) -> float:
    m, h, fw = load_model(LLAMA_8_H100[0]), load_hardware(LLAMA_8_H100[1]), load_framework("vllm")
    f = factors_for(h, fw.efficiency_for(h))
    e = estimate(m, h, cfg, resolve_precision(m, h), f, Workload.for_scenario(TPOT_40, batch),
                 engine_options(None, f))
    return e.tpot_s * 1e3


def test_the_sla_edge_is_the_most_requests_the_best_configuration_runs_within_the_slas() -> None:
    """The first candidate runs between the powers (64, 128): within TPOT 40 ms there, one request more misses it."""
    result, cands = run_solve(*LLAMA_8_H100, TPOT_40, "vllm", explain_binding=False)
    first = cands[0].planned
    assert 64 < first.batch < 128
    assert first.estimate.tpot_s * 1e3 <= 40.0
    assert _tpot_ms(first.config, first.batch + 1) > 40.0
    assert result.edge_note is not None and f"{first.batch:,} is the SLA edge" in result.edge_note


def test_the_sla_edge_carries_more_than_the_power_below_it() -> None:
    """Output tokens per rank at the edge exceed the best at 64 (the plan before the edge stopped there)."""
    result, cands = run_solve(*LLAMA_8_H100, TPOT_40, "vllm", explain_binding=False)
    at_64 = max((p for p in result.front if p.batch == 64), key=lambda p: p.estimate.output_tokens_per_s)
    assert cands[0].planned.estimate.output_tokens_per_s > 1.2 * at_64.estimate.output_tokens_per_s


def test_no_sla_edge_without_an_sla() -> None:
    """Without SLAs nothing stops the powers but memory (the memory edge's case): no SLA edge, no note."""
    result, cands = run_solve(*LLAMA_8_H100, Scenario(kind="throughput", isl=2048, osl=512), "vllm",
                              explain_binding=False)
    assert result.edge_note is None
    powers = [p.batch for p in result.front if p.batch & (p.batch - 1) == 0]
    # the one concurrency between the powers is memory's edge, past every power planned
    assert all(p.batch > max(powers) for p in result.front if p.batch not in powers)


def test_no_sla_edge_where_the_last_planned_concurrency_meets_the_slas() -> None:
    """The largest concurrency planned has an optimum: the SLAs stop nothing."""
    classes = {(1, 1.0): _point(1), (2, 2.0): _point(2)}
    assert sla_edges(classes, (1, 2), lambda p, c: True, lambda p, c: True) == {}


def test_the_sla_edge_lies_below_the_next_planned_concurrency() -> None:
    """Between the last power with an optimum (8) and the next planned (16): the most the optimum meets."""
    classes = {(4, 4.0): _point(4), (8, 8.0): _point(8)}
    assert sla_edges(classes, (4, 8, 16), lambda p, c: c <= 13, lambda p, c: True) == {13: 8}
    assert sla_edges(classes, (4, 8, 16), lambda p, c: c <= 8, lambda p, c: True) == {}


def test_the_sla_edge_is_a_count_the_engine_runs() -> None:
    """Under a batch rule (a multiple of 4 attention replicas) the edge is the most the optimum both meets and
    runs: 12, not 13."""
    classes = {(8, 8.0): _point(8)}
    assert sla_edges(classes, (8, 16), lambda p, c: c <= 13, lambda p, c: c % 4 == 0) == {12: 8}
    assert sla_edges(classes, (8, 16), lambda p, c: c <= 11, lambda p, c: c % 16 == 0) == {}


def test_the_sla_edge_is_the_largest_of_the_last_powers_optima() -> None:
    """Two classes at the last power (different sequences in flight): the edge is the larger of their edges."""
    classes = {(8, 8.0): _point(8, attn=0), (8, 4.0): _point(8, attn=1)}
    meets = {0: 10, 1: 14}
    assert sla_edges(classes, (8, 16), lambda p, c: c <= meets[dict(p.picks)["attn"]], lambda p, c: True) == {14: 8}


def test_the_exhaustive_enumeration_plans_the_same_sla_edge() -> None:
    """--method exhaustive finds the same first candidate at the same edge as the CP-SAT planner."""
    sc = Scenario(kind="throughput", isl=2048, osl=256, tpot_ms=12.0)  # TP2 meets it at 32, not at 64
    by = {m: run_solve("llama-3.1-8b", "h100_sxm", 2, sc, "vllm", method=m, explain_binding=False)[1][0].planned
          for m in ("cpsat", "exhaustive")}
    assert 32 < by["cpsat"].batch < 64
    assert by["cpsat"].batch == by["exhaustive"].batch
    assert by["cpsat"].config == by["exhaustive"].config


def test_a_candidate_the_slas_stop_at_a_power_runs_at_its_own_sla_edge() -> None:
    """Beside #1 at the edge (TP8 at 123), a candidate stopped at 64 would compare unequal loads (TP4 x DP2 at 64
    reads 27% below TP8, 6% at its own edge): #2 is shown at its own edge, planned there. By hand, its TPOT is
    29.38 ms at 64 and 42.36 ms at 128 (stopped at 64), 39.69 ms at 112 and 40.62 ms at 113 (the most it runs
    within 40 ms is 112)."""
    result, cands = run_solve(*LLAMA_8_H100, TPOT_40, "vllm", explain_binding=False)
    second = cands[1].planned
    assert second.role == "next pattern" and second.sla_edge_from == 64
    assert 64 < second.batch < 128
    assert _tpot_ms(second.config, 128) > 40.0
    assert _tpot_ms(second.config, second.batch) <= 40.0 < _tpot_ms(second.config, second.batch + 1)
    assert result.edge_note is not None and f"{second.batch:,} from 64" in result.edge_note


def test_every_candidate_the_slas_stop_at_a_power_moves_to_its_own_edge() -> None:
    """No candidate is left at a power whose next power the SLAs stop: each stands where one request more
    misses TPOT 40 ms (vLLM has no batch rule here, so the next count it runs is one more)."""
    _, cands = run_solve(*LLAMA_8_H100, TPOT_40, "vllm", explain_binding=False)
    for c in cands:
        p = c.planned
        assert p.sla_edge_from is not None and p.batch > p.sla_edge_from
        assert _tpot_ms(p.config, p.batch) <= 40.0 < _tpot_ms(p.config, p.batch + 1)


def test_no_sla_moves_no_candidate() -> None:
    """Without SLAs no candidate or front row carries an SLA edge, and no candidate's concurrency lies between
    two powers below memory's edge."""
    result, cands = run_solve(*LLAMA_8_H100, Scenario(kind="throughput", isl=2048, osl=512), "vllm",
                              explain_binding=False)
    assert all(p.sla_edge_from is None for p in (*result.front, *(c.planned for c in cands)))
    powers = {p.batch for p in result.front if p.batch & (p.batch - 1) == 0}
    assert all(c.planned.batch in powers or c.planned.batch > max(powers) for c in cands)


def test_every_sweep_row_at_the_sla_edge_says_where_its_concurrency_comes_from() -> None:
    """A sweep row at the edge carries the edge note in every scenario, whichever row the scenario recommends."""
    from solver.capacity.sweep import sweep
    df = sweep(LLAMA_8_H100[0], LLAMA_8_H100[1], [8], "throughput,latency", isl=2048, osl=512, tpot_ms=40.0,
               framework="vllm")
    at_edge = df[~df["concurrency"].isin([2 ** k for k in range(13)])]
    assert set(at_edge["scenario"]) == {"throughput", "latency"}
    assert all("is the SLA edge" in n for n in at_edge["note"])
    assert (at_edge["sla_edge_from"] == 64).all()
    assert df[df["concurrency"].isin([2 ** k for k in range(13)])]["sla_edge_from"].isna().all()


def test_a_recommended_copy_at_the_sla_edge_says_where_its_concurrency_comes_from() -> None:
    """recommend's option carries the edge note of the sweep row it copies (the README's Qwen3-30B-A3B example:
    copies at 60 requests, the edge past 32 under TPOT <= 30 ms)."""
    from solver.api import recommend
    rec = recommend("qwen3-30b-a3b", ["h200_sxm"], target_output_tokens_per_s=20000, tpot_ms=30.0)
    opt = rec.options[0]
    assert opt.met and opt.concurrency & (opt.concurrency - 1)  # not a power of two
    assert f"concurrency {opt.concurrency:,} is the SLA edge" in opt.note


def test_recommend_reads_the_sla_edge_from_the_rows_field_not_its_note() -> None:
    """The option copying a row says where its concurrency comes from by the row's sla_edge_from: a row with the
    field and no note gets the edge line; a row whose note merely contains the words gets none."""
    from solver.capacity.recommend import Option, _met
    from solver.capacity.sweep import build_plan
    from solver.specs.parallel import KNOBS
    t = build_plan("qwen3-30b-a3b", "h200_sxm", "2", "throughput", tpot_ms=30.0).tasks[0]
    row = {**{k: 1 for k in KNOBS}, "attn_dp_size": 2, "moe_ep_size": 1, "pattern": "Attn DP", "concurrency": 60,
           "output_tokens_per_s": 1800.0, "requests_per_s": 7.0, "ttft_ms": 100.0, "tpot_ms": 29.5,
           "tokens_per_s_per_user": 33.9, "memory_per_rank_gb": 40.0, "placement": ""}
    start = t.scenario.max_concurrency

    def note(**r: object) -> str:
        return _met(Option("h200_sxm", False), 2, 1, t, {**row, **r}, start, 1800.0, None).note

    assert note(note="", sla_edge_from=32).startswith("concurrency 60 is the SLA edge of the configurations at 32")
    assert note(note="concurrency 60 is the SLA edge of the configurations at 32", sla_edge_from=None) == ""


def test_the_verified_deployment_moves_to_its_own_edge_keeping_its_configuration() -> None:
    """A verified TP4 x DP2 (its knobs as given) takes a slot at 64; it moves to its own edge, 112 (TPOT 39.69 ms
    there, 40.62 ms at 113), still the verified configuration, not another of its pattern."""
    from solver.plan.solve import plan
    m, h, fw = load_model(LLAMA_8_H100[0]), load_hardware(LLAMA_8_H100[1]), load_framework("vllm")
    knobs = {"attn_tp_size": 4, "dense_tp_size": 4, "embed_tp_size": 4, "lmhead_tp_size": 4}
    result = plan(m, h, resolve_precision(m, h), fw, 8, TPOT_40, verified=[("v1", knobs)], explain_binding=False)
    (v,) = [p for p in result.candidates if p.role == "verified deployment"]
    assert {k: x for k, x in v.config.knobs().items() if x > 1} == knobs
    assert v.verified == "v1" and v.sla_edge_from == 64 and v.batch == 112
    assert _tpot_ms(v.config, 112) <= 40.0 < _tpot_ms(v.config, 113)


def test_solves_json_names_the_power_each_point_at_an_sla_edge_came_from() -> None:
    """solve --format json carries sla_edge_from as the sweep's column does: TP8 at 122 and the two candidates at
    their own edges (112, 80) came from 64; a front point at a power carries none."""
    import json

    from click.testing import CliRunner

    from solver.cli.main import main
    out = CliRunner().invoke(main, ["solve", "llama-3.1-70b", "--hardware", "h100_sxm", "--cards", "8", "--framework",
                                    "vllm", "--scenario", "throughput", "--isl", "2048", "--osl", "512",
                                    "--tpot-ms", "40", "--format", "json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    assert [(c["estimation"]["concurrency"], c["estimation"].get("sla_edge_from")) for c in data["candidates"]] == [
        (122, 64), (112, 64), (80, 64)]
    front = {p["concurrency"]: p.get("sla_edge_from") for p in data["pareto_front"]}
    assert front[122] == 64 and front[64] is None
