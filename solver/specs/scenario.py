"""Scenario: what the deployment is for (the seed's target scenario) and its workload and SLAs."""
from __future__ import annotations

import math
import re
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, model_validator

from solver.errors import InputError
from solver.specs.limits import DEFAULT_MAX_CONCURRENCY, MAX_CONCURRENCY, MAX_MTP, MAX_SLA_MS, MAX_TOKENS

ScenarioKind = Literal["throughput", "latency", "balanced"]

# Weights of (request latency, inverse throughput per rank) in the planner's objective, after each is
# normalised by its best achievable value. The seed's decision tree: high throughput emphasises decode,
# low latency emphasises TTFT/TPOT, balanced weighs both.
SCENARIO_WEIGHTS: dict[str, tuple[float, float]] = {
    "throughput": (0.2, 0.8),
    "latency": (0.8, 0.2),
    "balanced": (0.5, 0.5),
}


DEFAULT_MTP_ACCEPT = 0.7  # MTP1 acceptance ~70% (CloudMatrix384 paper, facts/measurements.md #9)
# the acceptance rate of each draft token: a fraction, above 0 (a zero rate drafts for nothing)
AcceptRate = Annotated[float, Field(gt=0, le=1)]


def accept_unread(mtp: int, mtp_accept: float | None, mtp_name: str = "--mtp") -> str | None:
    """Why an acceptance rate given would be dropped unread: there are no draft tokens to accept (`mtp_name`: how
    the input that sets the depth is spelt, a flag or a file's key); None where it is read."""
    if mtp_accept is not None and not mtp:
        return f"an acceptance rate needs {mtp_name} N > 0 (no draft tokens to accept)"
    return None


def hit_unread(phase: str, prefix_hit: float, hit_name: str = "--prefix-hit") -> str | None:
    """Why a prefix-cache hit rate given would be dropped unread: a decode step prefills no prompt (`hit_name`: how
    the input is spelt, a flag or a file's key); None where it is read."""
    if phase == "decode" and prefix_hit:
        return f"a decode step prefills no prompt, so no hit rate is read; drop {hit_name}"
    return None


# the share of each prompt's tokens found in the engine's prefix cache (its own metrics: vLLM's prefix_cache_hits /
# prefix_cache_queries, SGLang's cache hit rate): a fraction in [0, 1), 0 = every prompt prefilled whole. At 1 no
# prompt token would be computed, which no engine does (vLLM recomputes the last token of a fully cached prompt)
# (-0.0 read as 0.0: a table writes what no flag writes)
PrefixHit = Annotated[float, Field(ge=0, lt=1), AfterValidator(lambda v: v + 0.0)]


def prefix_hit_of(value: float) -> float:
    """`value` as a prefix-cache hit rate, or one line naming --prefix-hit (the estimate path, which builds no
    Scenario, checks it here, under the same rule as Scenario.prefix_hit)."""
    try:
        return TypeAdapter(PrefixHit).validate_python(value, strict=False)
    except ValidationError as exc:
        raise InputError("--prefix-hit", _hit_message(value)) from None


def _hit_message(value: Any) -> str:
    """The refusal of any hit rate outside [0, 1) (pydantic's own message names the bound crossed, not the rule)."""
    return f"a prefix-cache hit rate is a fraction in [0, 1), got {value}"


# two scores (Scenario.score) within 3% count as tied: inside that band the seed orders the candidates by memory,
# cross-node risk and closeness to a verified configuration, not by the score (rank.select; plan.solve plans every
# pattern inside the band so that the first candidate does not depend on how many are shown)
PERF_TIE = 0.03
TIE_SCORE = math.log(1 + PERF_TIE)  # the band on the score's log scale


def within_tie(gap: float) -> bool:
    """Two scores `gap` apart (either way) count as tied."""
    return abs(gap) <= TIE_SCORE

