"""`check --command`: an engine command read back, through the profile's own launch, to the parallel_config that
prints it (solver/launch/read_command.py), then checked as a deployment file is."""
from __future__ import annotations

import re

import pytest
from click.testing import CliRunner

from solver.cli.main import main
from solver.errors import InputError
from solver.launch.read_command import read_command
from solver.specs.hardware_catalog import load_hardware
from tests.deployment_files import run_json

DSV3 = "deepseek-ai/DeepSeek-V3"
H200 = load_hardware("h200_sxm")


def test_a_vllm_tp8_command_reads_as_tensor_parallel_8_over_every_module():
    """vLLM's --tensor-parallel-size 8 without --enable-expert-parallel: one engine of 8 ranks, every module split
    8 ways (vLLM ties dense, embedding and lm_head TP to TP; its MoE without EP is TP over the world). One replica,
    so --max-num-seqs 64 caps the concurrency at 64 x 1 = 64."""
    r = read_command(f"vllm serve {DSV3} --tensor-parallel-size 8 --max-num-seqs 64", H200)
    assert (r.framework, r.model, r.world) == ("vllm", DSV3, 8)
    assert {k: r.parallel_config[k] for k in ("attn_tp_size", "dense_tp_size", "moe_tp_size", "embed_tp_size",
                                              "lmhead_tp_size", "cp_size", "kvp_size", "pp_size")} == \
        {"attn_tp_size": 8, "dense_tp_size": 8, "moe_tp_size": 8, "embed_tp_size": 8, "lmhead_tp_size": 8,
         "cp_size": 1, "kvp_size": 1, "pp_size": 1}
    assert r.also == [] and r.concurrency_cap == 64


def test_a_vllm_dp8_ep_command_reads_as_attention_dp_and_expert_parallel():
    """--data-parallel-size 8 --enable-expert-parallel: 8 engines of 1 rank (attention TP 1), experts over all 8
    (MoE TP 1, EP 8); --max-num-seqs 8 is one engine's cap, 8 x 8 replicas = 64 requests."""
    r = read_command(f"vllm serve {DSV3} --data-parallel-size 8 --enable-expert-parallel --max-num-seqs 8 "
                     "--max-model-len 2048", H200)
    assert r.world == 8
    assert all(v == 1 for k, v in r.parallel_config.items() if k != "redundant_experts")
    assert (r.concurrency_cap, r.max_model_len) == (64, 2048)


def _blocks(launch_text: str) -> list[str]:
    return re.split(r"(?m)^(?=# candidate \d+:)", launch_text)[1:]


@pytest.mark.parametrize("framework,hardware,cards", [("vllm", "h200_sxm", 8), ("vllm", "h200_sxm", 16),
                                                      ("trtllm", "h200_sxm", 8), ("atom", "mi300x", 8),
                                                      ("sglang", "h200_sxm", 8)])
def test_solves_launch_reads_back_to_the_knobs_and_figures_of_solves_yaml(tmp_path, framework, hardware, cards):
    """Round trip: each candidate's command of `solve --format launch`, given to `check --command`, is the
    configuration `check` of solve's YAML reviews: the same knobs and the same estimate."""
    solve = ["solve", DSV3, "--hardware", hardware, "--cards", str(cards), "--isl", "1024", "--osl", "1024",
             "--concurrency", "64", "--framework", framework]
    runner = CliRunner()
    launch = runner.invoke(main, [*solve, "--format", "launch"]).stdout
    path = tmp_path / "solve.yaml"
    path.write_text(runner.invoke(main, [*solve, "--format", "yaml"]).stdout)
    blocks = _blocks(launch)
    assert blocks
    for letter, block in zip("abc", blocks):
        _, mine = run_json("check", "--command", block, "--hardware", hardware, "--model", DSV3, "--isl", "1024",
                           "--osl", "1024", "--concurrency", "64")
        _, theirs = run_json("check", str(path), "--candidate", letter)
        assert mine is not None and theirs is not None, block
        assert mine["parallel_config"] == theirs["parallel_config"], block
        assert mine["estimation"] == theirs["estimation"], block


def test_an_unknown_flag_is_refused_naming_it():
    with pytest.raises(InputError, match="--tensor-paralel-size: vllm .* has no such flag"):
        read_command(f"vllm serve {DSV3} --tensor-paralel-size 8", H200)


def test_a_flag_the_profile_never_prints_is_listed_as_not_read():
    """--enforce-eager is vLLM's (its parser knows it) but no argument of the profile prints it."""
    r = read_command(f"vllm serve {DSV3} --tensor-parallel-size 8 --enforce-eager", H200)
    assert r.not_read == ["--enforce-eager"]


def test_a_command_of_an_engine_without_a_profile_is_refused_in_one_line():
    with pytest.raises(InputError, match="no engine profile launches it") as exc:
        read_command(f"ollama serve {DSV3} --tp 8", H200)
    assert "\n" not in str(exc.value)


def test_a_model_not_in_the_catalog_is_refused_with_close_names():
    with pytest.raises(InputError, match=r"deepseek-ai/DeepSeek-V9: not in the catalog \(close names: .*deepseek-v3"):
        read_command("vllm serve deepseek-ai/DeepSeek-V9 --tensor-parallel-size 8", H200)


