"""The planner is exact for the figures shown: each rule of its argument (docs/planner.md), then the claim itself
against exhaustive enumeration of the full estimate."""
from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solver.estimate.compute import Work, factors_for
from solver.estimate.params import count_params
from solver.estimate.serving import ServingPolicy, ServingShape, Workload, estimate, serving_times
from solver.estimate.step import step_cost, step_items
from solver.estimate.step_sums import module_sums, step_sums
from solver.plan import cpsat, rule_tables
from solver.plan.solve import full_estimate_misses
from solver.plan.groups import GROUPS, module_groups
from solver.plan.layout_memory import assumed_memory
from solver.plan.table_build import build_tables
from solver.space.domains import build_space
from solver.specs.framework import load_framework
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import list_models, load_model
from solver.specs.parallel import ParallelConfig
from solver.specs.precision import resolve_precision
from solver.specs.scenario import Scenario

from conftest import examples, rules_of  # noqa: E402

CASES = [("qwen3-30b-a3b", "h200_sxm"), ("mixtral-8x7b", "h100_sxm"), ("qwen3-8b", "a100_sxm"),
         ("gpt-oss-20b", "b200_sxm"), ("deepseek-v3.2", "atlas_a3"), ("deepseek-v3", "h200_sxm"),
         ("qwen3.5-35b-a3b", "h100_sxm")]
FRAMEWORKS = ["generic", "cann-recipes", "vllm", "sglang", "trtllm"]


def _instance(model, hw, fw, world, phase, isl, mtp=0, max_concurrency=64, **sla):
    m, h, f = load_model(model), load_hardware(hw), rules_of(fw)
    prec = resolve_precision(m, h, weight_dtype="int8" if h.name.startswith("atlas") else None)
    mtp = mtp if m.num_mtp_layers and f.max_mtp else 0
    sc = Scenario(isl=isl, osl=128, max_concurrency=max_concurrency, phase=phase, mtp=mtp, **sla)
    fac = factors_for(h, f.efficiency_for(h))
    t = build_tables(m, h, prec, fac, f, build_space(m, h, f, world, sc), sc)
    return m, h, f, prec, fac, sc, t


def _configs(t, b):
    """Every combination of group choices with one stage count that the tables' memory cap admits."""
    groups = list(t.choices)
    cap = t.memory_limit_bytes - t.const_memory_bytes
    for idx in itertools.product(*(range(len(t.choices[g])) for g in groups)):
        picks = dict(zip(groups, idx))
        if len({t.choices[g][i][-1] for g, i in picks.items()}) > 1:
            continue
        if sum(t.memory[(b, g, i)] for g, i in picks.items()) > cap:
            continue
        yield picks


# ------------------------------------------------------------------------------------- the argument's rules


def test_every_op_belongs_to_a_module_its_parameters_declare() -> None:
    """The tables attribute each op to the group of its module's knob: no op may come from a module the
    parameter report does not know (it would be costed by no group)."""
    h = load_hardware("h200_sxm")
    f = factors_for(h)
    for name, aliases in list_models():
        m = load_model(aliases[0] if aliases else name)
        known = module_groups(count_params(m))
        prec = resolve_precision(m, h)
        pc = ParallelConfig(world_size=8, attn_tp_size=2, dense_tp_size=2, moe_tp_size=1 if m.is_moe else 2,
                            embed_tp_size=2, lmhead_tp_size=2)
        for phase in ("prefill", "decode"):
            step = step_cost(m, h, pc, prec, f, Work(phase, 64, 1024, 8, 8),
                             mtp_layers=1 if m.num_mtp_layers and phase == "decode" else 0)
            modules = {o.module for o in step.ops} | {c.module for c in step.comms}
            assert modules <= set(known), f"{name} {phase}: {sorted(modules - set(known))}"


@settings(max_examples=80, deadline=None)
@given(case=st.sampled_from(CASES), tp=st.sampled_from([1, 2, 8]), cp=st.sampled_from([1, 4]),
       moe_tp=st.sampled_from([1, 4]), phase=st.sampled_from(["prefill", "decode"]),
       tokens=st.sampled_from([1, 7, 64, 4096]), mtp=st.sampled_from([0, 2]),
       attention_only=st.booleans(), want=st.sampled_from([None, ("embedding",), ("lm_head",), ("o_proj", "experts")]))
