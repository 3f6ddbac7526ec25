"""A prefill pool's command runs the prefill step its estimate prices (stop 47): a prefill-only worker's step
holds all its prompts at once (estimate.disagg.prompts_per_step, estimate.figures), so its engine's token budget
holds them too, where the engine's default would chunk a long prompt; its memory is sized for that step."""
from __future__ import annotations

import math
import shlex

import pytest

from solver.estimate.closed_loop import synced_ranks
from solver.specs.scenario import Scenario

ISL, OSL = 32768, 1024


def _report(model: str, hw: str, cards: int, fw: str, osl: int = OSL, **sla):
    from solver.entry import run_disagg

    sc = Scenario(kind="throughput", isl=ISL, osl=osl, **sla)
    return run_disagg(model, hw, cards, sc, fw, compare_aggregated=False)


def _flag(argv: list[str], flag: str) -> int | None:
    return int(argv[argv.index(flag) + 1]) if flag in argv else None


def _step_tokens(rep) -> int:
    """Tokens of one attention replica's priced prefill step: its prompts x the prompt's tokens (no prefix hit)."""
    return rep.plan.estimate.shape.prompts_per_step * ISL


def _pool_argv(rep, phase: str) -> list[str]:
    view = next(p for p in rep.pools if p.phase == phase)
    return view.launch["nodes"][0]["argv"]


def test_a_32k_vllm_prefill_pool_command_budget_holds_its_priced_step() -> None:
    """Llama-3.1-70B on 16 H100 under vLLM, 32K prompts: the prefill worker's --max-num-batched-tokens holds the
    step the estimate prices (was the default 8,192: four chunks of the one-step prompt); the decode worker
    keeps the default."""
    rep = _report("llama-3.1-70b", "h100_sxm", 16, "vllm")
    pre = _flag(_pool_argv(rep, "prefill"), "--max-num-batched-tokens")
    assert pre == max(8192, _step_tokens(rep)) and pre >= ISL
    assert _flag(_pool_argv(rep, "decode"), "--max-num-batched-tokens") == 8192


def test_a_32k_sglang_prefill_pool_chunk_holds_its_step_on_every_dp_rank() -> None:
    """DeepSeek-R1 on 32 H200 under SGLang, 32K prompts: --chunked-prefill-size, which SGLang divides over the
    attention-DP ranks, leaves each rank its priced step; --max-prefill-tokens (16,384 by default, not divided)
    holds one rank's step too."""
    rep = _report("deepseek-r1", "h200_sxm", 32, "sglang", osl=2048, tpot_ms=50)
    argv = _pool_argv(rep, "prefill")
    from solver.specs.model_catalog import load_model

    synced = synced_ranks(load_model("deepseek-r1"), rep.plan.prefill.planned.config)
    assert _flag(argv, "--chunked-prefill-size") // synced >= _step_tokens(rep)
    assert _flag(argv, "--max-prefill-tokens") == _step_tokens(rep)
    assert _flag(_pool_argv(rep, "decode"), "--max-prefill-tokens") is None


def test_a_32k_vllm_ascend_prefill_pool_budget_is_not_the_a3_default_chunk() -> None:
    """DeepSeek-V3.2 on 64 Atlas A3 under vllm-ascend, 32K/2K, TTFT <= 10 s: the prefill worker's budget holds
    its 32K step (was 2,048: 16 chunks); the decode worker keeps the device's default 2,048."""
    from solver.entry import run_disagg

    sc = Scenario(kind="throughput", isl=ISL, osl=2048, ttft_ms=10000)
    rep = run_disagg("deepseek-v3.2", "atlas_a3", 64, sc, "vllm-ascend", compare_aggregated=False)
    assert _flag(_pool_argv(rep, "prefill"), "--max-num-batched-tokens") == max(2048, _step_tokens(rep)) >= ISL
    assert _flag(_pool_argv(rep, "decode"), "--max-num-batched-tokens") == 2048


def test_check_command_reads_the_prefill_pools_budget_back() -> None:
    """`check --command` on the vLLM prefill worker's command reads its --max-num-batched-tokens back as the
    command's (32,768), the prefill pool's launch's own (poolcmd47: checked as that pool, not beside the aggregated
    launch's 8,192): no difference to say."""
    from click.testing import CliRunner

    from solver.cli.main import main

    rep = _report("llama-3.1-70b", "h100_sxm", 16, "vllm")
    node = next(p for p in rep.pools if p.phase == "prefill").launch["nodes"][0]
    cmd = " ".join([*(f"{k}={v}" for k, v in node["env"].items()), shlex.join(node["argv"])])
    res = CliRunner().invoke(main, ["check", "--command", cmd, "--model", "llama-3.1-70b", "--hardware", "h100_sxm",
                                    "--isl", str(ISL), "--osl", str(OSL)], terminal_width=400)
    text = " ".join(res.output.split())
    assert _flag(node["argv"], "--max-num-batched-tokens") == 32768
    assert "read as a prefill pool's worker" in text and "--max-num-batched-tokens:" not in text, text


