"""Thirty-first round of families outside the catalog (tests/data/configs_unseen/round31/, SOURCES.md's "Thirty-first
round (stop 36)"): 2026 model_types in transformers 5.25.0 that no earlier round nor models/ holds. Each file is its
config classes' defaults (the docstring names the checkpoint), written as to_dict would. Hand counts tensor by
tensor from transformers 5.25.0's modeling_*.py (read from the unzipped wheel, not installed); written before the
reader was run on them."""
from __future__ import annotations

import pytest

from hand_counts import UNSEEN, Round, count, gqa, gated, lin, ln
from solver.specs.dtypes import KV16
from solver.errors import InputError
from solver.specs.config.read import parse_model_config

DATA = UNSEEN / "round31"
ROUND = Round(DATA)
_load, _spec, _total = ROUND.load, ROUND.spec, ROUND.total


# ------------------------------------------------------------------ Muse-Glimmer-30B (MuseGlimmerConfig() defaults).
# Text (MuseGlimmerTextModel): 52 layers, 6656 wide; q / k / v / o of 32 / 2 heads x 128 without bias, plus an output
# gate_proj 6656 -> 32 x 128 without bias (MuseGlimmerTextAttention); its qk_norm is weightless (with_scale=False).
# Four centred RMSNorms a layer (input, post_attention, pre_feedforward, post_feedforward), a gated SiLU MLP 6656 ->
# 19968. The embedding's embed_norm is weightless; the final norm has a weight; embedding and lm_head 202048 each
# (untied). Vision (MuseGlimmerVisionModel): a bias-free linear patch embedding patch_temporal 2 x 3 x 14 x 14 ->
# 1536, a learned table of pos_emb_height x pos_emb_width = 32 x 32 rows, ln_pre, 50 layers of norm1 / norm2
# LayerNorms, biased q / k / v / proj 1536 square, biased fc1 1536 -> 8960 / fc2 back; ln_post. The merge is a pixel
# shuffle without weights (1536 x 2^2 = out_hidden_size 6144). Projector: vision_adapter fc1 out_hidden_size 6144 ->
# projector_hidden_size 4096, fc2 4096 -> 4096, both bias-free; vision_projection 4096 -> 6656 bias-free;
# perception_emb_norm weightless
def mlp2(h: int, f: int, bias: bool = False) -> int:  # up -> act -> down, two matrices
    return lin(h, f, bias) + lin(f, h, bias)


GLIMMER_LAYER = gqa(6656, 32, 2, 128) + lin(6656, 32 * 128) + 4 * 6656 + gated(6656, 19968)
GLIMMER_TEXT = 2 * 202048 * 6656 + 52 * GLIMMER_LAYER + 6656
GLIMMER_VISION = (lin(2 * 3 * 14 * 14, 1536) + 32 * 32 * 1536 + ln(1536)
                  + 50 * (2 * ln(1536) + 4 * lin(1536, 1536, True) + mlp2(1536, 8960, True)) + ln(1536))
GLIMMER_PROJECTOR = lin(6144, 4096) + lin(4096, 4096) + lin(4096, 6656)
MUSE_GLIMMER = GLIMMER_TEXT + GLIMMER_VISION + GLIMMER_PROJECTOR


# ------------------------------------------------------------------ MiniMax-M3 (MiniMaxM3VLConfig() defaults).
# Text (MiniMaxM3VLTextModel): 60 layers, 6144 wide; q / k / v / o of 64 / 4 heads x 128 without bias, q_norm and
# k_norm of head_dim (MiniMaxM3VLAttention); every layer_types entry "full_attention" (no indexer: only
# "minimax_m3_sparse" layers build MiniMaxM3VLIndexer); every mlp_layer_types entry "sparse": a router of 128 x 6144
# with an e_score_correction_bias buffer (128, persistent), 128 experts of a fused gate_up 2 x 3072 x 6144 and a
# down 6144 x 3072, one shared MiniMaxM3VLDenseMLP of shared_intermediate_size 3072; two RMSNorms a layer, final
# norm; embedding and lm_head 200064 each (untied). Vision (MiniMaxM3VLVisionModel): a bias-free Conv3d 3 x 2 x 14 x
# 14 -> 1280, pre_layrnorm (no post norm), 32 layers of layer_norm1 / layer_norm2 LayerNorms, biased q / k / v /
# out_proj 1280 square, biased fc1 1280 -> 5120 / fc2; rotary positions (no table). Projector
# (MiniMaxM3VLMultiModalProjector): linear_1 1280 -> projector_hidden_size 6144, linear_2 6144 -> text 6144, then
# the 2 x 2 group: merge_linear_1 merged_hidden_size 4 x 6144 -> 6144, merge_linear_2 6144 -> 6144, all biased
M3_MOE = 128 * 6144 + 128 + 128 * gated(6144, 3072) + gated(6144, 3072)
M3_LAYER = gqa(6144, 64, 4, 128) + 2 * 128 + 2 * 6144 + M3_MOE
M3_TEXT = 2 * 200064 * 6144 + 60 * M3_LAYER + 6144
M3_VISION = (3 * 2 * 14 * 14 * 1280 + ln(1280)
             + 32 * (2 * ln(1280) + 4 * lin(1280, 1280, True) + mlp2(1280, 5120, True)))
