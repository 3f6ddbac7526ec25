"""Stop 48: expert parallelism as the engines run it: redundant experts under EPLB, the models an engine builds no
copies for, the rank holding expert 0 (benchmarks/README.md "### Stop 48: expert parallelism as the engines run
it")."""
from __future__ import annotations

import pytest

from solver.launch import LaunchInputs, emit_launch
from solver.space.domains import redundant_for
from solver.specs.framework import load_framework
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import load_model
from solver.specs.model_rules import model_problems
from solver.specs.parallel import ParallelConfig

# attention DP + MoE EP over 24 ranks: EP 24 divides neither 256 nor 128 experts without copies
DPEP24 = dict(world_size=24)


def _argv(engine: str, model: str, pc: ParallelConfig) -> list[str]:
    out = emit_launch(load_framework(engine), load_model(model), load_hardware("h200_sxm"), pc,
                      LaunchInputs(batch=64, max_model_len=5120))
    return out["nodes"][0]["argv"]


@pytest.mark.parametrize("engine", ["sglang", "vllm"])
def test_redundant_experts_are_launched_with_eplb_on(engine: str) -> None:
    """SGLang 0.5.23 with --ep-num-redundant-experts alone places the copies trivially and sets no dispatch
    algorithm (arg_groups/parallel_hook.py:766-775), so the router never picks a copy
    (eplb/expert_location_dispatch.py:44-46, :91-92): the copies balance only with --enable-eplb, which the
    estimate's EPLB routing skew assumes. vLLM refuses the count without --enable-eplb (config/parallel.py:624-631)."""
    argv = _argv(engine, "deepseek-v3", ParallelConfig(redundant_experts=8, **DPEP24))
    assert "--enable-eplb" in argv
    assert not any("redundant" in a for a in _argv(engine, "deepseek-v3", ParallelConfig(world_size=16)))


@pytest.mark.parametrize("engine, model", [("vllm", "gpt-oss-120b"), ("vllm", "longcat-flash-chat"),
                                           ("vllm", "minimax-m2"), ("sglang", "llama-4-scout"),
                                           ("sglang", "longcat-flash-chat"), ("sglang", "mixtral-8x7b")])
def test_no_copies_are_planned_where_the_model_file_builds_none(engine: str, model: str) -> None:
    """vLLM 0.34.0's gpt_oss.py:551 passes num_redundant_experts=0 and longcat_flash.py / minimax_m2.py leave it out;
    sglang 0.5.23's llama4.py / mixtral.py build num_experts alone and LongCat raises under expert remapping: at an
    EP size that does not divide the experts the planner has no copies to add, so EP cannot hold them."""
    m = load_model(model)
    fw = load_framework(engine)
    ep = next(e for e in (3, 6, 12, 24) if m.num_experts % e)
    assert redundant_for(m, fw, ep) is None
    assert redundant_for(m, fw, 2) == 0  # EP dividing the experts still runs, with no copies


def test_a_config_with_copies_the_engine_refuses_says_so() -> None:
    """A file setting redundant_experts for gpt-oss under vLLM: the copies would not exist, one line names it, and
    the divisibility hint offers none."""
    pc = ParallelConfig(redundant_experts=16, **DPEP24)
    problems = model_problems(load_model("gpt-oss-120b"), pc, load_framework("vllm"))
    assert any(p.startswith("redundant_experts 16: vllm runs no redundant experts for model type gpt_oss")
               and p.endswith("use redundant_experts 0") for p in problems), problems
    hint = model_problems(load_model("gpt-oss-120b"), ParallelConfig(**DPEP24), load_framework("vllm"))
    assert not any("redundant experts make" in p for p in hint), hint


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_models_whose_files_build_the_copies_keep_them(engine: str) -> None:
    """DeepSeek-V3 / Kimi-K2 / GLM-5 (deepseek_v2.py), Qwen3 MoE and Qwen3.5 take the copies in both engines: EP 24
    gets the fewest that divide (8 for 256 experts, 8 for 128, 0 for 384)."""
    fw = load_framework(engine)
    for model, r in (("deepseek-v3", 8), ("kimi-k2", 0), ("glm-5", 8), ("qwen3-235b-a22b", 16),
                     ("qwen3.5-122b-a10b", 8)):
        assert redundant_for(load_model(model), fw, 24) == r, model


