"""World sizes that leave a node part-filled (12 ranks on 8-GPU nodes), as the engines launch them: one MPI world
(TensorRT-LLM, the generic profile) fills node 0 first (0-7, then 8-11) and takes the placement as host slots;
vLLM's and SGLang's --nnodes launchers run equal ranks on every node, so the ranks spread evenly over the fewest
nodes that hold them (12: 2 x 6) and every group is planned, priced and launched inside that share, or the size
is refused naming the sizes that have one (11: 10 or 12); a TP group that fits a node but not its boundaries is
never planned and `check` warns of it. One test per rule."""
from __future__ import annotations

import json

import pytest
import yaml
from click.testing import CliRunner

from solver.cli.main import main
from solver.space.domains import knob_rule, node_counts, straddling_group
from solver.space.placement import as_launched, device_of, equal_share, equal_split_sizes
from solver.specs.framework import load_framework
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import load_model
from solver.specs.rule_env import model_env
from solver.specs.scenario import Scenario
from solver.specs.topology import group_levels

TP4_PP3 = {"attn_tp_size": 4, "dense_tp_size": 4, "embed_tp_size": 4, "lmhead_tp_size": 4, "pp_size": 3}
TP2_PP6 = {"attn_tp_size": 2, "dense_tp_size": 2, "embed_tp_size": 2, "lmhead_tp_size": 2, "pp_size": 6}
# a dense model whose 48 heads and 48 KV heads TP3 and TP6 divide (vLLM: TP divides the KV heads or is a multiple)
MHA48 = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 6144,
         "intermediate_size": 16384, "num_attention_heads": 48, "num_key_value_heads": 48, "num_hidden_layers": 40,
         "vocab_size": 32000, "max_position_embeddings": 8192, "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
         "torch_dtype": "bfloat16", "tie_word_embeddings": False, "hidden_act": "silu"}


def _deployment(tmp_path, pc: dict, model="qwen3-32b", hardware="h100_sxm", world=12, **extra) -> str:
    path = tmp_path / "dep.yaml"
    path.write_text(yaml.safe_dump({"model": model, "hardware": hardware, "world_size": world,
                                    "parallel_config": pc, "workload": {"isl": 4096, "osl": 256, "concurrency": 32},
                                    **extra}))
    return str(path)


def test_an_equal_ranks_per_node_launch_spreads_the_ranks_evenly_over_the_fewest_nodes() -> None:
    """12 ranks on 8-GPU nodes: 2 nodes x 6 (vLLM's --nnodes runs world_size / nnodes a node); 24: 3 x 8; 11 and
    20 have no equal share over their 2 and 3 nodes."""
    assert (equal_share(12, 8), equal_share(24, 8), equal_share(10, 8)) == (6, 8, 5)
    assert equal_share(11, 8) is None and equal_share(20, 8) is None
    assert equal_split_sizes(11, 8) == (10, 12) and equal_split_sizes(20, 8) == (18, 21)


def test_the_planner_reads_the_share_as_the_node() -> None:
    """as_launched: the device with 6 ranks a node (its intra-node tier and fast domain in those 6), the same
    object each time (the estimate's caches key on identity), placed again from its file for another size;
    whole nodes, a count with no share and an engine that fills nodes in order keep the file's device."""
    h100, vllm = load_hardware("h100_sxm"), load_framework("vllm")
    placed = as_launched(h100, vllm, 12)
    assert placed.ranks_per_node == 6 and placed.scale_up_domain == 6
    assert placed.tiers["intra_node"].span_ranks == 6 and placed is as_launched(h100, vllm, 12)
    assert device_of(placed) is h100 and as_launched(placed, vllm, 16) is h100
    assert as_launched(placed, vllm, 12) is placed
    assert as_launched(h100, vllm, 24) is h100 and as_launched(h100, vllm, 11) is h100
    assert as_launched(h100, load_framework("trtllm"), 12) is h100


def test_a_shared_fast_domain_keeps_its_nodes_at_the_share() -> None:
    """Atlas A3 (16 dies a node, one UB domain of 48 nodes): 24 dies under vllm-ascend run 12 a node, and the UB
    domain is 48 nodes of 12."""
    placed = as_launched(load_hardware("atlas_a3"), load_framework("vllm-ascend"), 24)
    assert placed.ranks_per_node == 12 and placed.scale_up_domain == 576
    assert placed.tiers["scale_up"].span_ranks == 576


