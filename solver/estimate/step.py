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

The parts a step is costed from (the decode layout, the blocks it selects, each block's memoised records, the
head's and MTP draft passes' collectives) are in step_parts.py; the planner's cached per-module sums of the
same steps in step_sums.py.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import lru_cache

from solver.estimate import pipeline
from solver.estimate.compute import CommCost, Factors, Kit, OpCost, Work, head_ops
from solver.estimate.params import ParamReport
from solver.estimate.stage_ranks import stage_device
from solver.estimate.step_parts import (
    block_cost, draft_records, draft_work, engine_decode_layout, head_comms, selected_blocks,
)
from solver.specs.hardware import Hardware
from solver.specs.layers.base import ACT_BYTES
from solver.specs.model import ModelSpec
from solver.specs.parallel import ParallelConfig
from solver.specs.precision import Precision


@dataclass
class StepCost:
    ops: list[OpCost] = field(default_factory=list)  # totals over layers
    comms: list[CommCost] = field(default_factory=list)
    overhead_s: float = 0.0
    # kernels the step launches, where it is not the ops' own count (a pipeline: its stages' launchers combined,
    # see pipeline_step); None = the ops' overheads over the per-kernel overhead (engine_step.kernels_launched)
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


def step_items(model: ModelSpec, hw: Hardware, pc: ParallelConfig, prec: Precision, f: Factors, w: Work,
               mtp_layers: int = 0, attention_only: bool = False, modules: frozenset[str] | None = None
               ) -> list[tuple[list[OpCost], list[CommCost], float, bool]]:
    """A step without pipeline stages as (ops, collectives, times repeated, is an MTP draft pass) chunks of
    unscaled records: step_cost scales them into a StepCost (the planner's tables add step_sums)."""
    pc, w = engine_decode_layout(pc, w, f)
    kit = Kit(hw, pc, prec, f, w)
    pc_key = pc.key()
    blocks, head, draft, one_token = selected_blocks(model, mtp_layers, attention_only, modules, w.phase)
    out = [(*block_cost(block, kit, pc_key), n, False) for block, n in blocks]
    if head:
        out.append((head_ops(model, hw, pc, prec, f, w), head_comms(model, hw, pc, f, w), 1, False))
    if draft:
        out.append((*draft_records(model, hw, pc, prec, f, w), mtp_layers, True))
    if one_token:
        draft_kit = Kit(hw, pc, prec, f, draft_work(w))
        out += [(*block_cost(block, draft_kit, pc_key), n, True) for block, n in one_token]
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
            step.ops += [replace(o.scaled(n), name=f"mtp_{o.name}") for o in ops]
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
    embedding on the first, the LM head and MTP on the last), the stages' times with their activation hand-offs
    combined as pipeline.paced does (prefill: fill and drain, sum + (m - 1) x max; decode: max(sum, m x max)).
    The returned ops and collectives are every distinct stage's, each scaled by the times it stands in the step
    (pipeline.stage_shares: the embedding of a first stage and the LM head of a last both listed), plus
    `pp_send_recv`: what a caller sums per module is what the step takes."""
    pp, spc = pc.pp_size, pc.stage()
    m, micro = micro_work(pp, w)
    # the stage's groups priced on the ranks they hold under the engine's rank order (stage_ranks)
    shw = stage_device(hw, f.rank_order, pp, spc.attn_group_size, spc.world_size)
    costs: list[StepCost] = []  # each distinct stage's records
    times: list[float] = []  # each distinct stage's seconds on a microbatch, less the step overhead
    launches: list[float] = []  # and its kernel-launch overhead seconds
    for st in pipeline.distinct_stages(model, pp):
        sc = step_cost(st.model, shw, spc, prec, f, micro, mtp_layers=mtp_layers if st.last else 0,
                       attention_only=attention_only, modules=modules)
        gone = st.absent_modules
        sc.ops = [o for o in sc.ops if o.module not in gone]
        sc.comms = [c for c in sc.comms if c.module not in gone]
        t = sc.compute_s + sc.exposed_comm_s
        times.append(t)
        launches.append(sum(o.overhead_s for o in sc.ops))
        costs.append(sc)
    counts = pipeline.stage_counts(model, pp)
    # the hand-offs, module "pipeline" (plan/tables charges them to the attention group, which owns the layout):
    # a rank forwards its slice of its attention replica's hidden states (handoff_width: with the residual) of the
    # microbatch, its TP group all-gathering them on the next stage; not overlapped (assumption)
    split = spc.attn_tp_group(f.kvp_splits_attention_weights)
    width = pipeline.handoff_width(model, f)
    t = pipeline.send_s(hw, spc.world_size, pp, micro.new_tokens, width, f.comm, split,
                        f.rank_order, spc.attn_group_size)
    n = pipeline.paced(w.phase, m, tuple(times), counts, t)[1]
    # every stage's records, each as often as its time stands in the step: they sum to its stage seconds
    shares = pipeline.stage_shares(w.phase, m, tuple(times), counts, t)
    # each stage is its own process launching its own kernels: run eagerly, the launchers pace the pipeline as
    # its GPU stages do, so the step's launch count combines the stages' counts as their times combine
    launched = pipeline.paced(w.phase, m, tuple(launches), counts)[0]
    kernels = launched / f.kernel_overhead_s if f.kernel_overhead_s > 0 else 0.0
    out = StepCost([o.scaled(k) for sc, k in zip(costs, shares) if k for o in sc.ops],
                   [c.scaled(k) for sc, k in zip(costs, shares) if k for c in sc.comms], f.step_overhead_s, kernels)
    tier = pipeline.send_tier(hw, spc.world_size, pp, f.rank_order, spc.attn_group_size)
    out.comms.append(CommCost("pp_send_recv", "pipeline", "send_recv", 2,
                              micro.new_tokens * width * ACT_BYTES / split * n, t * n, t * n, tier))
    return out
