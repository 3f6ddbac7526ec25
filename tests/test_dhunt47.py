"""Rules a user deploying disaggregated serving meets (stop 47's hunt of `--serving disagg`): the commands read
their inputs as the aggregated ones do, and each sentence of the answer says the reason that holds."""
from __future__ import annotations

from pathlib import Path

import pytest

from solver.specs.dtypes import KV16
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
    --kv-transfer-config and VLLM_NIXL_SIDE_CHANNEL_HOST are named as the pool's role and KV transfer (read as the
    decode pool's since poolcmd47), not 'the vllm launch never prints them'."""
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
    assert "read as a decode pool's worker (--kv-transfer-config kv_role kv_consumer; its KV transfer: " in text, text
    assert "VLLM_NIXL_SIDE_CHANNEL_HOST" in text and "never prints them" not in text


def test_a_pipeline_stage_hands_over_only_its_own_layers_kv() -> None:
    """DeepSeek-R1 (MLA, 576 values x 2 B a token and layer, 61 layers) at 32,768 prompt tokens on H100: a TP8 x PP2
    decode worker's ranks hold their stage's layers (31 and 30), so the busiest receives 31 / 61 of the latent,
    32,768 x 1,152 x 31 = 1,170,210,816 B, not the whole 2,302,672,896 (its memory already holds its stage's
    only); a TP8 prefill worker with PP2 likewise sends its stage's. Over H100's RDMA (50 GB/s x 0.86, 20 us):
    27.23 ms, half the 53.57 ms the whole request would take."""
    from solver.estimate.disagg import kv_transfer
    from solver.specs.hardware_catalog import load_hardware
    from solver.specs.model_catalog import load_model
    from solver.specs.parallel import make_parallel_config

    knobs = dict(attn_tp_size=8, dense_tp_size=8, embed_tp_size=8, lmhead_tp_size=8, moe_tp_size=8)
    r1, hw = load_model("deepseek-ai/DeepSeek-R1"), load_hardware("h100_sxm")
    pp2 = make_parallel_config(16, pp_size=2, **knobs)
    pp1 = make_parallel_config(8, **knobs)
    t = kv_transfer(r1, hw, pp2, pp2, KV16, 32768, prefill_workers=1, decode_workers=1)
    assert t.bytes_per_request == 32768 * 1152 * 61
    assert t.recv_bytes_per_rank == 32768 * 1152 * 31
    assert t.send_bytes_per_rank == 32768 * 1152 * 31  # 8 senders to 8 receivers of the latent, per stage
    whole = kv_transfer(r1, hw, pp1, pp1, KV16, 32768, prefill_workers=1, decode_workers=2)
    assert whole.recv_bytes_per_rank == 32768 * 1152 * 61
    tier = hw.tiers[t.tier]
    assert t.time_s == pytest.approx(tier.latency_s + 32768 * 1152 * 31 / (tier.bandwidth_Bps * tier.efficiency))


@pytest.mark.skipif(not (Path(__file__).resolve().parents[2] / "shared" / "facts" / "calibration"
                          / "measured_disagg_calibration.csv").is_file(), reason="shared facts not present")
def test_a_gap_on_a_row_of_blank_worker_counts_is_not_called_a_unit_slip(tmp_path) -> None:
    """measured_disagg_calibration.csv line 42 (DeepSeek-R1 on GB200, TensorRT-LLM, 1K/8K at 2,048 concurrent)
    leaves the worker counts blank: predicted at 1 prefill worker its TTFT is ~823 s against 1.4 s measured, the
    convention's gap, not seconds in a ms column; a row that gives its counts (line 2) with TTFT written in seconds
    still is. The closing line counts the rows evaluated as the notes do (read = evaluated + refused)."""
    import csv

    from click.testing import CliRunner

    from solver.cli.main import main

    from conftest import FACTS

    with open(FACTS / "calibration" / "measured_disagg_calibration.csv", newline="") as fh:
        reader = csv.DictReader(fh)
        header, rows = reader.fieldnames, list(reader)
    blank, given = dict(rows[40]), dict(rows[0])
    assert not blank["prefill_workers"] and given["prefill_workers"]
    given["ttft_ms"] = str(float(given["ttft_ms"]) / 1e3)
    path = tmp_path / "m.csv"
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=header)
        w.writeheader()
        w.writerows([given, blank])
    res = CliRunner().invoke(main, ["estimate", "--from-csv", str(path), "--out", str(tmp_path / "p.csv")])
    assert res.exit_code == 0, res.output
    err = " ".join(res.stderr.split())
    assert "ttft_ms is below 1/100 of the prediction in 1 evaluated row(s) (first: line 2," in err, err
    assert "note: read 2 rows: 2 evaluated, 0 could not be evaluated" in err