class Scenario(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False, strict=False)

    kind: ScenarioKind = "balanced"
    isl: int = Field(4096, gt=0, le=MAX_TOKENS, description="input tokens per request")
    osl: int = Field(256, gt=0, le=MAX_TOKENS, description="output tokens per request")
    concurrency: int | None = Field(None, gt=0, le=MAX_CONCURRENCY,
                                    description="fixed concurrent requests; None = planner decides")
    max_concurrency: int = Field(DEFAULT_MAX_CONCURRENCY, gt=0, le=MAX_CONCURRENCY,
                                 description="upper bound when the planner decides concurrency")
    ttft_ms: float | None = Field(None, gt=0, le=MAX_SLA_MS)
    tpot_ms: float | None = Field(None, gt=0, le=MAX_SLA_MS)
    mtp: int = Field(0, ge=0, le=MAX_MTP)
    mtp_accept: AcceptRate = DEFAULT_MTP_ACCEPT
    phase: Literal["serving", "prefill", "decode"] = "serving"
    prefix_hit: PrefixHit = 0.0  # share of each prompt's tokens already in the prefix cache (workload.Workload)
    weights: tuple[float, float] | None = None  # (latency, inverse throughput) override

    @model_validator(mode="after")
    def _check(self) -> "Scenario":
        if self.weights is not None and (min(self.weights) < 0 or sum(self.weights) <= 0):
            raise ValueError("weights must be non-negative and not both zero")
        # a fixed concurrency makes the bound moot, unless both were given and contradict each other
        if ("max_concurrency" in self.model_fields_set and self.concurrency is not None
                and self.concurrency > self.max_concurrency):
            raise ValueError(f"concurrency {self.concurrency} exceeds max_concurrency {self.max_concurrency}; "
                             "raise --max-concurrency or lower --concurrency")
        # an SLA on a figure the phase does not have would be dropped unread
        if self.phase == "decode" and self.ttft_ms is not None:
            raise ValueError("ttft_ms: a decode-only deployment has no TTFT (its prompts are prefilled elsewhere); "
                             "drop the TTFT bound")
        unread = hit_unread(self.phase, self.prefix_hit)
        if unread:
            raise ValueError(f"prefix_hit: {unread}")
        if self.phase == "prefill" and self.tpot_ms is not None:
            raise ValueError("tpot_ms: a prefill-only deployment decodes no tokens; drop the TPOT bound")
        return self

    @property
    def objective_weights(self) -> tuple[float, float]:
        return self.weights or SCENARIO_WEIGHTS[self.kind]

    @property
    def max_seq_len(self) -> int:
        return self.isl if self.phase == "prefill" else self.isl + self.osl

    @property
    def prefill_per_output_token(self) -> float:
        """Share of a request's prefill carried by each output token. In serving, decode steps carry the
        prefill chunks of arriving requests (continuous batching), so each token pays 1/OSL of the prefill of
        the batch it runs with: TPOT = tau / (1 - rho) = tau + B x p / OSL (estimate.closed_loop)."""
        return 1.0 / self.osl if self.phase == "serving" else 0.0

    @property
    def latency_terms(self) -> tuple[float, float, int]:
        """(weight of the prefill time, decode steps, tokens per request) in the request-latency objective.
        serving: TTFT + (OSL-1) x TPOT per OSL output tokens; decode-only: OSL x TPOT; prefill-only: the
        prefill time per ISL input tokens."""
        if self.phase == "prefill":
            return 1.0, 0, self.isl
        if self.phase == "decode":
            return 0.0, self.osl, self.osl
        return 1.0, max(0, self.osl - 1), self.osl

    def score(self, latency: float, inv_throughput: float, latency_ref: float, inv_throughput_ref: float) -> float:
        """The scenario's weighted log-ratio of (latency, inverse throughput) to reference values: scale-free,
        so a 2x loss in latency weighs the same whether latency is milliseconds or seconds; lower is better."""
        w_lat, w_inv = self.objective_weights
        return w_lat * math.log(latency / latency_ref) + w_inv * math.log(inv_throughput / inv_throughput_ref)

    def has_slas(self) -> bool:
        """Whether a TTFT or TPOT cap is given (a remedy checked with them set aside says so)."""
        return self.ttft_ms is not None or self.tpot_ms is not None

    def sla_misses(self, ttft_s: float, tpot_s: float, relaxed: frozenset[str] = frozenset()) -> list[str]:
        """The SLA constraint families (SLA.ttft, SLA.tpot) these figures break, leaving out the relaxed ones.
        A relative 1e-6 absorbs float noise at a limit."""
        out = []
        if self.ttft_ms is not None and "SLA.ttft" not in relaxed and ttft_s * 1e3 > self.ttft_ms * (1 + 1e-6):
            out.append("SLA.ttft")
        if self.tpot_ms is not None and "SLA.tpot" not in relaxed and tpot_s * 1e3 > self.tpot_ms * (1 + 1e-6):
            out.append("SLA.tpot")
        return out

    def request_latency(self, ttft_s: float, tpot_s: float) -> float:
        """The planner's latency objective in seconds from a TTFT and a TPOT (latency_terms)."""
        pw, steps, _ = self.latency_terms
        return pw * ttft_s + steps * tpot_s


def scenario_of(fallback_flag: str = "--scenario", **fields: Any) -> Scenario:
    """A Scenario from what a user gave; a field it refuses is reported under its flag (--max-concurrency). A check
    across fields names its field first ("concurrency 4 exceeds max_concurrency 2", "ttft_ms: ..."), so the flag is
    that field's (--concurrency), as the user gave it; `fallback_flag` where no field is named. An acceptance rate
    given without draft tokens to accept is refused: it would be dropped (accept_unread)."""
    unread = accept_unread(fields.get("mtp", 0), fields.get("mtp_accept"))
    if unread:
        raise InputError("--mtp-accept", unread)
    try:
        return Scenario(**fields)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = [str(part) for part in err.get("loc", ())]
        msg = str(err.get("msg", "invalid")).removeprefix("Value error, ")
        if not loc:
            head = re.match(r"([a-z_]+)(:\s*)?", msg)
            if head and head.group(1) in Scenario.model_fields:
                loc = [head.group(1)]
                msg = msg[head.end():] if head.group(2) else msg
        if loc[:1] == ["prefix_hit"] and err.get("type") != "value_error":
            msg = _hit_message(fields.get("prefix_hit"))
        raise InputError("--" + loc[0].replace("_", "-") if loc else fallback_flag, msg) from None
