"""What a rank keeps per request, as the engines size their KV pools at startup: the bytes one token adds on one
rank (KV heads split by TP and replicated past the KV head count, fp8 halving them, MLA's latent and the DSA
indexer keys unsplit by TP, sliding-window layers holding only their window) and the constant recurrent state of a
linear-attention layer per sequence. Every expectation is worked by hand from the model's config and the engine
code it cites (vLLM 0.34)."""
from __future__ import annotations

import pytest

from solver.estimate.memory import memory_per_rank
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import load_model
from solver.specs.parallel import make_parallel_config
from solver.specs.precision import resolve_precision

H100 = load_hardware("h100_sxm")
H200 = load_hardware("h200_sxm")
MI355 = load_hardware("mi355x")
SEQS, ISL_OSL = 64, 4096 + 1024  # 64 requests of ISL 4096 + OSL 1024 held at their full length
TOKENS = SEQS * ISL_OSL  # 327,680 tokens on each rank (no DP: every rank holds every request)


def _tp(world: int, **extra: int):
    knobs = {"attn_tp_size": world, "embed_tp_size": world, "lmhead_tp_size": world, **extra}
    return make_parallel_config(world, **knobs)


def _mem(model_name: str, hw, pc_extra: dict, world: int, seq_len: int = ISL_OSL, kv_dtype: str | None = None):
    model = load_model(model_name)
    prec = resolve_precision(model, hw, kv_dtype=kv_dtype)
    return memory_per_rank(model, hw, _tp(world, **pc_extra), prec, SEQS, seq_len)


def test_gqa_kv_heads_split_by_tp() -> None:
    """Llama-3.3-70B (80 layers, 8 KV heads of 128) at TP8: max(1, 8 // 8) = 1 KV head per rank (vLLM
    config/model.py:1703), K and V in bf16: 80 x 2 x 1 x 128 x 2 = 40,960 B per token per rank;
    x 327,680 tokens = 13,421,772,800 B."""
    m = _mem("llama-3.3-70b", H100, {"dense_tp_size": 8}, 8)
    assert m.kv_cache_bytes == pytest.approx(40_960 * TOKENS)


def test_fp8_kv_cache_halves_the_bytes_per_token() -> None:
    """The same deployment with --kv-cache-dtype fp8: one byte per element, 20,480 B per token per rank."""
    m = _mem("llama-3.3-70b", H100, {"dense_tp_size": 8}, 8, kv_dtype="fp8")
    assert m.kv_cache_bytes == pytest.approx(20_480 * TOKENS)


def test_kv_heads_are_replicated_when_tp_exceeds_them() -> None:
    """Qwen3-235B-A22B (94 layers, 4 KV heads of 128) at TP8: 8 > 4 KV heads, so each rank keeps a whole
    replicated head, max(1, 4 // 8) = 1 (vLLM config/model.py:1703), not half of one:
    94 x 2 x 1 x 128 x 2 = 48,128 B per token; x 327,680 = 15,770,583,040 B."""
    m = _mem("qwen3-235b-a22b-fp8", H200, {"moe_tp_size": 8}, 8)
    assert m.kv_cache_bytes == pytest.approx(48_128 * TOKENS)


def test_mla_latent_and_dsa_indexer_keys_are_not_split_by_tp() -> None:
    """DeepSeek-V3.2 (61 layers) at TP8: the MLA cache is one latent 'head' of kv_lora_rank + qk_rope_head_dim
    = 512 + 64 values (vLLM deepseek_v2.py:520) in bf16, 1,152 B per layer on every rank; the indexer keeps
    128 fp8 values + 128 // 128 x 4 B of scale = 132 B per layer (deepseek_v2.py:732; SGLang 0.5.23
    mem_cache/index_key_cache.py:46 the same).
    KV 61 x 1,152 = 70,272 B per token -> 23,026,728,960 B; indexer 61 x 132 = 8,052 B -> 2,638,479,360 B."""
    m = _mem("deepseek-v3.2", H200, {"dense_tp_size": 8, "moe_tp_size": 8}, 8)
    assert m.kv_cache_bytes == pytest.approx(70_272 * TOKENS)
    assert m.indexer_cache_bytes == pytest.approx(8_052 * TOKENS)


def test_sliding_window_layers_hold_only_their_window() -> None:
    """gpt-oss-120b on one H100: 36 layers alternating full and 128-token sliding attention, 8 KV heads of 64.
    A full layer: 2 x 8 x 64 x 2 = 2,048 B per token. Per request at 5,120 tokens: 18 x 2,048 x 5,120 =
    188,743,680 B (full) + 18 x 2,048 x 128 = 4,718,592 B (window; vLLM kv_cache_interface.py:930 retains
    sliding_window - 1 tokens plus the step's own) = 193,462,272 B; x 64 = 12,381,585,408 B. At 32K the
    window part does not grow: 18 x 2,048 x (32,768 + 128) x 64."""
    m = _mem("gpt-oss-120b", H100, {}, 1)
    assert m.kv_cache_bytes == pytest.approx(193_462_272 * SEQS)
    long = _mem("gpt-oss-120b", H100, {}, 1, seq_len=32_768)
    assert long.kv_cache_bytes == pytest.approx(18 * 2_048 * (32_768 + 128) * SEQS)


def test_linear_attention_keeps_a_constant_state_per_sequence_split_by_tp() -> None:
    """Qwen3.5-122B-A10B at TP8: 36 Gated DeltaNet layers (16 key heads, 64 value heads, dims 128, conv 4).
    vLLM mamba_utils.py:290-300: recurrent state (64 / 8) x 128 x 128 in float32 (the config's mamba_ssm_dtype)
    = 524,288 B; conv state (128 x 16 x 2 + 128 x 64) / 8 = 1,536 channels x (4 - 1) x 2 B = 9,216 B;
    533,504 B per layer, x 36 x 64 sequences = 1,229,193,216 B, the same at 5,120 and at 32,768 tokens.
    Its 12 full-attention layers (2 KV heads of 256, one replicated per rank at TP8): 12 x 2 x 256 x 2 =
    12,288 B per token."""
    extra = {"dense_tp_size": 8, "moe_tp_size": 8}
    m = _mem("qwen3.5-122b-a10b", MI355, extra, 8)
    long = _mem("qwen3.5-122b-a10b", MI355, extra, 8, seq_len=32_768)
    assert m.state_bytes == pytest.approx(533_504 * 36 * SEQS)
    assert long.state_bytes == pytest.approx(m.state_bytes)
    assert m.kv_cache_bytes == pytest.approx(12_288 * TOKENS)


def test_fp8_sparse_mla_rows_carry_their_scales_and_a_bf16_rope_key() -> None:
    """DeepSeek-V3.2 at TP8 with an fp8 KV cache: each latent row is 512 fp8 values + 512 / 128 = 4 fp32 scales
    + 64 bf16 rope values = 512 + 16 + 128 = 656 B (vLLM v1/attention/backends/mla/flashmla_sparse.py:86-94,
    which serves any fp8 dtype so: mla_attention.py:367-383; vllm-ascend's packed C8 row the same,
    attention/utils.py:35-36), not 576; the indexer keys stay 132 B. 61 x 656 = 40,016 B per token."""
    m = _mem("deepseek-v3.2", H200, {"dense_tp_size": 8, "moe_tp_size": 8}, 8, kv_dtype="fp8")
    assert m.kv_cache_bytes == pytest.approx(40_016 * TOKENS)
    assert m.indexer_cache_bytes == pytest.approx(8_052 * TOKENS)
