"""`shardplan estimate`: one config (table/yaml/json), CSV batch mode, and one-line errors with exit code 2."""
from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from conftest import FACTS

from solver.cli.main import main

V32_H200 = ["estimate", "deepseek-v3.2", "--hardware", "h200_sxm", "--cards", "8"]
PREFILL = ["--phase", "prefill", "--batch", "1", "--seq-len", "8192"]
DECODE = ["--phase", "decode", "--batch", "64", "--seq-len", "8192"]
SERVING = ["--isl", "1024", "--osl", "256", "--concurrency", "32"]
CSV_HEADER = ["id", "backend", "model", "system", "precision", "gemm_quant_mode", "moe_quant_mode", "isl", "osl",
              "concurrency", "tp", "pp", "attention_dp", "moe_tp", "moe_ep", "ttft_ms", "tpot_ms"]


def _run(*args: str):
    return CliRunner().invoke(main, list(args))


def _json(*args: str) -> dict:
    res = _run(*args, "--format", "json")
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def _assert_input_error(res, *needles: str) -> None:
    assert res.exit_code == 2, res.output
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert lines and lines[0].startswith("error:"), res.stderr
    assert len([ln for ln in lines if ln.startswith("error:")]) == 1
    assert "Traceback" not in res.output
    for n in needles:
        assert n in res.stderr, res.stderr


# ------------------------------------------------------------------------------------------- one config


LLAMA_TP8_DECODE = ["estimate", "llama-3.1-70b", "--hardware", "h200_sxm", "--cards", "8", "--attn-tp", "8",
                    "--dense-tp", "8", "--embed-tp", "8", "--lmhead-tp", "8", "--phase", "decode", "--seq-len", "32768"]


def test_the_memory_shown_is_the_figure_its_limit_bounds() -> None:
    d = _json(*LLAMA_TP8_DECODE, "--batch", "93")
    m = d["memory"]
    assert d["feasible"] and d["memory_per_rank_gb"] == m["model_gb"] <= m["limit_gb"]
    assert m["model_gb"] + m["reserve_gb"] == pytest.approx(m["total_gb"]) and m["total_gb"] <= m["capacity_gb"]
    row = _run(*LLAMA_TP8_DECODE, "--batch", "93").stdout
    assert "143.38 GB of limit 143.83 GB (+ 3.76 GB runtime reserve = 147.13 of 151.40 GB capacity)" in row
    over = _run(*LLAMA_TP8_DECODE, "--batch", "95")
    assert "does not fit: 146.06 GB per rank (the runtime reserve aside) over the limit of 143.83 GB" in over.stderr


def test_json_has_the_documented_keys_for_serving() -> None:
    d = _json(*V32_H200, *SERVING)
    for key in ("ttft_ms", "tpot_ms", "output_tokens_per_s_per_rank", "memory_per_rank_gb", "feasible", "breakdown"):
        assert key in d
    assert d["ttft_ms"] > 0 and d["tpot_ms"] > 0 and d["output_tokens_per_s_per_rank"] > 0
    assert d["feasible"] is True and 0 < d["memory_per_rank_gb"] < 141 * 1.0737
    assert set(d["breakdown"]) == {"prefill", "decode"}
    dec = d["breakdown"]["decode"]
    assert {"routed_experts", "attention", "indexer", "o_proj"} <= set(dec["by_module"])
    assert set(dec["split_ms"]) == {"compute", "memory", "communication", "overhead"}
    assert sum(dec["split_ms"].values()) == pytest.approx(dec["step_ms"])
    assert sum(m["time_ms"] for m in dec["by_module"].values()) == pytest.approx(dec["step_ms"])
    assert any(c["name"] == "ep_dispatch" for c in dec["communication"])
    assert d["parallel_config"]["moe_ep_size"] == 8 and d["framework"] == "generic"


def test_prefill_phase_has_ttft_and_no_tpot() -> None:
    d = _json(*V32_H200, "--attn-sp", "8", *PREFILL)
    assert d["ttft_ms"] > 0 and d["tpot_ms"] is None
    assert set(d["breakdown"]) == {"prefill"}
    assert d["breakdown"]["prefill"]["step_ms"] == pytest.approx(d["ttft_ms"])
    assert d["input_tokens_per_s_per_rank"] > 0


def test_decode_phase_tpot_and_split_decode_is_memory_dominated() -> None:
    d = _json(*V32_H200, *DECODE)
    assert d["ttft_ms"] is None and d["tpot_ms"] > 0
    split = d["breakdown"]["decode"]["split_ms"]
    assert split["memory"] > split["compute"]


