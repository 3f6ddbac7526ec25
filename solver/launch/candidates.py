"""Launch commands for the planner's candidates: the same emitter `shardplan launch` uses, fed with what the
estimate assumed (the candidate's concurrency, the scenario's longest sequence and MTP, the formats the user
chose)."""
from __future__ import annotations

from typing import Any, Mapping

from solver.errors import InputError
from solver.launch.emit import LaunchInputs, emit_launch, model_len
from solver.rank.select import Candidate
from solver.specs.framework import FrameworkProfile
from solver.specs.hardware import Hardware
from solver.specs.model import ModelSpec
from solver.specs.parallel import ParallelConfig
from solver.specs.scenario import Scenario


def _memory(cand: Candidate):
    """The candidate's estimated memory per rank, None where it carries no estimate (the emitter computes it)."""
    return cand.planned.estimate.memory if cand.planned.estimate is not None else None


def _prefill_tokens(cand: Candidate, scenario: Scenario) -> int:
    """One attention replica's tokens in a prefill-only step: its share of the prompts, each its uncached tokens
    (Workload.prompt_tokens), all priced as one step (estimate.figures: every prompt of a replica at once)."""
    from solver.estimate.workload import Workload
    from solver.plan.disagg import prompts_per_replica

    return prompts_per_replica(cand.planned) * Workload.for_scenario(scenario, 1).prompt_tokens[0]


def candidate_launch(fw: FrameworkProfile, model: ModelSpec, hw: Hardware, cand: Candidate, scenario: Scenario,
                     weight_dtype: str | None = None, moe_weight_dtype: str | None = None,
                     kv_dtype: str | None = None) -> dict[str, Any]:
    """The launch of one candidate; {"error": line} when the profile cannot spell it (a planner/profile
    disagreement the round-trip test guards against, shown rather than hidden)."""
    inputs = LaunchInputs(batch=cand.planned.batch, max_model_len=model_len(scenario.phase, scenario.max_seq_len),
                          mtp=scenario.mtp, weight_dtype=weight_dtype, moe_weight_dtype=moe_weight_dtype,
                          kv_dtype=kv_dtype, memory=_memory(cand),
                          prefill_tokens=_prefill_tokens(cand, scenario) if scenario.phase == "prefill" else 0)
    try:
        return emit_launch(fw, model, hw, cand.planned.config, inputs)
    except InputError as exc:
        return {"engine": fw.name, "error": str(exc)}


def pool_launch(fw: FrameworkProfile, model: ModelSpec, hw: Hardware, cand: Candidate, role: str,
                max_model_len: int, mtp: int = 0, weight_dtype: str | None = None,
                moe_weight_dtype: str | None = None, kv_dtype: str | None = None,
                pools: Mapping[str, ParallelConfig] | None = None, scenario: Scenario | None = None
                ) -> dict[str, Any]:
    """The command of one worker of a disaggregated pool (`role` prefill or decode): the pool's parallel_config
    and batch, with the profile's launch.disagg role and KV-transfer flags (`pools`: both pools' configs by
    role, for a transfer told both layouts); {"error": line} as candidate_launch.
    A prefill worker's running-request cap is the prompts all its attention replicas take in one step, as the
    estimate prices it (plan.disagg.prompts_per_replica: the same share on every replica), and its token budget
    holds them (`scenario`: the prompt's tokens; launch.emit.step_budget)."""
    from solver.plan.disagg import prompts_per_replica

    batch, tokens = cand.planned.batch, 0
    if role == "prefill":
        batch = prompts_per_replica(cand.planned) * cand.planned.config.attn_replicas
        tokens = _prefill_tokens(cand, scenario) if scenario is not None else 0
    inputs = LaunchInputs(batch=batch, max_model_len=max_model_len, mtp=mtp, weight_dtype=weight_dtype,
                          moe_weight_dtype=moe_weight_dtype, kv_dtype=kv_dtype, memory=_memory(cand),
                          prefill_tokens=tokens)
    try:
        return emit_launch(fw, model, hw, cand.planned.config, inputs, role=role, pools=pools)
    except InputError as exc:
        return {"engine": fw.name, "role": role, "error": str(exc)}


def candidate_launches(model: str, hardware: str, framework: str, cands: list[Candidate], scenario: Scenario,
                       weight_dtype: str | None = None, moe_weight_dtype: str | None = None,
                       kv_dtype: str | None = None) -> list[dict[str, Any]]:
    """One launch per candidate, by the names `solve` was given."""
    from solver.specs.framework import load_framework
    from solver.specs.hardware_catalog import load_hardware
    from solver.specs.model_catalog import load_model

    spec, hw, fw = load_model(model), load_hardware(hardware), load_framework(framework)
    return [candidate_launch(fw, spec, hw, c, scenario, weight_dtype, moe_weight_dtype, kv_dtype) for c in cands]


def launch_text(cands: list[Candidate], launches: list[dict[str, Any]]) -> str:
    """`solve --format launch`: each candidate's command as shell text."""
    from solver.launch.shell import render_shell

    out = []
    for c, launch in zip(cands, launches):
        title = f"candidate {c.rank}: {c.pattern} ({launch['engine']}, concurrency {c.planned.batch})"
        out.append(f"# {title}\n# error: {launch['error']}\n" if "error" in launch else render_shell(launch, title))
    return "\n".join(out)
