"""Cluster-size sweeps: the Pareto front of every (hardware, cards, scenario, sequence length) combination, one
row per configuration, as a pandas DataFrame (and CSV / JSON / Parquet on disk).

What a sweep holds, for every combination it solves:
- feasible: every configuration of the planner's Pareto front (request latency vs throughput per rank), each
  realised by the full estimator, plus any of the recommended candidates that is not on the front (the
  planner fills the top 2-3 with other patterns when the front has fewer; those rows have on_front=False).
  `rank` is the position in that combination sorted by output tokens/s per rank, best first; `candidate` is
  the recommendation rank (1 = what `shardplan solve` recommends) or empty.
- infeasible (no configuration fits or meets the SLA): one row with feasible=False, the binding constraint
  families in `binding_constraint` and the planner's remedy in `note`; the knob and figure columns are empty.

Solves are independent, so `jobs > 1` runs them in worker processes; rows are put back in task order, so the
table is identical to a serial run.
"""
from __future__ import annotations

import math
import os
import re
import secrets
import shutil
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from multiprocessing import get_context
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

import pandas as pd
from pydantic import ValidationError

from solver.errors import InfeasibleError, InputError, ShardplanError
from solver.plan.cpsat import SolverParams
from solver.specs.parallel import KNOBS
from solver.specs.scenario import SCENARIO_WEIGHTS, Scenario

GB = 1e9
SCENARIO_KINDS = tuple(SCENARIO_WEIGHTS)  # throughput, latency, balanced
DEFAULT_SCENARIOS = ("throughput", "latency", "balanced")

# The table's columns, in order. The first block is the documented schema (README "Capacity planning").
COLUMNS: tuple[str, ...] = (
    "hardware", "cards", "scenario", "rank",
    *KNOBS, "attn_dp_size", "moe_ep_size",
    "memory_per_rank_gb", "ttft_ms", "tpot_ms", "output_tokens_per_s_per_rank", "output_tokens_per_s",
    "tokens_per_s_per_user", "feasible", "binding_constraint",
    # context of the row
    "model", "isl", "osl", "ttft_sla_ms", "tpot_sla_ms", "concurrency", "request_latency_ms", "requests_per_s",
    "on_front", "candidate", "pattern", "memory_feasible", "weight_dtype", "note",
)
INT_COLUMNS = ("cards", "rank", *KNOBS, "attn_dp_size", "moe_ep_size", "isl", "osl", "concurrency", "candidate")
FLOAT_COLUMNS = ("memory_per_rank_gb", "ttft_ms", "tpot_ms", "output_tokens_per_s_per_rank", "output_tokens_per_s",
                 "tokens_per_s_per_user", "ttft_sla_ms", "tpot_sla_ms", "request_latency_ms", "requests_per_s")
BOOL_COLUMNS = ("feasible", "on_front", "memory_feasible")
STR_COLUMNS = ("hardware", "scenario", "binding_constraint", "model", "pattern", "weight_dtype", "note")
# Rounding on output: far below the estimator's accuracy, and it keeps files stable and readable.
DIGITS = {"memory_per_rank_gb": 3, "ttft_ms": 3, "tpot_ms": 4, "output_tokens_per_s_per_rank": 3,
          "output_tokens_per_s": 2, "tokens_per_s_per_user": 4, "request_latency_ms": 3, "requests_per_s": 4}

ProgressFn = Callable[[int, int, str], None]


# ------------------------------------------------------------------------------------------ parsing inputs


