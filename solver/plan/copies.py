"""Whether copies of a smaller deployment would serve better than the one deployment of W cards asked for.

`solve` answers one deployment of W cards. Where that answer is held down by something a smaller world lifts, k
copies of a deployment of W / k cards behind a load balancer (the scale-out `recommend` weighs,
solver/capacity/recommend.py) may carry more output tokens/s per rank. The hint is planned only where the
answer shows such a cause, so a solve without one pays nothing:

- a binding rule (PlanResult.binding) that reads the world size or a size derived from it (`world`,
  `moe_ep_size`, `attn_dp_size`: specs/rule_env.rule_env derives the last two from `world`): EP that must divide
  the experts, an EPLB placement that holds only so many copies, MoE TP over the whole world. A smaller world
  meets such a rule with a different layout (EP256 without PP where 768 ranks need PP3 x EP256);
- a world past the device's scale-up domain: copies that each fit in one domain leave the slower tier;
- a world-bound rule that held #1's attention over the whole world, turning away #1's own pattern over a share
  of it, which a copy runs (attention_held): an engine that runs attention DP only as copies (TensorRT-LLM on a
  dense model: attention TP over the whole world), where the planner, whose tables never held the layout,
  cannot name the rule as binding. Asked of the answer only: a
  copy whose own world turns such a layout away still is not held to be bound, since its copies are more
  copies of the same engine, which `recommend` weighs.

The copies are the whole-node (or whole-part-of-a-node) divisors of W that the engine places as W's own ranks
are placed; each size is planned as `solve --cards W/k` plans it (the same scenario, SLAs, engine and
precision), from the largest down, stopping at the first that beats the answer's output tokens/s per rank by
MARGIN with the cause lifted (said in the note), or at the first with no configuration (fewer cards hold less
memory).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from solver.errors import InfeasibleError
from solver.plan.table_build import attention_tuples
from solver.space.domains import build_space, pp_fits_nodes
from solver.specs.framework import FrameworkProfile
from solver.specs.hardware import Hardware
from solver.specs.knobs import DERIVED_NAMES
from solver.specs.model import ModelSpec
from solver.specs.parallel import ParallelConfig
from solver.specs.scenario import Scenario

# the names a rule reads that move with the world size: `world` and the sizes rule_env derives from it
# (knobs.DERIVED: attn_dp_size = world // attn_tp_size, moe_ep_size = world // moe_tp_size)
WORLD_NAMES = frozenset({"world", *DERIVED_NAMES})

# how much more output tokens/s per rank the copies must carry to be said: above the estimator's own error goal
# on the decode step (TPOT median absolute error <= 15% on the calibration rows, benchmarks/README.md), so a
# hint is not the estimate's noise between two sizes, and well past the ranking's 3% tie band (PERF_TIE)
MARGIN = 1.2


@dataclass(frozen=True)
class CopyPlan:
    """What one copy of `cards` cards answers: the first candidate's pattern, concurrency and figure."""

    cards: int
    pattern: str
    concurrency: int
    per_rank: float  # output tokens/s per rank
    bound: bool  # its own answer shows a cause a smaller world lifts still (triggers)


def world_bound(binding: Sequence[str], fw: FrameworkProfile) -> list[str]:
    """The binding families that are the engine's rules reading the world size (WORLD_NAMES)."""
    rules = {r.id: r for r in fw.rules}
    return [b for b in binding if b in rules and rules[b].names & WORLD_NAMES]


