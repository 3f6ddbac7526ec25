"""Metamorphic rules of the planner and the capacity answers: relations between the answers to two related
questions (a looser SLA, a wider concurrency range, a device with more memory, another scenario kind, a smaller
load, more cards) that hold whatever the model, device or engine, checked over a few small deployments (small
models on 1-16 ranks, so each plan costs a fraction of a second).

Scores are compared as differences: Scenario.score is a weighted log-ratio to reference values, so the difference
of two points' scores does not depend on the references (each front's own), and a point of one answer can be
scored against a point of another."""
from __future__ import annotations

import math
from pathlib import Path

import pytest
import yaml

from solver.errors import InfeasibleError
from solver.entry import run_solve
from solver.estimate.compute import factors_for
from solver.estimate.memory_options import engine_options
from solver.estimate.serving import estimate
from solver.estimate.workload import Workload
from solver.plan.solve import Planned, PlanResult
from solver.specs.framework import load_framework
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import load_model
from solver.specs.precision import resolve_precision
from solver.specs.scenario import PERF_TIE, Scenario
from solver.space.placement import as_launched

REL = 1e-9  # float noise between two evaluations of the same formulas

# (model, hardware, cards, framework): one dense deployment in the default suite (a few seconds in all); the deeper
# variant (`pytest -m slow`, run by .ci/run) adds a dense model under an engine's profile, MoE on Ascend dies, MoE
# and sink/window models on NVIDIA and AMD parts, 1-16 ranks and four more engines
CASES = [
    ("qwen3-8b", "h100_sxm", 2, "generic"),
]
DEEP = [
    ("llama-3.1-8b", "b200_sxm", 4, "vllm"),
    ("qwen3-30b-a3b", "atlas_a3", 8, "generic"),
    ("qwen3-30b-a3b", "h200_sxm", 4, "generic"),
    ("gpt-oss-20b", "mi355x", 8, "generic"),
    ("llama-3.1-8b", "h100_sxm", 1, "generic"),
    ("qwen3-30b-a3b", "h100_sxm", 16, "sglang"),
    ("gpt-oss-20b", "b200_sxm", 8, "trtllm"),
    ("qwen3-8b", "atlas_a3", 16, "vllm-ascend"),
    ("qwen3-30b-a3b", "mi355x", 8, "atom"),
    ("llama-3.1-8b", "h200_sxm", 16, "generic"),
    ("gpt-oss-20b", "h200_sxm", 2, "vllm"),
]
IDS = [f"{m}-{h}-{w}-{fw}" for m, h, w, fw in CASES]
ALL = [*CASES, *(pytest.param(c, marks=pytest.mark.slow, id="-".join(map(str, c))) for c in DEEP)]
BASE = dict(isl=2048, osl=256, max_concurrency=256)


def _solve(case, hardware: str | None = None, method: str = "cpsat", **fields) -> PlanResult:
    model, hw, cards, fw = case
    result, _ = run_solve(model, hardware or hw, cards, Scenario(**{**BASE, **fields}), fw, method=method,
                          references=[])
    return result


def _solve_or_none(case, **fields) -> PlanResult | None:
    try:
        return _solve(case, **fields)
    except InfeasibleError:
        return None


def _score(sc: Scenario, p: Planned) -> float:
    """The scenario's score of p's full estimate against unit references: only differences between two points are
    read."""
    e = p.estimate
    return sc.score(sc.request_latency(e.ttft_s, e.tpot_s), 1.0 / e.output_tokens_per_s_per_rank, 1.0, 1.0)


def _best_tps(r: PlanResult) -> float:
    return max(p.estimate.output_tokens_per_s_per_rank for p in r.front)


def _front_set(r: PlanResult) -> set[tuple[float, float]]:
    return {(round(p.latency_s, 9), round(p.estimate.output_tokens_per_s_per_rank, 6)) for p in r.front}


def _tpots(r: PlanResult) -> list[float]:
    return sorted(p.estimate.tpot_s * 1e3 for p in r.front)


def _sla_ladder(case, kind: str, figure: str, fixed: int | None) -> list[float]:
    """Bounds on `figure` ("tpot" or "ttft", ms) from below the free front's least to above its greatest: the
    first usually infeasible, the last loose, the ones between binding."""
    free = _solve(case, kind=kind, concurrency=fixed)
    vals = sorted(getattr(p.estimate, f"{figure}_s") * 1e3 for p in free.front)
    lo, hi = vals[0] * 0.8, vals[-1] * 1.1
    return [lo * (hi / lo) ** (i / 5) for i in range(6)]


