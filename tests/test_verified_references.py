"""Verified Ascend references (DeepSeek-V3.2 on 64 Atlas A3 dies with cann-recipes, the Qwen3 / DeepSeek / Kimi /
GLM teams beside it with vllm-ascend) read as deployments, checked, and written back as the framework's files."""
from __future__ import annotations

import json

from click.testing import CliRunner

from solver.catalog import catalog_dir
from solver.cli.main import main
from solver.specs.deployment import load_deployment


def _ref(ref_id: str) -> str:
    return str(catalog_dir("references") / f"{ref_id}.yaml")


def test_a_verified_reference_reads_as_the_deployment_it_ran() -> None:
    """references/v32-p64-q.yaml (verified-configs.md: DeepSeek-V3.2-Exp, 64 A3 dies, prefill, batch 64 x 65536,
    a/d/m/e/l/o/cp/kvp = 1/1/1/16/16/1/64/-, W8A8C8) is the deployment: framework cann-recipes (the source of
    every verified config), world 64, a prefill of 64 prompts of 65,536 tokens, int8 weights and KV cache."""
    dep = load_deployment(_ref("v32-p64-q"))
    assert (dep.model, dep.hardware, dep.framework, dep.world_size) == ("deepseek-v3.2", "atlas_a3", "cann-recipes", 64)
    assert (dep.workload.phase, dep.workload.batch, dep.workload.seq_len) == ("prefill", 64, 65536)
    assert (dep.quant.weights, dep.quant.kv_cache, dep.mtp) == ("int8", "int8", 0)
    assert dep.parallel_config == {"attn_tp_size": 1, "dense_tp_size": 1, "moe_tp_size": 1, "embed_tp_size": 16,
                                   "lmhead_tp_size": 16, "o_proj_tp_size": 1, "cp_size": 64, "kvp_size": 1}


def test_a_decode_reference_reads_its_prompt_and_output_lengths_and_mtp() -> None:
    """v32-d128-q: decode, batch 256, 65536 in / 256 out, MTP3 (verified-configs.md)."""
    dep = load_deployment(_ref("v32-d128-q"))
    w = dep.workload
    assert (w.phase, w.batch, w.isl, w.osl, dep.mtp) == ("decode", 256, 65536, 256, 3)


def test_check_passes_a_verified_reference_within_the_die() -> None:
    """`check references/v32-d128-q.yaml` holds every rule of the profile it ran under, and its estimate fits a
    64 GB A3 die (hardware.md): the limit is below 64 GiB = 68.7 GB."""
    r = CliRunner().invoke(main, ["check", _ref("v32-d128-q"), "--format", "json"])
    assert r.exit_code == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["valid"] and d["estimation"]["memory_feasible"]
    assert d["estimation"]["memory_per_rank_gb"] < d["estimation"]["memory_limit_gb"] < 68.72


def test_an_afd_reference_reads_as_an_afd_deployment() -> None:
    """lc-afd runs attention and FFN on separate halves of the ranks: it reads as a deployment with afd set (check
    estimates it with estimate.afd: tests/test_afd46g.py)."""
    dep = load_deployment(_ref("lc-afd"))
    assert dep.afd and dep.world_size == 128


def _solve_yaml(framework: str) -> str:
    r = CliRunner().invoke(main, ["solve", "deepseek-v3.2", "--hardware", "atlas_a3", "--cards", "64", "--scenario",
                                  "throughput", "--framework", framework, "--weight-dtype", "int8", "--isl", "4096",
                                  "--osl", "256", "--format", "yaml", "--top", "1"])
    assert r.exit_code == 0, r.stderr
    return r.stdout


def test_the_seed_yaml_writes_only_keys_the_framework_has() -> None:
    """cann-recipes' parallel_config has the seed's eight keys (verified-configs.md): the YAML of the README's
    quick start writes those eight and not attn_sp_size, which it names once as fixed at 1."""
    import yaml

    text = _solve_yaml("cann-recipes")
    pc = yaml.safe_load(text)["candidate_a"]["parallel_config"]
    assert list(pc) == ["attn_tp_size", "dense_tp_size", "moe_tp_size", "embed_tp_size", "lmhead_tp_size",
                        "o_proj_tp_size", "cp_size", "kvp_size"]
    assert "# not keys of cann-recipes (fixed at 1): attn_sp_size" in text


def test_cann_recipes_model_yaml_splits_weights_online(tmp_path) -> None:
    """Seed 003, weight handling: with enable_online_split_weight true the runtime splits the checkpoint for the
    parallel_config, so the launch's model YAML sets it (no conversion bound to the recommended config)."""
    dep = tmp_path / "dep.yaml"
    dep.write_text(_solve_yaml("cann-recipes"))
    r = CliRunner().invoke(main, ["launch", str(dep), "--candidate", "a", "--format", "json"])
    assert r.exit_code == 0, r.stderr
    files = json.loads(r.stdout)["files"]
    import yaml

    doc = yaml.safe_load(next(iter(files.values())))
    assert doc["enable_online_split_weight"] is True


def test_vllm_ascend_takes_an_int8_kv_cache_from_the_c8_checkpoint() -> None:
    """--kv-dtype int8 ("C8") under vllm-ascend is planned and launched: vllm-ascend reads kv_cache_type "C8"
    from the checkpoint's quant_model_description.json, not from --kv-cache-dtype (which spells auto only), so
    the command leaves that flag out and a note says which checkpoint to serve (before: refused, exit 2)."""
    r = CliRunner().invoke(main, ["solve", "qwen3-235b-a22b", "--hardware", "atlas_a3", "--cards", "32", "--scenario",
                                  "throughput", "--framework", "vllm-ascend", "--kv-dtype", "int8", "--format",
                                  "launch", "--top", "1"])
    assert r.exit_code == 0, r.stderr
    commands = [line for line in r.stdout.splitlines() if line.startswith("vllm serve")]
    assert commands and not any("--kv-cache-dtype" in c for c in commands)
    assert '"kv_cache_type": "C8"' in r.stdout
