"""Exact parameter accounting per module, summed over the model's layer stack.

Each layer block reports its parameters as module shares (specs/layers); this file only adds them up over
the stack and adds what sits outside it: embedding (and a learned position table), lm_head (tied or not, with
its bias where the family has one), the final norm (and an embedding norm), encoders, and the MTP modules
(reported separately). A part says how it is split when its module's parallel degree is n:
  "tp"       -> params / n          (column/row-parallel matrices, vocab-parallel embedding)
  "kv_heads" -> params / min(n, N_kv) (GQA K/V projections: heads are replicated once n exceeds them)
  "none"     -> params on every rank (norms, MLA down-projections, the DSA indexer, the router)
Routed experts split over all ranks of the MoE group (EP x TP), handled in estimate.weights.
"""
from __future__ import annotations

from dataclasses import dataclass

from solver.specs.layers.base import Layer, Part, Share, layer_shares
from solver.specs.layers.hyper import HEAD_DTYPE
from solver.specs.model import ModelSpec

MODULES = (
    "embedding", "attention", "indexer", "o_proj", "linear_attention", "ssm", "short_conv", "dense_ffn", "shared_experts",
    "routed_experts", "router", "moe_latent", "norms", "lm_head", "vision", "audio",
)
ENCODER_MODULES = ("vision", "audio")
__all__ = ["MODULES", "ModuleParams", "ParamReport", "Part", "count_params", "stack_modules"]


@dataclass(frozen=True)
class ModuleParams:
    name: str
    group: str  # precision group: attention | dense | experts | embedding | lm_head | norm
    parts: tuple[Part, ...]
    active_params: float  # parameters touched per token (routed experts: top-k of them)
    knob: str | None = None  # the parallel size that splits its "tp" parts (specs.layers.base.KNOB_NAMES)

    @property
    def params(self) -> int:
        return sum(p.params for p in self.parts)


@dataclass(frozen=True)
class ParamReport:
    modules: tuple[ModuleParams, ...]
    mtp: tuple[ModuleParams, ...]  # next-n prediction layers (unique weights; embedding/head shared)
    mtp_checkpoint_extra: int  # embedding + head copies a DeepSeek-style checkpoint stores per MTP layer

    @property
    def total(self) -> int:
        return sum(m.params for m in self.modules)

    @property
    def active(self) -> float:
        return sum(m.active_params for m in self.modules)

    @property
    def mtp_params(self) -> int:
        return sum(m.params for m in self.mtp)

    @property
    def checkpoint_total(self) -> int:
        return self.total + self.mtp_params + self.mtp_checkpoint_extra

    def encoder_params(self) -> int:
        return sum(m.params for m in self.modules if m.name in ENCODER_MODULES)

    def counted(self, basis: str) -> float:
        """The total under a published figure's counting basis (models/published.yaml)."""
        text = self.total - self.encoder_params()
        embed = self.by_name().get("embedding", 0) + self.by_name().get("lm_head", 0)
        table = {"text": text, "encoders": self.total, "mtp": text + self.mtp_params, "non_embedding": text - embed,
                 "checkpoint": self.checkpoint_total}
        if basis not in table:
            raise KeyError(f"unknown counting basis {basis!r} (known: {', '.join(table)})")
        return float(table[basis])

    def active_counted(self, basis: str) -> float:
        """Active parameters per token under a card's definition: all, non_embedding, no_input_embedding."""
        by = self.by_name()
        table = {"all": self.active, "non_embedding": self.active - by.get("embedding", 0) - by.get("lm_head", 0),
                 "no_input_embedding": self.active - by.get("embedding", 0)}
        if basis not in table:
            raise KeyError(f"unknown active basis {basis!r} (known: {', '.join(table)})")
        return float(table[basis])

    def module(self, name: str) -> ModuleParams:
        for m in self.modules:
            if m.name == name:
                return m
        raise KeyError(name)

    def by_name(self) -> dict[str, int]:
        return {m.name: m.params for m in self.modules}

    def knobs(self) -> dict[str, str | None]:
        """module name -> the knob that owns it (the planner maps knobs to its groups)."""
        return {m.name: m.knob for m in self.modules + self.mtp}


class _Acc:
    """Adds shares of equal modules; parts merge by (name, split, heads)."""

    def __init__(self) -> None:
        self.order: list[str] = []
        self.meta: dict[str, tuple[str, str | None]] = {}
        self.parts: dict[str, dict[tuple[str, str, int], int]] = {}
        self.active: dict[str, float] = {}

    def add(self, share: Share, count: int = 1) -> None:
        if share.module not in self.meta:
            self.order.append(share.module)
            self.meta[share.module] = (share.group, share.knob)
            self.parts[share.module] = {}
            self.active[share.module] = 0.0
        bucket = self.parts[share.module]
        for p in share.parts:
            key = (p.name, p.split, p.heads, p.dtype)
            bucket[key] = bucket.get(key, 0) + p.params * count
        self.active[share.module] += share.active_params * count

    def modules(self, order: tuple[str, ...] = MODULES) -> list[ModuleParams]:
        rank = {n: i for i, n in enumerate(order)}
        names = sorted(self.order, key=lambda n: rank.get(n, len(rank)))
        return [ModuleParams(n, self.meta[n][0],
                             tuple(Part(k[0], v, k[1], k[2], k[3]) for k, v in self.parts[n].items()),
                             self.active[n], self.meta[n][1]) for n in names]


def stack_modules(layers: list[tuple[Layer, int]]) -> list[ModuleParams]:
    """Parameters per module of (layer, count) pairs."""
    acc = _Acc()
    for share, n in layer_shares(layers):
        acc.add(share, n)
    return acc.modules()


