"""Launch commands for deployments past one node, as an engineer pastes them on every node: one command per node
role, each node's rank, every rank started once, the sizes the engine computes per node agreeing with the plan's
placement, and notes that promise nothing the command does not do.

The workload of every case: 64 concurrent requests, a 4352-token model length (4096 in + 256 out). Sources are
the unpacked engine wheels: vLLM 0.34.0 (PyPI sdist) and SGLang 0.5.23 (PyPI wheel)."""
from __future__ import annotations

from types import SimpleNamespace

from solver.launch.emit import LaunchInputs, emit_launch
from solver.specs.framework import load_framework
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import load_model
from solver.specs.parallel import ParallelConfig, make_parallel_config
from tests.launch_nodes import pool_apart

INPUTS = LaunchInputs(batch=64, max_model_len=4352)


def _tp(tp: int, pp: int = 1, moe_tp: int | None = None) -> dict:
    knobs = {"attn_tp_size": tp, "dense_tp_size": tp, "embed_tp_size": tp, "lmhead_tp_size": tp, "pp_size": pp}
    return knobs if moe_tp is None else {**knobs, "moe_tp_size": moe_tp}


def _launch(engine: str, model: str, hardware: str, world: int, knobs: dict) -> dict:
    return emit_launch(load_framework(engine), load_model(model), load_hardware(hardware),
                       make_parallel_config(world, **knobs), INPUTS)


def _argvs(launch: dict) -> list[list[str]]:
    return pool_apart([n["argv"] for n in launch["nodes"]])


def test_vllm_data_parallel_across_nodes_serves_on_the_head_and_runs_headless_engines_from_each_start_rank() -> None:
    """DeepSeek-V3, attention DP16 + EP16 on 2 H200 nodes of 8 (vLLM docs/serving/data_parallel_deployment.md
    :40-49). Each node runs gpus_per_node / TP = 8 / 1 = 8 DP engines (--data-parallel-size-local); node 1's
    first is DP rank 1 x 8 = 8 (--data-parallel-start-rank; engine/arg_utils.py:2513-2540 takes it as the node's
    data_parallel_rank) and it runs --headless (entrypoints/cli/serve.py:69-76: no API server; :235-256 starts
    the 8 engines and handshakes with the head's --data-parallel-address:--data-parallel-rpc-port). The head takes
    no start rank: the API servers run there only. --max-num-seqs is one DP engine's share, 64 / 16 = 4. The
    routed experts span 16 ranks, past a node's 8: the DeepEP low-latency exchange (vllm.yaml ep_kernels), whose
    batched-DP step budget is the engine's own 256 (ep_kernels.token_budget)."""
    argv = _argvs(_launch("vllm", "deepseek-v3", "h200_sxm", 16, _tp(1, moe_tp=1)))
    common = ["vllm", "serve", "${MODEL_PATH}", "--trust-remote-code", "--data-parallel-size", "16",
              "--enable-expert-parallel", "--all2all-backend", "deepep_low_latency", "--data-parallel-size-local", "8"]
    dp = ["--data-parallel-address", "${HEAD_NODE_ADDR}", "--data-parallel-rpc-port", "13345"]
    tail = ["--max-num-seqs", "4", "--max-num-batched-tokens", "256", "--max-model-len", "4352",
            "--gpu-memory-utilization", "0.95"]
    assert argv == [common + dp + tail,
                    common + ["--data-parallel-start-rank", "8"] + dp + ["--headless"] + tail]


def test_vllm_an_engine_wider_than_a_node_runs_nnodes_with_the_other_nodes_headless() -> None:
    """Llama-3.1-405B, TP8 x PP2 = 16 ranks on 2 H100 nodes: one engine over both (vLLM docs/serving/
    parallelism_scaling.md:140-160). --nnodes 2 must divide TP x PP = 16 (engine/arg_utils.py:2433-2447), each
    node runs 16 / 2 = 8 ranks, node r's first rank r x 8 (v1/executor/multiproc_executor.py); node 1 runs
    --headless, where node_rank_within_dp > 0 starts the headless multiproc executor that joins the head's
    --master-addr (entrypoints/cli/serve.py:218-232). No DP flags: one engine."""
    argv = _argvs(_launch("vllm", "llama-3.1-405b", "h100_sxm", 16, _tp(8, pp=2)))
    head = ["vllm", "serve", "${MODEL_PATH}", "--tensor-parallel-size", "8", "--pipeline-parallel-size", "2",
            "--nnodes", "2"]
    tail = ["--max-num-seqs", "64", "--max-num-batched-tokens", "8192", "--max-model-len", "4352",
            "--gpu-memory-utilization", "0.95"]
    assert argv == [head + ["--node-rank", "0", "--master-addr", "${HEAD_NODE_ADDR}"] + tail,
                    head + ["--node-rank", "1", "--master-addr", "${HEAD_NODE_ADDR}", "--headless"] + tail]


