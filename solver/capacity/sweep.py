"""Cluster-size sweeps: the Pareto front of every (hardware, cards, scenario, sequence length) combination, one
row per configuration, as a pandas DataFrame (and CSV / JSON / Parquet on disk).

What a sweep holds, for every combination it solves:
- feasible: every configuration of the deployment's Pareto front (request latency vs throughput per rank), each
  realised by the full estimator, as solve's front reads it (plan.deployment_front: the planner's points and
  every scenario kind's candidates none beats, a candidate at its own SLA edge among them), plus any of the
  recommended candidates that is not on the front (the planner fills the top 2-3 with other patterns when the
  front has fewer; those rows have on_front=False).
  `rank` is the position in that combination sorted by output tokens/s per rank, best first; `candidate` is
  the recommendation rank (1 = what `shardplan solve` recommends) or empty.
- infeasible (no configuration fits or meets the SLA): one row with feasible=False, the binding constraint
  families in `binding_constraint` and, in `note`, what binds in the model's terms and the planner's remedy;
  the knob and figure columns are empty.

With prices per card-hour (`prices`, capacity.pricing) every row also carries `usd_per_hour` (its cards) and
`usd_per_million_output_tokens` (at its own output tokens/s), empty where it is infeasible.

Solves are independent, so `jobs > 1` runs them in worker processes, and `executor="ray"|"dask"` on an existing
cluster; rows are put back in task order, so the table is identical to a serial run.
"""
from __future__ import annotations

from solver.catalog import DEFAULT_FRAMEWORK
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterable, Sequence

import pandas as pd

from solver.capacity import executors
from solver.capacity.inputs import parse_cards, parse_scenarios, parse_seq_lens, per_hardware, scenario_for
from solver.capacity.table import mtp_columns, to_frame
from solver.report.digits import rounded
from solver.errors import InfeasibleError, InputError, Remedies, ShardplanError
from solver.plan.deployment_front import undominated
from solver.plan.points import SolverParams
from solver.specs.fitted import UserFactors, active_user_factors, using_user_factors
from solver.specs.parallel import KNOBS, model_knobs
from solver.specs.scenario import Scenario

if TYPE_CHECKING:
    from solver.plan.solve import Planned

GB = 1e9
UNROUNDED = "unrounded"  # a row's key holding its figures before DIGITS' rounding (solve_task)
REMEDIES = "remedies"  # an infeasible row's key: (what binds in the model's terms, the Remedies), not a column


def infeasible_note(head: str | None, remedies: Remedies, where: str = "") -> str:
    """An infeasible row's note: what binds, then the remedies' sentence (`where` qualifies its lead)."""
    return "; ".join(t for t in (head, remedies.text(where)) if t)
PLANNER_FRONT = "planner_front"  # a row's key: the planner put its point on the front (solve_task, share_front)
PLAIN_NOTE = "plain_note"  # a row's key: its note as a row that is no candidate (share_front's copies)

ProgressFn = Callable[[int, int, str], None]


# ----------------------------------------------------------------------------------------------- tasks


@dataclass(frozen=True)
class Task:
    """One solve: the unit a worker process runs."""

    index: int
    model: str
    hardware: str  # what the user gave (catalog name or path)
    hardware_name: str  # canonical
    cards: int
    scenario: Scenario
    scenario_label: str
    framework: str
    weight_dtype: str | None
    moe_weight_dtype: str | None
    kv_dtype: str | None
    method: str
    params: SolverParams
    top: int
    allow_cross_node: bool
    explain_binding: bool
    # the user's factors (--factors, the API's factors=) active when the sweep was built: their content travels
    # with the task, so a worker process, local or on another host, prices as this process does
    factors: UserFactors | None = None

    @property
    def label(self) -> str:
        return f"{self.hardware_name} x{self.cards} {self.scenario_label} {self.scenario.isl}/{self.scenario.osl}"


