"""Serving-level figures: TTFT, TPOT and throughput of a parallel_config.

Three workloads:
- pure prefill: one prompt (or a batch of prompts) of S tokens -> TTFT;
- pure decode: batch B at context L -> TPOT;
- aggregated serving at concurrency C with fixed ISL/OSL, the way benchmark clients measure it: requests of
  equal length stay in lockstep waves, so each wave's prefills queue behind each other in chunks of the
  scheduler's token budget (TTFT is the mean over the wave), then the wave decodes together at batch C per
  replica with a mean context of ISL + OSL/2.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from solver.estimate.compute import Factors, Work
from solver.estimate.memory import MemoryOptions, MemoryReport, memory_per_rank
from solver.estimate.params import count_params
from solver.estimate.step import StepCost, step_cost
from solver.specs.hardware import Hardware
from solver.specs.model import ModelSpec
from solver.specs.parallel import ParallelConfig
from solver.specs.precision import Precision

DEFAULT_TOKEN_BUDGET = 8192  # tokens per scheduler step (vLLM/SGLang chunked-prefill default)
DEFAULT_MTP_ACCEPT = 0.7  # MTP1 acceptance ~70% (CloudMatrix384 paper, facts/measurements.md #9)


@dataclass(frozen=True)
class Workload:
    """One of: prefill (seq_len, batch), decode (batch, seq_len), or serving (isl, osl, concurrency)."""

    kind: str  # "prefill" | "decode" | "serving"
    batch: int = 1  # prefill: prompts at once; decode: sequences across the deployment
    seq_len: int = 0  # prefill: prompt length; decode: context length
    isl: int = 0
    osl: int = 0
    concurrency: int = 0
    mtp: int = 0  # next-n depth
    mtp_accept: float = DEFAULT_MTP_ACCEPT
    token_budget: int = DEFAULT_TOKEN_BUDGET

    @property
    def context_len(self) -> int:
        """Tokens a sequence holds at its longest (for memory)."""
        if self.kind == "serving":
            return self.isl + self.osl
        return self.seq_len

    @property
    def sequences(self) -> int:
        return self.concurrency if self.kind == "serving" else self.batch


@dataclass(frozen=True)
class Estimate:
    ttft_s: float
    tpot_s: float
    prefill: StepCost | None
    decode: StepCost | None
    memory: MemoryReport
    output_tokens_per_s: float  # whole deployment
    tokens_per_s_per_user: float
    world_size: int
    sequences_per_replica: float

    @property
    def output_tokens_per_s_per_rank(self) -> float:
        return self.output_tokens_per_s / self.world_size


def mtp_tokens_per_step(depth: int, accept: float) -> float:
    """Expected tokens emitted per decode step with `depth` draft tokens accepted in sequence."""
    return 1.0 + sum(accept ** i for i in range(1, depth + 1))


def prefill_step(model: ModelSpec, hw: Hardware, pc: ParallelConfig, prec: Precision, f: Factors,
                 prompt_len: int, prompts_per_replica: float) -> StepCost:
    w = Work("prefill", new_tokens=prompt_len * prompts_per_replica, context=(prompt_len + 1) / 2,
             sequences=prompts_per_replica, logits_tokens=prompts_per_replica)
    return step_cost(model, hw, pc, prec, f, w)


def decode_step(model: ModelSpec, hw: Hardware, pc: ParallelConfig, prec: Precision, f: Factors,
                batch_per_replica: float, context: float, mtp: int = 0) -> StepCost:
    w = Work("decode", new_tokens=batch_per_replica * (1 + mtp), context=context, sequences=batch_per_replica,
             logits_tokens=batch_per_replica * (1 + mtp))
    return step_cost(model, hw, pc, prec, f, w, mtp_layers=mtp if model.num_mtp_layers else 0)


def _wave_ttft(prefill_all_s: float, requests: int, isl: int, budget: int) -> float:
    """Mean TTFT over a wave whose prefills share one replica in chunks of `budget` tokens."""
    total_tokens = requests * isl
    steps = max(1, math.ceil(total_tokens / budget))
    per_step = prefill_all_s / steps
    finish_steps = [min(steps, math.ceil((i + 1) * isl / budget)) for i in range(requests)]
    return per_step * sum(finish_steps) / requests


def estimate(model: ModelSpec, hw: Hardware, pc: ParallelConfig, prec: Precision, f: Factors, wl: Workload,
             mem_opts: MemoryOptions | None = None) -> Estimate:
    replicas = pc.attn_replicas
    memory = memory_per_rank(model, hw, pc, prec, wl.sequences, wl.context_len, mem_opts, mtp_layers=wl.mtp)
    tok_per_step = mtp_tokens_per_step(wl.mtp, wl.mtp_accept)
    if wl.kind == "prefill":
        per_replica = max(1.0, wl.batch / replicas)
        pre = prefill_step(model, hw, pc, prec, f, wl.seq_len, per_replica)
        ttft = pre.time_s
        # pure prefill emits one token per prompt: throughput is prompts finished per second
        return Estimate(ttft, 0.0, pre, None, memory, per_replica * replicas / ttft, 0.0, pc.world_size,
                        per_replica)
    if wl.kind == "decode":
        per_replica = max(1.0, wl.batch / replicas)
        dec = decode_step(model, hw, pc, prec, f, per_replica, wl.seq_len, wl.mtp)
        tpot = dec.time_s / tok_per_step
        return Estimate(0.0, tpot, None, dec, memory, per_replica * replicas / tpot, 1.0 / tpot, pc.world_size,
                        per_replica)
    # aggregated serving: the busiest replica decides latency
    per_replica = math.ceil(wl.concurrency / replicas)
    pre = prefill_step(model, hw, pc, prec, f, wl.isl, per_replica)
    ttft = _wave_ttft(pre.time_s, per_replica, wl.isl, wl.token_budget)
    dec = decode_step(model, hw, pc, prec, f, per_replica, wl.isl + wl.osl / 2, wl.mtp)
    tpot = dec.time_s / tok_per_step
    request_s = ttft + max(0, wl.osl - 1) * tpot
    throughput = wl.concurrency * wl.osl / request_s
    return Estimate(ttft, tpot, pre, dec, memory, throughput, 1.0 / tpot, pc.world_size, per_replica)


__all__ = ["Workload", "Estimate", "estimate", "prefill_step", "decode_step", "mtp_tokens_per_step",
           "count_params"]
