"""Disaggregated serving on Ascend / TensorRT-LLM / ATOM and the sweep's plots, tried as a user: the rules the
hunt found broken, one test each."""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

from solver.launch import LaunchInputs, emit_launch
from solver.launch.shell import render_shell
from solver.specs.framework import load_framework
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import load_model
from solver.specs.parallel import ParallelConfig


@pytest.mark.parametrize("role", ["prefill", "decode"])
def test_a_pool_workers_recipe_command_runs_the_file_written_for_that_pool(role: str) -> None:
    """cann-recipes writes the model YAML's parallel block and runs the recipe script on it. A pool's file is
    written as `{role}_shardplan-parallel-config.yaml` (the two pools' files side by side), so the command must
    name that file, not the unprefixed one nobody wrote."""
    model, hw, fw = load_model("qwen3-235b"), load_hardware("atlas_a3"), load_framework("cann-recipes")
    pc = ParallelConfig(world_size=8, attn_tp_size=8, lmhead_tp_size=8)
    launch = emit_launch(fw, model, hw, pc, LaunchInputs(batch=16, max_model_len=3072), role=role)
    (written,) = launch["files"]
    assert written == f"{role}_shardplan-parallel-config.yaml"
    assert launch["nodes"][0]["argv"] == ["${CANN_RECIPES_RUN}", written]
    assert render_shell(launch).rstrip().endswith(f"${{CANN_RECIPES_RUN}} {written}")


def test_an_aggregated_recipe_command_runs_its_one_unprefixed_file() -> None:
    """Without a role the one file keeps its plain name and the command runs it (the same profile entry)."""
    model, hw, fw = load_model("qwen3-235b"), load_hardware("atlas_a3"), load_framework("cann-recipes")
    pc = ParallelConfig(world_size=8, attn_tp_size=8, lmhead_tp_size=8)
    launch = emit_launch(fw, model, hw, pc, LaunchInputs(batch=16, max_model_len=3072))
    assert list(launch["files"]) == ["shardplan-parallel-config.yaml"]
    assert launch["nodes"][0]["argv"] == ["${CANN_RECIPES_RUN}", "shardplan-parallel-config.yaml"]


def _pool(phase: str, world: int, tp: int) -> SimpleNamespace:
    model, hw, fw = load_model("deepseek-v3"), load_hardware("h200_sxm"), load_framework("sglang")
    pc = ParallelConfig(world_size=world, attn_tp_size=tp, o_proj_tp_size=tp, dense_tp_size=tp, moe_tp_size=tp,
                        embed_tp_size=tp, lmhead_tp_size=tp)
    launch = emit_launch(fw, model, hw, pc, LaunchInputs(batch=8, max_model_len=3072), role=phase)
    return SimpleNamespace(phase=phase, workers=1, launch=launch,
                           candidate=SimpleNamespace(pattern=f"Pure TP{tp}", planned=SimpleNamespace(config=pc)))


def test_a_pool_header_names_a_head_node_address_only_for_a_worker_that_spans_nodes() -> None:
    """h200_sxm has 8 GPUs a node: a 16-rank worker spans 2 nodes (its command reads ${HEAD_NODE_ADDR}), an
    8-rank worker fits in one and has no head node to name; neither pool runs on 'GPUs' by name (Ascend NPUs)."""
    from solver.report.disagg_view import launch_text

    text = launch_text(SimpleNamespace(pools=[_pool("prefill", 8, 8), _pool("decode", 16, 16)]))
    prefill, decode = [line for line in text.splitlines() if " pool: " in line]
    assert "HEAD_NODE_ADDR" not in prefill and "own cards" in prefill
    assert decode.endswith("each on its own cards and its own ${HEAD_NODE_ADDR}")
    assert "GPUs" not in prefill + decode


def _front_rows() -> pd.DataFrame:
    """One hardware, one card count, three front rows (sweep.on_front: request latency vs tokens/s per rank),
    OSL 100: request latency = TTFT + 99 x TPOT. a: 505 + 99 x 5 = 1,000 ms, 100 tok/s per rank, 1,000 / 5 = 200
    tok/s per user; b: 200 + 99 x 2 = 398 ms, 50 per rank, 500 per user; c: 50 + 99 x 3 = 347 ms, 20 per rank,
    333 per user. On the per-user axis b (500) lies right of c (333) with the higher throughput, and a left of
    both: sorted by tokens/s per user the curve would fold back (200 -> 333 -> 500 per user: 100, 20, 50)."""
    rows = [dict(ttft_ms=1000.0 - 99 * 5.0, tpot_ms=5.0, output_tokens_per_s_per_rank=100.0),
            dict(ttft_ms=200.0, tpot_ms=2.0, output_tokens_per_s_per_rank=50.0),
            dict(ttft_ms=50.0, tpot_ms=3.0, output_tokens_per_s_per_rank=20.0)]
    df = pd.DataFrame(rows)
    df["request_latency_ms"] = df["ttft_ms"] + 99 * df["tpot_ms"]
    df["tokens_per_s_per_user"] = 1e3 / df["tpot_ms"]
    df["output_tokens_per_s"] = df["output_tokens_per_s_per_rank"] * 8
    for k in ("attn_tp_size", "dense_tp_size", "moe_tp_size", "embed_tp_size", "lmhead_tp_size", "o_proj_tp_size",
              "cp_size", "kvp_size", "attn_sp_size"):
        df[k] = 1
    df["concurrency"] = [64, 16, 4]
    df = df.assign(hardware="h200_sxm", cards=8, scenario="throughput", isl=2048, osl=100, feasible=True,
                   on_front=True, candidate=[1, None, None], model="m")
    return df


def test_the_front_is_drawn_on_the_axis_it_is_taken_on() -> None:
    """Request latencies 1,000 / 398 / 347 ms with 100 / 50 / 20 tok/s per rank: on request latency the front
    rises monotonically; the x label names the quantity and its unit."""
    from solver.capacity.plots import plot_sweep

    fig = plot_sweep(_front_rows())
    ax = fig.axes[0]
    (line,) = ax.get_lines()
    x, y = list(line.get_xdata()), list(line.get_ydata())
    assert x == sorted(x) and y == sorted(y)
    assert x == [347.0, 398.0, 1000.0]
    assert "request latency, ms" in ax.get_xlabel() and "tokens/s" in ax.get_ylabel()
    assert "tokens/s" in fig.axes[1].get_ylabel() and "cards" in fig.axes[1].get_xlabel()


@pytest.mark.parametrize("ext, magic", [(".png", b"\x89PNG"), (".svg", b"<?xml"), (".pdf", b"%PDF")])
def test_a_sweep_of_one_hardware_and_one_card_count_plots_in_every_format(tmp_path: Path, ext: str,
                                                                          magic: bytes) -> None:
    from solver.capacity.plots import plot_sweep

    path = tmp_path / f"one{ext}"
    plot_sweep(_front_rows(), path)
    assert path.read_bytes().startswith(magic)
