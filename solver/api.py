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
from solver.entry import _ref_models, refuse_unlaunchable_kv, verified_for  # noqa: F401
from solver.errors import InputError
from solver.plan.points import SolverParams
from solver.rank.select import Candidate
from solver.specs import limits
from solver.specs.scenario import SCENARIO_WEIGHTS, Scenario

if TYPE_CHECKING:
    import pandas as pd

    from solver.capacity.recommend import Recommendation

__all__ = ["run_solve", "run_disagg", "solve", "Scenario", "SolverParams", "sweep", "recommend",
           "explain_solution", "refuse_unlaunchable_kv", "verified_for"]


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
    "max_copies": (1, limits.MAX_CARDS),
    **{k: (int(max(lo, gt + 1)), int(hi)) for k in _SCENARIO_INTS for lo, gt, hi in [_scenario_range(k)]}}
# real arguments: (above, at most)
_REALS: dict[str, tuple[float, float]] = {
    **{k: (gt, hi) for k in ("ttft_ms", "tpot_ms", "mtp_accept") for _, gt, hi in [_scenario_range(k)]},
    "target_output_tokens_per_s": (0.0, limits.MAX_RATE), "target_requests_per_s": (0.0, limits.MAX_RATE)}
# arguments that may be None (the planner or the runner decides)
_OPTIONAL = {"concurrency", "max_concurrency", "ttft_ms", "tpot_ms", "mtp_accept", "max_copies", "target_output_tokens_per_s",
             "target_requests_per_s", "weight_dtype", "moe_weight_dtype", "kv_dtype", "params", "scenarios",
             "seq_lens", "progress", "address", "prices", "references"}
_NAMES = ("model", "framework")  # a catalog name or a path
_DTYPES = ("weight_dtype", "moe_weight_dtype", "kv_dtype")
_FLAG = re.compile(r"--([a-z][a-z0-9]*(?:-[a-z0-9]+)*)")


def _is_name(value: Any) -> bool:
    return isinstance(value, os.PathLike) or isinstance(value, str) and bool(value.strip())


def _per_hardware(value: Any) -> bool:
    """A dtype given per hardware, as capacity.inputs.per_hardware reads it: a dict, or a list of items."""
    return isinstance(value, Mapping) or isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value)


_BOOLS = ("allow_cross_node", "explain_binding", "compare_aggregated")
_CALLABLES = ("progress",)


def _names(value: Any, key: str, what: str) -> list[str]:
    """The names in a list argument (a list, a tuple, a pandas Series, a numpy array: any iterable but a string or
    a mapping), each a non-empty string or a path, as strings."""
    items = list(value) if not isinstance(value, (str, bytes, os.PathLike, Mapping)) and hasattr(value, "__iter__") \
        else [value]
    if not items or not all(_is_name(h) for h in items):
        raise InputError(key, f"must be {what}, got {value!r}")
    return [os.fspath(h) for h in items]


def _check(args: dict[str, Any], hardware_lists: bool, cards_lists: bool) -> dict[str, Any]:
    """Refuse an argument of the wrong type or out of range, under its keyword. Returns the arguments the runner
    is given: a numpy or pandas integer as an int, a number as a float, a path (pathlib.Path) as its string, so
    the runners see the types the command line gives them."""
    checked = dict(args)
    for key, value in args.items():
        if value is None and key in _OPTIONAL:
            continue
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
            if isinstance(value, str):
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
                checked[key] = {os.fspath(h): v for h, v in value.items()}
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


# a command-line flag whose keyword is not its own name with "_" for "-" (--price HW=USD, repeated: prices)
_FLAG_KEYWORDS = {"price": "prices"}


def _flag_keyword(flag: str) -> str:
    return _FLAG_KEYWORDS.get(flag, flag.replace("-", "_"))


def _keyword(text: str, keys: set[str]) -> str:
    """The command line's flags in `text` that are keywords here, written as the keywords (--kv-dtype -> kv_dtype)."""
    return _FLAG.sub(lambda m: _flag_keyword(m.group(1)) if _flag_keyword(m.group(1)) in keys else m.group(0), text)


