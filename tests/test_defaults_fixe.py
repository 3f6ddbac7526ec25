"""Stop 38 (fixe): Hy4-preview's text model (HYV4Config() as save_pretrained writes it, tests/data/configs_defaults/
hy_v4.json; HYV4VLTextConfig subclasses it). Read from transformers 5.25.0's modeling_hy_v4.py: MLA with one learned
sink logit a head and a per-channel sigmoid gate_proj, DSA indexers only on the "full" indexer_types layers (the
"shared" ones reuse the latest full layer's top-k), and hyper-connections without the comb map ending in an hc_head.
Each total is transformers' meta-device count (parameters plus the router-bias buffers, benchmarks/README.md
"Stop 38"); each test checks one new part by hand."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import toy_hardware  # noqa: E402
from solver.specs.dtypes import KV16
from solver.errors import InputError
from solver.estimate.compute import Kit, Work, factors_for
from solver.estimate.params import count_params
from solver.specs.config.read import parse_model_config
from solver.specs.layers.hyper import HyperConnections
from solver.specs.layers.mla import MLA
from solver.specs.parallel import make_parallel_config
from solver.specs.precision import resolve_precision

DATA = Path(__file__).parent / "data" / "configs_defaults"
H, HEADS, V_DIM, M = 2816, 32, 256, 4  # hidden, heads, v_head_dim, hc_mult


def _raw(name: str = "hy_v4") -> dict:
    return json.loads((DATA / f"{name}.json").read_text())


def _count(raw: dict) -> int:
    return count_params(parse_model_config(raw, "x")).total


def _mla(spec) -> list[MLA]:
    return [b for layer in spec.layers for b in layer.blocks if isinstance(b, MLA)]


def test_hy_v4_counts_to_the_oracle() -> None:
    # transformers' count 58,278,193,133 parameters + 33 MoE layers x 256 e_score_correction_bias = 58,278,201,581
    assert _count(_raw()) == 58_278_193_133 + 33 * 256


def test_hy_v4_vl_text_counts_to_the_oracle_without_its_tower() -> None:
    # model.language_model 769,164,997,277 + lm_head 120,832 x 6,144 = 742,391,808 + 77 x 256 router biases 19,712;
    # the wrapper counted without vision_config (the tower and its merger: tests/test_defaults_vlm2.py)
    raw = _raw("hy_v4_vl")
    del raw["vision_config"]
    assert _count(raw) == 769_164_997_277 + 120_832 * 6_144 + 77 * 256


def test_mla_sinks_are_one_logit_a_head() -> None:
    # HYV4Attention.sinks: 32 a layer, 34 layers = 1,088
    raw = _raw()
    raw["_mla_sinks"] = False
    assert _count(_raw()) - _count(raw) == 34 * HEADS
    assert all(b.sinks for b in _mla(parse_model_config(_raw(), "x")))


def test_mla_output_gate_is_hidden_by_heads_times_v_head_dim() -> None:
    # HYV4Attention.gate_proj: 2,816 x 32 x 256 = 23,068,672 a layer, whatever mla_use_output_gate says
    raw = _raw()
    raw["_mla_output_gate"] = False
    assert _count(_raw()) - _count(raw) == 34 * H * HEADS * V_DIM
    raw = _raw()
    raw["mla_use_output_gate"] = False
    assert _count(raw) == _count(_raw())


def test_indexer_types_left_out_are_full_at_zero_and_every_fourth_from_one() -> None:
    # HYV4Config.__post_init__: "full" where i == 0 or (i - 1) % 4 == 0: 0, 1, 5, ..., 33 = 10 of 34
    raw = _raw()
    del raw["indexer_types"]
    selects = [b.indexer.selects for b in _mla(parse_model_config(raw, "x"))]
    assert [i for i, s in enumerate(selects) if s] == [0] + list(range(1, 34, 4))
    assert _count(raw) == _count(_raw())


def test_a_shared_indexer_layer_holds_no_indexer_weights_nor_index_keys() -> None:
    # HYV4Indexer: wq_b 1,536 x 16 x 128 + wk 2,816 x 128 + k_norm 2 x 128 + weights_proj 2,816 x 16 = 3,552,512;
    # its key cache 128 fp8 + one fp32 scale = 132 B a token; a shared layer holds neither and attends to the same
    # 2,048 keys
    raw = _raw()
    raw["indexer_types"] = ["full"] * 34
    assert _count(raw) - _count(_raw()) == 24 * (1536 * 16 * 128 + 2816 * 128 + 2 * 128 + 2816 * 16)
    full, shared = _mla(parse_model_config(_raw(), "x"))[:3:2]
    assert full.state(KV16, 1).index_per_token_bytes == 132 and shared.state(KV16, 1).index_per_token_bytes == 0
    assert shared.indexer.selected_keys == full.indexer.selected_keys == 2048


def test_a_shared_indexer_layer_scores_nothing() -> None:
    # decode at 32K: the full layer runs indexer_proj / indexer_score / indexer_topk; the shared one none of them,
    # and its core reads the same gathered keys
    spec = parse_model_config(_raw(), "x")
    hw = toy_hardware()
    kit = Kit(hw, make_parallel_config(1), resolve_precision(spec, hw), factors_for(hw),
              Work("decode", new_tokens=4, context=32768, sequences=4, logits_tokens=4))
    full, shared = _mla(spec)[:3:2]
    names = {o.name for o in full.ops(kit)} - {o.name for o in shared.ops(kit)}
    assert names == {"indexer_proj", "indexer_score", "indexer_topk"}
    core = [next(o for o in b.ops(kit) if o.name == "attention_core") for b in (full, shared)]
    assert core[0].flops == core[1].flops and core[0].bytes == core[1].bytes


@pytest.mark.parametrize("types, why", [
    (["shared"] + ["full"] * 33, "entry 0 is 'shared'"),
    (["full", "sparse"] * 17, r"entries \['sparse'\]"),
    (["full"] * 33, "33 entries for 34 layers"),
])
def test_unreadable_indexer_types_are_refused_naming_the_field(types: list, why: str) -> None:
    raw = _raw()
    raw["indexer_types"] = types
    with pytest.raises(InputError, match=f"indexer_types: {why}"):
        parse_model_config(raw, "x")


def test_comb_free_hyper_connections_weigh_two_m_rows_and_two_scales() -> None:
    # HYV4HyperConnection a sub-block: fn 2m x m h = 8 x 11,264 = 90,112, base 2m = 8, scale 2: 90,122; attn_hc and
    # ffn_hc: 180,244 a layer (DeepSeek-V4's form: (2 + m) m = 24 rows, 3 scales)
    hc = parse_model_config(_raw(), "x").layers[0].hyper
    assert isinstance(hc, HyperConnections) and not hc.comb
    assert hc.weights == 2 * (2 * M * M * H + 2 * M + 2) == 180_244


def test_comb_free_hyper_connections_flops_have_no_comb_nor_sinkhorn() -> None:
    # m h = 11,264: pre = norm 3mh 33,792 + map 2 x 2m x mh 180,224 + collapse 2mh 22,528 = 236,544;
    # post = post x output and the add, 2mh = 22,528 (no comb^T @ streams)
    hc = HyperConnections(H, M, 180_244, comb=False)
    assert hc.flops_per_token() == (236_544, 22_528)


def test_hy_v4_head_is_the_dynamic_hc_head() -> None:
    # HYV4HyperHead: hc_fn m x m h 45,056 + hc_base m 4 + hc_scale 1 = 45,061 (the oracle's model.hc_head)
    assert parse_model_config(_raw(), "x").hyper_head == 45_061
