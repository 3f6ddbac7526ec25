"""Stop 38 (fixd): per-layer input embeddings (hidden_size_per_layer_input, Gemma-4's small text models). The configs
are Gemma4TextConfig() / Gemma4Config() as save_pretrained writes them (tests/data/configs_defaults/); the totals are
transformers 5.25.0's meta-device counts (5,077,177,856 for both). Sizes of the default: hidden 2,304, 30 layers,
hidden_size_per_layer_input 256, vocab_size_per_layer_input 262,144."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from solver.errors import InputError
from solver.estimate.compute import Work, factors_for, head_ops
from solver.estimate.params import count_params
from solver.estimate.pipeline import stages
from solver.specs.config.read import parse_model_config
from solver.specs.hardware_catalog import load_hardware
from solver.specs.layers.projection import Projection
from solver.specs.parallel import make_parallel_config
from solver.specs.precision import resolve_precision

DATA = Path(__file__).parent / "data" / "configs_defaults"
MODELS = Path(__file__).parent.parent / "models"


def _raw(name: str) -> dict:
    return json.loads((DATA / f"{name}.json").read_text())


def _parse(raw: dict):
    return parse_model_config(raw, "x")


def _embedding_parts(spec) -> dict[str, int]:
    (emb,) = [m for m in count_params(spec).modules if m.name == "embedding"]
    return {p.name: p.params for p in emb.parts}


def test_the_per_layer_table_is_rows_by_layers_by_width() -> None:
    # 262,144 x 30 x 256 = 2,013,265,920 (transformers' model.embed_tokens_per_layer)
    assert _embedding_parts(_parse(_raw("gemma4_text")))["embed_tokens_per_layer"] == 262_144 * 30 * 256 == 2_013_265_920


def test_the_model_projection_is_hidden_by_layers_by_width_and_its_norm_the_width() -> None:
    # 2,304 x (30 x 256) = 17,694,720 (model.per_layer_model_projection); the norm 256 (per_layer_projection_norm)
    parts = _embedding_parts(_parse(_raw("gemma4_text")))
    assert parts["per_layer_model_projection"] == 2304 * 7680 == 17_694_720
    assert parts["per_layer_projection_norm"] == 256


def test_each_layer_adds_a_gate_a_projection_and_a_norm() -> None:
    # per layer: gate 2,304 x 256 + projection 256 x 2,304 = 1,179,648, norm 2,304: 1,181,952; x 30 = 35,458,560,
    # transformers' model.layers 2,442,234,880 less Gemma4UnifiedTextConfig()'s (no per-layer inputs) 2,406,776,320
    spec = _parse(_raw("gemma4_text"))
    bare = _parse(dict(_raw("gemma4_text"), hidden_size_per_layer_input=0))
    for layer, plain in zip(spec.layers, bare.layers):
        (gate,) = [b for b in layer.blocks if isinstance(b, Projection)]
        assert gate.params == 2 * 2304 * 256 == 1_179_648
        assert layer.norms == plain.norms + 1
    assert count_params(spec).total - count_params(bare).total == 2_013_265_920 + 17_694_720 + 256 + 30 * 1_181_952


@pytest.mark.parametrize("name", ["gemma4_text", "gemma4"])
def test_gemma4_default_counts_to_transformers_figure(name: str) -> None:
    assert count_params(_parse(_raw(name))).total == 5_077_177_856


def test_width_zero_builds_no_per_layer_inputs() -> None:
    # Gemma-4-31B writes hidden_size_per_layer_input 0: no table, no gate; 3,010,758,400 = the oracle's count of
    # Gemma4UnifiedTextConfig(), the same sizes without the field
    bare = _parse(dict(_raw("gemma4_text"), hidden_size_per_layer_input=0))
    assert bare.per_layer_inputs is None
    assert not any(isinstance(b, Projection) for layer in bare.layers for b in layer.blocks)
    assert count_params(bare).total == 3_010_758_400
    big = parse_model_config(json.loads((MODELS / "google--gemma-4-31B-it.json").read_text()), "g")
    assert big.per_layer_inputs is None


def test_the_table_splits_like_the_embedding_and_the_projection_is_replicated() -> None:
    (emb,) = [m for m in count_params(_parse(_raw("gemma4_text"))).modules if m.name == "embedding"]
    split = {p.name: p.split for p in emb.parts}
    assert emb.knob == "embed_tp_size"
    assert split["embed_tokens_per_layer"] == "tp" and split["per_layer_model_projection"] == "none"


def test_only_the_first_pipeline_stage_holds_the_table_and_it_keeps_every_layers_slice() -> None:
    first, second = stages(_parse(_raw("gemma4_text")), 2)
    assert "embedding" not in first.absent_modules and "embedding" in second.absent_modules
    # a stage's model holds 15 layers; the table still holds the 30 layers' slices: 262,144 x 30 x 256
    assert len(first.model.layers) == 15
    assert _embedding_parts(first.model)["embed_tokens_per_layer"] == 2_013_265_920


def test_the_lookup_and_projection_are_costed_once_a_step() -> None:
    # decode of 8 tokens on one H200 rank, bf16: the gather reads 8 x 7,680 values x 2 B = 122,880 B; the projection
    # 2 x 8 x 2,304 x 7,680 = 283,115,520 FLOPs and reads its 17,694,720 x 2 B matrix plus 8 x (2,304 + 4 x 7,680) x 2 B
    spec = _parse(_raw("gemma4_text"))
    hw = load_hardware("h200_sxm")
    pc = make_parallel_config(1)
    w = Work("decode", new_tokens=8, context=4096, sequences=8, logits_tokens=8)
    ops = {o.name: o for o in head_ops(spec, hw, pc, resolve_precision(spec, hw), factors_for(hw), w)}
    assert ops["per_layer_embedding"].flops == 0 and ops["per_layer_embedding"].bytes == pytest.approx(122_880)
    proj = ops["per_layer_model_projection"]
    assert proj.flops == pytest.approx(283_115_520)
    assert proj.bytes == pytest.approx(17_694_720 * 2 + 8 * (2304 + 4 * 7680) * 2)
    assert proj.module == "embedding"


def test_a_width_without_a_row_count_is_refused_naming_it() -> None:
    raw = dict(_raw("gemma4_text"), model_type="llama")  # no family line supplies vocab_size_per_layer_input
    raw.pop("vocab_size_per_layer_input")
    with pytest.raises(InputError, match="vocab_size_per_layer_input: missing"):
        _parse(raw)


def test_the_embedding_line_of_the_reason_counts_the_per_layer_input_table() -> None:
    # one H100, tied and replicated, the embedding's share as the memory report holds it: (262,144 x 2,304 token
    # table + 262,144 x 30 x 256 per-layer table + 2,304 x 7,680 projection + 256 norm) x 2 B
    # = (603,979,776 + 2,013,265,920 + 17,694,720 + 256) x 2 = 5,269,881,344 B -> "5.3 GB per rank"
    import json as _json

    from click.testing import CliRunner

    from solver.cli.main import main

    path = Path(__file__).parent / "data" / "configs_defaults" / "gemma4_text.json"
    r = CliRunner().invoke(main, ["solve", str(path), "--hardware", "h100_sxm", "--cards", "1", "--framework", "vllm",
                                  "--format", "json", "--top", "1"])
    assert r.exit_code == 0, r.output
    reason = _json.loads(r.stdout)["candidates"][0]["reason"]
    assert ("embed and lm_head (one tied table) with the per-layer input table replicated (5.3 GB per rank"
            in reason)
