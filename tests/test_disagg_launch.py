"""Disaggregated pools' launch commands (issue 13, Build 4): the command a profile emits for a pool worker parses
back, with a parser written here from the engines' own argument definitions (not from the profiles), to the
pool's knobs and its role; what the facts do not give is said in the output, never emitted. What an engine's KV
transfer refuses (vLLM NixlConnector, SGLang mooncake) is refused before a command is printed."""
from __future__ import annotations

import json
from types import SimpleNamespace

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
from solver.specs.scenario import Scenario
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


INPUTS = LaunchInputs(batch=8, max_model_len=9216)


R1 = "deepseek-r1"  # MLA: vLLM's DCP and PCP both apply


# prefill: PCP 16 at TP 1 (each PCP rank keeps the whole KV: no DCP); MoE EP over the 16 ranks
PCP16 = ParallelConfig(world_size=16, attn_tp_size=1, cp_size=16, moe_tp_size=1, embed_tp_size=1,
                       lmhead_tp_size=1, dense_tp_size=1, o_proj_tp_size=1)


# decode: TP 8 with DCP 8 (the KV striped over the TP ranks)
DCP8 = ParallelConfig(world_size=8, attn_tp_size=1, kvp_size=8, moe_tp_size=1, embed_tp_size=8, lmhead_tp_size=8,
                      dense_tp_size=8, o_proj_tp_size=1)


# decode: attention DP 16 (TP 1, no DCP)
DP16 = ParallelConfig(world_size=16, attn_tp_size=1, moe_tp_size=1, embed_tp_size=1, lmhead_tp_size=1,
                      dense_tp_size=1, o_proj_tp_size=1)


def _emit(engine: str, model: str, pc: ParallelConfig, role: str, pools: dict) -> dict:
    return emit_launch(load_framework(engine), load_model(model), load_hardware("h200_sxm"), pc, INPUTS,
                       role=role, pools=pools)


def test_vllm_nixl_refuses_replicated_pcp_prefill_with_dcp_decode() -> None:
    """prefill cp 16, kvp 1 (replicated PCP) with decode kvp 8: base_worker.py _validate_remote_parallel_config
    raises; prefill_cp_size == 1 (no), prefill_kvp_size > 1 (no), decode_kvp_size == 1 (no): the pair fails."""
    fw = load_framework("vllm")
    assert fw.unpaired(PCP16, DCP8).id == "C.nixl_replicated_pcp_not_to_dcp"
    with pytest.raises(InputError, match="C.nixl_replicated_pcp_not_to_dcp"):
        _emit("vllm", R1, DCP8, "decode", {"prefill": PCP16, "decode": DCP8})


def test_vllm_nixl_pairs_pcp_prefill_with_dp_decode() -> None:
    """decode kvp 1: the third alternative holds."""
    assert load_framework("vllm").unpaired(PCP16, DP16) is None


def test_vllm_nixl_decode_pool_runs_no_pipeline_stages() -> None:
    """decode pp 2 (two stages of TP 8) under kv_consumer: base_worker.py raises NotImplementedError."""
    pp2 = ParallelConfig(world_size=16, attn_tp_size=8, moe_tp_size=1, embed_tp_size=8, lmhead_tp_size=8,
                         dense_tp_size=8, o_proj_tp_size=1, pp_size=2)
    with pytest.raises(InputError, match="C.nixl_decode_no_pp"):
        _emit("vllm", R1, pp2, "decode", {"prefill": DP16, "decode": pp2})


def test_vllm_nixl_decode_pool_runs_no_prefill_context_parallel() -> None:
    """PCP in a kv_consumer: connector.py raises NotImplementedError."""
    with pytest.raises(InputError, match="C.nixl_decode_no_pcp"):
        _emit("vllm", R1, PCP16, "decode", {"prefill": PCP16, "decode": PCP16})


def test_vllm_each_node_names_its_own_nixl_side_channel_host() -> None:
    """16 ranks on 8-GPU nodes: node 0 is the head (${HEAD_NODE_ADDR}), node 1 ${NODE1_ADDR}; the default,
    localhost, is unreachable from the decode pool's nodes."""
    launch = _emit("vllm", R1, PCP16, "prefill", {"prefill": PCP16, "decode": DP16})
    assert [n["env"]["VLLM_NIXL_SIDE_CHANNEL_HOST"] for n in launch["nodes"]] == \
        ["${HEAD_NODE_ADDR}", "${NODE1_ADDR}"]
    assert "VLLM_NIXL_SIDE_CHANNEL_PORT" in launch["missing"]


def _tp(world: int, attn_tp: int, pp: int = 1) -> ParallelConfig:
    """`world` ranks a stage, `pp` stages."""
    return ParallelConfig(world_size=world * pp, attn_tp_size=attn_tp, moe_tp_size=1, embed_tp_size=attn_tp,
                          lmhead_tp_size=attn_tp, dense_tp_size=attn_tp, pp_size=pp)


def test_sglang_pd_attention_tp_sizes_divide_one_another() -> None:
    """prefill attention TP 4, decode 8: 8 % 4 == 0, paired; prefill 4 (world 4), decode 6 (world 6): neither
    4 % 6 nor 6 % 4 is 0: refused."""
    fw = load_framework("sglang")
    assert fw.unpaired(_tp(4, 4), _tp(8, 8)) is None
    assert fw.unpaired(_tp(4, 4), _tp(6, 6)).id == "C.pd_attn_tp_ratio_whole"