def _ladder_answers(case, kind: str, figure: str, fixed: int | None) -> list[tuple[float, PlanResult | None]]:
    return [(b, _solve_or_none(case, kind=kind, concurrency=fixed, **{f"{figure}_ms": b}))
            for b in _sla_ladder(case, kind, figure, fixed)]


@pytest.mark.parametrize("case", ALL, ids=IDS + [None] * len(DEEP))
@pytest.mark.parametrize("figure", ["tpot", "ttft"])
@pytest.mark.parametrize("kind", ["throughput", "balanced"])
def test_a_looser_sla_at_a_fixed_concurrency_never_scores_worse_nor_turns_feasible_into_infeasible(
        case, figure, kind) -> None:
    """At a fixed --concurrency the space is one set of configurations whatever the SLA, and an SLA only removes
    points: every point meeting the tight bound meets the loose one, so the loose #1 scores at most the tight #1
    (the planner's exact optimum over a superset), and a tight answer implies a loose answer (so a tightening
    never turns an infeasible deployment feasible)."""
    sc = Scenario(**{**BASE, "kind": kind, "concurrency": 32})
    answers = _ladder_answers(case, kind, figure, 32)
    for (tight, rt), (loose, rl) in zip(answers, answers[1:]):
        if rt is None:
            continue
        assert rl is not None, f"feasible at {figure} <= {tight} ms, infeasible at {loose}"
        assert _score(sc, rl.candidates[0]) <= _score(sc, rt.candidates[0]) + REL, (tight, loose)


def _is_power_of_two(n: int) -> bool:
    return n & (n - 1) == 0


@pytest.mark.parametrize("case", ALL, ids=IDS + [None] * len(DEEP))
@pytest.mark.parametrize("figure", ["tpot", "ttft"])
@pytest.mark.parametrize("kind", ["throughput", "balanced"])
def test_a_looser_sla_never_scores_worse_than_the_tight_answers_points_at_the_powers_of_two(
        case, figure, kind) -> None:
    """With the concurrency left to the planner, a looser SLA keeps feasibility, and its #1 scores at most any
    point of the tight answer's front at a power of two (both plan every power that memory holds, and the tight
    point meets the loose bound).

    Not at most the tight #1 itself: where the SLA stops the powers, the planner adds one concurrency between
    them, the SLA edge (plan/sla_edge.py: the MOST requests the last power's optima run within the SLA), and a
    score can peak between a power and that edge. gpt-oss-20b on 2 H200 under vLLM, throughput, 2K/256: TPOT <=
    16.6 ms gives #1 at 160 requests (score -6.4212), TPOT <= 21.0 ms at its edge 216 (-6.4165), TPOT <= 26.7 ms
    reaches 256 with no edge and answers 128 (-6.4121): the edge sits where the SLA does, not where the score
    peaks, so the loose answer never plans 160."""
    sc = Scenario(**{**BASE, "kind": kind})
    answers = _ladder_answers(case, kind, figure, None)
    for (tight, rt), (loose, rl) in zip(answers, answers[1:]):
        if rt is None:
            continue
        assert rl is not None, f"feasible at {figure} <= {tight} ms, infeasible at {loose}"
        at_powers = [p for p in rt.front if _is_power_of_two(p.batch)]
        assert all(_score(sc, rl.candidates[0]) <= _score(sc, p) + REL for p in at_powers), (tight, loose)


@pytest.mark.parametrize("case", ALL, ids=IDS + [None] * len(DEEP))
def test_a_wider_concurrency_range_never_lowers_the_fronts_best_throughput_per_rank(case) -> None:
    """Every configuration planned under --max-concurrency m is planned under 2m and 3m too (the powers up to m
    are a subset; a memory edge below m stays the same edge), so the best tokens/s per rank cannot fall."""
    tps = [_best_tps(_solve(case, kind="throughput", max_concurrency=m)) for m in (16, 32, 96, 256)]
    assert all(b >= a * (1 - REL) for a, b in zip(tps, tps[1:])), tps


