"""Prefix-cache hits (--prefix-hit F): one rule per test, hand-computed.

A prompt of L tokens with F of them in the engine's prefix cache computes L - floor(L F) new tokens whose attention
reads the whole context (the cached keys' bytes included); the scheduler's budget counts the new ones; memory and
decode are unchanged. Disaggregated, the prefill pool computes the new tokens and the KV hand-off moves them all.
"""
from __future__ import annotations

import pytest
from click.testing import CliRunner

from solver.capacity.table import COLUMNS, DISAGG_COLUMNS, DISAGG_FLOAT_COLUMNS, FLOAT_COLUMNS, to_frame
from solver.cli.main import main
from solver.errors import InputError
from solver.estimate.closed_loop import serving_shape
from solver.estimate.compute import Work, factors_for, layer_ops
from solver.estimate.disagg import DisaggWorkload, estimate_disagg, workers_to_match
from solver.estimate.figures import step_plan
from solver.estimate.serving import Workload, estimate, prefill_step
from solver.estimate.workload import prefix_hit_note
from solver.one_config import workload_of
from solver.plan.disagg_pools import phase_scenario, prefill_batches
from solver.specs.framework import load_framework
from solver.specs.hardware_catalog import load_hardware
from solver.specs.layers.base import prefill_read_tokens
from solver.specs.model_catalog import load_model
from solver.specs.parallel import make_parallel_config
from solver.specs.precision import resolve_precision
from solver.specs.scenario import Scenario, scenario_of

H100 = load_hardware("h100_sxm")
LLAMA70 = load_model("llama-3.3-70b")
PREC = resolve_precision(LLAMA70, H100)
VLLM = load_framework("vllm")
F_VLLM = factors_for(H100, VLLM.efficiency_for(H100))
TP8 = make_parallel_config(8, attn_tp_size=8, dense_tp_size=8, embed_tp_size=8, lmhead_tp_size=8)


def _serving(hit: float, concurrency: int = 32) -> Workload:
    return Workload("serving", isl=8192, osl=256, concurrency=concurrency, prefix_hit=hit)


def _est(hit: float, concurrency: int = 32):
    return estimate(LLAMA70, H100, TP8, PREC, F_VLLM, _serving(hit, concurrency))


def test_cached_tokens_are_the_floor_of_the_hit_share():
    """ISL 8192: F 0.5 caches 4096 and computes 4096; F 0.9 caches floor(7372.8) = 7372 and computes 820; F 0 computes
    all 8192. A prefill workload splits its seq_len the same way."""
    assert _serving(0.0).prompt_tokens == (8192, 0)
    assert _serving(0.5).prompt_tokens == (4096, 4096)
    assert _serving(0.9).prompt_tokens == (820, 7372)
    assert Workload("prefill", batch=1, seq_len=1000, prefix_hit=0.25).prompt_tokens == (750, 250)


def test_no_hit_builds_the_fresh_prompt_step():
    """F = 0: the prefill Work is the whole-prompt step, field for field (new 8192 x n, context (8192 + 1) / 2)."""
    assert Work.prefill(8192, 0, 3) == Work("prefill", new_tokens=8192 * 3, context=(8192 + 1) / 2, sequences=3,
                                            logits_tokens=3)
    assert _est(0.0) == estimate(LLAMA70, H100, TP8, PREC, F_VLLM,
                                 Workload("serving", isl=8192, osl=256, concurrency=32))


def test_cached_prefix_sits_before_the_new_queries():
    """4096 new tokens after 4096 cached: the queries sit at 4097 .. 8192, mean context 4096 + 4097 / 2 = 6144.5."""
    w = Work.prefill(4096, 4096, 1)
    assert (w.new_tokens, w.context, w.sequences, w.logits_tokens) == (4096, 6144.5, 1, 1)


def test_dense_flops_scale_by_the_uncached_share_while_attention_reads_the_whole_prompt():
    """One prompt of 8192, half cached. Every GEMM (QKV, O, the MLP) sees 4096 tokens instead of 8192: half the FLOPs.
    The attention core's query-key pairs: fresh 8192 x 4096.5 (mean keys (8192 + 1) / 2); hit 4096 x 6144.5 (keys
    of positions 4097 .. 8192, the cached 4096 included); ratio 6144.5 / 8193 = 0.74997, not 0.5."""
    fresh = layer_ops(LLAMA70, H100, TP8, PREC, F_VLLM, Work.prefill(8192, 0, 1))
    hit = layer_ops(LLAMA70, H100, TP8, PREC, F_VLLM, Work.prefill(4096, 4096, 1))
    for kind in ("attention", "dense"):
        for a, b in zip(fresh[kind], hit[kind]):
            want = 6144.5 / 8193 if a.name == "attention_core" else 0.5
            assert b.flops == pytest.approx(a.flops * want, rel=1e-12), a.name
    assert any(o.name == "attention_core" for o in fresh["attention"])


