"""Audio encoders and their projectors into the text width.

An audio_config is counted only where its tower's model_type or its wrapper (Ultravox: the encoder of a whisper
audio_config alone) carries _audio_whisper (a Whisper-style encoder:
conv1 / conv2 over num_mel_bins, a max_source_positions table, d_model-wide layers of a bias-free k_proj, biased q /
v / out_proj, two LayerNorms and a biased fc1 / fc2 of encoder_ffn_dim, a closing LayerNorm: Qwen2AudioEncoder,
VoxtralEncoder) and its wrapper's _audio_projector says the projector (`linear`: one biased linear d -> text;
`stacked_mlp`: two bias-free linears from the encoder's intermediate_size, into and through the text width;
{stack_factor, ...}: Ultravox's stacked SwiGLU projector, _stacked_swiglu; {mlp2: {source, widen, bias,
bias_default}}: two linears from the width or the stacked frames, _audio_mlp2); `_audio_whisper: {rotary: true}`
is the rotary variant (GLM-ASR: no position table, k / v over num_key_value_heads); its other keys say the Qwen-Omni
variants (`positions: sinusoid`, `k_bias`, `downsample: conv2d`) and `_audio_projector: {output_mlp: ...}` their
output linears (whisper_audio);
_audio_conv_pyramid a convolutional pyramid over the waveform (conv_pyramid_audio); _audio_wav2vec a wav2vec2-style
encoder over the waveform (wav2vec_audio); _audio_sanm a SAN-M encoder (sanm_audio); _audio_conformer a conformer
(conformer_audio), read from the wrapper's _audio_config_key (Granite-Speech's encoder_config; a list: one tower
each, VibeVoice-ASR's two tokenizer encoders); _audio_convnext a ConvNeXt tokenizer encoder (convnext_audio); any
other audio_config is
refused naming it: the ViT conventions would size a Whisper encoder as patches.
"""
from __future__ import annotations

from typing import Any

from solver.specs.config.fields import Fields


def _stacked_swiglu(wrapper: Fields, d: int, text_hidden: int, spec: dict[str, Any]) -> int:
    """UltravoxProjector: frames stacked by the wrapper's stack_factor k, ln_pre an RMSNorm over d k, linear_1
    d k -> the wrapper's own hidden_size P without a bias, the activation (swiglu halves P), an RMSNorm over the
    middle (projector_ln_mid) or over the text width after linear_2, linear_2 into the text width without a bias.
    `spec` holds the config class's defaults of the fields, read in place of one the wrapper leaves out."""
    k = wrapper.int("stack_factor", default=int(spec["stack_factor"]), maximum=1024)
    mid = wrapper.int("hidden_size", default=int(spec["hidden_size"]))
    act = str(wrapper.cfg.get("projector_act") or spec["projector_act"])
    if act == "swiglu":
        if mid % 2:
            raise wrapper.err("hidden_size", f"{mid} is odd: the projector's SwiGLU splits it in two halves")
        mid //= 2
    ln_mid = wrapper.bool("projector_ln_mid", bool(spec["projector_ln_mid"]))
    return d * k + d * k * (mid * 2 if act == "swiglu" else mid) + (mid if ln_mid else text_hidden) + mid * text_hidden


