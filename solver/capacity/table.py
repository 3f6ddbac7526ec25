"""The sweep tables: their documented columns and dtypes (README "Capacity planning" for the aggregated sweep,
docs/disagg.md for `--serving disagg`), and reading and writing them as CSV, JSON (records) or Parquet, atomically;
read_table tells the two kinds apart by their columns."""
from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any, Iterable

import pandas as pd

from solver import outfile
from solver.errors import InputError
from solver.outfile import check_extension
from solver.specs.parallel import KNOBS

# a sweep's cost columns, last and only with --price (capacity.pricing.price_rows fills them)
PRICE_COLUMNS = ("usd_per_hour", "usd_per_million_output_tokens")

# The table's columns, in order. The first block is the documented schema (README "Capacity planning").
COLUMNS: tuple[str, ...] = (
    "hardware", "cards", "scenario", "rank",
    *KNOBS, "attn_dp_size", "moe_ep_size",
    "memory_per_rank_gb", "ttft_ms", "tpot_ms", "output_tokens_per_s_per_rank", "output_tokens_per_s",
    "tokens_per_s_per_user", "feasible", "binding_constraint",
    # context of the row
    "model", "isl", "osl", "ttft_sla_ms", "tpot_sla_ms", "prefix_hit", "mtp", "mtp_accept", "concurrency",
    "request_latency_ms", "requests_per_s",
    "on_front", "candidate", "pattern", "memory_feasible", "weight_dtype", "note", "placement", "sla_edge_from",
)
INT_COLUMNS = ("cards", "rank", *KNOBS, "attn_dp_size", "moe_ep_size", "isl", "osl", "mtp", "concurrency",
               "candidate", "sla_edge_from")
FLOAT_COLUMNS = ("memory_per_rank_gb", "ttft_ms", "tpot_ms", "output_tokens_per_s_per_rank", "output_tokens_per_s",
                 "tokens_per_s_per_user", "ttft_sla_ms", "tpot_sla_ms", "prefix_hit", "mtp_accept",
                 "request_latency_ms", "requests_per_s")
BOOL_COLUMNS = ("feasible", "on_front", "memory_feasible")
STR_COLUMNS = ("hardware", "scenario", "binding_constraint", "model", "pattern", "weight_dtype", "note", "placement")


# The disaggregated sweep's columns (capacity.disagg: one row per xPyD plan), in order; docs/disagg.md documents
# them. A knob column of a module the model lacks is empty, as in the aggregated table.
POOL_COLUMNS = ("workers", "ranks_per_worker", *KNOBS, "attn_dp_size", "moe_ep_size")
DISAGG_COLUMNS: tuple[str, ...] = (
    "hardware", "cards", "scenario", "isl", "osl", "rank", "ratio",
    *(f"prefill_{c}" for c in POOL_COLUMNS), *(f"decode_{c}" for c in POOL_COLUMNS),
    "ranks_used", "concurrency", "ttft_ms", "tpot_ms", "output_tokens_per_s", "output_tokens_per_s_per_rank",
    "input_tokens_per_s", "kv_transfer_ms", "kv_transfer_tier", "prefill_utilization", "feasible", "note",
    "agg_output_tokens_per_s_per_rank", "winner",
    # context of the row
    "binding_constraint", "model", "ttft_sla_ms", "tpot_sla_ms", "prefix_hit", "mtp", "mtp_accept", "weight_dtype",
)
DISAGG_INT_COLUMNS = ("cards", "isl", "osl", "rank", *(f"{ph}_{c}" for ph in ("prefill", "decode")
                                                        for c in POOL_COLUMNS), "ranks_used", "concurrency", "mtp")
DISAGG_FLOAT_COLUMNS = ("ttft_ms", "tpot_ms", "output_tokens_per_s", "output_tokens_per_s_per_rank",
                        "input_tokens_per_s", "kv_transfer_ms", "prefill_utilization",
                        "agg_output_tokens_per_s_per_rank", "ttft_sla_ms", "tpot_sla_ms", "prefix_hit", "mtp_accept")
DISAGG_BOOL_COLUMNS = ("feasible",)
DISAGG_STR_COLUMNS = ("hardware", "scenario", "ratio", "kv_transfer_tier", "note", "winner", "binding_constraint",
                      "model", "weight_dtype")


def mtp_columns(scenario: Any) -> dict[str, Any]:
    """A row's `mtp` and `mtp_accept`: the depth every figure of the row assumed (0: off) and the acceptance it was
    priced at (empty where MTP is off: nothing read it), so a row re-read or set beside another sweep's says so."""
    return {"mtp": scenario.mtp, "mtp_accept": scenario.mtp_accept if scenario.mtp else None}


def _missing(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v)) or v is pd.NA


def _typed(rows: Iterable[dict[str, Any]], columns, ints, floats, bools, strs) -> pd.DataFrame:
    df = pd.DataFrame(list(rows), columns=list(columns))
    for c in ints:
        df[c] = pd.array([None if _missing(v) else int(v) for v in df[c]], dtype="Int64")
    for c in floats:
        df[c] = pd.to_numeric(df[c], errors="coerce").astype("float64")
    for c in bools:
        df[c] = pd.array([None if _missing(v) else bool(v) for v in df[c]], dtype="boolean")
    for c in strs:
        df[c] = df[c].map(lambda v: "" if _missing(v) else str(v)).astype(object)
    return df


