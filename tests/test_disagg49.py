"""Disaggregated serving, round two (stop 49): each rule a user met deploying prefill / decode pools."""
from __future__ import annotations

import pytest


@pytest.mark.slow
def test_disagg_comparison_takes_the_aggregated_plans_best_within_the_cards() -> None:
    """gpt-oss-120b on 16 x H200 under vLLM (8K/1K, TPOT <= 20 ms): the rate match deploys 14 cards (6 one-rank
    prefill workers, one 8-rank decode worker). vLLM places 14 ranks as 2 nodes x 7, where the aggregated plan
    runs PP7 at 168.3 output tokens/s per rank; on all 16 it runs attention DP + EP at 1,230. The comparison
    takes the aggregated plan's better of the two (it may use every card too), not the 14 alone (disagg 10.41x
    before, 1.42x after), and says on how many cards and why."""
    from solver.entry import run_disagg, run_solve
    from solver.specs.scenario import Scenario

    sc = Scenario(kind="balanced", isl=8192, osl=1024, tpot_ms=20)
    rep = run_disagg("gpt-oss-120b", "h200_sxm", 16, sc, "vllm")
    used = rep.plan.cards
    assert used == 14 and rep.aggregated_cards == 16
    _, on_used = run_solve("gpt-oss-120b", "h200_sxm", used, sc, "vllm", top=1, explain_binding=False)
    _, on_all = run_solve("gpt-oss-120b", "h200_sxm", 16, sc, "vllm", top=1, explain_binding=False)
    here = rep.aggregated.planned.estimate.output_tokens_per_s_per_rank
    assert here == on_all[0].planned.estimate.output_tokens_per_s_per_rank
    assert here > 2 * on_used[0].planned.estimate.output_tokens_per_s_per_rank
    idle = [w for w in rep.comparison.why if "of the 16 cards" in w]
    assert idle and "the aggregated plan on all 16, which it runs better than on 14" in idle[0], rep.comparison.why


def test_the_better_aggregated_plan_is_the_one_the_scenarios_score_prefers() -> None:
    """entry.better_aggregated: of two aggregated plans, the one of lower score (request latency and inverse
    output tokens/s per rank against the better of each); equal scores keep the first (the cards used)."""
    from types import SimpleNamespace

    from solver.entry import better_aggregated
    from solver.specs.scenario import Scenario

    def cand(ttft: float, tpot: float, per_rank: float):
        est = SimpleNamespace(ttft_s=ttft, tpot_s=tpot, output_tokens_per_s_per_rank=per_rank)
        return SimpleNamespace(planned=SimpleNamespace(estimate=est))

    sc = Scenario(kind="balanced", isl=1024, osl=1024)
    assert better_aggregated({14: cand(1.0, 0.02, 100.0), 16: cand(1.0, 0.02, 400.0)}, sc) == 16
    assert better_aggregated({14: cand(1.0, 0.02, 400.0), 16: cand(1.0, 0.02, 100.0)}, sc) == 14
    assert better_aggregated({14: cand(1.0, 0.02, 400.0), 16: cand(1.0, 0.02, 400.0)}, sc) == 14


def _qwen30b_disagg(**workers):
    from solver.entry import run_disagg
    from solver.specs.scenario import Scenario

    sc = Scenario(kind="throughput", isl=2048, osl=1024, tpot_ms=50)
    return run_disagg("qwen3-30b-a3b", "h200_sxm", 8, sc, "sglang", compare_aggregated=False,
                      workers=(workers.get("prefill"), workers.get("decode")))


def test_a_user_fixed_pd_ratio_is_the_deployment_planned() -> None:
    """`solve --serving disagg --prefill-workers X --decode-workers Y` plans each pool's layout for the xPyD the
    user runs: every answer (the best and its alternatives) has X prefill and Y decode workers, within the cards."""
    rep = _qwen30b_disagg(prefill=2, decode=1)
    for p in (rep.plan, *rep.alternatives):
        assert (p.prefill.workers, p.decode.workers) == (2, 1) and p.cards <= 8


def test_one_fixed_pool_count_leaves_the_other_to_the_rate_match() -> None:
    """--decode-workers 2 alone: the decode pool has two workers, the prefill count is the planner's."""
    rep = _qwen30b_disagg(decode=2)
    assert all(p.decode.workers == 2 for p in (rep.plan, *rep.alternatives))


