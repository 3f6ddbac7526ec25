"""The engine's default largest decode CUDA graph (serving.graph_max_batch) and the launch that lifts it
(graph_max_batch_lift, SGLang's --cuda-graph-max-bs-decode), hand-computed from sglang 0.5.23
arg_groups/memory_hook.py:90-172 (< 20 GiB 8; < 35 GiB 48 if tp < 4 else 160; < 60 GiB 32 / 160; < 160 GiB
256 / 512; above 512) and cuda_graph_hook.py:500-532 (the list cut at the cap, the cap appended)."""
from __future__ import annotations

from dataclasses import replace

import pytest
from pydantic import ValidationError

from solver.estimate.engine_step import graph_sizes_at, kernels_launched
from solver.estimate.factors import factors_for
from solver.estimate.serving import Workload, decode_step, estimate
from solver.launch import LaunchInputs, emit_launch
from solver.launch.engine_flags import argv_problems
from solver.specs.framework import load_framework
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import load_model
from solver.specs.parallel import ParallelConfig, make_parallel_config
from solver.specs.precision import resolve_precision
from solver.specs.profile_serving import FrameworkServing

LLAMA_8B = "meta-llama/Llama-3.1-8B-Instruct"


def _tp(n: int) -> ParallelConfig:
    return ParallelConfig(world_size=n, attn_tp_size=n, dense_tp_size=n, embed_tp_size=n, lmhead_tp_size=n)


def _sglang(hw, lift: bool = True):
    fw = load_framework("sglang")
    f = factors_for(hw, fw.efficiency_for(hw))
    return f if lift else replace(f, graph_cap_lift=False)


def test_sglang_caps_decode_graphs_at_256_on_an_h100_below_tp4() -> None:
    # 80 GiB: below 160 GiB and --tp-size 1 < 4: 256; the sizes end ..., 248, 256
    f = _sglang(load_hardware("h100_sxm"))
    sizes = graph_sizes_at(f, _tp(1), 0, planned=1)
    assert sizes[-2:] == (248, 256)


def test_sglang_caps_decode_graphs_at_512_on_an_h100_at_tp8() -> None:
    # --tp-size 8 >= 4: 512; the sizes end ..., 496, 512
    f = _sglang(load_hardware("h100_sxm"))
    assert graph_sizes_at(f, _tp(8), 0, planned=1)[-2:] == (496, 512)


def test_a_moe_models_tp_size_is_the_stages_ranks_under_attention_dp() -> None:
    # a MoE model's --tp-size is the world (8) even where each attention replica is one rank: 512
    f = _sglang(load_hardware("h100_sxm"))
    pc = ParallelConfig(world_size=8, attn_tp_size=1, moe_tp_size=1, embed_tp_size=1, lmhead_tp_size=1,
                        dense_tp_size=1, o_proj_tp_size=1)
    assert graph_sizes_at(f, pc, 128, planned=1)[-1] == 512
    # a dense model's attention replica of one rank: --tp-size 1 below 4: 256
    assert graph_sizes_at(f, pc, 0, planned=1)[-1] == 256


def test_a_24_gib_card_caps_at_48_below_tp4_and_160_at_tp4() -> None:
    # 24 GiB: >= 20 and < 35 GiB: 48 at --tp-size 1 (the list cut after 40, then 48 appended), 160 at 4
    hw = load_hardware("h100_sxm").model_copy(update={"memory_bytes": 24 * 2**30})
    f = _sglang(hw)
    assert graph_sizes_at(f, _tp(1), 0, planned=1)[-3:] == (32, 40, 48)
    assert graph_sizes_at(f, _tp(4), 0, planned=1)[-1] == 160


def test_the_cap_is_appended_where_the_list_skips_it() -> None:
    # cap 48 is on the 8-step list; a lift to 257 is not: ..., 248, 256, then 257 itself
    f = _sglang(load_hardware("h100_sxm"))
    assert graph_sizes_at(f, _tp(1), 0, planned=257)[-3:] == (248, 256, 257)


