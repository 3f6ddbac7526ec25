"""Disaggregated pools' launch commands (issue 13, Build 4): the command a profile emits for a pool worker parses
back, with a parser written here from the engines' own argument definitions (not from the profiles), to the
pool's knobs and its role; what the facts do not give is said in the output, never emitted."""
from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from solver.errors import InputError
from solver.launch import LaunchInputs, emit_launch
from solver.launch.shell import render_shell
from solver.specs.framework import list_frameworks, load_framework
from solver.specs.hardware_catalog import load_hardware
from solver.specs.launch_spec import DisaggLaunch
from solver.specs.model_catalog import load_model
from solver.specs.parallel import ParallelConfig, model_knobs
from test_engine_roundtrip import _expected, _flags, parse_launch

# sglang/srt/arg_groups/fields/disagg.py: --disaggregation-mode null|prefill|decode;
# vllm/config/kv_transfer.py: kv_role kv_producer (the prefill side) | kv_consumer (the decode side) | kv_both
_VLLM_ROLES = {"kv_producer": "prefill", "kv_consumer": "decode"}


def parse_role(launch: dict) -> str | None:
    flags = _flags(launch["nodes"][0]["argv"])
    if launch["engine"] == "sglang":
        return flags.get("--disaggregation-mode")
    if launch["engine"] == "vllm":
        return _VLLM_ROLES.get(json.loads(flags.get("--kv-transfer-config", "{}")).get("kv_role"))
    return None


def _config(model_name: str, world: int, tp: int) -> ParallelConfig:
    """Every TP size `tp` (1: attention DP + expert parallel over `world` ranks), the model's own knobs only."""
    own = model_knobs(load_model(model_name))
    sizes = {"attn_tp_size": tp, "o_proj_tp_size": tp, "dense_tp_size": tp, "moe_tp_size": tp, "embed_tp_size": tp,
             "lmhead_tp_size": tp}
    return ParallelConfig(world_size=world, **{k: v for k, v in sizes.items() if k in own})


POOLS = [("deepseek-v3", 8, 1, "prefill", 8), ("deepseek-v3", 16, 1, "decode", 2048),
         ("qwen3-30b-a3b", 2, 2, "prefill", 4), ("qwen3-30b-a3b", 4, 1, "decode", 512)]


@pytest.mark.parametrize("engine", ["sglang", "vllm"])
@pytest.mark.parametrize("model_name,world,tp,role,batch", POOLS)
def test_a_pool_workers_command_parses_back_to_its_knobs_and_role(engine, model_name, world, tp, role, batch) -> None:
    model, hw, fw = load_model(model_name), load_hardware("h200_sxm"), load_framework(engine)
    pc = _config(model_name, world, tp)
    launch = emit_launch(fw, model, hw, pc, LaunchInputs(batch=batch, max_model_len=3072), role=role)
    assert launch["role"] == role
    assert parse_role(launch) == role
    want = _expected(pc, model, fw.kvp_splits_attention_weights)
    got = parse_launch(launch, model)
    assert {k: got.get(k, 0 if k == "redundant_experts" else 1) for k in want} == want


@pytest.mark.parametrize("engine, device", [("trtllm", "h200_sxm"), ("atom", "mi355x")])
def test_an_engine_whose_disaggregation_flags_the_facts_lack_says_so_and_adds_none(engine, device) -> None:
    model, hw, fw = load_model("qwen3-30b-a3b"), load_hardware(device), load_framework(engine)
    inputs = LaunchInputs(batch=8, max_model_len=3072)
    pc = _config("qwen3-30b-a3b", 2, 2)
    pool = emit_launch(fw, model, hw, pc, inputs, role="decode")
    agg = emit_launch(fw, model, hw, pc, inputs)
    assert pool["missing"] and "missing" not in agg
    assert _flags(pool["nodes"][0]["argv"]).keys() == _flags(agg["nodes"][0]["argv"]).keys()  # no flag added
    assert f"# missing: {pool['missing']}" in render_shell(pool)


def test_every_engine_profile_has_a_disaggregation_entry() -> None:
    for name in list_frameworks():
        fw = load_framework(name)
        if fw.launch is not None:
            assert fw.launch.disagg is not None, name


def test_a_disaggregation_entry_gives_flags_or_says_why_not() -> None:
    with pytest.raises(ValidationError):
        DisaggLaunch(source="x")
    assert DisaggLaunch(source="x", missing="the facts give no role flag").missing


def test_the_two_pools_files_do_not_overwrite_each_other() -> None:
    model, hw, fw = load_model("qwen3-30b-a3b"), load_hardware("h200_sxm"), load_framework("trtllm")
    inputs = LaunchInputs(batch=8, max_model_len=3072)
    pc = _config("qwen3-30b-a3b", 2, 2)
    names = {role: set(emit_launch(fw, model, hw, pc, inputs, role=role)["files"]) for role in ("prefill", "decode")}
    assert names["prefill"] and not names["prefill"] & names["decode"]


def test_a_role_that_is_not_a_pool_is_refused() -> None:
    model, hw, fw = load_model("qwen3-30b-a3b"), load_hardware("h200_sxm"), load_framework("sglang")
    with pytest.raises(InputError) as exc:
        emit_launch(fw, model, hw, _config("qwen3-30b-a3b", 2, 2), LaunchInputs(batch=8, max_model_len=3072),
                    role="both")
    assert exc.value.field == "role"
