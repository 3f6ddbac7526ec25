"""Serving-level figures: TTFT, TPOT and throughput of a parallel_config.

Three workloads (workload.py):
- pure prefill: one prompt (or a batch of prompts) of S tokens -> TTFT;
- pure decode: batch B at context L -> TPOT;
- aggregated serving at concurrency C with fixed ISL/OSL, measured the way benchmark clients do it: a closed
  loop keeps C requests in flight and a run sends N = k x C requests (k = `benchmark_waves`).

`estimate` costs a configuration at one workload: its memory, the steps it runs (figures.step_plan), their
costs from the step-cost model (step.py), and the figures the serving formulas make of them (figures.figures:
the closed-loop formulas of closed_loop.py over the steps as the engine runs them, engine_step.py). Beside it:
the steps the serving formulas take (prefill_step, decode_step, serving_steps: for calibration and reports) and
the KV capacity of a replica. The workload, the serving formulas and the engine's step times are re-exported
here (`__all__`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

from solver.estimate.closed_loop import (
    ServingPolicy,
    ServingShape,
    ServingTimes,
    balance_root,
    first_wave_groups,
    per_user_rate,
    serving_shape,
    serving_times,
    slot_wait_s,
    synced_ranks,
)
from solver.estimate.compute import Factors, Work
from solver.estimate.engine_step import graph_batch, kernels_launched, step_layers, step_time
from solver.estimate.figures import figures, step_plan
from solver.estimate.memory import MemoryReport, max_batch, memory_per_rank
from solver.estimate.memory_options import MemoryOptions, engine_options, workload_options
from solver.estimate.params import count_params
from solver.estimate.step import StepCost, step_cost
from solver.estimate.workload import (
    config_budget,
    DEFAULT_BENCHMARK_WAVES,
    DEFAULT_REQUEST_OVERHEAD_S,
    Workload,
    mtp_tokens_per_step,
    prompt_draft_passes,
    request_overhead,
    token_budget,
)
from solver.specs.hardware import Hardware
from solver.specs.model import ModelSpec
from solver.specs.parallel import ParallelConfig
from solver.specs.precision import Precision
from solver.specs.profile_serving import DEFAULT_TOKEN_BUDGET


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
    # serving only: the parts of TTFT/TPOT (closed_loop's module docstring); 0 for pure prefill/decode
    ttft_first_wave_s: float = 0.0
    ttft_steady_s: float = 0.0
    slot_wait_s: float = 0.0
    prefill_share: float = 0.0  # share of GPU time spent on prefill in steady state
    running_per_replica: float = 0.0  # B: sequences decoding together (KV capacity may cap it below C_r)
    # serving only: the fixed TTFT cost split (closed_loop's module docstring) and the steps as the engine runs them
    first_token_delay_s: float = 0.0  # ftl: engine iterations before the first token is streamed
    front_end_s: float = 0.0  # o: HTTP, tokenizer, hand-off
    prefill_step_s: float = 0.0  # P_n with the eager launch floor and per-sequence costs
    decode_step_s: float = 0.0  # tau at the CUDA-graph batch, with per-sequence costs
    graph_batch: int = 0  # the decode batch padded to its CUDA graph
    eager_decode: bool = False  # the running batch exceeds the largest captured graph
    policy: str = ""  # the scheduler policy the serving formulas used

    @property
    def output_tokens_per_s_per_rank(self) -> float:
        return self.output_tokens_per_s / self.world_size

    @property
    def has_ttft(self) -> bool:
        """A first token is timed here: prompts are prefilled (prefill-only or serving); a decode-only
        deployment's ttft_s is 0 by construction, not a figure."""
        return self.prefill is not None

    @property
    def has_tpot(self) -> bool:
        """Tokens are decoded here (decode-only or serving); a prefill-only deployment's tpot_s is 0."""
        return self.decode is not None


def prefill_step(model: ModelSpec, hw: Hardware, pc: ParallelConfig, prec: Precision, f: Factors,
                 prompt_len: int, prompts_per_replica: float, mtp: int = 0, cached: int = 0,
                 prefill_worker: bool = False) -> StepCost:
    """`mtp`: the MTP depth (0: off); on, the step also runs the MTP module over the prompts
    (workload.prompt_draft_passes). `cached`: tokens of each prompt found in the prefix cache, ahead of its
    `prompt_len` new ones (Workload.prompt_tokens). `prefill_worker`: a prefill-only worker's step
    (compute.Work.prefill_worker)."""
    w = Work.prefill(prompt_len, cached, prompts_per_replica, prefill_worker=prefill_worker)
    return step_cost(model, hw, pc, prec, f, w, mtp_layers=prompt_draft_passes(mtp if model.num_mtp_layers else 0))


def decode_step(model: ModelSpec, hw: Hardware, pc: ParallelConfig, prec: Precision, f: Factors,
                batch_per_replica: float, context: float, mtp: int = 0, span: float = 0.0) -> StepCost:
    """`span`: positions the sequences spread over around `context` (compute.Work.span; 0 = all at it)."""
    w = Work("decode", new_tokens=batch_per_replica * (1 + mtp), context=context, sequences=batch_per_replica,
             logits_tokens=batch_per_replica * (1 + mtp), span=span)
    return step_cost(model, hw, pc, prec, f, w, mtp_layers=mtp if model.num_mtp_layers else 0)


def kv_capacity_per_replica(model: ModelSpec, hw: Hardware, pc: ParallelConfig, prec: Precision, context: int,
                            mem_opts: MemoryOptions | None = None, mtp: int = 0) -> float:
    """Sequences of `context` tokens one attention replica can hold (0 when the weights alone do not fit)."""
    return max_batch(model, hw, pc, prec, context, mem_opts, mtp_layers=mtp) / pc.attn_replicas


