"""The entry points every driver runs (the command line, capacity planning, the Python API): one deployment
solved and ranked (run_solve), disaggregated (run_disagg), and what they share (the verified deployments
offered, the KV formats an engine cannot launch). solver.api re-exports these beside its facades."""
from __future__ import annotations

import shlex
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from solver.catalog import DEFAULT_FRAMEWORK
from solver.errors import InputError
from solver.plan.points import SolverParams
from solver.plan.solve import CORE_CANDIDATES, PlanResult, plan
from solver.rank.select import Candidate, rank_candidates
from solver.space.placement import as_launched
from solver.specs.framework import FrameworkProfile, load_framework
from solver.specs.hardware import Hardware
from solver.specs.hardware_catalog import load_hardware
from solver.specs.limits import PLAN_METHODS
from solver.specs.model_catalog import load_model, resolve_model_file
from solver.specs.notes import engine_notes
from solver.specs.precision import Precision, resolve_precision
from solver.specs.reference import list_references
from solver.specs.scenario import Scenario

if TYPE_CHECKING:
    from solver.report.disagg_view import DisaggReport
    from solver.specs.model import ModelSpec

@lru_cache(maxsize=1)
def _ref_models() -> dict[str, str]:
    """Reference id -> the name its model resolves to (what load_model names it), without parsing the configs."""
    out = {}
    for ref in list_references():
        try:
            out[ref.id] = resolve_model_file(ref.model)[1]
        except Exception:  # noqa: BLE001 - a reference whose model is not in the catalog matches by name only
            out[ref.id] = ref.model
    return out


def run_solve(model: str, hardware: str, cards: int, scenario: Scenario, framework: str = DEFAULT_FRAMEWORK,
              weight_dtype: str | None = None, moe_weight_dtype: str | None = None, kv_dtype: str | None = None,
              method: str = "cpsat", params: SolverParams | None = None, top: int = 3,
              allow_cross_node: bool = False, explain_binding: bool = True,
              references: list | None = None, copies_hint: bool = False,
              diagnose: bool = True, priced_reasons: bool = True) -> tuple[PlanResult, list[Candidate]]:
    """Library entry point shared by the CLI, sweeps and notebooks. `references`: the verified deployments the
    planner may adopt and the ranking measures closeness to (default: every one in references/). `copies_hint`:
    where the answer is bound by what a smaller world lifts, plan copies of smaller deployments and say in
    PlanResult.copies_note when they would carry clearly more per rank (plan.copies; `solve` asks for it), and
    where #1's own configuration holds more requests than the power of two it was planned at and scores better
    there, say so in PlanResult.held_note (plan.config_edge: a few estimates).
    `diagnose` False: no configuration raises without the diagnosis of why. `priced_reasons` False: a departure
    from the seed is named, not priced (a caller that shows no reason, a sweep's rows, skips the estimates)."""
    if cards < 1:
        raise InputError("--cards", f"must be >= 1, got {cards}")
    refuse_unknown_method(method)
    spec = load_model(model)
    hw = load_hardware(hardware)
    fw = load_framework(framework)
    refuse_unlaunchable_kv(fw, kv_dtype, model=spec, hw=hw)
    prec = resolve_precision(spec, hw, weight_dtype, moe_weight_dtype, kv_dtype)
    refuse_unrunnable_weights(fw, prec, spec, hw, weight_dtype, moe_weight_dtype)
    refs = list_references() if references is None else list(references)
    # at least the core candidates, whatever --top asks: the ranking's first is chosen among them
    result = plan(spec, hw, prec, fw, cards, scenario, params, method=method, top=max(top, CORE_CANDIDATES),
                  allow_cross_node=allow_cross_node, explain_binding=explain_binding, diagnose=diagnose,
                  verified=verified_for(spec.name, hw.name, cards, scenario.phase, refs))
    # the engine's notes beside the plan's input notes (once: a remembered plan comes back with them)
    result.input_notes = (*result.input_notes, *(n for n in engine_notes(fw) if n not in result.input_notes))
    cands = rank_candidates(result.candidates, spec, as_launched(hw, fw, cards), scenario, refs, _ref_models(),
                            top=top, kvp_in_tp=fw.kvp_splits_attention_weights,
                            cp_replicates_kv=fw.cp_replicates_kv_cache, fw=fw,
                            prec=prec if priced_reasons else None)
    if copies_hint and cands:
        result.copies_note = _copies_note(model, hardware, cards, scenario, framework, weight_dtype,
                                          moe_weight_dtype, kv_dtype, method, params, allow_cross_node, refs,
                                          hw, fw, result, cands[0])
        result.held_note = _held_note(model, hardware, cards, scenario, framework, weight_dtype, moe_weight_dtype,
                                      kv_dtype, method, allow_cross_node, spec, hw, prec, fw, result, cands[0])
    return result, cands


