"""The fewest cards that carry a load within an SLA, as copies of one deployment, and the configuration; the
cheapest hardware when prices per card-hour are given.

Serving scales out by copies: N engine instances of the same deployment (W cards, one parallel_config each)
behind a load balancer that spreads the requests evenly, so each copy carries target / N. For each hardware the
deployment sizes W (--cards) are tried in increasing order. At each W the planner's whole Pareto front (request
latency vs throughput per rank, SLA constraints enforced) is re-estimated; the fewest copies at W is
N = ceil(target / the most output tokens/s one copy reaches within the SLA), and of the configurations that carry
target / N the one with the lowest request latency is the copy's (it meets its share of the load with the best
user experience; `headroom` says how much load the N copies have to spare). The answer is the fewest cards in all
(N x W), ties broken by copies on one host over copies spanning several (each a multi-host launch), then by fewer
engines (fewer moving parts: N, or N x W where a copy is W whole-model replicas, replicas_per_copy), so one
deployment (N = 1) is chosen wherever it needs no more cards than copies of a smaller one on as few hosts, and
copies of the one-card engine over copies of pure DP replicas of it (the same engines). A size W is
tried only while one copy of it could still win (W below the best total found), so no more sizes are solved than
the first size that carries the load alone. `max_copies` bounds N (1: one deployment, DP inside the
configuration its only scale-out).

The planner tries concurrencies in powers of two up to --max-concurrency. Without one, a count whose most
throughput sits at the top of that range (4,096 by default) and falls short of the load is planned again with the
range four times wider, until it carries the load, its most throughput is below the top (memory, the KV cache or
the SLA stopped it), or the range reaches the boundary cap: fewer cards then carry loads that need more requests
in flight than the default range holds (the option's note says on which count it was widened). A given
--max-concurrency is kept, and an answer at its top says so.

Costs (when a price per card-hour is given): cost per hour = copies x cards x price; cost per million output
tokens at the target load = cost per hour / (target tokens/s x 3600) x 1e6 (what each served token costs, since
the cluster is paid for whether busy or not), and at capacity (the copies' own throughput together).
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any, Callable, Iterable, Mapping, Sequence, TypeVar

import pandas as pd

from solver.catalog import DEFAULT_FRAMEWORK
from solver.capacity.inputs import DEFAULT_SCENARIOS, default_cards, parse_cards
from solver.capacity.pricing import costs, parse_prices
from solver.capacity.sweep import (REMEDIES, UNROUNDED, Task, build_plan, hardware_list, infeasible_note, solve_task,
                                    sweep_rows)
from solver.errors import Change, InputError, Remedies, Remedy, remedies, three_figures
from solver.plan.points import SolverParams
from solver.space.domains import range_note
from solver.specs.limits import DEFAULT_MAX_CONCURRENCY, MAX_CARDS, MAX_CONCURRENCY
from solver.specs.parallel import KNOBS

# an option's price and costs: None without prices (to_frame: NaN in a float column)
COST_FIELDS = ("price_per_card_hour", "cost_per_hour", "cost_per_million_output_tokens",
               "cost_per_million_output_tokens_at_capacity")
# an option's counts: None where it is not met (to_frame: a nullable integer column), as its knobs
COUNT_FIELDS = ("cards", "copies", "total_cards", "concurrency")
WIDEN = 4  # how much wider the concurrency range is planned again where a count falls short at its top


@dataclass
class Option:
    """The answer for one hardware."""

    hardware: str
    met: bool
    cards: int | None = None  # of one copy: the deployment the configuration, placement and launch are of
    copies: int | None = None  # copies of that deployment behind a load balancer, each carrying target / copies
    total_cards: int | None = None  # copies x cards
    placement: str = ""  # the nodes the engine's launch runs the cards on, where not whole nodes ('2 nodes x 6')
    config: dict[str, int] = field(default_factory=dict)  # knobs plus attn_dp_size, moe_ep_size
    pattern: str = ""
    concurrency: int | None = None  # per copy, as every figure below up to memory_per_rank_gb
    copy_load_output_tokens_per_s: float | None = None  # what each copy carries: target / copies
    output_tokens_per_s: float | None = None
    requests_per_s: float | None = None
    total_output_tokens_per_s: float | None = None  # copies x output_tokens_per_s
    headroom: float | None = None  # total throughput / target
    ttft_ms: float | None = None
    tpot_ms: float | None = None
    tokens_per_s_per_user: float | None = None
    memory_per_rank_gb: float | None = None
    price_per_card_hour: float | None = None
    cost_per_hour: float | None = None
    cost_per_million_output_tokens: float | None = None  # at the target load
    cost_per_million_output_tokens_at_capacity: float | None = None
    tried_cards: list[int] = field(default_factory=list)
    note: str = ""
    # the figures above before their rounding, for a table that formats its own precision (not in the JSON)
    unrounded: dict[str, float] = field(default_factory=dict, repr=False)

    def shown(self, name: str) -> Any:
        """The figure `name` as a table prints it: unrounded where known (a headroom of 1.0754 is 1.075 once
        rounded, which two decimals print as 1.07, not 1.08)."""
        return self.unrounded.get(name, getattr(self, name))

    def record(self) -> dict[str, Any]:
        """The option as the JSON and the frame carry it: the rounded figures only."""
        d = asdict(self)
        d.pop("unrounded")
        return d


# Recommendation.to_frame's columns, knobs aside: an Option's fields as its record() carries them (config becomes
# one column per knob, tried_cards stays in the JSON), then whether it is the recommendation
FRAME_COLUMNS = (*(f.name for f in fields(Option) if f.name not in ("config", "tried_cards", "unrounded")),
                 "recommended")


@dataclass
class Recommendation:
    model: str
    target_output_tokens_per_s: float
    target_requests_per_s: float
    isl: int
    osl: int
    ttft_ms: float | None
    tpot_ms: float | None
    options: list[Option]
    best: Option | None
    basis: str  # "cost per hour" | "cards" | "only one met" (of several hardware) | "none met"
    notes: list[str] = field(default_factory=list)  # the sweep plan's input notes (SweepPlan.notes)
    max_copies: int | None = None  # the bound on copies per hardware; None: no bound
    config: str | None = None  # the config `model` reads where its name differs (model_catalog.model_names)

    @property
    def title(self) -> str:
        """The model as a header names it: `llama-3.3-70b (config Meta-Llama-3.1-70B)`."""
        return self.model if self.config is None else f"{self.model} (config {self.config})"

    def to_frame(self) -> pd.DataFrame:
        """One row per option: FRAME_COLUMNS (Option's figures; `recommended` last), the configuration's knobs
        before `recommended` (the model's own, attn_dp_size, moe_ep_size: empty where an option is not met). No
        options: FRAME_COLUMNS and no row."""
        rows = []
        for o in self.options:
            d = o.record()
            cfg = d.pop("config")
            d.pop("tried_cards")
            d.update(cfg)
            d["recommended"] = o is self.best
            rows.append(d)
        return options_frame(rows, FRAME_COLUMNS, COUNT_FIELDS)

    def price_note(self) -> str | None:
        """What the prices given leave open (module-level price_note), as DisaggRecommendation.price_note."""
        return price_note(self.basis, len(self.options) > 1,
                          {o.hardware: o.price_per_card_hour for o in self.options if o.met})

    def as_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            **({"config": self.config} if self.config else {}),  # as estimate's and solve's JSON name it
            "target": {"output_tokens_per_s": self.target_output_tokens_per_s,
                       "requests_per_s": self.target_requests_per_s, "isl": self.isl, "osl": self.osl,
                       "ttft_ms": self.ttft_ms, "tpot_ms": self.tpot_ms},
            "recommended": self.best.hardware if self.best else None,
            "basis": self.basis,
            "max_copies": self.max_copies,
            "options": [o.record() for o in self.options],
            "notes": list(self.notes),
        }


def options_frame(rows: list[dict[str, Any]], columns: Sequence[str], counts: Sequence[str],
                  floats: Sequence[str] = (), strs: Sequence[str] = ()) -> pd.DataFrame:
    """A recommendation's options as a frame (Recommendation.to_frame, DisaggRecommendation.to_frame): `columns`
    in order, `recommended` last, and before it the configuration's columns the rows carry beyond them (the
    knobs: none where no option is met). Typed as the sweep's table: the costs and `floats` float64 (NaN where
    empty, not None in an object column); `counts` and the knobs nullable integers (empty beside an option not
    met, not 1.0); `strs` empty strings where an option has none."""
    frame = pd.DataFrame(rows, columns=None if rows else list(columns))
    knobs = [c for c in frame.columns if c not in columns]
    frame = frame.reindex(columns=[*columns[:-1], *knobs, columns[-1]])
    for c in strs:
        frame[c] = frame[c].map(lambda v: "" if v is None or v is pd.NA or v != v else v).astype(object)
    return frame.astype({**{c: "float64" for c in (*COST_FIELDS, *floats)},
                         **{c: "Int64" for c in (*counts, *knobs)}, "met": bool, "recommended": bool})


T = TypeVar("T")

# what each basis of the choice says in a table
BASIS_LABELS = {"cost per hour": "cheapest per hour", "cards": "fewest cards",
                "only one met": "the only hardware that carries the load"}


def choose(options: Sequence[T], met: Callable[[T], bool], cost_per_hour: Callable[[T], float | None],
           fewest: Callable[[T], tuple]) -> tuple[T | None, str]:
    """The option recommended over the hardware, and the basis: none met; one met of several (no choice made:
    neither cards nor prices picked it); the cheapest per hour where several met and every one has a price (ties
    by `fewest`); else `fewest` (cards first) picks."""
    ok = [o for o in options if met(o)]
    if not ok:
        return None, "none met"
    if len(ok) == 1 and len(options) > 1:
        return ok[0], "only one met"
    if len(ok) > 1 and all(cost_per_hour(o) is not None for o in ok):
        return min(ok, key=lambda o: (cost_per_hour(o), *fewest(o))), "cost per hour"
    return min(ok, key=fewest), "cards"


def cost_text(per_hour: float, per_million: float, per_million_at_capacity: float) -> str:
    return (f"${per_hour:,.2f}/hour, ${per_million:,.3f} per million output tokens at the target load "
            f"(${per_million_at_capacity:,.3f} at capacity)")


def price_note(basis: str, several: bool, met_prices: Mapping[str, float | None]) -> str | None:
    """Where several hardware were given and the fewest cards picked: the hardware that met the load without a
    price (some prices given), or that a price for each would compare cost."""
    if not several or basis != "cards":
        return None
    unpriced = [h for h, p in met_prices.items() if p is None]
    if len(unpriced) < len(met_prices):
        return (f"no --price for {', '.join(unpriced)}, so the answer is the fewest cards, not the cheapest; give "
                f"{' '.join(f'--price {h}=USD_PER_CARD_HOUR' for h in unpriced)} to compare cost")
    return "give --price HARDWARE=PRICE for every hardware to compare cost"


def recommend(model: str, hardware: str | Sequence[str], *, target_output_tokens_per_s: float | None = None,
              target_requests_per_s: float | None = None, isl: int = 4096, osl: int = 256,
              ttft_ms: float | None = None, tpot_ms: float | None = None, prices: Any = None,
              cards: str | Iterable[int] | None = None, framework: str = DEFAULT_FRAMEWORK, weight_dtype: Any = None,
              moe_weight_dtype: Any = None, kv_dtype: Any = None, mtp: int = 0, mtp_accept: float | None = None,
              prefix_hit: float = 0.0, max_concurrency: int | None = None,
              allow_cross_node: bool = False, params: SolverParams | None = None, max_copies: int | None = None,
              progress: Callable[[str], None] | None = None) -> Recommendation:
    """See the module docstring. Exactly one of the two targets; `prices` maps hardware to a price per card-hour;
    `max_concurrency` None widens the default range where a count falls short at its top; `max_copies` None
    leaves the copies of a deployment unbounded (1: one deployment); `cards` None tries each hardware's
    inputs.default_cards."""
    if (target_output_tokens_per_s is None) == (target_requests_per_s is None):
        raise InputError("--target-output-tokens-per-s/--target-requests-per-s", "give exactly one of the two")
    target = target_output_tokens_per_s if target_output_tokens_per_s is not None else target_requests_per_s
    if target is None or not math.isfinite(target) or target <= 0:
        flag = "--target-output-tokens-per-s" if target_output_tokens_per_s is not None else "--target-requests-per-s"
        raise InputError(flag, f"must be > 0, got {target}")
    if osl is None or osl < 1:
        raise InputError("--osl", f"must be >= 1, got {osl}")
    if max_copies is not None and (isinstance(max_copies, bool) or not isinstance(max_copies, int)
                                   or max_copies < 1):
        raise InputError("--max-copies", f"must be an integer >= 1, got {max_copies!r}")
    tok_s = float(target_output_tokens_per_s if target_output_tokens_per_s is not None
                  else target_requests_per_s * osl)
    if cards is None:  # each hardware's own default sizes: the union is planned, each keeps its own
        from solver.specs.hardware_catalog import load_hardware

        own = {hw.name: default_cards(hw.scale_up_domain) for hw in map(load_hardware, hardware_list(hardware))}
        card_list = sorted({w for sizes in own.values() for w in sizes})
    else:
        card_list, own = parse_cards(cards), None
    # one planner task per (hardware, cards); validation of every input happens here, before any solve
    plan = build_plan(model, hardware, card_list, [DEFAULT_SCENARIOS[2]], isl=isl, osl=osl, ttft_ms=ttft_ms,
                      tpot_ms=tpot_ms, max_concurrency=max_concurrency or DEFAULT_MAX_CONCURRENCY, mtp=mtp,
                      mtp_accept=mtp_accept, prefix_hit=prefix_hit,
                      framework=framework,
                      weight_dtype=weight_dtype, moe_weight_dtype=moe_weight_dtype, kv_dtype=kv_dtype,
                      params=params, allow_cross_node=allow_cross_node)
    price = parse_prices(prices, plan.hardware)
    by_hw: dict[str, list[Task]] = {}
    for t in plan.tasks:
        if own is None or t.cards in own[t.hardware_name]:
            by_hw.setdefault(t.hardware_name, []).append(t)
    options = []
    for hw_name, tasks in by_hw.items():
        options.append(_fewest_cards(hw_name, sorted(tasks, key=lambda t: t.cards), tok_s, price.get(hw_name),
                                     progress, widen=max_concurrency is None, max_copies=max_copies))
    best, basis = choose(options, lambda o: o.met, lambda o: o.cost_per_hour,
                         lambda o: (o.total_cards, o.copies, -(o.total_output_tokens_per_s or 0)))
    from solver.specs.model_catalog import load_model, model_names

    name, config = model_names(model, load_model(model).name)
    return Recommendation(name, tok_s, tok_s / osl, isl, osl, ttft_ms, tpot_ms, options, best, basis,
                          plan.notes, max_copies, config)


def _solved(t: Task, tok_s: float, widen: bool, progress: Callable[[str], None] | None
            ) -> tuple[Task, list[dict[str, Any]]]:
    """The task's rows, planned again with a range four times wider while its most throughput falls short at the
    top of the range (`widen`: no --max-concurrency was given); the task the rows are of."""
    while True:
        rows = sweep_rows([solve_task(t)])  # raises a tool error a task returned as data
        ok = [r for r in rows if r["feasible"]]
        top = max(ok, key=lambda r: r["output_tokens_per_s"]) if ok else None
        wider = t.scenario.max_concurrency * WIDEN
        if (not widen or top is None or top["output_tokens_per_s"] >= tok_s or wider > MAX_CONCURRENCY
                or _range_note(t, top) is None):
            return t, rows
        t = replace(t, scenario=t.scenario.model_copy(update={"max_concurrency": wider}))
        if progress:
            progress(f"{t.hardware_name}: {t.cards} cards, concurrency up to {wider:,}")


def copies_needed(most: float, tok_s: float) -> int:
    """The fewest copies of a deployment whose most output tokens/s within the SLA is `most` that carry `tok_s`
    between them, each carrying tok_s / copies (requests spread evenly)."""
    n = max(1, math.ceil(tok_s / most))
    return n - 1 if n > 1 and most * (n - 1) >= tok_s else n  # a quotient a hair above a whole number (2.1 / 0.3)


def copies_within(most: float, tok_s: float, cards: int, max_copies: int | None) -> int | None:
    """copies_needed of a deployment of `cards` cards whose most output tokens/s is `most`, or None where they
    pass the copies allowed (`max_copies`; None: no bound) or the cards a cluster may have in all (MAX_CARDS,
    --cards' own bound)."""
    n = copies_needed(most, tok_s)
    return None if (max_copies is not None and n > max_copies) or cards * n > MAX_CARDS else n


def replicas_per_copy(row: Mapping[str, Any], cards: int) -> int:
    """The whole-model engines one copy of a sweep row's configuration runs: `cards` where nothing is split (every
    knob 1 and no expert parallel: each rank an attention-DP replica holding the whole model, the same engine as
    one card's), else 1 (the ranks serve one model together)."""
    split = any(row.get(k) not in (None, 1) for k in KNOBS) or row.get("moe_ep_size") not in (None, 1)
    return 1 if split else cards


def _range_note(t: Task, row: Mapping[str, Any], what: str = "the best score",
                gain: str = "a larger one may do better") -> str | None:
    """space.range_note for a sweep row: at the top of the range where its concurrency is the cap, or where its
    configuration runs no larger count up to it (an engine's batch rule: DP768 at 3,840 under 4,096)."""
    c = int(row["concurrency"])

    def more(top: int) -> bool:
        from solver.plan.sla_edge import runs_more  # late, as sweep.solve_task imports the planner
        from solver.space.placement import as_launched
        from solver.specs.framework import load_framework
        from solver.specs.hardware_catalog import load_hardware
        from solver.specs.model_catalog import load_model

        fw = load_framework(t.framework)
        if not fw.batch_rules:
            return True
        knobs = {k: int(row[k]) for k in KNOBS if row.get(k) is not None}
        return runs_more(knobs, load_model(t.model), as_launched(load_hardware(t.hardware), fw, t.cards), fw,
                         t.cards, c, top, t.scenario.mtp)
    return range_note(c, t.scenario, what, gain, more)


def _ranks_per_node(hardware: str) -> int:
    """Ranks one host of the hardware (a catalog name or a file, as given) holds: a copy past it launches on
    several hosts."""
    from solver.specs.hardware_catalog import load_hardware

    return load_hardware(hardware).ranks_per_node


def _fewest_cards(hw_name: str, tasks: list[Task], tok_s: float, price: float | None,
                  progress: Callable[[str], None] | None, widen: bool = False,
                  max_copies: int | None = None) -> Option:
    """Of the sizes (increasing), the copies of one that carry the load on the fewest cards in all, ties to fewer
    copies; a size is solved only while one copy of it could still win."""
    opt = Option(hardware=hw_name, met=False, price_per_card_hour=price)
    # tok/s, the task it is of (as solved: its range widened), the concurrency range's note there
    best_seen: tuple[float, Task, str | None] | None = None
    # the most copies of one size carry within MAX_CARDS in all: (tok/s together, copies, cards, tok/s per copy)
    best_in_cap: tuple[float, int, int, float] | None = None
    last_binding, last_remedy = "", None  # the largest infeasible size's binding constraint and the planner's remedy
    last_why: tuple = (None, None)  # its REMEDIES: what binds in the model's terms, and the Remedies
    infeasible: list[tuple[int, str]] = []  # (cards, binding) of the sizes with no feasible configuration
    # total cards, a copy spanning hosts (0 / 1), engines (copies x replicas_per_copy), copies, task, row, range start
    chosen: tuple[int, int, int, int, Task, dict[str, Any], int] | None = None
    node = _ranks_per_node(tasks[0].hardware) if tasks else 1
    for t in tasks:
        if chosen is not None and (t.cards, int(t.cards > node), 1) >= chosen[:3]:
            break  # one copy of this size or a larger one needs as many cards as the answer found, or more
        if progress:
            progress(f"{hw_name}: {t.cards} cards")
        opt.tried_cards.append(t.cards)
        start = t.scenario.max_concurrency
        t, rows = _solved(t, tok_s, widen, progress)
        ok = [r for r in rows if r["feasible"]]
        if not ok:
            last_binding = rows[0]["binding_constraint"] if rows else ""
            last_remedy = rows[0].get("note") if rows else None
            last_why = rows[0].get(REMEDIES, (last_remedy, None)) if rows else (None, None)
            infeasible.append((t.cards, last_binding))
            continue
        top = max(ok, key=lambda r: r["output_tokens_per_s"])
        if best_seen is None or top["output_tokens_per_s"] > best_seen[0]:
            best_seen = (top["output_tokens_per_s"], t, _range_note(t, top, "it"))
        if top["output_tokens_per_s"] < tok_s:
            # this count fell short of the whole load at the top of the concurrency range: with a larger one it
            # may need fewer copies, or carry the load alone
            short = _range_note(t, top, f"{top['output_tokens_per_s']:,.0f} output tokens/s on {_cards(t.cards)}",
                                "a larger one may carry the load on fewer cards")
            opt.note = short or opt.note
        best_in_cap = most_in_cap(best_in_cap, top["output_tokens_per_s"], t.cards)
        n = copies_within(top["output_tokens_per_s"], tok_s, t.cards, max_copies)
        if n is None:
            continue
        meets = [r for r in ok if r["output_tokens_per_s"] * n >= tok_s]
        r = min(meets, key=lambda r: (r["request_latency_ms"], -r["output_tokens_per_s"], r["rank"]))
        engines = n * replicas_per_copy(r, t.cards)
        if chosen is None or (t.cards * n, int(t.cards > node), engines) < chosen[:3]:
            chosen = (t.cards * n, int(t.cards > node), engines, n, t, r, start)
    if chosen is not None:
        total, _, _, n, t, r, start = chosen
        opt = _met(opt, total, n, t, r, start, tok_s, price)
        if t.cards > 1 and replicas_per_copy(r, t.cards) == t.cards:  # fewer cards than the one-card copies
            same = (f"each copy's {t.cards} cards are {t.cards} whole-model replicas (nothing split): the same "
                    f"engines as {n * t.cards} one-card copies, planned here at {opt.concurrency} requests per copy")
            opt.note = "; ".join(part for part in (opt.note, same) if part)
        return opt
    largest = tasks[-1].cards if tasks else 0
    if best_seen is None:
        opt.note = no_fit_note("configuration", largest, last_binding, *last_why)
    else:
        sc = tasks[-1].scenario
        # more cards help only where the largest size tried had a configuration
        larger = infeasible if infeasible and infeasible[-1][0] == largest else []
        bigger = (None if best_seen[2] or larger else
                  _larger_size(tasks[-1], best_seen[0] / best_seen[1].cards, tok_s, widen, progress, max_copies))
        looser = (_looser_sla(best_seen[1], tok_s, widen, progress, max_copies)
                  if sc.has_slas() and not best_seen[2] and not larger else None)
        opt.note = shortfall_note(best_seen[0], best_seen[1].cards, tok_s, sc.has_slas(), best_seen[2], larger,
                                  _untried(*last_why, opt.tried_cards, largest) if larger else None, max_copies,
                                  bigger, looser)
        if max_copies is None and best_in_cap is not None and best_in_cap[0] < tok_s:
            opt.note += "; " + cluster_cap_note(*best_in_cap, tok_s)
    return opt


def _looser_sla(t: Task, tok_s: float, widen: bool, progress: Callable[[str], None] | None,
                max_copies: int | None) -> Remedy | str | None:
    """The SLA that binds at the best size `t` and the least value of it at which that size's copies (within
    --max-copies and the cluster cap) carry `tok_s`: each given SLA set aside alone (the other held), then all
    together, the size planned again (its range widened as the sizes were); of the planner's answers that carry
    the load, the least figure of the SLA set aside, rounded up (a cap the rerun passes). Where none carries it,
    the most the size reaches with the SLAs aside; None where it already reaches no more without them."""
    from solver.plan.memory_remedies import SLA_FLAGS

    # the copies allowed: --max-copies within the cluster cap, else the cap's
    copies = max(1, min(max_copies if max_copies is not None else MAX_CARDS, MAX_CARDS // t.cards))
    need = tok_s / copies
    given = [f for f in SLA_FLAGS.values() if getattr(t.scenario, f.field) is not None]
    sets = [[f] for f in given] + ([given] if len(given) > 1 else [])
    most = 0.0
    for aside in sets:
        task = replace(t, scenario=t.scenario.model_copy(update={f.field: None for f in aside}))
        _, rows = _solved(task, need, widen, progress)
        ok = [r for r in rows if r["feasible"]]
        most = max([most, *(r["output_tokens_per_s"] for r in ok)])
        carry = [r for r in ok if r["output_tokens_per_s"] >= need]
        if not carry:
            continue
        r = min(carry, key=lambda r: (sum(r[g.field] for g in aside), r["request_latency_ms"]))
        # the rows sample the concurrency: the least caps that carry it lie at or below the row's figures
        r, found = _least_caps(t, {g.field: (float(getattr(t.scenario, g.field)), float(r[g.field])) for g in aside},
                               r, need, widen, progress)
        caps = {g: three_figures(found[g.field], up=True) for g in aside}
        n = copies_needed(r["output_tokens_per_s"], tok_s)
        held = [g.name for g in given if g not in aside]
        return Remedy(", ".join(f"{g.flag} {cap}" for g, cap in caps.items())
                      + f" (the {' and '.join(g.name for g in aside)} SLA{'s bind' if len(aside) > 1 else ' binds'} "
                      f"on {_cards(t.cards)}: at "
                      f"{', '.join(f'{g.name} {cap} ms' for g, cap in caps.items())}"
                      + (f", {' and '.join(held)} held," if held else "")
                      + f" {_copies(n)} of {_cards(t.cards)} {_carry(n)} "
                      f"{n * r['output_tokens_per_s']:,.0f} output tokens/s at concurrency {int(r['concurrency']):,}:"
                      " the planner found it there)",
                      tuple(Change(g.flag, float(cap.replace(",", ""))) for g, cap in caps.items()))
    if most <= 0:
        return None
    return (f"no looser SLA carries it on {_cards(t.cards)}: with the SLAs aside, {_copies(copies)} of "
            f"{_cards(t.cards)} {_carry(copies)} at most {copies * most:,.0f} output tokens/s")


LOOSER_PROBES = 8  # _least_caps' reruns of the size: the caps to within 1/2**8 of their span (given to found)


def _least_caps(t: Task, spans: dict[str, tuple[float, float]], found: dict[str, Any], need: float, widen: bool,
                progress: Callable[[str], None] | None) -> tuple[dict[str, Any], dict[str, float]]:
    """(the row, the caps) of the least SLA caps at which the size `t`, rerun under them, carries `need` per copy:
    each SLA field's cap moved the same fraction of its span (given, which falls short, to the figure of `found`,
    a row with those SLAs aside that carries it), the fraction bisected (the most tok/s within caps grows with
    them). The caps quoted are ones a rerun met, not a row's figures (the SLA edge a rerun plans is its own);
    where no probe meets it, the row's figures."""
    def caps_at(x: float) -> dict[str, float]:
        return {f: lo + x * (hi - lo) for f, (lo, hi) in spans.items()}

    lo, hi, best = 0.0, 1.0, found
    for _ in range(LOOSER_PROBES):
        x = (lo + hi) / 2
        _, rows = _solved(replace(t, scenario=t.scenario.model_copy(update=caps_at(x))), need, widen, progress)
        carry = [r for r in rows if r["feasible"] and r["output_tokens_per_s"] >= need]
        if carry:
            best, hi = max(carry, key=lambda r: r["output_tokens_per_s"]), x
        else:
            lo = x
    return best, caps_at(hi)


def _untried(head: str | None, found: Remedies | None, tried: Sequence[int], largest: int) -> str | None:
    """The planner's note on the largest size tried, which has no configuration, with its remedies for a
    configuration there qualified as such (not for the load) and those that only name a size already tried left
    out (gemma-3-27b on 16 MI325X: '8 cards fit', where 8 cards were tried and fell short)."""
    if found is None:
        return head
    # a size tried is answered in the note itself (with whatever else the remedy sets aside, as an SLA)
    kept = tuple(r for r in found.options
                 if not r.ways or not all(any(c.flag == "--cards" and c.value in tried for c in w) for w in r.ways))
    return infeasible_note(head, Remedies(kept, found.lead),
                           f" (a configuration on {largest} cards, the load target aside)") or None


def _larger_size(t: Task, per_card: float, tok_s: float, widen: bool, progress: Callable[[str], None] | None,
                 max_copies: int | None) -> tuple[int, int, float] | None:
    """(cards, copies, output tokens/s per copy): a deployment size past the largest tried (`t`'s) whose copies,
    within `max_copies` and the cluster cap, carry the load, by the search the planner's remedies use for more
    cards: the sizes memory_remedies.remedy_worlds offers above it, in increasing order, screened by the cards that
    the best throughput per card seen (`per_card`) needs for the load, at most REMEDY_PLANS of them planned (each
    a sweep solve, as every size tried); None where none of those carries it (then more cards name no value)."""
    from solver.plan.memory_remedies import REMEDY_PLANS, remedy_worlds  # late, as sweep.solve_task imports them
    from solver.specs.framework import load_framework
    from solver.specs.hardware_catalog import load_hardware
    from solver.specs.model_catalog import load_model

    sizes = sorted(w for w in remedy_worlds(t.cards, load_model(t.model), load_hardware(t.hardware),
                                            load_framework(t.framework)) if w > t.cards)
    # a size whose copies allowed hold fewer cards than the load needs at the best rate per card seen is passed
    screened = [w for w in sizes if w * (max_copies or MAX_CARDS // w) * per_card >= tok_s]
    for w in screened[:REMEDY_PLANS]:
        if progress:
            progress(f"{t.hardware_name}: {w} cards (a larger size for the load)")
        _, rows = _solved(replace(t, cards=w), tok_s, widen, progress)
        ok = [r["output_tokens_per_s"] for r in rows if r["feasible"]]
        n = copies_within(max(ok), tok_s, w, max_copies) if ok else None
        if n is not None:
            return w, n, max(ok)
    return None


def _met(opt: Option, total: int, n: int, t: Task, r: dict[str, Any], start: int, tok_s: float,
         price: float | None) -> Option:
    """`opt` filled with n copies of the sweep row `r` (of task `t`, whose range started at `start`)."""
    opt.met = True
    opt.cards, opt.copies, opt.total_cards = t.cards, n, total
    opt.placement = r.get("placement") or ""
    # the model's own knobs only: a sweep row leaves a missing module's knob empty
    opt.config = {**{k: int(r[k]) for k in KNOBS if r.get(k) is not None},
                  "attn_dp_size": int(r["attn_dp_size"]),
                  **({"moe_ep_size": int(r["moe_ep_size"])} if r.get("moe_ep_size") is not None else {})}
    opt.pattern = r["pattern"]
    opt.concurrency = int(r["concurrency"])
    opt.copy_load_output_tokens_per_s = round(tok_s / n, 1)
    opt.output_tokens_per_s = r["output_tokens_per_s"]
    opt.total_output_tokens_per_s = round(r["output_tokens_per_s"] * n, 2)  # as the row's own figure
    # _solved widened the range: said where one copy carries the load there, or a copy runs past the default top
    if t.scenario.max_concurrency > start and not opt.note and (n == 1 or opt.concurrency > start):
        opt.note = (f"planned up to {t.scenario.max_concurrency:,} requests in flight on {_cards(t.cards)}: "
                    f"at the default range's top ({start:,}) it fell short of the load")
    # a copy at an SLA edge says why its concurrency is not a power of two (the row's sla_edge_from)
    if not pd.isna(r.get("sla_edge_from")):  # None, NaN or NA: not at an edge
        from solver.plan.sla_edge import sla_edge_note  # late, as sweep.solve_task imports the planner
        edge = sla_edge_note(opt.concurrency, int(r["sla_edge_from"]), t.scenario)
        opt.note = "; ".join(part for part in (opt.note, edge) if part)
    opt.requests_per_s = r["requests_per_s"]
    opt.headroom = round(r["output_tokens_per_s"] * n / tok_s, 3)
    opt.ttft_ms, opt.tpot_ms = r["ttft_ms"], r["tpot_ms"]
    opt.tokens_per_s_per_user = r["tokens_per_s_per_user"]
    opt.memory_per_rank_gb = r["memory_per_rank_gb"]
    if price is not None:
        for k, v in costs(total, price, tok_s, r["output_tokens_per_s"] * n).items():
            setattr(opt, k, v)
    if UNROUNDED in r:
        u = r[UNROUNDED]
        opt.unrounded = {"ttft_ms": u["ttft_ms"], "tpot_ms": u["tpot_ms"],
                         "output_tokens_per_s": u["output_tokens_per_s"],
                         "total_output_tokens_per_s": u["output_tokens_per_s"] * n,
                         "headroom": u["output_tokens_per_s"] * n / tok_s,
                         **(costs(total, price, tok_s, u["output_tokens_per_s"] * n, None) if price is not None
                            else {})}
    return opt


def no_fit_note(what: str, largest: int, binding: str, head: str | None = None,
                remedies: Remedies | None = None) -> str:
    """No size tried has a `what` (configuration, disaggregated deployment) that fits and meets the SLA: the
    constraint that binds on the largest (`binding`; `head`: in the model's terms), and what would give one there
    when known: the planner's remedies are for a {what} on those cards, not for the load, which its rerun may
    still fall short of (the sentence says so)."""
    remedy = infeasible_note(head, remedies or Remedies(), f" (a {what} on {largest} cards, the load target aside)")
    return (f"no {what} fits or meets the SLA up to {largest} cards" + (f" (binding: {binding})" if binding else "")
            + (f"; {remedy}" if remedy else ""))


def shortfall_note(most: float, cards: int, tok_s: float, sla: bool, range_remedy: str | None = None,
                   larger_infeasible: Sequence[tuple[int, str]] = (), larger_remedy: str | None = None,
                   max_copies: int | None = None, bigger: tuple[int, int, float] | None = None,
                   looser: Remedy | str | None = None) -> str:
    """Every size tried falls short of the load: the most found and where, and what would raise it (the
    concurrency range where the most found sits at its top, else the larger size found that carries it, the
    copies that would, and a looser SLA where one was given). `larger_infeasible`: (cards, binding) of the sizes
    tried above `cards` that have no feasible configuration; where the largest tried is one, more cards is no
    remedy (ATOM on two nodes), and the note says why instead, with the planner's remedy there (`larger_remedy`:
    'what would fit: 16 cards fit' where 12 leave a node part-filled). `max_copies` > 1: `most` is one copy's,
    and the note gives the copies' together and names the copies that carry the load where the cluster cap
    allows them. `bigger`: (cards, copies, tok/s per copy) of a larger size that carries the load (_larger_size);
    None: no size is named (more cards without a value are no remedy). `looser`: the SLA that binds and its value
    (_looser_sla), said in place of "a looser SLA"."""
    copied = max_copies is not None and max_copies > 1
    blocked = [(n, b) for n, b in larger_infeasible if n > cards]
    if blocked and not range_remedy:
        sizes = ", ".join(str(n) for n, _ in blocked)
        at = f"; at {blocked[-1][0]} cards, {larger_remedy}" if larger_remedy else ""
        more = (f"the larger sizes tried ({sizes} cards) have no feasible configuration (binding: {blocked[-1][1]})"
                f"{at}" + ("; a looser SLA" if sla else ""))
    else:
        n = copies_within(most, tok_s, cards, None) if copied else None
        more = remedies(
            Remedy(f"--cards {bigger[0]} ({_copies(bigger[1])} of {_cards(bigger[0])} {_carry(bigger[1])} "
                   f"{bigger[1] * bigger[2]:,.0f} output tokens/s: the planner found it there)",
                   (Change("--cards", bigger[0]),)) if bigger else None,
            Remedy(f"--max-copies {n} ({_copies(n)} of {_cards(cards)} carry {most * n:,.0f} output tokens/s)",
                   (Change("--max-copies", n),)) if n else None,
            looser or ("a looser SLA" if sla else None)).text() or ""
    remedy = range_remedy or more
    where = _cards(cards) + (f" ({most * max_copies:,.0f} in {max_copies} copies)" if copied else "")
    return (f"the most found is {most:,.0f} output tokens/s on {where}, below the target {tok_s:,.0f}"
            + (f"; {remedy}" if remedy else ""))


def most_in_cap(best: tuple[float, int, int, float] | None, per_copy: float, cards: int
                ) -> tuple[float, int, int, float]:
    """`best` or copies of `cards` cards at `per_copy` output tokens/s, whichever carry more within MAX_CARDS
    cards: (tokens/s together, copies, cards, per_copy), cluster_cap_note's arguments."""
    fit = MAX_CARDS // cards
    return best if best is not None and per_copy * fit <= best[0] else (per_copy * fit, fit, cards, per_copy)


def cluster_cap_note(most: float, copies: int, cards: int, per_copy: float, tok_s: float) -> str:
    """The load is past what MAX_CARDS cards carry as copies of any size tried (the best `copies` of `cards` at
    `per_copy` each, `most` together): that cap binds, and a share of the load that fits is the remedy."""
    # the whole tokens/s the copies reach, rounded down: rounded to nearest, 49,479.68 quotes 49,480, which needs
    # one copy more than the cap holds (a rerun at the quoted target finds no size that meets it)
    # (below 1 tok/s, to three significant figures: a whole number would be 0)
    shown = f"{math.floor(most):,}" if most >= 1 else three_figures(most, down=True)
    reach = math.floor(most) if most >= 1 else float(shown)
    clusters = math.ceil(tok_s / reach)
    # no size tried carries more per card than the best of them, and one outside those tried is not planned: only
    # the target has a value to name
    fit = remedies(Remedy(f"a target up to {shown} (the load split over {clusters:,} clusters)",
                          (Change("--target-output-tokens-per-s", reach),)))
    return (f"binding: the cap of {MAX_CARDS:,} cards in all (the most a cluster may have here), where the sizes "
            f"tried carry at most {shown} output tokens/s ({copies:,} copies of {_cards(cards)} at "
            f"{per_copy:,.0f} each); {fit.text()}")


def _copies(n: int) -> str:
    return f"{n:,} cop" + ("y" if n == 1 else "ies")


def _carry(n: int) -> str:
    return "carries" if n == 1 else "carry"


def _cards(n: int) -> str:
    return f"{n} card" + ("" if n == 1 else "s")


__all__ = ["BASIS_LABELS", "Option", "Recommendation", "choose", "copies_needed", "copies_within", "cost_text",
           "costs", "parse_prices", "price_note", "recommend"]
