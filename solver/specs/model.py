"""ModelSpec: every size the estimators need, parsed from a Hugging Face `config.json`.

The parser knows the field names of the families shardplan supports (llama, qwen3, qwen3_moe, mixtral,
deepseek_v3, deepseek_v32, kimi_k2, glm_moe_dsa, gpt_oss, llama4, longcat_flash) and falls back to the
common names for anything else. What it cannot size fails with one line naming the field.
"""
from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from solver.errors import InputError

Architecture = Literal["dense", "moe", "moe+mla", "moe+dsa", "dense+mla", "hybrid-attention"]
AttentionKind = Literal["gqa", "mla", "dsa"]
LARGE_VOCAB = 100_000  # seed: a vocabulary over 100K -> set embed/lm_head TP independently of the backbone


class QuantSpec(BaseModel):
    """Checkpoint number formats per module group (what the published weights are stored in)."""

    model_config = ConfigDict(frozen=True)

    method: str = "none"  # quant_method from the config, or "none"
    attention: str = "bf16"
    dense: str = "bf16"  # dense FFN and shared experts
    experts: str = "bf16"  # routed experts
    embedding: str = "bf16"
    lm_head: str = "bf16"
    block_size: tuple[int, int] | None = None


class ModelSpec(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    model_type: str
    architecture: Architecture
    attention_kind: AttentionKind
    is_moe: bool

    hidden_size: int
    num_layers: int  # attention (decoder) layers of the main model
    num_dense_layers: int  # layers with a dense FFN
    num_moe_layers: int  # layers with a routed MoE
    vocab_size: int
    tie_word_embeddings: bool = False

    # attention
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int  # q/k head dim (GQA) or nope+rope (MLA)
    v_head_dim: int
    attention_bias: bool = False
    attention_out_bias: bool = False
    qk_norm: bool = False
    attention_sinks: bool = False
    q_lora_rank: int | None = None
    kv_lora_rank: int | None = None
    qk_nope_head_dim: int | None = None
    qk_rope_head_dim: int | None = None
    # DSA lightning indexer
    index_n_heads: int | None = None
    index_head_dim: int | None = None
    index_topk: int | None = None
    # layers whose attention sees a bounded window (sliding window or chunked local attention)
    num_local_attention_layers: int = 0
    local_attention_window: int | None = None

    # FFN / MoE
    intermediate_size: int  # dense FFN
    moe_intermediate_size: int | None = None
    num_experts: int = 0  # routed experts with weights
    num_zero_experts: int = 0  # zero-computation (identity) experts: routed to, hold no weights
    experts_per_token: int = 0
    num_shared_experts: int = 0
    shared_expert_intermediate_size: int | None = None
    mlp_bias: bool = False
    router_bias: bool = False
    ffn_matrices: int = 3  # gated (SwiGLU): gate, up, down
    # LongCat-style shortcut-connected MoE: each MoE block sits beside this many attention+FFN sub-blocks
    sublayers_per_moe_block: int = 1

    # multi-token prediction (next-n) layers, reported separately
    num_mtp_layers: int = 0

    max_position_embeddings: int | None = None
    quant: QuantSpec = QuantSpec()
    warnings: tuple[str, ...] = ()
    nonstandard_modules: tuple[str, ...] = ()

    @property
    def has_mla(self) -> bool:
        return self.attention_kind in ("mla", "dsa")

    @property
    def has_dsa(self) -> bool:
        return self.attention_kind == "dsa"

    @property
    def has_dense_ffn(self) -> bool:
        return self.num_dense_layers > 0

    @property
    def has_large_vocab(self) -> bool:
        return self.vocab_size > LARGE_VOCAB

    @property
    def real_experts_per_token(self) -> float:
        """Routed experts a token reaches that compute: top-k scaled by the real share of the router's slots
        (LongCat's zero-computation experts take the rest)."""
        return self.experts_per_token * self.num_experts / self.expert_slots

    @property
    def o_proj_dim(self) -> int:
        """Input width of o_proj: N_h * v_head_dim (the seed's o_proj TP divisibility constraint)."""
        return self.num_attention_heads * self.v_head_dim

    @property
    def expert_slots(self) -> int:
        return self.num_experts + self.num_zero_experts

    @property
    def num_global_attention_layers(self) -> int:
        return self.num_layers - self.num_local_attention_layers


# ---------------------------------------------------------------------------------------------- parsing


def _text_config(raw: dict[str, Any]) -> dict[str, Any]:
    """Multimodal wrappers (llama4) keep the language model under text_config."""
    text = raw.get("text_config")
    if isinstance(text, dict) and "hidden_size" in text:
        merged = dict(text)
        for key in ("architectures", "quantization_config", "tie_word_embeddings"):
            if key in raw and key not in merged:
                merged[key] = raw[key]
        merged.setdefault("model_type", raw.get("model_type", text.get("model_type", "")))
        merged["_wrapper_model_type"] = raw.get("model_type")
        return merged
    return raw


class _Fields:
    """Typed access to config fields with one-line errors naming the field."""

    def __init__(self, cfg: dict[str, Any], origin: str):
        self.cfg = cfg
        self.origin = origin

    def _err(self, field: str, problem: str) -> InputError:
        return InputError(f"{self.origin}: {field}", problem)

    def has(self, *names: str) -> bool:
        return any(self.cfg.get(n) is not None for n in names)

    def int(self, *names: str, default: int | None = None, minimum: int = 1) -> int:
        for name in names:
            if self.cfg.get(name) is not None:
                value = self.cfg[name]
                if isinstance(value, bool) or not isinstance(value, (int, float)) or int(value) != value:
                    raise self._err(name, f"must be an integer, got {value!r}")
                if value < minimum:
                    raise self._err(name, f"must be >= {minimum}, got {value}")
                return int(value)
        if default is not None:
            return default
        raise self._err(names[0], "missing (required to size the model)")

    def opt_int(self, *names: str, minimum: int = 1) -> int | None:
        return self.int(*names, minimum=minimum) if self.has(*names) else None

    def bool(self, name: str, default: bool = False) -> bool:
        value = self.cfg.get(name, default)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self._err(name, f"must be true or false, got {value!r}")
        return value


_KNOWN_TYPES = {
    "llama", "mistral", "qwen2", "qwen3", "qwen3_moe", "qwen2_moe", "mixtral", "deepseek_v3", "deepseek_v32",
    "deepseek_v2", "kimi_k2", "glm_moe_dsa", "gpt_oss", "llama4", "llama4_text", "longcat_flash",
}


def parse_model_config(raw: Any, name: str, origin: str | None = None) -> ModelSpec:
    """Parse a config.json dict into a ModelSpec. Raises InputError naming the offending field."""
    origin = origin or name
    if not isinstance(raw, dict):
        raise InputError(origin, f"config must be a JSON object, got {type(raw).__name__}")
    cfg = _text_config(raw)
    f = _Fields(cfg, origin)
    warnings: list[str] = []
    nonstandard: list[str] = []

    model_type = str(cfg.get("model_type") or "")
    if model_type not in _KNOWN_TYPES:
        warnings.append(f"model_type {model_type!r} is not a known family; sizes read from the common field names")

    hidden = f.int("hidden_size", "d_model", "n_embd")
    vocab = f.int("vocab_size")
    heads = f.int("num_attention_heads", "n_head", "num_heads")
    longcat = model_type == "longcat_flash"
    if longcat:
        # num_layers counts ScMoE blocks; each holds two attention + dense-FFN sub-blocks beside one MoE
        blocks = f.int("num_layers")
        layers = f.int("num_hidden_layers", default=2 * blocks)
        if layers % blocks:
            raise InputError(f"{origin}: num_hidden_layers", f"must be a multiple of num_layers ({blocks})")
    else:
        layers = f.int("num_hidden_layers", "n_layer", "num_layers")
    kv_heads = f.int("num_key_value_heads", "num_kv_heads", default=heads)
    if kv_heads > heads or heads % kv_heads:
        raise InputError(f"{origin}: num_key_value_heads", f"{kv_heads} must divide num_attention_heads ({heads})")

    # ---- attention kind
    mla = f.has("kv_lora_rank")
    dsa = mla and f.has("index_n_heads", "index_topk")
    if mla:
        kv_lora = f.int("kv_lora_rank")
        q_lora = f.opt_int("q_lora_rank")
        rope = f.int("qk_rope_head_dim")
        nope = f.int("qk_nope_head_dim")
        v_dim = f.int("v_head_dim")
        head_dim = nope + rope
        kv_heads = heads  # MLA decompresses per head; the cache holds one latent (see estimate.memory)
    else:
        kv_lora = q_lora = rope = nope = None
        if f.has("head_dim"):
            head_dim = f.int("head_dim")
        else:
            if hidden % heads:
                raise InputError(
                    f"{origin}: num_attention_heads",
                    f"{heads} does not divide hidden_size ({hidden}) and no head_dim is given",
                )
            head_dim = hidden // heads
        v_dim = head_dim
    index_heads = f.opt_int("index_n_heads") if dsa else None
    index_dim = f.opt_int("index_head_dim") if dsa else None
    index_topk = f.opt_int("index_topk") if dsa else None
    if dsa and (index_heads is None or index_dim is None):
        raise InputError(f"{origin}: index_head_dim", "DSA indexer needs index_n_heads and index_head_dim")

    # ---- local-window attention layers
    local_layers, window = _local_attention(cfg, f, layers, model_type)

    # ---- FFN and MoE
    n_experts = f.int("n_routed_experts", "num_local_experts", "num_experts", default=0, minimum=0)
    zero_experts = f.int("zero_expert_num", default=0, minimum=0) if longcat else 0
    topk = f.int("num_experts_per_tok", "experts_per_token", "moe_topk", default=0, minimum=0)
    is_moe = n_experts > 0
    if is_moe and topk == 0:
        raise InputError(f"{origin}: num_experts_per_tok", "missing for a model with routed experts")
    if is_moe and topk > n_experts + zero_experts:
        raise InputError(f"{origin}: num_experts_per_tok", f"{topk} exceeds the number of experts ({n_experts})")
    if longcat:
        dense_inter = f.int("ffn_hidden_size", "intermediate_size")
        moe_inter = f.int("expert_ffn_hidden_size", "moe_intermediate_size")
    elif model_type in ("llama4", "llama4_text"):
        dense_inter = f.int("intermediate_size_mlp", "intermediate_size")
        moe_inter = f.int("intermediate_size") if is_moe else None
    else:
        dense_inter = f.int("intermediate_size", "ffn_hidden_size", "n_inner", default=4 * hidden)
        moe_inter = (
            f.int("moe_intermediate_size", "intermediate_size") if is_moe else None
        )
    shared = f.int("n_shared_experts", "num_shared_experts", default=0, minimum=0)
    shared_inter = f.opt_int("shared_expert_intermediate_size")
    if model_type in ("llama4", "llama4_text") and is_moe:
        shared, shared_inter = 1, f.int("intermediate_size")
    if shared_inter and not shared:
        shared = 1

    moe_layers, dense_layers, per_block = _layer_split(cfg, f, layers, is_moe, model_type)

    quant = _quant(cfg, origin, warnings)
    arch: Architecture
    if dsa:
        arch = "moe+dsa" if is_moe else "dense+mla"
    elif mla:
        arch = "moe+mla" if is_moe else "dense+mla"
    elif local_layers and local_layers < layers:
        arch = "hybrid-attention"
    else:
        arch = "moe" if is_moe else "dense"

    # modules the standard TP/EP rules do not cover: sized when possible, flagged for the planner
    for key in ("vision_config", "audio_config", "ngram_embedding", "engram", "vision_tower"):
        if key in raw and raw[key]:
            nonstandard.append(key)
    if nonstandard:
        warnings.append(
            f"non-standard modules {', '.join(nonstandard)} are not partitioned by the standard rules; "
            "their weights are counted as replicated on every rank"
        )

    return ModelSpec(
        name=name,
        model_type=model_type,
        architecture=arch,
        attention_kind="dsa" if dsa else ("mla" if mla else "gqa"),
        is_moe=is_moe,
        hidden_size=hidden,
        num_layers=layers,
        num_dense_layers=dense_layers,
        num_moe_layers=moe_layers,
        vocab_size=vocab,
        tie_word_embeddings=f.bool("tie_word_embeddings"),
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        head_dim=head_dim,
        v_head_dim=v_dim,
        attention_bias=f.bool("attention_bias") or f.bool("qkv_bias"),
        attention_out_bias=(model_type == "gpt_oss" and f.bool("attention_bias")),
        qk_norm=model_type in ("qwen3", "qwen3_moe"),
        attention_sinks=model_type == "gpt_oss",
        q_lora_rank=q_lora,
        kv_lora_rank=kv_lora,
        qk_nope_head_dim=nope,
        qk_rope_head_dim=rope,
        index_n_heads=index_heads,
        index_head_dim=index_dim,
        index_topk=index_topk,
        num_local_attention_layers=local_layers,
        local_attention_window=window,
        intermediate_size=dense_inter,
        moe_intermediate_size=moe_inter,
        num_experts=n_experts,
        num_zero_experts=zero_experts,
        experts_per_token=topk,
        num_shared_experts=shared,
        shared_expert_intermediate_size=shared_inter,
        mlp_bias=f.bool("mlp_bias") or model_type == "gpt_oss",
        router_bias=model_type == "gpt_oss" or str(cfg.get("topk_method", "")) == "noaux_tc",
        sublayers_per_moe_block=per_block,
        num_mtp_layers=f.int("num_nextn_predict_layers", default=0, minimum=0),
        max_position_embeddings=f.opt_int("max_position_embeddings"),
        quant=quant,
        warnings=tuple(warnings),
        nonstandard_modules=tuple(nonstandard),
    )


def _layer_split(cfg: dict, f: _Fields, layers: int, is_moe: bool, model_type: str) -> tuple[int, int, int]:
    """(MoE layers, dense-FFN layers, attention sub-blocks per MoE block)."""
    if not is_moe:
        return 0, layers, 1
    if model_type == "longcat_flash":
        blocks = f.int("num_layers")
        # every sub-block has a dense FFN; every block has one MoE
        return blocks, layers, layers // blocks
    first_dense = f.int("first_k_dense_replace", default=0, minimum=0)
    freq = f.int("moe_layer_freq", "decoder_sparse_step", "interleave_moe_layer_step", default=1)
    only_mlp = cfg.get("mlp_only_layers") or []
    if not isinstance(only_mlp, list) or not all(isinstance(i, int) for i in only_mlp):
        raise InputError(f"{f.origin}: mlp_only_layers", "must be a list of layer indices")
    if first_dense > layers:
        raise InputError(f"{f.origin}: first_k_dense_replace", f"{first_dense} exceeds num_hidden_layers ({layers})")
    # deepseek: i % moe_layer_freq after the first dense layers; qwen/llama4: (i + 1) % step.
    # Counted arithmetically (not by looping over layers) so an absurd layer count cannot hang the parser.
    shift = 0 if "first_k_dense_replace" in cfg else 1

    def is_moe_layer(i: int) -> bool:
        return first_dense <= i < layers and (i + shift) % freq == 0

    lo, hi = first_dense + shift, layers - 1 + shift  # offsets of the layers after the dense prefix
    moe = max(0, hi // freq - (lo - 1) // freq) - sum(1 for i in set(only_mlp) if is_moe_layer(i))
    return moe, layers - moe, 1


def _local_attention(cfg: dict, f: _Fields, layers: int, model_type: str) -> tuple[int, int | None]:
    """Count layers whose KV cache is bounded by a window (sliding or chunked attention)."""
    types = cfg.get("layer_types")
    if isinstance(types, list) and types:
        if len(types) != layers:
            raise InputError(f"{f.origin}: layer_types", f"has {len(types)} entries for {layers} layers")
        local = sum(1 for t in types if t in ("sliding_attention", "chunked_attention", "local_attention"))
        if local:
            return local, f.int("sliding_window", "attention_chunk_size")
        return 0, None
    if model_type in ("llama4", "llama4_text") and f.has("attention_chunk_size"):
        # Llama 4 interleaves one global (NoPE) layer every 4 layers; the rest use chunked local attention
        interval = f.int("no_rope_layer_interval", default=4)
        return layers - layers // interval, f.int("attention_chunk_size")
    if f.bool("use_sliding_window") and f.has("sliding_window"):
        max_window_layers = f.int("max_window_layers", default=layers, minimum=0)
        local = layers - min(max_window_layers, layers)
        return local, f.int("sliding_window") if local else None
    if model_type == "mistral" and f.has("sliding_window"):
        return layers, f.int("sliding_window")
    return 0, None


def _quant(cfg: dict, origin: str, warnings: list[str]) -> QuantSpec:
    q = cfg.get("quantization_config")
    if q is None:
        dtype = str(cfg.get("torch_dtype") or cfg.get("dtype") or "bfloat16")
        base = {"float16": "fp16", "float32": "fp32"}.get(dtype, "bf16")
        return QuantSpec(attention=base, dense=base, experts=base, embedding=base, lm_head=base)
    if not isinstance(q, dict):
        raise InputError(f"{origin}: quantization_config", "must be an object")
    method = str(q.get("quant_method", "")).lower()
    skip_key = "modules_to_not_convert" if q.get("modules_to_not_convert") else "ignored_layers"
    skip_raw = q.get(skip_key) or []
    if not isinstance(skip_raw, list):
        raise InputError(f"{origin}: quantization_config.{skip_key}", "must be a list of module names")
    skip = [str(m) for m in skip_raw]

    def skipped(*needles: str) -> bool:
        return any(any(n in m for n in needles) for m in skip)

    if method == "fp8":
        block = q.get("weight_block_size")
        if block is not None and not (
            isinstance(block, list) and len(block) == 2
            and all(isinstance(b, int) and not isinstance(b, bool) and b > 0 for b in block)
        ):
            raise InputError(f"{origin}: quantization_config.weight_block_size",
                             f"must be two positive integers, got {block!r}")
        fmt = "fp8_block" if block else "fp8"
        bs = (block[0], block[1]) if block else None
        attn = "bf16" if skipped("self_attn") else fmt
        return QuantSpec(method=method, attention=attn, dense=fmt, experts=fmt, embedding="bf16",
                         lm_head="bf16", block_size=bs)
    if method == "mxfp4":
        return QuantSpec(
            method=method,
            attention="bf16" if skipped("self_attn") else "mxfp4",
            dense="bf16",
            experts="mxfp4",
            embedding="bf16",
            lm_head="bf16",
        )
    if method in ("modelopt", "nvfp4", "compressed-tensors", "awq", "gptq", "w8a8", "int8", "int4"):
        fmt = {"awq": "int4", "gptq": "int4", "w8a8": "int8", "int8": "int8", "int4": "int4"}.get(method, "nvfp4")
        bits = q.get("bits")
        if bits == 8:
            fmt = "int8"
        warnings.append(f"quant_method {method!r} read as {fmt} for linear layers (embedding and lm_head bf16)")
        return QuantSpec(method=method, attention=fmt, dense=fmt, experts=fmt, embedding="bf16", lm_head="bf16")
    raise InputError(f"{origin}: quantization_config.quant_method", f"unsupported quant_method {method!r}")