# reports per model object (the planner asks for every pipeline stage's many times); identity-keyed, the entry
# keeps the model alive so its id is not reused. A ParamReport is read, never changed, by its callers.
_REPORTS: dict[int, tuple[ModelSpec, "ParamReport"]] = {}


def count_params(m: ModelSpec) -> ParamReport:
    """Exact parameters per module of the main model, with MTP layers reported separately."""
    hit = _REPORTS.get(id(m))
    if hit is not None and hit[0] is m:
        return hit[1]
    if len(_REPORTS) > 1024:
        _REPORTS.clear()
    report = _count_params(m)
    _REPORTS[id(m)] = (m, report)
    return report


def _count_params(m: ModelSpec) -> ParamReport:
    h, v, ew = m.hidden_size, m.vocab_size, m.embed_width
    acc = _Acc()
    embed = (Part("embed_tokens", (v + m.embedding_extra_rows) * ew, "tp"),)
    if m.embedding_width:  # project_in from the narrower embedding into the stack, replicated
        embed += (Part("project_in", ew * h, "none"),)
    if m.position_embeddings:  # a learned position table is a plain lookup, replicated (not vocab-parallel)
        embed += (Part("embed_positions", m.position_embeddings * h, "none"),)
    if m.per_layer_inputs:  # per-layer input table, projection and norm, on the embedding's ranks
        embed += m.per_layer_inputs.parts()
    if m.self_conditioning:  # the self-conditioning MLP and its norm, replicated on the embedding's ranks
        embed += m.self_conditioning.parts()
    acc.add(Share("embedding", "embedding", "embed_tp_size", embed))
    norm_vectors = 2 if m.norm_bias else 1  # weight (+ bias) per norm outside the stack
    if m.embedding_norm:
        vectors = 2 if m.embedding_norm_bias else norm_vectors
        acc.add(Share("norms", "norm", None, (Part("embedding_norm", vectors * h, "none"),)))
    for share, n in layer_shares(m.layer_groups):  # a shared block's weights once (SharedRef)
        acc.add(share, n)
    if m.final_norm:
        acc.add(Share("norms", "norm", None, (Part("final_norm", norm_vectors * h, "none"),)))
    if m.stack_vectors:
        acc.add(Share("norms", "norm", None, (Part("stack_vectors", m.stack_vectors * h, "none"),)))
    if m.rope_scales:
        acc.add(Share("norms", "norm", None, (Part("rope_scales", m.rope_scales, "none"),)))
    head = () if m.tie_word_embeddings else (Part("lm_head", v * ew, "tp"),)
    if m.embedding_width:  # project_out from the stack to the head's width, replicated
        head += (Part("project_out", h * ew, "none"),)
    if m.head_transform:  # a dense and a norm before the vocabulary projection, replicated
        head += (Part("head_transform", m.head_transform, "none"),)
    if m.lm_head_bias:  # a bias per vocabulary entry, split with the head's rows (tied or not)
        head += (Part("lm_head_bias", v, "tp"),)
    if m.lm_head_scale:  # a logit scale per vocabulary entry, split with the head's rows
        head += (Part("lm_head_logit_scale", v, "tp"),)
    if m.hyper_head:  # the final collapse of the hyper-connection streams before the final norm, replicated
        head += (Part("hyper_head", m.hyper_head, "none", dtype=HEAD_DTYPE),)
    if head:
        acc.add(Share("lm_head", "lm_head", "lmhead_tp_size", head))
    for enc in m.encoders:
        # encoders stay 16-bit in shipped checkpoints (specs/config/encoders.py); the engine's layout says whether
        # they split over the attention TP group or sit whole on every rank (weights.split_degree); what a sharding
        # engine keeps whole (patch embedding, position table, norms, row biases) is under 1% of a ViT (Qwen3-VL's
        # 27-layer tower: 4.65M of 538.6M, by hand from its vision_config), so the tower splits as one part
        # a text token touches no encoder weight: active 0
        acc.add(Share(enc.name, "norm", "encoder_tp_size", (Part(f"{enc.name}_encoder", enc.params, "tp"),),
                      active=0.0))
    modules = acc.modules()
    if not any(x.name == "lm_head" for x in modules):
        modules.insert(len(modules) - sum(1 for x in modules if x.name in ("vision", "audio")),
                       ModuleParams("lm_head", "lm_head", (), 0, "lmhead_tp_size"))
    mtp: list[ModuleParams] = []
    extra = 0
    if m.mtp_modules:
        n = len(m.mtp_modules)
        mtp = stack_modules([(layer, 1) for module in m.mtp_modules for layer in module])
        # each next-n module: enorm + hnorm + eh_proj (2H -> H) + its head norm
        glue = n * (2 * h * h + 3 * h)
        parts = (Part("eh_proj+norms", glue, "none"),)
        if m.hyper_head:  # and, under hyper-connections, its own stream collapse before that norm (SGLang's
            # DeepseekV4ModelNextN hc_head_fn / hc_head_base / hc_head_scale)
            parts += (Part("hyper_head", n * m.hyper_head, "none", dtype=HEAD_DTYPE),)
        mtp.append(ModuleParams("mtp_glue", "dense", parts, glue + n * m.hyper_head, None))
        if m.mtp_checkpoint_copies:
            # DeepSeek-style checkpoints store a copy of embed_tokens and the head inside each MTP layer
            extra = n * 2 * v * ew
    return ParamReport(tuple(modules), tuple(mtp), extra)
