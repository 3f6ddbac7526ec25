"""Stop 48 follow-up: hybrid stacks under PP, zero experts under EP, DCP beside sliding windows (benchmarks/README.md
"### Stop 48: hybrid stacks under PP, zero experts under EP")."""
from __future__ import annotations

import pytest

from solver.launch import LaunchInputs, emit_launch
from solver.launch.engine_flags import env_problems
from solver.specs.framework import load_framework
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import load_model
from solver.specs.model_rules import stage_sizes
from solver.specs.parallel import ParallelConfig

TP8 = dict(attn_tp_size=8, dense_tp_size=8, embed_tp_size=8, lmhead_tp_size=8, moe_tp_size=8)
PARTITION = {"vllm": "VLLM_PP_LAYER_PARTITION", "vllm-ascend": "VLLM_PP_LAYER_PARTITION",
             "sglang": "SGLANG_PP_LAYER_PARTITION"}
DEVICE = {"vllm": "h200_sxm", "vllm-ascend": "atlas_a3", "sglang": "h200_sxm"}


def _env(engine: str, model: str, pp: int) -> dict[str, str]:
    knobs = TP8 if load_model(model).is_moe else {k: v for k, v in TP8.items() if k != "moe_tp_size"}
    pc = ParallelConfig(world_size=8 * pp, pp_size=pp, **knobs)
    out = emit_launch(load_framework(engine), load_model(model), load_hardware(DEVICE[engine]), pc,
                      LaunchInputs(batch=32, max_model_len=4352))
    return out["nodes"][0]["env"]


@pytest.mark.parametrize("engine", sorted(PARTITION))
@pytest.mark.parametrize("pp", [2, 4])
def test_an_uneven_pipeline_split_is_launched_as_priced(engine: str, pp: int) -> None:
    """DeepSeek-V3's 61 layers leave a remainder at PP 2 and 4: SGLang 0.5.23 gives it to the last stages and vLLM to
    the stages before the last (get_pp_indices), the estimate to the first (stage_sizes), so the command names the
    priced split in the engine's partition variable, a name the engine reads."""
    env = _env(engine, "deepseek-v3", pp)
    assert env[PARTITION[engine]] == ",".join(map(str, stage_sizes(61, pp)))
    assert env_problems(engine, env) == []


@pytest.mark.parametrize("engine", sorted(PARTITION))
def test_an_even_pipeline_split_sets_no_partition(engine: str) -> None:
    """Llama-3.1-70B's 80 layers over PP 2: every engine's split is the priced one, nothing to set."""
    assert PARTITION[engine] not in _env(engine, "llama-3.1-70b", 2)


def test_sglangs_partition_variable_is_one_it_reads() -> None:
    """SGLANG_PP_LAYER_PARTITION is read with os.getenv (srt/distributed/utils.py get_pp_indices), not through
    srt/environ.py: engine_flags.yaml lists such names too (docs/engine_flags_from_wheels.py _getenv_names)."""
    assert env_problems("sglang", {"SGLANG_PP_LAYER_PARTITION": "31,30"}) == []


def test_check_says_a_command_without_the_priced_partition() -> None:
    """A pasted SGLang command of DeepSeek-V3 TP8 x PP2 without the partition runs SGLang's 30,31 split, not the
    31,30 the estimate prices: check names the variable the launch sets."""
    from click.testing import CliRunner

    from solver.cli.main import main

    cmd = ("python3 -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V3 --trust-remote-code --tp-size 8 "
           "--pp-size 2 --nnodes 2 --node-rank 0 --dist-init-addr 10.0.0.1:5000 --max-running-requests 64 "
           "--context-length 5120")
    res = CliRunner().invoke(main, ["check", "--command", cmd, "--model", "deepseek-v3", "--hardware", "h200_sxm",
                                    "--isl", "4096", "--osl", "1024", "--concurrency", "64"])
    assert "SGLANG_PP_LAYER_PARTITION: not given; the launch sets 31,30" in res.output


# LongCat-Flash: 12 picks a token among 512 real + 256 identity experts, 8 real on average
LONGCAT = ["longcat-flash-chat", "--hardware", "h200_sxm", "--cards", "16", "--isl", "4096", "--osl", "1024",
           "--concurrency", "64", "--format", "json"]
TP16 = ["--attn-tp", "16", "--moe-tp", "16", "--dense-tp", "16", "--embed-tp", "16", "--lmhead-tp", "16"]
DPEP16 = ["--attn-tp", "1", "--moe-tp", "1", "--dense-tp", "1", "--embed-tp", "1", "--lmhead-tp", "1"]


def _prefill_experts_gflops(framework: str, knobs: list[str]) -> float:
    import json

    from click.testing import CliRunner

    from solver.cli.main import main

    res = CliRunner().invoke(main, ["estimate", *LONGCAT, "--framework", framework, *knobs])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    return out["breakdown"]["prefill"]["by_module"]["routed_experts"]["gflops"]


def _fact_off(tmp_path) -> str:
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "solver" / "frameworks" / "sglang.yaml").read_text()
    assert "zero_expert_picks_computed: true" in text
    path = tmp_path / "sglang-zero-skipped.yaml"
    path.write_text(text.replace("zero_expert_picks_computed: true", "zero_expert_picks_computed: false"))
    return str(path)


@pytest.mark.parametrize("engine, remaps", [("vllm", True), ("vllm-ascend", True), ("sglang", True),
                                            ("trtllm", False), ("atom", False)])
def test_the_engines_that_run_zero_picks_as_expert_0_say_so(engine: str, remaps: bool) -> None:
    """vLLM 0.34.0 / 0.23.0 (ZeroExpertRouter), vllm-ascend (experts_selector.zero_experts_compute) and SGLang 0.5.23
    (zero_experts_compute_triton) remap a zero pick to expert 0 at weight 0; TensorRT-LLM's and ATOM's were not read."""
    assert load_framework(engine).zero_expert_picks_computed is remaps


