"""A self-conditioning MLP outside the stack (DiffusionGemma's decoder: DiffusionGemmaSelfConditioning,
transformers 5.25.0 modeling_diffusion_gemma.py).

Before the decoder's layers, the soft embeddings of the previous denoising step go through a pre-norm (an RMSNorm
with weights over hidden), Gemma-4's gated MLP (gate_proj and up_proj hidden -> inter, down_proj inter -> hidden,
bias-free), are added to the input embeddings and normed again (post_norm, without weights).

Held beside the token embedding on the embedding's ranks and replicated there (the per-layer inputs' projection's
rule, layers/per_layer_input.py): no engine profile or /work/shared/facts/engines.md names a split for it.
"""
from __future__ import annotations

from dataclasses import dataclass

from solver.specs.layers.base import ACT_BYTES, CostKit, Part


@dataclass(frozen=True)
class SelfConditioning:
    hidden: int
    inter: int  # the MLP's width (the family's field: DiffusionGemma's intermediate_size)

    @property
    def mlp_params(self) -> int:
        """gate, up and down: 3 x hidden x inter."""
        return 3 * self.hidden * self.inter

    def parts(self) -> tuple[Part, ...]:
        """The MLP and the pre-norm's weight vector (the post-norm has none), replicated."""
        return (Part("self_conditioning_mlp", self.mlp_params, "none"),
                Part("self_conditioning_norm", self.hidden, "none"))

    @property
    def params(self) -> int:
        return self.mlp_params + self.hidden

    @property
    def flops_per_token(self) -> int:
        """2 FLOPs a weight a token (3 x hidden x inter weights); the norms, activation, product and sum are
        elementwise, left out as the layers' norms are."""
        return 2 * self.mlp_params

    @property
    def activation_values_per_token(self) -> int:
        """Values a token moves: reads the signal (hidden), writes and reads gate and up (4 x inter), writes their
        product and reads it (2 x inter), writes the output (hidden), reads it with the embeddings and writes the
        normed sum (3 x hidden)."""
        return 5 * self.hidden + 6 * self.inter

    def ops(self, cx: CostKit) -> list:
        """Once a step over the rank's tokens, after the token lookup: the pre-norm, the gated MLP's GEMMs and
        the sum with its post-norm (4 kernels), at the embedding's weight format and the dense GEMM rate."""
        bpp = cx.prec.fmt("embedding").bytes_per_param
        t = cx.group_tokens(1)
        return [cx.op("self_conditioning", "embedding", t * self.flops_per_token,
                      self.mlp_params * bpp + t * self.activation_values_per_token * ACT_BYTES,
                      *cx.gemm("embedding"), kernels=4, shape_eff=cx.shape_efficiency(self.inter))]