def test_a_dense_model_across_nodes_names_no_moe_exchange() -> None:
    """Llama-3.1-70B (no routed experts), TP2 x DP6 = 12 ranks, placed 2 nodes x 6 on 8-GPU H100 nodes. Its
    moe_ep_size reads as the world (12 > 6 ranks a node), which made the DeepEP condition hold and the command
    carry `--all2all-backend deepep_low_latency`; vLLM builds no EP group for a dense model (distributed/
    parallel_state.py:2335-2336), so the flag named an exchange nothing runs. Now absent. Per node: 6 / 2 = 3
    DP engines, node 1 from DP rank 3; --max-num-seqs ceil(64 / 6) = 11."""
    argv = _argvs(_launch("vllm", "llama-3.1-70b", "h100_sxm", 12, _tp(2)))
    common = ["vllm", "serve", "${MODEL_PATH}", "--tensor-parallel-size", "2", "--data-parallel-size", "6",
              "--data-parallel-size-local", "3"]
    dp = ["--data-parallel-address", "${HEAD_NODE_ADDR}", "--data-parallel-rpc-port", "13345"]
    tail = ["--max-num-seqs", "11", "--max-num-batched-tokens", "8192", "--max-model-len", "4352",
            "--gpu-memory-utilization", "0.95"]
    assert argv == [common + dp + tail, common + ["--data-parallel-start-rank", "3"] + dp + ["--headless"] + tail]


def test_a_gb200_tray_is_a_node_of_four() -> None:
    """GB200 NVL72: a node is one 4-GPU tray (the NVLink domain is 72). DeepSeek-V3 attention DP16 + EP16 runs 4
    commands, 16 / 4 = 4 DP engines each, start ranks 0 (head, unstated), 4, 8, 12; each node its own rank's
    4 devices in the placement."""
    launch = _launch("vllm", "deepseek-v3", "gb200", 16, _tp(1, moe_tp=1))
    argv = _argvs(launch)
    assert [a[a.index("--data-parallel-size-local") + 1] for a in argv] == ["4"] * 4
    assert [a[a.index("--data-parallel-start-rank") + 1] if "--data-parallel-start-rank" in a else None
            for a in argv] == [None, "4", "8", "12"]
    assert ["--headless" in a for a in argv] == [False, True, True, True]
    assert [(p["ranks"], p["devices"]) for p in launch["placement"]] == [([0, 3], 4), ([4, 7], 4), ([8, 11], 4),
                                                                        ([12, 15], 4)]


