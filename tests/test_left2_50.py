"""Findings the Stop 50 hunts left for the lead, one rule each: a disaggregated TPOT floor a rerun meets, the KV
formats the engines run and refuse, and the vision tower the engines load (or do not) under pasted flags and PP."""
from __future__ import annotations

import re

from click.testing import CliRunner

from solver.cli.main import main as cli


def _run(*argv: str) -> tuple[int, str]:
    res = CliRunner(env={"COLUMNS": "400"}).invoke(cli, list(argv), catch_exceptions=False)
    return res.exit_code, res.stdout + res.stderr


def test_a_disaggregated_tpot_floor_is_one_the_decode_pool_is_planned_at() -> None:
    """MiMo-7B disaggregated on 4 GB200 at --concurrency 64: the floor quoted was a pair's full TPOT (8.92 ms, at
    the 22 requests a decode worker runs) while its decode pool is planned at the batch bucket of 32, whose TPOT
    is higher: a rerun at 8.92 found nothing. The floor quoted is now one a rerun without the TTFT SLA meets."""
    argv = ("solve", "mimo-7b", "--hardware", "gb200", "--cards", "4", "--framework", "sglang", "--serving",
            "disagg", "--isl", "8192", "--osl", "1024", "--concurrency", "64")
    code, err = _run(*argv, "--ttft-ms", "150", "--tpot-ms", "4")
    m = re.search(r"the lowest TPOT is ([\d,.]+) ms", err)
    assert code == 1 and m, err
    assert _run(*argv, "--tpot-ms", m.group(1).replace(",", ""))[0] == 0


def test_fp8_e5m2_is_a_one_byte_kv_format_that_vllm_and_sglang_launch_by_that_name() -> None:
    """vLLM 0.34.0 and SGLang 0.5.23 take --kv-cache-dtype fp8_e5m2 (a 1-byte cache: vllm/utils/torch_utils.py:49,
    sglang/srt/mem_cache/kv_cache_dtype.py:60-66); --kv-dtype fp8_e5m2 was refused as an unknown format."""
    for fw in ("vllm", "sglang"):
        code, out = _run("solve", "qwen3-8b", "--hardware", "h100_sxm", "--cards", "1", "--framework", fw,
                         "--kv-dtype", "fp8_e5m2", "--format", "launch")
        assert code == 0 and "--kv-cache-dtype fp8_e5m2" in out, out


def test_an_engine_without_an_fp8_e5m2_spelling_refuses_it_rather_than_launching_e4m3() -> None:
    code, out = _run("solve", "qwen3-8b", "--hardware", "h100_sxm", "--cards", "1", "--framework", "trtllm",
                     "--kv-dtype", "fp8_e5m2")
    assert code == 2 and "trtllm has no spelling for it" in out, out


def test_fp8_e5m2_is_priced_at_the_bytes_of_fp8() -> None:
    from solver.specs.dtypes import kv_element_bytes

    assert kv_element_bytes("fp8_e5m2") == kv_element_bytes("fp8") == 1


def test_a_kv_only_format_is_refused_as_weights_naming_the_flag() -> None:
    code, out = _run("solve", "qwen3-8b", "--hardware", "h100_sxm", "--cards", "1", "--weight-dtype", "fp8_e5m2")
    assert code == 2 and out.strip().startswith("error: --weight-dtype:") and "KV-cache format only" in out, out


def test_estimate_under_an_engine_refuses_a_kv_format_its_command_cannot_ask_for_as_solve_does() -> None:
    """SGLang 0.5.23 has no int8 KV cache: `solve --framework sglang --kv-dtype int8` refuses it (exit 2), and
    `estimate` priced it (exit 0). Both now refuse it with one rule (entry.refuse_unlaunchable_kv)."""
    common = ("qwen3-8b", "--hardware", "h100_sxm", "--cards", "1", "--framework", "sglang", "--kv-dtype", "int8")
    solve_code, solve_err = _run("solve", *common)
    est_code, est_err = _run("estimate", *common, "--batch", "8", "--seq-len", "4096", "--phase", "decode")
    assert solve_code == est_code == 2 and "sglang has no spelling for it" in est_err, est_err
    # without an engine (the generic profile) no command is asked of: the format is priced
    generic = _run("estimate", *common[:-4], "--kv-dtype", "int8", "--batch", "8", "--seq-len", "4096",
                   "--phase", "decode")
    assert generic[0] == 0 and "kv_bytes 1" in generic[1], generic[1]



