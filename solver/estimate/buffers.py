"""Communication buffers per rank: the communicators' buffers and the EP all-to-all staging."""
from __future__ import annotations

from solver.estimate.activations import prefill_chunk
from solver.estimate.closed_loop import synced_ranks
from solver.estimate.memory_options import MemoryOptions
from solver.specs.model import ModelSpec
from solver.specs.parallel import ParallelConfig

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