@dataclass
class SweepPlan:
    """Validated inputs of a sweep and the solves it runs (built before any solve, so bad input fails fast)."""

    model_name: str
    hardware: list[str]
    cards: list[int]
    tasks: list[Task] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # the model's warnings, each device's (specs/notes)


def build_plan(model: str, hardware: str | Sequence[str], cards: str | int | Iterable[int],
               scenarios: Any = None, *, isl: int = 4096, osl: int = 256, seq_lens: Any = None,
               ttft_ms: float | None = None, tpot_ms: float | None = None, concurrency: int | None = None,
               max_concurrency: int | None = None, mtp: int = 0, mtp_accept: float | None = None,
               prefix_hit: float = 0.0, framework: str = DEFAULT_FRAMEWORK,
               weight_dtype: Any = None, moe_weight_dtype: Any = None, kv_dtype: Any = None,
               method: str = "cpsat", params: SolverParams | None = None, top: int = 3,
               allow_cross_node: bool = False, explain_binding: bool = False) -> SweepPlan:
    from solver.entry import refuse_unknown_method, refuse_unlaunchable_kv, refuse_unrunnable_weights
    from solver.estimate.workload import one_token_note, prefix_hit_note
    from solver.specs.framework import load_framework
    from solver.specs.hardware_catalog import load_hardware
    from solver.specs.model_catalog import load_model, model_title
    from solver.specs.notes import context_notes, device_notes
    from solver.specs.precision import resolve_precision

    hw_list = hardware_list(hardware)
    card_list = parse_cards(cards)
    kinds = parse_scenarios(scenarios)
    for flag, v in (("--isl", isl), ("--osl", osl), ("--top", top)):
        if v is None or v < 1:
            raise InputError(flag, f"must be >= 1, got {v}")
    if max_concurrency is not None and max_concurrency < 1:  # None: the Scenario's default range
        raise InputError("--max-concurrency", f"must be >= 1, got {max_concurrency}")
    if concurrency is not None and concurrency < 1:
        raise InputError("--concurrency", f"must be >= 1, got {concurrency}")
    refuse_unknown_method(method)
    if any(isinstance(k, Scenario) for k in kinds):  # it carries its own workload: these would go unread by it
        given = [name for name, v in (("seq_lens", seq_lens), ("ttft_ms", ttft_ms), ("tpot_ms", tpot_ms),
                                      ("concurrency", concurrency), ("max_concurrency", max_concurrency),
                                      ("mtp", mtp or None), ("mtp_accept", mtp_accept),
                                      ("prefix_hit", prefix_hit or None))
                 if v is not None]
        if given:
            raise InputError(given[0], "a Scenario given in scenarios carries its own lengths, SLAs and load; set "
                                       f"{given[0]} in it (or give the scenarios as kinds)")
    lengths = parse_seq_lens(seq_lens, osl) or [(isl, osl)]
    spec = load_model(model)
    hws = [load_hardware(h) for h in hw_list]
    names = [h.name for h in hws]
    if len(set(names)) != len(names):
        raise InputError("--hardware", f"given twice: {', '.join(sorted({n for n in names if names.count(n) > 1}))}")
    fw = load_framework(framework)
    wd = per_hardware(weight_dtype, "--weight-dtype", names)
    mwd = per_hardware(moe_weight_dtype, "--moe-weight-dtype", names)
    kvd = per_hardware(kv_dtype, "--kv-dtype", names)
    for h in hws:  # a KV or weight format the engine cannot run there: said before solving (api.run_solve)
        refuse_unlaunchable_kv(fw, kvd[h.name], model=spec, hw=h)
    notes = [*spec.warnings, *context_notes(spec, max(i + o for i, o in lengths), fw)]
    for h in hws:  # a dtype the hardware lacks is bad input for the whole sweep: say so before solving
        prec = resolve_precision(spec, h, wd[h.name], mwd[h.name], kvd[h.name])
        refuse_unrunnable_weights(fw, prec, spec, h, wd[h.name], mwd[h.name])
        notes += [f"{h.name}: {n}" for n in device_notes(h, prec)]
    params = params or SolverParams()
    overrides = {"ttft_ms": ttft_ms, "tpot_ms": tpot_ms, "concurrency": concurrency, "mtp": mtp,
                 "max_concurrency": max_concurrency, "mtp_accept": mtp_accept, "prefix_hit": prefix_hit}
    out = SweepPlan(model_title(model, spec.name), names, card_list, notes=notes)
    user = active_user_factors()
    for h_arg, h in zip(hw_list, hws):
        for i, o in lengths:
            for w in card_list:
                for k in kinds:
                    sc = scenario_for(k, i, o, **overrides)
                    label = k if isinstance(k, str) else sc.kind
                    if not out.tasks:  # the hit rate assumed, said once (every scenario carries the same)
                        out.notes += filter(None, [prefix_hit_note(sc.prefix_hit, sc.phase)])
                    if (one := one_token_note(sc.osl, sc.phase)) and one not in out.notes:  # a --seq-lens of OSL 1
                        out.notes.append(one)
                    out.tasks.append(Task(len(out.tasks), model, h_arg, h.name, w, sc, label, framework,
                                          wd[h.name], mwd[h.name], kvd[h.name], method, params, top,
                                          allow_cross_node, explain_binding, user))
    combos = [(t.hardware_name, t.cards, t.scenario_label, t.scenario.isl, t.scenario.osl) for t in out.tasks]
    twice = next((c for i, c in enumerate(combos) if c in combos[:i]), None)
    if twice is not None:  # its rows, its candidate 1 and its summary line would mix with the other's
        raise InputError("--scenarios", f"two scenarios label the same rows ({twice[2]} {twice[3]}/{twice[4]}): "
                                        "give each Scenario its own kind or lengths, or sweep them one at a time")
    return out


