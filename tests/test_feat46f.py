"""vLLM data-parallel engines wider than one node, and DP under pipeline parallel: the shapes vLLM 0.34.0 starts
(PyPI sdist, read), the per-node commands that start them, and the shapes it still refuses.

An engine is TP x PCP x PP ranks (rank layout DP x PP x PCP x TP: distributed/parallel_state.py:2155-2170). Under
--nnodes vLLM infers a node's DP rank as node_rank x (ranks a node) // engine and, for an engine wider than a node,
one engine a node-group (data_parallel_size_local = max(ranks a node // engine, 1): engine/arg_utils.py:2433-2479);
--nnodes must then be divisible by DP / data_parallel_size_local (config/parallel.py:903-928, nnodes_within_dp).
The first node of an engine (node_rank_within_dp 0) starts it, the others run its workers (entrypoints/cli/serve.py:
218-232, v1/executor/multiproc_executor.py:186-230). Workload: 64 concurrent requests, model length 4352."""
from __future__ import annotations

import pytest

from solver.errors import InputError
from solver.launch.emit import LaunchInputs, emit_launch
from solver.launch.engine_flags import argv_problems
from solver.specs.framework import load_framework
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import load_model
from solver.specs.parallel import make_parallel_config
from tests.launch_nodes import pool_apart

INPUTS = LaunchInputs(batch=64, max_model_len=4352)
HEAD = "${HEAD_NODE_ADDR}"
# --max-num-seqs is one DP engine's share: 64 / 2 = 32; the token budget is the 8192 default (>= 70 GiB cards)
TAIL = ["--max-num-seqs", "32", "--max-num-batched-tokens", "8192", "--max-model-len", "4352",
        "--gpu-memory-utilization", "0.95"]


def _tp(tp: int, pp: int = 1, moe_tp: int | None = None) -> dict:
    knobs = {"attn_tp_size": tp, "dense_tp_size": tp, "embed_tp_size": tp, "lmhead_tp_size": tp, "pp_size": pp}
    return knobs if moe_tp is None else {**knobs, "moe_tp_size": moe_tp}


def _argvs(model: str, hardware: str, world: int, knobs: dict) -> list[list[str]]:
    launch = emit_launch(load_framework("vllm"), load_model(model), load_hardware(hardware),
                         make_parallel_config(world, **knobs), INPUTS)
    return pool_apart([n["argv"] for n in launch["nodes"]])


def _node(head: list[str], rank: int, start: int | None) -> list[str]:
    """One node's command of a DP deployment whose engines span nodes: the DP flags, then --nnodes."""
    dp = ["--data-parallel-size-local", "1"] + (["--data-parallel-start-rank", str(start)] if start is not None else [])
    dp += ["--data-parallel-address", HEAD, "--data-parallel-rpc-port", "13345"]
    nodes = ["--nnodes", "4", "--node-rank", str(rank), "--master-addr", HEAD] + (["--headless"] if rank else [])
    return head + dp + nodes + TAIL


def test_a_gb200_tp8_x_dp2_engine_spans_two_trays_and_each_tray_is_told_its_dp_rank() -> None:
    """Llama-3.1-70B TP8 x DP2 = 16 ranks on GB200 trays of 4: 4 nodes, each engine over 8 / 4 = 2 trays
    (nnodes_within_dp = 4 // (2 / 1) = 2). Node r's DP rank is r x 4 // 8: 0, 0, 1, 1; the head states none
    (a start rank there would switch vLLM to hybrid load balancing). Trays 1 and 3 run engine 0's and 1's
    workers, tray 2 starts engine 1, all --headless; one torch world at the head's --master-addr."""
    head = ["vllm", "serve", "${MODEL_PATH}", "--tensor-parallel-size", "8", "--data-parallel-size", "2"]
    assert _argvs("llama-3.1-70b", "gb200", 16, _tp(8)) == [
        _node(head, 0, None), _node(head, 1, 0), _node(head, 2, 1), _node(head, 3, 1)]


