"""Inputs the tool accepted but should refuse, and names it printed wrong: one rule per test."""
from __future__ import annotations

import pytest

import yaml
from click.testing import CliRunner

from solver import api
from solver.cli.main import main as cli
from solver.specs.model_catalog import model_names, model_title


# ---- the model as asked: a catalog alias names the answer, its config said once where it differs


def test_an_alias_names_the_answer_and_its_config_once():
    # llama-3.3-70b is an alias of meta-llama--Meta-Llama-3.1-70B.json (models/index.yaml): the answer names the
    # alias, and the config it reads once
    assert model_names("llama-3.3-70b", "Meta-Llama-3.1-70B") == ("llama-3.3-70b", "Meta-Llama-3.1-70B")
    assert model_title("llama-3.3-70b", "Meta-Llama-3.1-70B") == "llama-3.3-70b (config Meta-Llama-3.1-70B)"


def test_a_longer_name_on_a_shared_config_names_the_config():
    # deepseek-v3.2-exp reads DeepSeek-V3.2's config (models/index.yaml): its name holds the config's and more, so
    # the answer says which config it read
    assert model_names("deepseek-v3.2-exp", "DeepSeek-V3.2") == ("deepseek-v3.2-exp", "DeepSeek-V3.2")
    assert model_title("minimaxai/minimax-m1-40k", "MiniMax-M1") == "minimaxai/minimax-m1-40k (config MiniMax-M1)"


def test_the_config_file_stem_is_the_config_itself():
    # the file stem and org/name spell the config: nothing to add
    assert model_names("meta-llama--Meta-Llama-3.1-8B", "Meta-Llama-3.1-8B") == ("meta-llama--Meta-Llama-3.1-8B", None)
    assert model_names("meta-llama/Meta-Llama-3.1-8B", "Meta-Llama-3.1-8B") == ("meta-llama/Meta-Llama-3.1-8B", None)


def test_a_config_path_is_named_by_its_config():
    assert model_names("models/meta-llama--Meta-Llama-3.1-8B.json", "Meta-Llama-3.1-8B") == ("Meta-Llama-3.1-8B",
                                                                                               None)


ALIAS_HEADER = "llama-3.3-70b (config Meta-Llama-3.1-70B) on 8 x h100_sxm"
KNOBS = ["--hardware", "h100_sxm", "--cards", "8", "--attn-tp", "8", "--dense-tp", "8"]


def test_check_of_an_alias_file_names_the_alias(tmp_path):
    dep = {"model": "llama-3.3-70b", "hardware": "h100_sxm", "world_size": 8, "framework": "vllm",
           "parallel_config": {"attn_tp_size": 8, "dense_tp_size": 8, "embed_tp_size": 8, "lmhead_tp_size": 8},
           "workload": {"isl": 1024, "osl": 128, "concurrency": 4}}
    path = tmp_path / "dep.yaml"
    path.write_text(yaml.safe_dump(dep))
    out = CliRunner().invoke(cli, ["check", str(path)]).output
    assert out.splitlines()[0].startswith(ALIAS_HEADER), out
    launch = CliRunner().invoke(cli, ["launch", str(path)]).output
    assert launch.splitlines()[0] == f"# {ALIAS_HEADER} (vllm)", launch


def test_estimate_and_memory_of_an_alias_name_the_alias():
    est = CliRunner().invoke(cli, ["estimate", "llama-3.3-70b", *KNOBS, "--isl", "1024", "--osl", "128",
                                   "--concurrency", "4"]).output
    assert est.splitlines()[0].startswith(ALIAS_HEADER), est
    data = yaml.safe_load(CliRunner().invoke(cli, ["memory", "llama-3.3-70b", *KNOBS, "--batch", "4",
                                                   "--seq-len", "1024", "--format", "yaml"]).output)
    assert (data["model"], data["config"]) == ("llama-3.3-70b", "Meta-Llama-3.1-70B")