def input_notes(model: str, hardware: str | Sequence[str], cards: str | int | Iterable[int] | None, *,
                isl: int = 4096, osl: int = 256, seq_lens: Any = None, framework: str = DEFAULT_FRAMEWORK,
                weight_dtype: Any = None, moe_weight_dtype: Any = None, kv_dtype: Any = None) -> list[str]:
    """What reading the inputs notes (the model's warnings, each device's, a sequence past the model's context),
    as build_plan collects them for the aggregated sweep, without solving: the disaggregated paths say the same."""
    from solver.capacity.inputs import DEFAULT_CARD_RANGE

    return build_plan(model, hardware, cards or DEFAULT_CARD_RANGE, isl=isl, osl=osl, seq_lens=seq_lens,
                      framework=framework, weight_dtype=weight_dtype, moe_weight_dtype=moe_weight_dtype,
                      kv_dtype=kv_dtype).notes


def hardware_list(hardware: str | Sequence[str]) -> list[str]:
    items = [hardware] if isinstance(hardware, str) else list(hardware)
    out = [p.strip() for h in items for p in str(h).split(",") if p.strip()]
    if not out:
        raise InputError("--hardware", "give at least one hardware name or YAML path")
    return out


# --------------------------------------------------------------------------------------------- solving


def _base_row(t: Task, model_name: str, placement: str) -> dict[str, Any]:
    return {"hardware": t.hardware_name, "cards": t.cards, "scenario": t.scenario_label, "model": model_name,
            "isl": t.scenario.isl, "osl": t.scenario.osl, "ttft_sla_ms": t.scenario.ttft_ms,
            "tpot_sla_ms": t.scenario.tpot_ms, "prefix_hit": t.scenario.prefix_hit, **mtp_columns(t.scenario),
            "weight_dtype": t.weight_dtype or "", "placement": placement}


def solve_task(t: Task) -> list[dict[str, Any]]:
    """Rows of one combination (runs in a worker process when jobs > 1), priced with the task's user factors.
    Tool errors come back as data so that they cross the process boundary intact."""
    with using_user_factors(t.factors):
        return _solve_task(t)


