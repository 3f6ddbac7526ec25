"""One output token (--osl 1): TPOT is the mean gap between a request's output tokens, and with one token there is
none, so every engine and path says TPOT 0 and a per-user rate of 0 (closed_loop.tpot_of); the request takes its
TTFT alone, throughput is requests finished per second, and a TPOT SLA is met trivially."""
from __future__ import annotations

import csv
import io
import json

import pytest
from click.testing import CliRunner

from deployment_files import values_under
from solver.cli.main import main
from solver.estimate.closed_loop import ServingPolicy, ServingShape, serving_times
from solver.estimate.workload import Workload

QWEN_TP2 = ["qwen3-8b", "--hardware", "h100_sxm", "--cards", "2", "--attn-tp", "2", "--dense-tp", "2", "--embed-tp",
            "2", "--lmhead-tp", "2"]


def _run(args: list[str]) -> str:
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 0, r.output
    return r.stdout



def test_the_closed_loop_has_no_gap_after_a_lone_token_under_either_policy():
    shape = ServingShape(per_replica=32, running=32, prompts_per_step=16, chunks=1)
    for decode_first in (True, False):
        policy = ServingPolicy(decode_first=decode_first)
        one = serving_times(shape, 0.09, 0.006, Workload("serving", isl=512, osl=1, concurrency=32), policy)
        two = serving_times(shape, 0.09, 0.006, Workload("serving", isl=512, osl=2, concurrency=32), policy)
        assert one.tpot_s == 0 and one.request_s == pytest.approx(one.ttft_s)
        assert two.tpot_s > 0  # one token after the first: a gap again


@pytest.mark.parametrize("framework", ["vllm", "sglang", "trtllm"])
def test_estimate_at_one_output_token_has_no_tpot_under_every_engine(framework: str):
    """Was: vLLM (decode-first) 98.6 ms, its step time; SGLang (lockstep) 0."""
    est = json.loads(_run(["estimate", *QWEN_TP2, "--framework", framework, "--isl", "512", "--osl", "1",
                           "--concurrency", "32", "--format", "json"]))
    assert est["tpot_ms"] == 0 and est["tokens_per_s_per_user"] == 0
    # one token a request, each request taking its TTFT: C / TTFT requests (= tokens) a second
    assert est["output_tokens_per_s"] == pytest.approx(32 / (est["ttft_ms"] / 1e3))


def test_solve_at_one_output_token_has_no_tpot_and_meets_any_tpot_sla():
    out = json.loads(_run(["solve", "qwen3-8b", "--hardware", "h100_sxm", "--cards", "2", "--framework", "vllm",
                           "--isl", "512", "--osl", "1", "--tpot-ms", "1", "--max-concurrency", "64",
                           "--time-limit", "2", "--format", "json"]))
    tpots = list(values_under(out["candidates"], "tpot_ms"))
    assert tpots and all(t == 0 for t in tpots)
    assert all(u in (0, None) for u in values_under(out["candidates"], "tokens_per_s_per_user"))


def test_sweep_row_at_one_output_token_has_no_tpot_and_a_token_per_request():
    rows = list(csv.DictReader(io.StringIO(_run(["sweep", "qwen3-8b", "--hardware", "h100_sxm", "--cards", "2",
                                                 "--scenario", "throughput", "--isl", "512", "--osl", "1",
                                                 "--framework", "vllm", "--format", "csv"]))))
    assert rows
    for row in rows:
        assert float(row["tpot_ms"]) == 0 and float(row["tokens_per_s_per_user"]) == 0
        assert float(row["request_latency_ms"]) == pytest.approx(float(row["ttft_ms"]))
        assert float(row["requests_per_s"]) == pytest.approx(float(row["output_tokens_per_s"]), rel=1e-3)


def test_check_of_a_decode_first_command_at_one_output_token_has_no_tpot():
    out = json.loads(_run(["check", "--command", "vllm serve Qwen/Qwen3-8B --tensor-parallel-size 2 "
                           "--max-num-seqs 32", "--hardware", "h100_sxm", "--isl", "512", "--osl", "1",
                           "--format", "json"]))
    assert list(values_under(out, "tpot_ms")) and all(t == 0 for t in values_under(out, "tpot_ms"))
    assert all(u == 0 for u in values_under(out, "tokens_per_s_per_user"))


def test_disagg_at_one_output_token_has_no_tpot_and_meets_any_tpot_sla():
    """The decode pool's step bounds no gap at OSL 1 (disagg_pools.phase_scenario): a 1 ms TPOT SLA, which no
    decode step meets, still plans."""
    out = json.loads(_run(["solve", "qwen3-8b", "--hardware", "h100_sxm", "--cards", "4", "--framework", "vllm",
                           "--serving", "disagg", "--isl", "512", "--osl", "1", "--tpot-ms", "1",
                           "--max-concurrency", "64", "--time-limit", "2", "--format", "json"]))
    assert out["estimation"]["tpot_ms"] == 0 and out["estimation"]["tokens_per_s_per_user"] == 0
    assert [t for t in values_under(out["aggregated"], "tpot_ms") if t != 0] == []
    assert "TPOT 0.0 vs 0.0 ms" in " ".join(out["comparison"]["why"])  # disagg and the aggregate alike


def test_an_answer_at_one_output_token_says_what_its_tpot_means():
    for args in (["estimate", *QWEN_TP2, "--framework", "vllm", "--isl", "512", "--osl", "1", "--concurrency", "32"],
                 ["solve", "qwen3-8b", "--hardware", "h100_sxm", "--cards", "2", "--framework", "vllm", "--isl", "512",
                  "--osl", "1", "--max-concurrency", "64", "--time-limit", "2"],
                 ["sweep", "qwen3-8b", "--hardware", "h100_sxm", "--cards", "2", "--scenario", "throughput",
                  "--seq-lens", "512:64,512:1", "--framework", "vllm", "--format", "csv"]):
        r = CliRunner().invoke(main, args)
        assert r.exit_code == 0, r.output
        assert "no token follows the first, so TPOT and the per-user rate are 0" in r.output
    r = CliRunner().invoke(main, ["estimate", *QWEN_TP2, "--framework", "vllm", "--isl", "512", "--osl", "2",
                                  "--concurrency", "32"])
    assert "no token follows the first" not in r.output