def test_a_command_no_admitted_configuration_prints_is_refused():
    """TP 3 divides no world of 8 a DeepSeek-V3 launch uses (128 heads): no configuration prints it."""
    with pytest.raises(InputError, match="no configuration vllm admits"):
        read_command(f"vllm serve {DSV3} --tensor-parallel-size 3", H200, cards=8)


def test_a_setting_other_than_the_launchs_is_reported_beside_the_check():
    """--gpu-memory-utilization 0.8: the launch of the configuration prints the memory model's limit (0.95 on
    H200: min(0.95, 1 - reserve / capacity)), so the difference is said, not read as a knob."""
    r, out = run_json("check", "--command", f"vllm serve {DSV3} --tensor-parallel-size 8 --max-num-seqs 64 "
                      "--gpu-memory-utilization 0.8", "--hardware", "h200_sxm", "--isl", "1024", "--osl", "1024")
    assert out is not None, r.output
    assert "--gpu-memory-utilization: 0.8, the launch's 0.95" in out["command"]["notes"]
    assert out["estimation"]["concurrency"] == 64  # the cap read as the concurrency


def test_the_api_reads_a_command_as_the_command_line_does():
    from solver import api

    res = api.check(command=f"vllm serve {DSV3} --tensor-parallel-size 8 --max-num-seqs 64", hardware="h200_sxm",
                    isl=1024, osl=1024)
    assert res.command.parallel_config["attn_tp_size"] == 8 and res.workload.concurrency == 64


def test_a_flag_spelt_by_its_alias_reads_as_the_profiles_flag():
    """vLLM's parser takes -tp for --tensor-parallel-size (the same destination): read as TP 8, not as unread."""
    r = read_command(f"vllm serve {DSV3} -tp 8", H200)
    assert r.parallel_config["attn_tp_size"] == 8 and r.not_read == []


def test_a_cap_spelt_by_two_arguments_reads_through_the_one_the_configuration_prints():
    """SGLang spells --max-running-requests twice (sglang.yaml: the whole server's batch for a MoE model or one
    TP group, a dense replica's share otherwise). DeepSeek-V3 under DP attention 8 prints the whole server's: 1,024
    requests read as 1,024, not 8 x 1,024 (the dense form's replica share, which this configuration does not print)."""
    cmd = ("python3 -m sglang.launch_server --model-path ${MODEL_PATH} --trust-remote-code --tp-size 8 "
           "--attn-dp-size 8 --ep-size 8 --moe-dense-tp-size 1 --enable-dp-lm-head --max-running-requests 1024 "
           "--chunked-prefill-size 8192 --context-length 2048")
    assert read_command(cmd, load_hardware("h200_sxm"), model=DSV3).concurrency_cap == 1024


def test_a_command_carries_no_weight_format_so_check_reads_the_given_one_or_says_it_read_the_checkpoints():
    """vllm-ascend serves an int8 checkpoint with no format flag: `check --command` reads the weights as given by
    --weight-dtype (Qwen3-235B's 235B params in int8 over 16 ranks of EP / DP: the memory check of solve's own YAML
    of the same candidate), and without it says the format was read as the checkpoint's."""
    solve = ["solve", "qwen3-235b-a22b", "--hardware", "atlas_a3", "--cards", "16", "--framework", "vllm-ascend",
             "--weight-dtype", "int8", "--isl", "2048", "--osl", "512", "--concurrency", "64"]
    runner = CliRunner()
    block = _blocks(runner.invoke(main, [*solve, "--format", "launch"]).stdout)[0]
    base = ["check", "--command", block, "--model", "qwen3-235b-a22b", "--hardware", "atlas_a3", "--framework",
            "vllm-ascend", "--isl", "2048",
            "--osl", "512", "--concurrency", "64"]
    _, given = run_json(*base, "--weight-dtype", "int8")
    _, unsaid = run_json(*base)
    assert given["estimation"]["params_per_card_gb"] < unsaid["estimation"]["params_per_card_gb"]
    assert any("--weight-dtype and --kv-dtype not given" in n for n in unsaid["command"]["notes"])
    assert not any("--weight-dtype" in n for n in given["command"]["notes"])


def test_the_api_takes_the_number_formats_with_a_command_as_the_command_line_does():
    """api.check(command=..., weight_dtype=...) reads the weights in the given format, as `check --command
    --weight-dtype` does: DeepSeek-V3's fp8 checkpoint served in bf16 holds 2 bytes a parameter, not 1, so its
    parameters per card grow; without it the note says the checkpoint's format was read."""
    from solver import api

    cmd = f"vllm serve {DSV3} --tensor-parallel-size 8 --max-num-seqs 64"
    own = api.check(command=cmd, hardware="h200_sxm", isl=1024, osl=1024)
    bf16 = api.check(command=cmd, hardware="h200_sxm", isl=1024, osl=1024, weight_dtype="bf16")
    assert bf16.as_dict()["estimation"]["params_per_card_gb"] > own.as_dict()["estimation"]["params_per_card_gb"]
    assert not any("--weight-dtype" in n for n in bf16.command.notes)
    assert any("--weight-dtype and --kv-dtype not given" in n for n in own.command.notes)


