"""What the Stop 50 hunts left open, one rule each: a checkpoint KV scheme vLLM refuses to load, a tower skipped
where every modality it serves is limited to 0, SGLang's tower flag, the pipeline split a command runs, and remedies
whose every half names a value."""
from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from solver.cli.main import main as cli


def _run(*argv: str) -> tuple[int, str]:
    res = CliRunner(env={"COLUMNS": "400"}).invoke(cli, list(argv), catch_exceptions=False)
    return res.exit_code, res.stdout + res.stderr


def _ct_folder(tmp_path: Path, kv_type: str) -> str:
    """Llama-3.1-8B's config with a compressed-tensors FP8 checkpoint carrying a kv_cache_scheme of `kv_type`."""
    models = Path(__file__).resolve().parents[1] / "models"
    cfg = json.loads((models / "meta-llama--Meta-Llama-3.1-8B.json").read_text())
    cfg["quantization_config"] = {
        "quant_method": "compressed-tensors", "format": "float-quantized", "ignore": ["lm_head"],
        "config_groups": {"group_0": {"targets": ["Linear"],
                                      "weights": {"num_bits": 8, "type": "float", "strategy": "channel",
                                                  "symmetric": True, "dynamic": False},
                                      "input_activations": {"num_bits": 8, "type": "float", "strategy": "token",
                                                            "symmetric": True, "dynamic": True}}},
        "kv_cache_scheme": {"num_bits": 8, "type": kv_type, "strategy": "tensor", "symmetric": True,
                            "dynamic": False}}
    folder = tmp_path / kv_type
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(cfg))
    return str(folder)


def test_vllm_refuses_a_checkpoint_whose_compressed_tensors_kv_scheme_is_an_integer_one(tmp_path) -> None:
    """vLLM 0.34.0 raises NotImplementedError building the attention layers of a compressed-tensors checkpoint
    whose kv_cache_scheme is not float 8-bit (compressed_tensors.py:1097-1121): solve, estimate and check refuse it
    in one line naming the field; SGLang (which ignores the scheme) and an fp8 scheme still run."""
    folder = _ct_folder(tmp_path, "int")
    common = ("--hardware", "h100_sxm", "--cards", "1", "--framework", "vllm")
    for argv in (("solve", folder, *common, "--time-limit", "5"),
                 ("estimate", folder, *common, "--batch", "8", "--seq-len", "4096", "--phase", "decode"),
                 ("estimate", folder, *common, "--batch", "8", "--seq-len", "4096", "--phase", "decode",
                  "--kv-dtype", "fp8")):
        code, out = _run(*argv)
        assert code == 2 and out.strip().startswith("error: quantization_config.kv_cache_scheme:"), out
        assert len(out.strip().splitlines()) == 1 and "float 8-bit" in out, out
    code, out = _run("check", "--command", f"vllm serve {folder} -tp 1", "--hardware", "h100_sxm", "--isl", "1024",
                     "--osl", "128", "--concurrency", "8")
    assert code == 1 and "quantization_config.kv_cache_scheme" in out, out
    assert _run("estimate", folder, *common[:-1], "sglang", "--batch", "8", "--seq-len", "4096",
                "--phase", "decode")[0] == 0
    assert _run("estimate", _ct_folder(tmp_path, "float"), *common, "--batch", "8", "--seq-len", "4096",
                "--phase", "decode")[0] == 0


def _params_per_card(command: str, hardware: str = "h100_sxm") -> tuple[float, str]:
    code, out = _run("check", "--command", command, "--hardware", hardware, "--cards", "2", "--isl", "4096",
                     "--osl", "256", "--concurrency", "8", "--format", "json")
    assert code == 0, out
    return json.loads(out)["estimation"]["params_per_card_gb"], out


def test_a_tower_is_not_loaded_where_every_modality_its_wrapper_marks_it_with_is_limited_to_0() -> None:
    """vLLM 0.34.0 skips a tower where get_limit_per_prompt is 0 for every modality it was marked with
    (interfaces.py:377-394); gemma3 marks its vision tower with image alone (gemma3_mm.py:554), so {"image":0}
    drops it, where a Qwen3-VL tower (image and video, qwen3_vl.py:2013) stays until video is 0 too."""
    base, _ = _params_per_card("vllm serve google/gemma-3-27b-it -tp 2")
    image0, out = _params_per_card("""vllm serve google/gemma-3-27b-it -tp 2 --limit-mm-per-prompt '{"image":0}'""")
    assert image0 < base and "vision tower is not loaded" in out, (base, image0)
    video0, _ = _params_per_card("""vllm serve google/gemma-3-27b-it -tp 2 --limit-mm-per-prompt '{"video":0}'""")
    assert video0 == base
    qwen = "vllm serve Qwen/Qwen3-VL-30B-A3B-Instruct -tp 2 --limit-mm-per-prompt "
    assert _params_per_card(qwen + """'{"image":0}'""")[0] > _params_per_card(qwen + """'{"image":0,"video":0}'""")[0]


