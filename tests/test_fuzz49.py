"""Stop 49's fuzz findings, one test per rule: what benchmarks/fuzz.py (seeds 919-922, the group "new" of
tests/fuzz_cases.py) found on the stop's merged inputs, fixed at their home."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from solver.cli.main import main

WORKLOAD = ["--hardware", "h200_sxm", "--isl", "4096", "--osl", "512", "--concurrency", "8"]
VLLM_LONG = "{env}vllm serve Qwen/Qwen3-8B -tp 1 --max-model-len 200000"
SGLANG_LONG = "{env}python3 -m sglang.launch_server --model-path Qwen/Qwen3-8B --tp-size 1 --context-length 200000"


def _check(command: str, *extra: str):
    return CliRunner().invoke(main, ["check", "--command", command, *WORKLOAD, *extra])


@pytest.mark.parametrize("command,env", [(VLLM_LONG, "VLLM_ALLOW_LONG_MAX_MODEL_LEN=0 "),
                                         (VLLM_LONG, "VLLM_ALLOW_LONG_MAX_MODEL_LEN=yes "),
                                         (SGLANG_LONG, "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=false ")])
def test_a_past_context_switch_set_off_does_not_start_the_engine(command: str, env: str) -> None:
    """vLLM reads VLLM_ALLOW_LONG_MAX_MODEL_LEN as on at 1 / true only (envs.py:1177-1180), SGLang its switch at
    true / 1 / yes / y (environ.py EnvBool): a command setting it to another value is refused as one without it."""
    r = _check(command.format(env=env))
    assert r.exit_code == 2, r.output
    lines = [ln for ln in r.output.strip().splitlines() if ln.strip()]
    assert len(lines) == 1 and "reads as off" in lines[0] and env.strip() in lines[0]


@pytest.mark.parametrize("command,env", [(VLLM_LONG, "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 "),
                                         (VLLM_LONG, "VLLM_ALLOW_LONG_MAX_MODEL_LEN=TRUE "),
                                         (SGLANG_LONG, "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=yes ")])
def test_a_past_context_switch_set_on_in_any_spelling_its_engine_reads_starts(command: str, env: str) -> None:
    assert _check(command.format(env=env)).exit_code == 0


def _spec(depth: object) -> str:
    return ("vllm serve Qwen/Qwen3-8B -tp 1 --speculative-config '"
            + json.dumps({"method": "ngram", "num_speculative_tokens": depth}) + "'")


@pytest.mark.parametrize("depth", [3.5, 0, -1])
def test_a_speculative_depth_in_a_document_is_a_whole_number_of_one_or_more(depth: object) -> None:
    """vLLM 0.34.0 validates num_speculative_tokens as int, gt=0 (config/speculative.py:455): 3.5 was read as 3 and
    0 as no speculation, both valid; now one line naming the key, exit 2."""
    r = _check(_spec(depth), "--mtp-accept", "0.6")
    assert r.exit_code == 2, r.output
    lines = [ln for ln in r.output.strip().splitlines() if ln.strip()]
    assert len(lines) == 1 and "num_speculative_tokens" in lines[0] and "not a speculative depth" in lines[0]


@pytest.mark.parametrize("depth", [3, 3.0, "3"])
def test_a_whole_speculative_depth_in_a_document_reads_as_its_number(depth: object) -> None:
    """3.0 and "3" are what vLLM's pydantic (lax) reads as 3: the same check as 3."""
    r = _check(_spec(depth), "--mtp-accept", "0.6", "--format", "json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["command"]["mtp"] == 3
