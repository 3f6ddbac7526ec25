"""Redundant experts (EPLB): one test per rule. Figures hand-computed from DeepSeek-V3's config (256 routed
experts, 58 MoE layers) and the facts (engines.md redundant-experts row, hardware.md expert load imbalance)."""
from __future__ import annotations

import json

import pytest

from solver.errors import InputError
from solver.estimate.memory_options import MemoryOptions
from solver.estimate.weights import module_weight_bytes
from solver.estimate.params import count_params
from solver.estimate.serving import Workload
from solver.launch import LaunchInputs, emit_launch
from solver.rank.review import review
from solver.space.domains import build_space, redundant_for
from solver.specs.framework import load_framework
from solver.specs.rule_env import model_env
from solver.specs.hardware_catalog import load_hardware
from solver.specs.layers.moe import EPLB_IMBALANCE, routing_skew
from solver.specs.model_catalog import load_model
from solver.specs.parallel import ParallelConfig, make_parallel_config, smallest_redundant
from solver.specs.precision import resolve_precision
from solver.specs.scenario import Scenario


@pytest.fixture(scope="module")
def v3():
    return load_model("deepseek-v3")


def test_fewest_redundant_experts_make_ep_divide():
    # 256 + 32 = 288 = 4 x 72 = 2 x 144 (DeepSeek decode EP144, SGLang EP72); 256 + 64 = 320 (CloudMatrix EP320)
    assert smallest_redundant(256, 72) == 32
    assert smallest_redundant(256, 144) == 32
    assert smallest_redundant(256, 320) == 64
    assert smallest_redundant(256, 32) == 0
    assert smallest_redundant(256, 1) == 0


def test_engine_without_redundant_experts_keeps_ep_dividing_the_experts(v3):
    assert redundant_for(v3, load_framework("sglang"), 72) == 32
    assert redundant_for(v3, load_framework("atom"), 72) is None  # atom: no redundant experts (engines.md: —)
    assert redundant_for(v3, load_framework("atom"), 64) == 0


def test_ep72_on_256_experts_is_in_the_search_space(v3):
    scenario = Scenario(kind="throughput", phase="decode", isl=2048, osl=256)
    hw = load_hardware("h100_sxm")
    assert 1 in build_space(v3, hw, load_framework("sglang"), 72, scenario).domains["moe_tp_size"]
    # without PP or copies EP72 is out (vLLM with PP off would keep EP72 only through its redundant experts)
    no_pp = load_framework("vllm").model_copy(update={"knobs": [k for k in load_framework("vllm").knobs
                                                               if k != "pp_size"]})
    no_copies = no_pp.model_copy(update={"features": {}})
    assert 1 in build_space(v3, hw, no_pp, 72, scenario).domains["moe_tp_size"]
    assert 1 not in build_space(v3, hw, no_copies, 72, scenario).domains["moe_tp_size"]


def test_memory_counts_the_redundant_copies(v3):
    hw = load_hardware("h100_sxm")
    prec = resolve_precision(v3, hw)
    routed = next(m for m in count_params(v3).modules if m.name == "routed_experts")
    plain = module_weight_bytes(routed, v3, ParallelConfig(world_size=72), prec, MemoryOptions())
    extra = module_weight_bytes(routed, v3, ParallelConfig(world_size=72, redundant_experts=32), prec, MemoryOptions())
    # (256 + 32) / 72 = 4 experts per rank instead of 256 / 72 = 3.56: the ratio is 288 / 256
    assert extra == pytest.approx(plain * 288 / 256)
    per_expert = routed.params / 256 * prec.fmt("experts").bytes_per_param
    assert extra == pytest.approx(4 * per_expert)


def test_routing_skew_falls_to_eplb_with_redundant_experts():
    assert routing_skew(1.2, 0) == 1.2  # default balancing, ~20% (hardware.md)
    assert routing_skew(1.2, 32) == EPLB_IMBALANCE == 1.05  # perfect EPLB, ~5% (hardware.md)