@pytest.mark.slow  # a disaggregated plan (~4 s)
def test_a_disaggregated_answer_of_an_alias_names_the_alias():
    args = ["solve", "llama-3.3-70b", "--hardware", "h100_sxm", "--cards", "16", "--isl", "1024", "--osl", "128",
            "--serving", "disagg"]
    out = CliRunner().invoke(cli, args).output
    assert out.splitlines()[0].startswith("llama-3.3-70b (config Meta-Llama-3.1-70B) on 16 x h100_sxm"), out
    data = yaml.safe_load(CliRunner().invoke(cli, [*args, "--format", "json"]).output)
    assert (data["model"], data["config"]) == ("llama-3.3-70b", "Meta-Llama-3.1-70B")


# ---- the API's disaggregated sweep reports (done, total, label) as the aggregated one does


def test_disagg_sweep_progress_counts_the_combinations():
    # 1 hardware x cards [2, 4] x 1 scenario x 1 length = 2 combinations: (1, 2, ...), (2, 2, ...)
    calls = []
    api.sweep("qwen3-8b", "h100_sxm", [2, 4], "throughput", serving="disagg", isl=1024, osl=128,
              progress=lambda done, total, label: calls.append((done, total, label)))
    assert [(d, t) for d, t, _ in calls] == [(1, 2), (2, 2)]
    assert calls[0][2] == "h100_sxm x 2 throughput 1024/128"


# ---- MTP keys: LongCat-Flash and Qwen3-Next publish none (facts/model_configs: their config.json carries none of
# the next-n keys; transformers 5.25.0's LongcatFlashConfig / Qwen3NextConfig have no such field and their models
# skip the checkpoints' mtp.* weights on load), so --mtp is refused naming the published config


def test_mtp_on_a_published_config_without_next_n_keys_says_the_published_config_has_none():
    for alias, file in (("longcat-flash", "meituan-longcat--LongCat-Flash-Chat.json"),
                        ("qwen3-next-80b-a3b", "Qwen--Qwen3-Next-80B-A3B-Instruct.json")):
        r = CliRunner().invoke(cli, ["solve", alias, "--hardware", "h200_sxm", "--cards", "8", "--mtp", "1"])
        assert r.exit_code == 2
        assert f"in its published config (models/{file} sets none of num_nextn_predict_layers" in r.output, r.output


def test_mtp_on_a_user_config_without_next_n_keys_says_its_config(tmp_path):
    import shutil

    from solver.catalog import catalog_dir

    path = tmp_path / "mine.json"
    shutil.copy(catalog_dir("models") / "Qwen--Qwen3-8B.json", path)
    r = CliRunner().invoke(cli, ["solve", str(path), "--hardware", "h200_sxm", "--cards", "1", "--mtp", "1"])
    assert r.exit_code == 2
    assert "mine has no MTP (next-n) layers in its config (" in r.output, r.output


# ---- a number format the device lacks: formats are data (hardware weight_only_formats names nvfp4 where the
# device's FP4 rate is another format's); nothing that runs a format: one line naming field, format and device


def _prec(hw_name: str, weight_dtype: str):
    from solver.specs.hardware_catalog import load_hardware
    from solver.specs.model_catalog import load_model
    from solver.specs.precision import resolve_precision

    return resolve_precision(load_model("qwen3-30b-a3b"), load_hardware(hw_name), weight_dtype=weight_dtype)


def test_nvfp4_on_mi355x_runs_dequantized_into_16_bit_gemms():
    # MI355X's FP4 rate is MXFP4's (facts hardware.md); vLLM 0.34.0 on ROCm runs NVFP4 by emulation (dequant ->
    # BF16 matmul): every NVFP4 GEMM group is priced at the bf16 rate, the activations stay bf16
    p = _prec("mi355x", "nvfp4")
    assert {g: p.gemm_dtype(g) for g in ("attention", "experts")} == {"attention": "bf16", "experts": "bf16"}
    assert p.activation == "bf16"
    assert any("mi355x's fp4 rate is for another fp4 format" in n for n in p.notes)