def whisper_audio(f: Fields, wrapper: Fields, text_hidden: int, facts: dict[str, Any]) -> tuple[int, int, int]:
    """(params, layers, width) of a Whisper-style audio encoder (the tower fact _audio_whisper: Qwen2AudioEncoder,
    VoxtralEncoder, AudioFlamingo3Encoder) and its projector (the wrapper's _audio_projector): conv1 Conv1d
    num_mel_bins -> d and conv2 d -> d, kernel 3 with biases; embed_positions, a max_source_positions x d table
    (frozen, but a parameter the checkpoint holds); per layer k_proj without bias, q / v / out_proj with bias, two
    LayerNorms, fc1 / fc2 with bias; the closing LayerNorm. `_audio_whisper: {rotary: true}` (GlmAsrEncoder): no
    position table (a rotary embedding, buffers only) and k / v over num_key_value_heads x d / heads (default: the
    heads). The Qwen-Omni variants (Qwen2_5OmniAudioEncoder, Qwen3OmniMoeAudioEncoder, Qwen3ASREncoder):
    `positions: sinusoid`, no table (a buffer); `k_bias`, k_proj biased too; `downsample: conv2d`, a Conv2d stem
    (_conv2d_stem) in place of conv1 / conv2. VoxtralRealtimeEncoder: `{rotary: true, norm: rms, mlp: gated}`,
    RMSNorms (a weight each) and a gated MLP, q / o over heads x head_dim (64, not d / heads). The projector: {output_mlp: ...}, _output_mlp; `linear`, one biased linear d -> the text width (Qwen2AudioMultiModalProjector);
    `stacked_mlp`, frames stacked to the encoder's intermediate_size, then two bias-free linears into the text
    width and through it (VoxtralMultiModalProjector); {stack_factor, hidden_size, projector_act,
    projector_ln_mid}: Ultravox's stacked SwiGLU projector (_stacked_swiglu), the values its config's defaults;
    {mlp2: ...}: two linears, _audio_mlp2."""
    d = f.int("d_model", "hidden_size")
    layers = f.int("encoder_layers", "num_hidden_layers", maximum=10_000)
    ffn = f.int("encoder_ffn_dim", "intermediate_size")
    mels = f.int("num_mel_bins")
    shape = facts.get("_audio_whisper")
    shape = shape if isinstance(shape, dict) else {}
    rotary = bool(shape.get("rotary"))
    if rotary:
        heads = f.int("encoder_attention_heads", "num_attention_heads")
        hd = f.int("head_dim", default=0, minimum=0)  # the attention classes' head_dim or d // heads
        if not hd and d % heads:
            raise f.err("num_attention_heads", f"{heads} does not divide the width {d}")
        hd = hd or d // heads
        kv = f.int("num_key_value_heads", default=heads)
        # q / o of heads x hd, k / v of kv x hd; q, o and v biased
        attention = 2 * d * heads * hd + 2 * d * kv * hd + heads * hd + d + kv * hd
        positions = 0
    else:
        attention = 4 * d * d + (4 if shape.get("k_bias") else 3) * d
        # a SinusoidsPositionEmbedding (Qwen-Omni, Qwen3-ASR) is a buffer, not a parameter
        positions = 0 if shape.get("positions") == "sinusoid" else f.int("max_source_positions", maximum=10**7)
    norm = d if shape.get("norm") == "rms" else 2 * d  # an RMSNorm's weight, or a LayerNorm's weight and bias
    # `mlp: gated` (VoxtralRealtimeMLP): bias-free gate / up, a biased down; fc1 / fc2 with biases otherwise
    mlp = 2 * d * ffn + ffn * d + d if shape.get("mlp") == "gated" else d * ffn + ffn + ffn * d + d
    layer = attention + 2 * norm + mlp
    stem = _conv2d_stem(f, d, mels) if shape.get("downsample") == "conv2d" else mels * 3 * d + d + d * 3 * d + d
    encoder = stem + positions * d + layers * layer + norm
    return encoder + audio_projector(f, wrapper, d, ffn, text_hidden, facts), layers, d


def audio_projector(f: Fields, wrapper: Fields, d: int, ffn: int, text_hidden: int, facts: dict[str, Any]) -> int:
    """The projector of an audio tower d wide into the text width, by the _audio_projector fact (whisper_audio's
    docstring lists the kinds)."""
    kind = facts.get("_audio_projector")
    if isinstance(kind, dict) and "output_mlp" in kind:
        return _output_mlp(f, d, kind["output_mlp"])
    if kind == "linear":
        return d * text_hidden + text_hidden
    if kind == "stacked_mlp":
        return ffn * text_hidden + text_hidden * text_hidden
    if isinstance(kind, dict) and "stack_factor" in kind:
        return _stacked_swiglu(wrapper, d, text_hidden, kind)
    if isinstance(kind, dict) and "mlp2" in kind:
        return _audio_mlp2(wrapper, d, ffn, text_hidden, kind["mlp2"])
    if isinstance(kind, dict) and "qformer" in kind:
        return _windowed_qformer(wrapper, text_hidden, kind["qformer"])
    raise wrapper.err("model_type", f"{wrapper.cfg.get('model_type')!r}: its audio projector has no counting "
                                    "convention here; not counted rather than miscounted (drop audio_config to size "
                                    "the language model alone)")