def _folder(tmp_path, quantization_config: dict | None = None, hf_quant: dict | None = None) -> str:
    """Llama-3.1-8B's config with the given quantization_config (config.json) or ModelOpt hf_quant_config.json."""
    import json
    from pathlib import Path

    cfg = json.loads((Path(__file__).resolve().parents[1] / "models" / "meta-llama--Meta-Llama-3.1-8B.json").read_text())
    cfg.pop("quantization_config", None)
    if quantization_config is not None:
        cfg["quantization_config"] = quantization_config
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    if hf_quant is not None:
        (tmp_path / "hf_quant_config.json").write_text(json.dumps({"producer": {"name": "modelopt"},
                                                                    "quantization": hf_quant}))
    return str(tmp_path)


def _ct(kv_type: str) -> dict:
    return {"quant_method": "compressed-tensors", "format": "float-quantized", "ignore": ["lm_head"],
            "config_groups": {"group_0": {"targets": ["Linear"],
                                          "weights": {"num_bits": 8, "type": "float", "strategy": "channel",
                                                      "symmetric": True, "dynamic": False},
                                          "input_activations": {"num_bits": 8, "type": "float",
                                                                "strategy": "token", "symmetric": True,
                                                                "dynamic": True}}},
            "kv_cache_scheme": {"num_bits": 8, "type": kv_type, "strategy": "tensor", "symmetric": True,
                                "dynamic": False}}


def _estimate_json(folder: str, fw: str) -> str:
    code, out = _run("estimate", folder, "--hardware", "h100_sxm", "--cards", "1", "--framework", fw, "--isl", "1024",
                     "--osl", "128", "--concurrency", "8", "--format", "json")
    assert code == 0, out
    return out


def test_a_compressed_tensors_int8_kv_scheme_is_not_what_kv_dtype_auto_runs(tmp_path) -> None:
    """SGLang 0.5.23 ignores a kv_cache_scheme other than static per-tensor FP8 and keeps the 16-bit cache
    (compressed_tensors.py:142-151, 213-224, 1276-1285); vLLM 0.34.0 loads only a float 8-bit one
    (compressed_tensors.py:1103-1121): an int8 scheme was priced at 8 bits as what auto runs. An fp8 one still is."""
    for kv_type, bytes_ in (("int", 2), ("float", 1)):
        (tmp_path / kv_type).mkdir()
        folder = _folder(tmp_path / kv_type, quantization_config=_ct(kv_type))
        # vLLM refuses the int scheme outright (test_left3_50): SGLang's 16-bit cache is what it runs
        for fw in ("vllm", "sglang") if kv_type == "float" else ("sglang",):
            assert f'"kv_bytes": {bytes_}' in _estimate_json(folder, fw), (kv_type, fw)


def test_the_note_on_checkpoint_int8_kv_scales_does_not_send_the_user_to_kv_dtype_int8_to_use_them(tmp_path) -> None:
    """vLLM's int8 KV cache computes its scales per token and KV head (kv_cache_interface.py:119; no checkpoint
    scale is loaded), SGLang has no int8 cache: "pass --kv-dtype int8 to use them" was untrue."""
    out = _estimate_json(_folder(tmp_path, hf_quant={"quant_algo": "FP8", "kv_cache_quant_algo": "INT8",
                                                      "exclude_modules": ["lm_head"]}), "vllm")
    assert "to use them" not in out and "which no engine's KV cache loads" in out, out


def _check(command: str, *extra: str) -> tuple[int, str]:
    return _run("check", "--command", command, "--hardware", "h100_sxm", "--cards", "1", "--framework", "sglang",
                "--concurrency", "8", "--isl", "1024", "--osl", "128", *extra)


def test_sglang_ngram_without_a_depth_runs_the_depth_sglang_derives_from_its_tree() -> None:
    """SGLang 0.5.23 sets num_steps = draft tokens // the max BFS breadth where the command leaves it out
    (arg_groups/speculative_hook.py:1309-1313, 1324-1330): NGRAM without --speculative-num-steps was refused,
    asking for --mtp. 16 draft tokens over a breadth of 4 run depth 4; the defaults (12 // 10) depth 1."""
    ngram = "python3 -m sglang.launch_server --model-path Qwen/Qwen3-8B --speculative-algorithm NGRAM"
    code, out = _check(ngram + " --speculative-num-draft-tokens 16 --speculative-ngram-max-bfs-breadth 4",
                       "--mtp-accept", "0.5")
    assert code == 0 and "accepting as a chain of depth 4" in out and "not read" not in out, out
    code, out = _check(ngram, "--mtp-accept", "0.5")
    assert code == 0 and "accepting as a chain of depth 1" in out, out