def test_the_shells_redirections_and_a_wrapper_before_the_program_are_not_read_as_the_engines_and_are_said():
    """`nohup vllm serve M -tp 8 > log 2>&1 &`, as run in the background: `nohup` runs the program, `> log`,
    `2>&1` and `&` are the shell's. The engine's arguments are `M -tp 8` (TP 8); the rest is named in a note."""
    r = read_command(f"nohup vllm serve {DSV3} -tp 8 > serve.log 2>&1 &", H200)
    assert (r.model, r.world, r.parallel_config["attn_tp_size"]) == (DSV3, 8, 8)
    assert "nohup ... > serve.log 2>&1 &: the shell's or a wrapper's, not vllm's: not read" in r.notes


def test_export_lines_before_the_command_are_its_environment():
    """A script that exports a variable on its own line, then runs the engine: the command is the engine's (not
    `export`), and the variable is its environment (listed as not read: the vLLM launch prints no VLLM_X)."""
    r = read_command(f"#!/bin/bash\nexport VLLM_X=1 VLLM_Y=2\nvllm serve {DSV3} \\\n  --tensor-parallel-size 8\n", H200)
    assert r.parallel_config["attn_tp_size"] == 8 and r.not_read == ["VLLM_X", "VLLM_Y"]


def test_a_python_program_runs_under_any_interpreter_name():
    """`python -m sglang.launch_server` is the program the SGLang profile writes as `python3 -m ...`: read as SGLang
    (TP 8 over 8 ranks)."""
    r = read_command(f"/usr/bin/python -m sglang.launch_server --model-path {DSV3} --tp-size 8", H200)
    assert (r.framework, r.world, r.parallel_config["attn_tp_size"]) == ("sglang", 8, 8)


def test_a_negative_number_is_a_flags_value_to_the_flag_checker_and_the_reader_alike():
    """`--seed -1`: argparse takes `-1` as a value (a dash and a number), so the checker finds no stray token and
    the reader lists --seed (no argument of the vLLM profile prints it) as not read, with no `-1` flag."""
    from solver.launch.engine_flags import argv_problems

    assert argv_problems("vllm", ["vllm", "serve", DSV3, "--seed", "-1"]) == []
    assert read_command(f"vllm serve {DSV3} -tp 8 --seed -1", H200).not_read == ["--seed"]


def test_a_command_whose_launch_is_refused_says_why_not_only_that_nothing_prints_it():
    """SGLang with no parallel flag is one rank; DeepSeek-V3's 671B fp8 weights (about 673 GB with the KV) exceed
    one H200's limit, so the launch that prints no parallel flag is refused on memory: the refusal names it."""
    with pytest.raises(InputError, match=r"refused \(world size 1: weights \+ KV .* exceed the limit"):
        read_command(f"python3 -m sglang.launch_server --model-path {DSV3}", H200)


def test_a_flag_given_at_the_engines_default_reads_as_the_flag_left_out():
    """`-tp 1 -dp 8 --enable-expert-parallel`: vLLM's TP defaults to 1 (vllm.yaml `default: 1`), so the launch of
    attention DP 8 + EP leaves --tensor-parallel-size out; the user's explicit 1 is the same command (8 ranks)."""
    r = read_command(f"vllm serve {DSV3} -tp 1 -dp 8 --enable-expert-parallel", H200)
    assert r.world == 8 and all(v == 1 for k, v in r.parallel_config.items() if k != "redundant_experts")


def test_the_table_says_the_figures_the_command_sets_beside_its_configuration():
    """The text output names the cap the concurrency is read from: --max-num-seqs 32 per engine x 2 DP engines =
    64 requests at once, and --max-model-len 2048."""
    r = CliRunner().invoke(main, ["check", "--command", f"vllm serve {DSV3} -tp 4 -dp 2 --enable-expert-parallel "
                                  "--max-num-seqs 32 --max-model-len 2048", "--hardware", "h200_sxm", "--isl", "1024",
                                  "--osl", "1024"])
    assert "the command's own figures: 64 requests at once, a model length of 2,048" in r.output, r.output


def test_a_pipeline_flag_at_the_engines_default_reads_as_leaving_it_out():
    """vLLM's --pipeline-parallel-size defaults to 1 (config/parallel.py:148; vllm.yaml records `default: 1`):
    `-tp 8 -pp 1` is the configuration `-tp 8` is."""
    hw = load_hardware("h200_sxm")
    a = read_command("vllm serve deepseek-ai/DeepSeek-V3 -tp 8 -pp 1 --max-num-seqs 64", hw)
    b = read_command("vllm serve deepseek-ai/DeepSeek-V3 -tp 8 --max-num-seqs 64", hw)
    assert (a.world, a.parallel_config) == (b.world, b.parallel_config)
    assert a.parallel_config["pp_size"] == 1 and a.parallel_config["attn_tp_size"] == 8
