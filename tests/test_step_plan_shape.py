"""The planner's tables keep one step plan per (concurrency, stage count, attention replicas)
(Tables.step_plan_of, plan.table_inputs): figures.step_plan must read nothing else of a configuration."""
from __future__ import annotations

import itertools

import pytest

from solver.estimate.compute import factors_for
from solver.estimate.figures import step_plan
from solver.estimate.serving import Workload
from solver.specs.framework import list_frameworks

from conftest import rules_of  # noqa: E402
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import load_model
from solver.specs.parallel import ParallelConfig
from solver.specs.scenario import Scenario

SCENARIOS = [Scenario(), Scenario(isl=1024, osl=2048, mtp=2), Scenario(phase="prefill"),
             Scenario(phase="decode", mtp=1)]


def _configs(world: int) -> list[ParallelConfig]:
    """Every (TP, CP, KVP, SP, PP) layout of `world` ranks in powers of two, with the other knobs varied."""
    twos = [d for d in (1, 2, 4, 8, 16) if world % d == 0]
    out = []
    for tp, cp, kvp, sp, pp in itertools.product(twos, repeat=5):
        stage = world // pp
        if stage % (tp * cp * kvp * sp) or world % pp:
            continue
        other = (tp * cp + kvp) % len(twos)  # the knobs step_plan must ignore, varied with the layout
        t = twos[other] if stage % twos[other] == 0 else 1
        out.append(ParallelConfig(world_size=world, attn_tp_size=tp, cp_size=cp, kvp_size=kvp, attn_sp_size=sp,
                                  pp_size=pp, moe_tp_size=t, dense_tp_size=t, embed_tp_size=t, lmhead_tp_size=t))
    return out


@pytest.mark.parametrize("model,hardware", [("deepseek-v3.2", "atlas_a3"), ("qwen3-30b-a3b", "h200_sxm"),
                                            ("llama-3.1-70b", "h100_sxm")])
def test_a_step_plan_reads_only_the_world_stages_and_replicas(model: str, hardware: str) -> None:
    """Layouts with equal world, stage count and attention replicas (and any other knobs) get equal step plans,
    under every framework's factors (token budgets split by attention DP among them), serving, prefill and
    decode, with and without MTP, at small and large concurrencies."""
    m, hw = load_model(model), load_hardware(hardware)
    for fw in list_frameworks():
        f = factors_for(hw, rules_of(fw).efficiency_for(hw))
        for world, sc in itertools.product((16, 32), SCENARIOS):
            by_shape: dict[tuple, list[ParallelConfig]] = {}
            for pc in _configs(world):
                by_shape.setdefault((pc.pp_size, pc.attn_replicas), []).append(pc)
            assert any(len(pcs) > 1 for pcs in by_shape.values())
            for b in (1, 3, 64, 1000):
                wl = Workload.for_scenario(sc, b)
                for pcs in by_shape.values():
                    first = step_plan(m, pcs[0], f, wl)
                    for pc in pcs[1:]:
                        assert step_plan(m, pc, f, wl) == first, (fw, world, sc, b, pcs[0].key(), pc.key())
