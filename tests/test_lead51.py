"""The lead's stop-51 rules."""
from __future__ import annotations

import itertools
import re

import pytest
import yaml

from solver.catalog import catalog_dir

_ACTIVE = re.compile(r"^(?P<short>.*-\d+(\.\d+)?b)-a\d+(\.\d+)?b$")


def test_a_moe_model_answers_to_its_size_without_the_active_suffix():
    # users type "qwen3.5-122b" as they type "qwen3-235b": a short name ending in -<total>b-a<active>b answers to
    # -<total>b, unless another catalog file claims that name
    index = yaml.safe_load((catalog_dir("models") / "index.yaml").read_text())["models"]
    owner = {a.lower(): f for f, names in index.items() for a in names}
    missing = []
    for f, names in index.items():
        for a in names:
            m = None if "/" in a else _ACTIVE.match(a.lower())  # hub repo ids are what the hub names
            if m and owner.get(m["short"], f) == f and m["short"] not in owner:
                missing.append(f"{f}: {m['short']}")
    assert not missing, missing


def test_a_cluster_cap_below_one_token_per_second_quotes_a_target_a_rerun_reaches():
    # copies carrying under 1 output token/s in all: the quote is the figure rounded down (three significant
    # figures), not a whole 0 that no target can be and that the cluster count divides by
    from solver.capacity.recommend import cluster_cap_note

    note = cluster_cap_note(0.4567, 65_536, 1, 0.4567 / 65_536, 10.0)
    assert "a target up to 0.456 " in note and "(the load split over 22 clusters)" in note
    assert "a target up to 49,479 " in cluster_cap_note(49_479.68, 8_192, 8, 6.04, 60_000.0)


def test_the_binding_line_names_the_row_it_is_of_where_the_best_score_is_not_first():
    # the binding families are found for the planner's best score; a tie within the band can show it below #1
    from types import SimpleNamespace as NS

    from solver.report.candidates import binding_line

    def cand(rank: int, role: str) -> NS:
        return NS(rank=rank, planned=NS(role=role))

    result = NS(binding=["C.embed_tp_is_tp", "SLA.ttft"])
    tied = [cand(1, "verified deployment"), cand(2, "other backbone"), cand(3, "best score")]
    assert binding_line(result, tied) == "binding constraints (of #3, the best score): C.embed_tp_is_tp; SLA.ttft"
    first = [cand(1, "best score"), cand(2, "next pattern")]
    assert binding_line(result, first) == "binding constraints: C.embed_tp_is_tp; SLA.ttft"
    assert binding_line(NS(binding=[]), first) == "binding constraints: none"


@pytest.mark.xfail(strict=True, reason="table_inputs._spelled respells the SP ranks as KVP for the LM-head group, "
                   "but a hyper-connection head reads the token shards (CP x SP): its share 1.83 against 0.41 ms at SP16, "
                   "131,072-token prompts")
def test_the_tables_sum_to_the_full_estimate_under_a_hyper_connection_head_and_sp():
    # DeepSeek-V4's head merges its hyper-connection streams over the tokens a rank holds (token_shards = CP x SP);
    # the planner's LM-head share must be priced at the layout's own token shards, as the full estimate prices it
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent))
    from test_planner_exact import _instance

    from solver.estimate.serving import Workload, estimate
    from solver.specs.parallel import ParallelConfig

    m, h, f, prec, fac, sc, t = _instance("deepseek-v4-pro", "b200_sxm", "generic", 16, "serving", 8192,
                                          max_concurrency=1)
    want = {"attn_tp_size": 1, "cp_size": 1, "kvp_size": 1, "attn_sp_size": 16, "lmhead_tp_size": 1,
            "embed_tp_size": 1, "dense_tp_size": 1, "moe_tp_size": 1, "pp_size": 1}
    picks = next(p for p in (dict(zip(t.choices, idx)) for idx in itertools.product(
        *(range(len(t.choices[g])) for g in t.choices)))
        if len({t.choices[g][i][-1] for g, i in p.items()}) == 1
        and all(t.config(p).get(k, 1) == v for k, v in want.items()))
    pc = ParallelConfig(world_size=16, **t.config(picks))
    e = estimate(m, h, pc, prec, fac, Workload.for_scenario(sc, 1))
    assert t.figures(1, picks).ttft_s == pytest.approx(e.ttft_s, rel=1e-9)


def test_three_figures_rounds_down_for_a_target_to_reach_and_up_for_a_cap_to_pass():
    from solver.errors import three_figures

    assert three_figures(0.4567, down=True) == "0.456" and three_figures(0.4567, up=True) == "0.457"
    assert three_figures(33.1, down=True) == "33.1" and three_figures(2_759.0, down=True) == "2,750"
