"""Inputs a command would drop unread, and hand-written files with a field at the wrong place: each refused in one
line naming the field (exit 2), the rest of the command unchanged."""
from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from solver.cli.main import main

DEPLOYMENT = """\
model: qwen3-8b
hardware: h100_sxm
framework: vllm
world_size: 8
parallel_config: {attn_tp_size: 8, dense_tp_size: 8, embed_tp_size: 8, lmhead_tp_size: 8}
workload: {isl: 1024, osl: 128, concurrency: 16}
"""


def _run(*args: str):
    return CliRunner().invoke(main, list(args))


def _one_error(r, field: str) -> None:
    assert r.exit_code == 2, r.output
    assert r.stderr.startswith(f"error: {field}: "), r.stderr
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.output


def _file(tmp_path: Path, text: str) -> str:
    p = tmp_path / "deployment.yaml"
    p.write_text(text)
    return str(p)


def test_a_prefill_only_solve_refuses_an_output_length_it_never_reads() -> None:
    """A prefill-only plan holds and costs ISL tokens per prompt (Scenario.max_seq_len = isl) and yields one
    token: --osl 999 would be dropped unread."""
    r = _run("solve", "qwen3-8b", "--hardware", "h100_sxm", "--cards", "8", "--phase", "prefill", "--osl", "999")
    _one_error(r, "--osl")
    assert "prefill-only" in r.stderr


@pytest.mark.parametrize("osl", [[], ["--osl", "1"]])
def test_a_prefill_only_solve_takes_no_osl_or_the_one_token_it_yields(osl: list[str]) -> None:
    """The default OSL is not the user's, and --osl 1 is the one token a prefill emits (the documented form)."""
    r = _run("solve", "qwen3-8b", "--hardware", "h100_sxm", "--cards", "1", "--phase", "prefill", "--isl", "1024",
             *osl, "--time-limit", "2", "--format", "json")
    assert r.exit_code == 0, r.output


def test_solve_explain_is_refused_with_the_launch_format_that_has_no_room_for_it() -> None:
    """--format launch prints the engine commands only: the reasons --explain asks for would be dropped."""
    r = _run("solve", "qwen3-8b", "--hardware", "h100_sxm", "--cards", "8", "--explain", "--format", "launch")
    _one_error(r, "--explain")
    assert "--format launch" in r.stderr


def test_a_prefill_estimate_refuses_an_mtp_acceptance_rate_it_never_reads() -> None:
    """A prefill step runs the MTP layer once (--mtp 1) but accepts no draft token, so --mtp-accept 0.5 changed
    nothing but the echoed workload."""
    r = _run("estimate", "deepseek-v3", "--hardware", "h200_sxm", "--cards", "8", "--phase", "prefill",
             "--batch", "4", "--seq-len", "1000", "--mtp", "1", "--mtp-accept", "0.5")
    _one_error(r, "--mtp-accept")


def test_a_head_address_no_launch_command_reads_is_refused(tmp_path: Path) -> None:
    """Qwen3-8B on 8 x h100_sxm (8 GPUs per node) with vLLM is one node: 8 / 8 = 1, so no command takes the head
    address."""
    r = _run("launch", _file(tmp_path, DEPLOYMENT), "--head-addr", "10.0.0.1")
    _one_error(r, "--head-addr")
    assert "launches on 1 node" in r.stderr


def test_a_head_address_of_a_multi_node_launch_reaches_its_command(tmp_path: Path) -> None:
    """16 ranks / 8 per node = 2 nodes: vLLM's data-parallel address is the head address given."""
    text = DEPLOYMENT.replace("world_size: 8", "world_size: 16").replace(
        "{attn_tp_size: 8, dense_tp_size: 8, embed_tp_size: 8, lmhead_tp_size: 8}",
        "{attn_tp_size: 4, dense_tp_size: 4, embed_tp_size: 4, lmhead_tp_size: 4}")
    r = _run("launch", _file(tmp_path, text), "--head-addr", "10.0.0.1")
    assert r.exit_code == 0, r.output
    assert "10.0.0.1" in r.stdout


def test_a_deployment_key_under_the_workload_says_it_belongs_at_the_top_level(tmp_path: Path) -> None:
    """mtp is the deployment's (Deployment.mtp), not the workload's: not a misspelling, a misplacement."""
    path = _file(tmp_path, DEPLOYMENT.replace("concurrency: 16}", "concurrency: 16, mtp: 2}"))
    r = _run("check", path)
    _one_error(r, f"{path}: workload.mtp")
    assert "it belongs at the top level" in r.stderr


def test_a_quant_key_at_the_top_level_says_it_belongs_under_quant(tmp_path: Path) -> None:
    path = _file(tmp_path, DEPLOYMENT + "kv_cache: fp8\n")
    r = _run("check", path)
    _one_error(r, f"{path}: kv_cache")
    assert "it belongs under quant" in r.stderr


