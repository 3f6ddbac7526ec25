"""The checks of `check` that compare a configuration with the alternatives: the seed's process errors (a pattern
chosen without the comparison the seed asks for, judged by the planner's analysis of the same deployment),
its [B] rule that decode's attention TP is no larger than needed, and its 3.4 rule that TP communication above
the compute means the TP degree is too large."""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable

from solver.errors import ShardplanError
from solver.estimate.compute import comm_knob
from solver.estimate.memory_options import MemoryOptions
from solver.estimate.serving import Estimate, Workload, estimate
from solver.estimate.step import StepCost
from solver.rank.cell import change_pct
from solver.space.domains import TP_KNOBS
from solver.specs.framework import FrameworkProfile
from solver.specs.profile_rules import Rule
from solver.specs.hardware import Hardware
from solver.specs.knobs import nondefault_label
from solver.specs.model import ModelSpec
from solver.specs.model_rules import model_problems
from solver.specs.parallel import ParallelConfig, model_knobs
from solver.specs.precision import Precision
from solver.specs.rule_env import device_facts, model_env
from solver.specs.scenario import Scenario

SMALL_SCALE = 16  # the seed's "small-to-medium scale" MoE deployments (R1 16-card references)


def _all_tp(model: ModelSpec) -> str:
    """Every TP knob of the model's own modules at the stage's ranks (a knob of a module the model lacks is
    free in a rule, so it is left out rather than read)."""
    present = model_knobs(model)
    tps = [k for k in ("attn_tp_size", "dense_tp_size", "moe_tp_size", "embed_tp_size", "lmhead_tp_size")
           if k in present]
    return "world > 1 and " + " and ".join(f"{k} == world" for k in tps)


@dataclass(frozen=True)
class ProcessError:
    """One of the seed's common errors about how a configuration was chosen ("skip analysis and directly use
    default all-TP", "for small-scale MoE only consider one option", "apply TP to attention in MLA models": the
    comparison the seed asks for was not made), not about the configuration itself. A configuration with the
    pattern is the error only where that comparison goes against it: the planner's analysis of the same
    deployment and workload, with the pattern forbidden (one more rule), finds a configuration that beats it by
    more than the tie band in request latency or throughput per rank and loses in neither. So the planner's
    own choice is never the error, and a pattern the analysis confirms gets a note saying it was weighed."""
    name: str
    why: str  # the seed's root cause and prevention
    pattern: Callable[[ModelSpec], str]  # a rule expression (specs.expr) true on a configuration with it

    def rule(self, model: ModelSpec) -> Rule:
        """The rule that forbids the pattern: the planner plans without it, and `holds` is False on it."""
        return Rule(id="C.without_" + self.name.replace(" ", "_").replace("-", "_").lower(),
                    require=f"not ({self.pattern(model)})", message=f"{self.name} left out for the comparison",
                    source="seed, Step 4 common errors")


ALL_TP = ProcessError("default all-TP", "communication overhead not weighed; compare with EP / DP", _all_tp)
SMALL_MOE_TP_ONLY = ProcessError(
    "small-scale MoE with only TP considered", "EP and TP not compared",
    lambda model: f"is_moe and world > 1 and world <= {SMALL_SCALE} and moe_tp_size == world")
MLA_ATTENTION_TP = ProcessError("attention TP on an MLA model", "the latent KV cache is not split by heads, every TP rank holds "
                 "and reads all of it; prefer attention DP, and CP for long prefill",
                 lambda model: "has_mla and attn_tp_size > 1")
PROCESS_ERRORS = (ALL_TP, SMALL_MOE_TP_ONLY, MLA_ATTENTION_TP)


