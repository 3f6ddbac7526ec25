"""Exact parameter accounting against the totals the model cards publish."""
from __future__ import annotations

import json

import pytest

from solver.catalog import catalog_dir
from solver.estimate.params import MODULES, count_params
from solver.specs.model import parse_model_config
from solver.specs.model_catalog import list_models, load_model

# (catalog alias, published total in billions): the main model, MTP layers excluded
PUBLISHED_TOTALS = [
    ("deepseek-v3", 671.0),
    ("deepseek-r1", 671.0),
    ("deepseek-v3.2", 672.0),
    ("glm-5", 744.0),
    ("qwen3-235b-a22b", 235.1),
    ("qwen3-30b-a3b", 30.5),
    ("qwen3-32b", 32.8),
    ("qwen3-8b", 8.19),
    ("llama-3.1-8b", 8.03),
    ("llama-3.1-70b", 70.6),
    ("llama-3.1-405b", 405.9),
    ("mixtral-8x7b", 46.7),
    ("mixtral-8x22b", 140.6),
    ("gpt-oss-120b", 116.8),
    ("gpt-oss-20b", 20.9),
    ("longcat-flash", 560.0),
]

# (catalog alias, published activated parameters per token in billions)
PUBLISHED_ACTIVE = [
    ("deepseek-v3", 37.0),
    ("qwen3-235b-a22b", 22.0),
    ("mixtral-8x7b", 12.9),
    ("kimi-k2", 32.0),
]


@pytest.mark.parametrize("alias, billions", PUBLISHED_TOTALS, ids=[a for a, _ in PUBLISHED_TOTALS])
def test_published_total_within_half_a_percent(alias: str, billions: float) -> None:
    total = count_params(load_model(alias)).total
    assert total == pytest.approx(billions * 1e9, rel=0.005)


@pytest.mark.parametrize("alias", ["deepseek-v3", "deepseek-r1"])
def test_deepseek_checkpoint_total_includes_mtp_layer_685b(alias: str) -> None:
    report = count_params(load_model(alias))
    assert report.checkpoint_total == pytest.approx(685e9, rel=0.005)
    # the MTP layer holds ~14B in the checkpoint: its own weights plus copies of embedding and head
    assert report.checkpoint_total - report.total == pytest.approx(14e9, rel=0.05)
    assert report.total == pytest.approx(671e9, rel=0.005)


@pytest.mark.parametrize("alias, billions", PUBLISHED_ACTIVE, ids=[a for a, _ in PUBLISHED_ACTIVE])
def test_published_activated_within_3_percent(alias: str, billions: float) -> None:
    active = count_params(load_model(alias)).active
    assert active == pytest.approx(billions * 1e9, rel=0.03)


def test_dense_model_activates_every_parameter() -> None:
    report = count_params(load_model("llama-3.1-70b"))
    assert report.active == report.total


def test_module_params_sum_to_the_total() -> None:
    for file, _ in list_models():
        report = count_params(load_model(file.removesuffix(".json")))
        assert sum(report.by_name().values()) == report.total
        assert set(report.by_name()) <= set(MODULES)


def test_mtp_params_are_reported_separately_and_only_for_models_with_mtp() -> None:
    v3 = count_params(load_model("deepseek-v3"))
    assert v3.mtp_params > 0
    assert "mtp" not in v3.by_name()
    llama = count_params(load_model("llama-3.1-8b"))
    assert llama.mtp_params == 0 and llama.checkpoint_total == llama.total


def test_tied_embeddings_have_no_separate_lm_head() -> None:
    raw = json.loads((catalog_dir("models") / "Qwen--Qwen3-8B.json").read_text())
    untied = count_params(parse_model_config({**raw, "tie_word_embeddings": False}, "untied"))
    tied = count_params(parse_model_config({**raw, "tie_word_embeddings": True}, "tied"))
    assert untied.module("lm_head").params == raw["vocab_size"] * raw["hidden_size"]
    assert tied.module("lm_head").params == 0
    assert untied.total - tied.total == raw["vocab_size"] * raw["hidden_size"]


def test_dsa_indexer_is_its_own_module_with_replicated_parts() -> None:
    report = count_params(load_model("deepseek-v3.2"))
    indexer = report.module("indexer")
    assert indexer.params > 0
    assert all(part.split == "none" for part in indexer.parts)
    # V3.2 = V3 + the indexer
    assert report.total - count_params(load_model("deepseek-v3")).total == indexer.params


def test_routed_experts_activate_top_k_of_e() -> None:
    spec = load_model("qwen3-235b-a22b")
    routed = count_params(spec).module("routed_experts")
    assert routed.active_params == pytest.approx(routed.params * spec.experts_per_token / spec.num_experts)
