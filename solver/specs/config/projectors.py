"""A vision tower's projector into the text width: by convention one linear or a patch merger, else the one
the wrapper family's _vision_projector_* fact names (attention_projectors.py holds those built of attention
layers).

By convention, from the tower config's fields:
  projector         spatial_merge_size / merge_kernel_size (patch merger: (h m^2)^2 + h m^2 x out) into
                    out_hidden_size | text_hidden_size | the text hidden size; deepstack_visual_indexes add
                    one merger each; a plain linear h -> text hidden otherwise; the family fact
                    _vision_projector_mlp: a norm, a patch merger h m^2 -> h and two linears into the text width
                    (Mistral3), spatial_merge_size read from the wrapper where the tower lacks it
The wrapper family's facts (family_defaults.yaml):
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
  _vision_image_newline     one learned text-width vector marks the end of image rows (LLaVA-NeXT image_newline)
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
  _vision_projector_conv_merger  a biased Conv2d m x m (spatial_merge_size) from h into out_hidden_size, then a
                            bias-free out x out linear, a LayerNorm over out and a bias-free gated MLP out ->
                            intermediate_size -> out (Glm4vVisionModel's downsample and merger); out_x_channels:
                            the gated MLP is out x in_channels wide (GlmOcrVisionPatchMerger's context_dim); another
                            string names the field of its width (Glm5NextVisionPatchMerger)
                            {kernel, into, through}: EVA2-CLIP's (GLM-4V's and CogVLM2's EVA2CLIPModel): a
                            biased Conv2d kernel x kernel into the text width (into: text) or the tower's (into:
                            tower), a bias-free linear from it into the text width, the LayerNorm and the gated MLP
                            through the wrapper's field `through` (ffn_hidden_size, intermediate_size), and boi /
                            eoi, one learned text-width vector each
  _vision_merger_norm       the patch merger's norm over h whatever the tower's norms are: layernorm (weight and
                            bias; LFM3-VL's projector over an RMSNorm tower), rms (weight only; HYV4VL's
                            before_rms over a LayerNorm tower) or none (Inkling2VisionMerger: two linears alone)
  _vision_image_newline     with a patch merger: one learned out_hidden_size vector ends each merged row
                            (HYV4VLVisionPatchMerger's image_newline; its Conv2d m x m h -> h m^2 and 1 x 1 Conv2d
                            h m^2 -> out hold the merger MLP's weights and biases)
  _vision_projector_linear_after_merger  the tower's own patch merger hands out_hidden_size to one more biased linear
                            into the text width (HyperCLOVAXVisionV2Model.projector)
  _vision_projector_shuffle_paths  {fine, router}: pixel-shuffle paths (GraniteDoclingConnector): a LayerNorm
                            over h; per path (scale_factor, and scale_factor / 2 where the tower's `fine` switch is
                            on) a bias-free linear h f^2 -> out_hidden_size and one DeepStack merger per
                            deepstack_visual_indexes entry (a LayerNorm over h f^2, biased h f^2 -> out and out ->
                            out); shared ln_mid, a bias-free out -> out and ln_out (LayerNorms); where the wrapper
                            writes the `router` width D, a density router (biased h -> 1, a LayerNorm over h, biased
                            h -> D -> 1). out_hidden_size must be the text width (no linear follows)
  _vision_projector_visual_tokenizer  {vocab, stride, indicators}: a visual tokenizer in place of a projector: a
                            bias-free head h stride^2 -> vocab - indicators (the tower's fields), a LayerNorm over
                            those, and a visual embedding table of vocab rows x the text width (Ovis2VisionModel's
                            head_linear / head_norm, Ovis2Model's visual_embeddings_table); width: {field, default},
                            the wrapper's field that sizes the table instead (Ovis2Config.hidden_size, 1536 left out)
  _vision_projector_resampler  {merge, temporal}: the tower's fields of the m x m spatial and t-frame temporal
                            merges; a spatial MLP over s = h m^2 (biased s -> s -> s, a LayerNorm), a temporal one
                            (biased s t -> s -> s, a LayerNorm), a biased s -> text linear and a text-width RMSNorm
                            (Ernie4_5_VLMoeVariableResolutionResamplerModel)
  _vision_projector_merge_mlps  {times, factor}: the wrapper's `times` field of merge MLPs, each a LayerNorm over
                            h x factor, a biased linear h x factor square and one into h, the last into the text
                            width (MiniCPMV4_6Merger's DownsampleMLPs, factor 4 fixed by the class)
  _vision_projector_merger_width  the field sizing the patch merger's middle layer (h m^2 -> FIELD -> text,
                            biased, after the tower-width norm) in place of h m^2, read from the tower config where it
                            writes FIELD, else the wrapper's (Cosmos3EdgePatchMerger: projector_hidden_size;
                            Inkling2VisionMerger: the tower's projection_hidden_dim)
  _vision_merger_bias       the tower field switching the patch merger's two linears' biases (Inkling2VisionConfig's
                            projector_bias); biased where no fact names one
  _vision_projector_conv_downsample  two biased 3 x 3 stride-2 Conv2d h -> 2h -> 4h, then one linear 4h -> the
                            text width, biased under the wrapper's projector_bias (Step3p7VisionModel's downsamplers
                            and Step3p7Model.multi_modal_projector); {kernels: [FIELD or N, N], rms_norms, newline,
                            text_vectors}: the kernels' sizes, RMSNorms of h before and the text width after, one
                            learned 4h vector, N learned text-width vectors (HunYuanVLVisionPatchMerger)
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
"""
from __future__ import annotations