def decode_attn_tp_needed(model: ModelSpec, hw: Hardware, fw: FrameworkProfile, pc: ParallelConfig,
                          prec: Precision, f, wl: Workload, mem_opts: MemoryOptions | None,
                          own: Estimate, estimator: Callable[..., Estimate] | None = None
                          ) -> tuple[ParallelConfig, Estimate] | None:
    """The seed's [B] "in the Decode phase, attn_tp is not greater than the necessary value": the smallest
    attention TP (a divisor of this one; the knobs the engine ties to it, dense FFN and the vocabulary / o_proj
    degrees, following where they must) that the engine accepts, that fits, and whose decode step is no slower;
    None when this attention TP is that value. `estimator`: what estimated `own` (serving.estimate's signature;
    None: it), so each alternative is priced the same way (an AFD deployment's by estimate.afd)."""
    from solver.rank.explain import side_variants  # explain and select load the planner (OR-Tools): only here

    for a in (d for d in range(1, pc.attn_tp_size) if pc.attn_tp_size % d == 0):
        base = pc.knobs()
        tries = [{**base, "attn_tp_size": a}, {**base, "attn_tp_size": a, "dense_tp_size": a}]
        if pc.o_proj_tp_size == pc.attn_tp_size:
            tries += [{**t, "o_proj_tp_size": a} for t in tries]
        seen = set()
        for knobs in tries:
            try:
                alt = ParallelConfig(world_size=pc.world_size, **knobs)
            except (ShardplanError, ValueError):
                continue
            for v in [alt, *side_variants(alt, model)]:
                key = tuple(sorted(v.knobs().items()))
                if key in seen:
                    continue
                seen.add(key)
                env = model_env(v.settings(), model, **device_facts(hw), world=v.world_size, batch=wl.sequences,
                                mtp=wl.mtp)
                if model_problems(model, v, fw) or fw.check(env, severity="error"):
                    continue
                e = (estimator or estimate)(model, hw, v, prec, f, wl, mem_opts)
                if e.memory.feasible and e.tpot_s <= own.tpot_s:
                    return v, e
    return None


def _tp_comm_by_knob(step: StepCost) -> dict[str, float]:
    """Exposed seconds of the step's collectives over each TP group (estimate.compute.comm_knob names the group
    a collective runs over; EP's all-to-all and the CP / KVP gathers are not TP)."""
    out: dict[str, float] = {}
    for c in step.comms:
        k = comm_knob(c.name)
        if k in TP_KNOBS:
            out[k] = out.get(k, 0.0) + c.exposed_s
    return out


def tp_comm_over_compute(model: ModelSpec, hw: Hardware, fw: FrameworkProfile, pc: ParallelConfig,
                         prec: Precision, f, wl: Workload, mem_opts: MemoryOptions | None,
                         own: Estimate, estimator: Callable[..., Estimate] | None = None
                         ) -> tuple[list[str], list[str]]:
    """The seed's 3.4 communication feasibility: "estimated communication time > computation time -> TP degree
    too large, reduce TP or switch to EP". The step of the workload (prefill, decode) whose TP communication
    most exceeds its compute names the TP knob that carries most of it; the seed's adjustment is then weighed as
    the process errors are: each smaller degree of that knob (1 = DP, or EP for moe_tp_size), alone or with
    every knob the engine ties to it, that the engine accepts and that fits. A warning where one beats this
    configuration by more than the tie band, else a note that it was weighed: (warnings, notes). `estimator`:
    as decode_attn_tp_needed's."""
    from solver.rank.select import PERF_TIE  # select loads the planner (OR-Tools): only here

    over = []
    for phase, step in (("prefill", own.prefill), ("decode", own.decode)):
        if step is not None:
            by_knob = _tp_comm_by_knob(step)
            if sum(by_knob.values()) > step.compute_s:
                over.append((sum(by_knob.values()) - step.compute_s, phase, step, by_knob))
    if not over:
        return [], []
    _, phase, step, by_knob = max(over, key=lambda o: o[0])
    top = max(by_knob, key=by_knob.get)  # type: ignore[arg-type]
    v = getattr(pc, top)
    head = (f"{phase} step: TP communication {sum(by_knob.values()) * 1e3:.3g} ms > compute "
            f"{step.compute_s * 1e3:.3g} ms, {top} {v} carrying {by_knob[top] * 1e3:.3g} ms of it (seed 3.4: the TP "
            "degree is too large; reduce TP or switch to EP)")
    scenario = scenario_of(wl)
    tied = [k for k in TP_KNOBS if k in model_knobs(model) and getattr(pc, k) == v]
    seen = set()
    for d in (d for d in range(v - 1, 0, -1) if v % d == 0):
        for knobs in ({top: d}, dict.fromkeys(tied, d)):
            key = tuple(sorted(knobs.items()))
            if key in seen:
                continue
            seen.add(key)
            try:
                alt = ParallelConfig(**{**pc.model_dump(), **knobs})
            except (ShardplanError, ValueError):
                continue
            env = model_env(alt.settings(), model, **device_facts(hw), world=alt.world_size, batch=wl.sequences,
                            mtp=wl.mtp)
            if model_problems(model, alt, fw) or fw.check(env, severity="error"):
                continue
            e = (estimator or estimate)(model, hw, alt, prec, f, wl, mem_opts)
            if e.memory.feasible and beats(e, own, scenario, PERF_TIE):
                la, lo = (scenario.request_latency(x.ttft_s, x.tpot_s) for x in (e, own))
                thr = change_pct(e.output_tokens_per_s_per_rank, own.output_tokens_per_s_per_rank)
                change = " ".join(f"{k.replace('_size', '')}={n}" for k, n in knobs.items())
                return [f"{head}: {change} fits and does better by the estimate (request latency "
                        f"{change_pct(la, lo)}, output tokens/s per rank {thr})"
                        + _in_flag_terms(fw, model, hw, pc, alt, wl)], []
    return [], [f"{head}: weighed against each smaller {top} the engine accepts (alone or with the knobs at the same "
                f"degree); none that fits is more than {PERF_TIE:.0%} better by the estimate, so the seed's "
                "adjustment does not apply"]