M3_PROJECTOR = lin(1280, 6144, True) + lin(6144, 6144, True) + lin(4 * 6144, 6144, True) + lin(6144, 6144, True)
MINIMAX_M3 = M3_TEXT + M3_VISION + M3_PROJECTOR
MINIMAX_M3_ACTIVE = M3_TEXT - 60 * (128 - 4) * gated(6144, 3072)  # the tower runs per image, not per token


HAND: dict[str, int] = {
    "meta-models--Muse-Glimmer-30B": MUSE_GLIMMER,
    "MiniMaxAI--MiniMax-M3": MINIMAX_M3,
}
# MoE active per token (hand, published): no published active figure recalled for the class default
ACTIVE: dict[str, tuple[int, float | None]] = {
    "MiniMaxAI--MiniMax-M3": (MINIMAX_M3_ACTIVE, None),
}
# the class default holds ~440B parameters: 16 H100 hold its bf16 weights
SOLVE_CARDS: dict[str, int] = {"MiniMaxAI--MiniMax-M3": 16}
# Published totals precise enough for a 1% check: none recalled for the class default ("30B" in the name is rounded)
PUBLISHED: dict[str, float] = {}

# Bytes of K/V per token of context at bf16: Muse-Glimmer's 13 full-attention layers (every 4th from the last) of
# 2 K/V heads x 128; its 39 sliding layers stop at the 2048-token window
KV_BYTES_PER_TOKEN: dict[str, int] = {
    "meta-models--Muse-Glimmer-30B": 13 * 2 * 2 * 128 * 2,
    "MiniMaxAI--MiniMax-M3": 60 * 2 * 4 * 128 * 2,
}


def test_muse_glimmer_hand_count_holds_thirteen_full_layers() -> None:
    assert sum(1 for i in range(52) if (51 - i) % 4 == 0) == 13


# ------------------------------------------------------------------ reading rules added this round
_GLIMMER = "meta-models--Muse-Glimmer-30B"


def _global_layers(cfg: dict) -> list[int]:
    spec = parse_model_config(cfg, "x")
    return [i for i, layer in enumerate(spec.layers)
            for b in layer.blocks if hasattr(b, "window") and getattr(b, "window", None) is None]


def test_muse_glimmer_attention_carries_its_output_gate_and_four_norms() -> None:
    # Before this round (no family line) counted 28,296,801,280: no gate_proj (52 x 6656 x 4096), two norms a layer
    # of four, the tower's temporal patch / pos_emb grid / ln_pre and the adapter MLP missed (1,479,825,408 short)
    assert _total(_GLIMMER) == MUSE_GLIMMER


def test_muse_glimmer_without_layer_types_makes_every_fourth_layer_from_the_last_global() -> None:
    # Before: sliding_window alone read every layer as windowed (K/V of the 13 global layers silently capped)
    cfg = _load(_GLIMMER)
    written = _global_layers(cfg)
    del cfg["text_config"]["layer_types"]
    assert _global_layers(cfg) == written == list(range(3, 52, 4))
    cfg["text_config"]["num_hidden_layers"] = 50  # counted back from the last: 49, 45, ..., 1
    assert _global_layers(cfg) == list(range(1, 50, 4))


def test_muse_glimmer_tower_patch_embedding_spans_patch_temporal_frames() -> None:
    cfg = _load(_GLIMMER)
    cfg["vision_config"]["patch_temporal"] = 1
    assert count(cfg) == MUSE_GLIMMER - 3 * 14 * 14 * 1536


def test_muse_glimmer_tower_position_table_is_the_pos_emb_grid() -> None:
    cfg = _load(_GLIMMER)
    cfg["vision_config"]["pos_emb_height"] = 64
    assert count(cfg) == MUSE_GLIMMER + 32 * 32 * 1536