from typing import Any

from solver.specs.config.attention_projectors import perceiver, pooling_adapter, qformer
from solver.specs.config.fields import Fields
from solver.specs.config.vit_towers import tower_field


def _mlp_into_text(width: int, out: int, bias: bool) -> int:
    """Two linears width -> out -> out (the LLaVA-style projector MLP), with their biases where `bias`."""
    return width * out + out * out + (2 * out if bias else 0)


def projector(f: Fields, wrapper: Fields, h: int, norm: int, text_hidden: int, facts: dict[str, Any],
               notes: list[str], text_inter: int | None = None) -> int:
    """Parameters from the tower's width `h` into the text width: the module docstring's projector
    conventions (one linear; a patch merger MLP; the family facts' two-linear MLPs)."""
    c = f.cfg
    if facts.get("_vision_projector_qformer"):
        return qformer(wrapper, h, text_hidden, facts["_vision_projector_qformer"])
    if facts.get("_vision_projector_perceiver"):
        return perceiver(wrapper, h, text_hidden, text_inter, facts["_vision_projector_perceiver"])
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
        return pooling_adapter(wrapper, text_hidden, facts["_vision_projector_pooling_attention"], notes)
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
        # a field's name: the gated MLP is that field wide (Glm5NextVisionPatchMerger's projection_intermediate_size)
        if conv_merger == "out_x_channels":
            ctx = out * f.int("in_channels", default=3)
        else:
            ctx = f.int(conv_merger if isinstance(conv_merger, str) else "intermediate_size")
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
    merge_field = tower_field(facts, "spatial_merge_size")
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
        width = out
        table = tokenizer.get("width")
        if table:  # the wrapper's field sizing the table (Ovis2Model: config.hidden_size, not the text model's)
            field, default = str(table["field"]), int(table["default"])
            width = wrapper.int(field, default=default)
            if not wrapper.has(field):
                notes.append(f"{field}: not written; the visual embedding table is read {default} wide (the "
                             "wrapper's class default)")
        return h * stride * stride * tokens + 2 * tokens + vocab * width
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
        mid = wide if not width_field else f.int(str(width_field)) if f.has(str(width_field)) \
            else wrapper.int(str(width_field))
        merger_norm = facts.get("_vision_merger_norm")
        if merger_norm is not None:  # the merger's own norm kind over the tower's patches (LFM3-VL's, HYV4VL's)
            norm = {"layernorm": 2 * h, "rms": h, "none": 0}[str(merger_norm)]
        bias_field = facts.get("_vision_merger_bias")
        merger_bias = f.bool(str(bias_field), True) if bias_field else True
        # a Conv2d m x m (stride m) h -> h m^2 holds h m^2 x h m^2 weights, a 1 x 1 Conv2d is a linear: HYV4VL's
        # convolutional merger is this MLP, its image_newline one out-wide vector more
        newline = out if facts.get("_vision_image_newline") else 0
        merger = norm + wide * mid + mid * out + ((mid + out) if merger_bias else 0) + newline
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
