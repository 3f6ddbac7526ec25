"""Stop 51: running caps and remedies left open, closed (benchmarks/README.md "Stop 51: running caps and remedies
left open, closed")."""
from __future__ import annotations

import json

from click.testing import CliRunner

from solver.cli.main import main

VLLM_8B = "vllm serve meta-llama/Llama-3.1-8B-Instruct"


def _check(cmd: str, hardware: str, *extra: str) -> dict:
    r = CliRunner().invoke(main, ["check", "--command", cmd, "--hardware", hardware, "--cards", "1", "--isl", "128",
                                  "--osl", "128", "--format", "json", *extra])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def test_requests_waiting_for_a_slot_hold_no_kv() -> None:
    """A running cap below the concurrency: memory holds the running requests' KV only (the waiting hold none),
    so 2,048 in flight under --max-num-seqs 1024 need the memory 1,024 running need."""
    capped = _check(VLLM_8B + " --max-num-seqs 1024", "h100_sxm", "--concurrency", "2048")["estimation"]
    running = _check(VLLM_8B + " --max-num-seqs 1024", "h100_sxm", "--concurrency", "1024")["estimation"]
    assert capped["memory_per_rank_gb"] == running["memory_per_rank_gb"]
    assert capped["memory_feasible"]
