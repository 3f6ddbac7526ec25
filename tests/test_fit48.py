"""Stop 48: a user's own measurements calibrate the figures solve gives (`calibrate --from-csv ROWS.csv --fit F`,
then `--factors F` on solve / estimate / sweep / recommend / check / launch)."""
from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from solver.cli.main import main
from solver.specs.fitted import active_user_factors

HEADER = "model,system,backend,tp,isl,osl,concurrency,ttft_ms,tpot_ms\n"
# a handful of vllm x h100_sxm rows (the shapes of the calibration CSV's); their measured times are set below
SHAPES = [("Qwen/Qwen3-32B", 2, 2000, 100, 8), ("Qwen/Qwen3-32B", 4, 4000, 500, 32), ("Qwen/Qwen3-32B", 1, 1000, 200, 4),
          ("Qwen/Qwen3-32B", 2, 8000, 300, 16), ("Qwen/Qwen3-32B", 8, 2000, 1000, 64)]
SERVING = ("--isl", "2000", "--osl", "200", "--concurrency", "16")


def _invoke(*args: str):
    return CliRunner().invoke(main, list(args))


def _predicted(tmp_path: Path) -> list[dict]:
    """estimate --from-csv's predictions of SHAPES under the shipped factors."""
    src = tmp_path / "shapes.csv"
    src.write_text(HEADER + "".join(f"{m},h100_sxm,vllm,{tp},{i},{o},{c},1,1\n" for m, tp, i, o, c in SHAPES))
    res = _invoke("estimate", "--from-csv", str(src), "--out", "-")
    assert res.exit_code == 0, res.output
    return list(csv.DictReader(io.StringIO(res.stdout)))


def _slower_cluster(tmp_path: Path, tpot_scale: float = 1.3) -> Path:
    """Rows as a cluster whose decode runs `tpot_scale` x slower than the shipped fit predicts measures them."""
    rows = _predicted(tmp_path)
    out = tmp_path / "mine.csv"
    out.write_text(HEADER + "".join(
        f"{r['model']},h100_sxm,vllm,{r['tp']},{r['isl']},{r['osl']},{r['concurrency']},"
        f"{float(r['ttft_ms_pred']):.4f},{float(r['tpot_ms_pred']) * tpot_scale:.4f}\n" for r in rows))
    return out


def _medians(stderr: str) -> dict[str, float]:
    """The median |error| notes of estimate --from-csv, as fractions."""
    return {m.group(1): float(m.group(2)) / 100
            for m in re.finditer(r"(TTFT|TPOT) error .*?median \|error\| ([\d.]+)%", stderr)}


def test_a_fit_on_a_handful_of_rows_moves_a_pair_factor(tmp_path: Path) -> None:
    from solver.calibrate.user_fit import fit_csv

    fit = fit_csv(str(_slower_cluster(tmp_path)))
    (pair,) = fit.pairs
    assert (pair.framework, pair.hardware, pair.rows) == ("vllm", "h100_sxm", len(SHAPES))
    # decode 30% slower than priced: the HBM fraction falls or the per-kernel cost rises, and the error drops
    assert pair.after["hbm"] < pair.before["hbm"] or pair.after["kernel_overhead_s"] > pair.before["kernel_overhead_s"]
    assert pair.tpot_after < pair.tpot_before and pair.loss_after < pair.loss_before
    # the factors fitted over every pair of the shipped rows keep their shipped values
    for key in ("grouped_gemm", "dequant_gemm", "allreduce_latency_s", "seq_layer_s"):
        assert pair.after[key] == pair.before[key]


def test_the_fit_says_which_factors_it_fitted_on_how_many_rows(tmp_path: Path) -> None:
    out = tmp_path / "f.yaml"
    res = _invoke("calibrate", "--from-csv", str(_slower_cluster(tmp_path)), "--fit", str(out))
    assert res.exit_code == 0, res.output
    assert f"vllm x h100_sxm: {len(SHAPES)} row(s); fitted " in res.stdout
    assert re.search(r"median \|error\| TTFT [\d.]+% -> [\d.]+%, TPOT [\d.]+% -> [\d.]+%, loss [\d.]+ -> [\d.]+ \(in sample\)", res.stdout)
    assert f"vllm x h100_sxm: {len(SHAPES)} row(s)" in out.read_text()  # the file's header says it too


def test_fit_then_factors_reproduces_the_fits_in_sample_error(tmp_path: Path) -> None:
    from solver.calibrate.user_fit import fit_csv

    rows, out = _slower_cluster(tmp_path), tmp_path / "f.yaml"
    assert _invoke("calibrate", "--from-csv", str(rows), "--fit", str(out)).exit_code == 0
    (pair,) = fit_csv(str(rows)).pairs
    before = _invoke("estimate", "--from-csv", str(rows), "--out", str(tmp_path / "o.csv"))
    after = _invoke("estimate", "--from-csv", str(rows), "--out", str(tmp_path / "o.csv"), "--factors", str(out))
    assert after.exit_code == 0, after.output
    b, a = _medians(before.stderr), _medians(after.stderr)
    # the notes print one decimal of a percent, from per-row errors written to 4 decimals
    assert a["TTFT"] == pytest.approx(pair.ttft_after, abs=6e-4) and a["TPOT"] == pytest.approx(pair.tpot_after, abs=6e-4)
    assert b["TPOT"] == pytest.approx(pair.tpot_before, abs=6e-4)
    assert "--factors" in after.stderr and "priced vllm x h100_sxm" in after.stderr


