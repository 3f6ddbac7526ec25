"""The engine's rank order in the estimate (FrameworkProfile.rank_order, estimate.stage_ranks): one rule a test.

2 x 8 H100 (intra_node span 8, inter_node 65,536). vLLM numbers ranks ExternalDP x DP x PP x PCP x TP (vLLM 0.34.0
distributed/parallel_state.py:2155-2170): at TP4 x PP2 x DP2 on 16 ranks engine d's stage k is ranks
(d x 2 + k) x 4 .. + 3, so stage 0 = {0-3, 8-11}, stage 1 = {4-7, 12-15}. Stage-major (SGLang, PP outermost):
stage 0 = 0-7, stage 1 = 8-15."""
from __future__ import annotations

import dataclasses

import pytest

from solver.estimate.compute import Work, factors_for
from solver.estimate.pipeline import send_tier
from solver.estimate.stage_ranks import global_rank, stage_device, stage_span
from solver.estimate.step import step_cost
from solver.launch.emit import LaunchInputs, emit_launch
from solver.launch.engine_flags import argv_problems
from solver.specs.framework import load_framework
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import load_model
from solver.specs.parallel import make_parallel_config
from solver.specs.precision import resolve_precision
from solver.specs.topology import group_levels

DECODE = Work("decode", 64, 2048, 64, 64)


@pytest.fixture(scope="module")
def h100():
    return load_hardware("h100_sxm")


def _tp(tp: int, pp: int, moe_tp: int | None = None) -> dict:
    knobs = {"attn_tp_size": tp, "dense_tp_size": tp, "embed_tp_size": tp, "lmhead_tp_size": tp, "pp_size": pp}
    return knobs if moe_tp is None else {**knobs, "moe_tp_size": moe_tp}


def _levels(hw, n: int) -> list[tuple[int, str]]:
    return [(lv.members, lv.tier_name) for lv in group_levels(hw, n)]


def _comm_tiers(model: str, hw, world: int, knobs: dict, framework: str) -> dict[str, str]:
    m = load_model(model)
    f = factors_for(hw, load_framework(framework).efficiency_for(hw))
    step = step_cost(m, hw, make_parallel_config(world, **knobs), resolve_precision(m, hw), f, DECODE)
    return {c.name: c.tier for c in step.comms}


def test_vllm_sglang_and_vllm_ascend_state_their_rank_order() -> None:
    """vLLM and vllm-ascend (its groups: vllm_ascend/distributed/parallel_state.py:46-52) lay DP outermost; SGLang
    PP outermost (PP groups ranks i, i + world / pp: srt/distributed/parallel_state.py:2951-2959); the default is
    stage-major."""
    assert load_framework("vllm").rank_order == "dp_major"
    assert load_framework("vllm-ascend").rank_order == "dp_major"
    assert load_framework("sglang").rank_order == "stage_major"
    assert load_framework("generic").rank_order == "stage_major"


def test_a_stages_ranks_follow_the_rank_order() -> None:
    """TP4 x PP2 x DP2, stage 1's local ranks 0 and 5: dp_major (0 x 2 + 1) x 4 + 0 = 4 and (1 x 2 + 1) x 4 + 1
    = 13; stage_major 1 x 8 + 0 = 8 and 1 x 8 + 5 = 13."""
    assert [global_rank("dp_major", 2, 8, 4, 1, r) for r in (0, 5)] == [4, 13]
    assert [global_rank("stage_major", 2, 8, 4, 1, r) for r in (0, 5)] == [8, 13]


def test_vllms_tp4_pp2_dp2_hand_off_stays_inside_a_node(h100) -> None:
    """Each rank hands off to its peer: under vLLM's order 0 -> 4, 3 -> 7, 8 -> 12, 11 -> 15, every pair in one
    node of 8: intra_node. Stage-major 0 -> 8 crosses to the second node."""
    assert send_tier(h100, 8, 2, "dp_major", 4) == "intra_node"
    assert send_tier(h100, 8, 2, "stage_major", 4) == "inter_node"
    knobs = _tp(4, 2)
    assert _comm_tiers("llama-3.1-70b", h100, 16, knobs, "vllm")["pp_send_recv"] == "intra_node"
    assert _comm_tiers("llama-3.1-70b", h100, 16, knobs, "sglang")["pp_send_recv"] == "inter_node"


