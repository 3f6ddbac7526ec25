"""vLLM's prefill context parallel (-pcp, cp_size) as the planner plans it: one test per rule.

Source of the rules: the vLLM 0.34.0 wheel (PyPI): config/parallel.py (world = PP x TP x PCP per DP engine, the EP
group spans TP x PCP x DP, PCP "does not increase the KV-cache shard count", DCP under PCP spans the PCP axis),
v1/worker/gpu/pcp_manager.py (DualChunkSwap: 2P chunks, rank r takes r and 2P-1-r; decode requests owned by one
PCP rank; MLA models only), v1/attention/ops/pcp.py (every PCP rank keeps a complete cache replica). Figures are
hand-computed from the model cards' dimensions, per layer and per rank unless a test says otherwise.
"""
from __future__ import annotations

import json

import pytest
import yaml
from click.testing import CliRunner

from solver.cli.main import main
from solver.estimate.compute import Work, factors_for, layer_ops
from solver.estimate.memory import memory_per_rank
from solver.estimate.memory_options import MemoryOptions, engine_options
from solver.estimate.request_state import CacheLayout, cache_per_rank
from solver.estimate.params import count_params
from solver.estimate.step import layer_comms
from solver.specs.framework import load_framework
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import load_model
from solver.specs.parallel import make_parallel_config
from solver.specs.precision import resolve_precision
from deployment_files import deployment_file

H100 = load_hardware("h100_sxm")
LLAMA70 = load_model("llama-3.1-70b")
V3 = load_model("deepseek-v3")
VLLM = load_framework("vllm")
F_VLLM = factors_for(H100, VLLM.efficiency_for(H100))
S = 131072  # a 128K prompt


def _prefill(tokens: int) -> Work:
    # one prompt: mean keys per query (S + 1) / 2 under the causal mask
    return Work("prefill", new_tokens=tokens, context=(tokens + 1) / 2, sequences=1, logits_tokens=1)


def _dep(tmp_path, model: str, pc: dict, world: int = 16, phase: str = "prefill") -> str:
    return deployment_file(tmp_path, model=model, hardware="h100_sxm", world_size=world, framework="vllm",
                           phase=phase, batch=1, seq_len=S, parallel_config=pc)


def _check(path: str):
    r = CliRunner().invoke(main, ["check", path, "--format", "json"])
    return r, json.loads(r.stdout)


def _argv(path: str) -> list[list[str]]:
    r = CliRunner().invoke(main, ["launch", path, "--format", "json"])
    assert r.exit_code == 0, r.stderr
    return [n["argv"] for n in json.loads(r.stdout)["nodes"]]


def _flag(argv: list[str], flag: str) -> str | None:
    return argv[argv.index(flag) + 1] if flag in argv else None


TP8_PCP2 = {"attn_tp_size": 8, "dense_tp_size": 8, "embed_tp_size": 8, "lmhead_tp_size": 8, "cp_size": 2}
V3_TP8_PCP2 = {**TP8_PCP2, "o_proj_tp_size": 8, "moe_tp_size": 1}
V3_TP4_PCP2_DP2 = {"attn_tp_size": 4, "dense_tp_size": 4, "embed_tp_size": 4, "lmhead_tp_size": 4,
                   "o_proj_tp_size": 4, "moe_tp_size": 1, "cp_size": 2}


def test_each_pcp_rank_attends_its_half_of_a_128k_prompt_and_all_gathers_the_other_halfs_kv() -> None:
    """Llama-3.1-70B, TP8 x PCP2, a 128K prompt: a rank computes the projections of S / 2 tokens and the
    attention of 64 / 8 = 8 query heads over half the causal (query, key) pairs (DualChunkSwap balances the
    mask), then all-gathers the K/V of the 2 PCP ranks: its 1 KV head (8 KV heads / TP8) x 128 x (K, V) x 2 bytes
    = 512 bytes per token, S tokens gathered."""
    pc = make_parallel_config(16, **TP8_PCP2)
    prec = resolve_precision(LLAMA70, H100)
    w = _prefill(S)
    ops = {o.name: o for os_ in layer_ops(LLAMA70, H100, pc, prec, F_VLLM, w, count_params(LLAMA70)).values()
           for o in os_}
    # 2 FLOPs x 8 heads x S queries x 65,536.5 keys x (128 + 128) / 2 PCP ranks
    assert ops["attention_core"].flops == pytest.approx(2 * 8 * 131072 * 65536.5 * 256 / 2)
    assert ops["attention_core"].flops == pytest.approx(17_592_320_262_144)  # 1/16 of the layer's 2.81e14
    comms = {c.name: c for cs in layer_comms(LLAMA70, H100, pc, prec, F_VLLM, w, 0.0).values() for c in cs}
    gather = comms["kv_allgather"]
    assert (gather.primitive, gather.group, gather.bytes) == ("all_gather", 2, 131072 * 512)  # 64 MiB per layer


