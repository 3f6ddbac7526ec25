"""Twenty-ninth round of families outside the catalog (tests/data/configs_unseen/round29/, SOURCES.md's
"Twenty-ninth round (stop 36)"): 2026 decoder model_types in transformers 5.25.0 that no earlier round nor models/
holds (lara_mini, kimi_k25 counted; kolibri1_1 and axk2 refused, counted since: Kolibri's kv_source_layers read as
written and its weightless indexer, A.X-K2's q_gate_proj and gated RMSNorms). Lara-4-Mini, Kolibri-1.1 and A.X-K2 are their config
classes' defaults (the docstring names the checkpoint), written as to_dict would; Kimi-K2.6 is Kimi_K25Config's
defaults around a text_config written from memory of Kimi-K2's config.json (the class's default text is DeepSeek-V3's).
Hand counts tensor by tensor from transformers 5.25.0's modeling_*.py (read from the unzipped wheel, not installed);
written before the reader was run on them."""
from __future__ import annotations

import pytest

from hand_counts import UNSEEN, Round, count, gated, gqa, lin, ln
from solver.specs.dtypes import KV16
from solver.errors import InputError
from solver.specs.config.read import parse_model_config
from solver.specs.model_rules import kv_sharing_split

DATA = UNSEEN / "round29"
ROUND = Round(DATA)
_load, _spec, _total = ROUND.load, ROUND.spec, ROUND.total


# ------------------------------------------------------------------ Lara-4-Mini-Base (LaraMiniConfig() defaults).
# 34 layers, 1024 wide, period-5 layer_types (linear, sliding, linear, full, sliding): 14 Gated DeltaNet, 13 sliding
# (window 512) and 7 full (NoPE) attention layers. Attention (Qwen3's): q / k / v / o 16 / 4 heads x 128 without bias,
# q_norm / k_norm of 128. Gated DeltaNet (Qwen3.5's, 8 key heads x 128, 16 value heads x 128): in_proj_qkv h -> 2 x 1024
# + 2048, in_proj_z h -> 2048, in_proj_b / in_proj_a h -> 16, a depthwise Conv1d of 4096 channels x 4 without bias,
# dt_bias and A_log (16 each), the gated RMSNorm of head_v_dim 128, out_proj 2048 -> h. Every layer LaraMiniSparseMoeBlock:
# router 128 x h (softmax, no correction bias), 128 experts of 512 top-4 and an ungated shared expert of 512; two RMSNorms
# a layer; tied 151936 embedding; final norm.
def lara_attention(h: int, heads: int, kv: int, d: int) -> int:
    return gqa(h, heads, kv, d) + 2 * d


def lara_deltanet(h: int, k_heads: int, v_heads: int, dk: int, dv: int, kernel: int) -> int:
    key, value = k_heads * dk, v_heads * dv
    return (lin(h, 2 * key + value) + lin(h, value) + 2 * lin(h, v_heads) + (2 * key + value) * kernel
            + 2 * v_heads + dv + lin(value, h))


def lara_moe(h: int, experts: int, width: int, shared: int) -> int:
    return lin(h, experts) + experts * gated(h, width) + gated(h, shared)


LARA_LAYER_COMMON = lara_moe(1024, 128, 512, 512) + 2 * 1024
LARA_MINI = (151936 * 1024 + 20 * lara_attention(1024, 16, 4, 128) + 14 * lara_deltanet(1024, 8, 16, 128, 128, 4)
             + 34 * LARA_LAYER_COMMON + 1024)
LARA_MINI_ACTIVE = LARA_MINI - 34 * (128 - 4) * gated(1024, 512)


