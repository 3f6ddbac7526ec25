"""Wide expert parallelism as the engines' guides run it: SGLang and vLLM switch their command to the DeepEP
kernels where the profile's one condition (serving.ep_kernels.when) holds, and the estimate prices that
exchange exactly there (Factors.ep_exchange_for); elsewhere the default command's all-gather + reduce-scatter.

The condition both profiles state: on_cuda and moe_tp_size == 1 and attn_dp_size > 1 and moe_ep_size >
ranks_per_node (a CUDA device, attention DP, EP over the whole stage, the MoE group spanning nodes).
DeepSeek-V3 (hidden 7168, top-8, FP8 activations: dispatch 1 byte, combine 2) on H100 (8 ranks a node)."""
from __future__ import annotations

from dataclasses import replace

import pytest
from pydantic import ValidationError

from solver.estimate import comm
from solver.estimate.compute import Work, factors_for
from solver.estimate.step import layer_comms
from solver.launch.emit import LaunchInputs, emit_launch
from solver.specs.framework import load_framework
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import load_model
from solver.specs.parallel import make_parallel_config
from solver.specs.precision import resolve_precision
from solver.specs.profile_serving import EpKernels

H100 = load_hardware("h100_sxm")
H200 = load_hardware("h200_sxm")
MI300X = load_hardware("mi300x")
V3 = load_model("deepseek-v3")
SGL, VLLM = load_framework("sglang"), load_framework("vllm")
DECODE = Work("decode", new_tokens=32, context=4096, sequences=32, logits_tokens=32)  # per attention replica


def _factors(fw=SGL, hw=H100):
    """The profile's exchanges and condition at comm efficiency 1 (the hand figures below use the raw links)."""
    s = fw.serving
    assert s.ep_kernels is not None
    return replace(factors_for(hw), ep_exchange=s.ep_exchange, ep_kernels_exchange=s.ep_kernels.exchange,
                   ep_kernels_when=s.ep_kernels.when)


def _comms(pc, hw=H100, fw=SGL) -> dict:
    out = layer_comms(V3, hw, pc, resolve_precision(V3, hw), _factors(fw, hw), DECODE, 0.0)
    return {c.name: c for cs in out.values() for c in cs}


def test_both_profiles_state_the_deepep_kernels_and_one_condition() -> None:
    for fw in (SGL, VLLM):
        k = fw.serving.ep_kernels
        assert k is not None and k.exchange == "a2a_kernel"
        assert fw.serving.ep_exchange == "allgather_reducescatter"
        # the estimate's Factors carry the same condition text the launch reads
        f = factors_for(H100, fw.efficiency_for(H100))
        assert (f.ep_kernels_exchange, f.ep_kernels_when) == ("a2a_kernel", k.when)


@pytest.mark.parametrize("cards, knobs, hw, expected", [
    (16, {}, H100, "a2a_kernel"),                              # EP16 over 2 nodes, attention DP 16
    (8, {}, H100, "allgather_reducescatter"),                  # EP8 inside one node: the default command
    (16, {"moe_tp_size": 2}, H100, "allgather_reducescatter"),  # MoE TP 2: DeepEP would reset EP to the world
    (16, {"attn_tp_size": 16}, H100, "allgather_reducescatter"),  # no attention DP: nothing to dispatch
    (48, {"pp_size": 3}, H100, "a2a_kernel"),                  # PP3: a stage's 16 ranks span 2 nodes
    (24, {"pp_size": 3}, H100, "allgather_reducescatter"),     # PP3: a stage's 8 ranks fill one node
    (16, {}, MI300X, "allgather_reducescatter"),               # a ROCm device: DeepEP is CUDA's
])
def test_the_condition_picks_the_exchange(cards, knobs, hw, expected) -> None:
    """The MoE group's view only: its EP and TP, attention DP, the stage's ranks and the device."""
    pc = make_parallel_config(cards, **knobs)
    assert _factors(hw=hw).ep_exchange_for(pc, hw) == expected


