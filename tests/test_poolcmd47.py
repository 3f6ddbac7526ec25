"""Stop 47, poolcmd: `check --command` of a disaggregated pool's command checks it as that pool's worker: the role
read back from the profile's launch.disagg `{role}` argument, its figures the phase estimate `solve --serving
disagg` plans the pool with, its settings compared with the pool's own launch."""
from __future__ import annotations

import json
import shlex
from functools import lru_cache

import pytest
from click.testing import CliRunner

from solver.cli.main import main
from solver.launch.command_reading import Reading
from solver.launch.command_role import read_role
from solver.specs.framework import load_framework

QWEN = ["qwen3-30b-a3b", "--hardware", "h200_sxm", "--cards", "8", "--scenario", "throughput", "--isl", "2048",
        "--osl", "1024", "--tpot-ms", "50", "--serving", "disagg"]


@lru_cache(maxsize=None)
def _plan(framework: str) -> dict:
    out = CliRunner().invoke(main, ["solve", *QWEN, "--framework", framework, "--format", "json"])
    assert out.exit_code == 0, out.output
    return json.loads(out.stdout)


def _command(pool: dict) -> str:
    node = pool["launch"]["nodes"][0]
    return " ".join([*(f"{k}={v}" for k, v in node["env"].items()), shlex.join(node["argv"])])