# ------------------------------------------------------------------ Kimi-K2.6 (Kimi_K25Config() defaults; text_config
# Kimi-K2's as recalled). Text (DeepseekV3Model): 61 layers, 7168 wide, MLA 64 heads (q_lora 1536, kv_lora 512, nope
# 128, rope 64, v 128), layer 0 dense 18432, 60 MoE of 384 x 2048 top-8 with a router weight and e_score_correction_bias
# (noaux_tc), one shared of 2048; two RMSNorms a layer; the embedding 163840 x 7168, and lm_head tied to it: the file
# is stamped transformers_version 5.25.0 and the wrapper writes tie_word_embeddings true, which 5.x ties
# Kimi_K25ForConditionalGeneration's lm_head by (text_config's false is the 4.x rule's; config/head_tie.py).
# Vision (Kimi_K25VisionModel): Conv2d 3 x 14 x 14 -> 1152 biased, a learned 64 x 64 x 1152 position grid (the time
# axis is a sinusoidal table, no weights), 27 layers of norm1 / norm2 LayerNorms, biased q / k / v / proj 1152 square,
# biased fc1 1152 -> 4304 / fc2; final_layernorm. Projector: pre_norm LayerNorm(1152), in_proj 4608 -> 4608 and
# out_proj 4608 -> 7168, both biased
def mla(h: int, heads: int, q_rank: int, kv_rank: int, nope: int, rope: int, v: int) -> int:
    return (lin(h, q_rank) + q_rank + lin(q_rank, heads * (nope + rope)) + lin(h, kv_rank + rope) + kv_rank
            + lin(kv_rank, heads * (nope + v)) + lin(heads * v, h))


KIMI_MOE = lin(7168, 384) + 384 + 384 * gated(7168, 2048) + gated(7168, 2048)
KIMI_TEXT = (163840 * 7168 + 61 * (mla(7168, 64, 1536, 512, 128, 64, 128) + 2 * 7168) + gated(7168, 18432)
             + 60 * KIMI_MOE + 7168)
KIMI_VISION = (lin(3 * 14 * 14, 1152, True) + 64 * 64 * 1152
               + 27 * (2 * ln(1152) + 4 * lin(1152, 1152, True) + lin(1152, 4304, True) + lin(4304, 1152, True))
               + ln(1152))
KIMI_PROJECTOR = ln(1152) + lin(4608, 4608, True) + lin(4608, 7168, True)
KIMI_K26 = KIMI_TEXT + KIMI_VISION + KIMI_PROJECTOR
KIMI_K26_ACTIVE = KIMI_TEXT - 60 * (384 - 8) * gated(7168, 2048)  # the tower runs per image, not per token


# ------------------------------------------------------------------ Kolibri-1.1 (Kolibri1_1Config() defaults).
# 50 layers, 2560 wide; indexed attention at (i + 1) % 5 == 0 (10 layers), sliding (513) elsewhere. Attention: q_proj
# 2560 -> 48 x 128, q_norm 128, o_proj back, all without bias; k_proj / v_proj 2560 -> 4 x 128 and k_norm 128 only on
# layers that compute their own K/V: kv_source_layers sends indexed layers 9, 14, 49 to layer 4's and 34, 39, 44 to
# layer 29's (6 layers without K/V weights). The indexer has no weights. Layers 0, 1 a dense 3584 MLP; 48 MoE of
# 384 x 512 top-6 with a router weight and e_score_correction_bias (a buffer) and one shared of 512; four RMSNorms a
# layer (input, post_attention, post_self_attn, post_mlp); untied 128000; final norm.
KOLIBRI_Q_O = lin(2560, 48 * 128) + 128 + lin(48 * 128, 2560)
KOLIBRI_K_V = 2 * lin(2560, 4 * 128) + 128
KOLIBRI_MOE = lin(2560, 384) + 384 + 384 * gated(2560, 512) + gated(2560, 512)
KOLIBRI_1_1 = (2 * 128000 * 2560 + 50 * (KOLIBRI_Q_O + 4 * 2560) + 44 * KOLIBRI_K_V + 2 * gated(2560, 3584)
               + 48 * KOLIBRI_MOE + 2560)
KOLIBRI_1_1_ACTIVE = KOLIBRI_1_1 - 48 * (384 - 6) * gated(2560, 512)