def test_kernels_dispatch_and_combine_across_two_nodes() -> None:
    """EP16 on 2 H100 nodes, 32 tokens a rank: the kernels send 32 x 8 x 7168 = 1,835,008 B (FP8) and combine
    3,670,016 B (bf16), each at the device's kernel latency (33.39 us at 16 ranks) plus the bytes:
    54.72 us and 76.06 us."""
    c = _comms(make_parallel_config(16))
    d, k = c["ep_dispatch"], c["ep_combine"]
    assert (d.primitive, d.group, k.primitive) == ("ep_all_to_all", 16, "ep_all_to_all")
    assert d.bytes == pytest.approx(32 * 8 * 7168) and k.bytes == pytest.approx(2 * 32 * 8 * 7168)
    assert d.time_s == pytest.approx(comm.ep_all_to_all_s(H100, 16, 1_835_008)) == pytest.approx(54.72e-6, rel=1e-3)
    assert k.time_s == pytest.approx(comm.ep_all_to_all_s(H100, 16, 3_670_016)) == pytest.approx(76.06e-6, rel=1e-3)


def test_the_same_layout_with_moe_tp_keeps_the_all_gather() -> None:
    """EP8 x MoE TP2 on the same 16 ranks: the command keeps the default exchange, an all-gather of the whole
    group's tokens (16 x 32 x 7168 x 1 B = 3,670,016 B) and a reduce-scatter in bf16 (7,340,032 B) over 16."""
    c = _comms(make_parallel_config(16, moe_tp_size=2))
    d, k = c["ep_dispatch"], c["ep_combine"]
    assert (d.primitive, d.group, d.bytes) == ("all_gather", 16, pytest.approx(3_670_016))
    assert (k.primitive, k.group, k.bytes) == ("reduce_scatter", 16, pytest.approx(7_340_032))
    assert d.time_s == pytest.approx(comm.all_gather_s(H100, 16, 3_670_016))


def _argv(fw, pc, hw=H100, batch=64, seq=4352) -> list[str]:
    out = emit_launch(fw, V3, hw, pc, LaunchInputs(batch=batch, max_model_len=seq))
    return [t for n in out["nodes"] for t in n["argv"]] + [f"{k}={v}" for n in out["nodes"]
                                                           for k, v in n.get("env", {}).items()]


TP16 = {k: 16 for k in ("attn_tp_size", "dense_tp_size", "embed_tp_size", "lmhead_tp_size")}


@pytest.mark.parametrize("cards, knobs, hw", [(16, {}, H100), (16, {"pp_size": 2}, H100), (16, {"moe_tp_size": 2}, H100),
                                              (16, TP16, H100), (32, {}, H100), (8, {}, H200)])
def test_sglang_command_carries_deepep_exactly_where_the_estimate_prices_the_kernels(cards, knobs, hw) -> None:
    pc = make_parallel_config(cards, **knobs)
    priced = _comms(pc, hw).get("ep_dispatch")
    kernels = priced is not None and priced.primitive == "ep_all_to_all"
    argv = _argv(SGL, pc, hw)
    assert ("--moe-a2a-backend" in argv) == kernels
    if kernels:
        assert argv[argv.index("--moe-a2a-backend") + 1] == "deepep"


@pytest.mark.parametrize("cards, knobs, hw", [(16, {}, H100), (32, {}, H100), (8, {}, H200), (16, TP16, H100)])
def test_vllm_command_carries_deepep_exactly_where_the_estimate_prices_the_kernels(cards, knobs, hw) -> None:
    pc = make_parallel_config(cards, **knobs)
    priced = _comms(pc, hw, VLLM).get("ep_dispatch")
    kernels = priced is not None and priced.primitive == "ep_all_to_all"
    argv = _argv(VLLM, pc, hw)
    assert ("--all2all-backend" in argv) == kernels
    if kernels:  # one backend a command: the low-latency kernels on a colocated or decode worker
        assert {argv[i + 1] for i, t in enumerate(argv) if t == "--all2all-backend"} == {"deepep_low_latency"}