def _check(cmd: str, *more: str) -> dict:
    res = CliRunner().invoke(main, ["check", "--command", cmd, "--model", "qwen3-30b-a3b", "--hardware", "h200_sxm",
                                    "--isl", "2048", "--osl", "1024", *more, "--format", "json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def _settings(checked: dict) -> list[str]:
    return [n for n in checked["command"].get("notes", []) if "the launch's" in n or "the launch sets" in n]


def test_a_role_flag_reads_back_to_its_phase_through_the_profiles_map() -> None:
    vllm, sglang = load_framework("vllm"), load_framework("sglang")
    assert read_role(vllm, Reading(values={("doc", "kv_transfer", "kv_role"): "kv_consumer"})).role == "decode"
    assert read_role(vllm, Reading(values={("doc", "kv_transfer", "kv_role"): "kv_producer"})).role == "prefill"
    assert read_role(sglang, Reading(values={("flag", "--disaggregation-mode"): "prefill"})).role == "prefill"
    assert read_role(sglang, Reading(values={("flag", "--tp-size"): "8"})) is None


def test_a_role_value_the_profile_does_not_map_names_no_phase() -> None:
    got = read_role(load_framework("vllm"), Reading(values={("doc", "kv_transfer", "kv_role"): "kv_both"}))
    assert got is not None and got.role is None and "kv_producer" in got.why


def test_an_engine_whose_profile_prints_no_role_reads_no_role() -> None:
    """TensorRT-LLM's profile emits no disaggregated flags (the facts give none): its pool commands read as one
    aggregated server's."""
    assert read_role(load_framework("trtllm"), Reading(values={("flag", "--tp_size"): "8"})) is None


@pytest.mark.parametrize("framework", ["vllm", "sglang"])
def test_a_decode_pools_command_is_checked_as_the_decode_pool(framework: str) -> None:
    pool = _plan(framework)["decode_pool"]
    checked = _check(_command(pool))
    est, plan = checked["estimation"], pool["estimation"]
    assert checked["command"]["pool_role"] == "decode"
    assert est["tpot_ms"] == pytest.approx(plan["decode_step_ms"], abs=1e-3)
    assert est["memory_per_rank_gb"] == pytest.approx(plan["memory_per_rank_gb"], abs=0.01)
    assert est["kv_cache_per_card_gb"] == plan["kv_cache_per_card_gb"]
    assert _settings(checked) == []  # the pool's own launch prints what the command gives


@pytest.mark.parametrize("framework", ["vllm", "sglang"])
def test_a_prefill_pools_command_is_checked_as_one_prefill_step(framework: str) -> None:
    pool = _plan(framework)["prefill_pool"]
    checked = _check(_command(pool))
    est, plan = checked["estimation"], pool["estimation"]
    assert checked["command"]["pool_role"] == "prefill"
    assert est["ttft_ms"] == pytest.approx(plan["prefill_step_ms"], abs=1e-2) and est["tpot_ms"] is None
    assert est["memory_per_rank_gb"] == pytest.approx(plan["memory_per_rank_gb"], abs=0.01)
    assert _settings(checked) == []


def test_a_prefill_pools_settings_are_compared_with_the_pool_launch() -> None:
    """The prefill budget the pool's launch sets (the whole step's prompts), not the aggregated launch's default."""
    pool = _plan("vllm")["prefill_pool"]
    argv = pool["launch"]["nodes"][0]["argv"]
    budget = argv[argv.index("--max-num-batched-tokens") + 1]
    cmd = _command(pool).replace(f"--max-num-batched-tokens {budget}", "--max-num-batched-tokens 1024")
    assert _settings(_check(cmd)) == [f"--max-num-batched-tokens: 1024, the launch's {budget}"]


def test_a_role_the_profile_does_not_map_is_checked_as_an_aggregated_server() -> None:
    cmd = _command(_plan("vllm")["decode_pool"]).replace("kv_consumer", "kv_both")
    checked = _check(cmd)
    assert "pool_role" not in checked["command"]
    assert "--kv-transfer-config kv_role" in checked["command"]["pool_flags_not_read"]
    assert checked["estimation"]["ttft_ms"] is not None and checked["estimation"]["tpot_ms"] is not None


@pytest.mark.slow
def test_a_vllm_ascend_pools_command_is_checked_as_its_pool() -> None:
    """Its KV transfer document names both pools' sizes: the other pool's are compared with nothing."""
    args = ["deepseek-v3.2", "--hardware", "atlas_a3", "--cards", "64", "--framework", "vllm-ascend", "--isl",
            "32768", "--osl", "2048", "--ttft-ms", "10000", "--serving", "disagg"]
    out = CliRunner().invoke(main, ["solve", *args, "--format", "json"])
    assert out.exit_code == 0, out.output
    for role, figure, plan_key in (("prefill", "ttft_ms", "prefill_step_ms"), ("decode", "tpot_ms", "decode_step_ms")):
        pool = json.loads(out.stdout)[f"{role}_pool"]
        res = CliRunner().invoke(main, ["check", "--command", _command(pool), "--model", "deepseek-v3.2",
                                        "--hardware", "atlas_a3", "--isl", "32768", "--osl", "2048", "--format",
                                        "json"])
        assert res.exit_code == 0, res.output
        checked = json.loads(res.stdout)  # the checkpoint's fp8 served as bf16: a note on stderr
        assert checked["command"]["pool_role"] == role
        assert checked["estimation"][figure] == pytest.approx(pool["estimation"][plan_key], abs=1e-2)
        assert _settings(checked) == []


def test_a_pool_command_its_transfer_refuses_for_its_role_is_refused_so() -> None:
    """A decode worker under vLLM's NixlConnector runs no pipeline parallel (launch.disagg.rules.decode): read as the
    decode pool's, the command is refused with that rule, where an aggregated server would take it."""
    cmd = ("vllm serve ${MODEL_PATH} -tp 4 -pp 2 --kv-transfer-config "
           "'{\"kv_connector\":\"NixlConnector\",\"kv_role\":\"kv_consumer\"}'")
    res = CliRunner().invoke(main, ["check", "--command", cmd, "--model", "llama-3.1-70b", "--hardware", "h100_sxm",
                                    "--isl", "2048", "--osl", "1024", "--concurrency", "8"])
    assert res.exit_code == 2 and "C.nixl_decode_no_pp" in res.output, res.output
    res = CliRunner().invoke(main, ["check", "--command", cmd.replace("kv_consumer", "kv_producer"), "--model",
                                    "llama-3.1-70b", "--hardware", "h100_sxm", "--isl", "2048", "--osl", "1024",
                                    "--concurrency", "8"])
    assert res.exit_code == 0, res.output
