"""Stop 51: the fuzz's and remedies' loose ends (benchmarks/README.md "Stop 51: the fuzz's and remedies' loose
ends")."""
from __future__ import annotations

import json

import pytest

from click.testing import CliRunner

from solver.cli.main import main

ATOM_8B = ["estimate", "llama-3.1-8b", "--hardware", "mi300x", "--cards", "8", "--framework", "atom", "--isl", "1024",
           "--osl", "256", "--concurrency", "8"]


def _run(*args: str):
    return CliRunner().invoke(main, list(args))


def test_a_knob_not_given_follows_the_engines_tie_rule_from_those_given() -> None:
    """ATOM has one TP size (atom.yaml C.dense_tp_is_tp, C.embed_tp_is_tp, C.lmhead_tp_is_tp): --attn-tp 8 alone
    is the four TP knobs at 8, said in a note naming the rules; the same as giving all four."""
    alone = _run(*ATOM_8B, "--attn-tp", "8", "--format", "json")
    assert alone.exit_code == 0, alone.output
    assert "--dense-tp 8 by [C.dense_tp_is_tp]" in alone.stderr and "[C.lmhead_tp_is_tp]" in alone.stderr
    four = _run(*ATOM_8B, "--attn-tp", "8", "--dense-tp", "8", "--embed-tp", "8", "--lmhead-tp", "8", "--format",
                "json")
    a, b = json.loads(alone.stdout), json.loads(four.stdout)
    assert a["parallel_config"] == b["parallel_config"]
    assert (a["ttft_ms"], a["tpot_ms"], a["memory_per_rank_gb"]) == (b["ttft_ms"], b["tpot_ms"], b["memory_per_rank_gb"])


def test_a_knob_the_user_gave_is_never_changed_by_a_tie() -> None:
    """--dense-tp 4 beside --attn-tp 8 under ATOM is refused naming its rule, not set to 8."""
    r = _run(*ATOM_8B, "--attn-tp", "8", "--dense-tp", "4")
    assert r.exit_code == 2 and "[C.dense_tp_is_tp]" in r.output and "ties" not in r.output


def test_a_default_layout_no_engine_rule_admits_names_the_knobs_to_give() -> None:
    """Every card a replica is refused by ATOM for a dense model ([C.dp_attention_moe_only]): the refusal says it
    is the default layout and names the knobs to give."""
    r = _run(*ATOM_8B)
    assert r.exit_code == 2
    assert "the default layout" in r.output and "give --attn-tp" in r.output
    assert "Traceback" not in r.output


def _check_command(cmd: str):
    return _run("check", "--command", cmd, "--hardware", "h100_sxm", "--isl", "1024", "--osl", "256", "--concurrency",
                "8")


def test_a_kv_offload_size_the_native_backend_cannot_start_on_is_refused() -> None:
    """vLLM's native backend (the default) stops on --kv-offloading-size 0 / nan / inf / a negative size
    (v1/kv_offload/cpu/spec.py:99-103, :122); lmcache never reads the size, so the same size under it is noted."""
    for size in ("0", "nan", "inf", "-4"):
        r = _check_command(f"vllm serve Qwen/Qwen3-8B --kv-offloading-size {size}")
        assert r.exit_code == 2 and f"--kv-offloading-size {size}: not a finite size above 0" in r.output, r.output
        assert "\n" not in r.output.strip()
    assert _check_command("vllm serve Qwen/Qwen3-8B --kv-offloading-size 0 --kv-offloading-backend native"
                          ).exit_code == 2
    assert _check_command("vllm serve Qwen/Qwen3-8B --kv-offloading-size 0 --kv-offloading-backend lmcache"
                          ).exit_code == 0
    assert _check_command("vllm serve Qwen/Qwen3-8B --kv-offloading-size 8").exit_code == 0


def test_a_negative_stage_count_sglang_does_not_check_is_refused_without_saying_the_engine_refuses_it() -> None:
    """SGLang 0.5.23 checks its partition's count and sum only (srt/distributed/utils.py:123-135): -1,37 would
    build stages [0, -1) and [-1, 36); vLLM refuses a negative count itself (distributed/utils.py:237-238)."""
    sg = _run("check", "--command", "SGLANG_PP_LAYER_PARTITION=-1,37 python -m sglang.launch_server --model-path "
              "Qwen/Qwen3-8B --pp-size 2", "--hardware", "h100_sxm", "--cards", "2", "--isl", "1024", "--osl", "256",
              "--concurrency", "8")
    assert sg.exit_code == 2 and "does not check" in sg.output and "[-1, 36)" in sg.output
    assert "the engine refuses it" not in sg.output
    vl = _run("check", "--command", "VLLM_PP_LAYER_PARTITION=-1,37 vllm serve Qwen/Qwen3-8B -pp 2", "--hardware",
              "h100_sxm", "--cards", "2", "--isl", "1024", "--osl", "256", "--concurrency", "8")
    assert vl.exit_code == 2 and "the engine refuses it" in vl.output


def test_a_model_name_is_read_without_the_spaces_around_it() -> None:
    """" qwen3-8b " is qwen3-8b (cli/options.ModelName): estimate's output and the sweep's title echo the name."""
    est = _run("estimate", " qwen3-8b ", "--hardware", "h100_sxm", "--cards", "1", "--isl", "1024", "--osl", "256",
               "--concurrency", "8", "--format", "json")
    assert est.exit_code == 0, est.output
    assert json.loads(est.stdout)["model"] == "qwen3-8b"
    rec = _run("recommend", " qwen3-8b ", "--hardware", "h100_sxm", "--isl", "1024", "--osl", "256",
               "--target-output-tokens-per-s", "1000", "--cards", "1", "--time-limit", "3")
    assert rec.exit_code == 0, rec.output
    assert rec.stdout.startswith("qwen3-8b:") and " qwen3-8b " not in rec.output


@pytest.mark.slow
def test_a_total_cards_remedy_is_named_only_where_the_planner_pairs_workers_on_those_cards() -> None:
    """DeepSeek-R1 at ISL 500,000 on Atlas A3 under vllm-ascend: a prefill and a decode worker of 48 ranks each
    fit, but no pair of them meets the engine's prefill TP >= decode TP on 96 cards (the rerun exits 1): the line
    "96 cards in total" is not offered (remedies.py --cases 80 --seed 21)."""
    r = _run("solve", "deepseek-r1", "--hardware", "atlas_a3", "--isl", "500000", "--osl", "256", "--framework",
             "vllm-ascend", "--cards", "8", "--serving", "disagg", "--tpot-ms", "4", "--time-limit", "3")
    assert r.exit_code == 1, r.output
    assert "96 cards in total" not in r.output
