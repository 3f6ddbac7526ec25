"""The KV cache layout each engine allocates, as the plan prices it: one test per rule, the bytes worked out from the
engines' code (vllm-ascend 0.23.0.post1, vLLM 0.34.0 and SGLang 0.5.23, PyPI, read, not installed).

DeepSeek-V3.2: 61 layers, kv_lora_rank 512, qk_rope_head_dim 64, index_head_dim 128, index_n_heads 64.
"""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from solver.specs.dtypes import KV16, KVFormat
from solver.cli.main import main
from solver.errors import InputError
from solver.estimate.compute import Kit, Work, factors_for, layer_ops
from solver.estimate.disagg import kv_transfer
from solver.estimate.memory import memory_per_rank
from solver.estimate.memory_options import engine_options, framework_options
from solver.estimate.params import count_params
from solver.estimate.request_state import (CacheLayout, block_fields, cache_per_rank, hybrid_fields,
                                           kv_bytes_per_token_layer)
from solver.specs.framework import load_framework
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import load_model
from solver.specs.parallel import make_parallel_config
from solver.specs.precision import resolve_precision
from deployment_files import deployment_file

ROOT = Path(__file__).resolve().parents[1]
A3 = load_hardware("atlas_a3")
B200 = load_hardware("b200_sxm")
V32 = load_model("deepseek-v3.2")
LAYERS = 61
ASCEND, VLLM, SGLANG = (load_framework(n) for n in ("vllm-ascend", "vllm", "sglang"))
S = 8192
# each rank's KV pool keeps one null block no request holds (kv_blocks.reserved): its tokens in every layer
NULL = {id(fw): (fw.kv_blocks.tokens * fw.kv_blocks.reserved if fw.kv_blocks else 0) for fw in (ASCEND, VLLM, SGLANG)}


def _ops(f, pc, w):
    prec = resolve_precision(V32, A3)
    return {o.name: o for os_ in layer_ops(V32, A3, pc, prec, f, w, count_params(V32)).values() for o in os_}


def _decode(batch: int, ctx: int) -> Work:
    return Work("decode", new_tokens=batch, context=ctx, sequences=batch, logits_tokens=batch)


def test_vllm_ascend_caches_dsa_indexer_keys_unquantised_beside_the_latent() -> None:
    """vllm-ascend: one AscendMLAAttentionSpec a DSA layer, head_size = 512 + 64 + 128 = 704 values in the cache
    dtype (worker/model_runner_v1.py:384-388, 4966, 4976-4986; core/kv_cache_interface.py:115-118), 704 x 2 B =
    1,408 B a token a layer: the latent's 1,152 and 128 bf16 index values = 256 B, not 128 fp8 + a 4 B scale =
    132. One 8K request on one rank: 61 x 8,192 x 256 = 127,926,272 B of indexer keys (and the pool's null block of
    128 tokens beside it)."""
    pc = make_parallel_config(16, moe_tp_size=1)
    prec = resolve_precision(V32, A3)
    layout = framework_options(ASCEND).cache_layout
    assert layout.index_unquantised
    kv, idx, seqs = cache_per_rank(V32, pc, prec, 16, S, layout=layout)
    assert seqs == 1
    n = NULL[id(ASCEND)]
    assert kv - LAYERS * n * 1152 == LAYERS * S * 1152 == 575_668_224
    assert idx - LAYERS * n * 256 == LAYERS * S * 256 == 127_926_272
    assert (kv + idx) / (LAYERS * (S + n)) == 1408


@pytest.mark.parametrize("engine", [VLLM, SGLANG])
def test_vllm_and_sglang_keep_the_fp8_indexer_keys_with_their_scale(engine) -> None:
    """vLLM 0.34.0 and SGLang 0.5.23 cache DSA index keys as 128 fp8 values + one fp32 scale = 132 B a token a
    layer (SGLang mem_cache/memory_pool.py DSATokenToKVPool index_k_with_scale_buffer, uint8): 61 x 8,192 x 132
    = 65,961,984 B for one 8K request."""
    pc = make_parallel_config(8, moe_tp_size=1)
    prec = resolve_precision(V32, B200)
    layout = framework_options(engine).cache_layout
    assert not layout.index_unquantised
    assert cache_per_rank(V32, pc, prec, 8, S, layout=layout)[1] - LAYERS * NULL[id(engine)] * 132 == LAYERS * S * 132 == 65_961_984


