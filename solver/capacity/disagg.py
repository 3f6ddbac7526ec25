"""`sweep --serving disagg` and `recommend --serving disagg`: the disaggregated plan (entry.run_disagg)
for every (hardware, cards, scenario, ISL/OSL), as a table, and the fewest cards whose plan carries a load.

Sweep table: one row per plan (the recommended one, rank 1, and its alternatives) or one infeasible row per
combination, in the columns of table.DISAGG_COLUMNS (documented in docs/disagg.md); rank-1 rows also carry the
best aggregated plan's output tokens/s per rank on the same cards (empty when none fits) and the winner.

Recommend weighs copies of a deployment as the aggregated recommend does: for each cluster size (upwards) and each
plan the sweep lists for it (rank 1 and its alternatives, `TOP` of them, so the two answer alike for the same
size), the fewest copies of that plan that carry the load between them (recommend.copies_within, within
`max_copies` and the cards a cluster may have); the answer is the fewest cards in all, ties to fewer copies, then
to the lowest request latency. A size is solved only while one copy of it could still win. Over the hardware it
chooses as the aggregated recommend does (recommend.choose): with a price per card-hour for every hardware that
carries the load, the cheapest per hour, where the cards paid for are the copies' prefill and decode pools' ranks
(`ranks_used`: a card the rate match leaves idle is not deployed); else the fewest cards.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import pandas as pd

from solver.capacity.inputs import (default_cards, make_scenario, parse_cards, parse_scenarios, parse_seq_lens,
                                    per_hardware, scenario_for)
from solver.capacity.pricing import cheapest_notes, costs, parse_prices, price_rows, sweep_prices
from solver.capacity.recommend import (BASIS_LABELS, COST_FIELDS, COUNT_FIELDS, choose, cluster_cap_note,
                                       copies_within, cost_text, most_in_cap, no_fit_note, options_frame, price_note,
                                       shortfall_note)
from solver.capacity.executors import ProgressFn
from solver.capacity.sweep import UNROUNDED, hardware_list, input_notes
from solver.capacity.table import mtp_columns, to_disagg_frame
from solver.catalog import DEFAULT_FRAMEWORK
from solver.errors import InfeasibleError, InputError
from solver.plan.points import SolverParams
from solver.plan.disagg import MIN_DISAGG_CARDS, DisaggPlan, refuse_too_few_cards
from solver.plan.disagg_pools import PlanGroup, planned_together
from solver.report.digits import rounded
from solver.specs.parallel import KNOBS
from solver.specs.scenario import Scenario

COST_KEYS = ("cost_per_hour", "cost_per_million_output_tokens", "cost_per_million_output_tokens_at_capacity")
TOP = 3  # plans per combination: the sweep's default --top, and the plans recommend tests against the load
# DisaggRecommendation.to_frame's columns, the pools' aside (each pool's workers, ranks per worker, the model's
# knobs, attention DP and MoE EP, as the sweep's table names them, table.POOL_COLUMNS): an option's fields
# (`feasible` aside: `met` says it), then whether it is the recommendation
FRAME_FIGURES = ("ttft_ms", "tpot_ms", "output_tokens_per_s", "output_tokens_per_s_per_rank", "input_tokens_per_s",
                 "total_output_tokens_per_s", "headroom", "kv_transfer_ms", "prefill_utilization")
FRAME_COLUMNS = ("hardware", "met", "cards", "copies", "total_cards", "ratio", "ranks_used", "concurrency",
                 *FRAME_FIGURES, "kv_transfer_tier", *COST_FIELDS, "note", "recommended")


def _row(d: DisaggPlan, knobs: tuple[str, ...], replica_knobs: tuple[str, ...] = ()) -> dict[str, Any]:
    """`knobs`: the model's own (parallel.model_knobs); a missing module's column stays empty. Each pool's
    attention DP and MoE EP as the aggregated table gives them (the engine's DP where its KVP reuses TP ranks)."""
    e = d.estimate
    out: dict[str, Any] = {"ratio": d.ratio}
    for pool in (d.prefill, d.decode):
        pc = pool.planned.config
        out[f"{pool.phase}_workers"] = pool.workers
        out[f"{pool.phase}_ranks_per_worker"] = pc.world_size
        out.update({f"{pool.phase}_{k}": getattr(pc, k) for k in KNOBS if k in knobs})
        view = pc.model_view(knobs, replica_knobs)
        out.update({f"{pool.phase}_{k}": view[k] for k in ("attn_dp_size", "moe_ep_size") if k in view})
    out.update(ranks_used=d.cards, concurrency=e.concurrency,
               ttft_ms=rounded(e.ttft_s * 1e3, "ttft_ms"), tpot_ms=rounded(e.tpot_s * 1e3, "tpot_ms"),
               output_tokens_per_s=rounded(e.output_tokens_per_s, "output_tokens_per_s"),
               output_tokens_per_s_per_rank=rounded(e.output_tokens_per_s_per_rank, "output_tokens_per_s_per_rank"),
               input_tokens_per_s=rounded(e.input_tokens_per_s, "input_tokens_per_s"), kv_transfer_ms=round(e.transfer.time_s * 1e3, 3),
               kv_transfer_tier=e.transfer.tier, prefill_utilization=round(e.times.prefill_utilization, 3),
               feasible=True, note="")
    return out


def disagg_cards(cards: str | int | Sequence[int]) -> list[int]:
    """--cards as both disaggregated commands read them: parse_cards' sizes, each of which must hold a worker per
    pool. A smaller size cannot run at all, so it is refused in one line (plan.disagg.refuse_too_few_cards), as
    parse_cards refuses a size under one card, not dropped."""
    sizes = parse_cards(cards)
    refuse_too_few_cards(sizes[0])
    return sizes


def _unsupported(**given: Any) -> None:
    """Options of the aggregated commands the disaggregated path does not implement: refused, not dropped."""
    for flag, value in given.items():
        if value:
            raise InputError(flag, "not available with --serving disagg")


def sweep_disagg(model: str, hardware: Sequence[str], cards: str, scenarios=None, *, isl: int = 4096,
                 osl: int = 256, seq_lens: str | None = None, ttft_ms: float | None = None,
                 tpot_ms: float | None = None, max_concurrency: int | None = None, mtp: int = 0,
                 mtp_accept: float | None = None, prefix_hit: float = 0.0, framework: str = DEFAULT_FRAMEWORK,
                 weight_dtype=None, moe_weight_dtype=None, kv_dtype=None, params: SolverParams | None = None,
                 top: int = TOP, allow_cross_node: bool = False, concurrency: int | None = None,
                 method: str = "cpsat", jobs: int = 1, plot: str | None = None, explain_binding: bool = False,
                 progress: ProgressFn | None = None, prices=None,
                 checked: Callable[[list[str]], None] | None = None,
                 workers: tuple[int | None, int | None] = (None, None)) -> pd.DataFrame:
    """`workers`: the (prefill, decode) worker counts fixed at every size, as solve's (entry.run_disagg; None: the
    plan picks). `prices`: a price per card-hour for every hardware (capacity.pricing.sweep_prices): the rows gain
    `usd_per_hour` (the pools' `ranks_used`, the cards a plan deploys) and `usd_per_million_output_tokens`, and
    `df.attrs["cheapest"]` the cheapest plan per hardware. `checked`: called once the inputs are checked, before
    the first solve, with what reading them noted (the command says those notes there, once, so bad input stays
    one line; the frame carries them in `df.attrs["notes"]`). `progress(done, total, label)` after each
    combination's plan, as the aggregated sweep counts its tasks (sweep.run_tasks)."""
    from solver.entry import run_disagg
    from solver.estimate.disagg import disagg_hit_note
    from solver.specs.hardware_catalog import load_hardware
    from solver.specs.model_catalog import load_model, model_names

    _unsupported(**{"--jobs": jobs != 1, "--plot": plot, "--explain-binding": explain_binding})
    model_name = model_names(model, load_model(model).name)[0]  # the sweep's `model` column, as aggregated rows
    if concurrency is not None and concurrency < 1:
        raise InputError("--concurrency", f"must be >= 1, got {concurrency}")

    hw_names = [load_hardware(h).name for h in hardware_list(hardware)]  # `a,b` as the aggregated sweep reads it
    card_list = disagg_cards(cards)
    kinds = parse_scenarios(scenarios)
    lengths = parse_seq_lens(seq_lens, osl) if seq_lens else [(isl, osl)]
    price = sweep_prices(prices, hw_names)
    dt = {f: per_hardware(v, f, hw_names) for f, v in (("--weight-dtype", weight_dtype),
                                                        ("--moe-weight-dtype", moe_weight_dtype),
                                                        ("--kv-dtype", kv_dtype))}
    # every scenario is built (and a cross-field refusal raised) before the notes are said: bad input is one line
    scenarios_of = {(kind, i, o): scenario_for(kind, i, o, ttft_ms=ttft_ms, tpot_ms=tpot_ms,
                                               max_concurrency=max_concurrency, mtp=mtp, concurrency=concurrency,
                                               mtp_accept=mtp_accept, prefix_hit=prefix_hit) for kind in kinds for i, o in lengths}
    # what reading the inputs noted, as the aggregated sweep's plan carries it (sweep.build_plan): the hit once
    notes = [*input_notes(model, hardware, cards, isl=isl, osl=osl, seq_lens=seq_lens, framework=framework,
                          weight_dtype=weight_dtype, moe_weight_dtype=moe_weight_dtype, kv_dtype=kv_dtype),
             *filter(None, [disagg_hit_note(prefix_hit)])]
    if checked:
        checked(notes)
    rows = []
    combos = [(hw, w, kind, i, o) for hw in hw_names for w in card_list for kind in kinds for i, o in lengths]
    # the kinds and sizes of one hardware and workload share their pools' phase plans (disagg_pools.PlanGroup:
    # a phase plan reads the worker's size, not the cards), each group dropped after its last combination
    left = Counter((hw, i, o) for hw, _, _, i, o in combos)
    groups: dict[tuple, PlanGroup] = {}
    for done, (hw, w, kind, i, o) in enumerate(combos, 1):
        sc = scenarios_of[(kind, i, o)]
        g = (hw, i, o)
        if g not in groups:
            groups[g] = PlanGroup([scenarios_of[(k, i, o)] for k in kinds])
        key = {"hardware": hw, "cards": w, "scenario": sc.kind, "isl": i, "osl": o, "model": model_name,
               "ttft_sla_ms": sc.ttft_ms, "tpot_sla_ms": sc.tpot_ms, "prefix_hit": sc.prefix_hit, **mtp_columns(sc),
               "weight_dtype": dt["--weight-dtype"][hw] or ""}
        try:
            with planned_together(groups[g]):
                rep = run_disagg(model, hw, w, sc, framework, dt["--weight-dtype"][hw],
                                 dt["--moe-weight-dtype"][hw], dt["--kv-dtype"][hw], params, top, allow_cross_node,
                                 method=method, workers=workers)
        except InfeasibleError as exc:
            rows.append({**key, "rank": None, "feasible": False,
                         "binding_constraint": "; ".join(exc.binding), "note": str(exc)})
        else:
            agg = rep.aggregated.planned.estimate.output_tokens_per_s_per_rank if rep.aggregated else None
            for rank, d in enumerate([rep.plan, *rep.alternatives], 1):
                extra = ({"agg_output_tokens_per_s_per_rank": None if agg is None else rounded(agg, "output_tokens_per_s_per_rank"),
                          "winner": rep.comparison.winner} if rank == 1 else {})
                rows.append({**key, "rank": rank, **_row(d, rep.knobs, rep.replica_knobs), **extra})
        left[g] -= 1
        if not left[g]:
            del groups[g]
        if progress:
            progress(done, len(combos), f"{hw} x {w} {sc.kind} {i}/{o}")
    if price is not None:
        rows = price_rows(rows, price, cards_key="ranks_used")
    df = to_disagg_frame(rows, priced=price is not None)
    df.attrs["notes"] = notes  # as the aggregated sweep's frame carries them (sweep.sweep)
    df.attrs["cheapest"] = cheapest_notes(df, front_only=False)
    return df


@dataclass
class DisaggRecommendation:
    model: str
    target_output_tokens_per_s: float
    options: list[dict[str, Any]]  # per hardware: the copies of a plan that carry the load on fewest cards, or why none
    best: dict[str, Any] | None
    basis: str  # as Recommendation.basis: "cost per hour" | "cards" | "only one met" | "none met"
    config: str | None = None  # as Recommendation.config
    prefix_hit: float = 0.0  # the prefix-cache hit every plan assumed (estimate.disagg.disagg_hit_note)
    input_notes: tuple[str, ...] = ()  # what reading the inputs noted (sweep.input_notes), as Recommendation.notes
    max_copies: int | None = None  # the bound on copies per hardware; None: no bound

    @property
    def title(self) -> str:
        return self.model if self.config is None else f"{self.model} (config {self.config})"

    @property
    def notes(self) -> list[str]:
        """What reading the inputs noted (a config field read at its class default, a device's format) and what
        the answer assumed beyond its target: the prefix-cache hit, where one is given."""
        from solver.estimate.disagg import disagg_hit_note

        return [*self.input_notes, *filter(None, [disagg_hit_note(self.prefix_hit)])]

    def as_dict(self) -> dict[str, Any]:
        return {"model": self.model, **({"config": self.config} if self.config else {}), "serving": "disagg",
                "target_output_tokens_per_s": self.target_output_tokens_per_s, "max_copies": self.max_copies,
                "recommended": _record(self.best), "basis": self.basis,
                "options": [_record(o) for o in self.options], **({"notes": self.notes} if self.notes else {})}

    def to_frame(self) -> pd.DataFrame:
        """One row per option, as Recommendation.to_frame: FRAME_COLUMNS (`recommended` last) and before
        `recommended` both pools' columns (empty where an option is not met; none where no option is). No
        options: FRAME_COLUMNS and no row."""
        rows = [{**{k: v for k, v in _record(o).items() if k != "feasible"}, "recommended": o is self.best}
                for o in self.options]
        return options_frame(rows, FRAME_COLUMNS, (*COUNT_FIELDS, "ranks_used"), FRAME_FIGURES,
                             ("ratio", "kv_transfer_tier", "note"))

    def price_note(self) -> str | None:
        return price_note(self.basis, len(self.options) > 1,
                          {o["hardware"]: o["price_per_card_hour"] for o in self.options if o["met"]})

    def render(self, fmt: str) -> str:
        from solver.report.render import dump

        if fmt in ("json", "yaml"):
            return dump(self.as_dict(), fmt).rstrip("\n") + "\n"
        lines = [f"{self.title}: {self.target_output_tokens_per_s:,.0f} output tokens/s, disaggregated"]
        for o in self.options:
            if not o["met"]:
                lines.append(f"  {o['hardware']}: {o['note']}")
                continue
            mark = "*" if o is self.best else " "
            copies = (f"{o['copies']} copies x {o['cards']} cards ({o['total_cards']} in all)" if o["copies"] > 1
                      else f"{o['cards']} cards")
            lines.append(f"{mark} {o['hardware']}: {copies}, {o['ratio']} (prefill {o['prefill_workers']} x "
                         f"{o['prefill_ranks_per_worker']}, decode {o['decode_workers']} x "
                         f"{o['decode_ranks_per_worker']}; {o['ranks_used']} used), "
                         f"{_shown(o, 'output_tokens_per_s'):,.0f} tok/s"
                         + (f" each, {_shown(o, 'total_output_tokens_per_s'):,.0f} together" if o["copies"] > 1 else "")
                         + f", TTFT {_shown(o, 'ttft_ms'):,.0f} ms, "
                         f"TPOT {_shown(o, 'tpot_ms'):.1f} ms, headroom {_shown(o, 'headroom'):.2f}" + (
                             "; " + cost_text(*(_shown(o, k) for k in COST_KEYS))
                             if o["cost_per_hour"] is not None else ""))
        if self.best is not None:
            lines.append(f"recommended ({BASIS_LABELS.get(self.basis, self.basis)}): {self.best['hardware']}")
            note = self.price_note()
            if note:
                lines.append(f"note: {note}")
        lines += [f"note: {n}" for n in self.notes]
        return "\n".join(lines) + "\n"


def recommend_disagg(model: str, hardware: Sequence[str], *, target_output_tokens_per_s: float | None = None,
                     target_requests_per_s: float | None = None, isl: int = 4096, osl: int = 256,
                     ttft_ms: float | None = None, tpot_ms: float | None = None, cards: str | None = None,
                     framework: str = DEFAULT_FRAMEWORK, weight_dtype=None, moe_weight_dtype=None, kv_dtype=None,
                     mtp: int = 0, mtp_accept: float | None = None, prefix_hit: float = 0.0,
                     max_concurrency: int | None = None, allow_cross_node: bool = False,
                     params: SolverParams | None = None, prices: Sequence[str] | None = None,
                     max_copies: int | None = None, progress: Callable[[str], None] | None = None,
                     checked: Callable[[], None] | None = None,
                     workers: tuple[int | None, int | None] = (None, None)) -> DisaggRecommendation:
    """Per hardware, the fewest cards (tried upwards) whose disaggregated plan for a throughput scenario carries
    the target output tokens/s within the SLA; the recommendation over the hardware as the module docstring says
    (`prices`: HARDWARE=PRICE items or a mapping, as parse_prices reads them; `max_copies`: the most copies of
    one deployment, None: no bound; `checked`: called once the inputs are checked, before the first solve;
    `workers`: the (prefill, decode) worker counts fixed at every size tried, as solve's)."""
    from solver.specs.hardware_catalog import load_hardware

    if (target_output_tokens_per_s is None) == (target_requests_per_s is None):
        raise InputError("--target-output-tokens-per-s/--target-requests-per-s", "give exactly one of the two")
    tok_s = float(target_output_tokens_per_s if target_output_tokens_per_s is not None
                  else target_requests_per_s * osl)
    if tok_s <= 0:
        raise InputError("--target-output-tokens-per-s", f"must be > 0, got {tok_s}")
    if max_copies is not None and (isinstance(max_copies, bool) or not isinstance(max_copies, int)
                                   or max_copies < 1):
        raise InputError("--max-copies", f"must be an integer >= 1, got {max_copies!r}")
    hws = [load_hardware(h) for h in hardware_list(hardware)]  # `a,b` as the aggregated recommend reads it
    hw_names = [h.name for h in hws]
    price = parse_prices(prices, hw_names)
    dt = {f: per_hardware(v, f, hw_names) for f, v in (("--weight-dtype", weight_dtype),
                                                        ("--moe-weight-dtype", moe_weight_dtype),
                                                        ("--kv-dtype", kv_dtype))}
    sc = make_scenario(kind="throughput", isl=isl, osl=osl, ttft_ms=ttft_ms, tpot_ms=tpot_ms,
                       max_concurrency=max_concurrency, mtp=mtp, mtp_accept=mtp_accept, prefix_hit=prefix_hit)
    # without --cards, each hardware's own sizes (inputs.default_cards) that hold a worker per pool
    given = disagg_cards(cards) if cards is not None else None
    sizes = {h.name: given if given is not None else [w for w in default_cards(h.scale_up_domain)
                                                      if w >= MIN_DISAGG_CARDS] for h in hws}
    if checked:
        checked()
    options = []
    for hw in hw_names:
        o = _first_that_carries(model, hw, sizes[hw], sc, tok_s, framework, dt["--weight-dtype"][hw],
                                dt["--moe-weight-dtype"][hw], dt["--kv-dtype"][hw], params, allow_cross_node, progress,
                                max_copies, workers)
        options.append(_priced(o, price.get(hw), tok_s))
    best, basis = choose(options, lambda o: o["met"], lambda o: o["cost_per_hour"],
                         lambda o: (o["total_cards"], o["copies"], -o["total_output_tokens_per_s"]))
    from solver.specs.model_catalog import load_model, model_names

    name, config = model_names(model, load_model(model).name)
    said = input_notes(model, hardware, cards, isl=isl, osl=osl, framework=framework, weight_dtype=weight_dtype,
                       moe_weight_dtype=moe_weight_dtype, kv_dtype=kv_dtype)
    return DisaggRecommendation(name, tok_s, options, best, basis, config, sc.prefix_hit, tuple(said), max_copies)


def _unrounded(d: DisaggPlan, tok_s: float, copies: int = 1) -> dict[str, float]:
    """The plan's figures before _row's rounding (`copies` of it together), for the text view (which formats its
    own precision)."""
    e = d.estimate
    return {"ttft_ms": e.ttft_s * 1e3, "tpot_ms": e.tpot_s * 1e3, "output_tokens_per_s": e.output_tokens_per_s,
            "total_output_tokens_per_s": e.output_tokens_per_s * copies,
            "headroom": e.output_tokens_per_s * copies / tok_s}


def _shown(o: dict[str, Any], key: str) -> Any:
    """An option's figure as the text view prints it: unrounded where known."""
    return o.get(UNROUNDED, {}).get(key, o[key])


def _record(o: dict[str, Any] | None) -> dict[str, Any] | None:
    """An option as the JSON and YAML carry it: the rounded figures only."""
    return None if o is None else {k: v for k, v in o.items() if k != UNROUNDED}


def _priced(o: dict[str, Any], price: float | None, tok_s: float) -> dict[str, Any]:
    """The option with its price per card-hour and, where it carries the load and has a price, its costs on the
    copies' pools' ranks (module docstring); None where not known, so every option has the same fields."""
    out = {**o, "price_per_card_hour": price, "cost_per_hour": None, "cost_per_million_output_tokens": None,
           "cost_per_million_output_tokens_at_capacity": None}
    if o["met"] and price is not None:
        paid = o["ranks_used"] * o["copies"]
        out.update(costs(paid, price, tok_s, o["total_output_tokens_per_s"]))
        u = o[UNROUNDED]
        out[UNROUNDED] = {**u, **costs(paid, price, tok_s, u["total_output_tokens_per_s"], None)}
    return out


def _first_that_carries(model: str, hw: str, sizes: list[int], sc: Scenario, tok_s: float, framework: str,
                        weight_dtype, moe_weight_dtype, kv_dtype, params: SolverParams | None,
                        allow_cross_node: bool, progress: Callable[[str], None] | None,
                        max_copies: int | None = None,
                        workers: tuple[int | None, int | None] = (None, None)) -> dict[str, Any]:
    """Of the sizes (increasing) and the plans the sweep lists for each (rank 1 and its alternatives), the copies
    of one that carry the load on the fewest cards in all, ties to fewer copies, then to the lowest request
    latency (as the aggregated recommend). None does: why, as the aggregated says it. `workers`: the worker counts
    fixed at every size (sweep_disagg's)."""
    from solver.entry import run_disagg

    most: tuple[float, int] | None = None  # the most output tokens/s of one copy seen, and on how many cards
    best_in_cap: tuple[float, int, int, float] | None = None  # the most MAX_CARDS carry (recommend.most_in_cap)
    last: InfeasibleError | None = None
    chosen: tuple[tuple, dict[str, Any]] | None = None  # ((total cards, copies, latency, -tok/s), option)
    group = PlanGroup([sc])  # the sizes share their pools' phase plans (a worker's size recurs on more cards)
    for w in sizes:
        if chosen is not None and w > chosen[0][0]:
            break  # one copy of this size or a larger one needs more cards than the answer found
        if progress:
            progress(f"{hw} x {w}")
        try:
            with planned_together(group):
                rep = run_disagg(model, hw, w, sc, framework, weight_dtype, moe_weight_dtype, kv_dtype, params, TOP,
                                 allow_cross_node, compare_aggregated=False, workers=workers)
        except InfeasibleError as exc:
            last = exc
            continue
        for d in [rep.plan, *rep.alternatives]:
            r = _row(d, rep.knobs, rep.replica_knobs)  # on the figures the sweep writes
            one = r["output_tokens_per_s"]
            if most is None or one > most[0]:
                most = (one, w)
            best_in_cap = most_in_cap(best_in_cap, one, w)
            n = copies_within(one, tok_s, w, max_copies)
            if n is None:
                continue
            key = (w * n, n, sc.request_latency(r["ttft_ms"] / 1e3, r["tpot_ms"] / 1e3), -one)
            if chosen is None or key < chosen[0]:
                chosen = (key, {"hardware": hw, "met": True, "cards": w, "copies": n, "total_cards": w * n, **r,
                                "total_output_tokens_per_s": round(one * n, 2),
                                "headroom": round(one * n / tok_s, 3), UNROUNDED: _unrounded(d, tok_s, n)})
    if chosen is not None:
        return chosen[1]
    if most is None:
        note = no_fit_note("disaggregated deployment", sizes[-1], "; ".join(last.binding) if last else "",
                           None, last.remedies if last else None)
    else:
        note = shortfall_note(most[0], most[1], tok_s, sc.has_slas(),
                              max_copies=max_copies)
        if max_copies is None and best_in_cap is not None and best_in_cap[0] < tok_s:
            note += "; " + cluster_cap_note(*best_in_cap, tok_s)
    return {"hardware": hw, "met": False, "note": note}