@pytest.mark.parametrize("case", ALL, ids=IDS + [None] * len(DEEP))
@pytest.mark.parametrize("sla", [{"tpot_ms": 12.0}, {"ttft_ms": 250.0}], ids=["tpot12", "ttft250"])
def test_under_an_sla_a_wider_range_of_powers_of_two_never_lowers_the_best_throughput_per_rank(case, sla) -> None:
    """Under an SLA the same holds between caps that are powers of two: where the SLA stops the powers at p, the
    SLA edge is planned between p and 2p whatever the cap above p, so a wider cap adds concurrencies only.

    Not between any two caps: a cap between two powers is planned itself, by every configuration, while the SLA
    edge is the most requests the last power's OPTIMA run within the SLA (plan/sla_edge.py: a lower bound of the
    deployment's edge). qwen3-8b on 2 H100, 2K/256, TPOT <= 12 ms: cap 48 plans 48, where attention DP alone
    meets 11.98 ms at 1,878.9 tok/s/rank; cap 128 stops at 64, and the CP2 optimum at 32 runs 47 (1,867.1)."""
    tps = []
    for m in (16, 32, 64, 128, 256):
        r = _solve_or_none(case, kind="throughput", max_concurrency=m, **sla)
        tps.append(0.0 if r is None else _best_tps(r))
    assert all(b >= a * (1 - REL) for a, b in zip(tps, tps[1:])), tps


@pytest.mark.parametrize("case", ALL, ids=IDS + [None] * len(DEEP))
@pytest.mark.parametrize("sla", [{}, {"tpot_ms": 12.0}, {"ttft_ms": 250.0}], ids=["free", "tpot12", "ttft250"])
def test_a_fixed_power_of_two_concurrency_never_beats_the_planners_own_choice(case, sla) -> None:
    """The planner with the concurrency free plans every power of two up to its cap that memory holds, so its #1
    scores at most the #1 at any one of them fixed, and is feasible wherever a fixed one is."""
    sc = Scenario(**{**BASE, "kind": "balanced", **sla})
    free = _solve_or_none(case, kind="balanced", **sla)
    for c in (8, 32, 128):
        fixed = _solve_or_none(case, kind="balanced", concurrency=c, **sla)
        if fixed is None:
            continue
        assert free is not None, c
        assert _score(sc, free.candidates[0]) <= _score(sc, fixed.candidates[0]) + REL, c


@pytest.mark.parametrize("case", ALL, ids=IDS + [None] * len(DEEP))
@pytest.mark.parametrize("sla", [{}, {"tpot_ms": 12.0}, {"ttft_ms": 250.0}], ids=["free", "tpot12", "ttft250"])
def test_the_front_is_non_dominated_and_every_point_fits_and_meets_the_slas(case, sla) -> None:
    """No front point is beaten in both request latency and tokens/s per rank by another, and each one's full
    estimate fits memory and meets the SLAs."""
    sc = Scenario(**{**BASE, "kind": "balanced", **sla})
    r = _solve_or_none(case, kind="balanced", **sla)
    if r is None:
        return
    pts = [(p.latency_s, p.estimate.output_tokens_per_s_per_rank) for p in r.front]
    for i, (l1, t1) in enumerate(pts):
        assert not any(l2 <= l1 and t2 >= t1 and (l2, t2) != (l1, t1) for j, (l2, t2) in enumerate(pts) if j != i)
    for p in r.front:
        assert p.estimate.memory.feasible and not sc.sla_misses(p.estimate.ttft_s, p.estimate.tpot_s)


EXHAUSTIVE = [{}, {"tpot_ms": 20.0}, {"ttft_ms": 300.0}, {"phase": "decode"}, {"phase": "prefill"}]
EX_IDS = ["free", "tpot20", "ttft300", "decode", "prefill"]


@pytest.mark.parametrize("case", [*CASES, *(pytest.param(c, marks=pytest.mark.slow) for c in DEEP[:6])])
@pytest.mark.parametrize("extra", EXHAUSTIVE, ids=EX_IDS)
def test_the_cpsat_front_is_the_exhaustive_front(case, extra) -> None:
    """The enumeration of the whole space is the oracle: with the concurrency free (up to 64), under SLAs and in
    each phase, the CP-SAT search finds the same front (the same (latency, tokens/s per rank) points) and the same
    feasibility."""
    a = _solve_or_none(case, kind="balanced", max_concurrency=64, **extra)
    b = _solve_or_none(case, kind="balanced", max_concurrency=64, method="exhaustive", **extra)
    assert (a is None) == (b is None)
    if a is not None:
        assert _front_set(a) == _front_set(b)


