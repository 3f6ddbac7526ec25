"""Rules the reader learnt from transformers 5.25.0's Inkling2VisionModel and Inkling2VisionMerger
(modeling_inkling2.py; stop 38, inkling2b; benchmarks/README.md). The class default (tests/data/configs_defaults/
inkling2.json) counts transformers' meta-device figure; each tower part is computed by hand below."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from solver.specs.dtypes import KV16
from solver.errors import InputError
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


# Inkling-2-Loop (Inkling2LoopTextConfig defaults): 24 stored layers 2304 wide, layers 6 .. 17 looped 3 times
LOOP_H, LOOP_RANK, LOOPED = 2304, 64, 18 - 6


def _loop() -> dict:
    return json.loads((DATA / "inkling2_loop_text.json").read_text())


def _stored_residuals(cfg: dict) -> list:
    """Each stored layer's BlockResidual, in stored order (a pass runs a stored layer again)."""
    spec = parse_model_config(cfg, "x")
    stored = {layer.shared.index: b for layer in spec.layers for b in layer.blocks if b.kind == "BlockResidual"}
    return [stored[i] for i in sorted(stored)]


def test_inkling2_loop_counts_transformers_figure_and_its_router_biases() -> None:
    # transformers 26,068,156,416 (text) and 26,386,412,544 (wrapper) + e_score_correction_bias 24 x 128 = 3,072
    assert count_params(parse_model_config(_loop(), "x")).total == 26_068_156_416 + 24 * 128
    wrapper = json.loads((DATA / "inkling2_loop.json").read_text())
    assert count_params(parse_model_config(wrapper, "x")).total == 26_386_412_544 + 24 * 128


def test_looped_section_runs_loop_num_passes_times_from_stored_layers() -> None:
    # 6 layers once, 12 layers 3 times, 6 layers once: 48 layers a token runs, 24 stored
    spec = parse_model_config(_loop(), "x")
    assert len(spec.layers) == 6 + 3 * 12 + 6 == 48
    assert [layer.shared.index for layer in spec.layers][6:42] == list(range(6, 18)) * 3


def test_passes_share_weights_so_the_count_is_the_stored_layers() -> None:
    one = _loop()
    one["loop_num_passes"] = 1
    assert count_params(parse_model_config(one, "x")).total == count_params(parse_model_config(_loop(), "x")).total


def test_message_gates_and_message_reads_sit_on_the_looped_layers_only() -> None:
    # four gates of down_proj 2h x 64 and forget / message 64 x h: 4 x 4 x 2304 x 64 = 2,359,296 a looped layer;
    # message_input's 4 queries read the previous pass's 12 / 6 = 2 states (its later block state and last hidden)
    stored = _stored_residuals(_loop())
    gated = [i for i, b in enumerate(stored) if b.gates]
    assert gated == list(range(6, 18))
    assert {b.gates * 4 * b.hidden * b.gate_rank for b in stored if b.gates} == {4 * 4 * LOOP_H * LOOP_RANK}
    assert all(b.reads[-1] == (4, 2) for b in stored[6:18])
    # 12 x 2,359,296 = 28,311,552 gate weights, 12 x 4 x 2304 = 110,592 message queries (transformers'
    # model.message_input)
    assert LOOPED * 4 * 4 * LOOP_H * LOOP_RANK == 28_311_552 and LOOPED * 4 * LOOP_H == 110_592


def test_each_pass_keeps_its_own_kv_cache() -> None:
    # full layers 5, 11, 17, 23: 11 and 17 run 3 passes, so 2 + 2 x 3 = 8 full-attention caches a token of
    # 2 x 8 x 128 x 2 B = 32,768 B (the sliding layers' caches stop at their window)
    spec = parse_model_config(_loop(), "x")
    blocks = [b for layer in spec.layers for b in layer.blocks if getattr(b, "window", None) is None]
    assert sum(b.state(KV16, 1).per_token_bytes for b in blocks) == 8 * 2 * 8 * 128 * 2


def test_loop_bounds_off_the_residual_blocks_are_refused_naming_them() -> None:
    cfg = _loop()
    cfg["loop_layer_index_start"] = 4
    with pytest.raises(InputError, match="loop_layer_index_start"):
        parse_model_config(cfg, "x")


def test_loop_section_past_the_stack_is_refused_naming_it() -> None:
    cfg = _loop()
    cfg["loop_layer_index_end"] = 30
    with pytest.raises(InputError, match="loop_layer_index_end|num_hidden_layers"):
        parse_model_config(cfg, "x")
