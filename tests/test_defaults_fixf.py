"""Rules the reader learnt from transformers 5.25.0's class-default configs of Muse-Spark and GLM-5.3-Flash (stop 38,
fixf; benchmarks/README.md). Each total is transformers' meta-device count of the class default
(tests/data/configs_defaults/oracle.tsv: parameters + persistent buffers); the part the reader had missing is computed
by hand."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from solver.estimate.compute import Kit, Work, factors_for
from solver.estimate.params import count_params
from solver.specs.config.read import parse_model_config
from solver.specs.hardware_catalog import load_hardware
from solver.specs.layers.dsa import Indexer
from solver.specs.layers.moe import MoE
from solver.specs.parallel import make_parallel_config
from solver.specs.precision import resolve_precision

DATA = Path(__file__).parent / "data" / "configs_defaults"


def _raw(name: str) -> dict:
    return json.loads((DATA / f"{name}.json").read_text())


def _moe(spec) -> MoE:
    (moe,) = {b for layer in spec.layers for b in layer.blocks if isinstance(b, MoE)}
    return moe


# ------------------------------------------------------------------------------------------------ Muse-Spark
def test_muse_spark_counts_to_transformers_class_default() -> None:
    # 822,036,513,792 parameters + 62 x 256 e_score_correction_bias = 822,036,529,664
    assert count_params(parse_model_config(_raw("muse_spark"), "x")).total == 822_036_513_792 + 62 * 256


def test_muse_spark_routed_experts_run_at_moe_hidden_size() -> None:
    # MuseSparkExperts: gate_up 256 x 2 x 4096 x 4096 and down 256 x 4096 x 4096 (not 8192 wide): 12,884,901,888;
    # the router scores the full width, 256 x 8192 + the 256 bias = 2,097,408
    moe = _moe(parse_model_config(_raw("muse_spark"), "x"))
    assert (moe.hidden, moe.expert_width, moe.inter) == (8192, 4096, 4096)
    assert moe.expert_params * moe.experts == 256 * 3 * 4096 * 4096 == 12_884_901_888
    assert moe.router_params == 256 * 8192 + 256


def test_latent_norms_are_one_vector_each_of_the_latent_width() -> None:
    # pre_expert_proj + post_expert_proj 2 x 8192 x 4096 = 67,108,864; pre_expert_norm and the experts' one
    # post_expert_norm 2 x 4096 = 8,192 (one shared by every expert, not 256 of them)
    moe = MoE(hidden=8192, experts=256, topk=8, inter=4096, latent=4096, latent_norms=2)
    parts = {p.name: p.params for s in moe.shares() for p in s.parts}
    assert (parts["latent_proj"], parts["latent_norms"]) == (67_108_864, 8_192)


def test_muse_spark_layer_holds_three_norms_and_two_residual_gates() -> None:
    # input / pre_feedforward / post_feedforward RMSNorms (post_attention_layernorm has no weight) and two
    # MuseSparkResidualGate vectors: 5 x 8192 = 40,960 a layer
    layer = parse_model_config(_raw("muse_spark"), "x").layers[0]
    assert (layer.norms, layer.residual_gates) == (3, 2)


def test_conv_pyramid_audio_tower_hand_count() -> None:
    # stage (in, patch, d): patch linear in x patch x d + d, RMSNorm d; 2 blocks of depthwise conv 7d + d, RMSNorm d,
    # fc1 / fc2 d <-> 4d biased (8d^2 + 5d): 8d^2 + 14d each.
    # (1, 16, 256): 4,096 + 512 + 1,055,744; (256, 6, 512): 786,432 + 1,024 + 4,208,640;
    # (512, 5, 1024): 2,621,440 + 2,048 + 16,805,888; (1024, 4, 2048): 8,388,608 + 4,096 + 67,166,208;
    # norm 2,048, proj 2048 x 8192 + 8192 = 16,785,408, post_proj_norm 8,192: 117,840,384
    audio = next(e for e in parse_model_config(_raw("muse_spark"), "x").encoders if e.name == "audio")
    assert (audio.params, audio.layers, audio.hidden) == (117_840_384, 8, 2048)


# ------------------------------------------------------------------------------------------------ GLM-5.3-Flash
def test_glm5_next_counts_to_transformers_class_default() -> None:
    # 313,786,889,214 parameters + 42 x 288 e_score_correction_bias = 313,786,901,310
    assert count_params(parse_model_config(_raw("glm5_next"), "x")).total == 313_786_889_214 + 42 * 288


def _indexer() -> Indexer:
    spec = parse_model_config(_raw("glm5_next"), "x")
    return next(layer.mixer.indexer for layer in spec.layers if getattr(layer.mixer, "indexer", None))


def _one_rank(w: Work) -> Kit:
    """One H200 rank running GLM-5.3-Flash at its config's precision through `w`."""
    hw = load_hardware("h200_sxm")
    spec = parse_model_config(_raw("glm5_next"), "x")
    return Kit(hw, make_parallel_config(1), resolve_precision(spec, hw), factors_for(hw), w)


