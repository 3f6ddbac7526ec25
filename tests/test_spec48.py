"""Stop 48: speculative decoding as the engines count it. `--mtp-accept` is each draft's chance of acceptance once
the drafts before it stood (tokens per step = 1 + a + ... + a^N); the engines log that sum as their mean acceptance
length and a different rate, accepted / drafted (vLLM 0.34.0 v1/spec_decode/metrics.py, SGLang 0.5.23
metrics_reporter.py spec_accept_rate), which a user must not pass as --mtp-accept at N > 1."""
from __future__ import annotations

import pytest
from click.testing import CliRunner

from solver.cli.main import main
from solver.estimate.workload import Workload, engine_accept_rate, mtp_tokens_per_step
from solver.rank.explain import mtp_clause
from solver.specs.model_catalog import load_model


def test_the_engines_acceptance_rate_is_accepted_over_drafted() -> None:
    """Depth 3 at 0.7 per draft: 2.533 tokens per step, 1.533 accepted of 3 drafted = 51.1%; at depth 1 the two
    rates are one number."""
    assert mtp_tokens_per_step(3, 0.7) == pytest.approx(2.533)
    assert engine_accept_rate(3, 0.7) == pytest.approx(1.533 / 3)
    assert engine_accept_rate(1, 0.7) == pytest.approx(0.7)


def test_the_engines_rate_is_below_the_per_draft_chance_deeper_than_one_draft() -> None:
    """A later draft stands only if every earlier one did, so the mean over positions falls short of a."""
    for a in (0.3, 0.7, 0.95):
        for n in (2, 3, 5):
            assert engine_accept_rate(n, a) < a


def test_the_mtp_accept_help_says_which_engine_figure_it_takes() -> None:
    """estimate's and solve's --help name the per-position rate and warn off the accepted / drafted rate."""
    for cmd in ("estimate", "solve"):
        text = " ".join(CliRunner().invoke(main, [cmd, "--help"], terminal_width=400).output.split())
        assert "per-position acceptance rate at position 1" in text, cmd
        assert "not the engines' accepted / drafted rate" in text, cmd


def test_the_explain_mtp_line_gives_the_rate_the_engines_log() -> None:
    """Depth 3 at 0.7: the line says the engines log 2.53 as their mean acceptance length and a 51.1% accepted /
    drafted rate, the figures a running server's metrics are held against."""
    line, = mtp_clause(load_model("mimo-7b-base"),
                       Workload("serving", isl=1024, osl=128, concurrency=8, mtp=3, mtp_accept=0.7))
    assert "= 2.53 tokens per decode step" in line
    assert "mean acceptance length, and an accepted / drafted rate of 51.1%" in line


def _vllm_graph_cap(batch: int, mtp: int) -> str | None:
    """The --max-cudagraph-capture-size vLLM's launch gives MiMo-7B on one H100 at `batch` requests, MTP `mtp`."""
    from solver.launch import LaunchInputs, emit_launch
    from solver.launch.engine_flags import argv_problems
    from solver.specs.framework import load_framework
    from solver.specs.hardware_catalog import load_hardware
    from solver.specs.parallel import ParallelConfig

    pc = ParallelConfig(world_size=1, attn_tp_size=1, dense_tp_size=1, embed_tp_size=1, lmhead_tp_size=1)
    (node,) = emit_launch(load_framework("vllm"), load_model("mimo-7b-base"), load_hardware("h100_sxm"), pc,
                          LaunchInputs(batch=batch, max_model_len=1536, mtp=mtp))["nodes"]
    assert argv_problems("vllm", node["argv"]) == []
    argv = node["argv"]
    flag = "--max-cudagraph-capture-size"
    return argv[argv.index(flag) + 1] if flag in argv else None


def test_vllms_graph_cap_counts_the_draft_tokens_of_a_decode_step() -> None:
    """vLLM captures decode graphs in tokens (config/vllm.py:2398-2450: B x (1 + N) a step, default cap 512 on a
    9.x device): 200 requests at MTP3 are 800 tokens, eager without a lift though 200 < 512, so the command lifts
    it to 208 x 4 = 832 (on the 16-step list, a multiple of 4); at 100 requests (400 tokens) it needs none, and
    without MTP the lift is the batch's as before."""
    assert _vllm_graph_cap(200, 3) == "832"
    assert _vllm_graph_cap(200, 2) == "624"  # 208 x 3: a multiple of 3 on the list (608 is not)
    assert _vllm_graph_cap(100, 3) is None
    assert _vllm_graph_cap(200, 0) is None
    assert _vllm_graph_cap(1000, 0) == "1008"