def test_every_top_k_pick_is_priced_where_zero_picks_run_as_expert_0(tmp_path) -> None:
    """MoE TP 16 (no EP): each rank computes its slice of every pick, 12 a token where the engine runs the zero
    picks as expert 0, against the 8 real ones on average (12 x 512 / 768) where a zero pick costs nothing."""
    ratio = _prefill_experts_gflops("sglang", TP16) / _prefill_experts_gflops(_fact_off(tmp_path), TP16)
    assert ratio == pytest.approx(12 / 8, rel=1e-6)


def test_zero_picks_pace_the_ep_rank_holding_expert_0(tmp_path) -> None:
    """EP 16 over attention DP: the rank holding expert 0 computes every token's zero picks (4 a token on average)
    beside its 1/16 share of the 8 real ones (0.5 a token at the routing skew), far more than the 1.5x of MoE TP."""
    ratio = _prefill_experts_gflops("sglang", DPEP16) / _prefill_experts_gflops(_fact_off(tmp_path), DPEP16)
    assert ratio > 4


def test_a_pipeline_stage_holds_whole_longcat_blocks() -> None:
    """LongCat-Flash's 56 sub-layers are 28 decoder layers of two (num_layers; vLLM make_layers(config.num_layers),
    models/longcat_flash.py:395): PP 8 splits the 28, 4 / 3 blocks a stage, never half a block."""
    from solver.estimate.pipeline import stages

    sizes = [len(st.model.layers) for st in stages(load_model("longcat-flash-chat"), 8)]
    assert sizes == [8, 8, 8, 8, 6, 6, 6, 6]


def test_longcats_partition_counts_its_decoder_layers() -> None:
    """The partition variable counts the engine's layers (28 for LongCat-Flash, whose sum vLLM checks against
    num_hidden_layers as it builds them): PP 8 leaves 4 over, named as priced."""
    knobs = {k: 2 for k in ("attn_tp_size", "dense_tp_size", "embed_tp_size", "lmhead_tp_size", "moe_tp_size")}
    pc = ParallelConfig(world_size=16, pp_size=8, **knobs)
    out = emit_launch(load_framework("vllm"), load_model("longcat-flash-chat"), load_hardware("h200_sxm"), pc,
                      LaunchInputs(batch=16, max_model_len=5120))
    assert out["nodes"][0]["env"]["VLLM_PP_LAYER_PARTITION"] == "4,4,4,4,3,3,3,3"


@pytest.mark.parametrize("model", ["qwen3-next-80b-a3b", "longcat-flash-chat", "mimo-7b", "gemma-3-27b-it"])
def test_sglang_runs_no_pipeline_for_a_model_without_pp_proxy_tensors(model: str) -> None:
    """sglang 0.5.23 asserts support_pp at --pp-size > 1 (model_executor/model_runner.py:508-516): a model whose
    forward takes no pp_proxy_tensors (Qwen3NextForCausalLM, LongcatFlashForCausalLM, MiMoForCausalLM, Gemma-3's)
    is refused, so the config is too; vLLM runs them."""
    from solver.specs.model_rules import model_problems

    m = load_model(model)
    knobs = {k: 4 for k in ("attn_tp_size", "dense_tp_size", "embed_tp_size", "lmhead_tp_size")}
    if m.is_moe:
        knobs["moe_tp_size"] = 4
    pc = ParallelConfig(world_size=8, pp_size=2, **knobs)
    assert any("runs no pipeline parallel" in p for p in model_problems(m, pc, load_framework("sglang")))
    assert not any("runs no pipeline parallel" in p for p in model_problems(m, pc, load_framework("vllm")))


def test_sglang_keeps_pipelines_for_the_models_that_take_them() -> None:
    """DeepSeek-V3, Qwen3.5, Nemotron-H and Gemma-4 forward pp_proxy_tensors (sglang 0.5.23 deepseek_v2.py:3100,
    qwen3_5.py:1914, nemotron_h.py:861, gemma4_causal.py:1031)."""
    fw = load_framework("sglang")
    for model in ("deepseek-v3", "qwen3.5-122b-a10b", "nemotron-3-super-120b-a12b", "gemma-4-31b"):
        assert fw.refusing_feature("pp_size", load_model(model).model_type) is None, model


def test_sglang_runs_no_prefill_cp_for_longcat() -> None:
    """sglang 0.5.23 arg_groups/parallel_hook.py:78-81 refuses --enable-prefill-cp with --attn-cp-size > 1 for
    model_type longcat_flash: cp_size 2 is refused by the profile's data, not planned."""
    from solver.specs.model_rules import model_problems

    pc = ParallelConfig(world_size=16, cp_size=2, moe_tp_size=8)
    problems = model_problems(load_model("longcat-flash-chat"), pc, load_framework("sglang"))
    assert any(p.startswith("cp_size 2: sglang runs no prefill context parallel") for p in problems), problems


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_an_engine_without_the_models_class_refuses_it(engine: str) -> None:
    """MiniMax-M1: vLLM 0.34.0 lists MiniMaxM1ForCausalLM as supported until 0.23.0 and raises (registry.py:1310-
    1317); sglang 0.5.23 registers no MiniMax-M1 model. solve says so in one line, exit 2."""
    from click.testing import CliRunner

    from solver.cli.main import main

    res = CliRunner().invoke(main, ["solve", "minimax-m1", "--hardware", "h200_sxm", "--cards", "8", "--framework",
                                    engine])
    assert res.exit_code == 2
    assert f"{engine} has no model for MiniMax-M1 (model type minimax_m1" in res.output
