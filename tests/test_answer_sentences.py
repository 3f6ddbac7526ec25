"""Rules for the sentences `solve` prints next to its figures: each one must agree with those figures. That covers
comparisons against the tie band, percentages, the reasons for the ordering, concurrencies, what "within the node"
means, and numbers written the way the table writes them."""
from __future__ import annotations

import math
from types import SimpleNamespace

from solver.entry import _ref_models
from solver.rank.cell import change_pct
from solver.rank.explain import ahead_by_tie, concurrency_vs_first, figures_vs, score_word
from solver.rank.reason import latency_follows, node_reach, seed_attention
from solver.rank.select import distance_terms, reference_distance
from solver.report.disagg_view import Comparison, each_worker
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import load_model
from solver.specs.parallel import ParallelConfig
from solver.specs.reference import list_references
from solver.specs.scenario import Scenario


def _est(ttft_ms: float, tpot_ms: float, tok_s_rank: float, mem_gb: float = 50.0, fits: bool = True):
    """An estimate as the sentences read it: TTFT, TPOT, tokens/s per rank, memory."""
    return SimpleNamespace(ttft_s=ttft_ms / 1e3, tpot_s=tpot_ms / 1e3, output_tokens_per_s_per_rank=tok_s_rank,
                           has_ttft=True, has_tpot=True,
                           memory=SimpleNamespace(model_bytes=mem_gb * 1e9, feasible=fits))


def _cand(est, batch: int = 16, core: bool = True, cross_node: bool = False, ref: str = "none",
          distance: float = math.inf, terms: tuple[str, ...] = ()):
    return SimpleNamespace(planned=SimpleNamespace(estimate=est, batch=batch, core=core), cross_node=cross_node,
                           reference=ref, reference_distance=distance, reference_terms=terms)


def test_a_score_inside_the_tie_band_is_called_a_tie_not_worse_or_better() -> None:
    """The ordering counts two scores within ln(1.03) = 0.0296 of each other as tied. So +0.002 and -0.011 are
    'within the 3% tie band', +0.032 is 'worse' and -0.058 is 'better'. Before the fix, +0.000 was printed as
    '(worse)'."""
    assert score_word(0.002) == score_word(-0.011) == "within the 3% tie band"
    assert score_word(0.032) == "worse"
    assert score_word(-0.058) == "better"


def test_a_change_below_half_a_percent_keeps_a_decimal() -> None:
    """488 against 489 is -0.2%, which '-0%' would read as no change with a sign. No change at all is '0%', and
    +50% stays whole."""
    assert change_pct(488.0, 489.0) == "-0.2%"
    assert change_pct(1.0, 1.0) == "0%"
    assert change_pct(1.5, 1.0) == "+50%"


def test_figures_in_a_sentence_are_written_as_the_table_cells() -> None:
    """TTFT 2369 -> 3603 ms is written '2,369 -> 3,603' as in the table's TTFT column. A tokens/s rate of 12,345.6
    is written '12,346', not the '1.235e+04' that ',.4g' gave. TPOT 45.99 keeps two decimals, as its cell does."""
    text = figures_vs(_est(3603, 78.75, 12345.6, 51.0), _est(2369, 45.99, 10000.0, 50.0))
    assert text == "mem 50.00 -> 51.00 GB, TTFT 2,369 -> 3,603 ms, TPOT 45.99 -> 78.75 ms, tok/s per rank 10,000 -> 12,346"


def test_a_candidate_at_another_concurrency_than_the_first_says_so() -> None:
    """#2 at concurrency 8 against #1 at 16 compares two loads, so its score line says 'at concurrency 8, #1 at
    16'. A candidate at #1's own concurrency has nothing to add."""
    cands = [_cand(_est(489, 23.36, 79.4), batch=16), _cand(_est(393, 22.87, 41.1), batch=8),
             _cand(_est(400, 23.0, 70.0), batch=16)]
    assert concurrency_vs_first(cands, 1) == "; at concurrency 8, #1 at 16"
    assert concurrency_vs_first(cands, 2) == ""
    assert concurrency_vs_first(cands, 0) == ""


