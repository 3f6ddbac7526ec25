"""An impossible deployment names what binds in the model's terms (its bytes against the cards, an engine rule in the
engine's words) wherever it is reported (solve, recommend, a sweep row, the Python API), and every remedy it names
plans."""
from __future__ import annotations

import pytest
from click.testing import CliRunner

from solver import api
from solver.cli.main import main
from solver.errors import InfeasibleError


def _run(*args: str):
    return CliRunner().invoke(main, list(args))


def test_a_memory_refusal_in_recommend_names_the_weights_against_the_cards():
    """Kimi-K2 in its checkpoint's fp8_block on up to 8 H100: 1,029.2 GB of weights against 8 x 81.6 GB = 652.8 GB
    (a card's limit min(0.95 x 85.90, 85.90 - 3.76) = 81.6 GB); recommend's no-fit line says so beside the family."""
    r = _run("recommend", "kimi-k2", "--hardware", "h100_sxm", "--cards", "8", "--target-output-tokens-per-s", "1000")
    assert r.exit_code == 1
    assert ("(binding: B.memory_per_rank); Kimi-K2-Instruct's weights, 1,029.2 GB in fp8_block, exceed 8 x 81.6 GB = "
            "652.8 GB usable on h100_sxm; what would fit (a configuration on 8 cards, the load target aside): 14 cards fit") in r.stderr


def test_a_sequence_too_long_for_memory_names_the_longest_isl_that_fits_and_it_plans():
    """Qwen3-8B in int4 on 1 H100 at ISL 1,000,000: the card's limit is 81,604,378,624 B (0.95 x 85,899,345,920);
    less 6,071,333,520 B of weights and 603,979,776 B of activations leaves 74,929,065,328 B, over 147,456 B of K and
    V per token (36 layers x 8 KV heads x 128 x 2 x 2 B) = 508,145.25, so 508,145 tokens: ISL 508,145 - 256 =
    507,889. The planner finds a configuration there; the remedy spells the flag as it is typed (--isl 507889)."""
    args = ("solve", "qwen3-8b", "--hardware", "h100_sxm", "--cards", "1", "--max-concurrency", "1",
            "--weight-dtype", "int4")
    r = _run(*args, "--isl", "1000000")
    assert r.exit_code == 1
    assert "a shorter sequence" not in r.stderr
    assert ("--isl 507889 or shorter (the longest prompt 1 x h100_sxm holds with one request at OSL 256; the planner "
            "found a configuration there)") in r.stderr
    assert _run(*args, "--isl", "507889").exit_code == 0


def test_an_engine_rule_that_leaves_no_attention_layout_is_named_in_the_engines_words_with_a_size_that_runs():
    """ATOM runs on one node (C.single_node): 16 MI355X are two nodes of 8, so no attention layout is left; the line
    gives the rule's own message and the ranks against the node, and offers 8 cards, where ATOM plans."""
    r = _run("solve", "deepseek-v3", "--hardware", "mi355x", "--cards", "16", "--framework", "atom")
    assert r.exit_code == 1
    assert ("no attn layout is left (B.tp_within_node, C.single_node) on 16 ranks (mi355x nodes of 8): "
            "B.tp_within_node removes attn_tp_size 16; C.single_node: ATOM runs on one node") in r.stderr
    assert "what would fit: 8 cards fit" in r.stderr
    assert _run("solve", "deepseek-v3", "--hardware", "mi355x", "--cards", "8", "--framework", "atom").exit_code == 0


def test_an_infeasible_sweep_row_notes_what_binds_in_the_models_terms_and_the_remedy():
    """The sweep row of Qwen3-8B (bf16, 16.4 GB) at ISL 1,000,000 on 1 H100: binding_constraint keeps the family,
    and the note says the weights and the 147.5 GB cache (1,000,256 tokens x 147,456 B) exceed the card's 81.6 GB,
    then what would fit."""
    df = api.sweep("qwen3-8b", "h100_sxm", [1], isl=1000000, max_concurrency=1)
    row = df.iloc[0]
    assert not row["feasible"] and row["binding_constraint"] == "B.memory_per_rank"
    assert row["note"].startswith("Qwen3-8B's weights, 16.4 GB in bf16, and the cache of 1 request of 1,000,256 "
                                  "tokens, 147.5 GB, exceed 1 x 81.6 GB = 81.6 GB usable on h100_sxm; what would fit: ")


