"""The FFN blocks of a layer (dense, MoE, both), read from the config's sizes by field convention: the part of
BlockReader (blocks.py) that reads what follows the mixer."""
from __future__ import annotations

from solver.specs.config.fields import Fields
from solver.specs.config.pattern import Slot
from solver.specs.layers import DenseFFN, MoE
from solver.specs.layers.base import Block

# the fields a routed-expert count is read from (config/unread.py names them when a config uses another)
EXPERT_COUNT_FIELDS = ("n_routed_experts", "num_local_experts", "num_experts", "moe_num_experts",
                       "moe_num_primary_experts")  # SmallThinker's primary experts
# where the shared experts' count and width are read from (one shared expert's width: shared_experts_intermediate_size,
# Dots3NoteTextMoE's, times the count); a family whose MoE block builds none (_shared_experts false) reads none of them
SHARED_COUNT_FIELDS = ("n_shared_experts", "num_shared_experts", "num_shared_expert", "moe_num_shared_experts")
SHARED_WIDTH_FIELDS = ("shared_expert_intermediate_size", "moe_shared_expert_intermediate_size",
                       "shared_intermediate_size", "share_expert_dim")  # Step-3.5 / 3.7
SHARED_EXPERT_FIELDS = SHARED_COUNT_FIELDS + SHARED_WIDTH_FIELDS + ("shared_experts_intermediate_size",)
# where a dense FFN's width is read from, first given wins (Llama-4 writes both intermediate_size_mlp and the
# experts' intermediate_size; OPT writes ffn_dim; LFM2's block_ff_dim wins over its intermediate_size; Phi-3-small
# writes ff_intermediate_size, CTRL dff; Command A+'s dense prefix layers prefix_dense_intermediate_size, null where
# they take intermediate_size as its experts do)
FFN_WIDTH_FIELDS = ("block_ff_dim", "intermediate_size_mlp", "prefix_dense_intermediate_size",
                    "mlp_only_intermediate_size",  # the width of mlp_only_layers' MLP (Kolibri-1.1)
                    "dense_intermediate_size",  # mlp_layer_types' "dense" layers (MiniMax-M3's MiniMaxM3VLDenseMLP)
                    "first_dense_intermediate_size",  # the leading dense layers' MLP (Ergo's ErgoMLP)
                    "ffn_hidden_size",
                    "intermediate_size", "n_inner",
                    "ffn_dim", "ff_intermediate_size", "dff",
                    "mlp_hidden_size")  # OLMo-1's layout: each of a llama block's ff_proj / up_proj (LLaDA)


def modality_pair(f: Fields, name: str) -> tuple[int, int] | None:
    """A [text, vision] pair under the family's _modality_expert_sets fact (ERNIE-4.5-VL's moe_num_experts and
    moe_intermediate_size: one expert set per modality in every MoE layer), one number standing for both; None where
    the fact is off or the field is absent."""
    if not f.cfg.get("_modality_expert_sets") or f.cfg.get(name) is None:
        return None
    value = f.cfg[name]
    if not isinstance(value, list):
        n = f.check_int(name, value)
        return n, n
    if len(value) != 2:
        raise f.err(name, f"has {len(value)} entries; a model with an expert set per modality writes [text, vision]")
    text, vision = f.int_list(name, 2, 1) or [0, 0]
    return text, vision


def _hash_routed(f: Fields, i: int) -> bool:
    """Whether layer i is one of the first num_hash_layers, whose experts a token-id table picks."""
    return i < f.int("num_hash_layers", default=0, minimum=0)