def test_a_moe_groups_span_under_dp_major_is_the_ranks_it_holds(h100) -> None:
    """DeepSeek-V3 TP4 x PP2 x DP2 (EP8 = TP4 x DP2): stage 0's MoE group is ranks 0-3 and 8-11, 4 in each node.
    The stage's view of a node: 4 ranks (stage_span(8, 2, 4): 8 > 4 and 8 // (2 x 4) = 1 block of 4); of the
    scale-out tier 4 x (65,536 // 8) = 32,768. EP8 is 4 inside a node x 2 across; stage-major would keep it in
    one node (ranks 0-7)."""
    assert stage_span(8, 2, 4) == 4 and stage_span(65536, 2, 4) == 32768
    view = stage_device(h100, "dp_major", 2, 4, 8)
    assert view.ranks_per_node == 4 and view.tiers["inter_node"].span_ranks == 32768
    assert _levels(view, 8) == [(4, "intra_node"), (2, "inter_node")]
    assert _levels(h100, 8) == [(8, "intra_node")]
    knobs = _tp(4, 2, moe_tp=1)
    assert _comm_tiers("deepseek-v3", h100, 16, knobs, "vllm")["ep_dispatch"] == "inter_node"
    assert _comm_tiers("deepseek-v3", h100, 16, knobs, "sglang")["ep_dispatch"] == "intra_node"


def test_dp_engines_inside_a_node_put_several_of_a_stages_blocks_in_it(h100) -> None:
    """TP2 x PP2 x DP4 on 16: stage 0 is ranks {0,1, 4,5} in node 0 and {8,9, 12,13} in node 1. A node holds
    8 // (2 x 2) = 2 blocks of 2 of the stage: 4 ranks, so the stage's EP8 is 4 x 2 across nodes."""
    assert stage_span(8, 2, 2) == 4
    assert _levels(stage_device(h100, "dp_major", 2, 2, 8), 8) == [(4, "intra_node"), (2, "inter_node")]


def test_engines_whose_stage_fills_whole_nodes_see_the_device_as_it_is(h100) -> None:
    """TP8 x PP2 x DP2 on 32: each engine's stage is one node (stage_span(8, 2, 8) = 8), so the stage's EP16 is
    8 in a node x 2 across under either order."""
    view = stage_device(h100, "dp_major", 2, 8, 16)
    assert view.ranks_per_node == 8
    assert _levels(view, 16) == _levels(h100, 16) == [(8, "intra_node"), (2, "inter_node")]


def test_where_the_orders_agree_the_estimate_is_unchanged(h100) -> None:
    """Without DP (TP8 x PP2: one attention group a stage) or without PP (TP4 x DP2) DP-major and stage-major
    number every rank alike: the device view is the device itself and the step costs the same to the bit."""
    assert stage_device(h100, "dp_major", 2, 8, 8) is h100
    assert stage_device(h100, "dp_major", 1, 4, 8) is h100
    m = load_model("deepseek-v3")
    prec = resolve_precision(m, h100)
    f = factors_for(h100, load_framework("vllm").efficiency_for(h100))
    assert f.rank_order == "dp_major"
    stage_major = dataclasses.replace(f, dp_major_ranks=False)
    for world, knobs in ((16, _tp(8, 2, moe_tp=1)), (8, _tp(4, 1, moe_tp=1))):
        pc = make_parallel_config(world, **knobs)
        assert step_cost(m, h100, pc, prec, f, DECODE).time_s == step_cost(m, h100, pc, prec, stage_major,
                                                                              DECODE).time_s


def test_vllm_plans_moe_dp_under_pp_whose_stage_is_part_of_a_node(h100) -> None:
    """vLLM refuses PP only with elastic EP (config/parallel.py:1067-1074): DeepSeek-V3 TP4 x PP2 x DP2 on two
    H100 nodes launches (one command a node, each parsed by vLLM's own flags), priced on its real groups above."""
    launch = emit_launch(load_framework("vllm"), load_model("deepseek-v3"), h100,
                         make_parallel_config(16, **_tp(4, 2, moe_tp=1)), LaunchInputs(batch=64, max_model_len=4352))
    argvs = [n["argv"] for n in launch["nodes"]]
    assert len(argvs) == 2
    for argv in argvs:
        assert argv_problems("vllm", argv) == [], argv


