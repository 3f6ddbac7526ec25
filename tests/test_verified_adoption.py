"""The seed's Step 3: prefer adopting a verified configuration whose estimate is reasonable (memory feasible,
communication inside the node) over re-deriving one. A verified deployment of the same model, hardware, world
size and phase is offered as a candidate; the ranking's tie band adopts it as #1 when its score is within 3% of
the best (plan.verified.verified_candidate, rank.select.rank_candidates)."""
from __future__ import annotations

import itertools

from solver.api import run_solve, verified_for
from solver.estimate.compute import factors_for
from solver.plan.table_build import build_tables
from solver.space.domains import build_space, space_name
from solver.specs.framework import load_framework
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import load_model
from solver.specs.precision import resolve_precision
from solver.specs.reference import list_references
from solver.specs.scenario import Scenario


def _ref(ref_id: str):
    return next(r for r in list_references() if r.id == ref_id)


def _solve(ref_id: str, framework: str = "cann-recipes", references=None, kv_dtype: str | None = None):
    r = _ref(ref_id)
    q = r.quant
    return run_solve(r.model, r.hardware, r.world_size, r.planning_scenario(), framework, q.spelled(q.weights), q.spelled(q.moe_weights),
                     kv_dtype or q.kv_cache, top=3, explain_binding=False, references=references)


def test_a_verified_deployment_within_the_tie_band_is_adopted_as_candidate_1() -> None:
    r = _ref("v32-d16")
    _, cands = _solve("v32-d16")
    first = cands[0]
    assert first.planned.role == "verified deployment" and first.planned.verified == "v32-d16"
    assert first.planned.config.knobs() | {"cp_size": 16} == r.config().knobs()  # its decode runs CP as DP
    assert "within 3% of the best score, so adopted" in first.reason
    best = next(c for c in cands if c.planned.role == "best score")
    assert best.rank > 1  # the planner's own optimum stays a candidate
    assert len(cands) == 3 and len({c.pattern for c in cands}) == 3


def test_without_the_reference_the_planner_answers_on_its_own() -> None:
    r = _ref("v32-d16")
    others = [o for o in list_references() if o.id != r.id]
    _, cands = _solve("v32-d16", references=others)
    assert not any(c.planned.verified for c in cands)
    assert cands[0].reference != r.id or cands[0].reference_diff  # v32-d16's own knobs are no longer #1


def test_a_verified_deployment_behind_the_band_is_shown_after_the_ones_that_beat_it() -> None:
    _, cands = _solve("q3-attn4")  # the estimate puts TP4 x DP8 about 6% behind the planner's best
    verified = [c for c in cands if c.planned.verified == "q3-attn4"]
    assert len(verified) == 1 and verified[0].rank > 1
    assert "behind the best score by the estimate" in verified[0].reason


def test_a_verified_configuration_outside_the_framework_space_is_not_offered() -> None:
    # sglang exposes neither o_proj TP nor the embedding's own TP degree: v32-d16's knobs are no choice there (its
    # int8 KV cache has no sglang spelling either, and the A3 no fp8: bf16 here; deployments are matched by model,
    # hardware, size and phase)
    _, cands = _solve("v32-d16", framework="sglang", kv_dtype="bf16")
    assert not any(c.planned.verified for c in cands)


def test_only_deployments_of_the_same_model_hardware_world_size_and_phase_are_offered() -> None:
    refs = list_references()
    r = _ref("r1-d128")
    ids = [i for i, _ in verified_for(load_model(r.model).name, r.hardware, r.world_size, r.phase, refs)]
    assert "r1-d128" in ids and all(_ref(i).world_size == 128 and _ref(i).phase == "decode" for i in ids)
    prefill = [i for i, _ in verified_for(load_model(r.model).name, r.hardware, 32, "prefill", refs)]
    assert prefill == ["r1-p32-dp"]  # R1's prefill deployment on 32 dies, none of its decode ones
    assert not any(_ref(i).afd for i in ids)
    assert "lc-afd" not in [i for i, _ in verified_for(load_model("longcat-flash").name, "atlas_a3", 128, "decode",
                                                        refs)]


def test_a_decode_deployments_cp_is_the_attention_dp_config_under_another_name() -> None:
    decode = Scenario(phase="decode", concurrency=8)
    assert space_name({"attn_tp_size": 1, "cp_size": 16}, decode) == {"attn_tp_size": 1, "cp_size": 1}
    assert space_name({"attn_tp_size": 1, "cp_size": 16}, Scenario(phase="prefill", concurrency=1))["cp_size"] == 16


def test_picks_of_inverts_config() -> None:
    model, hw, fw = load_model("deepseek-v3.2"), load_hardware("atlas_a3"), load_framework("generic")
    sc = Scenario(isl=4096, osl=256, max_concurrency=4)
    space = build_space(model, hw, fw, 16, sc, False)
    prec = resolve_precision(model, hw, "int8", None, None)
    t = build_tables(model, hw, prec, factors_for(hw, fw.efficiency_for(hw)), fw, space, sc)
    checked = 0
    for i, j, k in itertools.islice(itertools.product(range(len(t.choices["attn"])), range(len(t.choices["dense"])),
                                                      range(len(t.choices["moe"]))), 0, None, 7):
        pp = t.choices["attn"][i][-1]  # every group picks the same stage count
        if t.choices["dense"][j][-1] != pp or t.choices["moe"][k][-1] != pp:
            continue
        heads = [[n for n, c in enumerate(t.choices[g]) if c[-1] == pp] for g in ("embed", "lmhead")]
        picks = {"attn": i, "dense": j, "moe": k, "embed": heads[0][0], "lmhead": heads[1][-1]}
        assert t.picks_of(t.config(picks)) == picks
        checked += 1
    assert checked > 20
    assert t.picks_of({"attn_tp_size": 3}) is None  # not a choice of this space


def test_one_degree_on_two_world_sizes_is_named_as_a_share_of_each() -> None:
    # CP16 on 32 ranks against v32-d16's CP16 on all its 16: the distance counts the knob (16 vs W), and the line
    # names the two worlds, not "cp_size 16 vs 16"
    from solver.rank.select import reference_distance
    from solver.specs.parallel import ParallelConfig

    r = _ref("v32-d16")
    pc = ParallelConfig(world_size=32, cp_size=16, o_proj_tp_size=r.config().o_proj_tp_size,
                        lmhead_tp_size=32)
    _, _, diffs = reference_distance(pc, load_model(r.model), load_hardware(r.hardware), r, load_model(r.model).name)
    assert "cp_size 16 of 32 ranks vs 16 of 16" in diffs
    assert not any(d.startswith("cp_size 16 vs 16") for d in diffs)