def test_a_tower_flag_places_only_the_towers_of_the_wrappers_whose_code_reads_it() -> None:
    """TowerFlag.model_types: a flag on a wrapper that does not read it leaves the tower as the engine places it."""
    from solver.launch.command_layout import command_towers
    from solver.specs.framework import FrameworkProfile, load_framework
    from solver.specs.model_catalog import load_model

    vllm = load_framework("vllm")
    data = vllm.model_dump()
    data["tower_flags"] = [{"flag": "--mm-encoder-tp-mode", "value": "data", "towers": "whole",
                            "model_types": ["qwen3_vl_moe"], "source": "test"}]
    fw = FrameworkProfile.model_validate(data)
    given = {("flag", "--mm-encoder-tp-mode"): "data"}
    assert command_towers(fw, given, load_model("qwen3-vl-30b-a3b"))[0] == "whole"
    assert command_towers(fw, given, load_model("gemma-3-27b")) is None


def test_sglang_mm_enable_dp_encoder_replicates_the_towers_of_the_wrappers_that_read_it() -> None:
    """sglang 0.5.23 builds the Qwen3-VL family's vision tower replicated under --mm-enable-dp-encoder
    (qwen3_vl.py:119-128, :1326, :1339): Qwen3-VL-30B-A3B TP2 holds the whole tower a rank; gemma3's wrapper never
    reads the flag, so its tower stays split."""
    qwen = "python -m sglang.launch_server --model-path Qwen/Qwen3-VL-30B-A3B-Instruct --tp 2"
    split, whole = _params_per_card(qwen)[0], _params_per_card(qwen + " --mm-enable-dp-encoder")
    assert whole[0] > split and "held whole on every rank" in whole[1], (split, whole[0])
    gemma = "python -m sglang.launch_server --model-path google/gemma-3-27b-it --tp 2"
    assert _params_per_card(gemma + " --mm-enable-dp-encoder")[0] == _params_per_card(gemma)[0]


_R1_PP2 = ("vllm serve deepseek-ai/DeepSeek-R1 --trust-remote-code --tensor-parallel-size 8 --pipeline-parallel-size 2 "
           "--nnodes 2 --node-rank 0 --master-addr 10.0.0.1 --max-num-seqs 1 --max-num-batched-tokens 8192 "
           "--max-model-len 4352 --gpu-memory-utilization 0.95")


def _r1_check(command: str) -> tuple[int, str]:
    return _run("check", "--command", command, "--hardware", "h100_sxm", "--cards", "16", "--isl", "4096", "--osl",
                "256", "--concurrency", "1", "--format", "json")


def test_a_pasted_pp_layer_partition_is_priced_at_the_stages_the_command_runs() -> None:
    """VLLM_PP_LAYER_PARTITION=11,50 puts 50 of DeepSeek-R1's MoE layers on stage 1 (vLLM 0.34.0
    distributed/utils.py get_pp_indices): priced at the launch's 31 / 30 before, 45.1 GB a rank; the heaviest
    stage's memory now, and a split that does not fit is not feasible. One request crosses 11 + 50 layers as it
    crosses 31 + 30: the same decode step (the uneven split's cost at more requests: tests/test_pp2_50.py)."""
    code, out = _r1_check(_R1_PP2)
    balanced = json.loads(out)["estimation"]
    code, out = _r1_check("VLLM_PP_LAYER_PARTITION=11,50 " + _R1_PP2)
    uneven = json.loads(out)["estimation"]
    assert code == 0 and uneven["memory_per_rank_gb"] > balanced["memory_per_rank_gb"] + 20, (uneven, balanced)
    assert abs(uneven["tpot_ms"] - balanced["tpot_ms"]) <= 1e-3 * balanced["tpot_ms"], (uneven, balanced)
    code, out = _r1_check("VLLM_PP_LAYER_PARTITION=5,56 " + _R1_PP2)
    assert code == 1 and json.loads(out)["estimation"]["memory_feasible"] is False, out