def test_under_vllm_12_cards_on_8_gpu_nodes_plan_tp2_tp3_tp6_inside_the_share_and_refuse_tp4(tmp_path) -> None:
    """TP2, TP3 and TP6 tile a node's 6 ranks; TP4's second group (ranks 4-7) spans both nodes
    (B.tp_groups_tile_nodes), TP12 leaves the node (B.tp_within_node)."""
    model, vllm = load_model("kimi-k3"), load_framework("vllm")  # 96 MLA heads
    hw = as_launched(load_hardware("h100_sxm"), vllm, 12)
    rules = {tp: knob_rule(model, hw, vllm, 12, Scenario(), False, "attn_tp_size", tp) for tp in (2, 3, 4, 6, 12)}
    assert rules == {2: None, 3: None, 4: "B.tp_groups_tile_nodes", 6: None, 12: "B.tp_within_node"}
    config = tmp_path / "config.json"
    config.write_text(json.dumps(MHA48))
    r = CliRunner().invoke(main, ["solve", str(config), "--hardware", "h100_sxm", "--cards", "12", "--framework",
                                  "vllm", "--format", "json"])
    assert r.exit_code == 0, r.stderr
    out = json.loads(r.stdout)
    assert {p["parallel_config"]["attn_tp_size"] for p in out["pareto_front"]} >= {3, 6}
    assert "attn_tp_size=4" in out["pruned_values"]["B.tp_groups_tile_nodes"]
    assert any("placement: 12 ranks as 2 nodes x 6" in n for n in out["input_notes"])


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_twelve_cards_on_8_gpu_nodes_are_planned_for_an_equal_ranks_per_node_engine(engine) -> None:
    """Before, qwen3-32b on 12 H100s was refused for vLLM and SGLang ("16 cards fit"): 2 x 6 holds TP2 layouts."""
    r = CliRunner().invoke(main, ["solve", "qwen3-32b", "--hardware", "h100_sxm", "--cards", "12", "--framework",
                                  engine, "--format", "json"])
    assert r.exit_code == 0, r.stderr
    assert all(c["parallel_config"]["attn_tp_size"] in (1, 2) for c in json.loads(r.stdout)["candidates"])


def test_24_cards_on_8_gpu_nodes_run_as_3_whole_nodes(tmp_path) -> None:
    pc = {"attn_tp_size": 8, "dense_tp_size": 8, "embed_tp_size": 8, "lmhead_tp_size": 8, "pp_size": 3}
    r = CliRunner().invoke(main, ["launch", _deployment(tmp_path, pc, world=24), "--engine", "vllm", "--format",
                                  "json"])
    assert r.exit_code == 0, r.stderr
    launch = json.loads(r.stdout)
    assert [p["ranks"] for p in launch["placement"]] == [[0, 7], [8, 15], [16, 23]]
    argv = launch["nodes"][0]["argv"]
    assert argv[argv.index("--nnodes") + 1] == "3" and not any("placement" in n for n in launch.get("notes", ()))


def test_the_collectives_are_priced_by_the_placement() -> None:
    """Under 2 x 6 a group of 6 stays on the node's link, and one of 12 is 6 on it times 2 across the scale-out."""
    hw = as_launched(load_hardware("h100_sxm"), load_framework("vllm"), 12)
    assert [(lv.members, lv.tier_name) for lv in group_levels(hw, 6)] == [(6, "intra_node")]
    assert [(lv.members, lv.tier_name) for lv in group_levels(hw, 12)] == [(6, "intra_node"), (2, "inter_node")]


def test_the_launch_runs_the_share_on_every_node(tmp_path) -> None:
    """vLLM's --nnodes 2 takes 6 ranks a node itself (world_size / nnodes: no per-node flag in engines.md for its
    TP / PP launch); a DP layout's --data-parallel-size-local is the share over the engine's TP (3 of TP2)."""
    dep = _deployment(tmp_path, TP2_PP6)
    launch = json.loads(CliRunner().invoke(main, ["launch", dep, "--engine", "vllm", "--format", "json"]).stdout)
    argv = launch["nodes"][1]["argv"]
    assert argv[argv.index("--nnodes") + 1] == "2" and argv[argv.index("--node-rank") + 1] == "1"
    assert launch["placement"] == [{"node_rank": 0, "ranks": [0, 5], "gpus": 6},
                                   {"node_rank": 1, "ranks": [6, 11], "gpus": 6}]
    shell = CliRunner().invoke(main, ["launch", dep, "--engine", "vllm"]).stdout
    assert "# node 1: ranks 6-11 (6 devices)" in shell and "on its first 6 of 8 devices" in shell
    dp = {"attn_tp_size": 2, "dense_tp_size": 2, "embed_tp_size": 2, "lmhead_tp_size": 2}
    launch = json.loads(CliRunner().invoke(main, ["launch", _deployment(tmp_path, dp), "--engine", "vllm",
                                                  "--format", "json"]).stdout)
    argv = launch["nodes"][1]["argv"]
    assert argv[argv.index("--data-parallel-size-local") + 1] == "3"
    assert argv[argv.index("--data-parallel-start-rank") + 1] == "3"