def test_dense_mla_at_fp8_is_the_plain_576_byte_row() -> None:
    """A dense MLA cache at fp8 holds the 512 latent and 64 rope values at one byte each: 576 B (vLLM
    mla_attention.py:556-563 "standard fp8 KV cache format"; SGLang kv_cache_configurator.py:3412-3423, "for
    non-DSA models ... kv_lora_rank + qk_rope_head_dim"). Kimi-K2 has the same dims."""
    for name in ("deepseek-v3", "kimi-k2"):
        assert kv_bytes_per_token_layer(load_model(name), KVFormat(1)) == 512 + 64 == 576


def test_sparse_mla_at_fp8_is_the_scaled_656_byte_row() -> None:
    """A DSA layer's fp8 cache is the sparse kernels' row: 512 fp8 + 4 fp32 scales (one per 128) + 64 bf16 rope =
    512 + 16 + 128 = 656 B (vLLM flashmla_sparse.py:86-94; vllm-ascend attention/utils.py:25-36
    get_sfa_qsfa_packed_head_dim = 512 + 64 x 2 + 4 x 4)."""
    assert kv_bytes_per_token_layer(V32, KVFormat(1)) == 656


def test_kvp_ranks_each_keep_every_indexer_key_where_the_engine_replicates_them() -> None:
    """vllm-ascend under -dcp 8 (no -pcp) pages dcp x the index keys beside 1/8 of the latent
    (model_runner_v1.py:455-457 sfa_dcp_replicated_indexer_size = dcp; kv_cache_interface.py:100-113): one 8K
    request on a TP2 x DCP8 rank holds 61 x 8,192 x 1,152 / 8 = 71,958,528 B of latent and 61 x 8,192 x 256 =
    127,926,272 B of index keys. vLLM splits both by DCP: 61 x 8,192 x 132 / 8 = 8,245,248 B. (Each beside the
    pool's null block: a block of tokens in every layer of the rank.)"""
    pc = make_parallel_config(16, attn_tp_size=2, kvp_size=8, moe_tp_size=1)
    prec = resolve_precision(V32, A3)
    kv, idx, _ = cache_per_rank(V32, pc, prec, 1, S, layout=framework_options(ASCEND).cache_layout)
    n, v = NULL[id(ASCEND)], NULL[id(VLLM)]
    assert (kv - LAYERS * n * 1152, idx - LAYERS * n * 256) == (LAYERS * S * 1152 / 8, LAYERS * S * 256) == (71_958_528, 127_926_272)
    assert cache_per_rank(V32, pc, prec, 1, S, layout=framework_options(VLLM).cache_layout)[1] - LAYERS * v * 132 == 8_245_248
    assert SGLANG.kvp_replicates_indexer_keys and not VLLM.kvp_replicates_indexer_keys


def test_a_decode_step_reads_and_scores_the_indexer_keys_as_the_engine_caches_them() -> None:
    """Decode, 4 sequences at 4,096 keys: the score kernel reads each cached key once, 4 x 4,096 x 256 B
    unquantised against 4 x 4,096 x 132 B in fp8 + scale, 2,031,616 B more; it scores at the bf16 rate, not the
    8-bit one (atlas_a3 runs 8-bit scores at its int8 rate)."""
    pc = make_parallel_config(16, moe_tp_size=1)
    w = _decode(4, 4096)
    # vllm-ascend's factors on its device, the layout switch set each way (vLLM does not run on Ascend)
    f = factors_for(A3, ASCEND.efficiency_for(A3))
    plain, unq = (_ops(replace(f, indexer_keys_unquantised=on), pc, w)["indexer_score"] for on in (False, True))
    assert unq.bytes - plain.bytes == pytest.approx(4 * 4096 * (256 - 132)) == 2_031_616
    assert unq.flops == plain.flops
    assert (unq.compute_s / unq.flops) / (plain.compute_s / plain.flops) == pytest.approx(
        A3.flops("int8") / A3.flops("bf16"))


