"""Stop 51: running caps and remedies left open, closed (benchmarks/README.md "Stop 51: running caps and remedies
left open, closed")."""
from __future__ import annotations

import json

from click.testing import CliRunner

from solver.cli.main import main
from solver.specs.framework import load_framework

VLLM_8B = "vllm serve meta-llama/Llama-3.1-8B-Instruct"


def _check(cmd: str, hardware: str, *extra: str) -> dict:
    r = CliRunner().invoke(main, ["check", "--command", cmd, "--hardware", hardware, "--cards", "1", "--isl", "128",
                                  "--osl", "128", "--format", "json", *extra])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def test_vllms_default_max_num_seqs_follows_the_device_tier() -> None:
    """vLLM 0.34.0 get_batch_defaults (engine/arg_utils.py:3010-3041): `vllm serve` runs 1024 on a device of 70 GiB
    or more but an A100, else 256; vllm-ascend (vLLM 0.23.0 under an NPU platform that reports no memory) 256."""
    vllm, ascend = load_framework("vllm"), load_framework("vllm-ascend")
    assert {h: vllm.running_cap_on(h) for h in ("h100_sxm", "h200_sxm", "b200_sxm", "mi355x", "a100_sxm", "l40s")} \
        == {"h100_sxm": 1024, "h200_sxm": 1024, "b200_sxm": 1024, "mi355x": 1024, "a100_sxm": 256, "l40s": 256}
    assert ascend.running_cap_on("atlas_a3") == 256
    assert load_framework("sglang").running_cap_on("h100_sxm") is None  # memory sizes SGLang's


def test_a_command_without_the_cap_flag_is_priced_at_the_engines_default_cap() -> None:
    """`vllm serve` without --max-num-seqs at 2,048 in flight on an H100 runs 1,024 (the rest wait), exactly as
    the command giving --max-num-seqs 1024 -- not 2,048 decoding together."""
    left_out = _check(VLLM_8B, "h100_sxm", "--concurrency", "2048")
    given = _check(VLLM_8B + " --max-num-seqs 1024", "h100_sxm", "--concurrency", "2048")
    assert left_out["command"]["concurrency_cap"] == 1024
    assert left_out["estimation"] == given["estimation"]
    within = _check(VLLM_8B, "h100_sxm", "--concurrency", "1024")  # within the default: no cap read
    assert "concurrency_cap" not in within["command"]


def test_requests_waiting_for_a_slot_hold_no_kv() -> None:
    """A running cap below the concurrency: memory holds the running requests' KV only (the waiting hold none),
    so 2,048 in flight under --max-num-seqs 1024 need the memory 1,024 running need."""
    capped = _check(VLLM_8B + " --max-num-seqs 1024", "h100_sxm", "--concurrency", "2048")["estimation"]
    running = _check(VLLM_8B + " --max-num-seqs 1024", "h100_sxm", "--concurrency", "1024")["estimation"]
    assert capped["memory_per_rank_gb"] == running["memory_per_rank_gb"]
    assert capped["memory_feasible"]


def _recommend(*sla: str) -> tuple[int, str]:
    r = CliRunner().invoke(main, ["recommend", "qwen3-8b", "--hardware", "h100_sxm", "--isl", "4096", "--osl", "256",
                                  "--target-output-tokens-per-s", "2600", "--cards", "1..2", "--max-copies", "1", *sla])
    return r.exit_code, r.output


def test_recommends_looser_sla_names_the_binding_sla_and_a_value_its_rerun_meets() -> None:
    """Every size falls short under TPOT <= 20 ms: the shortfall names the SLA that binds at the best size (2 cards)
    and the least cap found at which it carries the load, and that cap, rerun, meets it (exit 0)."""
    import re

    code, out = _recommend("--tpot-ms", "20")
    assert code == 1
    m = re.search(r"--tpot-ms ([\d.]+) \(the TPOT SLA binds on 2 cards: at TPOT ([\d.]+) ms", " ".join(out.split()))
    assert m is not None and m.group(1) == m.group(2), out
    assert 20 < float(m.group(1)) < 41.9  # below the figure of the first row that carries it (concurrency 128)
    assert _recommend("--tpot-ms", m.group(1))[0] == 0


def test_the_edge_note_reads_another_candidates_edge_only_where_the_plan_has_none_at_it() -> None:
    """solve's SLA-edge note reads the edge's power from the plan's edges, and from the first candidate's own move
    only where the edge is not one of them: where the note's edge was another candidate's and the first had not
    moved, the eager dict.get default raised an internal KeyError (exit 3; recommend's looser-SLA reruns met it)."""
    r = CliRunner().invoke(main, ["solve", "qwen3.5-35b-a3b", "--hardware", "gb200", "--isl", "8192", "--osl", "1024",
                                  "--framework", "vllm", "--cards", "8", "--serving", "disagg", "--tpot-ms", "40",
                                  "--time-limit", "3"])
    assert r.exit_code == 0, r.output
