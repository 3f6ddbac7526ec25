"""Seed Step 4 review of one user-given parallel_config: every violation by class (A model, B hardware,
C framework), the seed's "common errors" that apply, and the weight-handling note."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable

from solver.estimate.compute import factors_for
from solver.estimate.memory import MemoryOptions
from solver.errors import ShardplanError
from solver.estimate.serving import Estimate, Workload, estimate
from solver.space.domains import cross_node_tp, pp_fits_nodes, tp_domain
from solver.specs.framework import FrameworkProfile, Rule
from solver.specs.rule_env import model_env
from solver.specs.hardware import Hardware
from solver.specs.model import ModelSpec
from solver.specs.model_rules import model_problems
from solver.specs.knobs import DERIVED
from solver.specs.parallel import KNOBS, ParallelConfig, model_knobs
from solver.specs.precision import Precision
from solver.specs.scenario import Scenario

# the group sizes a rule can read (knobs and derived DP / EP sizes): what makes two class-A lines one problem
_GROUP_SIZES = frozenset(KNOBS) | frozenset(DERIVED)
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


def hardware_placement(model: ModelSpec, hw: Hardware, pc: ParallelConfig) -> tuple[dict[str, int], list[str]]:
    """The seed's class B placement checks on the hardware (memory aside): TP groups wider than the node /
    scale-up domain, and more experts per rank than the device's dispatch path takes. (the wide TP knobs, one
    line per problem); `check` reports them as violations, `launch` notes them beside the command."""
    # a knob of a missing module is reported once, by absent_knob_problems, not as a TP group
    wide = {k: v for k, v in cross_node_tp(pc, hw).items() if k in model_knobs(model)}
    out = [f"{k} {v} > {tp_domain(hw)} ranks of the node/scale-up domain (cross-node TP)" for k, v in wide.items()]
    if hw.max_experts_per_rank and model.is_moe and pc.moe_ep_size > 1:
        per = pc.expert_slots(model.num_experts) / pc.moe_ep_size  # redundant copies count
        if per > hw.max_experts_per_rank:
            out.append(f"{per:g} experts per rank > {hw.max_experts_per_rank} ({hw.name} dispatch path)")
    return wide, out


def decode_attn_tp_needed(model: ModelSpec, hw: Hardware, fw: FrameworkProfile, pc: ParallelConfig,
                          prec: Precision, f, wl: Workload, mem_opts: MemoryOptions | None,
                          own: Estimate) -> tuple[ParallelConfig, Estimate] | None:
    """The seed's [B] "in the Decode phase, attn_tp is not greater than the necessary value": the smallest
    attention TP (a divisor of this one; the knobs the engine ties to it, dense FFN and the vocabulary / o_proj
    degrees, following where they must) that the engine accepts, that fits, and whose decode step is no slower;
    None when this attention TP is that value."""
    from solver.rank.explain import _side_variants

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
            for v in [alt, *_side_variants(alt, model)]:
                key = tuple(sorted(v.knobs().items()))
                if key in seen:
                    continue
                seen.add(key)
                env = model_env(v.settings(), model, hw.ranks_per_node, world=v.world_size, batch=wl.sequences,
                                mtp=wl.mtp)
                if model_problems(model, v, fw) or fw.check(env, severity="error"):
                    continue
                e = estimate(model, hw, v, prec, f, wl, mem_opts)
                if e.memory.feasible and e.tpot_s <= own.tpot_s:
                    return v, e
    return None


def scenario_of(wl: Workload) -> Scenario:
    """The planning scenario whose workload at its fixed concurrency is `wl` (Workload.for_scenario's inverse):
    a decode step's context is ISL + OSL // 2, so a context of S is ISL = S with one output token."""
    if wl.kind == "serving":
        return Scenario(isl=wl.isl, osl=wl.osl, concurrency=wl.concurrency, mtp=wl.mtp, mtp_accept=wl.mtp_accept)
    return Scenario(phase=wl.kind, isl=wl.seq_len, osl=1, concurrency=wl.batch,
                    mtp=wl.mtp if wl.kind == "decode" else 0, mtp_accept=wl.mtp_accept)


def beats(a: Estimate, b: Estimate, scenario: Scenario, tie: float) -> bool:
    """`a` is no worse than `b` in request latency and throughput per rank, and better by more than `tie` in one."""
    la, lb = (scenario.request_latency(x.ttft_s, x.tpot_s) for x in (a, b))
    ta, tb = a.output_tokens_per_s_per_rank, b.output_tokens_per_s_per_rank
    return la <= lb and ta >= tb and (la * (1 + tie) < lb or ta > tb * (1 + tie))


def judge_process_errors(r: "Review", errors: list[ProcessError], model: ModelSpec, hw: Hardware,
                         fw: FrameworkProfile, pc: ParallelConfig, prec: Precision, wl: Workload,
                         mem_opts: MemoryOptions | None) -> None:
    """Each ProcessError the configuration has (see there) becomes a common error, naming the configuration the
    analysis prefers and by how much, or a note that it was weighed."""
    from solver.plan.solve import plan
    from solver.rank.select import PERF_TIE, pattern_name

    scenario = scenario_of(wl)
    where = f"this workload (concurrency {wl.sequences})"
    own = r.estimate
    present = model_knobs(model)

    def latency(x: Estimate) -> float:
        return scenario.request_latency(x.ttft_s, x.tpot_s)

    for e in errors:
        without = fw.model_copy(update={"rules": [*fw.rules, e.rule(model)]})
        try:
            front = plan(model, hw, prec, without, pc.world_size, scenario, top=1, mem_opts=mem_opts,
                         explain_binding=False, diagnose=False).front
        except ShardplanError as exc:
            r.notes.append(f"{e.name}: weighed against the planner's analysis of {where}; no configuration "
                           f"without it fits under {fw.name} ({exc}), so the seed's common error does not apply")
            continue
        better = [p for p in front if beats(p.estimate, own, scenario, PERF_TIE)]
        if not better:
            r.notes.append(f"{e.name}: weighed against the planner's analysis of {where}; no configuration "
                           f"without it is more than {PERF_TIE:.0%} better, so the seed's common error does not "
                           "apply")
            continue
        p = min(better, key=lambda q: (latency(q.estimate), -q.estimate.output_tokens_per_s_per_rank))
        knobs = " ".join(f"{k.replace('_size', '')}={v}" for k, v in p.config.knobs().items() if k in present and v > 1)
        thr, p_thr = own.output_tokens_per_s_per_rank, p.estimate.output_tokens_per_s_per_rank
        r.common_errors.append(
            f"{e.name}: {e.why}. The planner's analysis of {where} finds {pattern_name(p.config, model)} "
            f"({knobs or 'all 1'}): request latency {latency(p.estimate) / latency(own) - 1:+.0%}, output "
            f"tokens/s per rank {p_thr / thr - 1:+.0%}" + ("" if own.memory.feasible else ", and it fits in memory"))


@dataclass
class Review:
    violations: dict[str, list[str]] = field(default_factory=lambda: {"A": [], "B": [], "C": []})
    warnings: dict[str, list[str]] = field(default_factory=lambda: {"A": [], "B": [], "C": []})
    common_errors: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    estimate: Estimate | None = None
    comparisons: dict[str, Estimate] = field(default_factory=dict)

    @property
    def valid(self) -> bool:
        return not any(self.violations.values())


def review(model: ModelSpec, hw: Hardware, fw: FrameworkProfile, pc: ParallelConfig, prec: Precision,
           wl: Workload, mtp: int = 0, online_split: bool | None = None,
           previous: ParallelConfig | None = None, mem_opts: MemoryOptions | None = None) -> Review:
    r = Review()
    r.violations["A"] += model_problems(model, pc, fw)
    env = model_env(pc.settings(), model, hw.ranks_per_node, world=pc.world_size, batch=wl.sequences, mtp=mtp)
    model_lines = [set(re.findall(r"[a-z_]+", line)) for line in r.violations["A"]]
    for rule in fw.rules:
        if rule.holds(env):
            continue
        cls = rule.id.split(".")[0]
        sizes = rule.names & _GROUP_SIZES
        if cls == "A" and sizes and any(sizes <= words for words in model_lines):
            continue  # the model check already says it, about the same group sizes (heads, experts, o_proj, world)
        target = r.warnings if rule.severity == "warning" else r.violations
        target.setdefault(cls, []).append(f"[{rule.id}] {rule.message}")
    r.violations["C"] += fw.limits(env)

    f = factors_for(hw, fw.efficiency_for(hw))
    if not r.violations["A"]:
        r.estimate = estimate(model, hw, pc, prec, f, wl, mem_opts)
        mem = r.estimate.memory
        if not mem.feasible:
            r.violations["B"].append(f"memory per rank {mem.model_bytes / 1e9:.2f} GB (the runtime reserve aside) "
                                     f"exceeds the limit {mem.limit_bytes / 1e9:.2f} GB = {mem.limit_formula()}")
        elif mem.tight:
            r.warnings["B"].append("weights + KV above 0.8 of capacity (seed 3.2): little room for batch growth")
        if mem.kv_share_of_available > 0.5:
            r.warnings["B"].append("KV cache above 50% of available memory (seed 3.4): consider KVP / CP")
    wide, placement = hardware_placement(model, hw, pc)
    r.violations["B"] += placement

    if pc.pp_size > 1 and pc.world_size % pc.pp_size == 0:
        L, pp = model.num_layers, pc.pp_size
        if L % pp:
            r.warnings["B"].append(f"{L} layers do not divide into pp_size {pp} stages: balanced stages of "
                                   f"{-(-L // pp)} and {L // pp} layers, the slowest sets the pace")
        if not pp_fits_nodes(pc.world_size, pp, hw):
            r.warnings["B"].append(f"a stage of {pc.stage_world} ranks is neither whole nodes nor a part of one "
                                   f"({hw.ranks_per_node} per node): stages share a node boundary")

    if wl.kind == "decode" and pc.attn_tp_size > 1 and r.estimate is not None and r.estimate.memory.feasible:
        need = decode_attn_tp_needed(model, hw, fw, pc, prec, f, wl, mem_opts, r.estimate)
        if need is not None:
            smaller, e = need
            r.warnings["B"].append(
                f"attn_tp_size {pc.attn_tp_size} is more than this decode needs (seed Step 4 [B]): attn_tp_size "
                f"{smaller.attn_tp_size} fits ({e.memory.model_bytes / 1e9:.2f} of {e.memory.limit_bytes / 1e9:.2f} "
                f"GB) and decodes no slower (TPOT {e.tpot_s * 1e3:.3g} vs {r.estimate.tpot_s * 1e3:.3g} ms); the "
                "wider attention TP only adds all-reduce at one token per step")
    # the seed's common errors
    W = pc.world_size
    if wide:
        r.common_errors.append("TP communication crosses nodes: keep tp_size <= ranks per node")
    # the seed's "ignore the tp_size of Embed/LMHead": neither table split, where its memory matters (a large
    # vocabulary and memory binding); one of them split, or memory to spare, is a choice (solve makes it)
    if (model.has_large_vocab and pc.embed_tp_size == pc.lmhead_tp_size == 1 and W > 1 and r.estimate is not None
            and r.estimate.memory.binds):
        mem = r.estimate.memory
        tables = sum(mem.weights_bytes.get(k, 0.0) for k in ("embedding", "lm_head"))
        r.common_errors.append(f"embed/lm_head TP both left at 1 with V = {model.vocab_size:,} > 100K while memory "
                               f"binds ({mem.binds_why()}): the vocabulary tables take {tables / 1e9:.2f} GB "
                               "on every rank; set their TP independently (references use 16)")
    process = [e for e in PROCESS_ERRORS if not e.rule(model).holds(env)]
    if SMALL_MOE_TP_ONLY in process and r.estimate is not None:
        alt = ParallelConfig(**{**pc.model_dump(), "moe_tp_size": 1})
        if alt.expert_slots(model.num_experts) % alt.moe_ep_size == 0:
            r.comparisons["moe_ep"] = estimate(model, hw, alt, prec, f, wl, mem_opts)
    if process and r.estimate is not None:
        judge_process_errors(r, process, model, hw, fw, pc, prec, wl, mem_opts)
    if wl.kind == "decode" and pc.cp_size > 1:
        r.notes.append(f"cp_size {pc.cp_size} splits prompts: this decode step runs the same as cp_size 1 (its ranks "
                       "decode as attention DP); it pays off only where these ranks also prefill long prompts. "
                       "To split one request's KV in decode use kvp_size")
    if previous is not None:
        changed = [k for k in KNOBS if getattr(previous, k) != getattr(pc, k)]
        if changed and online_split is not True:
            r.notes.append(f"{', '.join(changed)} changed: offline-split weights are bound to the old "
                           "parallel_config; re-run weight conversion or set enable_online_split_weight: True")
    elif online_split is False:
        r.notes.append("enable_online_split_weight is False: weights must be converted for this parallel_config")
    return r
