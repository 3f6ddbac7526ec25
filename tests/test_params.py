"""Exact parameter accounting against the totals the model cards publish (models/published.yaml)."""
from __future__ import annotations

import json

import pytest

from solver.catalog import catalog_dir
from solver.estimate.params import MODULES, count_params
from solver.specs.config.read import parse_model_config
from solver.specs.model_catalog import list_models, load_model, published_counts

PUBLISHED = published_counts()
ASSERTED = {a: r for a, r in PUBLISHED.items() if r["status"] in ("verified", "audit", "name")
            and a not in ("devstral-2-123b",)}  # devstral-2: its own test below explains the card's figure
WITH_ACTIVE = {a: r for a, r in ASSERTED.items() if "active" in r}


def _within(counted: float, published: float, rounding: float, rel: float = 0.005) -> bool:
    """Within 0.5% of an exact figure, or within half the unit a rounded card figure uses."""
    if rounding:
        return abs(counted - published) <= rounding / 2
    return abs(counted / published - 1) <= rel


@pytest.mark.parametrize("alias", sorted(ASSERTED))
def test_published_total_within_half_a_percent_or_the_cards_rounding(alias: str) -> None:
    row = ASSERTED[alias]
    counted = count_params(load_model(alias)).counted(row["counts"]) / 1e9
    assert _within(counted, row["total"], row["rounding"]), (counted, row)


@pytest.mark.parametrize("alias", sorted(WITH_ACTIVE))
def test_published_active_under_the_cards_own_definition(alias: str) -> None:
    row = WITH_ACTIVE[alias]
    counted = count_params(load_model(alias)).active_counted(row["active_counts"]) / 1e9
    assert _within(counted, row["active"], row["rounding"], rel=0.03), (counted, row)


def test_every_catalog_model_has_a_published_row() -> None:
    aliases = {a for _, names in list_models() for a in names}
    assert set(PUBLISHED) <= aliases
    files = {load_model(a).name for a in PUBLISHED}
    assert len(files) == len(list_models())


def test_devstral_2_card_figure_is_the_32k_vocabulary_count() -> None:
    # the 123B name is Mistral-Large-2's size with its 32768-entry vocabulary; this config has 131072
    raw = json.loads((catalog_dir("models") / "mistralai--Devstral-2-123B-Instruct-2512.json").read_text())
    small_vocab = count_params(parse_model_config({**raw, "vocab_size": 32768}, "x")).total / 1e9
    assert _within(small_vocab, 123, 0)
    assert count_params(load_model("devstral-2-123b")).total / 1e9 == pytest.approx(125.03, abs=0.01)


def test_glm_4_5_card_total_lies_between_the_counts_without_and_with_mtp() -> None:
    report = count_params(load_model("glm-4.5"))
    assert report.counted("text") / 1e9 < PUBLISHED["glm-4.5"]["total"] < report.counted("mtp") / 1e9


@pytest.mark.parametrize("alias", ["deepseek-v3", "deepseek-r1"])
def test_deepseek_checkpoint_total_includes_mtp_layer_685b(alias: str) -> None:
    report = count_params(load_model(alias))
    assert report.checkpoint_total == pytest.approx(685e9, rel=0.005)
    # the MTP layer holds ~14B in the checkpoint: its own weights plus copies of embedding and head
    assert report.checkpoint_total - report.total == pytest.approx(14e9, rel=0.05)
    assert report.total == pytest.approx(671e9, rel=0.005)


def test_minimax_m1_matches_the_safetensors_byte_count() -> None:
    # model.safetensors.index.json: total_size 912,210,767,872 B at bf16 (facts/model_configs/SOURCES.md)
    assert count_params(load_model("minimax-m1")).total == pytest.approx(912_210_767_872 / 2, rel=1e-4)


def test_gemma_3_vision_tower_matches_keras_hub_exactly() -> None:
    for alias, text, full in (("gemma-3-27b", 27_009_002_240, 27_432_062_576),
                              ("gemma-3-4b", 3_880_099_328, 4_299_915_632)):
        report = count_params(load_model(alias))
        assert report.encoder_params() == full - text


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


def test_hybrid_mamba_model_counts_its_ssm_layers_not_a_dense_transformer() -> None:
    # the example: a 52-layer Mamba-2 / MoE / attention hybrid read as 52 attention layers was wrong
    report = count_params(load_model("nemotron-3-nano"))
    assert report.module("ssm").params > 0 and report.total / 1e9 == pytest.approx(31.6, rel=0.005)
    assert len([x for x in load_model("nemotron-3-nano").layers if x.mixer is not None]) == 23 + 6


def test_a_pixtral_tower_and_mistral3_projector_count_tensor_by_tensor() -> None:
    """Devstral-Small-2 (Mistral3): the Pixtral tower (patch conv without bias, ln_pre, 24 layers of q/k/v/o,
    gated SiLU MLP and two RMSNorms, no biases) and Mistral3's projector (an RMSNorm, a patch merger over the
    wrapper's spatial_merge_size 2: 4h -> h without bias, then linear_1 h -> text and linear_2 text -> text,
    multimodal_projector_bias false)."""
    h, inter, text, layers = 1024, 4096, 5120, 24
    tower = 3 * 14 * 14 * h + h + layers * (4 * h * h + 3 * h * inter + 2 * h)
    projector = h + 4 * h * h + h * text + text * text
    assert count_params(load_model("devstral-small-2-24b")).encoder_params() == tower + projector == 438_958_080
