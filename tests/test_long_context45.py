"""Long contexts (128K to 1M tokens) as a team deploys them: what a rank holds and computes, hand-computed from
the checkpoints' configs (/work/shared/facts/model_configs) and compared with `shardplan memory` / `estimate`."""
from __future__ import annotations

import pytest

from solver import api
from solver.rank.reason import decision_tree_reason
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import load_model
from solver.specs.parallel import make_parallel_config
from solver.specs.scenario import Scenario


def test_sliding_layers_hold_their_window_and_full_layers_the_prompt() -> None:
    """gpt-oss-120b at 131,072 tokens on 8 x H200, attn_tp 8: 36 layers alternate sliding (window 128) and full;
    8 KV heads of 64 over 8 ranks leave one head a rank: K + V = 2 x 64 x 2 B = 256 B per token per layer.
    18 full layers x 131,072 x 256 = 603,979,776 B; 18 sliding layers x 128 x 256 = 589,824 B;
    total 604,569,600 B (a sliding layer holding the prompt would add 18 x 130,944 x 256 = 603 MB)."""
    kv = api.memory("gpt-oss-120b", "h200_sxm", 8, 1, 131072, attn_tp_size=8).as_dict()["breakdown"]["kv_cache"]
    assert kv * 1e9 == pytest.approx(18 * 256 * (131072 + 128), rel=1e-9)


def test_cp_splits_every_layers_kv_by_tokens_chunked_layers_holding_their_chunk() -> None:
    """Llama-4-Scout at 1,048,576 tokens on 8 x H100, cp 8: 48 layers, every 4th global (NoPE), the other 36
    chunked (attention_chunk_size 8192); 8 KV heads x 128 x 2 (K, V) x 2 B = 4,096 B per token per layer.
    Global: 12 x 1,048,576 x 4,096 / 8 = 6,442,450,944 B; chunked: 36 x 8,192 x 4,096 / 8 = 150,994,944 B;
    per rank 6,593,445,888 B."""
    kv = api.memory("llama-4-scout", "h100_sxm", 8, 1, 1048576, cp_size=8,
                    lmhead_tp_size=8).as_dict()["breakdown"]["kv_cache"]
    assert kv * 1e9 == pytest.approx(12 * 1048576 * 4096 / 8 + 36 * 8192 * 4096 / 8, rel=1e-9)


@pytest.mark.parametrize("seq_len", [32768, 262144])
def test_linear_attention_state_is_per_sequence_not_per_token(seq_len: int) -> None:
    """Qwen3.5-122B-A10B on 8 x H200, attn_tp 8: 36 GatedDeltaNet layers (full_attention_interval 4 of 48), each
    64 value heads x 128 x 128 fp32 state (mamba_ssm_dtype float32) = 4,194,304 B plus the conv tail
    (kernel 4 - 1) x (2 x 16 x 128 + 64 x 128 = 12,288 channels) x 2 B = 73,728 B, split over 8 ranks:
    533,504 B a layer, 19,206,144 B a sequence at any length; two sequences hold twice that.
    The 12 full-attention layers' KV (2 KV heads of 256 over 8 ranks: one head, 1,024 B a token) grows with it."""
    per_seq = 36 * (64 * 128 * 128 * 4 + 3 * 12288 * 2) / 8
    for batch in (1, 2):
        b = api.memory("qwen3.5-122b-a10b", "h200_sxm", 8, batch, seq_len, attn_tp_size=8).as_dict()["breakdown"]
        assert b["constant_state"] * 1e9 == pytest.approx(batch * per_seq, rel=1e-9)
        assert b["kv_cache"] * 1e9 == pytest.approx(batch * 12 * seq_len * 1024, rel=1e-9)