def test_the_ordering_reason_names_the_key_that_put_a_lower_score_first() -> None:
    """#1 (request latency 1000 + 256 x 40 = 11,240 ms, 20 tok/s/rank) is ahead of #2 (1000 + 256 x 39 =
    11,000 ms, 21 tok/s/rank), which scores better. The reason is the first key of the ranking that separates
    them: #1 is a core candidate and #2 is not; #1 fits and #2 does not; #1's TP groups stay in the node and #2's
    do not. Only when none of these separates them is the tie band and the distance to a verified deployment the
    reason."""
    bal = Scenario(kind="balanced")
    first, better = _est(1000, 40, 20.0), _est(1000, 39, 21.0)
    assert "it is one of the core candidates" in ahead_by_tie(bal, [_cand(first), _cand(better, core=False)], 0)
    assert "it fits in memory and #2 does not" in ahead_by_tie(bal, [_cand(first), _cand(_est(1000, 39, 21.0,
                                                                                            fits=False))], 0)
    assert "stay in the node" in ahead_by_tie(bal, [_cand(first), _cand(better, cross_node=True)], 0)
    tied = ahead_by_tie(bal, [_cand(first, ref="a", distance=3.75, terms=("2 knobs differ (+2)",)),
                              _cand(better, ref="b", distance=4.0, terms=("1 knob differs (+1)",))], 0)
    assert "within the 3% tie band" in tied and "a (distance 3.75: 2 knobs differ (+2)) vs b (distance 4.00" in tied


def test_the_distance_terms_add_up_to_the_distance_the_ordering_reads() -> None:
    """Attn DP + CP8 for DeepSeek-V3.2 on 8 x H200, against each verified deployment: the terms printed
    ('N knobs differ (+N)', 'another model, +2', 'other hardware, +1', 'R ranks vs 8 (+0.25 x |log2 R/8|)', the last
    only for this model's deployments) add up to the distance the ranking orders by. For v32-p64-q that is
    2 + 1 + 0.25 x log2(64 / 8) = 3.75, so '2 knobs differ' can be closer than another model's '1 knob differs'
    (1 + 2 + 1 = 4)."""
    model, hw = load_model("deepseek-v3.2"), load_hardware("h200_sxm")
    pc = ParallelConfig(world_size=8, cp_size=8)
    names = _ref_models()
    for ref in list_references():
        d, scale, diffs = reference_distance(pc, model, hw, ref, names.get(ref.id))
        if names.get(ref.id) != model.name:
            d -= scale  # closest_reference: another model's world size is not counted
        terms = distance_terms(pc, model, hw, ref, names.get(ref.id), diffs)
        weights = [float(t.rsplit("+", 1)[1].rstrip(")")) for t in terms if "+" in t]
        assert math.isclose(sum(weights), d), (ref.id, terms, d)


def test_tp_within_the_node_names_the_scale_up_domain_where_it_spans_nodes() -> None:
    """On Atlas A3 the node has 16 ranks but the 768-rank UB domain runs at the node's 196 GB/s, so the planner's
    'within the node' (domains.tp_domain) reaches 768 ranks. A dense_tp=128 priced as 'within the node' must say
    that domain. On H100 (8 per node, a scale-up domain of 8) it is simply the node."""
    assert node_reach(load_hardware("atlas_a3")) == ("the node, here the 768-rank scale-up domain at the node's link "
                                                     "rate (16 per node)")
    assert node_reach(load_hardware("h100_sxm")) == "the node"


def test_a_disagg_win_inside_the_tie_band_says_it_is_a_tie() -> None:
    """DeepSeek-V3.2 on 16 x H200 under SGLang: disagg scores 0.5 x ln(39,542 / 57,230) + 0.5 x ln(286.3 / 207.2)
    = -0.185 + 0.162 = -0.023 against aggregated. That is within ln(1.03) = 0.0296, so 'disagg wins' is qualified.
    A gap of -0.05 is not."""
    gap = 0.5 * math.log(39542 / 57230) + 0.5 * math.log(286.3 / 207.2)
    assert round(gap, 3) == -0.023
    assert Comparison("disagg", 0.72, (), gap).tied()
    assert not Comparison("disagg", 0.72, (), -0.05).tied()
    assert not Comparison("disagg", None, ()).tied()


