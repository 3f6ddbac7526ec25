"""ATOM's prefill context parallel (-pcp, cp_size) as the planner plans it: one test per rule.

Source: engines.md, Flags (prefill CP row): `-pcp`, DeepSeek-V4 only, world = tp x pp x pcp. What the facts do not
say (the KV layout, decode) is assumed as vLLM's -pcp (atom.yaml: cp_replicates_kv_cache). Figures are
hand-computed from DeepSeek-V4-Pro's config.json (hidden 7168, q_lora_rank 1536, 128 heads of head_dim 512,
compress_ratios[0] = 128, sliding_window 128), per layer and per rank, for one 64K prompt on 8 MI355X.
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
from solver.specs.framework import load_framework
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import load_model
from solver.specs.parallel import make_parallel_config
from solver.specs.precision import resolve_precision
from deployment_files import deployment_file, run_json

MI355 = load_hardware("mi355x")
V4 = load_model("deepseek-v4-pro")
ATOM = load_framework("atom")
F_ATOM = factors_for(MI355, ATOM.efficiency_for(MI355))
S = 65536  # a 64K prompt
TP8 = {"attn_tp_size": 8, "dense_tp_size": 8, "embed_tp_size": 8, "lmhead_tp_size": 8, "moe_tp_size": 1}
TP4_PCP2 = {"attn_tp_size": 4, "cp_size": 2, "dense_tp_size": 4, "embed_tp_size": 4, "lmhead_tp_size": 4,
            "moe_tp_size": 1}


def _prefill(tokens: int) -> Work:
    return Work("prefill", new_tokens=tokens, context=(tokens + 1) / 2, sequences=1, logits_tokens=1)


def _first_layer(pc_knobs: dict) -> tuple[dict, dict]:
    """The ops and collectives of V4-Pro's first layer (HCA, compress ratio 128) for one 64K prompt."""
    pc = make_parallel_config(8, **pc_knobs)
    prec = resolve_precision(V4, MI355)
    w = _prefill(S)
    ops = {o.name: o for os_ in layer_ops(V4, MI355, pc, prec, F_ATOM, w, count_params(V4)).values() for o in os_}
    comms = {c.name: c for cs in layer_comms(V4, MI355, pc, prec, F_ATOM, w, 0.0).values() for c in cs}
    return ops, comms


def _dep(tmp_path, model: str, pc: dict, world: int = 8) -> str:
    return deployment_file(tmp_path, model=model, hardware="mi355x", world_size=world, framework="atom",
                           phase="prefill", batch=1, seq_len=S, parallel_config=pc)


_run = run_json


def test_each_pcp_rank_projects_half_of_a_v4_prompt_and_gathers_the_others_compressed_kv() -> None:
    """TP4 x PCP2 against TP8: the replicated projections (wq_a, q_norm, wkv, kv_norm, the ratio-128 compressor:
    22,088,192 params) run on S / 2 tokens, the head-split ones (wq_b, sinks: 100,663,424) over 4 ranks; the
    o_proj all-reduce carries S / 2 tokens over 4 ranks; the new compressed KV, 512 x 2 B / 128 = 8 B per
    token, is all-gathered over the 2 PCP ranks."""
    replicated = 7168 * 1536 + 1536 + 7168 * 512 + 512 + (2 * 7168 * 512 + 128 * 512 + 512)
    split = 1536 * 128 * 512 + 128
    assert (replicated, split) == (22_088_192, 100_663_424)
    tp8_ops, tp8_comms = _first_layer(TP8)
    pcp_ops, pcp_comms = _first_layer(TP4_PCP2)
    assert tp8_ops["qkv_proj"].flops == pytest.approx(2 * S * (replicated + split / 8))  # 4.544e12
    assert pcp_ops["qkv_proj"].flops == pytest.approx(2 * (S / 2) * (replicated + split / 4))  # 3.097e12
    # the attention core: 32 heads over half the pairs = 16 heads over all of them
    assert pcp_ops["attention_core"].flops == pytest.approx(tp8_ops["attention_core"].flops)
    assert (tp8_comms["attn_tp_allreduce"].group, tp8_comms["attn_tp_allreduce"].bytes) == (8, S * 7168 * 2)
    assert (pcp_comms["attn_tp_allreduce"].group, pcp_comms["attn_tp_allreduce"].bytes) == (4, S / 2 * 7168 * 2)
    gather = pcp_comms["kv_allgather"]
    assert (gather.primitive, gather.group, gather.bytes) == ("all_gather", 2, S * 512 * 2 / 128)
    assert "kv_allgather" not in tp8_comms


