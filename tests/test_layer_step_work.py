"""One layer's step work on the 2026 layer types, computed by hand from the model's config.json
(/work/shared/facts/model_configs/) and compared with the block's own formulas (solver/specs/layers/).

Every case costs one layer on one H200 at TP1 (no CP / KVP), so a figure is the whole layer's. Decode: B = 8
sequences at context S = 4096 (no span: every query at S). Prefill: one fresh prompt of 8192 tokens (queries at
positions 1..8192). Activations are bf16 (2 B); the cache bf16 unless a test says otherwise.
"""
from __future__ import annotations

import pytest

from solver.specs.dtypes import KV16
from solver.estimate.compute import Kit, Work, factors_for
from solver.specs.hardware_catalog import load_hardware
from solver.specs.layers.base import block_counts
from solver.specs.model_catalog import load_model
from solver.specs.parallel import make_parallel_config
from solver.specs.precision import resolve_precision

H200 = load_hardware("h200_sxm")
B, S, P = 8, 4096, 8192
DECODE = Work("decode", new_tokens=B, context=S, sequences=B, logits_tokens=B)
PREFILL = Work("prefill", new_tokens=P, context=(P + 1) / 2, sequences=1, logits_tokens=1)


def _block(model_name: str, label: str):
    """The model's block whose label starts with `label`."""
    model = load_model(model_name)
    found = [b for b, _ in block_counts(model.layer_groups) if b.label().startswith(label)]
    assert found, f"{model_name} has no block labelled {label!r}"
    return model, found[0]


def _ops(model_name: str, label: str, w: Work) -> dict:
    model, block = _block(model_name, label)
    kit = Kit(H200, make_parallel_config(1), resolve_precision(model, H200), factors_for(H200), w)
    return {o.name: o for o in block.ops(kit)}


def test_gated_deltanet_state_is_value_heads_dk_dv_in_the_ssm_dtype_plus_the_conv_tail():
    """Qwen3.5-35B-A3B: 32 value heads x 128 x 128 in mamba_ssm_dtype float32 = 2,097,152 B; the conv tail
    (kernel 4 - 1) x (2 x 16 x 128 + 32 x 128 = 8,192 channels) x 2 B = 49,152 B; 2,146,304 B a request a layer."""
    _, block = _block("qwen3.5-35b-a3b", "GatedDeltaNet")
    assert block.state(KV16, 1).constant_bytes == 32 * 128 * 128 * 4 + 3 * 8192 * 2 == 2_146_304


def test_gated_deltanet_decode_scan_is_six_dk_dv_a_token_and_head_and_one_state_read_and_write():
    """Qwen3.5-35B-A3B decode: FLOPs 8 x 32 x 6 x 128 x 128 = 25,165,824; bytes 2 x 8 x 2,146,304 (state read +
    write a sequence) + 8 x 32 x (2 x 128 + 2 x 128) x 2 (q, k, v, o) = 34,340,864 + 262,144 = 34,603,008."""
    scan = _ops("qwen3.5-35b-a3b", "GatedDeltaNet", DECODE)["linear_attention_scan"]
    assert scan.flops == 8 * 32 * 6 * 128 * 128
    assert scan.bytes == 2 * 8 * 2_146_304 + 8 * 32 * 512 * 2


def test_gated_deltanet_decode_projections_read_every_split_weight_once():
    """Qwen3.5-35B-A3B, hidden 2048: in_proj_qkvz 2048 x (2 x 16 x 128 + 2 x 32 x 128) = 25,165,824, in_proj_ba
    2048 x 64 = 131,072, conv1d 8,192 x 4 = 32,768, A_log + dt_bias 64, out_proj 4,096 x 2048 = 8,388,608: 33,718,336
    weights; FLOPs 2 x 8 x 33,718,336; bytes 2 x 33,718,336 + 2 x 8 x 2048 x 2 (the layer's input and output)."""
    proj = _ops("qwen3.5-35b-a3b", "GatedDeltaNet", DECODE)["linear_attention_proj"]
    weights = 25_165_824 + 131_072 + 32_768 + 64 + 8_388_608
    assert proj.flops == 2 * 8 * weights
    assert proj.bytes == 2 * weights + 2 * 8 * 2048 * 2


def test_mamba2_state_is_heads_head_dim_state_size_plus_the_conv_tail_over_x_b_c():
    """Nemotron-3-Nano: 64 heads x 64 x N 128 in mamba_ssm_cache_dtype float32 = 2,097,152 B; the conv tail
    (4 - 1) x (d_inner 4,096 + 2 x n_groups 8 x 128 = 6,144) x 2 B = 36,864 B: 2,134,016 B."""
    _, block = _block("nemotron-3-nano", "Mamba2")
    assert block.state(KV16, 1).constant_bytes == 64 * 64 * 128 * 4 + 3 * 6144 * 2 == 2_134_016


