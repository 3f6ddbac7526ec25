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
    cfg = json.loads((Path(__file__).resolve().parents[1] / "models" / "meta-llama--Meta-Llama-3.1-8B.json").read_text())
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
    from solver.launch.check_command import command_towers
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