def test_the_cached_module_sums_equal_the_records_sums(case, tp, cp, moe_tp, phase, tokens, mtp, attention_only,
                                                       want) -> None:
    """The planner's tables add step_sums (per-module sums cached per block and kit, the records not kept): each
    chunk must be exactly (==, not approx) the per-module sums of step_items' records, the same twice over (the
    cached answer), with the same repeat counts and draft flags."""
    m, h = load_model(case[0]), load_hardware(case[1])
    prec = resolve_precision(m, h, weight_dtype="int8" if h.name.startswith("atlas") else None)
    f = factors_for(h)
    pc = ParallelConfig(world_size=16, attn_tp_size=tp, cp_size=cp, moe_tp_size=moe_tp if m.is_moe else 1,
                        dense_tp_size=2, embed_tp_size=2, lmhead_tp_size=4)
    w = Work(phase, tokens, 1024, max(1, tokens // 8), tokens if phase == "decode" else 1)
    mtp = mtp if m.num_mtp_layers else 0
    modules = frozenset(want) if want else None
    items = step_items(m, h, pc, prec, f, w, mtp, attention_only, modules)
    expect = [(module_sums(ops, comms), n, draft) for ops, comms, n, draft in items]
    assert step_sums(m, h, pc, prec, f, w, mtp, attention_only, modules) == expect
    assert step_sums(m, h, pc, prec, f, w, mtp, attention_only, modules) == expect
    if modules is None:
        assert expect, "a whole step costs at least one block"


def test_equal_blocks_share_their_cached_sums() -> None:
    """The block caches key a block by the first equal one met (step_parts.canonical_block): a pipeline stage holds
    other layer objects than the model, equal to its own. Equal blocks must cost exactly what each costs on its
    own records, and distinct blocks must not share."""
    import copy

    from solver.estimate.compute import Kit
    from solver.estimate.step_parts import _records, canonical_block
    from solver.estimate.step_sums import block_sums

    m, h = load_model("deepseek-v3.2"), load_hardware("atlas_a3")
    prec, f = resolve_precision(m, h, weight_dtype="int8"), factors_for(h)
    kit = Kit(h, ParallelConfig(world_size=16, attn_tp_size=4, moe_tp_size=2), prec, f, Work("decode", 32, 4096, 32, 32))
    blocks = [b for b, _ in m.block_groups]
    for b in blocks:
        twin = copy.deepcopy(b)
        assert twin is not b and twin == b
        assert canonical_block(twin) is canonical_block(b)
        assert block_sums(twin, kit) == module_sums(*_records(twin, kit)) == block_sums(b, kit)
    assert len({id(canonical_block(b)) for b in blocks}) == len(blocks)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=st.sampled_from(CASES), pp=st.sampled_from([2, 3, 4]), phase=st.sampled_from(["prefill", "decode"]),
       mtp=st.sampled_from([0, 2]), attention_only=st.booleans(),
       want=st.sampled_from([None, ("embedding",), ("lm_head",), ("o_proj", "experts")]))
def test_the_stages_summed_in_one_pass_equal_each_stages_sums(case, pp, phase, mtp, attention_only, want) -> None:
    """group_cost.shares sums a pipeline's stages in one pass (step_sums.stages_sums): each stage's list must be
    exactly (==) step_sums of that stage on its own."""
    from solver.estimate.pipeline import stages
    from solver.estimate.step_sums import stages_sums

    m, h = load_model(case[0]), load_hardware(case[1])
    prec = resolve_precision(m, h, weight_dtype="int8" if h.name.startswith("atlas") else None)
    f = factors_for(h)
    pc = ParallelConfig(world_size=8, attn_tp_size=2, moe_tp_size=2 if m.is_moe else 1, cp_size=2)
    w = Work(phase, 64, 1024, 8, 64 if phase == "decode" else 8)
    mtp = mtp if m.num_mtp_layers else 0
    modules = frozenset(want) if want else None
    sts = [(st.model, mtp if st.last else 0) for st in stages(m, pp)]
    got = stages_sums(sts, h, pc, prec, f, w, attention_only, modules)
    assert got == [step_sums(sm, h, pc, prec, f, w, k, attention_only, modules) for sm, k in sts]


_TABLE_SUM_CASES = dict(case=st.sampled_from(CASES), fw=st.sampled_from(FRAMEWORKS),
                       world=st.sampled_from([1, 2, 4, 8, 16]), phase=st.sampled_from(["serving", "prefill", "decode"]),
                       isl=st.sampled_from([512, 4096]), mtp=st.sampled_from([0, 1]), data=st.data())


# 20 draws in the default suite; the slow suite (.ci/run) draws 60 more
@settings(max_examples=examples(20), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(**_TABLE_SUM_CASES)
def test_the_tables_sum_to_the_full_estimate(case, fw, world, phase, isl, mtp, data) -> None:
    """A configuration's figures from the summed tables (per stage, the pairwise terms included) equal the
    full estimate's, for every configuration the memory cap admits whose busiest replica's sequences fit by
    the memory model too (what the figures assume; the planner holds each answer to it: solve.verify)."""
    _tables_sum_to_the_full_estimate(case, fw, world, phase, isl, mtp, data)


@pytest.mark.slow
@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(**_TABLE_SUM_CASES)
def test_the_tables_sum_to_the_full_estimate_many(case, fw, world, phase, isl, mtp, data) -> None:
    _tables_sum_to_the_full_estimate(case, fw, world, phase, isl, mtp, data)


def _tables_sum_to_the_full_estimate(case, fw, world, phase, isl, mtp, data) -> None:
    m, h, f, prec, fac, sc, t = _instance(case[0], case[1], fw, world, phase, isl, mtp)
    if any(not c for c in t.choices.values()):
        return
    b = data.draw(st.sampled_from(t.batches))
    configs = list(itertools.islice(_configs(t, b), 4000))
    if not configs:
        return
    picks = configs[data.draw(st.integers(0, len(configs) - 1))]
    pc = ParallelConfig(world_size=world, **t.config(picks))
    if not assumed_memory(m, h, pc, prec, sc, b).feasible:
        return  # what the planner asks to fit does not (its full-estimate check rejects the configuration)
    e = estimate(m, h, pc, prec, fac, Workload.for_scenario(sc, b))
    fig = t.figures(b, picks)
    assert fig.ttft_s == pytest.approx(e.ttft_s, rel=1e-9, abs=1e-15)
    assert fig.tpot_s == pytest.approx(e.tpot_s, rel=1e-9, abs=1e-15)
    assert fig.output_tokens_per_s == pytest.approx(e.output_tokens_per_s, rel=1e-9)


_steps = st.floats(1e-5, 2.0)


@settings(max_examples=300, deadline=None)
@given(cr=st.integers(1, 64), run=st.integers(1, 64), n=st.integers(1, 8), chunks=st.integers(1, 3),
       synced=st.sampled_from([1, 2, 8]), osl=st.integers(2, 512), mtp=st.sampled_from([0, 1, 3]),
       decode_first=st.booleans(), ftl=st.sampled_from([0.0, 1.0]), p=_steps, t=_steps, dp=_steps, dt=_steps)
def test_the_serving_figures_are_non_decreasing_in_each_step_time(cr, run, n, chunks, synced, osl, mtp,
                                                                    decode_first, ftl, p, t, dp, dt) -> None:
    """F(Pe, Te): a slower prefill or decode step never gives a lower TPOT or request latency, and a slower
    prefill step never a lower TTFT (what lets the planner cut off every point a found one dominates; TTFT may
    fall a little with a slower decode step, which lowers the request rate: the planner cuts a point that
    misses only the TTFT bound alone)."""
    running = min(run, cr)
    shape = ServingShape(cr, running, min(n, running), chunks, synced)
    wl = Workload("serving", isl=4096, osl=osl, concurrency=cr * synced, mtp=mtp, request_overhead_s=0.05)
    pol = ServingPolicy(decode_first, ftl)
    base = serving_times(shape, p, t, wl, pol)
    slower_p, slower_t = serving_times(shape, p + dp, t, wl, pol), serving_times(shape, p, t + dt, wl, pol)
    for q in (slower_p, slower_t):
        for a, c in ((base.tpot_s, q.tpot_s), (base.request_s, q.request_s)):
            assert c >= a * (1 - 1e-9) - 1e-12
    assert slower_p.ttft_s >= base.ttft_s * (1 - 1e-9) - 1e-12


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=st.sampled_from(CASES[:5]), fw=st.sampled_from(FRAMEWORKS), world=st.sampled_from([1, 2, 8]),
       phase=st.sampled_from(["serving", "prefill", "decode"]), pe=_steps, te=_steps,
       kernels=st.sampled_from([0.0, 500.0]), data=st.data())
def test_the_bounds_read_the_figures_ttft_and_tpot(case, fw, world, phase, pe, te, kernels, data) -> None:
    """The planner's bounds and search read TTFT and TPOT through figures.ttft_tpot (no Figures objects): the
    same floats as figures() at any step times, in every phase."""
    from solver.estimate.figures import figures, ttft_tpot

    m, h, f, prec, fac, sc, t = _instance(*case, fw, world, phase, 4096)
    b = data.draw(st.sampled_from(t.batches))
    key = data.draw(st.sampled_from(sorted(t.layouts())))
    plan = t.step_plan_of(b, key)
    fig = figures(plan, fac, pe, kernels, te, kernels)
    assert ttft_tpot(plan, fac, pe, kernels, te, kernels) == (fig.ttft_s, fig.tpot_s)


# -------------------------------------------------------------------------------------------- the claim


def _exhaustive_front(m, h, f, prec, fac, sc, t, world):
    """Every admissible configuration scored by the full estimate: the per-(concurrency, sequences in
    flight) optima under the rules, the memory cap and the SLAs, then their Pareto front."""
    pl = cpsat.Planner(t, m, h, f, sc)
    best: dict[tuple, tuple] = {}
    for b in t.batches:
        rules = [(knobs, {tuple(a) for a in allowed}) for _, knobs, allowed in pl.rules(b)]
        for picks in _configs(t, b):
            cfg = t.config(picks)
            if not all(tuple(cfg[k] for k in knobs) in allowed for knobs, allowed in rules):
                continue
            e = estimate(m, h, ParallelConfig(world_size=world, **cfg), prec, fac, Workload.for_scenario(sc, b))
            if [x for x in full_estimate_misses(e, sc) if x.startswith("SLA")]:
                continue
            lat = sc.request_latency(e.ttft_s, e.tpot_s)
            served = t.view(b, t.key_of(picks), full=False).plan.served
            inv = world / e.output_tokens_per_s
            key = (b, served)
            if key not in best or lat < best[key][0] * (1 - 1e-9):
                best[key] = (lat, inv)
    pts = sorted(best.values(), key=lambda v: (v[1], v[0]))
    front, low = [], math.inf
    for lat, inv in pts:
        if lat < low * (1 - 1e-9):
            front.append((lat, inv))
            low = lat
    return front


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=st.sampled_from(CASES[:5]), fw=st.sampled_from(FRAMEWORKS), world=st.sampled_from([1, 2, 4, 8]),
       phase=st.sampled_from(["serving", "prefill", "decode"]), isl=st.sampled_from([512, 4096]),
       sla=st.sampled_from([{}, {"ttft_ms": 400.0}, {"tpot_ms": 30.0}]))
