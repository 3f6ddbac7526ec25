"""The seed's Step 4 output: candidate_a/b/c with parallel_config, estimation, tradeoff, pattern, reason,
reference; plus the binding constraints. Renderers only."""
from __future__ import annotations

from typing import Any

import yaml

from solver.estimate.workload import one_token_note, prefix_hit_note
from solver.plan.solve import PlanResult
from solver.rank.select import Candidate, ordering
from solver.report.digits import rounded
from solver.report.render import fmt_cell
from solver.specs.launch_spec import ONLINE_SPLIT_KEY
from solver.specs.knobs import nondefault_label
from solver.specs.parallel import KNOBS
from solver.specs.scenario import Scenario

GB = 1e9
LETTERS = "abcdefghij"


def own_config(pc, knobs: tuple[str, ...]) -> dict[str, int]:
    """The config's knobs the model has, plus the redundant experts when there are any (a parallel_config
    setting: the engines' EPLB copies, vLLM's eplb_config num_redundant_experts, SGLang's --ep-num-redundant-experts)."""
    out = {k: v for k, v in pc.knobs().items() if k in knobs and (k != "pp_size" or v > 1)}  # as model_view
    if pc.redundant_experts:
        out["redundant_experts"] = pc.redundant_experts
    return out


def estimation(c: Candidate, prompt_len: int | None = None) -> dict[str, Any]:
    """The candidate's figures; `prompt_len`: a prefill-only plan's prompt length, whose useful throughput is
    the prompt tokens (it emits one token per prompt), shown as `estimate` shows it."""
    return estimate_figures(c.planned.estimate, c.planned.batch, c.cross_node, prompt_len, c.planned.sla_edge_from)


def estimate_figures(e, concurrency: int, cross_node: bool | None, prompt_len: int | None = None,
                     sla_edge_from: int | None = None) -> dict[str, Any]:
    """One estimate's `estimation` block, the one home of its keys and rounding: solve's candidates and check's
    estimate print the same keys, so a candidate written by solve and read back by check compares key by key.
    `cross_node`: None where it is not known (check's comparisons), then the key is absent."""
    m = e.memory
    out = {
        "params_per_card_gb": round(m.weights_total / GB, 2),
        "kv_cache_per_card_gb": round(m.cache_total / GB, 2),
        "memory_per_rank_gb": rounded(m.model_bytes / GB, "memory_per_rank_gb"),  # the runtime reserve aside, as the limit counts it
        "memory_limit_gb": rounded(m.limit_bytes / GB, "memory_limit_gb"),  # at the memory's digits
        "memory_feasible": m.feasible,
        **({"cross_node_comm": cross_node} if cross_node is not None else {}),
        "concurrency": concurrency,
        # at an SLA edge: the power of two its concurrency was found from (the sweep's column; absent elsewhere)
        **({"sla_edge_from": sla_edge_from} if sla_edge_from is not None else {}),
        "ttft_ms": rounded(e.ttft_s * 1e3, "ttft_ms") if e.has_ttft else None,  # None: the phase has no such figure
        "tpot_ms": rounded(e.tpot_s * 1e3, "tpot_ms") if e.has_tpot else None,
        "output_tokens_per_s_per_rank": rounded(e.output_tokens_per_s_per_rank, "output_tokens_per_s_per_rank"),
        "output_tokens_per_s": rounded(e.output_tokens_per_s, "output_tokens_per_s"),
        "tokens_per_s_per_user": rounded(e.tokens_per_s_per_user, "tokens_per_s_per_user") if e.has_tpot else None,
    }
    prompt_rate = _prompt_rate(e, prompt_len)
    if prompt_rate is not None:
        out["input_tokens_per_s_per_rank"] = rounded(prompt_rate, "input_tokens_per_s_per_rank")
    return out


def _prompt_rate(e, prompt_len: int | None) -> float | None:
    """A prefill-only plan's prompt tokens/s per rank (it emits one token per prompt of `prompt_len`); None for a
    plan with a TPOT, whose useful rate is its output tokens."""
    return e.output_tokens_per_s_per_rank * prompt_len if prompt_len is not None and not e.has_tpot else None


