"""Pipeline parallelism across nodes as the engines run it (stop 50's hunt): the running-request cap SGLang
splits over its microbatches, the hand-off between stages, the drafter a vLLM last stage holds."""
from __future__ import annotations

import json

import yaml
from click.testing import CliRunner

from solver.cli.main import main

TP4 = {"attn_tp_size": 4, "dense_tp_size": 4, "embed_tp_size": 4, "lmhead_tp_size": 4}


def _deployment(tmp_path, pc: dict, model: str, world: int, concurrency: int, framework: str,
                hardware: str = "h100_sxm") -> str:
    path = tmp_path / "dep.yaml"
    path.write_text(yaml.safe_dump({"model": model, "hardware": hardware, "world_size": world,
                                    "framework": framework, "parallel_config": pc,
                                    "workload": {"isl": 4096, "osl": 256, "concurrency": concurrency}}))
    return str(path)


def _argv(dep: str) -> list[str]:
    r = CliRunner().invoke(main, ["launch", dep, "--format", "json"])
    assert r.exit_code == 0, r.stderr
    return json.loads(r.stdout)["nodes"][0]["argv"]


def _value(argv: list[str], flag: str) -> str | None:
    return argv[argv.index(flag) + 1] if flag in argv else None


def test_sglang_pipeline_microbatches_hold_the_whole_running_batch(tmp_path) -> None:
    """SGLang caps each PP microbatch at max_running_requests // pp_size (scheduler.py:1237-1243, :4034): 6
    requests over PP4 would run 4. The launch sets --pp-max-micro-batch-size to ceil(6 / 4) = 2; where pp_size
    divides the batch the engine's default already holds it and the flag is left out."""
    pp4 = {**TP4, "pp_size": 4}
    argv = _argv(_deployment(tmp_path, pp4, "llama-3.1-70b", 16, 6, "sglang"))
    assert (_value(argv, "--max-running-requests"), _value(argv, "--pp-max-micro-batch-size")) == ("6", "2")
    assert _value(_argv(_deployment(tmp_path, pp4, "llama-3.1-70b", 16, 8, "sglang")),
                  "--pp-max-micro-batch-size") is None


def test_sglang_pipeline_command_reads_back_the_requests_its_microbatches_run(tmp_path) -> None:
    """check --command on the launched PP4 command at 6 requests reads 6 back (the smaller of the two caps the
    command prints); the same command without the microbatch flag runs 4 (SGLang's default cap per
    microbatch, 6 // 4 = 1), and that is what it reads."""
    base = ("python3 -m sglang.launch_server --model-path meta-llama/Llama-3.1-70B --tp-size 4 --pp-size 4 "
            "--nnodes 2 --node-rank 0 --dist-init-addr h:5000 --max-running-requests 6")

    def cap(cmd: str) -> int:
        r = CliRunner().invoke(main, ["check", "--command", cmd, "--hardware", "h100_sxm", "--isl", "4096",
                                      "--osl", "256", "--format", "json"])
        assert r.exit_code == 0, r.stderr
        return json.loads(r.stdout)["estimation"]["concurrency"]

    assert cap(base + " --pp-max-micro-batch-size 2") == 6
    assert cap(base) == 4
