"""Softmax attention over heads: MHA / GQA / MQA, optionally over a sliding or chunked window.

Knobs: attention TP splits query heads and (up to N_kv) KV heads; o_proj is row-parallel over its own TP
(o_proj_tp) or attention TP. CP / SP split a step's tokens and KVP splits the cached keys: this is a layer
whose state grows with the sequence, so all three apply. A window caps the keys a query sees and the tokens
the cache holds (sliding_window, attention_chunk_size). A chunked window (`chunked`: Llama-4's
attention_chunk_size) differs from a sliding one in what a query sees: the keys of its own chunk only, from the
chunk's first token to itself (chunk / 2 on average, not the whole window); the cache still holds up to a chunk.

A layer may attend with K/V another layer computed and cached (`kv_shared`): cross-layer attention (Hunyuan's
use_cla: the later layers of each group hold no k / v projections, `kv_weights` false) and KV-shared last
layers (Gemma-3n's num_kv_shared_layers: the modeling code builds k_proj / v_proj / k_norm in every layer, so
the checkpoint stores them, but the shared layers never run them). Such a layer adds nothing to the cache and
computes no K/V; its attention over the shared cache (FLOPs, KV reads) is a full layer's.

A cross-attention layer (Mllama's cross_attention_layers, `CrossAttention`) attends to the vision tokens: its
K/V are projected once per request from `kv_tokens` image tokens and held as a constant state, not per token.

Differential attention (`differential`: transformers' DiffLlamaAttention, after Ye et al. 2024, "Differential
Transformer", arXiv:2410.05258): q / k / v / o and the cache are Llama's, but the heads pair up. Every one of the
`heads` softmax maps (Q_i K_i^T over head_dim, as counted for any attention) multiplies the values of its pair of
heads concatenated, 2 x v_head_dim wide (value_states chunked over the heads and cat on the last dim, repeated to
every head), and each pair's two outputs are subtracted (lambda-weighted) and RMS-normed back to heads x v_head_dim
for o_proj. So the core's scores cost as one attention's and its P.V product twice: per query and key
2 x heads x (head_dim + 2 x v_head_dim) FLOPs, not 2 x heads x (head_dim + v_head_dim); the merge of KVP's partial
outputs runs over the 2 x v_head_dim-wide map outputs, before the subtraction.

A layer may carry a lightning indexer (`indexer`, dsa.py: MiniMax-M3's "minimax_m3_sparse" layers, whose indexer
picks blocks of keys; Kolibri-1.1's indexed layers, whose selection scores the layer's own heads): its weights and key
cache are the indexer's, and the core attends to the selected keys only (at most topk x block plus sinks and local
keys a query, all of them while the context is shorter), costed as DSA's selection is (the indexer's scoring over
every cached key or its pool, the gathered entries read per query in prefill).

Convolved q / k projections (`qk_conv`: Compressed Convolutional Attention, arXiv:2510.04476, as transformers'
ZayaCCAProjection runs it): q_proj's and k_proj's outputs, concatenated ((heads + kv_heads) x head_dim channels), pass
causal Conv1d's in turn, each (kernel, input channels per group): 1 is depthwise, head_dim groups by head; each
biased where `qk_conv_bias`. A conv multiplies each of its weights once per token, so its FLOPs are 2 x its weights a
token, costed with the projections (computed_parts); the residual mixing of q and k around it is elementwise, not
costed. Each request keeps the last sum(kernel - 1) tokens' q / k channels as a constant conv tail. `delayed_v`: value
channels (of kv_heads x v_head_dim) projected from the previous token rather than the current one (ZAYA's
v_proj_delayed): the same weights as a plain v_proj, and a constant state of that many channels a request.
qk_norm "key_scale": q and k L2-normalised without weights, the keys scaled by one learned value per KV head.

Hidden-conditioned relative-position bias (`rel_bias` = (d_rel, extent): transformers' Inkling2RelativePositionBias):
a linear hidden -> heads x d_rel gives each token per-head relative states (where `rel_scales`, scaled per channel by
heads x d_rel learned values and L2-clipped; Inkling-1's InklingAttention.r_proj feeds them in as they are), which mix a
d_rel x extent table of bias-versus-distance profiles into one bias per head and backward distance (zero past the
extent): per token 2 x heads x d_rel x extent FLOPs for the mix, the bias added to the scores. No state: it is
recomputed from the query token. `sink_proj`: a linear hidden -> heads giving every token its own sink logit per head
(an extra softmax entry with no value). `kv_conv`: causal depthwise convolutions of that kernel over the key and the
value channels after their projections (no bias); `kv_conv_dynamic`: their taps are the static weights plus per-token
ones projected hidden -> kv_heads x kernel for each of K and V (shared within a head); either keeps the last kernel - 1
tokens' K and V channels a request as a constant state. `kv_input_norms`: the keys and values project from their own
RMSNorm of the layer input (hidden weights each), beside the query's.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from solver.specs.dtypes import KVFormat
from solver.specs.layers.base import (ACT_BYTES, Block, CostKit, Part, Share, State, per_object, prefill_read_tokens,
                                      prior_tokens)
from solver.specs.layers.dsa import Indexer

LSE_BYTES = 4  # the attention kernels return their log-sum-exp in fp32


def kv_heads_per_rank(kv_heads: int, attn_tp: int) -> int:
    """KV heads one rank holds: replicated once attention TP exceeds them."""
    return max(1, math.ceil(kv_heads / attn_tp))


@dataclass(frozen=True)
class Attention(Block):
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    v_head_dim: int
    window: int | None = None  # sliding / chunked window in tokens; None = full attention
    chunked: bool = False  # the window is a chunk: a query sees its own chunk's keys (attention_chunk_size)
    qkv_bias: bool = False
    out_bias: bool = False
    # "head": RMSNorm weights of head_dim on q and k; "head_bias": LayerNorms of head_dim with a bias (Persimmon);
    # "layer": over all q / k heads; "": none
    qk_norm: str = ""
    sinks: bool = False  # one learned sink logit per head (gpt-oss)
    output_gate: bool = False  # q_proj also produces a per-channel output gate (Qwen3-Next / 3.5)
    head_gate: bool = False  # g_proj hidden -> heads: one output gate scalar per head (LFM3, Laguna)
    gate_bias: bool = False  # the per-channel output gate adds one learned bias per head (Beam's gate_bias)
    k_eq_v: bool = False  # one projection serves K and V (Gemma-4 global layers)
    kv_shared: bool = False  # attends with K/V another layer computed and cached: no cache, no K/V compute
    kv_weights: bool = True  # under kv_shared: its k / v projections (and k norm) are stored all the same
    head_vectors: int = 0  # learned vectors of head_dim beside the projections (DiffLlama's four lambdas)
    # differential attention (DiffLlama): the heads pair into differential heads, each of its two softmax maps
    # weighing the pair's values concatenated (2 x v_head_dim), the outputs subtracted (module docstring)
    differential: bool = False
    # the width q / k / v project from, where it is not `hidden` (o_proj's output): Zamba's shared attention reads
    # the hidden state and the embedding concatenated, 2 x hidden; 0 = hidden
    in_width: int = 0
    # learned vectors of heads x head_dim beside the projections, split with the heads (Dory's nGPT sqk scaling the
    # queries per channel and s_gate scaling the output gate's logits per channel)
    channel_vectors: int = 0
    indexer: Indexer | None = None  # a lightning indexer choosing the keys the core attends to (module docstring)
    # causal convolutions over the concatenated q / k channels, (kernel, input channels per group) each, and their
    # biases; value channels projected from the previous token (module docstring: convolved q / k projections)
    qk_conv: tuple[tuple[int, int], ...] = ()
    qk_conv_bias: bool = True
    delayed_v: int = 0
    rel_bias: tuple[int, int] = ()  # (d_rel, extent) of a hidden-conditioned relative-position bias
    rel_scales: bool = True  # its relative states scaled per channel (heads x d_rel learned values)
    sink_proj: bool = False  # per-token sink logits: hidden -> heads
    kv_conv: int = 0  # kernel of the causal depthwise convolutions over the K and V channels; 0 = none
    kv_conv_dynamic: bool = False  # their taps add per-token weights projected hidden -> kv_heads x kernel each
    kv_input_norms: bool = False  # K and V read their own RMSNorm (hidden weights each) of the layer input

    role = "mixer"
    kvp_splits_keys = True

    @property
    def kind(self) -> str:  # type: ignore[override]
        if self.window:
            return "Chunked" if self.chunked else "SWA"
        return "MHA" if self.kv_heads == self.heads else ("MQA" if self.kv_heads == 1 else "GQA")

    def label(self) -> str:
        w = f" {'c' if self.chunked else 'w'}{self.window}" if self.window else ""
        if self.qk_conv:
            w += " qk-conv " + "+".join(str(kernel) for kernel, _ in self.qk_conv)
        shared = " shared-KV" if self.kv_shared else ""
        idx = ""
        if self.indexer:
            block = f"x{self.indexer.block}" if self.indexer.block > 1 else ""
            kept = self.indexer.sink_tokens + self.indexer.local_tokens
            idx = f" top{self.indexer.topk}{block}" + (f"+{kept}" if kept else "")
        return f"{self.kind} {self.heads}/{self.kv_heads} x {self.head_dim}{w}{idx}{shared}"

    @property
    def keys_monotone(self) -> bool:  # type: ignore[override]
        return not self.chunked

    @property
    def caches_kv(self) -> bool:
        """Its K/V grow the per-token cache (not a layer borrowing another's, not a cross-attention layer)."""
        return not self.kv_shared

    @property
    def o_dim(self) -> int:
        return self.heads * self.v_head_dim

    @property
    def map_v_width(self) -> int:
        """The value width one softmax map weighs: v_head_dim, or the pair's 2 x v_head_dim under differential."""
        return 2 * self.v_head_dim if self.differential else self.v_head_dim

    @per_object
    def proj_parts(self) -> tuple[Part, ...]:
        h, nh, dh, nkv = self.in_width or self.hidden, self.heads, self.head_dim, self.kv_heads
        q_out = nh * dh * (2 if self.output_gate else 1)
        kv_out = nkv * (dh if self.k_eq_v else dh + self.v_head_dim)
        parts = [Part("q_proj", h * q_out + (nh * dh if self.qkv_bias else 0), "tp")]
        own_kv = self.kv_weights or not self.kv_shared
        if own_kv:
            parts.append(Part("kv_proj", h * kv_out + (kv_out if self.qkv_bias else 0), "kv_heads", nkv))
        if self.qk_norm in ("head", "head_bias"):
            per_norm = 2 * dh if self.qk_norm == "head_bias" else dh
            parts.append(Part("qk_norm", (2 if own_kv else 1) * per_norm, "none"))
        elif self.qk_norm == "layer":
            parts.append(Part("qk_norm", (nh + (nkv if own_kv else 0)) * dh, "none"))
        elif self.qk_norm == "key_scale":
            parts.append(Part("qk_norm", nkv, "none"))
        if self.qk_conv:
            parts.append(Part("qk_conv", self.qk_conv_params, "tp"))
        if self.sinks:
            parts.append(Part("sinks", nh, "tp"))
        if self.head_gate:
            parts.append(Part("g_proj", h * nh, "tp"))
        if self.gate_bias:
            parts.append(Part("gate_bias", nh, "tp"))
        if self.channel_vectors:
            parts.append(Part("channel_vectors", self.channel_vectors * nh * dh, "tp"))
        if self.head_vectors:  # shared by every head: replicated
            parts.append(Part("head_vectors", self.head_vectors * dh, "none"))
        if self.rel_bias:
            d_rel, _ = self.rel_bias  # the per-head linear and its scales split with the heads
            parts.append(Part("rel_proj", h * nh * d_rel + (nh * d_rel if self.rel_scales else 0), "tp"))
            parts.append(Part("rel_table", self.rel_table, "none"))
        if self.sink_proj:
            parts.append(Part("sink_proj", h * nh, "tp"))
        if self.kv_conv and own_kv:
            parts.append(Part("kv_conv", self.kv_conv_params, "kv_heads", nkv))
        if self.kv_input_norms:
            parts.append(Part("kv_input_norms", 2 * h, "none"))
        return tuple(parts)

    @property
    def rel_table(self) -> int:
        """The relative-position bias's d_rel x extent table of profiles, replicated on every rank."""
        return self.rel_bias[0] * self.rel_bias[1] if self.rel_bias else 0

    @property
    def kv_conv_params(self) -> int:
        """K's and V's convolutions: kernel taps per channel of kv_heads x head_dim (v_head_dim for V), plus under
        kv_conv_dynamic a projection hidden -> kv_heads x kernel for each."""
        k = self.kv_conv
        taps = self.kv_heads * (self.head_dim + self.v_head_dim) * k
        return taps + (2 * (self.in_width or self.hidden) * self.kv_heads * k if self.kv_conv_dynamic else 0)

    @property
    def conv_channels(self) -> int:
        """The channels the q / k convolutions run over: every query and key head's."""
        return (self.heads + self.kv_heads) * self.head_dim if self.qk_conv else 0

    @property
    def qk_conv_params(self) -> int:
        c = self.conv_channels
        return sum(c * per_group * kernel + (c if self.qk_conv_bias else 0) for kernel, per_group in self.qk_conv)

    def conv_state_bytes(self, attn_tp: int) -> float:
        """One request's constant state on one rank: the q / k conv tail of its heads, the delayed value channels
        and the K / V conv tails of its KV heads, in the activation dtype."""
        if not (self.qk_conv or self.delayed_v or self.kv_conv):
            return 0.0
        kv_rank = kv_heads_per_rank(self.kv_heads, attn_tp)
        tail = sum(kernel - 1 for kernel, _ in self.qk_conv)
        channels = (math.ceil(self.heads / attn_tp) + kv_rank) * self.head_dim
        kv_tail = max(0, self.kv_conv - 1) * kv_rank * (self.head_dim + self.v_head_dim)
        return (tail * channels + self.delayed_v * kv_rank / self.kv_heads + kv_tail) * ACT_BYTES

    def shares(self) -> tuple[Share, ...]:
        o = self.o_dim * self.hidden + (self.hidden if self.out_bias else 0)
        return (Share("attention", "attention", "attn_tp_size", self.proj_parts()),
                *((self.indexer.share(self.in_width or self.hidden, None),)
                  if self.indexer and not self.indexer.own_heads else ()),
                Share("o_proj", "attention", "o_proj_tp_size", (Part("o_proj", o, "tp"),)))

    def kv_bytes_per_token(self, kv: KVFormat, attn_tp: int) -> float:
        # K and V of each cached head, plus the scales the KV format stores per token and head (dtypes.KVFormat)
        return kv_heads_per_rank(self.kv_heads, attn_tp) * ((self.head_dim + self.v_head_dim) * kv.element_bytes
                                                             + kv.head_scale_bytes)

    @per_object
    def state(self, kv: KVFormat, attn_tp: int) -> State:
        if self.kv_shared:  # the layer it borrows from holds the cache
            return State()
        return State(per_token_bytes=self.kv_bytes_per_token(kv, attn_tp), window=self.window,
                     index_per_token_bytes=self.index_bytes_per_token(kv, attn_tp),
                     constant_bytes=self.conv_state_bytes(attn_tp))

    def index_bytes_per_token(self, kv: KVFormat, attn_tp: int) -> float:
        """The indexer's cached keys per token on one rank: its own, or its copy of key head 0 (dsa.Indexer)."""
        if not self.indexer or self.kv_shared:
            return 0.0
        return self.indexer.bytes_per_token + self.indexer.head_copy_bytes(self.kv_heads, attn_tp, kv.element_bytes)

    @per_object
    def computed_parts(self) -> tuple[Part, ...]:
        """The projections a step runs over its tokens: all of them, less the K/V (and k norm) of a layer whose
        K/V come from elsewhere (another layer's cache, or the image tokens of a cross-attention layer)."""
        if self.caches_kv and not self.kv_shared:
            return self.proj_parts()
        dh = self.head_dim
        out = []
        for p in self.proj_parts():
            if p.name == "kv_proj":
                continue
            if p.name == "qk_norm":  # the q norm only
                q_norm = {"head": dh, "head_bias": 2 * dh}.get(self.qk_norm, self.heads * dh)
                p = Part("qk_norm", q_norm, "none")
            out.append(p)
        return tuple(out)

    # ------------------------------------------------------------------------------------------- costs

    def keys(self, cx: CostKit) -> float:
        """Mean keys a query of this step attends to: the context, the window's share of it, its own chunk's, or
        the indexer's selection (capped by the context)."""
        if self.indexer:
            return cx.mean_keys_capped(self.indexer.selected_keys)
        return self.dense_keys(cx)

    def dense_keys(self, cx: CostKit) -> float:
        """Mean keys a query attends to without a selection: the context, or the window's or chunk's share."""
        if not self.window:
            return max(cx.w.context, 1.0)
        return cx.mean_keys_chunked(self.window) if self.chunked else cx.mean_keys_capped(self.window)

    def ops(self, cx: CostKit) -> list:
        pc, w, f, hw, prec = cx.pc, cx.w, cx.f, cx.hw, cx.prec
        a, h, T = pc.attn_tp_size, self.hidden, w.new_tokens
        t_a = T / pc.token_shards  # tokens whose projections a rank computes
        gemm, gemm_eff = cx.gemm("attention")
        bpp = prec.fmt("attention").bytes_per_param
        g = cx.attn_tp_group  # the projections' split: attention TP, or TP x KVP where KVP reuses the TP ranks
        # the relative-bias table is not a projection of the tokens: its own op below
        rank_params = sum(p.params / p.degree(g) for p in self.computed_parts() if p.name != "rel_table")
        inputs = 3 if self.kv_input_norms else 1  # K and V read their own normed inputs
        ops = [cx.op("qkv_proj", "attention", 2 * t_a * rank_params,
                     rank_params * bpp + inputs * t_a * (self.in_width or h) * ACT_BYTES,
                     gemm, gemm_eff, kernels=3, shape_eff=cx.shape_efficiency(self.heads * self.head_dim / g))]
        if self.rel_bias:
            # each token's relative states (heads / g x d_rel) times the d_rel x extent table: the bias profiles
            # the core adds to its scores, written once (heads / g x extent a token)
            d_rel, extent = self.rel_bias
            ops.append(cx.op("rel_bias", "attention", 2 * t_a * self.heads / g * d_rel * extent,
                             self.rel_table * bpp + t_a * self.heads / g * extent * ACT_BYTES,
                             hw.flops("bf16"), f.gemm, kernels=1, shape_eff=cx.shape_efficiency(extent)))
        keys = self.keys(cx)
        pair_shards = pc.token_shards * pc.kvp_size * w.kv_shards  # Work.kv_shards: a sharded-cache CP decode
        kv_bpt = self.kv_bytes_per_token(prec.kv_format, a)
        pair_flops = 2 * self.heads / a * T * (self.head_dim + self.map_v_width) / pair_shards  # per key a query reads
        flops = pair_flops * keys
        # a prefill reads its new tokens' K/V and every cached token's it attends to: [tokens]
        read_tokens = w.sequences * keys if w.phase == "decode" else prefill_read_tokens(w, self.window, self.chunked)
        if self.indexer:  # each query's selection gathered on its own (dsa.Indexer.gathered_entries)
            read_tokens = self.indexer.gathered_entries(w, keys)
        eff = f.attention if w.phase == "prefill" else f.gemm
        nbytes = read_tokens * kv_bpt / pair_shards
        if self.indexer and w.phase == "prefill":  # the gathered form, or the dense one masked by the selection
            flops, nbytes = self.indexer.prefill_core(cx, (flops, nbytes), (pair_flops * self.dense_keys(cx),
                                                      prefill_read_tokens(w) * kv_bpt / pair_shards),
                                                      hw.flops("bf16"), eff)
        ops.append(cx.op("attention_core", "attention", flops, nbytes + t_a * h * ACT_BYTES, hw.flops("bf16"),
                         eff, kernels=2))
        if self.indexer:
            ops += self.indexer.ops(cx, self.in_width or h, None)
        ops.append(o_proj_op(cx, self.o_dim, h))
        return ops

    def comms(self, cx: CostKit, hide_s: float) -> list:
        # a layer borrowing its K/V has no new K/V to gather under CP / SP
        cache = 0.0 if self.kv_shared else self.kv_bytes_per_token(cx.prec.kv_format, cx.pc.attn_tp_size)
        cache += self.index_bytes_per_token(cx.prec.kv_format, cx.pc.attn_tp_size)
        return sequence_attention_comms(cx, hide_s, hidden=self.hidden, heads=self.heads, o_dim=self.o_dim,
                                        cache_bpt=cache, merge_width=self.map_v_width, query_width=self.head_dim,
                                        topk=self.indexer.topk if self.indexer else None)

    def activation(self, pc, tokens: float, split: int) -> float:
        t = tokens / pc.token_shards
        q = self.heads / split * self.head_dim
        kv = 0 if self.kv_shared else 2 * kv_heads_per_rank(self.kv_heads, split) * self.head_dim
        return t * (q + kv) * ACT_BYTES

    def scratch(self, pc, tokens: float, keys: float, logits_max_bytes: float | None) -> float:
        # the indexer's logits: this rank's queries against every key of the context
        return self.indexer.logits_scratch(tokens / pc.token_shards, keys, logits_max_bytes) if self.indexer else 0.0


def o_proj_op(cx: CostKit, o_dim: int, hidden: int):
    """o_proj: row-parallel over its own TP group, which processes the tokens of its ranks. Under KVP the
    ranks share tokens, so the KVP merge leaves each rank a 1/kvp share. Row-parallel splits the input (K)
    dimension, so the output stays `hidden` wide for the tile efficiency."""
    f, hw, prec = cx.f, cx.hw, cx.prec
    params = o_dim * hidden
    d = cx.oproj_shards
    return cx.op("o_proj", "o_proj", 2 * cx.group_tokens(d) * params / d,
                 params / d * prec.fmt("attention").bytes_per_param, *cx.gemm("attention"), kernels=1, shape_eff=cx.shape_efficiency(hidden))


def sequence_attention_comms(cx: CostKit, hide_s: float, *, hidden: int, heads: int, o_dim: int,
                             cache_bpt: float, merge_width: float, query_width: float, topk: int | None = None,
                             merge: bool = True, gathers_context: bool = False,
                             copies_gathered: tuple[tuple[str, float], ...] = ()) -> list:
    """Collectives of a layer whose KV grows with the sequence (softmax attention, MLA, DSA). A layer with no new
    K/V per token (cache_bpt 0: it borrows another layer's, or attends to image tokens) gathers none under CP /
    SP; one whose keys KVP does not split (merge false: cross-attention) merges no partial outputs.
    `query_width`: the width of a query head in the form the step attends in (MLA decode: its latent + rope);
    `gathers_context`: the step's form attends over the whole context rather than merging partial outputs
    (MLA's non-absorbed prefill), which matters where KVP reuses the TP ranks (kvp_reusing_tp_comms);
    `copies_gathered`: (name, bytes per token) of each tensor a decode under CP copies (Work.cp_copies)
    all-gathers, as the engine holds it before writing the cache (default: the cache entry as one tensor)."""
    pc, w = cx.pc, cx.w
    a, T = pc.attn_tp_size, w.new_tokens
    g = cx.attn_tp_group  # a, or a x kvp where KVP reuses the TP ranks
    t_a = T / pc.token_shards
    out = []
    if g > 1:  # row-parallel o_proj output: all-reduce over the ranks that split the heads
        out.append(cx.coll("attn_tp_allreduce", "o_proj", "all_reduce", g, t_a * hidden * ACT_BYTES))
    o_extra = cx.oproj_shards // g if cx.oproj_shards > g else 1
    kvp_oproj = g == a and pc.kvp_size > 1 and o_extra == pc.kvp_size  # seed class C: o_proj_tp == kvp_size
    if o_extra > 1:
        # o_proj TP beyond attention TP: each rank needs only its 1/o_extra input slice of every group token
        # (an all-to-all of its own t_a x o_dim/a input); under KVP with o_proj TP = kvp the merge already
        # leaves each rank its head slice. Partial sums are then reduce-scattered back to their owners.
        if not kvp_oproj:
            out.append(cx.coll("oproj_tp_gather", "o_proj", "all_to_all", o_extra, t_a * o_dim / g * ACT_BYTES,
                               stride=g))
        out.append(cx.coll("oproj_tp_scatter", "o_proj", "reduce_scatter", o_extra,
                           cx.group_tokens(cx.oproj_shards) / g * hidden * ACT_BYTES, stride=g))
    if pc.token_shards > 1 and cache_bpt > 0:
        # every rank needs the new KV (and indexer keys) of the tokens the others computed; second stream
        out.append(cx.coll("kv_allgather", "attention", "all_gather", pc.token_shards, T * cache_bpt, stride=a,
                           hide_s=hide_s))
    if w.cp_copies > 1 and cache_bpt > 0:
        # a decode under CP whose ranks each keep the whole cache (Work.cp_copies): each rank computed the new
        # K/V (and indexer keys) of its own requests only, so the group all-gathers them, one collective per
        # tensor, every rank contributing the busiest rank's rows (padding), ahead of the cache write the
        # attention reads: on the critical path, over ranks one attention group apart (vLLM 0.34.0
        # v1/attention/ops/pcp.py _gather_prefill_cache_inputs with shard_decode_requests, from
        # model_executor/layers/attention/mla_attention.py update_kv_cache and layers/sparse_attn_indexer.py)
        for part, bpt in copies_gathered or (("kv", cache_bpt),):
            out.append(cx.coll(f"cp_{part}_allgather", "attention", "all_gather", w.cp_copies,
                               w.cp_copies * T * bpt, stride=pc.attn_group_size))
    if w.kv_shards > 1 and merge:
        # a decode whose CP ranks each hold 1/kv_shards of the keys and run the whole batch (Work.kv_shards): each
        # casts its partial output and lse to fp32, the group all-gathers them and every rank merges all of them,
        # keeping the whole output (vllm-ascend 0.23.0.post1 attention/context_parallel/common_cp.py
        # _process_attn_out_lse, _npu_attention_update); one collective, over ranks one attention group apart
        out.append(cx.coll("cp_out_lse_allgather", "attention", "all_gather", w.kv_shards,
                           w.kv_shards * T * heads / a * (merge_width + 1) * LSE_BYTES, stride=pc.attn_group_size))
    if pc.kvp_size > 1 and g > a:
        out += kvp_reusing_tp_comms(cx, heads=heads, cache_bpt=cache_bpt, merge_width=merge_width,
                                    query_width=query_width, topk=topk, merge=merge, gathers_context=gathers_context)
    elif pc.kvp_size > 1:
        # partial outputs merge by log-sum-exp: the lse (fp32) is exchanged and the corrected outputs are
        # reduce-scattered in the activation dtype (vLLM DCP cp_lse_ag_out_rs)
        if merge:
            out += lse_merge_comms(cx, pc.kvp_size, T * heads / a, merge_width, stride=a)
        if topk:  # each rank's local top-k (fp32 score, id) gathered: kvp x T x topk x 8 bytes out
            out.append(cx.coll("topk_merge", "indexer", "all_gather", pc.kvp_size, pc.kvp_size * T * topk * 8,
                               stride=a))
        # after the merge each rank holds a 1/kvp share of the layer output: the next input is all-gathered
        out.append(cx.coll("kvp_hidden_allgather", "attention", "all_gather", pc.kvp_size,
                           T * hidden * ACT_BYTES, stride=a))
    return out


def kvp_reusing_tp_comms(cx: CostKit, *, heads: int, cache_bpt: float, merge_width: float, query_width: float,
                         topk: int | None, merge: bool, gathers_context: bool) -> list:
    """The KVP group's collectives where it is carved out of the TP ranks (vLLM -dcp: consecutive ranks of
    the TP group, so stride 1). Each rank projects the queries of its heads / (a x kvp) heads only, so the
    group all-gathers them (the heads / a its attention core runs over its 1/kvp of the keys); the partial
    outputs then merge by log-sum-exp and are reduce-scattered back by heads, so each rank holds its own
    heads' full output for the row-parallel o_proj, whose all-reduce spans all a x kvp ranks: no hidden
    all-gather after it, as in the seed's KVP. A step that attends over the whole context instead (MLA's
    non-absorbed prefill: its heads / (a x kvp) over every key) gathers the context's cached latents from
    the group and merges nothing; a fresh prompt's own keys are computed on every rank."""
    pc, w = cx.pc, cx.w
    a, kvp, T = pc.attn_tp_size, pc.kvp_size, w.new_tokens
    if not merge:  # keys KVP does not split: nothing to gather or merge
        return []
    if gathers_context:
        prior = prior_tokens(w)
        if prior <= 0 or cache_bpt <= 0:
            return []
        return [cx.coll("kvp_context_allgather", "attention", "all_gather", kvp, w.sequences * prior * cache_bpt)]
    out = [cx.coll("kvp_query_allgather", "attention", "all_gather", kvp, T * heads / a * query_width * ACT_BYTES)]
    out += lse_merge_comms(cx, kvp, T * heads / a, merge_width)
    if topk:  # each rank's local top-k candidates, (score, id) in fp32, all-gathered: kvp x T x topk x 8 bytes out
        # (vLLM 0.34.0 model_executor/layers/sparse_attn_indexer.py _merge_dcp_topk_global)
        out.append(cx.coll("topk_merge", "indexer", "all_gather", kvp, kvp * T * topk * 8))
    return out



def lse_merge_comms(cx: CostKit, kvp: int, token_heads: float, merge_width: float, stride: int = 1) -> list:
    """The log-sum-exp merge of KVP's partial outputs, as the engines run it (vLLM cp_lse_ag_out_rs): two
    collectives, not one, so a decode step pays two latencies per layer for it. Every rank first all-gathers
    the group's lse (fp32, one per token and head: kvp x token_heads x 4 B out), corrects its partial output
    by them, then reduce-scatters that output (token_heads x merge_width x ACT_BYTES in). `token_heads`: the
    tokens times the heads the core runs per rank (heads / attention TP)."""
    return [cx.coll("lse_merge_gather", "attention", "all_gather", kvp, kvp * token_heads * LSE_BYTES, stride=stride),
            cx.coll("lse_merge", "attention", "reduce_scatter", kvp, token_heads * merge_width * ACT_BYTES,
                    stride=stride)]
