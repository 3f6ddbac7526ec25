"""Eighteenth round of families outside the catalog (tests/data/configs_unseen/round18/, SOURCES.md's "Eighteenth
round (stop 35)"): families no earlier round nor the catalog holds (model_type checked: moss, cogvlm2,
multi_modality, internlmxcomposer2, ovis; ChatGLM-6B's first layout, Qwen-VL, GLM-4V and LLaVA's original layout
under held model_types whose switches no held file tries), chosen where a reader by convention is likeliest wrong:
a tower written in a field no reader looks at (Qwen-VL's visual, LLaVA's mm_vision_tower), a tower of another
lineage under a held text family (GLM-4V's EVA2-CLIP), visual experts doubling every layer (CogVLM2), an earlier
layout under the same model_type (ChatGLM-6B), a CodeGen copy under its own name (MOSS), configs whose towers are
named rather than sized (Janus-Pro, InternLM-XComposer2). Each hand count is worked out tensor by tensor from the
modeling code as recalled (the remote modeling_moss.py, modeling_chatglm.py of chatglm-6b and glm-4v-9b with its
visual.py, modeling_cogvlm.py / visual.py of CogVLM2, Qwen-VL's modeling_qwen.py / visual.py, LLaVA's
llava_arch.py / clip_encoder.py / multimodal_projector/builder.py, modeling_internlm_xcomposer2.py, Ovis's
modeling_ovis.py; transformers 5.25.0's modeling_clip.py read, not installed), written before the reader was run on
them."""
from __future__ import annotations

import pytest

from hand_counts import REFUSED, UNSEEN, Round, count, gated, gqa, lin, ln
from solver.estimate.params import count_params
from solver.errors import InputError
from solver.specs.config.read import parse_model_config
from test_unseen_configs_round17 import AQUILA2_34B

DATA = UNSEEN / "round18"
ROUND = Round(DATA)
_load, _spec, _total = ROUND.load, ROUND.spec, ROUND.total


def llama_layer(h: int, heads: int, kv: int, d: int, inter: int, norms: int = 2) -> int:
    """q / k / v / o without biases, the gated MLP, `norms` RMSNorm weight vectors."""
    return gqa(h, heads, kv, d) + gated(h, inter) + norms * h


