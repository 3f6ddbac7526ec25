"""Hybrid, recurrent and vision-language families outside the catalog (tests/data/configs_unseen/multi/, the
"stop 33" section of SOURCES.md there): each counts to the total worked out by hand from the architecture's
modeling code, tensor by tensor, and to within 1% of the published total where one is published with that
precision. One test per reading rule follows the table; the refused configs are in configs_unseen/refused/
(test_unseen_configs.py takes every one there through `inspect`: one line, exit 2)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import toy_hardware  # noqa: E402
from hand_counts import Round, gated, lin, ln  # noqa: F401
from solver.specs.dtypes import KV16
from solver.errors import InputError
from solver.estimate.compute import Kit, Work, factors_for
from solver.estimate.request_state import state_of_layers
from solver.estimate.params import count_params
from solver.specs.config.read import parse_model_config
from solver.specs.layers import Attention, DenseFFN, Layer
from solver.specs.parallel import make_parallel_config
from solver.specs.precision import resolve_precision

DATA = Path(__file__).parent / "data" / "configs_unseen" / "multi"
REFUSED = Path(__file__).parent / "data" / "configs_unseen" / "refused"
ROUND = Round(DATA)
_load, _spec, _total = ROUND.load, ROUND.spec, ROUND.total


# Qwen2-VL's tower (Qwen2VisionTransformerPretrainedModel, the same in the 2B, 7B and 72B): a bias-free Conv3d patch
# embedding 3 x 2 x 14 x 14 -> 1280, 32 blocks of norm1 / norm2 (LayerNorm), qkv 1280 -> 3840 and proj with bias, fc1
# 1280 -> 5120 (mlp_ratio 4) and fc2 with bias (QuickGELU, not gated); the merger: ln_q over 1280, then 4 x 1280 = 5120
# -> 5120 -> the text width, both with bias. Rotary: no weights
def qwen2_vl_tower(out: int) -> int:
    block = 2 * ln(1280) + lin(1280, 3 * 1280, True) + lin(1280, 1280, True) + lin(1280, 5120, True) + lin(5120, 1280,
                                                                                                         True)
    return 3 * 2 * 14 * 14 * 1280 + 32 * block + ln(1280) + lin(5120, 5120, True) + lin(5120, out, True)


# SigLIP So400m/14 (SmolVLM's Idefics3VisionTransformer, PaliGemma's SiglipVisionModel without its pooling head): a
# biased patch Conv2d 3 x 14 x 14 -> 1152, a learned position table of (image_size / 14)^2 rows, 27 layers of q / k / v
# / out_proj with bias, fc1 1152 -> 4304 and fc2 with bias, two LayerNorms; post_layernorm
def siglip_so400m(image_size: int) -> int:
    layer = 4 * lin(1152, 1152, True) + lin(1152, 4304, True) + lin(4304, 1152, True) + 2 * ln(1152)
    return lin(3 * 14 * 14, 1152, True) + (image_size // 14) ** 2 * 1152 + 27 * layer + ln(1152)


# Qwen2 text models (q / k / v with bias, o_proj without, gated SiLU MLP, two RMSNorms a layer, a final norm)
def qwen2_text(vocab: int, h: int, layers: int, heads: int, kv: int, inter: int, tied: bool) -> int:
    d = h // heads
    layer = lin(h, heads * d, True) + 2 * lin(h, kv * d, True) + lin(heads * d, h) + gated(h, inter) + 2 * h
    return (1 if tied else 2) * vocab * h + layers * layer + h


# Bamba-9B's Mamba-2 mixer (BambaMixer): in_proj 4096 -> gate 8192 + conv_dim (8192 + 2 x 1 group x 128 state = 8448)
# + 128 heads, no bias; conv1d over 8448 channels (kernel 4) with bias; dt_bias, A_log, D per head; the gated RMSNorm
# over 8192; out_proj 8192 -> 4096 without bias
BAMBA_MAMBA = lin(4096, 8192 + 8448 + 128) + 8448 * 4 + 8448 + 3 * 128 + 8192 + lin(8192, 4096)
# Nemotron-H-8B's (NemotronHMamba2Mixer): 128 heads x 64, 8 groups x 128 state: in_proj 4096 -> 2 x 8192 + 2 x 8 x 128
# + 128, conv1d over 8192 + 2048 channels with bias, dt_bias / A_log / D, the gated norm over 8192, out_proj
NEMOTRON_H_MAMBA = lin(4096, 2 * 8192 + 2 * 8 * 128 + 128) + 10240 * 4 + 10240 + 3 * 128 + 8192 + lin(8192, 4096)
# RecurrentGemma-2B's recurrent block (RecurrentGemmaRecurrentBlock): linear_y, linear_x 2560 -> 2560 and linear_out
# with bias; conv_1d depthwise over 2560 channels, kernel 4, with bias; RG-LRU: recurrent_param 2560, input and
# recurrent gates of 10 heads x 256 x 256 with a 10 x 256 bias each
RGEMMA_RECURRENT = 3 * lin(2560, 2560, True) + 2560 * 4 + 2560 + 2560 + 2 * (10 * 256 * 256 + 10 * 256)
# its local attention: q 2560 -> 10 x 256 and k / v -> 1 x 256 without bias (attention_bias false), o_proj with bias
RGEMMA_ATTENTION = lin(2560, 2560) + 2 * lin(2560, 256) + lin(2560, 2560, True)
# RecurrentGemmaMlp: gate_proj and up_proj 2560 -> 15360 // 2 = 7680, down_proj, all with bias
RGEMMA_MLP = 2 * lin(2560, 7680, True) + lin(7680, 2560, True)

HAND: dict[str, int] = {
    # Bamba-9B: 29 Mamba-2 layers and attention at 9, 18, 27 (GQA 32 / 8 x 128, no bias); every layer has the gated
    # 14336 MLP and two RMSNorms (input_layernorm, pre_ff_layernorm); final norm; untied
    "ibm-ai-platform--Bamba-9B": 2 * 128256 * 4096
    + 29 * (BAMBA_MAMBA + gated(4096, 14336) + 2 * 4096)
    + 3 * (lin(4096, 4096) + 2 * lin(4096, 1024) + lin(4096, 4096) + gated(4096, 14336) + 2 * 4096) + 4096,
    # Nemotron-H-8B: 52 one-block layers (24 M, 4 *, 24 -), each with one RMSNorm; attention 32 / 8 x 128 without
    # bias; the MLP up 4096 -> 21504 and down, squared ReLU (not gated); norm_f; untied
    "nvidia--Nemotron-H-8B-Base-8K": 2 * 131072 * 4096 + 24 * (NEMOTRON_H_MAMBA + 4096)
    + 4 * (lin(4096, 4096) + 2 * lin(4096, 1024) + lin(4096, 4096) + 4096) + 24 * (2 * lin(4096, 21504) + 4096) + 4096,
    # RecurrentGemma-2B: block_types (recurrent, recurrent, attention) over 26 layers: 18 recurrent, 8 attention; every
    # layer the MLP and two RMSNorms (temporal_pre_norm, channel_pre_norm); final_norm; tied (the config class's
    # default)
    "google--recurrentgemma-2b": 256000 * 2560 + 18 * (RGEMMA_RECURRENT + RGEMMA_MLP + 2 * 2560)
    + 8 * (RGEMMA_ATTENTION + RGEMMA_MLP + 2 * 2560) + 2560,
    # Qwen2-VL-7B: the Qwen2-7B text model (152064 x 3584, 28 layers, 28 / 4 heads, 18944, untied) and the tower with
    # its merger into 3584
    "Qwen--Qwen2-VL-7B-Instruct": qwen2_text(152064, 3584, 28, 28, 4, 18944, False) + qwen2_vl_tower(3584),
    # Qwen2-VL-2B: the Qwen2-1.5B text model (151936 x 1536, 28 layers, 12 / 2 heads, 8960, tied); merger into 1536
    "Qwen--Qwen2-VL-2B-Instruct": qwen2_text(151936, 1536, 28, 12, 2, 8960, True) + qwen2_vl_tower(1536),
    # SmolVLM-Instruct (idefics3): SmolLM2-1.7B's Llama (49155 x 2048, 24 layers, 32 heads x 64, MHA, 8192, untied),
    # SigLIP at 384 (27 x 27 positions), the connector: 3 x 3 pixel shuffle, one bias-free linear 9 x 1152 -> 2048
    "HuggingFaceTB--SmolVLM-Instruct": 2 * 49155 * 2048 + 24 * (4 * lin(2048, 2048) + gated(2048, 8192) + 2 * 2048)
    + 2048 + siglip_so400m(384) + lin(9 * 1152, 2048),
    # PaliGemma2-3B-224: Gemma-2-2B (257216 x 2304, 26 layers, 8 / 4 heads x 256, 9216, four RMSNorms a layer, tied),
    # SigLIP at 224 (16 x 16 positions), the projector: one biased linear 1152 -> 2304
    "google--paligemma2-3b-pt-224": 257216 * 2304
    + 26 * (lin(2304, 2048) + 2 * lin(2304, 1024) + lin(2048, 2304) + gated(2304, 9216) + 4 * 2304) + 2304
    + siglip_so400m(224) + lin(1152, 2304, True),
    # PaliGemma-3B-224 (the first): Gemma-2B (257216 x 2048, 18 layers, 8 / 1 heads x 256, 16384, two RMSNorms a
    # layer, tied), the same SigLIP at 224, one biased linear 1152 -> 2048
    "google--paligemma-3b-pt-224": 257216 * 2048
    + 18 * (lin(2048, 2048) + 2 * lin(2048, 256) + lin(2048, 2048) + gated(2048, 16384) + 2 * 2048) + 2048
    + siglip_so400m(224) + lin(1152, 2048, True),
    # Pixtral-12B (llava): the Mistral-NeMo-style text model (131072 x 5120, 40 layers, 32 / 8 heads x 128, 14336,
    # untied); the Pixtral tower: bias-free patch Conv2d 3 x 16 x 16 -> 1024, ln_pre (RMSNorm), 24 layers of
    # attention_norm, q / k / v / o 1024 -> 1024 and gate / up / down 4096 without bias, ffn_norm (2D RoPE: no
    # position table, no final norm); LLaVA's projector linear_1 1024 -> 5120 and linear_2 with bias
    "mistral-community--pixtral-12b": 2 * 131072 * 5120
    + 40 * (lin(5120, 4096) + 2 * lin(5120, 1024) + lin(4096, 5120) + gated(5120, 14336) + 2 * 5120) + 5120
    + lin(3 * 16 * 16, 1024) + 1024 + 24 * (2 * 1024 + 4 * lin(1024, 1024) + gated(1024, 4096))
    + lin(1024, 5120, True) + lin(5120, 5120, True),
}

# Published totals precise enough for a 1% check (SOURCES.md names each)
PUBLISHED: dict[str, float] = {
    "ibm-ai-platform--Bamba-9B": 9.78e9,  # the model card's "9B (9.78B)", as recalled
    "Qwen--Qwen2-VL-7B-Instruct": 8.29e9,  # the hub's safetensors figure, as recalled (as for Qwen2.5-VL-7B)
}


def test_the_qwen2_vl_7b_tower_is_the_published_675m() -> None:
    # Qwen2-VL report (arXiv 2409.12191), Table 1: a 675M vision encoder (the 7B's, with its merger)
    (enc,) = _spec("Qwen--Qwen2-VL-7B-Instruct").encoders
    assert enc.params == qwen2_vl_tower(3584) and abs(enc.params / 675e6 - 1) < 0.01


# ------------------------------------------------------------------------------------------ one rule each


def test_attn_layer_indices_place_attention_and_mamba_elsewhere_each_with_an_mlp() -> None:
    spec = _spec("ibm-ai-platform--Bamba-9B")
    assert spec.pattern_source == "attn_layer_indices" and spec.architecture == "hybrid-ssm"
    kinds = [layer.mixer.kind for layer in spec.layers]
    assert [i for i, k in enumerate(kinds) if k != "Mamba2"] == [9, 18, 27]
    assert all(isinstance(layer.ffn, DenseFFN) and layer.norms == 2 for layer in spec.layers)
    assert spec.layers[0].mixer.params == BAMBA_MAMBA


def test_attn_layer_indices_outside_the_stack_are_refused() -> None:
    cfg = _load("ibm-ai-platform--Bamba-9B")
    cfg["attn_layer_indices"] = [9, 32]
    with pytest.raises(InputError, match=r"attn_layer_indices: layer indices \[32\] outside 0..31"):
        parse_model_config(cfg, "x")


def test_an_auto_mamba_head_dim_is_expand_x_hidden_over_the_heads() -> None:
    cfg = _load("ibm-ai-platform--Bamba-9B")
    cfg["mamba_d_head"] = "auto"  # BambaConfig's default: 2 x 4096 / 128 = 64
    assert count_params(parse_model_config(cfg, "x")).total == HAND["ibm-ai-platform--Bamba-9B"]
    cfg["mamba_n_heads"] = 96
    with pytest.raises(InputError, match="mamba_n_heads: 96 does not divide mamba_expand x hidden_size .8192."):
        parse_model_config(cfg, "x")


def test_a_dense_hybrid_override_pattern_gives_one_block_layers_with_one_norm() -> None:
    spec = _spec("nvidia--Nemotron-H-8B-Base-8K")
    assert not spec.is_moe and spec.architecture == "hybrid-ssm"
    mlp = [layer for layer in spec.layers if layer.mixer is None]
    assert len(mlp) == 24 and all(layer.norms == 1 for layer in spec.layers)
    ffn = mlp[0].ffn
    assert isinstance(ffn, DenseFFN) and not ffn.gated and ffn.params == 2 * 4096 * 21504  # relu2: up, down


def test_block_types_repeat_over_the_stack_with_local_attention() -> None:
    spec = _spec("google--recurrentgemma-2b")
    assert spec.pattern_source == "block_types"
    attention = [i for i, layer in enumerate(spec.layers) if isinstance(layer.mixer, Attention)]
    assert attention == list(range(2, 26, 3))  # layer i is block_types[i % 3]: 8 attention, 18 recurrent
    assert all(spec.layers[i].mixer.window == 2048 for i in attention)  # local, over attention_window_size
    cfg = _load("google--recurrentgemma-2b")
    del cfg["attention_window_size"]  # no window given: RecurrentGemmaConfig's default 2048, still local
    assert all(parse_model_config(cfg, "x").layers[i].mixer.window == 2048 for i in attention)


def test_an_unknown_block_type_is_refused() -> None:
    cfg = _load("google--recurrentgemma-2b")
    cfg["block_types"] = ["recurrent", "mlp"]
    with pytest.raises(InputError, match="block_types: unknown entry 'mlp' at index 1"):
        parse_model_config(cfg, "x")


def test_an_rglru_block_counts_projections_conv_and_block_diagonal_gates() -> None:
    rec = _spec("google--recurrentgemma-2b").layers[0].mixer
    assert rec.kind == "RGLRU" and rec.params == RGEMMA_RECURRENT
    cfg = _load("google--recurrentgemma-2b")
    cfg["lru_width"] = 2565  # not a multiple of the 10 gate blocks
    with pytest.raises(InputError, match="lru_width: 2565 is not a multiple of num_attention_heads"):
        parse_model_config(cfg, "x")


def test_an_rglru_block_holds_a_constant_state_split_by_tp_only() -> None:
    rec = _spec("google--recurrentgemma-2b").layers[0].mixer
    st = rec.state(KV16, 1)
    assert not st.grows and st.constant_bytes == 3 * 2560 * 2 + 2560 * 2  # conv tail (k - 1) x width, the LRU state
    assert rec.state(KV16, 2).constant_bytes == st.constant_bytes / 2  # attention TP splits the 10 gate blocks
    held = state_of_layers([(Layer((rec,), 2560, 2), 18)], KV16, 1, 100_000)
    assert held.kv == 0 and held.constant == 18 * st.constant_bytes


def test_an_rglru_block_costs_gemms_and_a_scan_not_the_context() -> None:
    hw = toy_hardware()
    rec = _spec("google--recurrentgemma-2b").layers[0].mixer
    spec = _spec("google--recurrentgemma-2b")
    flops = []
    for ctx in (1000, 100_000):
        kit = Kit(hw, make_parallel_config(1), resolve_precision(spec, hw), factors_for(hw),
                  Work("decode", new_tokens=4, context=ctx, sequences=4, logits_tokens=4))
        ops = {o.name: o for o in rec.ops(kit)}
        assert set(ops) == {"ssm_proj", "ssm_scan"}
        flops.append(ops["ssm_proj"].flops)
        assert ops["ssm_proj"].flops == pytest.approx(2 * 4 * (3 * 2560 * 2560 + 2 * 10 * 256 * 256))
    assert flops[0] == flops[1]
    kit = Kit(hw, make_parallel_config(2, attn_tp_size=2), resolve_precision(spec, hw), factors_for(hw),
              Work("decode", new_tokens=4, context=1000, sequences=4, logits_tokens=4))
    assert {c.name for c in rec.comms(kit, 0.0)} == {"ssm_tp_allreduce"}


def test_recurrent_gemma_mlp_is_half_the_intermediate_size_with_biases() -> None:
    ffn = _spec("google--recurrentgemma-2b").layers[0].ffn
    assert isinstance(ffn, DenseFFN) and ffn.inter == 15360 // 2 and ffn.gated and ffn.params == RGEMMA_MLP


def test_recurrent_gemma_o_proj_has_a_bias_whatever_attention_bias() -> None:
    attn = _spec("google--recurrentgemma-2b").layers[2].mixer
    assert attn.out_bias and not attn.qkv_bias and attn.params == RGEMMA_ATTENTION
    cfg = _load("google--recurrentgemma-2b")
    cfg["attention_bias"] = True
    attn = parse_model_config(cfg, "x").layers[2].mixer
    assert attn.out_bias and attn.qkv_bias


def test_a_tower_whose_hidden_size_is_its_output_is_read_by_embed_dim_and_mlp_ratio() -> None:
    cfg = _load("Qwen--Qwen2-VL-7B-Instruct")
    (enc,) = parse_model_config(cfg, "x").encoders
    assert enc.hidden == 1280 and enc.layers == 32
    cfg["vision_config"]["mlp_ratio"] = 2  # the MLP follows mlp_ratio x embed_dim: fc1 / fc2 lose 1280 x 2560 each
    (narrow,) = parse_model_config(cfg, "x").encoders
    assert enc.params - narrow.params == 32 * (2 * 1280 * 2560 + 2560)


def test_a_pixel_shuffle_linear_projector_reads_the_wrappers_scale_factor() -> None:
    cfg = _load("HuggingFaceTB--SmolVLM-Instruct")
    (enc,) = parse_model_config(cfg, "x").encoders
    assert enc.params == siglip_so400m(384) + 9 * 1152 * 2048
    cfg["scale_factor"] = 4  # SmolVLM-256M / 500M shuffle by 4: 16 x 1152 into the text width
    assert parse_model_config(cfg, "x").encoders[0].params - enc.params == 7 * 1152 * 2048


def test_a_biased_linear_projector_maps_into_projection_dim_without_a_norm() -> None:
    (enc,) = _spec("google--paligemma2-3b-pt-224").encoders
    assert enc.params == siglip_so400m(224) + 1152 * 2304 + 2304


def test_a_nested_vision_config_takes_its_tower_class_defaults() -> None:
    """Pixtral-12B's vision_config is written as its diff against PixtralVisionConfig(), the class transformers
    builds it with: no hidden_size, intermediate_size, layers or heads. They are read from that class's defaults, in
    a note; the wrapper's default vision config (LlavaConfig's CLIP ViT-L/14) only fills what no class default is
    known for, and with neither the field is missing."""
    cfg = _load("mistral-community--pixtral-12b")
    assert "hidden_size" not in cfg["vision_config"]
    spec = _spec("mistral-community--pixtral-12b")
    (enc,) = spec.encoders
    assert (enc.hidden, enc.layers) == (1024, 24)
    (note,) = [w for w in spec.warnings if "vision_config.hidden_size" in w]
    assert note.startswith("vision_config.hidden_size, intermediate_size, num_hidden_layers: not written; read as "
                           "the pixtral tower's class defaults")
    cfg["vision_config"]["model_type"] = "newtower"  # a tower class without known defaults: the wrapper's fill in
    spec = parse_model_config(cfg, "x")
    assert (spec.encoders[0].hidden, spec.encoders[0].layers) == (1024, 24)
    assert [w for w in spec.warnings if "llava's default vision config" in w]
    cfg["model_type"] = "newvlm"  # nor a known default vision config of the wrapper: the field is missing
    cfg["text_config"]["num_attention_heads"] = 32
    with pytest.raises(InputError, match="vision_config.depth: missing"):
        parse_model_config(cfg, "x")


def test_paligemmas_text_config_takes_its_head_dim_from_gemma2_config() -> None:
    """PaliGemma2's text_config leaves num_attention_heads 8 and head_dim 256 to Gemma2Config's defaults
    (transformers builds a given text_config as Gemma2Config(**text_config); PaliGemmaConfig's init_kwargs build
    only the text config given none); without them the head dim would read as 2304 / 8 = 288."""
    spec = _spec("google--paligemma2-3b-pt-224")
    attn = spec.layers[0].mixer
    assert (attn.heads, attn.kv_heads, attn.head_dim) == (8, 4, 256)


def test_a_wrappers_own_field_is_named_not_compared_with_the_text_config() -> None:
    spec = _spec("google--paligemma2-3b-pt-224")  # top-level hidden_size 2048, text_config 2304
    assert spec.hidden_size == 2304
    assert any(w.startswith("hidden_size: the wrapper's own field (2048)") for w in spec.warnings)
    cfg = _load("google--paligemma2-3b-pt-224")
    cfg["vocab_size"] = 257152  # not the wrapper's own: the text config's differs, one line
    with pytest.raises(InputError, match="vocab_size: the top level says 257152 and text_config.vocab_size says"):
        parse_model_config(cfg, "x")


def test_a_thinker_talker_config_is_refused_naming_thinker_config() -> None:
    cfg = json.loads((REFUSED / "Qwen--Qwen2.5-Omni-7B.json").read_text())
    with pytest.raises(InputError, match=r"thinker_config: given: the talker \(its own transformer stack\) and token2wav") as err:
        parse_model_config(cfg, "x")
    assert "\n" not in str(err.value) and "{" not in str(err.value)  # the nested config is not printed


@pytest.mark.parametrize("field", ["vision_lora", "speech_lora", "audio_processor"])
def test_per_modality_lora_adapters_and_a_conformer_audio_encoder_are_refused(field: str) -> None:
    cfg = json.loads((REFUSED / "microsoft--Phi-4-multimodal-instruct.json").read_text())
    for other in ("vision_lora", "speech_lora", "audio_processor"):
        if other != field:
            cfg.pop(other)
    with pytest.raises(InputError, match=f"{field}: given: .* not modelled"):
        parse_model_config(cfg, "x")


