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