def test_mamba2_prefill_intra_chunk_term_uses_the_configs_chunk_size():
    """Nemotron-3-Nano prefill (chunk_size 128): per token and head 6 x N x head_dim + 2 x 128 x (N + head_dim):
    8,192 x 64 x (6 x 128 x 64 + 2 x 128 x 192) = 8,192 x 64 x 98,304."""
    scan = _ops("nemotron-3-nano", "Mamba2", PREFILL)["ssm_scan"]
    assert scan.flops == 8192 * 64 * (6 * 128 * 64 + 2 * 128 * 192)


def test_lightning_state_is_heads_head_dim_squared():
    """MiniMax-M1: 64 heads x 128 x 128 x 2 B (no linear_attn_dtype: the model dtype) = 2,097,152 B, no conv."""
    _, block = _block("minimax-m1", "Lightning")
    assert block.state(KV16, 1).constant_bytes == 64 * 128 * 128 * 2


def test_kda_weights_and_state_follow_the_full_rank_decay_gate():
    """Kimi-K3 (hidden 7168, 96 heads x 128, use_full_rank_gate): q/k/v 3 x 7168 x 12,288 = 264,241,152; short conv
    3 x 12,288 x 4 = 147,456; decay gate 7168 x 12,288 = 88,080,384; beta 7168 x 96 = 688,128; A_log + dt_bias
    96 + 12,288; output gate (low rank) 7168 x 128 + 128 x 12,288 = 2,490,368; o_norm 128; o_proj 12,288 x 7168 =
    88,080,384: 443,740,384. State 96 x 128 x 128 x 2 + (4 - 1) x 36,864 x 2 = 3,366,912 B."""
    _, block = _block("kimi-k3", "KDA")
    assert block.params == 443_740_384
    assert block.state(KV16, 1).constant_bytes == 96 * 128 * 128 * 2 + 3 * 36_864 * 2


def test_mla_absorbed_decode_attends_in_the_latent_and_reads_one_latent_per_key():
    """DeepSeek-V3 decode: 128 heads x (d_k 512 + 64, d_v 512): FLOPs 2 x 128 x 8 x 4096 x 1,088; the cache
    (512 + 64) x 2 B = 1,152 B a token read once a sequence: 8 x 4096 x 1,152, plus the input 8 x 7168 x 2."""
    core = _ops("deepseek-v3", "MLA", DECODE)["attention_core"]
    assert core.flops == 2 * 128 * 8 * 4096 * 1088
    assert core.bytes == 8 * 4096 * 1152 + 8 * 7168 * 2


def test_dsa_decode_reads_topk_latents_and_scores_every_indexer_key():
    """DeepSeek-V3.2 decode at 4096 > index_topk 2048: the core over 2,048 keys, 2 x 128 x 8 x 2048 x 1,088 FLOPs,
    8 x 2048 x 1,152 B of latents; the indexer scores all 4,096 keys with 64 heads x 128: 2 x 64 x 128 x 8 x 4096
    FLOPs, reading 132 B a key (128 fp8 + a 4 B scale) and writing 8 x 4096 fp32 logits."""
    ops = _ops("deepseek-v3.2", "DSA", DECODE)
    assert ops["attention_core"].flops == 2 * 128 * 8 * 2048 * 1088
    assert ops["attention_core"].bytes == 8 * 2048 * 1152 + 8 * 7168 * 2
    assert ops["indexer_score"].flops == 2 * 64 * 128 * 8 * 4096
    assert ops["indexer_score"].bytes == 8 * 4096 * 132 + 8 * 4096 * 4


def test_gpt_oss_sliding_layer_decode_reads_its_window_only():
    """gpt-oss-120b sliding layers (window 128; 8 KV heads x 64): FLOPs 2 x 64 x 8 x 128 x (64 + 64); bytes
    8 x 128 x (8 x 128 x 2 = 2,048 B a token) + 8 x 2880 x 2."""
    core = _ops("gpt-oss-120b", "SWA", DECODE)["attention_core"]
    assert core.flops == 2 * 64 * 8 * 128 * 128
    assert core.bytes == 8 * 128 * 2048 + 8 * 2880 * 2


def test_gpt_oss_sliding_layer_prefill_keys_are_the_mean_of_the_capped_positions():
    """A fresh 8,192-token prompt under window 128: sum over p of min(p, 128) = 128 x 129 / 2 + 8,064 x 128 =
    1,040,448, 127.0078125 keys a query; FLOPs 2 x 64 x 8,192 x 128 x 127.0078125."""
    core = _ops("gpt-oss-120b", "SWA", PREFILL)["attention_core"]
    assert core.flops == pytest.approx(2 * 64 * 8192 * 128 * 1_040_448 / 8192, rel=1e-12)