def table_figures(c: Candidate, prompt_len: int | None = None) -> dict[str, Any]:
    """The candidate's figures unrounded, as `estimate` prints them: a table cell formats its own precision
    (render.fmt_cell), so it must not re-print the YAML's rounding (tok/s/rank to 0.1 shown as 89.30 where the
    same configuration's `estimate` shows 89.27)."""
    e = c.planned.estimate
    rate = _prompt_rate(e, prompt_len)
    return {"concurrency": c.planned.batch, "memory_per_rank_gb": e.memory.model_bytes / GB,
            "memory_feasible": e.memory.feasible,
            "ttft_ms": e.ttft_s * 1e3 if e.has_ttft else None, "tpot_ms": e.tpot_s * 1e3 if e.has_tpot else None,
            "tokens_per_s_per_rank": e.output_tokens_per_s_per_rank if rate is None else rate}


def candidate_dict(c: Candidate, knobs: tuple[str, ...] = KNOBS, replica_knobs: tuple[str, ...] = (),
                   prompt_len: int | None = None) -> dict[str, Any]:
    """One candidate; `knobs`: the model's own (PlanResult.knobs), so no knob of a missing module shows;
    `replica_knobs`: the engine's (FrameworkProfile.replica_knobs: attn_dp_size is then its DP, --dp-size);
    `prompt_len`: a prefill-only plan's prompt length (estimation)."""
    pc = c.planned.config
    knobs_vs = f"differs: {', '.join(c.reference_diff)}" if c.reference_diff else "same knobs"
    r = c.reference_deployment
    ref = (f"{c.reference} ({r.model_name} {r.phase} on {r.world_size} x {r.hardware}; {knobs_vs})" if r
           else f"{c.reference} ({knobs_vs})")
    if c.comparative_testing:
        ref += "; recommended for comparative testing"
    return {
        "rank": c.rank,
        "pattern": c.pattern,
        "reason": c.reason,
        "reference": ref,
        "parallel_config": pc.model_view(knobs, replica_knobs),
        "estimation": estimation(c, prompt_len),
        "tradeoff": c.tradeoff,
    }


def result_dict(result: PlanResult, cands: list[Candidate], launches: list[dict] | None = None,
                replica_knobs: tuple[str, ...] = (), prompt_len: int | None = None,
                deployment: dict[str, Any] | None = None, scenario: Scenario | None = None) -> dict[str, Any]:
    """`launches`: one engine command per candidate (solver.launch), carried as each candidate's `launch`;
    `prompt_len`: a prefill-only plan's prompt length (estimation); `deployment` and `scenario`: what seed_yaml
    writes at the top and as each candidate's `workload`, so the JSON carries what the YAML does."""
    out = [candidate_dict(c, result.knobs, replica_knobs, prompt_len) for c in cands]
    for d, c in zip(out, cands):
        if scenario is not None:
            d["workload"] = candidate_workload(scenario, c.planned.batch)
    for d, launch in zip(out, launches or []):
        d["launch"] = launch
    return {
        **({"deployment": deployment} if deployment else {}),
        "candidates": out,
        "binding_constraints": result.binding,
        "pruned_values": result.pruned,
        "method": result.method,
        "solver_status": result.status,
        "time_limit_note": result.timeout_note(),
        "cut_loop_note": result.cut_note(),
        "concurrency_note": result.range_note,
        "edge_note": result.edge_note,
        # where k copies of a smaller deployment would carry clearly more per rank (plan.copies): absent elsewhere
        **({"copies_note": result.copies_note} if result.copies_note else {}),
        # where #1's own configuration holds more requests and scores better there (plan.config_edge): absent elsewhere
        **({"held_note": result.held_note} if result.held_note else {}),
        # what the answer assumed of the prefix cache: absent at no hit
        **({"prefix_hit_note": hit} if scenario is not None and (hit := prefix_hit_note(scenario.prefix_hit,
                                                                                         scenario.phase)) else {}),
        "input_notes": list(result.input_notes),
        "ordering": ordering(cands),
        "pareto_front": [
            {"parallel_config": own_config(p.config, result.knobs),
             "concurrency": p.batch,
             **({"sla_edge_from": p.sla_edge_from} if p.sla_edge_from is not None else {}),
             "ttft_ms": rounded(p.estimate.ttft_s * 1e3, "ttft_ms") if p.estimate.has_ttft else None,
             "tpot_ms": rounded(p.estimate.tpot_s * 1e3, "tpot_ms") if p.estimate.has_tpot else None,
             "output_tokens_per_s_per_rank": rounded(p.estimate.output_tokens_per_s_per_rank,
                                                             "output_tokens_per_s_per_rank")}
            for p in result.front
        ],
    }


