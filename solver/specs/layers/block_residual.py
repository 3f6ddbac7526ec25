"""Attention residuals over blocks of layers, and short convolutions on each sub-block's output (transformers'
Inkling2BlockAttentionResidual, Inkling2ShortConvolution as Inkling2SlidingDecoderLayer / FullDecoderLayer run them).

The residual stream is kept as the block states: the hidden state at every n_layers_per_attn_res_block-th layer's
input (one per block begun so far), plus the running partial sum. Before a sub-block, instead of the residual, the
layer reads an attention over those states: each of its learned query vectors (hidden wide; one per input it feeds:
the attention's one, or the query / key / value inputs' three, and the MLP's one; the first layer's attention reads
the embedding directly, no query) scores the unweighted-RMS-normed states (scaling hidden^-0.5) and mixes them.
After each sub-block a causal depthwise convolution (hidden channels, `kernel` taps, no bias) filters its output,
added to it and scaled.

A layer of a looped section (Inkling2LoopSlidingLoopDecoderLayer / FullLoopDecoderLayer) also reads messages from
the previous pass: one more read of 4 queries (its message_input rows: query, key, value and MLP messages) over that
pass's later block states, and `gates` message gates (Inkling2LoopMessageGate) that mix each message into its input:
an unweighted RMSNorm of hidden and message, down_proj 2h -> rank, forget and message projections rank -> h, two
tanh and (1 - f) x + g m. The first pass runs without messages; its gates are costed all the same (a pass is the
stored layer again: config/passes.py), 8 h rank FLOPs a gate a token more than it runs.

Parameters: queries x hidden, convs x hidden x kernel, gates x 4 x hidden x rank: replicated (every rank runs every
token's whole hidden). The gates' forget / message projections are fp32 in the reference; counted at the layer's
precision like the block queries (fp32 too).
FLOPs per token, S states a read attends (the partial sum included):
  norm 3 S h once a read, scores 2 S h and mix 2 S h per query; each conv 2 x kernel x h, the add and scale 2 h;
  each gate 2 x 3 h (norms) + 2 x 2 h rank (down) + 2 x 2 rank h (forget, message) + 2 h (tanh) + 4 h (mix).
Bytes per token: the S states read once a read, the query outputs written; the conv reads and writes h and its tail.
State per request: each conv's last kernel - 1 tokens of hidden (the cache's conv states), constant in the sequence.
Activation: the block states a token keeps through the forward, S x hidden.
Under a token split (CP / SP) the convolution needs kernel - 1 earlier tokens across a shard boundary: a few rows
per sequence, not costed.
"""
from __future__ import annotations

from dataclasses import dataclass

from solver.specs.dtypes import KVFormat
from solver.specs.layers.base import ACT_BYTES, Block, CostKit, Part, Share, State

MODULE = "block_residual"


@dataclass(frozen=True)
class BlockResidual(Block):
    hidden: int
    reads: tuple[tuple[int, int], ...]  # (learned queries, states attended) of each attention over the block states
    convs: int = 0  # short convolutions over sub-block outputs
    kernel: int = 0
    gates: int = 0  # message gates of a looped section's layer
    gate_rank: int = 0

    role = "ffn"
    kind = "BlockResidual"

    def label(self) -> str:
        queries = "+".join(str(q) for q, _ in self.reads)
        gates = f" gate{self.gates}xr{self.gate_rank}" if self.gates else ""
        if not self.reads:  # the output convolutions alone
            return f"OutputConvs {self.convs}xL{self.kernel}"
        return f"BlockResidual q{queries} conv{self.convs}xL{self.kernel}{gates}"

    @property
    def queries(self) -> int:
        return sum(q for q, _ in self.reads)

    @property
    def states(self) -> int:
        """The most block states one of its reads attends (the activation it keeps a token)."""
        return max((s for _, s in self.reads), default=0)

    def shares(self) -> tuple[Share, ...]:
        parts = (Part("block_queries", self.queries * self.hidden, "none"),
                 Part("output_convs", self.convs * self.hidden * self.kernel, "none"),
                 Part("message_gates", self.gates * 4 * self.hidden * self.gate_rank, "none"))
        return (Share(MODULE, "dense", None, tuple(p for p in parts if p.params)),)

    def state(self, kv: KVFormat, split: int) -> State:
        return State(constant_bytes=self.convs * max(0, self.kernel - 1) * self.hidden * ACT_BYTES)

    def ops(self, cx: CostKit) -> list:
        h, t, w = self.hidden, cx.group_tokens(1), cx.w
        peak, eff = cx.hw.flops("bf16"), cx.f.gemm
        ops = []
        if self.reads:
            flops = sum(3 * s * h + q * 4 * s * h for q, s in self.reads)
            nbytes = sum((s + q) * h for q, s in self.reads) * t * ACT_BYTES + self.queries * h * ACT_BYTES
            ops.append(cx.op("block_attention", MODULE, t * flops, nbytes, peak, eff, kernels=len(self.reads)))
        if self.convs:
            tail = self.convs * max(0, self.kernel - 1) * h * ACT_BYTES
            ops.append(cx.op("output_conv", MODULE, t * self.convs * (2 * self.kernel + 2) * h,
                             2 * w.sequences * tail + t * self.convs * 2 * h * ACT_BYTES
                             + self.convs * self.kernel * h * ACT_BYTES, peak, eff, kernels=self.convs))
        if self.gates:
            r = self.gate_rank
            ops.append(cx.op("message_gate", MODULE, t * self.gates * (8 * h * r + 12 * h),
                             t * self.gates * 3 * h * ACT_BYTES + self.gates * 4 * h * r * ACT_BYTES, peak, eff,
                             kernels=3 * self.gates))
        return ops

    def activation(self, pc, tokens: float, split: int) -> float:
        return tokens / pc.token_shards * self.states * self.hidden * ACT_BYTES