def test_the_low_latency_buffer_grows_to_one_ranks_decode_batch() -> None:
    """SGLang's low-latency buffer holds 128 dispatched tokens a rank by default: 4,352 requests over 32 DP ranks (4 nodes)
    are 136 a rank, so the command raises it to 136; 2,048 requests (64 a rank) leave the default."""
    pc = make_parallel_config(32)
    assert "SGLANG_DEEPEP_NUM_MAX_DISPATCH_TOKENS_PER_RANK=136" in _argv(SGL, pc, batch=4352, seq=2176)
    assert not any(t.startswith("SGLANG_DEEPEP_NUM_MAX") for t in _argv(SGL, pc, batch=2048, seq=2176))


def test_a_condition_reading_another_groups_knob_is_refused() -> None:
    """The planner's tables are sums of per-group terms: the MoE group's exchange may read only its own view."""
    with pytest.raises(ValidationError, match="dense_tp_size"):
        EpKernels(when="dense_tp_size == 1 and moe_ep_size > 8")
    with pytest.raises(ValidationError, match="batch"):
        EpKernels(when="batch > 64")
    with pytest.raises(ValidationError, match="not a condition"):
        EpKernels(when="moe_ep_size + 1")


def test_every_profile_with_kernels_selects_them_in_its_command_and_only_then() -> None:
    """A condition without an arg reading `ep_kernels` would price kernels the command never selects; an arg
    reading it without a condition would never be emitted."""
    from solver.specs.framework import list_frameworks

    for name in list_frameworks():
        fw = load_framework(name)
        args = fw.launch.args if fw.launch is not None else []
        reads = any("ep_kernels" in (a.when or "") for a in args)
        assert reads == (fw.serving.ep_kernels is not None), name


def test_deepseek_v3_on_72_h100_under_sglang() -> None:
    """The throughput decode case (ISL 2048, OSL 256, 4,096 in flight) on 9 H100 nodes. EP72 (57 tokens a rank)
    now runs DeepEP: dispatch + combine price well below the default all-gather + reduce-scatter of all 72
    ranks' tokens. At PP3 x EP24 (a stage's 24 ranks over 3 nodes, 171 tokens a rank) the kernels' per-call
    latency and eight token copies price above the all-gather, so the plan keeps a layout outside the
    condition (MoE TP 2: the default command)."""
    f = _factors()
    wide = make_parallel_config(72, redundant_experts=32)
    assert f.ep_exchange_for(wide, H100) == "a2a_kernel"
    w = Work("decode", new_tokens=4096 / 72, context=2176, sequences=4096 / 72, logits_tokens=4096 / 72)
    prec = resolve_precision(V3, H100)

    def exchange_s(fx, pc, work) -> float:
        out = layer_comms(V3, H100, pc, prec, fx, work, 0.0)
        return sum(c.time_s for cs in out.values() for c in cs if c.name in ("ep_dispatch", "ep_combine"))

    kernels = exchange_s(f, wide, w)
    gather = exchange_s(replace(f, ep_kernels_when=""), wide, w)
    assert kernels < 0.6 * gather
    stage = make_parallel_config(72, pp_size=3, redundant_experts=8)
    ws = Work("decode", new_tokens=4096 / 24, context=2176, sequences=4096 / 24, logits_tokens=4096 / 24)
    assert f.ep_exchange_for(stage, H100) == "a2a_kernel"
    assert exchange_s(f, stage, ws) > exchange_s(replace(f, ep_kernels_when=""), stage, ws)


def test_the_72_h100_sglang_plan_keeps_the_all_gather_where_it_prices_below_the_kernels() -> None:
    """The planner on the case above: its best plan is PP3 with MoE TP 2 x EP12 a stage (moe_tp 2: outside the
    condition, the default command's all-gather), since at 171 tokens a rank the kernels price above the
    all-gather over a 24-rank stage, and EP72 (now priced with the kernels) still trails at 9 nodes."""
    from solver.api import run_solve
    from solver.plan.points import SolverParams
    from solver.specs.scenario import Scenario

    scenario = Scenario(kind="throughput", phase="decode", isl=2048, osl=256)
    _, cands = run_solve("deepseek-v3", "h100_sxm", 72, scenario, "sglang", top=3, explain_binding=False,
                         params=SolverParams(time_limit_s=10.0))
    best = cands[0].planned.config
    assert (best.pp_size, best.moe_tp_size) == (3, 2)
    assert _factors().ep_exchange_for(best, H100) == "allgather_reducescatter"