def test_a_prefill_only_forward_holds_every_prompt_of_its_step() -> None:
    """memory_options.workload_options with a prefill-only step's prompts: the forward the activations are sized
    for is those prompts' tokens (one replica's share: activations.prefill_chunk), not the default chunk; below
    the default, the default stays."""
    from solver.estimate.activations import prefill_chunk
    from solver.estimate.memory_options import MemoryOptions, workload_options

    base = MemoryOptions()
    one = workload_options(base, ISL, step_prompts=1)
    assert prefill_chunk(one, ISL, 1) == ISL and prefill_chunk(workload_options(base, ISL), ISL, 1) == base.token_budget
    four = workload_options(base, 1024, step_prompts=4)
    assert four.prefill_chunk == base.token_budget and prefill_chunk(four, 1024, 4) == 4096


def test_the_prefill_pools_memory_is_of_its_whole_step() -> None:
    """The 32K vLLM prefill pool's activations are those of its 32K-token step (what its command now runs), more
    than the default chunk's: the estimate, the memory and the command agree."""
    from solver.estimate.activations import activation_peak
    from solver.estimate.memory_options import MemoryOptions, workload_options
    from solver.specs.model_catalog import load_model

    rep = _report("llama-3.1-70b", "h100_sxm", 16, "vllm")
    pc = rep.plan.prefill.planned.config
    model = load_model("llama-3.1-70b")
    n = rep.plan.estimate.shape.prompts_per_step
    chunked = activation_peak(model, pc, workload_options(MemoryOptions(), ISL), ISL, n)
    whole = activation_peak(model, pc, workload_options(MemoryOptions(), ISL, step_prompts=n), ISL, n)
    assert whole > chunked
    assert math.isclose(rep.plan.estimate.prefill_memory.activation_bytes, whole, rel_tol=0.25)


def test_an_aggregated_server_keeps_the_default_budget_at_a_long_prompt() -> None:
    """Aggregated serving prices a prompt past the budget as chunks mixed with decode (closed_loop), so its
    command keeps the engine's default budget at 32K."""
    from solver.launch.candidates import candidate_launch
    from solver.entry import run_solve
    from solver.specs.framework import load_framework
    from solver.specs.hardware_catalog import load_hardware
    from solver.specs.model_catalog import load_model

    sc = Scenario(kind="throughput", isl=ISL, osl=OSL)
    _, cands = run_solve("llama-3.1-70b", "h100_sxm", 8, sc, "vllm", top=1, explain_binding=False)
    launch = candidate_launch(load_framework("vllm"), load_model("llama-3.1-70b"), load_hardware("h100_sxm"),
                              cands[0], sc)
    argv = launch["nodes"][0]["argv"]
    assert _flag(argv, "--max-num-batched-tokens") == max(8192, _flag(argv, "--max-num-seqs"))


@pytest.mark.parametrize("phase_batch", [1, 2])
def test_a_prefill_only_deployments_launch_holds_its_replicas_prompts(tmp_path, phase_batch: int) -> None:
    """`shardplan launch` of a prefill-only deployment (phase prefill, 32K prompts): the budget holds one
    replica's prompts, as the prefill estimate prices them in one step."""
    from click.testing import CliRunner

    from solver.cli.main import main

    f = tmp_path / "d.yaml"
    f.write_text(f"model: llama-3.1-70b\nhardware: h100_sxm\nframework: vllm\nworld_size: 4\n"
                 f"parallel_config: {{attn_tp_size: 4, dense_tp_size: 4, embed_tp_size: 4, lmhead_tp_size: 4}}\n"
                 f"workload: {{phase: prefill, batch: {phase_batch}, seq_len: {ISL}}}\n")
    res = CliRunner().invoke(main, ["launch", str(f), "--format", "shell"])
    assert res.exit_code == 0, res.output
    assert f"--max-num-batched-tokens {phase_batch * ISL}" in res.output, res.output


def test_an_engine_whose_command_sets_no_budget_keeps_the_chunked_prefill_memory(tmp_path) -> None:
    """cann-recipes gives its engine no token budget (no launch argument reads `token_budget`), so a prefill-only
    deployment's memory stays at the default chunk: the verified v32-p64-q (DeepSeek-V3.2, 64 A3 dies, CP64, 64
    prompts of 64K) still fits (30.33 GB a rank; the whole step's packed prompts would read 1,156 GB)."""
    import json

    from click.testing import CliRunner

    from solver.cli.main import main
    from solver.specs.framework import load_framework

    assert not load_framework("cann-recipes").launch.sets_token_budget()
    assert load_framework("vllm").launch.sets_token_budget()
    f = tmp_path / "v32.yaml"
    f.write_text("model: deepseek-v3.2\nhardware: atlas_a3\nframework: cann-recipes\nworld_size: 64\n"
                 "parallel_config: {attn_tp_size: 1, dense_tp_size: 1, moe_tp_size: 1, embed_tp_size: 16, "
                 "lmhead_tp_size: 16, cp_size: 64}\nworkload: {phase: prefill, batch: 64, seq_len: 65536}\n"
                 "quant: {weights: int8, kv_cache: int8}\n")
    res = CliRunner().invoke(main, ["check", str(f), "--format", "json"])
    est = json.loads(res.output)["estimation"]
    assert est["memory_feasible"] and est["memory_per_rank_gb"] < 31, est