def test_sglang_pd_decode_pp_is_prefills_or_one() -> None:
    """prefill pp 2 (4 ranks a stage), decode pp 1: paired; prefill pp 1, decode pp 2: 2 != 1 and 2 != 1: refused."""
    fw = load_framework("sglang")
    assert fw.unpaired(_tp(4, 4, pp=2), _tp(4, 4)) is None
    assert fw.unpaired(_tp(4, 4), _tp(4, 4, pp=2)).id == "C.pd_pp_equal_or_decode_one"


def test_sglang_pd_decode_runs_no_attention_cp() -> None:
    """common/conn.py asserts the decode attn_cp_size is 1."""
    cp8 = ParallelConfig(world_size=8, attn_tp_size=1, cp_size=8, moe_tp_size=1, embed_tp_size=8, lmhead_tp_size=8,
                         dense_tp_size=1)
    with pytest.raises(InputError, match="C.pd_decode_no_attn_cp"):
        _emit("sglang", R1, cp8, "decode", {"prefill": cp8, "decode": cp8})


@pytest.mark.parametrize("role", ["prefill", "decode"])
def test_a_pool_workers_recipe_command_runs_the_file_written_for_that_pool(role: str) -> None:
    """cann-recipes writes the model YAML's parallel block and runs the recipe script on it. A pool's file is
    written as `{role}_shardplan-parallel-config.yaml` (the two pools' files side by side), so the command must
    name that file, not the unprefixed one nobody wrote."""
    model, hw, fw = load_model("qwen3-235b"), load_hardware("atlas_a3"), load_framework("cann-recipes")
    pc = ParallelConfig(world_size=8, attn_tp_size=8, lmhead_tp_size=8)
    launch = emit_launch(fw, model, hw, pc, LaunchInputs(batch=16, max_model_len=3072), role=role)
    (written,) = launch["files"]
    assert written == f"{role}_shardplan-parallel-config.yaml"
    assert launch["nodes"][0]["argv"] == ["${CANN_RECIPES_RUN}", written]
    assert render_shell(launch).rstrip().endswith(f"${{CANN_RECIPES_RUN}} {written}")


def test_an_aggregated_recipe_command_runs_its_one_unprefixed_file() -> None:
    """Without a role the one file keeps its plain name and the command runs it (the same profile entry)."""
    model, hw, fw = load_model("qwen3-235b"), load_hardware("atlas_a3"), load_framework("cann-recipes")
    pc = ParallelConfig(world_size=8, attn_tp_size=8, lmhead_tp_size=8)
    launch = emit_launch(fw, model, hw, pc, LaunchInputs(batch=16, max_model_len=3072))
    assert list(launch["files"]) == ["shardplan-parallel-config.yaml"]
    assert launch["nodes"][0]["argv"] == ["${CANN_RECIPES_RUN}", "shardplan-parallel-config.yaml"]


def _pool(phase: str, world: int, tp: int) -> SimpleNamespace:
    model, hw, fw = load_model("deepseek-v3"), load_hardware("h200_sxm"), load_framework("sglang")
    pc = ParallelConfig(world_size=world, attn_tp_size=tp, o_proj_tp_size=tp, dense_tp_size=tp, moe_tp_size=tp,
                        embed_tp_size=tp, lmhead_tp_size=tp)
    launch = emit_launch(fw, model, hw, pc, LaunchInputs(batch=8, max_model_len=3072), role=phase)
    return SimpleNamespace(phase=phase, workers=1, launch=launch,
                           candidate=SimpleNamespace(pattern=f"Pure TP{tp}", planned=SimpleNamespace(config=pc)))


def test_a_pool_header_names_a_head_node_address_only_for_a_worker_that_spans_nodes() -> None:
    """h200_sxm has 8 GPUs a node: a 16-rank worker spans 2 nodes (its command reads ${HEAD_NODE_ADDR}), an
    8-rank worker fits in one and has no head node to name; neither pool runs on 'GPUs' by name (Ascend NPUs)."""
    from solver.report.disagg_view import launch_text

    text = launch_text(SimpleNamespace(pools=[_pool("prefill", 8, 8), _pool("decode", 16, 16)]))
    prefill, decode = [line for line in text.splitlines() if " pool: " in line]
    assert "HEAD_NODE_ADDR" not in prefill and "own cards" in prefill
    assert decode.endswith("each on its own cards and its own ${HEAD_NODE_ADDR}")
    assert "GPUs" not in prefill + decode


def test_a_disaggregated_plan_says_beside_its_figures_what_the_engine_cannot_be_told() -> None:
    """The facts give ATOM no disaggregated-serving flags (engines.md has no such row; atom.yaml launch.disagg
    `missing`). `solve --serving disagg --framework atom` printed "disagg wins" in its table and YAML and said the
    role and KV-transfer flags were missing only under --format launch; both now carry the line once."""
    from solver.entry import run_disagg
    from solver.report.disagg_view import render

    r = run_disagg("qwen3.5-35b-a3b", "mi355x", 8, Scenario(kind="balanced"), framework="atom")
    gap = "the facts (engines.md) give no ATOM disaggregated-serving flags (role, KV transfer)"
    table, yml = render(r, "table"), render(r, "yaml")
    assert table.count(gap) == 1 and f"  missing: {gap}" in table
    assert yml.count(gap) == 1 and f"# missing: {gap}" in yml