def parse_cards(text: str | int | Iterable[int]) -> list[int]:
    """`8,16,32`, `8..1024` (the powers of two in the range, ends included) or a mix: `8..64,96,128`.

    Returns the sorted distinct card counts; an empty or unparseable value is an InputError."""
    if isinstance(text, bool):
        raise InputError("--cards", f"not a card count: {text!r}")
    if isinstance(text, int):
        items: list[int] = [text]
    elif isinstance(text, str):
        if not text.strip():
            raise InputError("--cards", "empty; give a list (8,16,32) or a range of powers of two (8..1024)")
        items = []
        for part in text.split(","):
            part = part.strip()
            m = re.fullmatch(r"(\d+)\s*\.\.\s*(\d+)", part)
            if m:
                lo, hi = int(m.group(1)), int(m.group(2))
                if lo < 1 or hi < lo:
                    raise InputError("--cards", f"range {part!r} must be LOW..HIGH with 1 <= LOW <= HIGH")
                powers = [1 << k for k in range(0, hi.bit_length() + 1) if lo <= (1 << k) <= hi]
                if not powers:
                    raise InputError("--cards", f"no power of two in {part!r}")
                items.extend(powers)
            elif re.fullmatch(r"\d+", part):
                items.append(int(part))
            else:
                raise InputError("--cards", f"cannot parse {part!r}; use a list (8,16,32) or a range (8..1024)")
    else:
        try:
            items = [int(v) for v in text]
        except (TypeError, ValueError):
            raise InputError("--cards", f"not a list of card counts: {text!r}") from None
        if not items:
            raise InputError("--cards", "empty list of card counts")
    bad = [v for v in items if v < 1]
    if bad:
        raise InputError("--cards", f"card counts must be >= 1, got {bad[0]}")
    return sorted(set(items))


def parse_scenarios(value: str | Scenario | Iterable[str | Scenario] | None) -> list[str | Scenario]:
    """Scenario kinds (comma-separated or a list) or ready-made Scenario objects; unknown kinds are an InputError."""
    if value is None:
        return list(DEFAULT_SCENARIOS)
    if isinstance(value, (str, Scenario)):
        value = [value]
    out: list[str | Scenario] = []
    for item in value:
        if isinstance(item, Scenario):
            out.append(item)
            continue
        for name in str(item).split(","):
            name = name.strip().lower()
            if not name:
                continue
            if name not in SCENARIO_KINDS:
                raise InputError("--scenarios", f"unknown scenario {name!r}; known: {', '.join(SCENARIO_KINDS)}")
            if name not in out:
                out.append(name)
    if not out:
        raise InputError("--scenarios", f"empty; known: {', '.join(SCENARIO_KINDS)}")
    return out


def parse_seq_lens(value: str | Iterable[int | tuple[int, int]] | None, osl: int) -> list[tuple[int, int]]:
    """`8192,65536` (input lengths, each with `osl` output tokens) or `8192:1024,65536:512` (ISL:OSL pairs)."""
    if value is None:
        return []
    items: list[tuple[int, int]] = []
    parts: Iterable[Any] = value.split(",") if isinstance(value, str) else value
    for part in parts:
        if isinstance(part, tuple):
            pair = part
        elif isinstance(part, int):
            pair = (part, osl)
        else:
            text = str(part).strip().lower()
            m = re.fullmatch(r"(\d+)(k?)(?::(\d+)(k?))?", text)
            if not m:
                raise InputError("--seq-lens", f"cannot parse {part!r}; use ISL or ISL:OSL, e.g. 8192,65536:1024")
            isl = int(m.group(1)) * (1024 if m.group(2) else 1)
            out_len = osl if m.group(3) is None else int(m.group(3)) * (1024 if m.group(4) else 1)
            pair = (isl, out_len)
        if len(pair) != 2 or min(pair) < 1:
            raise InputError("--seq-lens", f"lengths must be >= 1, got {part!r}")
        if pair not in items:
            items.append((int(pair[0]), int(pair[1])))
    if not items:
        raise InputError("--seq-lens", "empty")
    return items


