"""One forward step: module compute plus the communication each parallel choice implies.

Rank layout (innermost first): attention TP, then CP/SP/KVP, then attention replicas; the MoE TP group is
innermost for the MoE block, so EP peers sit `moe_tp` ranks apart. Communication follows the seed's Step 3.3:
all-reduce and all-to-all sit on the critical path; KV gathers for CP/SP and send/recv can overlap compute
(second stream), so only what exceeds the attention compute they hide behind is exposed.

Resharding between modules with different TP sizes (seed Step 2, "switching cost"): hidden states leave every
module sharded by tokens (a reduce-scatter of its partial sums over its TP group) and a module with TP d
all-gathers its group's tokens on entry. Each TP module is therefore charged all-gather in + reduce-scatter
out over its own group, which is exactly an all-reduce when its neighbours use the same TP (named
`*_allreduce`) and is listed as `*_gather` / `*_scatter` at a boundary where the TP size changes. Charging
per module keeps the step additive over module groups (the planner's tables rely on it) and equals the
cheapest resharding: an all-reduce followed by a smaller group costs the same as reduce-scatter + gather.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Callable

from solver.estimate import pipeline
from solver.estimate.compute import (  # noqa: F401  (CommCost, tp_module re-exported: callers import them here)
    CommCost,
    Factors,
    Kit,
    OpCost,
    SumsKit,
    Work,
    collective,
    group_tokens,
    head_ops,
    kit_head_ops,
    op_time_s,
    stack_ops,
    tp_module,
)
from solver.estimate.params import ParamReport
from solver.memo import IdentityMemo
from solver.specs.hardware import Hardware
from solver.specs.layers.base import ACT_BYTES, block_counts  # noqa: F401
from solver.specs.model import ModelSpec
from solver.specs.parallel import ParallelConfig
from solver.specs.precision import Precision

# ops whose compute a KV gather on the second stream can hide behind (the attention core of the same layer)
_HIDING_OPS = ("attention_core", "indexer_score")


@dataclass
class StepCost:
    ops: list[OpCost] = field(default_factory=list)  # totals over layers
    comms: list[CommCost] = field(default_factory=list)
    overhead_s: float = 0.0
    # kernels the step launches, where it is not the ops' own count (a pipeline: the busiest stage's launcher,
    # see pipeline_step); None = the ops' overheads over the per-kernel overhead (serving.kernels_launched)
    kernels: float | None = None

    @property
    def compute_s(self) -> float:
        return sum(o.time_s for o in self.ops)

    @property
    def comm_s(self) -> float:
        return sum(c.time_s for c in self.comms)

    @property
    def exposed_comm_s(self) -> float:
        return sum(c.exposed_s for c in self.comms)

    @property
    def time_s(self) -> float:
        return self.compute_s + self.exposed_comm_s + self.overhead_s

    def by_module(self) -> dict[str, dict[str, float]]:
        out: dict[str, dict[str, float]] = {}

        def row(module: str) -> dict[str, float]:
            return out.setdefault(module, dict.fromkeys(
                ("compute_s", "memory_s", "time_s", "comm_s", "exposed_comm_s", "flops", "bytes"), 0.0))

        for o in self.ops:
            d = row(o.module)
            d["compute_s"] += o.compute_s
            d["memory_s"] += o.memory_s
            d["time_s"] += o.time_s
            d["flops"] += o.flops
            d["bytes"] += o.bytes
        for c in self.comms:
            d = row(c.module)
            d["comm_s"] += c.time_s
            d["exposed_comm_s"] += c.exposed_s
            d["time_s"] += c.exposed_s
        return out

    def split(self) -> dict[str, float]:
        """Time by kind: compute-bound ops, memory-bound ops, exposed communication, fixed overhead."""
        comp = sum(o.time_s for o in self.ops if o.bound == "compute")
        mem = sum(o.time_s for o in self.ops if o.bound == "memory")
        return {"compute_s": comp, "memory_s": mem, "communication_s": self.exposed_comm_s,
                "overhead_s": self.overhead_s}


def layer_comms(model: ModelSpec, hw: Hardware, pc: ParallelConfig, prec: Precision, f: Factors, w: Work,
                attn_compute_s: float, ffn: bool = True) -> dict[str, list[CommCost]]:
    """Collectives of one instance of the primary mixer ('attention'), first dense FFN and first MoE: the
    per-layer view for reports and tests (step_cost iterates the whole stack)."""
    kit = Kit(hw, pc, prec, f, w)
    mixer = model._attention or next((b for b in model.blocks if b.role == "mixer"), None)
    out: dict[str, list[CommCost]] = {"attention": mixer.comms(kit, attn_compute_s) if mixer else [],
                                      "dense": [], "moe": []}
    if ffn:
        if model._dense is not None:
            out["dense"] = model._dense.comms(kit, attn_compute_s)
        if model._moe is not None:
            out["moe"] = model._moe.comms(kit, attn_compute_s)
    return out


def head_comms(model: ModelSpec, hw: Hardware, pc: ParallelConfig, f: Factors, w: Work) -> list[CommCost]:
    return _head_colls(model, pc, w, lambda *a: collective(hw, f, *a))


def kit_head_comms(model: ModelSpec, kit: Kit) -> list:
    """head_comms as `kit`'s records."""
    return _head_colls(model, kit.pc, kit.w, kit.coll)