def _held_note(model: str, hardware: str, cards: int, scenario: Scenario, framework: str,
               weight_dtype: str | None, moe_weight_dtype: str | None, kv_dtype: str | None, method: str,
               allow_cross_node: bool, spec, hw: Hardware, prec: Precision, fw: FrameworkProfile,
               result: PlanResult, first: Candidate) -> str | None:
    """plan.config_edge's note on #1: only for a serving plan whose planner picked the concurrency, #1 at a planned
    power of two (not at an SLA or memory edge, nor at a --max-concurrency between powers), where its own
    configuration holds more requests below the next planned concurrency and scores better there."""
    from solver.plan import config_edge
    from solver.plan.solve import plan_inputs
    from solver.rank import held_note

    p = first.planned
    if (scenario.phase != "serving" or scenario.concurrency is not None or p.sla_edge_from is not None
            or not config_edge.is_power_of_two(p.batch)):
        return None
    upper = next((b for b in result.planned_batches if b > p.batch), None)
    if upper is None:
        return None  # nothing planned above: the range ends here (--max-concurrency), or nothing holds more
    hw_l, f, mem_opts = plan_inputs(spec, hw, fw, cards, scenario)
    edge = config_edge.held_edge(spec, hw_l, p.config, prec, f, fw, scenario, mem_opts, p.batch, upper)
    if edge is None or not held_note.scores_better(scenario, p.estimate, edge.estimate):
        return None
    cmd = solve_command(model, hardware, cards, edge.requests, scenario, framework, weight_dtype, moe_weight_dtype,
                        kv_dtype, method, allow_cross_node)
    return held_note.held_note(edge, p.estimate, cmd)


def solve_command(model: str, hardware: str, cards: int, concurrency: int, scenario: Scenario, framework: str,
                  weight_dtype: str | None, moe_weight_dtype: str | None, kv_dtype: str | None, method: str,
                  allow_cross_node: bool) -> str:
    """The `shardplan solve` line that plans this deployment at a fixed concurrency under the scenario's kind,
    lengths, SLAs, MTP and engine (a value at its default left out)."""
    opts = [("--hardware", hardware), ("--cards", cards), ("--scenario", scenario.kind), ("--isl", scenario.isl),
            ("--osl", scenario.osl), ("--concurrency", concurrency),
            ("--ttft-ms", scenario.ttft_ms), ("--tpot-ms", scenario.tpot_ms),
            ("--mtp", scenario.mtp or None), ("--mtp-accept", scenario.mtp_accept if scenario.mtp else None),
            ("--prefix-hit", scenario.prefix_hit or None),
            ("--framework", framework), ("--weight-dtype", weight_dtype),
            ("--moe-weight-dtype", moe_weight_dtype), ("--kv-dtype", kv_dtype),
            ("--method", method if method != "cpsat" else None)]
    return " ".join(["shardplan solve", shlex.quote(model),
                     *(f"{k} {v:g}" if isinstance(v, float) else f"{k} {shlex.quote(str(v))}"
                       for k, v in opts if v is not None)]
                    + (["--allow-cross-node"] if allow_cross_node else []))


