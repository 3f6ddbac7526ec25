"""Rules the reader learnt from transformers 5.25.0's class-default configs of the Qwen-Omni thinkers and Qwen3-ASR
(stop 38, audio; benchmarks/README.md): their audio towers (config/audio_towers.py whisper_audio's Qwen-Omni
variants). Each total is transformers' meta-device count of the class default (tests/data/configs_defaults/
oracle.tsv); the audio tower is computed by hand, tensor by tensor from modeling_qwen2_5_omni.py,
modeling_qwen3_omni_moe.py and modeling_qwen3_asr.py."""
from __future__ import annotations

import json
from pathlib import Path

from solver.estimate.params import count_params
from solver.specs.config.read import parse_model_config

DATA = Path(__file__).parent / "data" / "configs_defaults"


def _raw(name: str) -> dict:
    return json.loads((DATA / f"{name}.json").read_text())


def _audio(raw: dict) -> int:
    (audio,) = [e for e in parse_model_config(raw, "x").encoders if e.name == "audio"]
    return audio.params


def _layer(d: int, ffn: int, k_bias: bool) -> int:
    # q / v / out_proj d x d + d, k_proj d x d (+ d where biased), two LayerNorms 2 x 2d, fc1 / fc2 with biases
    return 4 * d * d + (4 if k_bias else 3) * d + 4 * d + 2 * d * ffn + ffn + d


def test_qwen2_5_omni_audio_tower_is_whisper_with_sinusoid_positions_proj_and_bos_eos_table() -> None:
    # d 1280, 32 layers, ffn 5120, 128 mels, output_dim 3584: conv1 128 x 3 x 1280 + 1280 = 492,800; conv2
    # 3 x 1280 x 1280 + 1280 = 4,916,480; no position table (a sinusoid buffer); 32 x 19,676,160 = 629,637,120;
    # ln_post 2,560; proj 1280 x 3584 + 3584 = 4,591,104; audio_bos_eos_token 2 x 3584 = 7,168: 639,647,232
    assert _layer(1280, 5120, k_bias=False) == 19_676_160
    assert _audio(_raw("qwen2_5_omni_thinker")) == 492_800 + 4_916_480 + 629_637_120 + 2_560 + 4_591_104 + 7_168 \
        == 639_647_232


def test_qwen3_omni_audio_tower_downsamples_by_conv2d_and_projects_twice() -> None:
    # c = downsample_hidden_size 480: conv2d1 9 x 480 + 480 = 4,800; conv2d2 / conv2d3 2 x (480 x 9 x 480 + 480)
    # = 4,148,160; conv_out 480 x 16 x 1280 = 9,830,400 (128 mels halved thrice: 64, 32, 16); 32 layers with k_proj
    # biased, 32 x 19,677,440 = 629,678,080; ln_post 2,560; proj1 1280 x 1280 + 1280 = 1,639,680; proj2
    # 1280 x 3584 + 3584 = 4,591,104: 649,894,784
    assert _layer(1280, 5120, k_bias=True) == 19_677_440
    assert _audio(_raw("qwen3_omni_moe_thinker")) == 4_800 + 4_148_160 + 9_830_400 + 629_678_080 + 2_560 \
        + 1_639_680 + 4_591_104 == 649_894_784


def test_qwen3_asr_projector_is_the_qwen3_omni_towers_output_linears_into_output_dim() -> None:
    # Qwen3ASREncoder (d 1024, 24 layers, ffn 4096): conv2d 4,800 + 4,148,160, conv_out 480 x 16 x 1024 = 7,864,320;
    # 24 x 12,596,224 = 302,309,376; ln_post 2,048: 314,328,704, transformers' model.audio_tower. The projector:
    # linear_1 1024 x 1024 + 1024 and linear_2 1024 x 3584 + 3584 (output_dim, not the 2048 text width) = 4,723,200
    layer = _layer(1024, 4096, k_bias=True)
    assert layer == 12_596_224
    tower = 4_800 + 4_148_160 + 480 * 16 * 1024 + 24 * layer + 2 * 1024
    assert tower == 314_328_704  # transformers' model.audio_tower
    assert _audio(_raw("qwen3_asr")) == tower + 4_723_200


def test_omni_thinkers_and_qwen3_asr_count_to_transformers_class_defaults() -> None:
    # oracle.tsv: Qwen2_5OmniThinkerForConditionalGeneration 11,338,288,896 (its text model's q / k / v biased:
    # 28 x (3584 + 512 + 512) = 129,024 of it); Qwen3OmniMoeThinker 18,418,329,704; Qwen3ASR 2,039,626,880
    assert count_params(parse_model_config(_raw("qwen2_5_omni_thinker"), "x")).total == 11_338_288_896
    assert count_params(parse_model_config(_raw("qwen3_omni_moe_thinker"), "x")).total == 18_418_329_704
    assert count_params(parse_model_config(_raw("qwen3_asr"), "x")).total == 2_039_626_880