def test_scheduler_budget_counts_only_the_uncached_tokens():
    """Budget 8192, prefill-first (the room is the budget): ISL 8192 fits 8192 // 8192 = 1 prompt a step, half
    cached 8192 // 4096 = 2. ISL 16384 takes ceil(16384 / 8192) = 2 chunks fresh, ceil(8192 / 8192) = 1 half cached."""
    def shape(isl: int, hit: float):
        wl = Workload("serving", isl=isl, osl=256, concurrency=8, token_budget=8192, prefix_hit=hit)
        return serving_shape(wl, 1, 8.0)

    assert (shape(8192, 0.0).prompts_per_step, shape(8192, 0.5).prompts_per_step) == (1, 2)
    assert (shape(16384, 0.0).chunks, shape(16384, 0.5).chunks) == (2, 1)


def test_ttft_and_the_prefill_share_fall_with_the_hit_rate():
    """Llama-3.3-70B, H100 x8 TP8, vLLM, 32 requests of 8192 / 256: fewer tokens to prefill shorten the prefill step,
    so TTFT, the share of GPU time spent prefilling, and TPOT (whose steps carry the arrivals' prefills) all fall."""
    e0, e5, e9 = _est(0.0), _est(0.5), _est(0.9)
    assert e0.ttft_s > e5.ttft_s > e9.ttft_s
    assert e0.prefill_share > e5.prefill_share > e9.prefill_share
    assert e0.tpot_s > e5.tpot_s > e9.tpot_s
    # one prompt's step: 8192 fresh, 4096 after 4096 cached, 820 after 7372 cached
    one = [prefill_step(LLAMA70, H100, TP8, PREC, F_VLLM, new, 1, 0, cached).time_s
           for new, cached in (_serving(h).prompt_tokens for h in (0.0, 0.5, 0.9))]
    assert one[0] > one[1] > one[2]


def test_memory_and_the_decode_step_are_unchanged():
    """The cache holds ISL + OSL per request whatever the hit (nothing shared across requests) and the decode step
    reads the same context: both equal to the fresh prompt's."""
    e0, e9 = _est(0.0), _est(0.9)
    assert e9.memory == e0.memory
    assert e9.decode == e0.decode


def test_planner_workload_carries_the_scenario_hit():
    """Workload.for_scenario passes the hit to the planner's step plans: serving at ISL 4096, F 0.75, 4 requests on
    TP8 (one replica): n = min(4, budget // 1024) prompts of 1024 new tokens after 3072 cached."""
    sc = Scenario(isl=4096, osl=256, prefix_hit=0.75)
    wl = Workload.for_scenario(sc, 4)
    assert (wl.prefix_hit, wl.prompt_tokens) == (0.75, (1024, 3072))
    sp = step_plan(LLAMA70, TP8, F_VLLM, wl)
    n = sp.pre_work.sequences
    assert (sp.pre_work.new_tokens, sp.pre_work.context) == (1024 * n, 3072 + 1025 / 2)
    pre = Workload.for_scenario(Scenario(isl=4096, osl=1, phase="prefill", prefix_hit=0.75), 2)
    assert pre.prompt_tokens == (1024, 3072)


def test_check_plans_its_alternatives_at_the_configuration_hit():
    """check's comparisons re-plan the workload it estimated (rank.compared.scenario_of, Workload.for_scenario's
    inverse): the hit goes both ways, so an alternative is never priced at a whole prompt beside a configuration
    priced at 3,072 of 4,096 tokens cached."""
    from solver.rank.compared import scenario_of as planned_scenario

    for wl in (Workload("serving", isl=4096, osl=256, concurrency=4, prefix_hit=0.75),
               Workload("prefill", batch=2, seq_len=4096, prefix_hit=0.75)):
        assert Workload.for_scenario(planned_scenario(wl), wl.sequences) == wl
    assert planned_scenario(Workload.decode_of(8, 4096, 256)).prefix_hit == 0.0


