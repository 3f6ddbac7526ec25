"""The commands' machine-readable outputs as contracts: one command's output read by the next gives the same
figures, the JSON carries what the YAML does, and every command names the model the same way."""
from __future__ import annotations

import json
from pathlib import Path

import yaml
from click.testing import CliRunner

from solver.cli.main import main

# Llama-3.3-70B reads Meta-Llama-3.1-70B's config: a catalog alias whose config has another name, the case where
# an answer must give both (`model` as asked, `config` as read), as `estimate --format json` does
SOLVE = ["solve", "llama-3.3-70b", "--hardware", "h100_sxm", "--cards", "8"]


def _run(*args: str) -> str:
    r = CliRunner().invoke(main, list(args))
    assert r.exit_code == 0, r.output
    return r.stdout


def test_check_of_a_solved_candidate_prints_its_estimation_key_for_key(tmp_path: Path) -> None:
    """solve --format yaml -> check FILE --candidate X: the same `estimation` block (keys, values, rounding), the
    concurrency, total throughput, per-user rate and cross-node flag included, for every candidate."""
    text = _run(*SOLVE, "--format", "yaml")
    path = tmp_path / "deployment.yaml"
    path.write_text(text)
    solved = yaml.safe_load(text)
    letters = sorted(k[-1] for k in solved if k.startswith("candidate_"))
    assert letters == ["a", "b", "c"]
    for letter in letters:
        checked = json.loads(_run("check", str(path), "--candidate", letter, "--format", "json"))
        assert checked["estimation"] == solved[f"candidate_{letter}"]["estimation"], letter


def test_solve_json_carries_the_yaml_deployment_and_each_candidates_workload() -> None:
    """The JSON of solve holds what its YAML does: the deployment header (model, hardware, framework, world size)
    and each candidate's workload (ISL / OSL and its own concurrency, which its estimation is at)."""
    as_yaml = yaml.safe_load(_run(*SOLVE, "--format", "yaml"))
    as_json = json.loads(_run(*SOLVE, "--format", "json"))
    header = {k: v for k, v in as_yaml.items() if not k.startswith("candidate_")}
    assert as_json["deployment"] == header == {"model": "llama-3.3-70b", "hardware": "h100_sxm",
                                               "framework": "generic", "world_size": 8}
    for c, letter in zip(as_json["candidates"], "abc"):
        assert c["workload"] == as_yaml[f"candidate_{letter}"]["workload"]
        assert c["workload"]["concurrency"] == c["estimation"]["concurrency"]
        assert c["estimation"] == as_yaml[f"candidate_{letter}"]["estimation"]


def test_recommend_names_the_model_as_asked_and_its_config_apart() -> None:
    """recommend's JSON `model` is the name given (a value `estimate` and `solve` take back), with `config`
    beside it, as estimate's JSON; not the header's `llama-3.3-70b (config Meta-Llama-3.1-70B)`."""
    out = json.loads(_run("recommend", "llama-3.3-70b", "--hardware", "h100_sxm", "--cards", "8",
                          "--target-output-tokens-per-s", "100", "--format", "json"))
    assert (out["model"], out["config"]) == ("llama-3.3-70b", "Meta-Llama-3.1-70B")
    est = json.loads(_run("estimate", "llama-3.3-70b", "--hardware", "h100_sxm", "--cards", "8", "--attn-tp", "8",
                          "--dense-tp", "8", "--phase", "decode", "--batch", "1", "--seq-len", "128", "--format", "json"))
    assert (est["model"], est["config"]) == (out["model"], out["config"])


def test_disaggregated_recommend_and_sweep_name_the_model_as_the_aggregated_ones() -> None:
    """--serving disagg: recommend's `model` / `config` and the sweep's `model` column are the name given, as on
    the aggregated path (not the config's name, Meta-Llama-3.1-70B, for llama-3.3-70b)."""
    rec = CliRunner().invoke(main, ["recommend", "llama-3.3-70b", "--hardware", "h100_sxm", "--cards", "8",
                                    "--target-output-tokens-per-s", "100", "--serving", "disagg", "--format", "json"])
    assert rec.exit_code in (0, 1), rec.output  # met or not, the answer names the model
    out = json.loads(rec.stdout)
    assert (out["model"], out["config"]) == ("llama-3.3-70b", "Meta-Llama-3.1-70B")
    rows = json.loads(_run("sweep", "llama-3.3-70b", "--hardware", "h100_sxm", "--cards", "8", "--scenarios",
                           "latency", "--serving", "disagg", "--format", "json"))
    assert {r["model"] for r in rows} == {"llama-3.3-70b"}


def test_disaggregated_sweep_json_on_stdout_is_the_json_file_out_writes(tmp_path: Path) -> None:
    """`--out x.json` writes JSON records, so `--format json` prints the same records (it was refused as "the
    table is CSV" on the disaggregated path while the file was JSON)."""
    args = ["sweep", "gpt-oss-120b", "--hardware", "b200_sxm", "--cards", "8", "--scenarios", "latency",
            "--serving", "disagg"]
    text = _run(*args, "--format", "json")
    printed = json.loads(text)
    out = tmp_path / "front.json"
    _run(*args, "--out", str(out))
    assert out.read_text() == text  # byte for byte, the final newline included
    assert printed and all(isinstance(r["ttft_ms"], float) for r in printed if r["feasible"])


def test_a_format_beside_out_is_refused_on_both_sweep_paths(tmp_path: Path) -> None:
    """With --out the extension sets the file's format: `--format csv --out x.json` is one line (exit 2) whether
    the sweep is aggregated or disaggregated, before any solve."""
    for serving in ("agg", "disagg"):
        r = CliRunner().invoke(main, ["sweep", "gpt-oss-120b", "--hardware", "b200_sxm", "--cards", "8",
                                      "--serving", serving, "--format", "csv", "--out", str(tmp_path / "x.json")])
        assert r.exit_code == 2, (serving, r.output)
        assert r.stderr.strip().splitlines() == [
            f"error: --format: csv with --out: the extension of {tmp_path / 'x.json'} sets the file's format"]


def test_a_small_rate_keeps_its_digits_in_every_file() -> None:
    # 1.3549 tok/s per rank (a large cluster's) is written 1.355 (report.digits: three decimals), as the sweep
    # writes it, not 1.4; the memory figure 57.8349 GB as 57.835
    from types import SimpleNamespace

    from solver.report.candidates import estimate_figures

    memory = SimpleNamespace(weights_total=56.86e9, cache_total=0.34e9, model_bytes=57.8349e9, limit_bytes=64.96e9,
                             feasible=True)
    e = SimpleNamespace(memory=memory, ttft_s=0.81654, tpot_s=0.0586212, has_ttft=True, has_tpot=True,
                        output_tokens_per_s_per_rank=1.3549, output_tokens_per_s=1040.5, tokens_per_s_per_user=17.0586)
    f = estimate_figures(e, 32, False)
    assert f["output_tokens_per_s_per_rank"] == 1.355 and f["memory_per_rank_gb"] == 57.835
    assert f["ttft_ms"] == 816.54 and f["tpot_ms"] == 58.6212 and f["tokens_per_s_per_user"] == 17.0586
