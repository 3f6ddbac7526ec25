"""Tiled vision towers: an image cut into tiles, each run through the tower, for the text model's
cross-attention layers.

A tiled tower (the config writes max_num_tiles: Mllama's MllamaVisionModel) is counted tensor by tensor as that
modeling code builds it (`tiled_vit`): a bias-free patch Conv2d, a class embedding, a gated position table of
(image_size / patch_size)^2 + 1 rows with its per-aspect-ratio tile table, gated pre- and post-tile embeddings,
LayerNorms before and after, num_hidden_layers plain ViT layers (bias-free attention, biased GELU MLP) and
num_global_layers gated ones (two scalar gates each), and one biased linear from vision_output_dim into the
text width. Its output per image, max_num_tiles x ((image_size / patch_size)^2 + 1) tokens, is what the text
model's cross-attention layers attend to (`image_tokens`).
"""
from __future__ import annotations

from typing import Any

from solver.specs.config.fields import Fields


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


def tiled_vit(f: Fields, text_hidden: int) -> tuple[int, int, int]:
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
