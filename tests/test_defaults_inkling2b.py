"""Rules the reader learnt from transformers 5.25.0's Inkling2VisionModel and Inkling2VisionMerger
(modeling_inkling2.py; stop 38, inkling2b; benchmarks/README.md). The class default (tests/data/configs_defaults/
inkling2.json) counts transformers' meta-device figure; each tower part is computed by hand below."""
from __future__ import annotations

import json
from pathlib import Path

from solver.estimate.params import count_params
from solver.specs.config.read import parse_model_config

DATA = Path(__file__).parent / "data" / "configs_defaults"

H, INTER, LAYERS, TEXT = 1024, 4096, 23, 4608
# one encoder layer: biased q / k / v / out 4 x (1024^2 + 1024) = 4,198,400; biased fc1 / fc2 2 x 1024 x 4096 + 4096
# + 1024 = 8,393,728; two LayerNorms 2 x 2048 = 4,096; lambda_1 / lambda_2 2 x 1024 = 2,048: 12,598,272
LAYER = 4 * (H * H + H) + 2 * H * INTER + INTER + H + 2 * 2 * H + 2 * H
# embeddings: a bias-free patch linear 3 x 20^2 x 1024 = 1,228,800, a 32^2-row grid 1,048,576, the class embedding
# and its own position vector 2 x 1024: 2,279,424; pre_layernorm 2,048
EMBEDDINGS = 3 * 20 * 20 * H + 32 * 32 * H + 2 * H
# the merger: bias-free, no norm, 2^2 x 1024 -> projection_hidden_dim 4096 -> text 4608: 16,777,216 + 18,874,368
MERGER = 4 * H * 4096 + 4096 * TEXT
TOWER = LAYERS * LAYER + EMBEDDINGS + 2 * H + MERGER


def _raw() -> dict:
    return json.loads((DATA / "inkling2.json").read_text())


def _vision(cfg: dict) -> int:
    return count_params(parse_model_config(cfg, "x")).by_name()["vision"]


def test_inkling2_tower_counts_transformers_figure() -> None:
    # 23 x 12,598,272 + 2,279,424 + 2,048 + 35,651,584 = 327,693,312 (transformers' model.vision_tower)
    assert _vision(_raw()) == TOWER == 327_693_312


def test_inkling2_wrapper_counts_transformers_figure_and_its_router_biases() -> None:
    # transformers 594,046,172,160 parameters + the routers' e_score_correction_bias buffers 48 x 384 = 18,432
    assert count_params(parse_model_config(_raw(), "x")).total == 594_046_172_160 + 48 * 384


def test_position_table_holds_posemb_grid_size_squared_rows() -> None:
    # a 16-side grid: (32^2 - 16^2) x 1024 = 786,432 fewer; the class token's vector is not a row of it
    cfg = _raw()
    cfg["vision_config"]["posemb_grid_size"] = 16
    assert _vision(cfg) == TOWER - (32 * 32 - 16 * 16) * H


def test_merger_middle_width_is_the_towers_projection_hidden_dim() -> None:
    # 2048 wide: 2,048 x (4,096 + 4,608) = 17,825,792 fewer
    cfg = _raw()
    cfg["vision_config"]["projection_hidden_dim"] = 2048
    assert _vision(cfg) == TOWER - 2048 * (4 * H + TEXT)


def test_projector_bias_adds_the_mergers_two_biases() -> None:
    # linear_1's 4,096 and linear_2's 4,608
    cfg = _raw()
    cfg["vision_config"]["projector_bias"] = True
    assert _vision(cfg) == TOWER + 4096 + TEXT


def test_layer_scales_are_built_whatever_layer_scale_init_value_says() -> None:
    # Inkling2VisionEncoderLayer always holds lambda_1 / lambda_2 (the value only initialises them): a zero keeps
    # the 23 x 2 x 1024 = 47,104 scales
    cfg = _raw()
    cfg["vision_config"]["layer_scale_init_value"] = 0.0
    assert _vision(cfg) == TOWER