@pytest.mark.parametrize("case", ALL, ids=IDS + [None] * len(DEEP))
def test_a_fixed_concurrencys_first_candidate_scores_as_the_exhaustive_search_does(case) -> None:
    """At a fixed concurrency the CP-SAT search and the enumeration of the whole space (the oracle) find the same
    least score, and no front configuration of the other method scores better than either's #1."""
    sc = Scenario(**{**BASE, "kind": "balanced", "concurrency": 16})
    cp = _solve(case, kind="balanced", concurrency=16)
    ex = _solve(case, kind="balanced", concurrency=16, method="exhaustive")
    best_cp, best_ex = _score(sc, cp.candidates[0]), _score(sc, ex.candidates[0])
    assert best_cp == pytest.approx(best_ex, abs=1e-9)
    assert all(_score(sc, p) >= best_cp - 1e-9 for p in ex.front)
    assert all(p.batch == 16 for p in cp.front)


@pytest.mark.parametrize("case", ALL, ids=IDS + [None] * len(DEEP))
def test_no_configuration_estimated_at_a_fixed_concurrency_beats_the_first_candidate(case) -> None:
    """By hand: every configuration on the free front (the planner's space), estimated afresh at the fixed
    concurrency, that fits and meets the SLAs scores no better than the fixed concurrency's #1."""
    model_name, hw_name, cards, fw_name = case
    free = _solve(case, kind="balanced")
    sc = Scenario(**{**BASE, "kind": "balanced", "concurrency": 32})
    first = _solve(case, kind="balanced", concurrency=32).candidates[0]
    model, fw = load_model(model_name), load_framework(fw_name)
    hw = as_launched(load_hardware(hw_name), fw, cards)
    f = factors_for(hw, fw.efficiency_for(hw))
    prec = resolve_precision(model, hw)
    for p in free.front:
        e = estimate(model, hw, p.config, prec, f, Workload.for_scenario(sc, 32), engine_options(None, f))
        if not e.memory.feasible:
            continue
        lat = sc.request_latency(e.ttft_s, e.tpot_s)
        own = sc.score(lat, 1.0 / e.output_tokens_per_s_per_rank, 1.0, 1.0)
        assert own >= _score(sc, first) - 1e-9, (p.config.knobs(), own, _score(sc, first))


@pytest.fixture(scope="module")
def roomy(tmp_path_factory) -> dict[str, str]:
    """Each case's device as a user file with 1.5 x its memory, named apart and fitted as the catalog device (so the
    same fitted factors)."""
    out = {}
    root = Path(__file__).resolve().parent.parent / "hardware"
    for hw in {c[1] for c in CASES + DEEP}:
        data = yaml.safe_load((root / f"{hw}.yaml").read_text())
        data.update(name=f"{hw}_roomy", fitted_as=hw, memory_bytes=int(data["memory_bytes"] * 1.5))
        path = tmp_path_factory.mktemp("hw") / f"{hw}.yaml"
        path.write_text(yaml.safe_dump(data))
        out[hw] = str(path)
    return out


@pytest.mark.parametrize("case", ALL, ids=IDS + [None] * len(DEEP))
def test_more_memory_per_device_never_loses_feasibility_nor_throughput_per_rank(case, roomy) -> None:
    """Whatever fits in M bytes fits in 1.5 M and runs as fast (memory enters the planner only as a cap), so a
    feasible deployment stays feasible and the front's best tokens/s per rank cannot fall.

    Unless the engine's own default reads the memory: vLLM and vLLM-Ascend raise their tokens per step from 2,048
    to 8,192 at 70 GiB, SGLang to 16,384 at 160 GiB (the profiles' token_budget_tiers), which reschedules the same
    configuration (4 prompts a prefill step instead of 1: qwen3-8b on 16 Atlas A3 dies, 64 -> 96 GiB, best
    798.9 -> 798.1 tok/s/rank at 256 requests, its TTFT 412 -> 444 ms): a different deployment, so there only
    feasibility is compared."""
    model, hw_name, cards, fw_name = case
    base = _solve(case, kind="throughput")
    more = _solve(case, hardware=roomy[hw_name], kind="throughput")
    fw = load_framework(fw_name)
    budgets = {factors_for(hw, fw.efficiency_for(hw)).token_budget
               for hw in (load_hardware(hw_name), load_hardware(roomy[hw_name]))}
    if len(budgets) == 1:
        assert _best_tps(more) >= _best_tps(base) * (1 - REL)


