"""Dense FFN: gated (SwiGLU: gate, up, down) or not (up, down: Nemotron-H relu2, GELU MLPs).

Knob: dense TP splits the intermediate dimension (column-parallel up/gate, row-parallel down); its output is
all-reduced over the dense TP group, or all-gathered in / reduce-scattered out where the TP size changes.
"""
from __future__ import annotations

from dataclasses import dataclass

from solver.specs.layers.base import ACT_BYTES, Block, CostKit, Part, Share


def ffn_params(hidden: int, inter: int, gated: bool, bias: bool, out_bias: bool = False) -> int:
    """`out_bias`: the down projection alone is biased (TeleChat2's down_proj), where `bias` is not."""
    matrices = 3 if gated else 2
    return matrices * hidden * inter + (((matrices - 1) * inter + hidden) if bias else hidden if out_bias else 0)


@dataclass(frozen=True)
class DenseFFN(Block):
    hidden: int
    inter: int
    gated: bool = True
    bias: bool = False
    act_params: int = 0  # learned scalars of the activation (xIELU's alpha_p, alpha_n), replicated
    out_bias: bool = False  # the down projection alone carries a bias (read only where `bias` is false)
    # learned vectors of the intermediate width scaling the gate / up outputs per channel, split with the
    # intermediate (Dory's nGPT suv_gate / suv_up); elementwise, not in the GEMM FLOPs
    inter_vectors: int = 0
    out_scale: bool = False  # one learned scalar scaling the output (InklingMLP's global_scale), replicated

    role = "ffn"
    activation_knob = "dense_tp_size"
    kind = "FFN"

    def label(self) -> str:
        return f"FFN {self.inter}" + ("" if self.gated else " (non-gated)")

    def shares(self) -> tuple[Share, ...]:
        parts = (Part("mlp", ffn_params(self.hidden, self.inter, self.gated, self.bias, self.out_bias), "tp"),)
        if self.act_params:
            parts += (Part("activation", self.act_params, "none"),)
        if self.out_scale:
            parts += (Part("out_scale", 1, "none"),)
        if self.inter_vectors:
            parts += (Part("channel_vectors", self.inter_vectors * self.inter, "tp"),)
        return (Share("dense_ffn", "dense", "dense_tp_size", parts),)

    def ops(self, cx: CostKit) -> list:
        pc, f, hw, prec = cx.pc, cx.f, cx.hw, cx.prec
        p = ffn_params(self.hidden, self.inter, self.gated, self.bias, self.out_bias)
        d = pc.dense_tp_size
        return [cx.op("dense_ffn", "dense_ffn", 2 * cx.group_tokens(d) / d * p, p / d * prec.fmt("dense").bytes_per_param,
                      *cx.gemm("dense"), kernels=3 if self.gated else 2,
                      shape_eff=cx.shape_efficiency(self.inter / d))]

    def comms(self, cx: CostKit, hide_s: float) -> list:
        d = cx.pc.dense_tp_size
        if d <= 1:
            return []
        # resharded unless the attention output's all-reduce left every rank of its group the whole hidden
        return cx.tp_module("dense_tp", "dense_ffn", d, cx.group_tokens(d) * self.hidden * ACT_BYTES,
                            d != cx.attn_tp_group)

    def activation(self, pc, tokens: float, split: int) -> float:
        u = tokens * pc.attn_replicas / pc.world_size  # a rank's share of the system's tokens
        return u * (2 if self.gated else 1) * self.inter * ACT_BYTES
