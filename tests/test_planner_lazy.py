"""The planner's lazy layout order (docs/planner.md "How it decides" 3): a layout's attention choices are costed
at a concurrency only when a floor of their bound comes first (plan.floor.AttentionFloors). The floors rest on
an attention share being non-decreasing in what it reads of the work where the layout does not shard the
step's tokens; they are at most the bounds they stand for, and the layouts are visited in the order, and with
the answers, of the bounds sorted."""
from __future__ import annotations

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from solver.estimate.compute import Work, factors_for
from solver.plan import cpsat
from solver.plan import points
from solver.plan.floor import at_most, attention_at_most, attention_monotone, attention_reads, floors_apply, reads
from solver.plan.bound import minimum, minimum_unless_below, pareto_sums
from solver.plan.group_cost import NONE, Share, shares
from solver.plan.table_build import build_tables
from solver.space.domains import build_space
from solver.specs.framework import load_framework
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import load_model
from solver.specs.parallel import ParallelConfig
from solver.specs.precision import resolve_precision
from solver.specs.scenario import Scenario

from floor_cases import ENGINES, MODELS, WORLD
from floor_cases import le as _le
from floor_cases import setup as _setup


def _attention_pc(tp: int, kvp: int, o_proj: int, pp: int) -> ParallelConfig | None:
    """An attention choice as the tables cost it (the other knobs at 1), or None where it is no config."""
    if (WORLD // pp) % (tp * kvp) or (tp > 1 and o_proj not in (1, tp)) or (WORLD // pp) % o_proj:
        return None
    try:
        return ParallelConfig(world_size=WORLD, attn_tp_size=tp, kvp_size=kvp, o_proj_tp_size=o_proj, pp_size=pp)
    except ValueError:
        return None


@settings(max_examples=400, deadline=None)
@given(model=st.sampled_from(MODELS), engine=st.sampled_from(ENGINES), phase=st.sampled_from(["prefill", "decode"]),
       pp=st.sampled_from([1, 2]), tp=st.sampled_from([1, 2, 4, 8]), kvp=st.sampled_from([1, 2, 4]),
       o_proj=st.sampled_from([1, 2, 4, 8, 16]), mtp=st.sampled_from([0, 1]),
       tokens=st.floats(1.0, 65536.0), context=st.floats(1.0, 32768.0), seqs=st.floats(0.5, 512.0),
       busy=st.sampled_from([0.0, 1.0, 2.0, 3.0, 8.0]),
       shrink=st.tuples(*(st.floats(0.0, 1.0) for _ in range(4))), busy_less=st.sampled_from([0.0, 1.0, 2.0, 8.0]),
       scale=st.sampled_from([1.0, 0.5, 0.25, 2.0 ** -4, 2.0 ** -7]),
       span=st.sampled_from([0.0, 1.0, 1024.0, 8192.0, 32768.0]))
def test_an_attention_share_is_non_decreasing_in_what_it_reads_where_the_tokens_are_not_sharded(
        model, engine, phase, pp, tp, kvp, o_proj, mtp, tokens, context, seqs, busy, shrink, busy_less, scale,
        span):
    m, h, prec, f, groups = _setup(model, *engine)
    assert floors_apply(f)
    pc = _attention_pc(tp, kvp, o_proj, pp)
    assume(pc is not None)
    layout = ParallelConfig(world_size=WORLD, attn_tp_size=tp, kvp_size=kvp, pp_size=pp)
    assert attention_monotone((tp, 1, kvp, 1, pp))
    mtp = mtp if m.num_mtp_layers and phase == "decode" else 0
    logits = tokens if phase == "decode" else seqs
    span = span if phase == "decode" else 0.0  # a decode step's positions (equal in both: attention_reads)
    w = Work(phase, tokens, context, seqs, min(logits, tokens), busy, span)
    a, b, c, d = shrink
    if phase == "prefill":  # the same tokens per sequence (a power of two scales both exactly)
        less_tokens, less_seqs = tokens * scale, seqs * scale
    else:
        less_tokens, less_seqs = max(1.0, tokens * a), max(0.5, seqs * c)
    less = Work(phase, less_tokens, max(1.0, context * b), less_seqs, min(logits, tokens) * d, busy_less, span)
    assume(attention_at_most(attention_reads(less, pp), attention_reads(w, pp)))
    # a table entry is the choice's attention share plus the layout's unowned modules (Tables.view)
    for cfg, want, only in ((pc, "attn", True), (layout, NONE, False)):
        lo = shares(m, h, cfg, prec, f, less, mtp, groups, (want,), only)[want]
        hi = shares(m, h, cfg, prec, f, w, mtp, groups, (want,), only)[want]
        assert _le(lo.gpu_s, hi.gpu_s), (want, lo, hi)
        assert _le(lo.launch_s, hi.launch_s), (want, lo, hi)


def test_fewer_prompts_of_the_same_tokens_can_cost_attention_more_so_floors_ask_equal_tokens_per_prompt():
    """At one context, a query of a longer prompt attends to more keys on average (DSA's top-k, a sliding
    window: compute.mean_keys_capped), so the same new tokens in fewer sequences can take a larger share."""
    m, h, prec, f, groups = _setup("deepseek-v3.2", "generic", "h200_sxm")
    pc = ParallelConfig(world_size=WORLD)
    fewer, more = (Work("prefill", 11.0, 1.0, s, 1.0) for s in (0.5, 1.0))
    assert at_most(reads(fewer, 1), reads(more, 1))
    cost = [shares(m, h, pc, prec, f, w, 0, groups, ("attn",), True)["attn"].gpu_s[0] for w in (fewer, more)]
    assert cost[0] > cost[1]
    assert not attention_at_most(attention_reads(fewer, 1), attention_reads(more, 1))


def test_a_wider_decode_span_can_cost_a_window_less_so_floors_ask_equal_spans():
    """At one context, decode sequences spread over more positions attend to fewer window keys on average
    (min(p, W) is concave: compute.mean_keys_capped), so a step whose reads are all at most another's but whose
    span is wider can take a smaller attention share: the floors ask the spans to be equal."""
    m, h, prec, f, groups = _setup("gpt-oss-20b", "generic", "h200_sxm")
    pc = ParallelConfig(world_size=WORLD)
    point, spread = (Work("decode", 64.0, 4096.0, 64.0, 64.0, 0.0, s) for s in (0.0, 8192.0))
    assert reads(point, 1) == reads(spread, 1)
    cost = [shares(m, h, pc, prec, f, w, 0, groups, ("attn",), True)["attn"].gpu_s[0] for w in (point, spread)]
    assert cost[1] < cost[0]
    assert not attention_at_most(attention_reads(point, 1), attention_reads(spread, 1))


def test_under_sharded_tokens_a_longer_context_never_makes_the_attention_cheaper():
    """Under CP (or SP) each rank all-gathers the new KV behind its attention core's whole kernel (hiding_s): a
    longer context lengthens the core, which hides more of the gather, but the two together take max(core,
    gather), which never falls (it could, when only the core's FLOP time hid the gather). The floors still leave
    such layouts out (attention_monotone: measured to buy nothing there)."""
    m, h, prec, f, groups = _setup("qwen3-8b", "generic", "atlas_a3")
    for pc in (ParallelConfig(world_size=WORLD, cp_size=2), ParallelConfig(world_size=WORLD, attn_sp_size=2)):
        costs = [shares(m, h, pc, prec, f, Work("prefill", 4096.0, ctx, 8.0, 8.0), 0, groups, ("attn",),
                        True)["attn"].gpu_s[0] for ctx in (64.0, 128.0, 4096.0, 32768.0)]
        assert costs == sorted(costs)
    assert not attention_monotone((1, 2, 1, 1, 1)) and not attention_monotone((1, 1, 1, 2, 1))


PLANS = [("deepseek-v3.2", "atlas_a3", "generic", 32, "balanced", None),
         ("deepseek-v3.2", "atlas_a3", "cann-recipes", 16, "latency", None),
         ("qwen3-30b-a3b", "h200_sxm", "generic", 8, "throughput", 40.0),
         ("mixtral-8x7b", "h100_sxm", "generic", 8, "balanced", None),
         ("qwen3-8b", "a100_sxm", "generic", 4, "balanced", None),
         ("llama-3.1-70b", "h100_sxm", "vllm", 8, "throughput", None)]  # a custom all-reduce: no floors


class _Recording(cpsat.Planner):
    """A planner that records the layouts its search visits, per question."""

    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self.visits: list[tuple[int, tuple]] = []
        self._at = 0

    def best(self, b, *a, **k):
        self._at = b
        return super().best(b, *a, **k)

    def _floor_drops(self, vc, key, screen, relaxed, inc, before_view=False):
        if not before_view:  # the first thing a visit asks
            self.visits.append((self._at, key))
        return super()._floor_drops(vc, key, screen, relaxed, inc, before_view)


def _planner(model, hw, fw, world, kind, tpot_ms, lazy: bool) -> _Recording:
    m, h, f = load_model(model), load_hardware(hw), load_framework(fw)
    prec = resolve_precision(m, h, weight_dtype="int8" if h.name.startswith("atlas") else None)
    sc = Scenario(kind=kind, isl=2048, osl=128, max_concurrency=256, tpot_ms=tpot_ms)
    fac = factors_for(h, f.efficiency_for(h))
    t = build_tables(m, h, prec, fac, f, build_space(m, h, f, world, sc), sc)
    p = _Recording(t, m, h, f, sc)
    p.use_attention_floors = lazy
    return p


def _questions(p: cpsat.Planner) -> list:
    """The front's questions, then each concurrency again without its answer's pattern (as ranking asks)."""
    out = [p.class_optima()]
    for (b, _), pt in sorted(p.class_optima().items()):
        picks = dict(pt.picks)
        out.append(p.best(b, exclude_patterns=[points.pattern_key(p.t, picks)]))
    return out


@pytest.mark.slow  # two whole plans per case (CI's slow suite runs it)
@pytest.mark.parametrize("case", PLANS)
def test_the_lazy_order_visits_the_layouts_the_sorted_order_does(case):
    lazy, eager = _planner(*case, lazy=True), _planner(*case, lazy=False)
    assert _questions(lazy) == _questions(eager)
    assert lazy.visits == eager.visits and lazy.solves == eager.solves
    assert set(lazy._attn_views) <= set(eager._attn_views)
    if case[:3] == ("deepseek-v3.2", "atlas_a3", "generic"):
        assert len(lazy._attn_views) < len(eager._attn_views)  # the floors kept some layouts uncosted
    if not lazy._attn_floors.on:
        assert not lazy._attn_floor_memo and len(lazy._attn_views) == len(eager._attn_views)


@pytest.mark.parametrize("case", PLANS[:2])
def test_an_attention_floor_is_at_most_the_bound_it_stands_for(case):
    p = _planner(*case, lazy=True)
    p.class_optima()
    assert p._attn_floor_memo
    for (b, key, no_screen, tpot_cap), floor in p._attn_floor_memo.items():
        relaxed = frozenset(["B.memory_per_rank"] if no_screen else []) | (
            frozenset() if tpot_cap is not None or p.scenario.tpot_ms is None else {"SLA.tpot"})
        screen = None if no_screen else p._memory_screen(b, key)
        exact = p._bound(p.t.view(b, key, full=False), attention_only=True, screen=screen, relaxed=relaxed)[0]
        assert floor <= exact, (b, key, floor, exact)


@pytest.mark.parametrize("case", PLANS[:3])
def test_the_attention_table_a_floor_takes_is_at_most_the_layouts_own(case):
    p = _planner(*case, lazy=True)
    t, fl = p.t, p._attn_floors
    # every layout costed at every concurrency, the largest first: a source may lie above as well as below
    views = {(b, key): t.view(b, key, full=False) for b in sorted(t.batches, reverse=True) for key in t.layouts()}
    for (b, key), vc in views.items():
        fl.note(key, vc)
    checked = 0
    for (b, key), vc in views.items():
        assert p.t.pipelines(b, key) == (vc.pre_pipe, vc.dec_pipe)  # a floor's figures are the view's
        low = fl.table(key, vc.plan)
        if low is None:
            continue
        assert low.keys() == vc.attn.keys()
        for i, own in vc.attn.items():
            for lo, hi in zip(low[i], own):
                assert (lo is None) == (hi is None)
                if lo is not None:
                    assert _le(lo.gpu_s, hi.gpu_s) and _le(lo.launch_s, hi.launch_s), (b, key, i)
        checked += 1
    assert checked > 0


@settings(max_examples=200, deadline=None)
@given(points=st.lists(st.tuples(st.floats(0.0, 1.0), st.floats(0.0, 1.0)), min_size=1, max_size=12),
       at_least=st.one_of(st.none(), st.floats(0.0, 2.5)))
def test_a_bound_asked_against_an_incumbent_answers_as_its_minimum_does(points, at_least):
    """Where the caller asks only whether the bound reaches `at_least`, the first sum below it answers; the
    minimum itself comes back (as exact) whenever it reaches it."""
    sums = pareto_sums([[(Share((x,), (0.0,)), Share((y,), (0.0,)))] for x, y in points[:1]] +
                       [[(Share((x,), (0.0,)), Share((y,), (0.0,))) for x, y in points]])

    def figure(pre, dec):
        return pre.gpu_s[0] + 2 * dec.gpu_s[0]

    low = minimum(sums, figure)
    value, exact = minimum_unless_below(sums, figure, at_least)
    if at_least is None or low >= at_least:
        assert (value, exact) == (low, True)
    else:
        assert not exact and low <= value < at_least
