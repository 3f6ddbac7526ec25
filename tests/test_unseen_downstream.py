"""What the commands do downstream with the families of tests/data/configs_unseen/{text,multi,round4}: the
launch, the notes and the figures a human would check. One test per rule."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from solver.specs.dtypes import KV16
from solver.specs.config.read import parse_model_config
from solver.specs.model import ModelSpec

DATA = Path(__file__).parent / "data" / "configs_unseen"


def _spec(rel: str) -> ModelSpec:
    return parse_model_config(json.loads((DATA / f"{rel}.json").read_text()), Path(rel).name)


def _launch(spec: ModelSpec, fw, cards: int = 1) -> dict:
    from solver.launch.emit import LaunchInputs, emit_launch
    from solver.specs.hardware_catalog import load_hardware
    from solver.specs.parallel import ParallelConfig
    return emit_launch(fw, spec, load_hardware("h100_sxm"), ParallelConfig(world_size=cards),
                       LaunchInputs(batch=8, max_model_len=4096))


@pytest.mark.parametrize("rel, remote", [("text/baichuan-inc--Baichuan2-7B-Chat", True),
                                         ("text/mosaicml--mpt-7b", True),
                                         ("text/Snowflake--snowflake-arctic-instruct", True),
                                         ("text/allenai--OLMoE-1B-7B-0924", False)])
def test_a_checkpoint_with_code_of_its_own_gets_the_engines_trust_switch_or_a_note(rel: str, remote: bool) -> None:
    from solver.specs.framework import load_framework
    spec = _spec(rel)
    assert spec.remote_code is remote  # the config's auto_map
    trusted = load_framework("vllm")  # its profile has the switch (`when: remote_code`)
    # a profile without the switch: the command is printed with a note naming what to add
    args = [a for a in trusted.launch.args if "remote_code" not in a.when_expr.names]
    plain_fw = trusted.model_copy(update={"launch": trusted.launch.model_copy(update={"args": args})})
    plain = _launch(spec, plain_fw)
    assert "--trust-remote-code" not in plain["nodes"][0]["argv"]
    assert any("auto_map" in n and "trust-remote-code" in n for n in plain.get("notes", ())) is remote
    # a profile with it: the flag, and no note
    out = _launch(spec, trusted)
    assert ("--trust-remote-code" in out["nodes"][0]["argv"]) is remote
    assert not any("auto_map" in n for n in out.get("notes", ()))


def test_the_explanation_of_a_model_whose_attention_is_all_local_says_the_window_bounds_the_kv() -> None:
    from solver.rank.reason import decision_tree_reason
    from solver.specs.hardware_catalog import load_hardware
    from solver.specs.parallel import ParallelConfig
    from solver.specs.scenario import Scenario
    rg, hw = _spec("multi/google--recurrentgemma-2b"), load_hardware("h100_sxm")
    assert rg.kv_window_bound == 2048
    long = Scenario(kind="balanced", isl=65536, osl=256)
    reason = decision_tree_reason(ParallelConfig(world_size=4), rg, long, hw)
    assert "every attention layer local (window 2,048)" in reason and "64K+" not in reason
    # a model with a full-attention layer beside its local ones keeps the seed's Layer 3
    gemma3 = _spec("round4/google--gemma-3-270m")
    assert gemma3.local_attention_window and gemma3.kv_window_bound is None
    assert "64K+" in decision_tree_reason(ParallelConfig(world_size=4), gemma3, long, hw)


def test_the_knobs_column_shows_redundant_expert_copies() -> None:
    from solver.specs.knobs import nondefault_label
    from solver.specs.parallel import ParallelConfig
    # Granite-3.1-3B-A800M on 16 ranks: 40 experts + 8 copies over EP16, every knob at 1
    pc = ParallelConfig(world_size=16, redundant_experts=8)
    assert nondefault_label(pc.settings()) == "redundant_experts=8"
    assert nondefault_label(ParallelConfig(world_size=16).settings()) == "all 1"
    assert nondefault_label(ParallelConfig(world_size=16, attn_tp_size=2).settings()) == "attn_tp=2"


def test_a_single_mamba2_group_is_replicated_so_attention_tp_only_divides_the_heads() -> None:
    """vLLM's / SGLang's MambaMixer2: n_groups must divide by TP or be 1 (then every rank holds the group)."""
    from solver.specs.layers import Mamba2
    from solver.specs.model_rules import model_problems
    from solver.specs.framework import load_framework
    from solver.specs.parallel import ParallelConfig
    bamba = _spec("multi/ibm-ai-platform--Bamba-9B")  # mamba_n_groups 1, 128 Mamba heads, 32 attention heads
    assert bamba.num_attention_heads == 32
    pc = ParallelConfig(world_size=4, attn_tp_size=4, dense_tp_size=4, embed_tp_size=4, lmhead_tp_size=4)
    assert model_problems(bamba, pc, load_framework("vllm")) == []
    one = Mamba2(hidden=64, heads=8, head_dim=16, state_size=8, groups=1)
    two = Mamba2(hidden=64, heads=8, head_dim=16, state_size=8, groups=2)
    assert one.tp_units == (8,) and two.tp_units == (8, 2)
    bc = {p.name: p for p in one.parts()}["in_proj_bc"]
    assert bc.degree(4) == 1 and {p.name: p for p in two.parts()}["in_proj_bc"].degree(2) == 2
    # the conv tail over B/C stays whole on each rank: 3 x 2 x 8 x 2 bytes beside the split x channels
    whole, quarter = one.state(KV16, 1).constant_bytes, one.state(KV16, 4).constant_bytes
    assert quarter == whole / 4 + 3 * (2 * 8) * 2 * (1 - 1 / 4)


def test_a_hybrid_refusal_names_the_mixers_head_groups_when_they_bind_not_the_attention_heads() -> None:
    from solver.specs.framework import load_framework
    from solver.specs.model_rules import model_problems
    from solver.specs.parallel import ParallelConfig
    nemo_h = _spec("multi/nvidia--Nemotron-H-8B-Base-8K")  # 32 attention heads, Mamba n_groups 8
    (line,) = model_problems(nemo_h, ParallelConfig(world_size=16, attn_tp_size=16), load_framework("generic"))
    assert "mixers' head groups" in line and "8 % attn_tp_size 16" in line
    rg = _spec("multi/google--recurrentgemma-2b")  # 10 attention heads bind (RG-LRU 10 blocks)
    (line,) = model_problems(rg, ParallelConfig(world_size=4, attn_tp_size=4), load_framework("generic"))
    assert line.startswith("num_attention_heads 10 %")


def test_weight_dtype_fp32_is_the_engines_dtype_so_an_fp32_checkpoints_embedding_stays_at_32() -> None:
    from solver.specs.hardware_catalog import load_hardware
    from solver.specs.precision import resolve_precision
    rg, hw = _spec("multi/google--recurrentgemma-2b"), load_hardware("h100_sxm")  # torch_dtype float32
    default = resolve_precision(rg, hw, None, None, None)
    assert default.fmt("embedding").name == "bf16" and any("served at 16 bits" in n for n in default.notes)
    held = resolve_precision(rg, hw, "fp32", None, None)
    assert {held.fmt(g).name for g in ("attention", "dense", "embedding", "lm_head")} == {"fp32"}
    assert not any("served at 16 bits" in n for n in held.notes)  # it told the user to pass what they passed