def test_vllms_pcp_ranks_each_keep_the_whole_kv_cache() -> None:
    """vLLM: "PCP expands the process world size but does not increase the KV-cache shard count": a PCP2 x TP8
    rank holds the same KV as a TP8 rank, 80 layers x S x 512 bytes = 5.37 GB for one 128K request, where the
    seed's CP (each CP rank its share of the tokens) would hold half."""
    pc = make_parallel_config(16, **TP8_PCP2)
    prec = resolve_precision(LLAMA70, H100)
    assert VLLM.cp_replicates_kv_cache and F_VLLM.cp_replicates_kv_cache
    whole = 80 * 131072 * 512
    assert cache_per_rank(LLAMA70, pc, prec, 1, S, layout=CacheLayout(cp_replicates_kv=True))[0] == pytest.approx(whole)
    assert cache_per_rank(LLAMA70, pc, prec, 1, S)[0] == pytest.approx(whole / 2)
    opts = engine_options(MemoryOptions(), F_VLLM)
    mem = memory_per_rank(LLAMA70, H100, pc, prec, 1, S, opts)
    null = 80 * 64 * 512  # the pool's null block: 64 tokens in every layer (kv_blocks)
    assert opts.cache_layout.kv_block * opts.cache_layout.reserved_blocks == 64
    assert mem.kv_cache_bytes - null == pytest.approx(whole)


def test_vllm_pcp_runs_on_mla_models_only(tmp_path) -> None:
    r, out = _check(_dep(tmp_path, "llama-3.1-70b", TP8_PCP2))
    assert r.exit_code == 1
    assert any(v.startswith("[C.pcp_mla_only]") for v in out["violations"]["C"])


def test_vllm_pcp_refuses_an_mla_model_with_recurrent_layers() -> None:
    """Kimi-K3 (MLA beside KDA linear-attention layers): the KDA layers are MambaBase layers whose backend has no
    impl, so supports_pcp is False and vLLM 0.34.0's check_attention_cp_compatibility asserts (cp_utils.py)."""
    r = CliRunner().invoke(main, ["estimate", "kimi-k3", "--hardware", "mi355x", "--cards", "8", "--framework",
                                  "vllm", "--cp", "2", "--attn-tp", "4", "--dense-tp", "4", "--embed-tp", "4",
                                  "--lmhead-tp", "4", "--isl", "4096", "--osl", "256", "--concurrency", "4"])
    assert r.exit_code == 2 and "[C.pcp_mla_only]" in r.stderr and "recurrent" in r.stderr


def test_mla_prefill_under_pcp2_x_tp8_splits_the_pairs_and_gathers_the_latent() -> None:
    """DeepSeek-V3, TP8 x PCP2, a 128K prompt: MLA prefill runs non-absorbed, 128 / 8 = 16 heads of
    (192 + 128) per (query, key) pair, half the pairs per PCP rank; the gathered K/V is the latent cache entry,
    (512 + 64) x 2 bytes (bf16) per token, replicated over TP."""
    pc = make_parallel_config(16, **V3_TP8_PCP2)
    prec = resolve_precision(V3, H100, kv_dtype="bf16")
    w = _prefill(S)
    ops = {o.name: o for os_ in layer_ops(V3, H100, pc, prec, F_VLLM, w, count_params(V3)).values() for o in os_}
    assert ops["attention_core"].flops == pytest.approx(2 * 16 * 131072 * 65536.5 * 320 / 2)
    comms = {c.name: c for cs in layer_comms(V3, H100, pc, prec, F_VLLM, w, 0.0).values() for c in cs}
    assert (comms["kv_allgather"].group, comms["kv_allgather"].bytes) == (2, 131072 * 1152)


