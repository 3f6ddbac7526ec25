"""The sweep table: its documented columns and dtypes (README "Capacity planning"), and reading and writing it
as CSV, JSON (records) or Parquet, atomically."""
from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any, Callable, Iterable

import pandas as pd

from solver import outfile
from solver.errors import InputError
from solver.outfile import check_extension
from solver.specs.parallel import KNOBS

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