def per_hardware(value: str | Mapping[str, str] | Sequence[str] | None, flag: str,
                 hardware: Sequence[str]) -> dict[str, str | None]:
    """A dtype for every hardware: one value for all (`int8`), or per hardware (`atlas_a3=int8`, or a dict).

    `hardware` holds canonical names; keys are matched after loading them as hardware names."""
    from solver.specs.hardware_catalog import load_hardware

    out: dict[str, str | None] = {h: None for h in hardware}
    if value is None:
        return out
    if isinstance(value, str):
        items: list[tuple[str | None, str]] = []
        for part in value.split(","):
            part = part.strip()
            if part:
                key, sep, val = part.partition("=")
                items.append((key.strip(), val.strip()) if sep else (None, part))
    elif isinstance(value, Mapping):
        items = [(k, v) for k, v in value.items()]
    else:
        items = []
        for v in value:
            items.extend((k, d) for k, d in per_hardware(v, flag, hardware).items() if d is not None)
    for key, val in items:
        if not val:
            raise InputError(flag, f"empty value in {value!r}")
        if key is None:
            for h in hardware:
                out[h] = val
            continue
        name = load_hardware(key).name
        if name not in out:
            raise InputError(flag, f"{key} is not one of the hardware given ({', '.join(hardware)})")
        out[name] = val
    return out


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


def _scenario(kind_or_scenario: str | Scenario, isl: int, osl: int, overrides: dict[str, Any]) -> Scenario:
    if isinstance(kind_or_scenario, Scenario):
        return kind_or_scenario
    try:
        return Scenario(kind=kind_or_scenario, isl=isl, osl=osl, **overrides)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err.get("loc", ())) or "scenario"
        raise InputError(f"--{loc.replace('_', '-')}", err.get("msg", str(exc))) from None


def build_plan(model: str, hardware: str | Sequence[str], cards: str | int | Iterable[int],
               scenarios: Any = None, *, isl: int = 4096, osl: int = 256, seq_lens: Any = None,
               ttft_ms: float | None = None, tpot_ms: float | None = None, concurrency: int | None = None,
               max_concurrency: int = 4096, mtp: int = 0, framework: str = "generic",
               weight_dtype: Any = None, moe_weight_dtype: Any = None, kv_dtype: Any = None,
               method: str = "cpsat", params: SolverParams | None = None, top: int = 3,
               allow_cross_node: bool = False, explain_binding: bool = False) -> SweepPlan:
    from solver.specs.framework import load_framework
    from solver.specs.hardware_catalog import load_hardware
    from solver.specs.model_catalog import load_model
    from solver.specs.precision import resolve_precision

    hw_list = _hardware_list(hardware)
    card_list = parse_cards(cards)
    kinds = parse_scenarios(scenarios)
    for flag, v in (("--isl", isl), ("--osl", osl), ("--max-concurrency", max_concurrency), ("--top", top)):
        if v is None or v < 1:
            raise InputError(flag, f"must be >= 1, got {v}")
    if concurrency is not None and concurrency < 1:
        raise InputError("--concurrency", f"must be >= 1, got {concurrency}")
    if method not in ("cpsat", "exhaustive"):
        raise InputError("--method", f"unknown method {method!r}; known: cpsat, exhaustive")
    lengths = parse_seq_lens(seq_lens, osl) or [(isl, osl)]
    spec = load_model(model)
    hws = [load_hardware(h) for h in hw_list]
    names = [h.name for h in hws]
    if len(set(names)) != len(names):
        raise InputError("--hardware", f"given twice: {', '.join(sorted({n for n in names if names.count(n) > 1}))}")
    load_framework(framework)
    wd = per_hardware(weight_dtype, "--weight-dtype", names)
    mwd = per_hardware(moe_weight_dtype, "--moe-weight-dtype", names)
    kvd = per_hardware(kv_dtype, "--kv-dtype", names)
    for h in hws:  # a dtype the hardware lacks is bad input for the whole sweep: say so before solving
        resolve_precision(spec, h, wd[h.name], mwd[h.name], kvd[h.name])
    params = params or SolverParams()
    overrides = {"ttft_ms": ttft_ms, "tpot_ms": tpot_ms, "concurrency": concurrency,
                 "max_concurrency": max_concurrency, "mtp": mtp}
    out = SweepPlan(spec.name, names, card_list)
    for h_arg, h in zip(hw_list, hws):
        for i, o in lengths:
            for w in card_list:
                for k in kinds:
                    sc = _scenario(k, i, o, overrides)
                    label = k if isinstance(k, str) else sc.kind
                    out.tasks.append(Task(len(out.tasks), model, h_arg, h.name, w, sc, label, framework,
                                          wd[h.name], mwd[h.name], kvd[h.name], method, params, top,
                                          allow_cross_node, explain_binding))
    return out