@pytest.mark.parametrize("body, field", [
    ("factors:\n  vllm:\n    h100_sxm:\n      gemm: 5\n", "factors.vllm.h100_sxm.gemm"),
    ("factors:\n  vllm:\n    h100_sxm:\n      gemmm: 1.0\n", "factors.vllm.h100_sxm"),
    ("factors:\n  nosuchengine:\n    h100_sxm:\n      gemm: 1.0\n", "factors.nosuchengine"),
    ("factors: {}\n", "factors"),
    ("pairs: 1\n", "pairs"),
])
def test_a_wrong_factors_file_is_refused_naming_the_field(tmp_path: Path, body: str, field: str) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(body)
    res = _invoke("estimate", "Qwen/Qwen3-32B", "--hardware", "h100_sxm", "--cards", "2", "--framework", "vllm",
                  *SERVING, "--factors", str(bad))
    assert res.exit_code == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: --factors") and field in lines[0], res.stderr
    assert "Traceback" not in res.output


def test_a_pair_the_factors_file_lacks_keeps_the_shipped_factors(tmp_path: Path) -> None:
    rows, out = _slower_cluster(tmp_path), tmp_path / "f.yaml"
    assert _invoke("calibrate", "--from-csv", str(rows), "--fit", str(out)).exit_code == 0
    args = ["estimate", "Qwen/Qwen3-32B", "--hardware", "h200_sxm", "--cards", "2", "--framework", "vllm",
            *SERVING, "--format", "json"]
    plain, given = _invoke(*args), _invoke(*args, "--factors", str(out))
    assert given.exit_code == 0, given.output
    assert given.stdout == plain.stdout
    assert "has no fit of vllm x h200_sxm: the shipped factors priced it" in given.stderr


def test_factors_move_the_figures_of_the_pair_they_fit(tmp_path: Path) -> None:
    rows, out = _slower_cluster(tmp_path), tmp_path / "f.yaml"
    assert _invoke("calibrate", "--from-csv", str(rows), "--fit", str(out)).exit_code == 0
    args = ["estimate", "Qwen/Qwen3-32B", "--hardware", "h100_sxm", "--cards", "2", "--framework", "vllm",
            *SERVING, "--format", "json"]
    assert _invoke(*args).stdout != _invoke(*args, "--factors", str(out)).stdout
    assert active_user_factors() is None  # the command's factors do not outlive it


def test_calibrate_from_csv_needs_fit_and_no_trace(tmp_path: Path) -> None:
    rows = tmp_path / "r.csv"
    rows.write_text(HEADER)
    assert "needs --fit" in _invoke("calibrate", "--from-csv", str(rows)).stderr
    res = _invoke("calibrate", "trace.json", "--from-csv", str(rows), "--fit", str(tmp_path / "f.yaml"))
    assert res.exit_code == 2 and "drop TRACE" in res.stderr


def test_a_pair_factor_no_row_moves_keeps_the_shipped_value(tmp_path: Path) -> None:
    from solver.calibrate.user_fit import fit_csv

    # a prompt of 8-16 tokens: its prefill GEMMs read the weights, so no GEMM fraction in 0.3..1.3 moves a row
    rows = tmp_path / "short.csv"
    rows.write_text(HEADER + "Qwen/Qwen3-32B,h100_sxm,vllm,2,16,500,1,30,10\n"
                             "Qwen/Qwen3-32B,h100_sxm,vllm,4,8,500,2,30,8\n")
    (pair,) = fit_csv(str(rows)).pairs
    assert "gemm" in pair.kept and "gemm" not in pair.fitted
    assert pair.after["gemm"] == pair.before["gemm"]


def test_a_plan_made_without_the_factors_file_is_not_reused_with_it(tmp_path: Path) -> None:
    from solver.plan.solve import clear_cache

    rows, out = _slower_cluster(tmp_path), tmp_path / "f.yaml"
    assert _invoke("calibrate", "--from-csv", str(rows), "--fit", str(out)).exit_code == 0
    args = ["solve", "Qwen/Qwen3-32B", "--hardware", "h100_sxm", "--cards", "4", "--framework", "vllm", "--isl", "2000",
            "--osl", "200", "--tpot-ms", "30", "--format", "json"]
    plain = _invoke(*args).stdout
    given = _invoke(*args, "--factors", str(out)).stdout  # the plain plan's tables and candidates are cached
    clear_cache()
    assert given != plain and given == _invoke(*args, "--factors", str(out)).stdout