def test_replicated_indexer_keys_are_scored_whole_on_every_kvp_rank() -> None:
    """Under TP2 x KVP8 a rank scores 1/8 of each query's keys where KVP splits the index keys, all of them where
    each KVP rank keeps them all: 8 x the FLOPs; the core attention stays split."""
    pc = make_parallel_config(16, attn_tp_size=2, kvp_size=8, moe_tp_size=1)
    w = _decode(4, 32768)
    f = factors_for(A3, ASCEND.efficiency_for(A3))
    split, whole = (_ops(replace(f, kvp_replicates_indexer_keys=on), pc, w) for on in (False, True))
    assert whole["indexer_score"].flops == pytest.approx(8 * split["indexer_score"].flops)
    assert whole["attention_core"].flops == split["attention_core"].flops


def test_memory_and_step_price_one_indexer_layout() -> None:
    """The layout the step costs read from Factors is the one the memory side reads from the profile."""
    for fw in (ASCEND, VLLM, SGLANG):
        hw = A3 if fw is ASCEND else B200
        f = factors_for(hw, fw.efficiency_for(hw))
        assert engine_options(None, f).cache_layout == framework_options(fw).cache_layout
    ascend_hybrid = hybrid_fields(ASCEND.hybrid_state)
    assert framework_options(ASCEND).cache_layout == CacheLayout(False, True, True, **ascend_hybrid,
                                                                 **block_fields(ASCEND.kv_blocks))


def test_vllm_ascend_memory_prices_the_engines_indexer_keys() -> None:
    """memory_per_rank under vllm-ascend's layout: one request's 61 x 4,352 x (1,152 + 256) B = 373,784,576 B
    where the fp8 keys would give 61 x 4,352 x 1,284 = 340,866,048 B: 9.7% more cache a request, so about 9%
    fewer requests held."""
    pc = make_parallel_config(16, moe_tp_size=1)
    prec = resolve_precision(V32, A3, "int8")
    mem = memory_per_rank(V32, A3, pc, prec, 16, 4352, framework_options(ASCEND))
    assert mem.kv_cache_bytes + mem.indexer_cache_bytes - LAYERS * NULL[id(ASCEND)] * 1408 == LAYERS * 4352 * 1408 == 373_784_576


def test_a_decode_rank_receives_the_indexer_keys_as_its_engine_keeps_them() -> None:
    """Disaggregated hand-off of a 4,096-token V3.2 request to a TP2 x DCP8 decode rank: the latent arrives split,
    61 x 4,096 x 1,152 / 8 = 35,979,264 B; vllm-ascend's indexer keys whole and unquantised, 61 x 4,096 x 256 =
    63,963,136 B (vLLM's: 61 x 4,096 x 132 / 8 = 4,122,624 B). The whole request: 61 x 4,096 x 1,408 =
    351,797,248 B."""
    pre, dec = make_parallel_config(16, moe_tp_size=1), make_parallel_config(16, attn_tp_size=2, kvp_size=8,
                                                                              moe_tp_size=1)
    t = kv_transfer(V32, A3, pre, dec, KV16, 4096, layout=framework_options(ASCEND).cache_layout)
    assert t.recv_bytes_per_rank == 35_979_264 + 63_963_136
    assert t.bytes_per_request == LAYERS * 4096 * 1408 == 351_797_248
    assert kv_transfer(V32, A3, pre, dec, KV16, 4096).recv_bytes_per_rank == 35_979_264 + 4_122_624


def test_replicated_indexer_keys_need_kvp_among_the_knobs(tmp_path) -> None:
    """An engine without KVP (TRT-LLM's profile: kvp_size fixed at 1) has no KVP ranks to replicate them on."""
    data = yaml.safe_load((ROOT / "solver" / "frameworks" / "trtllm.yaml").read_text())
    assert "kvp_size" not in data["knobs"]
    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump({**data, "name": "mine", "kvp_replicates_indexer_keys": True}))
    with pytest.raises(InputError, match="kvp_replicates_indexer_keys: set without kvp_size among the knobs"):
        load_framework(str(path))


def _launch(tmp_path, engine: str, **extra) -> list[str]:
    path = deployment_file(tmp_path, model="deepseek-v3.2", hardware="b200_sxm", world_size=8, framework=engine,
                           phase="decode", batch=8, seq_len=4096,
                           parallel_config={"attn_tp_size": 8, "dense_tp_size": 8, "embed_tp_size": 8,
                                            "lmhead_tp_size": 8, "moe_tp_size": 1, "o_proj_tp_size": 8}, **extra)
    r = CliRunner().invoke(main, ["launch", path, "--format", "json"])
    assert r.exit_code == 0, r.stderr
    return json.loads(r.stdout)["nodes"][0]["argv"]


