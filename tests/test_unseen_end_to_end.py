"""Families outside the catalog (tests/data/configs_unseen/) taken through the commands end to end: what the
planner, the single-config commands and the names they print say about layer kinds the catalog lacks. One test
per rule."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from solver.specs.config.read import parse_model_config

from solver.specs.model import ModelSpec
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
    from solver.rank.reason import decision_tree_reason
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


def test_a_sequence_past_a_learned_position_table_is_infeasible_in_the_planner() -> None:
    from solver.api import run_solve
    from solver.errors import InfeasibleError
    from solver.plan.solve import POSITION_TABLE_RULE
    from solver.specs.scenario import Scenario
    gpt2 = str(DATA / "openai-community--gpt2.json")  # n_positions 1024: a learned table no scaling extends
    with pytest.raises(InfeasibleError) as err:
        run_solve(gpt2, "h100_sxm", 1, Scenario(kind="throughput", isl=1000, osl=100))
    assert err.value.binding == [POSITION_TABLE_RULE] and "1,024" in err.value.remedy
    result, cands = run_solve(gpt2, "h100_sxm", 1, Scenario(kind="throughput", isl=768, osl=256))
    assert cands  # exactly at the table's size: served


def test_a_sweep_marks_the_lengths_past_a_learned_position_table_infeasible() -> None:
    from solver import api
    df = api.sweep(str(DATA / "openai-community--gpt2.json"), ["h100_sxm"], [1], scenarios=["throughput"],
                   seq_lens=[(512, 256), (2048, 256)])
    over = df[df.isl == 2048]
    assert len(over) == 1 and not over.feasible.iloc[0]
    assert over.binding_constraint.iloc[0] == "A.sequence_within_position_table"
    assert df[df.isl == 512].feasible.all()


def test_rope_models_past_their_context_are_still_planned() -> None:
    from solver.specs.notes import past_position_table
    # a RoPE model's context can be extended by a scaling the engine is given: a note, not a wall
    assert past_position_table(_spec("microsoft--phi-2"), 4096 + 256) is None
    assert past_position_table(_spec("openai-community--gpt2"), 4096 + 256) is not None


@pytest.mark.parametrize("args, absent", [
    (["estimate", "qwen3-30b-a3b", "--phase", "decode"], {"dense_tp_size", "o_proj_tp_size"}),
    (["memory", str(DATA / "state-spaces--mamba-2.8b-hf.json")],
     {"moe_tp_size", "moe_ep_size", "dense_tp_size", "o_proj_tp_size", "cp_size", "kvp_size", "attn_sp_size"}),
])
def test_estimate_and_memory_show_no_knob_of_a_module_the_model_lacks(args: list[str], absent: set[str]) -> None:
    from click.testing import CliRunner

    from solver.cli.main import main
    r = CliRunner().invoke(main, [*args, "--hardware", "h100_sxm", "--cards", "2", "--attn-tp", "2", "--batch", "4",
                                  "--seq-len", "1024", "--format", "json"])
    assert r.exit_code == 0, r.output
    shown = json.loads(r.stdout)["parallel_config"]
    assert shown["attn_tp_size"] == 2 and not absent & set(shown)


def test_a_tp_size_the_ssm_groups_do_not_divide_names_the_mixer_not_attention_heads() -> None:
    from solver.specs.framework import load_framework
    from solver.specs.model_rules import model_problems
    from solver.specs.parallel import ParallelConfig
    codestral = _spec("mistralai--Mamba-Codestral-7B-v0.1")  # 128 heads in 8 groups: TP divides 8
    (line,) = model_problems(codestral, ParallelConfig(world_size=16, attn_tp_size=16), load_framework("generic"))
    assert "mixer's head groups" in line and "num_attention_heads" not in line