@pytest.mark.parametrize("case", ALL, ids=IDS + [None] * len(DEEP))
def test_the_front_is_one_set_for_every_scenario_kind_and_each_first_candidate_is_on_it(case) -> None:
    """The kind only weighs the front's points: the three kinds see the same front, and each one's best-score
    candidate is on it or tied with one of its points; the ranked #1 is within the ranking's tie band of it."""
    fronts = []
    for kind in ("throughput", "latency", "balanced"):
        model, hw, cards, fw = case
        sc = Scenario(**{**BASE, "kind": kind})
        r, cands = run_solve(model, hw, cards, sc, fw, references=[])
        fronts.append(_front_set(r))
        first = r.candidates[0]
        assert first.on_front or first.ties_front, (kind, first.config.knobs())
        assert _score(sc, cands[0].planned) <= _score(sc, first) + math.log(1 + PERF_TIE) + REL
    assert fronts[0] == fronts[1] == fronts[2]


@pytest.mark.parametrize("case", ALL, ids=IDS + [None] * len(DEEP))
@pytest.mark.parametrize("tpot", [None, "median"])
def test_the_candidates_show_one_configuration_per_pattern_and_the_first_fits_and_meets_the_slas(case, tpot) -> None:
    """The ranked list never names a pattern twice; #1, estimated afresh, fits memory and meets the SLAs."""
    model_name, hw_name, cards, fw_name = case
    tpot_ms = None
    if tpot:
        tp = _tpots(_solve(case, kind="balanced"))
        tpot_ms = tp[len(tp) // 2]
    sc = Scenario(**{**BASE, "kind": "balanced", "tpot_ms": tpot_ms})
    _, cands = run_solve(model_name, hw_name, cards, sc, fw_name, top=6)
    names = [c.pattern for c in cands]
    assert len(names) == len(set(names)), names
    model, fw = load_model(model_name), load_framework(fw_name)
    hw = as_launched(load_hardware(hw_name), fw, cards)
    first = cands[0].planned
    f = factors_for(hw, fw.efficiency_for(hw))
    e = estimate(model, hw, first.config, resolve_precision(model, hw), f, Workload.for_scenario(sc, first.batch),
                 engine_options(None, f))
    assert e.memory.feasible
    assert not sc.sla_misses(e.ttft_s, e.tpot_s)


SWEEP_CASES = [("llama-3.1-8b", "h100_sxm", "vllm"),
               *(pytest.param(*c, marks=pytest.mark.slow) for c in (("qwen3-30b-a3b", "h200_sxm", "generic"),
                                                                   ("gpt-oss-20b", "atlas_a3", "generic")))]


@pytest.mark.parametrize("model,hw,fw", SWEEP_CASES)
@pytest.mark.parametrize("tpot_ms", [None, 30.0])
def test_a_sweeps_best_total_throughput_never_falls_with_more_cards_unless_a_note_says_why(model, hw, fw,
                                                                                       tpot_ms) -> None:
    """More cards add configurations that serve at least as much in total (more replicas or wider groups, each
    at a concurrency up to --max-concurrency), so the best total tokens/s over a count's rows never falls from one
    count to the next, unless the larger count's rows carry a note that says why (nothing fits, a range cut)."""
    from solver import api

    df = api.sweep(model, hardware=[hw], cards="1,2,4,8,16", scenarios="throughput", isl=2048, osl=256,
                   framework=fw, tpot_ms=tpot_ms)
    best = {}
    for n, g in df.groupby("cards"):
        tot = g["output_tokens_per_s"].dropna()
        best[n] = (tot.max() if len(tot) else 0.0, "; ".join(str(x) for x in g["note"].fillna("") if x))
    ns = sorted(best)
    for a, b in zip(ns, ns[1:]):
        assert best[b][0] >= best[a][0] * (1 - 1e-6) or best[b][1], (a, best[a], b, best[b])


@pytest.mark.parametrize("model,hw,fw", SWEEP_CASES)
def test_recommends_cards_never_grow_when_the_target_load_falls(model, hw, fw) -> None:
    """Whatever carries a load carries any smaller one (the same copies, each at a lower share of it), so the
    fewest total cards are non-increasing as the target falls."""
    from solver import api

    totals = []
    for tgt in (40000.0, 20000.0, 8000.0, 3000.0, 500.0):
        r = api.recommend(model, [hw], target_output_tokens_per_s=tgt, isl=2048, osl=256, framework=fw,
                          cards="1,2,4,8,16")
        totals.append((tgt, r.best.total_cards if r.best is not None and r.best.met else math.inf))
    assert all(b[1] <= a[1] for a, b in zip(totals, totals[1:])), totals
