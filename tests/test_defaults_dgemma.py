"""Rules the reader learnt from transformers 5.25.0's DiffusionGemma (modeling_diffusion_gemma.py; stop 38, dgemma;
benchmarks/README.md). The class default (tests/data/configs_defaults/diffusion_gemma.json: hidden 2304, 30 layers,
intermediate_size 9216, 8 experts of 9216, top 2, 8 heads / 4 KV heads, head_dim 256 on the 25 sliding layers and
512 on the 5 full ones, vocabulary 262,144) counts 18,509,070,576 in transformers (model.encoder 18,445,367,280,
model.decoder 63,703,296: the decoder's layers, norm and embedding are tied to the encoder's)."""
from __future__ import annotations

import json
from pathlib import Path

from solver.estimate.compute import Work, factors_for, head_ops
from solver.estimate.params import count_params
from solver.specs.config.read import parse_model_config
from solver.specs.hardware_catalog import load_hardware
from solver.specs.layers.dense import DenseFFN
from solver.specs.layers.moe import MoE
from solver.specs.model import ModelSpec
from solver.specs.parallel import make_parallel_config
from solver.specs.precision import resolve_precision

CONFIG = Path(__file__).parent / "data" / "configs_defaults" / "diffusion_gemma.json"
H, INTER, LAYERS, EXPERTS = 2304, 9216, 30, 8


def _spec() -> ModelSpec:
    return parse_model_config(json.loads(CONFIG.read_text()), "x")


def test_diffusion_gemma_counts_to_transformers_class_default() -> None:
    # encoder 18,445,367,280 + the decoder's self-conditioning MLP 63,703,296 = 18,509,070,576
    assert count_params(_spec()).total == 18_445_367_280 + 63_703_296 == 18_509_070_576


def test_every_layer_keeps_the_dense_mlp_beside_the_experts() -> None:
    # DiffusionGemmaEncoderTextLayer builds mlp (gate / up / down of intermediate_size) and experts:
    # 30 x 3 x 2304 x 9216 = 1,911,029,760 dense weights
    spec = _spec()
    assert all([type(b) for b in layer.blocks[1:]] == [DenseFFN, MoE] for layer in spec.layers)
    assert count_params(spec).by_name()["dense_ffn"] == LAYERS * 3 * H * INTER == 1_911_029_760


def test_the_router_scales_each_channel_and_each_expert() -> None:
    # DiffusionGemmaTextRouter: proj 2304 x 8 + scale 2304 + per_expert_scale 8 = 20,744 (its norm has no weight)
    moe = _spec().layers[0].blocks[-1]
    assert isinstance(moe, MoE) and moe.router_params == H * EXPERTS + H + EXPERTS == 20_744


def test_full_layers_share_k_as_v() -> None:
    # a full layer (head_dim 512) builds no v_proj: q 2304 x 8 x 512 + k 2304 x 4 x 512 + o 8 x 512 x 2304
    # + q_norm / k_norm 2 x 512 = 9,437,184 + 4,718,592 + 9,437,184 + 1,024 = 23,593,984
    full = _spec().layers[5].mixer
    assert full.k_eq_v and full.params == 23_593_984
    # a sliding layer (head_dim 256) keeps v_proj: 2304 x (8 + 4 + 4) x 256 + 8 x 256 x 2304 + 2 x 256 = 14,156,288
    assert _spec().layers[0].mixer.params == H * 16 * 256 + 8 * 256 * H + 2 * 256 == 14_156_288


def test_seven_norms_a_layer() -> None:
    # input, post_attention, pre_feedforward, post_feedforward, post_feedforward_1 / _2, pre_feedforward_2:
    # 30 x 7 x 2304 + the final norm 2304 = 486,144
    assert count_params(_spec()).by_name()["norms"] == LAYERS * 7 * H + H == 486_144


def test_self_conditioning_mlp_sits_outside_the_stack_with_the_embedding() -> None:
    # DiffusionGemmaSelfConditioning: gate / up / down 3 x 2304 x 9216 + pre_norm 2304 (post_norm has no weight)
    # = 63,703,296; held with the token embedding 262,144 x 2304 = 603,979,776: 667,683,072
    spec = _spec()
    sc = spec.self_conditioning
    assert sc is not None and sc.params == 3 * H * INTER + H == 63_703_296
    assert count_params(spec).by_name()["embedding"] == 262_144 * H + 63_703_296 == 667_683_072


def test_self_conditioning_costs_two_flops_a_weight_a_token() -> None:
    # 2 x 3 x 2304 x 9216 = 127,401,984 FLOPs a token, over the step's tokens (one rank, 4,096 prefill tokens)
    spec = _spec()
    hw = load_hardware("h200_sxm")
    w = Work("prefill", new_tokens=4096, context=2048.5, sequences=1, logits_tokens=1)
    ops = head_ops(spec, hw, make_parallel_config(1), resolve_precision(spec, hw), factors_for(hw), w)
    op = next(o for o in ops if o.name == "self_conditioning")
    assert op.flops == 4096 * 2 * 3 * H * INTER == 4096 * 127_401_984