def test_pcp2_lowers_v4_pros_64k_prefill_on_8_mi355x(tmp_path) -> None:
    """The same 8 ranks, -tp 4 -pcp 2 against -tp 8: the per-layer savings above (the replicated projections,
    the indexer of the ratio-4 layers and the all-reduce halved) shorten the 64K prompt's prefill, by less than
    the halved all-reduce alone would say: TP4's all-reduce rides the links to its 3 peers, 3 of the node's 7
    (comm.peer_rate_Bps), TP8's all 7 (1,925 against 2,121 ms at the stop-43 factors)."""
    r8, tp8 = _run("check", _dep(tmp_path, "deepseek-v4-pro", TP8))
    r2, pcp = _run("check", _dep(tmp_path, "deepseek-v4-pro", TP4_PCP2))
    assert (r8.exit_code, r2.exit_code) == (0, 0), (r8.stdout, r2.stdout)
    assert pcp["estimation"]["ttft_ms"] < 0.95 * tp8["estimation"]["ttft_ms"]


def test_atoms_pcp_ranks_each_keep_the_whole_kv_cache() -> None:
    """Assumed as vLLM's -pcp: a PCP rank holds what a TP rank without -pcp holds (the one shared KV head is
    replicated over TP either way)."""
    assert ATOM.cp_replicates_kv_cache
    prec = resolve_precision(V4, MI355)
    opts = engine_options(MemoryOptions(), F_ATOM)
    tp8 = memory_per_rank(V4, MI355, make_parallel_config(8, **TP8), prec, 1, S, opts)
    pcp = memory_per_rank(V4, MI355, make_parallel_config(8, **TP4_PCP2), prec, 1, S, opts)
    assert pcp.kv_cache_bytes == pytest.approx(tp8.kv_cache_bytes)


def test_atom_pcp_runs_on_compressed_sparse_attention_models_only(tmp_path) -> None:
    r, out = _run("check", _dep(tmp_path, "deepseek-v3", {**TP4_PCP2, "o_proj_tp_size": 4}))
    assert r.exit_code == 1
    assert any(v.startswith("[C.pcp_csa_only]") for v in out["violations"]["C"])


def test_atom_pcp_is_one_tp_x_pcp_group_without_dp_or_dcp(tmp_path) -> None:
    """world = tp x pp x pcp: TP2 x PCP2 on 8 ranks would need -dp 2, which the facts do not compose with -pcp."""
    pc = {**TP4_PCP2, "attn_tp_size": 2, "dense_tp_size": 2, "embed_tp_size": 2, "lmhead_tp_size": 2}
    r, out = _run("check", _dep(tmp_path, "deepseek-v4-pro", pc))
    assert r.exit_code == 1
    assert any(v.startswith("[C.pcp_one_tp_group]") for v in out["violations"]["C"])


def test_the_launch_spells_pcp_beside_tp_and_no_dp(tmp_path) -> None:
    r = CliRunner().invoke(main, ["launch", _dep(tmp_path, "deepseek-v4-pro", TP4_PCP2), "--format", "json"])
    assert r.exit_code == 0, r.stderr
    argv = json.loads(r.stdout)["nodes"][0]["argv"]
    assert argv[argv.index("-tp") + 1] == "4" and argv[argv.index("-pcp") + 1] == "2"
    assert "-dp" not in argv and "--enable-dp-attention" not in argv
    assert argv[argv.index("--max-num-seqs") + 1] == "1"  # the one engine holds the planned batch