def _flag(argv: list[str], flag: str) -> str | None:
    return argv[argv.index(flag) + 1] if flag in argv else None


@pytest.mark.parametrize("engine", ["sglang", "vllm"])
def test_a_dsa_models_command_names_the_16_bit_cache_the_plan_prices(tmp_path, engine) -> None:
    """The plan prices a DSA model's unset KV at the model dtype (bf16), while `auto` resolves to fp8 on B200
    (SGLang arg_groups/overrides.py:532-538 for every DSA model on SM >= 10; vLLM model_executor/models/config.py
    for GLM-5 on SM10x): the command says bfloat16, unset or chosen as bf16."""
    assert _flag(_launch(tmp_path, engine), "--kv-cache-dtype") == "bfloat16"
    assert _flag(_launch(tmp_path, engine, kv_dtype="bf16"), "--kv-cache-dtype") == "bfloat16"


def test_a_dsa_models_fp8_cache_is_spelled_fp8_e4m3_on_sglang(tmp_path) -> None:
    """SGLang's DSA takes bfloat16 or fp8_e4m3 only (overrides.py:539-544): fp8 is spelled fp8_e4m3."""
    assert _flag(_launch(tmp_path, "sglang", kv_dtype="fp8"), "--kv-cache-dtype") == "fp8_e4m3"


def test_a_dense_models_bf16_cache_is_left_to_auto(tmp_path) -> None:
    """A dense MLA model's auto is the model dtype on both engines: no flag where the KV dtype is unset."""
    path = deployment_file(tmp_path, model="deepseek-v3", hardware="b200_sxm", world_size=8, framework="sglang",
                           phase="decode", batch=8, seq_len=4096,
                           parallel_config={"attn_tp_size": 8, "dense_tp_size": 8, "embed_tp_size": 8,
                                            "lmhead_tp_size": 8, "moe_tp_size": 1, "o_proj_tp_size": 8})
    r = CliRunner().invoke(main, ["launch", path, "--format", "json"])
    assert r.exit_code == 0, r.stderr
    assert "--kv-cache-dtype" not in json.loads(r.stdout)["nodes"][0]["argv"]


def test_a_compressed_attention_indexer_follows_the_engines_layout_in_memory_and_step() -> None:
    """DeepSeek-V4-Pro's compressed sparse attention keeps one indexer key per 4 tokens (ratio 4, index_head_dim
    128): 132 / 4 = 33 B per token in fp8 + scale, 256 / 4 = 64 B where the engine caches keys unquantised. Under
    attention TP4 x KVP2 an engine that replicates the keys over KVP holds twice a split layout's per rank, and its
    decode step scores and reads twice as many (memory and the step price one layout, as for DSA)."""
    v4, h200 = load_model("deepseek-v4-pro"), load_hardware("h200_sxm")
    (csa,) = {b for b, _ in v4.block_groups if type(b).__name__ == "CompressedAttention" and b.indexer is not None}
    st = csa.state(KV16, 1)
    assert (st.index_bytes(False), st.index_bytes(True)) == (132 / 4, 256 / 4) == (33, 64)
    pc = make_parallel_config(8, attn_tp_size=4, kvp_size=2, moe_tp_size=1)
    prec = resolve_precision(v4, h200)
    split = cache_per_rank(v4, pc, prec, 1, 65536, layout=CacheLayout())[1]
    whole = cache_per_rank(v4, pc, prec, 1, 65536, layout=CacheLayout(kvp_replicates_index=True))[1]
    assert whole == pytest.approx(2 * split)
    f = factors_for(h200, VLLM.efficiency_for(h200))
    w = _decode(8, 65536)

    def score(ff):
        (op,) = [o for o in csa.ops(Kit(h200, pc, prec, ff, w)) if o.name == "indexer_score"]
        return op.flops, op.bytes

    (f0, b0), (f1, b1) = score(f), score(replace(f, kvp_replicates_indexer_keys=True))
    assert f1 == pytest.approx(2 * f0) and b1 > 1.9 * b0
