"""Stop 47's fuzz (seeds 901-906, benchmarks/fuzz.py) and relations (seeds 20-29, benchmarks/metamorphic.py): each
finding's rule."""
from __future__ import annotations

import json

from click.testing import CliRunner

from solver.cli.main import main

QWEN_SGLANG_TP2 = ["qwen3-8b", "--hardware", "h100_sxm", "--cards", "2", "--framework", "sglang", "--attn-tp", "2",
                   "--dense-tp", "2", "--embed-tp", "2", "--lmhead-tp", "2"]


def test_one_output_token_in_lockstep_has_no_tpot_nor_per_user_rate():
    """SGLang prefills and decodes in lockstep: at --osl 1 no decode step follows the first token, so TPOT and the
    per-user rate are 0 (was: internal error, a division by the zero TPOT)."""
    r = CliRunner().invoke(main, ["estimate", *QWEN_SGLANG_TP2, "--isl", "512", "--osl", "1", "--concurrency", "32",
                                  "--format", "json"])
    assert r.exit_code == 0, r.output
    est = json.loads(r.stdout)
    assert est["tpot_ms"] == 0 and est["tokens_per_s_per_user"] == 0 and est["ttft_ms"] > 0


def test_check_command_of_a_lockstep_engine_at_one_output_token_reads():
    r = CliRunner().invoke(main, ["check", "--command", "python3 -m sglang.launch_server --model-path Qwen/Qwen3-8B "
                                  "--tp-size 2 --max-running-requests 32", "--hardware", "h100_sxm", "--isl", "512",
                                  "--osl", "1"])
    assert r.exit_code == 0, r.output


def test_disagg_against_an_all_prefill_aggregate_names_no_decode_stretch():
    """At --osl 1 the lockstep aggregate is all prefill (share 1): there is no decode step to stretch (was: a
    division by 1 - 1 in the comparison's text)."""
    r = CliRunner().invoke(main, ["solve", "qwen3-8b", "--hardware", "h100_sxm", "--cards", "4", "--framework",
                                  "sglang", "--serving", "disagg", "--isl", "512", "--osl", "1", "--max-concurrency",
                                  "64", "--time-limit", "2"])
    assert r.exit_code == 0, r.output
    assert "stretches every decode step" not in r.output


def test_a_value_flag_followed_by_a_flag_is_given_no_value():
    """argparse takes no flag-like token as an option's value (`--max-num-seqs --tensor-parallel-size 2` is
    'expected one argument'); was read as the value '--tensor-parallel-size' not of type int, and '2' a stray."""
    from solver.launch.engine_flags import argv_problems

    assert argv_problems("vllm", ["vllm", "serve", "m", "--max-num-seqs", "--tensor-parallel-size", "2"]) == \
        ["--max-num-seqs: takes a value, given none"]
    assert argv_problems("vllm", ["vllm", "serve", "m", "--max-num-seqs", "-1"]) == \
        []  # argparse reads a negative number as a value (the type check is the engine's own)


def test_several_refused_flags_are_one_line_of_problems_apart():
    """The CLI prints an error on one line: the command's problems are joined by '; ' (they ran together)."""
    r = CliRunner().invoke(main, ["check", "--command", "python3 -m sglang.launch_server --model-path Qwen/Qwen3-8B "
                                  "--tp_size 2 --max_running_requests 8", "--hardware", "h100_sxm", "--isl", "512",
                                  "--osl", "128"])
    assert r.exit_code == 2
    assert "--tp_size: sglang 0.5.23 has no such flag; --max_running_requests: sglang 0.5.23 has no such flag" \
        in r.output


def test_trtllm_multi_node_launch_reads_back_past_its_mpirun_wrapper(tmp_path):
    """TensorRT-LLM's launch over two nodes is `mpirun -n 16 -H ... trtllm-llmapi-launch trtllm-serve ...`; the
    wrapper is not read from a pasted command, so its -n is not compared (it was, against nothing: 'no configuration
    trtllm admits ... prints these parallel flags' for the launch's own text). Llama-3.1-8B TP8 x PP2 on 16 H100."""
    dep = tmp_path / "trt.yaml"
    dep.write_text("model: llama-3.1-8b\nhardware: h100_sxm\nframework: trtllm\nworld_size: 16\nparallel_config: "
                   "{attn_tp_size: 8, dense_tp_size: 8, embed_tp_size: 8, lmhead_tp_size: 8, pp_size: 2}\n"
                   "workload: {isl: 1024, osl: 256, concurrency: 16}\n")
    text = CliRunner().invoke(main, ["launch", str(dep), "--format", "shell"]).stdout
    assert "mpirun -n 16" in text
    r = CliRunner().invoke(main, ["check", "--command", text, "--hardware", "h100_sxm", "--model", "llama-3.1-8b",
                                  "--isl", "1024", "--osl", "256", "--format", "json"])
    assert r.exit_code == 0, r.output
    got = json.loads(r.stdout)
    assert got["command"]["world_size"] == 16
    assert (got["command"]["parallel_config"]["attn_tp_size"], got["command"]["parallel_config"]["pp_size"]) == (8, 2)
    direct = json.loads(CliRunner().invoke(main, ["check", str(dep), "--format", "json"]).stdout)
    assert got["estimation"] == direct["estimation"]