def _head_colls(model: ModelSpec, pc: ParallelConfig, w: Work, coll) -> list:
    """The embedding's and LM head's collectives, made by `coll` (a Kit's record maker)."""
    h, v = model.hidden_size, model.vocab_size
    out = []
    e = pc.embed_tp_size
    lt = pc.lmhead_tp_size
    u_logit = group_tokens(pc, w, lt, w.logits_tokens) / lt
    if e > 1:  # vocab-parallel lookup: partial rows summed over the group
        out.append(coll("embed_allreduce", "embedding", "all_reduce", e, group_tokens(pc, w, e) * h * ACT_BYTES))
    if lt > 1:  # gather hidden states of the group, then exchange vocab slices of the logits
        out.append(coll("lmhead_gather", "lm_head", "all_gather", lt, lt * u_logit * h * ACT_BYTES))
        out.append(coll("logits_exchange", "lm_head", "all_to_all", lt, u_logit * v * 4))
    return out


def decode_layout(pc: ParallelConfig, w: Work) -> tuple[ParallelConfig, Work]:
    """Where a decode step runs under CP. CP splits the tokens of a prompt (prefill); once prompts are in the
    cache, the CP group's ranks decode as attention-DP replicas, each request on one rank with its whole KV
    (the seed: CP is the prefill add-on, KVP the decode-time KV split, and `kvp_size` is its own knob). The CP
    group's sequences spread over its ranks, so the busiest rank decodes max(1, sequences / cp) of them.
    Evidence: the cann-recipes V3.2 decode config (cp_size = W = 128, batch 256 at 64K, MTP3) publishes TPOT
    19.84 ms (references/v32-d128-q.yaml), i.e. a step of 29-48 ms for 1.44-2.44 tokens per step. Splitting
    every request's KV over the 128 ranks would all-gather the queries of all 1024 tokens (128 heads x 576
    bf16 values, 151 MB per layer, 9.2 GB over 61 layers) to every rank: ~57 ms at A3's 161 GB/s effective UB
    rate, more than the whole step. Per-replica work in, per-rank work and the DP layout out; prefill and
    cp 1 pass through."""
    if w.phase != "decode" or pc.cp_size == 1:
        return pc, w
    key = (pc.key(), w)
    hit = _DECODE_LAYOUTS.get(key)
    if hit is not None:
        return hit
    if len(_DECODE_LAYOUTS) >= _BLOCK_CACHE_MAX:
        _DECODE_LAYOUTS.clear()
        _DP_LAYOUTS.clear()
        _DECODE_WORKS.clear()
    hit = _DECODE_LAYOUTS[key] = _decode_layout(pc, w)
    return hit


def _decode_layout(pc: ParallelConfig, w: Work) -> tuple[ParallelConfig, Work]:
    dp = _DP_LAYOUTS.get(pc.key())
    if dp is None:
        dp = _DP_LAYOUTS[pc.key()] = pc.model_copy(update={"cp_size": 1})
    return dp, _decode_work(pc.cp_size, pc.attn_replicas, w)


def _decode_work(cp: int, replicas: int, w: Work) -> Work:
    """The busiest rank's work of a decode step of `w` under CP `cp` with `replicas` attention replicas (what
    the decode layout reads of the config), memoised: the configs of every group choice beside one layout
    (under PP, where the tables cost each stage at its own layout) ask for the same one."""
    key = (cp, replicas, w)
    hit = _DECODE_WORKS.get(key)
    if hit is not None:
        return hit
    spread = min(float(cp), max(1.0, w.sequences))  # ranks of the group that hold a sequence
    busy = (w.busy_replicas if w.busy_replicas > 0 else replicas) * spread
    hit = _DECODE_WORKS[key] = replace(w, new_tokens=w.new_tokens / spread, sequences=w.sequences / spread,
                                       logits_tokens=w.logits_tokens / spread,
                                       busy_replicas=busy if spread < cp or w.busy_replicas > 0 else 0.0)
    return hit


