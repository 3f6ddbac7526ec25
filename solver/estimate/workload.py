"""What a deployment is asked to serve (Workload), and what a workload leaves to the framework and the
benchmark client, resolved: the scheduler's token budget per step, the per-request front-end cost, the requests
a benchmark run sends, and the tokens an MTP decode step emits. The serving formulas that read it are in
closed_loop.py; serving.estimate runs one.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from solver.estimate.compute import Factors
from solver.estimate.stage_ranks import launched_device
from solver.specs.hardware import Hardware
from solver.specs.model import ModelSpec
from solver.specs.parallel import ParallelConfig
from solver.specs.profile_serving import DEFAULT_TOKEN_BUDGET, command_budget, step_default
from solver.specs.scenario import DEFAULT_MTP_ACCEPT, Scenario

# Requests a benchmark run sends, in multiples of the concurrency (num_prompts = k x concurrency). The CSV does not
# record it; public serving-benchmark scripts use a few to ten times the concurrency. k = 5 is the value that
# minimised the calibration error among k in {2, 3, 5, 8, 20} (one global number, not per framework or model;
# rerun with `python benchmarks/accuracy.py --waves K`).
DEFAULT_BENCHMARK_WAVES = 5
# Fixed per-request front-end cost on the TTFT path when no fit exists for the framework x hardware, seconds: the
# median of request_overhead_s over the pairs benchmarks/fit_efficiency.py fits on their own rows
# (fit_efficiency.default_request_overhead, which it prints; a pair filled from its framework's pooled fit is not
# counted). Held out by device (`benchmarks/accuracy.py --device`) this rule gives TTFT median 32.1% against 35.9%
# when the filled pairs were counted (0.10 s). 0 would ignore a cost every measured deployment shows.
DEFAULT_REQUEST_OVERHEAD_S = 0.04861


@dataclass(frozen=True)
class Workload:
    """One of: prefill (seq_len, batch), decode (batch, seq_len), or serving (isl, osl, concurrency). A decode
    step may also name the prompt and output lengths its context comes from (isl, osl): it is costed at the mean
    context seq_len = ISL + OSL/2 with its sequences spread over ISL + 1 .. ISL + OSL (decode_span), and memory
    holds what a sequence reaches, ISL + OSL."""

    kind: str  # "prefill" | "decode" | "serving"
    batch: int = 1  # prefill: prompts at once; decode: sequences across the deployment
    seq_len: int = 0  # prefill: prompt length; decode: the context a step is costed at
    isl: int = 0
    osl: int = 0  # decode: 0 when only seq_len is known (memory then holds seq_len)
    concurrency: int = 0
    mtp: int = 0  # next-n depth
    mtp_accept: float = DEFAULT_MTP_ACCEPT
    # tokens a decode step verifies a sequence where a lookup drafts a tree of them (DraftMethods.lookup_verify);
    # 0: 1 + mtp, a chain. The accepted tokens stay mtp_tokens_per_step(mtp, mtp_accept)
    verify_tokens: int = 0
    token_budget: int | None = None  # tokens per forward step; None = the framework's default (`token_budget`)
    # serving only: benchmark and framework parameters (closed_loop's module docstring)
    benchmark_waves: int = DEFAULT_BENCHMARK_WAVES  # k: a run sends k x concurrency requests
    # o: fixed per-request TTFT cost; None takes the fitted value of the framework x hardware (Factors), else
    # the default
    request_overhead_s: float | None = None
    max_running: int = 0  # framework cap on running sequences per replica (max_num_seqs); 0 = memory decides
    # prefill and serving: the share of each prompt's tokens found in the engine's prefix cache (prompt_tokens)
    prefix_hit: float = 0.0

    @property
    def verify_width(self) -> int:
        """Tokens a decode step runs a sequence: its own and the drafts it verifies (verify_tokens, else 1 + mtp)."""
        return self.verify_tokens or 1 + self.mtp

    @classmethod
    def for_scenario(cls, scenario: Scenario, batch: int) -> "Workload":
        """A planning scenario at concurrency `batch`: prefill of `batch` prompts, a decode step of `batch`
        sequences at the mean context ISL + OSL/2, or aggregated serving. A prefill under MTP keeps its depth:
        the deployment holds the MTP layers' weights (as `check`, `estimate` and a disaggregated prefill pool
        count them), though its step runs no draft."""
        if scenario.phase == "prefill":
            return cls("prefill", batch=batch, seq_len=scenario.isl, mtp=scenario.mtp, mtp_accept=scenario.mtp_accept,
                       prefix_hit=scenario.prefix_hit)
        if scenario.phase == "decode":
            return cls.decode_of(batch, scenario.isl, scenario.osl, scenario.mtp, scenario.mtp_accept)
        return cls("serving", isl=scenario.isl, osl=scenario.osl, concurrency=batch, mtp=scenario.mtp,
                   mtp_accept=scenario.mtp_accept, prefix_hit=scenario.prefix_hit)

    @classmethod
    def decode_of(cls, batch: int, isl: int, osl: int, mtp: int = 0,
                  mtp_accept: float = DEFAULT_MTP_ACCEPT, verify_tokens: int = 0) -> "Workload":
        """Decode steps of `batch` sequences over OSL tokens after ISL-token prompts."""
        return cls("decode", batch=batch, seq_len=isl + osl // 2, isl=isl, osl=osl, mtp=mtp, mtp_accept=mtp_accept,
                   verify_tokens=verify_tokens)

    @property
    def context_len(self) -> int:
        """Tokens a sequence holds at its longest (for memory)."""
        if self.kind == "serving" or (self.kind == "decode" and self.osl):
            return self.isl + self.osl
        return self.seq_len

    @property
    def prompt_tokens(self) -> tuple[int, int]:
        """(new, cached) tokens of one prompt (prefill: seq_len, serving: ISL): the cached ones, floor(L x
        prefix_hit), are the prefix the engine finds in its prefix cache, whose K/V it reads but does not compute;
        the new ones, L - cached >= 1, run through every layer (GEMMs, MoE, the exchange, activations) with their
        attention over the whole context: positions cached + 1 .. L (compute.Work.prefill). The scheduler's
        token budget counts the new ones only (the engines count cached tokens as computed: vLLM 0.34.0
        v1/core/sched/scheduler.py num_new_tokens = num_tokens - num_computed_tokens), so they also set the prompts
        per step and the chunks (closed_loop.serving_shape). The cache a request holds is unchanged, L + OSL
        tokens: nothing is assumed shared across requests (a shared prefix's blocks would be held once), and
        the activations are sized for a prompt that misses. At prefix_hit 0: (L, 0)."""
        length = self.isl if self.kind == "serving" else self.seq_len
        cached = math.floor(length * self.prefix_hit)
        return length - cached, cached

    @property
    def decode_span(self) -> int:
        """Positions the running sequences of a decode step spread over (compute.Work.span): OSL where the
        workload knows it (steady serving holds sequences evenly at ISL + 1 .. ISL + OSL), else 0 (all at the
        context: a decode step named by its context alone)."""
        return self.osl if self.kind in ("decode", "serving") else 0

    @property
    def sequences(self) -> int:
        return self.concurrency if self.kind == "serving" else self.batch


def _share(x: float) -> str:
    """`x` in whole percent, or with the decimals that keep a share strictly between 0 and 1 from reading 0% or
    100% (a 0.999 hit computes 0.1% of the prompt, not "the other 0%")."""
    for d in range(4):
        text = f"{x:.{d}%}"
        if x in (0, 1) or text not in (f"{0:.{d}%}", f"{1:.{d}%}"):
            return text
    return "<0.001%" if x < 0.5 else ">99.999%"


def one_token_note(osl: int, phase: str = "serving") -> str | None:
    """What a serving answer at OSL 1 means by its TPOT (scheduler.tpot_of), said once; None otherwise."""
    if osl != 1 or phase != "serving":
        return None
    return ("one output token per request (--osl 1): no token follows the first, so TPOT and the per-user rate are 0, "
            "a request takes its TTFT, output tokens/s counts requests finished, and a --tpot-ms SLA is met trivially")


def prefix_hit_note(prefix_hit: float, phase: str = "serving") -> str | None:
    """What an answer assumed of the prefix cache (Workload.prompt_tokens), said once; None at no hit. `phase`: a
    prefill-only answer holds the prompt's cache alone and runs no decode."""
    if not prefix_hit:
        return None
    held = "the prompt's" if phase == "prefill" else "ISL + OSL"
    decode = "" if phase == "prefill" else "; decode is unchanged"
    return (f"prefix cache: {_share(prefix_hit)} of each prompt's tokens assumed cached (prefix_hit {prefix_hit:g}): "
            f"a prefill computes the other {_share(1 - prefix_hit)}, attending over the whole prompt; the KV cache still "
            f"holds {held} tokens per request (no prefix assumed shared across requests) and memory is sized for "
            f"a prompt that misses{decode}")


def request_overhead(wl: Workload, f: Factors) -> float:
    if wl.request_overhead_s is not None:
        return wl.request_overhead_s
    return f.request_overhead_s if f.request_overhead_s is not None else DEFAULT_REQUEST_OVERHEAD_S


def token_budget(wl: Workload, f: Factors, synced: int, replica_batch: int = 1, default: int | None = None) -> int:
    """Tokens per forward step of one attention replica: the workload's budget, else the budget the framework's
    command sets (`Factors.token_budget_rule`, the profile's step_budget launch argument, over its default
    `token_budget`, the `replica_batch` requests the command gives one engine instance and the MTP depth), else its
    default (`Factors.token_budget`, from its profile), else DEFAULT_TOKEN_BUDGET; divided among the `synced`
    attention-DP ranks of one engine (closed_loop.synced_ranks: a MoE model's DP attention) where the framework
    does so (its scheduler's budget_split_by_attention_dp). A dense model's replicas are engines of their own,
    each with the whole budget. `default`: the configuration's default (profile_serving.step_default: the EP
    kernels' where they hold), None: the scheduler's."""
    if wl.token_budget is not None:
        budget = wl.token_budget
    else:
        budget = command_budget(default or f.token_budget or DEFAULT_TOKEN_BUDGET, f.token_budget_rule, replica_batch,
                                wl.mtp)
    if f.budget_split_by_attention_dp and synced > 1:
        budget = budget // synced
    return max(1, budget)


def config_budget(model: ModelSpec, hw: Hardware, pc: ParallelConfig, f: Factors) -> int:
    """The default tokens per step of configuration `pc` on `hw` (profile_serving.step_default over the engine's
    factors): what token_budget's `default` is for a co-located engine's step."""
    return step_default(f.ep_kernels, f.token_budget or DEFAULT_TOKEN_BUDGET, model.is_moe, pc, launched_device(hw))


def prompt_draft_passes(draft_passes: int) -> int:
    """MTP passes a prefill step runs over its prompts: one (the draft model's extend over the prompt's hidden
    states, which fills the MTP layers' cache and drafts the first token: SGLang eagle_worker_v2
    _draft_extend_for_prefill) where MTP is on, whatever its depth."""
    return 1 if draft_passes > 0 else 0


@lru_cache(maxsize=1024)
def mtp_tokens_per_step(depth: int, accept: float) -> float:
    """Expected tokens emitted per decode step with `depth` draft tokens accepted in sequence: draft i stands only
    if drafts 1 .. i - 1 did, each with chance `accept`. The engines log it as the mean acceptance length (vLLM
    0.34.0 v1/spec_decode/metrics.py: 1 + accepted / drafts, the bonus token included; SGLang 0.5.23
    sglang:spec_accept_length, accepted drafts + bonus per forward)."""
    return 1.0 + sum(accept ** i for i in range(1, depth + 1))


def engine_accept_rate(depth: int, accept: float) -> float:
    """The acceptance rate the engines log at `depth` drafts of chance `accept` each (given the ones before it
    stood): accepted / drafted = (accept + ... + accept^depth) / depth (vLLM 0.34.0 v1/spec_decode/metrics.py
    "Avg Draft acceptance rate", SGLang 0.5.23 scheduler_components/metrics_reporter.py spec_accept_rate). Equal
    to `accept` at depth 1 and below it deeper, so it is not what --mtp-accept takes (vLLM's per-position rate at
    position 1 is)."""
    return (mtp_tokens_per_step(depth, accept) - 1.0) / depth
