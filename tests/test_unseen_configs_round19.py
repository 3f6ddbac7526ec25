"""Nineteenth round of families outside the catalog (tests/data/configs_unseen/round19/, SOURCES.md's "Nineteenth
round (stop 35)"): families no earlier round nor the catalog holds (model_type checked: telechat, NVLM_D, ultravox,
bunny-llama, llava_llama, speecht5, seamless_m4t_v2, xgenmm; Galactica and Cerebras-GPT under held model_types
whose switches no held file tries), chosen where a reader by convention is likeliest wrong: biases the modeling code
puts on some linears only with no config field (TeleChat2's dense and down_proj), a projector sized by the text
model's intermediate width (NVLM-D's mlp1), towers and language models under fields named *_cfg (VILA), an audio
tower whose wrapper writes its own hidden_size (Ultravox), LLaVA's original layout under another name (Bunny),
encoder-decoder speech models (SpeechT5, SeamlessM4T-v2). Each hand count is worked out tensor by tensor from the
modeling code as recalled (transformers 5.x modeling_opt.py, modeling_gpt2.py, modeling_whisper.py,
modeling_siglip.py read from the wheel, not installed; the remote modeling_telechat2.py, modeling_nvlm_d.py with
InternVL's modeling_intern_vit.py, ultravox_model.py, VILA's llava_arch / multimodal_projector as recalled), written
before the reader was run on them."""
from __future__ import annotations

import pytest

from hand_counts import REFUSED, UNSEEN, Round, count, gated, gqa, lin, ln
from solver.errors import InputError
from solver.estimate.params import count_params
from solver.specs.config.read import parse_model_config
from test_unseen_configs_round20 import siglip_tower

DATA = UNSEEN / "round19"
ROUND = Round(DATA)
_load, _spec, _total = ROUND.load, ROUND.spec, ROUND.total


def llama_layer(h: int, heads: int, kv: int, d: int, inter: int, qkv_bias: bool = False) -> int:
    """q / k / v / o (q / k / v biased where asked), the gated MLP, two RMSNorm weight vectors."""
    return gqa(h, heads, kv, d, qkv_bias) + gated(h, inter) + 2 * h


# ------------------------------------------------------------------ Galactica-1.3B (OPTForCausalLM, modeling_opt.py)
# embed_tokens and the learned positions (max_position_embeddings + OPT's offset of 2 rows); per layer q / k / v /
# out_proj biased (enable_bias: OPTConfig's default true, the file predates the field), self_attn_layer_norm and
# final_layer_norm (LayerNorms with weight and bias: layer_norm_elementwise_affine's default true), fc1 / fc2 biased;
# the decoder's final_layer_norm (do_layer_norm_before true); lm_head tied to embed_tokens; word_embed_proj_dim equals
# hidden_size, so no project_in / project_out
def opt_layer(h: int, ffn: int) -> int:
    return 4 * lin(h, h, True) + 2 * ln(h) + lin(h, ffn, True) + lin(ffn, h, True)


GALACTICA_1_3B = 50000 * 2048 + (2048 + 2) * 2048 + 24 * opt_layer(2048, 8192) + ln(2048)

# OPT-350m (added at stop 36; written from memory of the hub's config.json): embed_tokens 50272 x word_embed_proj_dim
# 512, project_in 512 -> 1024 and project_out 1024 -> 512 (bias-free), positions (2048 + 2) x 1024 at the stack's
# width; 24 OPT layers; do_layer_norm_before false: each layer norms after its residual add and OPTDecoder builds no
# final_layer_norm; lm_head 512 -> 50272 tied to embed_tokens (331,196,416: the hub's 331M)
OPT_350M = 50272 * 512 + 2 * 512 * 1024 + (2048 + 2) * 1024 + 24 * opt_layer(1024, 4096)


# ------------------------------------------------------------------ Cerebras-GPT-111M (GPT2Model's layout)
# wte, wpe (n_positions rows); per layer ln_1, c_attn 3h biased, c_proj biased, ln_2, c_fc n_inner biased, c_proj
# biased; ln_f; the head tied to wte
def gpt2_layer(h: int, inner: int) -> int:
    return 2 * ln(h) + lin(h, 3 * h, True) + lin(h, h, True) + lin(h, inner, True) + lin(inner, h, True)


CEREBRAS_GPT_111M = 50257 * 768 + 2048 * 768 + 10 * gpt2_layer(768, 3072) + ln(768)