# ------------------------------------------------------------------ A.X-K2 (AXK2Config() defaults). 48 layers,
# 2048 wide. Attention: q_a_proj 2048 -> 384, q_a_layernorm 384, no q_b_proj: q_gate_proj reads [q_a_layernorm(q),
# q] (2 x 384) -> 32 x (96 + 64) (queries and a per-channel output gate), kv_a_proj_with_mqa 2048 -> 128 + 32,
# kv_a_layernorm 128, kv_b 128 -> 32 x (64 + 64), o_proj 32 x 64 -> 2048, no bias. DSA indexer on every layer: wq_b
# 384 -> 16 x 128, wk 2048 -> 128, k_norm LayerNorm 128, weights_proj 2048 -> 16. input_layernorm a gated RMSNorm
# (weight 2048, fc1 2048 -> 16, fc2 16 -> 2048), post_attention_layernorm gated on MoE layers and plain on the dense
# one. Layer 0 dense 5120, 47 MoE of 128 x 512 top-8, router weight and e_score_correction_bias, one shared of 512;
# untied 163840; final norm
def axk2_attention(h: int, heads: int, q_rank: int, kv_rank: int, nope: int, rope: int, v: int) -> int:
    return (lin(h, q_rank) + q_rank + lin(2 * q_rank, heads * (nope + rope + v)) + lin(h, kv_rank + rope) + kv_rank
            + lin(kv_rank, heads * (nope + v)) + lin(heads * v, h))


def axk2_indexer(h: int, q_rank: int, heads: int, d: int) -> int:
    return lin(q_rank, heads * d) + lin(h, d) + ln(d) + lin(h, heads)


def gated_norm(h: int, rank: int) -> int:
    return h + lin(h, rank) + lin(rank, h)


AXK2_LAYER = axk2_attention(2048, 32, 384, 128, 64, 32, 64) + axk2_indexer(2048, 384, 16, 128) + gated_norm(2048, 16)
AXK2_MOE = lin(2048, 128) + 128 + 128 * gated(2048, 512) + gated(2048, 512) + gated_norm(2048, 16)
AXK2 = 2 * 163840 * 2048 + 48 * AXK2_LAYER + gated(2048, 5120) + 2048 + 47 * AXK2_MOE + 2048
AXK2_ACTIVE = AXK2 - 47 * (128 - 8) * gated(2048, 512)


HAND: dict[str, int] = {
    "translated--Lara-4-Mini-Base": LARA_MINI,
    "moonshotai--Kimi-K2.6": KIMI_K26,
    "Aleph-Alpha--Kolibri-1.1": KOLIBRI_1_1,
    "skt--A.X-K2": AXK2,
}
# Published totals precise enough for a 1% check: none for the class defaults (Lara-4-Mini and Kolibri-1.1 not
# recalled); Kimi-K2's 1.04T total with its 400M MoonViT is rounder than the check needs
PUBLISHED: dict[str, float] = {}

ACTIVE: dict[str, tuple[int, float | None]] = {
    "translated--Lara-4-Mini-Base": (LARA_MINI_ACTIVE, None),
    # Kimi-K2's "32B activated" is 2.7% under this figure (the 2.35B embedding and head counted here): not held
    "moonshotai--Kimi-K2.6": (KIMI_K26_ACTIVE, None),
    "Aleph-Alpha--Kolibri-1.1": (KOLIBRI_1_1_ACTIVE, None),
    "skt--A.X-K2": (AXK2_ACTIVE, None),
}

# Bytes of K/V per token of context at bf16: Lara's 7 full layers of 4 K/V heads x 128 (13 sliding layers hold 512
# tokens at most; 14 Gated DeltaNet layers a fixed state); Kimi's MLA latent 512 + rope 64 on 61 layers;
# Kolibri's 4 indexed layers that cache their own (4, 19, 24, 29) of 4 K/V heads x 128 (the 6 that read another's
# cache nothing, the weightless indexer no keys of its own; 40 sliding layers hold 513 tokens at most); A.X-K2's MLA
# latent 128 + rope 32 on 48 layers (its DSA indexer's keys apart: AXK2_INDEX_BYTES_PER_TOKEN)
KV_BYTES_PER_TOKEN: dict[str, int] = {
    "translated--Lara-4-Mini-Base": 7 * 2 * 4 * 128 * 2,
    "moonshotai--Kimi-K2.6": 61 * (512 + 64) * 2,
    "Aleph-Alpha--Kolibri-1.1": 4 * 2 * 4 * 128 * 2,
    "skt--A.X-K2": 48 * (128 + 32) * 2,
}
# A.X-K2's indexer key cache: index_head_dim 128 FP8 values and one FP32 scale a token on each of 48 layers
AXK2_INDEX_BYTES_PER_TOKEN = 48 * (128 + 4)

