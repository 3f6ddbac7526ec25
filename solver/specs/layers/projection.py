"""Bias-free matrices a layer runs over every token beside its mixer and FFN, replicated on every rank: Zamba's
per-use `linear` (hidden x hidden) after the shared transformer block, Zamba2's per-use LoRA adapter on the shared
MLP's gate_up_proj (hidden -> adapter_rank -> 2 x intermediate).

Parameters: the matrices' weights, held by this layer alone (not shared with the block they follow). They are small
and unsplit (replicated: the count does not depend on how an engine splits them). Cost: one GEMM chain over the
rank's tokens, reading the weights once a step.
"""
from __future__ import annotations

from dataclasses import dataclass

from solver.specs.layers.base import ACT_BYTES, Block, CostKit, Part, Share


@dataclass(frozen=True)
class Projection(Block):
    name: str  # the part's name in reports: linear, mlp_adapter, ...
    shapes: tuple[tuple[int, int], ...]  # (in, out) of each matrix, applied in turn
    module: str = "dense_ffn"  # the report / planner module it belongs to

    role = "ffn"
    kind = "Linear"

    def label(self) -> str:
        return f"{self.name} " + " -> ".join([str(self.shapes[0][0])] + [str(o) for _, o in self.shapes])

    @property
    def weights(self) -> int:
        return sum(i * o for i, o in self.shapes)

    def shares(self) -> tuple[Share, ...]:
        return (Share(self.module, "dense", None, (Part(self.name, self.weights, "none"),)),)

    def ops(self, cx: CostKit) -> list:
        f, hw, prec = cx.f, cx.hw, cx.prec
        t = cx.group_tokens(1)  # replicated: every rank runs its own tokens through the whole matrices
        io = self.shapes[0][0] + self.shapes[-1][1]
        return [cx.op(self.name, self.module, 2 * t * self.weights,
                      self.weights * prec.fmt("dense").bytes_per_param + t * io * ACT_BYTES,
                      *cx.gemm("dense"), kernels=len(self.shapes),
                      shape_eff=cx.shape_efficiency(self.shapes[-1][1]))]
