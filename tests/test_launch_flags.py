"""Launch commands' flags as an engineer pastes them: the running-request cap each SGLang server divides, and
--trust-remote-code where the checkpoint names code of its own."""
from __future__ import annotations

import json

from click.testing import CliRunner

from launch_nodes import first_node_argv, launch_deployment
from solver.cli.main import main



def _value(argv: list[str], flag: str) -> str:
    return argv[argv.index(flag) + 1]


def test_sglang_dense_replicas_each_take_their_share_of_the_running_requests(tmp_path) -> None:
    """Llama-3.1-70B, attention/dense TP4 on 8 ranks: `--tp-size 4 --dp-size 2`, two replica servers. SGLang
    divides --max-running-requests by the DP-attention size only (1 for dense replicas), so each replica takes
    the whole value: 32 planned requests are 32 // 2 = 16 per replica (32 would admit 64)."""
    tp4 = {"attn_tp_size": 4, "dense_tp_size": 4, "embed_tp_size": 4, "lmhead_tp_size": 4}
    argv = first_node_argv(launch_deployment(tmp_path, tp4, "llama-3.1-70b", 8, 32, "sglang"))
    assert (_value(argv, "--dp-size"), _value(argv, "--max-running-requests")) == ("2", "16")
    # an odd share rounds up: 33 over 2 replicas is 17 each
    assert _value(first_node_argv(launch_deployment(tmp_path, tp4, "llama-3.1-70b", 8, 33, "sglang")), "--max-running-requests") == "17"


def test_sglang_dp_attention_takes_the_whole_running_requests(tmp_path) -> None:
    """Qwen3-30B-A3B with DP attention over 8 ranks (`--tp-size 8 --attn-dp-size 8`): SGLang divides
    --max-running-requests by the 8 attention-DP ranks itself, so the flag is the planned 32."""
    dpa = {"attn_tp_size": 1, "moe_tp_size": 1, "embed_tp_size": 1, "lmhead_tp_size": 1}
    argv = first_node_argv(launch_deployment(tmp_path, dpa, "qwen3-30b-a3b", 8, 32, "sglang"))
    assert _value(argv, "--attn-dp-size") == "8" and _value(argv, "--max-running-requests") == "32"


def test_vllm_vllm_ascend_and_sglang_commands_trust_a_checkpoint_with_code_of_its_own(tmp_path) -> None:
    """DeepSeek-V3's config names code of its own (auto_map): the vLLM, vllm-ascend and SGLang commands carry
    --trust-remote-code (the switch their parsers have) instead of a note asking the user to add it; Llama-3.1-70B
    (no auto_map) gets no switch."""
    ep = {"attn_tp_size": 8, "dense_tp_size": 8, "moe_tp_size": 1, "embed_tp_size": 8, "lmhead_tp_size": 8}
    for engine in ("vllm", "sglang"):
        dep = launch_deployment(tmp_path, ep, "deepseek-v3", 8, 32, engine, hardware="h200_sxm")
        r = CliRunner().invoke(main, ["launch", dep, "--format", "json"])
        assert r.exit_code == 0, r.stderr
        out = json.loads(r.stdout)
        assert "--trust-remote-code" in out["nodes"][0]["argv"], engine
        assert not any("auto_map" in n for n in out.get("notes", ())), engine
    from solver.launch.emit import LaunchInputs, emit_launch
    from solver.specs.framework import load_framework
    from solver.specs.hardware_catalog import load_hardware
    from solver.specs.model_catalog import load_model
    from solver.specs.parallel import ParallelConfig
    ascend = emit_launch(load_framework("vllm-ascend"), load_model("deepseek-v3"), load_hardware("atlas_a3"),
                         ParallelConfig(world_size=16, moe_tp_size=1), LaunchInputs(batch=16, max_model_len=4352))
    assert "--trust-remote-code" in ascend["nodes"][0]["argv"]
    tp4 = {"attn_tp_size": 4, "dense_tp_size": 4, "embed_tp_size": 4, "lmhead_tp_size": 4}
    assert "--trust-remote-code" not in first_node_argv(launch_deployment(tmp_path, tp4, "llama-3.1-70b", 4, 8, "vllm"))
