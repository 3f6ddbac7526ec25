"""`shardplan calibrate`: figures on synthetic traces computed by hand, verdicts tied to the profiled config,
the estimate comparison, the real trace, and one-line errors for bad input."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

import traces_synth as ts
from solver.calibrate.compare import make_setup
from solver.calibrate.config import parse_profiled_config
from solver.calibrate.synth import COMM_STREAM, step_timeline
from solver.cli.main import main
from solver.specs.hardware_catalog import load_hardware

from conftest import REAL_TRACE  # noqa: E402  (../shared/facts beside the checkout)
KEYS = ("communication_ratio", "communication_ratio_raw", "rank_variance", "peak_memory_gb", "step_time_ms",
        "verdicts")


def _run(*args: str):
    return CliRunner().invoke(main, ["calibrate", *map(str, args)])


def _json(*args: str) -> dict:
    res = _run(*args, "--format", "json")
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def _verdict(data: dict, metric: str) -> dict:
    return next(v for v in data["verdicts"] if v["metric"] == metric)


def _config(tmp_path: Path, data: dict, name: str = "cfg.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data))
    return path


# --------------------------------------------------------------------- figures computed by hand


def test_known_communication_share_20_percent_single_file(tmp_path):
    # one 10 ms step: 8 ms GEMM, then 2 ms all-reduce nothing hides -> 2 / 10 = 20% raw and exposed
    path = ts.write_trace(tmp_path / "t.json", ts.comm_share_trace())
    data = _json(path)
    assert set(KEYS) <= set(data)
    assert data["step_time_ms"] == [10.0]
    assert data["communication_ratio"] == data["communication_ratio_raw"] == 0.2
    assert data["rank_variance"] is None  # one rank: no spread to measure
    assert data["peak_memory_gb"] is None
    assert _verdict(data, "communication_ratio")["level"] == "warn"  # 20% is the lower edge of 20-40%


def test_known_variance_across_8_ranks(tmp_path):
    # per-rank step times (ms) 100 102 98 101 99 100 104 96: mean 100 -> (104 - 96) / 100 = 8%
    times = [100_000, 102_000, 98_000, 101_000, 99_000, 100_000, 104_000, 96_000]
    data = _json(ts.rank_folder(tmp_path / "prof", [[t] for t in times]))
    assert data["ranks"] == list(range(8))
    assert data["step_time_ms"] == [t / 1000 for t in times]
    assert data["step_time_ms_mean"] == 100.0
    assert data["rank_variance"] == pytest.approx(0.08, abs=1e-12)
    assert data["communication_ratio"] == pytest.approx(0.10, abs=1e-12)  # steps_trace: 10% exposed collective
    v = _verdict(data, "rank_variance")
    assert v["level"] == "warn" and "perfect_eplb" in v["action"]
    assert "slowest rank 6" in v["message"] and "fastest rank 7" in v["message"]


def _overlap_trace(rank: int, overlapped: bool) -> dict:
    """10 ms step: GEMM 0-10 ms on the compute stream; a 3 ms all-reduce on the comm stream, either at 2-5 ms
    (under the GEMM: raw 30%, exposed 0%) or after a GEMM that ends at 7 ms (raw 30%, exposed 30%)."""
    gemm_end = 10_000 if overlapped else 7_000
    comm_start = 2_000 if overlapped else 7_000
    return ts.chrome_trace([
        ts.annotation("ProfilerStep#1", 0, 10_000, gpu=True),
        ts.kernel(ts.GEMM, 0, gemm_end),
        ts.kernel(ts.NCCL_ALLREDUCE, comm_start, 3_000, stream=ts.COMM_STREAM),
    ], rank=rank, world_size=8)


@pytest.mark.parametrize("overlapped, exposed", [(True, 0.0), (False, 0.3)])
def test_overlapped_vs_not(tmp_path, overlapped, exposed):
    folder = tmp_path / "prof"
    folder.mkdir()
    for r in range(8):
        ts.write_trace(folder / f"rank_{r}.json", _overlap_trace(r, overlapped))
    data = _json(folder)
    assert data["communication_ratio_raw"] == pytest.approx(0.3, abs=1e-12)
    assert data["communication_ratio"] == pytest.approx(exposed, abs=1e-12)
    assert data["rank_variance"] == 0.0
    raw, exp = _verdict(data, "communication_ratio_raw"), _verdict(data, "communication_ratio")
    assert raw["level"] == "warn"
    if overlapped:
        assert exp["level"] == "ok"
        assert "only 0.0% exposed" in raw["message"] and "overlap" in raw["action"]
    else:
        assert exp["level"] == "warn" and "only" not in raw["message"]


def test_peak_memory_from_events_and_from_the_flag(tmp_path):
    folder = tmp_path / "prof"
    folder.mkdir()
    for r, gb in enumerate((60, 72)):
        trace = ts.steps_trace([10_000], rank=r, world_size=2)
        trace["traceEvents"].append(ts.memory(5, gb * 10**9, (gb + 4) * 10**9))
        ts.write_trace(folder / f"rank_{r}.json", trace)
    data = _json(folder, "--hardware", "h200_sxm")
    assert data["peak_memory_gb"] == 72.0 and data["peak_memory_gb_per_rank"] == [60.0, 72.0]
    assert data["peak_memory_source"] == "trace memory events"
    share = _verdict(data, "peak_memory_share")
    assert share["value"] == pytest.approx(72e9 / load_hardware("h200_sxm").memory_bytes)
    flagged = _json(folder, "--peak-memory-gb", "140", "--hardware", "h200_sxm")
    assert flagged["peak_memory_gb"] == 140.0 and flagged["peak_memory_source"] == "--peak-memory-gb"
    assert _verdict(flagged, "peak_memory_share")["level"] == "warn"  # 140 / 151.4 = 92%: over 0.8, under 0.95


def test_peak_memory_is_held_to_the_memory_rules_limit_not_095_of_capacity(tmp_path):
    # Atlas A3: 64 GiB = 68.72 GB, 3.76 GB runtime reserve, so the limit is 68.72 - 3.76 = 64.96 GB (under
    # 0.95 x 68.72 = 65.28): a 65.0 GB allocator peak is over the limit every estimate and check uses, whatever its
    # share of capacity
    path = ts.write_trace(tmp_path / "t.json", ts.steps_trace([10_000]))
    over = _verdict(_json(path, "--peak-memory-gb", "65.0", "--hardware", "atlas_a3"), "peak_memory_share")
    assert over["level"] == "bad" and "limit 64.96 GB = min(0.95 x 68.72, 68.72 - 3.76 runtime reserve)" in over["message"]
    under = _verdict(_json(path, "--peak-memory-gb", "64.9", "--hardware", "atlas_a3"), "peak_memory_share")
    assert under["level"] == "warn"


def test_a_peak_memory_without_hardware_says_it_is_not_judged(tmp_path):
    res = _run(ts.write_trace(tmp_path / "t.json", ts.steps_trace([10_000])), "--peak-memory-gb", "70")
    assert res.exit_code == 0
    assert "peak memory 70.00 GB (--peak-memory-gb) is not judged against a capacity: pass --hardware" in res.stderr


def test_table_format_prints_metrics_and_verdicts(tmp_path):
    res = _run(ts.write_trace(tmp_path / "t.json", ts.comm_share_trace()))
    assert res.exit_code == 0, res.output
    for text in ("Step metrics", "communication ratio, raw", "20.0%", "Verdicts", "warn"):
        assert text in res.stdout


def test_yaml_format(tmp_path):
    res = _run(ts.write_trace(tmp_path / "t.json", ts.comm_share_trace()), "--format", "yaml")
    assert res.exit_code == 0
    assert yaml.safe_load(res.stdout)["communication_ratio_raw"] == 0.2


# ------------------------------------------------------------------ verdicts tied to the config


def test_tp_across_nodes_names_the_knob_and_the_seed_action(tmp_path):
    # 16 ranks of 8 per node, attention/dense TP 16; every rank: 45% exposed all-reduce
    folder = tmp_path / "prof"
    folder.mkdir()
    for r in range(16):
        ts.write_trace(folder / f"rank_{r}.json", ts.steps_trace([10_000], rank=r, world_size=16,
                                                                   comm_fraction=0.45))
    cfg = _config(tmp_path, {"parallel_config": {"attn_tp_size": 16, "dense_tp_size": 16, "embed_tp_size": 8}})
    data = _json(folder, "--config", cfg, "--model", "llama-3.1-70b", "--hardware", "h200_sxm")
    v = _verdict(data, "communication_ratio")
    assert v["level"] == "bad"
    assert v["message"] == ("exposed collective time 45.0% of the step and TP crosses nodes "
                            "(attn_tp_size=16, dense_tp_size=16 > 8 ranks per node)")
    assert v["action"].startswith("keep tp_size <= ranks per node (8): attn_tp_size=16, dense_tp_size=16 cross nodes")
    assert v["module"] == "attention"
    assert data["config"]["world_size"] == 16 and data["config"]["world_size_from"] == "traces"
    assert data["estimate_comparison"] is None  # no workload in the config: nothing to estimate
    var = _verdict(data, "rank_variance")
    assert var["level"] == "ok"


def test_rank_spread_without_ep_is_not_called_expert_imbalance(tmp_path):
    times = [100_000, 120_000, 100_000, 100_000]
    folder = ts.rank_folder(tmp_path / "prof", [[t] for t in times])
    cfg = _config(tmp_path, {"attn_tp_size": 4, "dense_tp_size": 4})
    data = _json(folder, "--config", cfg, "--model", "llama-3.1-70b", "--hardware", "h200_sxm")
    v = _verdict(data, "rank_variance")
    assert v["value"] == pytest.approx(20 / 105) and v["level"] == "bad"
    assert "no expert parallelism" in v["action"] and "rank (1)" in v["action"]


def _estimate_trace(folder: Path, setup, attention_scale: float = 1.0, ranks: int = 8) -> float:
    """Ranks whose kernels are the catalog estimate, attention kernels stretched by `attention_scale`;
    returns the estimated attention time per step in seconds."""
    folder.mkdir(parents=True, exist_ok=True)
    step = setup.step()
    kernels, _ = step_timeline(step)
    attn = sum(k.dur_us for k in kernels if k.kind == "attention")
    for r in range(ranks):
        events, t = [], 0.0
        for k in kernels:  # everything back to back on one stream, attention stretched
            dur = k.dur_us * (attention_scale if k.kind == "attention" else 1.0)
            events.append(ts.kernel(k.name, t, dur, stream=ts.COMM_STREAM if k.stream == COMM_STREAM
                                    else ts.COMPUTE_STREAM))
            t += dur
        events.insert(0, ts.annotation("ProfilerStep#1", 0, t, gpu=True))
        ts.write_trace(folder / f"rank_{r}.json", ts.chrome_trace(events, rank=r, world_size=ranks))
    return attn / 1e6


def test_attention_40_percent_slower_is_named_with_the_seed_action(tmp_path):
    # a 128K prompt: attention is 45% of the estimated step, so 40% slower attention moves the step 18%
    cfg_data = {"attn_tp_size": 8, "dense_tp_size": 8, "phase": "prefill", "batch": 1, "seq_len": 131072}
    cfg = _config(tmp_path, cfg_data)
    hw = load_hardware("h200_sxm")
    setup = make_setup("llama-3.1-70b", hw, parse_profiled_config(cfg_data, "cfg", 8, 8))
    est_attn = _estimate_trace(tmp_path / "prof", setup, attention_scale=1.4)
    data = _json(tmp_path / "prof", "--config", cfg, "--model", "llama-3.1-70b", "--hardware", "h200_sxm")
    cmp = {c["class"]: c for c in data["estimate_comparison"]["classes"]}
    assert cmp["attention"]["deviation"] == pytest.approx(0.40, abs=1e-4)
    assert cmp["attention"]["estimated_ms"] == pytest.approx(est_attn * 1e3, rel=1e-6)
    assert cmp["gemm_moe"]["deviation"] == pytest.approx(0.0, abs=1e-4)
    v = _verdict(data, "attention_deviation")
    assert v["level"] == "bad" and v["module"] == "attention"
    assert v["message"].startswith("attention 40% slower than estimated") and v["message"].endswith("deviates most")
    assert v["action"].startswith("re-evaluate attention TP vs CP")
    step = _verdict(data, "step_time_deviation")
    expected = 0.4 * est_attn / setup.step().time_s  # only attention moved
    assert step["value"] == pytest.approx(expected, rel=1e-3) and step["level"] == "warn"
    assert step["action"].startswith("fine-tune the deviating module: attention deviates most (attention): "
                                     "re-evaluate attention TP vs CP (GQA: raise attn_tp_size, now 8, or add "
                                     "cp_size, now 1)")
    assert step["module"] == "attention"


def test_a_class_off_while_the_step_holds_is_still_flagged(tmp_path):
    # 32K prompt: attention is 17% of the step; 40% slower attention moves the step only 6.7%
    cfg_data = {"attn_tp_size": 8, "dense_tp_size": 8, "phase": "prefill", "batch": 1, "seq_len": 32768}
    cfg = _config(tmp_path, cfg_data)
    setup = make_setup("llama-3.1-70b", load_hardware("h200_sxm"), parse_profiled_config(cfg_data, "c", 8, 8))
    _estimate_trace(tmp_path / "prof", setup, attention_scale=1.4)
    data = _json(tmp_path / "prof", "--config", cfg, "--model", "llama-3.1-70b", "--hardware", "h200_sxm")
    assert _verdict(data, "step_time_deviation")["level"] == "ok"
    assert _verdict(data, "attention_deviation")["level"] == "bad"


def test_estimate_matches_a_trace_built_from_it(tmp_path):
    cfg_data = {"attn_tp_size": 8, "dense_tp_size": 8, "phase": "decode", "batch": 64, "seq_len": 8192}
    cfg = _config(tmp_path, cfg_data)
    setup = make_setup("llama-3.1-70b", load_hardware("h200_sxm"), parse_profiled_config(cfg_data, "c", 8, 8))
    _estimate_trace(tmp_path / "prof", setup)
    data = _json(tmp_path / "prof", "--config", cfg, "--model", "llama-3.1-70b", "--hardware", "h200_sxm",
                 "--peak-memory-gb", "60")
    dev = data["estimate_comparison"]["step_time_ms"]["deviation"]
    assert abs(dev) < 1e-4
    step = _verdict(data, "step_time_deviation")
    assert step["level"] == "ok" and step["action"] == "strategy confirmed, no adjustment needed"
    mem = _verdict(data, "memory_deviation")
    assert "batch can grow to about" in mem["action"] and "under the limit 143.83 GB = min(0.95 x" in mem["action"]


# ----------------------------------------------------------------------------------- real trace


@pytest.mark.skipif(not REAL_TRACE.is_file(), reason="real trace not available")
def test_real_training_trace_metrics_and_verdicts():
    data = _json(REAL_TRACE, "--hardware", "h800")
    assert data["training_step"] is True and data["world_size"] == 64 and data["ranks"] == [0]
    assert data["step_time_ms"] == [pytest.approx(129.545)]
    assert data["communication_ratio_raw"] == pytest.approx(0.8725, abs=1e-4)
    assert data["communication_ratio"] == pytest.approx(0.0320, abs=1e-4)
    assert data["rank_variance"] is None and data["peak_memory_gb"] is None
    assert _verdict(data, "communication_ratio_raw")["level"] == "bad"
    assert _verdict(data, "communication_ratio")["level"] == "ok"


@pytest.mark.skipif(not REAL_TRACE.is_file(), reason="real trace not available")
def test_real_training_trace_with_its_config_names_the_ep_group_and_skips_the_estimate(tmp_path):
    cfg = _config(tmp_path, {"attn_tp_size": 1, "moe_tp_size": 1, "phase": "prefill", "batch": 64,
                             "seq_len": 4096})
    res = _run(REAL_TRACE, "--config", cfg, "--model", "deepseek-v3", "--hardware", "h800", "--format", "json")
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["estimate_comparison"] is None  # a training step is not an inference step
    assert "training step" in res.stderr
    v = _verdict(data, "communication_ratio_raw")
    assert "moe_ep_size=64" in v["action"] and "crosses nodes (inter_node)" in v["action"]
    assert data["config"]["world_size"] == 64 and data["config"]["world_size_from"] == "traces"


# ---------------------------------------------------------------------------------------- bad input


def _one_error_line(res, *needles: str) -> None:
    assert res.exit_code == 2, res.output
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), res.stderr
    assert "Traceback" not in res.output
    for n in needles:
        assert n in lines[0], lines[0]


def test_bad_not_json(tmp_path):
    path = tmp_path / "t.json"
    path.write_text("this is not json")
    _one_error_line(_run(path), "not JSON")


def test_bad_json_not_a_trace(tmp_path):
    path = tmp_path / "t.json"
    path.write_text('{"hello": 1}')
    _one_error_line(_run(path), "not a Chrome trace")


def test_bad_trace_without_device_events(tmp_path):
    path = ts.write_trace(tmp_path / "t.json", ts.chrome_trace([ts.annotation("ProfilerStep#1", 0, 100)]))
    _one_error_line(_run(path), "no device events")


def test_bad_ranks_with_different_step_counts(tmp_path):
    folder = ts.rank_folder(tmp_path / "prof", [[100, 100, 100], [100, 100]])
    _one_error_line(_run(folder), "rank 1 has 2 steps but rank 0 has 3")


@pytest.mark.parametrize("cfg, needle", [
    ({"attn_tp_size": 2, "attn_tpsize": 4}, "attn_tpsize: unknown key (did you mean attn_tp_size?)"),
    ({"parallel_config": {"moe_ep_size": 8}}, "moe_ep_size: is derived"),
    ({"attn_tp_size": 3}, "attn_tp_size: 3 does not divide world_size 8"),
    ({"parallel_config": {"moe_tp_size": 16}, "world_size": 8}, "moe_tp_size: 16 does not divide world_size 8"),
    ({"world_size": 16}, "world_size: 16 but the traces record world_size 8"),
    ({"attn_tp_size": 2, "phase": "prefill", "batch": 1}, "prefill workload also needs seq_len (or isl)"),
    ({"attn_tp_size": 2, "batch": 4}, "phase: required with batch"),
    ({"attn_tp_size": "two"}, "attn_tp_size: must be an integer"),
    ({"attn_tp_size": 2, "parallel_config": {"attn_tp_size": 2}}, "both at the top level and under parallel_config"),
])
def test_bad_config_yaml(tmp_path, cfg, needle):
    folder = ts.rank_folder(tmp_path / "prof", [[100]] * 8)
    path = _config(tmp_path, cfg)
    _one_error_line(_run(folder, "--config", path, "--model", "llama-3.1-70b", "--hardware", "h200_sxm"), needle)


def test_bad_config_not_yaml_and_missing(tmp_path):
    folder = ts.rank_folder(tmp_path / "prof", [[100]] * 2)
    bad = tmp_path / "bad.yaml"
    bad.write_text("a: [1, 2\n")
    _one_error_line(_run(folder, "--config", bad, "--model", "llama-3.1-70b", "--hardware", "h200_sxm"),
                    "not valid YAML")
    _one_error_line(_run(folder, "--config", tmp_path / "nope.yaml", "--model", "llama-3.1-70b", "--hardware",
                         "h200_sxm"), "file not found")


@pytest.mark.parametrize("args, needle", [
    ([], "TRACE: give at least one trace"),
    (["{trace}", "--config", "{cfg}"], "--config: also needs --model and --hardware"),
    (["{trace}", "--model", "llama-3.1-70b"], "--model: only used with --config"),
    (["{trace}", "--recalibrate", "out.yaml"], "--recalibrate: needs --config"),
    (["{trace}", "--peak-memory-gb", "0"], "--peak-memory-gb: must be > 0"),
    (["{missing}"], "no such file or folder"),
])
def test_bad_option_combinations(tmp_path, args, needle):
    trace = ts.write_trace(tmp_path / "t.json", ts.comm_share_trace())
    cfg = _config(tmp_path, {"attn_tp_size": 1})
    filled = [a.format(trace=trace, cfg=cfg, missing=tmp_path / "missing.json") for a in args]
    _one_error_line(_run(*filled), needle)


def test_recalibrate_needs_a_workload(tmp_path):
    folder = ts.rank_folder(tmp_path / "prof", [[100]] * 8)
    cfg = _config(tmp_path, {"attn_tp_size": 8})
    res = _run(folder, "--config", cfg, "--model", "llama-3.1-70b", "--hardware", "h200_sxm", "--recalibrate",
               tmp_path / "o.yaml")
    _one_error_line(res, "--recalibrate needs the workload")


def test_tp_allreduce_dominating_inside_the_node_names_the_tp_knob(tmp_path):
    folder = tmp_path / "prof"
    folder.mkdir()
    for r in range(8):
        ts.write_trace(folder / f"rank_{r}.json", ts.steps_trace([10_000], rank=r, world_size=8, comm_fraction=0.3))
    cfg = _config(tmp_path, {"attn_tp_size": 8, "dense_tp_size": 8, "phase": "decode", "batch": 64,
                             "seq_len": 4096})
    data = _json(folder, "--config", cfg, "--model", "llama-3.1-70b", "--hardware", "h200_sxm")
    v = _verdict(data, "communication_ratio")
    assert v["level"] == "warn"
    assert "_allreduce over " in v["message"] and "(intra_node)" in v["message"]
    assert "carries most of it (all_reduce on the critical path)" in v["action"]
    assert v["action"].split("=")[0] in ("attn_tp_size", "dense_tp_size")


@pytest.mark.parametrize("extra, needle", [
    ({"kv_dtype": "int4"}, "cfg.yaml: kv_dtype: 'int4' is not a KV-cache format"),
    ({"framework": "nope"}, "cfg.yaml: framework: unknown framework 'nope'"),
    ({"phase": "both"}, "cfg.yaml: phase: must be prefill or decode"),
])
def test_bad_config_values_name_the_config_key(tmp_path, monkeypatch, extra, needle):
    folder = ts.rank_folder(tmp_path / "prof", [[100]] * 4)
    _config(tmp_path, {"attn_tp_size": 4, "phase": "decode", "batch": 1, "seq_len": 1000, **extra})
    monkeypatch.chdir(tmp_path)
    _one_error_line(_run(folder, "--config", "cfg.yaml", "--model", "qwen3-32b", "--hardware", "h200_sxm"), needle)


def test_gzipped_rank_folder(tmp_path):
    data = _json(ts.rank_folder(tmp_path / "prof", [[1_000], [1_100]], gz=True))
    assert data["step_time_ms"] == [1.0, 1.1] and data["rank_variance"] == pytest.approx(0.1 / 1.05)