def test_dsa_indexer_prefill_scores_the_causal_half() -> None:
    """DeepSeek-V3.2 prefill of T = 131,072 tokens on one rank (8 x H200 attention DP): 61 indexer layers, each
    projecting wq_b 1536 x 64 x 128 + wk 7168 x 128 + k LayerNorm 256 + weights_proj 7168 x 64 = 13,959,424
    params (2 T params FLOPs) and scoring 64 heads x 128 against each query's causal keys, (T + 1) / 2 on
    average: 2 x 64 x 128 x T x (T + 1) / 2 FLOPs. Total 61 x (2 T x 13,959,424 + 16,384 x T x 65,536.5)
    = 8.808e15 (every key, T instead of (T + 1) / 2, would be 1.74e16)."""
    t = 131072
    e = api.estimate("deepseek-v3.2", "h200_sxm", 8, phase="prefill", batch=1, seq_len=t,
                     lmhead_tp_size=8).as_dict()
    gflops = e["breakdown"]["prefill"]["by_module"]["indexer"]["gflops"]
    expected = 61 * (2 * t * 13_959_424 + 2 * 64 * 128 * t * (t + 1) / 2)
    assert gflops * 1e9 == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize("world, pp, sp, cp", [(16, 1, 1, 16), (16, 2, 2, 4), (32, 4, 1, 8)])
def test_decode_cp_advice_names_a_cp_size_that_divides_the_stage(world: int, pp: int, sp: int, cp: int) -> None:
    """A decode plan at attention DP (attn_tp 1, kvp 1) past 4K tokens is told which cp_size would let the same
    ranks prefill the prompts. The attention group attn_tp*cp*kvp*sp must divide one stage's ranks (world / pp),
    so CP takes what SP leaves: 16 / 1 / 1 = 16; 16 / 2 / 2 = 4; 32 / 4 / 1 = 8 (the world size, 32, is refused
    at pp 4: the group of 32 does not divide the stage of 8). DeepSeek-V3.2, 1,000,000 + 4,096 tokens."""
    model, hw = load_model("deepseek-v3.2"), load_hardware("h200_sxm")
    pc = make_parallel_config(world, pp_size=pp, attn_sp_size=sp, dense_tp_size=8, moe_tp_size=8,
                              lmhead_tp_size=8, o_proj_tp_size=8)
    reason = decision_tree_reason(pc, model, Scenario(kind="throughput", isl=1_000_000, osl=4096, phase="decode"), hw)
    assert f"set cp_size={cp} if these ranks also prefill" in reason
    api.estimate("deepseek-v3.2", "h200_sxm", world, phase="decode", batch=world, seq_len=65536, pp_size=pp,
                 attn_sp_size=sp, cp_size=cp, dense_tp_size=8, moe_tp_size=8, lmhead_tp_size=8, o_proj_tp_size=8)


def test_chunked_attention_layers_attend_within_their_chunk_and_global_layers_the_causal_prefix() -> None:
    """Llama-4-Scout prefill of T = 16,384 tokens on one rank: 48 layers, q 40 x 128, k / v 8 x 128 from hidden
    5120 (2 T x (26,214,400 + 10,485,760) projection FLOPs a layer); the core's QK and PV cost 4 x 40 x 128 =
    20,480 FLOPs per (query, key). 12 global layers see the causal prefix, T (T + 1) / 2 pairs; 36 chunked layers
    (attention_chunk_size 8192) see their chunk's earlier keys: two chunks of 8192 x 8193 / 2 pairs.
    Total 48 x 2 T x 36,700,160 + 20,480 x (12 x 134,225,920 + 36 x 67,112,960) = 1.402e14 FLOPs."""
    t = 16384
    e = api.estimate("llama-4-scout", "h100_sxm", 8, phase="prefill", batch=1, seq_len=t,
                     lmhead_tp_size=8).as_dict()
    gflops = e["breakdown"]["prefill"]["by_module"]["attention"]["gflops"]
    proj = 48 * 2 * t * (5120 * 40 * 128 + 2 * 5120 * 8 * 128)
    core = 20480 * (12 * t * (t + 1) / 2 + 36 * 2 * 8192 * 8193 / 2)
    assert gflops * 1e9 == pytest.approx(proj + core, rel=1e-9)
