"""Findings the Stop 50 hunts left for the lead, one rule each: a disaggregated TPOT floor a rerun meets, the KV
formats the engines run and refuse, and the vision tower the engines load (or do not) under pasted flags and PP."""
from __future__ import annotations

import re

from click.testing import CliRunner

from solver.cli.main import main as cli


def _run(*argv: str) -> tuple[int, str]:
    res = CliRunner(env={"COLUMNS": "400"}).invoke(cli, list(argv), catch_exceptions=False)
    return res.exit_code, res.stdout + res.stderr


def test_a_disaggregated_tpot_floor_is_one_the_decode_pool_is_planned_at() -> None:
    """MiMo-7B disaggregated on 4 GB200 at --concurrency 64: the floor quoted was a pair's full TPOT (8.92 ms, at
    the 22 requests a decode worker runs) while its decode pool is planned at the batch bucket of 32, whose TPOT
    is higher: a rerun at 8.92 found nothing. The floor quoted is now one a rerun without the TTFT SLA meets."""
    argv = ("solve", "mimo-7b", "--hardware", "gb200", "--cards", "4", "--framework", "sglang", "--serving",
            "disagg", "--isl", "8192", "--osl", "1024", "--concurrency", "64")
    code, err = _run(*argv, "--ttft-ms", "150", "--tpot-ms", "4")
    m = re.search(r"the lowest TPOT is ([\d,.]+) ms", err)
    assert code == 1 and m, err
    assert _run(*argv, "--tpot-ms", m.group(1).replace(",", ""))[0] == 0


def test_fp8_e5m2_is_a_one_byte_kv_format_that_vllm_and_sglang_launch_by_that_name() -> None:
    """vLLM 0.34.0 and SGLang 0.5.23 take --kv-cache-dtype fp8_e5m2 (a 1-byte cache: vllm/utils/torch_utils.py:49,
    sglang/srt/mem_cache/kv_cache_dtype.py:60-66); --kv-dtype fp8_e5m2 was refused as an unknown format."""
    for fw in ("vllm", "sglang"):
        code, out = _run("solve", "qwen3-8b", "--hardware", "h100_sxm", "--cards", "1", "--framework", fw,
                         "--kv-dtype", "fp8_e5m2", "--format", "launch")
        assert code == 0 and "--kv-cache-dtype fp8_e5m2" in out, out


def test_an_engine_without_an_fp8_e5m2_spelling_refuses_it_rather_than_launching_e4m3() -> None:
    code, out = _run("solve", "qwen3-8b", "--hardware", "h100_sxm", "--cards", "1", "--framework", "trtllm",
                     "--kv-dtype", "fp8_e5m2")
    assert code == 2 and "trtllm has no spelling for it" in out, out


def test_fp8_e5m2_is_priced_at_the_bytes_of_fp8() -> None:
    from solver.specs.dtypes import kv_element_bytes

    assert kv_element_bytes("fp8_e5m2") == kv_element_bytes("fp8") == 1


def test_a_kv_only_format_is_refused_as_weights_naming_the_flag() -> None:
    code, out = _run("solve", "qwen3-8b", "--hardware", "h100_sxm", "--cards", "1", "--weight-dtype", "fp8_e5m2")
    assert code == 2 and out.strip().startswith("error: --weight-dtype:") and "KV-cache format only" in out, out


def test_estimate_under_an_engine_refuses_a_kv_format_its_command_cannot_ask_for_as_solve_does() -> None:
    """SGLang 0.5.23 has no int8 KV cache: `solve --framework sglang --kv-dtype int8` refuses it (exit 2), and
    `estimate` priced it (exit 0). Both now refuse it with one rule (entry.refuse_unlaunchable_kv)."""
    common = ("qwen3-8b", "--hardware", "h100_sxm", "--cards", "1", "--framework", "sglang", "--kv-dtype", "int8")
    solve_code, solve_err = _run("solve", *common)
    est_code, est_err = _run("estimate", *common, "--batch", "8", "--seq-len", "4096", "--phase", "decode")
    assert solve_code == est_code == 2 and "sglang has no spelling for it" in est_err, est_err
    # without an engine (the generic profile) no command is asked of: the format is priced
    generic = _run("estimate", *common[:-4], "--kv-dtype", "int8", "--batch", "8", "--seq-len", "4096",
                   "--phase", "decode")
    assert generic[0] == 0 and "kv_bytes 1" in generic[1], generic[1]

