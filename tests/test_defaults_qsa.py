"""Rules the reader learnt from transformers 5.25.0's Qwen4-Exp QSA indexer (Qwen4ExpTextQSAIndexer, stop 38, qsa;
benchmarks/README.md). The class-default totals are transformers' meta-device counts with the indexer fields filled
(tests/data/configs_defaults: indexer_n_heads 16, indexer_kv_heads 1, indexer_head_dim 256, indexer_budget 2048,
indexer_compress_ratio 4); the indexer part is computed by hand."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from solver.errors import InputError
from solver.estimate.compute import Kit, Work, factors_for
from solver.estimate.params import count_params
from solver.specs.config.read import parse_model_config
from solver.specs.hardware_catalog import load_hardware
from solver.specs.layers.dsa import Indexer
from solver.specs.parallel import make_parallel_config
from solver.specs.precision import resolve_precision

DATA = Path(__file__).parent / "data" / "configs_defaults"
REAL = Path(__file__).parent / "data" / "configs_unseen" / "round28" / "Qwen--Qwen4-Exp.json"

# one indexer: index_qk_proj 2048 x (16 + 1) x 256 = 8,912,896, q_layernorm + k_layernorm 2 x 256 = 512: 8,913,408;
# on the 10 indexed_attention layers of 40: 89,134,080
INDEXER = 2048 * (16 + 1) * 256 + 2 * 256
INDEXERS = 10 * INDEXER


def _raw(name: str) -> dict:
    return json.loads((DATA / f"{name}.json").read_text())


def _indexer(cfg: dict) -> Indexer:
    spec = parse_model_config(cfg, "x")
    return next(layer.mixer.indexer for layer in spec.layers if getattr(layer.mixer, "indexer", None))


def _one_rank(w: Work) -> Kit:
    """One H200 rank running the Qwen4-Exp class default at its config's precision through `w`."""
    hw = load_hardware("h200_sxm")
    spec = parse_model_config(_raw("qwen4_exp_text"), "x")
    return Kit(hw, make_parallel_config(1), resolve_precision(spec, hw), factors_for(hw), w)


def test_qwen4_exp_text_counts_to_transformers_class_default() -> None:
    # 67,321,629,312 without the indexer (the reader's null-field count, checked against transformers minus
    # `.indexer.`) + 89,134,080 = 67,410,763,392
    assert INDEXERS == 89_134_080
    assert count_params(parse_model_config(_raw("qwen4_exp_text"), "x")).total == 67_321_629_312 + INDEXERS
    assert 67_321_629_312 + INDEXERS == 67_410_763_392


def test_qwen4_exp_counts_to_transformers_class_default() -> None:
    # the wrapper's text_config carries the same indexer: 67,775,279,984 + 89,134,080 = 67,864,414,064
    assert count_params(parse_model_config(_raw("qwen4_exp"), "x")).total == 67_775_279_984 + INDEXERS
    assert 67_775_279_984 + INDEXERS == 67_864_414_064


def test_null_indexer_fields_build_no_indexer() -> None:
    # the published file writes the five fields null (QSA off): counted as before, 67,775,279,984
    cfg = json.loads(REAL.read_text())
    spec = parse_model_config(cfg, "x")
    assert not any(getattr(layer.mixer, "indexer", None) for layer in spec.layers)
    assert count_params(spec).total == 67_775_279_984


def test_qsa_indexer_sits_on_the_indexed_layers_only() -> None:
    # layer_types: indexed_attention where (i + 1) % 4 == 0, Gated DeltaNet elsewhere: 10 indexers
    spec = parse_model_config(_raw("qwen4_exp_text"), "x")
    assert [i for i, layer in enumerate(spec.layers) if getattr(layer.mixer, "indexer", None)] == list(range(3, 40, 4))


def test_qsa_indexer_weights_are_one_qk_projection_and_two_rms_norms() -> None:
    # wq_b 2048 x 16 x 256 = 8,388,608 and wk 2048 x 256 = 524,288 (index_qk_proj's query and key rows), q / k
    # RMSNorms 2 x 256 = 512; no weights_proj (the head scores are ReLU'd and summed), no gate or position table
    parts = {p.name: p.params for p in _indexer(_raw("qwen4_exp_text")).parts(2048, None)}
    assert parts == {"wq_b": 8_388_608, "wk": 524_288, "qk_norm": 512}
    assert sum(parts.values()) == INDEXER


def test_qsa_indexer_caches_one_raw_key_per_token_in_the_activation_dtype() -> None:
    # update_indexer concatenates raw_keys [batch, tokens, 256] in bf16: 256 x 2 = 512 B a token, no scale
    assert _indexer(_raw("qwen4_exp_text")).bytes_per_token == 512


def test_qsa_selection_is_the_budget_in_blocks_plus_the_tail_block() -> None:
    # block_topk = 2048 // 4 = 512 blocks of 4 keys, plus the incomplete tail's up to 3: 2048 + 3 = 2,051 keys
    # (selected_token_indices holds token_budget + compress_ratio - 1 entries)
    idx = _indexer(_raw("qwen4_exp_text"))
    assert (idx.topk, idx.block, idx.local_tokens) == (512, 4, 3)
    assert idx.selected_keys == 2_051


def test_qsa_indexer_scores_mean_pooled_blocks() -> None:
    # decode, one sequence at 16,000 keys: 4,000 block means scored by 16 heads x 256: 2 x 16 x 256 x 4,000 =
    # 32,768,000, plus the mean, one add a channel per key read: 256 x 16,000 = 4,096,000; it reads every raw key
    # (16,000 x 512 B) and writes one fp32 logit a block (4,000 x 4 B)
    kit = _one_rank(Work("decode", new_tokens=1, context=16_000, sequences=1, logits_tokens=1))
    score = next(o for o in _indexer(_raw("qwen4_exp_text")).ops(kit, 2048, None) if o.name == "indexer_score")
    assert score.flops == 2 * 16 * 256 * 4_000 + 256 * 16_000
    assert score.bytes == 16_000 * 512 + 4_000 * 4


def test_qsa_fields_are_all_or_none() -> None:
    # Qwen4ExpTextConfig.validate: "QSA config is missing required fields"
    cfg = _raw("qwen4_exp_text")
    cfg["indexer_budget"] = None
    with pytest.raises(InputError, match="indexer_budget: missing"):
        parse_model_config(cfg, "x")


def test_qsa_indexer_scores_one_key_head() -> None:
    # "Qwen4-Exp QSA requires indexer_kv_heads=1" (the pooled keys squeeze the head axis)
    cfg = _raw("qwen4_exp_text")
    cfg["indexer_kv_heads"] = 2
    with pytest.raises(InputError, match="indexer_kv_heads: 2"):
        parse_model_config(cfg, "x")


def test_qsa_budget_is_whole_blocks() -> None:
    # "indexer_budget must be divisible by indexer_compress_ratio": 2050 // 4 would drop two keys of the budget
    cfg = _raw("qwen4_exp_text")
    cfg["indexer_budget"] = 2050
    with pytest.raises(InputError, match="indexer_budget: 2050"):
        parse_model_config(cfg, "x")