def test_vllm_moe_ep_spans_tp_x_pcp_x_dp(tmp_path) -> None:
    """DeepSeek-V3 on 16 H100 as TP4 x PCP2 x DP2 with --enable-expert-parallel: the EP group is all 16 ranks
    (vLLM: "the EP group spans the TP x PCP x DP ranks"), 256 / 16 = 16 experts per rank, and the dispatch
    all-to-all runs over 16; MoE EP over the DP ranks alone (moe_tp_size = TP x PCP = 8) is no vLLM layout."""
    path = _dep(tmp_path, "deepseek-v3", V3_TP4_PCP2_DP2)
    r, out = _check(path)
    # the rules take it; memory refuses it, just: 81.75 GB a rank against 81.60, its command's deepep_low_latency
    # buffer at the engine's batched-DP budget of 256 tokens among it (estimate/buffers.py; benchmarks/README.md,
    # Stop 49)
    assert not out["violations"]["A"] and not out["violations"]["C"], out
    assert [m.startswith("memory per rank") for m in out["violations"]["B"]] == [True], out
    pc = make_parallel_config(16, **V3_TP4_PCP2_DP2)
    assert pc.moe_ep_size == 16 and V3.num_experts // pc.moe_ep_size == 16
    prec = resolve_precision(V3, H100)
    comms = {c.name: c for cs in layer_comms(V3, H100, pc, prec, F_VLLM, _prefill(8192), 0.0).values() for c in cs}
    assert comms["ep_dispatch"].group == 16
    r, out = _check(_dep(tmp_path, "deepseek-v3", {**V3_TP4_PCP2_DP2, "moe_tp_size": 8}))
    assert r.exit_code == 1 and any(v.startswith("[C.moe_tp_world_or_ep]") for v in out["violations"]["C"])


def test_the_launch_spells_pcp_and_counts_dp_engines_of_tp_x_pcp_ranks(tmp_path) -> None:
    """TP4 x PCP2 x DP2 on two 8-GPU nodes: each node runs one DP engine of 4 x 2 ranks."""
    nodes = _argv(_dep(tmp_path, "deepseek-v3", V3_TP4_PCP2_DP2))
    assert len(nodes) == 2
    for rank, argv in enumerate(nodes):
        assert _flag(argv, "--tensor-parallel-size") == "4"
        assert _flag(argv, "--prefill-context-parallel-size") == "2"
        assert _flag(argv, "--data-parallel-size") == "2"
        assert _flag(argv, "--data-parallel-size-local") == "1"
        assert "--enable-expert-parallel" in argv and "--nnodes" not in argv
    assert _flag(nodes[1], "--data-parallel-start-rank") == "1"


def test_one_tp_x_pcp_engine_over_two_nodes_launches_with_nnodes(tmp_path) -> None:
    nodes = _argv(_dep(tmp_path, "deepseek-v3", V3_TP8_PCP2))
    for rank, argv in enumerate(nodes):
        assert _flag(argv, "--prefill-context-parallel-size") == "2"
        assert _flag(argv, "--nnodes") == "2" and _flag(argv, "--node-rank") == str(rank)
        assert "--data-parallel-size" not in argv


def test_the_world_must_hold_whole_tp_x_pcp_engines(tmp_path) -> None:
    r, out = _check(_dep(tmp_path, "deepseek-v3", V3_TP8_PCP2, world=24))
    assert r.exit_code == 1 and any(v.startswith("[A.world_divisible_tp]") for v in out["violations"]["A"])


def test_pcp_with_dcp_is_refused_as_a_layout_not_modelled(tmp_path) -> None:
    pc = {**V3_TP8_PCP2, "attn_tp_size": 4, "kvp_size": 2}
    r, out = _check(_dep(tmp_path, "deepseek-v3", pc))
    assert r.exit_code == 1 and any(v.startswith("[C.pcp_no_dcp]") for v in out["violations"]["C"])


