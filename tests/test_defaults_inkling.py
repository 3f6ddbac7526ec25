"""Rules the reader learnt from transformers 5.25.0's class-default Inkling-2 text config (stop 38, inkling;
benchmarks/README.md): the relative-position bias, K / V convolutions, per-token sinks, q / k / v input norms of
its attention (layers/attention.py) and its attention residuals over blocks with output convolutions
(layers/block_residual.py). Sizes: hidden 4608, 48 heads / 8 KV heads x 128 in both layer kinds, d_rel 16,
rel_extent 1024, window 1024, conv kernel 4, 384 experts of 2304, 48 layers (every 6th full), blocks of 6.
The expectations are computed by hand from modeling_inkling2.py, tensor by tensor."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from solver.specs.dtypes import KV16
from solver.errors import InputError
from solver.estimate.compute import Kit, Work, factors_for
from solver.estimate.params import count_params
from solver.specs.config.read import parse_model_config
from solver.specs.hardware_catalog import load_hardware
from solver.specs.layers.attention import Attention
from solver.specs.layers.block_residual import BlockResidual
from solver.specs.parallel import ParallelConfig
from solver.specs.precision import resolve_precision

DATA = Path(__file__).parent / "data" / "configs_defaults"
H, HEADS, KV, DH, D_REL, K = 4608, 48, 8, 128, 16, 4


def _spec():
    return parse_model_config(json.loads((DATA / "inkling2_text.json").read_text()), "x")


def _attention(index: int) -> Attention:
    block = _spec().layers[index].blocks[0]
    assert isinstance(block, Attention)
    return block


def _residual(index: int) -> BlockResidual:
    (block,) = [b for b in _spec().layers[index].blocks if isinstance(b, BlockResidual)]
    return block


def test_sliding_attention_holds_clip_scale_static_kv_convs_gated_output_sinks_and_relative_bias() -> None:
    # q_proj 4608 x 6144 + scale 6144; k / v_proj 2 x 4608 x 1024, their depthwise convs 2 x 1024 x 4; gate_proj
    # and o_proj 2 x 4608 x 6144; sink_proj 4608 x 48; relative states 4608 x 768 + scale 768 and the table
    # 16 x 1024 (the window): 28,311,552 + 6,144 + 9,437,184 + 8,192 + 56,623,104 + 221,184 + 3,538,944 + 768
    # + 16,384 = 98,163,456
    assert _attention(0).params == 98_163_456


def test_full_attention_convs_are_dynamic_and_keys_values_read_their_own_norms() -> None:
    # as the sliding layer, but each conv is static 4 x 1024 plus weight_proj 4608 x 8 x 4 (2 x 151,552 in place
    # of 2 x 4,096), the table 16 x rel_extent 1024, and k / v_input_layernorm 2 x 4608:
    # 98,163,456 - 8,192 + 303,104 + 9,216 = 98,467,584
    block = _attention(5)
    assert block.kv_conv_dynamic and block.kv_input_norms and block.window is None
    assert block.params == 98_467_584


def test_block_residual_reads_the_blocks_begun_before_the_layer_and_its_partial_sum() -> None:
    # layer 0: no attention input query; its MLP reads the block it begins (its input) and the partial sum
    assert _residual(0).reads == ((1, 2),)
    # layer 5 (full): one block begun (at 0), three queries (q / k / v) over it and the partial sum
    assert _residual(5).reads == ((3, 2), (1, 2))
    # layer 6 begins the second block: its MLP reads both blocks and the partial sum
    assert _residual(6).reads == ((1, 2), (1, 3))
    # weights: queries x 4608 + two output convs 2 x 4608 x 4 = 36,864
    assert _residual(5).params == 4 * H + 36_864


def test_conv_states_are_constant_per_request() -> None:
    # full attention's K / V conv tails: 3 tokens x 8 heads x (128 + 128) x 2 B = 12,288 B; the two output convs'
    # tails 2 x 3 x 4608 x 2 B = 55,296 B
    assert _attention(5).state(KV16, 1).constant_bytes == 12_288
    assert _residual(5).state(KV16, 1).constant_bytes == 55_296


def test_relative_bias_mixes_the_profile_table_per_token_and_head() -> None:
    # 2 x 1024 tokens x 48 heads x 16 x 1024 = 1,610,612,736 FLOPs
    spec, hw = _spec(), load_hardware("h200_sxm")
    kit = Kit(hw, ParallelConfig(world_size=1), resolve_precision(spec, hw), factors_for(hw),
              Work("prefill", 1024, 512.5, 1, 1))
    (op,) = [o for o in _attention(5).ops(kit) if o.name == "rel_bias"]
    assert op.flops == pytest.approx(2 * 1024 * HEADS * D_REL * 1024)


def test_model_counts_as_transformers_with_normed_embedding_final_query_and_unpadded_head() -> None:
    # embed 201024 x 4608 + its norm 4608; head 200058 (unpadded_vocab_size) x 4608; final norm and final_input
    # query 2 x 4608; the layers 591,870,279,168 and the routers' 48 x 384 score-correction biases 18,432
    report = count_params(_spec())
    assert report.total == 926_323_200 + 921_867_264 + 9_216 + 591_870_279_168 + 18_432 == 593_718_497_280


def test_inkling_one_multimodal_is_refused_naming_what_is_not_read() -> None:
    # Inkling-1's text counts since stop 39 (tests/test_unseen_configs_round39.py); its vision tower and audio
    # table are not read
    raw = json.loads((DATA / "inkling_mm_model.json").read_text())
    with pytest.raises(InputError, match="Inkling's vision tower"):
        parse_model_config(raw, "x")
