"""Stop 38 (vlm2): Hy4-VL's convolutional patch merger and Dots3-Note's per-layer MLA (sliding layers with their own
sizes, a window and no indexer). Each config is `ConfigClass()` as save_pretrained writes it
(tests/data/configs_defaults/); each total is transformers' meta-device count of it (parameters plus the router-bias
buffers, benchmarks/README.md "Stop 38"); each new part is checked by hand from transformers 5.25.0's
modeling_hy_v4_vl.py and modeling_dots3_note.py."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from solver.specs.dtypes import KV16
from solver.errors import InputError
from solver.estimate.params import count_params
from solver.specs.config.read import parse_model_config
from solver.specs.layers.mla import MLA
from test_layers import H, _decode, _kit, _op, _prefill

DATA = Path(__file__).parent / "data" / "configs_defaults"


def _raw(name: str) -> dict:
    return json.loads((DATA / f"{name}.json").read_text())


def _mlas(spec) -> list[MLA]:
    return [b for layer in spec.layers for b in layer.blocks if isinstance(b, MLA)]


# ------------------------------------------------------------------------------------------------- Hy4-VL

def test_hy_v4_vl_tower_and_conv_merger_hand_count() -> None:
    """HYV4VLVisionModel, h 1536, inter 6144, 40 blocks, out_hidden_size 6144, m 2:
    a block: q / k / v / o biased 4 x (1536^2 + 1536) = 9,443,328; fc1 / fc2 biased 2 x 1536 x 6144 + 6144 + 1536
    = 18,882,048; two LayerNorms 2 x 2 x 1536 = 6,144: 28,331,520 x 40 = 1,133,260,800.
    patch_embedding 3 x 16 x 16 x 1536 + 1536 = 1,181,184; position table ((2048 / 16)^2 + 1) x 1536 = 25,167,360.
    merger: before_rms 1536; proj_conv 6144 x 1536 x 2 x 2 + 6144 = 37,754,880; proj_out (1 x 1) 6144 x 6144 + 6144
    = 37,754,880; image_newline 6144: 75,517,440. Tower 1,235,126,784 (transformers' model.vision_tower)."""
    spec = parse_model_config(_raw("hy_v4_vl"), "x")
    (vision,) = spec.encoders
    assert vision.params == 1_133_260_800 + 1_181_184 + 25_167_360 + 75_517_440 == 1_235_126_784


def test_hy_v4_vl_counts_to_transformers_figure() -> None:
    # 771,142,515,869 parameters + 19,712 e_score_correction_bias entries (77 MoE layers x 256)
    assert count_params(parse_model_config(_raw("hy_v4_vl"), "x")).total == 771_142_515_869 + 77 * 256


def test_merger_rms_norm_is_the_tower_width_not_a_layernorm() -> None:
    """_vision_merger_norm rms: before_rms holds h weights; the tower's own norms are LayerNorms (2h). Written as
    the tower's LayerNorm, the merger would count 1536 more."""
    raw = _raw("hy_v4_vl")
    (vision,) = parse_model_config(raw, "x").encoders
    raw["vision_config"]["spatial_merge_size"] = 1  # no merge: the convention's one linear h -> out and its norm
    (plain,) = parse_model_config(raw, "x").encoders
    assert vision.params - plain.params == (1536 + 6144 * 6144 + 6144 + 6144 * 6144 + 6144 + 6144) \
        - (1536 * 6144 + 1536)


# ------------------------------------------------------------------------------------------- Dots3-Note text

def test_dots3_note_text_counts_to_transformers_figure() -> None:
    # 279,551,718,016 parameters + 45 MoE layers x 256 e_score_correction_bias = 11,520
    assert count_params(parse_model_config(_raw("dots3_note_text"), "x")).total == 279_551_718_016 + 45 * 256


def test_dots3_sliding_layers_take_per_layer_config_sizes_and_no_indexer() -> None:
    """Layer 2 (sliding, per_layer_config "02"): 64 heads, kv_lora 1024, nope 192, rope 64, v 128, q_lora 1024:
    q_a 5120 x 1024 + 1024; q_b 1024 x 64 x 256 = 16,777,216; kv_a 5120 x (1024 + 64) + 1024; kv_b 1024 x 64 x
    (192 + 128) = 20,971,520; o 64 x 128 x 5120 = 41,943,040; k_rope_only_layernorm 64; g_proj 5120 x 64 = 327,680.
    Layer 0 (indexed): 128 heads at the model's sizes, a DSA indexer; both attend at their own heads."""
    mlas = _mlas(parse_model_config(_raw("dots3_note_text"), "x"))
    sliding, indexed = mlas[2], mlas[0]
    assert (sliding.heads, sliding.kv_lora_rank, sliding.qk_nope_head_dim, sliding.window) == (64, 1024, 192, 512)
    assert sliding.indexer is None and indexed.indexer is not None and indexed.window is None
    assert (indexed.heads, indexed.kv_lora_rank, indexed.qk_nope_head_dim) == (128, 512, 128)
    assert sliding.params == (5120 * 1024 + 1024 + 16_777_216 + 5120 * 1088 + 1024 + 20_971_520 + 41_943_040
                              + 64 + 327_680)
    assert sum(m.window == 512 for m in mlas) == 33 and sum(m.indexer is not None for m in mlas) == 13


def test_per_layer_mla_override_outside_the_mla_sizes_is_refused_by_name() -> None:
    raw = _raw("dots3_note_text")
    raw["per_layer_config"]["02"]["intermediate_size"] = 4096
    with pytest.raises(InputError, match=r"per_layer_config\.02\.intermediate_size"):
        parse_model_config(raw, "x")


def test_per_layer_mla_kv_heads_other_than_the_query_heads_are_refused() -> None:
    raw = _raw("dots3_note_text")
    raw["per_layer_config"]["02"]["num_key_value_heads"] = 8
    with pytest.raises(InputError, match=r"per_layer_config\.02\.num_key_value_heads"):
        parse_model_config(raw, "x")


# ------------------------------------------------------------------------------------------- MLA over a window

def _mla(window: int | None) -> MLA:
    return MLA(hidden=H, heads=4, kv_lora_rank=32, qk_nope_head_dim=16, qk_rope_head_dim=8, v_head_dim=16,
               q_lora_rank=24, window=window)


def test_windowed_mla_caches_at_most_the_window_of_latents() -> None:
    st = _mla(128).state(KV16, 1)
    assert st.per_token_bytes == (32 + 8) * 2  # latent + rope key, bf16
    assert st.tokens_held(100_000) == 128 and st.tokens_held(50) == 50
    assert _mla(None).state(KV16, 1).tokens_held(100_000) == 100_000


def test_windowed_mla_decode_reads_window_keys_in_absorbed_form() -> None:
    # decode, 4 sequences at context 1000: 4 heads x 4 tokens x 128 keys x (kv_lora 32 + rope 8 + kv_lora 32) x 2
    core = _op(_mla(128).ops(_kit(w=_decode(4, 1000))), "attention_core")
    assert core.flops == pytest.approx(2 * 4 * 4 * 128 * (40 + 32))
    full = _op(_mla(None).ops(_kit(w=_decode(4, 1000))), "attention_core")
    assert full.flops == pytest.approx(2 * 4 * 4 * 1000 * (40 + 32))


def test_windowed_mla_prefill_keys_are_window_capped() -> None:
    # prefill S = 1024, non-absorbed (d_k 24, d_v 16): mean keys a query = (sum of min(p, 128), p = 1..S) / S
    S = 1024
    core = _op(_mla(128).ops(_kit(w=_prefill(S))), "attention_core")
    keys = (128 * 129 / 2 + (S - 128) * 128) / S
    assert core.flops == pytest.approx(2 * 4 * S * keys * (24 + 16))


def test_rope_key_norm_adds_one_rope_width_vector() -> None:
    plain, normed = _mla(None), MLA(**{**_mla(None).__dict__, "rope_key_norm": True})
    assert normed.params - plain.params == 8  # qk_rope_head_dim