def test_mxfp4_on_mi355x_runs_natively():
    from solver.specs.dtypes import number_format
    from solver.specs.hardware_catalog import load_hardware
    from solver.specs.precision import runs_natively

    assert runs_natively(load_hardware("mi355x"), number_format("mxfp4"))
    assert not runs_natively(load_hardware("mi355x"), number_format("nvfp4"))
    assert runs_natively(load_hardware("b200_sxm"), number_format("nvfp4"))


def test_nvfp4_on_mi300x_is_weight_only_at_16_bits():
    # CDNA3 has no FP4 rate; its NVFP4 kernels are the same emulation ones: the experts GEMM is bf16, not W4A8
    p = _prec("mi300x", "nvfp4")
    assert p.gemm_dtype("experts") == "bf16" and p.activation == "bf16"


def test_a_format_no_engine_runs_on_the_device_is_refused_naming_field_format_and_device():
    r = CliRunner().invoke(cli, ["estimate", "qwen3-30b-a3b", "--hardware", "atlas_a3", "--cards", "8",
                                 "--attn-tp", "8", "--moe-tp", "8", "--weight-dtype", "nvfp4", "--isl", "1024",
                                 "--osl", "128", "--concurrency", "8"])
    assert r.exit_code == 2
    assert [line for line in r.output.splitlines() if line.strip()] == [
        "error: --weight-dtype: atlas_a3 runs no nvfp4: no fp4 support (it has bf16, int8; weight-only: int4)"]


def test_a_hardware_file_naming_an_unknown_weight_only_format_is_refused():
    from solver.errors import InputError
    from solver.specs.hardware import hardware_from_dict
    from solver.specs.validation import load_yaml
    from solver.catalog import catalog_dir

    data = load_yaml(catalog_dir("hardware") / "mi355x.yaml")
    data["weight_only_formats"] = ["nvfp5"]
    try:
        hardware_from_dict(data, "x.yaml")
    except InputError as exc:
        assert "weight_only_formats" in str(exc) and "nvfp5" in str(exc)
    else:
        raise AssertionError("accepted an unknown format")


# ---- vLLM prefill pool with PP on a hybrid KV cache: the NixlConnector the profile launches raises
# NotImplementedError at pp_size > 1 when the hybrid KV cache manager is required (vLLM 0.34.0
# nixl/base_worker.py:944-956); a Mamba / linear-attention model requires it (config/vllm.py:2149-2215)


def _prefill_violations(model: str, pp_size: int) -> list[str]:
    from solver.plan.disagg_pools import pool_framework
    from solver.specs.framework import load_framework
    from solver.specs.hardware_catalog import load_hardware
    from solver.specs.model_catalog import load_model
    from solver.specs.parallel import ParallelConfig
    from solver.specs.rule_env import device_facts, model_env

    cfg = dict(attn_tp_size=4, moe_tp_size=4, embed_tp_size=4, lmhead_tp_size=4, dense_tp_size=4, pp_size=pp_size)
    env = model_env({**ParallelConfig(world_size=4).settings(), **cfg}, load_model(model),
                    **device_facts(load_hardware("h100_sxm")), world=4)
    return [r.id for r in pool_framework(load_framework("vllm")).violated(env)]


def test_vllm_prefill_pool_runs_no_pipeline_stages_on_a_recurrent_hybrid():
    # Qwen3-Next: 36 Gated-DeltaNet + 12 full-attention layers (a MambaSpec-type cache beside full attention)
    assert "C.nixl_prefill_pp_hybrid_kv" in _prefill_violations("qwen3-next-80b-a3b", 2)
    assert "C.nixl_prefill_pp_hybrid_kv" not in _prefill_violations("qwen3-next-80b-a3b", 1)


def test_vllm_prefill_pool_keeps_pipeline_stages_on_full_attention():
    assert "C.nixl_prefill_pp_hybrid_kv" not in _prefill_violations("qwen3-30b-a3b", 2)
