"""Disaggregated calibration rows: the blank-cell convention, errors naming the column, estimate --from-csv."""
from __future__ import annotations

import csv
from pathlib import Path

import pytest
from click.testing import CliRunner

from solver.cli.main import main
from solver.errors import InputError
from solver.measured_disagg import case_from_disagg_row, is_disagg, predict_disagg_row, worker_count_spread

from conftest import FACTS

DISAGG_CSV = FACTS / "calibration" / "measured_disagg_calibration.csv"

ROW = {"model": "deepseek-ai/DeepSeek-V3", "system": "gb200", "backend": "trtllm", "precision": "fp4",
       "gemm_quant_mode": "fp4", "moe_quant_mode": "nvfp4", "isl": "1024", "osl": "1024", "concurrency": "96",
       "prefill_workers": "1", "prefill_tp": "1", "prefill_pp": "1", "prefill_attention_dp": "4",
       "prefill_moe_tp": "1", "prefill_moe_ep": "4", "prefill_batch": "1", "decode_workers": "4", "decode_tp": "1",
       "decode_pp": "1", "decode_attention_dp": "8", "decode_moe_tp": "1", "decode_moe_ep": "8", "decode_batch": "24",
       "ttft_ms": "311.1", "tpot_ms": "10.06"}


def test_each_pool_gets_its_own_parallel_config_and_the_row_its_workers_and_batches() -> None:
    c = case_from_disagg_row(ROW)
    assert (c.prefill.pc.world_size, c.prefill.pc.attn_dp_size, c.prefill.pc.moe_ep_size) == (4, 4, 4)
    assert (c.decode.pc.world_size, c.decode.pc.attn_dp_size, c.decode.pc.moe_ep_size) == (8, 8, 8)
    wl = c.workload
    assert (wl.prefill_workers, wl.decode_workers, wl.prefill_batch, wl.decode_batch) == (1, 4, 1, 24)


def test_blank_workers_mean_one_worker_per_pool_and_blank_batches_are_not_caps() -> None:
    row = {**ROW, "prefill_workers": "", "decode_workers": "", "prefill_batch": "", "decode_batch": ""}
    wl = case_from_disagg_row(row).workload
    assert (wl.prefill_workers, wl.decode_workers, wl.prefill_batch, wl.decode_batch) == (1, 1, None, None)


def test_an_error_names_the_pools_column() -> None:
    with pytest.raises(InputError) as exc:
        case_from_disagg_row({**ROW, "decode_moe_tp": "", "decode_moe_ep": "3"})
    assert exc.value.field == "decode_moe_ep"
    with pytest.raises(InputError) as exc:
        case_from_disagg_row({**ROW, "prefill_tp": "0"})
    assert exc.value.field == "prefill_tp"


def test_a_pool_that_cannot_hold_the_model_is_rejected() -> None:
    row = {**ROW, "prefill_attention_dp": "1", "prefill_moe_ep": "1", "precision": "fp8", "gemm_quant_mode": "fp8",
           "moe_quant_mode": "fp8_block"}
    with pytest.raises(InputError) as exc:
        predict_disagg_row(row)
    assert exc.value.field == "prefill_tp" and "does not fit" in exc.value.problem


def test_a_table_is_disaggregated_when_both_pools_have_tp_columns() -> None:
    assert is_disagg(ROW)
    assert not is_disagg({"tp": 1, "prefill_tp": 1})


def test_tpot_comes_from_the_decode_pool_and_ttft_includes_the_transfer() -> None:
    e = predict_disagg_row(ROW)
    # the decode loop's step: the GPU time of the padded batch plus the loop's per-sequence cost, nothing of prefill
    assert e.tpot_s == pytest.approx(e.times.decode_step_s)
    assert e.times.decode_step_s >= e.decode.time_s
    assert e.ttft_s > e.times.prefill_s + e.transfer.time_s + e.times.first_decode_s


def test_estimate_from_csv_predicts_disaggregated_rows(tmp_path: Path) -> None:
    src, out = tmp_path / "in.csv", tmp_path / "out.csv"
    with src.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(ROW))
        w.writeheader()
        w.writerow(ROW)
        w.writerow({**ROW, "decode_moe_tp": "", "decode_moe_ep": "3"})
    res = CliRunner().invoke(main, ["estimate", "--from-csv", str(src), "--out", str(out)])
    assert res.exit_code == 0, res.output
    rows = list(csv.DictReader(out.open()))
    assert float(rows[0]["tpot_ms_pred"]) > 0 and float(rows[0]["ttft_ms_pred"]) > 0 and rows[0]["error"] == ""
    assert rows[1]["error"].startswith("decode_moe_ep")


@pytest.mark.skipif(not DISAGG_CSV.is_file(), reason="shared facts not present")
def test_every_row_of_the_shipped_disaggregated_table_is_evaluated_or_names_its_column() -> None:
    rows = list(csv.DictReader(DISAGG_CSV.open()))
    bad = []
    for row in rows:
        try:
            predict_disagg_row(row)
        except InputError as exc:
            bad.append(exc)
    assert len(rows) == 260
    assert {e.field for e in bad} <= {"prefill_tp", "decode_tp"}
    # only labels that cannot run: a pool that cannot hold the model, or a TP size that does not divide the
    # heads (the lossy rows that label a DP+EP worker "tp 72" on a 128-head model)
    assert all("does not fit" in str(e) or "num_attention_heads" in str(e) for e in bad), [str(e) for e in bad]
    assert len(bad) < len(rows) / 5


def test_a_row_that_gives_its_worker_counts_has_nothing_left_to_spread() -> None:
    assert worker_count_spread(ROW) == (0.0, 0.0)


def test_one_request_leaves_the_worker_counts_no_room_and_many_requests_a_lot() -> None:
    blank = {**ROW, "prefill_workers": "", "decode_workers": "", "prefill_batch": "", "decode_batch": ""}
    # one request: x, y in {1} only, the prediction is fixed
    assert worker_count_spread({**blank, "concurrency": "1"}) == (0.0, 0.0)
    # 96 requests on 1 or 96 decode workers: 96 sequences per step or 1, TPOT moves far beyond any goal
    ttft, tpot = worker_count_spread(blank)
    assert tpot > 0.15 and ttft > 0.15


def _disagg_rows(tmp_path: Path) -> Path:
    """The disaggregated table's first complete row, and the same row with both worker counts blank."""
    src = FACTS / "calibration" / "measured_disagg_calibration.csv"
    if not src.is_file():
        pytest.skip(f"{src} not present")
    with src.open(newline="") as fh:
        reader = csv.DictReader(fh)
        first = next(reader)
        header = list(reader.fieldnames or [])
    blank = {**first, "prefill_workers": "", "decode_workers": ""}
    path = tmp_path / "rows.csv"
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=header)
        w.writeheader()
        w.writerows([first, blank])
    return path


def test_disaggregated_rows_read_with_one_worker_per_pool_are_counted_in_a_note(tmp_path: Path) -> None:
    rows = _disagg_rows(tmp_path)
    res = CliRunner().invoke(main, ["estimate", "--from-csv", str(rows), "--out", str(tmp_path / "p.csv")])
    assert res.exit_code == 0, res.output
    assert ("note: 1 of 2 evaluated rows leave prefill_workers / decode_workers blank: read as 1 worker per pool "
            "(first: line 3)") in res.output