def test_vision_embedder_is_a_bare_linear() -> None:
    # DiffusionGemmaMultimodalEmbedder: embedding_projection 768 x 2304, its pre-projection norm has no weight;
    # the vision tower counts 169,134,080 with it
    assert count_params(_spec()).by_name()["vision"] == 169_134_080


def test_block_diffusion_is_said_in_one_note() -> None:
    notes = [w for w in _spec().warnings if "block-diffusion" in w]
    assert len(notes) == 1 and notes[0].startswith("canvas_length:") and "autoregressive" in notes[0]



# Gemma4TextConfig(enable_moe_block=True, num_experts=16, top_k_experts=4, moe_intermediate_size=704,
# num_hidden_layers=12, hidden_size=1024, intermediate_size=2048, 8 heads / 2 KV heads x 128, global_head_dim 256,
# vocab 32000, no per-layer inputs) as save_pretrained writes it; transformers 5.25.0 builds it on the meta device
# with 560,501,440 parameters
GEMMA4_MOE = json.loads('{"attention_bias": false, "attention_dropout": 0.0, "attention_k_eq_v": false, "bos_token_id": 2, "enable_moe_block": true, "eos_token_id": 1, "final_logit_softcapping": null, "head_dim": 128, "hidden_activation": "gelu_pytorch_tanh", "hidden_size": 1024, "hidden_size_per_layer_input": 0, "initializer_range": 0.02, "intermediate_size": 2048, "layer_types": ["sliding_attention", "sliding_attention", "sliding_attention", "sliding_attention", "sliding_attention", "full_attention", "sliding_attention", "sliding_attention", "sliding_attention", "sliding_attention", "sliding_attention", "full_attention"], "max_position_embeddings": 131072, "model_type": "gemma4_text", "moe_intermediate_size": 704, "num_attention_heads": 8, "num_experts": 16, "num_hidden_layers": 12, "num_key_value_heads": 2, "num_kv_shared_layers": 0, "pad_token_id": 0, "per_layer_config": {"05": {"head_dim": 256}, "11": {"head_dim": 256}}, "rms_norm_eps": 1e-06, "rope_parameters": {"full_attention": {"partial_rotary_factor": 0.25, "rope_theta": 1000000.0, "rope_type": "proportional"}, "sliding_attention": {"rope_theta": 10000.0, "rope_type": "default"}}, "sliding_window": 512, "tie_word_embeddings": true, "top_k_experts": 4, "transformers_version": "5.25.0", "use_bidirectional_attention": null, "use_cache": true, "use_double_wide_mlp": false, "vocab_size": 32000, "vocab_size_per_layer_input": 262144, "architectures": ["Gemma4ForCausalLM"]}')


def test_gemma4s_moe_block_keeps_the_dense_mlp_router_scales_and_three_more_norms() -> None:
    # per layer beside the dense layer: experts 3 x 16 x 1,024 x 704 = 34,603,008, router proj 1,024 x 16 = 16,384,
    # scale 1,024 + per_expert_scale 16, norms 3 x 1,024 = 3,072: 34,623,504 x 12 = 415,482,048 on top of the dense
    # model (enable_moe_block false builds no experts) = 560,501,440, transformers' figure
    from solver.estimate.params import count_params
    from solver.specs.config.read import parse_model_config

    moe = count_params(parse_model_config(dict(GEMMA4_MOE), "g4-moe")).total
    dense_raw = {k: v for k, v in GEMMA4_MOE.items() if k not in ("num_experts", "top_k_experts",
                                                                 "moe_intermediate_size")}
    dense = count_params(parse_model_config(dict(dense_raw, enable_moe_block=False), "g4")).total
    assert moe == 560_501_440
    assert moe - dense == 12 * (3 * 16 * 1024 * 704 + 1024 * 16 + 1024 + 16 + 3 * 1024)


def test_gemma4s_switch_off_builds_no_experts_and_says_the_expert_fields_go_unbuilt() -> None:
    # enable_moe_block false: Gemma4TextDecoderLayer builds no router or experts whatever num_experts says, so the
    # same file counts its dense part, 560,501,440 - 12 x 34,623,504 = 145,019,392, and a warning names the fields
    from solver.estimate.params import count_params
    from solver.specs.config.read import parse_model_config

    spec = parse_model_config(dict(GEMMA4_MOE, enable_moe_block=False), "g4-off")
    assert count_params(spec).total == 560_501_440 - 12 * 34_623_504 == 145_019_392
    assert any("enable_moe_block false: num_experts, top_k_experts written but no experts built" in w
               for w in spec.warnings)