def _hardware_list(hardware: str | Sequence[str]) -> list[str]:
    items = [hardware] if isinstance(hardware, str) else list(hardware)
    out = [p.strip() for h in items for p in str(h).split(",") if p.strip()]
    if not out:
        raise InputError("--hardware", "give at least one hardware name or YAML path")
    return out


# --------------------------------------------------------------------------------------------- solving


def _r(value: float, col: str) -> float:
    return round(float(value), DIGITS[col]) if math.isfinite(value) else float(value)


def _base_row(t: Task, model_name: str) -> dict[str, Any]:
    return {"hardware": t.hardware_name, "cards": t.cards, "scenario": t.scenario_label, "model": model_name,
            "isl": t.scenario.isl, "osl": t.scenario.osl, "ttft_sla_ms": t.scenario.ttft_ms,
            "tpot_sla_ms": t.scenario.tpot_ms, "weight_dtype": t.weight_dtype or ""}


def solve_task(t: Task) -> list[dict[str, Any]]:
    """Rows of one combination (runs in a worker process when jobs > 1). Tool errors come back as data so that
    they cross the process boundary intact."""
    from solver.api import run_solve
    from solver.rank.select import pattern_name
    from solver.specs.model_catalog import load_model

    try:
        spec = load_model(t.model)
        result, cands = run_solve(t.model, t.hardware, t.cards, t.scenario, t.framework, t.weight_dtype,
                                  t.moe_weight_dtype, t.kv_dtype, t.method, t.params, t.top, t.allow_cross_node,
                                  explain_binding=t.explain_binding)
    except InfeasibleError as err:
        row = _base_row(t, _model_name(t.model))
        row.update(feasible=False, on_front=False, memory_feasible=None,
                   binding_constraint="; ".join(err.binding) or "memory and framework rules combined",
                   note=(err.remedy or str(err)))
        return [row]
    except ShardplanError as err:
        return [{"__error__": type(err).__name__, "field": getattr(err, "field", ""),
                 "problem": getattr(err, "problem", str(err)), "message": str(err)}]

    cand_rank = {(tuple(c.planned.config.knobs().values()), c.planned.batch): c.rank for c in cands}
    planned = list(result.front)
    front_keys = {(tuple(p.config.knobs().values()), p.batch) for p in planned}
    planned += [c.planned for c in sorted(cands, key=lambda c: c.rank)
                if (tuple(c.planned.config.knobs().values()), c.planned.batch) not in front_keys]
    rows = []
    for p in planned:
        key = (tuple(p.config.knobs().values()), p.batch)
        e = p.estimate
        sc = t.scenario
        latency_s = e.ttft_s + max(0, sc.osl - 1) * e.tpot_s
        misses = []
        if not e.memory.feasible:
            misses.append("B.memory_per_rank (full estimate)")
        if sc.ttft_ms is not None and e.ttft_s * 1e3 > sc.ttft_ms * (1 + 1e-6):
            misses.append("SLA.ttft (full estimate)")
        if sc.tpot_ms is not None and e.tpot_s * 1e3 > sc.tpot_ms * (1 + 1e-6):
            misses.append("SLA.tpot (full estimate)")
        binding = list(misses)
        if cand_rank.get(key) == 1 and result.binding:
            binding += result.binding  # the families that bind the recommended operating point (explain_binding)
        row = _base_row(t, spec.name)
        row.update(p.config.knobs())
        row.update(
            attn_dp_size=p.config.attn_dp_size, moe_ep_size=p.config.moe_ep_size,
            memory_per_rank_gb=_r(e.memory.total / GB, "memory_per_rank_gb"),
            ttft_ms=_r(e.ttft_s * 1e3, "ttft_ms"), tpot_ms=_r(e.tpot_s * 1e3, "tpot_ms"),
            output_tokens_per_s_per_rank=_r(e.output_tokens_per_s_per_rank, "output_tokens_per_s_per_rank"),
            output_tokens_per_s=_r(e.output_tokens_per_s, "output_tokens_per_s"),
            tokens_per_s_per_user=_r(e.tokens_per_s_per_user, "tokens_per_s_per_user"),
            feasible=not misses, binding_constraint="; ".join(binding),
            concurrency=p.batch, request_latency_ms=_r(latency_s * 1e3, "request_latency_ms"),
            requests_per_s=_r(e.output_tokens_per_s / sc.osl, "requests_per_s"),
            on_front=key in front_keys, candidate=cand_rank.get(key), pattern=pattern_name(p.config, spec),
            memory_feasible=e.memory.feasible, note="; ".join(e.memory.notes) if misses else "",
        )
        rows.append(row)
    rows.sort(key=lambda r: (-r["output_tokens_per_s_per_rank"], r["request_latency_ms"], r["concurrency"],
                             tuple(r[k] for k in KNOBS)))
    for i, r in enumerate(rows, 1):
        r["rank"] = i
    mark_front(rows)
    return rows


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
    from solver.specs.model_catalog import load_model

    return load_model(model).name


