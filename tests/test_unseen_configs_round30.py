"""Thirtieth round of families outside the catalog (tests/data/configs_unseen/round30/, SOURCES.md's "Thirtieth
round (stop 36)"): 2026 model_types in transformers 5.25.0 that no earlier round nor models/ holds (cosmos3_edge
counted; hy_v4 refused, counted since stop 38 fixe). Both are their config classes' defaults (the docstring names
the checkpoint), written as to_dict would. Hand counts tensor by tensor from transformers 5.25.0's modeling_*.py (read from the unzipped wheel,
not installed); written before the reader was run on them."""
from __future__ import annotations

import pytest

from hand_counts import UNSEEN, Round, count, gated, gqa, lin, ln
from solver.errors import InputError
from solver.specs.config.read import parse_model_config

DATA = UNSEEN / "round30"
ROUND = Round(DATA)
_load, _spec, _total = ROUND.load, ROUND.spec, ROUND.total


# ------------------------------------------------------------------ Cosmos3-Edge (Cosmos3EdgeConfig() defaults).
# Text (Cosmos3EdgeTextModel): 28 layers, 2048 wide, q / k / v / o of 16 / 8 heads x 128 without bias, an ungated
# relu2 MLP fc1 2048 -> 9216, fc2 back, without bias (Cosmos3EdgeTextMLP), two RMSNorms a layer, final norm;
# embedding and lm_head 131072 each (untied). Vision (Cosmos3EdgeVisionModel, SigLIP2 naflex): a biased linear patch
# embedding 3 x 16 x 16 -> 1152, a learned table of num_patches 256 x 1152, 27 layers of layer_norm1 / layer_norm2
# LayerNorms, biased q / k / v / out_proj 1152 square, biased fc1 1152 -> 4304 / fc2; post_layernorm. Projector
# (Cosmos3EdgePatchMerger): a LayerNorm of the tower width 1152 (before the 2 x 2 shuffle), biased linear_fc1
# 4 x 1152 -> projector_hidden_size 11520 and linear_fc2 11520 -> 2048
def mlp2(h: int, f: int, bias: bool = False) -> int:  # up -> act -> down, two matrices
    return lin(h, f, bias) + lin(f, h, bias)


COSMOS_TEXT = 2 * 131072 * 2048 + 28 * (gqa(2048, 16, 8, 128) + mlp2(2048, 9216) + 2 * 2048) + 2048
COSMOS_VISION = (lin(3 * 16 * 16, 1152, True) + 256 * 1152
                 + 27 * (2 * ln(1152) + 4 * lin(1152, 1152, True) + mlp2(1152, 4304, True)) + ln(1152))
COSMOS_PROJECTOR = ln(1152) + lin(4 * 1152, 11520, True) + lin(11520, 2048, True)
COSMOS3_EDGE = COSMOS_TEXT + COSMOS_VISION + COSMOS_PROJECTOR


# ------------------------------------------------------------------ Hy4-preview (HYV4Config() defaults).
# 34 layers, 2816 wide. HYV4Attention: MLA of 32 heads, q_a_proj 2816 -> 1536, q_a_layernorm, q_b_proj 1536 -> 32 x
# (192 + 64), kv_a_proj_with_mqa 2816 -> 512 + 64, kv_a_layernorm, kv_b_proj 512 -> 32 x (192 + 256), o_proj 32 x 256
# -> 2816, no bias; gate_proj 2816 -> 32 x 256 (a per-channel output gate) and sinks (one logit a head). The DSA
# indexer (wq_b 1536 -> 16 x 128, wk 2816 -> 128, k_norm LayerNorm 128, weights_proj 2816 -> 16) only on the "full"
# indexer_types layers, 0 and (i - 1) % 4 == 0 (10 of 34); "shared" layers reuse the last full layer's top-k and hold
# none. Two RMSNorms a layer; two HYV4HyperConnections a layer (attn_hc, ffn_hc): fn 2m x m h, base 2m, scale 2 (no
# comb map, unlike DeepSeek-V4's (2 + m) m rows), m = hc_mult 4. Layer 0 dense 6912; 33 MoE of 256 x 768 top-8
# with a router weight and e_score_correction_bias, one shared of 768. Model: hc_head (hc_fn m x m h, hc_base m,
# hc_scale 1), final norm, untied 120832 embedding and lm_head
def hy_attention(h: int, heads: int, q_rank: int, kv_rank: int, nope: int, rope: int, v: int) -> int:
    mla = (lin(h, q_rank) + q_rank + lin(q_rank, heads * (nope + rope)) + lin(h, kv_rank + rope) + kv_rank
           + lin(kv_rank, heads * (nope + v)) + lin(heads * v, h))
    return mla + lin(h, heads * v) + heads


def hy_indexer(h: int, q_rank: int, heads: int, d: int) -> int:
    return lin(q_rank, heads * d) + lin(h, d) + ln(d) + lin(h, heads)


def hy_hyper_connection(h: int, m: int) -> int:
    return 2 * m * m * h + 2 * m + 2


def hy_full_indexers(layers: int) -> int:
    """Layers of indexer_types "full" in the class default: layer 0 and (i - 1) % 4 == 0."""
    return sum(1 for i in range(layers) if i == 0 or (i - 1) % 4 == 0)