@pytest.mark.parametrize("value", [1.0, -0.1, 1.5, float("nan")])
def test_hit_outside_zero_to_one_is_refused_naming_the_flag(value):
    with pytest.raises(InputError) as exc:
        scenario_of(prefix_hit=value)
    assert exc.value.field == "--prefix-hit" and "[0, 1)" in exc.value.problem
    with pytest.raises(InputError) as exc:
        workload_of(8192, 256, 4, None, None, None, 0, None, value)
    assert exc.value.field == "--prefix-hit"


def test_decode_only_refuses_a_hit_it_would_not_read():
    with pytest.raises(InputError) as exc:
        scenario_of(phase="decode", prefix_hit=0.5)
    assert exc.value.field == "--prefix-hit"
    with pytest.raises(InputError) as exc:
        workload_of(None, None, None, "decode", 4, 1024, 0, None, 0.5)
    assert exc.value.field == "--prefix-hit"


def test_disaggregated_solve_prices_the_hit_and_says_the_transfer_is_whole():
    """--serving disagg takes a hit (no refusal) and its note says the prefill pool computes the uncached tokens
    while the KV hand-off moves the whole prompt."""
    r = CliRunner().invoke(main, ["solve", "llama-3.3-70b", "--hardware", "h100_sxm", "--cards", "8",
                                  "--serving", "disagg", "--prefix-hit", "0.5", "--format", "json"])
    assert r.exit_code == 0, r.output
    assert "prefix cache: 50%" in r.output and "whole prompt's cache" in r.output


def test_cli_out_of_range_is_one_line_exit_2():
    r = CliRunner().invoke(main, ["estimate", "llama-3.3-70b", "--hardware", "h100_sxm", "--cards", "8",
                                  "--attn-tp", "8", "--isl", "8192", "--osl", "256", "--concurrency", "1",
                                  "--prefix-hit", "1"])
    assert r.exit_code == 2
    assert [line for line in r.output.splitlines() if line.strip()] == \
        ["error: --prefix-hit: a prefix-cache hit rate is a fraction in [0, 1), got 1.0"]


def test_answer_notes_the_hit_rate_assumed():
    assert prefix_hit_note(0.0) is None
    assert "90%" in prefix_hit_note(0.9) and "ISL + OSL" in prefix_hit_note(0.9)
    r = CliRunner().invoke(main, ["estimate", "llama-3.3-70b", "--hardware", "h100_sxm", "--cards", "8",
                                  "--attn-tp", "8", "--dense-tp", "8", "--isl", "8192", "--osl", "256",
                                  "--concurrency", "1", "--prefix-hit", "0.9", "--format", "json"])
    assert r.exit_code == 0 and "prefix cache: 90%" in r.output


def test_recommend_line_keeps_the_hit():
    from solver.entry import recommend_command

    line = recommend_command("llama-3.3-70b", "h100_sxm", [8], 1000, Scenario(prefix_hit=0.5), "vllm", None, None,
                             None, False)
    assert "--prefix-hit 0.5" in line


def test_planner_tables_sum_to_the_full_estimate_at_a_hit():
    """The planner's tables read the hit through the same Work (step_plan): Qwen3-30B-A3B on 4 x H200, vLLM, serving
    4096 / 128 with 75% of each prompt cached. Every configuration the memory cap admits (first 40, at two batches)
    has the TTFT, TPOT and throughput of the full estimate, and a TTFT below the same configuration's at no hit."""
    import itertools

    from solver.plan.layout_memory import assumed_memory
    from solver.plan.table_build import build_tables
    from solver.space.domains import build_space
    from solver.specs.parallel import ParallelConfig

    m, h, fw = load_model("qwen3-30b-a3b"), load_hardware("h200_sxm"), load_framework("vllm")
    prec, fac = resolve_precision(m, h), factors_for(h, fw.efficiency_for(h))

    def tables(hit: float):
        sc = Scenario(isl=4096, osl=128, max_concurrency=16, prefix_hit=hit)
        return sc, build_tables(m, h, prec, fac, fw, build_space(m, h, fw, 4, sc), sc)

    sc, t = tables(0.75)
    _, t0 = tables(0.0)
    groups = list(t.choices)
    checked = 0
    for b in t.batches[:2]:
        for idx in itertools.islice(itertools.product(*(range(len(t.choices[g])) for g in groups)), 40):
            picks = dict(zip(groups, idx))
            if len({t.choices[g][i][-1] for g, i in picks.items()}) > 1:
                continue
            pc = ParallelConfig(world_size=4, **t.config(picks))
            if not assumed_memory(m, h, pc, prec, sc, b).feasible:
                continue
            e = estimate(m, h, pc, prec, fac, Workload.for_scenario(sc, b))
            fig = t.figures(b, picks)
            assert fig.ttft_s == pytest.approx(e.ttft_s, rel=1e-9)
            assert fig.tpot_s == pytest.approx(e.tpot_s, rel=1e-9)
            assert fig.output_tokens_per_s == pytest.approx(e.output_tokens_per_s, rel=1e-9)
            assert fig.ttft_s < t0.figures(b, picks).ttft_s
            checked += 1
    assert checked > 0


