"""`shardplan estimate`: memory, TTFT, TPOT and throughput of one given parallel_config, or of many CSV rows."""
from __future__ import annotations

import csv
import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from solver.catalog import DEFAULT_FRAMEWORK
from solver.cli.options import (MODEL, CARDS, CONCURRENCY, FRACTION, MTP, MTP_ACCEPT_HELP, NAME, TOKENS, Deferred,
                                dtype_options, factors_option, format_option, given, knob_options,
                                prefix_hit_option)
from solver.errors import InputError, ShardplanError
from solver.report.render import console, dump
from solver.specs.knobs import CONFIG_FLAGS

if TYPE_CHECKING:
    from solver.estimate.serving import Workload

PRED_COLUMNS = ("ttft_ms_pred", "tpot_ms_pred", "ttft_err", "tpot_err", "error")


def _single(model_name: str, hardware: str, cards: int, knobs: dict[str, Any], wl: Workload, weight_dtype,
            moe_weight_dtype, kv_dtype, framework: str, fmt: str, afd: bool = False) -> None:
    from solver.one_config import estimate_config
    from solver.report.estimate_view import render_estimate

    res = estimate_config(model_name, hardware, cards, knobs, wl, weight_dtype, moe_weight_dtype, kv_dtype, framework,
                          afd)
    for line in res.notes:
        click.echo(f"note: {line}", err=True)
    data = res.as_dict()
    if fmt != "table":
        click.echo(dump(data, fmt))
        return
    render_estimate(data, console())


def _fmt_num(v: float) -> str:
    return f"{v:.4f}"


def _rel_err(predicted_ms: float, measured: Any) -> str:
    """predicted / measured - 1 (benchmarks/accuracy.errors), as a fraction; blank where no positive measured
    number stands in the cell (measured_cell_notes names the cells that are not numbers)."""
    try:
        value = float(str(measured))
    except ValueError:
        return ""
    return f"{predicted_ms / value - 1:+.4f}" if math.isfinite(value) and value > 0 else ""


