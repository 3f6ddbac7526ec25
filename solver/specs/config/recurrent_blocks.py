"""The recurrent mixers of a layer, read from the config's sizes by field convention: linear attention (Gated
DeltaNet, KDA, lightning), Mamba-1 and Mamba-2, the gated short convolution and the RG-LRU, and the dtype of their
state; the part of BlockReader (blocks.py) that builds state-carrying blocks."""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from solver.specs.config.fields import Fields
from solver.specs.config.quant import TORCH_DTYPES
from solver.specs.dtypes import number_format
from solver.specs.layers.base import Block

if TYPE_CHECKING:  # the layer modules are imported where a block is built
    from solver.specs.layers.mamba import Mamba1


class RecurrentReading:
    """BlockReader's recurrent part: it reads the sizes BlockReader.__init__ sets (f, h, heads, head_dim,
    state_bytes) and refuses per-layer head counts through its uniform_heads."""

    f: Fields
    h: int
    heads: int
    head_dim: int
    state_bytes: int
    uniform_heads: Callable[[str], None]

    def _state_dtype(self) -> int:
        for key in ("mamba_ssm_cache_dtype", "mamba_ssm_dtype"):
            value = self.f.cfg.get(key)
            if value is not None:
                fmt = TORCH_DTYPES.get(str(value))
                if fmt is None:
                    raise self.f.err(key, f"unknown dtype {value!r}; known: {', '.join(TORCH_DTYPES)}")
                return int(number_format(fmt).bits // 8)
        return 2  # engines keep the state in the model dtype unless the config says otherwise

    def linear(self) -> Block:
        from solver.specs.layers.linear import KDA, GatedDeltaNet, Lightning

        f, cfg = self.f, self.f.cfg
        lin = cfg.get("linear_attn_config")
        if isinstance(lin, dict) and (lin.get("kda_layers") is not None):
            lf = Fields(lin, f.origin, prefix=f.prefix + "linear_attn_config.")
            return KDA(hidden=self.h, heads=lf.int("num_heads"), head_dim=lf.int("head_dim"),
                       conv_kernel=lf.int("short_conv_kernel_size", default=4),
                       full_rank_gate=lf.bool("use_full_rank_gate"), state_dtype_bytes=self.state_bytes)
        if f.has("linear_num_value_heads", "linear_num_key_heads"):
            return GatedDeltaNet(hidden=self.h, key_heads=f.int("linear_num_key_heads"),
                                 value_heads=f.int("linear_num_value_heads"), key_dim=f.int("linear_key_head_dim"),
                                 value_dim=f.int("linear_value_head_dim"),
                                 conv_kernel=f.int("linear_conv_kernel_dim", default=4),
                                 state_dtype_bytes=self.state_bytes)
        # the kernel a family's linear_attention layers run when the config writes none of its own fields (the fact
        # _linear_attention: MiniMaxConfig's layer_types name lightning layers with the softmax layers' heads)
        kernel = cfg.get("_linear_attention")
        if kernel is not None and kernel not in ("lightning", "kda"):
            raise f.err("_linear_attention", f"unknown linear-attention kernel {kernel!r} (known: lightning, kda)")
        if kernel == "kda":
            # KDA sized by the top-level fields: linear_num_heads / linear_head_dim / linear_conv_kernel_dim where
            # written (KimiLinearConfig), else the attention's (BailingHybridConfig sets linear_num_heads =
            # num_attention_heads, linear_head_dim = head_dim, linear_conv_kernel_dim = short_conv_kernel_size); its
            # decay and output gates are one full-rank linear each under the fact _kda_full_rank_gates, low-rank
            # through head_dim otherwise. kda_safe_gate / kda_lower_bound bound the forget gate's value: no weight
            f.bool("kda_safe_gate"), f.has("kda_lower_bound")
            full = f.bool("_kda_full_rank_gates")
            heads = f.int("linear_num_heads") if f.has("linear_num_heads") else self.heads
            return KDA(hidden=self.h, heads=heads, head_dim=f.int("linear_head_dim", "head_dim"),
                       conv_kernel=f.int("linear_conv_kernel_dim", "short_conv_kernel_size", default=4),
                       full_rank_gate=full, full_rank_output_gate=full, state_dtype_bytes=self.state_bytes)
        if cfg.get("attn_type_list") is not None or kernel == "lightning":
            self.uniform_heads("lightning attention layers")
            return Lightning(hidden=self.h, heads=self.heads, head_dim=self.head_dim, state_dtype_bytes=4
                             if cfg.get("linear_attn_dtype") == "float32" else self.state_bytes)
        raise f.err("layer_types", "linear_attention layers need linear_num_key_heads / linear_num_value_heads "
                    "(Gated DeltaNet), linear_attn_config (KDA) or attn_type_list (lightning), and the model_type "
                    f"{cfg.get('model_type')!r} names no linear-attention kernel of its own")

    def mamba(self) -> Block:
        f = self.f
        # a pure Mamba-2 stack (_all_layers: mamba2) names its heads num_heads / head_dim, a hybrid mamba_*
        pure = f.cfg.get("_all_layers") == "mamba2"
        # Zamba2 names its Mamba-2 heads n_mamba_heads of mamba_headdim (Zamba v1's n_mamba_heads split a Mamba-1)
        if not pure and not f.has("mamba_num_heads", "mamba_n_heads", "mamba_headdim"):
            return self.mamba1()
        from solver.specs.layers.mamba import SSD_CHUNK, Mamba2

        heads = f.int("mamba_num_heads", "mamba_n_heads", "n_mamba_heads", *(("num_heads",) if pure else ()))
        if f.cfg.get("mamba_d_head") == "auto":
            # BambaConfig: mamba_expand x hidden split over the heads; FalconH1Config: mamba_d_ssm where it is set
            width = "mamba_d_ssm" if f.has("mamba_d_ssm") else "mamba_expand x hidden_size"
            inner = f.int("mamba_d_ssm") if f.has("mamba_d_ssm") else f.int("mamba_expand", default=2) * self.h
            if inner % heads:
                raise f.err("mamba_n_heads", f"{heads} does not divide {width} ({inner}), which mamba_d_head "
                                             "auto splits over the heads")
            head_dim = inner // heads
        else:
            head_dim = f.int("mamba_head_dim", "mamba_d_head", "mamba_headdim", *(("head_dim",) if pure else ()))
        # Falcon-H1 writes the mixer's width as mamba_d_ssm; its reshapes need heads x head_dim to be that width
        if f.has("mamba_d_ssm") and f.int("mamba_d_ssm") != heads * head_dim:
            raise f.err("mamba_d_ssm", f"{f.cfg['mamba_d_ssm']} is not mamba_n_heads x mamba_d_head ({heads} x "
                                       f"{head_dim}): a Mamba-2 width other than its heads' is not modelled")
        # the field that switches out_proj's bias apart from in_proj's (the family fact _mamba_out_proj_bias:
        # FalconH1Mixer biases out_proj by projectors_bias and in_proj by mamba_proj_bias); in_proj's otherwise
        out_field = f.cfg.get("_mamba_out_proj_bias")
        return Mamba2(hidden=self.h, heads=heads, head_dim=head_dim,
                      state_size=f.int("ssm_state_size", "mamba_d_state", "state_size"),
                      groups=f.int("n_groups", "mamba_n_groups", "mamba_ngroups", default=1),
                      conv_kernel=f.int("conv_kernel", "mamba_d_conv", default=4),
                      conv_bias=f.bool("use_conv_bias", True) and f.bool("mamba_conv_bias", True),
                      proj_bias=f.bool("mamba_proj_bias")
                      or f.bool("use_bias"), state_dtype_bytes=self.state_bytes,
                      gated_norm=f.bool("mamba_rms_norm", True),
                      out_bias=f.bool(str(out_field)) if out_field else None,
                      chunk_size=f.int("chunk_size", "mamba_chunk_size", default=SSD_CHUNK))

    def short_conv(self) -> Block:
        """LFM2's gated short convolution over hidden channels: kernel conv_L_cache, biases by conv_bias. A
        conv_dim that differs from the hidden size is refused (the modeling code convolves hidden_size channels)."""
        from solver.specs.layers.conv import ShortConv

        f = self.f
        for name in ("conv_dim", "conv_dim_out"):
            if f.has(name) and f.int(name) != self.h:
                raise f.err(name, f"{f.cfg[name]} differs from hidden_size ({self.h}): a short conv narrower or wider "
                                  "than the hidden size is not modelled")
        return ShortConv(hidden=self.h, kernel=f.int("conv_L_cache", "conv_kernel", default=3),
                         bias=f.bool("conv_bias"))

    def rglru(self) -> Block:
        """RecurrentGemma's recurrent block (layers/rglru.py): lru_width channels (the hidden size when not
        given), a depthwise conv of conv1d_width, gates block-diagonal over num_attention_heads."""
        from solver.specs.layers.rglru import RGLRU

        f = self.f
        self.uniform_heads("RG-LRU blocks")
        width = f.int("lru_width", default=self.h)
        if width % self.heads:
            raise f.err("lru_width", f"{width} is not a multiple of num_attention_heads ({self.heads}), which "
                                     "splits the RG-LRU gates into blocks")
        return RGLRU(hidden=self.h, width=width, heads=self.heads, conv_kernel=f.int("conv1d_width", default=4),
                     state_dtype_bytes=self.state_bytes)

    def mamba1(self) -> Mamba1:
        """Mamba-1 (no head count): d_inner = mamba_expand x hidden; dt_rank "auto" = ceil(hidden / 16)."""
        from solver.specs.layers.mamba import Mamba1

        f = self.f
        if not f.has("mamba_d_state", "ssm_state_size", "state_size"):
            raise f.err("layer_types", "mamba layers need mamba_num_heads (Mamba-2) or mamba_d_state (Mamba-1)")
        expand = f.int("mamba_expand", "expand", default=2)
        rank_field = f.first("mamba_dt_rank", "time_step_rank") or "mamba_dt_rank"
        rank = f.cfg.get(rank_field, "auto")
        dt_rank = -(-self.h // 16) if rank == "auto" else f.check_int(rank_field, rank)
        # a pure Mamba-1 stack writes its inner width (MambaConfig: intermediate_size = expand x hidden); a
        # hybrid's intermediate_size is its FFN's
        pure = f.cfg.get("_all_layers") == "mamba"
        d_inner = f.int("intermediate_size") if pure and f.has("intermediate_size") else expand * self.h
        # Zamba's n_mamba_heads splits x_proj and dt_proj per head (ZambaMambaMixer: x_proj_weight heads x (dt_rank
        # + 2 x d_state) x d_inner / heads, dt_proj_weight heads x d_inner / heads x dt_rank): the same weights and
        # FLOPs as one Mamba-1 of that dt_rank, so only the split is checked
        if f.has("n_mamba_heads") and d_inner % f.int("n_mamba_heads"):
            raise f.err("n_mamba_heads", f"{f.cfg['n_mamba_heads']} does not divide the Mamba inner width ({d_inner})")
        return Mamba1(hidden=self.h, d_inner=d_inner,
                      state_size=f.int("mamba_d_state", "ssm_state_size", "state_size"), dt_rank=dt_rank,
                      conv_kernel=f.int("mamba_d_conv", "conv_kernel", default=4),
                      conv_bias=f.bool("mamba_conv_bias", True) and f.bool("use_conv_bias", True),
                      proj_bias=f.bool("mamba_proj_bias") or f.bool("use_bias"),
                      inner_norms=f.bool("_mamba_inner_norms"), state_dtype_bytes=self.state_bytes)