# ------------------------------------------------------------------------------ disaggregated pools at a hit

def _disagg(hit: float):
    """Llama-3.3-70B, 1 x TP8 prefill + 1 x TP8 decode on H100, vLLM, 32 requests of 8192 / 256."""
    wl = DisaggWorkload(isl=8192, osl=256, concurrency=32, prefix_hit=hit)
    return wl, estimate_disagg(LLAMA70, H100, TP8, TP8, PREC, F_VLLM, F_VLLM, wl)


def test_disaggregated_prefill_budget_counts_only_the_uncached_tokens():
    """vLLM's budget 8192 (max(8192, 32 requests x 1)): fresh 8192 // 8192 = 1 prompt a step; at F 0.8 a prompt
    computes 8192 - floor(6553.6) = 1639 new tokens, so 8192 // 1639 = 4 (4 x 1639 = 6556 <= 8192)."""
    assert [_disagg(h)[0].prompt_tokens for h in (0.0, 0.8)] == [(8192, 0), (1639, 6553)]
    assert [_disagg(h)[1].shape.prompts_per_step for h in (0.0, 0.8)] == [1, 4]


def test_disaggregated_prefill_step_is_the_aggregated_step_of_the_new_tokens():
    """The prefill pool's GPU step at F 0.8 is serving.prefill_step of n = 4 prompts of 1639 new tokens after 6553
    cached (the same Work.prefill the aggregated estimate runs); at F 0 of 1 prompt of 8192."""
    for hit, (new, cached, n) in ((0.0, (8192, 0, 1)), (0.8, (1639, 6553, 4))):
        assert _disagg(hit)[1].prefill == prefill_step(LLAMA70, H100, TP8, PREC, F_VLLM, new, n, 0, cached)


def test_disaggregated_transfer_moves_the_whole_prompt_at_any_hit():
    """The decode worker needs every token's K/V, and the connectors send the prefill worker's cached prefix too:
    80 layers x 8 KV heads x 128 x 2 (K, V) x 2 B = 327,680 B a token, x 8192 = 2,684,354,560 B, at F 0 and 0.8,
    in the same time."""
    t0, t8 = _disagg(0.0)[1].transfer, _disagg(0.8)[1].transfer
    assert t0.bytes_per_request == t8.bytes_per_request == 80 * 8 * 128 * 2 * 2 * 8192 == 2_684_354_560
    assert t0 == t8


def test_disaggregated_hit_needs_fewer_prefill_workers_per_decode_worker():
    """mu_w = R_p n / P_n: fresh 1 / 0.3271 s = 3.06 requests/s; at F 0.8, 4 / 0.2724 s = 14.68 (P_n with the
    loop's costs: times.prefill_s). A decode pool finishing 32 / (256 x 19.05 ms) = 6.56 requests/s asks
    ceil(6.56 / 3.06) = 3 prefill workers fresh and ceil(6.56 / 14.68) = 1 at the hit."""
    (_, e0), (_, e8) = _disagg(0.0), _disagg(0.8)
    for e, n in ((e0, 1), (e8, 4)):
        assert e.times.prefill_capacity == pytest.approx(n / e.times.prefill_s, rel=1e-12)
    demand = 32 / (256 * e0.times.decode_step_s)
    assert e8.times.decode_step_s == e0.times.decode_step_s  # decode is unchanged
    assert (workers_to_match(demand, e0.times.prefill_capacity),
            workers_to_match(demand, e8.times.prefill_capacity)) == (3, 1)


