"""vllm-ascend's prefill context parallel (--prefill-context-parallel-size, cp_size) as the planner plans it: one
test per rule.

Source: the vllm-ascend 0.23.0.post1 sdist (PyPI; read, not installed): each PCP rank stores max_model_len / pcp
tokens of a request (core/kv_cache_interface.py:243-249); decode requests run on every PCP rank over its shard,
the fp32 output + lse all-gathered and merged (attention/context_parallel/common_cp.py:111-159); PCP with DP > 1
refused (platform.py:349-358). Figures from Qwen3-32B's config.json (64 layers, hidden 5120, 64 heads, 8 KV heads
of head_dim 128, bf16 KV) on Atlas A3.
"""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from solver.cli.main import main
from solver.estimate.compute import Work, factors_for, layer_ops
from solver.estimate.memory import memory_per_rank
from solver.estimate.memory_options import MemoryOptions, engine_options
from solver.estimate.params import count_params
from solver.estimate.step import layer_comms
from solver.estimate.step_parts import engine_decode_layout
from solver.specs.framework import load_framework
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import load_model
from solver.specs.parallel import make_parallel_config
from solver.specs.precision import resolve_precision
from deployment_files import deployment_file, run_json

A3 = load_hardware("atlas_a3")
QWEN = load_model("qwen3-32b")
VA = load_framework("vllm-ascend")
F_VA = factors_for(A3, VA.efficiency_for(A3))
S = 65536
TP8_PCP2 = {"attn_tp_size": 8, "cp_size": 2, "dense_tp_size": 8, "embed_tp_size": 8, "lmhead_tp_size": 8}


def _decode_layer(knobs: dict, world: int) -> tuple[dict, dict]:
    """Ops and collectives of one Qwen3-32B layer decoding 8 sequences at 64K, in the engine's decode layout."""
    pc = make_parallel_config(world, **knobs)
    w = Work("decode", new_tokens=8, context=S, sequences=8, logits_tokens=8)
    pc, w = engine_decode_layout(pc, w, F_VA)
    prec = resolve_precision(QWEN, A3)
    ops = {o.name: o for os_ in layer_ops(QWEN, A3, pc, prec, F_VA, w, count_params(QWEN)).values() for o in os_}
    comms = {c.name: c for cs in layer_comms(QWEN, A3, pc, prec, F_VA, w, 0.0).values() for c in cs}
    return ops, comms


def _dep(tmp_path, model: str, pc: dict, world: int = 16, phase: str = "decode") -> str:
    return deployment_file(tmp_path, model=model, hardware="atlas_a3", world_size=world, framework="vllm-ascend",
                           phase=phase, batch=8, seq_len=S, parallel_config=pc)


_run = run_json


def test_vllm_ascends_pcp_ranks_each_keep_a_1_over_pcp_share_of_the_kv_cache() -> None:
    """TP8: one KV head per rank, 2 x 1 x 128 x 2 B = 512 B per token and layer; one 64K sequence over 64
    layers: 65536 x 512 x 64 = 2 GiB; under PCP2 each rank holds half the tokens: 1 GiB, beside the pool's null
    block (128 tokens in every layer: kv_blocks)."""
    assert VA.cp_decode_shards_kv and not VA.cp_replicates_kv_cache
    prec = resolve_precision(QWEN, A3)
    opts = engine_options(MemoryOptions(), F_VA)
    pcp = memory_per_rank(QWEN, A3, make_parallel_config(16, **TP8_PCP2), prec, 1, S, opts)
    assert pcp.kv_cache_bytes - 128 * 512 * 64 == pytest.approx(65536 * 512 * 64 / 2)  # 1,073,741,824


def test_each_pcp_rank_decodes_the_whole_batch_over_half_the_keys_and_gathers_output_and_lse() -> None:
    """8 sequences at 64K: TP8 reads 8 x 65536 x 512 B = 268,435,456 B of KV per rank and layer (+ the 8 x 5120
    x 2 B input); TP8 x PCP2 reads half (134,217,728 B) for the same 8 tokens, then all-gathers the fp32 output
    + lse of its 64 / 8 = 8 heads over the 2 PCP ranks: 2 x 8 tokens x 8 heads x (128 + 1) x 4 B = 66,048 B."""
    tp8_ops, _ = _decode_layer({"attn_tp_size": 8}, 8)
    ops, comms = _decode_layer(TP8_PCP2, 16)
    assert tp8_ops["attention_core"].bytes == pytest.approx(268_435_456 + 81_920)
    assert ops["attention_core"].bytes == pytest.approx(134_217_728 + 81_920)
    merge = comms["cp_out_lse_allgather"]
    assert (merge.primitive, merge.group, merge.bytes) == ("all_gather", 2, 66_048)
    assert comms["attn_tp_allreduce"].bytes == 8 * 5120 * 2  # the whole batch on every PCP rank