def _sglang_node_ranks(nnodes: int, node_rank: int, tp: int, pp: int) -> set[tuple[int, int]]:
    """The (pp_rank, tp_rank) pairs SGLang starts on a node: srt/entrypoints/engine.py:2061-2075
    _calculate_rank_ranges, written out."""
    pp_per_node = max(pp // nnodes, 1)
    nodes_per_pp = max(nnodes // pp, 1)
    tp_per_node = tp // nodes_per_pp
    pps = range(pp_per_node * (node_rank // nodes_per_pp), pp_per_node * (node_rank // nodes_per_pp + 1))
    tps = range(tp_per_node * (node_rank % nodes_per_pp), tp_per_node * (node_rank % nodes_per_pp + 1))
    return {(p, t) for p in pps for t in tps}


def test_sglang_nodes_start_every_rank_once_and_as_many_as_the_placement_gives_them() -> None:
    """SGLang computes each node's ranks from --tp-size, --pp-size, --nnodes and --node-rank alone. On 4-GPU GB200
    trays: TP8 x PP2 (16 ranks, 4 nodes) puts stage r // 2 on node r with TP ranks 4 x (r % 2) to +3; TP4 x PP3
    (12 ranks, 3 nodes) one stage a node; DeepSeek-V3 attention DP over --tp-size 16 (4 nodes) TP ranks 4r to
    4r + 3. On 8-GPU H100 nodes TP4 x PP4 (16, 2 nodes) two stages a node. Every (stage, TP rank) pair is
    started on exactly one node, and each node's count is its placement's devices."""
    cases = [("llama-3.1-405b", "gb200", 16, _tp(8, pp=2)), ("llama-3.1-70b", "gb200", 12, _tp(4, pp=3)),
             ("deepseek-v3", "gb200", 16, _tp(1, moe_tp=1)), ("llama-3.1-70b", "h100_sxm", 16, _tp(4, pp=4))]
    for model, hw, world, knobs in cases:
        launch = _launch("sglang", model, hw, world, knobs)
        argv = _argvs(launch)
        flag = lambda a, f, d=None: int(a[a.index(f) + 1]) if f in a else d  # noqa: E731
        tp, pp, nnodes = flag(argv[0], "--tp-size"), flag(argv[0], "--pp-size", 1), flag(argv[0], "--nnodes")
        assert nnodes == len(argv) == len(launch["placement"]), (model, hw)
        assert [flag(a, "--node-rank") for a in argv] == list(range(nnodes))
        started = [_sglang_node_ranks(nnodes, r, tp, pp) for r in range(nnodes)]
        assert [len(s) for s in started] == [p["devices"] for p in launch["placement"]], (model, hw)
        assert sorted(x for s in started for x in s) == [(p, t) for p in range(pp) for t in range(tp)], (model, hw)


def test_trtllm_runs_one_mpi_world_giving_each_host_the_ranks_the_placement_puts_there() -> None:
    """Llama-3.1-70B TP4 x PP3 = 12 ranks under TensorRT-LLM: one command on the head, mpirun over both hosts
    with 12 processes, slots 8 on the head and 12 - 8 = 4 on node 1 (nodes fill in rank order), every rank
    wrapped by trtllm-llmapi-launch (engines.md, multi-node row: one MPI world)."""
    launch = _launch("trtllm", "llama-3.1-70b", "h100_sxm", 12, _tp(4, pp=3))
    (argv,) = _argvs(launch)
    assert argv[:8] == ["mpirun", "-n", "12", "-H", "${HEAD_NODE_ADDR}:8,${NODE1_ADDR}:4", "trtllm-llmapi-launch",
                        "trtllm-serve", "${MODEL_PATH}"]
    assert [p["devices"] for p in launch["placement"]] == [8, 4]


def test_an_equal_share_placement_note_promises_no_tp_group_the_command_splits() -> None:
    """Llama-3.1-70B TP4 x PP3 = 12 ranks under vLLM: 2 nodes x 6 (--nnodes runs 12 / 2 a node). The stage of
    ranks 4-7 has 4-5 on node 0 and 6-7 on node 1: its TP group crosses nodes, which vLLM runs (and `check`
    warns of). The placement note used to say "TP groups stay inside a node's 6 ranks"; it now says what holds:
    a TP group or stage that does not tile 6 ranks crosses a node boundary."""
    launch = _launch("vllm", "llama-3.1-70b", "h100_sxm", 12, _tp(4, pp=3))
    (note,) = [n for n in launch["notes"] if n.startswith("placement:")]
    assert note.endswith("a TP group or pipeline stage that does not tile 6 ranks crosses a node boundary")
    assert "stay inside" not in note


def test_a_one_node_pool_worker_that_reads_the_head_address_is_told_to_use_its_own() -> None:
    """A vLLM decode pool of 8-rank workers on H200 (one node each): each worker's command sets
    VLLM_NIXL_SIDE_CHANNEL_HOST=${HEAD_NODE_ADDR}, the address its NIXL handshake listener binds (vLLM envs.py:241;
    kv_connector/v1/nixl/base_scheduler.py:76-80). Workers of a pool run on different nodes, so the pool's
    header says each takes its own ${HEAD_NODE_ADDR}, as it did only for workers spanning nodes."""
    from solver.report.disagg_view import launch_text

    model, hw, fw = load_model("deepseek-v3"), load_hardware("h200_sxm"), load_framework("vllm")
    pc = ParallelConfig(world_size=8, attn_tp_size=1, dense_tp_size=1, moe_tp_size=1, embed_tp_size=1,
                        lmhead_tp_size=1)
    launch = emit_launch(fw, model, hw, pc, INPUTS, role="decode")
    assert launch["nodes"][0]["env"] == {"VLLM_NIXL_SIDE_CHANNEL_HOST": "${HEAD_NODE_ADDR}"}
    pool = SimpleNamespace(phase="decode", workers=2, launch=launch,
                           candidate=SimpleNamespace(pattern="Attn DP + MoE EP", planned=SimpleNamespace(config=pc)))
    (header,) = [line for line in launch_text(SimpleNamespace(pools=[pool])).splitlines() if " pool: " in line]
    assert header.endswith("each on its own cards and its own ${HEAD_NODE_ADDR}")


def test_one_mpi_command_over_several_nodes_is_run_once_on_the_head() -> None:
    """TensorRT-LLM's launch is one command for every node (`per_node: false`). Pasted on each of the 2 nodes, as
    the per-node engines' commands are, it would start a second 12-rank MPI world; its -H list names both hosts,
    so the launch says to run it once, on the head."""
    launch = _launch("trtllm", "llama-3.1-70b", "h100_sxm", 12, _tp(4, pp=3))
    assert ("run this command once, on the head node (${HEAD_NODE_ADDR}), not on each node: mpirun starts the "
            "ranks on all 2 hosts it lists, which must reach each other as its launcher needs") in launch["notes"]


def test_one_command_without_a_host_list_leaves_its_multi_node_start_to_its_launcher() -> None:
    """cann-recipes' one command (${CANN_RECIPES_RUN} and its file) for DeepSeek-V3 on 32 A3 dies, 2 nodes of 16:
    it lists no hosts and the facts do not say how the recipe's script reaches the second node, so the launch
    says so instead of implying that the one line starts both nodes."""
    launch = _launch("cann-recipes", "deepseek-v3", "atlas_a3", 32, _tp(1, moe_tp=1))
    assert ("one command for 2 nodes: it names no host list, and the profile does not say how ${CANN_RECIPES_RUN} "
            "starts the ranks on the other nodes (once on the head, or on each node): check the launcher's own "
            "instructions before running it") in launch["notes"]
    # a one-node command says neither
    one = _launch("trtllm", "llama-3.1-70b", "h100_sxm", 8, _tp(8))
    assert not [n for n in one.get("notes", ()) if "once, on the head" in n or "one command for" in n]
