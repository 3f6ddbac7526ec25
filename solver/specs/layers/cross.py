"""Cross-attention to image tokens: a decoder layer whose queries come from the text and whose keys and values
come from the vision encoder's output (Mllama's cross_attention_layers).

Parameters: q / k / v / o projections as a self-attention layer's (k and v project `hidden`-wide vision
states: the projector maps the tower into the text width), the q / k norms where the config has them, and the
layer's learned scalar gates (Mllama: tanh gates on the attention and on the MLP output, one value each).
State: the K/V of the request's `kv_tokens` image tokens, projected once and held for the whole request: a
constant per sequence, not bytes per generated token (attention TP splits the KV heads; CP / KVP do not split
it, as for any constant state: where KVP reuses the TP ranks the layer runs its heads over the whole TP group,
base.heads_split). Costs: q over the step's tokens; in a prefill step the K/V projection of the
step's requests' image tokens (once per request); the attention core over `kv_tokens` keys whatever the
context; o_proj as self-attention's. No KV gather under CP / SP (the image K/V is on every rank) and no
log-sum-exp merge under KVP (each rank holds all of it).
"""
from __future__ import annotations

from dataclasses import dataclass

from solver.specs.dtypes import KVFormat
from solver.specs.layers.attention import Attention, o_proj_op, sequence_attention_comms
from solver.specs.layers.base import ACT_BYTES, CostKit, Part, Share, State, per_object


@dataclass(frozen=True)
class CrossAttention(Attention):
    kv_tokens: int = 0  # image tokens one request's cross-attention K/V holds
    gates: int = 0  # learned scalar gates the layer carries (Mllama: 2)

    kvp_splits_keys = False  # every rank holds the image K/V of its heads (module docstring)

    @property
    def kind(self) -> str:  # type: ignore[override]
        return "CrossAttn"

    def label(self) -> str:
        return f"CrossAttn {self.heads}/{self.kv_heads} x {self.head_dim} over {self.kv_tokens} image tokens"

    @property
    def caches_kv(self) -> bool:
        return False

    def shares(self) -> tuple[Share, ...]:
        attn, o = super().shares()
        if self.gates:
            attn = Share(attn.module, attn.group, attn.knob, attn.parts + (Part("gates", self.gates, "none"),))
        return attn, o

    @per_object
    def state(self, kv: KVFormat, attn_tp: int) -> State:
        return State(constant_bytes=self.kv_tokens * self.kv_bytes_per_token(kv, attn_tp))

    def ops(self, cx: CostKit) -> list:
        pc, w, f, hw, prec = cx.pc, cx.w, cx.f, cx.hw, cx.prec
        # the projections' and the heads' split: TP x KVP where KVP reuses the TP ranks (heads_split)
        a = g = cx.attn_tp_group
        h, T = self.hidden, w.new_tokens
        t_a = T / pc.token_shards
        gemm, gemm_eff = cx.gemm("attention")
        bpp = prec.fmt("attention").bytes_per_param
        # the queries' projection and q norm per text token; k / v_proj and the k norm per image token
        q_parts = self.computed_parts()
        q_params = sum(p.params / p.degree(g) for p in q_parts)
        kv_params = sum(p.params / p.degree(g) for p in self.proj_parts()) - q_params
        kv_bpt = self.kv_bytes_per_token(prec.kv_format, a)
        shape = cx.shape_efficiency(self.heads * self.head_dim / g)
        ops = [cx.op("qkv_proj", "attention", 2 * t_a * q_params, q_params * bpp + t_a * h * ACT_BYTES, gemm,
                     gemm_eff, kernels=1, shape_eff=shape)]
        if w.phase == "prefill":  # the image K/V of the step's requests, projected once and written to the cache
            img = w.sequences * self.kv_tokens
            ops.append(cx.op("cross_kv_proj", "attention", 2 * img * kv_params,
                             kv_params * bpp + img * h * ACT_BYTES + img * kv_bpt, gemm, gemm_eff, kernels=2,
                             shape_eff=shape))
        flops = 2 * self.heads / a * t_a * self.kv_tokens * (self.head_dim + self.v_head_dim)
        eff = f.attention if w.phase == "prefill" else f.gemm
        ops.append(cx.op("attention_core", "attention", flops,
                         w.sequences * self.kv_tokens * kv_bpt + t_a * h * ACT_BYTES, hw.flops("bf16"), eff,
                         kernels=2))
        ops.append(o_proj_op(cx, self.o_dim, h))
        return ops

    def comms(self, cx: CostKit, hide_s: float) -> list:
        return sequence_attention_comms(cx, hide_s, hidden=self.hidden, heads=self.heads, o_dim=self.o_dim,
                                        cache_bpt=0.0, merge_width=self.v_head_dim, query_width=self.head_dim,
                                        merge=False)
