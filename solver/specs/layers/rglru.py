"""The RG-LRU recurrent block of Griffin / RecurrentGemma (HF RecurrentGemmaRecurrentBlock): a gated linear
recurrence over `width` channels (lru_width) with one number of state per channel, no attention.

Parameters: linear_y and linear_x hidden -> width, linear_out width -> hidden, each with a bias; a depthwise
causal conv1d over the x branch (width channels, kernel k = conv1d_width, with a bias); the RG-LRU itself:
recurrent_param (width), an input gate and a recurrence gate, each block-diagonal over `heads` blocks of
width / heads (a heads x (width / heads)^2 weight and a width bias).
State per request: the conv tail, (k - 1) x width values in the activation dtype, and the recurrence state,
width values in the state dtype; constant in the sequence.
Knobs: the attention-TP group (recurrent.py) splits the gate blocks (heads) and their channels (linear_x / linear_y column-parallel,
linear_out row-parallel, one all-reduce); CP / SP / KVP do not split the state (recurrent.py's token gather
applies: the scan needs every earlier token of the sequence, in order).
FLOPs per token: the projections and gates (2 x their weights) and, per channel, the conv (2 k) and the
recurrence with its gating (RECURRENCE_FLOPS).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from solver.specs.dtypes import KV16, KVFormat
from solver.specs.layers.base import ACT_BYTES, CostKit, Part, State
from solver.specs.layers.recurrent import RecurrentMixer, channel_op, projection_op

MODULE = "ssm"
# per channel and token: two gate sigmoids, the decay a = exp(-c softplus(L) r), sqrt(1 - a^2), the update
# h = a h + sqrt(1 - a^2) (i x), and the output gate y * h: about ten elementwise operations
RECURRENCE_FLOPS = 10


@dataclass(frozen=True)
class RGLRU(RecurrentMixer):
    hidden: int
    width: int
    heads: int
    conv_kernel: int = 4
    state_dtype_bytes: int = 2

    kind = "RGLRU"
    module = MODULE

    def label(self) -> str:
        return f"RG-LRU {self.width} x{self.heads} L{self.conv_kernel}"

    @property
    def block_width(self) -> int:
        return self.width // self.heads

    def parts(self) -> tuple[Part, ...]:
        h, w = self.hidden, self.width
        return (Part("linear_x+linear_y", 2 * (h * w + w), "tp"),
                Part("conv1d", w * self.conv_kernel + w, "tp"),
                Part("rg_lru_gates", 2 * (self.heads * self.block_width ** 2 + w) + w, "tp"),
                Part("linear_out", w * h + h, "tp"))

    def state(self, kv: KVFormat, split: int) -> State:
        share = math.ceil(self.heads / split) / self.heads
        conv = max(0, self.conv_kernel - 1) * self.width * ACT_BYTES
        return State(constant_bytes=(conv + self.width * self.state_dtype_bytes) * share)

    def ops(self, cx: CostKit) -> list:
        a = cx.attn_tp_group  # the ranks splitting the heads (heads_split)
        # linear_x, linear_y, linear_out and the block-diagonal gates; the conv and the recurrence per channel
        proj = 3 * self.hidden * self.width + 2 * self.heads * self.block_width ** 2
        return [projection_op(cx, MODULE, hidden=self.hidden, proj_params=proj, width=self.width, kernels=5),
                channel_op(cx, MODULE, "scan", channels=self.width / a,
                           flops_per_channel=2 * self.conv_kernel + RECURRENCE_FLOPS,
                           state_bytes_rank=self.state(KV16, a).constant_bytes, kernels=2)]

    def activation(self, pc, tokens: float, split: int) -> float:
        return tokens * 3 * self.width / split * ACT_BYTES
