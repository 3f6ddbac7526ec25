"""Twenty-second round of families outside the catalog (tests/data/configs_unseen/round22/, SOURCES.md's "Twenty-second
round (stop 36)"): 2025-2026 families no earlier round nor the catalog holds (model_types exaone_moe, exaone4_5,
smallthinker), chosen where a reader by convention is likeliest wrong: a MoE whose expert count, shared expert and
dense first layer come under EXAONE's names beside a 3:1 sliding window with a 128-token window (K-EXAONE), a
Qwen2.5-VL-style tower whose fused qkv carries fewer K/V heads than query heads (EXAONE-4.5's vision GQA), and a MoE
that names its experts moe_num_primary_experts / moe_ffn_hidden_size and lays its window and rope out per layer
(SmallThinker). Hand counts tensor by tensor from transformers 5.25.0 modeling_exaone_moe.py /
configuration_exaone_moe.py and modeling_exaone4_5.py / configuration_exaone4_5.py (read from the wheel, not
installed), and from the remote modeling_smallthinker.py as recalled; written before the reader was run on them."""
from __future__ import annotations

import pytest

from hand_counts import UNSEEN, Round, count, gated, gqa, lin
from solver.errors import InputError

DATA = UNSEEN / "round22"
ROUND = Round(DATA)
_load, _spec, _total = ROUND.load, ROUND.spec, ROUND.total


# ------------------------------------------------------------------ K-EXAONE-236B-A23B (ExaoneMoeForCausalLM): GQA 64 /
# 8 heads x 128 with q_norm / k_norm over head_dim, no biases; layer 0 dense (first_k_dense_replace 1: gate / up /
# down of 18432), layers 1-47 sparse: 128 experts of 2048 (gate_up_proj fused, down_proj), a router of 128 x 6144
# and its e_score_correction_bias of 128 (ExaoneMoeTopkRouter builds it always; a persistent buffer, so in the
# checkpoint and counted, stop 37 / stop 38 in benchmarks/README.md), one shared expert of moe_intermediate_size x
# num_shared_experts; input / post-attention RMSNorms; untied. The MTP layer (num_nextn_predict_layers) is dropped at
# load (_keys_to_ignore_on_load_unexpected "mtp.*"): not counted
def exaone_attention(h: int, heads: int, kv: int, d: int) -> int:
    return gqa(h, heads, kv, d) + 2 * d


def k_exaone(vocab: int, h: int, layers: int, dense: int, inter: int, experts: int, moe: int, shared: int) -> int:
    attn = exaone_attention(h, 64, 8, 128) + 2 * h
    sparse = experts * gated(h, moe) + lin(h, experts) + experts + gated(h, moe * shared)
    return 2 * vocab * h + dense * (attn + gated(h, inter)) + (layers - dense) * (attn + sparse) + h


K_EXAONE = k_exaone(153600, 6144, 48, 1, 18432, 128, 2048, 1)
K_EXAONE_ACTIVE = K_EXAONE - 47 * (128 - 8) * gated(6144, 2048)


# ------------------------------------------------------------------ EXAONE-4.5-33B (Exaone4_5_ForConditionalGeneration):
# the text model is EXAONE-4.0-32B's (exaone4: GQA 40 / 8 x 128 with q_norm / k_norm, post-attention and
# post-feedforward RMSNorms, untied); the tower: Conv3d patch 3 x 2 x 14 x 14 -> 1280 without bias, 32 blocks of
# two RMSNorms (weights only), a fused qkv 1280 -> 16 x 80 + 2 x 8 x 80 (num_key_value_heads 8: vision GQA) biased,
# proj 1280 -> 1280 biased, a gated MLP 1280 -> 3420 with biases; the merger: ln_q RMSNorm(1280), 5120 -> 5120 and
# 5120 -> out_hidden_size 5120, both biased
def exaone4(vocab: int, h: int, layers: int, heads: int, kv: int, d: int, inter: int) -> int:
    layer = exaone_attention(h, heads, kv, d) + gated(h, inter) + 2 * h
    return 2 * vocab * h + layers * layer + h


def exaone45_tower(h: int, depth: int, heads: int, kv: int, inter: int, patch: int, temporal: int, out: int) -> int:
    d = h // heads
    block = 2 * h + lin(h, (heads + 2 * kv) * d, True) + lin(h, h, True) + 2 * lin(h, inter, True) + lin(inter, h, True)
    wide = 4 * h  # spatial_merge_size 2: 2 x 2 patches concatenated
    merger = h + lin(wide, wide, True) + lin(wide, out, True)
    return 3 * temporal * patch * patch * h + depth * block + merger


EXAONE_45 = exaone4(102400, 5120, 64, 40, 8, 128, 27392) + exaone45_tower(1280, 32, 16, 8, 3420, 14, 2, 5120)


# ------------------------------------------------------------------ SmallThinker-21BA3B-Instruct (remote
# SmallThinkerForCausalLM, as recalled): GQA 28 / 4 heads x 128 without biases or q / k norms; every layer a MoE of
# moe_num_primary_experts 64 experts of moe_ffn_hidden_size 768 (gate / up / down), a primary router 2560 -> 64
# (run before attention: moe_enable_early_router), no shared expert, no dense layer; two RMSNorms a layer; untied
def smallthinker(vocab: int, h: int, layers: int, experts: int, moe: int) -> int:
    layer = gqa(h, 28, 4, 128) + experts * gated(h, moe) + lin(h, experts) + 2 * h
    return 2 * vocab * h + layers * layer + h