def _copies_note(model: str, hardware: str, cards: int, scenario: Scenario, framework: str,
                 weight_dtype: str | None, moe_weight_dtype: str | None, kv_dtype: str | None, method: str,
                 params: SolverParams | None, allow_cross_node: bool, refs: list, hw: Hardware, fw: FrameworkProfile,
                 result: PlanResult, first: Candidate) -> str | None:
    """plan.copies' note for this answer: nothing planned unless a cause a smaller world lifts shows (a serving
    plan whose planner picks the concurrency: copies split the requests their own way)."""
    from solver.plan import copies

    if scenario.phase != "serving" or scenario.concurrency is not None:
        return None
    placed = as_launched(hw, fw, cards)
    why = copies.triggers(cards, placed, fw, result.binding)
    why += [r for r in copies.attention_held(load_model(model), lambda w: as_launched(hw, fw, w), fw, cards, scenario,
                                             allow_cross_node, first.planned.config) if r not in why]
    if not why:
        return None

    def solve_at(m: int) -> copies.CopyPlan:
        res, got = run_solve(model, hardware, m, scenario, framework, weight_dtype, moe_weight_dtype, kv_dtype,
                             method, params, 1, allow_cross_node, references=refs, diagnose=False)
        c = got[0]
        return copies.CopyPlan(m, c.pattern, c.planned.batch, c.planned.estimate.output_tokens_per_s_per_rank,
                               bool(copies.triggers(m, as_launched(hw, fw, m), fw, res.binding)))

    here = first.planned.estimate.output_tokens_per_s_per_rank
    best = copies.fewest_copies(cards, placed, copies.MARGIN * here, solve_at)
    if best is None:
        return None
    k = cards // best.cards
    # the load the copies would carry together, rounded down so that recommend's k copies carry it
    target = int(k * best.cards * best.per_rank)
    cmd = recommend_command(model, hardware, [best.cards, cards], target, scenario, framework, weight_dtype,
                            moe_weight_dtype, kv_dtype, allow_cross_node)
    return copies.copies_note(cards, hw.name, here, best, why, cmd)


def recommend_command(model: str, hardware: str, sizes: list[int], target: int, scenario: Scenario,
                      framework: str, weight_dtype: str | None, moe_weight_dtype: str | None,
                      kv_dtype: str | None, allow_cross_node: bool) -> str:
    """The `shardplan recommend` line that weighs copies of these sizes for `target` output tokens/s under the
    scenario's lengths, SLAs, MTP and engine (a value at its default left out)."""
    from solver.specs.limits import DEFAULT_MAX_CONCURRENCY

    opts = [("--hardware", hardware), ("--cards", ",".join(str(w) for w in sorted(sizes))),
            ("--target-output-tokens-per-s", target), ("--isl", scenario.isl), ("--osl", scenario.osl),
            ("--ttft-ms", scenario.ttft_ms), ("--tpot-ms", scenario.tpot_ms),
            ("--mtp", scenario.mtp or None), ("--mtp-accept", scenario.mtp_accept if scenario.mtp else None),
            ("--prefix-hit", scenario.prefix_hit or None),
            ("--max-concurrency", scenario.max_concurrency
             if scenario.max_concurrency != DEFAULT_MAX_CONCURRENCY else None),
            ("--framework", framework), ("--weight-dtype", weight_dtype),
            ("--moe-weight-dtype", moe_weight_dtype), ("--kv-dtype", kv_dtype)]
    return " ".join(["shardplan recommend", shlex.quote(model),
                     *(f"{k} {v:g}" if isinstance(v, float) else f"{k} {shlex.quote(str(v))}"
                       for k, v in opts if v is not None)]
                    + (["--allow-cross-node"] if allow_cross_node else []))


def solve_deployment(model: str, hardware: str, cards: int, scenario: Scenario, framework: str = DEFAULT_FRAMEWORK,
                     weight_dtype: str | None = None, moe_weight_dtype: str | None = None,
                     kv_dtype: str | None = None) -> dict[str, Any]:
    """The deployment a solve's candidates are for, as its YAML's header and its JSON's `deployment` write it
    (check and launch read it): the names as given, the dtypes and MTP given (an acceptance rate only where the
    scenario was given one: Scenario.model_fields_set)."""
    from solver.specs.launch_spec import ONLINE_SPLIT_KEY

    quant = {k: v for k, v in (("weights", weight_dtype), ("moe_weights", moe_weight_dtype),
                               ("kv_cache", kv_dtype)) if v is not None}
    out = {"model": model, "hardware": hardware, "framework": framework, "world_size": cards,
           **({"quant": quant} if quant else {}), **({"mtp": scenario.mtp} if scenario.mtp else {}),
           **({"mtp_accept": scenario.mtp_accept} if "mtp_accept" in scenario.model_fields_set else {})}
    fw = load_framework(framework)
    if fw.launch is not None and fw.launch.splits_weights_online():
        out[ONLINE_SPLIT_KEY] = True  # as its launch sets it: check reads the same
    return out