def test_a_batch_just_above_the_cap_runs_eagerly_without_the_lift() -> None:
    """H100 TP1, 257 sequences > the 256 cap: an eager step, floored at kernels x eager_launch_s. With eager_launch_s
    1 ms the floor binds: TPOT = kernels x 1 ms (the GPU time of 257 sequences is a few ms, kernels > 32)."""
    model, hw = load_model(LLAMA_8B), load_hardware("h100_sxm")
    f = replace(_sglang(hw, lift=False), eager_launch_s=1e-3, seq_overhead_s=0.0, seq_layer_s=0.0)
    pc, prec = make_parallel_config(1), resolve_precision(model, hw)
    est = estimate(model, hw, pc, prec, f, Workload("decode", batch=257, seq_len=2048))
    step = decode_step(model, hw, pc, prec, f, 257, 2048)
    kernels = kernels_launched(step, f)
    assert kernels * 1e-3 > step.time_s
    assert est.tpot_s == pytest.approx(kernels * 1e-3)


def test_a_batch_just_above_the_cap_runs_graphed_with_the_lift() -> None:
    # lifted to 257: the step replays the graph of 257, its GPU time only (no launch floor)
    model, hw = load_model(LLAMA_8B), load_hardware("h100_sxm")
    f = replace(_sglang(hw), eager_launch_s=1e-3, seq_overhead_s=0.0, seq_layer_s=0.0)
    pc, prec = make_parallel_config(1), resolve_precision(model, hw)
    est = estimate(model, hw, pc, prec, f, Workload("decode", batch=257, seq_len=2048))
    assert est.tpot_s == pytest.approx(decode_step(model, hw, pc, prec, f, 257, 2048).time_s)


def _argv(batch: int) -> list[str]:
    out = emit_launch(load_framework("sglang"), load_model("llama-3.1-8b"), load_hardware("h100_sxm"), _tp(1),
                      LaunchInputs(batch=batch, max_model_len=1024))
    (node,) = out["nodes"]
    assert argv_problems("sglang", node["argv"]) == []
    return node["argv"]


def test_the_launch_lifts_the_cap_only_past_it() -> None:
    # TP1 on an H100: one replica of 256 fits the 256 cap, no flag; 257 lifts it to 257
    assert "--cuda-graph-max-bs-decode" not in _argv(256)
    argv = _argv(257)
    assert argv[argv.index("--cuda-graph-max-bs-decode") + 1] == "257"


def test_a_profile_without_a_cap_keeps_every_listed_size() -> None:
    hw = load_hardware("h100_sxm")
    fw = load_framework("trtllm")
    f = factors_for(hw, fw.efficiency_for(hw))
    assert not fw.serving.graph_max_batch
    assert graph_sizes_at(f, _tp(1), 0, planned=10_000) == fw.serving.graph_sizes()


@pytest.mark.parametrize("serving, problem", [
    ({"graph_batches": [{"start": 1, "stop": 8}], "graph_max_batch": [{"when": "batch > 4", "value": 4}]},
     "reads batch"),
    ({"graph_max_batch": [{"value": 4}]}, "caps no graphs"),
    ({"graph_batches": [{"start": 1, "stop": 8}], "graph_max_batch_lift": True}, "lifts no cap"),
])
def test_a_cap_reads_only_its_names_and_needs_graphs(serving: dict, problem: str) -> None:
    with pytest.raises(ValidationError, match=problem):
        FrameworkServing.model_validate(serving)


def test_vllm_caps_at_512_off_and_1024_on_a_10x_device() -> None:
    # vLLM 0.34.0 config/vllm.py:2402-2404: 1024 on a capability-10.x device, else 512
    fw = load_framework("vllm")
    caps = []
    for name in ("h100_sxm", "b200_sxm"):
        hw = load_hardware(name)
        f = replace(factors_for(hw, fw.efficiency_for(hw)), graph_cap_lift=False)
        caps.append(graph_sizes_at(f, _tp(1), 0, planned=1)[-1])
    assert caps == [512, 1024]


def test_vllms_lift_rounds_up_to_its_16_step_list() -> None:
    # 1000 requests on one H100: 1000 > 512; an off-list value is truncated, so the command asks (1000 + 15) // 16
    # x 16 = 1008
    out = emit_launch(load_framework("vllm"), load_model("llama-3.1-8b"), load_hardware("h100_sxm"), _tp(1),
                      LaunchInputs(batch=1000, max_model_len=256))
    (node,) = out["nodes"]
    assert argv_problems("vllm", node["argv"]) == []
    argv = node["argv"]
    assert argv[argv.index("--max-cudagraph-capture-size") + 1] == "1008"
