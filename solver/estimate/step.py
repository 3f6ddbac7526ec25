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

from solver.estimate import comm
from solver.estimate.compute import ACT_BYTES, Factors, OpCost, Work, group_tokens, head_ops, layer_ops
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

    def scaled(self, n: float, prefix: str = "") -> "CommCost":
        """The same collective run n times (over n layers or draft passes)."""
        return replace(self, name=prefix + self.name, bytes=self.bytes * n, time_s=self.time_s * n,
                       exposed_s=self.exposed_s * n)


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


def _c(name: str, module: str, prim: str, n: int, nbytes: float, t: float, tier: str, exposed: float | None = None
       ) -> CommCost:
    return CommCost(name, module, prim, n, nbytes, t, t if exposed is None else exposed, tier)


def _tp_module(name: str, module: str, hw: Hardware, d: int, nbytes: float, eff: float, reshard: bool,
               custom: comm.CustomAllReduce | None = None) -> list[CommCost]:
    """All-gather in + reduce-scatter out over a module's TP group (one all-reduce when nothing reshards)."""
    tier = comm.crosses(hw, d)
    if not reshard:
        return [_c(f"{name}_allreduce", module, "all_reduce", d, nbytes,
                   comm.all_reduce_s(hw, d, nbytes, 1, eff, custom), tier)]
    return [_c(f"{name}_gather", module, "all_gather", d, nbytes, comm.all_gather_s(hw, d, nbytes, 1, eff), tier),
            _c(f"{name}_scatter", module, "reduce_scatter", d, nbytes, comm.reduce_scatter_s(hw, d, nbytes, 1, eff),
               tier)]


