"""Disaggregated serving, round two continued (stop 49): a pool's role in the engine rules (prefill_role), and the
worker counts a user fixes kept by the SLA remedy and taken by sweep / recommend."""
from __future__ import annotations

import json

import pytest

PP_MTP = "C.pp_mtp_prefill_pool_only"
# DeepSeek-R1 on 16 x H100, PP2 with one MTP draft (sglang 0.5.23 validation_hook.py:160-164: PP + speculative
# decoding asserts disaggregation_mode == "prefill")
_PP_MTP_CMD = ("python3 -m sglang.launch_server --model-path x --tp-size 8 --pp-size 2 --ep-size 8 "
               "--speculative-algorithm NEXTN --speculative-num-steps 1 --speculative-eagle-topk 1 "
               "--speculative-num-draft-tokens 2 --max-running-requests 2")


def _check_pp_mtp(pool: str):
    from click.testing import CliRunner

    from solver.cli.main import main

    cmd = _PP_MTP_CMD + (f" --disaggregation-mode {pool} --disaggregation-transfer-backend mooncake" if pool else "")
    return CliRunner().invoke(main, ["check", "--command", cmd, "--model", "deepseek-r1", "--hardware", "h100_sxm",
                                     "--isl", "4096", "--osl", "1024"])


def test_sglang_starts_pp_with_mtp_on_a_prefill_pools_worker() -> None:
    """A pasted prefill worker's command (--disaggregation-mode prefill) with PP2 and MTP1 is read as that pool's
    worker and checks valid: the rule reads the role the command names (prefill_role)."""
    r = _check_pp_mtp("prefill")
    assert r.exit_code == 0 and "valid" in r.output and PP_MTP not in r.output, r.output


def test_sglang_refuses_pp_with_mtp_on_a_decode_pools_worker() -> None:
    """The same flags as a decode pool's worker (--disaggregation-mode decode) are refused naming the rule, as the
    aggregated server is (test_disagg49)."""
    r = _check_pp_mtp("decode")
    assert r.exit_code == 1 and PP_MTP in r.output, r.output


def test_a_prefill_pools_plans_admit_pp_with_mtp_and_no_other_pools_do() -> None:
    """The layouts the planner's rules admit for DeepSeek-R1 on a 16-rank SGLang worker at MTP 1: the prefill pool's
    (disagg_pools.pool_framework: the rules read as a prefill worker's) include PP2; the decode pool's and one
    aggregated server's have no pp_size > 1."""
    from solver.launch.config_search import admitted
    from solver.plan.disagg_pools import decode_framework, phase_scenario, pool_framework
    from solver.specs.framework import load_framework
    from solver.specs.hardware_catalog import load_hardware
    from solver.specs.model_catalog import load_model
    from solver.specs.scenario import Scenario

    model, hw, fw = load_model("deepseek-r1"), load_hardware("h100_sxm"), load_framework("sglang")
    sc = Scenario(kind="balanced", isl=4096, osl=1024, mtp=1)

    def stages(rules, scenario) -> set[int]:
        return {cfg.get("pp_size", 1) for cfg in admitted(model, hw, rules, 16, scenario, 16)}
    assert 2 in stages(pool_framework(fw), phase_scenario(sc, "prefill", 16))
    assert stages(decode_framework(fw), phase_scenario(sc, "decode")) == {1}
    assert stages(fw, sc) == {1}


def test_a_profile_read_as_a_role_leaves_the_profile_itself_as_it_was() -> None:
    """FrameworkProfile.for_role: a prefill worker's copy binds prefill_role true and the profile keeps it false; a
    decode worker reads the rules as one aggregated server does (the profile itself); no other role is read."""
    from solver.errors import InputError
    from solver.specs.framework import load_framework

    fw = load_framework("sglang")
    env = {"pp_size": 2, "mtp": 1}

    def holds(profile) -> bool:
        return next(r for r in profile.rules if r.id == PP_MTP).holds(env)
    prefill = fw.for_role("prefill")
    assert holds(prefill) and not holds(fw)
    assert fw.for_role("prefill") is prefill and fw.for_role("decode") is fw and not holds(prefill.for_role(None))
    with pytest.raises(InputError, match="role"):
        fw.for_role("both")


