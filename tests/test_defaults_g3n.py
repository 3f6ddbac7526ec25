"""Rules the reader learnt from transformers 5.25.0's Gemma-3n text model (stop 38, g3n; benchmarks/README.md): AltUp's
copies of the hidden state and the LAuReL residual (layers/altup.py), and one FFN width a layer. The total is
transformers' meta-device count of Gemma3nTextConfig's defaults (tests/data/configs_defaults/oracle.tsv); the parts are
computed by hand from modeling_gemma3n.py (Gemma3nTextAltUp, Gemma3nTextLaurelBlock, Gemma3nTextModel)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from solver.errors import InputError
from solver.estimate.params import count_params
from solver.specs.config.read import parse_model_config
from solver.specs.layers.altup import AltUp

DATA = Path(__file__).parent / "data" / "configs_defaults"
REFUSED = Path(__file__).parent / "data" / "configs_unseen" / "refused"


def _raw() -> dict:
    return json.loads((DATA / "gemma3n_text.json").read_text())


def _total(raw: dict) -> int:
    return count_params(parse_model_config(raw, "x")).total


def test_altup_weights_are_router_norm_output_scale_and_coefficients() -> None:
    # n 4, h 2048: modality_router 4 x 2048 = 8,192; router_norm 2,048; correct_output_scale 2,048;
    # prediction_coefs 4 -> 16: 64; correction_coefs 4 -> 4: 16: 12,368
    assert AltUp(2048, 4, 64).altup_weights == 8_192 + 2_048 + 2_048 + 64 + 16 == 12_368


def test_laurel_weights_are_two_low_rank_matrices() -> None:
    # linear_left 2048 x 64 + linear_right 64 x 2048 = 262,144 (post_laurel_norm is a layer norm)
    assert AltUp(2048, 4, 64).laurel_weights == 2 * 2048 * 64 == 262_144


def test_gemma3n_text_class_default_counts_to_transformers_figure() -> None:
    assert _total(_raw()) == 6_835_235_568


def test_altup_laurel_and_the_copy_projections_add_their_hand_count() -> None:
    # against one copy and rank 0 (transformers still builds AltUp of n 1: router 2048 + norm 2048 + scale 2048 +
    # 1 + 1 = 6,146, and post_laurel_norm): per layer 12,368 + 262,144 - 6,146 = 268,366, x 35 = 9,392,810; the
    # copy projections 2 x 3 x 2048 x 2048 = 25,165,824 (the oracle's parts: 12,582,912 each): 34,558,634
    assert AltUp(2048, 1, 0).altup_weights == 6_146
    raw = _raw()
    bare = dict(raw, altup_num_inputs=1, laurel_rank=0)
    assert _total(raw) - _total(bare) == 35 * 268_366 + 25_165_824 == 34_558_634


def test_one_ffn_width_a_layer_is_read_layer_by_layer() -> None:
    # the last layer's MLP 8192 wide instead of 16384: 3 x 2048 x 8192 = 50,331,648 fewer (gate, up, down)
    raw = _raw()
    narrow = dict(raw, intermediate_size=[16384] * 34 + [8192])
    assert _total(raw) - _total(narrow) == 3 * 2048 * 8192


def test_an_ffn_width_list_of_the_wrong_length_is_refused() -> None:
    with pytest.raises(InputError, match=r"intermediate_size: has 3 entries for 35 layers"):
        parse_model_config(dict(_raw(), intermediate_size=[16384] * 3), "x")


def test_the_real_gemma3n_text_config_counts_with_altup_and_laurel() -> None:
    # google/gemma-3n-E4B-it's text_config: the class default's sizes (the wrapper stays refused on its timm tower)
    text = json.loads((REFUSED / "google--gemma-3n-E4B-it.json").read_text())["text_config"]
    assert _total(text) == 6_835_235_568


def test_the_altup_copies_are_the_residual_a_token_carries_between_layers() -> None:
    # 4 copies x 2048 = 8,192 values a token a pipeline stage hands on (and holds as its residual)
    spec = parse_model_config(_raw(), "x")
    assert spec.residual_streams == 4 and spec.residual_width == 4 * 2048


def test_altup_fields_outside_a_family_with_the_fact_stay_refused() -> None:
    # Gemma-3's line has no _altup fact: its copies would go uncounted, so the field is refused
    raw = {"model_type": "gemma3_text", "hidden_size": 2048, "num_hidden_layers": 2, "intermediate_size": 8192,
           "altup_num_inputs": 4}
    with pytest.raises(InputError, match="altup_num_inputs: 4: AltUp .* not modelled"):
        parse_model_config(raw, "x")