def _sanm_layer(d_in: int, d: int, ffn: int, fsmn_kernel: int) -> int:
    """FunAsrNanoEncoderLayer: biased q / k / v from d_in and o d -> d, a bias-free depthwise FSMN conv of
    fsmn_kernel taps a channel (0: none, the adaptor's layers), LayerNorms over d_in and d, a biased fc1 / fc2."""
    return 3 * (d_in * d + d) + d * d + d + d * fsmn_kernel + 2 * d_in + 2 * d + 2 * d * ffn + ffn + d


def sanm_audio(f: Fields, wrapper: Fields, text_hidden: int, facts: dict[str, Any]) -> tuple[int, int, int]:
    """(params, layers, width) of a SAN-M encoder (the tower fact _audio_sanm: FunAsrNanoEncoder) and its
    projector: no conv stem, the first layer reads num_mel_bins x num_stacked_frames stacked features, every layer a
    _sanm_layer with its FSMN conv of fsmn_kernel_size; the last transcription layer (num_hidden_layers -
    num_timestamp_prediction_layers - 1) and the last layer add a LayerNorm (final_layernorm); the sinusoid
    positions are computed, not stored. The projector (`_audio_projector: adaptor`, FunAsrNanoMultiModalProjector):
    linear_1 d -> adaptor_config.projector_hidden_size and linear_2 into adaptor_config.hidden_size, biased, then
    adaptor_config.num_hidden_layers _sanm_layers without FSMN."""
    d = f.int("hidden_size")
    layers = f.int("num_hidden_layers", minimum=1, maximum=10_000)
    ffn = f.int("intermediate_size")
    heads = f.int("num_attention_heads")
    if d % heads:
        raise f.err("num_attention_heads", f"{heads} does not divide the width {d}")
    d_in = f.int("num_mel_bins") * f.int("num_stacked_frames", maximum=1024)
    kernel = f.int("fsmn_kernel_size", maximum=100_000)
    timestamp = f.int("num_timestamp_prediction_layers", default=0, minimum=0, maximum=layers)
    final_norms = len({layers - timestamp - 1, layers - 1} & set(range(layers)))
    encoder = _sanm_layer(d_in, d, ffn, kernel) + (layers - 1) * _sanm_layer(d, d, ffn, kernel) + final_norms * 2 * d
    if facts.get("_audio_projector") != "adaptor":
        return encoder + audio_projector(f, wrapper, d, ffn, text_hidden, facts), layers, d
    raw = wrapper.cfg.get("adaptor_config")
    if not isinstance(raw, dict):
        raise wrapper.err("adaptor_config", "missing or not an object (required to size the audio projector)")
    a = Fields(raw, wrapper.origin, prefix="adaptor_config.")
    out, mid = a.int("hidden_size"), a.int("projector_hidden_size")
    adaptor = a.int("num_hidden_layers", minimum=0, maximum=1_000) * _sanm_layer(out, out, a.int("intermediate_size"), 0)
    return encoder + d * mid + mid + mid * out + out + adaptor, layers, d


