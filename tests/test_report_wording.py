"""How an answer's tables, notes and comparisons word the estimate's figures."""
from types import SimpleNamespace

from solver.report.candidates import estimation, table_figures
from solver.report.render import fmt_cell
from solver.specs.scenario import Scenario

GB = 1e9


def _candidate(tok_s_rank: float, has_tpot: bool = True) -> SimpleNamespace:
    memory = SimpleNamespace(weights_total=30e9, cache_total=2e9, model_bytes=32.66e9, limit_bytes=81.6e9,
                             feasible=True)
    est = SimpleNamespace(memory=memory, ttft_s=0.15465, tpot_s=0.010638, has_ttft=True, has_tpot=has_tpot,
                          output_tokens_per_s_per_rank=tok_s_rank, output_tokens_per_s=tok_s_rank * 8,
                          tokens_per_s_per_user=93.99)
    return SimpleNamespace(planned=SimpleNamespace(estimate=est, batch=8, sla_edge_from=None), cross_node=False)


def test_solve_table_prints_the_estimates_figure_not_the_yaml_rounding():
    """tok/s/rank 89.2664: the YAML rounds it to 89.266 (report.digits: three decimals); the table cell,
    formatted with two decimals between 1 and 100, must read 89.27 as `estimate` does."""
    c = _candidate(89.2664)
    assert estimation(c)["output_tokens_per_s_per_rank"] == 89.266
    assert fmt_cell(table_figures(c)["tokens_per_s_per_rank"]) == "89.27"
    assert fmt_cell(table_figures(c)["ttft_ms"]) == "155"  # 154.65 ms: at or above 100 no decimals


def test_prefill_table_rate_is_prompt_tokens_per_rank():
    """A prefill-only plan emits one token per prompt: 10.5 prompts/s per rank x 4,096 tokens = 43,008."""
    c = _candidate(10.5, has_tpot=False)
    f = table_figures(c, prompt_len=4096)
    assert f["tokens_per_s_per_rank"] == 10.5 * 4096
    assert f["tpot_ms"] is None
    assert fmt_cell(f["tokens_per_s_per_rank"]) == "43,008"


def test_tie_note_counts_differing_knobs_in_agreeing_words():
    """The tie note names each candidate's distance to its verified deployment: 0 -> 'same knobs' (as the YAML's
    reference line says), 1 -> '1 knob differs', 3 -> '3 knobs differ' (not '0 knobs differ', '1 knobs differ')."""
    from solver.rank.select import knobs_differ

    assert [knobs_differ(n) for n in (0, 1, 3)] == ["same knobs", "1 knob differs", "3 knobs differ"]


def _launch(engine: str, mtp: int) -> dict:
    from solver.launch import LaunchInputs, emit_launch
    from solver.specs.framework import load_framework
    from solver.specs.hardware_catalog import load_hardware
    from solver.specs.model_catalog import load_model
    from solver.specs.parallel import ParallelConfig

    pc = ParallelConfig(world_size=8, attn_tp_size=8, dense_tp_size=8, moe_tp_size=1, embed_tp_size=8,
                        lmhead_tp_size=8, o_proj_tp_size=8)
    return emit_launch(load_framework(engine), load_model("deepseek-r1"), load_hardware("h200_sxm"), pc,
                       LaunchInputs(batch=8, max_model_len=4352, mtp=mtp))


def test_an_mtp_depth_the_launch_cannot_spell_is_said_not_dropped():
    """solve --mtp 2 prices TPOT with 2 draft tokens per step; the generic profile's parallel_config file has no
    field for it, so the launch says so in a note (as it does for a KV format it cannot spell)."""
    notes = _launch("generic", 2).get("notes", [])
    assert any(n.startswith("mtp 2: generic's launch has no argument") for n in notes)
    assert not any(n.startswith("mtp") for n in _launch("generic", 0).get("notes", []))
    assert any("assume 1 draft token per step" in n for n in _launch("generic", 1).get("notes", []))


def test_an_engine_that_spells_mtp_gets_no_mtp_note():
    """vLLM spells MTP (--speculative-config method mtp, num_speculative_tokens 2): a flag, no note."""
    launch = _launch("vllm", 2)
    assert '"num_speculative_tokens":2' in " ".join(launch["nodes"][0]["argv"])
    assert not any(n.startswith("mtp") for n in launch.get("notes", []))


def test_prefill_utilisation_reads_alike_in_headline_and_comparison():
    """One figure, one string: raw 0.92507 (the comparison's source) and its YAML value round(., 3) = 0.925 (the
    headline's source) both print 92.5%; at whole percents they printed 93% and 92%."""
    from solver.report.disagg_view import utilisation

    assert utilisation(0.92507) == utilisation(round(0.92507, 3)) == "92.5%"


def test_one_attention_replica_is_said_in_the_singular():
    """'prefill 1-way attention TP x 1 replica', not '1 replicas'; 4 -> '4 replicas'."""
    from solver.report.disagg_view import replicas

    assert (replicas(1), replicas(4)) == ("1 replica", "4 replicas")


Q122 = "qwen3.5-122b-a10b"


def test_the_table_explain_lists_the_front_a_candidate_is_called_off() -> None:
    """`solve --explain` (table) called #3 of Qwen3.5-122B-A10B on 8 x MI355X under ATOM "off the front" and printed
    no front (the option's help promises it; only the YAML carried it). Each front point is now one line: its
    knobs above 1, concurrency, TTFT, TPOT and tokens/s per rank, and a candidate off the front is dominated by one
    of them (no higher request latency, no lower tokens/s per rank)."""
    from solver.entry import run_solve
    from solver.report.candidates import front_lines

    scenario = Scenario(kind="balanced")
    result, cands = run_solve(Q122, "mi355x", 8, scenario, framework="atom")
    lines = front_lines(result)
    assert len(lines) == len(result.front) > 0
    p = result.front[0]
    e = p.estimate
    assert lines[0].endswith(f"at concurrency {p.batch}: TTFT {fmt_cell(e.ttft_s * 1e3)} ms, "
                             f"TPOT {fmt_cell(e.tpot_s * 1e3)} ms, {fmt_cell(e.output_tokens_per_s_per_rank)} tok/s/rank")
    assert any(not c.planned.on_front for c in cands)
    for c in cands:
        if c.planned.on_front:
            continue
        mine = c.planned.estimate
        lat = scenario.request_latency(mine.ttft_s, mine.tpot_s)
        assert any(scenario.request_latency(q.estimate.ttft_s, q.estimate.tpot_s) <= lat
                   and q.estimate.output_tokens_per_s_per_rank >= mine.output_tokens_per_s_per_rank
                   for q in result.front)