def test_a_pcp_config_on_a_gqa_model_checks_valid(tmp_path) -> None:
    r, out = _run("check", _dep(tmp_path, "qwen3-32b", TP8_PCP2))
    assert r.exit_code == 0, r.stdout
    assert out["estimation"]["tpot_ms"] > 0


def test_vllm_ascend_refuses_pcp_with_data_parallel(tmp_path) -> None:
    """TP4 x PCP2 on 16 ranks would be --data-parallel-size 2 (platform.py _validate_parallel_config)."""
    pc = {**TP8_PCP2, "attn_tp_size": 4, "dense_tp_size": 4, "embed_tp_size": 4, "lmhead_tp_size": 4}
    r, out = _run("check", _dep(tmp_path, "qwen3-32b", pc))
    assert r.exit_code == 1
    assert any(v.startswith("[C.pcp_no_dp]") for v in out["violations"]["C"])


def test_vllm_ascend_pcp_with_dcp_is_not_modelled(tmp_path) -> None:
    pc = {**TP8_PCP2, "attn_tp_size": 4, "kvp_size": 2}
    r, out = _run("check", _dep(tmp_path, "qwen3-32b", pc))
    assert r.exit_code == 1
    assert any(v.startswith("[C.pcp_no_dcp]") for v in out["violations"]["C"])


def test_vllm_ascend_pcp_on_a_dsa_model_is_not_modelled(tmp_path) -> None:
    pc = {"attn_tp_size": 16, "cp_size": 2, "dense_tp_size": 16, "embed_tp_size": 16, "lmhead_tp_size": 16,
          "o_proj_tp_size": 16, "moe_tp_size": 1}
    r, out = _run("check", _dep(tmp_path, "deepseek-v3.2", pc, world=32))
    assert r.exit_code == 1
    assert any(v.startswith("[C.pcp_not_dsa]") for v in out["violations"]["C"])


def test_the_tp_x_pcp_world_must_divide(tmp_path) -> None:
    """TP8 x PCP3 = 24 ranks does not divide a world of 16: the profile's rule names it."""
    pc = {**TP8_PCP2, "cp_size": 3}
    r, out = _run("check", _dep(tmp_path, "qwen3-32b", pc))
    assert r.exit_code == 1
    assert any(v.startswith("[A.world_divisible_tp]") for v in out["violations"]["A"])


def test_the_launch_spells_pcp_beside_tp_and_no_dp(tmp_path) -> None:
    r = CliRunner().invoke(main, ["launch", _dep(tmp_path, "qwen3-32b", TP8_PCP2), "--format", "json"])
    assert r.exit_code == 0, r.stderr
    argv = json.loads(r.stdout)["nodes"][0]["argv"]
    assert argv[argv.index("--tensor-parallel-size") + 1] == "8"
    assert argv[argv.index("--prefill-context-parallel-size") + 1] == "2"
    assert "--data-parallel-size" not in argv
    assert argv[argv.index("--max-num-seqs") + 1] == "8"  # the one engine holds the planned batch


def test_the_planner_offers_pcp_on_vllm_ascend_and_check_reads_it_back_valid(tmp_path) -> None:
    """Qwen3-32B on 16 A3 ranks at 64K / 1K, latency: a candidate runs TP8 x PCP2 (the CP backbone's slot), the
    file solve writes for it checks valid with the same TPOT, and its launch has no --data-parallel-size."""
    args = ["solve", "qwen3-32b", "--hardware", "atlas_a3", "--cards", "16", "--framework", "vllm-ascend",
            "--isl", "65536", "--osl", "1024", "--scenario", "latency"]
    r, out = _run(*args)
    assert r.exit_code == 0, r.stderr
    (i, pcp), *_ = [(i, c) for i, c in enumerate(out["candidates"], 1) if c["parallel_config"].get("cp_size", 1) > 1]
    assert pcp["parallel_config"]["cp_size"] * pcp["parallel_config"]["attn_tp_size"] == 16
    path = tmp_path / "plan.yaml"
    path.write_text(CliRunner().invoke(main, [*args, "--format", "yaml"]).stdout)
    r, checked = _run("check", str(path), "--candidate", str(i))
    assert r.exit_code == 0, r.stdout
    assert checked["estimation"]["tpot_ms"] == pytest.approx(pcp["estimation"]["tpot_ms"], rel=1e-3)
    launch = CliRunner().invoke(main, ["launch", str(path), "--candidate", str(i), "--format", "json"])
    argv = json.loads(launch.stdout)["nodes"][0]["argv"]
    assert "--prefill-context-parallel-size" in argv and "--data-parallel-size" not in argv