def test_a_fixed_pd_ratio_the_cards_cannot_hold_is_refused_naming_the_cards_it_needs() -> None:
    """9P9D on 8 cards: no pair; one line naming the ratio and the cards its smallest feasible workers take."""
    from solver.errors import InfeasibleError

    with pytest.raises(InfeasibleError, match=r"no disaggregated deployment at 9P9D within 8 cards.*takes \d+ cards"):
        _qwen30b_disagg(prefill=9, decode=9)


def test_worker_counts_are_refused_without_disaggregated_serving() -> None:
    """--prefill-workers on an aggregated solve: refused in one line naming the flag, exit code 2."""
    from click.testing import CliRunner

    from solver.cli.main import main

    r = CliRunner().invoke(main, ["solve", "qwen3-30b-a3b", "--hardware", "h200_sxm", "--cards", "8",
                                 "--prefill-workers", "2"])
    assert r.exit_code == 2 and "--prefill-workers" in r.output and "--serving disagg" in r.output, r.output


def test_a_fixed_worker_count_below_one_is_refused_naming_its_flag() -> None:
    """run_disagg(workers=(0, None)) (the API, which click's range does not guard): one line, --prefill-workers."""
    from solver.errors import InputError

    with pytest.raises(InputError, match="--prefill-workers"):
        _qwen30b_disagg(prefill=0)


@pytest.mark.slow
def test_an_engine_that_runs_one_node_is_compared_as_copies_of_its_aggregated_server() -> None:
    """DeepSeek-R1 on 32 x MI355X under ATOM (one node a server: C.single_node), 8K/1K, TPOT <= 50 ms: the
    disaggregated plan is 2P1D of 8-rank workers on 24 cards, where one aggregated server has no configuration.
    The comparison prices 3 copies of the 8-card aggregated server (as `recommend` weighs copies), not "disagg
    wins" against nothing; the JSON says so."""
    from solver.entry import run_disagg, run_solve
    from solver.report.disagg_view import report_dict
    from solver.specs.scenario import Scenario

    sc = Scenario(kind="balanced", isl=8192, osl=1024, tpot_ms=50)
    rep = run_disagg("deepseek-r1", "mi355x", 32, sc, "atom")
    assert rep.plan.cards == 24 and rep.aggregated is not None
    assert (rep.aggregated_cards, rep.aggregated_copies) == (8, 3)
    _, one = run_solve("deepseek-r1", "mi355x", 8, sc, "atom", top=1, explain_binding=False)
    assert (rep.aggregated.planned.estimate.output_tokens_per_s_per_rank
            == one[0].planned.estimate.output_tokens_per_s_per_rank)
    assert any("3 copies of 8 cards" in w and "C.single_node" in w for w in rep.comparison.why), rep.comparison.why
    agg = report_dict(rep)["aggregated"]
    assert (agg["cards"], agg["copies"]) == (8, 3)


def test_a_worker_size_is_tested_as_worker_sizes_lists_it() -> None:
    """disagg_pools.is_worker_size(hw, w, c) is `w in worker_sizes(model, hw, c)` (powers of two and node
    multiples dividing c, below c) on 8-, 4- and 16-rank nodes, for every c below 300."""
    from solver.plan.disagg_pools import is_worker_size, worker_sizes
    from solver.specs.hardware_catalog import load_hardware

    for name in ("h200_sxm", "gb200", "atlas_a3"):
        hw = load_hardware(name)
        for c in range(1, 300):
            listed = set(worker_sizes(None, hw, c))
            assert {w for w in range(c + 2) if is_worker_size(hw, w, c)} == listed, (name, c)


@pytest.mark.slow
def test_a_concurrency_no_cards_serve_is_answered_in_seconds() -> None:
    """DeepSeek-R1 on 16 x H200 under SGLang (8K/1K) at --concurrency 4000: the refusal names the cards that
    would serve it (184: 15 prefill and 8 decode workers of 8) in seconds (40.7 s before cards_for tested sizes
    without listing them; 100,000 did not end in 5 minutes, 31.8 s after)."""
    import time

    from solver.entry import run_disagg
    from solver.errors import InfeasibleError
    from solver.specs.scenario import Scenario

    sc = Scenario(kind="balanced", isl=8192, osl=1024, concurrency=4000, max_concurrency=4000)
    t0 = time.perf_counter()
    with pytest.raises(InfeasibleError) as err:
        run_disagg("deepseek-r1", "h200_sxm", 16, sc, "sglang")
    assert "184 cards (15 prefill worker(s) of 8 ranks and 8 decode worker(s) of 8)" in str(err.value.remedy)
    assert time.perf_counter() - t0 < 20


