"""One vision tower's parameters, without its projector: ViT blocks, patch embedding, position table and norms.

Counted by convention from the encoder config's fields (ViT blocks: attention 4 x h^2, MLP 2 or 3 x h x
inter, norms; patch embedding; position table; the projector in projectors.py), not by family:
  layers            depth | num_hidden_layers | vt_num_hidden_layers
  width / MLP       hidden_size | vt_hidden_size, intermediate_size | vt_intermediate_size
  patch embedding   in_channels | num_channels | in_chans (3) x temporal_patch_size (1) x patch_size^2 x h (+ bias)
  positions         num_position_embeddings, else (image_size / patch_size)^2 when image_size is given
  gated MLP         hidden_act silu (pixtral) gated; GELU MLPs not gated
  biases / norms    LayerNorm (weight + bias) unless norm_type rmsnorm; linear biases unless attn_bias /
                    linear_bias false or the MLP is gated; the family fact _vision_linear_bias (family_defaults.yaml)
                    puts them on every linear of a gated tower too (Qwen2.5-VL)
Facts of a tower's modeling code that its config does not write (family_defaults.yaml, read as encoders.py
says):
  _vision_class_token       a class embedding (h) and one more position row (CLIP, InternViT)
  _vision_patch_bias        the patch convolution's bias (false: CLIP's Conv2d(bias=False))
  _vision_tower_norms       norms outside the layers (CLIP 2: pre_layrnorm, post_layernorm; InternViT 0); one by
                            default, none for a tower that writes depth (the Qwen-VL lineage)
  _vision_layer_scale       two learned per-channel scales per layer (InternViT ls1 / ls2)
  _vision_mean_pooling_field  FIELD (default true) makes the tower's final norm an Identity; false, a LayerNorm
                            (InternVLVisionModel's layernorm under use_mean_pooling)
  _vision_refused_switches  {FIELD: what}: the tower is refused, naming FIELD, where FIELD is true (RADIO's SwiGLU)
  _vision_video_patch_linear  FIELD: a second bias-free patch linear over FIELD frames, where FIELD is set (RADIO's
                            video_patch_projection)
  _vision_hidden_is_output  the tower is embed_dim wide and its hidden_size is the merger's output width
                            (Qwen2VLVisionConfig); an MLP width not written is mlp_ratio x the width (timm's convention)
  _vision_mlp_width         the field that sizes the blocks' MLP in place of intermediate_size (GLM-4.1V's
                            Glm4VisionMlp is out_hidden_size wide; its intermediate_size sizes the merger)
  _vision_qkv_bias          the field that switches the q / k / v (or fused qkv) biases alone, the other linears
                            keeping the tower's (GLM-4.1V's attention_bias; InternVL's, under _vision_linear_bias)
  _vision_learned_positions a learned (image_size / patch_size)^2-row table though the tower writes depth
                            (Glm4vVisionEmbeddings, interpolated to the image at run time)
  _vision_towers            N: the wrapper builds N towers from the one vision_config, each with its own weights
                            (Video-LLaVA's image_tower and video_tower), one projector
  _vision_patch_2d          the patch embedding is a Conv2d: a temporal_patch_size the tower config writes is the
                            processor's and sizes no weight (PaddleOCR-VL's SigLIP-NaViT), said in a note
  _vision_gated_mlp         the blocks' MLP is gated (gate / up / down) whatever its activation, under the gated
                            tower's conventions (RMSNorms, no biases, a bias-free patch embedding): Gemma-4's GELU MLP
  _vision_norms_per_layer   norms per block (Gemma-4's 4: before and after attention and MLP); 2 otherwise
  _vision_qk_norm: head     one q and one k RMSNorm of head_dim per block, shared by the heads (Gemma-4); head_dim
                            is the width over the heads where the tower writes none (LFM3-VL)
  _vision_conv_layers       FIELD: the tower's layer_types marks "conv" layers whose mixer is a gated short
                            convolution in place of attention: in_proj h -> 3h, a depthwise FIELD x FIELD Conv2d and
                            out_proj h -> h, bias-free (LFM3-VL's Lfm3VlVisionShortConv); every other entry must be
                            full_attention, and a tower without layer_types is refused naming it
  _vision_window_merger     FIELD: the k x k window (FIELD) of a window-attention merger inside the tower: one
                            more attention and its norm, a LayerNorm over h k^2, a biased MLP h k^2 -> inter k^2 -> h
                            (MiniCPMV4_6ViTWindowAttentionMerger)
  _vision_class_position    the class token carries its own learned position vector (h) beside a position table
                            whose rows are all patches' (Inkling2VisionEmbeddings' cls_position_embedding)
  _vision_class_rotary      the class token carries its own learned rotary frequencies, head_dim / 2 of them
                            (RiceViT's class_pos_emb in LLaVA-OneVision-1.5), beside _vision_class_token's embedding
  _vision_axial_positions   the field counting the rows of each of two learned tables, one per image axis, summed
                            per patch (Gemma-4's position_embedding_size: 2 x FIELD x h)
  _vision_position_rows     the field counting the learned table's rows (Siglip2's num_patches: a square grid
                            resized to each image), in place of (image_size / patch_size)^2; {edge: FIELD,
                            extra: N}: (FIELD / patch_size)^2 + N rows (HunYuanVL's max_image_size grid, a class row);
                            extra_fields: [FIELD...] adds the rows those fields count (RADIO's cls / register tokens)
  _vision_position_grid     the two fields giving a learned 2D table's height and width in rows (Kimi-K2.5's
                            pos_emb_height x pos_emb_width; MoonViT's init_pos_emb_height x width by convention)
  _vision_field_names        {convention field: the class's name}: a tower class that spells temporal_patch_size
                            or spatial_merge_size otherwise (MuseGlimmerVisionConfig's patch_temporal, merge_size)
Learned 2D position tables written as init_pos_emb_height x init_pos_emb_width (MoonViT) count that many rows.
A tower with a learned table by convention (not gated, no depth, no RoPE base, use_absolute_position_embeddings
not false) needs image_size, written or from a default vision config (the tower class's: SiglipVisionConfig's
224), else it is refused; image_size and patch_size may be [height, width] (the HF InternVL tower). Read by field
too: use_mask_token (one learned row), layer_scale_init_value > 0 (two per-channel scales per layer), use_qk_norm,
vision_use_head (SigLIP's attention-pooling head: probe, MultiheadAttention, LayerNorm, MLP); a written head_dim
that is not the width over the heads is refused (config/unread.py check_unread_tower holds the other refusals).
A tower with qk_normalization (InternViT-6B) carries a q and a k norm of h each per layer.
Checked exactly against the Gemma-3 SigLIP towers (keras-hub presets, facts/model_configs/SOURCES.md); for
the others the count follows these conventions and is reported as its own module.
"""
from __future__ import annotations

