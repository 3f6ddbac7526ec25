"""From step costs to the figures a configuration shows: the last stage of `serving.estimate`, in two halves.

`step_plan` is what a configuration's attention layout fixes at one workload before any kernel is costed:
the replicas, the serving shape (requests per replica, running batch, prompts per prefill step, CUDA-graph
batch), the work of the prefill and decode steps to cost, and the engine loop's per-sequence counts.
`figures` turns the costed steps (GPU seconds and kernels launched of each) into TTFT, TPOT, request latency
and throughput with the serving formulas (closed_loop.serving_figures, engine_step.step_time).

The split is what lets the planner be exact: a step's GPU seconds and kernels are sums over module groups
(estimate.step), so the planner sums its tables, calls `figures` on the sums, and gets the figure the full
estimate shows; `figures` is non-decreasing in each of the four step quantities (tests/test_planner_exact.py),
so the configurations that minimise a figure lie on the Pareto set of those sums.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

from solver.estimate.compute import Factors, Work
from solver.estimate.closed_loop import (ServingKit, ServingPolicy, ServingShape, ServingTimes, serving_figures,
                                        serving_kit, serving_shape, synced_ranks)
from solver.estimate.closed_loop import ttft_floor as serving_ttft_floor
from solver.estimate.engine_step import (graph_batch, graph_sizes_at, launch_floor_s, sequence_cost_s,
                                        stage_layer_passes, step_layers)
from solver.estimate.workload import (Workload, mtp_tokens_per_step, prompt_draft_passes, request_overhead,
                                      token_budget)
from solver.specs.model import ModelSpec
from solver.specs.parallel import ParallelConfig


@dataclass(frozen=True)
class StepPlan:
    """The steps one configuration runs at one workload, and how their costs become its figures."""

    kind: str  # "prefill" | "decode" | "serving"
    world: int
    replicas: int
    per_replica: float  # prefill / decode: sequences per replica (>= 1); serving: C_r
    pre_work: Work | None  # the prefill step to cost (None for decode-only)
    dec_work: Work | None  # the decode step to cost (None for prefill-only)
    mtp_layers: int  # draft passes the decode step runs
    wl: Workload  # with the token budget and the request overhead resolved
    shape: ServingShape | None = None  # serving only
    pre_seqs: float = 0.0  # sequences in the prefill step (the loop's per-sequence cost)
    dec_seqs: float = 0.0
    dec_eager: bool = False  # the decode step runs eagerly (past the largest captured graph)
    graph_batch: int = 0
    pre_layers: float = 0.0  # layer passes per sequence of each step (engine_step.step_layers)
    dec_layers: float = 0.0
    pre_mtp_layers: int = 0  # MTP passes the prefill step runs over its prompts (workload.prompt_draft_passes)

    @property
    def served(self) -> float:
        """Sequences the deployment works on at once: throughput = served x tokens / request time, so two
        configurations with equal `served` at one workload have inverse throughput proportional to latency."""
        if self.kind == "serving":
            return float(self.wl.concurrency)
        if self.kind == "prefill":  # the prompts given, however few of the replicas they occupy
            return float(self.wl.batch)
        return self.per_replica * self.replicas


@dataclass(frozen=True)
class Figures:
    ttft_s: float
    tpot_s: float
    output_tokens_per_s: float  # whole deployment
    request_s: float  # serving: TTFT + (OSL - 1) TPOT
    prefill_step_s: float  # the steps as the engine runs them (step_time)
    decode_step_s: float
    times: object | None = None  # closed_loop.ServingTimes (serving only)

    def per_rank(self, world: int) -> float:
        return self.output_tokens_per_s / world


def step_plan(model: ModelSpec, pc: ParallelConfig, f: Factors, wl: Workload,
              kv_capacity_per_replica: float = math.inf, default_budget: int | None = None) -> StepPlan:
    """The steps `pc` runs at `wl`. `kv_capacity_per_replica`: sequences one replica's memory holds (serving:
    fewer than C_r makes requests wait for a slot); the planner passes the default, having required room for
    C_r sequences on every replica. `default_budget`: the configuration's default tokens per step
    (profile_serving.step_default, which reads the device; None: the scheduler's)."""
    replicas = pc.attn_replicas
    mtp_layers = wl.mtp if model.num_mtp_layers else 0
    if wl.kind == "prefill":
        per = max(1.0, wl.batch / replicas)
        # fewer prompts than attention replicas: the others have no prompt (at most an engine's dummy step), so
        # the MoE and every group spanning replicas see these prompts' tokens only (Work.busy_replicas)
        busy = float(wl.batch) if wl.batch < replicas else 0.0
        work = Work.prefill(*wl.prompt_tokens, per, busy, prefill_worker=True)
        pmtp = prompt_draft_passes(mtp_layers)
        return StepPlan("prefill", pc.world_size, replicas, per, work, None, 0, wl, pre_seqs=per,
                        pre_layers=step_layers(model, pc, "prefill", per, pmtp), pre_mtp_layers=pmtp)
    if wl.kind == "decode":
        per = max(1.0, wl.batch / replicas)
        sizes = graph_sizes_at(f, pc, model.num_experts, math.ceil(per), mtp_layers)
        padded, eager = graph_batch(math.ceil(per), sizes)
        seqs = max(per, float(padded))
        work = Work("decode", new_tokens=seqs * wl.verify_width, context=wl.seq_len, sequences=seqs,
                    logits_tokens=seqs * wl.verify_width, span=wl.decode_span)
        return StepPlan("decode", pc.world_size, replicas, per, None, work, mtp_layers, wl, dec_seqs=per,
                        dec_eager=eager, graph_batch=padded, dec_layers=step_layers(model, pc, "decode", seqs, mtp_layers))
    synced = synced_ranks(model, pc)
    # the command gives one engine instance its share of the concurrency (launch_spec.REPLICA_BATCH)
    wl = replace(wl, token_budget=token_budget(wl, f, synced, math.ceil(wl.concurrency / replicas), default_budget),
                 request_overhead_s=request_overhead(wl, f))
    cap = kv_capacity_per_replica if math.isfinite(kv_capacity_per_replica) else float(wl.concurrency)
    sizes = graph_sizes_at(f, pc, model.num_experts, math.ceil(wl.concurrency / replicas), mtp_layers)
    shape = serving_shape(wl, replicas, cap, synced, sizes, pc.pp_size,
                          ServingPolicy.of(f).decode_first_for(synced),
                          stage_layer_passes(model, pc.pp_size, prompt_draft_passes(mtp_layers)))
    n = shape.prompts_per_step
    pre = Work.prefill(*wl.prompt_tokens, n)
    b = shape.graph_batch or shape.running
    dec = Work("decode", new_tokens=b * wl.verify_width, context=wl.isl + wl.osl / 2, sequences=b,
               logits_tokens=b * wl.verify_width, span=wl.decode_span)
    pre_mtp = prompt_draft_passes(mtp_layers)
    return StepPlan("serving", pc.world_size, replicas, shape.per_replica, pre, dec, mtp_layers, wl, shape,
                    pre_seqs=n, dec_seqs=shape.running, dec_eager=shape.eager_decode,
                    graph_batch=shape.graph_batch,
                    pre_layers=step_layers(model, pc, "prefill", n, pre_mtp),
                    dec_layers=step_layers(model, pc, "decode", b, mtp_layers),
                    pre_mtp_layers=pre_mtp)


def figures(sp: StepPlan, f: Factors, pre_gpu_s: float = 0.0, pre_kernels: float = 0.0, dec_gpu_s: float = 0.0,
            dec_kernels: float = 0.0) -> Figures:
    """The figures of the steps `sp` names, costed at these GPU seconds and kernel counts. Seconds in, seconds
    and tokens per second out."""
    kit, m, pre_s, dec_s = _steps(sp, f, pre_gpu_s, pre_kernels, dec_gpu_s, dec_kernels)
    if kit is not None:  # serving
        t = ServingTimes(*serving_figures(kit, pre_s, dec_s))
        wl = sp.wl
        return Figures(t.ttft_s, t.tpot_s, wl.concurrency * wl.osl / t.request_s, t.request_s, pre_s, dec_s, t)
    if sp.kind == "prefill":
        # pure prefill emits one token per prompt: throughput is prompts finished per second
        return Figures(pre_s, 0.0, sp.served / pre_s, pre_s, pre_s, 0.0)
    tpot = dec_s / m
    return Figures(0.0, tpot, sp.per_replica * sp.replicas / tpot, tpot * sp.wl.osl, 0.0, dec_s)


def ttft_tpot(sp: StepPlan, f: Factors, pre_gpu_s: float = 0.0, pre_kernels: float = 0.0, dec_gpu_s: float = 0.0,
              dec_kernels: float = 0.0) -> tuple[float, float]:
    """`figures(...)`'s (ttft_s, tpot_s), the same floats, without building its objects: for a caller that
    reads only these two at many step times (the planner's latency bounds)."""
    kit, m, pre_s, dec_s = _steps(sp, f, pre_gpu_s, pre_kernels, dec_gpu_s, dec_kernels)
    if kit is not None:  # serving
        t = serving_figures(kit, pre_s, dec_s)
        return t[0], t[1]
    return (pre_s, 0.0) if sp.kind == "prefill" else (0.0, dec_s / m)


def ttft_floor(sp: StepPlan, f: Factors, pre_gpu_s: float, pre_kernels: float = 0.0) -> float:
    """A lower bound [s] of `figures(...)`'s TTFT at this prefill step, whatever the decode step
    (closed_loop.ttft_floor; outside serving, a prefill's TTFT is its step and a decode's none): non-decreasing
    in the prefill step, so a TTFT SLA it breaks is broken by every configuration of a slower prefill."""
    return ttft_floor_at_steps(sp, f, _steps(sp, f, pre_gpu_s, pre_kernels, 0.0, 0.0)[2], 0.0)


def ttft_floor_at_steps(sp: StepPlan, f: Factors, prefill_s: float, decode_s: float) -> float:
    """A lower bound [s] of the TTFT of every configuration of step plan `sp` whose steps as the engine runs them
    (Figures.prefill_step_s, decode_step_s) are at least prefill_s and decode_s (closed_loop.ttft_floor at both
    steps; outside serving, a prefill's TTFT is its step and a decode's none): non-decreasing in both steps, so
    a TTFT SLA it breaks is broken by every configuration whose steps dominate these."""
    if sp.kind == "serving":
        kit = _steps(sp, f, 0.0, 0.0, 0.0, 0.0)[0]
        return serving_ttft_floor(kit, prefill_s, decode_s)
    return prefill_s if sp.kind == "prefill" else 0.0


def _steps(sp: StepPlan, f: Factors, pre_gpu_s: float, pre_kernels: float, dec_gpu_s: float,
           dec_kernels: float) -> tuple[ServingKit | None, float, float, float]:
    """(serving kit (None outside serving), tokens a decode step emits, prefill step [s], decode step [s]): the
    steps as the engine runs them (engine_step.step_time, its per-sequence term taken once per step plan) and
    the terms of the figures that do not depend on them."""
    hit = _TERMS.get(id(sp))
    if hit is None or hit[1] is not f:
        hit = _terms(sp, f)
    pre_s = launch_floor_s(pre_gpu_s, pre_kernels, True, f) + hit[2] if sp.pre_work is not None else 0.0
    dec_s = launch_floor_s(dec_gpu_s, dec_kernels, sp.dec_eager, f) + hit[3] if sp.dec_work is not None else 0.0
    return hit[4], hit[5], pre_s, dec_s


# What `figures` takes from a step plan and factors alone, per plan: the planner asks for one plan's figures at
# some 40 step times (~18K calls a plan over a few hundred plans). Each entry keeps its plan and factors, so the
# id it is filed under names that plan
_TERMS: dict[int, tuple[StepPlan, Factors, float, float, ServingKit | None, float]] = {}


def _terms(sp: StepPlan, f: Factors) -> tuple[StepPlan, Factors, float, float, ServingKit | None, float]:
    if len(_TERMS) >= 4096:
        _TERMS.clear()
    wl = sp.wl
    kit = serving_kit(sp.shape, wl, ServingPolicy.of(f)) if sp.kind == "serving" else None
    hit = _TERMS[id(sp)] = (sp, f, sequence_cost_s(sp.pre_seqs, f, layers=sp.pre_layers),
                            sequence_cost_s(sp.dec_seqs, f, layers=sp.dec_layers), kit,
                            mtp_tokens_per_step(wl.mtp, wl.mtp_accept))
    return hit


__all__ = ["StepPlan", "Figures", "step_plan", "figures", "ttft_tpot", "ttft_floor", "ttft_floor_at_steps"]