def test_muse_glimmer_adapter_runs_through_projector_hidden_size() -> None:
    cfg = _load(_GLIMMER)
    cfg["projector_hidden_size"] = 2048
    assert count(cfg) == MUSE_GLIMMER - GLIMMER_PROJECTOR + lin(6144, 2048) + lin(2048, 2048) + lin(2048, 6656)


def test_muse_glimmer_adapter_input_must_be_the_shuffled_tower_width() -> None:
    cfg = _load(_GLIMMER)
    cfg["vision_config"]["merge_size"] = 1  # the tower hands the adapter 1536 wide, its fc1 reads 6144
    with pytest.raises(InputError, match="out_hidden_size"):
        parse_model_config(cfg, "x")


def test_muse_glimmer_without_projector_hidden_size_is_refused_naming_it() -> None:
    cfg = _load(_GLIMMER)
    del cfg["projector_hidden_size"]
    with pytest.raises(InputError, match="projector_hidden_size"):
        parse_model_config(cfg, "x")


@pytest.mark.parametrize("key", ["sliding_window", "attention_bias", "head_dim"])
def test_muse_glimmer_text_fields_left_out_take_the_class_defaults(key: str) -> None:
    cfg = _load(_GLIMMER)
    del cfg["text_config"][key]
    assert count(cfg) == MUSE_GLIMMER





_M3 = "MiniMaxAI--MiniMax-M3"


def test_minimax_m3_holds_its_qk_norms_router_bias_and_two_stage_projector() -> None:
    # Before this round (no family lines) counted 447,875,298,560: no q_norm / k_norm (60 x 256), no router
    # e_score_correction_bias (60 x 128), a biased Conv3d patch embedding, the projector one linear and a norm
    # (176,694,528 of projector short)
    assert _total(_M3) == MINIMAX_M3


def test_minimax_m3_dense_layers_are_dense_intermediate_size_wide() -> None:
    # Before: a "dense" mlp_layer_types layer read intermediate_size (3072, the experts' width)
    cfg = _load(_M3)
    cfg["text_config"]["mlp_layer_types"] = ["dense"] + ["sparse"] * 59
    assert count(cfg) == MINIMAX_M3 - M3_MOE + gated(6144, 12288)


def test_minimax_m3_legacy_moe_layer_freq_places_the_dense_layers_too() -> None:
    cfg = _load(_M3)
    del cfg["text_config"]["mlp_layer_types"]
    cfg["text_config"]["moe_layer_freq"] = [0] + [1] * 59
    assert count(cfg) == MINIMAX_M3 - M3_MOE + gated(6144, 12288)


# A "minimax_m3_sparse" layer's MiniMaxM3VLIndexer (stop 37): q_proj 6144 -> index_n_heads 4 x index_head_dim 128,
# k_proj 6144 -> 128, both bias-free, q_norm and k_norm Gemma RMSNorms of 128; no weights_proj, no value path. Its
# keys (one head of 128) are cached per token in the model dtype beside the layer's K/V
# (MiniMaxM3VLSparseCacheLayer.update_index); the attention keeps per query the top index_topk_blocks 16 blocks of
# index_block_size 128 keys, the index_local_blocks boosted into those 16 (score +inf before the top-k), so at most
# 2,048 keys a query.
M3_INDEXER = lin(6144, 4 * 128) + lin(6144, 128) + 2 * 128
M3_SPARSE_EVERY_OTHER = ["full_attention", "minimax_m3_sparse"] * 30


def _m3_sparse() -> dict:
    cfg = _load(_M3)
    cfg["text_config"]["layer_types"] = M3_SPARSE_EVERY_OTHER
    return cfg


def test_minimax_m3_sparse_layers_count_their_lightning_indexer() -> None:
    # Before (stop 36): refused naming layer_types (unknown entry 'minimax_m3_sparse')
    assert count(_m3_sparse()) == MINIMAX_M3 + 30 * M3_INDEXER  # 30 x 3,932,416


def test_minimax_m3_sparse_layers_cache_their_indexer_keys_beside_the_kv() -> None:
    # bf16: K/V 4 heads x (128 + 128) x 2 B every layer; the indexer's one key of 128 x 2 B on the 30 sparse layers
    states = [b.state(KV16, 1) for layer in parse_model_config(_m3_sparse(), "x").layers for b in layer.blocks]
    assert sum(s.per_token_bytes for s in states) == 60 * 4 * 256 * 2
    assert sum(s.index_per_token_bytes for s in states) == 30 * 128 * 2


