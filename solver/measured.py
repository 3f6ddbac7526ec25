"""Rows of measured-serving tables (the calibration CSV's columns) turned into specs and workloads.

Column meaning (facts/measurements.md): `tp` = attention TP, `attention_dp` = attention DP, world = tp x
attention_dp = moe_tp x moe_ep; `gemm_quant_mode` / `moe_quant_mode` are the weight formats of the dense GEMMs
and of the routed experts; `precision` is the row's headline format; `backend` is the framework. Dense models
run every module at TP = tp (their moe_* columns are read but not used).

Blank cells (empty, NaN or missing column) follow one convention, applied in this order:

- attention_dp blank -> 1 (no attention DP), so world = tp;
- moe_ep blank -> world / moe_tp when moe_tp is given, else 1;
- moe_tp blank -> world / moe_ep for MoE models (moe_ep given or 1), tp for dense models (dense models use
  moe_tp = tp and moe_ep = 1 whatever the cells say; a negative cell is still an error);
- 0 in attention_dp, moe_tp or moe_ep of a dense model is blank (the CSV writes 0 where a column does not
  apply); in a MoE model a 0 there is an error (it would be ambiguous);
- pp blank -> 1 (other values are rejected: the estimator models pipeline stages, but the table's convention,
  world = tp x attention_dp = moe_tp x moe_ep, does not say how pp enters the world or the MoE sizes);
- gemm_quant_mode / moe_quant_mode blank -> the `precision` column's format (fp8 -> fp8, fp4 -> nvfp4,
  bf16/fp16 -> bf16); when that is blank too, the checkpoint's own formats (the model's quantization_config);
- backend blank -> the `generic` framework profile.

The GEMM format applies to the GEMMs the checkpoint quantizes: groups a checkpoint keeps in 16 bits stay so
(`keep_unconverted`), and an NVFP4 format on a MoE model quantizes the routed experts only
(`precision.experts_only`: attention and the dense GEMMs keep the checkpoint's format). Each says so in a note.

`concurrency` is the benchmark's client concurrency over the whole deployment (on attention-DP rows too; the
corrected calibration CSV writes it so), and the serving model spreads it over the DP ranks itself.

The row must be runnable under its framework: the profile's error rules (framework.py) are evaluated on the
row's configuration, and a violation is an InputError naming `tp` (e.g. attention TP 28 on a 128-head model).

Required and never defaulted: model, system, tp, isl, osl, concurrency. A zero, negative or non-integer size,
an unknown model / system / framework / number format, a format the hardware can neither compute nor hold
weight-only, or moe_tp x moe_ep != world for a MoE model raises `InputError` whose field is the CSV column
(`predict_rows` turns it into the row's `error` column).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any, Callable, Iterable, Mapping

from solver.catalog import DEFAULT_FRAMEWORK
from solver.errors import InputError
from solver.estimate.compute import Factors
from solver.estimate.serving import DEFAULT_REQUEST_OVERHEAD_S, Estimate, Workload, estimate
from solver.specs.fitted import fitted_stamp
from solver.specs.framework import FrameworkProfile, load_framework
from solver.specs.rule_env import device_facts, model_env
from solver.specs.hardware import Hardware
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model import ModelSpec
from solver.specs.model_catalog import load_model
from solver.specs.parallel import ParallelConfig, make_parallel_config
from solver.specs.dtypes import number_format
from solver.specs.precision import Precision, experts_only, resolve_precision
from solver.specs.config.read import no_mtp_layers
from solver.specs.limits import MAX_CARDS, MAX_CONCURRENCY, MAX_MTP, MAX_TOKENS
from solver.specs.scenario import DEFAULT_MTP_ACCEPT, accept_unread

REQUIRED_COLUMNS = ("model", "system", "isl", "osl", "concurrency", "tp")
# every column case_from_row reads (the module docstring's conventions); `estimate --from-csv` names the others
READ_COLUMNS = REQUIRED_COLUMNS + ("backend", "pp", "attention_dp", "moe_tp", "moe_ep", "precision", "gemm_quant_mode",
                                   "moe_quant_mode", "mtp", "mtp_accept")
# the `precision` column's headline format -> the weight format it implies when the quant columns are blank
PRECISION_TO_FORMAT = {"fp8": "fp8", "fp4": "nvfp4", "nvfp4": "nvfp4", "bf16": "bf16", "fp16": "bf16",
                       "float16": "bf16", "bfloat16": "bf16", "int8": "int8", "int4": "int4"}


# the measured columns `estimate --from-csv` carries to its output beside its predictions, unread by the estimate
MEASURED_COLUMNS = ("ttft_ms", "tpot_ms")
# a measured time this many times below the prediction is a unit slip (seconds in an _ms column: 1000x), not the
# estimate's error, which on the calibration rows has a median of 10-22% (README.md, accuracy)
UNIT_SLIP_RATIO = 100


def measured_cell_notes(rows: Iterable[Mapping[str, Any]], first_line: int = 2,
                        own: Callable[[Mapping[str, Any]], bool] | None = None) -> list[str]:
    """What the measured columns of evaluated rows (each with its `<col>_pred`) hold that no comparison can read:
    a cell that is not a number, and a time UNIT_SLIP_RATIO x below its prediction (seconds written as ms). One
    note per column and kind, with the count and the first line. `own`: whether a row's prediction is of the
    deployment it measured (a disaggregated row with blank worker counts is predicted at 1 worker per pool, so a
    gap there is the convention's, not a unit slip); None: every row's is."""
    bad: dict[tuple[str, str], list[tuple[int, str, str]]] = {}
    for line, row in enumerate(rows, start=first_line):
        for col in MEASURED_COLUMNS:
            cell, pred = row.get(col), row.get(f"{col}_pred")
            if _blank(cell) or _blank(pred):
                continue
            try:
                value = float(str(cell))
            except ValueError:
                bad.setdefault((col, "text"), []).append((line, str(cell), str(pred)))
                continue
            # a time of 0 (no decode step at OSL 1) is in no unit: no slip to name
            if (math.isfinite(value) and 0 < value * UNIT_SLIP_RATIO < float(str(pred))
                    and (own is None or own(row))):
                bad.setdefault((col, "unit"), []).append((line, str(cell), str(pred)))
    notes = []
    for (col, kind), hits in bad.items():
        line, cell, pred = hits[0]
        if kind == "text":
            notes.append(f"{col} is no number in {len(hits)} evaluated row(s) (first: line {line}, {cell!r}): the "
                         "output carries it beside the prediction, and no comparison can read it")
        else:
            notes.append(f"{col} is below 1/{UNIT_SLIP_RATIO} of the prediction in {len(hits)} evaluated row(s) "
                         f"(first: line {line}, {cell} against {float(pred):.4g} ms): seconds written in a "
                         "milliseconds column?")
    return notes


def read_measured_csv(path_in: str, flag: str = "--from-csv") -> tuple[list[str], list[dict[str, Any]]]:
    """(header, rows as text cells) of a measured-serving CSV (`estimate --from-csv`, `calibrate --from-csv`);
    InputError naming `flag` for a file that is missing or unreadable."""
    import csv
    from pathlib import Path

    src = Path(path_in)
    if not src.is_file():
        raise InputError(flag, f"{path_in}: a folder, not a CSV file" if src.is_dir() else f"file not found: {path_in}")
    try:
        with src.open(newline="", encoding="utf-8-sig") as fh:
            reader = csv.DictReader(fh)
            return list(reader.fieldnames or []), list(reader)
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise InputError(flag, f"cannot read {path_in}: {exc}") from None


def row_files_beside(row: Mapping[str, Any], folder: Any) -> dict[str, Any]:
    """The row with its file names (model config, hardware or profile YAML) read beside the CSV's `folder`, as a
    deployment file's are."""
    from solver.specs.deployment import beside

    return {**row, **{c: beside(row[c], folder, hub_ids=c == "model") for c in ("model", "system", "backend")
                      if row.get(c)}}


@dataclass(frozen=True)
class Case:
    model: ModelSpec
    hw: Hardware
    pc: ParallelConfig
    prec: Precision
    framework: FrameworkProfile
    workload: Workload
    # the framework x hardware multipliers and overheads (FrameworkProfile.efficiency_for), read once
    efficiency: dict[str, float] = field(default_factory=dict)


def _blank(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, float) and math.isnan(value):
        return True
    return isinstance(value, str) and value.strip().lower() in ("", "nan", "none", "null")


def _cap(col: str) -> int:
    """The largest value a column may hold: the command line's caps (solver.specs.limits) for the same figure; a
    larger one is a typo whose estimate would be inf or nan, not a prediction."""
    if col in ("isl", "osl"):
        return MAX_TOKENS
    if col.endswith(("concurrency", "batch")):
        return MAX_CONCURRENCY
    if col == "mtp":
        return MAX_MTP
    return MAX_CARDS  # sizes, degrees and worker counts


def _int(row: Mapping[str, Any], col: str, minimum: int = 1) -> int:
    value = row.get(col)
    if _blank(value):
        said = f" (it says {value.strip()!r})" if isinstance(value, str) and value.strip() else ""
        raise InputError(col, f"is blank{said} (required)")
    try:
        f = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise InputError(col, f"not a number: {value!r}") from None
    if not math.isfinite(f) or f != int(f) or not minimum <= f <= _cap(col):  # inf: int(f) would overflow
        raise InputError(col, f"must be an integer in [{minimum}, {_cap(col):,}], got {value!r}")
    return int(f)


def _opt_int(row: Mapping[str, Any], col: str) -> int | None:
    return None if _blank(row.get(col)) else _int(row, col)


def _fmt(mode: str) -> str:
    mode = str(mode).strip().lower()
    return {"fp8_block": "fp8_block", "fp8": "fp8", "nvfp4": "nvfp4", "mxfp4": "mxfp4", "w4afp8": "w4afp8",
            "int4_wo": "int4", "int8_wo": "int8", "float16": "bf16", "bf16": "bf16", "w8a8": "int8"}.get(mode, mode)


def _text(row: Mapping[str, Any], col: str) -> str | None:
    value = row.get(col)
    return None if _blank(value) else str(value).strip()


def _dense_opt_int(row: Mapping[str, Any], col: str) -> int | None:
    """A dense model's DP/MoE cell: blank or 0 = not given."""
    if _blank(row.get(col)):
        return None
    return _int(row, col, minimum=0) or None


def parallel_sizes(row: Mapping[str, Any], is_moe: bool) -> tuple[int, int, int, int]:
    """(tp, attention_dp, moe_tp, moe_ep) with the blank-cell convention of the module docstring."""
    tp = _int(row, "tp")
    if not is_moe:  # read (a negative cell is still an error) but unused: dense FFNs follow attention TP
        dp = _dense_opt_int(row, "attention_dp") or 1
        _dense_opt_int(row, "moe_tp"), _dense_opt_int(row, "moe_ep")
        return tp, dp, tp, 1
    for col in ("attention_dp", "moe_tp", "moe_ep"):
        if not _blank(row.get(col)) and _dense_opt_int(row, col) is None:
            raise InputError(col, f"0 on a MoE model ({row.get(col)!r}): a 0 stands for a column that does not "
                                  "apply, which only a dense model has; give the size or leave the cell blank")
    dp = _opt_int(row, "attention_dp") or 1
    world = tp * dp
    moe_tp, moe_ep = _opt_int(row, "moe_tp"), _opt_int(row, "moe_ep")
    if moe_ep is None:
        if moe_tp is not None and world % moe_tp:
            raise InputError("moe_tp", f"{moe_tp} does not divide tp x attention_dp = {world}")
        moe_ep = world // moe_tp if moe_tp is not None else 1
    if moe_tp is None:
        if world % moe_ep:
            raise InputError("moe_ep", f"{moe_ep} does not divide tp x attention_dp = {world}")
        moe_tp = world // moe_ep
    if moe_tp * moe_ep != world:
        # a blank attention_dp was read as 1: said, since a lost DP cell is the likely cause
        blank = " (attention_dp blank, read as 1)" if _blank(row.get("attention_dp")) else ""
        raise InputError("moe_tp", f"moe_tp x moe_ep = {moe_tp * moe_ep} differs from tp x attention_dp = "
                                   f"{world}{blank}")
    return tp, dp, moe_tp, moe_ep


def weight_formats(row: Mapping[str, Any]) -> tuple[str | None, str | None]:
    """(gemm format, MoE format) by the blank-cell convention; None = the checkpoint's."""
    headline = _text(row, "precision")
    fallback = None
    if headline is not None:
        fallback = PRECISION_TO_FORMAT.get(headline.lower())
        if fallback is None:
            raise InputError("precision", f"unknown precision {headline!r}; known: {', '.join(PRECISION_TO_FORMAT)}")
    gemm, moe = _text(row, "gemm_quant_mode"), _text(row, "moe_quant_mode")
    return (_fmt(gemm) if gemm else fallback), (_fmt(moe) if moe else fallback)


@lru_cache(maxsize=64)
def _framework(name: str) -> FrameworkProfile:
    return load_framework(name)  # profiles are frozen: one shared instance per name


@lru_cache(maxsize=256)
def _efficiency(framework: str, hardware: str, fitted_stamp: int) -> tuple[tuple[str, float], ...]:
    return tuple(sorted(_framework(framework).efficiency_for(hardware).items()))


def _column_error(col: str, exc: InputError) -> InputError:
    return InputError(col, exc.problem)


def case_from_row(row: Mapping[str, Any], framework: str | None = None, waves: int | None = None) -> Case:
    """A row as specs + a serving workload. Raises InputError naming the column for anything unusable."""
    missing = [c for c in REQUIRED_COLUMNS if c not in row]
    if missing:
        raise InputError(missing[0], f"missing column(s): {', '.join(missing)}")
    for col in ("model", "system"):
        if _blank(row.get(col)):
            raise InputError(col, "is blank (required)")
    try:
        model = load_model(str(row["model"]).strip())
    except InputError as exc:
        raise _column_error("model", exc) from None
    try:
        hw = load_hardware(str(row["system"]).strip())
    except InputError as exc:
        raise _column_error("system", exc) from None
    fw_name = framework or _text(row, "backend") or DEFAULT_FRAMEWORK
    try:
        fw = _framework(fw_name)
    except InputError as exc:
        raise _column_error("backend", exc) from None
    # the engine as profiled has no model for it: the row is refused as `estimate` refuses the pairing
    fw.check_model(model, "backend", hw.vendor)
    isl, osl, conc = _int(row, "isl"), _int(row, "osl"), _int(row, "concurrency")
    tp, dp, moe_tp, moe_ep = parallel_sizes(row, model.is_moe)
    pp = _opt_int(row, "pp")
    if pp not in (None, 1):
        raise InputError("pp", f"{pp}: rows with pipeline stages are not read (the table's world = tp x "
                               "attention_dp = moe_tp x moe_ep does not say how pp enters it); estimate --pp prices "
                               "a pipeline config")
    world = tp * dp
    # dense FFN, o_proj and vocabulary layers follow attention TP in these frameworks (o_proj_tp_size 1 =
    # o_proj split with attention TP, ParallelConfig.oproj_shards); MoE has its own TP
    try:
        pc = make_parallel_config(world, attn_tp_size=tp, dense_tp_size=tp, embed_tp_size=tp,
                                  lmhead_tp_size=tp,
                                  moe_tp_size=moe_tp if model.is_moe else tp)
    except InputError as exc:
        raise _column_error("moe_tp" if "moe" in exc.field else "tp", exc) from None
    mtp, accept = mtp_columns(row, model)
    too_deep = fw.mtp_past_max(mtp)
    if too_deep:
        raise InputError("mtp", too_deep)
    _framework_rules(fw, model, hw, pc, conc, mtp)
    gemm, moe = weight_formats(row)
    headline = (_text(row, "precision") or "").lower()
    kv = "fp8" if headline in ("fp8", "fp4", "nvfp4") and hw.supports("fp8") else None
    try:
        prec = resolve_precision(model, hw, weight_dtype=gemm, moe_weight_dtype=moe if model.is_moe else None,
                                 kv_dtype=kv)
    except InputError as exc:
        col = {"--weight-dtype": "gemm_quant_mode", "--moe-weight-dtype": "moe_quant_mode"}.get(exc.field, "precision")
        raise _column_error(col, exc) from None
    prec = experts_only(keep_unconverted(prec, model, gemm), model, hw)
    eff = dict(_efficiency(fw_name, hw.name, fitted_stamp()))
    wl = Workload("serving", isl=isl, osl=osl, concurrency=conc, mtp=mtp, mtp_accept=accept,
                  request_overhead_s=float(eff.get("request_overhead_s", DEFAULT_REQUEST_OVERHEAD_S)),
                  **({"benchmark_waves": waves} if waves else {}))
    return Case(model, hw, pc, prec, fw, wl, eff)


def keep_unconverted(prec: Precision, model: ModelSpec, gemm: str | None) -> Precision:
    """The row's GEMM format applies to the GEMMs the checkpoint quantizes. A quantized checkpoint that keeps a
    module group in 16 bits (quantization_config.modules_to_not_convert: gpt-oss keeps self_attn, the router,
    embedding and lm_head in BF16, facts/model_configs/openai--gpt-oss-120b.json) is served that way whatever the
    row's headline format: the engine loads the published weights, it does not re-quantize them."""
    q = model.quant
    if gemm is None or q.method == "none":
        return prec
    kept = {g: getattr(q, g) for g in ("attention", "dense") if getattr(q, g) in ("bf16", "fp16")
            and prec.fmt(g).name != getattr(q, g)}
    if not kept:
        return prec
    weights = {**prec.weights, **{g: number_format(f) for g, f in kept.items()}}
    note = ", ".join(f"{g} stays {f} (not converted in the checkpoint)" for g, f in kept.items())
    return replace(prec, weights=weights, notes=(*prec.notes, note))


def mtp_columns(row: Mapping[str, Any], model: ModelSpec) -> tuple[int, float]:
    """(MTP depth, acceptance rate of each draft token) from the optional `mtp` / `mtp_accept` columns (blank or
    absent: 0, the default rate): a row measured with MTP on is priced with its draft tokens, never without."""
    mtp = _int(row, "mtp", minimum=0) if not _blank(row.get("mtp")) else 0
    if mtp and not model.num_mtp_layers:
        raise InputError("mtp", f"{mtp}: {no_mtp_layers(model.name)}; set it to 0")
    if _blank(row.get("mtp_accept")):
        return mtp, DEFAULT_MTP_ACCEPT
    value = row["mtp_accept"]
    try:
        accept = float(value)
    except (TypeError, ValueError):
        raise InputError("mtp_accept", f"not a number: {value!r}") from None
    if not 0 < accept <= 1:
        raise InputError("mtp_accept", f"must be a fraction in (0, 1], got {value!r}")
    unread = accept_unread(mtp, accept, "the mtp column")
    if unread:
        raise InputError("mtp_accept", unread)
    return mtp, accept


def _framework_rules(fw: FrameworkProfile, model: ModelSpec, hw: Hardware, pc: ParallelConfig,
                     concurrency: int, mtp: int = 0) -> None:
    """The framework's error rules on the row's configuration (module docstring)."""
    env = model_env(pc.settings(), model, **device_facts(hw), world=pc.world_size, batch=concurrency, mtp=mtp)
    errors = fw.check(env, "error")
    if errors:
        raise InputError("tp", fw.refusal(errors))


def factors(case: Case) -> Factors:
    """Hardware factors scaled by the framework's fitted multipliers for this hardware."""
    from solver.estimate.compute import factors_for

    return factors_for(case.hw, case.efficiency or case.framework.efficiency_for(case.hw))


def predict_row(row: Mapping[str, Any], framework: str | None = None) -> Estimate:
    """The serving estimate for one row (raises InputError naming the column when it cannot be evaluated)."""
    case = case_from_row(row, framework)
    return estimate(case.model, case.hw, case.pc, case.prec, factors(case), case.workload)


def predict_rows(rows: Iterable[Mapping[str, Any]], framework: str | None = None) -> list[dict[str, Any]]:
    """Batch mode: each row plus pred_ttft_ms / pred_tpot_ms, or an `error` column ("column: problem")."""
    out = []
    for row in rows:
        rec = dict(row)
        try:
            est = predict_row(row, framework)
            rec.update(pred_ttft_ms=est.ttft_s * 1e3, pred_tpot_ms=est.tpot_s * 1e3, error="")
        except InputError as exc:
            rec.update(pred_ttft_ms=None, pred_tpot_ms=None, error=str(exc))
        out.append(rec)
    return out
