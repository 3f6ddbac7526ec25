"""How a candidate stands to the Pareto front, and what it costs against #1, as `solve --explain` and a sweep's
rows say it (stop 36's review: DeepSeek-V3.2 W8A8 on 32 Atlas A3 dies, throughput, where #1 Attn DP + CP4 has
exactly the figures of the front's Attn DP + SP4 with 16 GB less memory per die)."""
from __future__ import annotations

import json
import math
import re

import pytest
from click.testing import CliRunner

from solver import api
from solver.cli.main import main
from solver.entry import run_solve
from solver.specs.scenario import Scenario

DS32 = ("deepseek-v3.2", "atlas_a3", 32)
SC = Scenario(kind="throughput", isl=4096, osl=256)


@pytest.fixture(scope="module")
def planned():
    result, cands = run_solve(*DS32, SC, "generic", "int8")
    return result, cands


def _same_figures(a, b) -> bool:
    return (math.isclose(a.latency_s, b.latency_s, rel_tol=1e-9)
            and math.isclose(a.estimate.output_tokens_per_s_per_rank, b.estimate.output_tokens_per_s_per_rank,
                             rel_tol=1e-9))


def test_a_candidate_with_a_front_configurations_figures_is_a_tie_not_off_the_front(planned) -> None:
    result, cands = planned
    tied = [c for c in cands if c.planned.ties_front]
    assert tied, [(c.pattern, c.planned.on_front) for c in cands]
    for c in tied:
        assert not c.planned.on_front and any(_same_figures(c.planned, f) for f in result.front)
        assert "tied with a front configuration" in c.planned.front_clause()
        assert "off the front" not in c.planned.front_clause()
    # a candidate some front configuration beats keeps "off the front"
    for c in cands:
        if not c.planned.on_front and not c.planned.ties_front:
            assert not any(_same_figures(c.planned, f) for f in result.front)
            assert c.planned.front_clause() == ", off the front"


def test_a_sweep_row_tied_with_a_front_row_says_so_and_the_front_stays_one_set() -> None:
    df = api.sweep(DS32[0], hardware=[DS32[1]], cards="32", scenarios="throughput,latency", isl=4096, osl=256,
                   weight_dtype="int8")
    tied = df[df["note"].fillna("").str.contains("tied with a front row")]
    assert len(tied) >= 1
    for _, r in tied.iterrows():
        same = df[(df["scenario"] == r["scenario"]) & df["on_front"].astype(bool)
                  & (df["request_latency_ms"] == r["request_latency_ms"])
                  & (df["output_tokens_per_s_per_rank"] == r["output_tokens_per_s_per_rank"])]
        assert not r["on_front"] and len(same) == 1
    fronts = [frozenset(g[g["on_front"].astype(bool)][["request_latency_ms", "output_tokens_per_s_per_rank"]]
                        .itertuples(index=False)) for _, g in df.groupby("scenario")]
    assert fronts[0] == fronts[1]


def test_explain_gives_each_candidates_memory_ttft_and_tpot_against_the_first() -> None:
    args = ["solve", DS32[0], "--hardware", DS32[1], "--cards", str(DS32[2]), "--weight-dtype", "int8",
            "--scenario", "throughput"]
    shown = json.loads(CliRunner().invoke(main, [*args, "--format", "json"]).stdout)["candidates"]
    out = re.sub(r"\s+", " ", CliRunner().invoke(main, [*args, "--explain"]).stdout)  # the lines wrap at 160
    block = out[out.index("score: "):]
    block = block[:block.index(" why not")] if " why not" in block else block  # a why-not line may name a #k too
    lines = re.findall(r"#\d .*?(?= #\d |$)", block)
    assert len(lines) == len(shown) >= 2
    assert "against #1" not in lines[0]
    first = shown[0]["estimation"]
    for ln, c in zip(lines[1:], shown[1:]):
        m = re.search(r"against #1: mem ([\d.]+) vs ([\d.]+) GB, TTFT ([+-]\d+)%, TPOT ([+-]\d+)%", ln)
        assert m, ln
        e = c["estimation"]
        assert float(m[1]) == pytest.approx(e["memory_per_rank_gb"], abs=0.006)
        assert float(m[2]) == pytest.approx(first["memory_per_rank_gb"], abs=0.006)
        assert int(m[3]) == round(100 * (e["ttft_ms"] / first["ttft_ms"] - 1))
        assert int(m[4]) == round(100 * (e["tpot_ms"] / first["tpot_ms"] - 1))
