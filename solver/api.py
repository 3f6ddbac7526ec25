"""Python API: the same entry points as the command line, returning typed results (and DataFrames where
tables are the natural shape). The runners live in solver.entry and solver.capacity; the functions here check
what a Python caller passes (types and ranges, the bounds of solver.specs.limits, as the command line's option
types do) and name a refused argument by its keyword (`cards`, `kv_dtype`), not by the command line's flag.
Every refusal is an InputError (exit code 2 on the command line), an argument no function takes included.
`Scenario(...)` validates on construction (pydantic's ValidationError names the field)."""
from __future__ import annotations

import difflib
import functools
import inspect
import math
import os
import re
from numbers import Integral, Real
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping

from numpy import bool_ as np_bool

from solver import entry
from solver.catalog import DEFAULT_FRAMEWORK
from solver.entry import _ref_models, refuse_unlaunchable_kv, verified_for  # noqa: F401
from solver.errors import InputError
from solver.plan.points import SolverParams
from solver.rank.select import Candidate
from solver.specs import limits
from solver.specs.dtypes import format_key, given_dtype
from solver.specs.fitted import UserFactors
from solver.specs.knobs import CONFIG_FLAGS
from solver.specs.parallel import KNOBS, SETTINGS
from solver.specs.pool_workers import pool_workers
from solver.specs.scenario import SCENARIO_WEIGHTS, Scenario, prefix_hit_of

if TYPE_CHECKING:
    import pandas as pd

    from solver.capacity.disagg import DisaggRecommendation
    from solver.capacity.recommend import Recommendation
    from solver.one_config import CheckResult, EstimateResult, MemoryResult
    from solver.report.disagg_view import DisaggReport

__all__ = ["run_solve", "run_disagg", "solve", "Solution", "Scenario", "SolverParams", "sweep", "recommend",
           "explain_solution", "estimate", "memory", "check", "refuse_unlaunchable_kv", "verified_for"]


def _scenario_range(name: str) -> tuple[float, float, float]:
    """(ge, gt, le) of a Scenario field's pydantic bounds (-inf for a ge / gt it lacks): the scenario's numbers
    have their ranges there, and the API checks an argument that becomes one before a runner starts."""
    meta = Scenario.model_fields[name].metadata
    at_least = next((m.ge for m in meta if hasattr(m, "ge")), -math.inf)
    above = next((m.gt for m in meta if hasattr(m, "gt")), -math.inf)
    return at_least, above, next(m.le for m in meta if hasattr(m, "le"))


_SCENARIO_INTS = ("isl", "osl", "concurrency", "max_concurrency", "mtp")
# integer arguments: (lowest, highest) as the command line's option types bound them (cli.options), a Scenario
# field's from its Field (an integer above g is at least g + 1)
_INTS: dict[str, tuple[int, int]] = {
    "cards": (1, limits.MAX_CARDS), "top": (1, limits.MAX_TOP), "jobs": (1, limits.MAX_JOBS),
    "max_copies": (1, limits.MAX_CARDS), "batch": (1, limits.MAX_CONCURRENCY), "seq_len": (1, limits.MAX_TOKENS),
    "prefill_chunk": (1, limits.MAX_TOKENS),
    # a knob divides the world size; redundant expert copies are at most the cards' count (cli.options KNOB, SETTING)
    **{k: (1, limits.MAX_CARDS) for k in KNOBS}, **{k: (0, limits.MAX_CARDS) for k in SETTINGS},
    **{k: (int(max(lo, gt + 1)), int(hi)) for k in _SCENARIO_INTS for lo, gt, hi in [_scenario_range(k)]}}
# real arguments: (above, at most)
_REALS: dict[str, tuple[float, float]] = {
    **{k: (gt, hi) for k in ("ttft_ms", "tpot_ms", "mtp_accept") for _, gt, hi in [_scenario_range(k)]},
    "target_output_tokens_per_s": (0.0, limits.MAX_RATE), "target_requests_per_s": (0.0, limits.MAX_RATE),
    "mem_fraction": (0.0, 1.0)}
# arguments that may be None (the planner or the runner decides)
_OPTIONAL = {"concurrency", "max_concurrency", "ttft_ms", "tpot_ms", "mtp_accept", "max_copies", "target_output_tokens_per_s",
             "target_requests_per_s", "weight_dtype", "moe_weight_dtype", "kv_dtype", "params", "scenarios",
             "seq_lens", "progress", "address", "prices", "references", "copies_hint", "prefill_workers",
             "decode_workers"}  # a worker count: pool_workers checks it (the command line's rule)