def _stage_towers(fw_name: str, model_file: str) -> list[float]:
    """The vision tower's bytes on each stage of a PP 2 x TP 2 layout under `fw_name`'s profile."""
    from solver.estimate.memory import stage_memory
    from solver.estimate.memory_options import framework_options
    from solver.specs.framework import load_framework
    from solver.specs.hardware_catalog import load_hardware
    from solver.specs.model_catalog import load_model
    from solver.specs.parallel import ParallelConfig
    from solver.specs.precision import resolve_precision

    model, hw = load_model(f"models/{model_file}"), load_hardware("h100_sxm")
    pc = ParallelConfig(world_size=4, attn_tp_size=2, embed_tp_size=2, lmhead_tp_size=2, pp_size=2,
                        **({"moe_tp_size": 2} if model.is_moe else {"dense_tp_size": 2}))
    opts = framework_options(load_framework(fw_name), hw=hw)
    reports = stage_memory(model, hw, pc, resolve_precision(model, hw, None, None, None), 8, 2048, opts)
    return [r.weights_bytes.get("vision", 0.0) for r in reports]


def test_under_pp_a_tower_the_engine_builds_on_the_first_stage_only_is_held_there_only() -> None:
    """vLLM 0.34.0 makes every tower marked by _mark_tower_model a StageMissingLayer past the first stage
    (model_executor/models/interfaces.py:358-394); SGLang 0.5.23's gemma4 builds its towers on the first rank only
    (gemma4_mm.py:199-205), its Qwen3-VL on every stage. Every stage held the tower."""
    first, later = _stage_towers("vllm", "Qwen--Qwen3-VL-30B-A3B-Instruct.json")
    assert first > 0 and later == 0
    first, later = _stage_towers("sglang", "Qwen--Qwen3-VL-30B-A3B-Instruct.json")
    assert first == later > 0
    first, later = _stage_towers("sglang", "google--gemma-4-31B-it.json")
    assert first > 0 and later == 0


def _params_per_card(extra: str) -> tuple[float, str]:
    code, out = _run("check", "--command", f"vllm serve Qwen/Qwen3-VL-30B-A3B-Instruct -tp 2 {extra}", "--hardware",
                     "h100_sxm", "--cards", "2", "--framework", "vllm", "--concurrency", "8", "--isl", "1024",
                     "--osl", "128")
    m = re.search(r"params_per_card_gb=([\d.]+)", out)
    assert code == 0 and m, out
    return float(m.group(1)), out


def test_a_pasted_mm_encoder_tp_mode_data_prices_the_tower_whole_on_each_rank() -> None:
    """vLLM 0.34.0 --mm-encoder-tp-mode data hosts the full tower on every TP rank (config/multimodal.py:384-396):
    Qwen3-VL-30B-A3B on TP 2 holds 1.08 GB of tower a rank, not the 0.539 of the default split. It was named
    "not read" and priced split."""
    split, _ = _params_per_card("")
    whole, out = _params_per_card("--mm-encoder-tp-mode data")
    assert abs((whole - split) - 0.539) < 0.01 and "not read" not in out, out


def test_a_pasted_flag_that_loads_no_tower_prices_none() -> None:
    """vLLM 0.34.0 --language-model-only, or every limit of the tower's modalities 0, makes the towers
    StageMissingLayers (config/multimodal.py:699-711, model_executor/models/interfaces.py:377-394): no tower
    weights. A limit left for one modality keeps the tower."""
    split, _ = _params_per_card("")
    for flags in ("--language-model-only", """--limit-mm-per-prompt '{"image": 0, "video": {"count": 0}}'"""):
        none, out = _params_per_card(flags)
        assert abs((split - none) - 0.539) < 0.01 and "not read" not in out, out
    kept, _ = _params_per_card("""--limit-mm-per-prompt '{"image": 0}'""")
    assert kept == split
