"""Per layer kind, a rule of what it keeps and what it reads, each checked against a figure computed by hand from
the published config (models/). One test per rule, named after it."""
from __future__ import annotations

import pytest

from solver.estimate.compute import Kit, Work, factors_for, mean_keys_capped, mean_keys_chunked
from solver.estimate.request_state import request_state
from solver.specs.hardware_catalog import load_hardware
from solver.specs.layers.attention import Attention
from solver.specs.model_catalog import load_model
from solver.specs.parallel import ParallelConfig
from solver.specs.precision import Precision, resolve_precision

H200 = load_hardware("h200_sxm")
SCOUT = load_model("llama-4-scout")  # attention_chunk_size 8192; every 4th layer global (no_rope_layer_interval 4)
CHUNK = 8192


def _chunked() -> Attention:
    return next(b for b in SCOUT.blocks if isinstance(b, Attention) and b.window)


def _core(block, w: Work):
    kit = Kit(H200, ParallelConfig(world_size=1), resolve_precision(SCOUT, H200), factors_for(H200), w)
    return next(o for o in block.ops(kit) if o.name == "attention_core")


def test_chunked_attention_is_its_own_kind_not_a_sliding_window():
    b = _chunked()
    assert b.chunked and b.window == CHUNK
    assert b.label() == "Chunked 40/8 x 128 c8192"
    assert sum(1 for layer in SCOUT.layers if layer.mixer.chunked) == 36


def test_chunked_attention_query_sees_only_its_own_chunk_in_prefill():
    # a 131072-token prompt is 16 whole chunks: the keys per query average (8192 + 1) / 2 = 4096.5, where a
    # sliding window of 8192 would give (8192 x 8193 / 2 + 122880 x 8192) / 131072 = 7936.5
    n = 131072
    w = Work("prefill", n, (n + 1) / 2, 1, 1)
    assert mean_keys_chunked(w, CHUNK) == pytest.approx(4096.5)
    assert mean_keys_capped(w, CHUNK) == pytest.approx(7936.5, rel=1e-4)
    # FLOPs: 2 x 40 heads x 131072 queries x 4096.5 keys x (128 + 128) = 10,996.5 GFLOPs per layer
    assert _core(_chunked(), w).flops == pytest.approx(2 * 40 * n * 4096.5 * 256)


def test_chunked_attention_prefill_after_earlier_chunks_counts_positions_from_the_chunk_start():
    # a 4096-token step whose sequence already holds 6144 tokens: positions 6145..10240, keys 6145..8192 then
    # 1..2048 (mean (6145 + 8192) / 2 x 2048 + (1 + 2048) / 2 x 2048, over 4096 = 4096.5)
    w = Work("prefill", 4096, 6144 + 2048.5, 1, 1)
    assert mean_keys_chunked(w, CHUNK) == pytest.approx(((6145 + 8192) / 2 * 2048 + (1 + 2048) / 2 * 2048) / 4096)


def test_chunked_attention_decode_reads_the_current_chunk_only():
    # at position 8192 + 512 a token sees the 512 keys of its chunk: 512 x 8 KV heads x 256 x 2 B = 2,097,152 B
    b = _chunked()
    w = Work("decode", 1, CHUNK + 512, 1, 1)
    assert mean_keys_chunked(w, CHUNK) == 512
    assert _core(b, w).bytes == pytest.approx(512 * 8 * 256 * 2 + 5120 * 2)
    # a full chunk is read whole at its last position
    assert mean_keys_chunked(Work("decode", 1, 2 * CHUNK, 1, 1), CHUNK) == CHUNK


def test_chunked_attention_cache_holds_at_most_one_chunk():
    # 36 chunked layers x min(S, 8192) + 12 global layers x S, 8 KV heads x 256 x 2 B = 4096 B per token
    prec = Precision(weights={}, activation="bf16", kv_bytes=2)
    for s in (4096, 32768, 131072):
        st = request_state(SCOUT, ParallelConfig(world_size=1), prec, s)
        assert st.kv == 4096 * (36 * min(s, CHUNK) + 12 * s)


def test_chunked_attention_keys_fall_at_a_chunk_boundary_so_the_model_is_not_keys_monotone():
    assert not SCOUT.keys_monotone
    assert load_model("gpt-oss-120b").keys_monotone  # a sliding window's keys never fall


def test_a_tp_refusal_names_the_mixer_count_that_binds():
    # Nemotron-3 Super: 32 attention heads, 128 Mamba2 heads in n_groups 8 (vLLM's MambaMixer2: n_groups % TP == 0
    # or n_groups == 1): TP 16 divides the heads but not the groups, and the line says which count binds
    from solver.specs.framework import load_framework
    from solver.specs.model_rules import model_problems
    sup = load_model("nemotron-3-super")
    assert ("Mamba2", "n_groups", 8) in sup.tp_units and sup.num_attention_heads == 8
    (line,) = model_problems(sup, ParallelConfig(world_size=16, attn_tp_size=16), load_framework("generic"))
    assert line.endswith("8 % attn_tp_size 16 != 0 (Mamba2 n_groups 8)")
    # Qwen3-Next: 16 attention heads, Gated DeltaNet 16 key / 32 value heads: TP 8 divides all, TP 32 none of two
    nxt = load_model("qwen3-next")
    assert {("GatedDeltaNet", "key_heads", 16), ("GatedDeltaNet", "value_heads", 32)} <= set(nxt.tp_units)
    assert not model_problems(nxt, ParallelConfig(world_size=8, attn_tp_size=8), load_framework("generic"))
