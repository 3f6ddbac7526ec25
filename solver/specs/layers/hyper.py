"""Hyper-connections: a layer keeps `streams` residual streams of `hidden` each and mixes them around every
sub-block (the mixer, the FFN), in place of one residual add. Two forms are read:

- dynamic (DeepSeek-V4's manifold-constrained mHC, DeepseekV4HyperConnection): an unweighted RMSNorm of the m x
  hidden streams, one map m x hidden -> (2 + m) x m (pre m, post m, comb m x m), sigmoids / a softmax, the comb
  made doubly stochastic by `sinkhorn_iters` Sinkhorn-Knopp passes, the streams collapsed to the sub-block's
  input by pre (m -> 1); after the sub-block, new streams = post x output + comb^T @ streams;
  Without the comb map (`comb` False: Hy4's HYV4HyperConnection), the map is m x hidden -> 2m (pre m, post m, two
  scales), no Sinkhorn, and after the sub-block new streams = post x output + streams;
- low-rank (Qwen4-Exp's gated residuals, Qwen4ExpTextGatedResidual, `rank` = hc_lowrank): a grouped RMSNorm
  (weighted) of m x hidden, a down map m x hidden -> rank, silu, an up map back to m x hidden, sigmoid, the gated
  normed streams averaged to the sub-block's input, an inject map m x hidden -> m; after the sub-block, streams +
  inject x output.

Per token per sub-block (m streams, h hidden, s Sinkhorn passes, r rank), FLOPs:
  dynamic   pre   3mh (norm) + 2(2+m)m.mh (map) + (4s-2)m^2 (Sinkhorn: a column pass, then s-1 row + column
                  passes, a sum and a divide each over m x m) + 2mh (collapse)
            post  2m^2.h (comb^T @ streams) + 2mh (post x output, the add)
  comb-free pre   3mh + 2(2m).mh + 2mh; post 2mh
  low-rank  pre   4mh (weighted norm) + 4mh.r (down and up) + 2mh (gate x normed, the mean) + 2m.mh (inject map)
            post  2mh (inject x output, the add)
bytes (activations, fused kernels: the streams are read once by the pre kernels and once by the post kernel):
  pre  read m.h + write h, post read m.h + h, write m.h: (3m + 2) h x ACT_BYTES; plus the sub-block's map
  weights once a step (fp32 for the dynamic form, whose module the modeling code casts to float32 and SGLang
  allocates as float32 (make_hc_mixing_params); the model's dtype for the low-rank form).
Kernels: dynamic 2 pre (SGLang's tf32_hc_prenorm_gemm: the map with the norm's square sums, then
mhc_pre_big_fuse: split, Sinkhorn, collapse) + 1 post (hc_post) (sglang/srt/models/deepseek_v4.py
_flashinfer_hc_pre, hc_post); low-rank, no engine kernel known: the forward's norm, three GEMMs, the gated mean
and the post add, elementwise ops fused into them: 6.

The dynamic form ends in a head (DeepseekV4HyperHead; SGLang's hc_head, one fused_hc_head kernel), once a token
before the final norm: the same unweighted norm, a map m x hidden -> m (hc_fn; hc_base m, hc_scale 1: head_weights),
sigmoid, the streams collapsed by it: FLOPs 3mh + 2m.mh + 2mh, bytes (m + 1) h x ACT_BYTES and its map once a step
(head_ops). Each MTP module holds one more (SGLang's DeepseekV4ModelNextN). The low-rank form's final mixer is a
gated residual without the inject map (config/outside.py head_transform), not costed.

Weight dtype: transformers 5.25.0 keeps attn_hc, ffn_hc and hc_head in fp32 whatever the load dtype
(DeepseekV4PreTrainedModel._keep_in_fp32_modules_strict, the modules built .to(torch.float32)) and SGLang
allocates them as float32 Parameters (make_hc_mixing_params, make_hc_head_params): memory prices them at 4 B
(Part.dtype), the low-rank form's at the model's dtype.

Activation memory: the streams replace the residual, m x hidden a token (estimate.activations); the PP hand-off sends
the streams (ModelSpec.residual_width). The weights are counted by the reader (config/blocks.hyper_params) and
held in the layer's norm share (Layer.norm_share); this block declares the same share so the planner's
unowned group costs it.
"""
from __future__ import annotations

from dataclasses import dataclass

from solver.specs.dtypes import number_format
from solver.specs.layers.base import ACT_BYTES, Block, CostKit, Part, Share

DYNAMIC_DTYPE = "fp32"  # DeepSeek-V4's mHC maps are held and run in fp32 (see the module docstring)
HEAD_DTYPE = DYNAMIC_DTYPE  # the head's map: the same
HEAD_KERNELS = 1  # SGLang's fused_hc_head
DYNAMIC_KERNELS = (2, 1)  # (pre, post) kernels a sub-block: SGLang's DeepSeek-V4 mHC path
LOW_RANK_KERNELS = (5, 1)  # norm, down, up, inject GEMMs and the gated mean; the post add


