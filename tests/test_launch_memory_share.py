"""Launch commands a server starts with and that hold the plan: SGLang's memory share, the parallel flags at the
engine's default left out, and copies of the smallest engine where a deployment is pure DP replicas of it."""
from __future__ import annotations

import importlib
import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from click.testing import CliRunner

from solver.cli.main import main
from solver.estimate.memory import MemoryReport
from solver.launch.memory_share import static_fraction, static_fraction_refusal
from solver.specs.launch_spec import LaunchArg

GB = 1e9
rec = importlib.import_module("solver.capacity.recommend")  # the package exports the function of that name


def _argv(*args: str) -> list[str]:
    r = CliRunner().invoke(main, [*args, "--format", "json"])
    assert r.exit_code == 0, r.stderr
    return json.loads(r.stdout)["candidates"][0]["launch"]["nodes"][0]["argv"]


def _flag(argv: list[str], flag: str) -> str:
    return argv[argv.index(flag) + 1]


def _report(weights: float, kv: float, act: float, capacity: float = 100 * GB, reserve: float = 5 * GB) -> MemoryReport:
    return MemoryReport(weights_bytes={"all": weights}, kv_cache_bytes=kv, indexer_cache_bytes=0.0,
                        activation_bytes=act, comm_buffer_bytes=0.0, reserved_bytes=reserve,
                        capacity_bytes=capacity, total_fraction=0.95, weights_kv_fraction=0.8, sequences_per_rank=1)


def test_sglangs_memory_share_is_the_limit_less_the_planned_activations_over_the_capacity() -> None:
    """Llama-3.3-70B fp8 on one H800 plans 9 requests: weights 72.656 GB + KV 7.550 GB, activations 1.342 GB.
    Capacity 85.899 GB (80 GiB), reserve 3.758 GB: limit min(0.95 x 85.899, 85.899 - 3.758) = 81.604 GB, and
    (81.604 - 1.342) / 85.899 = 0.93437 -> 0.9343 (down at 1e-4). It holds the plan's weights + KV:
    0.9343 x 85.899 = 80.256 GB >= 80.206 GB, where SGLang's default (about 0.84-0.875 on 80 GiB: it keeps
    >= 10 GiB out) holds 72-75 GB, the weights alone."""
    argv = _argv("solve", "llama-3.3-70b", "--hardware", "h800", "--cards", "1", "--weight-dtype", "fp8",
                 "--framework", "sglang", "--isl", "2048", "--osl", "512", "--top", "1")
    assert _flag(argv, "--mem-fraction-static") == "0.9343"
    assert 0.9343 * 85.899 >= 72.656 + 7.550


def test_sglangs_memory_share_holds_an_awq_70b_on_one_48gb_card(tmp_path: Path) -> None:
    """The AWQ 70B on one L40S (48.306 GB, reserve 3.758): limit min(45.890, 44.548) = 44.548 GB, activations
    1.342 GB: (44.548 - 1.342) / 48.306 = 0.89442 -> 0.8944, 43.205 GB for weights + KV, where SGLang's default
    (about 0.72 below 60 GiB: 34.7 GB) is under the 39.8 GB of weights."""
    from test_small_deployments import _awq_70b

    argv = _argv("solve", _awq_70b(tmp_path), "--hardware", "l40s", "--cards", "1", "--framework", "sglang",
                 "--isl", "2048", "--osl", "512", "--top", "1")
    assert _flag(argv, "--mem-fraction-static") == "0.8944"


def test_the_share_never_falls_below_the_weights_and_kv_the_plan_holds() -> None:
    """Capacity 100 GB, reserve 5: limit 95 GB. Activations 1.00003 GB leave (95 - 1.00003) / 100 = 0.9399997,
    0.9399 rounded down, yet the plan holds 60 + 33.99995 = 93.99995 GB (0.9399995 of the card, and 93.99995 +
    1.00003 = 94.99998 <= 95 fits): the share is that rounded up, 0.94."""
    mem = _report(60 * GB, 33.99995 * GB, 1.00003 * GB)
    assert static_fraction_refusal(mem) is None
    assert static_fraction(mem) == 0.94
    roomy = _report(60 * GB, 10 * GB, 2 * GB)  # (95 - 2) / 100 = 0.93: the limit less the activations
    assert static_fraction(roomy) == 0.93


def test_a_plan_whose_weights_kv_and_activations_pass_the_limit_has_no_share() -> None:
    """60 + 34 GB of weights + KV and 1.5 GB of activations = 95.5 GB over the 95 GB limit: refused, one line."""
    line = static_fraction_refusal(_report(60 * GB, 34 * GB, 1.5 * GB))
    assert line is not None and "no memory share holds this plan" in line and "95.00 GB" in line


def test_sglangs_launch_of_a_config_that_does_not_fit_is_refused(tmp_path: Path) -> None:
    """DeepSeek-V3 on 8 H100s, attention DP 8 at 32 requests: 102.06 GB of weights + KV per rank, above the
    81.60 GB limit before any activation: no --mem-fraction-static holds it (exit 2, one line)."""
    dep = tmp_path / "dep.yaml"
    dep.write_text("model: deepseek-v3\nhardware: h100_sxm\nworld_size: 8\nframework: sglang\n"
                   "parallel_config: {attn_tp_size: 1, dense_tp_size: 1, moe_tp_size: 1, embed_tp_size: 1, "
                   "lmhead_tp_size: 1}\nworkload: {isl: 4096, osl: 256, concurrency: 32}\n")
    r = CliRunner().invoke(main, ["launch", str(dep)])
    assert r.exit_code == 2 and "no memory share holds this plan" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("framework, flag", [("sglang", "--tp-size"), ("vllm", "--tensor-parallel-size")])
