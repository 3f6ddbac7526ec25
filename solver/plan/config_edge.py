"""The most requests the first candidate's own configuration holds, where the planner stopped it at a power of two.
The planner plans the powers of two and the deployment's edges (plan.memory_edge, plan.sla_edge), not each
configuration's own memory edge (its cost: benchmarks/README.md, "Stop 36"), so a configuration whose KV cache holds
more than the power it was planned at is shown there. This finds the count it holds, between its concurrency and the
next one planned, under the tests the planner's `verify` applies (plan.solve: the full estimate's memory and SLAs,
and room for what the figures assume, layout_memory.assumed_memory) and the engine's batch rules (rank.held_note says
so where the figures there score better than the candidate's beyond the ranking's tie band).
"""
from __future__ import annotations

from dataclasses import dataclass
from solver.estimate.factors import Factors
from solver.estimate.memory import max_batch
from solver.estimate.memory_options import MemoryOptions
from solver.estimate.request_state import state_pool_binds
from solver.estimate.serving import Estimate, Workload, estimate
from solver.plan.memory_edge import bisect_edge
from solver.plan.sla_edge import full_estimate_misses
from solver.specs.framework import FrameworkProfile
from solver.specs.hardware import Hardware
from solver.specs.model import ModelSpec
from solver.specs.parallel import ParallelConfig
from solver.specs.precision import Precision
from solver.specs.rule_env import device_facts, model_env
from solver.specs.scenario import Scenario


@dataclass(frozen=True)
class HeldEdge:
    requests: int  # the most requests the configuration holds and runs in the range
    estimate: Estimate  # its full estimate there
    # what stops it there: "memory", "the SLAs", "the engine's batch rules" or "the next planned concurrency"
    bound: str


def is_power_of_two(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def held_edge(model: ModelSpec, hw: Hardware, cfg: ParallelConfig, prec: Precision, f: Factors,
              fw: FrameworkProfile, scenario: Scenario, mem_opts: MemoryOptions, batch: int, upper: int
              ) -> HeldEdge | None:
    """The most requests in (batch, upper) that `cfg` holds (its memory at the scenario's longest context, as
    `memory` sizes it: estimate.memory.max_batch, a multiple of the attention replicas), runs under the engine's
    batch rules and serves within the full estimate's memory and SLAs; None where no count there does. `hw`, `f`
    and `mem_opts` as the planner priced the configuration (plan.solve.plan_inputs)."""
    mtp_layers = scenario.mtp if model.num_mtp_layers else 0
    mem_cap = max_batch(model, hw, cfg, prec, scenario.max_seq_len, mem_opts, mtp_layers=mtp_layers)
    hi = min(mem_cap, upper - 1)
    if hi <= batch:
        return None
    knobs = cfg.knobs()

    def runs(c: int) -> bool:  # the engine's batch rules (a batch a multiple of the attention DP size)
        env = model_env(knobs, model, **device_facts(hw), world=cfg.world_size, batch=c, mtp=scenario.mtp)
        return all(r.holds(env) for r in fw.batch_rules)
    seen: dict[int, Estimate] = {}

    def full(c: int) -> Estimate:
        if c not in seen:
            seen[c] = estimate(model, hw, cfg, prec, f, Workload.for_scenario(scenario, c), mem_opts)
        return seen[c]

    def serves(c: int) -> bool:  # monotone: a TTFT, a TPOT and the memory grow with the requests
        return not full_estimate_misses(full(c), scenario)

    # the memory's count is the answer unless the full estimate or the rules stop below it (a check or two)
    top = hi if serves(hi) else bisect_edge(batch, hi, serves)
    if top is None:
        return None
    n = next((c for c in range(top, batch, -1) if runs(c)), None)
    if n is None:
        return None
    bound = ("the engine's batch rules" if n < top else "the SLAs" if top < hi
             else _memory_bound(model, cfg, prec, scenario.max_seq_len, mtp_layers, mem_opts) if hi == mem_cap
             else "the next planned concurrency")
    return HeldEdge(n, full(n), bound)


def _memory_bound(model: ModelSpec, cfg: ParallelConfig, prec: Precision, seq_len: int, mtp_layers: int,
                  mem_opts: MemoryOptions) -> str:
    """'memory', naming the engine's state pool where it, not the KV pool, bounds the requests (a hybrid model
    under an engine that keeps its state in a pool of its own: request_state.state_pool_binds)."""
    binds = state_pool_binds(model, cfg, prec, seq_len, mtp_layers, mem_opts.kvp_splits_attention_weights,
                             mem_opts.cache_layout)
    return "memory: the engine's state pool binds" if binds else "memory"
