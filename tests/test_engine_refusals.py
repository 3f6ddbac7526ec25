"""What an engine accepts and refuses, as published deployments' users write them through check / launch /
calibrate: an engine on another vendor's device, a batch the engine cannot express, and MTP depth limits; each
refusal names the field the user wrote."""
from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from solver.cli.main import main
from solver.specs.framework import load_framework

REPO = Path(__file__).resolve().parents[1]


def _run(*args: str):
    return CliRunner().invoke(main, list(args))


def _deployment(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


# measurements.md #7 with the engine swapped: DeepSeek-R1 TP8, MoE TP4 x EP2, batch 1
R1_TP8_EP2 = """model: deepseek-r1
hardware: {hardware}
framework: {framework}
world_size: 8
parallel_config: {{attn_tp_size: 8, dense_tp_size: 8, moe_tp_size: 4, embed_tp_size: 8, lmhead_tp_size: 8}}
workload: {{isl: 1024, osl: 2048, concurrency: 1}}
mtp: {mtp}
"""


def test_an_engine_on_another_vendors_device_is_refused_under_the_files_framework_key(tmp_path: Path) -> None:
    """TensorRT-LLM named in the file, an Atlas die as hardware: the line names `FILE: framework` (the user
    gave no --framework / --engine), in check and launch alike; exit 2."""
    dep = _deployment(tmp_path, "trt-a3.yaml", R1_TP8_EP2.format(hardware="atlas_a3", framework="trtllm", mtp=0))
    for cmd in ("check", "launch"):
        r = _run(cmd, dep)
        assert r.exit_code == 2, (cmd, r.output)
        assert r.stderr == (f"error: {dep}: framework: trtllm runs on nvidia devices; atlas_a3 is huawei: "
                            "the profiles for huawei devices are cann-recipes, generic, sglang, vllm-ascend\n"), cmd


def test_an_engine_on_another_vendors_device_is_refused_under_the_flag_that_named_it(tmp_path: Path) -> None:
    dep = _deployment(tmp_path, "sgl-a3.yaml", R1_TP8_EP2.format(hardware="atlas_a3", framework="sglang", mtp=0))
    r = _run("launch", dep, "--engine", "trtllm")
    assert r.exit_code == 2 and r.stderr.startswith("error: --engine: trtllm runs on nvidia devices")
    r = _run("check", dep, "--framework", "trtllm")
    assert r.exit_code == 2 and r.stderr.startswith("error: --framework: trtllm runs on nvidia devices")


def test_calibrate_refuses_an_engine_on_another_vendors_device_under_the_configs_framework_key(tmp_path: Path) -> None:
    config = (REPO / "docs/examples/qwen3-30b-decode.yaml").read_text()
    cfg = _deployment(tmp_path, "run.yaml", config + "model: qwen3-30b-a3b\nhardware: atlas_a3\nframework: trtllm\n")
    r = _run("calibrate", str(REPO / "docs/examples/trace-decode"), "--config", cfg)
    assert r.exit_code == 2
    assert r.stderr == (f"error: {cfg}: framework: trtllm runs on nvidia devices; atlas_a3 is huawei: "
                        "the profiles for huawei devices are cann-recipes, generic, sglang, vllm-ascend\n")


def test_a_launch_refusal_of_the_batch_names_the_batch(tmp_path: Path) -> None:
    """cann-recipes' batch is a multiple of attention DP: batch 60 over 16 ranks of attention DP (attn_tp 1)
    is the batch's to change, so the line says `batch 60` first."""
    dep = _deployment(tmp_path, "r1-d16.yaml", """model: deepseek-r1
hardware: atlas_a3
framework: cann-recipes
world_size: 16
parallel_config: {attn_tp_size: 1, dense_tp_size: 1, moe_tp_size: 1, embed_tp_size: 16, lmhead_tp_size: 16}
workload: {phase: decode, batch: 60, isl: 256, osl: 100}
""")
    r = _run("launch", dep)
    assert r.exit_code == 2
    assert r.stderr.startswith("error: --engine cann-recipes: cannot express batch 60, ")
    assert "[C.batch_divisible_attn_dp]" in r.stderr


def test_an_engine_whose_facts_give_no_mtp_limit_launches_a_depth_past_3(tmp_path: Path) -> None:
    """engines.md's MTP row gives SGLang `--speculative-num-steps N` with no bound: MTP 4 is a command
    (4 steps, 5 draft tokens = steps + 1 at topk 1), not an `exceeds the maximum` refusal."""
    dep = _deployment(tmp_path, "sgl.yaml", R1_TP8_EP2.format(hardware="h200_sxm", framework="sglang", mtp=4))
    r = _run("launch", dep)
    assert r.exit_code == 0, r.output
    assert "--speculative-num-steps 4" in r.stdout and "--speculative-num-draft-tokens 5" in r.stdout
    assert load_framework("sglang").limits({"mtp": 4}) == []


def test_cann_recipes_keeps_its_mtp_depth_limit_of_3() -> None:
    """verified-configs.md: MTP depth (next_n) at most 3 in cann-recipes-infer."""
    assert load_framework("cann-recipes").max_mtp == 3
