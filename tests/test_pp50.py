"""Pipeline parallelism across nodes as the engines run it (stop 50's hunt): the running-request cap SGLang
splits over its microbatches, the hand-off between stages, the drafter a vLLM last stage holds."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from launch_nodes import first_node_argv, launch_deployment
from solver.cli.main import main

TP4 = {"attn_tp_size": 4, "dense_tp_size": 4, "embed_tp_size": 4, "lmhead_tp_size": 4}



def _value(argv: list[str], flag: str) -> str | None:
    return argv[argv.index(flag) + 1] if flag in argv else None


def test_sglang_pipeline_microbatches_hold_the_whole_running_batch(tmp_path) -> None:
    """SGLang caps each PP microbatch at max_running_requests // pp_size (scheduler.py:1237-1243, :4034): 6
    requests over PP4 would run 4. The launch sets --pp-max-micro-batch-size to ceil(6 / 4) = 2; where pp_size
    divides the batch the engine's default already holds it and the flag is left out."""
    pp4 = {**TP4, "pp_size": 4}
    argv = first_node_argv(launch_deployment(tmp_path, pp4, "llama-3.1-70b", 16, 6, "sglang"))
    assert (_value(argv, "--max-running-requests"), _value(argv, "--pp-max-micro-batch-size")) == ("6", "2")
    assert _value(first_node_argv(launch_deployment(tmp_path, pp4, "llama-3.1-70b", 16, 8, "sglang")),
                  "--pp-max-micro-batch-size") is None


def test_sglang_pipeline_command_reads_back_the_requests_its_microbatches_run(tmp_path) -> None:
    """check --command on the launched PP4 command at 6 requests reads 6 back (the smaller of the two caps the
    command prints); the same command without the microbatch flag runs 4 (SGLang's default cap per
    microbatch, 6 // 4 = 1), and that is what it reads."""
    base = ("python3 -m sglang.launch_server --model-path meta-llama/Llama-3.1-70B --tp-size 4 --pp-size 4 "
            "--nnodes 2 --node-rank 0 --dist-init-addr h:5000 --max-running-requests 6")

    def cap(cmd: str) -> int:
        r = CliRunner().invoke(main, ["check", "--command", cmd, "--hardware", "h100_sxm", "--isl", "4096",
                                      "--osl", "256", "--format", "json"])
        assert r.exit_code == 0, r.stderr
        return json.loads(r.stdout)["estimation"]["concurrency"]

    assert cap(base + " --pp-max-micro-batch-size 2") == 6
    assert cap(base) == 4


def test_a_stage_hands_on_the_residual_beside_the_hidden_state_where_the_engine_does() -> None:
    """vLLM's and SGLang's stages send hidden_states and residual (the decoder layer returns them unsummed for
    the next layer's fused add + norm): Llama-3.1-405B's hand-off is 2 x 16,384 values a token under both, the
    hidden state alone under the generic profile and for vLLM's gemma4 (its residual folded in)."""
    from solver.estimate.factors import factors_for
    from solver.estimate.pipeline import handoff_width
    from solver.specs.framework import load_framework
    from solver.specs.hardware_catalog import load_hardware
    from solver.specs.model_catalog import load_model

    h100, a3 = load_hardware("h100_sxm"), load_hardware("atlas_a3")
    llama, gemma4 = load_model("llama-3.1-405b"), load_model("google/gemma-4-31B-it")

    def width(model, engine: str, hw=h100) -> int:
        return handoff_width(model, factors_for(hw, load_framework(engine).efficiency_for(hw)))

    assert (width(llama, "vllm"), width(llama, "sglang"), width(llama, "vllm-ascend", a3)) == (32768,) * 3
    assert width(llama, "generic") == 16384
    assert width(gemma4, "vllm") == gemma4.hidden_size


def test_the_estimate_sends_the_hand_off_per_rank_as_counted_by_hand() -> None:
    """Llama-3.1-405B fp8, TP8 x PP2 on 2 x 8 H100 under vLLM, one 4,096-token prompt: a rank sends its 1/8 of
    4,096 x (16,384 hidden + 16,384 residual) x 2 B = 33.55 MB to its peer on the other node, once (the last stage
    forwards nothing)."""
    r = CliRunner().invoke(main, ["estimate", "llama-3.1-405b", "--hardware", "h100_sxm", "--cards", "16",
                                  "--attn-tp", "8", "--dense-tp", "8", "--embed-tp", "8", "--lmhead-tp", "8",
                                  "--pp", "2", "--framework", "vllm", "--weight-dtype", "fp8", "--phase", "prefill",
                                  "--batch", "1", "--seq-len", "4096", "--format", "json"])
    assert r.exit_code == 0, r.stderr
    comms = json.loads(r.stdout)["breakdown"]["prefill"]["communication"]
    sends = [c for c in comms if c["name"] == "pp_send_recv"]
    assert len(sends) == 1 and sends[0]["tier"] == "inter_node"
    assert sends[0]["mbytes"] * 1e6 == pytest.approx(4096 * 2 * 16384 * 2 / 8)


def test_vllm_last_stage_holds_the_mtp_drafters_own_embedding_under_pp() -> None:
    """vLLM shares the target's embedding with the MTP drafter only without PP (spec_decode/eagle/utils.py:97-99):
    DeepSeek-R1 TP8 x PP2 with MTP 1 holds the drafter's 129,280 x 7,168 x 2 B / 8 table on the last stage
    beside the LM head; without MTP, or under the generic profile, that stage holds none."""
    def stage(framework: str, mtp: int) -> dict:
        r = CliRunner().invoke(main, ["memory", "deepseek-r1", "--hardware", "h100_sxm", "--cards", "16",
                                      "--attn-tp", "8", "--moe-tp", "8", "--dense-tp", "8", "--embed-tp", "8",
                                      "--lmhead-tp", "8", "--pp", "2", "--framework", framework, "--batch", "32",
                                      "--seq-len", "4096", "--mtp", str(mtp), "--format", "json"])
        assert r.exit_code == 0, r.stderr
        out = json.loads(r.stdout)
        assert out["pipeline_stage"] == 1
        return out["breakdown"]

    assert stage("vllm", 1)["weights.embedding"] * 1e9 == pytest.approx(129280 * 7168 * 2 / 8)
    assert "weights.embedding" not in stage("vllm", 0)
    assert "weights.embedding" not in stage("generic", 1)