# decode_layout per (config, work): the planner's tables ask for the same one for every block and group (both
# frozen, so the pair handed out is shared)
_DECODE_LAYOUTS: dict[tuple, tuple[ParallelConfig, Work]] = {}
_DP_LAYOUTS: dict[tuple, ParallelConfig] = {}  # config key -> the config with cp 1 (far fewer than the pairs)
_DECODE_WORKS: dict[tuple, Work] = {}  # _decode_work

# One block's ops and collectives for one (hardware, parallel config, precision, factors, work): the planner's
# tables and pipeline stages ask for the same block under the same kit many times (every stage of a pipeline
# holds the same layer objects; a stage count repeats each). Keyed by identity of the block and the kit's
# objects, which the entry keeps alive so an id is never reused while its entry exists.
_BLOCK_CACHE: dict[tuple, tuple] = {}
_BLOCK_CACHE_MAX = 200_000


def _pc_key(pc: ParallelConfig) -> tuple:
    return pc.key()


# Equal blocks cost the same (a block is frozen data; its ops read only its fields and the kit), and the model
# already adds equal blocks up (base.block_counts). A pipeline stage's stack holds other, equal layer objects
# than the whole model's (its first layer of each kind), so the caches below key a block by the first equal
# one met: an id is looked up once per object, the value hash only then.
_CANON = IdentityMemo(65_536)  # block object -> the canonical equal block
_BY_VALUE: dict[object, object] = {}


def canonical_block(block):
    """The first block met that equals `block` (the caches' key: equal blocks share their records)."""
    def first_equal():
        if len(_BY_VALUE) >= 65_536:
            _BY_VALUE.clear()
        return _BY_VALUE.setdefault(block, block)

    return _CANON.get((block,), None, first_equal)


def _records(block, kit: Kit) -> tuple[list[OpCost], list[CommCost]]:
    ops = block.ops(kit)
    hide = sum(o.compute_s for o in ops if o.name in _HIDING_OPS)
    return ops, block.comms(kit, hide)


def _kit_key(block, kit: Kit, pc_key: tuple | None) -> tuple:
    return (id(block), id(kit.hw), id(kit.prec), id(kit.f), pc_key or _pc_key(kit.pc), kit.w)


def block_cost(block, kit: Kit, pc_key: tuple | None = None) -> tuple[list[OpCost], list[CommCost]]:
    """(ops, collectives) of one instance of `block`; its KV gather hides behind its own attention core.
    `pc_key`: kit.pc.key() when the caller has it already."""
    block = canonical_block(block)
    key = _kit_key(block, kit, pc_key)
    hit = _BLOCK_CACHE.get(key)
    if hit is not None and hit[0] is block and hit[1] is kit.hw and hit[2] is kit.prec and hit[3] is kit.f:
        return hit[4], hit[5]
    ops, comms = _records(block, kit)
    if len(_BLOCK_CACHE) >= _BLOCK_CACHE_MAX:
        _BLOCK_CACHE.clear()
    _BLOCK_CACHE[key] = (block, kit.hw, kit.prec, kit.f, ops, comms)
    return ops, comms


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
        if len(_KITS) >= _BLOCK_CACHE_MAX:
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
    return _light_module_sums(ops, block.comms(kit, sum(o[2] for o in ops if o[0] in _HIDING_OPS)))


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


_MODULES: dict[int, tuple[object, frozenset[str]]] = {}


def block_modules(block) -> frozenset[str]:
    """The modules a block's parameters declare (cached per block object)."""
    hit = _MODULES.get(id(block))
    if hit is not None and hit[0] is block:
        return hit[1]
    out = frozenset(sh.module for sh in block.shares())
    _MODULES[id(block)] = (block, out)
    return out


_SELECTED: dict[tuple, tuple] = {}