_NAMES = ("model", "framework", "config")  # a catalog name or a path
# arguments that are one of a few words (the command line's click.Choice)
_CHOICES: dict[str, tuple[str, ...]] = {"phase": ("prefill", "decode"), "serving": ("agg", "disagg")}
# what solve() builds its Scenario from, as sweep and recommend take them
_SCENARIO_KEYS = ("isl", "osl", "ttft_ms", "tpot_ms", "concurrency", "max_concurrency", "mtp", "mtp_accept",
                  "prefix_hit")
_DTYPES = ("weight_dtype", "moe_weight_dtype", "kv_dtype")
_FLAG = re.compile(r"--([a-z][a-z0-9]*(?:-[a-z0-9]+)*)")


def _is_name(value: Any) -> bool:
    return isinstance(value, os.PathLike) or isinstance(value, str) and bool(value.strip())


def _per_hardware(value: Any) -> bool:
    """A dtype given per hardware, as capacity.inputs.per_hardware reads it: a dict, or a list of items."""
    return isinstance(value, Mapping) or isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value)


_BOOLS = ("allow_cross_node", "explain_binding", "compare_aggregated", "copies_hint", "diagnose", "priced_reasons",
          "afd")
_CALLABLES = ("progress",)


def _names(value: Any, key: str, what: str) -> list[str]:
    """The names in a list argument (a list, a tuple, a pandas Series, a numpy array: any iterable but a string or
    a mapping), each a non-empty string or a path, as strings."""
    items = list(value) if not isinstance(value, (str, bytes, os.PathLike, Mapping)) and hasattr(value, "__iter__") \
        else [value]
    if not items or not all(_is_name(h) for h in items):
        raise InputError(key, f"must be {what}, got {value!r}")
    return [os.fspath(h) for h in items]


def _check(args: dict[str, Any], hardware_lists: bool, cards_lists: bool,
           optional: frozenset[str] = frozenset()) -> dict[str, Any]:
    """Refuse an argument of the wrong type or out of range, under its keyword. Returns the arguments the runner
    is given: a numpy or pandas integer as an int, a number as a float, a path (pathlib.Path) as its string, so
    the runners see the types the command line gives them. `optional`: more arguments that may be None here."""
    checked = dict(args)
    for key, value in args.items():
        if value is None and (key in _OPTIONAL or key in optional):
            continue
        if value is None and key == "prefix_hit":  # no hit is 0: None is refused (the rate's rule), not read as 0
            try:
                prefix_hit_of(value)
            except InputError as exc:
                raise InputError(key, exc.problem) from None
        if key in _INTS and not (key == "cards" and cards_lists and not isinstance(value, Integral)):
            lo, hi = _INTS[key]
            if isinstance(value, (bool, np_bool)) or not isinstance(value, Integral):
                raise InputError(key, f"must be an integer, got {value!r} ({type(value).__name__})")
            if not lo <= value <= hi:
                raise InputError(key, f"must be an integer in [{lo}, {hi:,}], got {value}")
            checked[key] = int(value)
        elif key in _REALS:
            above, hi = _REALS[key]
            if isinstance(value, (bool, np_bool)) or not isinstance(value, Real):
                raise InputError(key, f"must be a number, got {value!r} ({type(value).__name__})")
            if not (math.isfinite(value) and above < value <= hi):
                raise InputError(key, f"must be a finite number in ({above:g}, {hi:g}], got {value}")
            checked[key] = float(value)
        elif key in _NAMES:
            if not _is_name(value):
                raise InputError(key, f"must be a catalog name or a path, got {value!r} ({type(value).__name__})")
            checked[key] = os.fspath(value)
        elif key == "hardware":
            if hardware_lists:
                names = _names(value, key, "a hardware name or path, or a list of them")
                checked[key] = names if len(names) > 1 or not isinstance(value, (str, os.PathLike)) else names[0]
            elif not _is_name(value):
                raise InputError(key, f"must be a hardware name or path, got {value!r}")
            else:
                checked[key] = os.fspath(value)
        elif key in _DTYPES:
            if isinstance(value, str):  # spelt as the command line reads it: FP8 is fp8
                checked[key] = given_dtype(value)
                continue
            if not (hardware_lists and _per_hardware(value)):
                what = (", or per hardware as a dict ({'atlas_a3': 'int8'}) or HW=DTYPE items (['atlas_a3=int8'])"
                        if hardware_lists else "")
                raise InputError(key, f"must be a number format name (fp8, bf16, ...){what}, got {value!r}")
            if isinstance(value, Mapping):
                bad = [(h, v) for h, v in value.items() if not _is_name(h) or not isinstance(v, str)]
                if bad:
                    raise InputError(key, f"per hardware: a hardware name -> a number format name (fp8, bf16, ...), "
                                     f"got {bad[0][0]!r}: {bad[0][1]!r}")
                checked[key] = {os.fspath(h): format_key(v) for h, v in value.items()}
            else:
                checked[key] = [given_dtype(v) for v in value]
        elif key in _CHOICES:
            if not isinstance(value, str) or value not in _CHOICES[key]:
                raise InputError(key, f"must be one of {', '.join(map(repr, _CHOICES[key]))}, got {value!r}")
        elif key in _BOOLS:
            if not isinstance(value, (bool, np_bool)):
                raise InputError(key, f"must be True or False, got {value!r} ({type(value).__name__})")
            checked[key] = bool(value)
        elif key in _CALLABLES and not callable(value):
            raise InputError(key, f"must be a function (or None), got {value!r} ({type(value).__name__})")
        elif key == "references":
            from solver.specs.reference import Reference

            refs = list(value) if isinstance(value, (list, tuple)) else None
            if refs is None or not all(isinstance(r, Reference) for r in refs):
                raise InputError(key, "must be a list of verified deployments (solver.specs.reference.Reference, "
                                 f"as list_references() returns), or None for all; got {value!r:.80}")
        elif key == "params" and not isinstance(value, SolverParams):
            raise InputError(key, f"must be a SolverParams, got {type(value).__name__}")
        elif key == "scenario" and not isinstance(value, Scenario):
            raise InputError(key, f"must be a Scenario or its kind, got {type(value).__name__}")
        elif key == "prices" and not (isinstance(value, (str, Mapping)) or _per_hardware(value)):
            raise InputError(key, f"must be prices per card-hour per hardware, as a dict ({{'h100_sxm': 2.5}}) or "
                             f"HW=PRICE items (['h100_sxm=2.5']), got {value!r}")
        elif key == "candidates" and not (isinstance(value, (list, tuple))
                                          and all(isinstance(c, Candidate) for c in value)):
            raise InputError(key, f"must be a list of Candidates (what solve() returns), got {value!r:.80}")
        elif key == "cand" and not isinstance(value, Candidate):
            raise InputError(key, f"must be a Candidate (an item of solve()), got {type(value).__name__}")
    return checked


