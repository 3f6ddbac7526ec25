"""Modules outside the decoder stack that a multimodal config declares: vision / audio encoders and their
projectors into the text width.

Counted by convention from the encoder config's fields (ViT blocks: attention 4 x h^2, MLP 2 or 3 x h x
inter, norms; patch embedding; position table; projector), not by family:
  layers            depth | num_hidden_layers | vt_num_hidden_layers
  width / MLP       hidden_size | vt_hidden_size, intermediate_size | vt_intermediate_size
  patch embedding   in_channels | num_channels | in_chans (3) x temporal_patch_size (1) x patch_size^2 x h (+ bias)
  positions         num_position_embeddings, else (image_size / patch_size)^2 when image_size is given
  projector         spatial_merge_size / merge_kernel_size (patch merger: (h m^2)^2 + h m^2 x out) into
                    out_hidden_size | text_hidden_size | the text hidden size; deepstack_visual_indexes add
                    one merger each; a plain linear h -> text hidden otherwise; the family fact
                    _vision_projector_mlp: a norm, a patch merger h m^2 -> h and two linears into the text width
                    (Mistral3), spatial_merge_size read from the wrapper where the tower lacks it
  gated MLP         hidden_act silu (pixtral) gated; GELU MLPs not gated
  biases / norms    LayerNorm (weight + bias) unless norm_type rmsnorm; linear biases unless attn_bias /
                    linear_bias false or the MLP is gated; the family fact _vision_linear_bias (family_defaults.yaml)
                    puts them on every linear of a gated tower too (Qwen2.5-VL)
Facts of a tower's modeling code that its config does not write are read from family_defaults.yaml under the
tower's own model_type (vision_config.model_type: clip_vision_model, intern_vit_6b), the wrapper's facts (its
model_type and the text model's) on top:
  _vision_class_token       a class embedding (h) and one more position row (CLIP, InternViT)
  _vision_patch_bias        the patch convolution's bias (false: CLIP's Conv2d(bias=False))
  _vision_tower_norms       norms outside the layers (CLIP 2: pre_layrnorm, post_layernorm; InternViT 0); one by
                            default, none for a tower that writes depth (the Qwen-VL lineage)
  _vision_layer_scale       two learned per-channel scales per layer (InternViT ls1 / ls2)
  _vision_mean_pooling_field  FIELD (default true) makes the tower's final norm an Identity; false, a LayerNorm
                            (InternVLVisionModel's layernorm under use_mean_pooling)
  _vision_projector_mlp2    the projector is two biased linears, h m^2 -> text -> text (LLaVA's
                            multi_modal_projector, InternVL's mlp1), m from spatial_merge_size or the wrapper's
                            downsample_ratio (pixel shuffle: m = 1 / ratio); a list vision_feature_layer feeds
                            h x its length; biases as the wrapper's multimodal_projector_bias (default true)
  _vision_projector_bias     the projector's linears' bias fixed by its code (LightOnOcr's false), whatever
                            multimodal_projector_bias says (a note where it says otherwise)
                            {through: intermediate_size, bias: false}: the middle width is the language model's
                            intermediate_size, not its hidden size, and the linears' biases are the fact's (NVLM-D);
                            {through: FIELD, defaults: {...}}: the wrapper's FIELD, its class defaults said in a note
                            where left out (Nemotron-Omni's projector_hidden_size, downsample_ratio)
  _vision_projector_norm    a LayerNorm over the merged width h m^2 before those linears (InternVL's mlp1[0]);
                            rms: an RMSNorm, weight only (Nemotron-Omni's projector layer_norm)
  _vision_refused_switches  {FIELD: what}: the tower is refused, naming FIELD, where FIELD is true (RADIO's SwiGLU)
  _vision_video_patch_linear  FIELD: a second bias-free patch linear over FIELD frames, where FIELD is set (RADIO's
                            video_patch_projection)
  _vision_image_newline     one learned text-width vector marks the end of image rows (LLaVA-NeXT image_newline)
  _vision_hidden_is_output  the tower is embed_dim wide and its hidden_size is the merger's output width
                            (Qwen2VLVisionConfig); an MLP width not written is mlp_ratio x the width (timm's convention)
  _vision_projector_shuffle_linear  one bias-free linear from the pixel-shuffled width h x scale_factor^2 (the
                            wrapper's scale_factor) into the text width (Idefics3Connector)
  _vision_projector_biased_linear   one biased linear h -> projection_dim, no norm (PaliGemmaMultiModalProjector)
  _vision_projector_swiglu  {downsample_factor, alignment_intermediate_size}: a pixel shuffle by the wrapper's
                            downsample_factor d, a LayerNorm over h d^2, a biased linear into
                            alignment_intermediate_size A and one from A / 2 (SwiGLU) into the text width
                            (AyaVisionMultiModalProjector); the fact's values are the class defaults of d and A;
                            `layernorm: false` drops the LayerNorm (Cohere2VisionMultiModalProjector)
  _vision_projector_pixel_shuffle_mlp  two bias-free linears intermediate_size -> projector_input_dim and
                            projector_output_dim square (Llama4VisionPixelShuffleMLP), then one bias-free linear
                            vision_output_dim -> the text width (Llama4MultiModalProjector)
  _vision_config_defaults   the wrapper's default vision config (LlavaConfig's CLIP ViT-L/14-336, PaliGemmaConfig's
                            SigLIP), read where the vision_config leaves a field out, in a note: transformers writes
                            a nested config as its diff against that default (Pixtral-12B's writes no hidden_size)
  _vision_mlp_width         the field that sizes the blocks' MLP in place of intermediate_size (GLM-4.1V's
                            Glm4VisionMlp is out_hidden_size wide; its intermediate_size sizes the merger)
  _vision_qkv_bias          the field under which the fused qkv alone takes a bias (GLM-4.1V's attention_bias)
  _vision_learned_positions a learned (image_size / patch_size)^2-row table though the tower writes depth
                            (Glm4vVisionEmbeddings, interpolated to the image at run time)
  _vision_projector_conv_merger  a biased Conv2d m x m (spatial_merge_size) from h into out_hidden_size, then a
                            bias-free out x out linear, a LayerNorm over out and a bias-free gated MLP out ->
                            intermediate_size -> out (Glm4vVisionModel's downsample and merger); out_x_channels:
                            the gated MLP is out x in_channels wide (GlmOcrVisionPatchMerger's context_dim)
                            {kernel, into, through}: EVA2-CLIP's (GLM-4V's and CogVLM2's EVA2CLIPModel): a
                            biased Conv2d kernel x kernel into the text width (into: text) or the tower's (into:
                            tower), a bias-free linear from it into the text width, the LayerNorm and the gated MLP
                            through the wrapper's field `through` (ffn_hidden_size, intermediate_size), and boi /
                            eoi, one learned text-width vector each
  _vision_towers            N: the wrapper builds N towers from the one vision_config, each with its own weights
                            (Video-LLaVA's image_tower and video_tower), one projector
  _vision_patch_2d          the patch embedding is a Conv2d: a temporal_patch_size the tower config writes is the
                            processor's and sizes no weight (PaddleOCR-VL's SigLIP-NaViT), said in a note
  _vision_patch_linear      no tower: one biased linear of the wrapper's patch_size^2 x num_channels into the text
                            width (Fuyu's vision_embed_tokens)
  _vision_refused           why the family's tower is not counted: the config is refused, naming the encoder
                            key (DeepSeek-VL2), rather than miscounted by the convention
  _vision_gated_mlp         the blocks' MLP is gated (gate / up / down) whatever its activation, under the gated
                            tower's conventions (RMSNorms, no biases, a bias-free patch embedding): Gemma-4's GELU MLP
  _vision_norms_per_layer   norms per block (Gemma-4's 4: before and after attention and MLP); 2 otherwise
  _vision_qk_norm: head     one q and one k RMSNorm of head_dim per block, shared by the heads (Gemma-4); head_dim
                            is the width over the heads where the tower writes none (LFM3-VL)
  _vision_conv_layers       FIELD: the tower's layer_types marks "conv" layers whose mixer is a gated short
                            convolution in place of attention: in_proj h -> 3h, a depthwise FIELD x FIELD Conv2d and
                            out_proj h -> h, bias-free (LFM3-VL's Lfm3VlVisionShortConv); every other entry must be
                            full_attention, and a tower without layer_types is refused naming it
  _vision_projector_layernorm  the merger's norm is a LayerNorm (weight and bias) whatever the tower's norms are
                            (LFM3-VL's projector over an RMSNorm tower)
  _vision_projector_linear_after_merger  the tower's own patch merger hands out_hidden_size to one more biased linear
                            into the text width (HyperCLOVAXVisionV2Model.projector)
  _vision_projector_shuffle_paths  {fine, router}: pixel-shuffle paths (GraniteDoclingConnector): a LayerNorm
                            over h; per path (scale_factor, and scale_factor / 2 where the tower's `fine` switch is
                            on) a bias-free linear h f^2 -> out_hidden_size and one DeepStack merger per
                            deepstack_visual_indexes entry (a LayerNorm over h f^2, biased h f^2 -> out and out ->
                            out); shared ln_mid, a bias-free out -> out and ln_out (LayerNorms); where the wrapper
                            writes the `router` width D, a density router (biased h -> 1, a LayerNorm over h, biased
                            h -> D -> 1). out_hidden_size must be the text width (no linear follows)
  _vision_window_merger     FIELD: the k x k window (FIELD) of a window-attention merger inside the tower: one
                            more attention and its norm, a LayerNorm over h k^2, a biased MLP h k^2 -> inter k^2 -> h
                            (MiniCPMV4_6ViTWindowAttentionMerger)
  _vision_projector_visual_tokenizer  {vocab, stride, indicators}: a visual tokenizer in place of a projector: a
                            bias-free head h stride^2 -> vocab - indicators (the tower's fields), a LayerNorm over
                            those, and a visual embedding table of vocab rows x the text width (Ovis2VisionModel's
                            head_linear / head_norm, Ovis2Model's visual_embeddings_table)
  _vision_projector_resampler  {merge, temporal}: the tower's fields of the m x m spatial and t-frame temporal
                            merges; a spatial MLP over s = h m^2 (biased s -> s -> s, a LayerNorm), a temporal one
                            (biased s t -> s -> s, a LayerNorm), a biased s -> text linear and a text-width RMSNorm
                            (Ernie4_5_VLMoeVariableResolutionResamplerModel)
  _vision_projector_merge_mlps  {times, factor}: the wrapper's `times` field of merge MLPs, each a LayerNorm over
                            h x factor, a biased linear h x factor square and one into h, the last into the text
                            width (MiniCPMV4_6Merger's DownsampleMLPs, factor 4 fixed by the class)
  _vision_class_rotary      the class token carries its own learned rotary frequencies, head_dim / 2 of them
                            (RiceViT's class_pos_emb in LLaVA-OneVision-1.5), beside _vision_class_token's embedding
  _vision_projector_pooling_attention  {field}: the wrapper's config object `field` is an adapter that pools the
                            concatenated vision_feature_layer outputs through one attention and projects them with
                            a gated MLP into text_hidden_size (Molmo2Adapter; _pooling_adapter)
  _vision_axial_positions   the field counting the rows of each of two learned tables, one per image axis, summed
                            per patch (Gemma-4's position_embedding_size: 2 x FIELD x h)
  _vision_position_rows     the field counting the learned table's rows (Siglip2's num_patches: a square grid
                            resized to each image), in place of (image_size / patch_size)^2; {edge: FIELD,
                            extra: N}: (FIELD / patch_size)^2 + N rows (HunYuanVL's max_image_size grid, a class row);
                            extra_fields: [FIELD...] adds the rows those fields count (RADIO's cls / register tokens)
  _vision_norm_when_text    FIELD: a LayerNorm (h) on the tower's output where the language model's FIELD is non-zero
                            (Nemotron-Omni's vision_final_layernorm under num_nextn_predict_layers)
  _vision_position_grid     the two fields giving a learned 2D table's height and width in rows (Kimi-K2.5's
                            pos_emb_height x pos_emb_width; MoonViT's init_pos_emb_height x width by convention)
  _vision_projector_merger_width  the wrapper field sizing the patch merger's middle layer (h m^2 -> FIELD -> text,
                            biased, after the tower-width norm) in place of h m^2 (Cosmos3EdgePatchMerger:
                            projector_hidden_size)
  _vision_projector_conv_downsample  two biased 3 x 3 stride-2 Conv2d h -> 2h -> 4h, then one linear 4h -> the
                            text width, biased under the wrapper's projector_bias (Step3p7VisionModel's downsamplers
                            and Step3p7Model.multi_modal_projector); {kernels: [FIELD or N, N], rms_norms, newline,
                            text_vectors}: the kernels' sizes, RMSNorms of h before and the text width after, one
                            learned 4h vector, N learned text-width vectors (HunYuanVLVisionPatchMerger)
  _vision_field_names        {convention field: the class's name}: a tower class that spells temporal_patch_size
                            or spatial_merge_size otherwise (MuseGlimmerVisionConfig's patch_temporal, merge_size)
  _vision_projector_adapter_mlp  a pixel shuffle by the merge size, fc1 from the wrapper's out_hidden_size (checked
                            against h m^2) into projector_hidden_size, fc2 square, one linear into the text width,
                            all bias-free (MuseGlimmerVisionAdapter and vision_projection)
  _vision_projector_patch_then_merge_mlp  a biased MLP per patch h -> projector_hidden_size -> text, then one
                            over each m x m group's text m^2 (the wrapper's merged_hidden_size, checked) ->
                            projector_hidden_size -> text, biased (MiniMaxM3VLMultiModalProjector)
  _vision_projector_bare_linear  one bias-free linear into the text width after a scale-free norm
                            (Gemma4MultimodalEmbedder)
  _vision_projector_unshuffle_mlp  {downsample_factor, projector_hidden_size}: a pixel unshuffle by the wrapper's
                            downsample_factor d, a LayerNorm over h d^2 (unless projector_use_layernorm is false), a
                            linear into projector_hidden_size P and one from P into the text width, biased unless
                            projector_bias is false (Lfm2VlMultiModalProjector); the values are the class defaults
  _vision_projector_qformer {field, num_query_tokens, defaults, text_embeddings}: a BLIP-2 Q-Former of the
                            wrapper's FIELD config over num_query_tokens learned queries, then one biased linear into
                            the text width (_qformer); text_embeddings: the Q-Former reads the instruction too
                            (InstructBLIP): its own BERT embeddings and the text branch's FFN in every layer
  _vision_projector_perceiver {field, defaults}: Idefics2's connector, a gated MLP through the text intermediate_size,
                            then a perceiver resampler of the wrapper's FIELD config at the text width (_perceiver)
An audio_config is counted only where its tower's model_type or its wrapper (Ultravox: the encoder of a whisper
audio_config alone) carries _audio_whisper (a Whisper-style encoder:
conv1 / conv2 over num_mel_bins, a max_source_positions table, d_model-wide layers of a bias-free k_proj, biased q /
v / out_proj, two LayerNorms and a biased fc1 / fc2 of encoder_ffn_dim, a closing LayerNorm: Qwen2AudioEncoder,
VoxtralEncoder) and its wrapper's _audio_projector says the projector (`linear`: one biased linear d -> text;
`stacked_mlp`: two bias-free linears from the encoder's intermediate_size, into and through the text width;
{stack_factor, ...}: Ultravox's stacked SwiGLU projector, _stacked_swiglu; {mlp2: {source, widen, bias,
bias_default}}: two linears from the width or the stacked frames, _audio_mlp2); `_audio_whisper: {rotary: true}`
is the rotary variant (GLM-ASR: no position table, k / v over num_key_value_heads); any
other audio_config is refused naming it: the ViT conventions would size a Whisper encoder as patches.
Learned 2D position tables written as init_pos_emb_height x init_pos_emb_width (MoonViT) count that many rows.
A tower with a learned table by convention (not gated, no depth, no RoPE base, use_absolute_position_embeddings
not false) needs image_size, written or from a default vision config (the tower class's: SiglipVisionConfig's
224), else it is refused; image_size and patch_size may be [height, width] (the HF InternVL tower). Read by field
too: use_mask_token (one learned row), layer_scale_init_value > 0 (two per-channel scales per layer), use_qk_norm,
vision_use_head (SigLIP's attention-pooling head: probe, MultiheadAttention, LayerNorm, MLP); a written head_dim
that is not the width over the heads is refused (config/unread.py check_unread_tower holds the other refusals).
A tower with qk_normalization (InternViT-6B) carries a q and a k norm of h each per layer.
A tiled tower (the config writes max_num_tiles: Mllama's MllamaVisionModel) is counted tensor by tensor as that
modeling code builds it (`_tiled_vit`): a bias-free patch Conv2d, a class embedding, a gated position table of
(image_size / patch_size)^2 + 1 rows with its per-aspect-ratio tile table, gated pre- and post-tile embeddings,
LayerNorms before and after, num_hidden_layers plain ViT layers (bias-free attention, biased GELU MLP) and
num_global_layers gated ones (two scalar gates each), and one biased linear from vision_output_dim into the
text width. Its output per image, max_num_tiles x ((image_size / patch_size)^2 + 1) tokens, is what the text
model's cross-attention layers attend to (`image_tokens`).
Checked exactly against the Gemma-3 SigLIP towers (keras-hub presets, facts/model_configs/SOURCES.md); for
the others the count follows these conventions and is reported as its own module.
Placement: engines run the encoder replicated on every rank of the attention group (vLLM, SGLang: the ViT
is not split by the LLM's TP unless asked), so its weights count on every rank.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from solver.specs.config.fields import Fields, ReadRecorder

ENCODER_KEYS = ("vision_config", "audio_config", "vision_tower")
TOWER_FACTS = ("_vision_", "_audio_")  # the prefixes of the family facts a tower or its projector reads


@dataclass(frozen=True)
class Encoder:
    name: str  # vision | audio
    params: int
    layers: int
    hidden: int
    placement: str = "replicated"


def _vit(f: Fields, wrapper: Fields, text_hidden: int, notes: list[str],
         facts: dict[str, Any], text_inter: int | None = None) -> tuple[int, int, int]:
    """(params, layers, width) of one tower and its projector; `wrapper` is the multimodal config around it,
    where some families write the projector's fields (Mistral3: spatial_merge_size, multimodal_projector_bias)."""
    tower, layers, h, norm = vit_tower(f, notes, facts)
    switched = facts.get("_vision_norm_when_text")
    if switched:
        # a LayerNorm on the tower's output that the wrapper builds only where the language model's FIELD is
        # non-zero (Nemotron-Omni's vision_final_layernorm, under the text config's num_nextn_predict_layers)
        text = Fields(wrapper.cfg.get("text_config") or wrapper.cfg, wrapper.origin, "text_config.")
        if text.int(str(switched), default=0, minimum=0):
            tower += 2 * h
    return tower + _projector(f, wrapper, h, norm, text_hidden, facts, notes, text_inter), layers, h


