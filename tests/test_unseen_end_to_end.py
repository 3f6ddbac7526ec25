"""Families outside the catalog (tests/data/configs_unseen/) taken through the commands end to end: what the
planner, the single-config commands and the names they print say about layer kinds the catalog lacks. One test
per rule."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from solver.specs.model import ModelSpec, parse_model_config
from solver.specs.parallel import SEQUENCE_KNOBS, absent_knob_problems, model_knobs

DATA = Path(__file__).parent / "data" / "configs_unseen"


def _spec(name: str) -> ModelSpec:
    return parse_model_config(json.loads((DATA / f"{name}.json").read_text()), name)


@pytest.mark.parametrize("name", ["state-spaces--mamba-2.8b-hf", "mistralai--Mamba-Codestral-7B-v0.1"])
def test_a_model_without_attention_has_no_sequence_split_knobs(name: str) -> None:
    spec = _spec(name)
    assert not set(SEQUENCE_KNOBS) & set(model_knobs(spec))
    for knob in SEQUENCE_KNOBS:
        (line,) = absent_knob_problems(spec, {knob: 2})
        assert knob in line and "no attention layer" in line


@pytest.mark.parametrize("name", ["LiquidAI--LFM2-1.2B", "meta-llama--Llama-3.2-11B-Vision-Instruct",
                                  "tencent--Tencent-Hunyuan-Large"])
def test_a_model_with_some_attention_keeps_the_sequence_split_knobs(name: str) -> None:
    assert set(SEQUENCE_KNOBS) <= set(model_knobs(_spec(name)))


def test_memory_refuses_context_parallel_on_a_model_without_attention(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from solver.cli.main import main
    r = CliRunner().invoke(main, ["memory", str(DATA / "state-spaces--mamba-2.8b-hf.json"), "--hardware", "h100_sxm",
                                 "--cards", "2", "--cp", "2", "--batch", "1", "--seq-len", "128"])
    assert r.exit_code == 2, r.output
    assert "cp_size" in r.output and "no attention layer" in r.output


def test_a_pattern_name_calls_the_mixer_of_a_model_without_attention_a_mixer() -> None:
    from solver.rank.select import pattern_name
    from solver.specs.parallel import ParallelConfig
    mamba, lfm2 = _spec("state-spaces--mamba-2.8b-hf"), _spec("LiquidAI--LFM2-1.2B")
    assert pattern_name(ParallelConfig(world_size=8), mamba) == "Mixer DP"
    assert pattern_name(ParallelConfig(world_size=8, attn_tp_size=2), mamba) == "Mixer TP2 x DP4"
    assert pattern_name(ParallelConfig(world_size=8, attn_tp_size=8), mamba) == "Pure TP8"
    assert pattern_name(ParallelConfig(world_size=8), lfm2) == "Attn DP"  # attention beside the convolutions


def test_the_explanation_of_a_model_without_attention_proposes_no_sequence_split() -> None:
    from solver.rank.explain import alternatives
    from solver.rank.select import decision_tree_reason
    from solver.specs.hardware_catalog import load_hardware
    from solver.specs.parallel import ParallelConfig
    from solver.specs.scenario import Scenario
    mamba, hw = _spec("state-spaces--mamba-2.8b-hf"), load_hardware("h100_sxm")
    long = Scenario(kind="throughput", isl=32768, osl=256)
    alts = alternatives(mamba, hw, 8, long)
    assert not any("CP" in name for name in alts)  # the seed's CP baseline would be DP8 under another name
    reason = decision_tree_reason(ParallelConfig(world_size=8), mamba, long, hw)
    assert "no attention layer" in reason and "prefill split" not in reason
    gqa = decision_tree_reason(ParallelConfig(world_size=8), _spec("LiquidAI--LFM2-1.2B"), long, hw)
    assert "check prefill split" in gqa
