"""Rules the stop 50 review found wrong, one test each."""
from __future__ import annotations

from click.testing import CliRunner

from solver.cli.main import main as cli


def _run(*argv: str) -> tuple[int, str]:
    res = CliRunner(env={"COLUMNS": "400"}).invoke(cli, list(argv), catch_exceptions=False)
    return res.exit_code, res.stdout + res.stderr


NGRAM = ("check", "--hardware", "h200_sxm", "--isl", "4096", "--osl", "512", "--concurrency", "32", "--mtp-accept",
         "0.7", "--command")
NARROW_TREE = ("python -m sglang.launch_server --model-path Qwen/Qwen3-8B --tp 1 --speculative-algorithm NGRAM "
               "--speculative-num-draft-tokens 3")


def test_a_lookup_tree_narrower_than_its_breadth_asks_for_the_depth_rather_than_pricing_no_speculation() -> None:
    """SGLang derives NGRAM's steps as draft tokens // BFS breadth (3 // 10 = 0) yet verifies the 3-token tree each
    step: read as depth 0, the check said "the command drafts no tokens" of a command that drafts; now it asks for
    the depth as for any command that leaves it out, and prices the tree with the depth given."""
    code, out = _run(*NGRAM, NARROW_TREE)
    assert code == 2 and "error: --mtp: missing:" in out and "drafts no tokens" not in out, out
    code, out = _run(*NGRAM[:-1], "--mtp", "1", "--command", NARROW_TREE)
    assert code == 0 and "verifying a tree of 3 tokens a sequence" in out, out


def test_a_human_readable_int_refusal_says_what_the_flag_takes_not_its_record_kind() -> None:
    """vLLM's --max-model-len takes 32k / 32K / auto (human_readable_int_or_auto); 1.5K it refuses. The refusal
    named the flags record's kind ("is not of type human_int_or_auto"), which the user never wrote."""
    code, out = _run("check", "--hardware", "h100_sxm", "--isl", "1024", "--osl", "128", "--concurrency", "8",
                     "--command", "vllm serve Qwen/Qwen3-8B -tp 1 --max-model-len 1.5K")
    assert code == 2 and "human_int" not in out and "K / M / G / T (x 1,024, whole numbers only)" in out, out


def test_a_left_out_pp_microbatch_cap_is_said_as_the_requests_the_launch_prints_it_for() -> None:
    """SGLang TP4 x PP4 with --max-running-requests 6 alone runs 4 (6 // 4 a microbatch x 4). The note said the
    launch "sets [--pp-max-micro-batch-size] at 6", a value it never prints (it prints 2 for 6 requests)."""
    code, out = _run("check", "--hardware", "h100_sxm", "--isl", "4096", "--osl", "256", "--command",
                     "python -m sglang.launch_server --model-path meta-llama/Llama-3.1-70B-Instruct --tp 4 --pp-size 4 "
                     "--max-running-requests 6")
    text = " ".join(out.split())
    assert code == 0 and "read as 4 requests at once, not 6" in text, out
    assert "launch prints for 6 requests" in text and "sets at 6" not in text, out