def test_a_pp_layer_partition_the_engine_refuses_is_refused_naming_it() -> None:
    code, out = _run("check", "--command", "VLLM_PP_LAYER_PARTITION=11,40 " + _R1_PP2, "--hardware", "h100_sxm",
                     "--cards", "16", "--isl", "4096", "--osl", "256", "--concurrency", "1")
    assert code == 2 and "VLLM_PP_LAYER_PARTITION=11,40: 51 layers in all" in out, out


def test_a_command_without_a_partition_is_priced_at_the_engines_own_split_of_the_remainder() -> None:
    """SGLang 0.5.23 gives the remainder to the last stages (srt/distributed/utils.py:136-147): DeepSeek-R1 PP2
    runs 30 / 31 without SGLANG_PP_LAYER_PARTITION, its last stage (with the head and the MTP layer) heavier than
    the 31 / 30 the launch prints."""
    from solver.specs.model_rules import stage_sizes

    assert stage_sizes(61, 2, remainder="last") == (30, 31)
    assert stage_sizes(61, 4, remainder="before_last") == (15, 15, 16, 15)  # vLLM distributed/utils.py:243-245
    sg = ("python3 -m sglang.launch_server --model-path deepseek-ai/DeepSeek-R1 --trust-remote-code --tp-size 8 "
          "--pp-size 2 --ep-size 8 --nnodes 2 --node-rank 0 --dist-init-addr 10.0.0.1:5000 --max-running-requests 2")
    args = ("--hardware", "h100_sxm", "--cards", "16", "--isl", "4096", "--osl", "1024", "--concurrency", "2",
            "--format", "json")
    own = json.loads(_run("check", "--command", sg, *args)[1])
    launch = json.loads(_run("check", "--command", "SGLANG_PP_LAYER_PARTITION=31,30 " + sg, *args)[1])
    assert own["estimation"]["memory_per_rank_gb"] > launch["estimation"]["memory_per_rank_gb"]
    assert any("sglang splits 61 layers as 30,31" in n for n in own["command"]["notes"]), own["command"]


def test_fixed_worker_counts_past_the_cards_are_offered_the_counts_that_plan_there_by_value() -> None:
    """2P4D of Qwen3-8B needs 6 cards at its smallest workers: "--cards 6, or fewer workers" named no count. The
    second half is now the most workers up to 2P4D the planner finds a deployment at on the 4 cards, and it plans."""
    argv = ("solve", "qwen3-8b", "--hardware", "h100_sxm", "--cards", "4", "--serving", "disagg", "--isl", "1024",
            "--osl", "128", "--time-limit", "3", "--prefill-workers", "2")
    code, out = _run(*argv, "--decode-workers", "4")
    assert code == 1 and "--cards 6, or --decode-workers 2 (the most workers up to 2P4D" in out, out
    assert _run(*argv, "--decode-workers", "2")[0] == 0


def test_more_cards_for_fixed_workers_under_an_sla_is_offered_with_the_sla_set_aside() -> None:
    """The cards that place the workers are not planned at: with an SLA given the remedy says it is set aside, and
    its changes drop it (a rerun at --cards 20 with --ttft-ms 800 met no SLA)."""
    from solver import api
    from solver.errors import InfeasibleError

    try:
        api.solve("glm-4.5", "mi300x", 8, isl=8192, osl=1024, ttft_ms=800, framework="atom", serving="disagg",
                  decode_workers=4)
    except InfeasibleError as exc:
        ways = [w for r in exc.remedies.options for w in r.ways]
        assert "--cards 20 (room for them, SLAs aside)" in str(exc), str(exc)
        assert any({c.option for c in w} == {"--cards 20", "no --ttft-ms"} for w in ways), ways
    else:
        raise AssertionError("planned")


def test_recommend_past_the_cluster_cap_names_only_the_target_it_can_give_a_value() -> None:
    code, out = _run("recommend", "qwen3-8b", "--hardware", "h100_sxm", "--isl", "1024", "--osl", "128",
                     "--target-output-tokens-per-s", "1000000000", "--cards", "1..8", "--time-limit", "3")
    assert code == 1 and "what would fit: a target up to" in out and "carry more per card" not in out, out