def run_csv(path_in: str, path_out: str, framework: str | None) -> tuple[int, int, list[str]]:
    """Evaluate every row; a row that cannot be evaluated gets `error` and the run goes on. (rows, errors, notes):
    the notes say which conventions stood in for cells the rows leave blank where that changes the prediction."""
    from solver.measured import (MEASURED_COLUMNS, READ_COLUMNS, REQUIRED_COLUMNS, measured_cell_notes, predict_row,
                                 read_measured_csv, row_files_beside)
    from solver.outfile import atomic_write, check_extension, check_writable
    from solver.specs.framework import load_framework

    if framework is not None:  # a profile every row would fail on is bad input, not N row errors
        load_framework(framework)
    if path_out != "-":  # before the rows are evaluated: a bad target fails at once
        check_extension(path_out, "--out", (".csv",))
        check_writable(path_out, "--out")
    src = Path(path_in)
    header, rows = read_measured_csv(path_in)
    from solver.measured_disagg import is_complete, is_disagg

    disagg = is_disagg(header)
    if disagg:  # prefill_* / decode_* columns: disaggregated rows (solver.measured_disagg)
        from solver.measured_disagg import READ_COLUMNS, REQUIRED_COLUMNS  # noqa: F811
        from solver.measured_disagg import predict_disagg_row as predict_row  # noqa: F811
    missing = [c for c in REQUIRED_COLUMNS if c not in header]
    if missing:
        near = {h.strip().lower(): h for h in header}
        alike = [f"{near[c]!r} for {c}" for c in missing if c in near]
        raise InputError("--from-csv", f"{path_in}: missing column(s): {', '.join(missing)}"
                         + (f" (the header has {', '.join(alike)}: names are matched exactly, in lower case)"
                            if alike else ""))
    twice = sorted({c for c in header if header.count(c) > 1})
    if twice:  # the reader would keep the last column of the name and drop the other unread
        raise InputError("--from-csv", f"{path_in}: column(s) {', '.join(map(repr, twice))} given twice; keep one")
    if not rows:  # a header alone: an output of no predictions would read as a run that found nothing wrong
        raise InputError("--from-csv", f"{path_in}: a header and no rows; nothing to evaluate")
    fieldnames = header + [c for c in PRED_COLUMNS if c not in header]
    out: list[dict[str, Any]] = []
    errors = 0
    for line, row in enumerate(rows, start=2):
        extra = row.pop(None, None)  # cells past the header's columns (csv.DictReader's restkey)
        rec = dict(row)
        try:
            if extra is not None or None in row.values():  # a short row: csv.DictReader's restval
                given = len(header) + len(extra or ()) - sum(v is None for v in row.values())
                raise InputError(f"line {line}", f"{given} cells for {len(header)} columns; a cell was added or "
                                                 "lost (an unquoted comma?)")
            # a row's file names (model config, hardware or profile YAML) are read beside the CSV, as a
            # deployment file's are
            est = predict_row(row_files_beside(row, src.parent), framework)
            rec.update(ttft_ms_pred=_fmt_num(est.ttft_s * 1e3), tpot_ms_pred=_fmt_num(est.tpot_s * 1e3), error="",
                       ttft_err=_rel_err(est.ttft_s * 1e3, row.get("ttft_ms")),
                       tpot_err=_rel_err(est.tpot_s * 1e3, row.get("tpot_ms")))
        except ShardplanError as exc:
            errors += 1
            rec.update(ttft_ms_pred="", tpot_ms_pred="", error=str(exc))
        except Exception as exc:  # noqa: BLE001 - a batch run reports the row and goes on
            errors += 1
            rec.update(ttft_ms_pred="", tpot_ms_pred="", error=f"{type(exc).__name__}: {exc}")
        out.append(rec)
    if path_out == "-":
        _write(sys.stdout, fieldnames, out)
    else:
        def write(tmp: str) -> None:
            with open(tmp, "w", newline="", encoding="utf-8") as fh:
                _write(fh, fieldnames, out)

        atomic_write(path_out, write, "--out")
    if out and errors == len(out):
        first = out[0]["error"]
        raise InputError("--from-csv", f"none of the {len(out)} rows could be evaluated (first: {first[:200]})"
                         + ("" if path_out == "-" else f"; the errors are in {path_out}"))
    notes = measured_cell_notes(out, own=is_complete if disagg else None)
    unread = [c for c in header if c not in READ_COLUMNS and c not in MEASURED_COLUMNS]
    if unread:  # carried through as given: a measurement under another name would otherwise pass unseen
        times = any("ttft" in c.lower() or "tpot" in c.lower() for c in unread)
        notes.append(f"column(s) not read, carried to the output as given: {', '.join(unread)}"
                     + (" (measured times are read from ttft_ms / tpot_ms, in milliseconds)" if times else ""))
    for col in ("ttft", "tpot"):
        errs = sorted(abs(float(r[f"{col}_err"])) for r in out if r.get(f"{col}_err"))
        if errs:  # what benchmarks/accuracy.py prints for the calibration rows: the median |pred / measured - 1|
            mid = len(errs) // 2
            median = errs[mid] if len(errs) % 2 else (errs[mid - 1] + errs[mid]) / 2
            notes.append(f"{col.upper()} error (predicted / measured - 1, column {col}_err): median |error| "
                         f"{median:.1%} over {len(errs)} rows with a measurement")
    guessed = [line for line, r in enumerate(out, start=2) if disagg and not r["error"] and not is_complete(r)]
    if guessed:  # a convention, not a measurement: say how many predictions rest on it
        notes.append(f"{len(guessed)} of {len(out) - errors} evaluated rows leave prefill_workers / decode_workers "
                     f"blank: read as 1 worker per pool (first: line {guessed[0]}); their "
                     "predictions are of a deployment the row does not state (docs/disagg.md)")
    if framework is not None:  # --framework replaces the backend column: say whose rows it changed
        others = sorted({str(r.get("backend") or "").strip() for r in out} - {"", framework})
        if others:
            n = sum(str(r.get("backend") or "").strip() in others for r in out)
            notes.append(f"--framework {framework} replaces the backend column of {n} rows "
                         f"({', '.join(others)}): each is estimated as if served by {framework}")
    return len(out), errors, notes


def _write(fh, fieldnames: list[str], rows: list[dict[str, Any]]) -> None:
    writer = csv.DictWriter(fh, fieldnames=fieldnames, extrasaction="ignore")
    writer.writeheader()
    writer.writerows(rows)


def _mtp_accept() -> float:
    from solver.specs.scenario import DEFAULT_MTP_ACCEPT  # a pydantic module: loaded when the command parses

    return DEFAULT_MTP_ACCEPT