def conformer_audio(f: Fields, wrapper: Fields, text_hidden: int, facts: dict[str, Any]) -> tuple[int, int, int]:
    """(params, layers, width) of a conformer CTC encoder (the tower fact _audio_conformer: GraniteSpeechCTCEncoder)
    and its projector: input_linear input_dim -> d, biased; per block two feed-forwards (a LayerNorm, biased up d ->
    feedforward_mult x d and down), an attention (a LayerNorm, bias-free to_q and to_kv of num_heads x dim_head
    (default d / heads), a biased to_out, a (2 max_pos_emb + 1) x dim_head relative-position table), a conv module
    (a LayerNorm, a biased pointwise up_conv d -> 2 x inner, inner = conv_expansion_factor x d, a bias-free depthwise
    conv of conv_kernel_size taps, a BatchNorm's weight and bias, a biased pointwise down_conv) and a post LayerNorm;
    then the CTC head out d -> output_dim and out_mid back, both biased. The projector: _audio_projector."""
    d = f.int("hidden_dim")
    layers = f.int("num_layers", maximum=10_000)
    heads = f.int("num_heads")
    hd = f.int("dim_head", default=0, minimum=0) or d // heads
    if not hd:
        raise f.err("num_heads", f"{heads} heads leave no head dimension in the width {d}")
    ffn = f.int("feedforward_mult", maximum=64) * d
    inner = f.int("conv_expansion_factor", maximum=64) * d
    kernel = f.int("conv_kernel_size", maximum=100_000)
    rel = 2 * f.int("max_pos_emb", maximum=10**7) + 1
    out = f.int("output_dim")
    feed_forward = 2 * d + d * ffn + ffn + ffn * d + d
    attention = 2 * d + d * heads * hd + d * 2 * heads * hd + heads * hd * d + d + rel * hd
    conv = 2 * d + d * 2 * inner + 2 * inner + inner * kernel + 2 * inner + inner * d + d
    block = 2 * feed_forward + attention + conv + 2 * d
    encoder = f.int("input_dim") * d + d + layers * block + d * out + out + out * d + d
    return encoder + audio_projector(f, wrapper, d, ffn, text_hidden, facts), layers, d


