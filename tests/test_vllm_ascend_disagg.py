"""vllm-ascend's disaggregated pools over the Mooncake KV connector it ships (0.23.0.post1 sdist: MooncakeConnectorV1,
kv_p2p/mooncake_connector.py _get_prefill_decode_size): each pool's --kv-transfer-config names both pools' sizes,
the decode pool runs without PP, the prefill TP is at least the decode TP; vLLM's NixlConnector entry is as before."""
from __future__ import annotations

import json

import pytest

from solver.errors import InputError
from solver.launch import LaunchInputs, emit_launch
from solver.plan.disagg_pools import decode_framework
from solver.specs.framework import load_framework
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import load_model
from solver.specs.parallel import ParallelConfig
from solver.specs.rule_env import device_facts, model_env
from test_engine_roundtrip import _flags

MODEL = "qwen3-30b-a3b"  # MoE, 32 query / 4 KV heads: TP 4 and TP 2 both split the KV heads
INPUTS = LaunchInputs(batch=8, max_model_len=3072)
# prefill: one TP-4 group (DP 1); decode: TP 2 x DP 4 on 8 ranks; both MoE EP (moe_tp_size 1)
PREFILL = ParallelConfig(world_size=4, attn_tp_size=4, moe_tp_size=1, embed_tp_size=4, lmhead_tp_size=4)
DECODE = ParallelConfig(world_size=8, attn_tp_size=2, moe_tp_size=1, embed_tp_size=2, lmhead_tp_size=2)
POOLS = {"prefill": PREFILL, "decode": DECODE}


def _transfer(engine: str, device: str, role: str, pc: ParallelConfig, pools=None) -> dict:
    launch = emit_launch(load_framework(engine), load_model(MODEL), load_hardware(device), pc, INPUTS, role=role,
                         pools=pools)
    return json.loads(_flags(launch["nodes"][0]["argv"])["--kv-transfer-config"])


def test_each_pools_kv_transfer_config_names_both_pools_sizes() -> None:
    """Prefill: tp_size = -tp = 4, dp_size = world 4 // attention group 4 = 1; decode: tp_size 2, dp_size
    8 // 2 = 4; pp_size 1 each. Both commands carry the same extra config, only the role differs."""
    sizes = {"prefill": {"tp_size": 4, "dp_size": 1, "pp_size": 1},
             "decode": {"tp_size": 2, "dp_size": 4, "pp_size": 1}}
    for role, kv_role in (("prefill", "kv_producer"), ("decode", "kv_consumer")):
        got = _transfer("vllm-ascend", "atlas_a3", role, POOLS[role], POOLS)
        assert got == {"kv_connector": "MooncakeConnectorV1", "kv_role": kv_role,
                       "kv_connector_extra_config": sizes}


def test_a_pools_sizes_match_its_own_command() -> None:
    """The decode command's own --tensor-parallel-size 2 and --data-parallel-size 4 are what the prefill
    command's extra config says of the decode pool."""
    launch = emit_launch(load_framework("vllm-ascend"), load_model(MODEL), load_hardware("atlas_a3"), DECODE,
                         INPUTS, role="decode", pools=POOLS)
    flags = _flags(launch["nodes"][0]["argv"])
    told = _transfer("vllm-ascend", "atlas_a3", "prefill", PREFILL, POOLS)["kv_connector_extra_config"]["decode"]
    assert (int(flags["--tensor-parallel-size"]), int(flags["--data-parallel-size"])) == \
        (told["tp_size"], told["dp_size"])


def test_the_operators_ports_and_proxy_are_said_not_invented() -> None:
    launch = emit_launch(load_framework("vllm-ascend"), load_model(MODEL), load_hardware("atlas_a3"), PREFILL,
                         INPUTS, role="prefill", pools=POOLS)
    assert "kv_port" in launch["missing"] and "proxy" in launch["missing"]
    assert "kv_port" not in _transfer("vllm-ascend", "atlas_a3", "prefill", PREFILL, POOLS)


def test_a_pool_command_without_the_other_pools_config_is_refused() -> None:
    with pytest.raises(InputError) as exc:
        _transfer("vllm-ascend", "atlas_a3", "decode", DECODE)
    assert exc.value.field == "pools" and "prefill pool" in str(exc.value)


def test_a_decode_pool_with_pipeline_parallel_is_not_emitted() -> None:
    """decode pp_size 2 (two TP-4 stages of 8 ranks): the connector asserts decode pp size 1."""
    decode = ParallelConfig(world_size=8, attn_tp_size=4, moe_tp_size=1, embed_tp_size=4, lmhead_tp_size=4,
                            pp_size=2)
    with pytest.raises(InputError, match=r"C\.mooncake_decode_no_pp"):
        _transfer("vllm-ascend", "atlas_a3", "decode", decode, {"prefill": PREFILL})