# ------------------------------------------------------------------ TeleChat2-7B (remote modeling_telechat2.py)
# word_embeddings; per layer input_layernorm and post_attention_layernorm (RMSNorm weights), query h -> h and
# key_value h -> 2 x kv heads x head_dim without biases (no num_key_value_heads: every head its own K/V), dense
# h -> h WITH a bias (nn.Linear's default); the MLP gate_proj / up_proj h -> ffn_hidden_size without biases and
# down_proj ffn_hidden_size -> h WITH a bias (vLLM's telechat2.py loads it as Llama with bias_o_proj and mlp_bias
# and strips the bias of qkv and gate_up); ln_f; lm_head untied, bias-free
def telechat_layer(h: int, heads: int, kv: int, d: int, ffn: int) -> int:
    return (2 * h + h * heads * d + h * 2 * kv * d + lin(heads * d, h, True) + 2 * h * ffn + lin(ffn, h, True))


TELECHAT2_7B = 2 * 131072 * 4096 + 30 * telechat_layer(4096, 32, 32, 128, 12288) + 4096


# ------------------------------------------------------------------ NVLM-D-72B (remote modeling_nvlm_d.py)
# Language model: Qwen2-72B-Instruct (q / k / v biased, 64 / 8 heads x 128, untied, vocab 152064). Vision:
# InternViT-6B-448px-V1-5 (modeling_intern_vit.py): class_embedding, patch Conv2d 14 x 14 biased, position_embedding
# (448 / 14)^2 + 1 rows; 45 layers of norm1 / norm2 (RMSNorm weights: norm_type rms_norm), qkv 3h bias-free
# (qkv_bias false), q_norm / k_norm over h (qk_normalization), proj biased, fc1 / fc2 biased, ls1 / ls2; no norm
# after the encoder. mlp1: LayerNorm over h x (1 / downsample_ratio)^2 = 12800, then Linear(12800, the LLM's
# intermediate_size, bias=False), GELU, Linear(intermediate_size, the LLM's hidden_size, bias=False) (NVLM-D's
# projector, unlike InternVL-Chat's through the LLM width with biases)
def intern_vit(h: int, layers: int, inter: int, patch: int, image: int) -> int:
    rows = (image // patch) ** 2 + 1
    layer = 2 * h + 3 * h * h + 2 * h + lin(h, h, True) + lin(h, inter, True) + lin(inter, h, True) + 2 * h
    return h + 3 * patch * patch * h + h + rows * h + layers * layer


NVLM_D_TEXT = 2 * 152064 * 8192 + 80 * llama_layer(8192, 64, 8, 128, 29568, qkv_bias=True) + 8192
NVLM_D_72B = (NVLM_D_TEXT + intern_vit(3200, 45, 12800, 14, 448)
              + ln(4 * 3200) + 4 * 3200 * 29568 + 29568 * 8192)


# ------------------------------------------------------------------ refused files: what a count would hold
# Ultravox v0.5 (ultravox_model.py): the Whisper-large-v3-turbo ENCODER only (ModifiedWhisperEncoder: conv1
# num_mel_bins -> d and conv2 d -> d, kernel 3, biased; embed_positions max_source_positions x d; 32 layers of
# biased q / v / out_proj and bias-free k_proj, two LayerNorms, fc1 / fc2 biased; layer_norm), the projector
# (UltravoxProjector: frames stacked by stack_factor, ln_pre RMSNorm over d x stack_factor, linear_1 into the
# wrapper's hidden_size bias-free, SwiGLU halving it, ln_mid RMSNorm over the half (projector_ln_mid), linear_2 into
# the text width bias-free), and Llama-3.2-1B (tied, 32 / 8 heads x 64)
def whisper_encoder(d: int, layers: int, ffn: int, mels: int, positions: int) -> int:
    layer = lin(d, d, True) + d * d + 2 * lin(d, d, True) + 2 * ln(d) + lin(d, ffn, True) + lin(ffn, d, True)
    return mels * 3 * d + d + d * 3 * d + d + positions * d + layers * layer + ln(d)


def ultravox_projector(d: int, stack: int, mid: int, text: int) -> int:
    return d * stack + d * stack * mid + mid // 2 + (mid // 2) * text


LLAMA_3_2_1B = 128256 * 2048 + 16 * llama_layer(2048, 32, 8, 64, 8192) + 2048
ULTRAVOX_1B = LLAMA_3_2_1B + whisper_encoder(1280, 32, 5120, 128, 1500) + ultravox_projector(1280, 8, 4096, 2048)

# VILA1.5-3B: the language model under llm_cfg (Sheared-LLaMA-2.7B's shape, untied); the SigLIP so400m tower under
# vision_tower_cfg and the mlp_downsample projector under mm_projector_cfg are not counted by hand here
VILA_TEXT = 2 * 32000 * 2560 + 32 * llama_layer(2560, 20, 20, 128, 6912) + 2560

# Bunny-v1.1-Llama-3-8B-V: Llama-3-8B (untied) beside a SigLIP so400m tower named by checkpoint (mm_vision_tower) and
# an mlp2x_gelu projector from mm_hidden_size (3456: S2's three scales of 1152)
BUNNY_TEXT = 2 * 128256 * 4096 + 32 * llama_layer(4096, 32, 8, 128, 14336) + 4096
BUNNY_PROJECTOR = lin(3456, 4096, True) + lin(4096, 4096, True)
# the tower (stop 36): SiglipVisionModel of google/siglip-so400m-patch14-384 as LLaVA-style builders load it whole,
# the pooling head included (SiglipVisionConfig's vision_use_head true); S2 runs it at three scales, one set of weights
BUNNY_TOWER = siglip_tower(1152, 27, 4304, 14, 384, head=True)
BUNNY_8B = BUNNY_TEXT + BUNNY_TOWER + BUNNY_PROJECTOR


HAND: dict[str, int] = {
    "facebook--galactica-1.3b": GALACTICA_1_3B,
    "cerebras--Cerebras-GPT-111M": CEREBRAS_GPT_111M,
    "Tele-AI--TeleChat2-7B": TELECHAT2_7B,
    "nvidia--NVLM-D-72B": NVLM_D_72B,
    "fixie-ai--ultravox-v0_5-llama-3_2-1b": ULTRAVOX_1B,
    "BAAI--Bunny-v1_1-Llama-3-8B-V": BUNNY_8B,  # from refused/ (stop 36: the named-tower table)
    "facebook--opt-350m": OPT_350M,  # added at stop 36 (project_in / project_out, the post-norm stack)
}
# Published totals precise enough for a 1% check: Cerebras-GPT's table (111M)
PUBLISHED: dict[str, float] = {"cerebras--Cerebras-GPT-111M": 111e6, "facebook--opt-350m": 331e6}

# 2,048 learned positions (the default request is longer)
SOLVE_ARGS: dict[str, list[str]] = {name: ["--isl", "1536", "--osl", "512"]
                                    for name in ("facebook--galactica-1.3b", "cerebras--Cerebras-GPT-111M",
                                                 "facebook--opt-350m")}

# Bytes of K/V per token of context at bf16 (attention layers x K/V heads x 2 x head_dim x 2)
KV_BYTES_PER_TOKEN: dict[str, int] = {
    "facebook--galactica-1.3b": 24 * 32 * 64 * 4,
    "cerebras--Cerebras-GPT-111M": 10 * 12 * 64 * 4,
    "Tele-AI--TeleChat2-7B": 30 * 32 * 128 * 4,
    "nvidia--NVLM-D-72B": 80 * 8 * 128 * 4,
    "fixie-ai--ultravox-v0_5-llama-3_2-1b": 16 * 8 * 64 * 4,
    "BAAI--Bunny-v1_1-Llama-3-8B-V": 32 * 8 * 128 * 4,
    "facebook--opt-350m": 24 * 16 * 64 * 4,
}



# ------------------------------------------------------------------ reading rules added this round


def test_telechats_dense_and_down_proj_alone_carry_biases() -> None:
    # Before this round: 7,617,105,920 (no biases; only the unknown-family note), 245,760 short
    spec = _spec("Tele-AI--TeleChat2-7B")
    assert _total("Tele-AI--TeleChat2-7B") == TELECHAT2_7B
    assert not any("not in the family defaults" in w for w in spec.warnings)


def test_a_down_projection_bias_alone_adds_the_hidden_width_per_dense_mlp() -> None:
    cfg = _load("Tele-AI--TeleChat2-7B")
    assert count({**cfg, "model_type": "telechat"}) - count({**cfg, "model_type": "llama", "n_head": 32}) \
        == 30 * (4096 + 4096)  # dense's and down_proj's biases, layer by layer


def test_telechats_embedding_norm_switch_is_refused_naming_it() -> None:
    with pytest.raises(InputError, match="embed_layernorm: True: a norm on the word embeddings"):
        parse_model_config({**_load("Tele-AI--TeleChat2-7B"), "embed_layernorm": True}, "x")


def test_nvlm_ds_projector_runs_through_the_language_models_intermediate_width_without_biases() -> None:
    # Before this round: 78,268,917,248, mlp1 read as one linear 3200 -> 8192 and a norm (with a note that it may
    # differ); by hand LayerNorm(12800), 12800 -> 29568 -> 8192 bias-free
    assert _total("nvidia--NVLM-D-72B") - NVLM_D_TEXT - intern_vit(3200, 45, 12800, 14, 448) \
        == 2 * 12800 + 12800 * 29568 + 29568 * 8192


def test_opts_layer_norm_elementwise_affine_false_drops_every_norms_weights() -> None:
    # Before this round: the switch was not read and the count stayed 1,315,201,024 (200,704 too many)
    cfg = _load("facebook--galactica-1.3b")
    assert count({**cfg, "layer_norm_elementwise_affine": False}) == GALACTICA_1_3B - 24 * 2 * ln(2048) - ln(2048)


def test_opts_enable_bias_false_drops_every_linears_bias() -> None:
    cfg = _load("facebook--galactica-1.3b")
    assert count({**cfg, "enable_bias": False}) == GALACTICA_1_3B - 24 * (4 * 2048 + 8192 + 2048)


def test_ultravox_counts_the_whisper_encoder_alone_and_its_stacked_swiglu_projector() -> None:
    # Before this round: refused "audio_config: an audio encoder of model_type 'whisper' has no counting convention"
    spec = _spec("fixie-ai--ultravox-v0_5-llama-3_2-1b")
    assert [e.params for e in spec.encoders] == [whisper_encoder(1280, 32, 5120, 128, 1500)
                                                 + ultravox_projector(1280, 8, 4096, 2048)]
    assert any(w.startswith("hidden_size: the wrapper's own field (4096)") for w in spec.warnings)


def test_ultravoxs_projector_norms_the_text_width_after_linear_2_without_ln_mid() -> None:
    cfg = _load("fixie-ai--ultravox-v0_5-llama-3_2-1b")
    assert count({**cfg, "projector_ln_mid": False}) == ULTRAVOX_1B - 4096 // 2 + 2048


def test_ultravoxs_unwritten_projector_fields_are_its_config_classs_defaults() -> None:
    cfg = {k: v for k, v in _load("fixie-ai--ultravox-v0_5-llama-3_2-1b").items()
           if k not in ("stack_factor", "hidden_size", "projector_act", "projector_ln_mid")}
    assert count(cfg) == ULTRAVOX_1B - 4096 // 2 + 2048  # UltravoxConfig: 8, 4096, swiglu, projector_ln_mid false


def test_a_language_model_under_llm_cfg_is_read_and_its_cfg_siblings_are_refused() -> None:
    # Before this round: refused "vocab_size: missing" (llm_cfg not read, the wrapper's top level read instead)
    cfg = _load("Efficient-Large-Model--VILA1.5-3b", REFUSED)
    assert count({k: v for k, v in cfg.items() if k not in ("vision_tower_cfg", "mm_projector_cfg")}) == VILA_TEXT
    with pytest.raises(InputError, match="vision_tower_cfg: given \\(model_type 'siglip_vision_model'\\)"):
        parse_model_config({k: v for k, v in cfg.items() if k != "mm_projector_cfg"}, "x")


def test_an_unknown_wrappers_unread_sub_config_is_named_before_a_missing_size() -> None:
    # Before this round: "text_config.hidden_size: missing" for xGen-MM, whose text_config is its diff against
    # Phi3Config's defaults and whose vision modules no reader looks up
    cfg = _load("Salesforce--xgen-mm-phi3-mini-instruct-r-v1", REFUSED)
    with pytest.raises(InputError, match="text_config.hidden_size: missing"):
        parse_model_config({k: v for k, v in cfg.items() if not k.startswith("vision_")}, "x")


# ------------------------------------------------------------------ refused this round: one line each

REFUSALS: dict[str, str] = {
    # Bunny-v1.1 (refused by round 18's rule on mm_vision_tower) counts since stop 36 (HAND)
    # before: "vocab_size: missing"; VILA_TEXT by hand 2,701,560,320 without the tower and projector
    "Efficient-Large-Model--VILA1.5-3b": r"mm_projector_cfg: given \(model_type 'v2l_projector'\): a module beside "
                                         r"the language model \(llm_cfg\)",
    # before: "text_config.hidden_size: missing"
    "Salesforce--xgen-mm-phi3-mini-instruct-r-v1": r"vision_encoder_config: given \(model_type "
                                                   r"'xgenmm_vision_encoder'\): a module beside the language model",
    # already refused before this round (is_encoder_decoder)
    "microsoft--speecht5_tts": r"is_encoder_decoder: true: an encoder-decoder model \('speecht5'",
    "facebook--seamless-m4t-v2-large": r"is_encoder_decoder: true: an encoder-decoder model \('seamless_m4t_v2'",
}


# ------------------------------------------------------------------ stop 36: Bunny's named tower


def test_an_s2_projector_input_is_the_named_towers_width_times_its_scales() -> None:
    # mm_hidden_size 3456 = 3 x 1152 under use_s2: one tower's weights, three scales' features into the projector
    cfg = _load("BAAI--Bunny-v1_1-Llama-3-8B-V")
    spec = parse_model_config(cfg, "x")
    assert [e.params for e in spec.encoders] == [BUNNY_TOWER + BUNNY_PROJECTOR]
    assert any(w.startswith("mm_hidden_size: 3456 = 3 x 1152") for w in spec.warnings)
    assert count({**cfg, "use_s2": False, "mm_hidden_size": 1152}) == BUNNY_8B - lin(3456, 4096) + lin(1152, 4096)
    with pytest.raises(InputError, match="mm_hidden_size: 3456 is 3 x the named tower's width"):
        parse_model_config({**cfg, "use_s2": False}, "x")


def test_training_switches_of_an_unknown_family_are_not_named_as_unread_sizes() -> None:
    # unfreeze_vision_tower, tune_mm_mlp_adapter, mm_projector_lr size nothing (bunny-llama has no family line)
    spec = parse_model_config(_load("BAAI--Bunny-v1_1-Llama-3-8B-V"), "x")
    assert not any(w.startswith("fields not read") for w in spec.warnings)


# ------------------------------------------------------------------ stop 36: OPT-350m's narrower embedding


def test_a_narrower_embedding_sizes_the_table_and_head_at_its_width_with_two_projections() -> None:
    # Before stop 36: refused "word_embed_proj_dim: 512 differs from hidden_size"
    spec = _spec("facebook--opt-350m")
    assert (spec.embedding_width, spec.embed_width, spec.hidden_size) == (512, 512, 1024)
    parts = {p.name: p.params for module in count_params(spec).modules for p in module.parts}
    assert (parts["embed_tokens"], parts["project_in"], parts["project_out"]) == (50272 * 512, 512 * 1024, 1024 * 512)
    untied = {**_load("facebook--opt-350m"), "tie_word_embeddings": False}
    assert count(untied) == OPT_350M + 50272 * 512  # the head at the embedding's width


def test_a_post_norm_stack_builds_no_final_norm() -> None:
    # OPTDecoder: final_layer_norm only under do_layer_norm_before and not _remove_final_layer_norm
    cfg = _load("facebook--galactica-1.3b")
    assert count({**cfg, "do_layer_norm_before": False}) == GALACTICA_1_3B - ln(2048)
    assert count({**cfg, "_remove_final_layer_norm": True}) == GALACTICA_1_3B - ln(2048)
    assert not _spec("facebook--opt-350m").final_norm


def test_the_head_and_the_projections_are_costed_at_the_embeddings_width() -> None:
    # a 1,000-token prefill on one rank: lm_head over the logits' tokens at 512 wide, project_in / project_out as
    # 2 x 1000 x 512 x 1024 FLOPs each
    from solver.estimate.compute import Kit, Work, factors_for, kit_head_ops
    from solver.specs.hardware_catalog import load_hardware
    from solver.specs.parallel import make_parallel_config
    from solver.specs.precision import resolve_precision

    spec = _spec("facebook--opt-350m")
    hw = load_hardware("h100_sxm")
    kit = Kit(hw, make_parallel_config(1), resolve_precision(spec, hw), factors_for(hw),
              Work("prefill", new_tokens=1000, context=1000, sequences=1, logits_tokens=1))
    ops = {o.name: o.flops for o in kit_head_ops(spec, kit)}
    assert ops == {"embedding": 0.0, "project_in": 2 * 1000 * 512 * 1024, "project_out": 2 * 1000 * 1024 * 512,
                   "lm_head": 2 * 1 * 50272 * 512}
