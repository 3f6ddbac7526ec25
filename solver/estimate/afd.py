"""Attention-FFN disaggregation (AFD): half the ranks run attention, the other half the FFNs (verified-configs.md,
implementation rules: "half the ranks attention, half FFN; every tp size must divide world/2"; lc-afd).

Each half is a ParallelConfig of world/2 ranks carrying the same knobs: the attention half reads attn / o_proj /
embed / lmhead TP (attention DP = world/2 / attn_tp), the FFN half dense TP and MoE TP (EP = world/2 / moe_tp).
Costs come from the ordinary estimator run on that half-world config and split by module (`side_of`), so no
formula is forked: the attention side keeps the mixers, the embedding, the LM head, the norms and the router (the
sender addresses each token to the ranks holding its experts, so it routes); the FFN side keeps the modules of
the FFN blocks. The MoE's dispatch / combine all-to-all is replaced by the AFD point-to-point transfers (the seed,
Layer 2/3: "Send/Recv ... AFD communication; point-to-point, can overlap with computation").

The decode step (`afd_makespan`): the batch splits into micro-batches (two, one per side, at most one per
sequence: pipeline.microbatches) that ping-pong between the sides, hand-off by hand-off (one per mixer block):
attention of micro-batch i, its send to the FFN side, the FFN, the send back. In steady state each hand-off
takes P = max(m A, m F, m T_af, m T_fa, A + T_af + F + T_fa) for m = 2 micro-batches of per-hand-off times
A, F, T: the slower side bounds it and a transfer is hidden only by the slack |A - F| (P - 2 max(A, F) is the
transfer left exposed); the step adds the fill (the embedding and one side's first micro-batch) and the LM head.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from solver.estimate.activations import activation_peak_terms
from solver.estimate.comm import send_recv_s
from solver.estimate.compute import CommCost, Factors, OpCost, Work
from solver.estimate.memory import MemoryReport, memory_per_rank
from solver.estimate.memory_options import MemoryOptions, device_options
from solver.estimate.pipeline import send_tier
from solver.estimate.step import StepCost, micro_work, step_cost
from solver.estimate.step_parts import block_modules, engine_decode_layout
from solver.specs.hardware import Hardware
from solver.specs.layers.base import ACT_BYTES
from solver.specs.model import ModelSpec
from solver.specs.parallel import ParallelConfig
from solver.specs.precision import Precision

if TYPE_CHECKING:
    from solver.estimate.serving import Estimate

SIDES = ("attention", "ffn")
# an FFN block's module that runs on the attention side: the router picks each token's experts, which the
# attention rank must know to address its send (the FFN side receives tokens already routed)
SENDER_MODULES = frozenset({"router"})
# the FFN block's exchange the AFD transfers replace (the MoE dispatch and combine between attention and experts)
REPLACED_COMMS = frozenset({"ep_dispatch", "ep_combine"})
# the micro-batches ping-ponging between the two sides: the fewest that keep both sides busy at once, which the
# seed's overlap needs (an assumption: the facts do not state how many cann-recipes' LongCat AFD runs)
MICRO_BATCHES = 2


def half_config(pc: ParallelConfig) -> ParallelConfig:
    """One side's config: the same knobs over world/2 ranks (the caller has checked the AFD rule)."""
    return ParallelConfig(**{**pc.model_dump(), "world_size": pc.world_size // 2})


def whole_config(half: ParallelConfig, world: int) -> ParallelConfig:
    """half_config's inverse: a half's knobs over the whole deployment's `world` ranks."""
    return ParallelConfig(**{**half.model_dump(), "world_size": world})


def afd_estimator(world: int):
    """serving.estimate's stand-in for an AFD deployment of `world` ranks, for callers that hand it the half-world
    config each side runs (rank.review, one_config)."""
    def run(model, hw, half, prec, f, wl, mem_opts=None):
        return afd_estimate(model, hw, whole_config(half, world), prec, f, wl, mem_opts)

    return run


def ffn_modules(model: ModelSpec) -> frozenset[str]:
    """The modules the FFN side holds: those of the model's FFN blocks, the router aside (SENDER_MODULES)."""
    out: set[str] = set()
    for block, _ in model.block_groups:
        if block.role == "ffn":
            out |= block_modules(block)
    return frozenset(out - SENDER_MODULES)


def side_of(module: str, ffn: frozenset[str]) -> str:
    return "ffn" if module in ffn else "attention"


def hand_offs(model: ModelSpec) -> int:
    """Attention -> FFN hand-offs per step: one per mixer block (each mixer's output goes to the FFN side)."""
    return int(sum(n for block, n in model.block_groups if block.role == "mixer"))


def copies_per_token(model: ModelSpec, pc: ParallelConfig, eight_bit: bool) -> tuple[float, float]:
    """(bytes sent attention -> FFN, bytes sent back) per token per step over all hand-offs: a dense FFN block
    receives the token's hidden state once (its TP group gathers it, as without AFD); a MoE block one copy per
    real routed expert per MoE TP rank of its width, sent in the GEMM's 8-bit format where it has one and returned
    in bf16 (the dispatch / combine rule of layers/moe.py, now over the AFD link), plus, where it has shared
    experts (which run on the FFN side: ffn_modules), one hidden state each way for them, as a dense block."""
    out = back = 0.0
    for block, n in model.block_groups:
        if block.role != "ffn":
            continue
        if getattr(block, "real_topk", 0):
            copies = block.real_topk * pc.moe_tp_size * block.expert_width
            out += n * copies * (1 if eight_bit else ACT_BYTES)
            back += n * copies * ACT_BYTES
        if not getattr(block, "real_topk", 0) or getattr(block, "shared_inter", 0):
            out += n * block.hidden * ACT_BYTES
            back += n * block.hidden * ACT_BYTES
    return out, back


@dataclass(frozen=True)
class SideTimes:
    """Seconds of one micro-batch: per hand-off on each side and each way, and the attention side's head."""

    attention_s: float  # A: one hand-off's attention-side work (mixer, o_proj, router, norms, their collectives)
    ffn_s: float  # F: one hand-off's FFN-side work (dense / experts and their own TP collectives)
    to_ffn_s: float  # T_af
    to_attention_s: float  # T_fa
    embed_s: float  # before the first hand-off
    head_s: float  # the LM head after the last


def afd_makespan(t: SideTimes, hand_offs_: int, micro: int) -> float:
    """The step of `micro` micro-batches ping-ponging over `hand_offs_` hand-offs: each side, and each direction
    of the link, serves the micro-batches in order (attention of micro-batch 0 then 1 at hand-off k, ...); a
    micro-batch's next attention waits for its FFN result. Exact for that fixed order (list scheduling)."""
    ready = [0.0] * micro
    attn = ffn = to_f = to_a = 0.0
    for k in range(hand_offs_):
        for i in range(micro):
            attn = max(attn, ready[i]) + t.attention_s + (t.embed_s if k == 0 else 0.0)
            to_f = max(to_f, attn) + t.to_ffn_s
            ffn = max(ffn, to_f) + t.ffn_s
            to_a = max(to_a, ffn) + t.to_attention_s
            ready[i] = to_a
    for i in range(micro):
        attn = max(attn, ready[i]) + t.head_s
    return attn


@dataclass
class AfdStepCost(StepCost):
    """The AFD decode step: every op and collective of both sides over all micro-batches (by_module sums them), the
    AFD transfers as `afd_*` collectives, and `step_s`, the overlapped step (afd_makespan) that time_s is."""

    step_s: float = 0.0
    sides: SideTimes | None = None
    micro_batches: int = 1
    exposed_transfer_s: float = 0.0  # the step's lengthening by the transfers (step_s less the same with T = 0)
    side_busy_s: dict[str, float] = field(default_factory=dict)  # each side's work over the step
    hand_offs: int = 0
    memory_sides: "AfdMemory | None" = None  # afd_estimate sets it
    ffn: frozenset[str] = frozenset()  # the FFN side's modules (ffn_modules)

    @property
    def time_s(self) -> float:  # type: ignore[override]
        return self.step_s

    @property
    def pacing_side(self) -> str:
        """The side busy longer over the step (the one the other waits on)."""
        return max(SIDES, key=lambda s: self.side_busy_s.get(s, 0.0))

    def split(self) -> dict[str, float]:
        """The step by kind on the pacing side (both sides run at once, so the sum over both exceeds the step):
        its compute- and memory-bound ops, its exposed collectives plus the exposed AFD transfer, the fixed
        overhead, and `waiting_s`, the time it waits on the other side (its first micro-batch and the last
        return): the five add up to the step."""
        side = self.pacing_side
        ops = [o for o in self.ops if side_of(o.module, self.ffn) == side]
        comm = sum(c.exposed_s for c in self.comms if c.module != "afd" and side_of(c.module, self.ffn) == side)
        out = {"compute_s": sum(o.time_s for o in ops if o.bound == "compute"),
               "memory_s": sum(o.time_s for o in ops if o.bound == "memory"),
               "communication_s": comm + self.exposed_transfer_s, "overhead_s": self.overhead_s}
        return {**out, "waiting_s": max(0.0, self.step_s - sum(out.values()))}


def _side_s(ops: list[OpCost], comms: list[CommCost], side: str, ffn: frozenset[str],
            modules: frozenset[str] | None = None) -> float:
    """Seconds of one side's ops and exposed collectives (those of `modules` only, where given)."""
    def mine(m: str) -> bool:
        return side_of(m, ffn) == side and (modules is None or m in modules)
    return (sum(o.time_s for o in ops if mine(o.module))
            + sum(c.exposed_s for c in comms if mine(c.module) and c.name not in REPLACED_COMMS))


def afd_step(model: ModelSpec, hw: Hardware, pc: ParallelConfig, prec: Precision, f: Factors, w: Work
             ) -> AfdStepCost:
    """The AFD decode step of `pc` (the whole world: both halves) at `w`, the work of one attention replica
    of a half (figures.step_plan on half_config(pc))."""
    half = half_config(pc)
    m, micro = micro_work(MICRO_BATCHES, w)
    sc = step_cost(model, hw, half, prec, f, micro)
    ffn = ffn_modules(model)
    h = hand_offs(model)
    embed_s = _side_s(sc.ops, sc.comms, "attention", ffn, frozenset({"embedding"}))
    head_s = _side_s(sc.ops, sc.comms, "attention", ffn, frozenset({"lm_head"}))
    attn_all = _side_s(sc.ops, sc.comms, "attention", ffn)
    ffn_all = _side_s(sc.ops, sc.comms, "ffn", ffn)
    # each rank of an attention TP group holds the same rows: it sends its 1/split slice (pipeline.send_s), through
    # its own port at one peer's line rate (comm.send_recv_s), over the tier joining the two halves; A and F are
    # each side's step work spread evenly over the hand-offs. The rows are those of the decode's own layout (a CP
    # group that decodes as attention DP sends each replica's tokens, not the group's: engine_decode_layout)
    lay, lay_w = engine_decode_layout(half, micro, f)
    split = lay.attn_tp_group(f.kvp_splits_attention_weights)
    tokens = lay_w.new_tokens / split
    out_b, back_b = copies_per_token(model, half, prec.activation in ("fp8", "int8", "fp4"))
    tier = send_tier(hw, half.world_size, 2)  # the boundary between rank world/2 - 1 and world/2
    to_f = send_recv_s(hw, tokens * out_b / h, tier, f.comm)
    to_a = send_recv_s(hw, tokens * back_b / h, tier, f.comm)
    times = SideTimes((attn_all - embed_s - head_s) / h, ffn_all / h, to_f, to_a, embed_s, head_s)
    gpu = afd_makespan(times, h, m)
    hidden = afd_makespan(replace(times, to_ffn_s=0.0, to_attention_s=0.0), h, m)
    ops = [o.scaled(m) for o in sc.ops]
    comms = [c.scaled(m) for c in sc.comms if c.name not in REPLACED_COMMS]
    exposed = gpu - hidden
    for name, per, b in (("afd_send", to_f, out_b), ("afd_recv", to_a, back_b)):
        total = per * h * m
        share = exposed * total / ((to_f + to_a) * h * m) if to_f + to_a > 0 else 0.0
        comms.append(CommCost(name, "afd", "send_recv", 2, tokens * b * m, total, share, tier))
    busy = {"attention": attn_all * m, "ffn": ffn_all * m}
    kernels = max(sum(o.overhead_s for o in sc.ops if side_of(o.module, ffn) == s) for s in SIDES) * m
    return AfdStepCost(ops, comms, f.step_overhead_s,
                       kernels / f.kernel_overhead_s if f.kernel_overhead_s > 0 else 0.0,
                       step_s=gpu + f.step_overhead_s, sides=times, micro_batches=m, exposed_transfer_s=exposed,
                       side_busy_s=busy, hand_offs=h, ffn=ffn)


@dataclass(frozen=True)
class AfdMemory:
    """Per-rank memory of each side: the attention side holds its modules' weights, the KV cache of its sequences
    and its blocks' activations; the FFN side its modules' weights, its blocks' activations and the buffers."""

    attention: MemoryReport
    ffn: MemoryReport

    @property
    def binding(self) -> MemoryReport:
        """The side closer to its limit (the one that decides whether the deployment fits)."""
        return max((self.attention, self.ffn), key=lambda r: r.model_bytes - r.limit_bytes)


def afd_memory(model: ModelSpec, hw: Hardware, pc: ParallelConfig, prec: Precision, batch: float, seq_len: int,
               opts: MemoryOptions | None = None, mtp_layers: int | None = None) -> AfdMemory:
    """Each side's rank: memory_per_rank on the half-world config, its weights split by module (side_of) and its
    activation peak by the knob that sizes each term (activations.activation_peak_terms: the FFN blocks' terms on
    the FFN side, the others on the attention side); the KV cache stays on the attention side. Both keep the
    communication buffers (each sends and receives the hand-offs)."""
    half = half_config(pc)
    whole = memory_per_rank(model, hw, half, prec, batch, seq_len, opts, mtp_layers)
    ffn = ffn_modules(model)
    by = {s: {k: v for k, v in whole.weights_bytes.items() if side_of(k, ffn) == s} for s in SIDES}
    ffn_knobs = {block.activation_knob for block, _ in model.block_groups if block.role == "ffn"}
    terms = activation_peak_terms(model, half, device_options(opts or MemoryOptions(), hw), seq_len,
                                  whole.sequences_per_rank)
    act = {s: max((v for k, v in terms.items() if (k in ffn_knobs) == (s == "ffn")), default=0.0) for s in SIDES}
    attention = replace(whole, weights_bytes=by["attention"], activation_bytes=act["attention"])
    ffn_side = replace(whole, weights_bytes=by["ffn"], kv_cache_bytes=0.0, indexer_cache_bytes=0.0, state_bytes=0.0,
                       sequences_per_rank=0.0, activation_bytes=act["ffn"])
    return AfdMemory(attention, ffn_side)


def afd_estimate(model: ModelSpec, hw: Hardware, pc: ParallelConfig, prec: Precision, f: Factors, wl,
                 mem_opts: MemoryOptions | None = None) -> "Estimate":
    """serving.estimate's Estimate of an AFD decode deployment: memory is the binding side's (`afd_memory` has
    both), the decode step afd_step, TPOT / throughput from the same figures as any decode (figures.figures),
    per rank over both halves (world_size = pc's whole world)."""
    from solver.estimate.closed_loop import per_user_rate
    from solver.estimate.figures import figures, step_plan
    from solver.estimate.memory_options import engine_options, workload_options
    from solver.estimate.serving import Estimate

    mem_opts = engine_options(mem_opts, f)
    if wl.isl:
        mem_opts = workload_options(mem_opts, wl.isl)
    mem = afd_memory(model, hw, pc, prec, wl.sequences, wl.context_len, mem_opts, wl.mtp)
    sp = step_plan(model, half_config(pc), f, wl)
    dec = afd_step(model, hw, pc, prec, f, sp.dec_work)
    dec.memory_sides = mem
    fig = figures(sp, f, 0.0, 0.0, dec.time_s, dec.kernels or 0.0)
    return Estimate(fig.ttft_s, fig.tpot_s, None, dec, mem.binding, fig.output_tokens_per_s,
                    per_user_rate(fig.tpot_s), pc.world_size, sp.per_replica)


def afd_notes(e: "Estimate") -> list[str]:
    """What `check` says of an AFD estimate: each side's memory per rank and the step's parts."""
    d = e.decode
    if not isinstance(d, AfdStepCost) or d.sides is None or d.memory_sides is None:
        return []
    half, gb, us = e.world_size // 2, 1e9, 1e6
    mem = []
    for name in SIDES:
        r = getattr(d.memory_sides, name)
        mem.append(f"{name} side {r.model_bytes / gb:.2f} GB (weights {r.weights_total / gb:.2f}, KV "
                   f"{r.cache_total / gb:.2f}, activations {r.activation_bytes / gb:.2f}, buffers "
                   f"{r.comm_buffer_bytes / gb:.2f})")
    t = d.sides
    return [f"attention-FFN disaggregation: {half} attention ranks + {half} FFN ranks; memory per rank: "
            f"{'; '.join(mem)}; limit {d.memory_sides.attention.limit_bytes / gb:.2f} GB",
            f"AFD decode step {d.step_s * 1e3:.3g} ms: {d.micro_batches} "
            f"micro-batch{'es' if d.micro_batches != 1 else ''} over {d.hand_offs} "
            f"hand-offs, each micro-batch's hand-off attention {t.attention_s * us:.3g} us, FFN {t.ffn_s * us:.3g} us, "
            f"send {t.to_ffn_s * us:.3g} us and back {t.to_attention_s * us:.3g} us; transfer exposed "
            f"{d.exposed_transfer_s * 1e3:.3g} ms; sides busy attention {d.side_busy_s['attention'] * 1e3:.3g} ms, "
            f"FFN {d.side_busy_s['ffn'] * 1e3:.3g} ms"]
