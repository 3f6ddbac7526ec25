"""One forward step: module compute plus the communication each parallel choice implies.

Rank layout (innermost first): attention TP, then CP/SP/KVP, then attention replicas; the MoE TP group is
innermost for the MoE block, so EP peers sit `moe_tp` ranks apart. Communication follows the seed's Step 3.3:
all-reduce and all-to-all sit on the critical path; KV gathers for CP/SP and send/recv can overlap compute
(second stream), so only what exceeds the attention compute they hide behind is exposed.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from solver.estimate import comm
from solver.estimate.compute import ACT_BYTES, Factors, OpCost, Work, head_ops, layer_ops
from solver.estimate.memory import indexer_bytes_per_token_layer, kv_bytes_per_token_layer
from solver.estimate.params import ParamReport, count_params
from solver.specs.hardware import Hardware
from solver.specs.model import ModelSpec
from solver.specs.parallel import ParallelConfig
from solver.specs.precision import Precision


@dataclass(frozen=True)
class CommCost:
    name: str
    module: str
    primitive: str
    group: int
    bytes: float
    time_s: float
    exposed_s: float
    tier: str


@dataclass
class StepCost:
    ops: list[OpCost] = field(default_factory=list)  # totals over layers
    comms: list[CommCost] = field(default_factory=list)
    overhead_s: float = 0.0

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
        for o in self.ops:
            d = out.setdefault(o.module, {"compute_s": 0.0, "memory_s": 0.0, "time_s": 0.0, "comm_s": 0.0,
                                          "exposed_comm_s": 0.0, "flops": 0.0, "bytes": 0.0})
            d["compute_s"] += o.compute_s
            d["memory_s"] += o.memory_s
            d["time_s"] += o.time_s
            d["flops"] += o.flops
            d["bytes"] += o.bytes
        for c in self.comms:
            d = out.setdefault(c.module, {"compute_s": 0.0, "memory_s": 0.0, "time_s": 0.0, "comm_s": 0.0,
                                          "exposed_comm_s": 0.0, "flops": 0.0, "bytes": 0.0})
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


def _c(name: str, module: str, prim: str, n: int, nbytes: float, t: float, tier: str, exposed: float | None = None
       ) -> CommCost:
    return CommCost(name, module, prim, n, nbytes, t, t if exposed is None else exposed, tier)


def layer_comms(model: ModelSpec, hw: Hardware, pc: ParallelConfig, prec: Precision, f: Factors, w: Work,
                attn_compute_s: float) -> dict[str, list[CommCost]]:
    """Per-layer communication for the attention block, the dense FFN and the MoE block."""
    h = model.hidden_size
    a = pc.attn_tp_size
    T = w.new_tokens
    t_a = T / (pc.cp_size * pc.attn_sp_size)
    u = T * pc.attn_replicas / pc.world_size
    eff = f.comm
    attn: list[CommCost] = []

    if a > 1:  # row-parallel o_proj output: all-reduce over attention TP
        nbytes = t_a * h * ACT_BYTES
        attn.append(_c("attn_tp_allreduce", "o_proj", "all_reduce", a, nbytes,
                       comm.all_reduce_s(hw, a, nbytes, 1, eff), comm.crosses(hw, a)))
    o_extra = pc.oproj_shards // a if pc.oproj_shards > a else 1
    if o_extra > 1:  # o_proj TP under attention DP: gather inputs, reduce-scatter outputs
        stride = a * pc.cp_size * pc.kvp_size * pc.attn_sp_size if pc.attn_group_size < pc.world_size else a
        gather = o_extra * t_a * model.o_proj_dim / a * ACT_BYTES
        scatter = o_extra * t_a * h * ACT_BYTES
        attn.append(_c("oproj_tp_gather", "o_proj", "all_gather", o_extra, gather,
                       comm.all_gather_s(hw, o_extra, gather, stride, eff), comm.crosses(hw, o_extra, stride)))
        attn.append(_c("oproj_tp_scatter", "o_proj", "reduce_scatter", o_extra, scatter,
                       comm.reduce_scatter_s(hw, o_extra, scatter, stride, eff), comm.crosses(hw, o_extra, stride)))

    cache_bpt = kv_bytes_per_token_layer(model, prec.kv_bytes, a) + indexer_bytes_per_token_layer(model)
    shards = pc.cp_size * pc.attn_sp_size
    if shards > 1:
        # every rank needs the new KV (and indexer keys) of the tokens the others computed; second stream
        nbytes = T * cache_bpt
        t = comm.all_gather_s(hw, shards, nbytes, a, eff)
        attn.append(_c("kv_allgather", "attention", "all_gather", shards, nbytes, t, comm.crosses(hw, shards, a),
                       exposed=max(0.0, t - attn_compute_s)))
    key_shards = pc.kvp_size * (pc.cp_size if w.phase == "decode" else 1)
    if key_shards > 1 and w.phase == "decode":
        # each rank attends to its slice of the cache; partial outputs merge by log-sum-exp
        width = (model.kv_lora_rank or model.v_head_dim) if model.has_mla else model.v_head_dim
        nbytes = T * model.num_attention_heads / a * (width + 1) * 4
        t = comm.reduce_scatter_s(hw, key_shards, nbytes, a, eff)
        attn.append(_c("lse_merge", "attention", "reduce_scatter", key_shards, nbytes, t,
                       comm.crosses(hw, key_shards, a)))
        if pc.cp_size > 1:
            qbytes = T * model.num_attention_heads / a * ((model.kv_lora_rank or 0) + (model.qk_rope_head_dim or 0)
                                                          if model.has_mla else model.head_dim) * ACT_BYTES
            t = comm.all_gather_s(hw, pc.cp_size, qbytes, a, eff)
            attn.append(_c("q_allgather", "attention", "all_gather", pc.cp_size, qbytes, t,
                           comm.crosses(hw, pc.cp_size, a)))
        if model.has_dsa:
            nbytes = T * (model.index_topk or 2048) * 8
            t = comm.all_gather_s(hw, key_shards, nbytes, a, eff)
            attn.append(_c("topk_merge", "indexer", "all_gather", key_shards, nbytes, t,
                           comm.crosses(hw, key_shards, a)))

    dense: list[CommCost] = []
    if model.has_dense_ffn and pc.dense_tp_size > 1:
        d = pc.dense_tp_size
        nbytes = d * u * h * ACT_BYTES
        dense.append(_c("dense_tp_allreduce", "dense_ffn", "all_reduce", d, nbytes,
                        comm.all_reduce_s(hw, d, nbytes, 1, eff), comm.crosses(hw, d)))

    moe: list[CommCost] = []
    if model.is_moe and model.num_moe_layers:
        ep, t = pc.moe_ep_size, pc.moe_tp_size
        k_real = model.experts_per_token * model.num_experts / model.expert_slots
        if t > 1:
            nbytes = t * u * h * ACT_BYTES
            moe.append(_c("moe_tp_allreduce", "routed_experts", "all_reduce", t, nbytes,
                          comm.all_reduce_s(hw, t, nbytes, 1, eff), comm.crosses(hw, t)))
        if ep > 1:
            # dispatch in the GEMM's 8-bit format when it has one (DeepEP FP8 dispatch), combine in bf16
            disp_b = 1 if prec.activation in ("fp8", "int8", "fp4") else ACT_BYTES
            send = t * u * k_real * h
            td = comm.all_to_all_s(hw, ep, send * disp_b, t, eff)
            tc = comm.all_to_all_s(hw, ep, send * ACT_BYTES, t, eff)
            tier = comm.crosses(hw, ep, t)
            moe.append(_c("ep_dispatch", "routed_experts", "all_to_all", ep, send * disp_b, td, tier))
            moe.append(_c("ep_combine", "routed_experts", "all_to_all", ep, send * ACT_BYTES, tc, tier))
        if model.num_shared_experts and pc.dense_tp_size > 1:
            d = pc.dense_tp_size
            nbytes = d * u * h * ACT_BYTES
            moe.append(_c("shared_tp_allreduce", "shared_experts", "all_reduce", d, nbytes,
                          comm.all_reduce_s(hw, d, nbytes, 1, eff), comm.crosses(hw, d)))
    return {"attention": attn, "dense": dense, "moe": moe}


def head_comms(model: ModelSpec, hw: Hardware, pc: ParallelConfig, f: Factors, w: Work) -> list[CommCost]:
    h, v = model.hidden_size, model.vocab_size
    u = w.new_tokens * pc.attn_replicas / pc.world_size
    u_logit = w.logits_tokens * pc.attn_replicas / pc.world_size
    out = []
    e = pc.embed_tp_size
    if e > 1:  # vocab-parallel lookup: partial rows summed over the group
        nbytes = e * u * h * ACT_BYTES
        out.append(_c("embed_allreduce", "embedding", "all_reduce", e, nbytes,
                      comm.all_reduce_s(hw, e, nbytes, 1, f.comm), comm.crosses(hw, e)))
    lt = pc.lmhead_tp_size
    if lt > 1:  # gather hidden states of the group, then exchange vocab slices of the logits
        g = lt * u_logit * h * ACT_BYTES
        lg = u_logit * v * 4
        out.append(_c("lmhead_gather", "lm_head", "all_gather", lt, g, comm.all_gather_s(hw, lt, g, 1, f.comm),
                      comm.crosses(hw, lt)))
        out.append(_c("logits_exchange", "lm_head", "all_to_all", lt, lg, comm.all_to_all_s(hw, lt, lg, 1, f.comm),
                      comm.crosses(hw, lt)))
    return out


def step_cost(model: ModelSpec, hw: Hardware, pc: ParallelConfig, prec: Precision, f: Factors, w: Work,
              params: ParamReport | None = None, mtp_layers: int = 0) -> StepCost:
    """Cost of one forward step over all layers (plus `mtp_layers` next-n layers, run like MoE layers)."""
    params = params or count_params(model)
    ops = layer_ops(model, hw, pc, prec, f, w, params)
    attn_core = sum(o.compute_s for o in ops["attention"] if o.name in ("attention_core", "indexer_score"))
    comms = layer_comms(model, hw, pc, prec, f, w, attn_core)
    n_attn = model.num_layers + mtp_layers
    n_dense = model.num_dense_layers
    n_moe = model.num_moe_layers + (mtp_layers if model.is_moe else 0)
    if model.sublayers_per_moe_block > 1:
        n_dense = model.num_dense_layers  # LongCat: every attention sub-block has its dense FFN
    step = StepCost()
    for kind, count in (("attention", n_attn), ("dense", n_dense), ("moe", n_moe)):
        step.ops += [o.scaled(count) for o in ops[kind]]
        step.comms += [CommCost(c.name, c.module, c.primitive, c.group, c.bytes * count, c.time_s * count,
                                c.exposed_s * count, c.tier) for c in comms[kind]]
    step.ops += head_ops(model, hw, pc, prec, f, w, params)
    step.comms += head_comms(model, hw, pc, f, w)
    step.overhead_s = f.step_overhead_s
    return step
