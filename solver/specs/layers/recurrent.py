"""Shared cost rules of mixers with a constant per-request state (linear attention, state-space).

Their state does not grow with the sequence, so CP, SP and KVP do not split it: a rank of a token-sharded
attention group gathers the group's hidden states (all-gather over the token shards) and runs the whole
recurrence for its heads. The attention-TP group splits the heads (and the state, the weights): attention TP
under the seed's KVP, whose ranks repeat the recurrence, TP x KVP where KVP reuses the TP ranks (vLLM -dcp:
the engine runs these layers at TP; CostKit.attn_tp_group, base.heads_split). Costs per step:
projection GEMMs over every token of the group, the recurrence (per token and head ~6 x d_k x d_v FLOPs:
the state update, the delta / decay correction and the output read), the chunk-parallel prefill form's
intra-chunk term (2 x chunk x (d_k + d_v) per token and head, the chunk the mixer's kernel runs: `chunk`), and
one read + write of the state per sequence per step.
"""
from __future__ import annotations

from abc import abstractmethod

from solver.specs.layers.base import ACT_BYTES, Block, CostKit, Part, Share

PREFILL_CHUNK = 64  # tokens per chunk of the chunk-parallel scan of the linear-attention kernels (fla uses 64)
RECURRENCE_FLOPS = 6  # per token, head and state element (update, correction, output)


def projection_op(cx: CostKit, module: str, *, hidden: int, proj_params: float, width: float, kernels: float):
    """The mixer's projection GEMMs over every token of the step: this rank's 1 / group of `proj_params`, read
    once, `width` the output width the GEMM shape is judged by (split with the heads)."""
    w, f, hw, prec = cx.w, cx.f, cx.hw, cx.prec
    a, T = cx.attn_tp_group, w.new_tokens  # the ranks splitting the heads (heads_split)
    rank_params = proj_params / a
    return cx.op(f"{module}_proj", module, 2 * T * rank_params,
                 rank_params * prec.fmt("attention").bytes_per_param + 2 * T * hidden * ACT_BYTES,
                 *cx.gemm("attention"), kernels=kernels,
                 shape_eff=cx.shape_efficiency(width / a))


def channel_op(cx: CostKit, module: str, name: str, *, channels: float, flops_per_channel: float,
               state_bytes_rank: float, kernels: float):
    """An elementwise pass over this rank's `channels` per token (a short convolution, a gated diagonal
    recurrence): its FLOPs, one read + write of the state per sequence, and four activations per channel."""
    w = cx.w
    return cx.op(f"{module}_{name}", module, w.new_tokens * channels * flops_per_channel,
                 2 * w.sequences * state_bytes_rank + 4 * w.new_tokens * channels * ACT_BYTES,
                 cx.hw.flops("bf16"), cx.f.gemm, kernels=kernels)


def recurrent_ops(cx: CostKit, module: str, *, hidden: int, proj_params: int, heads: int, dk: int, dv: int,
                  state_bytes_rank: float, kernels: float = 4, chunk: int = PREFILL_CHUNK) -> list:
    w, f, hw = cx.w, cx.f, cx.hw
    a, T = cx.attn_tp_group, w.new_tokens  # the ranks splitting the heads (heads_split)
    ops = [projection_op(cx, module, hidden=hidden, proj_params=proj_params, width=heads * dv, kernels=kernels)]
    h_rank = heads / a
    flops = T * h_rank * RECURRENCE_FLOPS * dk * dv
    if w.phase == "prefill":
        flops += T * h_rank * 2 * chunk * (dk + dv)
    state_rw = 2 * w.sequences * state_bytes_rank
    eff = f.attention if w.phase == "prefill" else f.gemm
    ops.append(cx.op(f"{module}_scan", module, flops, state_rw + T * h_rank * (2 * dk + 2 * dv) * ACT_BYTES,
                     hw.flops("bf16"), eff, kernels=2))
    return ops


def recurrent_comms(cx: CostKit, module: str, hidden: int) -> list:
    pc, w = cx.pc, cx.w
    a, T = cx.attn_tp_group, w.new_tokens  # the ranks splitting the heads (heads_split)
    out = []
    if pc.token_shards > 1:  # the recurrence needs every token of the group, in order
        out.append(cx.coll(f"{module}_token_gather", module, "all_gather", pc.token_shards, T * hidden * ACT_BYTES,
                           stride=a))
    if a > 1:  # row-parallel out_proj over the heads
        out.append(cx.coll(f"{module}_tp_allreduce", module, "all_reduce", a, T * hidden * ACT_BYTES))
    return out


class RecurrentMixer(Block):
    """Base of these mixers (their frozen dataclasses subclass it): a mixer carrying a state from token to
    token, its weights split over the attention-TP group, its communication recurrent_comms. `module`: the name its
    weights and costs are reported under."""

    role = "mixer"
    scans_tokens = True
    module = ""
    hidden: int

    @abstractmethod
    def parts(self) -> tuple[Part, ...]:
        """The mixer's projections, gates and convolution."""

    def shares(self) -> tuple[Share, ...]:
        return (Share(self.module, "attention", "attn_tp_size", self.parts()),)

    def comms(self, cx: CostKit, hide_s: float) -> list:
        return recurrent_comms(cx, self.module, self.hidden)