def run_tasks(tasks: Sequence[Task], jobs: int = 1, progress: ProgressFn | None = None) -> list[list[dict]]:
    """Rows per task, in task order whatever the number of worker processes."""
    if jobs < 1:
        raise InputError("--jobs", f"must be >= 1, got {jobs}")
    out: list[list[dict] | None] = [None] * len(tasks)
    done = 0
    if jobs == 1 or len(tasks) <= 1:
        for i, t in enumerate(tasks):
            out[i] = solve_task(t)
            done += 1
            if progress:
                progress(done, len(tasks), t.label)
        return [rows or [] for rows in out]
    pos = {t.index: i for i, t in enumerate(tasks)}
    # spawn, not fork: OR-Tools keeps threads, and a forked copy of a threaded process can hang. Biggest
    # clusters first so the slowest solves do not trail at the end.
    order = sorted(tasks, key=lambda t: -t.cards)
    with ProcessPoolExecutor(max_workers=min(jobs, len(tasks)), mp_context=get_context("spawn")) as pool:
        futures = {pool.submit(solve_task, t): t for t in order}
        try:
            for fut in as_completed(futures):
                t = futures[fut]
                out[pos[t.index]] = fut.result()
                done += 1
                if progress:
                    progress(done, len(tasks), t.label)
        except BaseException:
            for f in futures:
                f.cancel()
            raise
    return [rows or [] for rows in out]


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


def to_frame(rows: Iterable[dict[str, Any]]) -> pd.DataFrame:
    """Rows to a DataFrame with the documented columns and dtypes (nullable integers: empty for infeasible rows)."""
    df = pd.DataFrame(list(rows), columns=list(COLUMNS))
    for c in INT_COLUMNS:
        df[c] = pd.array([None if (v is None or (isinstance(v, float) and math.isnan(v))) else int(v)
                          for v in df[c]], dtype="Int64")
    for c in FLOAT_COLUMNS:
        df[c] = pd.to_numeric(df[c], errors="coerce").astype("float64")
    for c in BOOL_COLUMNS:
        df[c] = pd.array([None if v is None or (isinstance(v, float) and math.isnan(v)) else bool(v)
                          for v in df[c]], dtype="boolean")
    for c in STR_COLUMNS:
        df[c] = df[c].map(lambda v: "" if v is None or (isinstance(v, float) and math.isnan(v)) else str(v))
        df[c] = df[c].astype(object)
    return df


