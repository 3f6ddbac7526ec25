"""Per-layer input embeddings (hidden_size_per_layer_input: Gemma-3n's and Gemma-4's small models).

Beside the token embedding, outside the stack (transformers 5.25.0 Gemma4TextModel / Gemma3nTextModel):
  embed_tokens_per_layer      a table of rows (vocab_size_per_layer_input) x layers x width, one lookup a token
                              gives every layer its width-wide slice
  per_layer_model_projection  bias-free hidden -> layers x width over the token's embedding
  per_layer_projection_norm   an RMSNorm of width over each slice (one weight vector), then the sum of the two
Inside each layer (Gemma4TextDecoderLayer): per_layer_input_gate hidden -> width, its activation times the layer's
slice, per_layer_projection width -> hidden, post_per_layer_input_norm over hidden: a Projection block
(layers/projection.py) and one more hidden-wide norm of the layer (config/read.py).

The table is counted in HBM on the embedding's ranks, split like the token embedding (vocab-parallel): neither the
engine profiles nor /work/shared/facts/engines.md say that an engine keeps it on the host. The model projection
and its norm are counted replicated.
"""
from __future__ import annotations

from dataclasses import dataclass

from solver.specs.layers.base import ACT_BYTES, CostKit, Part


@dataclass(frozen=True)
class PerLayerInputs:
    rows: int  # vocab_size_per_layer_input
    layers: int  # num_hidden_layers: the table holds a slice for each (a pipeline stage's model keeps the whole)
    width: int  # hidden_size_per_layer_input
    hidden: int

    @property
    def packed(self) -> int:
        """Values a token looks up and projects: layers x width."""
        return self.layers * self.width

    @property
    def table_params(self) -> int:
        """Values of the lookup table: rows x layers x width."""
        return self.rows * self.packed

    def parts(self) -> tuple[Part, ...]:
        """Weights outside the stack, in the embedding's share."""
        return (Part("embed_tokens_per_layer", self.table_params, "tp"),
                Part("per_layer_model_projection", self.hidden * self.packed, "none"),
                Part("per_layer_projection_norm", self.width, "none"))

    @property
    def projection_flops_per_token(self) -> int:
        """FLOPs a token spends in the model projection (2 x hidden x packed); the norm, scales and the sum with
        the looked-up slice are elementwise over packed values, left out as the layers' norms are."""
        return 2 * self.hidden * self.packed

    @property
    def activation_values_per_token(self) -> int:
        """Activation values the projection step moves a token: reads the embedding (hidden), writes the projection
        (packed); the norm reads it and the looked-up slices and writes their sum (3 x packed)."""
        return self.hidden + 4 * self.packed

    def ops(self, cx: CostKit) -> list:
        """Once a step, beside the token embedding's lookup: the lookup, a gather of `packed` values a token from the
        vocab-parallel table (as the token embedding's), and the model projection, a replicated bias-free GEMM over
        the rank's tokens followed by the norm and the sum with the looked-up slices (3 kernels). Bytes and the
        GEMM's rate at the embedding's weight format, the share that holds them (estimate/params.py)."""
        pc, bpp = cx.pc, cx.prec.fmt("embedding").bytes_per_param
        gather = cx.op("per_layer_embedding", "embedding", 0.0, cx.group_tokens(pc.embed_tp_size) * self.packed * bpp,
                       cx.hw.flops("bf16"), cx.f.gemm, kernels=1)
        t = cx.group_tokens(1)
        proj = cx.op("per_layer_model_projection", "embedding", t * self.projection_flops_per_token,
                     self.hidden * self.packed * bpp + t * self.activation_values_per_token * ACT_BYTES,
                     *cx.gemm("embedding"), kernels=3, shape_eff=cx.shape_efficiency(self.packed))
        return [gather, proj]
