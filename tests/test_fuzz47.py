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