def _printed(fw: FrameworkProfile, model: ModelSpec, hw: Hardware, pc: ParallelConfig, wl: Workload
             ) -> dict[str, str] | None:
    """The launch arguments that spell `pc`'s parallelism, as the profile's launch prints them: {flag / variable /
    key: its rendered value ("" for a switch)} for each argument printed whose condition and value read only the
    configuration, the model and the device (the batch-, memory- and length-sized ones are left out). None where
    the profile has no launch."""
    from solver.specs.launch_spec import as_read

    if fw.launch is None:
        return None
    env = dict(model_env(pc.settings(), model, **device_facts(hw), world=pc.world_size, batch=wl.sequences,
                         mtp=wl.mtp))
    env["replica_batch"] = fw.replica_batch(env)
    out: dict[str, str] = {}
    for a in fw.launch.args:
        doc = fw.launch.documents.get(a.doc) if a.doc else None
        name = a.flag or a.env or (f"{doc.flag or doc.file}: {a.key}" if doc is not None and a.key else None)
        reads = a.when_expr.names | (a.value_expr.names if a.value_expr is not None else frozenset())
        if name is None or reads & {"batch", "replica_batch", "mtp"}:
            continue
        try:
            if not a.when_expr.evaluate(env):
                continue
            if a.value_expr is None and a.text and "{" in a.text:
                continue  # a template of the launch's own figures (a path, an address)
            raw = a.value_expr.evaluate(env) if a.value_expr is not None else None
            value = ("" if a.switch else a.text or "") if a.value_expr is None else as_read(raw)
            # the engine's default, a number or an expression of the configuration: the launch leaves it out
            if a.default is not None and value == as_read(a.default_value(env)):
                continue
        except (ShardplanError, KeyError, TypeError, ValueError):  # reads a figure the configuration alone lacks
            continue
        out.setdefault(name, value)
    return out


def _in_flag_terms(fw: FrameworkProfile, model: ModelSpec, hw: Hardware, pc: ParallelConfig, alt: ParallelConfig,
                   wl: Workload) -> str:
    """The seed's "switch to EP" as the engine's launch spells the change from `pc` to `alt`: the arguments `alt`
    prints that `pc` does not or with another value, and those it drops; "" where the profile has no launch or
    they print alike."""
    now, then = _printed(fw, model, hw, pc, wl), _printed(fw, model, hw, alt, wl)
    if now is None or then is None:
        return ""
    add = [f"{k} {v}".strip() for k, v in then.items() if now.get(k) != v]
    drop = [f"{k} {v}".strip() for k, v in now.items() if k not in then]
    if not add and not drop:
        return ""
    sep = ", " if any(": " in a for a in add + drop) else " "  # a document's keys: one a clause
    return (f"; as {fw.name}'s launch spells it: " + sep.join(add)
            + (f"{', ' if add else ''}without {sep.join(drop)}" if drop else ""))