@click.command("estimate")
@click.argument("model", type=MODEL, required=False)
@click.option("--hardware", "hardware", type=NAME, default=None, help="hardware name or YAML path")
@click.option("--cards", type=CARDS, default=None, help="world size W (ranks)")
@knob_options
@click.option("--isl", type=TOKENS, default=None, help="serving, or --phase decode over them: input tokens per request")
@click.option("--osl", type=TOKENS, default=None, help="serving, or --phase decode over them: output tokens per request (a decode is costed at ISL + OSL/2 and holds ISL + OSL)")
@click.option("--concurrency", type=CONCURRENCY, default=None, help="serving: requests in flight across the deployment")
@click.option("--phase", type=click.Choice(["prefill", "decode"]), default=None,
              help="one phase instead of serving: prefill of BATCH prompts or a decode step of BATCH sequences")
@click.option("--batch", type=CONCURRENCY, default=None, help="with --phase: prompts / sequences across the deployment")
@click.option("--seq-len", type=TOKENS, default=None, help="with --phase: prompt length / context length")
@click.option("--mtp", type=MTP, default=0, show_default=True, help="MTP (next-n) depth; 0 = off")
@click.option("--mtp-accept", type=FRACTION, default=_mtp_accept, show_default=True, cls=Deferred,
              help=MTP_ACCEPT_HELP)
@prefix_hit_option
@dtype_options
@click.option("--framework", type=NAME, default=None,
              help="framework profile name or YAML (default generic; CSV mode: the row's backend column)")
@click.option("--afd", is_flag=True, default=False,
              help="attention-FFN disaggregation: half the cards attention, half FFN, the knobs within each half "
                   "(a decode; the framework's profile must support it)")
@click.option("--from-csv", "from_csv", type=NAME, default=None, help="evaluate every row of a calibration-style CSV")
@click.option("--out", "out", type=NAME, default=None, help="with --from-csv: output CSV path ('-' = stdout)")
@format_option()
@factors_option
def estimate_cmd(model, hardware, cards, isl, osl, concurrency, phase, batch, seq_len, mtp, mtp_accept, prefix_hit,
                 weight_dtype, moe_weight_dtype, kv_dtype, framework, afd, from_csv, out, fmt, **knobs) -> None:
    """Memory, TTFT, TPOT and throughput of one parallel_config, with a breakdown by module and by kind.

    \b
    shardplan estimate deepseek-v3.2 --hardware h200_sxm --cards 8 --attn-sp 8 --phase prefill --batch 1 --seq-len 32768
    shardplan estimate --from-csv measured.csv --out predicted.csv
    """
    if from_csv is not None:
        single = {"MODEL": model, "--hardware": hardware, "--cards": cards, "--isl": isl, "--osl": osl,
                  "--concurrency": concurrency, "--phase": phase, "--batch": batch, "--seq-len": seq_len,
                  "--weight-dtype": weight_dtype, "--moe-weight-dtype": moe_weight_dtype, "--kv-dtype": kv_dtype,
                  "--afd": True if afd else None,
                  **{flag: True for flag, name in (("--mtp", "mtp"), ("--mtp-accept", "mtp_accept"),
                                                   ("--prefix-hit", "prefix_hit"), ("--format", "fmt"))
                     if given(name)},
                  **{CONFIG_FLAGS[k]: v for k, v in knobs.items()}}
        extra = [k for k, v in single.items() if v is not None]
        if extra:
            raise InputError("--from-csv", f"each row carries its own config; drop {', '.join(extra)}")
        if not out:
            raise InputError("--out", "required with --from-csv")
        n, bad, notes = run_csv(from_csv, out, framework)
        for line in notes:
            click.echo(f"note: {line}", err=True)
        click.echo(f"note: read {n} rows: {n - bad} evaluated, {bad} could not be evaluated (see the error column)"
                   + ("" if out == "-" else f", wrote {out}"), err=True)
        return
    if out is not None:
        raise InputError("--out", "only with --from-csv")
    for value, flag in ((model, "MODEL"), (hardware, "--hardware"), (cards, "--cards")):
        if value is None:
            raise InputError(flag, "required (or use --from-csv IN --out OUT)")
    from solver.one_config import workload_of

    # the default rate is no rate given: refused only where one given would be read by nothing
    wl = workload_of(isl, osl, concurrency, phase, batch, seq_len, mtp, mtp_accept if given("mtp_accept") else None,
                     prefix_hit)
    _single(model, hardware, cards, knobs, wl, weight_dtype, moe_weight_dtype, kv_dtype, framework or DEFAULT_FRAMEWORK,
            fmt, afd)


COMMANDS = [estimate_cmd]
