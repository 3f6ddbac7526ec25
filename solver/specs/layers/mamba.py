"""State-space mixers: Mamba-2 (Nemotron-H, Falcon-H1, Granite-4 hybrids) and Mamba-1 (Jamba).

Parameters (HF Mamba2Mixer): in_proj hidden -> 2 x d_inner + 2 x groups x d_state + heads, a depthwise
causal conv over x, B, C (conv_dim = d_inner + 2 x groups x d_state, kernel k, optional bias), dt_bias,
A_log and D per head, a gated RMSNorm over d_inner, out_proj d_inner -> hidden. d_inner = heads x head_dim.
State per request: the conv tail (k - 1) x conv_dim and the SSM state heads x head_dim x d_state (in
mamba_ssm_cache_dtype). Knobs: the attention-TP group splits heads and groups; CP / SP / KVP do not split the
state (recurrent.py). A single B/C group (n_groups 1: Bamba, Falcon-H1, Granite-4.0-H) is replicated on every TP
rank instead (vLLM's and SGLang's MambaMixer2: n_groups must divide by the TP size or be 1), so TP only has to
divide the heads.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from solver.specs.dtypes import KV16, KVFormat
from solver.specs.layers.base import CostKit, Part, Share, State
from solver.specs.layers.recurrent import RecurrentMixer, recurrent_ops

MODULE = "ssm"
# tokens per chunk of the SSD scan where the config writes no chunk_size / mamba_chunk_size: the default of
# transformers' Mamba2Config, Zamba2Config (chunk_size = 256) and BambaConfig, FalconH1Config,
# GraniteMoeHybridConfig (mamba_chunk_size = 256), transformers 5.25.0; the kernel takes it from the config
# (vLLM's MambaMixer2, mamba_ssm's mamba_chunk_scan_combined). NemotronHConfig defaults to 128; its configs
# write chunk_size: 128
SSD_CHUNK = 256


@dataclass(frozen=True)
class Mamba2(RecurrentMixer):
    hidden: int
    heads: int
    head_dim: int
    state_size: int
    groups: int = 1
    conv_kernel: int = 4
    conv_bias: bool = True
    proj_bias: bool = False  # in_proj's bias
    state_dtype_bytes: int = 2
    gated_norm: bool = True  # the RMSNorm gated by z over d_inner; Falcon-H1 builds it only when mamba_rms_norm
    out_bias: bool | None = None  # out_proj's bias: in_proj's unless set (Falcon-H1 switches it by its own field)
    chunk_size: int = SSD_CHUNK  # tokens per chunk of the SSD scan: its intra-chunk FLOPs grow with it

    kind = "Mamba2"
    module = MODULE

    def label(self) -> str:
        return f"Mamba2 {self.heads} x {self.head_dim} N{self.state_size}"

    @property
    def d_inner(self) -> int:
        return self.heads * self.head_dim

    @property
    def conv_dim(self) -> int:
        return self.d_inner + 2 * self.groups * self.state_size

    @property
    def tp_units(self) -> tuple[int, ...]:
        """What attention TP must divide (ModelSpec.num_attention_heads): the heads, and the groups unless there
        is one (replicated on every rank)."""
        return (self.heads,) if self.groups == 1 else (self.heads, self.groups)

    tp_unit_names = ("heads", "n_groups")  # what a refusal calls each of tp_units

    def _bc_ranks(self, attn_tp: int) -> int:
        # ranks the B/C groups split over: all of them, or none for a single replicated group
        return 1 if self.groups == 1 else attn_tp

    def parts(self) -> tuple[Part, ...]:
        h, di, bc = self.hidden, self.d_inner, 2 * self.groups * self.state_size
        zxdt = 2 * di + self.heads
        bias = 1 if self.proj_bias else 0
        cbias = 1 if self.conv_bias else 0
        # the B/C columns split as far as there are groups, then replicate ("kv_heads" split up to `groups`)
        return (Part("in_proj", (h + bias) * zxdt, "tp"),
                Part("in_proj_bc", (h + bias) * bc, "kv_heads", self.groups),
                Part("conv1d", di * (self.conv_kernel + cbias), "tp"),
                Part("conv1d_bc", bc * (self.conv_kernel + cbias), "kv_heads", self.groups),
                Part("A_log+D+dt_bias", 3 * self.heads, "tp"),
                Part("norm", di if self.gated_norm else 0, "tp"),
                Part("out_proj", di * h + (h if self._out_bias else 0), "tp"))

    @property
    def _out_bias(self) -> bool:
        return self.proj_bias if self.out_bias is None else self.out_bias

    def state(self, kv: KVFormat, split: int) -> State:
        share = math.ceil(self.heads / split) / self.heads
        ssm = self.heads * self.head_dim * self.state_size * self.state_dtype_bytes
        # the conv tail over x splits with the heads, over B/C with the groups (one group: whole on every rank)
        bc = 2 * self.groups * self.state_size / self._bc_ranks(split)
        conv = (self.conv_kernel - 1) * (self.d_inner * share + bc) * 2
        return State(constant_bytes=ssm * share + conv, conv_bytes=conv)

    def ops(self, cx: CostKit) -> list:
        a = cx.attn_tp_group
        proj = a * sum(p.params / p.degree(a) for p in self.parts())  # recurrent_ops divides by the group: a
        # replicated B/C group is whole on each rank
        return recurrent_ops(cx, MODULE, hidden=self.hidden, proj_params=proj, heads=self.heads, dk=self.state_size,
                             dv=self.head_dim, state_bytes_rank=self.state(KV16, a).constant_bytes, chunk=self.chunk_size)

    def activation(self, pc, tokens: float, split: int) -> float:
        bc = 2 * self.groups * self.state_size / self._bc_ranks(split)
        return tokens * (2 * self.d_inner / split + bc) * 2


@dataclass(frozen=True)
class Mamba1(RecurrentMixer):
    """Mamba-1 (HF MambaMixer / JambaMambaMixer): in_proj hidden -> 2 x d_inner, a depthwise conv over x
    (kernel k, optional bias), x_proj d_inner -> dt_rank + 2 x d_state, dt_proj dt_rank -> d_inner (+ bias),
    A_log d_inner x d_state, D d_inner, out_proj d_inner -> hidden; Jamba adds RMSNorms on dt, B and C.
    State per request: the conv tail (k - 1) x d_inner and the SSM state d_inner x d_state."""

    hidden: int
    d_inner: int
    state_size: int
    dt_rank: int
    conv_kernel: int = 4
    conv_bias: bool = True
    proj_bias: bool = False
    inner_norms: bool = False  # Jamba's dt / B / C layernorms
    state_dtype_bytes: int = 2

    kind = "Mamba1"
    module = MODULE

    def label(self) -> str:
        return f"Mamba1 {self.d_inner} N{self.state_size}"

    @property
    def heads(self) -> int:  # TP splits d_inner channels; report them as the unit attention TP must divide
        return self.d_inner

    def parts(self) -> tuple[Part, ...]:
        h, di, n, r = self.hidden, self.d_inner, self.state_size, self.dt_rank
        return (Part("in_proj", h * 2 * di + (2 * di if self.proj_bias else 0), "tp"),
                Part("conv1d", di * self.conv_kernel + (di if self.conv_bias else 0), "tp"),
                Part("x_proj", di * (r + 2 * n), "tp"),
                Part("dt_proj", r * di + di, "tp"),
                Part("A_log+D", di * n + di, "tp"),
                Part("inner_norms", (r + 2 * n) if self.inner_norms else 0, "none"),
                Part("out_proj", di * h + (h if self.proj_bias else 0), "tp"))

    def shares(self) -> tuple[Share, ...]:
        return (Share(MODULE, "attention", "attn_tp_size", tuple(p for p in self.parts() if p.params)),)

    def state(self, kv: KVFormat, split: int) -> State:
        share = math.ceil(self.d_inner / split) / self.d_inner
        ssm = self.d_inner * self.state_size * self.state_dtype_bytes
        conv = (self.conv_kernel - 1) * self.d_inner * 2
        return State(constant_bytes=(ssm + conv) * share, conv_bytes=conv * share)

    def ops(self, cx: CostKit) -> list:
        proj = sum(p.params for p in self.parts())
        # the selective scan is per channel: d_inner "heads" of d_k = d_state, d_v = 1
        return recurrent_ops(cx, MODULE, hidden=self.hidden, proj_params=proj, heads=self.d_inner,
                             dk=self.state_size, dv=1, state_bytes_rank=self.state(KV16, cx.attn_tp_group).constant_bytes)

    def activation(self, pc, tokens: float, split: int) -> float:
        return tokens * 2 * self.d_inner / split * 2