def _solve_task(t: Task) -> list[dict[str, Any]]:
    from solver.entry import run_solve
    from solver.plan.solve import full_estimate_misses
    from solver.rank.select import pattern_name
    from solver.space.placement import placement_label
    from solver.specs.framework import load_framework
    from solver.specs.hardware_catalog import load_hardware
    from solver.specs.model_catalog import load_model, model_names

    placed = ""  # the nodes as the engine's launch runs them, where not whole nodes (the planner plans them so)
    try:
        spec = load_model(t.model)
        fw = load_framework(t.framework)
        placed = placement_label(load_hardware(t.hardware), fw, t.cards)
        kvp_in_tp = fw.kvp_splits_attention_weights
        result, cands = run_solve(t.model, t.hardware, t.cards, t.scenario, t.framework, t.weight_dtype,
                                  t.moe_weight_dtype, t.kv_dtype, t.method, t.params, t.top, t.allow_cross_node,
                                  explain_binding=t.explain_binding, priced_reasons=False)  # rows carry no reason
    except InfeasibleError as err:
        row = _base_row(t, _model_name(t.model), placed)
        # what binds in the model's terms (the message where there are neither terms nor remedies), then the
        # remedies' sentence; the parts kept apart (REMEDIES) for a reader that qualifies the sentence (recommend)
        head = err.terms if err.remedies or err.terms else str(err)
        row.update(feasible=False, on_front=False, memory_feasible=None,
                   binding_constraint="; ".join(err.binding) or "memory and framework rules combined",
                   note=infeasible_note(head, err.remedies), **{REMEDIES: (head, err.remedies)})
        return [row]
    except ShardplanError as err:
        return [{"__error__": type(err).__name__, "field": getattr(err, "field", ""),
                 "problem": getattr(err, "problem", str(err)), "message": str(err)}]

    cand_rank = {(tuple(c.planned.config.knobs().values()), c.planned.batch): c.rank for c in cands}
    planned = list(result.front) + [c.planned for c in sorted(cands, key=lambda c: c.rank) if not c.planned.on_front]
    sc = t.scenario
    per_request = 1 if sc.phase == "prefill" else sc.osl  # output tokens a request yields
    rows = []
    for p in planned:
        key = (tuple(p.config.knobs().values()), p.batch)
        e = p.estimate
        misses = [f"{m} (full estimate)" for m in full_estimate_misses(e, sc)]
        binding = list(misses)
        if cand_rank.get(key) == 1 and result.binding:
            binding += result.binding  # the families that bind the recommended operating point (explain_binding)
        row = _base_row(t, model_names(t.model, spec.name)[0], placed)
        own = model_knobs(spec)  # no column value for a module the model lacks
        row.update({k: v for k, v in p.config.knobs().items() if k in own})
        row.update(
            attn_dp_size=p.config.attn_dp(fw.replica_knobs),  # the engine's DP: none inside a TP8 -dcp 8 group
            moe_ep_size=p.config.moe_ep_size if "moe_tp_size" in own else None,
            memory_per_rank_gb=rounded(e.memory.model_bytes / GB, "memory_per_rank_gb"),
            ttft_ms=rounded(e.ttft_s * 1e3, "ttft_ms"), tpot_ms=rounded(e.tpot_s * 1e3, "tpot_ms"),
            output_tokens_per_s_per_rank=rounded(e.output_tokens_per_s_per_rank, "output_tokens_per_s_per_rank"),
            output_tokens_per_s=rounded(e.output_tokens_per_s, "output_tokens_per_s"),
            tokens_per_s_per_user=rounded(e.tokens_per_s_per_user, "tokens_per_s_per_user"),
            feasible=not misses, binding_constraint="; ".join(binding),
            concurrency=p.batch, request_latency_ms=rounded(sc.request_latency(e.ttft_s, e.tpot_s) * 1e3,
                                                       "request_latency_ms"),
            requests_per_s=rounded(e.output_tokens_per_s / per_request, "requests_per_s"),
            on_front=p.on_front, candidate=cand_rank.get(key), pattern=pattern_name(p.config, spec, kvp_in_tp),
            memory_feasible=e.memory.feasible,
            note="; ".join(e.memory.notes) if misses else _candidate_note(p, cand_rank.get(key), result.range_note, sc),
            sla_edge_from=p.sla_edge_from,
        )
        # the figures before the file's rounding, for the summary table (which formats its own precision);
        # not a column: to_frame keeps COLUMNS only
        row[UNROUNDED] = {"ttft_ms": e.ttft_s * 1e3, "tpot_ms": e.tpot_s * 1e3,
                          "output_tokens_per_s_per_rank": e.output_tokens_per_s_per_rank,
                          "output_tokens_per_s": e.output_tokens_per_s}
        # what share_front needs to show this point in another scenario's rows (not columns either)
        row[PLANNER_FRONT] = p.on_front
        row[PLAIN_NOTE] = row["note"] if misses else _candidate_note(p, None, result.range_note, sc)
        rows.append(row)
    rank_rows(rows)
    mark_front(rows)
    return rows