def solve_dict(model: str, hardware: str, cards: int, scenario: Scenario, framework: str, weight_dtype: str | None,
               moe_weight_dtype: str | None, kv_dtype: str | None, result: PlanResult, cands: list[Candidate],
               launches: list[dict] | None = None) -> dict[str, Any]:
    """`solve --format json` of run_solve's answer (report.candidates.result_dict): each candidate's engine
    command (`launches`, or made here), the deployment, each candidate's workload."""
    from solver.launch.candidates import candidate_launches
    from solver.report.candidates import result_dict

    if launches is None:
        launches = candidate_launches(model, hardware, framework, cands, scenario, weight_dtype, moe_weight_dtype,
                                      kv_dtype)
    prompt_len = scenario.isl if scenario.phase == "prefill" else None  # its throughput is prompt tokens
    return result_dict(result, cands, launches, load_framework(framework).replica_knobs, prompt_len,
                       solve_deployment(model, hardware, cards, scenario, framework, weight_dtype, moe_weight_dtype,
                                        kv_dtype), scenario)


def refuse_unknown_method(method: str) -> None:
    """A method the planner does not have is bad input, not the CP-SAT search by default."""
    if method not in PLAN_METHODS:
        raise InputError("--method", f"unknown method {method!r}; known: {', '.join(PLAN_METHODS)}")


def refuse_unlaunchable_kv(fw: FrameworkProfile, kv_dtype: str | None, flag: str = "--kv-dtype",
                           model: ModelSpec | None = None, hw: Hardware | None = None) -> None:
    """A KV-cache format the engine's command cannot ask for is bad input to the planner (exit 2): its plans
    could not be launched (`launch` refuses the same format, FrameworkProfile.kv_dtype_refusal). A name that is no
    number format is refused as such first: no engine's spelling is the problem there. `model`'s checkpoint KV
    scheme the engine refuses to load is refused too (FrameworkProfile.checkpoint_kv_refusal)."""
    if kv_dtype is not None:
        from solver.specs.dtypes import number_format

        number_format(kv_dtype, flag)
    refusal = fw.kv_dtype_refusal(kv_dtype, model, hw)
    if refusal:
        raise InputError(flag, f"{refusal}; a plan under {fw.name} could not be launched with it")
    # a checkpoint KV scheme the engine refuses to load stops it whatever the KV format asked for
    ckpt = fw.checkpoint_kv_refusal(model) if model is not None else None
    if ckpt:
        raise InputError(*ckpt)


def refuse_unrunnable_weights(fw: FrameworkProfile, prec: Precision, model: ModelSpec, hw: Hardware,
                              weight_dtype: str | None = None, moe_weight_dtype: str | None = None) -> None:
    """A weight format the plan would price (`prec`, resolved from the flags and the checkpoint) that the engine
    runs no kernel for on this device is bad input to the planner (exit 2), named by the flag that chose it, else
    by the checkpoint's quantization_config (FrameworkProfile.priced_weight_refusals)."""
    found = fw.priced_weight_refusals(prec, model, hw, chosen_by_flags(weight_dtype, moe_weight_dtype))
    if found:
        raise InputError(*found[0])


def chosen_by_flags(weight_dtype: str | None, moe_weight_dtype: str | None,
                    names: tuple[str, str] = ("--weight-dtype", "--moe-weight-dtype")) -> dict[str, tuple[str, str]]:
    """group -> (the flag, the value typed) for the groups --weight-dtype / --moe-weight-dtype choose
    (resolve_precision: the MoE flag's experts, the weight flag's every other quantized group)."""
    out = {g: (names[0], weight_dtype) for g in ("attention", "dense", "experts")} if weight_dtype else {}
    if moe_weight_dtype:
        out["experts"] = (names[1], moe_weight_dtype)
    return out


def verified_for(model_name: str, hardware: str, cards: int, phase: str, refs) -> list[tuple[str, dict[str, int]]]:
    """(id, knobs) of the verified deployments of this model on this hardware and world size, in this phase
    (an attention-FFN disaggregated one excepted: the planner does not plan AFD)."""
    names = _ref_models()
    return [(r.id, r.knobs) for r in refs if names.get(r.id, r.model) == model_name and r.hardware == hardware
            and r.world_size == cards and r.phase == phase and not r.afd]