def test_a_top_level_workload_key_beside_a_candidates_workload_is_named_as_written(tmp_path: Path) -> None:
    """osl at the top level is folded into the workload; the candidate block has its own: the key named is the
    one the user wrote (osl), not a workload block they never wrote at the top level."""
    text = ("model: qwen3-8b\nhardware: h100_sxm\nworld_size: 8\nosl: 256\ncandidate_a:\n"
            "  parallel_config: {attn_tp_size: 8, dense_tp_size: 8, lmhead_tp_size: 8}\n"
            "  workload: {isl: 1024, osl: 128, concurrency: 16}\n")
    path = _file(tmp_path, text)
    r = _run("check", path)
    _one_error(r, f"{path}: osl")
    assert "inside candidate_a.workload" in r.stderr


def test_a_hardware_file_typo_is_still_a_misspelling_not_a_misplacement(tmp_path: Path) -> None:
    """The misplacement rule comes after the misspelling one: hbm_bandwith_Bps is hbm_bandwidth_Bps misspelt."""
    src = Path(__file__).resolve().parents[1] / "hardware" / "h100_sxm.yaml"
    p = tmp_path / "hw.yaml"
    p.write_text(src.read_text().replace("\nhbm_bandwidth_Bps:", "\nhbm_bandwith_Bps:"))
    r = _run("memory", "qwen3-8b", "--hardware", str(p), "--cards", "8", "--batch", "1", "--seq-len", "100")
    _one_error(r, f"{p}: hbm_bandwith_Bps")
    assert "did you mean hbm_bandwidth_Bps?" in r.stderr


def test_sweeps_summary_without_a_file_says_where_the_full_front_is() -> None:
    """--format table without --out writes no file: the title cannot point at one."""
    r = _run("sweep", "qwen3-8b", "--hardware", "h100_sxm", "--cards", "1", "--scenario", "latency",
             "--format", "table", "--time-limit", "2")
    assert r.exit_code == 0, r.output
    assert "in the file" not in r.stdout
    assert "--format csv or json, or --out FILE" in " ".join(r.stdout.split())


def test_a_dtype_for_every_hardware_that_each_hardware_overrides_is_refused() -> None:
    """--weight-dtype fp8 is for every hardware, h100_sxm=int8 overrides it for h100_sxm, the only hardware given:
    fp8 would be read by none."""
    r = _run("sweep", "qwen3-8b", "--hardware", "h100_sxm", "--cards", "8", "--weight-dtype", "fp8",
             "--weight-dtype", "h100_sxm=int8")
    _one_error(r, "--weight-dtype")
    assert "fp8 (for every hardware) is overridden for each hardware given (h100_sxm=int8)" in r.stderr


def test_a_dtype_for_every_hardware_still_reaches_the_hardware_without_its_own() -> None:
    """h200_sxm has no value of its own, so fp8 is its: the two values are read, nothing refused."""
    from solver.capacity.inputs import per_hardware

    assert per_hardware(["fp8", "h100_sxm=int8"], "--weight-dtype", ["h100_sxm", "h200_sxm"]) == {
        "h100_sxm": "int8", "h200_sxm": "fp8"}


def test_calibrate_names_a_step_marker_no_annotation_matches_by_its_flag(tmp_path: Path) -> None:
    """A trace whose one kernel has no annotation named Foo...: the refusal is the user's --step-marker."""
    trace = tmp_path / "rank0.trace.json"
    trace.write_text('{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "gemm", "ts": 0, "dur": 5, '
                     '"pid": 0, "tid": 7}], "distributedInfo": {"rank": 0, "world_size": 1}}')
    r = _run("calibrate", str(trace), "--step-marker", "Foo")
    _one_error(r, "--step-marker")
    assert "'Foo'" in r.stderr


def test_an_mtp_depth_past_the_profiles_maximum_is_refused_under_mtp() -> None:
    """generic's max_mtp is 3 (solver/frameworks/generic.yaml): --mtp 5 is the user's flag, not parallel_config."""
    r = _run("estimate", "deepseek-v3", "--hardware", "h200_sxm", "--cards", "8", "--mtp", "5", "--isl", "100",
             "--osl", "10", "--concurrency", "8")
    _one_error(r, "--mtp")
    assert "mtp = 5 exceeds generic's maximum MTP depth 3" in r.stderr


def test_a_queue_of_days_is_a_latency_not_an_input_out_of_range() -> None:
    """4,096 requests of 60K tokens on one H100 queue for days behind the few KV slots: the planner's request latency
    is a Python integer (not a CP-SAT coefficient), so the answer is memory binding (exit 1), not exit 2 blaming the
    inputs."""
    from click.testing import CliRunner

    from solver.cli.main import main

    r = CliRunner().invoke(main, ["solve", "qwen3-8b", "--hardware", "h100_sxm", "--cards", "1", "--isl", "30000",
                                  "--osl", "30000", "--concurrency", "4096"])
    assert r.exit_code == 1, r.output
    assert "B.memory_per_rank binds" in r.output and "integer model" not in r.output
