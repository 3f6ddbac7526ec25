"""What the Stop 50 memory and pipeline sections left open, one rule each: env switch values read as the engine
reads them, a pipeline stage of no layers, the prefill of uneven stages, the per-module attribution of a
pipeline step, SGLang's NGRAM tree verify, and the multimodal wrappers whose encoder runs data parallel."""
from __future__ import annotations

from click.testing import CliRunner

from solver.cli.main import main as cli

LLAMA8 = "meta-llama/Llama-3.1-8B-Instruct"


def _run(*argv: str) -> tuple[int, str]:
    res = CliRunner(env={"COLUMNS": "400"}).invoke(cli, list(argv), catch_exceptions=False)
    return res.exit_code, res.stdout + res.stderr


def _check(command: str, cards: int = 1, *extra: str) -> tuple[int, str]:
    return _run("check", "--command", command, "--hardware", "h100_sxm", "--cards", str(cards), "--isl", "1024",
                "--osl", "128", "--concurrency", "4", *extra)


def test_vllm_env_switch_values_are_stripped_before_they_are_parsed_and_sglangs_are_not() -> None:
    """vLLM 0.34.0 envs.py:1177-1180 reads VLLM_ALLOW_LONG_MAX_MODEL_LEN as .strip().lower() in (1, true): ' 1 '
    and 'TRUE ' turn it on, ' 0' leaves it off; SGLang 0.5.23 environ.py:143-150 EnvBool lower-cases only, so
    ' 1 ' is a value it does not parse (it warns and keeps its default, off)."""
    long = f"vllm serve {LLAMA8} --max-model-len 200000"
    for on in ('" 1 "', '"TRUE "'):
        code, out = _check(f"VLLM_ALLOW_LONG_MAX_MODEL_LEN={on} {long}")
        assert "refuses to start" not in out, out
    code, out = _check(f'VLLM_ALLOW_LONG_MAX_MODEL_LEN=" 0" {long}')
    assert "reads as off" in out and "refuses to start" in out, out
    code, out = _check(f'SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=" 1 " python -m sglang.launch_server '
                       f"--model-path {LLAMA8} --context-length 200000")
    assert "does not parse" in out and "refuses to start" in out, out