def ffn_mult_width(mult: float, hidden: int) -> int:
    """DeciLM / Nemotron-NAS: int(2 x ffn_mult x hidden / 3) rounded up to a multiple of 256."""
    width = int(2 * mult * hidden / 3)
    return -(-width // 256) * 256


def make_divisible(value: float, divisor: int) -> int:
    """CoreNet's rounding (OpenELM's FFN widths): the nearest multiple of divisor, at least divisor, one step more
    where that fell below 90% of the value."""
    width = max(divisor, int(value + divisor / 2) // divisor * divisor)
    return width + divisor if width < 0.9 * value else width


class FfnReading:
    """BlockReader's FFN part: it reads the sizes BlockReader.__init__ sets (f, h, layers, gated, mlp_bias, mlp_out_bias,
    act_params, experts, zero, notes)."""

    f: Fields
    h: int
    layers: int
    gated: bool
    mlp_bias: bool
    mlp_out_bias: bool
    act_params: int
    experts: int
    zero: int
    notes: list[str]

    def dense_width(self, slot: Slot) -> int:
        f, cfg = self.f, self.f.cfg
        if isinstance(cfg.get("block_configs"), list):
            ffn = cfg["block_configs"][slot.index]["ffn"]
            return ffn_mult_width(Fields(ffn, f.origin, f"{f.prefix}block_configs[{slot.index}].ffn.")
                                  .number("ffn_mult", 0.0, 1000.0), self.h)
        width_field = cfg.get("_dense_ffn_width")
        if width_field is not None and not self.experts:
            # GraniteMoeHybrid without routed experts keeps only its shared_mlp, shared_intermediate_size wide;
            # intermediate_size sizes experts it does not have (said, not read)
            if f.has("intermediate_size"):
                note = (f"{f.prefix}intermediate_size ({f.int('intermediate_size')}): sizes the routed experts, and "
                        f"there are none; the MLP is {f.prefix}{width_field} wide")
                if note not in self.notes:
                    self.notes.append(note)
            return f.int(width_field)
        if f.has("ffn_multipliers"):
            # OpenELM: layer i's MLP is ffn_multipliers[i] x hidden wide, rounded by make_divisible to a multiple of
            # ffn_dim_divisor (OpenELMFeedForwardNetwork); one number holds for every layer
            mults = cfg["ffn_multipliers"]
            if isinstance(mults, list):
                if len(mults) != self.layers:
                    raise f.err("ffn_multipliers", f"has {len(mults)} entries for {self.layers} layers")
                i = min(slot.index, self.layers - 1)  # an MTP layer reads the last layer's
                name = f"ffn_multipliers[{i}]"
                mult = Fields({name: mults[i]}, f.origin, f.prefix).number(name, 0.0, 1000.0)
            else:
                mult = f.number("ffn_multipliers", 0.0, 1000.0)
            return make_divisible(mult * self.h, f.int("ffn_dim_divisor"))
        if f.has(*FFN_WIDTH_FIELDS):
            name = f.first(*FFN_WIDTH_FIELDS)
            widths = cfg[name]
            if isinstance(widths, list):  # one width a layer (Gemma-3n's intermediate_size; an MTP layer: the last)
                if len(widths) != self.layers:
                    raise f.err(name, f"has {len(widths)} entries for {self.layers} layers")
                i = min(slot.index, self.layers - 1)
                width = Fields({f"{name}[{i}]": widths[i]}, f.origin, f.prefix).int(f"{name}[{i}]", minimum=1)
            else:
                width = f.int(*FFN_WIDTH_FIELDS)
            if f.bool("block_auto_adjust_ff_dim"):
                # LFM2 (Llama's original sizing): 2/3 of the written width, times block_ffn_dim_multiplier, rounded
                # up to a multiple of block_multiple_of (Lfm2MLP; the config class's defaults 1.0 and 256)
                width = int(2 * width / 3)
                if f.has("block_ffn_dim_multiplier"):
                    width = int(f.number("block_ffn_dim_multiplier", 0.0, 1000.0) * width)
                multiple = f.int("block_multiple_of", default=256)
                width = multiple * -(-width // multiple)
            divisor = f.int("_ffn_width_divisor", default=1)  # RecurrentGemmaMlp: intermediate_size // 2
            # use_double_wide_mlp: the layers attending with another layer's K/V run an MLP twice as wide (Gemma-4)
            double = 2 if slot.kv_shared and f.bool("use_double_wide_mlp") else 1
            return double * width // divisor
        # the FFN as a multiple of the width: MPT's expansion_ratio, GPT-NeoX-Japanese's intermediate_multiple_size
        ratio_field = f.first("expansion_ratio", "intermediate_multiple_size")
        if ratio_field is not None:
            ratio = f.number(ratio_field, 0.0, 1000.0)
            if ratio * self.h != int(ratio * self.h):
                raise f.err(ratio_field, f"{ratio} x hidden_size ({self.h}) is not a whole width")
            return int(ratio * self.h)
        four_x = cfg.get("_ffn_4x_hidden")
        if four_x is None:
            raise f.err("intermediate_size", "missing (required to size the dense FFN)")
        if four_x is not True:  # the family's width field left unset: said, as the class's default reads it
            note = (f"{f.prefix}{four_x}: not given; the FFN width is read as 4 x hidden size = {4 * self.h} "
                    f"(the {cfg.get('model_type')} convention)")
            if note not in self.notes:
                self.notes.append(note)
        return 4 * self.h

    def dense(self, slot: Slot) -> DenseFFN:
        return DenseFFN(hidden=self.h, inter=self.dense_width(slot), gated=self.gated, bias=self.mlp_bias,
                        act_params=self.act_params, out_bias=self.mlp_out_bias,
                        inter_vectors=self.f.int("_mlp_channel_vectors", default=0, minimum=0, maximum=8),
                        out_scale=self.f.bool("_mlp_out_scale"))

    def moe(self, slot: Slot) -> MoE:
        f, L = self.f, self.layers
        i = min(slot.index, L - 1)  # MTP layers read the last layer's per-layer entries
        topk_name = f.first("num_experts_per_tok", "experts_per_token", "num_experts_per_token", "moe_topk",
                            "top_k_experts", "moe_k", "moe_top_k", "moe_num_active_primary_experts")
        if topk_name is None:
            raise f.err("num_experts_per_tok", "missing for a model with routed experts")
        topk = f.per_layer(topk_name, L, 1)[i]  # type: ignore[index]
        if topk > self.experts + self.zero:
            raise f.err(topk_name, f"{topk} exceeds the number of experts ({self.experts})")
        # DBRX names its experts' width ffn_hidden_size (in ffn_config): read after the MoE-specific names
        inter_name = f.first("moe_intermediate_size", "expert_ffn_hidden_size", "expert_intermediate_size",
                             "moe_ffn_hidden_size", "intermediate_size", "ffn_hidden_size")
        if inter_name is None:
            raise f.err("moe_intermediate_size", "missing for a model with routed experts")
        pair = modality_pair(f, inter_name)
        inter = pair[0] if pair else f.per_layer(inter_name, L, 1)[i]  # type: ignore[index]
        builds_shared = f.bool("_shared_experts", True)  # the family's MoE block builds shared experts at all
        count_name = f.first(*SHARED_COUNT_FIELDS) if builds_shared else None
        count = f.per_layer(count_name, L, 0)[i] if count_name else 0  # type: ignore[index]
        width_name = f.first(*SHARED_WIDTH_FIELDS) if builds_shared else None
        if not builds_shared:
            shared = 0  # the fields written are said once (unbuilt_shared_note)
        elif width_name is not None:
            shared = f.int(width_name, minimum=0)  # 0: no shared expert
        elif f.has("shared_experts_intermediate_size"):  # one shared expert's width (Dots3NoteTextMoE: x count)
            shared = count * f.int("shared_experts_intermediate_size", minimum=0)
        else:
            base = f.int("intermediate_size", default=inter) if count_name == "num_shared_expert" else inter
            shared = count * base
        # a score-correction bias per expert: DeepSeek's noaux_tc, use_routing_bias, ERNIE's moe_use_aux_free,
        # LFM2-MoE's use_expert_bias, Ling-2.0's moe_router_enable_expert_bias
        router_bias = (str(f.cfg.get("topk_method", "")) == "noaux_tc" or f.bool("use_routing_bias")
                       or f.bool("moe_use_aux_free") or f.bool("use_expert_bias")
                       or f.bool("moe_router_enable_expert_bias") or f.bool("_router_bias"))
        if f.cfg.get("_router_bias") is False:  # the family's router holds no correction bias
            router_bias = False
        # a hash-routed layer picks its experts from a token-id table, not by scores: no correction bias there
        # (DeepSeek-V4's first num_hash_layers: DeepseekV4HashRouter holds the gate and a tid2eid table only)
        if router_bias and _hash_routed(f, i):
            router_bias = False
        # the second set per MoE layer, [1] of the pairs (ERNIE-4.5-VL's vision experts), with its own router
        counts = modality_pair(f, f.first(*EXPERT_COUNT_FIELDS) or EXPERT_COUNT_FIELDS[0])
        second = (counts[1], pair[1]) if pair and counts else (0, 0)
        return MoE(hidden=self.h, experts=self.experts, topk=topk, inter=inter, shared_inter=shared,
                   shared_count=(count or 1) if shared else 0,
                   modality_experts=second[0], modality_inter=second[1],
                   zero_experts=self.zero, gated=self.gated, bias=self.mlp_bias, router_bias=router_bias,
                   shared_gate=bool(shared) and f.bool("_shared_expert_gate"),
                   # Muse-Spark's moe_hidden_size: pre_expert_proj hidden -> it, post_expert_proj back
                   latent=f.int("moe_latent_size", "routed_expert_hidden_size", "moe_hidden_size", default=0,
                                minimum=0),
                   latent_norms=f.int("_latent_norms", default=0, minimum=0, maximum=8),
                   # the family's facts: each routed expert / the shared expert ends in its own RMSNorm (Ergo)
                   expert_out_norm=f.bool("_expert_output_norm"),
                   shared_out_norm=bool(shared) and f.bool("_shared_expert_output_norm"),
                   # the family's router MLP, sized by the field _router_mlp names, and the router state the layers
                   # after the first add in (ZAYA's router_hidden_size, router_states_scale)
                   router_mlp=f.int(str(f.cfg["_router_mlp"]), minimum=1) if f.cfg.get("_router_mlp") else 0,
                   router_state_scale=f.bool("_router_state_from_previous") and slot.index > 0,
                   router_scales=f.bool("_router_scales"),
                   # the family's facts: the router scores the shared experts too (Inkling's shared-expert sinks:
                   # one row per shared expert) and holds one scale of the routing weights
                   router_shared_rows=count if f.bool("_router_scores_shared") else 0,
                   router_global_scale=f.bool("_router_global_scale"))

    def unbuilt_shared_note(self) -> None:
        """Name the shared-expert fields a config writes where the family's MoE block builds no shared expert
        (_shared_experts false: Qwen3MoeSparseMoeBlock holds the router and the routed experts only): not counted."""
        f = self.f
        if f.bool("_shared_experts", True):
            return
        written = [f.path(k) for k in SHARED_EXPERT_FIELDS if f.cfg.get(k)]
        if written:
            self.notes.append(f"{', '.join(written)}: not read; model_type {f.cfg.get('model_type')!r} builds no "
                              "shared expert in its MoE block, so none is counted")

    def ffns(self, slot: Slot) -> tuple[Block, ...]:
        if slot.ffn is None:
            return ()
        if slot.residual_mlp:
            # Arctic (parallel_attn_mlp_res): a dense residual MLP hidden_size wide (ArcticMLP built with
            # is_residual_mlp) beside the MoE
            return (DenseFFN(hidden=self.h, inter=self.h, gated=self.gated, bias=self.mlp_bias,
                             act_params=self.act_params), self.moe(slot))
        if slot.ffn == "dense":
            out: tuple[Block, ...] = (self.dense(slot),)
            return out + ((self.moe(slot),) if slot.extra_moe else ())
        if self.f.bool("_dense_beside_moe"):  # the family's MoE layers keep their dense MLP too (DiffusionGemma)
            return (self.dense(slot), self.moe(slot))
        return (self.moe(slot),)