def test_check_names_the_placement(tmp_path) -> None:
    r = CliRunner().invoke(main, ["check", _deployment(tmp_path, TP2_PP6, framework="vllm")])
    assert r.exit_code == 0, r.stdout
    assert "placement: 12 ranks as 2 nodes x 6" in " ".join(r.stdout.split())


def test_vllm_runs_a_tp_group_across_its_share_with_a_warning(tmp_path) -> None:
    """TP4 x PP3 on 2 x 6: vLLM launches it (rank r on node r // 6), its second TP group across both nodes, which
    the launch notes and `check` warns of (B.tp_groups_tile_nodes); the planner never picks it."""
    r = CliRunner().invoke(main, ["launch", _deployment(tmp_path, TP4_PP3), "--engine", "vllm"])
    assert r.exit_code == 0, r.stderr
    assert "the group of ranks 4-7 spans two nodes of 6 ranks" in r.stdout


def test_sglang_runs_a_stage_only_where_it_tiles_a_node_or_is_whole_nodes(tmp_path) -> None:
    """SGLang's --nnodes runs pp_size // nnodes stages a node: TP4 x PP3 on 2 x 6 would start stages 0 and 1
    only, and PP2 of 12-rank stages on 3 nodes of 8 would ask 12 ranks of each node."""
    r = CliRunner().invoke(main, ["launch", _deployment(tmp_path, TP4_PP3), "--engine", "sglang"])
    assert r.exit_code == 2 and "[C.nodes_whole]" in r.stderr, r.stdout
    sglang = load_framework("sglang")
    env = model_env({"attn_tp_size": 12, "dense_tp_size": 12, "embed_tp_size": 12, "lmhead_tp_size": 12,
                     "pp_size": 2}, load_model("qwen3-32b"), 8, world=24)
    assert "C.nodes_whole" in {rule.id for rule in sglang.violated(env, severity="error")}


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_a_count_with_no_equal_share_is_refused_naming_the_sizes_that_have_one(engine) -> None:
    """11 cards on 8-GPU nodes: 2 nodes cannot run 5.5 each (vLLM asserts world_size % nnodes == 0); 10 (2 x 5)
    and 12 (2 x 6) can, and the planner confirms 12."""
    r = CliRunner().invoke(main, ["solve", "qwen3-32b", "--hardware", "h100_sxm", "--cards", "11",
                                  "--framework", engine])
    assert r.exit_code == 1, r.stdout
    err = " ".join(r.stderr.split())
    assert "C.nodes_whole" in err and "10 (2 nodes x 5) or 12 (2 nodes x 6) ranks spread evenly" in err
    assert "12 cards fit" in err


def test_vllm_ascend_refuses_a_die_count_with_no_equal_share(tmp_path) -> None:
    """The same launcher on Atlas A3 (16 dies a node): 23 dies have no share over 2 nodes."""
    pc = {"attn_tp_size": 1, "dense_tp_size": 1, "embed_tp_size": 1, "lmhead_tp_size": 1}
    r = CliRunner().invoke(main, ["launch", _deployment(tmp_path, pc, hardware="atlas_a3", world=23),
                                  "--engine", "vllm-ascend"])
    assert r.exit_code == 2 and "[C.nodes_whole]" in r.stderr, r.stdout


