"""Rules a user deploying disaggregated serving meets (stop 47's hunt of `--serving disagg`): the commands read
their inputs as the aggregated ones do, and each sentence of the answer says the reason that holds."""
from __future__ import annotations

from solver.capacity.disagg import recommend_disagg, sweep_disagg


def test_disagg_sweep_and_recommend_read_a_comma_list_of_hardware() -> None:
    """`--hardware h200_sxm,b200_sxm` (the help's `a,b`) is two hardware under `--serving disagg` as it is
    aggregated, not one unknown name."""
    df = sweep_disagg("qwen3-30b-a3b", ["h200_sxm,b200_sxm"], "2", ["throughput"], isl=2048, osl=1024)
    assert list(df["hardware"]) == ["h200_sxm", "b200_sxm"]
    rec = recommend_disagg("qwen3-30b-a3b", ["h200_sxm,b200_sxm"], target_output_tokens_per_s=1000.0,
                           isl=2048, osl=1024, cards="2")
    assert [o["hardware"] for o in rec.options] == ["h200_sxm", "b200_sxm"]


def test_idle_cards_are_put_down_to_the_concurrency_cap_where_it_binds() -> None:
    """Qwen3-30B-A3B on 8 x H200 under SGLang at --max-concurrency 64 (2K/1K, throughput): 1P1D on 5 cards carries
    the capped load of 64; the comparison says the cap leaves the other 3 idle (a higher cap fills them: 2P2D on
    72 GB200 at a cap of 16,384 where 1P1D on 36 at the default 4,096), not the rate match."""
    from solver.entry import run_disagg
    from solver.specs.scenario import Scenario

    sc = Scenario(kind="throughput", isl=2048, osl=1024, tpot_ms=50, max_concurrency=64)
    why = run_disagg("qwen3-30b-a3b", "h200_sxm", 8, sc, "sglang").comparison.why
    idle = [w for w in why if "of the 8 cards" in w]
    assert len(idle) == 1 and "the load is at the --max-concurrency cap of 64" in idle[0], why
    assert "rate match" not in idle[0]


def test_check_says_a_pool_commands_role_flags_are_the_disaggregated_launchs_not_never_printed() -> None:
    """`check --command` on the decode pool's command `solve --serving disagg --format launch` prints (vLLM, NIXL):
    --kv-transfer-config and VLLM_NIXL_SIDE_CHANNEL_HOST are named as the pool's role and KV transfer, with the
    estimate said to be of one aggregated server; not 'the vllm launch never prints them'."""
    import json
    import shlex

    from click.testing import CliRunner

    from solver.cli.main import main

    args = ["solve", "qwen3-30b-a3b", "--hardware", "h200_sxm", "--cards", "8", "--scenario", "throughput",
            "--framework", "vllm", "--isl", "2048", "--osl", "1024", "--tpot-ms", "50", "--serving", "disagg",
            "--format", "json"]
    out = CliRunner().invoke(main, args)
    assert out.exit_code == 0, out.output
    node = json.loads(out.output)["decode_pool"]["launch"]["nodes"][0]
    cmd = " ".join([*(f"{k}={v}" for k, v in node["env"].items()), shlex.join(node["argv"])])
    res = CliRunner().invoke(main, ["check", "--command", cmd, "--model", "qwen3-30b-a3b", "--hardware",
                                    "h200_sxm", "--isl", "2048", "--osl", "1024"], terminal_width=400)
    text = " ".join(res.output.split())
    assert ("not read (a disaggregated pool's role and KV transfer, as `solve --serving disagg` prints them; the "
            "estimate is of this command as one aggregated server") in text, text
    assert "--kv-transfer-config" in text and "never prints them" not in text