def test_pooled_key_indexer_holds_its_compress_gate_and_position_table() -> None:
    # wq_b 1536 x 32 x 128 + wk 4096 x 128 + k_norm 2 x 128 + weights_proj 4096 x 32 = 6,947,072, and
    # index_kpool_compress_gate 128 x 4096 = 524,288 + index_kpool_compress_ape 16 x 128 = 2,048: 7,473,408
    parts = {p.name: p.params for p in _indexer().parts(4096, 1536)}
    assert (parts["kpool_compress_gate"], parts["kpool_compress_ape"]) == (524_288, 2_048)
    assert sum(parts.values()) == 7_473_408


def test_pooled_key_indexer_scores_pools_not_keys() -> None:
    # decode, one sequence at 16,000 keys: 1,000 pools of 16 scored by 32 heads x 128: 2 x 32 x 128 x 1,000 =
    # 8,192,000, plus pooling 4 x 128 per key read: 8,192,000; it reads every packed key: 16,000 x 257 x 2 B
    kit = _one_rank(Work("decode", new_tokens=1, context=16_000, sequences=1, logits_tokens=1))
    score = next(o for o in _indexer().ops(kit, 4096, 1536) if o.name == "indexer_score")
    assert score.flops == 2 * 32 * 128 * 1_000 + 4 * 128 * 16_000
    assert score.bytes == 16_000 * 257 * 2 + 1_000 * 4


def test_pooled_key_indexer_projection_flops_leave_out_the_position_table() -> None:
    # the table is added to each pooled key, not multiplied by each token: 2 x (7,473,408 - 2,048) a token
    kit = _one_rank(Work("prefill", new_tokens=100, context=100, sequences=1, logits_tokens=1))
    proj = next(o for o in _indexer().ops(kit, 4096, 1536) if o.name == "indexer_proj")
    assert proj.flops == 2 * 100 * (7_473_408 - 2_048)


def test_glm5_next_hyper_head_is_a_weightless_mean() -> None:
    # Glm5NextTextHyperHead: hidden_streams.mean(dim=2), no parameters (DeepSeek-V4's would hold 4 x 16384 + 4 + 1)
    assert parse_model_config(_raw("glm5_next"), "x").hyper_head == 0


def test_head_dim_zero_beside_mla_is_not_a_head_width() -> None:
    # Glm5NextTextConfig writes head_dim 0: its MLA is sized by qk_nope_head_dim 256 and qk_rope_head_dim 0 (NoPE)
    spec = parse_model_config(_raw("glm5_next"), "x")
    mla = next(layer.mixer for layer in spec.layers if getattr(layer.mixer, "indexer", None))
    assert (mla.qk_nope_head_dim, mla.qk_rope_head_dim) == (256, 0)


def test_the_audio_pyramid_left_out_is_the_audio_config_classs_default_pyramid() -> None:
    # MuseSparkAudioConfig's (16, 6, 5, 4) / (256, 512, 1024, 2048) / (2, 2, 2, 2): the file without the three lists
    # counts the same 822,036,529,664 (its audio tower 117,840,384), not the 24,577 of a pyramid with no stages
    import json as _json

    from solver.estimate.params import count_params
    from solver.specs.config.read import parse_model_config

    raw = _json.loads((Path(__file__).parent / "data" / "configs_defaults" / "muse_spark.json").read_text())
    for name in ("hidden_sizes", "patch_sizes", "depths"):
        raw["audio_config"].pop(name)
    assert count_params(parse_model_config(raw, "muse")).total == 822_036_529_664


def test_a_pyramid_tower_without_its_lists_or_their_defaults_is_refused_naming_the_list() -> None:
    from solver.errors import InputError
    from solver.specs.config.audio_towers import conv_pyramid_audio
    from solver.specs.config.fields import Fields

    f = Fields({"num_hidden_layers": 2, "conv_kernel_size": 7, "mlp_ratio": 4.0, "out_hidden_size": 64}, "x",
               prefix="audio_config.")
    with pytest.raises(InputError, match="audio_config.hidden_sizes: missing"):
        conv_pyramid_audio(f)