def test_the_cpsat_front_is_the_front_of_the_full_estimate(case, fw, world, phase, isl, sla) -> None:
    """The front CP-SAT enumerates is the Pareto front of (request latency, inverse throughput) over every
    configuration, each scored by the full estimate, to the integer resolution of the step times."""
    m, h, f, prec, fac, sc, t = _instance(case[0], case[1], fw, world, phase, isl, max_concurrency=16,
                                          **(sla if phase == "serving" else {}))
    if any(not c for c in t.choices.values()):
        return
    n = 1
    for opts in t.choices.values():
        n *= len(opts)
    if n * len(t.batches) > 3000:
        return  # the exhaustive side calls the full estimate per configuration
    pl = cpsat.Planner(t, m, h, f, sc)
    front = [(p.latency / cpsat.TIME_SCALE, p.inv_throughput / cpsat.TIME_SCALE) for p in pl.front()]
    want = _exhaustive_front(m, h, f, prec, fac, sc, t, world)
    assert len(front) == len(want), (front, want)
    for (la, ia), (lb, ib) in zip(front, want):
        assert la == pytest.approx(lb, rel=1e-6, abs=2e-6) and ia == pytest.approx(ib, rel=1e-6)


def test_the_front_is_the_same_whatever_the_scenario_kind() -> None:
    """One front per (model, hardware, cards, workload): the kind and weights only pick from it."""
    fronts = []
    for kind in ("throughput", "latency", "balanced"):
        m, h, f = load_model("qwen3-30b-a3b"), load_hardware("h200_sxm"), load_framework("vllm")
        sc = Scenario(kind=kind, isl=1024, osl=128, max_concurrency=64)
        t = build_tables(m, h, resolve_precision(m, h), factors_for(h, f.efficiency_for(h)), f,
                         build_space(m, h, f, 8, sc), sc)
        fronts.append([(p.key(), p.latency) for p in cpsat.Planner(t, m, h, f, sc).front()])
    assert fronts[0] == fronts[1] == fronts[2]