def rank_rows(rows: list[dict[str, Any]]) -> None:
    """Sorted by output tokens/s per rank, best first (ties: lower latency, fewer requests, the knobs), and `rank`
    numbered 1..n in that order."""
    rows.sort(key=_rank_key)
    for i, r in enumerate(rows, 1):
        r["rank"] = i


def _rank_key(r: dict[str, Any]) -> tuple:
    return (-r["output_tokens_per_s_per_rank"], r["request_latency_ms"], r["concurrency"],
            tuple(r.get(k) or 0 for k in KNOBS))


def _candidate_note(p: Planned, candidate: int | None, range_note: str | None, scenario: Scenario) -> str:
    """A feasible row's note: the recommended row's concurrency range note, another row at the top of the range
    that it is (its throughput per rank is held down by the range, not by the cards: the front's best row of a
    large cluster often sits there), a row at an SLA edge where its concurrency comes from (in every scenario: the
    edge is a front point whichever row a scenario recommends; a candidate at its own edge, the power it came
    from), and a candidate tied with a front point saying so (on_front marks the front's one configuration per
    point, the same in every scenario: share_front)."""
    from solver.plan.sla_edge import sla_edge_note  # imported late, as full_estimate_misses above
    from solver.space.domains import range_note as top_note

    if candidate == 1:
        notes = [range_note] if range_note else []
    else:
        top = top_note(p.batch, scenario, "this row's concurrency", "throughput may keep growing past it")
        notes = [top] if top else []
    if p.sla_edge_from is not None:
        notes.append(sla_edge_note(p.batch, p.sla_edge_from, scenario))
    if p.ties_front:
        notes.append("tied with a front row: the same request latency and tokens/s per rank (on_front marks the "
                     "front's one configuration per point)")
    return "; ".join(notes)


