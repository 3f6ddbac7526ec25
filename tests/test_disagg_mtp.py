"""MTP under disaggregated serving: the prefill worker runs the MTP layers too (its command enables them and it
builds their cache, which the KV transfer carries), so its memory holds their weights and cache."""
from __future__ import annotations

from solver.estimate.compute import factors_for
from solver.estimate.disagg import DisaggWorkload, estimate_disagg
from solver.estimate.memory import memory_per_rank
from solver.plan.disagg import plan_disagg
from solver.specs.framework import load_framework
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import load_model
from solver.specs.parallel import make_parallel_config
from solver.specs.precision import resolve_precision
from solver.specs.scenario import Scenario

R1 = "deepseek-ai/DeepSeek-R1"  # one MTP layer (num_nextn_predict_layers 1)


def test_a_prefill_worker_holds_the_mtp_layers_it_runs() -> None:
    spec, hw, fw = load_model(R1), load_hardware("b200_sxm"), load_framework("trtllm")
    prec = resolve_precision(spec, hw, None, None, None)
    f = factors_for(hw, fw.efficiency_for(hw))
    pc = make_parallel_config(4, lmhead_tp_size=4)  # attention DP4 + EP4
    wl = DisaggWorkload(isl=1024, osl=1024, concurrency=8, prefill_batch=1, decode_batch=2, mtp=1)
    e = estimate_disagg(spec, hw, pc, pc, prec, f, f, wl)
    with_mtp = memory_per_rank(spec, hw, pc, prec, 4, 1024, mtp_layers=1)
    without = memory_per_rank(spec, hw, pc, prec, 4, 1024)
    assert e.prefill_memory.weights_total == with_mtp.weights_total > without.weights_total
    assert e.prefill_memory.model_bytes == with_mtp.model_bytes
    # 4 B200 hold DeepSeek-R1 at FP8 for a prefill without MTP, not with it: the plan may not count on that
    assert without.feasible and not e.prefill_memory.feasible


def test_the_planned_prefill_worker_fits_with_the_mtp_layers_its_command_enables() -> None:
    spec, hw, fw = load_model(R1), load_hardware("b200_sxm"), load_framework("trtllm")
    prec = resolve_precision(spec, hw, None, None, None)
    res = plan_disagg(spec, hw, prec, fw, 16, Scenario(kind="balanced", isl=1024, osl=1024, tpot_ms=30, mtp=1))
    for d in [res.best, *res.alternatives]:
        p = d.prefill.planned.config
        held = memory_per_rank(spec, hw, p, prec, d.estimate.shape.prompts_per_step * d.estimate.shape.prefill_replicas,
                               1024, mtp_layers=1)
        assert held.feasible
        assert d.estimate.prefill_memory.model_bytes == held.model_bytes