def test_redundant_experts_shorten_the_expert_step_at_ep72(v3):
    from solver.estimate.compute import factors_for
    from solver.estimate.step import step_cost
    from solver.estimate.compute import Work

    hw = load_hardware("h100_sxm")
    prec = resolve_precision(v3, hw)
    f = factors_for(hw, load_framework("sglang").efficiency_for(hw))
    work = Work("decode", 256, 2048, 256, 256)
    base = ParallelConfig(world_size=64)  # 4 experts per rank, no copies
    eplb = ParallelConfig(world_size=72, redundant_experts=32)  # 4 per rank, balanced by EPLB
    t = {n: sum(o.time_s for o in step_cost(v3, hw, pc, prec, f, work).ops if o.module == "routed_experts")
         for n, pc in (("base", base), ("eplb", eplb))}
    assert t["eplb"] < t["base"]


def test_check_requires_ep_to_divide_experts_plus_redundant(v3):
    hw = load_hardware("h100_sxm")
    prec = resolve_precision(v3, hw)
    wl = Workload("decode", batch=72, seq_len=2048)
    bad = review(v3, hw, load_framework("sglang"), ParallelConfig(world_size=72, redundant_experts=16), prec, wl)
    assert any("redundant_experts 16 % moe_ep_size 72" in v for v in bad.violations["A"])
    good = review(v3, hw, load_framework("sglang"), ParallelConfig(world_size=72, redundant_experts=32), prec, wl)
    assert not good.violations["A"]


def test_check_refuses_redundant_experts_where_the_engine_has_none(v3):
    env = model_env({"redundant_experts": 32}, v3, 8, world=72, batch=72)
    assert any("atom has no redundant experts" in p for p in load_framework("atom").check(env))
    assert not load_framework("sglang").check(env)


def test_experts_per_rank_cap_counts_the_copies(v3):
    hw = load_hardware("atlas_a2")  # MC2 dispatch: at most 24 experts per rank
    prec = resolve_precision(v3, hw)
    wl = Workload("decode", batch=12, seq_len=2048)
    # EP 12: 256 + 8 = 264 slots, 22 per rank: within the cap; 256 / 12 alone would not divide
    ok = review(v3, hw, load_framework("generic"), ParallelConfig(world_size=12, redundant_experts=8), prec, wl)
    assert not any("experts per rank" in v for v in ok.violations["B"])
    # EP 10: 256 + 4 = 260 slots, 26 per rank > 24
    over = review(v3, hw, load_framework("generic"), ParallelConfig(world_size=10, redundant_experts=4), prec, wl)
    assert any("26 experts per rank > 24" in v for v in over.violations["B"])


def test_launch_spells_redundant_experts(v3):
    hw = load_hardware("h100_sxm")
    pc = ParallelConfig(world_size=72, redundant_experts=32)
    argv = emit_launch(load_framework("sglang"), v3, hw, pc, LaunchInputs(batch=72, max_model_len=4096))["nodes"][0]["argv"]
    assert argv[argv.index("--ep-num-redundant-experts") + 1] == "32"
    # vLLM 0.33.0 takes the count as a key of --eplb-config's JSON (it has no --num-redundant-experts)
    vllm = emit_launch(load_framework("vllm"), v3, hw, pc, LaunchInputs(batch=72, max_model_len=4096))["nodes"][0]["argv"]
    assert "--enable-eplb" in vllm and "--num-redundant-experts" not in vllm
    assert json.loads(vllm[vllm.index("--eplb-config") + 1]) == {"num_redundant_experts": 32}
    with pytest.raises(InputError, match="no redundant experts"):
        emit_launch(load_framework("atom"), v3, load_hardware("mi355x"), ParallelConfig(world_size=8, redundant_experts=8),
                    LaunchInputs(batch=8, max_model_len=4096))