def answer_notes(result: PlanResult, scenario: Scenario) -> list[str]:
    """Every note of a solve's answer, in the order `solve` prints them (its stderr; the JSON keeps each under its
    key, result_dict): the inputs' and the engine's, the search's time limit and cut loop, the concurrency range,
    the SLA edge, what #1's own configuration holds, the copies hint, the prefix cache assumed and what TPOT means
    at OSL 1."""
    return [n for n in (*result.input_notes, result.timeout_note(), result.cut_note(), result.range_note,
                        result.edge_note, result.held_note, result.copies_note,
                        prefix_hit_note(scenario.prefix_hit, scenario.phase),
                        one_token_note(scenario.osl, scenario.phase))
            if n]


def front_lines(result: PlanResult, prompt_len: int | None = None) -> list[str]:
    """The Pareto front as the table's --explain prints it, one point a line (the knobs above 1, as the table's
    column, the concurrency and the figures, written as the table's cells write them, so a point that is a
    candidate reads the same in both, and a small rate keeps its digits: 0.232 tok/s/rank, not 0.2): the "off
    the front" a candidate's score line says is checkable against it, as the YAML's commented pareto_front
    block is. `prompt_len`: a prefill-only plan's prompt length, whose rate is prompt tokens (the table's
    column)."""
    out = []
    for p in result.front:
        e = p.estimate
        prompts = _prompt_rate(e, prompt_len)
        rate = f"{fmt_cell(prompts)} prompt tok/s/rank" if prompts is not None else \
            f"{fmt_cell(e.output_tokens_per_s_per_rank)} tok/s/rank"
        figs = ([f"TTFT {fmt_cell(e.ttft_s * 1e3)} ms"] if e.has_ttft else []) + \
               ([f"TPOT {fmt_cell(e.tpot_s * 1e3)} ms"] if e.has_tpot else []) + [rate]
        edge = f" (edge from {p.sla_edge_from})" if p.sla_edge_from is not None else ""
        out.append(f"  {nondefault_label(own_config(p.config, result.knobs))} at concurrency {p.batch}{edge}: "
                   + ", ".join(figs))
    return out


def binding_line(result: PlanResult, cands: list[Candidate]) -> str:
    """The binding families (PlanResult.binding, found for the planner's best score) and, where the ranking shows
    that candidate below #1 (a tie within the band ordered by closeness to a verified deployment), its row: the
    families are of that configuration at its concurrency, not of #1."""
    said = "; ".join(result.binding) if result.binding else "none"
    best = next((c for c in cands if c.planned.role == "best score"), None)
    of = f" (of #{best.rank}, the best score)" if best is not None and best.rank != 1 else ""
    return f"binding constraints{of}: {said}"


def candidate_workload(scenario: Scenario, batch: int) -> dict[str, Any]:
    """A candidate's workload in the deployment file's keys (`check` / `launch` read it back): serving at its
    concurrency, or the one phase it was planned for at its batch."""
    if scenario.phase == "decode":
        return {"phase": "decode", "batch": batch, "isl": scenario.isl, "osl": scenario.osl}
    hit = {"prefix_hit": scenario.prefix_hit} if scenario.prefix_hit else {}  # the figures assumed it: check reads it
    if scenario.phase == "prefill":
        return {"phase": "prefill", "batch": batch, "seq_len": scenario.isl, **hit}
    return {"isl": scenario.isl, "osl": scenario.osl, "concurrency": batch, **hit}