def _selected(model: ModelSpec, mtp_layers: int, attention_only: bool, modules: frozenset[str] | None, phase: str
              ) -> tuple[list[tuple[object, float]], bool, bool]:
    """What a step costs: the (block, count) pairs, whether the embedding / LM head, whether the MTP draft
    heads (cached per model and question)."""
    key = (id(model), mtp_layers, attention_only, modules, phase)
    hit = _SELECTED.get(key)
    if hit is not None and hit[0] is model:
        return hit[1]
    blocks = model.block_groups
    if mtp_layers and model.mtp_modules:
        blocks = blocks + block_counts([(layer, mtp_layers) for layer in model.mtp_modules[0]])
    chosen = [(block, n) for block, n in blocks
              if not (attention_only and block.role != "mixer")
              and not (modules is not None and not (block_modules(block) & modules))]
    head = not attention_only and (modules is None or bool(modules & {"embedding", "lm_head"}))
    # each of the `mtp_layers` sequential draft passes ends in the shared lm_head over one token per
    # sequence: its weights are read again every pass (~0.5 ms per pass for DeepSeek's 1.85 GB bf16 head
    # on one H200 rank)
    draft = (not attention_only and bool(mtp_layers) and phase == "decode"
             and (modules is None or "lm_head" in modules))
    out = (chosen, head, draft)
    if len(_SELECTED) >= 4096:
        _SELECTED.clear()
    _SELECTED[key] = (model, out)
    return out


def _draft_records(model: ModelSpec, hw: Hardware, pc: ParallelConfig, prec: Precision, f: Factors, w: Work
                   ) -> tuple[list[OpCost], list[CommCost]]:
    """One MTP draft pass's LM head: one token per sequence."""
    dw = Work("decode", new_tokens=w.sequences, context=w.context, sequences=w.sequences,
              logits_tokens=w.sequences, busy_replicas=w.busy_replicas)
    return ([o for o in head_ops(model, hw, pc, prec, f, dw) if o.name == "lm_head"],
            [c for c in head_comms(model, hw, pc, f, dw) if c.module == "lm_head"])