def _sweep_rows(*extra: str) -> list[dict[str, str]]:
    import csv
    import io

    r = CliRunner().invoke(main, ["sweep", "mimo-7b-base", "--hardware", "h200_sxm", "--cards", "1", "--isl", "1024",
                                  "--osl", "256", "--scenario", "throughput", *extra])
    assert r.exit_code == 0, r.output
    body = "\n".join(line for line in r.stdout.splitlines() if not line.startswith(("#", "note")))
    return list(csv.DictReader(io.StringIO(body)))


def test_a_sweep_row_says_the_mtp_depth_and_acceptance_its_figures_assume() -> None:
    """A sweep at MTP2, 0.6 per draft writes mtp 2 and mtp_accept 0.6 in every row (the figures assumed them, as
    prefix_hit); without --mtp, 0 and empty (no acceptance was read)."""
    rows = _sweep_rows("--mtp", "2", "--mtp-accept", "0.6")
    assert rows and {(r["mtp"], r["mtp_accept"]) for r in rows} == {("2", "0.6")}
    assert {(r["mtp"], r["mtp_accept"]) for r in _sweep_rows()} == {("0", "")}


def _check(command: str, *extra: str):
    return CliRunner().invoke(main, ["check", "--model", "deepseek-v3", "--hardware", "h200_sxm", "--cards", "8",
                                     "--isl", "1024", "--osl", "256", "--concurrency", "16", *extra,
                                     "--command", command])


@pytest.mark.parametrize("command, depth_flag", [
    ("python3 -m sglang.launch_server --model-path x --tp-size 8 --speculative-algorithm NEXTN",
     "--speculative-num-steps"),
    ("vllm serve x --tensor-parallel-size 8 --speculative-config '{\"method\":\"mtp\"}'",
     "--speculative-config num_speculative_tokens"),
])
def test_a_command_that_turns_mtp_on_without_its_depth_is_not_read_as_no_mtp(command: str, depth_flag: str) -> None:
    """SGLang then picks a depth by architecture (3 for DeepSeek-V3) and vLLM refuses; check was pricing MTP 0 and
    calling it valid. Without --mtp: one line naming the missing depth, exit 2; with --mtp 3: priced at 3."""
    r = _check(command)
    assert r.exit_code == 2 and "Traceback" not in r.output
    assert "turns MTP on" in r.output and f"sets no depth ({depth_flag})" in r.output
    import re

    tpot = {}
    for n in ("0", "3"):
        ok = _check(command, "--mtp", n)
        assert ok.exit_code == 0, ok.output
        tpot[n] = float(re.search(r"tpot_ms=([0-9.]+)", ok.output).group(1))
    assert tpot["3"] < tpot["0"]  # the drafts priced: more tokens per step


def test_sglang_pads_a_decode_with_drafts_to_its_speculative_graph_list() -> None:
    """SGLang captures 1-8, then every 2 to 32, every 4 to 64 with speculative decoding on (cuda_graph_hook.py:517-525),
    not 1, 2, 4, 8, 12: 9 sequences at MTP1 run as 10, not 12; without MTP as 12."""
    from solver.estimate.engine_step import graph_batch, graph_sizes_at
    from solver.estimate.factors import factors_for
    from solver.specs.framework import load_framework
    from solver.specs.hardware_catalog import load_hardware
    from solver.specs.parallel import ParallelConfig

    hw, fw = load_hardware("h200_sxm"), load_framework("sglang")
    f = factors_for(hw, fw.efficiency_for(hw))
    pc = ParallelConfig(world_size=8, attn_tp_size=8, dense_tp_size=8, embed_tp_size=8, lmhead_tp_size=8,
                        moe_tp_size=8)
    assert graph_batch(9, graph_sizes_at(f, pc, 256, 9, mtp=1))[0] == 10
    assert graph_batch(9, graph_sizes_at(f, pc, 256, 9))[0] == 12


def test_an_engine_without_a_speculative_list_keeps_its_own_with_mtp() -> None:
    """vLLM's uniform decode sizes with drafts follow its request grid (config/vllm.py:2425-2432): the same list."""
    from solver.specs.framework import load_framework

    s = load_framework("vllm").serving
    assert s.graph_sizes(mtp=True) == s.graph_sizes() and s.graph_open(mtp=True) == s.graph_open()


def test_a_speculative_graph_list_runs_open_only_to_a_cap() -> None:
    from pydantic import ValidationError

    from solver.specs.profile_serving import FrameworkServing

    with pytest.raises(ValidationError, match="graph_batches_mtp: the range from 16 has no stop"):
        FrameworkServing(graph_batches=[{"start": 1, "stop": 8}], graph_batches_mtp=[{"start": 16}])