def test_the_estimate_prices_the_ep_exchange_the_command_runs(h100) -> None:
    """vLLM's command adds the DeepEP kernels where EP exceeds a node's ranks (serving.ep_kernels, read on the
    device it launches on): EP8 on 8-GPU nodes does not, so TP4 x PP2 x DP2 runs the default all-gather /
    reduce-scatter exchange, priced over the two nodes the stage's ranks sit on, though the stage sees 4 ranks a
    node."""
    launch = emit_launch(load_framework("vllm"), load_model("deepseek-v3"), h100,
                         make_parallel_config(16, **_tp(4, 2, moe_tp=1)), LaunchInputs(batch=64, max_model_len=4352))
    assert all("--all2all-backend" not in n["argv"] for n in launch["nodes"])
    m = load_model("deepseek-v3")
    f = factors_for(h100, load_framework("vllm").efficiency_for(h100))
    step = step_cost(m, h100, make_parallel_config(16, **_tp(4, 2, moe_tp=1)), resolve_precision(m, h100), f, DECODE)
    assert {(c.name, c.primitive, c.tier) for c in step.comms if c.name.startswith("ep_")} == \
        {("ep_dispatch", "all_gather", "inter_node"), ("ep_combine", "reduce_scatter", "inter_node")}


def test_an_unknown_rank_order_is_one_line_naming_the_field(tmp_path) -> None:
    from solver.errors import InputError
    from solver.specs.framework import load_framework_file
    from solver.catalog import frameworks_dir

    text = (frameworks_dir() / "vllm.yaml").read_text().replace("rank_order: dp_major", "rank_order: dp_first")
    (tmp_path / "mine.yaml").write_text(text)
    with pytest.raises(InputError) as err:
        load_framework_file(tmp_path / "mine.yaml")
    assert "rank_order: Input should be 'stage_major' or 'dp_major', got 'dp_first'" in str(err.value)


def test_the_planners_tables_sum_to_the_estimate_under_dp_major_dp_x_pp() -> None:
    """The planner's per-group tables cost a stage on the same view of the device as the full estimate: every
    DP x PP configuration of Mixtral-8x7B on 16 H100 under vLLM (the first 12 the space holds) gets the same
    TTFT, TPOT and throughput from both."""
    import itertools

    from test_planner_exact import _configs, _instance

    from solver.estimate.serving import Workload, estimate
    from solver.plan.layout_memory import assumed_memory
    from solver.specs.parallel import ParallelConfig

    m, h, f, prec, fac, sc, t = _instance("mixtral-8x7b", "h100_sxm", "vllm", 16, "decode", 512)
    b = t.batches[len(t.batches) // 2]
    checked = 0
    for picks in itertools.islice(_configs(t, b), 4000):
        pc = ParallelConfig(world_size=16, **t.config(picks))
        if pc.pp_size == 1 or pc.attn_group_size == pc.stage_world:
            continue  # the orders agree
        if not assumed_memory(m, h, pc, prec, sc, b).feasible:
            continue
        e = estimate(m, h, pc, prec, fac, Workload.for_scenario(sc, b))
        fig = t.figures(b, picks)
        assert (fig.ttft_s, fig.tpot_s) == (pytest.approx(e.ttft_s, rel=1e-9), pytest.approx(e.tpot_s, rel=1e-9))
        assert fig.output_tokens_per_s == pytest.approx(e.output_tokens_per_s, rel=1e-9)
        checked += 1
        if checked == 12:
            break
    assert checked > 0


def test_vllm_ascend_runs_dp_engines_of_tp_x_pp_over_whole_nodes_as_vllm_0_23_infers_them() -> None:
    """DeepSeek-V3 TP16 x PP2 x DP2 on 4 Atlas A3 nodes of 16 dies: each engine is 32 ranks, two nodes
    (nnodes_within_dp = 4 // (2 / 1) = 2); every node gets --nnodes 4 and its DP rank node_rank x 16 // 32 =
    0, 0, 1, 1 (vLLM 0.23.0 engine/arg_utils.py:1844-1846), the worker nodes headless; each parses."""
    launch = emit_launch(load_framework("vllm-ascend"), load_model("deepseek-v3"), load_hardware("atlas_a3"),
                         make_parallel_config(64, **{**_tp(16, 2, moe_tp=1), "o_proj_tp_size": 16}),
                         LaunchInputs(batch=64, max_model_len=4352))
    argvs = [n["argv"] for n in launch["nodes"]]
    assert [a[a.index("--nnodes") + 1] for a in argvs] == ["4"] * 4
    assert [a[a.index("--data-parallel-start-rank") + 1] for a in argvs[1:]] == ["0", "1", "1"]
    assert ["--headless" in a for a in argvs] == [False, True, True, True]
    for argv in argvs:
        assert argv_problems("vllm-ascend", argv) == [], argv