def _api(name: str, runner: Callable[..., Any], takes: Callable[[], set[str]], hardware_lists: bool = False,
         cards_lists: bool = False) -> Callable[..., Any]:
    """`runner` as the API offers it: its arguments checked (an unknown keyword refused with the close names; a
    scenario given as its kind name made a Scenario), and a refusal the runner raises under a command-line flag
    re-raised under the keyword the caller wrote (--kv-dtype -> kv_dtype)."""
    sig = inspect.signature(runner)

    @functools.wraps(runner)
    def call(*args: Any, **kwargs: Any) -> Any:
        keys = takes() | _params_of(runner)
        for key in kwargs:
            if key not in keys:
                close = difflib.get_close_matches(key, sorted(keys), n=3, cutoff=0.6)
                hint = f"; did you mean {', '.join(close)}?" if close else f"; it takes: {', '.join(sorted(keys))}"
                raise InputError(key, f"not an argument of {name}(){hint}")
        try:
            bound = sig.bind(*args, **kwargs)
        except TypeError as exc:  # a required argument missing, too many positional ones
            raise InputError(name, str(exc)) from None
        given = {k: v for k, v in bound.arguments.items()
                 if sig.parameters[k].kind is not inspect.Parameter.VAR_KEYWORD}
        given.update(next((v for k, v in bound.arguments.items()
                           if sig.parameters[k].kind is inspect.Parameter.VAR_KEYWORD), {}))
        if isinstance(given.get("scenario"), str):
            if given["scenario"] not in SCENARIO_WEIGHTS:
                raise InputError("scenario", f"unknown scenario kind {given['scenario']!r}; known: "
                                 f"{', '.join(SCENARIO_WEIGHTS)}")
            bound.arguments["scenario"] = given["scenario"] = Scenario(kind=given["scenario"])
        checked = _check(given, hardware_lists, cards_lists)
        extra = next((k for k, p in sig.parameters.items() if p.kind is inspect.Parameter.VAR_KEYWORD), None)
        for k, v in checked.items():  # the normalised values (an int for a numpy integer, a str for a Path)
            if k in sig.parameters and k != extra:
                bound.arguments[k] = v
            elif v is not given[k]:
                bound.arguments[extra] = {**bound.arguments[extra], k: v}
        try:
            return runner(*bound.args, **bound.kwargs)
        except InputError as exc:
            if not any(f.startswith("--") and _flag_keyword(f[2:]) in keys for f in exc.field.split("/")):
                raise
            raise InputError(_keyword(exc.field, keys), _keyword(exc.problem, keys)) from None

    call.__name__ = call.__qualname__ = name
    return call


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


def _solve(model: str | os.PathLike, hardware: str | os.PathLike, cards: int, scenario: Scenario | str | None = None,
           **kwargs: Any) -> list[Candidate]:
    """Ranked candidates for one deployment (see run_solve for the keyword arguments). `scenario`: a Scenario or
    its kind ("throughput", "latency", "balanced"; default balanced)."""
    return entry.run_solve(model, hardware, cards, scenario or Scenario(), **kwargs)[1]


def _sweep(model: str | os.PathLike, hardware: str | os.PathLike | Iterable[str | os.PathLike],
           cards: str | int | Iterable[int], scenarios: str | Scenario | Iterable[str | Scenario] | None = None, *,
           jobs: int = 1, progress: Callable[[int, int, str], None] | None = None, **kwargs: Any) -> pd.DataFrame:
    """Capacity sweep: a pandas DataFrame with the Pareto front of every (hardware, cards, scenario[, ISL/OSL])
    combination, one row per configuration, and one row naming the binding constraint where none fits.

    `hardware`: a name or a list; `cards`: "8,16,32", "8..1024" (powers of two) or a list of ints;
    `scenarios`: kinds ("throughput", "latency", "balanced"; default all three) or Scenario objects. Keyword
    arguments: isl, osl, seq_lens, ttft_ms, tpot_ms, concurrency, max_concurrency, mtp, mtp_accept, framework,
    weight_dtype, moe_weight_dtype, kv_dtype (a dtype, or {hardware: dtype}), method, params, top, allow_cross_node,
    explain_binding. `jobs` > 1 solves in worker processes; `executor="ray"|"dask"` with `address` (or a Dask
    Client) on an existing cluster (same table either way). Columns: solver.capacity.sweep.COLUMNS.
    `df.attrs`: "wall_s" (seconds the sweep took), "combinations" (the solves it ran), "notes" (what reading
    the inputs noted: a dtype the hardware lacks, a context past the model's).
    """
    from solver.capacity.sweep import sweep as run_sweep

    return run_sweep(model, hardware, cards, scenarios, jobs=jobs, progress=progress, **kwargs)


def _recommend(model: str | os.PathLike, hardware: str | os.PathLike | Iterable[str | os.PathLike],
               **kwargs: Any) -> Recommendation:
    """The fewest cards (and the configuration) that carry a load within the SLA, per hardware, as copies of one
    deployment behind a load balancer (`Option.copies` x `Option.cards` = `Option.total_cards`); the cheapest
    when prices per card-hour are given. Returns a solver.capacity.recommend.Recommendation (`.best`,
    `.options`, `.to_frame()`). Keyword arguments: target_output_tokens_per_s or target_requests_per_s, isl,
    osl, ttft_ms, tpot_ms, prices ({hardware: price per card-hour}), cards (per copy), max_copies (None: no
    bound; 1: one deployment), framework, weight_dtype, ...
    """
    from solver.capacity.recommend import recommend as run_recommend

    return run_recommend(model, hardware, **kwargs)


run_solve = _api("run_solve", entry.run_solve, _run_solve_keys)
run_disagg = _api("run_disagg", entry.run_disagg, lambda: _params_of(entry.run_disagg))
explain_solution = _api("explain_solution", entry.explain_solution, lambda: _params_of(entry.explain_solution))
solve = _api("solve", _solve, _run_solve_keys)
sweep = _api("sweep", _sweep, _sweep_keys, hardware_lists=True, cards_lists=True)
recommend = _api("recommend", _recommend, _recommend_keys, hardware_lists=True, cards_lists=True)