def clip_vit(h: int, layers: int, inter: int, patch: int, image: int) -> int:
    """transformers' CLIPVisionModel: patch Conv2d without a bias, class_embedding, a position row per patch and one
    for the class token, pre_layrnorm; per layer two LayerNorms, biased q / k / v / out_proj and fc1 / fc2;
    post_layernorm (held in the state dict though LLaVA reads a layer before it)."""
    rows = (image // patch) ** 2 + 1
    layer = 2 * ln(h) + 4 * lin(h, h, True) + lin(h, inter, True) + lin(inter, h, True)
    return 3 * patch * patch * h + h + rows * h + ln(h) + layers * layer + ln(h)


# ------------------------------------------------------------------ MOSS-moon-003-sft (remote modeling_moss.py)
# CodeGen's block under another name: ln_1 (biased LayerNorm) feeding attention and MLP in parallel; qkv_proj fused
# 3 x n_embd and out_proj without biases; fc_in / fc_out biased, n_inner null: 4 x n_embd; ln_f; lm_head biased and
# untied (the file writes tie_word_embeddings false)
def codegen_layer(h: int, inner: int) -> int:
    return ln(h) + 3 * h * h + h * h + lin(h, inner, True) + lin(inner, h, True)


MOSS_MOON_003 = 107008 * 6144 + 34 * codegen_layer(6144, 4 * 6144) + ln(6144) + lin(6144, 107008, True)


# ------------------------------------------------------------------ ChatGLM-6B, first layout (remote modeling_chatglm.py)
# GLMBlock: input_layernorm and post_attention_layernorm as torch LayerNorms (weight and bias); query_key_value
# h -> 3h and dense, both biased (every head its own K/V); the MLP ("GLU") dense_h_to_4h h -> inner_hidden_size and
# dense_4h_to_h, biased, GELU, not gated; final_layernorm; lm_head bias-free and tied to word_embeddings
# (ChatGLMConfig of chatglm-6b leaves tie_word_embeddings to PretrainedConfig's True and the file does not write
# it; the card's 6.2B is the tied count); position_encoding_2d is rotary (no weights); pre_seq_len null: no prefix
def glm1_layer(h: int, inner: int) -> int:
    return 2 * ln(h) + lin(h, 3 * h, True) + lin(h, h, True) + lin(h, inner, True) + lin(inner, h, True)


CHATGLM_6B = 130528 * 4096 + 28 * glm1_layer(4096, 16384) + ln(4096)


# ------------------------------------------------------------------ LLaVA-v1.5-7B, original layout (llava_arch.py)
# The language model is Vicuna-7B v1.5 (Llama-2-7B's shape, untied); mm_vision_tower names the CLIP checkpoint it
# loads (ViT-L/14 at 336: 24 layers of 1024, MLP 4096); mm_projector_type mlp2x_gelu: Linear(mm_hidden_size 1024,
# 4096) + GELU + Linear(4096, 4096), biased
LLAVA15_TEXT = 2 * 32000 * 4096 + 32 * llama_layer(4096, 32, 32, 128, 11008) + 4096
LLAVA15_TOWER = clip_vit(1024, 24, 4096, 14, 336)
LLAVA15_PROJECTOR = lin(1024, 4096, True) + lin(4096, 4096, True)
LLAVA15_7B = LLAVA15_TEXT + LLAVA15_TOWER + LLAVA15_PROJECTOR

# ------------------------------------------------------------------ Yi-VL-6B (LLaVA's layout)
# Yi-6B (32 / 4 heads x 128, untied); the tower CLIP ViT-H/14 at 448 (32 layers of 1280, MLP 5120) named by path;
# mlp2x_gelu_Norm: Linear(1280, 4096), LayerNorm, GELU, Linear(4096, 4096), LayerNorm
YI_VL_TEXT = 2 * 64000 * 4096 + 32 * llama_layer(4096, 32, 4, 128, 11008) + 4096
YI_VL_6B = (YI_VL_TEXT + clip_vit(1280, 32, 5120, 14, 448)
            + lin(1280, 4096, True) + ln(4096) + lin(4096, 4096, True) + ln(4096))


# ------------------------------------------------------------------ Qwen-VL-Chat (modeling_qwen.py, visual.py)
# Text: Qwen-7B (c_attn fused and biased, c_proj bare, w1 / w2 of intermediate_size // 2 and c_proj, RMSNorms,
# untied). Visual (VisionTransformer): conv1 14 x 14 without a bias, positional_embedding 256 x width (interpolated
# to the grid), ln_pre; 48 blocks of ln_1 / ln_2, in_proj 3 x width and out_proj (biased, nn.MultiheadAttention),
# c_fc width -> int(width x mlp_ratio) = 8192 and c_proj (biased); the Resampler: pos_embed 256 x output_dim (a frozen
# sin-cos Parameter), query 256 x output_dim, kv_proj width -> output_dim bare, an nn.MultiheadAttention of
# output_dim, ln_q / ln_kv; ln_post and proj (output_dim x output_dim)
QWEN7B_LAYER = lin(4096, 3 * 4096, True) + 4096 * 4096 + 3 * 4096 * 11008 + 2 * 4096
QWEN_VL_TEXT = 2 * 151936 * 4096 + 32 * QWEN7B_LAYER + 4096


def qwen_vl_visual(width: int, layers: int, mlp: int, patch: int, out: int, queries: int) -> int:
    block = 2 * ln(width) + lin(width, 3 * width, True) + lin(width, width, True) + lin(width, mlp, True) \
        + lin(mlp, width, True)
    resampler = 2 * queries * out + width * out + lin(out, 3 * out, True) + lin(out, out, True) + 2 * ln(out)
    return 3 * patch * patch * width + 256 * width + ln(width) + layers * block + resampler + ln(out) + out * out


QWEN_VL_CHAT = QWEN_VL_TEXT + qwen_vl_visual(1664, 48, 8192, 14, 4096, 256)


# ------------------------------------------------------------------ GLM-4V-9B (modeling_chatglm.py, visual.py)
# Text: GLM-4-9B (query_key_value biased (add_qkv_bias) with 2 K/V groups, dense bare, SwiGLU dense_h_to_4h 2 x
# 13696 and dense_4h_to_h, two RMSNorms, final norm, untied output_layer). Vision (EVA2-CLIP-E): patch Conv2d 14 x 14
# biased, cls_embedding, position_embedding num_positions x 1792; 63 layers of input / post LayerNorms,
# query_key_value 3 x 1792 and dense (biased), fc1 / fc2 1792 <-> 15360 (biased); conv 2 x 2 stride 2 1792 -> 4096
# (biased); GLU: linear_proj 4096 -> 4096 bare, norm1 LayerNorm, dense_h_to_4h and gate_proj 4096 -> ffn_hidden_size
# and dense_4h_to_h, bare; boi / eoi 4096 each
def eva2_clip(h: int, layers: int, inter: int, patch: int, positions: int) -> int:
    layer = 2 * ln(h) + lin(h, 3 * h, True) + lin(h, h, True) + lin(h, inter, True) + lin(inter, h, True)
    return 3 * patch * patch * h + h + h + positions * h + layers * layer


def glu_projector(into: int, out: int, ffn: int) -> int:
    return into * out + ln(out) + 3 * out * ffn + 2 * out  # linear_proj, norm1, gate / up / down, boi / eoi


GLM4_9B_LAYER = lin(4096, (32 + 2 * 2) * 128, True) + 4096 * 4096 + 3 * 4096 * 13696 + 2 * 4096
GLM4V_TEXT = 2 * 151552 * 4096 + 40 * GLM4_9B_LAYER + 4096
GLM4V_9B = (GLM4V_TEXT + eva2_clip(1792, 63, 15360, 14, 6401) + (4 * 1792 * 4096 + 4096)
            + glu_projector(4096, 4096, 13696))


# ------------------------------------------------------------------ CogVLM2-Llama3-chat-19B (modeling_cogvlm.py)
# Every layer holds two experts, language and vision, routed by the token's modality: VisionExpertAttention's
# vision_expert_query_key_value (biased) and language_expert_query_key_value (bare), h -> h + 2 x 8 x 128, and the two
# dense projections (bare); VisionExpertMLP's language_mlp and vision_mlp (each gate / up / down); two RMSNorms;
# untied head. Vision: EVA2-CLIP-E (num_positions 9217), conv 2 x 2 1792 -> 1792 (biased), GLU 1792 -> 4096 through
# intermediate_size 14336
COGVLM2_LAYER = (2 * (4096 * 6144) + 6144 + 2 * 4096 * 4096 + 2 * gated(4096, 14336) + 2 * 4096)
COGVLM2_TEXT = 2 * 128256 * 4096 + 32 * COGVLM2_LAYER + 4096
COGVLM2_19B = (COGVLM2_TEXT + eva2_clip(1792, 63, 15360, 14, 9217) + (4 * 1792 * 1792 + 1792)
               + glu_projector(1792, 4096, 14336))


# ------------------------------------------------------------------ Janus-Pro-7B: the language model alone
# (DeepSeek-LLM-7B: Llama's layer, 30 layers, untied); the SigLIP-L tower (timm, named), the VQ-16 generator, the
# aligners and the generation head are not counted by hand
JANUS_PRO_TEXT = 2 * 102400 * 4096 + 30 * llama_layer(4096, 32, 32, 128, 11008) + 4096


# ------------------------------------------------------------------ InternLM-XComposer2-7B: the language model and its Partial LoRA
# InternLM2-7B (wqkv fused, wo, w1 / w3 / w2, RMSNorms, untied) with Plora_A (in x 256) and Plora_B (256 x out) on
# wqkv, wo, w1, w2 and w3 (lora_r 256, fixed in the modeling code, not in the config); the CLIP ViT-L/14 tower
# (named in code) and vision_proj are not counted here
def plora(i: int, o: int, r: int = 256) -> int:
    return i * r + r * o


XCOMPOSER2_LAYER = (llama_layer(4096, 32, 8, 128, 14336) + plora(4096, 6144) + plora(4096, 4096)
                    + 2 * plora(4096, 14336) + plora(14336, 4096))
XCOMPOSER2_TEXT = 2 * 92544 * 4096 + 32 * XCOMPOSER2_LAYER + 4096


# ------------------------------------------------------------------ Ovis1.6-Gemma2-9B: the language model alone
# Gemma-2-9B (16 / 8 heads x 256, four RMSNorms a layer, tied); the visual tokenizer (SigLIP so400m, its head into
# a 65,536-entry visual vocabulary) and the visual embedding table (65,536 x 3584) are not counted here
OVIS_TEXT = 256000 * 3584 + 42 * llama_layer(3584, 16, 8, 256, 14336, norms=4) + 3584


HAND: dict[str, int] = {
    "fnlp--moss-moon-003-sft": MOSS_MOON_003,
    # from refused/ (stop 36): the tower's sizes from the table of named towers (config/named_towers.yaml)
    "liuhaotian--llava-v1.5-7b": LLAVA15_7B,
    "01-ai--Yi-VL-6B": YI_VL_6B,
    # from refused/ (stop 36): EVA2-CLIP's tower facts and projector, CogVLM2's modality experts
    "THUDM--glm-4v-9b": GLM4V_9B,
    "THUDM--cogvlm2-llama3-chat-19B": COGVLM2_19B,
}  # the others are refused (REFUSALS); their hand counts above stand for the day they are read

# CogVLM2: a token runs one expert of each layer: the language copy (bias-free qkv) and the head, embedding
# (the tower touches no text token): Llama-3-8B's 8,030,261,248
COGVLM2_ACTIVE = COGVLM2_TEXT - 32 * (4096 * 6144 + 6144 + 4096 * 4096 + gated(4096, 14336))
ACTIVE: dict[str, tuple[int, float | None]] = {"THUDM--cogvlm2-llama3-chat-19B": (COGVLM2_ACTIVE, None)}
# Published totals precise enough for a 1% check: none for the counted file (MOSS: "16B", the name's)
PUBLISHED: dict[str, float] = {}

# MOSS's 2,048 positions (n_positions; the default request is longer)
SOLVE_ARGS: dict[str, list[str]] = {"fnlp--moss-moon-003-sft": ["--isl", "1536", "--osl", "512"]}

# Bytes of K/V per token of context at bf16 (attention layers x K/V heads x 2 x head_dim x 2): MOSS 24 heads of 256
KV_BYTES_PER_TOKEN: dict[str, int] = {"fnlp--moss-moon-003-sft": 34 * 24 * 256 * 4,
                                      "liuhaotian--llava-v1.5-7b": 32 * 32 * 128 * 4,  # Vicuna-7B: MHA
                                      "01-ai--Yi-VL-6B": 32 * 4 * 128 * 4,  # Yi-6B: 4 K/V heads
                                      "THUDM--glm-4v-9b": 40 * 2 * 128 * 4,  # GLM-4-9B: 2 K/V groups
                                      # one cache for both experts: an image token's K/V (its expert's) takes its slot
                                      "THUDM--cogvlm2-llama3-chat-19B": 32 * 8 * 128 * 4}



# ------------------------------------------------------------------ reading rules added this round


def test_moss_reads_as_codegens_block_under_its_own_name() -> None:
    # Before this round: refused "intermediate_size: missing" (read as a gated Llama MLP wanting a width)
    spec = _spec("fnlp--moss-moon-003-sft")
    assert spec.lm_head_bias and spec.norm_bias and {layer.norms for layer in spec.layers} == {1}
    held = ROUND.load("Salesforce--codegen-350M-mono", UNSEEN)
    assert count({**held, "model_type": "moss"}) == count(held)


def test_an_unknown_familys_unwritten_tie_reads_tied_and_says_so() -> None:
    # Before this round: an unknown family without a tie field was counted untied without a word (Aquila2-34B
    # without its tie_word_embeddings: 33,693,554,688, the untied count); PretrainedConfig's default is tied and a
    # saved config leaves the field out only when it is true
    cfg = ROUND.load("BAAI--Aquila2-34B", UNSEEN / "round17")
    del cfg["tie_word_embeddings"]
    spec = parse_model_config(cfg, "x")
    assert spec.tie_word_embeddings
    assert any(w.startswith("tie_word_embeddings: not written; the head is read as tied") for w in spec.warnings)
    assert count(cfg) == AQUILA2_34B - 100008 * 6144


def test_a_known_familys_unwritten_tie_is_its_class_default_and_says_so() -> None:
    # read as transformers reads it (CodeGenConfig's default, untied), and, as every field a config leaves to its
    # class default, named in a note (tests/test_config_default_notes.py)
    cfg = ROUND.load("Salesforce--codegen-350M-mono", UNSEEN)
    del cfg["tie_word_embeddings"]
    spec = parse_model_config(cfg, "x")
    assert not spec.tie_word_embeddings
    assert ["tie_word_embeddings absent from config.json: read at CodeGenConfig's default false (transformers "
            "5.25.0 configuration_codegen.py)"] == [w for w in spec.warnings if "tie_word_embeddings" in w]


def test_an_empty_vision_config_is_its_tower_classs_defaults() -> None:
    # transformers builds a dict without model_type as the wrapper's default tower class with that class's own
    # defaults (SubConfigSpec.create_subconfig): CLIPVisionConfig() for LLaVA. Before this round: {} was skipped
    # and the language model alone counted without a word (6,738,939,904)
    cfg = ROUND.load("llava-hf--llava-1.5-7b-hf", UNSEEN)
    text = count({k: v for k, v in cfg.items() if k != "vision_config"})
    cfg["vision_config"] = {}
    assert count(cfg) == text + clip_vit(768, 12, 3072, 32, 224) + lin(768, 4096, True) + lin(4096, 4096, True)


def test_an_unwritten_vision_config_sizes_the_language_model_alone_and_says_so() -> None:
    cfg = ROUND.load("llava-hf--llava-1.5-7b-hf", UNSEEN)
    del cfg["vision_config"]
    spec = parse_model_config(cfg, "x")
    assert not spec.encoders and any(w.startswith("vision_config: not written") for w in spec.warnings)


def test_an_empty_vision_config_of_a_tower_without_defaults_is_refused_as_such() -> None:
    cfg = ROUND.load("stepfun-ai--GOT-OCR-2.0-hf", REFUSED)
    cfg["vision_config"] = {}
    with pytest.raises(InputError, match="vision_config: GOT-OCR2's SAM ViTDet tower"):
        parse_model_config(cfg, "x")  # round 17: "vision_config.depth: missing" (with its model_type), or no tower
    cfg["model_type"] = "sam_vlm"  # a wrapper of no family line
    with pytest.raises(InputError, match="vision_config: written empty"):
        parse_model_config(cfg, "x")


# ------------------------------------------------------------------ refused this round: one line each

REFUSALS: dict[str, str] = {
    # llava-v1.5-7b and Yi-VL-6B (refused here on mm_vision_tower; before this round 6,738,415,616 and 6,061,035,520,
    # the towers dropped without a word) count since stop 36 (HAND)
    # before: 7,721,324,544 (QWEN_VL_TEXT), `visual` dropped without a word; QWEN_VL_CHAT by hand 9,656,935,168
    "Qwen--Qwen-VL-Chat": r"visual: given: an image tower and a cross-attention resampler",
    # GLM-4V-9B (here refused on vision_config; before this round 13,699,208,448, the EVA2-CLIP tower read as a plain
    # ViT) and CogVLM2 (here refused on model_type; before, 13,139,870,976, one copy of each visual expert) count
    # since stop 36 (HAND)
    # before: refused "intermediate_size: missing" (the file writes inner_hidden_size); CHATGLM_6B by hand
    # 6,173,286,400 (tied)
    "THUDM--chatglm-6b": r"position_encoding_2d: True: ChatGLM-6B's first layout",
    # before: refused "vision_config.depth: missing" (a tower class and its arguments, not its sizes)
    "deepseek-ai--Janus-Pro-7B": r"vision_config: names a tower class \('CLIPVisionTower'\) and its arguments",
    # before: 7,737,708,544 with the unknown-family note only; XCOMPOSER2_TEXT alone by hand 8,341,688,320
    "internlm--internlm-xcomposer2-7b": r"model_type: 'internlmxcomposer2': Partial LoRA",
    # before: the same line (round 15's unread sub-config rule)
    "AIDC-AI--Ovis1.6-Gemma2-9B": r"visual_tokenizer_config: given \(model_type 'siglip_visual_tokenizer'\)",
}


# ------------------------------------------------------------------ stop 36: a tower named by checkpoint (LLaVA's layout)


def _llava() -> dict:
    return ROUND.load("liuhaotian--llava-v1.5-7b")


def test_a_tower_named_by_checkpoint_is_sized_from_the_table_of_named_towers() -> None:
    spec = _spec("liuhaotian--llava-v1.5-7b")
    assert [(e.params, e.layers, e.hidden) for e in spec.encoders] == [(LLAVA15_TOWER + LLAVA15_PROJECTOR, 24, 1024)]
    assert any("openai/clip-vit-large-patch14-336" in w and "table of named towers" in w for w in spec.warnings)
    assert not any(w.startswith("vision_config: not written") for w in spec.warnings)


def test_a_local_copy_of_a_named_tower_is_matched_by_its_folder_name() -> None:
    # Yi-VL's ./vit/<folder>, and a local copy of the CLIP checkpoint
    assert count({**_llava(), "mm_vision_tower": "/data/ckpt/clip-vit-large-patch14-336"}) == LLAVA15_7B
    assert _total("01-ai--Yi-VL-6B") == YI_VL_6B


def test_a_tower_name_the_table_lacks_is_refused_naming_mm_vision_tower() -> None:
    with pytest.raises(InputError, match=r"mm_vision_tower: 'acme/vit-x': an image tower named by a checkpoint whose "
                                         r"sizes shardplan does not hold"):
        parse_model_config({**_llava(), "mm_vision_tower": "acme/vit-x"}, "x")


def test_llavas_projector_kinds_are_its_builders() -> None:
    # multimodal_projector/builder.py: linear by default; mlpNx_gelu one linear from mm_hidden_size and N - 1
    # hidden x hidden ones, biased; identity no weights; Yi-VL's fork puts a LayerNorm after each linear
    text_and_tower = LLAVA15_TEXT + LLAVA15_TOWER
    cfg = {k: v for k, v in _llava().items() if k != "mm_projector_type"}
    assert count(cfg) == text_and_tower + lin(1024, 4096, True)
    assert count({**cfg, "mm_projector_type": "mlp3x_gelu"}) == text_and_tower + lin(1024, 4096, True) \
        + 2 * lin(4096, 4096, True)
    assert count({**cfg, "mm_projector_type": "mlp2x_gelu_Norm"}) == text_and_tower + LLAVA15_PROJECTOR + 2 * ln(4096)
    with pytest.raises(InputError, match="mm_projector_type: 'identity' passes a 1024-wide feature"):
        parse_model_config({**cfg, "mm_projector_type": "identity"}, "x")
    with pytest.raises(InputError, match="mm_projector_type: 'resampler': not one of LLaVA's projector kinds"):
        parse_model_config({**cfg, "mm_projector_type": "resampler"}, "x")


def test_a_projector_input_the_named_tower_does_not_give_is_refused_naming_mm_hidden_size() -> None:
    with pytest.raises(InputError, match="mm_hidden_size: 1000 is not a multiple of the named tower's width"):
        parse_model_config({**_llava(), "mm_hidden_size": 1000}, "x")
    with pytest.raises(InputError, match=r"mm_hidden_size: 2048 is 2 x the named tower's width \(1024\) without use_s2"):
        parse_model_config({**_llava(), "mm_hidden_size": 2048}, "x")


def test_a_named_tower_beside_a_vision_config_is_refused() -> None:
    cfg = {**_llava(), "vision_config": {"model_type": "clip_vision_model", "hidden_size": 1024}}
    with pytest.raises(InputError, match="mm_vision_tower: .* and a vision_config both describe an image tower"):
        parse_model_config(cfg, "x")


# ------------------------------------------------------------------ stop 36: EVA2-CLIP towers, visual experts


def test_an_eva2_clip_tower_is_a_class_token_its_position_rows_and_a_conv_glu_projector() -> None:
    # GLM-4V: the tower facts (class token, num_positions rows, no outside norm) and the projector: a 2 x 2 conv
    # into the text width, the GLU through ffn_hidden_size, boi / eoi; before: refused on vision_config
    spec = _spec("THUDM--glm-4v-9b")
    tower = eva2_clip(1792, 63, 15360, 14, 6401) + (4 * 1792 * 4096 + 4096) + glu_projector(4096, 4096, 13696)
    assert [(e.params, e.layers, e.hidden) for e in spec.encoders] == [(tower, 63, 1792)]


def test_an_eva2_clip_projector_may_conv_into_the_towers_width() -> None:
    # CogVLM2's conv keeps 1792 and its linear_proj maps 1792 into the text width, the GLU through intermediate_size
    spec = _spec("THUDM--cogvlm2-llama3-chat-19B")
    tower = eva2_clip(1792, 63, 15360, 14, 9217) + (4 * 1792 * 1792 + 1792) + glu_projector(1792, 4096, 14336)
    assert [e.params for e in spec.encoders] == [tower]


def test_modality_experts_are_counted_per_copy_and_a_token_runs_one() -> None:
    # CogVLM2: every layer stores its attention and MLP twice (the vision copy's qkv biased); the blocks a token
    # runs, and so every cost and the cache, are Llama-3-8B's layer; the copies are no active parameters
    spec = _spec("THUDM--cogvlm2-llama3-chat-19B")
    layer = spec.layers[0]
    assert sum(s.params for s in layer.own_shares()) == COGVLM2_LAYER
    assert [b.params for b in layer.blocks] == [gqa(4096, 32, 8, 128), gated(4096, 14336)]
    assert [b.params for b in layer.modality_copies] == [gqa(4096, 32, 8, 128) + 6144, gated(4096, 14336)]
    assert count_params(spec).active == COGVLM2_ACTIVE
    assert layer.label().endswith("(x2 by modality)")
    assert any(w.startswith("modality experts: every layer stores 2 copies") for w in spec.warnings)


def test_cogvlm2s_multi_query_heads_are_its_kv_heads() -> None:
    # num_multi_query_heads 8 (VisionExpertAttention's K/V heads); before: read as MHA, the field named in a note
    assert {b.kv_heads for layer in _spec("THUDM--cogvlm2-llama3-chat-19B").layers for b in layer.blocks
            if hasattr(b, "kv_heads")} == {8}