def scenario_of(wl: Workload) -> Scenario:
    """The planning scenario whose workload at its fixed concurrency is `wl` (Workload.for_scenario's inverse):
    a decode step's context is ISL + OSL // 2, so a decode known only by its context S is ISL = S with one
    output token. A prompt's prefix-cache hit goes with it (a decode has none), so that the alternatives are
    priced at the configuration's own hit."""
    if wl.kind == "serving":
        return Scenario(isl=wl.isl, osl=wl.osl, concurrency=wl.concurrency, mtp=wl.mtp, mtp_accept=wl.mtp_accept,
                        prefix_hit=wl.prefix_hit)
    if wl.kind == "decode" and wl.osl:
        return Scenario(phase="decode", isl=wl.isl, osl=wl.osl, concurrency=wl.batch, mtp=wl.mtp,
                        mtp_accept=wl.mtp_accept)
    return Scenario(phase=wl.kind, isl=wl.seq_len, osl=1, concurrency=wl.batch,
                    mtp=wl.mtp if wl.kind == "decode" else 0, mtp_accept=wl.mtp_accept,
                    prefix_hit=wl.prefix_hit if wl.kind == "prefill" else 0.0)


def beats(a: Estimate, b: Estimate, scenario: Scenario, tie: float) -> bool:
    """`a` is no worse than `b` in request latency and throughput per rank, and better by more than `tie` in one."""
    la, lb = (scenario.request_latency(x.ttft_s, x.tpot_s) for x in (a, b))
    ta, tb = a.output_tokens_per_s_per_rank, b.output_tokens_per_s_per_rank
    return la <= lb and ta >= tb and (la * (1 + tie) < lb or ta > tb * (1 + tie))


def judge_process_errors(errors: list[ProcessError], model: ModelSpec, hw: Hardware, fw: FrameworkProfile,
                         pc: ParallelConfig, prec: Precision, wl: Workload, mem_opts: MemoryOptions | None,
                         own: Estimate, estimator: Callable[..., Estimate] | None = None
                         ) -> tuple[list[str], list[str]]:
    """Each ProcessError the configuration has (see there) becomes a common error, naming the configuration the
    analysis prefers and by how much, or a note that it was weighed: (common errors, notes). `estimator`: what
    estimated `own` (None: serving.estimate, as the planner does); given, the planner's configurations are priced
    by it before they are weighed, so an AFD deployment meets the same knobs disaggregated."""
    from solver.plan.solve import plan
    from solver.rank.select import PERF_TIE, pattern_name

    scenario = scenario_of(wl)
    where = f"this workload (concurrency {wl.sequences})"
    found: list[str] = []
    notes: list[str] = []
    present = model_knobs(model)

    def latency(x: Estimate) -> float:
        return scenario.request_latency(x.ttft_s, x.tpot_s)

    for e in errors:
        without = fw.model_copy(update={"rules": [*fw.rules, e.rule(model)]})
        try:
            front = plan(model, hw, prec, without, pc.world_size, scenario, top=1, mem_opts=mem_opts,
                         explain_binding=False, diagnose=False).front
        except ShardplanError as exc:
            notes.append(f"{e.name}: weighed against the planner's analysis of {where}; no configuration "
                           f"without it fits under {fw.name} ({exc}), so the seed's common error does not apply")
            continue
        if estimator is not None:
            from solver.estimate.factors import factors_for

            f = factors_for(hw, fw.efficiency_for(hw))
            front = [replace(p, estimate=estimator(model, hw, p.config, prec, f, wl, mem_opts)) for p in front]
        better = [p for p in front if p.estimate.memory.feasible and beats(p.estimate, own, scenario, PERF_TIE)]
        if not better:
            notes.append(f"{e.name}: weighed against the planner's analysis of {where}; no configuration "
                           f"without it is more than {PERF_TIE:.0%} better, so the seed's common error does not "
                           "apply")
            continue
        p = min(better, key=lambda q: (latency(q.estimate), -q.estimate.output_tokens_per_s_per_rank))
        knobs = nondefault_label({k: v for k, v in p.config.knobs().items() if k in present})
        thr, p_thr = own.output_tokens_per_s_per_rank, p.estimate.output_tokens_per_s_per_rank
        found.append(
            f"{e.name}: {e.why}. The planner's analysis of {where} finds {pattern_name(p.config, model, fw.kvp_splits_attention_weights)} "
            f"({knobs}): request latency {change_pct(latency(p.estimate), latency(own))}, output "
            f"tokens/s per rank {change_pct(p_thr, thr)}" + ("" if own.memory.feasible else ", and it fits in memory"))
    return found, notes