def step_items(model: ModelSpec, hw: Hardware, pc: ParallelConfig, prec: Precision, f: Factors, w: Work,
               mtp_layers: int = 0, attention_only: bool = False, modules: frozenset[str] | None = None
               ) -> list[tuple[list[OpCost], list[CommCost], float, bool]]:
    """A step without pipeline stages as (ops, collectives, times repeated, is an MTP draft pass) chunks of
    unscaled records: step_cost scales them into a StepCost (the planner's tables add step_sums)."""
    pc, w = decode_layout(pc, w)
    kit = Kit(hw, pc, prec, f, w)
    pc_key = pc.key()
    blocks, head, draft = _selected(model, mtp_layers, attention_only, modules, w.phase)
    out = [(*block_cost(block, kit, pc_key), n, False) for block, n in blocks]
    if head:
        out.append((head_ops(model, hw, pc, prec, f, w), head_comms(model, hw, pc, f, w), 1, False))
    if draft:
        out.append((*_draft_records(model, hw, pc, prec, f, w), mtp_layers, True))
    return out


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
    per stage its model, MTP passes and chunks (index into `blocks`, HEAD or DRAFT; times repeated). A caller
    asking for the same stages and modules many times (the planner's tables) builds it once."""

    blocks: tuple
    stages: tuple[tuple[ModelSpec, int, tuple[tuple[int, float], ...]], ...]


HEAD, DRAFT = -1, -2


def sums_plan(stages: list[tuple[ModelSpec, int]], attention_only: bool, modules: frozenset[str] | None,
              phase: str) -> SumsPlan:
    index: dict[int, int] = {}
    blocks: list = []
    out = []
    for model, mtp_layers in stages:
        chosen, head, draft = _selected(model, mtp_layers, attention_only, modules, phase)
        chunks: list[tuple[int, float]] = []
        for block, n in chosen:
            block = canonical_block(block)
            i = index.get(id(block))
            if i is None:
                i = index[id(block)] = len(blocks)
                blocks.append(block)
            chunks.append((i, n))
        if head:
            chunks.append((HEAD, 1))
        if draft:
            chunks.append((DRAFT, mtp_layers))
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
    pc, w = decode_layout(pc, w)
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
    replicas only for a degree wider than it): tests/test_sums_kit.py::test_head_sums_read_only_the_head_key.
    Marked, as mixer_key."""
    g, e, lt = pc.attn_group_size, pc.embed_tp_size, pc.lmhead_tp_size
    return ("head", e, lt, g, pc.attn_replicas if max(e, lt) > g else 0)


def kit_plan_sums(plan: SumsPlan, kit: SumsKit, store: dict) -> list[list[tuple[ModuleSums, float, bool]]]:
    """plan_sums under a kit from plan_kit."""
    sums = [_sums_of(store, block, kit) for block in plan.blocks]
    out = []
    for model, mtp_layers, chunks in plan.stages:
        row = []
        for i, n in chunks:
            if i >= 0:
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


def _draft_sums(store: dict, model: ModelSpec, kit: SumsKit) -> ModuleSums:
    hit = store.get(("draft", id(model)))
    if hit is not None:
        return hit[1]
    out = module_sums(*_draft_records(model, kit.hw, kit.pc, kit.prec, kit.f, kit.w))
    store[("draft", id(model))] = (model, out)
    return out


def step_cost(model: ModelSpec, hw: Hardware, pc: ParallelConfig, prec: Precision, f: Factors, w: Work,
              params: ParamReport | None = None, mtp_layers: int = 0, attention_only: bool = False,
              modules: frozenset[str] | None = None) -> StepCost:
    """Cost of one forward step over the layer stack (plus `mtp_layers` sequential draft passes, each through
    one MTP module's layers). `attention_only`: just the mixers (what depends on the attention layout; used by
    plan/tables). `w` is the work of one attention replica (TP x CP x KVP x SP ranks); decode under CP:
    decode_layout. Under pipeline parallel: pipeline_step. `modules`: cost only the blocks holding one of these
    modules, and the embedding / LM head only when named (the planner's per-group tables; what a caller
    attributes to those modules is unchanged)."""
    if pc.pp_size > 1:
        return pipeline_step(model, hw, pc, prec, f, w, mtp_layers, attention_only, modules)
    step = StepCost(overhead_s=f.step_overhead_s)
    for ops, comms, n, draft in step_items(model, hw, pc, prec, f, w, mtp_layers, attention_only, modules):
        if draft:
            step.ops += [replace(o.scaled(n), name="mtp_lm_head") for o in ops]
            step.comms += [c.scaled(n, prefix="mtp_") for c in comms]
        else:
            step.ops += [o.scaled(n) for o in ops]
            step.comms += [c.scaled(n) for c in comms]
    return step


@lru_cache(maxsize=65_536)
def micro_work(pp: int, w: Work) -> tuple[int, Work]:
    """(microbatches, the work of one): what each stage of a `pp`-stage pipeline runs of step `w`."""
    m = pipeline.microbatches(pp, w.sequences)
    return m, replace(w, new_tokens=w.new_tokens / m, sequences=w.sequences / m, logits_tokens=w.logits_tokens / m)


def pipeline_step(model: ModelSpec, hw: Hardware, pc: ParallelConfig, prec: Precision, f: Factors, w: Work,
                  mtp_layers: int = 0, attention_only: bool = False,
                  modules: frozenset[str] | None = None) -> StepCost:
    """A step of one pipeline (estimate.pipeline): each stage's cost on a microbatch (its layers, the
    embedding on the first, the LM head and MTP on the last), the slowest stage plus its activation hand-off
    repeated over the step's slots. The returned ops and collectives are the pacing stage's, scaled by the
    slots, plus `pp_send_recv`: what a caller sums per module is what the step takes."""
    pp, spc = pc.pp_size, pc.stage()
    m, micro = micro_work(pp, w)
    pacing: StepCost | None = None
    pacing_s = 0.0
    launched = 0.0  # the most kernel-launch overhead any stage carries
    for st in pipeline.distinct_stages(model, pp):
        sc = step_cost(st.model, hw, spc, prec, f, micro, mtp_layers=mtp_layers if st.last else 0,
                       attention_only=attention_only, modules=modules)
        gone = st.absent_modules
        sc.ops = [o for o in sc.ops if o.module not in gone]
        sc.comms = [c for c in sc.comms if c.module not in gone]
        t = sc.time_s
        launched = max(launched, sum(o.overhead_s for o in sc.ops))
        if pacing is None or t > pacing_s:
            pacing, pacing_s = sc, t
    assert pacing is not None
    k = pipeline.slots(w.phase, pp, m)
    # each stage is its own process launching its own kernels: run eagerly, the slowest launcher paces the
    # pipeline as the slowest GPU stage does, so the step's launch count is the busiest stage's, per slot
    kernels = k * launched / f.kernel_overhead_s if f.kernel_overhead_s > 0 else 0.0
    out = StepCost([o.scaled(k) for o in pacing.ops], [c.scaled(k) for c in pacing.comms], f.step_overhead_s,
                   kernels)
    # the hand-off, module "pipeline" (plan/tables charges it to the attention group, which owns the layout):
    # a rank forwards its attention replica's hidden states of the microbatch; not overlapped (assumption)
    t = pipeline.send_s(hw, spc.world_size, micro.new_tokens, model.hidden_size, f.comm)
    tier = pipeline.send_tier(hw, spc.world_size)
    out.comms.append(CommCost("pp_send_recv", "pipeline", "send_recv", 2,
                              micro.new_tokens * model.hidden_size * ACT_BYTES * k, t * k, t * k, tier))
    return out