def test_the_api_raises_the_error_the_command_line_prints():
    """api.solve raises the InfeasibleError whose text is the CLI's error line (less 'error: '), exit code 1."""
    r = _run("solve", "deepseek-v3", "--hardware", "mi355x", "--cards", "16", "--framework", "atom")
    with pytest.raises(InfeasibleError) as err:
        api.solve("deepseek-v3", "mi355x", 16, framework="atom")
    assert err.value.exit_code == 1
    assert f"error: {err.value}" == r.stderr.strip()


def test_a_disaggregated_worker_too_small_for_the_sequence_names_the_longest_isl_its_worker_holds():
    """Qwen3-8B in int4 disaggregated on 2 H100: a worker has 1 rank, which at ISL 1,000,000 holds neither pool's
    request; the decode worker's sequence binds (ISL + OSL), so the longest prompt is the aggregated one on 1 card,
    507,889 (test above), and each pool's planner finds a 1-rank worker there."""
    r = _run("solve", "qwen3-8b", "--hardware", "h100_sxm", "--cards", "2", "--serving", "disagg", "--isl", "1000000",
             "--weight-dtype", "int4")
    assert r.exit_code == 1 and "a shorter sequence" not in r.stderr
    assert ("--isl 507889 or shorter (the longest prompt a prefill and decode worker of 1 rank holds at OSL 256; "
            "the planner found such a worker there, the pools' rate match aside)") in r.stderr


def test_a_disaggregated_worker_that_memory_binds_names_the_weights_against_its_ranks():
    """DeepSeek-V3 (fp8_block, 673.2 GB) disaggregated on 8 H100: a worker has at most 4 ranks, 4 x 81.6 = 326.4 GB,
    which the weights alone exceed; the line says so for the decode worker (the longer sequence)."""
    r = _run("solve", "deepseek-v3", "--hardware", "h100_sxm", "--cards", "8", "--serving", "disagg")
    assert r.exit_code == 1
    assert ("B.memory_per_rank binds at 4 ranks; in a decode worker, DeepSeek-V3's weights, 673.2 GB in fp8_block, "
            "exceed 4 x 81.6 GB = 326.4 GB usable on h100_sxm)") in r.stderr


def test_an_moe_tp_past_the_world_is_a_violation_to_report_not_a_crash(tmp_path) -> None:
    """dsv3-h200-ep16.yaml with moe_tp_size 32 on 16 ranks: 16 // 32 = 0 ranks of EP. check lists the knob's own
    divisibility (class A) instead of dividing the experts by an EP of 0 (it raised ZeroDivisionError, exit 3)."""
    from pathlib import Path

    from click.testing import CliRunner

    from solver.cli.main import main
    text = (Path(__file__).resolve().parents[1] / "docs" / "examples" / "dsv3-h200-ep16.yaml").read_text()
    assert "moe_tp_size: 1," in text
    bad = tmp_path / "b3.yaml"
    bad.write_text(text.replace("moe_tp_size: 1,", "moe_tp_size: 32,"))
    r = CliRunner().invoke(main, ["check", str(bad)])
    assert r.exit_code in (0, 1), r.output
    assert "world_size 16 % moe_tp_size = 32 != 0" in r.output


def test_estimate_notes_experts_past_the_dispatch_paths_cap() -> None:
    """DeepSeek-V3 on 8 Atlas A2 at EP8: 256 / 8 = 32 routed experts per rank, past the MC2 dispatch path's 24
    (hardware/atlas_a2.yaml max_experts_per_rank): estimate prices it and says so, as check reports it."""
    from solver import api
    r = api.estimate("deepseek-v3", hardware="atlas_a2", cards=8, framework="cann-recipes", weight_dtype="int4",
                     isl=4096, osl=256, concurrency=8)
    assert any(n.startswith("placement: 32 experts per rank > 24 (atlas_a2 dispatch path") for n in r.notes)
