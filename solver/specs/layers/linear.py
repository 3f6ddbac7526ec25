"""Linear attention: a constant per-request state per head instead of a growing KV cache.

Three kernels ship in 2026 configs:
  GatedDeltaNet   Qwen3-Next / Qwen3.5 / 3.6 (linear_attention layers): q, k over `key heads`, v over `value
                  heads`, a short causal conv over q/k/v, per-head decay (A_log, dt_bias) and beta, a gated
                  RMSNorm on the output. State per value head: d_k x d_v, plus the conv tail.
  Lightning       MiniMax-Text-01 / M1 (attn_type 0): qkv projection, output gate, RMSNorm over the heads.
                  State per head: d x d.
  KDA             Kimi Linear / Kimi-K3 (kda_layers): q/k/v projections each with a short conv, channel-wise
                  decay from a low-rank (or full-rank) gate, beta, a low-rank output gate, gated RMSNorm.
Knobs: the attention-TP group splits the heads and the state; CP / SP / KVP do not split the state (recurrent.py).
"""
from __future__ import annotations

from abc import abstractmethod

import math
from dataclasses import dataclass

from solver.specs.dtypes import KV16, KVFormat
from solver.specs.layers.base import CostKit, Part, State
from solver.specs.layers.recurrent import RecurrentMixer, recurrent_ops

MODULE = "linear_attention"


class _Linear(RecurrentMixer):
    module = MODULE
    state_dtype_bytes: int

    @abstractmethod
    def parts(self) -> tuple[Part, ...]:
        """The kernel's projections and gates."""

    @abstractmethod
    def head_shape(self) -> tuple[int, int, int]:
        """(state heads, d_k, d_v)."""

    def conv_channels(self) -> int:
        return 0

    conv_kernel: int = 0

    def state(self, kv: KVFormat, split: int) -> State:
        heads, dk, dv = self.head_shape()
        share = math.ceil(heads / split) / heads
        ssm = heads * dk * dv * self.state_dtype_bytes
        conv = max(0, self.conv_kernel - 1) * self.conv_channels() * 2  # conv tail in the activation dtype
        return State(constant_bytes=(ssm + conv) * share, conv_bytes=conv * share)

    def ops(self, cx: CostKit) -> list:
        heads, dk, dv = self.head_shape()
        proj = sum(p.params for p in self.parts() if p.split == "tp")
        return recurrent_ops(cx, MODULE, hidden=self.hidden, proj_params=proj, heads=heads, dk=dk, dv=dv,
                             state_bytes_rank=self.state(KV16, cx.attn_tp_group).constant_bytes)

    def activation(self, pc, tokens: float, split: int) -> float:
        heads, dk, dv = self.head_shape()
        return tokens * heads / split * (2 * dk + 2 * dv) * 2


@dataclass(frozen=True)
class GatedDeltaNet(_Linear):
    hidden: int
    key_heads: int
    value_heads: int
    key_dim: int
    value_dim: int
    conv_kernel: int = 4
    state_dtype_bytes: int = 2

    kind = "GatedDeltaNet"

    def label(self) -> str:
        return f"GatedDeltaNet {self.key_heads}/{self.value_heads} x {self.key_dim}"

    def conv_channels(self) -> int:
        return 2 * self.key_heads * self.key_dim + self.value_heads * self.value_dim

    def head_shape(self) -> tuple[int, int, int]:
        return self.value_heads, self.key_dim, self.value_dim

    def parts(self) -> tuple[Part, ...]:
        h, nk, nv, dk, dv = self.hidden, self.key_heads, self.value_heads, self.key_dim, self.value_dim
        return (Part("in_proj_qkvz", h * (2 * nk * dk + 2 * nv * dv), "tp"),
                Part("in_proj_ba", h * 2 * nv, "tp"),
                Part("conv1d", self.conv_channels() * self.conv_kernel, "tp"),
                Part("A_log+dt_bias", 2 * nv, "tp"),
                Part("norm", dv, "none"),
                Part("out_proj", nv * dv * h, "tp"))


@dataclass(frozen=True)
class Lightning(_Linear):
    hidden: int
    heads: int
    head_dim: int
    state_dtype_bytes: int = 2

    kind = "Lightning"

    def label(self) -> str:
        return f"Lightning {self.heads} x {self.head_dim}"

    def head_shape(self) -> tuple[int, int, int]:
        return self.heads, self.head_dim, self.head_dim

    def parts(self) -> tuple[Part, ...]:
        h, inner = self.hidden, self.heads * self.head_dim
        return (Part("qkv_proj", h * 3 * inner, "tp"),
                Part("output_gate", h * inner, "tp"),
                Part("norm", inner, "tp"),
                Part("out_proj", inner * h, "tp"))


@dataclass(frozen=True)
class KDA(_Linear):
    hidden: int
    heads: int
    head_dim: int
    conv_kernel: int = 4
    full_rank_gate: bool = False  # the decay gate one hidden -> heads x head_dim linear, not a rank-head_dim pair
    full_rank_output_gate: bool = False  # the output gate likewise (BailingHybridDeltaAttention's g_proj)
    state_dtype_bytes: int = 2

    kind = "KDA"

    def label(self) -> str:
        return f"KDA {self.heads} x {self.head_dim}"

    def conv_channels(self) -> int:
        return 3 * self.heads * self.head_dim

    def head_shape(self) -> tuple[int, int, int]:
        return self.heads, self.head_dim, self.head_dim

    def parts(self) -> tuple[Part, ...]:
        h, nh, d = self.hidden, self.heads, self.head_dim
        proj = nh * d
        decay = h * proj if self.full_rank_gate else h * d + d * proj
        return (Part("qkv_proj", 3 * h * proj, "tp"),
                Part("short_conv", 3 * proj * self.conv_kernel, "tp"),
                Part("decay_gate", decay, "tp"),
                Part("beta_proj", h * nh, "tp"),
                Part("A_log+dt_bias", nh + proj, "tp"),
                Part("output_gate", h * proj if self.full_rank_output_gate else h * d + d * proj, "tp"),
                Part("o_norm", d, "none"),
                Part("o_proj", proj * h, "tp"))