def explain_solution(model: str, hardware: str, cards: int, scenario: Scenario, cand: Candidate,
                     framework: str = DEFAULT_FRAMEWORK, weight_dtype: str | None = None,
                     moe_weight_dtype: str | None = None, kv_dtype: str | None = None,
                     candidates: list[Candidate] = ()) -> list[str]:
    """The score of every candidate, and why the seed's main alternative patterns lost to `cand` (numbers from
    the estimator)."""
    from solver.estimate.compute import factors_for
    from solver.estimate.serving import Workload
    from solver.rank.explain import explain

    spec, fw = load_model(model), load_framework(framework)
    hw = as_launched(load_hardware(hardware), fw, cards)  # the nodes as the plan placed them
    prec = resolve_precision(spec, hw, weight_dtype, moe_weight_dtype, kv_dtype)
    f = factors_for(hw, fw.efficiency_for(hw))
    p = cand.planned
    from solver.rank.explain import ahead_by_tie, best_of_planned, concurrency_vs_first

    shown = [(c.pattern, c.planned.estimate, c.planned.role + (f" {c.planned.verified}" if c.planned.verified else "")
              + best_of_planned(scenario, list(candidates), i) + c.planned.front_clause() + concurrency_vs_first(list(candidates), i)
              + ahead_by_tie(scenario, list(candidates), i))
             for i, c in enumerate(candidates)]
    return explain(spec, hw, fw, prec, f, scenario, p.config, p.estimate, p.batch,
                   Workload.for_scenario(scenario, p.batch), cand.pattern, shown)


def _pool_candidate(pool, spec, hw, scenario: Scenario, kvp_in_tp: bool, cp_replicates_kv: bool = False,
                    fw: FrameworkProfile | None = None, prec: Precision | None = None) -> Candidate:
    """A disaggregated pool's configuration in the seed's candidate format, ranked at the pool's own phase; with
    `fw` and `prec` (the planned precision) its departures from the seed are priced as an aggregated
    candidate's are (rank_candidates). Its reference is a verified deployment of the same phase: a published
    prefill instance for the prefill pool, a decode instance for the decode pool (a decode layout says nothing
    of how a prefill pool is cut)."""
    from solver.plan.disagg_pools import phase_scenario

    refs = [r for r in list_references() if r.phase == pool.phase]
    return rank_candidates([pool.planned], spec, hw, phase_scenario(scenario, pool.phase, pool.planned.batch),
                           refs, _ref_models(), kvp_in_tp=kvp_in_tp,
                           cp_replicates_kv=cp_replicates_kv, fw=fw, prec=prec)[0]


