"""Gated short convolution: a mixer with no attention and no recurrence, only a causal depthwise conv over the
last few tokens (LFM2's "conv" layers, HF Lfm2ShortConv).

Parameters: in_proj hidden -> 3 x hidden (B, C and x), a depthwise causal conv over B * x (hidden channels,
kernel L = conv_L_cache, groups = hidden), out_proj hidden -> hidden; each with a bias when conv_bias is set.
The output is C * conv(B * x), projected back.
State per request: the conv tail, (L - 1) x hidden values in the activation dtype, constant in the sequence.
Knobs: the attention-TP group (recurrent.py) splits the channels (in_proj column-parallel, the conv per channel, out_proj row-parallel,
one all-reduce); CP / SP / KVP do not split the state (recurrent.py's token gather applies: the conv needs the
previous tokens of the sequence, in order).
FLOPs per token: the two projections (2 x 4 h^2) and the conv (2 x L x h) with the two gating products (2 x h).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from solver.specs.dtypes import KV16, KVFormat
from solver.specs.layers.base import ACT_BYTES, CostKit, Part, State
from solver.specs.layers.recurrent import RecurrentMixer, channel_op, projection_op

MODULE = "short_conv"


@dataclass(frozen=True)
class ShortConv(RecurrentMixer):
    hidden: int
    kernel: int = 3
    bias: bool = False

    kind = "ShortConv"
    module = MODULE

    def label(self) -> str:
        return f"ShortConv {self.hidden} L{self.kernel}"

    @property
    def heads(self) -> int:  # TP splits the channels: report them as the unit attention TP must divide
        return self.hidden

    def parts(self) -> tuple[Part, ...]:
        h, b = self.hidden, self.bias
        return (Part("in_proj", h * 3 * h + (3 * h if b else 0), "tp"),
                Part("conv", h * self.kernel + (h if b else 0), "tp"),
                Part("out_proj", h * h + (h if b else 0), "tp"))

    def state(self, kv: KVFormat, split: int) -> State:
        share = math.ceil(self.hidden / split) / self.hidden
        tail = max(0, self.kernel - 1) * self.hidden * ACT_BYTES * share
        return State(constant_bytes=tail, conv_bytes=tail)

    def ops(self, cx: CostKit) -> list:
        a, h = cx.attn_tp_group, self.hidden  # the ranks splitting the channels (heads_split)
        # in_proj and out_proj; the conv's multiply-adds and the B * x, C * y gates per channel
        return [projection_op(cx, MODULE, hidden=h, proj_params=4 * h * h, width=h, kernels=2),
                channel_op(cx, MODULE, "conv", channels=h / a, flops_per_channel=2 * self.kernel + 2,
                           state_bytes_rank=self.state(KV16, a).constant_bytes, kernels=1)]

    def activation(self, pc, tokens: float, split: int) -> float:
        return tokens * 3 * self.hidden / split * ACT_BYTES
