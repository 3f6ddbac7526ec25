"""The planner's group floors (plan.floor, docs/planner.md "How it decides" 3): a non-attention group's share
is non-decreasing in what its formulas read of the work at a fixed config, where the engine has no custom
all-reduce kernel; the floors a planner takes from its tables are at most the tables they stand for; and the
planner's answers are the same with them as without."""
from __future__ import annotations

import math

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from solver.estimate.comm import CustomAllReduce, all_reduce_s
from solver.estimate.compute import Work, factors_for
from solver.plan import cpsat
from solver.plan.floor import FLOOR_GROUPS, JOINT, at_most, floors_apply, reads
from solver.plan.group_cost import Share, shares
from solver.plan.table_build import build_tables
from solver.plan.tables import ViewCosts
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


def _pc(m, pp: int, tp: int, kvp: int, degree: int) -> ParallelConfig | None:
    """A config as the tables cost a non-attention group beside an outside (attention TP, 1, KVP, 1, PP): every
    group's own knob at `degree` (MoE TP with the rest of the stage as EP)."""
    stage = WORLD // pp
    if stage % (tp * kvp) or stage % degree:
        return None
    knobs = dict(attn_tp_size=tp, kvp_size=kvp, pp_size=pp, dense_tp_size=degree, embed_tp_size=degree,
                 lmhead_tp_size=degree)
    if m.is_moe:
        ep = stage // degree
        if ep > 1 and m.num_experts % ep:
            return None
        knobs["moe_tp_size"] = degree
    try:
        return ParallelConfig(world_size=WORLD, **knobs)
    except ValueError:
        return None


@pytest.mark.slow  # 400 drawn pairs of shares (~5 s): CI's slow suite
@settings(max_examples=400, deadline=None)
@given(model=st.sampled_from(MODELS), engine=st.sampled_from(ENGINES), phase=st.sampled_from(["prefill", "decode"]),
       pp=st.sampled_from([1, 2]), tp=st.sampled_from([1, 2, 4, 8]), kvp=st.sampled_from([1, 2]),
       degree=st.sampled_from([1, 2, 4, 8, 16]), mtp=st.sampled_from([0, 1]),
       tokens=st.floats(1.0, 65536.0), context=st.floats(1.0, 32768.0), seqs=st.floats(0.5, 512.0),
       busy=st.sampled_from([0.0, 1.0, 2.0, 3.0, 8.0]),
       shrink=st.tuples(*(st.floats(0.0, 1.0) for _ in range(4))), busy_less=st.sampled_from([0.0, 1.0, 2.0, 8.0]))
def test_a_groups_share_is_non_decreasing_in_what_it_reads_of_the_work(model, engine, phase, pp, tp, kvp, degree,
                                                                        mtp, tokens, context, seqs, busy, shrink,
                                                                        busy_less):
    m, h, prec, f, groups = _setup(model, *engine)
    assert floors_apply(f)
    pc = _pc(m, pp, tp, kvp, degree)
    assume(pc is not None)
    mtp = mtp if m.num_mtp_layers and phase == "decode" else 0
    logits = tokens if phase == "decode" else seqs
    w = Work(phase, tokens, context, seqs, min(logits, tokens), busy)
    a, b, c, d = shrink
    less = Work(phase, max(1.0, tokens * a), max(1.0, context * b), max(0.5, seqs * c),
                min(logits, tokens) * d, busy_less)
    assume(at_most(reads(less, pp), reads(w, pp)))
    want = tuple(g for g in (*FLOOR_GROUPS, "dense") if any(v == g for v in groups.values()))
    lo = shares(m, h, pc, prec, f, less, mtp, groups, want)
    hi = shares(m, h, pc, prec, f, w, mtp, groups, want)
    for g in want:
        assert _le(lo[g].gpu_s, hi[g].gpu_s), (g, lo[g], hi[g])
        assert _le(lo[g].launch_s, hi[g].launch_s), (g, lo[g], hi[g])