def test_one_mpi_world_places_a_part_filled_node_as_its_host_slots(tmp_path) -> None:
    """TensorRT-LLM runs one MPI world: -H gives each host the ranks the placement puts there (8 and 4), and the
    launch says where the ranks go."""
    r = CliRunner().invoke(main, ["launch", _deployment(tmp_path, TP4_PP3), "--engine", "trtllm", "--format", "json"])
    assert r.exit_code == 0, r.stderr
    launch = json.loads(r.stdout)
    argv = launch["nodes"][0]["argv"]
    assert argv[argv.index("-n") + 1] == "12" and argv[argv.index("-H") + 1] == "${HEAD_NODE_ADDR}:8,${NODE1_ADDR}:4"
    assert launch["placement"] == [{"node_rank": 0, "ranks": [0, 7], "gpus": 8},
                                   {"node_rank": 1, "ranks": [8, 11], "gpus": 4}]
    shell = CliRunner().invoke(main, ["launch", _deployment(tmp_path, TP4_PP3), "--engine", "trtllm"]).stdout
    assert "# placement: node 0 ranks 0-7 (8 devices), node 1 ranks 8-11 (4 devices)" in shell


def test_a_multi_node_launch_says_the_ranks_each_node_runs(tmp_path) -> None:
    pc = {"attn_tp_size": 1, "moe_tp_size": 1, "embed_tp_size": 1, "lmhead_tp_size": 1}
    dep = _deployment(tmp_path, pc, model="deepseek-v3", hardware="h200_sxm", world=16)
    out = CliRunner().invoke(main, ["launch", dep, "--engine", "vllm"]).stdout
    assert "# node 0 (head): ranks 0-7 (8 devices)" in out and "# node 1: ranks 8-15 (8 devices)" in out


def test_ranks_fill_node_zero_first() -> None:
    assert node_counts(12, 8) == [8, 4] and node_counts(16, 8) == [8, 8] and node_counts(4, 8) == [4]


def test_a_group_that_does_not_divide_the_node_straddles_a_boundary_past_one_node() -> None:
    h100 = load_hardware("h100_sxm")
    assert straddling_group(12, 6, h100) == (6, 11)  # node 0 holds 0-7
    assert straddling_group(24, 3, h100) == (6, 8)
    assert straddling_group(12, 4, h100) is None  # 0-3, 4-7, 8-11
    assert straddling_group(6, 6, h100) is None  # one node: nothing to straddle
    assert straddling_group(16, 16, h100) is None  # wider than the node: cross_node_tp's (B.tp_within_node)


def test_the_planner_never_places_a_tp_group_across_a_node_boundary() -> None:
    """B.tp_groups_tile_nodes: TP6 on 12 H100s fits a node by size (B.tp_within_node passes) but its second group
    is ranks 6-11, across nodes 0 and 1; the space prunes it, with or without --allow-cross-node (the estimate
    would price its all-reduce inside the node)."""
    model, hw, fw = load_model("devstral-2-123b"), load_hardware("h100_sxm"), load_framework("generic")
    for cross in (False, True):
        assert knob_rule(model, hw, fw, 12, Scenario(), cross, "attn_tp_size", 6) == "B.tp_groups_tile_nodes"
    assert knob_rule(model, hw, fw, 12, Scenario(), False, "attn_tp_size", 4) is None
    assert knob_rule(model, hw, fw, 6, Scenario(), False, "attn_tp_size", 6) is None


def test_check_warns_where_a_tp_group_straddles_nodes(tmp_path) -> None:
    """One line per group size (TP6 everywhere is one problem); `launch` notes it beside the command."""
    pc = {"attn_tp_size": 6, "moe_tp_size": 6, "dense_tp_size": 6, "embed_tp_size": 6, "lmhead_tp_size": 6}
    dep = _deployment(tmp_path, pc, model="kimi-k3", framework="generic")  # 96 heads: TP6 divides them
    r = CliRunner().invoke(main, ["check", dep])
    line = ("attn_tp_size, dense_tp_size, moe_tp_size, embed_tp_size, lmhead_tp_size 6: the group of ranks 6-11 "
            "spans two nodes of 8 ranks")
    assert f"B (hardware, warning): {line}" in " ".join(r.stdout.split())
    assert r.stdout.count("B.tp_groups_tile_nodes") == 1
    assert line in CliRunner().invoke(main, ["launch", dep]).stdout


def test_explain_names_a_broken_rule_once() -> None:
    """all-TP4 on 2 x 6 breaks B.tp_groups_tile_nodes on each of its four TP knobs: one name, not four."""
    r = CliRunner().invoke(main, ["solve", "qwen3-32b", "--hardware", "h100_sxm", "--cards", "12", "--framework",
                                  "vllm", "--explain"])
    line = next(x for x in r.stdout.splitlines() if x.startswith("why not all-TP4"))
    assert line.count("B.tp_groups_tile_nodes") == 1