def test_minimax_m3_sparse_layer_attends_its_selected_blocks_only() -> None:
    """One decode token at 32,768 tokens of context on one rank: a full layer's core 2 x 64 heads x 32,768 keys x
    (128 + 128); a sparse layer's over 16 x 128 = 2,048 keys, its indexer scoring every key, 2 x 4 x 128 x 32,768,
    and projecting 2 x (6144 x 512 + 6144 x 128 + 2 x 128)."""
    from solver.estimate.compute import Kit, Work, factors_for
    from solver.specs.hardware_catalog import load_hardware
    from solver.specs.parallel import make_parallel_config
    from solver.specs.precision import resolve_precision

    spec = parse_model_config(_m3_sparse(), "x")
    hw = load_hardware("h100_sxm")
    kit = Kit(hw, make_parallel_config(1), resolve_precision(spec, hw), factors_for(hw),
              Work("decode", new_tokens=1, context=32768, sequences=1, logits_tokens=1))
    full = {o.name: o.flops for o in spec.layers[0].mixer.ops(kit)}
    sparse = {o.name: o.flops for o in spec.layers[1].mixer.ops(kit)}
    assert full["attention_core"] == 2 * 64 * 32768 * 256 and "indexer_score" not in full
    assert sparse["attention_core"] == 2 * 64 * 2048 * 256
    assert sparse["indexer_score"] == 2 * 4 * 128 * 32768
    assert sparse["indexer_proj"] == 2 * M3_INDEXER


def test_minimax_m3_sparse_layer_below_one_selection_attends_every_key() -> None:
    # at 1,000 tokens of context the 16 blocks of 128 cover every key: the core costs a full layer's
    from solver.estimate.compute import Kit, Work, factors_for
    from solver.specs.hardware_catalog import load_hardware
    from solver.specs.parallel import make_parallel_config
    from solver.specs.precision import resolve_precision

    spec = parse_model_config(_m3_sparse(), "x")
    hw = load_hardware("h100_sxm")
    kit = Kit(hw, make_parallel_config(1), resolve_precision(spec, hw), factors_for(hw),
              Work("decode", new_tokens=1, context=1000, sequences=1, logits_tokens=1))
    core = [next(o.flops for o in spec.layers[i].mixer.ops(kit) if o.name == "attention_core") for i in (0, 1)]
    assert core[0] == core[1] == 2 * 64 * 1000 * 256


@pytest.mark.parametrize("field", ["index_n_heads", "index_head_dim", "index_block_size", "index_topk_blocks"])
def test_minimax_m3_sparse_layers_without_an_indexer_size_are_refused_naming_it(field: str) -> None:
    cfg = _m3_sparse()
    del cfg["text_config"][field]
    with pytest.raises(InputError, match=f"{field}: missing"):
        parse_model_config(cfg, "x")


def test_minimax_m3_legacy_sparse_attention_config_is_refused_naming_it() -> None:
    # Before: counted as every layer plain attention, the indexers silently left out
    cfg = _load(_M3)
    del cfg["text_config"]["layer_types"]
    cfg["text_config"]["sparse_attention_config"] = {"sparse_attention_freq": [0, 1] * 30}
    with pytest.raises(InputError, match="sparse_attention_config: written"):
        parse_model_config(cfg, "x")


def test_minimax_m3_merged_hidden_size_must_be_the_grouped_text_width() -> None:
    cfg = _load(_M3)
    cfg["merged_hidden_size"] = 4 * 1280
    with pytest.raises(InputError, match="merged_hidden_size"):
        parse_model_config(cfg, "x")


def test_minimax_m3_projector_runs_through_projector_hidden_size() -> None:
    cfg = _load(_M3)
    cfg["projector_hidden_size"] = 4096
    assert count(cfg) == (MINIMAX_M3 - M3_PROJECTOR + lin(1280, 4096, True) + lin(4096, 6144, True)
                          + lin(4 * 6144, 4096, True) + lin(4096, 6144, True))


@pytest.mark.parametrize("section, key", [("text_config", "layer_types"), ("text_config", "mlp_layer_types"),
                                          ("", "merged_hidden_size")])
def test_minimax_m3_pattern_fields_left_out_take_the_class_defaults(section: str, key: str) -> None:
    cfg = _load(_M3)
    del (cfg[section] if section else cfg)[key]
    assert count(cfg) == MINIMAX_M3
REFUSALS: dict[str, str] = {}
