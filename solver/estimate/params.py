"""Exact parameter accounting per module.

Each module is a list of parts; a part says how it is split when its module's parallel degree is n:
  "tp"       -> params / n          (column/row-parallel matrices, vocab-parallel embedding)
  "kv_heads" -> params / min(n, N_kv) (GQA K/V projections: heads are replicated once n exceeds them)
  "none"     -> params on every rank (norms, MLA down-projections, the DSA indexer, the router)
Routed experts split over all ranks of the MoE group (EP x TP), handled in estimate.memory.
"""
from __future__ import annotations

from dataclasses import dataclass

from solver.specs.model import ModelSpec

MODULES = (
    "embedding", "attention", "indexer", "o_proj", "dense_ffn", "shared_experts", "routed_experts", "router",
    "norms", "lm_head",
)


@dataclass(frozen=True)
class Part:
    name: str
    params: int
    split: str  # "tp" | "kv_heads" | "none"


@dataclass(frozen=True)
class ModuleParams:
    name: str
    group: str  # precision group: attention | dense | experts | embedding | lm_head | norm
    parts: tuple[Part, ...]
    active_params: float  # parameters touched per token (routed experts: top-k of them)

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

    def module(self, name: str) -> ModuleParams:
        for m in self.modules:
            if m.name == name:
                return m
        raise KeyError(name)

    def by_name(self) -> dict[str, int]:
        return {m.name: m.params for m in self.modules}


def _attention_parts(m: ModelSpec) -> list[Part]:
    """q/k/v (or MLA) projections and their norms for ONE attention layer, o_proj excluded."""
    h, nh, dh = m.hidden_size, m.num_attention_heads, m.head_dim
    if m.has_mla:
        rope, nope, v = m.qk_rope_head_dim or 0, m.qk_nope_head_dim or 0, m.v_head_dim
        parts: list[Part] = []
        if m.q_lora_rank:
            parts += [
                Part("q_a_proj", h * m.q_lora_rank, "none"),
                Part("q_a_layernorm", m.q_lora_rank, "none"),
                Part("q_b_proj", m.q_lora_rank * nh * (nope + rope), "tp"),
            ]
        else:
            parts.append(Part("q_proj", h * nh * (nope + rope), "tp"))
        kv_lora = m.kv_lora_rank or 0
        parts += [
            Part("kv_a_proj_with_mqa", h * (kv_lora + rope), "none"),
            Part("kv_a_layernorm", kv_lora, "none"),
            Part("kv_b_proj", kv_lora * nh * (nope + v), "tp"),
        ]
        return parts
    nkv = m.num_key_value_heads
    bias_q = nh * dh if m.attention_bias else 0
    bias_kv = 2 * nkv * dh if m.attention_bias else 0
    parts = [
        Part("q_proj", h * nh * dh + bias_q, "tp"),
        Part("kv_proj", 2 * h * nkv * dh + bias_kv, "kv_heads"),
    ]
    if m.qk_norm:
        parts.append(Part("qk_norm", 2 * dh, "none"))
    if m.attention_sinks:
        parts.append(Part("sinks", nh, "tp"))
    return parts


def _indexer_parts(m: ModelSpec) -> list[Part]:
    """DSA lightning indexer of one layer: replicated under attention TP in every shipped implementation."""
    if not m.has_dsa:
        return []
    ih, idim, h = m.index_n_heads or 0, m.index_head_dim or 0, m.hidden_size
    q_in = m.q_lora_rank or h
    return [
        Part("wq_b", q_in * ih * idim, "none"),
        Part("wk", h * idim, "none"),
        Part("k_norm", 2 * idim, "none"),  # LayerNorm weight + bias
        Part("weights_proj", h * ih, "none"),
    ]


def _ffn(h: int, inter: int, matrices: int, bias: bool) -> int:
    weights = matrices * h * inter
    biases = ((matrices - 1) * inter + h) if bias else 0
    return weights + biases