# Kimi-K2.6's 1.03T bf16 parameters (2.05 TB) need more than 8 H100s: 32 hold them with room for the K/V
SOLVE_CARDS: dict[str, int] = {"moonshotai--Kimi-K2.6": 32}


# ------------------------------------------------------------------ reading rules added this round


def test_lara_mini_counts_the_q_k_norms_of_its_sliding_and_full_layers() -> None:
    # Before this round 7,281,679,552 with only the unknown-family note: 20 attention layers x 2 x 128 short
    assert _total("translated--Lara-4-Mini-Base") == LARA_MINI


def test_lara_mini_without_layer_types_is_refused_not_read_as_plain_attention() -> None:
    cfg = _load("translated--Lara-4-Mini-Base")
    del cfg["layer_types"]
    with pytest.raises(InputError, match="linear_conv_kernel_dim"):
        parse_model_config(cfg, "x")


def test_kimi_k25_tower_sizes_its_position_grid_from_pos_emb_height_and_width() -> None:
    # Before this round refused, misleadingly: "vision_config.image_size: missing" (a field the tower never reads)
    assert _total("moonshotai--Kimi-K2.6") == KIMI_K26
    cfg = _load("moonshotai--Kimi-K2.6")
    cfg["vision_config"]["pos_emb_width"] = 32
    assert count(cfg) == KIMI_K26 - 64 * 32 * 1152


def test_kimi_k25_tower_without_its_grid_fields_is_refused_naming_one() -> None:
    cfg = _load("moonshotai--Kimi-K2.6")
    del cfg["vision_config"]["pos_emb_height"]
    with pytest.raises(InputError, match="pos_emb_height"):
        parse_model_config(cfg, "x")


def test_a_wrapper_tie_that_disagrees_with_the_language_models_is_named() -> None:
    # the wrapper writes true (the class default), text_config false; the file is stamped 5.25.0: tied by the wrapper
    spec = _spec("moonshotai--Kimi-K2.6")
    assert any("tie_word_embeddings: the wrapper's true ties the head" in n for n in spec.warnings)
    cfg = _load("moonshotai--Kimi-K2.6")
    cfg["transformers_version"] = "4.57.1"  # 4.x tied by text_config's: the head its own 163840 x 7168
    assert count(cfg) == KIMI_K26 + 163840 * 7168
    assert any("tie_word_embeddings: the wrapper's true disagrees" in n for n in parse_model_config(cfg, "x").warnings)
    cfg = _load("moonshotai--Kimi-K2.6")
    cfg["tie_word_embeddings"] = False
    assert count(cfg) == KIMI_K26 + 163840 * 7168
    assert not any("tie_word_embeddings: the wrapper" in n for n in parse_model_config(cfg, "x").warnings)


def test_kolibri_counts_its_kv_source_layers_as_written_and_its_weightless_indexer_as_nothing() -> None:
    # Before (round 29): refused by the family line; before that "layer_types: unknown entry 'indexed_attention'"
    assert _total("Aleph-Alpha--Kolibri-1.1") == KOLIBRI_1_1
    spec = _spec("Aleph-Alpha--Kolibri-1.1")
    shared = [i for i, layer in enumerate(spec.layers) if getattr(layer.mixer, "kv_shared", False)]
    assert shared == [9, 14, 34, 39, 44, 49]
    assert spec.kv_sources[49] == 4 and spec.kv_sources[34] == 29
    assert not any("not modelled" in n for n in spec.warnings)  # the selection is costed (tests below)