def test_the_planner_plans_pcp_for_a_long_mla_prefill_and_not_for_a_gqa_model() -> None:
    def solve(model: str) -> list[dict]:
        r = CliRunner().invoke(main, ["solve", model, "--hardware", "h100_sxm", "--cards", "16", "--framework",
                                      "vllm", "--phase", "prefill", "--isl", str(S), "--format", "json"])
        assert r.exit_code == 0, r.stderr
        return [c["parallel_config"] for c in json.loads(r.stdout)["candidates"]]

    assert any(pc.get("cp_size", 1) > 1 for pc in solve("deepseek-v3"))
    assert all(pc.get("cp_size", 1) == 1 for pc in solve("llama-3.1-70b"))


# A decode step under PCP (vLLM 0.34.0, -pcp without -dcp: ParallelConfig.pcp_shard_decode_requests): each
# request is decoded by one PCP rank (v1/worker/gpu/pcp_manager.py _iter_rank_chunks, a round-robin owner), and
# since every rank keeps the whole cache, each layer all-gathers the new latent (kv_c_normed, 512 bf16) and rope
# key (k_pe, 64 bf16) of every rank's tokens, one all_gather each, padded to the busiest rank's rows, before the
# cache write (v1/attention/ops/pcp.py _gather_prefill_cache_inputs from mla_attention.py update_kv_cache); before
# sampling the last hidden states are all-gathered back to the whole batch on every rank (restore_hidden_states),
# which then computes the logits of all of them.
V3_TP4_PCP4 = {"attn_tp_size": 4, "dense_tp_size": 4, "embed_tp_size": 4, "lmhead_tp_size": 4,
               "o_proj_tp_size": 4, "moe_tp_size": 1, "cp_size": 4}
DECODE_8 = Work("decode", new_tokens=8, context=S + 512, sequences=8, logits_tokens=8)  # one engine's step
NVLINK = 450e9 * 0.82  # h100_sxm intra_node: line rate x efficiency (vllm.yaml comm 1.0)
RDMA = 50e9 * 0.86  # inter_node
V3_LAYERS = 61  # all MLA


def _decode_step(framework: str, pc_knobs: dict):
    from solver.estimate.step import step_cost

    fw = load_framework(framework)
    f = factors_for(H100, fw.efficiency_for(H100))
    pc = make_parallel_config(16, **pc_knobs)
    return step_cost(V3, H100, pc, resolve_precision(V3, H100), f, DECODE_8)


def _comm_sums(step, name: str) -> tuple[float, float, int]:
    """(bytes, seconds, groups) summed over the step's records of collective `name`."""
    cs = [c for c in step.comms if c.name == name]
    return sum(c.bytes for c in cs), sum(c.time_s for c in cs), max((c.group for c in cs), default=0)


def _all_gather_two_nodes(bytes_out: float) -> float:
    # PCP ranks 4 apart over two 8-GPU nodes: 2 members per node, then 2 nodes; each level its latency plus
    # (k - 1) / k of what is left (comm.reduce_scatter_s mirrored): NVLink 10 us, RDMA 20 us
    return 10e-6 + bytes_out / 2 / NVLINK + 20e-6 + bytes_out / 2 / 2 / RDMA