def _pool_envs(model: str, cards: int) -> list[dict]:
    import json

    from click.testing import CliRunner

    from solver.cli.main import main

    out = CliRunner().invoke(main, ["solve", model, "--hardware", "h200_sxm", "--cards", str(cards), "--framework",
                                    "vllm", "--isl", "2048", "--osl", "1024", "--tpot-ms", "50", "--serving", "disagg",
                                    "--format", "json"])
    assert out.exit_code == 0, out.output
    plan = json.loads(out.stdout)
    return [n["env"] for pool in ("prefill_pool", "decode_pool") for n in plan[pool]["launch"]["nodes"]]


@pytest.mark.slow
def test_a_hybrid_models_nixl_pools_set_the_conv_state_layout_the_connector_asserts() -> None:
    """vLLM 0.34.0's NixlConnector worker asserts the DS conv-state layout where the model holds Mamba-type state
    (nixl/base_worker.py:758-767; the default is SD, mamba_utils.py:36-58): every node of both pools of
    Qwen3.5-35B-A3B (Gated DeltaNet layers) sets VLLM_SSM_CONV_STATE_LAYOUT=DS; Qwen3-30B-A3B's (attention only)
    leave it unset."""
    assert all(env.get("VLLM_SSM_CONV_STATE_LAYOUT") == "DS" for env in _pool_envs("qwen3.5-35b-a3b", 8))
    assert all("VLLM_SSM_CONV_STATE_LAYOUT" not in env for env in _pool_envs("qwen3-30b-a3b", 8))


def _check_sglang(model: str, flags: str):
    from click.testing import CliRunner

    from solver.cli.main import main

    cmd = f"python3 -m sglang.launch_server --model-path x --tp-size 8 --dcp-size 8 {flags}"
    return CliRunner().invoke(main, ["check", "--command", cmd, "--model", model, "--hardware", "h200_sxm",
                                     "--isl", "8192", "--osl", "1024", "--concurrency", "8"])


@pytest.mark.slow
@pytest.mark.parametrize("role", ["prefill", "decode"])
def test_sglang_refuses_dcp_on_a_dsa_model_in_either_pool(role: str) -> None:
    """sglang 0.5.23 model_overrides/deepseek_v2.py:18-24: 'DSA DCP does not support PD disaggregation' at any
    --disaggregation-mode but null: a DeepSeek-V3.2 pool command with --dcp-size 8 is refused naming the rule; the
    same flags as one aggregated server, and DeepSeek-R1's pool (MLA without the indexer), are not."""
    pool = f"--disaggregation-mode {role} --disaggregation-transfer-backend mooncake"
    refused = _check_sglang("deepseek-v3.2", pool)
    assert refused.exit_code == 2 and f"C.pd_{role}_dsa_no_dcp" in refused.output, refused.output
    assert _check_sglang("deepseek-v3.2", "").exit_code == 0
    assert "dsa_no_dcp" not in _check_sglang("deepseek-r1", pool).output


def test_sglang_plans_no_pipeline_parallel_with_mtp_outside_a_prefill_pool() -> None:
    """sglang 0.5.23 validation_hook.py:139-165: PP with speculative decoding starts on disaggregated prefill
    workers only. DeepSeek-R1 on 16 x H100 at --mtp 1 (4K/1K, latency): the answer was Attn TP8 + MoE EP x PP2
    (TPOT 5.15 ms), a server SGLang refuses; no candidate now has pp_size > 1, and a pasted PP2 command with
    --speculative-algorithm is refused naming the rule."""
    from click.testing import CliRunner

    from solver.cli.main import main
    from solver.entry import run_solve
    from solver.specs.scenario import Scenario

    sc = Scenario(kind="latency", isl=4096, osl=1024, mtp=1)
    _, cands = run_solve("deepseek-r1", "h100_sxm", 16, sc, "sglang", top=3, explain_binding=False)
    assert cands and all(c.planned.config.pp_size == 1 for c in cands)
    cmd = ("python3 -m sglang.launch_server --model-path x --tp-size 8 --pp-size 2 --ep-size 8 "
           "--speculative-algorithm NEXTN --speculative-num-steps 1 --speculative-eagle-topk 1 "
           "--speculative-num-draft-tokens 2 --max-running-requests 2")
    r = CliRunner().invoke(main, ["check", "--command", cmd, "--model", "deepseek-r1", "--hardware", "h100_sxm",
                                  "--isl", "4096", "--osl", "1024"])
    assert r.exit_code != 0 and "C.pp_mtp_prefill_pool_only" in r.output, r.output