def test_disaggregated_prefill_pool_plans_at_the_hit():
    """phase_scenario hands the prefill pool the hit (its plans' steps compute the new tokens), the decode pool
    none (it has no prompt); the prompt grid's token cap counts new tokens: 8 ranks x 16384 = 131072 tokens holds
    16 fresh prompts of 8192 (8, 16) but 64 of 1639 at F 0.8 (8, 16, 32, 64: 128 x 1639 = 209792 > 131072)."""
    sc = Scenario(isl=8192, osl=256, prefix_hit=0.8)
    assert phase_scenario(sc, "prefill", 4).prefix_hit == 0.8
    assert phase_scenario(sc, "decode").prefix_hit == 0.0
    assert prefill_batches(8192, 8) == [1, 2, 4, 8, 16]
    assert prefill_batches(1639, 8) == [1, 2, 4, 8, 16, 32, 64]


# ------------------------------------------------------------------------------ the sweep tables' column

def test_sweep_tables_name_the_hit_among_their_inputs():
    """Both tables list prefix_hit as a float input column: 0.0 where no hit is assumed, the rate given else."""
    assert "prefix_hit" in COLUMNS and "prefix_hit" in FLOAT_COLUMNS
    assert "prefix_hit" in DISAGG_COLUMNS and "prefix_hit" in DISAGG_FLOAT_COLUMNS
    df = to_frame([{"hardware": "h100_sxm", "cards": 8, "prefix_hit": 0.0},
                   {"hardware": "h100_sxm", "cards": 8, "prefix_hit": 0.8}])
    assert list(df["prefix_hit"]) == [0.0, 0.8] and df["prefix_hit"].dtype == "float64"


def test_aggregated_sweep_row_carries_the_scenario_hit():
    """A sweep task's row says the hit its scenario assumed."""
    from solver.capacity.sweep import _base_row

    class T:  # the fields _base_row reads of a sweep task
        hardware_name, cards, scenario_label, weight_dtype = "h100_sxm", 8, "throughput", None
        scenario = Scenario(isl=8192, osl=256, prefix_hit=0.8)

    assert _base_row(T(), "llama-3.3-70b", "")["prefix_hit"] == 0.8


# ------------------------------------------------------------------------------ the cached keys' bytes

def _core(model, hw, prec, f, pc, w):
    return next(o for o in layer_ops(model, hw, pc, prec, f, w, ffn=False)["attention"] if o.name == "attention_core")


def test_prefill_attention_reads_the_cached_keys_once_per_prompt():
    """Llama-3.3-70B on TP8: a rank holds 8 / 8 = 1 KV head, 128 x 2 (K, V) x 2 B = 512 B a token. One prompt of
    4096 new tokens after 4096 cached reads the cached 4096 x 512 B = 2,097,152 B more than the same 4096 new
    tokens alone (its new tokens' K/V and activations alike)."""
    hit = _core(LLAMA70, H100, PREC, F_VLLM, TP8, Work.prefill(4096, 4096, 1))
    fresh = _core(LLAMA70, H100, PREC, F_VLLM, TP8, Work.prefill(4096, 0, 1))
    assert hit.bytes - fresh.bytes == 4096 * 512 == 2_097_152


def test_no_hit_reads_only_the_new_tokens():
    """F 0: the read tokens are the step's own, exactly (3 prompts of 8192: 24576), so every byte is unchanged."""
    assert prefill_read_tokens(Work.prefill(8192, 0, 3)) == 3 * 8192
    assert prefill_read_tokens(Work.prefill(8191, 0, 1.5)) == 8191 * 1.5


def test_a_window_caps_the_cached_keys_read():
    """3000 cached before 1000 new, 2 prompts: a 1024 sliding window reads the last 1024 of them (2 x (1000 +
    1024) = 4048 tokens), a 1024 chunk those of the first new token's chunk, 3000 mod 1024 = 952 (2 x 1952 =
    3904); full attention all 3000 (8000)."""
    w = Work.prefill(1000, 3000, 2)
    assert (prefill_read_tokens(w, 1024), prefill_read_tokens(w, 1024, True), prefill_read_tokens(w)) == \
        (4048, 3904, 8000)


def test_mla_prefill_reads_the_cached_latents():
    """DeepSeek-V3 (dense MLA) on 8 x H200, TP8: every rank holds the whole latent, (512 + 64) x 2 B = 1152 B a
    token. Two prompts of 1024 new after 3072 cached read 2 x 3072 x 1152 = 7,077,888 B more."""
    h200 = load_hardware("h200_sxm")
    m = load_model("deepseek-v3")
    prec, f = resolve_precision(m, h200), factors_for(h200, VLLM.efficiency_for(h200))
    pc = make_parallel_config(8, attn_tp_size=8, dense_tp_size=8, moe_tp_size=8, embed_tp_size=8, lmhead_tp_size=8)
    assert prec.kv_bytes == 2
    hit, fresh = (_core(m, h200, prec, f, pc, Work.prefill(1024, c, 2)) for c in (3072, 0))
    assert hit.bytes - fresh.bytes == 2 * 3072 * 576 * 2 == 7_077_888


