"""The review of stop 49's change: each rule a mend restored."""
from __future__ import annotations

import pytest


def _qwen8b_disagg(**workers):
    from solver.entry import run_disagg
    from solver.specs.scenario import Scenario

    sc = Scenario(kind="balanced", isl=1024, osl=256, max_concurrency=workers.pop("max_concurrency", None) or 4096)
    return run_disagg("Qwen/Qwen3-8B", "h200_sxm", 8, sc, "vllm", compare_aggregated=False,
                      workers=(workers.get("prefill"), workers.get("decode")))


def test_fixed_worker_counts_that_fit_the_cards_are_not_offered_more_cards() -> None:
    """xP4D on 8 cards with --max-concurrency 1: its smallest workers fit (5 cards), but 4 decode workers hold
    more than one request, so no pair serves it. More (or fewer) cards is no remedy: the refusal says the pairs
    at those counts do not serve the load and offers other counts (it offered '--cards 5' on 8 cards before)."""
    from solver.errors import InfeasibleError

    with pytest.raises(InfeasibleError) as exc:
        _qwen8b_disagg(decode=4, max_concurrency=1)
    assert "none of its pairs pairs or serves the load" in str(exc.value)
    assert not any(c.flag == "--cards" for r in exc.value.remedies.options for c in r.changes), exc.value.remedy


def test_fixed_worker_counts_past_the_cards_are_offered_the_cards_they_take() -> None:
    """3P6D on 8 cards: the smallest feasible workers (one rank each) take 9 cards, the remedy --cards 9."""
    from solver.errors import Change, InfeasibleError

    with pytest.raises(InfeasibleError, match=r"at 3P6D within 8 cards.*takes 9 cards at least") as exc:
        _qwen8b_disagg(prefill=3, decode=6)
    # the first alternative (the other names the fewer workers the planner plans on 8 cards: test_left3_50)
    assert exc.value.remedies.options[0].ways[0] == (Change("--cards", 9),)


def test_check_command_reads_a_16_bit_kv_cache_the_command_names_over_a_checkpoints_fp8_scheme() -> None:
    """A ModelOpt FP8 Llama-3.1-8B runs an FP8 cache under the engine's `auto` (its kv_cache_quant_algo), so
    `--kv-cache-dtype bfloat16` (what `--kv-dtype bf16` prints) is a choice, not the default: the check prices
    the 16-bit cache the command runs (it priced FP8, saying 'bfloat16, which the launch leaves at the engine's
    default'); `auto` stays unread (the checkpoint's FP8)."""
    from pathlib import Path

    from solver.launch.check_command import command_deployment

    model = str(Path(__file__).parent / "data" / "configs_quant" / "nvidia--Llama-3.1-8B-Instruct-FP8.json")
    line = "vllm serve ${MODEL_PATH} --tensor-parallel-size 1 --max-num-seqs 16 --max-model-len 4352 --kv-cache-dtype "
    kv = {v: command_deployment(line + v, "h100_sxm", model=model, isl=4096, osl=256)[1].quant.kv_cache
          for v in ("bfloat16", "auto")}
    assert kv == {"bfloat16": "bf16", "auto": None}
