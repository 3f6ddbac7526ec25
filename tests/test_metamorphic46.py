"""Relations between the answers of two commands that benchmarks/metamorphic.py found broken, each pinned on the
deployment it found: the two commands are run and compared."""
from __future__ import annotations

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