def test_an_mla_model_at_attention_tp_wider_than_the_seeds_two_or_four_departs_in_the_latency_branch() -> None:
    """The seed's latency branch asks for a small attention TP (2/4) on MLA and a moderate one on GQA. So on
    DeepSeek-V3.2 (MLA) attn_tp=8 departs from it, and the reason then prices attn_tp=2/4: on 8 x H200 under
    SGLang, attn_tp=4 at #1's backbone and concurrency 1 reproduces with `estimate --attn-tp 4 --dense-tp 8
    --lmhead-tp 4 --concurrency 1 --isl 4096 --osl 256` (TTFT 392 ms, TPOT 11.09 ms). Before the fix the line
    read 'chose attn_tp=8' with no departure. On GQA (Llama-3.3-70B) attn_tp=8 follows the branch."""
    mla, gqa = load_model("deepseek-v3.2"), load_model("llama-3.3-70b")
    assert not latency_follows(8, mla) and latency_follows(4, mla) and latency_follows(2, mla)
    assert not latency_follows(1, mla)
    assert latency_follows(8, gqa) and not latency_follows(1, gqa)
    hw = load_hardware("h200_sxm")
    seeds = seed_attention(ParallelConfig(world_size=8, attn_tp_size=8, dense_tp_size=8, embed_tp_size=8,
                                          lmhead_tp_size=8), mla, Scenario(kind="latency"), hw)
    assert [label for label, _ in seeds] == ["attn_tp=2", "attn_tp=4"]


def test_a_pool_of_several_workers_counts_its_replicas_per_worker() -> None:
    """Llama-3.3-70B on 16 x H100 disaggregated as 2P1D: the prefill pool is 2 workers of Pure TP4, so 2 attention
    replicas in all. 'prefill 4-way attention TP x 1 replica' alone would read as one; the layout says it is one in
    each of 2 workers. A pool of one worker adds nothing."""
    assert each_worker(2) == " in each of 2 workers"
    assert each_worker(1) == ""


def test_the_seeds_value_is_priced_at_the_best_scoring_form_the_engine_runs() -> None:
    """DeepSeek-V3.2 on 8 x H200 under SGLang, latency, #1 = attn_tp=8 dense_tp=8 embed_tp=8 lmhead_tp=8 at
    concurrency 1. The seed's attn_tp=4 as it stands breaks SGLang's embedding rule; the forms SGLang runs replicate
    the embedding and keep lm_head at 4 or 8. `estimate --attn-tp 4 --dense-tp 8 --lmhead-tp 8 --concurrency 1`
    gives TPOT 11.03 ms, `--lmhead-tp 4` 11.09 ms: the first runnable form (lm_head 4) priced the seed's value
    slightly worse than it is. The price is the best-scoring form's (11.03), the lowest score of the runnable forms,
    and the sentence says which degrees it changed (embed_tp=1; lm_head stays at 8, so it is not named)."""
    from solver.estimate.factors import factors_for
    from solver.estimate.serving import Workload, estimate
    from solver.rank.explain import admitted, runnable, score_vs, seed_value_priced
    from solver.specs.framework import load_framework
    from solver.specs.precision import resolve_precision

    model, hw, fw = load_model("deepseek-v3.2"), load_hardware("h200_sxm"), load_framework("sglang")
    sc, prec, f = Scenario(kind="latency"), resolve_precision(model, hw), factors_for(hw, fw.efficiency_for(hw))
    best = ParallelConfig(world_size=8, attn_tp_size=8, dense_tp_size=8, embed_tp_size=8, lmhead_tp_size=8)
    est = estimate(model, hw, best, prec, f, Workload.for_scenario(sc, 1))
    seed = ParallelConfig(world_size=8, attn_tp_size=4, dense_tp_size=8, embed_tp_size=8, lmhead_tp_size=8)
    forms = runnable(model, hw, fw, sc, seed, 1)
    assert {v.lmhead_tp_size for v in forms} == {4, 8} and {v.embed_tp_size for v in forms} == {1}
    priced = [(score_vs(sc, e, est), e) for v in forms for e in [admitted(model, hw, fw, prec, f, sc, v, 1)[0]]]
    lowest, low = min(priced, key=lambda se: se[0])
    assert low.tpot_s < max(e.tpot_s for _, e in priced)  # the forms differ: the first is not the best
    text = seed_value_priced(model, hw, fw, prec, f, sc, est, 1, [("attn_tp=4", seed)])
    assert text.startswith("attn_tp=4 (with embed_tp=1, the form sglang runs that scores best)")
    assert f"scores {lowest:+.3f}" in text
    assert f"TPOT {est.tpot_s * 1e3:.2f} -> {low.tpot_s * 1e3:.2f} ms" in text


def test_a_figure_over_its_limit_prints_enough_digits_to_differ_from_it() -> None:
    """64.94 GB against a 64.86 GB limit reads '64.9, limit 64.9' at one decimal; at two it reads 64.94 and 64.86.
    Values one decimal already tells apart keep one (91.3 vs 143.8), and equal values stay at one (50.0 and 50.0)."""
    from solver.rank.cell import apart

    assert apart(64.94, 64.86) == ("64.94", "64.86")
    assert apart(64.9004, 64.9001) == ("64.9004", "64.9001")
    assert apart(91.29, 143.83) == ("91.3", "143.8")
    assert apart(50.0, 50.0) == ("50.0", "50.0")