def run_disagg(model: str, hardware: str, cards: int, scenario: Scenario, framework: str = DEFAULT_FRAMEWORK,
               weight_dtype: str | None = None, moe_weight_dtype: str | None = None, kv_dtype: str | None = None,
               params: SolverParams | None = None, top: int = 3, allow_cross_node: bool = False,
               compare_aggregated: bool = True, method: str = "cpsat",
               workers: tuple[int | None, int | None] = (None, None)) -> "DisaggReport":
    """`solve --serving disagg` (and sweep / recommend per cluster size): the pools planned (plan.disagg), each
    pool's configuration ranked like an aggregated candidate, the best aggregated plan on the same cards and SLA
    for the comparison; report.disagg_view renders the result. `workers`: the (prefill, decode) worker counts the
    user fixes (plan.disagg.Workers; None: the rate match picks)."""
    from solver.errors import InfeasibleError
    from solver.estimate.disagg import disagg_hit_note
    from solver.launch.candidates import pool_launch
    from solver.plan.disagg import DisaggResult, Workers, plan_disagg
    from solver.report.disagg_view import DisaggReport, PoolView, compare
    from solver.specs.notes import input_notes
    from solver.specs.parallel import model_knobs

    refuse_unknown_method(method)
    spec, hw, fw = load_model(model), load_hardware(hardware), load_framework(framework)
    refuse_unlaunchable_kv(fw, kv_dtype, model=spec, hw=hw)
    prec = resolve_precision(spec, hw, weight_dtype, moe_weight_dtype, kv_dtype)
    refuse_unrunnable_weights(fw, prec, spec, hw, weight_dtype, moe_weight_dtype)
    res: DisaggResult = plan_disagg(spec, hw, prec, fw, cards, scenario, params, allow_cross_node, top=top,
                                    method=method, fixed=Workers(*workers))
    best = res.best

    def view(pool) -> PoolView:
        cand = _pool_candidate(pool, spec, hw, scenario, fw.kvp_splits_attention_weights, fw.cp_replicates_kv_cache,
                               fw.for_role(pool.phase), prec)  # its ties read the rules as its role's worker
        launch = (pool_launch(fw, spec, hw, cand, pool.phase, scenario.max_seq_len, scenario.mtp, weight_dtype,
                              moe_weight_dtype, kv_dtype, configs, scenario) if fw.launch is not None else None)
        return PoolView(pool.phase, pool.workers, cand, launch)

    configs = {p.phase: p.planned.config for p in (best.prefill, best.decode)}  # a command may name both layouts
    pools = (view(best.prefill), view(best.decode))
    agg, agg_err, agg_cards = None, None, None
    tried: dict[int, Candidate] = {}  # the aggregated plans by the cards they are planned on
    copies = 0  # the aggregated plan as copies of a smaller server (none on the cards themselves)
    bound_on_used = None  # what binds one aggregated server on the cards the disaggregated plan uses
    if compare_aggregated:
        # like with like: each side's best within the cards. The aggregated plan on the cards the disaggregated
        # one deploys (its per-rank figures count only those), so a load capped by --max-concurrency /
        # --concurrency is not spread over cards the disaggregated plan leaves idle; and on every card, which the
        # aggregated plan may use as well: the rate match can leave a count no aggregated layout runs well (14
        # H200 as 2 nodes x 7: PP7). The better of the two on the scenario's score (the first on a tie).
        for n in dict.fromkeys((best.cards, cards)):
            try:
                _, cands = run_solve(model, hardware, n, scenario, framework, weight_dtype,
                                     moe_weight_dtype, kv_dtype, method=method, params=params, top=1,
                                     allow_cross_node=allow_cross_node, explain_binding=False)
                if cands:
                    tried[n] = cands[0]
            except InfeasibleError as exc:
                agg_err = str(exc)
                bound_on_used = bound_on_used or (", ".join(exc.binding) if n == best.cards else None)
        if not tried:
            # no one aggregated server on those cards (ATOM's one node on 24 MI355X): copies of a smaller one
            # behind a load balancer, as `recommend` weighs them (plan.copies.copy_sizes: whole nodes or whole
            # shares of one), the fewest that plan; their per-rank figures are one copy's
            from solver.plan.copies import copy_sizes

            for n in copy_sizes(best.cards, as_launched(hw, fw, best.cards)):
                try:
                    _, cands = run_solve(model, hardware, n, scenario, framework, weight_dtype,
                                         moe_weight_dtype, kv_dtype, method=method, params=params, top=1,
                                         allow_cross_node=allow_cross_node, explain_binding=False)
                except InfeasibleError:
                    continue
                if cands:
                    tried[n], copies = cands[0], best.cards // n
                    break
        if tried:
            agg_cards = better_aggregated(tried, scenario)
            agg, agg_err = tried[agg_cards], (bound_on_used if copies else None)
    from solver.specs.model_catalog import model_names

    asked, config = model_names(model, spec.name) if isinstance(model, str) else (spec.name, None)
    return DisaggReport(asked, hw.name, cards, scenario, best, pools, res.alternatives, agg, agg_err,
                        compare(best, agg, scenario, cards, fw.kvp_splits_attention_weights, agg_err,
                                agg_cards if agg is not None else None,
                                tried.get(best.cards) if agg_cards != best.cards else None, copies), res.skipped,
                        [*input_notes(spec, hw, prec, max_len=scenario.max_seq_len, fw=fw),
                         *filter(None, [disagg_hit_note(scenario.prefix_hit)])], model_knobs(spec),
                        fw.kvp_splits_attention_weights, fw.replica_knobs, config,
                        agg_cards if agg is not None else None, copies)


def better_aggregated(plans: dict[int, Candidate], scenario: Scenario) -> int:
    """The card count (a key of `plans`, aggregated plans by the cards they are planned on) whose plan scores best
    on the scenario's score (request latency vs output tokens/s per rank); the first of equal scores."""
    figs = {n: (scenario.request_latency(c.planned.estimate.ttft_s, c.planned.estimate.tpot_s),
                1.0 / c.planned.estimate.output_tokens_per_s_per_rank) for n, c in plans.items()}
    lat0, inv0 = min(f[0] for f in figs.values()), min(f[1] for f in figs.values())
    return min(figs, key=lambda n: scenario.score(*figs[n], lat0, inv0))


# ---------------------------------------------------------------------------------------------- rendering