def test_qwen3_asr_without_audio_config_reads_the_class_default_tower_and_says_so() -> None:
    # Qwen3ASRConfig builds Qwen3ASREncoderConfig() where audio_config is not written: the same 2,039,626,880
    raw = _raw("qwen3_asr")
    del raw["audio_config"]
    spec = parse_model_config(raw, "x")
    assert count_params(spec).total == 2_039_626_880
    assert any("default audio tower (qwen3_asr_encoder)" in n for n in spec.warnings)


def test_voxtral_realtime_tower_has_rmsnorms_a_gated_mlp_and_heads_of_head_dim() -> None:
    # d 1280, 32 heads x head_dim 64 = 2048: q 1280 x 2048 + 2048, k 1280 x 2048, v 1280 x 2048 + 2048, o
    # 2048 x 1280 + 1280 = 10,491,136; two RMSNorms 2,560; gate / up 2 x 1280 x 5120 and down 5120 x 1280 + 1280 =
    # 19,662,080: a layer 30,155,776, x 32 = 964,984,832; conv1 492,800 + conv2 4,916,480, the closing RMSNorm 1,280:
    # 970,395,392 (transformers' model.audio_tower); the projector 1280 x 4 x 3072 + 3072 x 3072, bias-free = 25,165,824
    assert 4 * 1280 * 2048 + 2 * 2048 + 1280 + 2 * 1280 + 3 * 1280 * 5120 + 1280 == 30_155_776
    assert _audio(_raw("voxtral_realtime")) == 32 * 30_155_776 + 492_800 + 4_916_480 + 1_280 + 25_165_824 \
        == 970_395_392 + 25_165_824


def test_voxtral_realtime_text_layers_carry_an_ada_rms_norm_of_rank_32() -> None:
    # VoxtralRealtimeTextAdaRmsNorm: linear1 3072 -> 32 and linear2 32 -> 3072, bias-free, in each of 26 layers:
    # 26 x 2 x 32 x 3072 = 5,111,808 of transformers' 4,429,679,360
    spec = parse_model_config(_raw("voxtral_realtime"), "x")
    assert {layer.norm_gates for layer in spec.layers} == {2 * 32 * 3072}
    assert count_params(spec).total == 4_429_679_360


def test_omniasr_tower_is_wav2vec2_style_over_the_waveform() -> None:
    # conv_dim 7 x 512, kernels [10, 3, 3, 3, 3, 2, 2], biased, each with a LayerNorm (2 x 512): 1 x 512 x 10 + 512 +
    # 1,024 = 6,656; 4 x (512 x 512 x 3 + 1,536) = 3,151,872; 2 x (512 x 512 x 2 + 1,536) = 1,051,648; a LayerNorm
    # 1,024 and projection 512 x 1024 + 1024 = 525,312; the positional conv 1024 x (1024 / 16) x 128 + 1024 =
    # 8,389,632; 24 layers of 4 x (1024^2 + 1024) + 4 x 1024 + 2 x 1024 x 4096 + 4096 + 1024 = 12,596,224; the closing
    # LayerNorm 2,048: 315,437,568 (transformers' model.audio_tower); the projector 1024 x 4096 + 4096 = 4,198,400
    tower = 6_656 + 3_151_872 + 1_051_648 + 1_024 + 525_312 + 8_389_632 + 24 * 12_596_224 + 2_048
    assert tower == 315_437_568
    assert _audio(_raw("omniasr")) == tower + 4_198_400
    assert count_params(parse_model_config(_raw("omniasr"), "x")).total == 1_638_453_760


def test_omniasr_conv_bias_false_drops_the_feature_convolutions_biases() -> None:
    # 7 x 512 conv biases = 3,584
    raw = _raw("omniasr")
    raw["audio_config"]["conv_bias"] = False
    assert _audio(raw) == 315_437_568 + 4_198_400 - 7 * 512


def test_moss_transcribe_diarize_projector_stacks_merged_frames_and_ends_in_a_layernorm() -> None:
    # Whisper's tower (d 1024, 24 layers, ffn 4096, 80 mels, a 1500 x 1024 table): 24 x 12,595,200 + conv1 246,784 +
    # conv2 3,146,752 + 1,536,000 + 2,048 = 307,216,384 (transformers' model.audio_tower); the projector: linear_1
    # 1024 x 4 (audio_merge_size) -> 1024 + 1024, linear_2 1024 x 1024 + 1024, a LayerNorm 2 x 1024 = 5,246,976
    tower = 24 * 12_595_200 + 246_784 + 3_146_752 + 1_536_000 + 2_048
    assert tower == 307_216_384
    assert _audio(_raw("moss_transcribe_diarize")) == tower + 4096 * 1024 + 1024 + 1024 * 1024 + 1024 + 2 * 1024 \
        == tower + 5_246_976
    assert count_params(parse_model_config(_raw("moss_transcribe_diarize"), "x")).total == 908_513_280