def test_each_groups_share_is_costed_at_the_layout_it_runs_beside() -> None:
    """Pairwise tables: the MoE group's share under attention TP differs from its share under attention DP
    (tokens per rank, resharding), so a table per choice alone could not be exact."""
    m, h, f, prec, fac, sc, t = _instance("qwen3-30b-a3b", "h200_sxm", "vllm", 8, "serving", 1024)
    b = t.batches[-1]
    shares = {}
    for i, c in enumerate(t.choices["attn"]):
        if c[0] in (1, 8) and c[1:4] == (1, 1, 1) and c[5] == 1:
            vc = t.view(b, t.layout_key(c))
            # MoE TP8: one all-reduce beside attention TP8, a gather and a scatter beside attention DP
            j = next(j for j, mc in enumerate(t.choices["moe"]) if mc[0] == 8 and mc[-1] == 1)
            shares[c[0]] = vc.other["moe"][j][1].gpu_s
    assert shares[1] != shares[8]


def test_groups_cover_every_knob_once() -> None:
    knobs = [k for g in GROUPS.values() for k in g if k != "pp_size"]
    assert len(knobs) == len(set(knobs))


def test_the_static_rule_tables_from_the_cache_are_the_ones_computed() -> None:
    """static_rule_tables is computed once per deployment: what it hands out again must equal a fresh
    enumeration, for that deployment and not another (here: another MTP depth, which rules read)."""
    m, h, f, prec, fac, sc, t = _instance("longcat-flash", "atlas_a3", "cann-recipes", 16, "decode", 4096, mtp=1)
    rule_tables.clear_rule_cache()
    first = rule_tables.static_rule_tables(t, m, h, f, sc)
    again = rule_tables.static_rule_tables(t, m, h, f, sc)
    assert first == again == rule_tables._rule_tables(t, m, h, f, sc, None, batch_rules=False)
    other = sc.model_copy(update={"mtp": 3})  # past cann-recipes' C.mtp_depth_longcat: a rule the other lacks
    fresh = rule_tables._rule_tables(t, m, h, f, other, None, batch_rules=False)
    assert fresh != first and rule_tables.static_rule_tables(t, m, h, f, other) == fresh