def serving_steps(model: ModelSpec, hw: Hardware, pc: ParallelConfig, prec: Precision, f: Factors,
                  wl: Workload, shape: ServingShape) -> tuple[StepCost, StepCost]:
    """(prefill step of n prompts, decode step of the running batch padded to its CUDA graph) for the
    serving formulas; GPU time only (`step_time` adds what the engine's loop adds). The padded rows are
    charged like real ones (their attention too: a small overestimate at the padding's share)."""
    new, cached = wl.prompt_tokens
    pre = prefill_step(model, hw, pc, prec, f, new, shape.prompts_per_step, wl.mtp, cached)
    dec = decode_step(model, hw, pc, prec, f, shape.graph_batch or shape.running, wl.isl + wl.osl / 2, wl.mtp,
                      wl.decode_span)
    return pre, dec


def _policy_name(decode_first: bool) -> str:
    return "decode_first" if decode_first else "prefill_first"


def estimate_memory_options(f: Factors, wl: Workload, mem_opts: MemoryOptions | None = None) -> MemoryOptions:
    """The memory options `estimate` sizes memory and the serving KV capacity with: whoever re-derives its
    serving shape (benchmarks/accuracy_rows.prepare) takes them from here, so both hold the same sequences."""
    mem_opts = engine_options(mem_opts, f)  # memory under the engine's layout, as the steps are costed
    if wl.kind == "prefill" and f.prefill_budget_set:  # every prompt at once (figures.step_plan), as its command
        return workload_options(mem_opts, wl.seq_len, step_prompts=wl.batch)
    # a decode step runs each sequence's verify width (a lookup's drafts too, which no MTP layer counts)
    rows = wl.verify_width if wl.mtp else None
    if wl.isl:  # the prompt a prefill of one request holds, where the workload names it
        return workload_options(mem_opts, wl.isl, rows=rows)
    return replace(mem_opts, decode_rows=rows) if rows else mem_opts


def estimate(model: ModelSpec, hw: Hardware, pc: ParallelConfig, prec: Precision, f: Factors, wl: Workload,
             mem_opts: MemoryOptions | None = None) -> Estimate:
    """The full estimate: memory, the steps `pc` runs at `wl` (figures.step_plan), their costs (step_cost),
    and the figures the serving formulas make of them (figures.figures): the same two halves the planner's
    tables sum, so what the planner optimises is what this shows."""
    mem_opts = estimate_memory_options(f, wl, mem_opts)
    # a running cap holds only the running requests' KV; the rest wait for a slot, holding none
    held = (min(wl.sequences, wl.max_running * pc.attn_replicas) if wl.kind == "serving" and wl.max_running > 0
            else wl.sequences)
    memory = memory_per_rank(model, hw, pc, prec, held, wl.context_len, mem_opts, mtp_layers=wl.mtp)
    cap = (kv_capacity_per_replica(model, hw, pc, prec, wl.context_len, mem_opts, wl.mtp)
           if wl.kind == "serving" else math.inf)
    sp = step_plan(model, pc, f, wl, cap, config_budget(model, hw, pc, f))
    pre = (step_cost(model, hw, pc, prec, f, sp.pre_work, mtp_layers=sp.pre_mtp_layers)
           if sp.pre_work is not None else None)
    dec = (step_cost(model, hw, pc, prec, f, sp.dec_work, mtp_layers=sp.mtp_layers)
           if sp.dec_work is not None else None)
    fig = figures(sp, f, pre.time_s if pre else 0.0, kernels_launched(pre, f) if pre else 0.0,
                  dec.time_s if dec else 0.0, kernels_launched(dec, f) if dec else 0.0)
    if sp.kind != "serving":
        return Estimate(fig.ttft_s, fig.tpot_s, pre, dec, memory, fig.output_tokens_per_s,
                        per_user_rate(fig.tpot_s), pc.world_size, sp.per_replica)
    t, shape = fig.times, sp.shape
    # OSL 1: no token follows the first, so no TPOT (scheduler.tpot_of) nor per-user rate, whatever the policy
    return Estimate(t.ttft_s, t.tpot_s, pre, dec, memory, fig.output_tokens_per_s,
                    per_user_rate(t.tpot_s), pc.world_size,
                    shape.per_replica, ttft_first_wave_s=t.ttft_first_wave_s, ttft_steady_s=t.ttft_steady_s,
                    slot_wait_s=t.slot_wait_s, prefill_share=t.prefill_share, running_per_replica=shape.running,
                    first_token_delay_s=t.first_token_delay_s, front_end_s=sp.wl.request_overhead_s,
                    prefill_step_s=fig.prefill_step_s, decode_step_s=fig.decode_step_s,
                    graph_batch=shape.graph_batch, eager_decode=shape.eager_decode,
                    policy=_policy_name(ServingPolicy.of(f).decode_first_for(shape.synced_ranks)))


__all__ = ["Workload", "Estimate", "estimate", "estimate_memory_options", "prefill_step", "decode_step",
           "mtp_tokens_per_step", "count_params", "serving_times", "serving_shape", "serving_steps", "ServingShape", "ServingTimes",
           "ServingPolicy", "graph_batch", "step_time", "step_layers", "kernels_launched", "synced_ranks",
           "kv_capacity_per_replica", "first_wave_groups", "token_budget", "DEFAULT_TOKEN_BUDGET",
           "DEFAULT_BENCHMARK_WAVES", "DEFAULT_REQUEST_OVERHEAD_S", "request_overhead", "slot_wait_s",
           "balance_root"]