def test_a_rule_may_read_the_serving_role_and_a_launch_line_still_does() -> None:
    """prefill_role is a rule name (a flag: a `when` may be it alone) and launch lines read it as before (vLLM's
    prefill workers run the DeepEP throughput kernels)."""
    from solver.specs.launch_spec import LaunchArg
    from solver.specs.profile_rules import RULE_FLAGS, Rule

    assert "prefill_role" in RULE_FLAGS
    Rule(id="C.role_rule", when="prefill_role", require="mtp == 0", message="m", source="s")
    LaunchArg(flag="--x", text="y", when="ep_kernels and prefill_role")


def test_a_fixed_ratios_sla_remedy_keeps_the_worker_counts() -> None:
    """Qwen3-30B-A3B on 8 x H200 under SGLang at 2P1D (2K/1K, TTFT <= 60 ms, TPOT <= 50 ms): no deployment at
    2P1D meets the TTFT; the remedy's floor is over 2P1D's deployments (65.0 ms; 51.6 ms before, another ratio's,
    which 2P1D misses), says so, and at that floor 2P1D plans."""
    from solver.entry import run_disagg
    from solver.errors import InfeasibleError
    from solver.specs.scenario import Scenario

    def at(ttft: float):
        sc = Scenario(kind="throughput", isl=2048, osl=1024, tpot_ms=50, ttft_ms=ttft)
        return run_disagg("qwen3-30b-a3b", "h200_sxm", 8, sc, "sglang", compare_aggregated=False, workers=(2, 1))
    with pytest.raises(InfeasibleError) as exc:
        at(60)
    text = str(exc.value)
    assert "at 2P1D (the worker counts given)" in text and "--ttft-ms" in text, text
    floor = exc.value.remedies.options[0].changes[0].value
    plan = at(floor).plan
    assert (plan.prefill.workers, plan.decode.workers) == (2, 1)


def test_sweep_and_recommend_with_disaggregated_serving_take_the_worker_counts() -> None:
    """--prefill-workers / --decode-workers, one home with solve's (cli.options.pool_workers_options): every row of
    `sweep --serving disagg` is the fixed ratio, and `recommend --serving disagg`'s answer is."""
    from click.testing import CliRunner

    from solver.cli.main import main

    common = ["--hardware", "h200_sxm", "--isl", "2048", "--osl", "1024", "--tpot-ms", "50", "--framework", "sglang",
              "--serving", "disagg", "--prefill-workers", "2", "--decode-workers", "1"]
    r = CliRunner().invoke(main, ["sweep", "qwen3-30b-a3b", "--cards", "4,8", "--scenarios", "throughput",
                                  "--format", "json", *common])
    assert r.exit_code == 0, r.output
    rows = [row for row in json.loads(r.stdout) if row["feasible"]]
    assert rows and {row["ratio"] for row in rows} == {"2P1D"}, rows
    r = CliRunner().invoke(main, ["recommend", "qwen3-30b-a3b", "--target-output-tokens-per-s", "5000",
                                  "--cards", "4,8", "--format", "json", *common])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["recommended"]["ratio"] == "2P1D", r.stdout


@pytest.mark.parametrize("command", [["sweep", "qwen3-30b-a3b", "--cards", "8"],
                                     ["recommend", "qwen3-30b-a3b", "--target-output-tokens-per-s", "5000"]])
def test_worker_counts_are_refused_by_aggregated_sweeps_and_recommends(command: list[str]) -> None:
    """Without --serving disagg there are no pools to count: refused in one line naming the flag, exit 2."""
    from click.testing import CliRunner

    from solver.cli.main import main

    r = CliRunner().invoke(main, [*command, "--hardware", "h200_sxm", "--decode-workers", "2"])
    assert r.exit_code == 2 and "--decode-workers" in r.output and "--serving disagg" in r.output, r.output
    assert len(r.output.strip().splitlines()) == 1, r.output
