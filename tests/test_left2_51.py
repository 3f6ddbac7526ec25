"""Stop 51: what the hunts left open, closed (benchmarks/README.md "Stop 51: what the hunts left open, closed")."""
from __future__ import annotations

import json

from click.testing import CliRunner

from solver.cli.main import main

SG_NGRAM = ("python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B-Instruct "
            "--speculative-algorithm NGRAM")


def _check(cmd: str, *extra: str) -> dict:
    r = CliRunner().invoke(main, ["check", "--command", cmd, "--hardware", "h100_sxm", "--cards", "1", "--isl", "1024",
                                  "--osl", "256", "--format", "json", *extra])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def test_sglang_runs_48_requests_under_speculation_where_the_command_sets_no_cap() -> None:
    """sglang 0.5.23 resets --max-running-requests to 48 under NGRAM / EAGLE / ... where unset
    (speculative_hook.py:1294-1302): the command is read at that cap, as if it gave --max-running-requests 48."""
    out = _check(SG_NGRAM, "--concurrency", "256", "--mtp-accept", "0.5")
    given = _check(SG_NGRAM + " --max-running-requests 48", "--concurrency", "256", "--mtp-accept", "0.5")
    assert out["command"]["concurrency_cap"] == 48
    assert out["estimation"] == given["estimation"]
    assert _check(SG_NGRAM, "--mtp-accept", "0.5")["estimation"]["concurrency"] == 48  # no --concurrency: the cap


def test_a_commands_running_cap_below_the_concurrency_is_priced_as_slot_waits() -> None:
    """--max-running-requests 48 at 256 in flight: 48 run (a shorter decode step), the rest wait for a slot (a
    longer TTFT) -- not 256 decoding together."""
    capped = _check(SG_NGRAM + " --max-running-requests 48", "--concurrency", "256", "--mtp-accept", "0.5")
    free = _check(SG_NGRAM + " --max-running-requests 256", "--concurrency", "256", "--mtp-accept", "0.5")
    assert capped["estimation"]["tpot_ms"] < free["estimation"]["tpot_ms"] / 2
    assert capped["estimation"]["ttft_ms"] > 2 * free["estimation"]["ttft_ms"]


def test_switch_to_ep_names_the_engines_flags_from_its_launch_args() -> None:
    """The comm-over-compute warning's alternative (attn_tp=1 moe_tp=1 ...) is said in the engine's flags, as its
    profile's launch prints the two configurations: vLLM --data-parallel-size 8 --enable-expert-parallel without
    --tensor-parallel-size 8; SGLang --attn-dp-size 8 --ep-size 8."""
    def warning(cmd: str) -> str:
        r = CliRunner().invoke(main, ["check", "--command", cmd, "--hardware", "l40s", "--isl", "1024", "--osl", "512",
                                      "--concurrency", "64", "--format", "json"])
        assert r.exit_code == 0, r.output
        return next(w for w in json.loads(r.stdout)["warnings"]["B"] if "switch to EP" in w)

    assert ("; as vllm's launch spells it: --data-parallel-size 8 --enable-expert-parallel, without --tensor-parallel-size 8"
            in warning("vllm serve Qwen/Qwen3-30B-A3B --tensor-parallel-size 8"))
    assert "; as sglang's launch spells it: --attn-dp-size 8 --ep-size 8" in warning(
        "python -m sglang.launch_server --model-path Qwen/Qwen3-30B-A3B --tp-size 8")


def _va_offload(env: str) -> object:
    return CliRunner().invoke(main, ["check", "--command", f"{env}vllm serve Qwen/Qwen3-32B --tensor-parallel-size 2 "
                                     "--kv-offloading-size 200 --max-num-seqs 16", "--hardware", "atlas_a3", "--isl",
                                     "2048", "--osl", "512", "--concurrency", "16", "--format", "json"])


def test_vllm_ascend_kv_offload_starts_only_under_the_simple_connector_switch() -> None:
    """vLLM 0.23.0's --kv-offloading-size installs the OffloadingConnector, whose default CPUOffloadingSpec raises
    on an NPU (v1/kv_offload/cpu/spec.py:110-114), unless VLLM_USE_SIMPLE_KV_OFFLOAD=1 picks the simple connector
    vllm-ascend replaces with its NPU copy: without the switch the command is refused in one line; with it the
    flag is read (a prefix tier, not priced), neither it nor the variable listed as not read."""
    unset, off, on = _va_offload(""), _va_offload("VLLM_USE_SIMPLE_KV_OFFLOAD=0 "), \
        _va_offload("VLLM_USE_SIMPLE_KV_OFFLOAD=1 ")
    assert unset.exit_code == 2 and off.exit_code == 2  # type: ignore[attr-defined]
    assert "set VLLM_USE_SIMPLE_KV_OFFLOAD=1" in unset.stderr and "\n" not in unset.stderr.strip()  # type: ignore[attr-defined]
    assert on.exit_code == 0, on.output  # type: ignore[attr-defined]
    cmd = json.loads(on.stdout)["command"]  # type: ignore[attr-defined]
    assert any(n.startswith("--kv-offloading-size 200: KV offload to host memory") for n in cmd["notes"])
    assert not {"--kv-offloading-size", "VLLM_USE_SIMPLE_KV_OFFLOAD"} & set(cmd.get("not_read", []))