def hy_moe(h: int, moe_inter: int) -> int:
    """A routed MoE layer: router and correction bias, 256 experts, one shared expert of the same width."""
    return lin(h, 256) + 256 + 256 * gated(h, moe_inter) + gated(h, moe_inter)


def hy_text(h: int, layers: int, heads: int, q_rank: int, idx_heads: int, dense: int, moe_inter: int) -> int:
    """The HYV4 text stack: untied 120832 embedding and head, per layer MLA (kv 512, nope 192, rope 64, v 256), two
    norms and two comb-free hyper-connections (m 4); indexers on the full layers, layer 0 dense, the rest MoE; the
    hc_head (4 x 4 x h + 4 + 1) and the final norm."""
    return (2 * 120832 * h + layers * (hy_attention(h, heads, q_rank, 512, 192, 64, 256) + 2 * h
                                       + 2 * hy_hyper_connection(h, 4))
            + hy_full_indexers(layers) * hy_indexer(h, q_rank, idx_heads, 128) + gated(h, dense)
            + (layers - 1) * hy_moe(h, moe_inter) + 4 * 4 * h + 4 + 1 + h)


HY_V4 = hy_text(2816, 34, 32, 1536, 16, 6912, 768)
HY_V4_ACTIVE = HY_V4 - 33 * (256 - 8) * gated(2816, 768)


HAND: dict[str, int] = {
    "nvidia--Cosmos3-Edge": COSMOS3_EDGE,
    "tencent--Hy4-preview": HY_V4,
}
# (hand active, published active): only 8 of 256 routed experts a token
ACTIVE: dict[str, tuple[int, float | None]] = {
    "tencent--Hy4-preview": (HY_V4_ACTIVE, None),
}
# Published totals precise enough for a 1% check: none recalled for either class default
PUBLISHED: dict[str, float] = {}

# Bytes of K/V per token of context at bf16: Cosmos3-Edge's 28 layers of 8 K/V heads x 128
KV_BYTES_PER_TOKEN: dict[str, int] = {
    "nvidia--Cosmos3-Edge": 28 * 2 * 8 * 128 * 2,
    # Hy4-preview: 34 MLA latents of kv_lora_rank 512 + the rope key 64 (the indexer keys are counted apart)
    "tencent--Hy4-preview": 34 * (512 + 64) * 2,
}


# ------------------------------------------------------------------ reading rules added this round


def test_hy_v4_hand_count_holds_ten_full_indexers() -> None:
    assert hy_full_indexers(34) == 10


def test_cosmos3_edge_tower_sizes_its_position_table_from_num_patches() -> None:
    # Before this round refused, misleadingly: "vision_config.image_size: missing" (a field the tower never reads)
    assert _total("nvidia--Cosmos3-Edge") == COSMOS3_EDGE
    cfg = _load("nvidia--Cosmos3-Edge")
    cfg["vision_config"]["num_patches"] = 1024
    assert count(cfg) == COSMOS3_EDGE + (1024 - 256) * 1152


def test_cosmos3_edge_merger_is_projector_hidden_size_wide() -> None:
    # With the position table read, the convention's merger (4608 -> 4608 -> 2048) counted 46,013,184 short
    cfg = _load("nvidia--Cosmos3-Edge")
    cfg["projector_hidden_size"] = 4608
    assert count(cfg) == COSMOS3_EDGE - (4608 * 11520 + 11520 + 11520 * 2048) + (4608 * 4608 + 4608 + 4608 * 2048)


def test_cosmos3_edge_without_projector_hidden_size_is_refused_naming_it() -> None:
    cfg = _load("nvidia--Cosmos3-Edge")
    del cfg["projector_hidden_size"]
    with pytest.raises(InputError, match="projector_hidden_size"):
        parse_model_config(cfg, "x")


@pytest.mark.parametrize("section, key", [("text_config", "hidden_act"), ("vision_config", "spatial_merge_size"),
                                          ("vision_config", "num_patches")])
def test_cosmos3_edge_fields_left_out_take_the_class_defaults(section: str, key: str) -> None:
    # Without the class default hidden_act read, a text_config leaving it out counted a gated SiLU MLP: 528,482,304 over
    cfg = _load("nvidia--Cosmos3-Edge")
    del cfg[section][key]
    assert count(cfg) == COSMOS3_EDGE


# ------------------------------------------------------------------ Hy4-preview's reading rules (stop 38 fixe; refused
# before: "'hy_v4': MLA with attention sinks and a per-channel gate_proj, and hyper-connections ... not read")


@pytest.mark.parametrize("key", ["indexer_types", "layer_types", "hc_mult"])
def test_hy_v4_pattern_fields_left_out_take_the_class_defaults(key: str) -> None:
    # HYV4Config.__post_init__: indexer_types full at 0 and (i - 1) % 4 == 0, every layer indexed_attention, hc_mult 4
    cfg = _load("tencent--Hy4-preview")
    del cfg[key]
    assert count(cfg) == HY_V4


def test_hy_v4_with_every_indexer_full_holds_thirty_four_indexers() -> None:
    cfg = _load("tencent--Hy4-preview")
    cfg["indexer_types"] = ["full"] * 34
    assert count(cfg) == HY_V4 + (34 - hy_full_indexers(34)) * hy_indexer(2816, 1536, 16, 128)