def test_dsa_indexer_prefill_reads_the_cached_keys():
    """DeepSeek-V3.2 on 8 x H200, TP8: the indexer scores every key, so it reads the cached ones' fp8 keys, 128 B +
    a 4 B scale = 132 B each: 2 x 3072 x 132 = 811,008 B; its logits grow by one fp32 per (query, cached key),
    2048 x 3072 x 4 = 25,165,824 B: 25,976,832 B more in all."""
    h200 = load_hardware("h200_sxm")
    m = load_model("deepseek-v3.2")
    prec, f = resolve_precision(m, h200), factors_for(h200, VLLM.efficiency_for(h200))
    pc = make_parallel_config(8, attn_tp_size=8, dense_tp_size=8, moe_tp_size=8, embed_tp_size=8, lmhead_tp_size=8)

    def score(cached: int) -> float:
        ops = layer_ops(m, h200, pc, prec, f, Work.prefill(1024, cached, 2), ffn=False)["attention"]
        return next(o for o in ops if o.name == "indexer_score").bytes

    assert score(3072) - score(0) == 2 * 3072 * 132 + 2048 * 3072 * 4 == 25_976_832


def test_disaggregated_recommendation_notes_the_hit_only_where_given():
    """The xPyD recommendation says the hit its plans assumed (JSON `notes`, a note line); at F 0 it says nothing."""
    from solver.capacity.disagg import DisaggRecommendation

    fresh = DisaggRecommendation("m", 1000.0, [], None, "none met")
    hit = DisaggRecommendation("m", 1000.0, [], None, "none met", prefix_hit=0.8)
    assert "notes" not in fresh.as_dict() and "note:" not in fresh.render("table")
    assert "prefix cache: 80%" in hit.as_dict()["notes"][0] and "note: prefix cache: 80%" in hit.render("table")


def test_disaggregated_sweep_says_the_hit_once_before_solving_as_the_aggregated_sweep():
    """`sweep --serving disagg --prefix-hit 0.5` says the hit it assumed once on stderr (as the aggregated sweep
    does, whatever the number of combinations: two scenarios here), with the disaggregated clause (the hand-off
    moves the whole prompt's cache), and the frame's notes carry the same line once; stdout stays the JSON rows."""
    import json

    from solver.capacity.disagg import sweep_disagg
    from solver.estimate.disagg import disagg_hit_note

    note = disagg_hit_note(0.5)
    r = CliRunner().invoke(main, ["sweep", "llama-3.3-70b", "--hardware", "h100_sxm", "--cards", "8",
                                  "--scenarios", "throughput,latency", "--serving", "disagg", "--prefix-hit", "0.5",
                                  "--format", "json"])
    assert r.exit_code == 0, r.output
    assert r.stderr.splitlines().count(f"note: {note}") == 1, r.stderr
    rows = json.loads(r.stdout)
    assert {row["scenario"] for row in rows} == {"throughput", "latency"} and {row["prefix_hit"] for row in rows} == {0.5}
    df = sweep_disagg("llama-3.3-70b", ["h100_sxm"], "8", ["throughput"], prefix_hit=0.5)
    assert df.attrs["notes"].count(note) == 1
    assert "prefix cache" not in " ".join(sweep_disagg("llama-3.3-70b", ["h100_sxm"], "8", ["throughput"]).attrs["notes"])


def test_the_hit_note_speaks_of_the_phase_planned_and_names_no_flag():
    """A prefill-only answer holds the prompt's cache and runs no decode: its note says so, not "ISL + OSL" and
    "decode is unchanged"; the note names the input (prefix_hit), which a file or the API may have given."""
    from solver.estimate.workload import prefix_hit_note

    serving, prefill = prefix_hit_note(0.5), prefix_hit_note(0.5, "prefill")
    assert "ISL + OSL" in serving and serving.endswith("decode is unchanged")
    assert "the prompt's tokens per request" in prefill and "decode" not in prefill
    assert "(prefix_hit 0.5)" in serving and "--prefix-hit" not in serving + prefill
