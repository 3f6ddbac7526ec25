"""Relations between the answers of two commands that benchmarks/metamorphic.py found broken, each pinned on the
deployment it found: the two commands are run and compared."""
from __future__ import annotations

import pytest

import json
from pathlib import Path

from click.testing import CliRunner

from solver.cli.main import main

RUNNER = CliRunner()


def _stdout(argv: list[str]) -> str:
    res = RUNNER.invoke(main, argv, catch_exceptions=False)
    assert res.exit_code == 0, res.output
    return res.stdout


def test_launch_of_solves_yaml_gives_solves_own_launch_document(tmp_path: Path) -> None:
    """`launch FILE --candidate a` of the file `solve --format yaml` wrote prints the launch document `solve
    --format json` carries for candidate 1, byte for byte. GLM-4.5 on 4 GB200 under SGLang at 512/128 (latency):
    SGLang's --mem-fraction-static is (limit - activations - comm buffers) / capacity, and the activations of a
    prefill depend on one request's prompt (512 tokens); the launch from the file priced them without it and
    wrote 0.9465 where solve's plan gives 0.9468."""
    solve = ["solve", "glm-4.5", "--hardware", "gb200", "--cards", "4", "--scenario", "latency", "--isl", "512",
             "--osl", "128", "--framework", "sglang"]
    path = tmp_path / "glm.yaml"
    path.write_text(_stdout([*solve, "--format", "yaml"]))
    from_file = json.loads(_stdout(["launch", str(path), "--candidate", "a", "--format", "json"]))
    from_solve = json.loads(_stdout([*solve, "--format", "json"]))["candidates"][0]["launch"]
    assert from_file["nodes"] == from_solve["nodes"]
    assert from_file.get("files") == from_solve.get("files")
    argv = from_file["nodes"][0]["argv"]
    assert argv[argv.index("--mem-fraction-static") + 1] == "0.9468"


def test_a_group_without_any_choice_leaves_no_least_memory_configuration() -> None:
    """A module the model has that no layout runs (an empty choice list) means no configuration exists at any
    stage count: least_memory answers None, not a configuration missing that group (which the memory model then
    cannot price)."""
    from solver.plan.memory_edge import least_memory

    choices = {"attn": [(1, 1)], "moe": []}
    rows = {("attn", 0): 1.0}
    assert least_memory(choices, rows, 1) is None
    assert least_memory(choices, rows, 1, attn=0) is None
    # with a choice at the stage count, every group is picked
    assert least_memory({"attn": [(1, 1)], "moe": [(1, 0, 1)]}, {("attn", 0): 1.0, ("moe", 0): 2.0}, 1) == \
        {"attn": 0, "moe": 0}


@pytest.mark.slow  # a whole plan of several cluster sizes (~2.5 s)
def test_a_model_past_the_cards_is_answered_infeasible_with_what_would_fit_not_an_internal_error() -> None:
    """Nemotron-3-Ultra (550B, 1,098.6 GB of bf16 weights) on 2 Atlas A2 (2 x 65.0 GB usable): exit 1 naming
    the memory and the cards that fit. The search for what would fit plans larger worlds, where the MoE group may
    have no layout at all; the memory edge there raised KeyError 'moe' (exit 3)."""
    res = RUNNER.invoke(main, ["solve", "nemotron-3-ultra", "--hardware", "atlas_a2", "--cards", "2", "--scenario",
                               "throughput", "--isl", "512", "--osl", "128"])
    assert res.exit_code == 1, res.output
    assert "B.memory_per_rank binds" in res.output and "what would fit" in res.output