from typing import Any

from solver.specs.config.fields import Fields


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
    else:  # the ViT convention, said as the dense FFN says its own (config/ffns.py dense_width)
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
    # a tower whose q / k / v biases follow their own field, the other linears the tower's (GLM-4.1V's
    # attention_bias on a bias-free fused qkv and proj; InternVL's on q / k / v beside a biased projection and MLP)
    if facts.get("_vision_qkv_bias"):
        attn += (qd + 2 * kd) * (int(f.bool(str(facts["_vision_qkv_bias"]))) - int(bias))
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
    temporal = f.int(tower_field(facts, "temporal_patch_size"), default=1)
    if facts.get("_vision_patch_2d") and temporal != 1:
        # a Conv2d patch embedding: the field is the image processor's (frames stacked per patch), not the tower's
        notes.append(f"{f.prefix}temporal_patch_size: {temporal} is the image processor's; the tower's patch "
                     "embedding is a Conv2d over one frame, counted without it")
        temporal = 1
    patch_h, patch_w = size_pair(f, "patch_size", 14)
    patch_bias = not gated and c.get("patch_embed_proj_bias") is not False
    if facts.get("_vision_patch_bias") is not None:
        patch_bias = bool(facts["_vision_patch_bias"])
    patch_embed = channels * temporal * patch_h * patch_w * h + (h if patch_bias else 0)
    video = facts.get("_vision_video_patch_linear")
    if video and f.has(str(video)):  # a second bias-free patch linear over FIELD frames (RADIO's video_patch_projection)
        patch_embed += f.int(str(video), maximum=64) * channels * patch_h * patch_w * h
    cls = 1 if facts.get("_vision_class_token") else 0
    positions = cls * h  # the class embedding
    if facts.get("_vision_class_position"):  # the class token's own position vector, not a row of the table
        positions += h
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
        image_h, image_w = size_pair(f, "image_size", 0)
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
        kh, kw = size_pair(f, str(facts["_vision_window_merger"]), 0)
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


def tower_field(facts: dict[str, Any], name: str) -> str:
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


HEAD_FIELDS = ("num_attention_heads", "num_heads", "attention_heads", "vt_num_attention_heads")


def tower_heads(f: Fields) -> int:
    """The tower's attention heads where its config writes them (0: none written), which an engine splitting the
    tower over its TP group must divide (weights.split_degree)."""
    name = next((k for k in HEAD_FIELDS if f.has(k)), None)
    return f.int(name) if name else 0


def check_heads(f: Fields, h: int, written: set[str]) -> None:
    """The head count sizes nothing in a tower whose q / k / v / o are h x h; a written head_dim that makes them
    another width would be counted wrong: one line naming it (`written`: the keys the config itself gives)."""
    heads = next((k for k in HEAD_FIELDS if k in written and f.has(k)), None)
    if heads is None or "head_dim" not in written or not f.has("head_dim"):
        return
    n, d = f.int(heads), f.int("head_dim")
    if n * d != h:
        raise f.err("head_dim", f"{d} x {n} heads = {n * d} differs from the tower's width {h}: attention "
                                "projections of another width are not counted")


def size_pair(f: Fields, name: str, default: int) -> tuple[int, int]:
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
