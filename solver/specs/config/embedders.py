"""Encoder-free multimodal inputs: raw pixels or waveform frames projected into the text width with no tower
(Gemma-4-unified's Gemma4UnifiedVisionEmbedder and its audio Gemma4UnifiedMultimodalEmbedder, transformers 5.25.0).
Keyed by the sub-config's own model_type in family_defaults.yaml; the facts name the fields that size each tensor.

  _vision_encoder_free {merge, width, position_rows, out}: a LayerNorm over one merged RGB patch ((patch_size x
      merge)^2 x 3), a biased dense into `width`, a LayerNorm, a factorized position table of `position_rows` x 2
      axes x `width`, a LayerNorm, then a scale-free RMSNorm and a bias-free linear `out` -> the text width; `out`
      must equal `width` (the linear reads the dense's output)
  _audio_frame_linear {field, default}: a scale-free RMSNorm and a bias-free linear from one waveform frame of
      `field` samples into the text width
"""
from __future__ import annotations

from typing import Any

from solver.specs.config.fields import Fields

RGB = 3  # the embedder flattens three colour channels per pixel (no channel field in the config)


def encoder_free_vision(f: Fields, text_hidden: int, spec: dict[str, Any]) -> tuple[int, int, int]:
    """(params, layers, width) of an encoder-free patch embedder (the fact _vision_encoder_free)."""
    merged = f.int("patch_size") * f.int(str(spec["merge"]))
    patch = merged * merged * RGB
    width = f.int(str(spec["width"]))
    out = f.int(str(spec["out"]))
    if out != width:
        raise f.err(str(spec["out"]), f"{out} but the patch dense is {spec['width']} {width} wide: the projection "
                                      "into the text width reads the dense's output, so the two must match")
    rows = f.int(str(spec["position_rows"]), maximum=10**7)
    layer_norms = 2 * patch + 2 * 2 * width
    return layer_norms + patch * width + width + rows * 2 * width + out * text_hidden, 0, width


def frame_linear_audio(f: Fields, text_hidden: int, spec: dict[str, Any]) -> tuple[int, int, int]:
    """(params, layers, width) of raw waveform frames projected by one bias-free linear (_audio_frame_linear)."""
    samples = f.int(str(spec["field"]), default=int(spec["default"]))
    return samples * text_hidden, 0, samples
