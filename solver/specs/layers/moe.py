"""Mixture of experts: routed experts (top-k of E), optional shared experts, zero-computation experts,
optional latent projections (Nemotron-3 LatentMoE: experts work in a smaller latent width).

Knobs: routed experts split over every rank of the MoE group (E / EP experts per rank, each split moe_tp
ways); the router follows EP (replicated); shared experts follow the framework's shared-expert knob (dense TP
by default). Collectives: the MoE TP all-reduce and the EP dispatch / combine all-to-alls. When the shared
experts run on the same TP group as the routed ones, their outputs are summed before the reduction: ONE
all-reduce carries both (vLLM SharedFusedMoE, SGLang fused shared experts), not one each. When the attention
TP group is the whole MoE group (EP without attention DP) every rank holds every token: no dispatch or
combine, one all-reduce of the partial outputs. Prefill's throughput EP kernels cross RDMA once per remote NVLink
domain a token's experts sit on (rdma_copies_share); the low-latency kernels (decode, and a co-located prefill
whose command runs them: low_latency_step) send every token-expert pair.

A router may score through an MLP of its own (`router_mlp`, its width r: transformers' ZayaRouter): down_proj
hidden -> r with a bias, an RMSNorm of r, two biased r x r layers, out_proj r -> slots without a bias; where
`router_state_scale`, the previous layer's router state (its down_proj output) is added in, scaled per channel (r
weights). Each weight multiplies once per token, so the router's FLOPs stay 2 x its weights a token.
A router may also score the shared experts (`router_shared_rows`: InklingTopkRouter's weight holds routed + shared
rows, the shared logits joining the softmax over the chosen ones as sinks) and hold one learned scale of the routing
weights (`router_global_scale`: its global_scale).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from solver.specs.layers.base import ACT_BYTES, Block, CostKit, Part, Share
from solver.specs.layers.dense import ffn_params

if TYPE_CHECKING:
    from solver.specs.hardware import Hardware


# tiers inside which ranks reach each other over NVLink (a node, an NVL72 rack); past them a token crosses RDMA
NVLINK_TIERS = ("intra_node", "scale_up")


def rdma_copies_share(hw: Hardware, ep: int, stride: int, topk: float) -> float:
    """Throughput-mode EP kernels (prefill; DeepEP normal mode, the DeepSeek-V3 report's dispatch) send a token
    over RDMA once per remote NVLink domain holding any of its experts and fan it out over NVLink there. A
    per-pair all-to-all puts topk x (D-1)/D of a token's copies on RDMA (D domains in the group); the domains hit
    are (D-1)(1 - (1-1/D)^topk) under uniform routing. Returns hit / charged (1 inside one NVLink domain)."""
    from solver.specs.topology import group_levels

    d = math.prod(lv.members for lv in group_levels(hw, ep, stride) if lv.tier_name not in NVLINK_TIERS)
    if d <= 1 or topk <= 0:
        return 1.0
    return d * (1.0 - (1.0 - 1.0 / d) ** topk) / topk


def low_latency_step(cx: CostKit) -> bool:
    """Whether the step's EP kernels are the low-latency ones (every token-expert pair over RDMA, the kernel's
    per-call latency): decode, and a co-located engine's prefill where its command's one backend is those
    (EpKernels.colocated_prefill: vLLM's deepep_low_latency); a prefill-only worker runs the throughput ones."""
    if cx.w.phase == "decode":
        return True
    ep = cx.f.ep_kernels
    return not cx.w.prefill_worker and ep is not None and ep.colocated_prefill == "low_latency"


def distinct_experts_touched(num_experts: int, topk_real: float, tokens: float) -> float:
    """Expected distinct experts hit by `tokens` tokens each routing to `topk_real` of `num_experts`."""
    if num_experts <= 0 or tokens <= 0:
        return 0.0
    p_miss = max(0.0, 1.0 - topk_real / num_experts)
    return num_experts * (1.0 - p_miss ** tokens)


# Busiest EP rank vs mean with EPLB placing redundant copies of the hot experts: "perfect EPLB ~5% slower
# than ideal" against ~20% for default balancing (hardware.md, expert load imbalance row; SGLang large-scale
# EP blog, 2025-05, measured with 32 redundant experts). The source gives one figure, not a curve in the
# number of copies, so any redundancy takes it; without redundancy the factor is left as it is.
EPLB_IMBALANCE = 1.05


def routing_skew(base: float, redundant: int) -> float:
    """The routing-skew floor of the busiest rank: the factor's own value, lowered to EPLB's with copies."""
    return min(base, EPLB_IMBALANCE) if redundant > 0 else base


def load_imbalance(base: float, pairs_per_rank: float, ranks: int) -> float:
    """Busiest EP rank vs mean: routing skew (base) and the balls-in-bins spread of few tokens."""
    if ranks <= 1 or pairs_per_rank <= 0:
        return 1.0
    spread = 1.0 + math.sqrt(2.0 * math.log(ranks) / pairs_per_rank)
    return max(base, spread)


@dataclass(frozen=True)
class MoE(Block):
    hidden: int
    experts: int
    topk: int
    inter: int
    shared_inter: int = 0  # total width of the shared experts (0 = none)
    shared_count: int = 0  # how many shared experts that width holds (0 with a width: one); reported, not costed
    zero_experts: int = 0  # identity experts: routed to, hold no weights, compute nothing
    gated: bool = True
    bias: bool = False
    router_bias: bool = False  # per-expert score correction bias (noaux_tc) or router bias
    shared_gate: bool = False  # a sigmoid gate on the shared expert output (hidden -> 1)
    latent: int = 0  # LatentMoE: experts run at this width between two projections (0 = at hidden)
    # RMSNorm weights of the latent width around the experts, one vector each, held with the latent projections
    # (Muse-Spark's pre_expert_norm after pre_expert_proj and the experts' one post_expert_norm)
    latent_norms: int = 0
    # an RMSNorm weight of each routed expert's own on its output (Ergo's post_expert_norm: experts x width),
    # and one on the shared expert's output (hidden): held with their experts, whole on each MoE TP rank
    expert_out_norm: bool = False
    shared_out_norm: bool = False
    # a second routed set beside the first, of modality_experts experts modality_inter wide with its own router
    # (per-modality experts: ERNIE-4.5-VL's vision_moe, run for image and video tokens only): held and split as the
    # routed experts are; a text token reaches none of it, so it adds weights, not active parameters or compute
    modality_experts: int = 0
    modality_inter: int = 0
    router_mlp: int = 0  # the width of the router's own MLP (module docstring); 0: one linear hidden -> slots
    router_state_scale: bool = False  # the previous layer's router state scaled in (router_mlp width weights)
    # the router scales its input per channel (hidden weights) and each chosen expert's weight (one per expert):
    # DiffusionGemmaTextRouter's scale and per_expert_scale; each multiplies once per token, as the other weights
    router_scales: bool = False
    router_shared_rows: int = 0  # rows of the router's weight scoring the shared experts (hidden weights each)
    router_global_scale: bool = False  # one learned scale of the routing weights

    role = "ffn"
    activation_knob = "moe_tp_size"
    kind = "MoE"

    def label(self) -> str:
        extra = f" + shared {self.shared_inter}" if self.shared_inter else ""
        zero = f" + {self.zero_experts} zero" if self.zero_experts else ""
        lat = f" latent {self.latent}" if self.latent else ""
        second = f" + {self.modality_experts} x {self.modality_inter} by modality" if self.modality_experts else ""
        router = f" router-MLP {self.router_mlp}" if self.router_mlp else ""
        return f"MoE {self.topk}/{self.experts} x {self.inter}{lat}{extra}{zero}{second}{router}"

    @property
    def slots(self) -> int:
        return self.experts + self.zero_experts

    @property
    def real_topk(self) -> float:
        """Routed experts a token reaches that compute: top-k scaled by the real share of the slots."""
        return self.topk * self.experts / self.slots

    def picks_sent(self, f) -> float:
        """Routed picks a token sends through the MoE kernels and the dispatch: the real ones, or every top-k pick
        where the engine runs a zero pick as expert 0 at weight 0 (Factors.zero_expert_picks_computed)."""
        return float(self.topk) if self.zero_experts and f.zero_expert_picks_computed else self.real_topk

    @property
    def expert_width(self) -> int:
        return self.latent or self.hidden

    @property
    def expert_params(self) -> int:
        return ffn_params(self.expert_width, self.inter, self.gated, self.bias)

    @property
    def router_params(self) -> int:
        bias = ((self.slots if self.router_bias else 0) + (self.hidden + self.experts if self.router_scales else 0)
                + (1 if self.router_global_scale else 0))
        r = self.router_mlp
        if not r:
            return self.hidden * (self.slots + self.router_shared_rows) + bias
        # down_proj (biased), the state scale, the RMSNorm, fc1 / fc2 (biased), out_proj
        return (self.hidden * r + r + (r if self.router_state_scale else 0) + r + 2 * (r * r + r)
                + r * self.slots + bias)

    @property
    def shared_params(self) -> int:
        if not self.shared_inter:
            return 0
        return (ffn_params(self.hidden, self.shared_inter, self.gated, self.bias)
                + (self.hidden if self.shared_gate else 0) + (self.hidden if self.shared_out_norm else 0))

    @property
    def modality_params(self) -> int:
        """The second routed set's experts (its router is in modality_router_params)."""
        return self.modality_experts * ffn_params(self.expert_width, self.modality_inter, self.gated, self.bias)

    @property
    def modality_router_params(self) -> int:
        return self.hidden * self.modality_experts + (self.modality_experts if self.router_bias else 0)

    @property
    def expert_norm_params(self) -> int:
        return self.experts * self.expert_width if self.expert_out_norm else 0

    def shares(self) -> tuple[Share, ...]:
        out = []
        if self.shared_inter:
            out.append(Share("shared_experts", "dense", "shared_experts_tp", (Part("shared", self.shared_params, "tp"),)))
        routed = self.expert_params * self.experts
        parts = (Part("experts", routed, "tp"),)
        if self.expert_out_norm:  # the norm needs the whole expert output: not split with the expert's TP
            parts += (Part("expert_norms", self.expert_norm_params, "none"),)
        if self.modality_experts:
            parts += (Part("modality_experts", self.modality_params, "tp"),)
        norm_active = self.expert_width * self.real_topk if self.expert_out_norm else 0
        out.append(Share("routed_experts", "experts", "moe_tp_size", parts,
                         active=self.expert_params * self.real_topk + norm_active))
        # router weights stay 16-bit in quantized checkpoints (the "norm" precision group)
        gates = (Part("gate", self.router_params, "none"),)
        if self.modality_experts:
            gates += (Part("modality_gate", self.modality_router_params, "none"),)
        out.append(Share("router", "norm", "moe_tp_size", gates, active=float(self.router_params)))
        if self.latent:  # hidden -> latent before the experts, latent -> hidden after; replicated like the router
            parts = (Part("latent_proj", 2 * self.hidden * self.latent, "none"),)
            if self.latent_norms:
                parts += (Part("latent_norms", self.latent_norms * self.latent, "none"),)
            out.append(Share("moe_latent", "dense", "moe_tp_size", parts))
        return tuple(out)

    def ops(self, cx: CostKit) -> list:
        pc, w, f, hw, prec = cx.pc, cx.w, cx.f, cx.hw, cx.prec
        T, h = w.new_tokens, self.hidden
        ep, t = pc.moe_ep_size, pc.moe_tp_size
        system_tokens = T * cx.busy_replicas()
        pairs = system_tokens * self.real_topk / ep
        imb = load_imbalance(routing_skew(f.expert_imbalance, pc.redundant_experts), pairs, ep)
        # zero picks run as expert 0 (picks_sent): all of them on the EP rank holding it, which then paces the layer
        # with its share of the real pairs at the skew; its weights are among the real experts' read below
        hot = system_tokens * (self.picks_sent(f) - self.real_topk)
        # weights are read once per distinct physical slot hit: redundant copies split a hot expert's tokens
        # and add slots, E + r over the EP group
        touched = distinct_experts_touched(pc.expert_slots(self.experts), self.real_topk, system_tokens) / ep
        p = self.expert_params
        width = self.expert_width
        # Grouped GEMM over the local experts at `grouped_gemm` times the dense GEMM's FLOP/s: at tens to
        # hundreds of rows per expert the MoE kernels reach well below a large dense GEMM (fitted over the
        # calibration CSV; benchmarks/README.md). Weight-only experts (W4A16) run another kernel, the
        # dequantizing MoE GEMM, at its own fraction of the 16-bit GEMM (cx.gemm: `dequant_gemm`) instead
        peak, eff = cx.gemm("experts")
        grouped = 1.0 if prec.weight_only("experts") else f.grouped_gemm
        ops = [cx.op("routed_experts", "routed_experts", 2 * (pairs * imb + hot) * p / t,
                     touched * p / t * prec.fmt("experts").bytes_per_param
                     + (pairs + hot) * (width + 2 * self.inter / t) * ACT_BYTES,
                     peak, eff, kernels=4, shape_eff=cx.shape_efficiency(self.inter / t) * grouped),
               # token permute / un-permute: pairs x width x 2 bytes x 2 passes on the busiest rank
               cx.op("moe_permute", "routed_experts", 0.0, 2 * (pairs * imb + hot) * width * ACT_BYTES,
                     hw.flops("bf16"), f.gemm, kernels=1)]
        u1 = cx.group_tokens(1)
        router = self.router_params
        ops.append(cx.op("router", "router", 2 * u1 * router, router * 2, hw.flops("bf16"), f.gemm, kernels=2))
        if self.latent:
            lp = 2 * h * self.latent
            ops.append(cx.op("latent_proj", "moe_latent", 2 * u1 * lp, lp * prec.fmt("dense").bytes_per_param,
                             *cx.gemm("dense"), kernels=2))
        if self.shared_inter:
            d = pc.dense_tp_size
            sp = self.shared_params
            ops.append(cx.op("shared_experts", "shared_experts", 2 * cx.group_tokens(d) / d * sp,
                             sp / d * prec.fmt("dense").bytes_per_param, *cx.gemm("dense"),
                             kernels=3, shape_eff=cx.shape_efficiency(self.shared_inter / d)))
        return ops

    def comms(self, cx: CostKit, hide_s: float) -> list:
        pc, prec = cx.pc, cx.prec
        h, a = self.hidden, cx.attn_tp_group  # the ranks the attention output's all-reduce leaves it whole on
        ep, t, d = pc.moe_ep_size, pc.moe_tp_size, pc.dense_tp_size
        out = []
        g = ep * t
        if ep > 1 and a == g:
            # the attention TP group is the MoE group: every rank already holds all the tokens, so nothing is
            # dispatched; each rank runs its local experts on the tokens routed to them and ONE all-reduce sums
            # the partial outputs (vLLM, SGLang and TensorRT-LLM without attention DP), carrying the shared
            # experts' partial sums too when they split over the same ranks
            out += cx.tp_module("moe_ep", "routed_experts", g, cx.group_tokens(g) * h * ACT_BYTES, False)
            if self.shared_inter and d > 1 and d != g:
                out += cx.tp_module("shared_tp", "shared_experts", d, cx.group_tokens(d) * h * ACT_BYTES, d != a)
            return out
        fused = bool(self.shared_inter) and d == t
        # the exchange the command runs at this layout (the profile's EP kernels where their condition holds)
        exchange = cx.f.ep_exchange_for(pc, cx.hw)
        if ep > 1 and exchange == "allgather_reducescatter":
            # the engine's default exchange (FrameworkServing.ep_exchange): every rank gathers the whole MoE
            # group's tokens (the busiest attention groups' share, 8-bit where the GEMM quantizes first), runs its
            # experts on them, and one reduce-scatter sums every rank's partial outputs back, the MoE TP partial
            # sums (and fused shared experts') with them: no separate MoE TP all-reduce
            tokens = cx.group_tokens(g) * h
            disp_b = 1 if prec.activation in ("fp8", "int8", "fp4") else ACT_BYTES
            out.append(cx.coll("ep_dispatch", "routed_experts", "all_gather", g, tokens * disp_b))
            out.append(cx.coll("ep_combine", "routed_experts", "reduce_scatter", g, tokens * ACT_BYTES))
            if self.shared_inter and d > 1 and not fused:
                out += cx.tp_module("shared_tp", "shared_experts", d, cx.group_tokens(d) * h * ACT_BYTES, d != a)
            return out
        if t > 1:
            # the shared experts' partial sums ride in the same buffer when they share the TP group
            out += cx.tp_module("moe_tp", "routed_experts", t, cx.group_tokens(t) * h * ACT_BYTES, t != a)
        if ep > 1:
            # dispatch in the GEMM's 8-bit format when it has one (DeepEP FP8 dispatch), combine in bf16; the
            # busiest rank sends its own tokens to the t ranks of each destination MoE group. The EP kernels'
            # per-call latency is the device's (comm.ep_all_to_all_s), not a link hop's
            disp_b = 1 if prec.activation in ("fp8", "int8", "fp4") else ACT_BYTES
            picks = self.picks_sent(cx.f)
            send = t * cx.group_tokens(1) * picks * self.expert_width
            # the published kernel latency is the low-latency kernels' (decode, and a co-located prefill where
            # the command's one backend is those: low_latency_step); other prefills run the engines'
            # throughput kernels, which have no published per-call figure: a plain all-to-all there. An engine
            # whose exchange is the collective library's all-to-all (ep_exchange all_to_all) runs it at both
            # phases, every token-expert pair sent as it is
            kernel = exchange == "a2a_kernel"
            a2a = "ep_all_to_all" if kernel and low_latency_step(cx) else "all_to_all"
            if kernel and a2a == "all_to_all":
                # RDMA once per remote NVLink domain hit: scaling the whole send makes the RDMA level's bytes
                # exact; the NVLink level it also scales stays well below it (an order of magnitude faster link)
                send *= rdma_copies_share(cx.hw, ep, t, picks)
            out.append(cx.coll("ep_dispatch", "routed_experts", a2a, ep, send * disp_b, stride=t))
            out.append(cx.coll("ep_combine", "routed_experts", a2a, ep, send * ACT_BYTES, stride=t))
        if self.shared_inter and d > 1 and not fused:
            out += cx.tp_module("shared_tp", "shared_experts", d, cx.group_tokens(d) * h * ACT_BYTES, d != a)
        return out

    def activation(self, pc, tokens: float, split: int) -> float:
        return self._mean_pairs(pc, tokens) * self._pair_bytes(pc)

    def hot_rank_activation(self, pc, tokens: float) -> float:
        """The zero picks' pairs on the rank holding expert 0, where the engine runs them there (picks_sent): every
        token's topk - real_topk of them, the EP group's tokens (ep x a rank's mean of real pairs / real_topk);
        under MoE TP alone (EP 1) every rank holds every token's."""
        if not self.zero_experts:
            return 0.0
        tokens_routed = self._mean_pairs(pc, tokens) / self.real_topk * pc.moe_ep_size
        return tokens_routed * (self.topk - self.real_topk) * self._pair_bytes(pc)

    def _mean_pairs(self, pc, tokens: float) -> float:
        """Token-expert pairs of real experts landing on a rank, on average."""
        return tokens * pc.attn_replicas / pc.world_size * self.real_topk * pc.moe_tp_size

    def _pair_bytes(self, pc) -> float:
        """A pair's input row and its gate / up intermediates (their 1/moe_tp slice)."""
        return (self.expert_width + (2 if self.gated else 1) * self.inter / pc.moe_tp_size) * ACT_BYTES
