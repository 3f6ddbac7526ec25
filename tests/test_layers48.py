"""Stop 48's hunt of the 2026 layer types, one rule per test (benchmarks/README.md, "Stop 48: a user-level hunt of
the 2026 layer types")."""
from __future__ import annotations

from click.testing import CliRunner

from solver.cli.main import main
from solver.specs.model_catalog import load_model

DCP2_TP4 = ["--attn-tp", "4", "--kvp", "2", "--dense-tp", "8", "--embed-tp", "8", "--lmhead-tp", "8"]


def test_a_sliding_window_is_a_raw_window_not_a_chunk() -> None:
    """gemma-4 / gpt-oss / EXAONE-4 (sliding) and DeepSeek-V4 (compressed attention beside a raw window) keep one;
    Llama-4's chunked window and a model of full attention only do not."""
    assert [load_model(n).has_sliding_window for n in ("gemma-4-31b", "gpt-oss-120b", "exaone-4.0-32b",
                                                        "deepseek-v4-pro", "llama-4-scout", "qwen3-32b")] \
        == [True, True, True, True, False, False]


def test_vllm_refuses_decode_context_parallel_on_sliding_window_layers() -> None:
    """vLLM 0.34.0 SlidingWindowSpec.max_memory_usage_bytes asserts dcp == 1 ('DCP not support sliding window')."""
    r = CliRunner().invoke(main, ["memory", "gemma-4-31b", "--hardware", "h200_sxm", "--cards", "8", "--framework",
                                  "vllm", *DCP2_TP4, "--batch", "16", "--seq-len", "4352"])
    assert r.exit_code == 2 and "[C.dcp_no_sliding_window]" in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_vllm_plans_no_decode_context_parallel_for_a_sliding_window_model() -> None:
    """Before the rule, candidate 3 of gemma-4-31b on 8 H200 was TP8 x DCP2, a launch vLLM refuses."""
    r = CliRunner().invoke(main, ["solve", "gemma-4-31b", "--hardware", "h200_sxm", "--cards", "8", "--framework",
                                  "vllm", "--format", "launch", "--time-limit", "5"])
    assert r.exit_code == 0 and "# candidate 1" in r.stdout and "--decode-context-parallel-size" not in r.stdout


def test_vllm_refuses_decode_context_parallel_beside_deepseek_v4s_raw_window() -> None:
    """DeepSeek-V4's raw window is a SlidingWindowMLASpec (v1/attention/backends/mla/sparse_swa.py), a
    SlidingWindowSpec: the same assertion."""
    r = CliRunner().invoke(main, ["memory", "deepseek-v4-pro", "--hardware", "gb200", "--cards", "16", "--framework",
                                  "vllm", "--attn-tp", "8", "--kvp", "2", "--dense-tp", "16", "--embed-tp", "16",
                                  "--lmhead-tp", "16", "--batch", "8", "--seq-len", "8192"])
    assert r.exit_code == 2 and "[C.dcp_no_sliding_window]" in r.stderr


def test_vllm_ascend_refuses_decode_context_parallel_on_sliding_window_layers() -> None:
    """The NPU platform keeps the hybrid KV cache manager, so the SlidingWindowSpec stays and vllm-ascend's patch
    of its pool sizing asserts dcp == 1 (patch/platform/patch_async_swa_kv_lifetime.py:157-158)."""
    r = CliRunner().invoke(main, ["memory", "gpt-oss-120b", "--hardware", "atlas_a3", "--cards", "16", "--framework",
                                  "vllm-ascend", "--attn-tp", "8", "--kvp", "2", "--embed-tp", "16", "--lmhead-tp",
                                  "16", "--moe-tp", "16", "--batch", "16", "--seq-len", "4352"])
    assert r.exit_code == 2 and "[C.dcp_no_sliding_window]" in r.stderr