def test_an_h100_tp16_x_dp2_engine_spans_two_nodes_and_each_node_is_told_its_dp_rank() -> None:
    """Llama-3.1-70B TP16 x DP2 = 32 ranks on 4 H100 nodes of 8: each engine over 16 / 8 = 2 nodes; node r's DP
    rank r x 8 // 16 = 0, 0, 1, 1."""
    head = ["vllm", "serve", "${MODEL_PATH}", "--tensor-parallel-size", "16", "--data-parallel-size", "2"]
    assert _argvs("llama-3.1-70b", "h100_sxm", 32, _tp(16)) == [
        _node(head, 0, None), _node(head, 1, 0), _node(head, 2, 1), _node(head, 3, 1)]


def test_dp_under_pp_runs_each_dp_engine_as_a_pipeline_over_whole_nodes() -> None:
    """TP8 x PP2 x DP2 = 32 ranks on 4 H100 nodes: an engine is 8 x 2 = 16 ranks, 2 nodes (one stage each);
    node r's DP rank r x 8 // 16 = 0, 0, 1, 1."""
    head = ["vllm", "serve", "${MODEL_PATH}", "--tensor-parallel-size", "8", "--pipeline-parallel-size", "2",
            "--data-parallel-size", "2"]
    assert _argvs("llama-3.1-70b", "h100_sxm", 32, _tp(8, pp=2)) == [
        _node(head, 0, None), _node(head, 1, 0), _node(head, 2, 1), _node(head, 3, 1)]


def test_dp_under_pp_with_whole_engines_in_a_node_counts_engines_of_tp_x_pp_ranks() -> None:
    """TP4 x PP2 x DP2 = 16 ranks on 2 H100 nodes: an engine is 4 x 2 = 8 ranks, one a node
    (--data-parallel-size-local 8 // 8 = 1), node 1 from DP rank 1; no --nnodes (no engine is wider than a node)."""
    head = ["vllm", "serve", "${MODEL_PATH}", "--tensor-parallel-size", "4", "--pipeline-parallel-size", "2",
            "--data-parallel-size", "2", "--data-parallel-size-local", "1"]
    dp = ["--data-parallel-address", HEAD, "--data-parallel-rpc-port", "13345"]
    assert _argvs("llama-3.1-70b", "h100_sxm", 16, _tp(4, pp=2)) == [
        head + dp + TAIL, head + ["--data-parallel-start-rank", "1"] + dp + ["--headless"] + TAIL]


def test_an_engine_neither_inside_a_node_nor_over_whole_nodes_is_refused_with_vllms_reason() -> None:
    """TP4 x PP3 = an engine of 12, DP2 = 24 ranks on 3 nodes of 8: vLLM infers one engine a node-group and needs
    --nnodes 3 divisible by 2 / 1 (config/parallel.py:919-927 raises): refused, naming that."""
    with pytest.raises(InputError) as err:
        _argvs("llama-3.1-70b", "h100_sxm", 24, _tp(4, pp=3))
    assert "[C.dp_engine_inside_node_or_whole_nodes]" in str(err.value)
    assert "--nnodes must be divisible by --data-parallel-size / --data-parallel-size-local" in str(err.value)


@pytest.mark.parametrize("model, hardware, world, knobs", [
    ("llama-3.1-70b", "gb200", 16, _tp(8)), ("llama-3.1-70b", "h100_sxm", 32, _tp(16)),
    ("llama-3.1-70b", "h100_sxm", 32, _tp(8, pp=2)), ("llama-3.1-70b", "h100_sxm", 16, _tp(4, pp=2)),
    ("deepseek-v3", "h100_sxm", 32, _tp(8, pp=2, moe_tp=1))])
def test_every_node_command_parses_under_vllms_own_parser(model, hardware, world, knobs) -> None:
    for argv in _argvs(model, hardware, world, knobs):
        assert argv_problems("vllm", argv) == [], argv


def test_a_tp_group_over_two_nodes_is_priced_past_the_node() -> None:
    """The estimate's collectives split a group by tier (topology.group_levels): TP16 on H100 nodes of 8 is 8
    inside a node x 2 across nodes; TP8 on GB200 trays of 4 runs over the NVL72 fabric (scale_up, 900 GB/s, the
    same link as inside a tray, so the group is priced as one level of 8 on it)."""
    from solver.specs.topology import group_levels

    assert [(lv.members, lv.tier_name) for lv in group_levels(load_hardware("h100_sxm"), 16)] == \
        [(8, "intra_node"), (2, "inter_node")]
    assert [(lv.members, lv.tier_name) for lv in group_levels(load_hardware("gb200"), 8)] == \
        [(8, "scale_up")]