def layer_comms(model: ModelSpec, hw: Hardware, pc: ParallelConfig, prec: Precision, f: Factors, w: Work,
                attn_compute_s: float, ffn: bool = True) -> dict[str, list[CommCost]]:
    """Per-layer communication for the attention block, the dense FFN and the MoE block (`ffn=False`: the
    attention block only)."""
    h = model.hidden_size
    a = pc.attn_tp_size
    T = w.new_tokens
    t_a = T / pc.token_shards
    eff = f.comm
    ar = comm.CustomAllReduce.of(f)  # the engine's small-message all-reduce kernel (comm.py)
    attn: list[CommCost] = []

    if a > 1:  # row-parallel o_proj output: all-reduce over attention TP
        nbytes = t_a * h * ACT_BYTES
        attn.append(_c("attn_tp_allreduce", "o_proj", "all_reduce", a, nbytes,
                       comm.all_reduce_s(hw, a, nbytes, 1, eff, ar), comm.crosses(hw, a)))
    o_extra = pc.oproj_shards // a if pc.oproj_shards > a else 1
    kvp_oproj = pc.kvp_size > 1 and o_extra == pc.kvp_size  # seed class C: o_proj_tp == kvp_size
    if o_extra > 1:
        # o_proj TP beyond attention TP: row-parallel over the o_proj group, whose ranks sit next to each other
        # (stride a). Each rank needs only its 1/o_extra input slice of every group token: an all-to-all of its
        # own t_a x o_dim/a input (before this fix the gather was charged o_extra times that, the full input on
        # every rank). Under KVP with o_proj TP = kvp the merge already leaves each rank its head slice: no gather.
        # Partial sums of the group's tokens are then reduce-scattered back to their owners.
        if not kvp_oproj:
            gather = t_a * model.o_proj_dim / a * ACT_BYTES
            attn.append(_c("oproj_tp_gather", "o_proj", "all_to_all", o_extra, gather,
                           comm.all_to_all_s(hw, o_extra, gather, a, eff), comm.crosses(hw, o_extra, a)))
        scatter = group_tokens(pc, w, pc.oproj_shards) / a * h * ACT_BYTES
        attn.append(_c("oproj_tp_scatter", "o_proj", "reduce_scatter", o_extra, scatter,
                       comm.reduce_scatter_s(hw, o_extra, scatter, a, eff), comm.crosses(hw, o_extra, a)))

    cache_bpt = kv_bytes_per_token_layer(model, prec.kv_bytes, a) + indexer_bytes_per_token_layer(model)
    shards = pc.token_shards
    if shards > 1:
        # every rank needs the new KV (and indexer keys) of the tokens the others computed; second stream
        nbytes = T * cache_bpt
        t = comm.all_gather_s(hw, shards, nbytes, a, eff)
        attn.append(_c("kv_allgather", "attention", "all_gather", shards, nbytes, t, comm.crosses(hw, shards, a),
                       exposed=max(0.0, t - attn_compute_s)))
    # KVP splits keys in both phases (the core FLOPs are divided by kvp in prefill too); CP splits the
    # queries of a prompt and gathers KV above (decode never sees CP: decode_layout)
    key_shards = pc.kvp_size
    if key_shards > 1:
        # each rank attends to its slice of the cache; partial outputs merge by log-sum-exp: the lse (fp32) is
        # exchanged and the corrected outputs are reduce-scattered in the activation dtype (vLLM DCP
        # cp_lse_ag_out_rs); before this fix the outputs were charged as fp32 (2x)
        absorbed = model.has_mla and (w.phase == "decode" or model.has_dsa)
        width = (model.kv_lora_rank or model.v_head_dim) if absorbed else model.v_head_dim
        nbytes = T * model.num_attention_heads / a * (width * ACT_BYTES + 4)
        t = comm.reduce_scatter_s(hw, key_shards, nbytes, a, eff)
        attn.append(_c("lse_merge", "attention", "reduce_scatter", key_shards, nbytes, t,
                       comm.crosses(hw, key_shards, a)))
        if model.has_dsa:
            nbytes = T * (model.index_topk or 2048) * 8
            t = comm.all_gather_s(hw, key_shards, nbytes, a, eff)
            attn.append(_c("topk_merge", "indexer", "all_gather", key_shards, nbytes, t,
                           comm.crosses(hw, key_shards, a)))
    if pc.kvp_size > 1:
        # KVP ranks all compute the queries of every token of the group, but after the merge each holds a
        # 1/kvp share of the layer output: the next layer's input is all-gathered (missing before this fix)
        nbytes = T * h * ACT_BYTES
        attn.append(_c("kvp_hidden_allgather", "attention", "all_gather", pc.kvp_size, nbytes,
                       comm.all_gather_s(hw, pc.kvp_size, nbytes, a, eff), comm.crosses(hw, pc.kvp_size, a)))

    dense: list[CommCost] = []
    if not ffn:
        return {"attention": attn, "dense": dense, "moe": []}
    if model.has_dense_ffn and pc.dense_tp_size > 1:
        d = pc.dense_tp_size
        dense += _tp_module("dense_tp", "dense_ffn", hw, d, group_tokens(pc, w, d) * h * ACT_BYTES, eff, d != a, ar)

    moe: list[CommCost] = []
    if model.is_moe and model.num_moe_layers:
        ep, t = pc.moe_ep_size, pc.moe_tp_size
        k_real = model.real_experts_per_token
        if t > 1:
            moe += _tp_module("moe_tp", "routed_experts", hw, t, group_tokens(pc, w, t) * h * ACT_BYTES, eff,
                              t != a, ar)
        if ep > 1:
            # dispatch in the GEMM's 8-bit format when it has one (DeepEP FP8 dispatch), combine in bf16; the
            # busiest rank sends its own tokens to the t ranks of each destination MoE group
            disp_b = 1 if prec.activation in ("fp8", "int8", "fp4") else ACT_BYTES
            send = t * group_tokens(pc, w, 1) * k_real * h
            td = comm.all_to_all_s(hw, ep, send * disp_b, t, eff)
            tc = comm.all_to_all_s(hw, ep, send * ACT_BYTES, t, eff)
            tier = comm.crosses(hw, ep, t)
            moe.append(_c("ep_dispatch", "routed_experts", "all_to_all", ep, send * disp_b, td, tier))
            moe.append(_c("ep_combine", "routed_experts", "all_to_all", ep, send * ACT_BYTES, tc, tier))
        if model.num_shared_experts and pc.dense_tp_size > 1:
            d = pc.dense_tp_size
            moe += _tp_module("shared_tp", "shared_experts", hw, d, group_tokens(pc, w, d) * h * ACT_BYTES, eff,
                              d != a, ar)
    return {"attention": attn, "dense": dense, "moe": moe}