def vit_tower(f: Fields, notes: list[str], facts: dict[str, Any]) -> tuple[int, int, int, int]:
    """(params, layers, width, one norm's parameters) of one tower without its projector, by the conventions of
    the module docstring and the tower's facts."""
    c = f.cfg
    layers = f.int("depth", "num_hidden_layers", "vt_num_hidden_layers", maximum=10_000)
    # Qwen2-VL's tower is embed_dim wide; its hidden_size is the merger's output (the fact _vision_hidden_is_output)
    h = f.int("embed_dim") if facts.get("_vision_hidden_is_output") else f.int("hidden_size", "vt_hidden_size",
                                                                                 "embed_dim")
    if facts.get("_vision_mlp_width"):  # the field the blocks' MLP is as wide as (GLM-4.1V's out_hidden_size)
        inter = f.int(str(facts["_vision_mlp_width"]))
    elif f.has("intermediate_size", "vt_intermediate_size"):
        inter = f.int("intermediate_size", "vt_intermediate_size")
    elif f.has("mlp_ratio"):  # timm's convention: the MLP is mlp_ratio x the width (Qwen2-VL)
        inter = f.int("mlp_ratio", maximum=1024) * h
    else:  # the ViT convention, said as the dense FFN says its own (config/blocks.py dense_width)
        inter = 4 * h
        notes.append(f"{f.prefix}intermediate_size: not given; the encoder's MLP width is read as 4 x hidden size "
                     f"= {inter} (the ViT convention)")
    act = f.text("hidden_act", "hidden_activation", "activation_func", default="gelu")
    gated = act == "silu" or bool(facts.get("_vision_gated_mlp"))  # Gemma-4's gate / up / down run GELU
    rms = str(c.get("norm_type", "")).startswith("rms") or gated
    bias = not (c.get("attn_bias") is False or c.get("linear_bias") is False or c.get("attention_bias") is False
                or gated)
    linear_bias = facts.get("_vision_linear_bias")
    if isinstance(linear_bias, str):  # the field that switches every linear's bias (GLM-OCR's attention_bias)
        bias = f.bool(linear_bias)
    elif linear_bias is not None:  # the family's fact (family_defaults.yaml)
        bias = bool(linear_bias)
    norm = h if rms else 2 * h
    # q / k / v project to qkv_hidden_size where a tower writes one (MoonViT in Kimi-K3: 1536 over a 1024 width),
    # and o_proj back from it
    qd = f.int("qkv_hidden_size", default=h)
    kd = _kv_width(f, qd)  # k and v each: fewer K/V heads than query heads (EXAONE-4.5's tower GQA)
    attn = 2 * h * qd + 2 * h * kd + ((qd + 2 * kd + h) if bias else 0)
    for field, what in (facts.get("_vision_refused_switches") or {}).items():
        if f.bool(str(field)):
            raise f.err(str(field), f"true: {what} is not modelled; not counted rather than miscounted")
    # BLIP-2's tower: q / v biases off under qkv_bias, projection's kept; RADIO's q / k / v, o_proj's kept
    if bias and c.get("qkv_bias") is False:
        attn -= qd + 2 * kd
    # a tower whose fused qkv alone takes a bias when its field is set (GLM-4.1V's attention_bias; proj never)
    if not bias and facts.get("_vision_qkv_bias") and f.bool(str(facts["_vision_qkv_bias"])):
        attn += qd + 2 * kd
    mlp = (3 if gated else 2) * h * inter + (((2 if gated else 1) * inter + h) if bias else 0)
    per_layer = attn + mlp + int(facts.get("_vision_norms_per_layer", 2)) * norm
    # two learned per-channel scales per layer: the family fact, or a layer_scale_init_value the config sets (the
    # HF InternVL tower's lambda_1 / lambda_2)
    if facts.get("_vision_layer_scale") or (f.has("layer_scale_init_value")
                                            and f.number("layer_scale_init_value", 0.0, 1e6) > 0):
        per_layer += 2 * h  # ls1, ls2
    qk_norms = 0
    if facts.get("_vision_qk_norm") == "head":  # one q and one k RMSNorm of head_dim, shared by the heads
        qk_norms = 2 * (f.int("head_dim") if f.has("head_dim") else qd // f.int("num_attention_heads", "num_heads"))
    elif c.get("qk_normalization") or f.bool("use_qk_norm"):
        qk_norms = 2 * norm * qd // h  # q_norm, k_norm over all heads' channels
    per_layer += qk_norms
    channels = f.int("in_channels", "num_channels", "in_chans", default=3)
    temporal = f.int(_field(facts, "temporal_patch_size"), default=1)
    if facts.get("_vision_patch_2d") and temporal != 1:
        # a Conv2d patch embedding: the field is the image processor's (frames stacked per patch), not the tower's
        notes.append(f"{f.prefix}temporal_patch_size: {temporal} is the image processor's; the tower's patch "
                     "embedding is a Conv2d over one frame, counted without it")
        temporal = 1
    patch_h, patch_w = _pair(f, "patch_size", 14)
    patch_bias = not gated and c.get("patch_embed_proj_bias") is not False
    if facts.get("_vision_patch_bias") is not None:
        patch_bias = bool(facts["_vision_patch_bias"])
    patch_embed = channels * temporal * patch_h * patch_w * h + (h if patch_bias else 0)
    video = facts.get("_vision_video_patch_linear")
    if video and f.has(str(video)):  # a second bias-free patch linear over FIELD frames (RADIO's video_patch_projection)
        patch_embed += f.int(str(video), maximum=64) * channels * patch_h * patch_w * h
    cls = 1 if facts.get("_vision_class_token") else 0
    positions = cls * h  # the class embedding
    if facts.get("_vision_class_rotary"):  # the class token's learned rotary frequencies, head_dim / 2 (RiceViT)
        positions += h // f.int("num_attention_heads", "num_heads") // 2
    positions += h if f.bool("use_mask_token") else 0  # a learned mask token (HF InternVL's use_mask_token)
    axial, rows = facts.get("_vision_axial_positions"), facts.get("_vision_position_rows")
    grid = facts.get("_vision_position_grid") or (("init_pos_emb_height", "init_pos_emb_width")
                                                   if f.has("init_pos_emb_height") else None)
    if axial:  # one learned row set per image axis, FIELD rows each, summed per patch (Gemma-4)
        positions += 2 * f.int(str(axial)) * h
    elif isinstance(rows, dict):  # {edge: FIELD, extra: N}: (FIELD / patch_size)^2 + N rows (HunYuanVL's
        # max_image_size grid and its class row)
        edge = f.int(str(rows["edge"]))
        # extra_fields: learned prefix rows the fields count (RADIO's num_cls_tokens + num_registers)
        extra = int(rows.get("extra", 0)) + sum(f.int(str(k), minimum=0) for k in rows.get("extra_fields", ()))
        positions += ((edge // patch_h) * (edge // patch_w) + extra) * h
    elif rows:  # the field that counts the learned table's rows (Siglip2's num_patches)
        positions += f.int(str(rows)) * h
    elif f.has("num_position_embeddings"):
        positions += f.int("num_position_embeddings") * h
    elif grid:
        positions += f.int(str(grid[0])) * f.int(str(grid[1])) * h
    elif _learned_table(f, gated) or facts.get("_vision_learned_positions"):
        if not f.has("image_size"):
            raise f.err("image_size", "missing (required to size the vision tower's learned position table, "
                                      "(image_size / patch_size)^2 rows; its family declares no default)")
        image_h, image_w = _pair(f, "image_size", 0)
        positions += ((image_h // patch_h) * (image_w // patch_w) + cls) * h
    tower_norms = facts.get("_vision_tower_norms")
    post_norm = norm * (int(tower_norms) if tower_norms is not None else 0 if f.has("depth") else 1)
    pooled = facts.get("_vision_mean_pooling_field")
    if pooled and not f.bool(str(pooled), True):  # the CLS state read through a final nn.LayerNorm, not a mean
        post_norm += 2 * h
    head = 0
    if f.bool("vision_use_head"):
        # SigLIP's attention-pooling head (SiglipMultiheadAttentionPoolingHead): a probe, nn.MultiheadAttention
        # (in_proj 3h x h and out_proj h x h, both biased), a LayerNorm and the tower's MLP
        head = h + 4 * h * h + 4 * h + 2 * h + mlp
    # a wrapper that builds the tower more than once from the one vision_config, each with its own weights
    # (Video-LLaVA's image_tower and video_tower); a request's images or frames run through one of them
    towers = int(facts.get("_vision_towers", 1))
    stack = layers * per_layer
    if facts.get("_vision_window_merger"):
        # a window-attention merger inside the tower (MiniCPMV4_6ViTWindowAttentionMerger): one more attention and
        # its norm, then a LayerNorm over the k x k window's h k^2 and a biased MLP h k^2 -> inter k^2 -> h
        kh, kw = _pair(f, str(facts["_vision_window_merger"]), 0)
        if not kh:
            raise f.err(str(facts["_vision_window_merger"]), "missing (required to size the window merger)")
        window = h * kh * kw
        stack += attn + norm + 2 * window + window * inter * kh * kw + inter * kh * kw * h + ((inter * kh * kw + h)
                                                                                              if bias else 0)
    if facts.get("_vision_conv_layers"):  # short-convolution layers in place of attention (LFM3-VL)
        stack -= _conv_layers(f, layers, str(facts["_vision_conv_layers"]), h, attn + qk_norms)
    return towers * (stack + patch_embed + positions + post_norm + head), layers, h, norm


def _conv_layers(f: Fields, layers: int, kernel_field: str, h: int, attn: int) -> int:
    """What the tower's "conv" layers hold less than attention layers: each swaps its attention (`attn`, with its q / k
    norms) for a gated short convolution (in_proj h -> 3h, a depthwise k x k Conv2d, out_proj h -> h, bias-free)."""
    types = f.str_list("layer_types")
    if types is None:
        raise f.err("layer_types", "missing: the tower mixes short-convolution and attention layers, and which is "
                                   "which is not derived here; write the class's layer_types")
    if len(types) != layers:
        raise f.err("layer_types", f"{len(types)} entries for {layers} layers")
    unknown = sorted(set(types) - {"conv", "full_attention"})
    if unknown:
        raise f.err("layer_types", f"{unknown[0]!r}: a tower layer kind not counted (conv and full_attention are)")
    k = f.int(kernel_field)
    conv = 3 * h * h + k * k * h + h * h
    return types.count("conv") * (attn - conv)


def _field(facts: dict[str, Any], name: str) -> str:
    """The name the tower's config class gives a convention field (the fact _vision_field_names: Muse-Glimmer's
    patch_temporal for temporal_patch_size, merge_size for spatial_merge_size)."""
    return str((facts.get("_vision_field_names") or {}).get(name, name))


def _kv_width(f: Fields, qd: int) -> int:
    """The width of a tower's k and of its v: qd, or qd x num_key_value_heads / heads where the tower writes fewer
    K/V heads than query heads (the fused qkv is q + 2 x that wide)."""
    if not f.has("num_key_value_heads"):
        return qd
    heads = f.int("num_attention_heads", "num_heads")
    kv = f.int("num_key_value_heads")
    if kv > heads or heads % kv or qd % heads:
        raise f.err("num_key_value_heads", f"{kv} does not divide the tower's {heads} heads")
    return qd // heads * kv


def _check_heads(f: Fields, h: int, written: set[str]) -> None:
    """The head count sizes nothing in a tower whose q / k / v / o are h x h; a written head_dim that makes them
    another width would be counted wrong: one line naming it (`written`: the keys the config itself gives)."""
    heads = next((k for k in ("num_attention_heads", "num_heads", "attention_heads", "vt_num_attention_heads")
                  if k in written and f.has(k)), None)
    if heads is None or "head_dim" not in written or not f.has("head_dim"):
        return
    n, d = f.int(heads), f.int("head_dim")
    if n * d != h:
        raise f.err("head_dim", f"{d} x {n} heads = {n * d} differs from the tower's width {h}: attention "
                                "projections of another width are not counted")


def _pair(f: Fields, name: str, default: int) -> tuple[int, int]:
    """A size given once or as [height, width] (the HF InternVL tower's image_size and patch_size)."""
    value = f.cfg.get(name)
    if value is None:
        return default, default
    if isinstance(value, list):
        pair = f.int_list(name, minimum=1) or []
        if len(pair) != 2:
            raise f.err(name, f"must be one integer or [height, width], got {len(pair)} entries")
        return pair[0], pair[1]
    n = f.int(name)
    return n, n


def _learned_table(f: Fields, gated: bool) -> bool:
    """Whether the tower carries a learned absolute position table sized by image_size (the ViT / CLIP / SigLIP
    convention): not a gated tower (Pixtral), one that writes depth (the Qwen-VL lineage) or a RoPE base (Pixtral,
    Gemma-4's), all rotary, nor one that switches the table off (use_absolute_position_embeddings false)."""
    if gated or f.has("depth") or f.has("rope_theta") or f.has("rope_parameters"):
        return False
    return f.bool("use_absolute_position_embeddings", True)


def _mlp_into_text(width: int, out: int, bias: bool) -> int:
    """Two linears width -> out -> out (the LLaVA-style projector MLP), with their biases where `bias`."""
    return width * out + out * out + (2 * out if bias else 0)


def _sub_config(wrapper: Fields, key: str, defaults: dict[str, Any]) -> Fields:
    """A projector's own config object of the wrapper (BLIP-2's qformer_config, Idefics2's perceiver_config),
    its config class's defaults (the fact's values) where it leaves a field out."""
    sub = wrapper.cfg.get(key)
    if sub is None:
        sub = {}
    if not isinstance(sub, dict):
        raise wrapper.err(key, f"must be a JSON object, got {type(sub).__name__}")
    return Fields({**defaults, **sub}, wrapper.origin, prefix=f"{key}.")


def _qformer(wrapper: Fields, h: int, text_hidden: int, spec: dict[str, Any]) -> int:
    """Blip2QFormerModel and what sits around it (modeling_blip_2.py): num_query_tokens learned queries of the
    Q-Former's width q; a LayerNorm; per layer a BERT self-attention (query / key / value / dense, biased, and a
    LayerNorm), a cross-attention to the tower's output on every cross_attention_frequency-th layer from the first
    (key / value from the tower's width h: Blip2Config sets encoder_hidden_size to it), intermediate_query /
    output_query (biased, a LayerNorm), and the text branch's own intermediate / output where
    use_qformer_text_input; then language_projection, one biased linear q -> the text width. Under the fact's
    text_embeddings (InstructBlipQFormerModel) the Q-Former embeds the instruction itself: word_embeddings
    (vocab_size x q), position_embeddings (max_position_embeddings x q) and a LayerNorm in place of BLIP-2's lone
    LayerNorm, and every layer builds the text branch's intermediate / output (the config has no switch for it)."""
    q_cfg = _sub_config(wrapper, str(spec.get("field", "qformer_config")), spec.get("defaults") or {})
    q = q_cfg.int("hidden_size")
    inter = q_cfg.int("intermediate_size")
    layers = q_cfg.int("num_hidden_layers", maximum=1024)
    every = q_cfg.int("cross_attention_frequency", maximum=1024)
    queries = wrapper.int("num_query_tokens", default=int(spec.get("num_query_tokens", 32)))
    attn = 4 * (q * q + q) + 2 * q
    cross = 2 * (q * q + q) + 2 * (h * q + q) + 2 * q
    ffn = q * inter + inter + inter * q + q + 2 * q
    embeds_text = bool(spec.get("text_embeddings"))
    text_ffn = ffn if embeds_text or q_cfg.bool("use_qformer_text_input") else 0
    embeddings = 2 * q  # Blip2QFormerModel's LayerNorm
    if embeds_text:
        embeddings += (q_cfg.int("vocab_size") + q_cfg.int("max_position_embeddings")) * q
    stack = sum(attn + (cross if i % every == 0 else 0) + ffn + text_ffn for i in range(layers))
    return queries * q + embeddings + stack + q * text_hidden + text_hidden


def _pooling_adapter(wrapper: Fields, text_hidden: int, spec: dict[str, Any], notes: list[str]) -> int:
    """Molmo2Adapter (modeling_molmo2.py), the wrapper's own config object `field`: image_pooling_2d, an attention
    whose q / k / v read the tower outputs of vision_feature_layer concatenated (hidden_size x its length) into
    heads x head_dim, o back to hidden_size, all biased under attention_bias; image_projector, gate / up
    hidden_size -> intermediate_size (biased under mlp_bias) and a bias-free down into text_hidden_size."""
    a = _sub_config(wrapper, str(spec["field"]), spec.get("defaults") or {})
    fed = a.cfg.get("vision_feature_layer")
    if not isinstance(fed, list) or not fed or not all(isinstance(i, int) and not isinstance(i, bool) for i in fed):
        raise a.err("vision_feature_layer", "missing or not a list of layer indices (their outputs, concatenated, "
                                            "size the pooling attention's input)")
    width = a.int("hidden_size")
    heads = a.int("num_attention_heads")
    kv = a.int("num_key_value_heads", default=heads)
    d = a.int("head_dim", default=width // heads)
    inp = width * len(fed)
    attn = inp * heads * d + 2 * inp * kv * d + heads * d * width
    if a.bool("attention_bias"):
        attn += heads * d + 2 * kv * d + width
    inter = a.int("intermediate_size")
    out = a.int("text_hidden_size")
    if out != text_hidden:  # the class builds it so; the merged features would not fit the text width
        notes.append(f"{a.prefix}text_hidden_size: {out} is not the language model's hidden size {text_hidden}; "
                     "the projector is counted as the class builds it")
    return attn + 2 * width * inter + (2 * inter if a.bool("mlp_bias") else 0) + inter * out


def _perceiver(wrapper: Fields, h: int, text_hidden: int, text_inter: int | None, spec: dict[str, Any]) -> int:
    """Idefics2Connector (modeling_idefics2.py): modality_projection, a bias-free gated MLP from the tower's width h
    through the text model's intermediate_size into the text width; then the perceiver resampler at the text width
    (Idefics2Config sets the perceiver's hidden_size to the text's): resampler_n_latents learned latents, per layer
    three RMSNorms (latents, context, post-attention), bias-free GQA of resampler_n_heads x resampler_head_dim
    with num_key_value_heads K/V heads, a bias-free gated MLP of 4 x the width; a closing RMSNorm."""
    if text_inter is None:
        raise wrapper.err("text_config", "intermediate_size: missing (the connector's modality projection runs "
                                         "through it)")
    p = _sub_config(wrapper, str(spec.get("field", "perceiver_config")), spec.get("defaults") or {})
    d = text_hidden
    latents = p.int("resampler_n_latents")
    depth = p.int("resampler_depth", maximum=1024)
    heads, head_dim = p.int("resampler_n_heads"), p.int("resampler_head_dim")
    kv = p.int("num_key_value_heads")
    if heads % kv:
        raise p.err("num_key_value_heads", f"{kv} does not divide resampler_n_heads ({heads})")
    attn = d * heads * head_dim + 2 * d * kv * head_dim + heads * head_dim * d
    layer = 3 * d + attn + 3 * d * 4 * d
    modality = 2 * h * text_inter + text_inter * text_hidden  # gate / up from h, down into the text width
    return modality + latents * d + depth * layer + d


def _projector(f: Fields, wrapper: Fields, h: int, norm: int, text_hidden: int, facts: dict[str, Any],
               notes: list[str], text_inter: int | None = None) -> int:
    """Parameters from the tower's width `h` into the text width: the module docstring's projector
    conventions (one linear; a patch merger MLP; the family facts' two-linear MLPs)."""
    c = f.cfg
    if facts.get("_vision_projector_qformer"):
        return _qformer(wrapper, h, text_hidden, facts["_vision_projector_qformer"])
    if facts.get("_vision_projector_perceiver"):
        return _perceiver(wrapper, h, text_hidden, text_inter, facts["_vision_projector_perceiver"])
    if facts.get("_vision_projector_query_cross_attention"):
        # AriaProjector: a learned query table of max(projector_patch_to_query_dict) rows x h; AriaCrossAttention's
        # bias-free q / k / v (h x h), an nn.MultiheadAttention (biased in_proj of 3h, biased out_proj), a biased
        # linear and two LayerNorms (queries, keys / values); the projector's LayerNorm; AriaProjectorMLP linear_in
        # h -> text width and linear_out, no biases
        table = wrapper.cfg.get("projector_patch_to_query_dict")
        if not isinstance(table, dict) or not table:
            raise wrapper.err("projector_patch_to_query_dict", "missing or empty (its largest value is the rows of "
                                                               "the projector's learned query table)")
        rows = max(wrapper.check_int(f"projector_patch_to_query_dict.{k}", v, 1, 2**20) for k, v in table.items())
        cross = 3 * h * h + (3 * h * h + 3 * h) + (h * h + h) + (h * h + h) + 2 * 2 * h
        return rows * h + cross + 2 * h + h * text_hidden + text_hidden * text_hidden
    if facts.get("_vision_projector_pooling_attention"):
        return _pooling_adapter(wrapper, text_hidden, facts["_vision_projector_pooling_attention"], notes)
    conv_merger = facts.get("_vision_projector_conv_merger")
    if isinstance(conv_merger, dict):
        # EVA2-CLIP's projector (GLM-4V's, CogVLM2's EVA2CLIPModel): conv, a biased Conv2d kernel x kernel (stride
        # kernel) from h into the text width (`into: text`) or the tower's own (`into: tower`); linear_proj from
        # it into the text width, then the merger's norm and gated MLP through the wrapper's field `through`; boi /
        # eoi, one text-width vector each, around the image's tokens
        kernel = int(conv_merger["kernel"])
        conv_out = text_hidden if conv_merger["into"] == "text" else h
        ctx = wrapper.int(str(conv_merger["through"]))
        return _conv_merger(h, kernel, conv_out, text_hidden, ctx) + 2 * text_hidden
    if conv_merger:
        # GLM-4.1V: downsample, a biased Conv2d m x m from h into out_hidden_size; then the merger
        out = f.int("out_hidden_size")
        # GlmOcrVisionPatchMerger's context_dim is out_hidden_size x in_channels (the fact), not intermediate_size
        ctx = out * f.int("in_channels", default=3) if conv_merger == "out_x_channels" else f.int("intermediate_size")
        return _conv_merger(h, f.int("spatial_merge_size"), out, out, ctx)
    downsample = facts.get("_vision_projector_conv_downsample")
    if downsample:
        # Step3p7VisionModel's downsampler1 / downsampler2, biased 3 x 3 Conv2d h -> 2h -> 4h, then
        # multi_modal_projector, one linear 4h -> the text width (biased under the wrapper's projector_bias). The
        # dict form {kernels: [FIELD or N, N], rms_norms, newline, text_vectors} (HunYuanVLVisionPatchMerger): the
        # two kernels' sizes, an RMSNorm of h before and of the text width after, one learned 4h vector
        # (image_newline) and text_vectors learned text-width ones (image_begin / end / sep)
        spec = downsample if isinstance(downsample, dict) else {}
        k1, k2 = (v if isinstance(v, int) else f.int(str(v)) for v in spec.get("kernels", (3, 3)))
        convs = k1 * k1 * h * 2 * h + 2 * h + k2 * k2 * 2 * h * 4 * h + 4 * h
        extra = (h + text_hidden if spec.get("rms_norms") else 0) + (4 * h if spec.get("newline") else 0)
        extra += int(spec.get("text_vectors", 0)) * text_hidden
        return convs + 4 * h * text_hidden + (text_hidden if wrapper.bool("projector_bias", True) else 0) + extra
    paths = facts.get("_vision_projector_shuffle_paths")
    if paths:
        return _shuffle_paths(f, wrapper, h, text_hidden, paths)
    if facts.get("_vision_projector_bare_linear"):
        # Gemma4MultimodalEmbedder: a scale-free RMSNorm (no weight), one bias-free linear into the text width
        return h * f.int("out_hidden_size", "text_hidden_size", default=text_hidden)
    if facts.get("_vision_hidden_is_output"):
        out = f.int("hidden_size")
    elif facts.get("_vision_projector_biased_linear"):  # into projection_dim (PaliGemma writes it on both)
        out = f.int("projection_dim", default=wrapper.int("projection_dim", default=text_hidden))
    else:
        out = f.int("out_hidden_size", "text_hidden_size", default=text_hidden)
    merge_field = _field(facts, "spatial_merge_size")
    merge = f.int(merge_field, default=wrapper.int(merge_field, default=1))
    if isinstance(c.get("merge_kernel_size"), list):
        merge = f.int_list("merge_kernel_size")[0]  # type: ignore[index]
    pb = wrapper.bool("multimodal_projector_bias", True)
    fixed = facts.get("_vision_projector_bias")
    if fixed is not None:  # the projector's biases are fixed in its code: a written switch is not read by the class
        if wrapper.has("multimodal_projector_bias") and pb != bool(fixed):
            notes.append(f"multimodal_projector_bias: {pb} is not read by {wrapper.cfg.get('model_type')}'s "
                         f"projector, whose linears {'carry' if fixed else 'carry no'} biases")
        pb = bool(fixed)
    if facts.get("_vision_projector_mlp2"):
        mlp2 = facts["_vision_projector_mlp2"]
        taken = {k: v for k, v in ((mlp2.get("defaults") or {}) if isinstance(mlp2, dict) else {}).items()
                 if not wrapper.has(k)}
        if taken:  # the wrapper class's defaults of the projector's fields, said where the config leaves them out
            notes.append(f"{', '.join(taken)}: not written; read as {wrapper.cfg.get('model_type')}'s default "
                         f"({', '.join(str(v) for v in taken.values())})")
            wrapper = Fields({**wrapper.cfg, **taken}, wrapper.origin, wrapper.prefix)
        if wrapper.has("downsample_ratio") and not f.has("spatial_merge_size"):  # pixel shuffle (InternVL)
            ratio = wrapper.number("downsample_ratio", minimum=1e-6, maximum=1.0)
            merge = round(1 / ratio)
            if abs(merge * ratio - 1) > 1e-9:
                raise wrapper.err("downsample_ratio", f"{ratio} is not 1 / an integer (the pixel shuffle's factor)")
        # a list: those layers' outputs are concatenated (VipLlavaConfig's attribute_map reads the older plural)
        fed = wrapper.cfg.get("vision_feature_layer", wrapper.cfg.get("vision_feature_layers"))
        wide = h * merge * merge * (len(fed) if isinstance(fed, list) and fed else 1)
        newline = out if facts.get("_vision_image_newline") else 0
        # a LayerNorm (weight and bias) over the merged width, or an RMSNorm (weight only) where the fact says rms
        norm_in = (wide if facts.get("_vision_projector_norm") == "rms" else 2 * wide) \
            if facts.get("_vision_projector_norm") else 0
        if isinstance(mlp2, dict) and mlp2.get("through") not in (None, "intermediate_size"):
            # the middle width is the wrapper's own field (Nemotron-Omni's projector_hidden_size)
            mid = wrapper.int(str(mlp2["through"]))
            bias = bool(mlp2.get("bias", pb))
            return norm_in + wide * mid + mid * out + ((mid + out) if bias else 0) + newline
        if isinstance(mlp2, dict) and mlp2.get("through") == "intermediate_size":
            # NVLM-D's mlp1: the first linear into the language model's intermediate_size, the second from it into
            # the text width; biased as the fact says (modeling_nvlm_d.py builds both bias-free, under no field)
            if text_inter is None:
                raise wrapper.err("intermediate_size", "missing in the language model's config (it sizes the "
                                                       "projector's middle layer)")
            bias = bool(mlp2.get("bias", pb))
            return norm_in + wide * text_inter + text_inter * out + ((text_inter + out) if bias else 0) + newline
        return norm_in + _mlp_into_text(wide, out, pb) + newline
    swiglu = facts.get("_vision_projector_swiglu")
    if swiglu:
        # AyaVisionMultiModalProjector: a pixel shuffle by the wrapper's downsample_factor d, a LayerNorm over h d^2,
        # linear_1 h d^2 -> alignment_intermediate_size A, SwiGLU halves it, linear_2 A / 2 -> the text width (both
        # biased); the fact holds the config class's defaults of d and A, read where the wrapper leaves them out
        d = wrapper.int("downsample_factor", default=int(swiglu["downsample_factor"]), maximum=64)
        wide_a = wrapper.int("alignment_intermediate_size", default=int(swiglu["alignment_intermediate_size"]))
        if wide_a % 2:
            raise wrapper.err("alignment_intermediate_size", f"{wide_a} is odd: SwiGLU splits it in two halves")
        for name in ("downsample_factor", "alignment_intermediate_size"):
            if not wrapper.has(name):
                notes.append(f"{name}: not written; read as {wrapper.cfg.get('model_type')}'s default "
                             f"({swiglu[name]}), which the config class writes no field for when it is unchanged")
        wide = h * d * d
        norm_in = 2 * wide if swiglu.get("layernorm", True) else 0  # Cohere2VisionMultiModalProjector has none
        return norm_in + wide * wide_a + wide_a + (wide_a // 2) * out + out
    if facts.get("_vision_projector_pixel_shuffle_mlp"):
        # Llama4VisionPixelShuffleMLP (the tower's vision_adapter): fc1 from the pixel-shuffled intermediate_size
        # into projector_input_dim and fc2 projector_output_dim square, no biases; then Llama4MultiModalProjector,
        # one bias-free linear vision_output_dim -> the text width
        return (f.int("intermediate_size") * f.int("projector_input_dim") + f.int("projector_output_dim") ** 2
                + f.int("vision_output_dim") * out)
    tokenizer = facts.get("_vision_projector_visual_tokenizer")
    if tokenizer:
        # Ovis2: the tower's patches (hidden_stride x hidden_stride merged) become soft visual tokens over a visual
        # vocabulary less its indicator tokens, embedded through a table of the whole vocabulary
        vocab = f.int(str(tokenizer["vocab"]))
        stride = f.int(str(tokenizer["stride"]), default=1, maximum=64)
        tokens = vocab - f.int(str(tokenizer["indicators"]), minimum=0, maximum=vocab - 1)
        return h * stride * stride * tokens + 2 * tokens + vocab * out
    resampler = facts.get("_vision_projector_resampler")
    if resampler:
        # Ernie4_5_VLMoeVariableResolutionResamplerModel: over s = h m^2 (the m x m merge), a spatial MLP (biased
        # s -> s twice, a LayerNorm over s) and a temporal one from s t (t frames merged; biased s t -> s, s -> s, a
        # LayerNorm), then a biased s -> text linear and an RMSNorm of the text width
        m = f.int(str(resampler["merge"]), maximum=64)
        t = f.int(str(resampler["temporal"]), maximum=64)
        s = h * m * m
        return (s * s + s) * 3 + (s * t * s + s) + 2 * (2 * s) + s * out + out + out
    merges = facts.get("_vision_projector_merge_mlps")
    if merges:
        # MiniCPMV4_6Merger: the wrapper's `times` field of DownsampleMLPs, each a LayerNorm over h x factor (the
        # class's fixed 4: two 2 x 2 merges), a biased linear h x factor square and one into h, the last into the
        # text width
        times = wrapper.int(str(merges["times"]), default=1, maximum=16)
        wide = h * int(merges["factor"])
        one = 2 * wide + wide * wide + wide
        return times * one + (times - 1) * (wide * h + h) + wide * out + out
    unshuffle = facts.get("_vision_projector_unshuffle_mlp")
    if unshuffle:
        # Lfm2VlMultiModalProjector: a pixel unshuffle by the wrapper's downsample_factor d, a LayerNorm over h d^2
        # (projector_use_layernorm), linear_1 h d^2 -> projector_hidden_size P, linear_2 P -> the text width, both
        # biased under projector_bias; the fact holds the config class's defaults of d and P, read in a note where
        # the wrapper leaves them out
        d = wrapper.int("downsample_factor", default=int(unshuffle["downsample_factor"]), maximum=64)
        mid = wrapper.int("projector_hidden_size", default=int(unshuffle["projector_hidden_size"]))
        for name in ("downsample_factor", "projector_hidden_size"):
            if not wrapper.has(name):
                notes.append(f"{name}: not written; read as {wrapper.cfg.get('model_type')}'s default "
                             f"({unshuffle[name]}), which the config class writes no field for when it is unchanged")
        wide = h * d * d
        bias = wrapper.bool("projector_bias", True)
        norm_in = 2 * wide if wrapper.bool("projector_use_layernorm", True) else 0
        return norm_in + wide * mid + mid * out + ((mid + out) if bias else 0)
    if facts.get("_vision_projector_shuffle_linear"):
        # Idefics3Connector: a pixel shuffle by the wrapper's scale_factor, then one bias-free linear
        factor = wrapper.int("scale_factor", maximum=64)
        return h * factor * factor * out
    if facts.get("_vision_projector_biased_linear"):
        return h * out + out  # PaliGemmaMultiModalProjector: one biased linear, no norm
    if facts.get("_vision_projector_patch_then_merge_mlp"):
        # MiniMaxM3VLMultiModalProjector: each patch through linear_1 h -> projector_hidden_size P and linear_2 P ->
        # the text width t, then m^2 neighbours grouped: merge_linear_1 from the wrapper's merged_hidden_size (t m^2,
        # checked) into P and merge_linear_2 P -> t; all biased
        mid = wrapper.int("projector_hidden_size")
        merged = wrapper.int("merged_hidden_size", default=text_hidden * merge * merge)
        if merged != text_hidden * merge * merge:
            raise wrapper.err("merged_hidden_size", f"{merged} is not the text width {text_hidden} x {merge}^2 = "
                                                    f"{text_hidden * merge * merge}, which the grouped patches are")
        return h * mid + mid + mid * text_hidden + text_hidden + merged * mid + mid + mid * text_hidden + text_hidden
    if facts.get("_vision_projector_adapter_mlp"):
        # MuseGlimmerVisionAdapter and vision_projection: fc1 from the wrapper's out_hidden_size (the pixel-shuffled
        # width h m^2, which the tower hands it) into projector_hidden_size P, fc2 P -> P, then one linear P -> the
        # text width, all bias-free; no norm carries weights
        wide = wrapper.int("out_hidden_size")
        if wide != h * merge * merge:
            raise wrapper.err("out_hidden_size", f"{wide} is not the tower's pixel-shuffled width {h} x {merge}^2 = "
                                                 f"{h * merge * merge}, which the adapter's fc1 reads")
        mid = wrapper.int("projector_hidden_size")
        return wide * mid + mid * mid + mid * text_hidden
    if facts.get("_vision_projector_mlp"):
        # a norm on the tower's output, a patch merger (h m^2 -> h, no bias) where patches merge, then the MLP
        # into the text width (Mistral3's projector)
        merger = h * merge * merge * h if merge > 1 else 0
        return norm + merger + _mlp_into_text(h, out, pb)
    if merge > 1:
        wide = h * merge * merge
        # the merger MLP's middle width: h m^2 (Qwen2-VL's PatchMerger) or a wrapper field the fact names
        width_field = facts.get("_vision_projector_merger_width")
        mid = wrapper.int(str(width_field)) if width_field else wide
        if facts.get("_vision_projector_layernorm"):  # a LayerNorm over an RMSNorm tower's patches (LFM3-VL)
            norm = 2 * h
        merger = norm + wide * mid + mid + mid * out + out
        mergers = 1 + len(f.int_list("deepstack_visual_indexes") or [])
        deep = (mergers - 1) * (wide * wide + wide + wide * out + out + 2 * wide)
        after = out * text_hidden + text_hidden if facts.get("_vision_projector_linear_after_merger") else 0
        return merger + deep + after
    return h * out + h  # one linear into the text width and a norm on its input


def _shuffle_paths(f: Fields, wrapper: Fields, h: int, text_hidden: int, spec: dict[str, Any]) -> int:
    """The fact _vision_projector_shuffle_paths (module docstring): pixel-shuffle paths with DeepStack mergers."""
    out = f.int("out_hidden_size")
    if out != text_hidden:
        raise f.err("out_hidden_size", f"{out} is not the text width {text_hidden}, which the connector's output is "
                                       "added into (no linear follows it)")
    factor = f.int("scale_factor", maximum=64)
    factors = [factor] + ([factor // 2] if f.bool(str(spec["fine"]), True) and factor >= 2 else [])
    deep = len(f.int_list("deepstack_visual_indexes") or [])
    total = 2 * h + 2 * 2 * out + out * out  # ln_in, ln_mid, ln_out, mlp_fc2
    for k in factors:
        wide = h * k * k
        total += wide * out + deep * (2 * wide + wide * out + out + out * out + out)
    router = wrapper.cfg.get(str(spec["router"]))
    if router is not None:
        d = wrapper.int(str(spec["router"]))
        total += h + 1 + 2 * h + h * d + d + d + 1
    return total


def _conv_merger(h: int, kernel: int, conv_out: int, out: int, ctx: int) -> int:
    """A biased Conv2d kernel x kernel from the tower's width h into conv_out, then a bias-free conv_out -> out
    linear, a LayerNorm over out and a bias-free gated MLP out -> ctx -> out (GLM-4V's GLU, GLM-4.1V's merger)."""
    return h * kernel * kernel * conv_out + conv_out + conv_out * out + 2 * out + 3 * out * ctx


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


def _whisper_audio(f: Fields, wrapper: Fields, text_hidden: int, facts: dict[str, Any]) -> tuple[int, int, int]:
    """(params, layers, width) of a Whisper-style audio encoder (the tower fact _audio_whisper: Qwen2AudioEncoder,
    VoxtralEncoder, AudioFlamingo3Encoder) and its projector (the wrapper's _audio_projector): conv1 Conv1d
    num_mel_bins -> d and conv2 d -> d, kernel 3 with biases; embed_positions, a max_source_positions x d table
    (frozen, but a parameter the checkpoint holds); per layer k_proj without bias, q / v / out_proj with bias, two
    LayerNorms, fc1 / fc2 with bias; the closing LayerNorm. `_audio_whisper: {rotary: true}` (GlmAsrEncoder): no
    position table (a rotary embedding, buffers only) and k / v over num_key_value_heads x d / heads (default: the
    heads). The projector: `linear`, one biased linear d -> the text width (Qwen2AudioMultiModalProjector);
    `stacked_mlp`, frames stacked to the encoder's intermediate_size, then two bias-free linears into the text
    width and through it (VoxtralMultiModalProjector); {stack_factor, hidden_size, projector_act,
    projector_ln_mid}: Ultravox's stacked SwiGLU projector (_stacked_swiglu), the values its config's defaults;
    {mlp2: ...}: two linears, _audio_mlp2."""
    d = f.int("d_model", "hidden_size")
    layers = f.int("encoder_layers", "num_hidden_layers", maximum=10_000)
    ffn = f.int("encoder_ffn_dim", "intermediate_size")
    mels = f.int("num_mel_bins")
    shape = facts.get("_audio_whisper")
    rotary = isinstance(shape, dict) and bool(shape.get("rotary"))
    if rotary:
        heads = f.int("encoder_attention_heads", "num_attention_heads")
        if d % heads:
            raise f.err("num_attention_heads", f"{heads} does not divide the width {d}")
        kv = f.int("num_key_value_heads", default=heads)
        attention = 2 * d * d + 2 * d * kv * (d // heads) + 2 * d + kv * (d // heads)  # q / o, k / v; q, o, v biases
        positions = 0
    else:
        attention = 4 * d * d + 3 * d
        positions = f.int("max_source_positions", maximum=10**7)
    layer = attention + 2 * 2 * d + d * ffn + ffn + ffn * d + d
    encoder = mels * 3 * d + d + d * 3 * d + d + positions * d + layers * layer + 2 * d
    kind = facts.get("_audio_projector")
    if kind == "linear":
        return encoder + d * text_hidden + text_hidden, layers, d
    if kind == "stacked_mlp":
        return encoder + ffn * text_hidden + text_hidden * text_hidden, layers, d
    if isinstance(kind, dict) and "stack_factor" in kind:
        return encoder + _stacked_swiglu(wrapper, d, text_hidden, kind), layers, d
    if isinstance(kind, dict) and "mlp2" in kind:
        return encoder + _audio_mlp2(wrapper, d, ffn, text_hidden, kind["mlp2"]), layers, d
    raise wrapper.err("model_type", f"{wrapper.cfg.get('model_type')!r}: its audio projector has no counting "
                                    "convention here; not counted rather than miscounted (drop audio_config to size "
                                    "the language model alone)")


def _audio_mlp2(wrapper: Fields, d: int, ffn: int, text_hidden: int, spec: dict[str, Any]) -> int:
    """Two linears from the encoder's frames into the text width: `source` d (AudioFlamingo3MultiModalProjector) or
    the encoder's intermediate_size, frames stacked to it (GlmAsrMultiModalProjector); the middle `widen` x the
    text width; biased unless the wrapper's `bias` field (its class default `bias_default`) is false."""
    width = {"width": d, "ffn": ffn}[str(spec["source"])]
    mid = int(spec.get("widen", 1)) * text_hidden
    bias_field = spec.get("bias")
    bias = wrapper.bool(bias_field, bool(spec.get("bias_default", True))) if bias_field else True
    return width * mid + mid * text_hidden + ((mid + text_hidden) if bias else 0)


def _tile_patches(f: Fields) -> int:
    """Tokens one tile of a tiled tower yields: its patches and the class token."""
    return (f.int("image_size") // f.int("patch_size")) ** 2 + 1


def _aspect_ratios(f: Fields) -> int:
    """max_aspect_ratio_id: the number of supported aspect ratios (MllamaVisionConfig's property)."""
    if f.has("max_aspect_ratio_id"):
        return f.int("max_aspect_ratio_id")
    ratios = f.cfg.get("supported_aspect_ratios")
    if not isinstance(ratios, list) or not ratios:
        raise f.err("supported_aspect_ratios", "missing or empty (required to size the tile position tables)")
    return len(ratios)


def _tiled_vit(f: Fields, text_hidden: int) -> tuple[int, int, int]:
    """(params, layers, width) of a tiled tower and its projector (the module docstring; MllamaVisionModel and
    MllamaForConditionalGeneration's multi_modal_projector)."""
    h = f.int("hidden_size")
    inter = f.int("intermediate_size")
    local = f.int("num_hidden_layers", maximum=10_000)
    global_ = f.int("num_global_layers", default=0, minimum=0, maximum=10_000)
    tiles = f.int("max_num_tiles")
    patch = f.int("patch_size")
    patches = _tile_patches(f)
    ratios = _aspect_ratios(f)
    layer = 4 * h * h + (h * inter + inter) + (inter * h + h) + 2 * 2 * h  # q/k/v/o, fc1, fc2, two LayerNorms
    gated = layer + 2  # gate_attn, gate_ffn
    patch_embed = f.int("num_channels", default=3) * patch * patch * h
    class_embed = h
    positions = 1 + patches * h + (ratios + 1) * tiles * patches * h  # gate, embedding, tile_embedding
    tile_embeds = 2 * ((ratios + 1) * tiles * h + 1)  # pre- and post-tile embeddings with their gates
    norms = 2 * 2 * h  # layernorm_pre, layernorm_post
    out = f.int("vision_output_dim", default=h)
    projector = out * text_hidden + text_hidden
    params = (local * layer + global_ * gated + patch_embed + class_embed + positions + tile_embeds + norms
              + projector)
    return params, local + global_, h


def image_tokens(raw: dict[str, Any], origin: str) -> int | None:
    """Tokens of one image a tiled tower hands the text model (max_num_tiles tiles of patches and a class
    token each); None without a tiled vision_config."""
    sub = raw.get("vision_config")
    if not isinstance(sub, dict) or sub.get("max_num_tiles") is None:
        return None
    f = Fields(sub, origin, prefix="vision_config.")
    return f.int("max_num_tiles") * _tile_patches(f)


def _shown_value(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def read_encoders(raw: dict[str, Any], text_hidden: int, origin: str, notes: list[str] | None = None,
                  facts: dict[str, Any] | None = None,
                  families: dict[str, dict[str, Any]] | None = None, known: bool = True,
                  text_inter: int | None = None) -> list[Encoder]:
    """The encoders a multimodal config declares; sizes read by convention are said in `notes`; `facts` are the
    wrapper family's _vision_* facts and `families` the family_defaults table, where a tower's own model_type
    finds the facts of its modeling code (the module docstring). `known`: the wrapper has a family line; without
    it or a line for the tower's own model_type, the tower's unread structural fields are named in a note
    (config/unread.py check_unread_tower)."""
    from solver.specs.config.embedders import encoder_free_vision, frame_linear_audio
    from solver.specs.config.named_towers import read_named_tower
    from solver.specs.config.unread import check_unread_tower

    notes = notes if notes is not None else []
    wrapper_facts = facts or {}
    families = families or {}
    out = []
    named = read_named_tower(raw, text_hidden, origin, notes, families)  # LLaVA's mm_vision_tower
    if named is not None:
        out.append(named)
    if wrapper_facts.get("_vision_patch_linear"):
        # no tower: the image's patches enter the text stack through one biased linear of patch_size^2 x
        # num_channels into the text width (Fuyu's vision_embed_tokens), sized by the wrapper's own fields
        w = Fields(raw, origin)
        patch_h, patch_w = _pair(w, "patch_size", 0)
        if not patch_h:
            raise w.err("patch_size", "missing (required to size the patch embedding into the text width)")
        channels = w.int("num_channels", default=3, maximum=64)
        out.append(Encoder("vision", channels * patch_h * patch_w * text_hidden + text_hidden, 0, text_hidden))
    for key in ENCODER_KEYS:
        sub = raw.get(key)
        if sub is None and key == "vision_config" and wrapper_facts.get("_vision_config_defaults") and named is None:
            # transformers builds the wrapper's default tower where none is written (SubConfigSpec's init_kwargs);
            # the language model alone is sized here, and said
            notes.append(f"{key}: not written; the language model alone is sized (transformers would build "
                         f"{raw.get('model_type')}'s default tower)")
        if sub is None and key == "audio_config" and wrapper_facts.get("_audio_config_type"):
            # transformers builds the wrapper's default audio tower where none is written (SubConfigSpec's
            # model_type): counted from that tower's class defaults (its _audio_config_defaults), and said
            sub = {"model_type": wrapper_facts["_audio_config_type"]}
            if not (families.get(sub["model_type"]) or {}).get("_audio_config_defaults"):
                raise Fields(raw, origin).err(key, f"not written: transformers builds {raw.get('model_type')}'s "
                                                   f"default audio tower ({sub['model_type']}), which has no counting "
                                                   "convention here; not counted rather than the language model "
                                                   "alone sized as the whole")
            notes.append(f"{key}: not written; read as {raw.get('model_type')}'s default audio tower "
                         f"({sub['model_type']}), which transformers builds")
        if sub is None or sub == "" or sub == []:
            continue
        if not isinstance(sub, dict):
            raise Fields(raw, origin).err(key, "must be an object")
        if "cls" in sub and isinstance(sub.get("params"), dict):
            # DeepSeek-VL / Janus: a tower class and its constructor's arguments (a timm model's name), not its sizes
            raise Fields(raw, origin).err(key, f"names a tower class ({_shown_value(sub['cls'])}) and its arguments "
                                               "(params) rather than the tower's sizes; not counted rather than "
                                               "miscounted (drop it to size the language model alone)")
        if isinstance(sub.get("architecture"), str):
            # transformers' TimmWrapperConfig: the tower is timm.create_model(architecture, **model_args); its
            # sizes are timm's registry entry, which no field here holds (FastVLM's fastvit_mci3, PerceptionLM's PE)
            raise Fields(raw, origin).err(f"{key}.architecture", f"{_shown_value(sub['architecture'])}: a timm "
                                          "model's name, whose sizes are timm's rather than the config's; not "
                                          "counted rather than miscounted (drop it to size the language model "
                                          "alone)")
        # a tower written empty is the wrapper's default one, of the model_type its default vision config names
        tower_type = str(sub.get("model_type") or ((wrapper_facts.get("_vision_config_defaults") or {})
                                                   .get("model_type") if key == "vision_config" else "") or "")
        own = families.get(tower_type) or {}
        facts = {**{k: v for k, v in own.items() if str(k).startswith(TOWER_FACTS)}, **wrapper_facts}
        # a written vision_config is built by its tower class (transformers passes the dict to it), so a field it
        # leaves out is that class's default (SiglipVisionConfig's image_size 224): the hub files are its diff
        # against them (PaliGemma's and LLaVA-OneVision's write vision_use_head false, which their wrappers'
        # default vision configs hold). The wrapper's default vision config (LlavaConfig's CLIP) only fills what
        # no class default of the tower is known for
        own_defaults = (own.get("_vision_config_defaults") or {}) if key == "vision_config" else \
            (own.get("_audio_config_defaults") or {}) if key == "audio_config" else {}
        wrapper_defaults = (wrapper_facts.get("_vision_config_defaults") or {}) if key == "vision_config" else {}
        defaults = {**wrapper_defaults, **own_defaults}
        taken = [k for k in defaults if k not in sub]
        # every key the tower reader looks up is recorded, so that what it never read can be named
        if facts.get("_vision_refused"):  # a tower the conventions cannot express and no fact yet describes
            raise Fields(raw, origin).err(key, f"{facts['_vision_refused']}; not counted rather than miscounted "
                                               "(drop it to size the language model alone)")
        if not set(sub) - {"model_type"} and not defaults and not facts.get("_audio_frame_linear"):
            # written empty (transformers' diff against the class's defaults): the tower is a default one whose
            # sizes no family line holds; read by convention it would fail on the first size it looks for
            raise Fields(raw, origin).err(key, f"written empty: the tower is {raw.get('model_type')!r}'s default "
                                               f"{tower_type or 'vision'} config, whose sizes shardplan does not hold; "
                                               "write them out")
        sub = ReadRecorder({**sub, **{k: defaults[k] for k in taken}})
        f = Fields(sub, origin, prefix=f"{key}.")
        if facts.get("_vision_encoder_free") and key == "vision_config":  # no tower (config/embedders.py)
            params, layers, h = encoder_free_vision(f, text_hidden, facts["_vision_encoder_free"])
        elif facts.get("_audio_frame_linear") and key == "audio_config":
            params, layers, h = frame_linear_audio(f, text_hidden, facts["_audio_frame_linear"])
        elif key == "audio_config":
            # an audio tower is counted only by its family's convention: the ViT conventions below would size a
            # Whisper encoder as patches and a position grid (Voxtral's, silently) or refuse it on image_size
            if not facts.get("_audio_whisper"):
                raise Fields(raw, origin).err(key, f"an audio encoder of model_type {tower_type or '(none)'!r} has no "
                                                   "counting convention here; not counted rather than miscounted "
                                                   "(drop it to size the language model alone)")
            params, layers, h = _whisper_audio(f, Fields(raw, origin), text_hidden, facts)
        elif sub.get("max_num_tiles") is not None:
            params, layers, h = _tiled_vit(f, text_hidden)
        else:
            params, layers, h = _vit(f, Fields(raw, origin), text_hidden, notes, facts, text_inter)
            _check_heads(f, h, set(sub) - set(taken))
            if not known and not any(str(k).startswith("_vision_projector") for k in facts):
                # a wrapper without a family line: its projector is the convention's, which its own may not be
                notes.append(f"{key}: the projector into the text width is read as the convention's one linear and "
                             f"a norm ({raw.get('model_type')!r} has no family facts: its own projector may differ)")
        for source, table in ((f"the {tower_type} tower's class defaults", own_defaults),
                              (f"{raw.get('model_type')}'s default vision config", wrapper_defaults)):
            read = [k for k in taken if k in sub.looked_up and k in table and (table is own_defaults
                                                                                or k not in own_defaults)]
            if read:
                notes.append(f"{key}.{', '.join(read)}: not written; read as {source} (a nested config is written "
                             "as its difference from that default)")
        check_unread_tower(f, sub, known or tower_type in families, notes, taken)
        out.append(Encoder("audio" if key.startswith("audio") else "vision", params, layers, h))
    return out
