"""Alternating updates (AltUp) and the learned augmented residual (LAuReL) of a layer (transformers 5.25.0
modeling_gemma3n.py: Gemma3nTextAltUp, Gemma3nTextLaurelBlock, as Gemma3nTextDecoderLayer runs them).

AltUp: the residual stream is `streams` (altup_num_inputs, n) copies of hidden; the layer runs on one (the active
copy). Before it, predict: an RMSNorm of the active copy (router_norm, weighted), the router hidden -> n (tanh), the
prediction coefficients n -> n x n, and each copy replaced by itself plus the n x n mix of all copies. After it,
correct: the router again on the layer's output, the correction coefficients n -> n (+1), and each copy plus its
coefficient times the innovation (output - active prediction); the active copy is scaled by correct_output_scale.
LAuReL: beside the attention, hidden -> rank -> hidden (bias-free) and post_laurel_norm (one more hidden-wide norm of
the layer, built whatever the rank: config/read.py), added to the attention's residual.

Parameters (replicated, the residual's rule): router n.h, router_norm h, correct_output_scale h, prediction n^3,
correction n^2; LAuReL 2 h rank (+ its norm, counted as a layer norm).
FLOPs per token: predict 3h (norm) + 2nh (router) + 2n^3 (coefficients) + 2n^2 h (mix) + nh (add);
correct 3h + 2nh + 2n^2 + 3nh (innovation, scale, add) + h (output scale); LAuReL 4 h rank.
Bytes per token: predict reads the n copies and writes them, correct reads n copies and the output and writes n
copies: (4n + 1) h x ACT_BYTES; LAuReL reads and writes hidden (2h) beside its weights.
Activation: the n copies replace the residual, n x hidden a token, and a pipeline stage hands all n on
(ModelSpec.residual_streams, as hyper-connection streams).
The model's projections into and out of the copies (altup_projections, altup_unembed_projections: n - 1 matrices
hidden x hidden each) run once a token before the first layer and after the last: Projection blocks of those layers
(config/blocks.py).
"""
from __future__ import annotations

from dataclasses import dataclass

from solver.specs.layers.base import ACT_BYTES, Block, CostKit, Part, Share

MODULE = "altup"
KERNELS = (4, 4)  # predict: norm, router, coefficients, mix; correct: norm, router, coefficients, update
LAUREL_KERNELS = 3  # left, right, norm


@dataclass(frozen=True)
class AltUp(Block):
    hidden: int
    streams: int  # altup_num_inputs (n)
    laurel_rank: int = 0  # 0: no LAuReL block

    role = "ffn"
    kind = "AltUp"

    def label(self) -> str:
        laurel = f" LAuReL r{self.laurel_rank}" if self.laurel_rank else ""
        return f"AltUp {self.streams} copies{laurel}"

    @property
    def altup_weights(self) -> int:
        """router n.h + router_norm h + correct_output_scale h + prediction n^3 + correction n^2."""
        n, h = self.streams, self.hidden
        return n * h + 2 * h + n ** 3 + n * n

    @property
    def laurel_weights(self) -> int:
        """linear_left h x rank + linear_right rank x h (post_laurel_norm is a layer norm)."""
        return 2 * self.hidden * self.laurel_rank

    def shares(self) -> tuple[Share, ...]:
        parts = (Part("altup", self.altup_weights, "none"), Part("laurel", self.laurel_weights, "none"))
        return (Share(MODULE, "dense", None, tuple(p for p in parts if p.params)),)

    def flops_per_token(self) -> tuple[int, int, int]:
        """(predict, correct, LAuReL) FLOPs of one token (see the module docstring)."""
        n, h = self.streams, self.hidden
        predict = 3 * h + 2 * n * h + 2 * n ** 3 + 2 * n * n * h + n * h
        correct = 3 * h + 2 * n * h + 2 * n * n + 3 * n * h + h
        return predict, correct, 4 * h * self.laurel_rank

    def ops(self, cx: CostKit) -> list:
        """Every rank runs the tokens it holds (replicated across TP, as the residual; split by CP / SP)."""
        n, h, t = self.streams, self.hidden, cx.group_tokens(1)
        peak, eff = cx.hw.flops("bf16"), cx.f.gemm
        predict, correct, laurel = self.flops_per_token()
        ops = [cx.op("altup", MODULE, t * (predict + correct),
                     t * (4 * n + 1) * h * ACT_BYTES + self.altup_weights * ACT_BYTES, peak, eff,
                     kernels=sum(KERNELS))]
        if self.laurel_rank:
            ops.append(cx.op("laurel", MODULE, t * laurel,
                             t * 2 * h * ACT_BYTES + self.laurel_weights * cx.prec.fmt("dense").bytes_per_param,
                             *cx.gemm("dense"), kernels=LAUREL_KERNELS, shape_eff=cx.shape_efficiency(h)))
        return ops

    @property
    def residual_copies(self) -> int:
        """Copies of hidden a token carries between layers: held as the residual (ModelSpec.residual_streams:
        activation memory and the pipeline hand-off)."""
        return self.streams
