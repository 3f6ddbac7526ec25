"""Rules found by asking the mission's three teams' questions end to end (DeepSeek-V3.2 on 64 Atlas A3 dies,
Qwen3.5 on 8 MI355X, Llama-3.3-70B on 8 H100): each test is one rule a team's reading broke, with the figures
worked by hand."""
from __future__ import annotations

from types import SimpleNamespace

from solver.report.candidates import front_lines
from solver.report.render import fmt_cell
from solver.specs.parallel import KNOBS, ParallelConfig


def _front_point(ttft_s: float, tpot_s: float, tok_s_rank: float, batch: int) -> SimpleNamespace:
    est = SimpleNamespace(ttft_s=ttft_s, tpot_s=tpot_s, output_tokens_per_s_per_rank=tok_s_rank,
                          has_ttft=True, has_tpot=True)
    pc = ParallelConfig(world_size=64, attn_tp_size=64, dense_tp_size=64, embed_tp_size=64, lmhead_tp_size=64)
    return SimpleNamespace(config=pc, batch=batch, sla_edge_from=None, estimate=est)


def test_explain_front_writes_each_figure_as_the_table_cell_does() -> None:
    """DeepSeek-V3.2 on 64 x atlas_a3 (cann-recipes, ISL 65,536): the front's latency end, all-TP64 at
    concurrency 1, ran 0.2317 tok/s/rank, which the front printed at one decimal as "0.2" (and TPOT 1,026.02
    ms without its thousands mark) while the table and the YAML keep the digits. Written as the table's cells:
    TTFT 15,446.3 ms -> "15,446" (>= 100: no decimals), TPOT 36.912 ms -> "36.91" (1..100: two decimals),
    0.2317 tok/s/rank -> "0.232" (< 1: three significant digits)."""
    result = SimpleNamespace(front=[_front_point(15.4463, 0.036912, 0.2317, 1)], knobs=KNOBS)
    (line,) = front_lines(result)
    assert line.endswith("at concurrency 1: TTFT 15,446 ms, TPOT 36.91 ms, 0.232 tok/s/rank")
    assert fmt_cell(0.2317) == "0.232"  # the table's tok/s/rank cell for the same figure


def test_explain_front_figure_of_a_high_load_point_matches_its_table_row() -> None:
    """A front point that is also the table's #1 (V3.2 under vllm-ascend at concurrency 4,096: TPOT 1,026.02 ms,
    52.64 tok/s/rank) reads "TPOT 1,026 ms" and "52.64 tok/s/rank" in both, not "1026.02" and "52.6"."""
    result = SimpleNamespace(front=[_front_point(49.6797, 1.02602, 52.6412, 4096)], knobs=KNOBS)
    (line,) = front_lines(result)
    assert "TTFT 49,680 ms, TPOT 1,026 ms, 52.64 tok/s/rank" in line


# Llama-3.3-70B (bf16) at TP8 on an H100 rank, GB per module (shardplan estimate --attn-tp 8 ... breakdown)
LLAMA70_TP8_GB = {"attention": 1.68, "o_proj": 1.34, "dense_ffn": 14.095, "embedding": 0.2625, "lm_head": 0.2625,
                  "norms": 0.0026}


def _tp8_memory() -> SimpleNamespace:
    w = {k: v * 1e9 for k, v in LLAMA70_TP8_GB.items()}
    return SimpleNamespace(weights_bytes=w, weights_total=sum(w.values()), limit_bytes=81.6e9)


def test_throughput_departure_from_attention_dp_names_the_weights_dp_would_hold() -> None:
    """Llama-3.3-70B on 8 x H100 (vllm / sglang / trtllm, --scenario throughput): the seed's attn_tp=1 (max DP)
    gave way to TP8 "because the estimate favours it", yet no DP rank can hold the model. The engine ties dense
    FFN, embedding and lm_head to attention TP, so attn_tp=1 unsplits all of them: 17.6426 GB + (1.68 + 1.34 +
    14.095 + 0.2625 + 0.2625) x 7 = 17.6426 + 123.48 = 141.12 GB (the model's bf16 weights) > 81.6 GB."""
    from solver.rank.reason import dp_weights_over_limit

    pc = ParallelConfig(world_size=8, attn_tp_size=8, dense_tp_size=8, embed_tp_size=8, lmhead_tp_size=8)
    ties = {k: "vllm's C.x" for k in ("dense_tp_size", "embed_tp_size", "lmhead_tp_size")}
    assert dp_weights_over_limit(pc, _tp8_memory(), ties) == (
        "attn_tp=1 would hold 141.1 GB of weights per rank (attention, dense FFN, embedding, lm_head unsplit), "
        "over the limit of 81.6 GB")


def test_throughput_departure_is_the_estimates_where_attention_dp_fits() -> None:
    """With no engine rule tying the other modules to attention TP, attn_tp=1 unsplits attention and o_proj
    alone: 17.6426 + (1.68 + 1.34) x 7 = 38.78 GB <= 81.6 GB: memory is not why, so no memory reason is said."""
    from solver.rank.reason import dp_weights_over_limit

    pc = ParallelConfig(world_size=8, attn_tp_size=8, dense_tp_size=8, embed_tp_size=8, lmhead_tp_size=8)
    assert dp_weights_over_limit(pc, _tp8_memory(), {}) is None


def test_a_prefill_only_front_writes_prompt_tokens_as_the_table_does() -> None:
    """A prefill-only plan's useful rate is its prompt tokens (the table's 'prompt tok/s/rank' column): the
    --explain front writes each point's rate in the same unit, the table's cell for candidate 1 among them."""
    from click.testing import CliRunner

    from solver.cli.main import main
    r = CliRunner().invoke(main, ["solve", "llama-3.3-70b", "--hardware", "h100_sxm", "--cards", "8", "--phase",
                                  "prefill", "--isl", "8192", "--explain"], env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.output
    front = r.output.split("Pareto front")[1].splitlines()[1:]
    points = [x for x in front if x.startswith("  ")]
    assert points and all(x.endswith(" prompt tok/s/rank") for x in points)
