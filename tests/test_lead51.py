"""The lead's stop-51 rules."""
from __future__ import annotations

import re

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