def test_vllm_ascend_spells_redundant_experts_in_its_own_eplb_config(v3):
    """vllm-ascend balances experts itself: --additional-config eplb_config places num_redundant_experts only with
    dynamic_eplb on, which asserts DYNAMIC_EPLB=true in the environment; vLLM's --enable-eplb is refused on a
    platform that is not CUDA-alike (vllm-ascend 0.23.0.post1 ascend_config.py, eplb/core/eplb_utils.py; vLLM
    0.33.0 config/parallel.py). EP32 on Atlas A3: 256 + 32 = 288 slots, 9 per rank."""
    out = emit_launch(load_framework("vllm-ascend"), v3, load_hardware("atlas_a3"),
                      ParallelConfig(world_size=32, redundant_experts=32), LaunchInputs(batch=32, max_model_len=4096))
    node = out["nodes"][0]
    assert node["env"] == {"DYNAMIC_EPLB": "true"}
    assert "--enable-eplb" not in node["argv"] and "--eplb-config" not in node["argv"]
    extra = json.loads(node["argv"][node["argv"].index("--additional-config") + 1])
    assert extra["eplb_config"] == {"dynamic_eplb": True, "num_redundant_experts": 32}


def test_redundant_experts_setting_is_checked_as_input():
    with pytest.raises(InputError, match="--redundant-experts"):
        make_parallel_config(72, redundant_experts=-1)
    assert make_parallel_config(72, redundant_experts=32).redundant_experts == 32


def test_planner_places_redundant_experts_for_ep72(v3):
    """256 experts over EP72: (-256) mod 72 = 32 copies make 288 = 4 per rank. TensorRT-LLM (its EP exchange the
    dispatch kernels) plans EP72; SGLang's default exchange, an all-gather of every rank's tokens over the EP group,
    makes 9 nodes of it cost more than PP3 x EP24 there (profile_serving.ep_exchange)."""
    from solver.api import run_solve
    from solver.plan.points import SolverParams

    scenario = Scenario(kind="throughput", phase="decode", isl=2048, osl=256)
    result, cands = run_solve("deepseek-v3", "h100_sxm", 72, scenario, "trtllm", top=3, explain_binding=False,
                              params=SolverParams(time_limit_s=10.0))
    ep = [c.planned.config for c in cands if c.planned.config.moe_ep_size == 72]
    assert ep and all(pc.redundant_experts == 32 for pc in ep)


def test_copies_bounded_only_by_the_engines_cap(v3):
    """The engines place copies round-robin over the experts, any number of them (SGLang init_trivial: arange
    % experts), vLLM up to its MAX_EXPERT_REDUNDANCY 1023. 256 experts: EP512 needs 256 copies, EP1024 768
    (three per expert; both engines), EP1280 (-256) mod 1280 = 1024 (past vLLM's 1023, so vLLM refuses it)."""
    assert redundant_for(v3, load_framework("sglang"), 512) == 256
    assert redundant_for(v3, load_framework("sglang"), 1024) == 768
    assert redundant_for(v3, load_framework("vllm"), 1024) == 768
    assert redundant_for(v3, load_framework("sglang"), 1280) == 1024
    assert redundant_for(v3, load_framework("vllm"), 1280) is None


def test_redundant_past_the_engines_cap_is_refused_by_check():
    fw = load_framework("vllm")
    assert any("exceeds vllm's most redundant experts, 1023" in p
               for p in fw.limits({"redundant_experts": 1024, "is_moe": True}))
    assert fw.limits({"redundant_experts": 1023, "is_moe": True}) == []


def test_experts_not_dividing_ep_name_the_fewest_copies_that_would(v3):
    """EP72 on 256 experts: (-256) mod 72 = 32 copies make 288 slots, 4 per rank, where the engine places redundant
    experts (SGLang); ATOM places none, so its line names no copies."""
    hw = load_hardware("h100_sxm")
    prec, wl = resolve_precision(v3, hw), Workload("decode", batch=72, seq_len=2048)
    sg = review(v3, hw, load_framework("sglang"), ParallelConfig(world_size=72), prec, wl).violations["A"]
    assert "num_experts 256 % moe_ep_size 72 != 0 (32 redundant experts make 288 slots, 4 per rank)" in sg
    mi = load_hardware("mi355x")
    at = review(v3, mi, load_framework("atom"), ParallelConfig(world_size=72), resolve_precision(v3, mi),
                wl).violations["A"]
    assert "num_experts 256 % moe_ep_size 72 != 0" in at