def dynamic_map_rows(streams: int, comb: bool) -> int:
    """Rows of a dynamic hyper-connection map over m streams: pre m, post m and, with the comb, m x m."""
    return (2 + streams) * streams if comb else 2 * streams


@dataclass(frozen=True)
class HyperConnections(Block):
    hidden: int
    streams: int  # m
    weights: int  # the layer's hyper-connection weights, all sub-blocks (counted by the reader)
    rank: int = 0  # low-rank form's hc_lowrank; 0: the dynamic (2 + m) x m map
    sinkhorn_iters: int = 0  # dynamic form's Sinkhorn-Knopp passes
    comb: bool = True  # dynamic form's m x m comb map (pre, post and comb rows); False: pre and post only
    sub_blocks: int = 2  # mixed around the mixer and the FFN

    role = "residual"
    kind = "HyperConnections"

    def label(self) -> str:
        form = (f"low-rank {self.rank}" if self.rank else f"Sinkhorn {self.sinkhorn_iters}" if self.comb
                else "no comb")
        return f"HC {self.streams} streams, {form}"

    def shares(self) -> tuple[Share, ...]:
        return (Share("norms", "norm", None, (self.part(),)),)

    def part(self) -> Part:
        """The layer's hyper-connection weights, replicated; the dynamic form's held in fp32."""
        return Part("hyper_connections", self.weights, "none", dtype=None if self.rank else DYNAMIC_DTYPE)

    @property
    def weight_bytes(self) -> int:
        return ACT_BYTES if self.rank else number_format(DYNAMIC_DTYPE).bytes_per_param

    def flops_per_token(self) -> tuple[float, float]:
        """(pre, post) FLOPs of one token through one sub-block's hyper-connections."""
        m, mh = self.streams, self.streams * self.hidden
        if self.rank:
            return 4 * mh + 4 * mh * self.rank + 2 * mh + 2 * m * mh, 2 * mh
        sinkhorn = (4 * self.sinkhorn_iters - 2) * m * m if self.sinkhorn_iters and self.comb else 0
        comb = 2 * m * mh if self.comb else 0
        return 3 * mh + 2 * self.map_rows * mh + sinkhorn + 2 * mh, comb + 2 * mh

    @property
    def map_rows(self) -> int:
        """Rows of the dynamic form's mixing map: pre m, post m and (with the comb) m x m."""
        return dynamic_map_rows(self.streams, self.comb)

    @classmethod
    def dynamic(cls, hidden: int, streams: int, comb: bool = True, sinkhorn_iters: int = 0) -> "HyperConnections":
        """The dynamic form with its weights counted from its map: per sub-block a map_rows x (m x hidden) map, a
        bias per row and one scale per row group (pre, post and, with the comb, comb)."""
        rows = dynamic_map_rows(streams, comb)
        per_sub_block = rows * streams * hidden + rows + (3 if comb else 2)
        return cls(hidden, streams, cls.sub_blocks * per_sub_block, sinkhorn_iters=sinkhorn_iters, comb=comb)

    def bytes_per_token(self) -> tuple[float, float]:
        """(pre, post) activation bytes of one token through one sub-block's hyper-connections."""
        m, h = self.streams, self.hidden
        return (m * h + h) * ACT_BYTES, (m * h + h + m * h) * ACT_BYTES

    def ops(self, cx: CostKit) -> list:
        """Every rank of an attention replica mixes the streams of the tokens it holds (replicated across
        attention TP, as the residual is; split by CP / SP), `sub_blocks` times a layer."""
        t = cx.w.new_tokens / cx.pc.token_shards
        (fp, fq), (bp, bq) = self.flops_per_token(), self.bytes_per_token()
        weights = self.weights / self.sub_blocks * self.weight_bytes
        kp, kq = LOW_RANK_KERNELS if self.rank else DYNAMIC_KERNELS
        peak, eff = cx.hw.flops("bf16"), cx.f.gemm
        n = self.sub_blocks
        width = self.streams * self.hidden if self.rank else self.map_rows
        return [cx.op("hyper_pre", "norms", n * t * fp, n * (t * bp + weights), peak, eff, kernels=n * kp,
                      shape_eff=cx.shape_efficiency(width)),
                cx.op("hyper_post", "norms", n * t * fq, n * t * bq, peak, eff, kernels=n * kq)]


def head_weights(streams: int, hidden: int) -> int:
    """The dynamic form's head (DeepseekV4HyperHead): hc_fn m x m.hidden, hc_base m, hc_scale 1."""
    return streams * streams * hidden + streams + 1


def head_flops_per_token(streams: int, hidden: int) -> float:
    """One token through the head: the norm 3mh, the map 2m.mh, the collapse 2mh (the m sigmoids negligible)."""
    mh = streams * hidden
    return 3 * mh + 2 * streams * mh + 2 * mh


def head_bytes_per_token(streams: int, hidden: int) -> float:
    """One token through the head: its m streams read, the collapsed hidden written."""
    return (streams + 1) * hidden * ACT_BYTES
