"""The planner-facing step sums: per-module (critical-path seconds, kernel overhead seconds) of a step's
blocks, embedding / LM head and MTP draft passes, cached per kit without keeping the records (SumsKit records
read by _light_module_sums, the one home of these additions). The planner's tables (plan/group_cost) add these
sums exactly as step.step_cost adds the records: step_sums of a stage is step.step_items summed per module.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from solver.estimate.compute import CommCost, Factors, Kit, OpCost, SumsKit, Work, kit_head_ops, op_time_s
from solver.estimate.step_parts import (
    BLOCK_CACHE_MAX,
    canonical_block,
    engine_decode_layout,
    draft_records,
    draft_work,
    hiding_s,
    kit_head_comms,
    selected_blocks,
)
from solver.specs.hardware import Hardware
from solver.specs.model import ModelSpec
from solver.specs.parallel import ParallelConfig
from solver.specs.precision import Precision


ModuleSums = tuple[tuple[str, float, float], ...]


def module_sums(ops: list[OpCost], comms: list[CommCost]) -> ModuleSums:
    """(module, seconds on the step's critical path, kernel overhead seconds) of every module in the records,
    in the order the records first name them, each the running sum over its records (as by_module adds): the
    records read as a SumsKit's tuples and summed by _light_module_sums, the one home of these additions
    (an OpCost's time_s is op_time_s of its parts, a CommCost's exposed_s its exposed seconds)."""
    return _light_module_sums([(o.name, o.module, o.compute_s, o.memory_s, o.overhead_s) for o in ops],
                              [(c.module, c.exposed_s) for c in comms])


# Per-module sums per (block or head, kit), for the planner's tables: they add sums, never read a record, so
# only the sums are kept (a few floats; the records of a hundred thousand configurations would be millions
# of objects for the garbage collector to scan). One entry per kit (hardware, precision and factors by
# identity, the config's key, the work), holding the kit and a dict of the sums costed under it, keyed by the
# (canonical) block's id, "head" / "draft" + the model's id: a share looks the kit up once and each block by
# an int. Entries keep the objects their ids name, so a hit by ids is a hit on those very objects.
# A plain dict (no closure or key assembly per call, as IdentityMemo.get has: a share looks its kit up once)
_KITS: dict[tuple, tuple[Hardware, Precision, Factors, SumsKit, dict]] = {}


def _kit_sums(hw: Hardware, pc: ParallelConfig, prec: Precision, f: Factors, w: Work, pc_key: tuple
              ) -> tuple[SumsKit, dict]:
    """The sums kit of (hw, pc, prec, f, w) and the dict of the sums costed under it (_KITS)."""
    key = (id(hw), id(prec), id(f), pc_key, w)
    hit = _KITS.get(key)
    if hit is None:
        if len(_KITS) >= BLOCK_CACHE_MAX:
            _KITS.clear()
        hit = _KITS[key] = (hw, prec, f, SumsKit(hw, pc, prec, f, w), {})
    return hit[3], hit[4]


def _sums_of(store: dict, block, kit: SumsKit) -> ModuleSums:
    """module_sums of a canonical block's records under `kit`, cached in the kit's `store`."""
    hit = store.get(id(block))
    if hit is not None:
        return hit[1]
    out = store[id(block)] = (block, _light_sums(block, kit))
    return out[1]


def _light_sums(block, kit: SumsKit) -> ModuleSums:
    """module_sums(*_records(block, kit)) from the SumsKit's records."""
    ops = block.ops(kit)
    return _light_module_sums(ops, block.comms(kit, sum(hiding_s(o[0], o[2], o[3]) for o in ops)))


def _light_module_sums(ops: list[tuple], comms: list[tuple]) -> ModuleSums:
    """module_sums of a SumsKit's records, ops (name, module, compute s, memory s, overhead s) and collectives
    (module, exposed s): per module in the order first named, the running sums of op_time_s and overhead over
    the ops, then of the exposed seconds over the collectives."""
    acc: dict[str, list[float]] = {}
    for _, module, compute, memory, overhead in ops:
        a = acc.get(module)
        if a is None:
            a = acc[module] = [0.0, 0.0]
        a[0] += op_time_s(compute, memory, overhead)
        a[1] += overhead
    for module, exposed in comms:
        a = acc.get(module)
        if a is None:
            a = acc[module] = [0.0, 0.0]
        a[0] += exposed
    return tuple((m, a[0], a[1]) for m, a in acc.items())


def block_sums(block, kit: Kit, pc_key: tuple | None = None) -> ModuleSums:
    """module_sums of block_cost(block, kit), without keeping the records."""
    k = kit.pc.key() if pc_key is None else pc_key
    skit, store = _kit_sums(kit.hw, kit.pc, kit.prec, kit.f, kit.w, k)
    return _sums_of(store, canonical_block(block), skit)


def step_sums(model: ModelSpec, hw: Hardware, pc: ParallelConfig, prec: Precision, f: Factors, w: Work,
              mtp_layers: int = 0, attention_only: bool = False, modules: frozenset[str] | None = None
              ) -> list[tuple[ModuleSums, float, bool]]:
    """step_items as (module_sums of the chunk, times repeated, is an MTP draft pass), with only the sums
    cached: one stage of stages_sums (what the planner's tables add up, plan.group_cost)."""
    return stages_sums([(model, mtp_layers)], hw, pc, prec, f, w, attention_only, modules)[0]


def stages_sums(stages: list[tuple[ModelSpec, int]], hw: Hardware, pc: ParallelConfig, prec: Precision,
                f: Factors, w: Work, attention_only: bool = False, modules: frozenset[str] | None = None
                ) -> list[list[tuple[ModuleSums, float, bool]]]:
    """step_sums of each (stage model, MTP passes) in `stages`, all run on `pc` with work `w` (a pipeline's
    stages: one config and microbatch): the same lists, with the decode layout, the kit and each block's sums
    looked up once for all stages (the stages hold the same block objects)."""
    return plan_sums(sums_plan(stages, attention_only, modules, w.phase), hw, pc, prec, f, w)


@dataclass(frozen=True)
class SumsPlan:
    """What stages_sums adds up, independent of the config and the work: the distinct (canonical) blocks, and
    per stage its model, MTP passes and chunks (index into `blocks`, HEAD or DRAFT; times repeated; whether
    costed at an MTP draft pass's one token per sequence, step_parts.draft_work). A caller asking for the same
    stages and modules many times (the planner's tables) builds it once."""

    blocks: tuple
    stages: tuple[tuple[ModelSpec, int, tuple[tuple[int, float, bool], ...]], ...]


HEAD, DRAFT = -1, -2


def sums_plan(stages: list[tuple[ModelSpec, int]], attention_only: bool, modules: frozenset[str] | None,
              phase: str) -> SumsPlan:
    index: dict[int, int] = {}
    blocks: list = []
    out = []
    for model, mtp_layers in stages:
        chosen, head, draft, one_token = selected_blocks(model, mtp_layers, attention_only, modules, phase)
        chunks: list[tuple[int, float, bool]] = []

        def add(pairs: list, one: bool) -> None:
            for block, n in pairs:
                block = canonical_block(block)
                i = index.get(id(block))
                if i is None:
                    i = index[id(block)] = len(blocks)
                    blocks.append(block)
                chunks.append((i, n, one))

        add(chosen, False)
        if head:
            chunks.append((HEAD, 1, False))
        if draft:
            chunks.append((DRAFT, mtp_layers, True))
        add(one_token, True)
        out.append((model, mtp_layers, tuple(chunks)))
    return SumsPlan(tuple(blocks), tuple(out))


def plan_sums(plan: SumsPlan, hw: Hardware, pc: ParallelConfig, prec: Precision, f: Factors, w: Work
              ) -> list[list[tuple[ModuleSums, float, bool]]]:
    """stages_sums of a SumsPlan at one config and work."""
    return kit_plan_sums(plan, *plan_kit(hw, pc, prec, f, w))


def plan_kit(hw: Hardware, pc: ParallelConfig, prec: Precision, f: Factors, w: Work,
             reads: Callable[[ParallelConfig], tuple] | None = None) -> tuple[SumsKit, dict]:
    """The sums kit a step of `w` at `pc` is costed under (its decode layout) and the kit's store of sums
    (_KITS): one per (hardware, precision, factors, config values, work), so a caller may keep what it derives
    from the kit's sums in the store too (group_cost.shares). `reads`: for a caller that costs only some
    formulas (the mixers: mixer_key; the embedding and LM head: head_key), what they read of the config, so
    configs that differ elsewhere (the world, the stage count, the other knobs) share one kit."""
    pc, w = engine_decode_layout(pc, w, f)
    return _kit_sums(hw, pc, prec, f, w, pc.key() if reads is None else reads(pc))


def mixer_key(pc: ParallelConfig) -> tuple:
    """What the mixer blocks' formulas read of a config (specs/layers: attention TP, CP, KVP, SP, o_proj TP;
    compute.group_tokens: the replicas, only for an o_proj group wider than the attention group):
    tests/test_sums_kit.py::test_mixer_sums_read_only_the_mixer_key holds every catalog mixer to it. Marked,
    so it never equals a config's key()."""
    reps = pc.attn_replicas if pc.oproj_shards > pc.attn_group_size else 0
    return ("mixers", pc.attn_tp_size, pc.cp_size, pc.kvp_size, pc.attn_sp_size, pc.o_proj_tp_size, reps)


def head_key(pc: ParallelConfig) -> tuple:
    """What the embedding's and LM head's formulas read of a config, the MTP draft passes' included
    (kit_head_ops, _head_colls: their TP degrees and compute.group_tokens: the attention group's size, and the
    replicas only for a degree wider than it; the token shards, which split a hyper-connection head's tokens):
    tests/test_sums_kit.py::test_head_sums_read_only_the_head_key. Marked, as mixer_key."""
    g, e, lt = pc.attn_group_size, pc.embed_tp_size, pc.lmhead_tp_size
    return ("head", e, lt, g, pc.attn_replicas if max(e, lt) > g else 0, pc.token_shards)


def kit_plan_sums(plan: SumsPlan, kit: SumsKit, store: dict) -> list[list[tuple[ModuleSums, float, bool]]]:
    """plan_sums under a kit from plan_kit."""
    sums = [_sums_of(store, block, kit) for block in plan.blocks]
    out = []
    for model, mtp_layers, chunks in plan.stages:
        row = []
        for i, n, one in chunks:
            if i >= 0 and one:
                draft_kit, draft_store = _draft_kit(store, kit)
                row.append((_sums_of(draft_store, plan.blocks[i], draft_kit), n, True))
            elif i >= 0:
                row.append((sums[i], n, False))
            elif i == HEAD:
                row.append((_head_sums(store, model, kit), 1, False))
            else:
                row.append((_draft_sums(store, model, kit), mtp_layers, True))
        out.append(row)
    return out


def _head_sums(store: dict, model: ModelSpec, kit: SumsKit) -> ModuleSums:
    hit = store.get(("head", id(model)))
    if hit is not None:
        return hit[1]
    out = _light_module_sums(kit_head_ops(model, kit), kit_head_comms(model, kit))
    store[("head", id(model))] = (model, out)
    return out


def _draft_kit(store: dict, kit: SumsKit) -> tuple[SumsKit, dict]:
    """The kit of an MTP draft pass's one token per sequence beside `kit` (same config, draft_work of its work)
    and the dict of the sums costed under it, kept in `kit`'s store."""
    hit = store.get("draft_kit")
    if hit is None:
        hit = store["draft_kit"] = (SumsKit(kit.hw, kit.pc, kit.prec, kit.f, draft_work(kit.w)), {})
    return hit


def _draft_sums(store: dict, model: ModelSpec, kit: SumsKit) -> ModuleSums:
    hit = store.get(("draft", id(model)))
    if hit is not None:
        return hit[1]
    out = module_sums(*draft_records(model, kit.hw, kit.pc, kit.prec, kit.f, kit.w))
    store[("draft", id(model))] = (model, out)
    return out