def sweep(model: str, hardware: str | Sequence[str], cards: str | int | Iterable[int], scenarios: Any = None,
          *, jobs: int = 1, progress: ProgressFn | None = None, **kwargs: Any) -> pd.DataFrame:
    """The Pareto table of every combination (see the module docstring). Keyword arguments are those of
    `build_plan` (isl, osl, seq_lens, ttft_ms, tpot_ms, framework, weight_dtype, ...). The wall time in seconds
    is in `df.attrs["wall_s"]`."""
    start = time.perf_counter()
    sp = build_plan(model, hardware, cards, scenarios, **kwargs)
    df = to_frame(sweep_rows(run_tasks(sp.tasks, jobs, progress)))
    df.attrs["wall_s"] = time.perf_counter() - start
    df.attrs["combinations"] = len(sp.tasks)
    return df


# ---------------------------------------------------------------------------------------------- output


FILE_FORMATS = {".csv": "csv", ".json": "json", ".parquet": "parquet", ".pq": "parquet"}


def file_format(path: str | os.PathLike) -> str:
    """CSV unless the extension says JSON (.json) or Parquet (.parquet, .pq)."""
    return FILE_FORMATS.get(Path(path).suffix.lower(), "csv")


def check_writable(path: str | os.PathLike, flag: str = "--out") -> Path:
    """Fail before a long sweep, not after it: the folder must exist and take a new file; Parquet needs pyarrow."""
    p = Path(path).expanduser()
    if p.is_dir():
        raise InputError(flag, f"{p} is a folder; give a file name")
    folder = p.parent if str(p.parent) else Path(".")
    if not folder.is_dir():
        raise InputError(flag, f"folder {folder} does not exist")
    os.unlink(_new_temp(folder, p.name, ".probe", flag))
    if p.exists() and not os.access(p, os.W_OK):
        raise InputError(flag, f"{p} exists and is not writable")
    if flag == "--out" and file_format(p) == "parquet":
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            raise InputError(flag, "Parquet output needs pyarrow (pip install 'shardplan[parquet]'); "
                             "use .csv or .json") from None
    return p


def _new_temp(folder: Path, name: str, suffix: str, flag: str) -> str:
    """Create an empty hidden file beside the target; opened like any new file, so the umask sets its mode
    (tempfile.mkstemp would make it 0600)."""
    for _ in range(100):
        tmp = folder / f".{name}.{secrets.token_hex(4)}{suffix}"
        try:
            with open(tmp, "x"):
                return str(tmp)
        except FileExistsError:
            continue
        except OSError as exc:
            raise InputError(flag, f"cannot write in {folder}: {exc.strerror or exc}") from None
    raise InputError(flag, f"cannot create a temporary file in {folder}")


def atomic_write(path: str | os.PathLike, writer: Callable[[str], None], flag: str = "--out") -> Path:
    """Write through a temporary file in the same folder and rename it into place: never a partial file."""
    p = Path(path).expanduser()
    folder = p.parent if str(p.parent) else Path(".")
    tmp = _new_temp(folder, p.name, ".tmp", flag)
    try:
        writer(tmp)
        if p.is_file():
            shutil.copymode(p, tmp)  # replacing a file keeps its permissions
        os.replace(tmp, p)
    except OSError as exc:
        raise InputError(flag, f"cannot write {p}: {exc.strerror or exc}") from None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return p


def write_table(df: pd.DataFrame, path: str | os.PathLike) -> Path:
    """CSV, JSON (records) or Parquet by extension, written atomically."""
    fmt = file_format(path)
    if fmt == "parquet":
        check_writable(path)  # the pyarrow check

    def write(tmp: str) -> None:
        if fmt == "json":
            df.to_json(tmp, orient="records", indent=1)
        elif fmt == "parquet":
            df.to_parquet(tmp, index=False)
        else:
            df.to_csv(tmp, index=False, lineterminator="\n")

    return atomic_write(path, write)


def read_table(path: str | os.PathLike) -> pd.DataFrame:
    """Read a sweep back with the documented dtypes (CSV, JSON or Parquet by extension)."""
    fmt = file_format(path)
    if fmt == "parquet":
        df = pd.read_parquet(path)
    elif fmt == "json":
        df = pd.read_json(path, orient="records", dtype=False)
    else:
        df = pd.read_csv(path, keep_default_na=False, na_values=[""])
    return to_frame(df.to_dict("records"))
