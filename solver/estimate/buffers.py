"""Communication buffers per rank: the communicators' buffers and the EP all-to-all staging."""
from __future__ import annotations

import math

from solver.estimate.activations import prefill_chunk
from solver.estimate.closed_loop import synced_ranks
from solver.estimate.memory_options import MemoryOptions, config_options
from solver.estimate.stage_ranks import launched_device
from solver.specs.expr import compile_expr
from solver.specs.hardware import Hardware
from solver.specs.model import ModelSpec
from solver.specs.parallel import ParallelConfig
from solver.specs.profile_serving import command_budget, ep_kernels_hold

# NCCL/HCCL communicator buffers: ~340-390 MiB per GPU at TP 2-8 (facts/hardware.md)
COMM_BUFFER_BYTES = 375 * 2**20


def staging_tokens(model: ModelSpec, opts: MemoryOptions, pc: ParallelConfig, seq_len: int, seqs: float) -> float:
    """Tokens a rank stages for the EP all-to-all: its share of a prefill chunk (of the budget shared by the
    attention-DP ranks that step together, closed_loop.synced_ranks, where the engine divides it), or its decode
    sequences."""
    return max(prefill_chunk(opts, seq_len, seqs, synced_ranks(model, pc)) / pc.token_shards, seqs)


def ep_staging_bytes(model: ModelSpec, pc: ParallelConfig, tokens_per_rank: float) -> float:
    """All-to-all dispatch and combine staging: every token-expert pair a rank can send, both ways
    (zero-computation experts stay on the rank: they are not dispatched); 0 without EP."""
    if not (model.is_moe and pc.moe_ep_size > 1):
        return 0.0
    width = max(getattr(b, "expert_width", 0) for b, _ in model.block_groups)  # distinct blocks: the same max
    return 2 * tokens_per_rank * model.real_experts_per_token * width * 2


def comm_groups(pc: ParallelConfig) -> tuple[int, ...]:
    """The group sizes that open a communicator (its buffers: COMM_BUFFER_BYTES once, whatever their number)."""
    return (pc.attn_tp_size, pc.dense_tp_size, pc.embed_tp_size, pc.lmhead_tp_size, pc.cp_size, pc.kvp_size,
            pc.attn_sp_size, pc.oproj_shards)


def comm_buffers_per_rank(model: ModelSpec, pc: ParallelConfig, tokens_per_rank: float) -> float:
    total = COMM_BUFFER_BYTES if any(g > 1 for g in comm_groups(pc)) else 0.0
    return total + ep_staging_bytes(model, pc, tokens_per_rank)


# DeepEP's low-latency RDMA buffer (deep_ep 1.0.0, PyPI sdist; its size hint lives in csrc/config.hpp, which the
# sdist leaves out, so the layout is read off the kernels that address it):
#   dispatch message, bytes: hidden (FP8) + hidden / 128 float scales + one int4 header (internode_ll.cu:68)
#   combine slot, bytes: one int4 header + hidden BF16 (internode_ll.cu:362)
#   dispatch send: a slot per token (internode_ll.cu:91); dispatch receive: a slot per (expert, source rank,
#   token), i.e. experts x tokens (:138-141); combine send: local experts x ranks x tokens slots (:390-391);
#   combine receive: experts x tokens slots (:406); counters: an int per (local expert, rank) = experts ints
#   (rdma_recv_count); the send and the receive area each hold the larger of dispatch and combine
#   two such layouts, odd and even steps alternating (deep_ep.cpp:1036-1037 buffers[low_latency_buffer_idx ^= 1]),
#   the whole aligned to NUM_BUFFER_ALIGNMENT_BYTES (deep_ep.cpp:28, 204)
LL_SCALE_BLOCK = 128  # hidden elements per FP8 scale (internode_ll.cu:68 num_scales = kHidden / 128)
LL_HEADER_BYTES = 16  # sizeof(int4)
LL_ALIGN_BYTES = 128  # NUM_BUFFER_ALIGNMENT_BYTES (deep_ep.cpp:27-28: the buffer sizes must be multiples of it)


def low_latency_rdma_bytes(tokens: int, hidden: int, experts: int) -> int:
    """DeepEP's low-latency RDMA buffer, bytes a rank (Buffer.get_low_latency_rdma_size_hint): `tokens` =
    num_max_dispatch_tokens_per_rank, `hidden` the model width, `experts` the physical experts of the EP group."""
    dispatch_msg = hidden + hidden // LL_SCALE_BLOCK * 4 + LL_HEADER_BYTES
    combine_slot = LL_HEADER_BYTES + hidden * 2
    send = max(tokens * dispatch_msg, experts * tokens * combine_slot)
    recv = max(experts * tokens * dispatch_msg, experts * tokens * combine_slot)
    signal = math.ceil(experts * 4 / LL_ALIGN_BYTES) * LL_ALIGN_BYTES
    total = 2 * (send + recv + signal)
    return math.ceil(total / LL_ALIGN_BYTES) * LL_ALIGN_BYTES


def dispatch_tokens(opts: MemoryOptions, seqs: float) -> int:
    """num_max_dispatch_tokens_per_rank the engine's command gives its low-latency buffer (the profile's
    ep_kernels buffers of the worker's role: dispatch_tokens) for an attention replica holding `seqs` sequences;
    0 where none. `opts` at the configuration's default budget (memory_options.config_options)."""
    ep = opts.ep_kernels
    bufs = ep.buffers_for(opts.prefill_worker) if ep is not None else None
    if bufs is None or bufs.dispatch_tokens is None:
        return 0
    replica = max(1, math.ceil(seqs))
    budget = command_budget(opts.token_budget, opts.token_budget_rule, replica, opts.decode_drafts)
    env = {"replica_batch": replica, "mtp": opts.decode_drafts, "step_budget": budget}
    return int(compile_expr(bufs.dispatch_tokens).evaluate(env))


def a2a_buffer_bytes(model: ModelSpec, hw: Hardware, pc: ParallelConfig, opts: MemoryOptions, seqs: float) -> float:
    """The EP kernels' communication buffers a rank allocates where the command runs them (the profile's
    ep_kernels condition at `pc` on the launched device), those of the worker's role (a prefill worker's own:
    EpKernels.buffers_for): the engine's set sizes (and those it adds where the EP group spans nodes) plus
    DeepEP's low-latency RDMA buffer at the command's dispatch tokens; 0 elsewhere. The engines allocate them
    beside the KV pool, so the memory a configuration holds grows by them (benchmarks/README.md, Stop 49, 50)."""
    ep = opts.ep_kernels
    bufs = ep.buffers_for(opts.prefill_worker) if ep is not None else None
    if ep is None or bufs is None or not model.is_moe or pc.moe_ep_size <= 1:
        return 0.0
    dev = launched_device(hw)
    if not ep_kernels_hold(ep.when, pc, dev):
        return 0.0
    tokens = dispatch_tokens(config_options(opts, model, pc, hw), seqs)
    ll = low_latency_rdma_bytes(tokens, model.hidden_size, pc.expert_slots(model.num_experts)) if tokens else 0
    across = bufs.internode_bytes if pc.moe_ep_size > dev.ranks_per_node else 0
    return float(bufs.fixed_bytes + across + ll)
