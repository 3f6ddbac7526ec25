"""Compressed sparse attention (DeepSeek-V4): one shared 512-wide KV head per layer, kept at two
resolutions: the last `window` tokens raw (sliding window) and the whole sequence compressed `ratio` : 1
(compress_ratios per layer: 4 = CSA, with a lightning indexer choosing top-k compressed entries; 128 = HCA,
attended densely). Queries come from a low-rank path (q_lora_rank); the output projection is grouped low
rank (o_groups groups of heads, each -> o_lora_rank, then all groups -> hidden).

Parameters (DeepSeek-V4 inference code): wq_a, q_norm, wq_b; wkv + kv_norm (one head); a compressor per
layer (wkv and wgate of coff x head_dim, coff = 2 for the overlapping ratio-4 windows, 1 otherwise, and a
learned position bias of ratio x coff x head_dim); the indexer with its own compressor on CSA layers; wo_a
(heads x head_dim -> o_groups x o_lora_rank, block-diagonal) and wo_b; one sink logit per head.
State per request: head_dim bytes-per-element per compressed token (grows at 1 / ratio), the raw window
(bounded: counted as constant), indexer keys per compressed token on CSA layers, and the compressors' open window
(constant: compressor_state_bytes).
Knobs: attention TP splits the query heads and the grouped o-projection; the KV head is replicated. CP / SP /
KVP split the growing compressed cache like any layer whose state grows with the sequence.
"""
from __future__ import annotations

from dataclasses import dataclass

from solver.specs.dtypes import KVFormat
from solver.specs.layers.attention import sequence_attention_comms
from solver.specs.layers.base import ACT_BYTES, Block, CostKit, Part, Share, State, per_object
from solver.specs.layers.dsa import Indexer
from solver.specs.layers.mla import latent_projection_op