def test_fun_asr_nano_sanm_tower_has_fsmn_convs_and_a_wider_first_layer() -> None:
    # d 512, ffn 2048, FSMN 11 taps: a layer 4 x (512^2 + 512) + 512 x 11 + 2 x 2 x 512 + 2 x 512 x 2048 + 2048 + 512
    # = 3,158,016; layer 0 reads 80 x 7 = 560 stacked features: q / k / v 3 x (560 x 512 + 512), its input LayerNorm
    # 2 x 560: 3,231,840; final_layernorm on layers 49 (70 - 20 - 1) and 69: 2 x 1,024. 3,231,840 + 69 x 3,158,016 +
    # 2,048 = 221,136,992 (transformers' model.audio_tower)
    assert _sanm_total(560, 512, 2048, 11) == 3_231_840 and _sanm_total(512, 512, 2048, 11) == 3_158_016
    tower = 3_231_840 + 69 * 3_158_016 + 2_048
    assert tower == 221_136_992
    # the projector: linear_1 512 -> 2048 + 2048, linear_2 2048 -> 1024 + 1024, two adaptor layers without FSMN of
    # 4 x (1024^2 + 1024) + 4 x 1024 + 2 x 1024 x 256 + 256 + 1024 = 4,728,064 each: 12,604,928
    assert _audio(_raw("fun_asr_nano")) == tower + 1_050_624 + 2_098_176 + 2 * 4_728_064 == tower + 12_604_928
    assert count_params(parse_model_config(_raw("fun_asr_nano"), "x")).total == 829_791_840


def _sanm_total(d_in: int, d: int, ffn: int, kernel: int) -> int:
    return 3 * (d_in * d + d) + d * d + d + d * kernel + 2 * d_in + 2 * d + 2 * d * ffn + ffn + d


def test_granite_speech_conformer_blocks_count_two_feed_forwards_attention_conv_and_a_norm() -> None:
    # d 1024: a feed-forward 2 x 1024 + 1024 x 4096 + 4096 + 4096 x 1024 + 1024 = 8,395,776 (two of them); attention
    # 2,048 + to_q 1024 x 1024 + to_kv 1024 x 2048 + to_out 1024 x 1024 + 1024 + rel_pos_emb 1025 x 128 = 4,328,576;
    # conv 2,048 + up_conv 1024 x 4096 + 4096 + depthwise 2048 x 15 + BatchNorm 2 x 2048 + down_conv 2048 x 1024 +
    # 1024 = 6,333,440; post_norm 2,048: a block 27,455,616. 10 blocks + input_linear 160 x 1024 + 1024 + out
    # 1024 x 42 + 42 + out_mid 42 x 1024 + 1024 = 274,808,106 (transformers' model.encoder)
    block = 2 * 8_395_776 + 4_328_576 + 6_333_440 + 2_048
    assert block == 27_455_616
    encoder = 10 * block + 164_864 + 43_050 + 44_032
    assert encoder == 274_808_106
    # the projector (transformers' model.projector 108,289,792): 3 queries (15 // 5) x 768, the Q-Former's LayerNorm,
    # 12 layers (cross-attention on the even ones, keys / values from encoder_hidden_size 1408), a linear 768 -> 4096
    q, cross = 768, 2 * (768 * 768 + 768) + 2 * (1408 * 768 + 768) + 2 * 768
    layer = 4 * (q * q + q) + 2 * q + q * 3072 + 3072 + 3072 * q + q + 2 * q
    projector = 3 * q + 2 * q + 12 * layer + 6 * cross + q * 4096 + 4096
    assert projector == 108_289_792
    assert _audio(_raw("granite_speech")) == encoder + projector
    assert count_params(parse_model_config(_raw("granite_speech"), "x")).total == 6_990_441_514


def test_vibevoice_asr_reads_two_tokenizer_encoders_each_with_its_projector_path() -> None:
    # transformers' parts: acoustic_tokenizer_encoder 343,696,032 (hidden 64), semantic_tokenizer_encoder 344,613,600
    # (hidden 128), multi_modal_projector 34,365,440 = per path a linear into 4096 (64 x 4096 + 4096 and
    # 128 x 4096 + 4096), an RMSNorm 4096 and a linear 4096 x 4096 + 4096; whole 12,772,521,344
    spec = parse_model_config(_raw("vibevoice_asr"), "x")
    paths = sorted(e.params for e in spec.encoders if e.name == "audio")
    assert paths == [343_696_032 + 64 * 4096 + 4096 + 4096 + 4096 * 4096 + 4096,
                     344_613_600 + 128 * 4096 + 4096 + 4096 + 4096 * 4096 + 4096]
    assert sum(paths) == 343_696_032 + 344_613_600 + 34_365_440
    assert count_params(spec).total == 12_772_521_344
