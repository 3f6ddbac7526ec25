"""Stop 48: a user-level hunt of calibration (profiler traces, measured CSVs) and the RFC's deployment.

Each test is one rule found broken by the hunt (benchmarks/README.md, "Stop 48: a user-level hunt of calibration
and the RFC's deployment")."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))

import accuracy_disagg  # noqa: E402
import accuracy_rows  # noqa: E402

AGG_CSV = accuracy_rows.DEFAULT_CSV
DISAGG_CSV = accuracy_disagg.DEFAULT_CSV
needs_agg = pytest.mark.skipif(not AGG_CSV.is_file(), reason="calibration CSV (../shared/facts) not present")
needs_disagg = pytest.mark.skipif(not DISAGG_CSV.is_file(), reason="calibration CSV (../shared/facts) not present")


# ------------------------------------------------------------------ the benchmark's fast path is `estimate`


@needs_agg
def test_the_accuracy_fast_path_holds_the_sequences_estimate_holds() -> None:
    # the KV-bound row: 298 running sequences on the fast path against estimate's 294 before the fix (TTFT 1.6%)
    rows = [r for r in accuracy_rows.load_rows(AGG_CSV)
            if r["id"] == "2026_03_25_deepseek_r1_b200_sxm_sglang_fp8_agg_8192x1024_c512_tp8_0_ep1_0_266"]
    prepared, _ = accuracy_rows.prepare_all(rows)
    assert len(prepared) == 1
    assert accuracy_rows.check_fast_path(prepared) < 1e-9


@needs_disagg
def test_the_disagg_fast_path_pads_and_holds_as_estimate_disagg_does() -> None:
    # rows 88-104 (KV-bound sglang decode pools, graphs past the default cap) and 36-39 (GLM-5: the decode span)
    # were 1e-5 to 53% off estimate_disagg while the first 12 rows, all the check read, agreed
    rows = accuracy_disagg.first_rows(DISAGG_CSV, 0)
    picked = [rows[i] for i in (36, 39, 88, 95, 104)]
    prepared, _ = accuracy_disagg.prepare_rows(picked)
    assert len(prepared) == 5
    assert accuracy_disagg.check_fast_path(prepared) < 1e-9