@dataclass(frozen=True)
class CompressedAttention(Block):
    hidden: int
    heads: int
    head_dim: int
    q_lora_rank: int
    o_lora_rank: int
    o_groups: int
    ratio: int  # compressed entries per `ratio` tokens; 0 = no compressed branch (window only)
    window: int
    indexer: Indexer | None = None

    role = "mixer"
    kind = "CSA"
    kvp_splits_keys = True

    def label(self) -> str:
        idx = f" top{self.indexer.topk}" if self.indexer else ""
        ratio = f" 1:{self.ratio}" if self.ratio else ""
        return f"CSA {self.heads} x {self.head_dim}{ratio} w{self.window}{idx}"

    @property
    def o_dim(self) -> int:
        return self.heads * self.head_dim

    @property
    def coff(self) -> int:
        return 2 if self.ratio == 4 else 1

    @per_object
    def proj_parts(self) -> tuple[Part, ...]:
        h, d = self.hidden, self.head_dim
        parts = [Part("wq_a", h * self.q_lora_rank, "none"), Part("q_norm", self.q_lora_rank, "none"),
                 Part("wq_b", self.q_lora_rank * self.heads * d, "tp"),
                 Part("wkv", h * d, "none"), Part("kv_norm", d, "none"), Part("sinks", self.heads, "tp")]
        if self.ratio:
            c = self.coff
            parts.append(Part("compressor", 2 * h * c * d + self.ratio * c * d + d, "none"))
        return tuple(parts)

    def shares(self) -> tuple[Share, ...]:
        out = [Share("attention", "attention", "attn_tp_size", self.proj_parts())]
        if self.indexer:
            ix = self.indexer
            comp = 2 * self.hidden * 2 * ix.head_dim + self.ratio * 2 * ix.head_dim + ix.head_dim
            out.append(Share("indexer", "attention", "attn_tp_size",
                             self.indexer.parts(self.hidden, self.q_lora_rank) + (Part("compressor", comp, "none"),)))
        o = self.o_dim * self.o_lora_rank + self.o_groups * self.o_lora_rank * self.hidden
        out.append(Share("o_proj", "attention", "o_proj_tp_size", (Part("wo_a+wo_b", o, "tp"),)))
        return tuple(out)

    def kv_bytes_per_token(self, kv: KVFormat, attn_tp: int = 1) -> float:
        return self.head_dim * kv.element_bytes / self.ratio if self.ratio else 0.0

    def compressor_state_bytes(self) -> float:
        """What a request's compressors keep between steps (transformers 5.25.0 DeepseekV4HCACache /
        DeepseekV4CSACache): the kv and gate projections (coff x head_dim each) of up to ratio - 1 source tokens
        not yet closed into an entry, and under overlapping windows (coff 2) the last closed window's first series
        (ratio x head_dim, kv and gate) the next entry mixes in; the indexer's compressor the same at its head_dim.
        Projection outputs, in the activation dtype; the one KV head's, whole on every attention-TP rank."""
        if not self.ratio:
            return 0.0

        def one(head_dim: int) -> float:
            pending = (self.ratio - 1) * self.coff * head_dim * 2
            overlap = self.ratio * head_dim * 2 if self.coff == 2 else 0
            return (pending + overlap) * ACT_BYTES

        return one(self.head_dim) + (one(self.indexer.head_dim) if self.indexer else 0.0)

    @per_object
    def state(self, kv: KVFormat, attn_tp: int) -> State:
        # the indexer keeps one key per compressed entry, in the layout the engine caches it (Indexer.cached_bytes):
        # memory and the step read the same one (ops passes the engine's layout flags as MLA's does)
        idx = self.indexer.bytes_per_token / self.ratio if self.indexer and self.ratio else 0.0
        raw = self.indexer.cached_bytes(True) / self.ratio if self.indexer and self.ratio else None
        return State(per_token_bytes=self.kv_bytes_per_token(kv), index_per_token_bytes=idx,
                     index_unquantised_per_token_bytes=raw,
                     constant_bytes=self.window * self.head_dim * kv.element_bytes + self.compressor_state_bytes())

    def compressed_keys(self, cx: CostKit) -> float:
        """Mean compressed entries a query of the step attends to: all of them (position / ratio), or the indexer's
        top-k of them, min(position / ratio, k) = min(position, k x ratio) / ratio averaged over the step's queries
        (the mean of a min, not the min of the mean: an 8K prompt under top-1024 of ratio 4 attends to 768 entries
        a query on average, not 1024)."""
        if not self.ratio:
            return 0.0
        if self.indexer:
            return cx.mean_keys_capped(self.indexer.selected_keys * self.ratio) / self.ratio
        return max(cx.w.context, 1.0) / self.ratio

    def keys(self, cx: CostKit) -> float:
        return self.compressed_keys(cx) + cx.mean_keys_capped(self.window)

    def ops(self, cx: CostKit) -> list:
        pc, w, f, hw, prec = cx.pc, cx.w, cx.f, cx.hw, cx.prec
        a, h, T = pc.attn_tp_size, self.hidden, w.new_tokens
        t_a = T / pc.token_shards
        gemm, gemm_eff = cx.gemm("attention")
        bpp = prec.fmt("attention").bytes_per_param
        ops = [latent_projection_op(self, cx)]
        keys = self.keys(cx)
        pair_shards = pc.token_shards * pc.kvp_size * w.kv_shards  # Work.kv_shards: a sharded-cache CP decode
        heads = max(self.heads / a, hw.sparse_attention_head_pad) if self.indexer else self.heads / a
        flops = 2 * heads * T * keys * 2 * self.head_dim / pair_shards
        if w.phase == "decode":
            entries = w.sequences * keys
        elif self.indexer:  # the top-k compressed entries gathered per query, the window's raw keys once
            entries = self.indexer.gathered_entries(w, self.compressed_keys(cx)) + T
        else:
            entries = T
        read = entries * self.head_dim * prec.kv_bytes / pair_shards
        eff = f.attention if w.phase == "prefill" else f.gemm
        ops.append(cx.op("attention_core", "attention", flops, read + t_a * h * ACT_BYTES, hw.flops("bf16"), eff,
                         kernels=2))
        if self.indexer:
            # the indexer scores compressed entries only (ctx / ratio keys per query)
            ops += self.indexer.ops(cx, h, self.q_lora_rank, key_share=1 / self.ratio,
                                    unquantised=cx.f.indexer_keys_unquantised,
                                    kvp_replicated=cx.f.kvp_replicates_indexer_keys)
        o = self.o_dim * self.o_lora_rank + self.o_groups * self.o_lora_rank * h
        d = cx.oproj_shards
        ops.append(cx.op("o_proj", "o_proj", 2 * cx.group_tokens(d) * o / d, o / d * bpp, gemm, gemm_eff, kernels=2,
                         shape_eff=cx.shape_efficiency(h)))
        return ops

    def comms(self, cx: CostKit, hide_s: float) -> list:
        idx = self.state(cx.prec.kv_format, 1).index_bytes(cx.f.indexer_keys_unquantised)
        return sequence_attention_comms(
            cx, hide_s, hidden=self.hidden, heads=self.heads, o_dim=self.o_dim,
            cache_bpt=self.kv_bytes_per_token(cx.prec.kv_format) + idx, merge_width=self.head_dim,
            query_width=self.head_dim, topk=self.indexer.topk if self.indexer else None)

    def activation(self, pc, tokens: float, split: int) -> float:
        t = tokens / pc.token_shards
        return t * self.heads / split * 2 * self.head_dim * ACT_BYTES

    def scratch(self, pc, tokens: float, keys: float, logits_max_bytes: float | None) -> float:
        # the indexer's logits: this rank's queries against every compressed entry of the context
        if not self.indexer:
            return 0.0
        return self.indexer.logits_scratch(tokens / pc.token_shards, keys / max(self.ratio, 1), logits_max_bytes)