# a command-line flag whose keyword is not its own name with "_" for "-" (--price HW=USD, repeated: prices; a
# knob's flag, --attn-tp: its parallel_config name)
_FLAG_KEYWORDS = {"price": "prices", **{flag[2:]: name for name, flag in CONFIG_FLAGS.items()}}


def _flag_keyword(flag: str) -> str:
    return _FLAG_KEYWORDS.get(flag, flag.replace("-", "_"))


def _keyword(text: str, keys: set[str]) -> str:
    """The command line's flags in `text` that are keywords here, written as the keywords (--kv-dtype -> kv_dtype)."""
    return _FLAG.sub(lambda m: _flag_keyword(m.group(1)) if _flag_keyword(m.group(1)) in keys else m.group(0), text)


def _api(name: str, runner: Callable[..., Any], takes: Callable[[], set[str]], hardware_lists: bool = False,
         cards_lists: bool = False, optional: frozenset[str] = frozenset(),
         scenario_keys: tuple[str, ...] = (), factors: bool = True) -> Callable[..., Any]:
    """`runner` as the API offers it: its arguments checked (an unknown keyword refused with the close names; a
    scenario given as its kind name made a Scenario, with the `scenario_keys` given made its fields), and a refusal
    the runner raises under a command-line flag re-raised under the keyword the caller wrote (--kv-dtype ->
    kv_dtype). `optional`: its arguments that may be None beyond _OPTIONAL. `factors`: it takes `factors=`, a
    factors file as the command's --factors reads it (_with_factors)."""
    sig = inspect.signature(runner)

    @functools.wraps(runner)
    def call(*args: Any, **kwargs: Any) -> Any:
        keys = takes() | _params_of(runner) | ({"factors"} if factors else set())
        for key in kwargs:
            if key not in keys:
                close = difflib.get_close_matches(key, sorted(keys), n=3, cutoff=0.6)
                hint = f"; did you mean {', '.join(close)}?" if close else f"; it takes: {', '.join(sorted(keys))}"
                raise InputError(key, f"not an argument of {name}(){hint}")
        user_file = kwargs.pop("factors", None) if factors else None
        try:
            bound = sig.bind(*args, **kwargs)
        except TypeError as exc:  # a required argument missing, too many positional ones
            raise InputError(name, str(exc)) from None
        given = {k: v for k, v in bound.arguments.items()
                 if sig.parameters[k].kind is not inspect.Parameter.VAR_KEYWORD}
        given.update(next((v for k, v in bound.arguments.items()
                           if sig.parameters[k].kind is inspect.Parameter.VAR_KEYWORD), {}))
        fields = {k: given[k] for k in scenario_keys if given.get(k) is not None}
        if fields and isinstance(given.get("scenario"), Scenario):
            raise InputError(f"scenario/{next(iter(fields))}", f"give either a Scenario or {', '.join(fields)} (with "
                             "the scenario's kind name), not both: the Scenario already holds its own")
        if isinstance(given.get("scenario"), str):
            if given["scenario"] not in SCENARIO_WEIGHTS:
                raise InputError("scenario", f"unknown scenario kind {given['scenario']!r}; known: "
                                 f"{', '.join(SCENARIO_WEIGHTS)}")
        kind = given.get("scenario") if isinstance(given.get("scenario"), str) else None
        checked = _check({k: v for k, v in given.items() if not (k == "scenario" and kind)}, hardware_lists,
                         cards_lists, optional)
        if fields or kind:
            from solver.specs.scenario import scenario_of

            try:
                made = scenario_of("scenario", kind=kind or Scenario().kind, **{k: checked[k] for k in fields})
            except InputError as exc:  # a field refused under its flag (--tpot-ms): named by its keyword
                raise InputError(_keyword(exc.field, set(scenario_keys) | {"scenario"}), exc.problem) from None
            checked["scenario"] = given["scenario"] = made
        extra = next((k for k, p in sig.parameters.items() if p.kind is inspect.Parameter.VAR_KEYWORD), None)
        if fields or kind or any(k in given for k in scenario_keys):  # the Scenario's fields, no runner argument
            for k in scenario_keys:
                checked.pop(k, None)
                given.pop(k, None)
                bound.arguments.pop(k, None)
            if extra in bound.arguments:
                bound.arguments[extra] = {k: v for k, v in bound.arguments[extra].items() if k not in scenario_keys}
        for k, v in checked.items():  # the normalised values (an int for a numpy integer, a str for a Path)
            if k in sig.parameters and k != extra:
                bound.arguments[k] = v
            elif v is not given[k]:
                bound.arguments[extra] = {**bound.arguments[extra], k: v}
        try:
            if user_file is not None:
                return _with_factors(_user_factors(user_file), runner, *bound.args, **bound.kwargs)
            return runner(*bound.args, **bound.kwargs)
        except InputError as exc:
            flagged = any(f.startswith("--") and _flag_keyword(f[2:]) in keys for f in exc.field.split("/"))
            spoken = any(_flag_keyword(m.group(1)) in keys for m in _FLAG.finditer(exc.problem))
            if not (flagged or spoken and exc.field in keys | {"workload"}):
                raise
            raise InputError(_keyword(exc.field, keys), _keyword(exc.problem, keys)) from None

    call.__name__ = call.__qualname__ = name
    return call