SMALLTHINKER_21B = smallthinker(151936, 2560, 52, 64, 768)
SMALLTHINKER_ACTIVE = SMALLTHINKER_21B - 52 * (64 - 6) * gated(2560, 768)


HAND: dict[str, int] = {
    "LGAI-EXAONE--K-EXAONE-236B-A23B": K_EXAONE,
    "LGAI-EXAONE--EXAONE-4.5-33B": EXAONE_45,
    "PowerInfer--SmallThinker-21BA3B-Instruct": SMALLTHINKER_21B,
}
# Published totals precise enough for a 1% check: K-EXAONE's 236B (name and card). EXAONE-4.5's 33B and
# SmallThinker's 21B are names (the hand counts are 32.6B and 21.5B)
PUBLISHED: dict[str, float] = {"LGAI-EXAONE--K-EXAONE-236B-A23B": 236e9}

ACTIVE: dict[str, tuple[int, float | None]] = {
    # 8 of 128 routed experts: 23.6B with the embedding and head (the card's 23B, as recalled, is a round figure)
    "LGAI-EXAONE--K-EXAONE-236B-A23B": (K_EXAONE_ACTIVE, None),
    # 6 of 64: 3.72B with the embedding and head, 2.94B without (the name's A3B)
    "PowerInfer--SmallThinker-21BA3B-Instruct": (SMALLTHINKER_ACTIVE, None),
}

# Bytes of K/V per token of context at bf16 over the global layers only (a window's cache stops at the window):
# K-EXAONE 12 of 48 (LLLG), EXAONE-4.5's text 16 of 64 (LLLG), SmallThinker 13 of 52 (sliding_window_layout 1 1 1 0)
KV_BYTES_PER_TOKEN: dict[str, int] = {
    "LGAI-EXAONE--K-EXAONE-236B-A23B": 12 * 2 * 8 * 128 * 2,
    "LGAI-EXAONE--EXAONE-4.5-33B": 16 * 2 * 8 * 128 * 2,
    "PowerInfer--SmallThinker-21BA3B-Instruct": 13 * 2 * 4 * 128 * 2,
}

# K-EXAONE's 236B at bf16 (473 GB) does not fit 8 H100s with room for a cache
SOLVE_CARDS: dict[str, int] = {"LGAI-EXAONE--K-EXAONE-236B-A23B": 16}


# ------------------------------------------------------------------ reading rules added this round


def test_exaones_attention_carries_q_and_k_norms_of_head_dim_from_its_family_line() -> None:
    # Before this round: K-EXAONE counted 236,571,138,048 (48 x 2 x 128 q_norm / k_norm weights missed; no note); the
    # same line of exaone4 moves the catalog's EXAONE-4.0-32B by 64 x 256
    assert _total("LGAI-EXAONE--K-EXAONE-236B-A23B") == K_EXAONE
    blocks = [b for layer in _spec("LGAI-EXAONE--EXAONE-4.5-33B").layers for b in layer.blocks]
    assert {b.qk_norm for b in blocks if hasattr(b, "qk_norm")} == {"head"}


def test_a_vision_tower_with_fewer_kv_heads_sizes_its_fused_qkv_by_them() -> None:
    # Before this round: EXAONE-4.5 counted 32,687,192,320: the tower's qkv read as 3 x 1280 wide (+32 x 1,639,680),
    # its biases missed (-32 x 13,240) and the text q / k norms missed (-16,384); num_key_value_heads named unread
    cfg = _load("LGAI-EXAONE--EXAONE-4.5-33B")
    assert _total("LGAI-EXAONE--EXAONE-4.5-33B") == EXAONE_45
    assert not any("num_key_value_heads" in w for w in _spec("LGAI-EXAONE--EXAONE-4.5-33B").warnings)
    mha = {**cfg, "vision_config": {**cfg["vision_config"], "num_key_value_heads": 16}}
    assert count(mha) - EXAONE_45 == 32 * 2 * (1280 * 640 + 640)


def test_a_tower_kv_head_count_that_does_not_divide_its_heads_is_refused_naming_it() -> None:
    cfg = _load("LGAI-EXAONE--EXAONE-4.5-33B")
    bad = {**cfg, "vision_config": {**cfg["vision_config"], "num_key_value_heads": 6}}
    with pytest.raises(InputError, match=r"vision_config\.num_key_value_heads: 6 does not divide the tower's 16 heads"):
        count(bad)


def test_smallthinkers_primary_experts_are_read_as_routed_experts() -> None:
    # Before this round: refused, misleadingly, "intermediate_size: missing (required to size the dense FFN)"
    name = "PowerInfer--SmallThinker-21BA3B-Instruct"
    assert _total(name) == SMALLTHINKER_21B
    moe = [b for b in _spec(name).layers[0].blocks if hasattr(b, "experts")][0]
    assert (moe.experts, moe.topk, moe.inter) == (64, 6, 768)


def test_smallthinkers_sliding_window_layout_places_its_window_layers() -> None:
    # 1 = a sliding layer of sliding_window_size: 39 of 52 layers keep 4096 tokens, 13 keep the whole context
    windows = [b.window for layer in _spec("PowerInfer--SmallThinker-21BA3B-Instruct").layers for b in layer.blocks
               if hasattr(b, "window")]
    assert windows == [4096, 4096, 4096, None] * 13