def to_frame(rows: Iterable[dict[str, Any]], priced: bool = False) -> pd.DataFrame:
    """Rows to a DataFrame with the documented columns and dtypes (nullable integers: empty for infeasible rows);
    `priced`: PRICE_COLUMNS last (a sweep given --price)."""
    extra = PRICE_COLUMNS if priced else ()
    return _typed(rows, (*COLUMNS, *extra), INT_COLUMNS, (*FLOAT_COLUMNS, *extra), BOOL_COLUMNS, STR_COLUMNS)


def to_disagg_frame(rows: Iterable[dict[str, Any]], priced: bool = False) -> pd.DataFrame:
    """Disaggregated rows to a DataFrame with DISAGG_COLUMNS in their order and dtypes, whatever keys the first
    row has (an infeasible one has no pool columns); `priced`: PRICE_COLUMNS last."""
    extra = PRICE_COLUMNS if priced else ()
    return _typed(rows, (*DISAGG_COLUMNS, *extra), DISAGG_INT_COLUMNS, (*DISAGG_FLOAT_COLUMNS, *extra),
                  DISAGG_BOOL_COLUMNS, DISAGG_STR_COLUMNS)


def is_disagg(columns: Iterable[str]) -> bool:
    """A disaggregated sweep's table: it has the ratio and both pools' worker counts."""
    return {"ratio", "prefill_workers", "decode_workers"} <= set(columns)


FILE_FORMATS = {".csv": "csv", ".json": "json", ".parquet": "parquet", ".pq": "parquet"}


def file_format(path: str | os.PathLike, flag: str = "--out") -> str:
    """CSV (.csv), JSON (.json) or Parquet (.parquet, .pq) by extension; any other extension is refused."""
    return FILE_FORMATS[check_extension(path, flag, FILE_FORMATS)]


def check_writable(path: str | os.PathLike, flag: str = "--out") -> Path:
    """Fail before a long sweep, not after it (solver.outfile: the target, its folder, a temporary file);
    a table's extension must be known and Parquet needs pyarrow. A --plot file is checked by the plot writer."""
    if flag == "--out" and file_format(path, flag) == "parquet":
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            raise InputError(flag, "Parquet output needs pyarrow (pip install 'shardplan[parquet]'); "
                             "use .csv or .json") from None
    return outfile.check_writable(path, flag)


atomic_write = outfile.atomic_write


def write_table(df: pd.DataFrame, path: str | os.PathLike) -> Path:
    """CSV, JSON (records) or Parquet by extension, written atomically."""
    fmt = file_format(path)
    if fmt == "parquet":
        check_writable(path)  # the pyarrow check

    def write(tmp: str) -> None:
        if fmt == "json":  # the text stdout's --format json prints, its final newline included
            with open(tmp, "w", encoding="utf-8") as fh:
                fh.write(df.to_json(orient="records", indent=1) + "\n")
        elif fmt == "parquet":
            df.to_parquet(tmp, index=False)
        else:
            df.to_csv(tmp, index=False, lineterminator="\n")

    return atomic_write(path, write)


def read_table(path: str | os.PathLike) -> pd.DataFrame:
    """Read a sweep back, aggregated or disaggregated (by its columns), with its documented columns and dtypes
    (CSV, JSON or Parquet by extension). A file that cannot be read, or that lacks any of the table's columns
    (not a sweep this writes), is an InputError naming `path`."""
    fmt = file_format(path, "path")
    try:
        if fmt == "parquet":
            df = pd.read_parquet(path)
        elif fmt == "json":
            df = pd.read_json(path, orient="records", dtype=False)
        else:
            df = pd.read_csv(path, keep_default_na=False, na_values=[""])
    except (OSError, ValueError, ImportError) as exc:  # missing, unreadable, not the format its extension says
        raise InputError("path", f"{os.fspath(path)}: cannot read it as {fmt.upper()} ({exc})") from None
    disagg = is_disagg(df.columns)
    missing = [c for c in (DISAGG_COLUMNS if disagg else COLUMNS) if c not in df.columns]
    if missing:
        raise InputError("path", f"{os.fspath(path)}: not a sweep table; it lacks the column"
                         f"{'s' if len(missing) > 1 else ''} {', '.join(missing[:5])}"
                         f"{f' and {len(missing) - 5} more' if len(missing) > 5 else ''}")
    # a priced sweep's columns (--price): both or neither, typed as the sweep wrote them
    priced = [c for c in PRICE_COLUMNS if c in df.columns]
    if priced and len(priced) < len(PRICE_COLUMNS):
        raise InputError("path", f"{os.fspath(path)}: a priced sweep table has both of {', '.join(PRICE_COLUMNS)}; "
                         f"it has only {priced[0]}")
    return (to_disagg_frame if disagg else to_frame)(df.to_dict("records"), priced=bool(priced))