# Kolibri1_1Indexer (modeling_kolibri1_1.py): no weights; the first 12 query heads score key head 0 (ReLU'd logits,
# averaged); index_layers 4, 14, 19, 29 pick a pool of 16,384 keys from the means of 16 keys, the other indexed
# layers reuse it; each attends to its pool's top 2,048 plus 8 sinks and 128 local tokens: 2,184 keys a query.
KOLIBRI_SELECTED = 2048 + 8 + 128


def _kolibri_decode_ops(context: int, tp: int = 1) -> dict[int, dict[str, float]]:
    from solver.estimate.compute import Kit, Work, factors_for
    from solver.specs.hardware_catalog import load_hardware
    from solver.specs.parallel import make_parallel_config
    from solver.specs.precision import resolve_precision

    spec = _spec("Aleph-Alpha--Kolibri-1.1")
    hw = load_hardware("h100_sxm")
    pc = make_parallel_config(tp, attn_tp_size=tp) if tp > 1 else make_parallel_config(1)
    kit = Kit(hw, pc, resolve_precision(spec, hw), factors_for(hw),
              Work("decode", new_tokens=1, context=context, sequences=1, logits_tokens=1))
    return {i: {o.name: o.flops for o in spec.layers[i].mixer.ops(kit)} for i in (3, 4, 9)}


@pytest.mark.parametrize("context, pool_blocks", [(32768, 2048), (131072, 8192)])
def test_kolibri_indexed_layer_attends_its_selection_and_scores_its_pool(context: int, pool_blocks: int) -> None:
    """One decode token on one rank. Core over 2,184 keys: 2 x 48 heads x 2,184 x (128 + 128) = 53,673,984 FLOPs
    (dense over the context before: 805,306,368 at 32K, 3,221,225,472 at 128K). Pool source (layer 4): 12 heads x
    128 against context / 16 block means; every indexed layer (9 reuses 4's pool): 12 x 128 against 16,384 pool keys."""
    ops = _kolibri_decode_ops(context)
    for layer in (4, 9):
        assert ops[layer]["attention_core"] == 2 * 48 * KOLIBRI_SELECTED * 256 == 53_673_984
        assert ops[layer]["indexer_score"] == 2 * 12 * 128 * 16384 == 50_331_648
        assert "indexer_proj" not in ops[layer]  # no weights
    assert ops[4]["indexer_pool_score"] == 2 * 12 * 128 * pool_blocks
    assert "indexer_pool_score" not in ops[9]
    assert ops[3]["attention_core"] == 2 * 48 * 513 * 256 and "indexer_score" not in ops[3]  # sliding, 513


def test_kolibri_selection_below_its_budget_attends_every_key() -> None:
    ops = _kolibri_decode_ops(1000)
    assert ops[4]["attention_core"] == 2 * 48 * 1000 * 256
    assert "indexer_pool_score" not in ops[4]  # 1,000 keys: the pool is every key


def test_kolibri_selection_caches_nothing_of_its_own_at_one_rank() -> None:
    # K/V: 4 caching indexed layers x 2 x 4 heads x 128 x 2 B = 8,192 B a token; no index keys
    states = [b.state(KV16, 1) for layer in _spec("Aleph-Alpha--Kolibri-1.1").layers for b in layer.blocks]
    assert sum(s.per_token_bytes for s in states if s.window is None) == KV_BYTES_PER_TOKEN["Aleph-Alpha--Kolibri-1.1"]
    assert sum(s.index_per_token_bytes for s in states) == 0