def attention_held(model: ModelSpec, hw_at: Callable[[int], Hardware], fw: FrameworkProfile, world: int,
                   scenario: Scenario, allow_cross_node: bool, first: ParallelConfig) -> list[str]:
    """The engine's world-bound rules (WORLD_NAMES) that held #1's attention over the whole world: they turned
    away the layout of #1's own pattern over a share of it (its attention group W / k ranks, the same split
    modes and stages), which a copy of W / k ranks runs (copy_sizes, largest first; `hw_at`: the device as the
    engine places that many ranks). [] where #1's attention group is not the whole world's, no such rule turned
    that layout away, or no copy runs it. A few rule checks per layout, no plan."""
    group = first.attn_tp_size * first.cp_size * first.kvp_size * first.attn_sp_size
    world_rules = frozenset(r.id for r in fw.rules if r.names & WORLD_NAMES)
    if not world_rules or group * first.pp_size != world:
        return []
    hw = hw_at(world)
    space = build_space(model, hw, fw, world, scenario, allow_cross_node=allow_cross_node)
    rejected: dict[str, int] = {}
    here = set(attention_tuples(space, model, fw, world, hw, scenario, rejected))
    held = sorted(world_rules & rejected.keys())
    if not held:
        return []
    # #1's pattern over a share of its group: the same split modes (TP, CP, KVP, SP > 1) and the same stages
    modes = tuple(v > 1 for v in (first.attn_tp_size, first.cp_size, first.kvp_size, first.attn_sp_size))
    freed = {t for t in set(attention_tuples(space, model, fw, world, hw, scenario, ignore=frozenset(held))) - here
             if t[5] == first.pp_size and tuple(v > 1 for v in t[:4]) == modes and t[0] * t[1] * t[2] * t[3] < group}
    for m in copy_sizes(world, hw) if freed else []:
        hw_m = hw_at(m)
        runs = attention_tuples(build_space(model, hw_m, fw, m, scenario, allow_cross_node=allow_cross_node),
                                model, fw, m, hw_m, scenario)
        if any(t[0] * t[1] * t[2] * t[3] * t[5] == m for t in freed & set(runs)):
            return held
    return []


def copy_sizes(world: int, hw: Hardware) -> list[int]:
    """W / k for k >= 2, largest first: the sizes k copies of which fill W's cards exactly, each a whole number
    of nodes or a whole share of one node (copies never split a node's ranks unevenly)."""
    # the node rule a pipeline stage follows (space.domains.pp_fits_nodes): W / k ranks as whole nodes or a share
    return [world // k for k in range(2, world + 1) if world % k == 0 and pp_fits_nodes(world, k, hw)]


def triggers(world: int, hw: Hardware, fw: FrameworkProfile, binding: Sequence[str]) -> list[str]:
    """Why a smaller world may serve better (empty: plan nothing more): the world-bound rules that bind, and a
    world past the scale-up domain."""
    why = world_bound(binding, fw)
    if world > hw.scale_up_domain:
        why.append(f"{world} ranks leave the {hw.scale_up_domain}-rank scale-up domain")
    return why


def fewest_copies(world: int, hw: Hardware, floor: float, solve_at: Callable[[int], CopyPlan]) -> CopyPlan | None:
    """The fewest copies (the largest size, planned first) whose output tokens/s per rank reach `floor` and whose
    own answer no longer shows a cause (CopyPlan.bound: the rule still binds at 512 of 1,024 ranks, lifted at
    256). Sizes are planned from the largest down to that one, or to the first with no configuration (a smaller
    one holds less memory still); then the first that reached `floor` though still bound, else None. Fewer copies
    are fewer engines to run: `recommend` weighs the sizes against each other for a load."""
    reached = None
    for m in copy_sizes(world, hw):
        try:
            got = solve_at(m)
        except InfeasibleError:
            break
        if got.per_rank >= floor:
            if not got.bound:
                return got
            reached = reached or got
    return reached


def copies_note(world: int, hw_name: str, here: float, best: CopyPlan, why: Sequence[str],
                recommend_cmd: str) -> str:
    """The note: k copies of `best` against `here` output tokens/s per rank, why, and the command that weighs
    copies."""
    k = world // best.cards
    shown = f"{here:,.1f}" if here >= 10 else f"{here:.3g}"
    return (f"{k} copies of {best.cards} x {hw_name} ({best.pattern}, {best.concurrency:,} requests each) would run "
            f"{best.per_rank:,.1f} output tokens/s per rank against {shown} here (bound here by "
            f"{'; '.join(why)}); `{recommend_cmd}` weighs copies")