def test_floors_are_off_where_a_custom_all_reduce_makes_a_larger_message_faster():
    """vLLM's custom kernel (two-shot up to 8 MB) is slower just below its limit than the NCCL ring just above
    it on 8 H100s (two kernel latencies against two link hops): the all-reduce, and a share holding one, is not
    monotone in the bytes there, so those engines get no floors."""
    h = load_hardware("h100_sxm")
    fw = load_framework("vllm")
    f = factors_for(h, fw.efficiency_for(h))
    custom = CustomAllReduce.of(f)
    assert custom is not None and not floors_apply(f)
    edge = custom.custom_max_bytes
    assert all_reduce_s(h, 8, edge * 1.0001, 1, f.comm, custom) < all_reduce_s(h, 8, edge, 1, f.comm, custom)
    for name in ("sglang", "trtllm"):
        fw = load_framework(name)
        assert not floors_apply(factors_for(h, fw.efficiency_for(h)))


PLANS = [("deepseek-v3.2", "atlas_a3", "generic", 32, "balanced"), ("deepseek-v3.2", "atlas_a3", "cann-recipes", 16, "latency"),
         pytest.param(("qwen3-30b-a3b", "h200_sxm", "generic", 8, "throughput"), marks=pytest.mark.slow),  # 3 s
         ("mixtral-8x7b", "h100_sxm", "generic", 8, "balanced"),
         ("qwen3-8b", "a100_sxm", "generic", 4, "balanced")]


def _planner(model, hw, fw, world, kind, floors: bool):
    m, h, f = load_model(model), load_hardware(hw), load_framework(fw)
    prec = resolve_precision(m, h, weight_dtype="int8" if h.name.startswith("atlas") else None)
    sc = Scenario(kind=kind, isl=2048, osl=128, max_concurrency=256)
    fac = factors_for(h, f.efficiency_for(h))
    t = build_tables(m, h, prec, fac, f, build_space(m, h, f, world, sc), sc)
    p = cpsat.Planner(t, m, h, f, sc)
    p.use_floors = floors
    return p


@pytest.mark.parametrize("case", PLANS)
def test_the_floors_are_at_most_the_tables_and_leave_the_answers_as_they_are(case):
    with_floors = _planner(*case, floors=True)
    got = with_floors.class_optima()
    assert got == _planner(*case, floors=False).class_optima()
    # every layout costed at every concurrency: the floors the planner's tables give each (its groups taken
    # out) are at most those groups' own corners, step by step and stage by stage
    t, fl = with_floors.t, with_floors._floors
    checked = 0
    for b in t.batches:
        for key in t.layouts():
            vc = t.view(b, key)
            fl.note(vc, key)
    for b in t.batches:
        for key in t.layouts():
            vc = t.view(b, key)
            bare = ViewCosts(vc.plan, vc.pre_pipe, vc.dec_pipe, vc.attn)
            for groups in (FLOOR_GROUPS, (JOINT, "lmhead", "embed")):
                low = fl.corner(bare, key, None, groups)
                if low is None:
                    continue
                for idx, pipe in enumerate((vc.pre_pipe, vc.dec_pipe)):
                    if pipe is None:
                        continue
                    gpu = [0.0] * pipe.stages
                    launch = [0.0] * pipe.stages
                    for g in groups:
                        if g == JOINT:  # each pair's shares with its correction: what the complete view sums
                            shs = [d[idx] + m[idx] + (vc.pairs[(jd, jm)][idx] if (jd, jm) in vc.pairs else
                                                      Share((0.0,) * pipe.stages, (0.0,) * pipe.stages))
                                   for jd, d in vc.other.get("dense", {}).items()
                                   for jm, m in vc.other.get("moe", {}).items()]
                        else:
                            shs = [o[idx] for o in vc.other.get(g, {}).values()]
                        if shs:
                            gpu = [x + min(sh.gpu_s[s] for sh in shs) for s, x in enumerate(gpu)]
                            launch = [x + min(sh.launch_s[s] for sh in shs) for s, x in enumerate(launch)]
                    assert _le(low[2 * idx], gpu) and _le(low[2 * idx + 1], launch), (b, key, idx, groups)
                    checked += 1
    assert checked > 0
    assert not math.isnan(sum(p.latency for p in got.values()))