def test_the_planner_plans_vllm_ascend_decode_pools_without_pipeline_parallel() -> None:
    """The decode pool's plans hold the profile's rules plus the transfer's decode rules: pp_size 2 breaks
    C.mooncake_decode_no_pp there, not in the profile an aggregated plan reads."""
    fw, model, hw = load_framework("vllm-ascend"), load_model(MODEL), load_hardware("atlas_a3")
    cfg = dict(attn_tp_size=4, moe_tp_size=1, embed_tp_size=4, lmhead_tp_size=4, pp_size=2)
    env = model_env({**ParallelConfig(world_size=8).settings(), **cfg}, model, **device_facts(hw), world=8)
    assert [r.id for r in decode_framework(fw).violated(env)] == ["C.mooncake_decode_no_pp"]
    assert fw.violated(env) == []
    # vLLM's NixlConnector refuses a consumer with PP too (0.34.0 nixl/base_worker.py): its decode rule breaks
    vllm = load_framework("vllm")
    assert "C.nixl_decode_no_pp" in [r.id for r in decode_framework(vllm).violated(env)]


def test_a_prefill_tp_below_the_decode_tp_is_refused() -> None:
    """Prefill TP 2 < decode TP 4: MooncakeConnectorWorker raises ValueError at start."""
    prefill = ParallelConfig(world_size=4, attn_tp_size=2, moe_tp_size=1, embed_tp_size=2, lmhead_tp_size=2)
    decode = ParallelConfig(world_size=4, attn_tp_size=4, moe_tp_size=1, embed_tp_size=4, lmhead_tp_size=4)
    for role, pc in (("prefill", prefill), ("decode", decode)):
        with pytest.raises(InputError, match=r"prefill_tp_group_size 2.*C\.mooncake_prefill_tp_covers_decode_tp"):
            _transfer("vllm-ascend", "atlas_a3", role, pc, {"prefill": prefill, "decode": decode})


@pytest.mark.parametrize("role, kv_role", [("prefill", "kv_producer"), ("decode", "kv_consumer")])
def test_vllms_nixl_transfer_config_is_unchanged(role, kv_role) -> None:
    """vLLM's connector reads no pool sizes: the same two keys with or without the pools."""
    want = {"kv_connector": "NixlConnector", "kv_role": kv_role}
    assert _transfer("vllm", "h200_sxm", role, POOLS[role], POOLS) == want
    assert _transfer("vllm", "h200_sxm", role, POOLS[role]) == want


def test_the_planner_pairs_only_pools_the_connector_runs() -> None:
    """C.mooncake_prefill_tp_covers_decode_tp binds the planner too (FrameworkProfile.unpaired): Qwen3-235B on 64 A3
    dies disaggregated under vllm-ascend plans a prefill TP at least the decode TP, and its commands launch (the
    planner's best pair before the rule, prefill TP2 with decode TP4, raised ValueError in the connector)."""
    from click.testing import CliRunner

    from solver.cli.main import main

    r = CliRunner().invoke(main, ["solve", "qwen3-235b-a22b", "--hardware", "atlas_a3", "--cards", "64",
                                  "--framework", "vllm-ascend", "--serving", "disagg", "--format", "launch"])
    assert r.exit_code == 0, r.output
    configs = [json.loads(line.split("--kv-transfer-config ", 1)[1].strip("'"))["kv_connector_extra_config"]
               for line in r.stdout.splitlines() if "--kv-transfer-config" in line]
    assert configs and all(c["prefill"]["tp_size"] >= c["decode"]["tp_size"] for c in configs)


def test_pools_no_pair_of_which_the_connector_runs_name_its_check(tmp_path) -> None:
    """A profile whose transfer pairs nothing that fits (prefill TP above the 16-die node): the one line names the
    check, and the sizes the pools were planned at, exit 1."""
    from click.testing import CliRunner

    from solver.cli.main import main
    from solver.catalog import frameworks_dir

    text = (frameworks_dir() / "vllm-ascend.yaml").read_text()
    strict = text.replace("require: prefill_tp_group_size >= decode_tp_group_size",
                          "require: prefill_tp_group_size > 64")
    assert strict != text
    path = tmp_path / "strict.yaml"
    path.write_text(strict.replace("name: vllm-ascend", "name: vllm-ascend-strict", 1))
    r = CliRunner().invoke(main, ["solve", "qwen3-30b-a3b", "--hardware", "atlas_a3", "--cards", "16",
                                  "--framework", str(path), "--serving", "disagg"])
    assert r.exit_code == 1, r.output
    assert "[C.mooncake_prefill_tp_covers_decode_tp]" in r.output and "prefill_tp_group_size planned at" in r.output