def _moe_activation(engine: str, moe_tp: int) -> float:
    """LongCat-Flash's MoE activation term on 16 H200, a 512-token prefill chunk a replica, under `engine`'s
    layout facts."""
    from solver.estimate.activations import activation_terms
    from solver.estimate.memory_options import framework_options

    pc = ParallelConfig(world_size=16, moe_tp_size=moe_tp)
    zero = framework_options(load_framework(engine)).zero_expert_picks_computed
    return activation_terms(load_model("longcat-flash-chat"), pc, 512, 1, zero_picks=zero)["moe_tp_size"]


def test_the_rank_holding_expert_0_holds_the_zero_picks_activations() -> None:
    """SGLang runs every zero pick as expert 0 (zero_expert_picks_computed): under EP 16 its rank holds the EP
    group's 16 x 512 tokens' 4 zero picks each beside its mean 1/16 of the 8 real ones (0.5 a token), so its MoE
    intermediates grow 1 + 4 x 16 / 8 = 9 fold over the mean rank's; TensorRT-LLM (not read: no such fact) keeps
    the mean."""
    from solver.specs.layers.moe import MoE

    moe = next(b for layer, _ in load_model("longcat-flash-chat").layer_groups for b in layer.blocks
               if isinstance(b, MoE))
    pc = ParallelConfig(world_size=16)
    hot = _moe_activation("sglang", 1) - _moe_activation("trtllm", 1)
    assert hot == pytest.approx(8 * moe.activation(pc, 512, 1), rel=1e-9)


def test_under_moe_tp_alone_every_rank_holds_every_pick() -> None:
    """MoE TP 16 (EP 1): every rank computes its slice of all 12 picks a token, 12 / 8 of the real ones."""
    from solver.specs.layers.moe import MoE

    moe = next(b for layer, _ in load_model("longcat-flash-chat").layer_groups for b in layer.blocks
               if isinstance(b, MoE))
    pc = ParallelConfig(world_size=16, moe_tp_size=16)
    mean = moe.activation(pc, 512, 1)
    assert mean + moe.hot_rank_activation(pc, 512) == pytest.approx(12 / 8 * mean, rel=1e-9)


def test_a_model_without_zero_experts_has_no_hot_rank_term() -> None:
    """DeepSeek-V3 routes to real experts only: nothing beside the mean."""
    from solver.specs.layers.moe import MoE

    moe = next(b for layer, _ in load_model("deepseek-v3").layer_groups for b in layer.blocks if isinstance(b, MoE))
    assert moe.hot_rank_activation(ParallelConfig(world_size=16), 512) == 0.0


def test_check_names_the_eplb_switch_a_pasted_command_leaves_out() -> None:
    """A pasted SGLang command with --ep-num-redundant-experts and no --enable-eplb runs unused copies: check
    refuses it in one line (exit 2) naming the switch the launch sets."""
    from click.testing import CliRunner

    from solver.cli.main import main

    cmd = ("python3 -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V3 --trust-remote-code --tp-size 24 "
           "--attn-dp-size 24 --ep-size 24 --ep-num-redundant-experts 8 --moe-a2a-backend deepep "
           "--moe-dense-tp-size 1 --enable-dp-lm-head --nnodes 3 --node-rank 0 --dist-init-addr 10.0.0.1:5000 "
           "--max-running-requests 384 --chunked-prefill-size 8192 --context-length 5120")
    res = CliRunner().invoke(main, ["check", "--command", cmd, "--hardware", "h200_sxm", "--model", "deepseek-v3",
                                    "--cards", "24", "--isl", "4096", "--osl", "1024"])
    assert res.exit_code == 2, res.output
    assert "the command leaves --enable-eplb out" in res.output