def head_comms(model: ModelSpec, hw: Hardware, pc: ParallelConfig, f: Factors, w: Work) -> list[CommCost]:
    h, v = model.hidden_size, model.vocab_size
    out = []
    e = pc.embed_tp_size
    lt = pc.lmhead_tp_size
    u_logit = group_tokens(pc, w, lt, w.logits_tokens) / lt
    if e > 1:  # vocab-parallel lookup: partial rows summed over the group
        nbytes = group_tokens(pc, w, e) * h * ACT_BYTES
        out.append(_c("embed_allreduce", "embedding", "all_reduce", e, nbytes,
                      comm.all_reduce_s(hw, e, nbytes, 1, f.comm, comm.CustomAllReduce.of(f)),
                      comm.crosses(hw, e)))
    if lt > 1:  # gather hidden states of the group, then exchange vocab slices of the logits
        g = lt * u_logit * h * ACT_BYTES
        lg = u_logit * v * 4
        out.append(_c("lmhead_gather", "lm_head", "all_gather", lt, g, comm.all_gather_s(hw, lt, g, 1, f.comm),
                      comm.crosses(hw, lt)))
        out.append(_c("logits_exchange", "lm_head", "all_to_all", lt, lg, comm.all_to_all_s(hw, lt, lg, 1, f.comm),
                      comm.crosses(hw, lt)))
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
    spread = min(float(pc.cp_size), max(1.0, w.sequences))  # ranks of the group that hold a sequence
    busy = (w.busy_replicas if w.busy_replicas > 0 else pc.attn_replicas) * spread
    dp = pc.model_copy(update={"cp_size": 1})
    return dp, replace(w, new_tokens=w.new_tokens / spread, sequences=w.sequences / spread,
                       logits_tokens=w.logits_tokens / spread,
                       busy_replicas=busy if spread < pc.cp_size or w.busy_replicas > 0 else 0.0)


def step_cost(model: ModelSpec, hw: Hardware, pc: ParallelConfig, prec: Precision, f: Factors, w: Work,
              params: ParamReport | None = None, mtp_layers: int = 0, attention_only: bool = False) -> StepCost:
    """Cost of one forward step over all layers (plus `mtp_layers` next-n layers, run like MoE layers).
    `attention_only`: just the attention blocks (what depends on the attention layout; used by plan/tables).
    `w` is the work of one attention replica (TP x CP x KVP x SP ranks); decode under CP: decode_layout."""
    params = params or count_params(model)
    pc, w = decode_layout(pc, w)
    ops = layer_ops(model, hw, pc, prec, f, w, params, ffn=not attention_only)
    attn_core = sum(o.compute_s for o in ops["attention"] if o.name in ("attention_core", "indexer_score"))
    comms = layer_comms(model, hw, pc, prec, f, w, attn_core, ffn=not attention_only)
    n_attn = model.num_layers + mtp_layers
    n_dense = model.num_dense_layers  # LongCat: counts every attention sub-block, each with its dense FFN
    n_moe = model.num_moe_layers + (mtp_layers if model.is_moe else 0)
    step = StepCost()
    for kind, count in (("attention", n_attn), ("dense", n_dense), ("moe", n_moe)):
        step.ops += [o.scaled(count) for o in ops[kind]]
        step.comms += [c.scaled(count) for c in comms[kind]]
    if attention_only:
        step.overhead_s = f.step_overhead_s
        return step
    step.ops += head_ops(model, hw, pc, prec, f, w, params)
    step.comms += head_comms(model, hw, pc, f, w)
    if mtp_layers and w.phase == "decode":
        # each of the `mtp_layers` sequential draft passes ends in the shared lm_head over one token per
        # sequence: its weights are read again every pass (missing before this fix; ~0.5 ms per pass for
        # DeepSeek's 1.85 GB bf16 head on one H200 rank)
        dw = Work("decode", new_tokens=w.sequences, context=w.context, sequences=w.sequences,
                  logits_tokens=w.sequences, busy_replicas=w.busy_replicas)
        draft = [o for o in head_ops(model, hw, pc, prec, f, dw, params) if o.name == "lm_head"]
        step.ops += [replace(o.scaled(mtp_layers), name="mtp_lm_head") for o in draft]
        step.comms += [c.scaled(mtp_layers, prefix="mtp_")
                       for c in head_comms(model, hw, pc, f, dw) if c.module == "lm_head"]
    step.overhead_s = f.step_overhead_s
    return step
