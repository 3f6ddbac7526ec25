"""Stop 51's fuzz findings, one test per rule: what benchmarks/fuzz.py (seeds 927-930, the group "new" of
tests/fuzz_cases.py: KV offload flags, partition variables, env switches, tower flags, ATOM dtypes, model aliases,
AMD devices) found on the stop's merged inputs, fixed at their home."""
from __future__ import annotations

import pytest
from click.testing import CliRunner

from solver.cli.main import main

WORKLOAD = ["--isl", "1024", "--osl", "128", "--concurrency", "8"]
ATOM = "python -m atom.entrypoints.openai_server --model Qwen/Qwen3-8B -tp 1"


def _check(command: str, hardware: str = "h100_sxm") -> tuple[int, str]:
    r = CliRunner().invoke(main, ["check", "--command", command, "--hardware", hardware, *WORKLOAD])
    return r.exit_code, r.output


@pytest.mark.parametrize("command", [f"{ATOM} --kv_cache_dtype", f"{ATOM} --kv_cache_dtype --max-num-seqs 8",
                                     "python -m atom.entrypoints.openai_server --model Qwen/Qwen3-8B -tp"])
def test_a_valued_flag_given_no_value_is_refused_where_the_parser_is_not_recorded(command: str) -> None:
    """A flag the profile prints with a value, pasted bare (last, or before another flag), is refused as a recorded
    parser's is (argparse takes no value there): it was read as the value `true` ("--kv_cache_dtype: true, none of
    the values atom's profile spells", "-tp true: no configuration atom admits")."""
    code, out = _check(command, "mi355x")
    assert code == 2, out
    assert "takes a value, given none" in out and "true" not in out


@pytest.mark.parametrize("command,flag", [
    ("vllm serve Qwen/Qwen3-8B -tp 2 --mm-encoder-tp-mode data", "--mm-encoder-tp-mode data"),
    ("python3 -m sglang.launch_server --model-path Qwen/Qwen3-8B --tp-size 2 --mm-enable-dp-encoder",
     "--mm-enable-dp-encoder")])
def test_a_tower_flag_on_a_text_only_model_is_noted_as_placing_nothing(command: str, flag: str) -> None:
    """A tower flag (FrameworkProfile.tower_flags) on a model without a vision or audio tower is read (so not
    listed as unread) and was then said nowhere: now a note says it places nothing."""
    code, out = _check(command)
    assert code == 0, out
    assert f"{flag}: Qwen3-8B has no vision or audio tower: the flag places nothing" in " ".join(out.split())


@pytest.mark.parametrize("command,builds", [
    ("python3 -m sglang.launch_server --model-path Qwen/Qwen3-8B --hicache-ratio 2", False),
    ("python3 -m sglang.launch_server --model-path Qwen/Qwen3-8B --hicache-size 4", False),
    ("python3 -m sglang.launch_server --model-path Qwen/Qwen3-8B --enable-hicache --hicache-ratio 2", True),
    ("python3 -m sglang.launch_server --model-path Qwen/Qwen3-8B --enable-hierarchical-cache", True),
    ("vllm serve Qwen/Qwen3-8B --kv-offloading-backend lmcache", False),
    ("vllm serve Qwen/Qwen3-8B --kv-offloading-size 8 --kv-offloading-backend native", True)])
def test_kv_offload_is_noted_only_where_a_flag_that_builds_the_tier_is_given(command: str, builds: bool) -> None:
    """A sizing flag alone builds no host tier (SGLang builds it under --enable-hierarchical-cache, kv_cache_builder
    .py:456-460; vLLM only where --kv-offloading-size is set, config/vllm.py:1078-1080): it was noted as "KV offload
    to host memory" (profile kv_offload.built_by)."""
    code, out = _check(command)
    text = " ".join(out.split())
    assert code == 0, out
    assert ("KV offload to host memory" in text) is builds
    assert ("no KV offload:" in text) is not builds


def test_kv_offload_built_by_names_its_own_flags() -> None:
    """kv_offload.built_by lists some of kv_offload.flags (a flag outside them is a profile error)."""
    from pydantic import ValidationError

    from solver.specs.profile_facts import KVOffload

    with pytest.raises(ValidationError, match="built_by"):
        KVOffload(flags=["--a"], size="GiB", built_by=["--b"], holds="prefix", source="x")


@pytest.mark.parametrize("command,refused", [
    ("VLLM_PP_LAYER_PARTITION=18,18 vllm serve Qwen/Qwen3-8B -tp 1", True),
    ("VLLM_PP_LAYER_PARTITION=0 vllm serve Qwen/Qwen3-8B -tp 1", True),
    ("VLLM_PP_LAYER_PARTITION=36 vllm serve Qwen/Qwen3-8B -tp 1", False),
    ("SGLANG_PP_LAYER_PARTITION=18,18 python3 -m sglang.launch_server --model-path Qwen/Qwen3-8B", False)])
def test_a_partition_variable_without_pipeline_parallelism_is_checked_where_the_engine_checks_it(
        command: str, refused: bool) -> None:
    """vLLM splits layers with get_pp_indices at any PP size (make_layers), so VLLM_PP_LAYER_PARTITION=18,18 at
    pp 1 stops it (2 counts for 1 stage); SGLang drops its variable at pp_size 1 (profile pp_default_split.one_stage).
    The vLLM command was accepted."""
    code, out = _check(command)
    assert code == (2 if refused else 0), out
    if refused:
        assert "the engine refuses it" in out