def test_a_pcp_decode_all_gathers_every_layers_new_latent_and_rope_key_over_the_pcp_ranks() -> None:
    """DeepSeek-V3 TP4 x PCP4 on 16 H100, 8 sequences decoding at 128K: each of the 4 PCP ranks owns 2 of them;
    per layer it all-gathers 4 x 2 rows of the latent (512 x 2 bytes) and of the rope key (64 x 2 bytes):
    8,192 and 1,024 bytes, each 30.06 us over the two nodes the group spans, 3.67 ms over 61 layers."""
    step = _decode_step("vllm", V3_TP4_PCP4)
    latent, t_latent, group = _comm_sums(step, "cp_latent_allgather")
    rope, t_rope, _ = _comm_sums(step, "cp_rope_allgather")
    assert group == 4
    assert latent == pytest.approx(V3_LAYERS * 4 * 2 * 512 * 2) and rope == pytest.approx(V3_LAYERS * 4 * 2 * 64 * 2)
    assert t_latent == pytest.approx(V3_LAYERS * _all_gather_two_nodes(8192))
    assert t_rope == pytest.approx(V3_LAYERS * _all_gather_two_nodes(1024))
    assert t_latent / V3_LAYERS == pytest.approx(30.06e-6, rel=1e-3)
    assert t_latent + t_rope == pytest.approx(3.67e-3, rel=2e-3)
    gathers = [c for c in step.comms if c.name.startswith("cp_") and c.module == "attention"]
    assert all(c.exposed_s == c.time_s for c in gathers)  # ahead of the cache write: nothing hides them


def test_a_pcp_decode_gathers_the_last_hidden_states_and_every_rank_samples_the_whole_batch() -> None:
    """The same step: 4 x 2 rows of 7,168 bf16 hidden values (114,688 bytes, 30.82 us), then each rank's LM head
    (vocabulary over TP4) computes the logits of all 8 tokens: 2 x 8 / 4 x 129,280 x 7,168 FLOPs."""
    step = _decode_step("vllm", V3_TP4_PCP4)
    hidden, t_hidden, group = _comm_sums(step, "cp_hidden_allgather")
    assert (hidden, group) == (4 * 2 * 7168 * 2, 4)
    assert t_hidden == pytest.approx(_all_gather_two_nodes(114_688))
    assert t_hidden == pytest.approx(30.82e-6, rel=1e-3)
    lm = next(o for o in step.ops if o.name == "lm_head")
    assert lm.flops == pytest.approx(2 * 8 / 4 * 129_280 * 7168)


def test_the_seeds_cp_decode_shards_the_cache_and_gathers_nothing() -> None:
    """The generic engine's CP shards each request's cache over its ranks (the seed): a rank decodes its own
    2 sequences against its own shard, with no gather, and computes their logits only."""
    step = _decode_step("generic", V3_TP4_PCP4)
    assert not [c for c in step.comms if c.name.startswith("cp_")]
    lm = next(o for o in step.ops if o.name == "lm_head")
    assert lm.flops == pytest.approx(2 * 2 / 4 * 129_280 * 7168)


def test_check_tells_a_vllm_pcp_decode_that_only_kvp_splits_the_kv(tmp_path) -> None:
    """2 requests at 128K on TP4 x PCP4: every rank keeps both whole, 2 x 131,072 x 1,152 bytes x 61 layers =
    18.4 GB, over half the memory left after the weights; the seed's "consider KVP / CP" would point at a knob
    that does not split it under vLLM."""
    path = tmp_path / "dep.yaml"
    path.write_text(yaml.safe_dump({"model": "deepseek-v3", "hardware": "h100_sxm", "world_size": 16,
                                    "framework": "vllm", "phase": "decode", "batch": 2, "seq_len": S,
                                    "parallel_config": V3_TP4_PCP4}))
    r, out = _check(str(path))
    kv = [w for w in out["warnings"]["B"] if w.startswith("KV cache above 50%")]
    assert kv and "consider KVP (kvp_size)" in kv[0] and "KVP / CP" not in kv[0]
    assert any(n.startswith("cp_size 4 splits prompts") and "all-gathers the new K/V" in n for n in out["notes"])


def test_a_framework_refusal_names_the_flags_the_user_set_not_the_ones_its_message_suggests() -> None:
    """vLLM refuses prefill CP on a GQA model and suggests kvp_size in its message: the refusal is about --cp,
    which the user gave, not --kvp, which the message names as the alternative."""
    from click.testing import CliRunner

    from solver.cli.main import main

    r = CliRunner().invoke(main, ["memory", "qwen3-235b-a22b", "--hardware", "h200_sxm", "--cards", "8", "--cp", "2",
                                  "--framework", "vllm", "--batch", "1", "--seq-len", "1000"])
    assert r.exit_code == 2 and r.stderr.startswith("error: --cp: not runnable under framework vllm: [C.pcp_mla_only]")
