"""An impossible deployment says which constraint binds in the model's terms, and every remedy it offers works."""
from __future__ import annotations

from click.testing import CliRunner

from solver.cli.main import main
from solver.plan.memory_remedies import cheaper_weights
from solver.specs.hardware_catalog import load_hardware
from solver.specs.model_catalog import load_model
from solver.specs.precision import resolve_precision


def _solve(*args: str):
    return CliRunner().invoke(main, ["solve", *args])


def test_weights_that_exceed_the_cards_are_named_in_gb_against_the_cards_usable_memory():
    """Qwen3-235B in fp8 on 2 H100: 235.1e9 parameters, the linear layers at 1 byte and the embedding and the untied
    head (151,936 x 4,096 each) at 2 bytes: 233.8 + 2 x 1.245 = 236.3 GB, with the 16-bit norms 236.4 GB.
    A card's limit is min(0.95 x 85.90, 85.90 - 3.76 reserve) = 81.6 GB; 2 x 81.6 = 163.2 GB."""
    r = _solve("qwen3-235b", "--hardware", "h100_sxm", "--cards", "2", "--weight-dtype", "fp8")
    assert r.exit_code == 1
    assert "Qwen3-235B-A22B's weights, 236.4 GB in fp8, exceed 2 x 81.6 GB = 163.2 GB usable on h100_sxm" in r.stderr


def test_a_cache_that_does_not_fit_is_named_with_the_request_and_its_tokens():
    """Qwen3-8B at ISL 1,000,000 (+ OSL 256) on 1 H100: its K and V per token are 36 layers x 8 KV heads x 128 x 2
    x 2 bytes = 147,456 B; x 1,000,256 tokens = 147.5 GB, beside 16.4 GB of bf16 weights, over the card's 81.6 GB."""
    r = _solve("qwen3-8b", "--hardware", "h100_sxm", "--cards", "1", "--isl", "1000000", "--max-concurrency", "1")
    assert r.exit_code == 1
    assert ("Qwen3-8B's weights, 16.4 GB in bf16, and the cache of 1 request of 1,000,256 tokens, 147.5 GB, exceed "
            "1 x 81.6 GB = 81.6 GB usable on h100_sxm") in r.stderr


def test_a_smaller_weight_format_is_offered_only_where_the_screen_holds_it():
    """cheaper_weights lists the formats below the deployment's that the device takes (fp8, int8, int4, fp4 on an
    H100 for a bf16 model), and with a screen only those it passes: here the 4-bit ones."""
    model, hw = load_model("qwen3-8b"), load_hardware("h100_sxm")
    prec = resolve_precision(model, hw)
    assert cheaper_weights(model, hw, prec) == "--weight-dtype fp8/int8/int4/fp4"
    assert cheaper_weights(model, hw, prec, lambda p: p.fmt("dense").bits <= 4) == "--weight-dtype int4/fp4"
    assert cheaper_weights(model, hw, prec, lambda p: False) == ""


def test_a_disaggregated_pool_is_not_offered_a_weight_format_its_workers_cannot_hold():
    """DeepSeek-V3 disaggregated on 8 H100: a worker has at most 4 ranks, 4 x 81.6 = 326.4 GB; int4 weights are
    still 671e9 x 0.5 = 335.5 GB, so no smaller weight format is a remedy (only more cards)."""
    r = _solve("deepseek-v3", "--hardware", "h100_sxm", "--cards", "8", "--serving", "disagg")
    assert r.exit_code == 1 and "B.memory_per_rank binds at 4 ranks" in r.stderr
    assert "smaller weights" not in r.stderr and "32 cards in total" in r.stderr


def test_more_cards_are_offered_for_an_sla_only_where_the_planner_meets_it():
    """Qwen3-32B with TPOT <= 1 ms: the fastest on 8 H100 shows 7.36 ms (rounded up: the cap it passes; its decode
    step, one sequence on one replica: 7.65 before stop 49), and 16 cards do not bring one layer's
    all-reduces and weight reads under 1 ms either, so 'add cards' is not offered."""
    r = _solve("qwen3-32b", "--hardware", "h100_sxm", "--cards", "8", "--tpot-ms", "1")
    assert r.exit_code == 1 and "SLA.tpot binds" in r.stderr and "shows TPOT 7.36 ms" in r.stderr
    assert "cards (the planner meets the SLA there)" not in r.stderr and "add cards" not in r.stderr


def test_an_sla_that_fewer_requests_meet_offers_the_largest_concurrency_that_meets_it():
    """Qwen3-32B on 8 H100 with TPOT <= 8 ms at a fixed 16 requests: the fastest there shows 12.8 ms, at 3
    requests 8.32 ms and at 1 7.64 ms, so 2 is the most requests the SLA admits; that --concurrency plans."""
    r = _solve("qwen3-32b", "--hardware", "h100_sxm", "--cards", "8", "--tpot-ms", "8", "--concurrency", "16")
    assert r.exit_code == 1 and "or --concurrency 2 (the planner meets the SLA there)" in r.stderr
    assert _solve("qwen3-32b", "--hardware", "h100_sxm", "--cards", "8", "--tpot-ms", "8", "--concurrency",
                  "2").exit_code == 0