def dominates(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """a is no worse than b in request latency and throughput per rank, and better in one."""
    la, lb = a["request_latency_ms"], b["request_latency_ms"]
    ta, tb = a["output_tokens_per_s_per_rank"], b["output_tokens_per_s_per_rank"]
    return la <= lb and ta >= tb and (la < lb or ta > tb)


def mark_front(rows: list[dict[str, Any]]) -> None:
    """on_front: on the planner's front AND not dominated by another row once every configuration is re-estimated
    with the full estimator (the planner scores from additive tables; the realised figures can reorder two close
    points). Compared on the rounded figures that are written out, so the file itself satisfies the invariant."""
    ok = [r for r in rows if r["feasible"]]
    for r in rows:
        if r["on_front"]:
            r["on_front"] = bool(r["feasible"]) and not any(dominates(o, r) for o in ok if o is not r)


def _model_name(model: str) -> str:
    from solver.specs.model_catalog import load_model, model_names

    return model_names(model, load_model(model).name)[0]


@dataclass(frozen=True)
class TaskGroup:
    """The solves of one deployment (hardware, cards, lengths): its scenario kinds share the tables and the front
    (solve.plan's cache), so they run one after another in one worker instead of rebuilding them in several."""

    tasks: tuple[Task, ...]

    @property
    def cards(self) -> int:
        return self.tasks[0].cards

    @property
    def label(self) -> str:
        t = self.tasks[0]
        return f"{t.hardware_name} x{t.cards} {t.scenario.isl}/{t.scenario.osl}"


def deployment_groups(tasks: Sequence[Task]) -> list[TaskGroup]:
    """The tasks grouped by deployment, in the order each deployment first appears."""
    groups: dict[tuple, list[Task]] = {}
    for t in tasks:
        groups.setdefault((t.hardware_name, t.cards, t.scenario.isl, t.scenario.osl), []).append(t)
    return [TaskGroup(tuple(g)) for g in groups.values()]


def solve_group(g: TaskGroup) -> list[list[dict[str, Any]]]:
    """Rows of each of the group's tasks, solved in order in this process (a worker's unit when jobs > 1), with
    one front for the deployment (share_front)."""
    per_task = [solve_task(t) for t in g.tasks]
    workloads: dict[str, list[list[dict[str, Any]]]] = {}
    for t, rows in zip(g.tasks, per_task):  # Scenarios given as objects may differ in more than their kind
        workloads.setdefault(workload_key(t.scenario), []).append(rows)
    for same in workloads.values():
        share_front(same)
    return per_task


def workload_key(sc: Scenario) -> str:
    """What a scenario's front depends on: everything but the kind and the weights, which only pick a point."""
    return sc.model_dump_json(exclude={"kind", "weights"})


def _point(r: dict[str, Any]) -> tuple:
    return (*(r.get(k) for k in KNOBS), r["concurrency"])


def share_front(per_task: list[list[dict[str, Any]]]) -> None:
    """One Pareto front per deployment (hardware, cards, lengths), whatever the scenario: the scenario only picks
    the recommended point. A scenario's candidates other than the front's points (a candidate moved to its own SLA
    edge, plan.sla_edge) are points the other scenarios never planned; where one is dominated by no point of the
    deployment it is on the front, so it goes on in every scenario (in the others as a row that is no candidate),
    and a front point one of them dominates leaves it in every scenario. A candidate with exactly the figures of a
    point already on the front stays off it (one configuration per point, its note says it is tied). solve's
    front already holds every kind's candidates (plan.deployment_front), so for the kinds this keeps the front
    as read; it adds what scenarios given their own weights pick. In place; the scenarios' rows ranked again."""
    solved = [rows for rows in per_task if rows and "__error__" not in rows[0] and any(r["feasible"] for r in rows)]
    pool: dict[tuple, dict[str, Any]] = {}
    for rows in solved:
        for r in rows:
            if r["feasible"]:
                pool.setdefault(_point(r), r)
    points = sorted(pool.values(), key=_rank_key)
    front = undominated(points, lambda r: bool(r.get(PLANNER_FRONT)),
                        lambda r: (r["request_latency_ms"], r["output_tokens_per_s_per_rank"]))
    on = {_point(r) for r in front}
    for rows in solved:
        have = {_point(r) for r in rows}
        for r in front:
            if _point(r) not in have:
                rows.append({**r, "scenario": rows[0]["scenario"], "candidate": None, "binding_constraint": "",
                             "note": r[PLAIN_NOTE]})
        for r in rows:
            r["on_front"] = bool(r["feasible"]) and _point(r) in on
        rank_rows(rows)


def run_tasks(tasks: Sequence[Task], jobs: int = 1, progress: ProgressFn | None = None, *,
              executor: str = "local", address: Any = None) -> list[list[dict]]:
    """Rows per task, in task order, whatever runs them (`solver.capacity.executors`), a deployment's tasks in one
    worker; `progress(done, total, label)` counts tasks."""
    groups = deployment_groups(tasks)
    sizes = {g.label: len(g.tasks) for g in groups}
    done = [0]

    def tick(_groups_done: int, _groups: int, label: str) -> None:
        done[0] += sizes[label]
        progress(done[0], len(tasks), label)  # type: ignore[misc]

    per_group = executors.run(solve_group, groups, jobs=jobs, executor=executor, address=address,
                              progress=tick if progress else None)
    rows = {id(t): r for g, results in zip(groups, per_group) for t, r in zip(g.tasks, results)}
    return [rows[id(t)] for t in tasks]


def sweep_rows(results: Iterable[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Flatten the rows of every task; a tool error that a worker returned as data is raised again here."""
    rows: list[dict[str, Any]] = []
    for rs in results:
        for r in rs:
            if "__error__" in r:
                if r["__error__"] == "InputError":
                    raise InputError(r["field"], r["problem"])
                raise ShardplanError(r["message"])
            rows.append(r)
    return rows


def swept_rows(sp: SweepPlan, jobs: int = 1, progress: ProgressFn | None = None, *, executor: str = "local",
               address: Any = None) -> list[dict[str, Any]]:
    """The rows of every task of the plan, each recommended row noting copies of a smaller swept size that carry
    more per rank (capacity.copies)."""
    from solver.capacity.copies import note_copies

    rows = sweep_rows(run_tasks(sp.tasks, jobs, progress, executor=executor, address=address))
    note_copies(rows, {t.hardware_name: t.hardware for t in sp.tasks})
    return rows


def recommended_figures(rows: Iterable[dict[str, Any]]) -> dict[tuple, dict[str, float]]:
    """The unrounded figures of each combination's recommended row (candidate 1), keyed by (hardware, cards,
    scenario, isl, osl): a table formats these, not the file's rounded values (a tok/s/rank of 1.3749 is 1.375 in
    the file, which two decimals print as 1.38)."""
    return {(r["hardware"], r["cards"], r["scenario"], r["isl"], r["osl"]): r[UNROUNDED]
            for r in rows if r.get("candidate") == 1 and UNROUNDED in r}


def sweep(model: str, hardware: str | Sequence[str], cards: str | int | Iterable[int], scenarios: Any = None,
          *, jobs: int = 1, progress: ProgressFn | None = None, executor: str = "local", address: Any = None,
          prices: Any = None, **kwargs: Any) -> pd.DataFrame:
    """The Pareto table of every combination (see the module docstring). Keyword arguments are those of
    `build_plan` (isl, osl, seq_lens, ttft_ms, tpot_ms, framework, weight_dtype, ...). `prices`: a price per
    card-hour for every hardware ({hardware: USD} or HARDWARE=USD items, capacity.pricing): the rows gain
    `usd_per_hour` and `usd_per_million_output_tokens`. The wall time in seconds is in `df.attrs["wall_s"]`;
    what reading the inputs noted in `df.attrs["notes"]`; with prices, the cheapest front row per hardware in
    `df.attrs["cheapest"]` (capacity.pricing.cheapest_notes)."""
    from solver.capacity.pricing import cheapest_notes, price_rows, sweep_prices

    start = time.perf_counter()
    sp = build_plan(model, hardware, cards, scenarios, **kwargs)
    price = sweep_prices(prices, sp.hardware)
    rows = swept_rows(sp, jobs, progress, executor=executor, address=address)
    df = to_frame(rows if price is None else price_rows(rows, price), priced=price is not None)
    df.attrs["wall_s"] = time.perf_counter() - start
    df.attrs["combinations"] = len(sp.tasks)
    df.attrs["notes"] = list(sp.notes)
    df.attrs["cheapest"] = cheapest_notes(df)
    return df