# the serving phase costs both steps of every layout (17-23 s on 2 cores), the decode phase 7 s: both in the slow
# suite (.ci/run); the default suite keeps the MLA hybrid's decode case (test_decode_context_parallel.py)
@pytest.mark.parametrize("phase", [pytest.param("decode", marks=pytest.mark.slow),
                                   pytest.param("serving", marks=pytest.mark.slow)])
def test_the_tables_sum_to_the_full_estimate_under_decode_context_parallel(phase) -> None:
    """vLLM's -dcp reuses the TP ranks (kvp_splits_attention_weights): every configuration with KVP the tables
    admit, TP x DCP ones included (attn_tp 2 x kvp 4, o_proj 8), gives the full estimate's figures and memory."""
    m, h, f, prec, fac, sc, t = _instance("deepseek-v3", "h200_sxm", "vllm", 8, phase, 4096)
    assert any(c[0] > 1 and c[2] > 1 for c in t.choices["attn"]), "TP x DCP layouts are in the space"
    assert configs_match_the_estimate(m, h, prec, fac, sc, t, ((b, p) for b in t.batches[:3] for p in _configs(t, b)),
                                      keep=with_kvp)


def with_kvp(pc: ParallelConfig) -> bool:
    return pc.kvp_size > 1


def configs_match_the_estimate(m, h, prec, fac, sc, t, configs, keep=lambda pc: True) -> int:
    """For every (concurrency, picks) whose configuration `keep` keeps: the tables' memory equals the memory
    model's, and a fitting one's TTFT and TPOT the full estimate's. Returns how many fitting ones were checked."""
    seen = 0
    for b, picks in configs:
        pc = ParallelConfig(world_size=t.world, **t.config(picks))
        if not keep(pc):
            continue
        mem = assumed_memory(m, h, pc, prec, sc, b, t.mem_opts)
        assert t.memory_of(b, picks) == pytest.approx(mem.total - mem.reserved_bytes, rel=1e-9)
        if not mem.feasible:
            continue
        e = estimate(m, h, pc, prec, fac, Workload.for_scenario(sc, b))
        fig = t.figures(b, picks)
        assert fig.ttft_s == pytest.approx(e.ttft_s, rel=1e-9, abs=1e-15)
        assert fig.tpot_s == pytest.approx(e.tpot_s, rel=1e-9, abs=1e-15)
        seen += 1
    return seen



