"""World sizes that leave a node part-filled (12 ranks on 8-GPU nodes), as the engines launch them: ranks fill
node 0 first (0-7, then 8-11); vLLM's and SGLang's --nnodes launchers run equal ranks per node, so they are
refused there; one MPI world (TensorRT-LLM) takes the placement as host slots; a TP group that fits a node but
not its boundaries is never planned and `check` warns of it. One test per rule."""
from __future__ import annotations

import json

import pytest
import yaml
from click.testing import CliRunner

from solver.cli.main import main
from solver.space.domains import knob_rule, node_counts, straddling_group
from solver.specs.framework import load_framework
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import load_model
from solver.specs.scenario import Scenario

TP4_PP3 = {"attn_tp_size": 4, "dense_tp_size": 4, "embed_tp_size": 4, "lmhead_tp_size": 4, "pp_size": 3}


def _deployment(tmp_path, pc: dict, model="qwen3-32b", hardware="h100_sxm", world=12, **extra) -> str:
    path = tmp_path / "dep.yaml"
    path.write_text(yaml.safe_dump({"model": model, "hardware": hardware, "world_size": world,
                                    "parallel_config": pc, "workload": {"isl": 4096, "osl": 256, "concurrency": 32},
                                    **extra}))
    return str(path)


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_an_equal_ranks_per_node_launcher_refuses_a_part_filled_node_under_pp(tmp_path, engine) -> None:
    """C.nodes_whole read `world` (one pipeline stage, 4 ranks): TP4 x PP3 on 12 H100s launched with --nnodes 2,
    which vLLM runs as 6 + 6 ranks (the second TP group across both nodes) and SGLang as stages 0 and 1 only."""
    r = CliRunner().invoke(main, ["launch", _deployment(tmp_path, TP4_PP3), "--engine", engine])
    assert r.exit_code == 2, r.stdout
    assert "[C.nodes_whole]" in r.stderr and "same number of ranks on every node" in r.stderr


def test_vllm_ascend_refuses_a_part_filled_node_under_pp(tmp_path) -> None:
    """The same launcher on Atlas A3 (16 dies a node): 24 ranks as TP8 x PP3 would run 12 + 12."""
    pc = {"attn_tp_size": 8, "dense_tp_size": 8, "embed_tp_size": 8, "lmhead_tp_size": 8, "pp_size": 3}
    r = CliRunner().invoke(main, ["launch", _deployment(tmp_path, pc, hardware="atlas_a3", world=24),
                                  "--engine", "vllm-ascend"])
    assert r.exit_code == 2 and "[C.nodes_whole]" in r.stderr, r.stdout


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_the_refusal_of_a_part_filled_node_names_the_nearest_whole_node_size(engine) -> None:
    """Before, solve recommended TP4 x PP3 on 12 H100s; the remedy screened 24, 6, 36 ... and missed 8 and 16."""
    r = CliRunner().invoke(main, ["solve", "qwen3-32b", "--hardware", "h100_sxm", "--cards", "12",
                                  "--framework", engine])
    assert r.exit_code == 1, r.stdout
    assert "C.nodes_whole" in r.stderr and "what would fit: 16 cards fit" in r.stderr


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
    assert "# placement: node 0 ranks 0-7 (8 GPUs), node 1 ranks 8-11 (4 GPUs)" in shell


def test_a_multi_node_launch_says_the_ranks_each_node_runs(tmp_path) -> None:
    pc = {"attn_tp_size": 1, "moe_tp_size": 1, "embed_tp_size": 1, "lmhead_tp_size": 1}
    dep = _deployment(tmp_path, pc, model="deepseek-v3", hardware="h200_sxm", world=16)
    out = CliRunner().invoke(main, ["launch", dep, "--engine", "vllm"]).stdout
    assert "# node 0 (head): ranks 0-7 (8 GPUs)" in out and "# node 1: ranks 8-15 (8 GPUs)" in out


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