@pytest.mark.parametrize("tp", [2, 4, 8])
def test_kolibri_selection_is_replicated_under_attention_tp(tp: int) -> None:
    """One selection a query for every head (the config class's TP plan leaves attention unsharded for it): each
    rank repeats it whole and a rank without key head 0 keeps a copy of its keys, 128 x 2 B a caching layer."""
    ops = _kolibri_decode_ops(32768, tp)
    assert ops[4]["indexer_score"] == 2 * 12 * 128 * 16384  # not divided by TP
    assert ops[4]["attention_core"] == 2 * 48 / tp * KOLIBRI_SELECTED * 256  # the core splits with its heads
    states = [b.state(KV16, tp) for layer in _spec("Aleph-Alpha--Kolibri-1.1").layers for b in layer.blocks]
    assert sum(s.index_per_token_bytes for s in states) == 4 * 128 * 2


@pytest.mark.parametrize("field", ["index_num_heads", "index_pool_size", "index_compression",
                                   "index_num_sink_tokens", "index_num_local_tokens", "index_layers"])
def test_kolibri_selection_without_a_size_is_refused_naming_it(field: str) -> None:
    cfg = _load("Aleph-Alpha--Kolibri-1.1")
    del cfg[field]
    with pytest.raises(InputError, match=field):
        parse_model_config(cfg, "x")


def test_kolibri_selection_scoring_more_heads_than_key_head_0_has_is_refused() -> None:
    cfg = _load("Aleph-Alpha--Kolibri-1.1")
    cfg["index_num_heads"] = 13  # 48 / 4 = 12 query heads a key head
    with pytest.raises(InputError, match="index_num_heads"):
        parse_model_config(cfg, "x")


def test_a_kv_source_read_by_index_may_skip_a_nearer_owner() -> None:
    # Kolibri's layer 49 reads layer 4 though 29 caches later (shared_kv_states[str(kv_source_layer)]); only a
    # family keying its shared caches by kind (_kv_source_by_kind, Mistral-Large-4) must name the nearest
    cfg = _load("Aleph-Alpha--Kolibri-1.1")
    cfg["kv_source_layers"][49] = 29
    assert count(cfg) == KOLIBRI_1_1
    cfg["_kv_source_by_kind"] = True
    cfg["kv_source_layers"][49] = 4
    with pytest.raises(InputError, match="kv_source_layers: layer 49 reads layer 4, but layer 29"):
        parse_model_config(cfg, "x")


def test_a_stage_boundary_between_a_layer_and_its_written_kv_source_is_named() -> None:
    spec = _spec("Aleph-Alpha--Kolibri-1.1")
    # pp 2 splits at 25: layer 34 reads 29 (both stage 1), but layer 49 reads 4 across the boundary first
    assert kv_sharing_split(spec, 2) == (49, 4)


def test_axk2_projects_queries_and_gate_from_the_query_lora_twice_and_gates_its_norms() -> None:
    # Before (round 29): refused by the family line; before that "layer_types: unknown entry 'indexed_attention'"
    assert _total("skt--A.X-K2") == AXK2
    spec = _spec("skt--A.X-K2")
    blocks = [b for layer in spec.layers for b in layer.blocks if hasattr(b, "indexer")]
    assert sum(b.state(KV16, 1).index_per_token_bytes for b in blocks) == AXK2_INDEX_BYTES_PER_TOKEN
    cfg = _load("skt--A.X-K2")
    cfg["gated_norm_rank"] = 32  # 48 input norms and 47 pre-MoE norms, each fc1 + fc2 of 2048 x 16 more
    assert count(cfg) == AXK2 + (48 + 47) * 2 * 2048 * 16


def test_a_query_gate_from_the_lora_without_a_lora_rank_is_refused_naming_it() -> None:
    cfg = _load("skt--A.X-K2")
    cfg["q_lora_rank"] = None
    with pytest.raises(InputError, match="q_lora_rank: missing.*q_gate_proj"):
        parse_model_config(cfg, "x")


def test_gated_norms_without_their_rank_are_refused_naming_it() -> None:
    cfg = _load("skt--A.X-K2")
    del cfg["gated_norm_rank"]
    with pytest.raises(InputError, match="gated_norm_rank"):
        parse_model_config(cfg, "x")


# ------------------------------------------------------------------ refused this round: none left (Kolibri-1.1 and
# A.X-K2 counted since)

REFUSALS: dict[str, str] = {}