def _layer_modules(m: ModelSpec, attn_layers: int, dense_layers: int, moe_layers: int) -> list[ModuleParams]:
    h = m.hidden_size
    attn = sum(p.params for p in _attention_parts(m))
    idx = sum(p.params for p in _indexer_parts(m))
    o_proj = m.o_proj_dim * h + (h if m.attention_out_bias else 0)
    dense = _ffn(h, m.intermediate_size, m.ffn_matrices, m.mlp_bias)
    mods = [
        ModuleParams("attention", "attention",
                     tuple(Part(p.name, p.params * attn_layers, p.split) for p in _attention_parts(m)),
                     attn * attn_layers),
    ]
    if idx:
        mods.append(ModuleParams("indexer", "attention",
                                 tuple(Part(p.name, p.params * attn_layers, p.split) for p in _indexer_parts(m)),
                                 idx * attn_layers))
    mods.append(ModuleParams("o_proj", "attention", (Part("o_proj", o_proj * attn_layers, "tp"),),
                             o_proj * attn_layers))
    if dense_layers:
        mods.append(ModuleParams("dense_ffn", "dense", (Part("mlp", dense * dense_layers, "tp"),),
                                 dense * dense_layers))
    if moe_layers and m.is_moe:
        inter = m.moe_intermediate_size or m.intermediate_size
        expert = _ffn(h, inter, m.ffn_matrices, m.mlp_bias)
        if m.num_shared_experts:
            sh_inter = m.shared_expert_intermediate_size or inter * m.num_shared_experts
            shared = _ffn(h, sh_inter, m.ffn_matrices, m.mlp_bias)
            mods.append(ModuleParams("shared_experts", "dense", (Part("shared", shared * moe_layers, "tp"),),
                                     shared * moe_layers))
        routed = expert * m.num_experts * moe_layers
        # expected real (non-zero) experts among the top-k: zero experts take their share of the slots
        real_topk = m.real_experts_per_token
        mods.append(ModuleParams("routed_experts", "experts", (Part("experts", routed, "tp"),),
                                 expert * real_topk * moe_layers))
        router = (h * m.expert_slots + (m.expert_slots if m.router_bias else 0)) * moe_layers
        mods.append(ModuleParams("router", "norm", (Part("gate", router, "none"),), router))
    norms = 2 * h * attn_layers
    mods.append(ModuleParams("norms", "norm", (Part("layernorms", norms, "none"),), norms))
    return mods


def count_params(m: ModelSpec) -> ParamReport:
    """Exact parameters per module of the main model, with MTP layers reported separately."""
    h, v = m.hidden_size, m.vocab_size
    modules: list[ModuleParams] = [
        ModuleParams("embedding", "embedding", (Part("embed_tokens", v * h, "tp"),), v * h),
    ]
    modules += _layer_modules(m, m.num_layers, m.num_dense_layers, m.num_moe_layers)
    final_norm = h
    head = 0 if m.tie_word_embeddings else v * h
    modules.append(ModuleParams("lm_head", "lm_head", (Part("lm_head", head, "tp"),) if head else (), head))
    # the final norm is one vector; fold it into norms
    modules = [
        ModuleParams(x.name, x.group, x.parts + ((Part("final_norm", final_norm, "none"),) if x.name == "norms" else ()),
                     x.active_params + (final_norm if x.name == "norms" else 0))
        for x in modules
    ]
    mtp: list[ModuleParams] = []
    extra = 0
    if m.num_mtp_layers:
        n = m.num_mtp_layers
        # each next-n layer: one MoE decoder layer + enorm + hnorm + eh_proj (2H -> H) + its head norm
        mtp = _layer_modules(m, n, 0 if m.is_moe else n, n if m.is_moe else 0)
        glue = n * (2 * h * h + 3 * h)
        mtp.append(ModuleParams("mtp_glue", "dense", (Part("eh_proj+norms", glue, "none"),), glue))
        # DeepSeek-style checkpoints store a copy of embed_tokens and the head inside each MTP layer
        extra = n * 2 * v * h
    return ParamReport(tuple(modules), tuple(mtp), extra)