def test_a_parallel_flag_at_the_engines_default_is_left_out(framework: str, flag: str) -> None:
    """One card: TP 1 is the engine's default (sglang arg_groups/fields/parallel.py tp_size = 1, vLLM
    config/parallel.py tensor_parallel_size = 1), so the flag is not printed; on two cards at TP 2 it is."""
    one = _argv("solve", "qwen3-8b", "--hardware", "h100_sxm", "--cards", "1", "--framework", framework, "--top", "1")
    assert flag not in one
    two = _argv("solve", "llama-3.3-70b", "--hardware", "h100_sxm", "--cards", "2", "--framework", framework,
                "--weight-dtype", "fp8", "--top", "1")
    assert _flag(two, flag) == "2"


def test_a_default_belongs_to_a_flag_or_document_key_with_a_value() -> None:
    """(stop 51: a document key may carry the engine's default too, TensorRT-LLM's options file)"""
    with pytest.raises(ValueError, match="default needs a flag or document key with a value"):
        LaunchArg(env="TP_SIZE", value="world", default=1)
    with pytest.raises(ValueError, match="default needs a flag or document key with a value"):
        LaunchArg(flag="--dtype", text="{kv_dtype}", default=1)
    assert LaunchArg(doc="extra", key="tensor_parallel_size", value="world", default=1).default == 1


def _row(cards: int, tok_s: float, attn_tp: int = 1) -> dict:
    knobs = {k: 1 for k in rec.KNOBS} | {"attn_tp_size": attn_tp}
    return {**knobs, "attn_dp_size": cards // attn_tp, "moe_ep_size": None, "feasible": True,
            "output_tokens_per_s": tok_s, "concurrency": 8 * cards, "request_latency_ms": 1000.0, "rank": 1,
            "pattern": "p", "placement": "", "requests_per_s": 1.0, "ttft_ms": 100.0, "tpot_ms": 40.0,
            "tokens_per_s_per_user": 25.0, "memory_per_rank_gb": 40.0, "sla_edge_from": None}


def _fewest(monkeypatch, rows: dict[int, dict], tok_s: float) -> rec.Option:
    scenario = SimpleNamespace(max_concurrency=4096)
    tasks = [SimpleNamespace(cards=w, hardware="h100_sxm", hardware_name="h", scenario=scenario) for w in sorted(rows)]
    monkeypatch.setattr(rec, "_solved", lambda t, *a: (t, [rows[t.cards]]))
    monkeypatch.setattr(rec, "range_note", lambda *a, **k: None)
    return rec._fewest_cards("h", tasks, tok_s, None, None)


def test_copies_of_pure_dp_replicas_are_copies_of_the_one_card_engine(monkeypatch) -> None:
    """2,400 tok/s: one card carries 400 (6 copies, 6 cards); two cards as attention DP 2 with nothing split
    carry 800 (3 copies, 6 cards): the same six one-card engines, so the answer is 6 x 1."""
    opt = _fewest(monkeypatch, {1: _row(1, 400.0), 2: _row(2, 800.0)}, 2400.0)
    assert (opt.copies, opt.cards, opt.total_cards) == (6, 1, 6)
    assert rec.replicas_per_copy(_row(2, 800.0), 2) == 2


def test_a_split_deployment_still_wins_a_tie_by_fewer_copies(monkeypatch) -> None:
    """Two cards at TP 2 carrying 800 tok/s: 3 copies of one engine each (6 cards, 3 engines) beat six one-card
    copies (6 cards, 6 engines)."""
    opt = _fewest(monkeypatch, {1: _row(1, 400.0), 2: _row(2, 800.0, attn_tp=2)}, 2400.0)
    assert (opt.copies, opt.cards) == (3, 2)
    assert rec.replicas_per_copy(_row(2, 800.0, attn_tp=2), 2) == 1


def test_a_launch_without_the_plans_memory_prices_it_under_the_engines_layout() -> None:
    """SGLang's DCP splits the MLA latent cache over its TP ranks (FrameworkProfile.kvp_splits_attention_weights):
    DeepSeek-R1 at attention TP1 x DCP4 on 4 B200, 128 requests of 2K/256 (256 fitted at an 8,192-token chunk; SGLang's
    budget there is 16,384, stop 47), holds a quarter of each request's cache per rank. The serving estimate prices
    that (engine_options); a launch that computes the memory itself (no LaunchInputs.memory: a deployment file)
    must price the same, or it refuses a plan the planner fitted."""
    from solver.estimate.factors import factors_for
    from solver.estimate.serving import Workload, estimate
    from solver.launch.emit import LaunchInputs, emit_launch
    from solver.specs.framework import load_framework
    from solver.specs.hardware_catalog import load_hardware
    from solver.specs.model_catalog import load_model
    from solver.specs.parallel import make_parallel_config
    from solver.specs.precision import resolve_precision

    model, hw, fw = load_model("deepseek-r1"), load_hardware("b200_sxm"), load_framework("sglang")
    pc = make_parallel_config(4, attn_tp_size=1, kvp_size=4, dense_tp_size=4, moe_tp_size=1, embed_tp_size=4,
                              lmhead_tp_size=4)
    prec = resolve_precision(model, hw)
    mem = estimate(model, hw, pc, prec, factors_for(hw, fw.efficiency_for(hw)),
                   Workload("serving", isl=2048, osl=256, concurrency=128)).memory
    assert mem.feasible
    launch = emit_launch(fw, model, hw, pc, LaunchInputs(batch=128, max_model_len=2304))
    assert float(_flag(launch["nodes"][0]["argv"], "--mem-fraction-static")) == static_fraction(mem)
