"""Stop 48's user-level hunt of capacity planning: the rules its findings broke, one test each."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from solver.capacity.copies import note_copies
from solver.plan.copies import MARGIN

ROOT = Path(__file__).resolve().parent.parent


def _row(cards: int, per_rank: float, candidate: int | None = 1, scenario: str = "throughput") -> dict:
    return {"hardware": "h100_sxm", "cards": cards, "scenario": scenario, "isl": 8192, "osl": 1024,
            "ttft_sla_ms": None, "tpot_sla_ms": 40.0, "prefix_hit": 0.0, "weight_dtype": "", "feasible": True,
            "candidate": candidate, "output_tokens_per_s_per_rank": per_rank, "pattern": "Pure TP8",
            "concurrency": 64, "request_latency_ms": 40_000.0, "note": ""}


def test_a_sweep_row_names_copies_of_a_smaller_swept_size_that_carry_more_per_rank() -> None:
    rows = [_row(8, 150.0), _row(16, 150.0 / MARGIN - 1), _row(16, 200.0, candidate=None)]
    note_copies(rows, {"h100_sxm": "h100_sxm"})
    assert rows[1]["note"].startswith("2 copies of 8 x h100_sxm (Pure TP8, 64 requests each: this sweep's 8-card row)")
    assert "150.0 output tokens/s per rank at a request latency of 40.0 s, against 124.0 at 40.0 s here" in rows[1]["note"]
    assert rows[0]["note"] == "" and rows[2]["note"] == ""  # the smaller size itself, and a row that is not #1


def test_copies_within_the_margin_or_of_another_scenario_are_not_named() -> None:
    rows = [_row(8, 150.0), _row(16, 150.0 / MARGIN + 1), _row(8, 300.0, scenario="latency"),
            _row(16, 100.0, scenario="balanced")]
    note_copies(rows, {"h100_sxm": "h100_sxm"})
    assert [r["note"] for r in rows] == ["", "", "", ""]


def test_copies_never_split_a_node_unevenly() -> None:
    # 24 cards = 3 nodes of 8: 3 copies of 8 are whole nodes, 2 copies of 12 would split a node
    rows = [_row(12, 500.0), _row(8, 400.0), _row(24, 100.0)]
    note_copies(rows, {"h100_sxm": "h100_sxm"})
    assert rows[2]["note"].startswith("3 copies of 8 x h100_sxm")


def test_tokens_per_s_per_user_is_the_rate_after_the_first_token_as_the_schema_says() -> None:
    from solver.api import sweep

    df = sweep("qwen3-8b", "l40s", [1], "throughput", isl=1024, osl=1024, tpot_ms=50)
    ok = df[df["feasible"]]
    assert ((ok["tokens_per_s_per_user"] - 1000 / ok["tpot_ms"]).abs() < 1e-3 * ok["tokens_per_s_per_user"]).all()
    assert "1000 / `tpot_ms`" in (ROOT / "README.md").read_text()


def _notebook_code() -> list[str]:
    nb = json.loads((ROOT / "notebooks" / "capacity_planning.ipynb").read_text())
    return ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]


def test_the_notebook_prices_an_sla_with_a_sweep_planned_under_it() -> None:
    priced = [c for c in _notebook_code() if "usd_per_million_output_tokens" in c]
    assert priced and all("tpot_ms=TPOT_SLA_MS" in c and "prices=PRICES" in c for c in priced)
    assert not any('["tpot_ms"] <=' in c for c in priced)  # not a filter of the SLA-free front


def test_a_front_planned_under_an_sla_reaches_past_the_sla_free_front_within_it() -> None:
    # why the notebook plans with the SLA: the SLA edge (53 requests) lies between the powers of two
    from solver.api import sweep

    kw = dict(isl=8192, osl=1024, framework="vllm")
    free = sweep("llama-3.3-70b", "h100_sxm", [8], "throughput", **kw)
    under = sweep("llama-3.3-70b", "h100_sxm", [8], "throughput", tpot_ms=40, **kw)
    within = free[free["feasible"] & (free["tpot_ms"] <= 40)]["output_tokens_per_s_per_rank"].max()
    assert under[under["feasible"]]["output_tokens_per_s_per_rank"].max() > 1.1 * within