def test_checks_comparison_says_a_small_change_with_its_decimals() -> None:
    """`check`'s comparison sentences (rank/compared.py) write changes by the rule solve's do: 100 -> 99.8 is
    -0.2% (not '-0%'), 1000 -> 1000.4 is +0.04%, 1e6 -> 1e6 + 1 is +<0.001%, and only no change at all is 0%."""
    import inspect

    from solver.rank import compared

    assert change_pct(99.8, 100.0) == "-0.2%"
    assert change_pct(1000.4, 1000.0) == "+0.04%"
    assert change_pct(1e6 + 1, 1e6) == "+<0.001%"
    assert change_pct(7.0, 7.0) == "0%"
    assert ":+.0%" not in inspect.getsource(compared) and "change_pct(" in inspect.getsource(compared)


def test_a_fixed_knob_note_names_no_model() -> None:
    """A profile's note on a knob it fixes is printed for whatever model is asked about (Qwen3.5-35B-A3B with
    attn_sp_size 2 under ATOM read 'no attention sequence parallel for DeepSeek-V3.2'), so it names no model of
    the catalog: no model's family-and-version ('deepseek-v3.2', 'deepseek-v4', 'qwen3.5-35b'), whatever the case."""
    import re
    from pathlib import Path

    from solver.specs.framework import load_framework_file
    from solver.specs.model_catalog import list_models

    stems = {"-".join(a.lower().split("-")[:2]) for _, aliases in list_models() for a in aliases
             if "/" not in a and "-" in a}
    for path in sorted(Path("solver/frameworks").glob("*.yaml")):
        fw = load_framework_file(path)
        for f in fw.features.values():
            if f.knob in fw.fixed_knobs and f.note:
                named = [s for s in stems if re.search(rf"(?<![\w.-]){re.escape(s)}(?![\w.])", f.note.lower())]
                assert not named, (fw.name, f.knob, named)


def test_the_ordering_line_says_core_candidates_come_first_only_where_that_ordered_them() -> None:
    """Keys as the ranking orders by them: (not core, not fits, leaves the node, tie bucket, ...). A core candidate
    (0, 0, 0, 1, 0.2) ahead of a non-core one (1, 0, 0, 0, 0.0), which the keys after the first would put ahead
    (0, 0, 0, 0.0 < 0, 0, 1, 0.2), stands there because it is core: the line leads with that. A core candidate ahead of
    a non-core one it beats anyway (0, 0, 0, 0, 0.0 vs 1, 0, 0, 1, 0.3), or candidates all core, leave the line as
    it was."""
    from solver.rank.select import CORE_FIRST, ORDERING, core_ahead, ordering

    assert core_ahead([(False, False, False, 1, 0.2), (True, False, False, 0, 0.0)]) == {0}
    assert core_ahead([(False, False, False, 0, 0.0), (True, False, False, 1, 0.3)]) == set()
    assert core_ahead([(False, False, False, 0, 0.0), (False, False, False, 1, 0.3)]) == set()
    assert ordering([SimpleNamespace(core_first=False), SimpleNamespace(core_first=True)]) == CORE_FIRST + ORDERING
    assert ordering([SimpleNamespace(core_first=False)]) == ORDERING


def _explained(model_name: str, hw_name: str, cards: int, framework: str, kind: str, weight_dtype: str | None = None):
    """`solve MODEL --hardware HW --cards N --framework F --scenario KIND --explain` as the command runs it: #1, the
    explanation's lines, and what pricing a form needs (the launched hardware, precision, factors)."""
    from solver.entry import as_launched, explain_solution, run_solve
    from solver.estimate.factors import factors_for
    from solver.specs.framework import load_framework
    from solver.specs.precision import resolve_precision

    sc = Scenario(kind=kind)
    _, cands = run_solve(model_name, hw_name, cards, sc, framework, weight_dtype)
    lines = explain_solution(model_name, hw_name, cards, sc, cands[0], framework, weight_dtype, candidates=cands)
    model, fw = load_model(model_name), load_framework(framework)
    hw = as_launched(load_hardware(hw_name), fw, cards)
    return (sc, model, hw, fw, resolve_precision(model, hw, weight_dtype), factors_for(hw, fw.efficiency_for(hw)),
            cands[0].planned, lines)