def test_sp_prefill_is_faster_than_tp_prefill_for_dsa_on_hopper() -> None:
    sp = _json(*V32_H200, "--attn-sp", "8", *PREFILL)
    tp = _json(*V32_H200, "--attn-tp", "8", *PREFILL)
    assert sp["ttft_ms"] < tp["ttft_ms"]
    assert sp["breakdown"]["prefill"]["by_module"]["indexer"]["time_ms"] < \
        tp["breakdown"]["prefill"]["by_module"]["indexer"]["time_ms"] / 4


def test_mtp_raises_decode_tokens_per_step() -> None:
    base = _json(*V32_H200, *DECODE)
    mtp = _json(*V32_H200, *DECODE, "--mtp", "1", "--mtp-accept", "0.8")
    assert mtp["workload"]["mtp"] == 1
    assert mtp["tpot_ms"] < base["tpot_ms"]


def test_yaml_and_table_formats() -> None:
    res = _run(*V32_H200, *DECODE, "--format", "yaml")
    assert res.exit_code == 0, res.output
    assert "tpot_ms" in yaml.safe_load(res.stdout)
    res = _run(*V32_H200, *DECODE)
    assert res.exit_code == 0, res.output
    assert "TPOT" in res.stdout and "decode step" in res.stdout and "routed_experts" in res.stdout


def test_dtypes_and_framework_options() -> None:
    d = _json("estimate", "deepseek-v3.2", "--hardware", "atlas_a3", "--cards", "16", "--weight-dtype", "int8",
              "--kv-dtype", "int8", "--framework", "generic", *DECODE)
    assert d["precision"]["attention"] == "int8" and d["precision"]["activation"] == "int8"
    assert d["precision"]["kv_bytes"] == 1


def test_infeasible_config_is_reported_not_an_error() -> None:
    res = _run("estimate", "deepseek-v3.2", "--hardware", "h200_sxm", "--cards", "1", *DECODE, "--format", "json")
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["feasible"] is False
    assert "does not fit" in res.stderr


# --------------------------------------------------------------------------------------------- bad input


def test_knob_that_does_not_divide_the_world_size() -> None:
    _assert_input_error(_run(*V32_H200, "--attn-tp", "3", *DECODE), "--attn-tp", "does not divide")


def test_dtype_the_hardware_lacks() -> None:
    _assert_input_error(_run("estimate", "deepseek-v3.2", "--hardware", "atlas_a2", "--cards", "16",
                             "--weight-dtype", "fp8", *DECODE), "--weight-dtype", "fp8")


def test_missing_workload() -> None:
    _assert_input_error(_run(*V32_H200), "workload", "--isl")


@pytest.mark.parametrize("partial", [["--isl", "1024"], ["--isl", "1024", "--osl", "8"],
                                     ["--phase", "decode", "--batch", "8"], ["--seq-len", "100"]])
def test_partial_workload_flags(partial) -> None:
    _assert_input_error(_run(*V32_H200, *partial), "workload", "needs")


def test_both_workloads() -> None:
    _assert_input_error(_run(*V32_H200, *SERVING, *DECODE), "not both")


def test_missing_model_hardware_cards_and_bad_values() -> None:
    _assert_input_error(_run("estimate", *DECODE), "MODEL")
    _assert_input_error(_run("estimate", "deepseek-v3.2", "--cards", "8", *DECODE), "--hardware")
    _assert_input_error(_run(*V32_H200, "--phase", "decode", "--batch", "0", "--seq-len", "8"), "--batch")
    _assert_input_error(_run(*V32_H200, *DECODE, "--mtp-accept", "1.5"), "--mtp-accept")
    _assert_input_error(_run("estimate", "llama-3.1-8b", "--hardware", "h200_sxm", "--cards", "1", *DECODE,
                             "--mtp", "1"), "--mtp")
    _assert_input_error(_run("estimate", "no-such-model", "--hardware", "h200_sxm", "--cards", "8", *DECODE))
    _assert_input_error(_run(*V32_H200, *DECODE, "--framework", "nope"), "framework")


def test_a_model_rule_violation_is_an_input_error() -> None:
    # 256 experts do not split over EP 12 (class A: the model's rules, specs.model_rules)
    _assert_input_error(_run("estimate", "deepseek-v3.2", "--hardware", "h200_sxm", "--cards", "12", *DECODE),
                        "not runnable on DeepSeek-V3.2: num_experts 256 % moe_ep_size 12 != 0")