@pytest.mark.slow  # 13 s: .ci/run runs it after the default suite, which stays under 5 minutes on 2 cores
def test_the_cpsat_front_is_the_exhaustive_front_at_ttft_slas_across_the_configurations_ttfts(monkeypatch) -> None:
    """At TTFT SLAs among the configurations' own TTFTs (many answers miss the SLA alone, and the search cuts
    off what dominates those whose TTFT floor at both steps misses: DominanceSearch._ttft_floor_misses), the
    CP-SAT front is still the exhaustive front of the full estimate."""
    from solver.plan.dominance import DominanceSearch

    cut = []
    real = DominanceSearch._ttft_floor_misses
    monkeypatch.setattr(DominanceSearch, "_ttft_floor_misses",
                        lambda self, vc, fig: cut.append(real(self, vc, fig)) or cut[-1])
    for case, fw, world in ((("qwen3-30b-a3b", "h200_sxm"), "generic", 4), (("mixtral-8x7b", "h100_sxm"), "vllm", 8),
                            (("qwen3-8b", "a100_sxm"), "sglang", 8)):
        m, h, f, prec, fac, sc, t = _instance(case[0], case[1], fw, world, "serving", 4096, max_concurrency=16)
        ttfts = sorted({estimate(m, h, ParallelConfig(world_size=world, **t.config(p)), prec, fac,
                                 Workload.for_scenario(sc, b)).ttft_s * 1e3 for b in t.batches for p in _configs(t, b)})
        for q in (0.02, 0.1, 0.3):
            sla = ttfts[int(q * (len(ttfts) - 1))] * 1.0001
            m, h, f, prec, fac, sc, t = _instance(case[0], case[1], fw, world, "serving", 4096, max_concurrency=16,
                                                  ttft_ms=sla)
            front = [(p.latency / cpsat.TIME_SCALE, p.inv_throughput / cpsat.TIME_SCALE)
                     for p in cpsat.Planner(t, m, h, f, sc).front()]
            want = _exhaustive_front(m, h, f, prec, fac, sc, t, world)
            assert len(front) == len(want), (case, sla, front, want)
            for (la, ia), (lb, ib) in zip(front, want):
                assert la == pytest.approx(lb, rel=1e-6, abs=2e-6) and ia == pytest.approx(ib, rel=1e-6)
    assert any(cut)  # the rule cut something