def _form_prices(sc, model, hw, fw, prec, f, p, name: str):
    """The seed's alternative `name` at #1's concurrency: each form the engine runs (runnable), as the planner
    admits it (estimate or reason), with the degrees it changes and its score against #1."""
    from solver.rank.explain import admitted, alternatives, runnable, score_vs, side_change
    from solver.specs.parallel import make_parallel_config

    pc = make_parallel_config(p.config.world_size, **alternatives(model, hw, p.config.world_size, sc)[name])
    out = []
    for v in runnable(model, hw, fw, sc, pc, p.batch):
        e, why = admitted(model, hw, fw, prec, f, sc, v, p.batch)
        out.append((None if e is None else score_vs(sc, e, p.estimate), side_change(pc, v, model), why))
    return out


def test_explains_alternatives_are_priced_at_the_best_scoring_form_the_engine_runs() -> None:
    """DeepSeek-V3.2 on 8 x H200 under SGLang, latency (--explain). The seed's 'Attn DP + MoE EP' (attn_tp=1,
    moe_tp=1, embedding and LM head at TP8) breaks SGLang's rules as it stands: under DP attention SGLang replicates
    the embedding and the LM head, so the form it runs sets embed_tp=1 lmhead_tp=1. Its line prices that form, the
    lowest score of the runnable forms (score_vs of each form's admitted estimate against #1), and names the two
    degrees; 'all-TP8' runs as it stands, so it names none."""
    sc, model, hw, fw, prec, f, p, lines = _explained("deepseek-v3.2", "h200_sxm", 8, "sglang", "latency")
    forms = _form_prices(sc, model, hw, fw, prec, f, p, "Attn DP + MoE EP")
    assert forms and all(side == "embed_tp=1 lmhead_tp=1" for _, side, _ in forms)
    score, side, _ = min((x for x in forms if x[0] is not None), key=lambda x: x[0])
    head = (f"Attn DP + MoE EP (at #1's concurrency {p.batch}; with {side}, the form sglang runs that scores best)"
            f": score {score:+.3f}")
    assert any(line.startswith(head) for line in lines), lines
    (tp_score, tp_side, _), = _form_prices(sc, model, hw, fw, prec, f, p, "all-TP8")
    assert tp_side == ""
    assert any(line.startswith(f"all-TP8 (at #1's concurrency {p.batch})") and f": score {tp_score:+.3f}" in line
               for line in lines), lines


def test_explains_alternatives_say_what_rules_out_each_form_as_the_planner_does() -> None:
    """DeepSeek-V3.2 (int8 weights) on 16 Atlas A3 under vllm-ascend. Latency: 'all-TP16' and 'Attn DP + MoE EP' run
    as they stand (vllm-ascend sets the embedding and LM head degrees apart), so they are priced as themselves and
    name no degree. Throughput: at #1's concurrency the alternatives that do not fit say so with admitted's reason
    (the estimate's memory, or the busiest replica at the longest context), once, after the concurrency."""
    sc, model, hw, fw, prec, f, p, lines = _explained("deepseek-v3.2", "atlas_a3", 16, "vllm-ascend", "latency",
                                                      "int8")
    for name in ("all-TP16", "Attn DP + MoE EP"):
        (score, side, _), = _form_prices(sc, model, hw, fw, prec, f, p, name)
        assert side == ""
        # no degree named; a form the answer also lists says so in brackets before its score
        assert any(line.startswith(f"{name} (at #1's concurrency {p.batch})") and f": score {score:+.3f}" in line
                   and "with " not in line.split(":")[0] for line in lines), lines
    sc, model, hw, fw, prec, f, p, lines = _explained("deepseek-v3.2", "atlas_a3", 16, "vllm-ascend", "throughput",
                                                      "int8")
    refused = [(name, why) for name in ("all-TP16", "Attn DP + MoE EP")
               for score, _, why in _form_prices(sc, model, hw, fw, prec, f, p, name) if score is None]
    assert refused and all(why.startswith("does not fit (") for _, why in refused)
    # #1's own pattern (Attn DP + MoE EP at vllm-ascend's 2,048-token chunk, stop 47) is not explained again
    said = [(name, why) for name, why in refused if not any(line.startswith(f"#1 {name} (") for line in lines)]
    assert said, lines
    for name, why in said:
        assert f"{name} (at #1's concurrency {p.batch}): {why}" in lines, lines