def test_more_stages_than_layers_is_an_input_error() -> None:
    _assert_input_error(_run("estimate", "llama-3.1-8b", "--hardware", "h100_sxm", "--cards", "64", "--pp", "64",
                             *DECODE), "pp_size 64 > num_layers 32")


def test_a_knob_of_a_module_the_model_lacks_is_an_input_error() -> None:
    _assert_input_error(_run("estimate", "llama-3.1-8b", "--hardware", "h100_sxm", "--cards", "8", "--attn-tp", "8",
                             "--moe-tp", "8", *DECODE), "moe_tp_size = 8 but Meta-Llama-3.1-8B has no routed experts")
    _assert_input_error(_run("memory", "llama-3.1-8b", "--hardware", "h100_sxm", "--cards", "8", "--oproj-tp", "8",
                             "--batch", "8", "--seq-len", "1024"), "o_proj_tp_size = 8 but")


def test_framework_rule_violation_is_an_input_error() -> None:
    # vLLM shards the embedding over the TP group: a framework (class C) rule; an --embed-tp given against it is
    # refused (one not given follows the TP: test_left4_51)
    _assert_input_error(_run("estimate", "qwen3-30b-a3b", "--hardware", "h100_sxm", "--cards", "8", "--attn-tp", "4",
                             "--embed-tp", "8", "--framework", "vllm", *DECODE), "framework vllm", "[C.embed_tp_is_tp]")


# ---------------------------------------------------------------------------------------------- CSV mode


def _write_csv(path: Path, rows: list[dict], header: list[str] = CSV_HEADER) -> Path:
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=header)
        w.writeheader()
        for r in rows:
            w.writerow({k: r.get(k, "") for k in header})
    return path


GOOD = {"id": "ok", "backend": "sglang", "model": "deepseek-ai/DeepSeek-V3", "system": "h200_sxm", "precision": "fp8",
        "gemm_quant_mode": "fp8", "moe_quant_mode": "fp8_block", "isl": "1024", "osl": "1024", "concurrency": "64.0",
        "tp": "8.0", "pp": "1.0", "attention_dp": "1.0", "moe_tp": "8.0", "moe_ep": "1.0", "ttft_ms": "420",
        "tpot_ms": "30"}


def test_csv_rows_get_predictions_and_bad_rows_an_error_column(tmp_path: Path) -> None:
    bad_model = {**GOOD, "id": "bad-model", "model": "no-such-model"}
    bad_tp = {**GOOD, "id": "bad-tp", "tp": "three"}
    src = _write_csv(tmp_path / "in.csv", [GOOD, bad_model, bad_tp, {**GOOD, "id": "ok2", "concurrency": "8"}])
    dst = tmp_path / "out.csv"
    res = _run("estimate", "--from-csv", str(src), "--out", str(dst))
    assert res.exit_code == 0, res.output
    assert "2 could not be evaluated" in res.stderr
    with dst.open() as fh:
        reader = csv.DictReader(fh)
        assert reader.fieldnames == CSV_HEADER + ["ttft_ms_pred", "tpot_ms_pred", "ttft_err", "tpot_err", "error"]
        rows = {r["id"]: r for r in reader}
    assert set(rows) == {"ok", "bad-model", "bad-tp", "ok2"}
    for rid in ("ok", "ok2"):
        assert float(rows[rid]["ttft_ms_pred"]) > 0 and float(rows[rid]["tpot_ms_pred"]) > 0
        assert rows[rid]["error"] == ""
        assert rows[rid]["ttft_ms"] == GOOD["ttft_ms"]  # input columns kept as they were
    assert rows["bad-model"]["error"] and rows["bad-model"]["ttft_ms_pred"] == ""
    assert "tp" in rows["bad-tp"]["error"]
    # concurrency 8 decodes a smaller batch than 64: a shorter TPOT
    assert float(rows["ok2"]["tpot_ms_pred"]) < float(rows["ok"]["tpot_ms_pred"])


def test_csv_framework_override_and_stdout(tmp_path: Path) -> None:
    src = _write_csv(tmp_path / "in.csv", [GOOD])
    res = _run("estimate", "--from-csv", str(src), "--out", "-", "--framework", "generic")
    assert res.exit_code == 0, res.output
    rows = list(csv.DictReader(res.stdout.splitlines()))
    assert len(rows) == 1 and float(rows[0]["tpot_ms_pred"]) > 0


def test_csv_missing_required_columns_is_one_line_exit_2(tmp_path: Path) -> None:
    header = [c for c in CSV_HEADER if c not in ("isl", "tp")]
    src = _write_csv(tmp_path / "in.csv", [GOOD], header)
    _assert_input_error(_run("estimate", "--from-csv", str(src), "--out", str(tmp_path / "o.csv")),
                        "missing column", "isl", "tp")
    assert not (tmp_path / "o.csv").exists()