def seed_yaml(result: PlanResult, cands: list[Candidate], replica_knobs: tuple[str, ...] = (),
              prompt_len: int | None = None, deployment: dict[str, Any] | None = None,
              scenario: Scenario | None = None, fixed_knobs: tuple[str, ...] = ()) -> str:
    """The seed's commented YAML: one block per candidate, DP/EP noted as derived. `deployment` (model,
    hardware, framework, world_size, quant, mtp) goes at the top and `scenario` gives each block its workload,
    so the file is a deployment file: `check` / `launch` read it with --candidate (or with one block kept).
    `fixed_knobs`: the knobs the deployment's framework has no key for (FrameworkProfile.fixed_knobs): they stay
    1 and are not written, since its parallel_config would not know them."""
    out = []
    if deployment:
        out.append("# the deployment these candidates are for: `shardplan check FILE --candidate a` (or `launch`) "
                   "reads it")
        out.append(yaml.safe_dump(deployment, sort_keys=False, default_flow_style=False).rstrip("\n"))
        if deployment.get(ONLINE_SPLIT_KEY):
            out.append("# weights: the runtime splits the checkpoint for each candidate's parallel_config "
                       "(enable_online_split_weight: true), so switching candidates needs no weight conversion")
    for c, letter in zip(cands, LETTERS):
        label = "recommended" if c.rank == 1 else "alternative"
        d = candidate_dict(c, result.knobs, replica_knobs, prompt_len)
        out.append(f"# candidate {letter.upper()} ({label}): {c.pattern}")
        out.append(f"# reason: {c.reason}")
        out.append(f"# reference: {d['reference']}")
        own = {k: v for k, v in own_config(c.planned.config, result.knobs).items() if k not in fixed_knobs}
        body: dict[str, Any] = {"parallel_config": own}
        if scenario is not None:
            body["workload"] = candidate_workload(scenario, c.planned.batch)
        block = {f"candidate_{letter}": {**body, "estimation": d["estimation"], "tradeoff": d["tradeoff"]}}
        text = yaml.safe_dump(block, sort_keys=False)
        pc = c.planned.config
        text = text.replace("    attn_tp_size: ", f"    # attn_dp_size = {pc.attn_dp(replica_knobs)}\n    attn_tp_size: ")
        text = text.replace("    moe_tp_size: ", f"    # moe_ep_size = {pc.moe_ep_size}\n    moe_tp_size: ")
        text = text.replace("    redundant_experts: ", "    # EP divides routed + redundant experts (EPLB copies)\n"
                                                      "    redundant_experts: ")
        out.append(text)
    # where DCP reuses the TP ranks the engine's TP is attn_tp x kvp, so its DP divides by both, and by the CP / SP
    # ranks that decode one replica's batch (ParallelConfig.attn_dp)
    dp = ("world_size // (" + " x ".join(("attn_tp_size", *replica_knobs)) + ")" if replica_knobs
          else "world_size // attn_tp_size")
    out.append(f"# dp_size / ep_size are derived by the framework (attn_dp_size = {dp}, moe_ep_size = "
               "world_size // moe_tp_size, per pipeline stage), not set in YAML")
    absent = [k for k in KNOBS if k not in result.knobs]
    if absent:
        out.append(f"# not knobs of this model (no such module, or o_proj follows attention TP): {', '.join(absent)}")
    unset = [k for k in fixed_knobs if k in result.knobs and k != "pp_size"]  # pp_size is written only above 1
    if unset:
        where = deployment["framework"] if deployment else "the framework"
        out.append(f"# not keys of {where} (fixed at 1): {', '.join(unset)}")
    out.append("# " + binding_line(result, cands))
    out.append(f"# solver status: {result.status}" + (f" ({result.timeout_note()})" if result.timeout_note() else ""))
    out.extend(f"# note: {n}" for n in (*result.input_notes, *(n for n in (
        result.range_note, result.edge_note, result.held_note, result.copies_note) if n)))
    out.append(f"# ordering: {ordering(cands)}")
    for rule, values in result.pruned.items():
        out.append(f"# search space: {rule} removed {', '.join(values)}")
    return "\n".join(out) + "\n"