def test_hca_decode_attends_to_every_compressed_entry_and_the_window():
    """DeepSeek-V4-Pro ratio-128 layer (no indexer) decode at 4096: 4096 / 128 = 32 compressed entries + the 128
    window keys = 160 keys of the one 512-wide K = V head: FLOPs 2 x 128 x 8 x 160 x 2 x 512; bytes 8 x 160 x 512 x 2
    + 8 x 7168 x 2. Cache: 512 x 2 / 128 = 8 B a token."""
    ops = _ops("deepseek-v4-pro", "CSA 128 x 512 1:128", DECODE)
    assert ops["attention_core"].flops == 2 * 128 * 8 * 160 * 2 * 512
    assert ops["attention_core"].bytes == 8 * 160 * 512 * 2 + 8 * 7168 * 2
    _, block = _block("deepseek-v4-pro", "CSA 128 x 512 1:128")
    assert block.state(KV16, 1).per_token_bytes == 8


def test_hca_constant_state_is_the_window_and_the_compressors_open_window():
    """DeepSeek-V4-Pro ratio-128 layer: the raw window 128 x 512 x 2 = 131,072 B, and the compressor's kv and gate
    (512 each, coff 1) of up to 127 tokens not yet compressed, 127 x 512 x 2 x 2 B = 260,096 B: 391,168 B a request
    whatever the context (transformers' DeepseekV4HCACache keeps buffer_kv / buffer_gate)."""
    _, block = _block("deepseek-v4-pro", "CSA 128 x 512 1:128")
    assert block.state(KV16, 1).constant_bytes == 131_072 + 127 * 512 * 2 * 2 == 391_168


def test_csa_constant_state_adds_both_compressors_open_window_and_overlap():
    """DeepSeek-V4-Pro ratio-4 layer (coff 2): the window 131,072 B; the attention compressor's 3 pending tokens x
    1,024 x (kv, gate) x 2 B = 12,288 and its overlap, 4 x 512 x 2 x 2 = 8,192; the indexer's compressor at
    head_dim 128: 3 x 256 x 2 x 2 = 3,072 and 4 x 128 x 2 x 2 = 2,048 (DeepseekV4CSACache's buffer_* and
    overlap_* for "compressor" and "indexer"): 156,672 B a request."""
    _, block = _block("deepseek-v4-pro", "CSA 128 x 512 1:4")
    assert block.state(KV16, 1).constant_bytes == 131_072 + 12_288 + 8_192 + 3_072 + 2_048 == 156_672


def test_csa_prefill_attends_to_the_mean_of_the_capped_compressed_entries():
    """DeepSeek-V4-Pro ratio-4 layer, index_topk 1024, a fresh 8,192-token prompt. A query at position p sees
    p / 4 compressed entries and keeps min(p / 4, 1024) = min(p, 4096) / 4 of them: the mean over p = 1..8192 is
    (4096 x 4097 / 2 + 4096 x 4096) / 8192 / 4 = 3,072.25 / 4 = 768.0625 (not min(4096.5 / 4, 1024) = 1024); the
    window adds 127.0078125 (as gpt-oss's above): 895.0703125 keys a query.
    FLOPs 2 x 128 heads x 8,192 x 895.0703125 x 2 x 512; bytes: each query gathers its 768.0625 entries, the
    window's raw keys are read once: (8,192 x 768.0625 + 8,192) x 512 x 2, plus the input 8,192 x 7168 x 2."""
    core = _ops("deepseek-v4-pro", "CSA 128 x 512 1:4", PREFILL)["attention_core"]
    keys = 768.0625 + 127.0078125
    assert core.flops == pytest.approx(2 * 128 * 8192 * keys * 2 * 512, rel=1e-12)
    assert core.bytes == pytest.approx((8192 * 768.0625 + 8192) * 512 * 2 + 8192 * 7168 * 2, rel=1e-12)


def test_csa_decode_below_the_cap_attends_to_every_compressed_entry():
    """Decode at 4096 with top-1024 of ratio 4: 4096 / 4 = 1024 entries, all kept, + 128 window keys."""
    core = _ops("deepseek-v4-pro", "CSA 128 x 512 1:4", DECODE)["attention_core"]
    assert core.flops == 2 * 128 * 8 * (1024 + 128) * 2 * 512


def test_dynamic_hyper_connections_flops_follow_the_map_and_sinkhorn():
    """DeepSeek-V4-Pro, m = 4 streams x 7168 (mh = 28,672), 20 Sinkhorn passes, per token and sub-block: pre
    3 x 28,672 + 2 x 24 rows x 28,672 + (4 x 20 - 2) x 16 + 2 x 28,672 = 1,520,864; post 2 x 16 x 7168 + 2 x 28,672 =
    286,720; x 2 sub-blocks x 8 tokens."""
    ops = _ops("deepseek-v4-pro", "HC 4 streams", DECODE)
    assert ops["hyper_pre"].flops == 2 * 8 * 1_520_864
    assert ops["hyper_post"].flops == 2 * 8 * 286_720