def _user_factors(path: Any) -> UserFactors:
    """`factors=`, read and validated as --factors reads it (calibrate.factors_file): a refusal names the keyword."""
    from solver.calibrate.factors_file import read_user_factors

    if not isinstance(path, (str, os.PathLike)) or not str(path):
        raise InputError("factors", f"must be the path of a factors file (calibrate --from-csv ROWS.csv --fit "
                                    f"FACTORS.yaml), got {path!r} ({type(path).__name__})")
    return read_user_factors(os.fspath(path), "factors")


def _with_factors(user: UserFactors, runner: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """`runner` priced with the user's factors, as a command given --factors runs; the answer's notes (where it
    carries them) say which pairs the file priced, as the command's do. A Solution's `as_dict` (priced later,
    when asked) runs under them too."""
    from solver.calibrate.factors_file import factors_notes
    from solver.specs import fitted

    fitted.clear_user_lookups()
    with fitted.using_user_factors(user):
        out = runner(*args, **kwargs)
    notes = factors_notes(user.source, user.pairs, fitted.user_lookups(), "factors")
    fitted.clear_user_lookups()
    if isinstance(out, Solution):
        out._as_dict = functools.partial(_priced_with, user, out._as_dict)
    held = out.attrs.setdefault("notes", []) if hasattr(out, "attrs") and isinstance(out.attrs, dict) else \
        getattr(out, "notes", None)
    if isinstance(held, list):
        held.extend(notes)
    return out


def _priced_with(user: UserFactors, fn: Callable[[], Any]) -> Any:
    from solver.specs.fitted import using_user_factors

    with using_user_factors(user):
        return fn()


def _params_of(*fns: Callable[..., Any]) -> set[str]:
    return {p.name for fn in fns for p in inspect.signature(fn).parameters.values()
            if p.kind not in (inspect.Parameter.VAR_KEYWORD, inspect.Parameter.VAR_POSITIONAL)}


def _run_solve_keys() -> set[str]:
    return _params_of(entry.run_solve)


def _sweep_keys() -> set[str]:
    from solver.capacity.sweep import build_plan, sweep as _sweep

    return _params_of(build_plan, _sweep)


def _recommend_keys() -> set[str]:
    from solver.capacity.recommend import recommend as _recommend

    return _params_of(_recommend)


class Solution(list):
    """solve()'s answer: the ranked candidates (a list of Candidate) with what `shardplan solve` says beside them.
    `.notes`: every note the command prints (report.candidates.answer_notes: the config's class defaults, the
    engine's, the concurrency range, the SLA edge, what #1's own configuration holds, the copies hint, the prefix
    cache assumed); `.result`: the PlanResult (binding constraints, pruned values, the Pareto front);
    `.as_dict()`: the command's `--format json` (each candidate's reason, departures from the seed and engine
    command included). A slice (`sol[:2]`)
    or a copy is a plain list of candidates: the notes, result and JSON are of the whole answer (candidate 1's SLA
    edge, the copies hint, every candidate's reason), not of the candidates a slice keeps, so they stay here."""

    def __init__(self, cands: list[Candidate], result: Any, notes: list[str], as_dict: Callable[[], dict]) -> None:
        super().__init__(cands)
        self.result, self.notes, self._as_dict = result, notes, as_dict

    def as_dict(self) -> dict[str, Any]:
        return self._as_dict()


def _solve(model: str | os.PathLike, hardware: str | os.PathLike, cards: int, scenario: Scenario | str | None = None,
           framework: str | os.PathLike = DEFAULT_FRAMEWORK, weight_dtype: str | None = None,
           moe_weight_dtype: str | None = None, kv_dtype: str | None = None, copies_hint: bool | None = None,
           serving: str = "agg", prefill_workers: int | None = None, decode_workers: int | None = None,
           **kwargs: Any) -> Solution | DisaggReport:
    """Ranked candidates for one deployment, a Solution (see run_solve for the keyword arguments; `copies_hint`
    on unless False, as the command asks: the copies and held-requests notes). `scenario`: a Scenario or its kind
    ("throughput", "latency", "balanced"; default balanced); with a kind (or none), isl, osl, ttft_ms, tpot_ms,
    concurrency, max_concurrency, mtp, mtp_accept
    and prefix_hit are its fields, as sweep and recommend take them (a Scenario and those keywords together are
    refused: the Scenario holds its own).
    `serving="disagg"`: the prefill and decode pools (xPyD) and the aggregated comparison, as `solve --serving
    disagg` answers it: a solver.report.disagg_view DisaggReport (`render(report, "json")` is the command's JSON);
    `prefill_workers` / `decode_workers` fix the pools' worker counts (None: the plan picks), only there."""
    from solver.report.candidates import answer_notes

    fixed = pool_workers(serving, prefill_workers, decode_workers)
    scenario = scenario or Scenario()
    dtypes = (weight_dtype, moe_weight_dtype, kv_dtype)
    if serving == "disagg":
        _not_disagg("solve", {"copies_hint": copies_hint is not None,
                              **{k: k in kwargs for k in set(kwargs) - _params_of(entry.run_disagg)}})
        return entry.run_disagg(model, hardware, cards, scenario, framework, *dtypes, workers=fixed, **kwargs)
    copies_hint = True if copies_hint is None else copies_hint
    result, cands = entry.run_solve(model, hardware, cards, scenario, framework, *dtypes, copies_hint=copies_hint,
                                    **kwargs)
    # a partial of module-level function, not a closure: the Solution pickles (worker processes, caches)
    return Solution(cands, result, answer_notes(result, scenario),
                    functools.partial(entry.solve_dict, model, hardware, cards, scenario, framework, *dtypes, result,
                                      list(cands)))


def _sweep(model: str | os.PathLike, hardware: str | os.PathLike | Iterable[str | os.PathLike],
           cards: str | int | Iterable[int], scenarios: str | Scenario | Iterable[str | Scenario] | None = None, *,
           jobs: int = 1, progress: Callable[[int, int, str], None] | None = None, serving: str = "agg",
           prefill_workers: int | None = None, decode_workers: int | None = None, **kwargs: Any) -> pd.DataFrame:
    """Capacity sweep: a pandas DataFrame with the Pareto front of every (hardware, cards, scenario[, ISL/OSL])
    combination, one row per configuration, and one row naming the binding constraint where none fits.

    `hardware`: a name or a list; `cards`: "8,16,32", "8..1024" (powers of two) or a list of ints;
    `scenarios`: kinds ("throughput", "latency", "balanced"; default all three) or Scenario objects. Keyword
    arguments: isl, osl, seq_lens, ttft_ms, tpot_ms, concurrency, max_concurrency, mtp, mtp_accept, framework,
    weight_dtype, moe_weight_dtype, kv_dtype (a dtype, or {hardware: dtype}), method, params, top, allow_cross_node,
    explain_binding. `jobs` > 1 solves in worker processes; `executor="ray"|"dask"` with `address` (or a Dask
    Client) on an existing cluster (same table either way). Columns: solver.capacity.sweep.COLUMNS.
    `prices` (a price per card-hour for every hardware: {"h200_sxm": 3.5} or ["h200_sxm=3.5"], as recommend
    takes them) adds `usd_per_hour` and `usd_per_million_output_tokens` to every row (solver.capacity.pricing).
    `df.attrs`: "wall_s" (seconds the sweep took), "combinations" (the solves it ran), "notes" (what reading
    the inputs noted: a dtype the hardware lacks, a context past the model's), "cheapest" (with prices: the
    cheapest front row per hardware, as the command's note lines say it). A recommended row names k copies of a smaller
    size of the same sweep that carry more output tokens/s per rank (capacity.copies: the sweep's own rows, nothing
    planned); its notes leave out solve's other hints (copies of a size the sweep did not plan, the requests #1's
    own configuration holds past its power of two): each costs estimates or plans per row; `solve` at the row's
    deployment says them.
    `serving="disagg"`: one row per disaggregated (xPyD) plan instead, as `sweep --serving disagg` writes it
    (solver.capacity.disagg.sweep_disagg: the columns of table.DISAGG_COLUMNS; jobs 1, no executor);
    `prefill_workers` / `decode_workers` fix the pools' worker counts at every size (None: the plan picks), only
    there.
    """
    fixed = pool_workers(serving, prefill_workers, decode_workers)
    if serving == "disagg":
        from solver.capacity.disagg import sweep_disagg

        _not_disagg("sweep", {"executor": kwargs.pop("executor", "local") != "local",
                              "address": kwargs.pop("address", None) is not None, "jobs": jobs != 1})
        _not_disagg("sweep", {k: k in kwargs for k in set(kwargs) - _params_of(sweep_disagg)})
        return sweep_disagg(model, _hardware_list(hardware), cards, scenarios, progress=progress, workers=fixed,
                            **kwargs)
    from solver.capacity.sweep import sweep as run_sweep

    return run_sweep(model, hardware, cards, scenarios, jobs=jobs, progress=progress, **kwargs)


def _hardware_list(hardware: str | list[str]) -> list[str]:
    """The hardware as the disaggregated runners take them: a list (one name is a list of one)."""
    return [hardware] if isinstance(hardware, str) else list(hardware)


def _not_disagg(name: str, given: Mapping[str, bool]) -> None:
    """An argument the aggregated runner reads that the disaggregated path does not: refused, not dropped."""
    for key, present in sorted(given.items()):
        if present:
            raise InputError(key, f"not available with {name}(serving='disagg')")


def _recommend(model: str | os.PathLike, hardware: str | os.PathLike | Iterable[str | os.PathLike],
               *, serving: str = "agg", prefill_workers: int | None = None, decode_workers: int | None = None,
               **kwargs: Any) -> Recommendation | DisaggRecommendation:
    """The fewest cards (and the configuration) that carry a load within the SLA, per hardware, as copies of one
    deployment behind a load balancer (`Option.copies` x `Option.cards` = `Option.total_cards`); the cheapest
    when prices per card-hour are given. Returns a solver.capacity.recommend.Recommendation (`.best`,
    `.options`, `.to_frame()`). Keyword arguments: target_output_tokens_per_s or target_requests_per_s, isl,
    osl, ttft_ms, tpot_ms, prices ({hardware: price per card-hour}), cards (per copy), max_copies (None: no
    bound; 1: one deployment), framework, weight_dtype, ...
    `serving="disagg"`: the fewest cards whose copies of an xPyD deployment carry the load, as `recommend
    --serving disagg` answers it: a solver.capacity.disagg.DisaggRecommendation (`.best`, `.options`,
    `.as_dict()`); `prefill_workers` / `decode_workers` fix the pools' worker counts at every size tried (None:
    the plan picks), only there.
    """
    fixed = pool_workers(serving, prefill_workers, decode_workers)
    if serving == "disagg":
        from solver.capacity.disagg import recommend_disagg
        from solver.one_config import check_mtp

        _not_disagg("recommend", {k: k in kwargs for k in set(kwargs) - _params_of(recommend_disagg)})
        check_mtp(model, kwargs.get("mtp", 0))
        return recommend_disagg(model, _hardware_list(hardware), workers=fixed, **kwargs)
    from solver.capacity.recommend import recommend as run_recommend

    return run_recommend(model, hardware, **kwargs)


_WORKLOAD_DOC = """Workload: serving (isl, osl, concurrency), one phase (phase "prefill" | "decode", batch, seq_len),
    or a decode over its prompts' output (phase "decode", batch, isl, osl)."""


def _estimate(model: str | os.PathLike, hardware: str | os.PathLike, cards: int, *, isl: int | None = None,
              osl: int | None = None, concurrency: int | None = None, phase: str | None = None,
              batch: int | None = None, seq_len: int | None = None, mtp: int = 0, mtp_accept: float | None = None,
              prefix_hit: float = 0.0, framework: str | os.PathLike = DEFAULT_FRAMEWORK,
              weight_dtype: str | None = None, moe_weight_dtype: str | None = None, kv_dtype: str | None = None,
              afd: bool = False, **knobs: int) -> EstimateResult:
    """`shardplan estimate` of one parallel_config: memory, TTFT, TPOT and throughput with their breakdowns.
    `knobs`: attn_tp_size, dense_tp_size, moe_tp_size, ... by their parallel_config names (unset: 1;
    redundant_experts: 0). Returns a solver.one_config.EstimateResult: `.estimate` (an Estimate), `.notes`,
    `.as_dict()` (the command's JSON). `mtp_accept` None: the default acceptance rate. `prefix_hit`: the share of
    each prompt's tokens in the engine's prefix cache, in [0, 1) (Workload.prompt_tokens). `afd`: attention-FFN
    disaggregated (--afd): half the cards attention, half FFN, the knobs within each half."""
    from solver.one_config import estimate_config, workload_of

    wl = workload_of(isl, osl, concurrency, phase, batch, seq_len, mtp, mtp_accept, prefix_hit)
    return estimate_config(model, hardware, cards, knobs, wl, weight_dtype, moe_weight_dtype, kv_dtype, framework,
                           afd)


def _memory(model: str | os.PathLike, hardware: str | os.PathLike, cards: int, batch: int, seq_len: int, *,
            mtp: int = 0, prefill_chunk: int | None = None, mem_fraction: float | None = None,
            framework: str | os.PathLike = DEFAULT_FRAMEWORK, weight_dtype: str | None = None,
            moe_weight_dtype: str | None = None, kv_dtype: str | None = None, **knobs: int) -> MemoryResult:
    """`shardplan memory` of one parallel_config: per-rank memory of `batch` sequences of `seq_len` tokens,
    feasible or not, and the largest batch that fits. `knobs` as estimate() takes them. Returns a
    solver.one_config.MemoryResult: `.report` (a MemoryReport), `.max_batch`, `.notes`, `.as_dict()` (the
    command's JSON). `mem_fraction` None: the default usable fraction of capacity."""
    from solver.one_config import memory_config

    return memory_config(model, hardware, cards, knobs, batch, seq_len, mtp, prefill_chunk, mem_fraction, framework,
                         weight_dtype, moe_weight_dtype, kv_dtype)


_CHECK_FILE_KEYS = ("model", "hardware", "cards", "framework")  # what overrides a deployment file's own


def _check_config(model: str | os.PathLike | None = None, hardware: str | os.PathLike | None = None,
                  cards: int | None = None, *, config: str | os.PathLike | None = None, candidate: str | int | None = None,
                  isl: int | None = None, osl: int | None = None, concurrency: int | None = None,
                  phase: str | None = None, batch: int | None = None, seq_len: int | None = None, mtp: int | None = None,
                  mtp_accept: float | None = None, prefix_hit: float = 0.0,
                  framework: str | os.PathLike | None = None,
                  weight_dtype: str | None = None, moe_weight_dtype: str | None = None, kv_dtype: str | None = None,
                  afd: bool = False, command: str | None = None, **knobs: int) -> CheckResult:
    """`shardplan check`: a parallel_config reviewed by class A/B/C (model, hardware, framework), its common
    errors flagged and the config estimated. Either `config`, a deployment file (as the command reads it;
    `candidate` picks a candidate_x block, and model / hardware / cards / framework override the file's), or the
    deployment as keywords: model, hardware, cards, `knobs` as estimate() takes them, the workload (prefix_hit
    included), mtp, mtp_accept, framework, dtypes and afd (a file's `afd: true`). Returns a solver.one_config.CheckResult: `.valid`, `.review`
    (violations, warnings, common errors, notes, the estimate), `.as_dict()` (the command's JSON). An invalid
    config is a result (`valid` False), not an exception. `command`: the engine command run today (or a `solve
    --format launch` script), read back to the parallel_config whose launch prints it (with hardware, and cards /
    framework / model / isl / osl / concurrency / mtp / mtp_accept / the dtypes where given; a lookup draft such as
    ngram needs mtp_accept); the reading is the result's
    `.command`."""
    from solver.one_config import check_command_deployment, check_deployment, workload_of

    if command is not None:
        from solver.launch.check_command import command_deployment

        rest = {"config": config, "candidate": candidate, "phase": phase, "batch": batch, "seq_len": seq_len,
                "afd": afd or None, "prefix_hit": prefix_hit or None, **knobs}
        for key, value in rest.items():
            if value is not None:
                raise InputError(key, "given with command=, which the command sets or check --command does not read")
        if hardware is None:
            raise InputError("hardware", "missing: give it with command=")
        read, dep = command_deployment(command, str(hardware), cards, None if framework is None else str(framework),
                                       None if model is None else str(model), isl, osl, concurrency, mtp,
                                       weight_dtype, moe_weight_dtype, kv_dtype, mtp_accept)
        res = check_command_deployment(read, dep, str(hardware))
        res.command = read  # type: ignore[attr-defined]
        return res
    from solver.specs.deployment import FLAT_QUANT, Deployment, WorkloadSpec, load_deployment
    from solver.specs.parallel import CONFIG_KEYS

    given = {"model": model, "hardware": hardware, "framework": framework}
    if config is not None:
        inline = {"isl": isl, "osl": osl, "concurrency": concurrency, "phase": phase, "batch": batch,
                  "seq_len": seq_len, "mtp": mtp or None, "mtp_accept": mtp_accept,
                  "prefix_hit": None if prefix_hit == 0 else prefix_hit, "weight_dtype": weight_dtype,
                  "moe_weight_dtype": moe_weight_dtype, "kv_dtype": kv_dtype, "afd": afd or None, **knobs}
        for key, value in inline.items():
            if value is not None:
                raise InputError(key, f"given by the file {config}: with config=, only "
                                      f"{', '.join(_CHECK_FILE_KEYS)} override it")
        dep = load_deployment(config, None if candidate is None else str(candidate))
        model, hardware, world = model or dep.model, hardware or dep.hardware, cards or dep.world_size
        for key, value in (("model", model), ("hardware", hardware), ("cards", world)):
            if value is None:
                raise InputError(key, f"missing: give it in {config} or as {key}=")
        return check_deployment(dep, model, hardware, world, framework, str(config),
                                {k: k if v else None for k, v in given.items()})
    if candidate is not None:
        raise InputError("candidate", "reads a block of a deployment file: give config= too")
    for key, value in (("model", model), ("hardware", hardware), ("cards", cards)):
        if value is None:
            raise InputError(key, "missing: give it, or a deployment file as config=")
    # one complete workload, or refused; the hit rate as it reads it ("0.5" given as text)
    mtp = mtp or 0  # none given: no draft tokens (with command=, None reads the command's depth)
    hit = workload_of(isl, osl, concurrency, phase, batch, seq_len, mtp, mtp_accept, prefix_hit).prefix_hit
    spec = WorkloadSpec(**{k: v for k, v in (("isl", isl), ("osl", osl), ("concurrency", concurrency),
                                             ("phase", phase), ("batch", batch), ("seq_len", seq_len)) if v is not None},
                        prefix_hit=hit)
    dtypes = {"weight_dtype": weight_dtype, "moe_weight_dtype": moe_weight_dtype, "kv_dtype": kv_dtype}
    dep = Deployment(model=model, hardware=hardware, framework=framework or DEFAULT_FRAMEWORK, world_size=cards,
                     parallel_config=knobs, workload=spec, quant={FLAT_QUANT[k]: v for k, v in dtypes.items()},
                     mtp=mtp, mtp_accept=mtp_accept, afd=afd)
    dep._fields = {k: k for k in (*FLAT_QUANT, *CONFIG_KEYS)}  # a refusal names the keyword
    return check_deployment(dep, model, hardware, cards, framework, None, {k: k for k in given})


def _knob_keys() -> set[str]:
    return set(CONFIG_FLAGS)


# what estimate / memory / check may be given as None: the workload's fields and the knobs (unset); check's
# deployment too, which a file may give instead
_ONE_CONFIG_OPTIONAL = frozenset({"isl", "osl", "concurrency", "phase", "batch", "seq_len", *CONFIG_FLAGS})
_CHECK_OPTIONAL = _ONE_CONFIG_OPTIONAL | {"model", "hardware", "cards", "config", "candidate", "framework", "mtp"}

run_solve = _api("run_solve", entry.run_solve, _run_solve_keys)
run_disagg = _api("run_disagg", entry.run_disagg, lambda: _params_of(entry.run_disagg))
explain_solution = _api("explain_solution", entry.explain_solution, lambda: _params_of(entry.explain_solution))
solve = _api("solve", _solve, lambda: _run_solve_keys() | set(_SCENARIO_KEYS), scenario_keys=_SCENARIO_KEYS)
sweep = _api("sweep", _sweep, _sweep_keys, hardware_lists=True, cards_lists=True)
recommend = _api("recommend", _recommend, _recommend_keys, hardware_lists=True, cards_lists=True)
estimate = _api("estimate", _estimate, _knob_keys, optional=_ONE_CONFIG_OPTIONAL)
memory = _api("memory", _memory, _knob_keys, optional=_ONE_CONFIG_OPTIONAL, factors=False)  # reads no fitted factor
check = _api("check", _check_config, _knob_keys, optional=_CHECK_OPTIONAL)