def convnext_audio(f: Fields, wrapper: Fields, text_hidden: int, facts: dict[str, Any]) -> tuple[int, int, int]:
    """(params, layers, width) of a causal ConvNeXt tokenizer encoder over the waveform (the tower fact
    _audio_convnext: VibeVoiceAcousticTokenizerEncoderModel) and its projector: a stem conv channels -> num_filters
    of kernel_size taps and depths[0] ConvNeXt blocks; stage i of downsampling_ratios (ratio r), a conv doubling the
    channels with 2 r taps and stride r, then depths[i + 1] blocks; a head conv into hidden_size of kernel_size taps;
    every conv biased. A block of width c: two RMSNorms, a biased depthwise conv of kernel_size taps, a biased
    linear1 / linear2 through ffn_expansion x c, and two layer scales (gamma, ffn_gamma). Layers: the blocks."""
    channels = f.int("channels", maximum=64)
    filters = f.int("num_filters")
    kernel = f.int("kernel_size", maximum=1024)
    out = f.int("hidden_size")
    expansion = f.int("ffn_expansion", maximum=64)
    ratios = f.int_list("downsampling_ratios", minimum=1)
    if not ratios:
        raise f.err("downsampling_ratios", "missing (required to size the encoder's stages)")
    depths = f.int_list("depths", len(ratios) + 1, minimum=0)
    if depths is None:
        raise f.err("depths", "missing (required to size the encoder's stages)")

    def block(c: int) -> int:
        return 2 * c + c * kernel + c + 2 * c * expansion * c + expansion * c + c + 2 * c

    params = channels * filters * kernel + filters + depths[0] * block(filters)
    for i, ratio in enumerate(ratios):
        wide = filters * 2 ** (i + 1)
        params += (wide // 2) * wide * 2 * ratio + wide + depths[i + 1] * block(wide)
    params += filters * 2 ** len(ratios) * out * kernel + out
    return params + audio_projector(f, wrapper, out, out, text_hidden, facts), sum(depths), out


def wav2vec_audio(f: Fields, wrapper: Fields, text_hidden: int, facts: dict[str, Any]) -> tuple[int, int, int]:
    """(params, layers, width) of a wav2vec2-style audio encoder over the raw waveform (the tower fact
    _audio_wav2vec: OmniASRAudioModel) and its projector (_audio_projector): conv layer i, a Conv1d of
    conv_kernel[i] taps from conv_dim[i - 1] channels (1 at the first) to conv_dim[i], biased under conv_bias, and a
    LayerNorm; a LayerNorm and a biased projection conv_dim[-1] -> d; the positional conv, a grouped Conv1d d -> d
    of num_conv_pos_embeddings taps over num_conv_pos_embedding_groups groups with a bias; per layer biased q / k / v
    / out_proj, two LayerNorms and a biased intermediate_dense / output_dense of intermediate_size; a closing
    LayerNorm."""
    d = f.int("hidden_size")
    layers = f.int("num_hidden_layers", maximum=10_000)
    ffn = f.int("intermediate_size")
    heads = f.int("num_attention_heads")
    if d % heads:
        raise f.err("num_attention_heads", f"{heads} does not divide the width {d}")
    dims = f.cfg.get("conv_dim")
    if not isinstance(dims, list) or not dims:
        raise f.err("conv_dim", "must be a non-empty list of channel counts")
    dims = f.int_list("conv_dim", len(dims), minimum=1) or []
    kernels = f.int_list("conv_kernel", len(dims), minimum=1)
    if kernels is None:
        raise f.err("conv_kernel", "missing (required to size the feature convolutions)")
    bias = f.bool("conv_bias", True)
    taps = f.int("num_conv_pos_embeddings", maximum=100_000)
    groups = f.int("num_conv_pos_embedding_groups", maximum=100_000)
    if d % groups:
        raise f.err("num_conv_pos_embedding_groups", f"{groups} does not divide the width {d}")
    stem, previous = 0, 1
    for channels, kernel in zip(dims, kernels):
        stem += previous * channels * kernel + (channels if bias else 0) + 2 * channels
        previous = channels
    stem += 2 * previous + previous * d + d
    positions = d * (d // groups) * taps + d
    layer = 4 * (d * d + d) + 2 * 2 * d + d * ffn + ffn + ffn * d + d
    encoder = stem + positions + layers * layer + 2 * d
    return encoder + audio_projector(f, wrapper, d, ffn, text_hidden, facts), layers, d


def _windowed_qformer(wrapper: Fields, text_hidden: int, spec: dict[str, Any]) -> int:
    """GraniteSpeechEncoderProjector: a BLIP-2 Q-Former (config/attention_projectors.py qformer) over windows of the
    encoder's frames, its learned queries window_size // downsample_rate (the wrapper's fields, its class defaults in
    `window` / `rate`), its cross-attention keys / values from the Q-Former config's encoder_hidden_size (whatever the
    encoder's width: transformers builds them so), then one biased linear into the text width."""
    from solver.specs.config.attention_projectors import _sub_config, qformer

    window = wrapper.int("window_size", default=int(spec["window"]), minimum=1)
    rate = wrapper.int("downsample_rate", default=int(spec["rate"]), minimum=1)
    defaults = spec.get("defaults") or {}
    q_cfg = _sub_config(wrapper, str(spec["field"]), defaults)
    return qformer(wrapper, q_cfg.int("encoder_hidden_size"), text_hidden,
                   {"field": spec["field"], "defaults": defaults, "num_query_tokens": window // rate})


def _conv2d_stem(f: Fields, d: int, mels: int) -> int:
    """The Conv2d downsampling of Qwen3OmniMoeAudioEncoder / Qwen3ASREncoder (`downsample: conv2d`): conv2d1 1 -> c,
    conv2d2 and conv2d3 c -> c, each 3 x 3 with a bias and stride 2 (c = downsample_hidden_size), then conv_out, a
    bias-free linear from the c channels x the mel bins halved three times (ceil: (m + 1) // 2) into d."""
    c = f.int("downsample_hidden_size")
    bins = mels
    for _ in range(3):
        bins = (bins + 1) // 2
    return (9 * c + c) + 2 * (c * 9 * c + c) + c * bins * d


def _output_mlp(f: Fields, d: int, spec: dict[str, Any]) -> int:
    """The output linears of a Qwen-Omni / Qwen3-ASR audio tower (`_audio_projector: {output_mlp: {layers, bos_eos}}`),
    in the tower (Qwen2_5OmniAudioEncoder's proj, Qwen3OmniMoeAudioEncoder's proj1 / proj2) or the wrapper's projector
    (Qwen3ASRMultiModalProjector's linear_1 / linear_2): layers - 1 biased linears d -> d, then one d -> output_dim
    (the tower's field, which the text width need not equal), biased; `bos_eos`: an audio_bos_eos_token table of 2 x
    output_dim (Qwen2.5-Omni)."""
    out = f.int("output_dim")
    depth = int(spec.get("layers", 1))
    return (depth - 1) * (d * d + d) + d * out + out + (2 * out if spec.get("bos_eos") else 0)


def _audio_mlp2(wrapper: Fields, d: int, ffn: int, text_hidden: int, spec: dict[str, Any]) -> int:
    """Two linears from the encoder's frames into the text width: `source` d (AudioFlamingo3MultiModalProjector) or
    the encoder's intermediate_size, frames stacked to it (GlmAsrMultiModalProjector), or `stacked`, d x the
    wrapper's `stack` field (VoxtralRealtimeMultiModalProjector's downsample_factor); the middle `widen` x the text
    width; biased unless the wrapper's `bias` field (its class default `bias_default`), or `bias_default` where no
    field switches them, is false; `norm`: a biased LayerNorm over the output (MossTranscribeDiarizeMultiModalProjector),
    `norm: rms` an RMSNorm of the text width (VibeVoiceAsrMultiModalProjector's sits between the two linears: the
    same weights)."""
    if spec["source"] == "stacked":  # d x the wrapper's frames-stacked field (its class default `stack_default`)
        width = d * wrapper.int(str(spec["stack"]), default=int(spec["stack_default"]), maximum=1024)
    else:
        width = {"width": d, "ffn": ffn}[str(spec["source"])]
    mid = int(spec.get("widen", 1)) * text_hidden
    bias_field = spec.get("bias")
    bias_default = bool(spec.get("bias_default", True))
    bias = wrapper.bool(bias_field, bias_default) if bias_field else bias_default
    # `norm`: on the output, a LayerNorm with a bias (true) or an RMSNorm (rms)
    norm = {None: 0, False: 0, "rms": text_hidden}.get(spec.get("norm"), 2 * text_hidden)
    return width * mid + mid * text_hidden + ((mid + text_hidden) if bias else 0) + norm


def conv_pyramid_audio(f: Fields) -> tuple[int, int, int]:
    """(params, layers, width) of a causal convolutional pyramid over the raw waveform (the tower fact
    _audio_conv_pyramid: MuseSparkAudioModel), already in the text width. Stage i of num_hidden_layers, width
    d_i = hidden_sizes[i]: a patch embedding, a biased linear of patch_sizes[i] frames of the previous width (1 at
    the first stage) -> d_i and an RMSNorm; depths[i] blocks of a biased depthwise conv (conv_kernel_size taps a
    channel), an RMSNorm and a biased fc1 / fc2 of mlp_ratio x d_i. Then an RMSNorm, a biased proj to out_hidden_size
    and an RMSNorm of it. Layers: the conv blocks; width: the last stage's."""
    stages = f.int("num_hidden_layers", maximum=64)
    lists = {}
    for name, minimum in (("hidden_sizes", 1), ("patch_sizes", 1), ("depths", 0)):
        value = f.int_list(name, stages, minimum=minimum)
        if value is None:  # the pyramid's stages are these lists: none is guessed
            raise f.err(name, f"missing: the convolutional pyramid's {stages} stages are sized by it")
        lists[name] = value
    widths, patches, depths = lists["hidden_sizes"], lists["patch_sizes"], lists["depths"]
    kernel = f.int("conv_kernel_size", maximum=1024)
    ratio = f.number("mlp_ratio", 0.0, 1000.0)
    out = f.int("out_hidden_size")
    params, previous = 0, 1
    for d, patch, depth in zip(widths, patches, depths):
        inter = int(d * ratio)  # MuseSparkAudioMLP: int(hidden x mlp_ratio)
        params += previous * patch * d + d + d  # patch linear and its bias, its RMSNorm
        params += depth * (kernel * d + d + d + 2 * d * inter + inter + d)  # conv + bias, norm, fc1 / fc2 + biases
        previous = d
    params += previous + previous * out + out + out  # norm, proj and its bias, post_proj_norm
    return params, sum(depths), previous