def test_csv_usage_errors(tmp_path: Path) -> None:
    src = _write_csv(tmp_path / "in.csv", [GOOD])
    _assert_input_error(_run("estimate", "--from-csv", str(src)), "--out")
    _assert_input_error(_run("estimate", "--from-csv", str(tmp_path / "nope.csv"), "--out", "x.csv"), "not found")
    _assert_input_error(_run("estimate", "deepseek-v3", "--from-csv", str(src), "--out", "x.csv"), "MODEL")
    _assert_input_error(_run(*V32_H200, *DECODE, "--out", "x.csv"), "--out")
    (tmp_path / "empty.csv").write_text("")
    _assert_input_error(_run("estimate", "--from-csv", str(tmp_path / "empty.csv"), "--out", "x.csv"),
                        "missing column")


def test_a_decode_over_isl_and_osl_is_costed_at_the_mean_context_and_holds_the_longest() -> None:
    """--phase decode --batch --isl --osl is what a decode solve estimates: TPOT at ISL + OSL/2, memory at
    ISL + OSL; --seq-len at the mean context gives the same TPOT and less memory."""
    from click.testing import CliRunner

    from solver.cli.main import main

    base = ["estimate", "llama-3.1-8b", "--hardware", "h100_sxm", "--cards", "1", "--phase", "decode",
            "--batch", "64", "--format", "json"]
    over = json.loads(CliRunner().invoke(main, [*base, "--isl", "8192", "--osl", "4096"]).stdout)
    mean = json.loads(CliRunner().invoke(main, [*base, "--seq-len", str(8192 + 2048)]).stdout)
    assert over["workload"] == {"kind": "decode", "batch": 64, "seq_len": 10240, "isl": 8192, "osl": 4096}
    assert over["tpot_ms"] == mean["tpot_ms"]
    assert over["memory_per_rank_gb"] > mean["memory_per_rank_gb"]
    r = CliRunner().invoke(main, [*base, "--isl", "8192"])
    assert r.exit_code == 2 and "--phase decode over --isl/--osl also needs --osl" in r.stderr


CALIBRATION_CSV = FACTS / "calibration" / "measured_agg_calibration.csv"
NEEDS_CSV = pytest.mark.skipif(not CALIBRATION_CSV.is_file(), reason="calibration CSV absent")


@NEEDS_CSV
def test_a_calibration_csv_of_a_header_and_no_rows_is_refused(tmp_path: Path) -> None:
    src = tmp_path / "header.csv"
    with CALIBRATION_CSV.open() as fh:
        src.write_text(fh.readline())
    r = _run("estimate", "--from-csv", str(src), "--out", str(tmp_path / "out.csv"))
    assert r.exit_code == 2
    assert r.stderr == f"error: --from-csv: {src}: a header and no rows; nothing to evaluate\n"


@NEEDS_CSV
def test_the_calibration_csvs_rows_refused_each_carry_one_line() -> None:
    """Every row of the shipped calibration CSV is evaluated or carries its reason in `error`: none dropped."""
    out = CliRunner().invoke(main, ["estimate", "--from-csv", str(CALIBRATION_CSV), "--out", "-"])
    assert out.exit_code == 0
    rows = list(csv.DictReader(out.stdout.splitlines()))
    with CALIBRATION_CSV.open() as fh:
        assert len(rows) == sum(1 for _ in csv.DictReader(fh))
    for row in rows:
        assert bool(row["error"]) != bool(row["tpot_ms_pred"]), row["id"]
        assert "\n" not in row["error"]


def test_a_framework_flag_that_replaces_the_rows_backend_says_whose(tmp_path: Path) -> None:
    """Two vLLM rows and one SGLang row under --framework sglang: the two vLLM rows change engine."""
    path = tmp_path / "rows.csv"
    row = "meta-llama/Llama-3.1-70B,h200_sxm,bf16,1024,128,16,4"
    path.write_text("backend,model,system,precision,isl,osl,concurrency,tp\n"
                    f"vllm,{row}\nvllm,{row}\nsglang,{row}\n")
    res = CliRunner().invoke(main, ["estimate", "--from-csv", str(path), "--out", str(tmp_path / "p.csv"),
                                    "--framework", "sglang"])
    assert res.exit_code == 0, res.output
    assert "note: --framework sglang replaces the backend column of 2 rows (vllm)" in res.output
