"""Stop 49: a user-level hunt of precisions (weight and KV-cache formats across checkpoints, devices and engines).
One test per rule found broken or worth holding, with figures computed by hand in the docstrings."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner

from solver.catalog import catalog_dir
from solver.cli.main import main
from solver.specs.model_catalog import load_model

LLAMA_8B = "meta-llama--Meta-Llama-3.1-8B.json"
# ModelOpt <= 0.29's layout of hf_quant_config.json: FP8 weights and activations, an FP8 KV cache, lm_head kept
MODELOPT_FP8 = {"producer": {"name": "modelopt", "version": "0.29.0"},
                "quantization": {"quant_algo": "FP8", "kv_cache_quant_algo": "FP8", "exclude_modules": ["lm_head"]}}


def _checkpoint(folder: Path, quant: dict | None) -> Path:
    """A checkpoint folder: Llama-3.1-8B's config.json, and hf_quant_config.json beside it when `quant` is given."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(catalog_dir("models") / LLAMA_8B, folder / "config.json")
    if quant is not None:
        (folder / "hf_quant_config.json").write_text(json.dumps(quant))
    return folder


def _memory(model: str, *extra: str) -> dict:
    res = CliRunner().invoke(main, ["memory", model, "--hardware", "h100_sxm", "--cards", "1", "--batch", "1",
                                    "--seq-len", "1024", "--format", "json", *extra])
    assert res.exit_code == 0, res.output
    return json.loads(res.output[res.output.index("{"):])


def test_a_modelopt_checkpoint_is_read_from_its_hf_quant_config_beside_config_json(tmp_path: Path) -> None:
    """An NVIDIA ModelOpt checkpoint whose quantization sits in hf_quant_config.json beside a config.json that
    carries none (ModelOpt <= 0.29; the -FP8 Nemotron-3 Super repo, facts/model_configs/SOURCES.md) is read as the
    engines read it (vLLM 0.34.0 transformers_utils/config.py:996-1008): FP8 linear layers, lm_head and embedding
    bf16. Llama-3.1-8B by hand, per layer: q 4096^2 + k, v 2 x 4096 x 1024 = 25.17M, o 16.78M, MLP 3 x 4096 x
    14336 = 176.16M; x 32 layers at 1 byte: 0.805 / 0.537 / 5.637 GB (11.27 GB of MLP at bf16, as it was sized
    before: the file was never read)."""
    spec = load_model(str(_checkpoint(tmp_path / "ckpt", MODELOPT_FP8)))
    q = spec.quant
    assert (q.method, q.attention, q.dense, q.embedding, q.lm_head, q.activation, q.kv_cache) == \
        ("modelopt", "fp8", "fp8", "bf16", "bf16", "fp8", "fp8")
    b = _memory(str(tmp_path / "ckpt"))["breakdown"]
    assert abs(b["weights.attention"] - 32 * (4096 * 4096 + 2 * 4096 * 1024) / 1e9) < 1e-9
    assert abs(b["weights.o_proj"] - 32 * 4096 * 4096 / 1e9) < 1e-9
    assert abs(b["weights.dense_ffn"] - 32 * 3 * 4096 * 14336 / 1e9) < 1e-9
    assert abs(b["weights.lm_head"] - 2 * 128256 * 4096 / 1e9) < 1e-9


def test_a_config_json_with_its_own_quantization_config_keeps_it_over_the_file_beside(tmp_path: Path) -> None:
    """ModelOpt >= 0.31 writes the quantization into config.json, which the engines take first (the file beside
    is read only where the config carries none): a config naming FP8 itself beside an NVFP4 hf_quant_config.json
    is FP8."""
    folder = _checkpoint(tmp_path / "ckpt", {**MODELOPT_FP8, "quantization": {"quant_algo": "NVFP4"}})
    cfg = json.loads((folder / "config.json").read_text())
    cfg["quantization_config"] = {"quant_method": "fp8", "activation_scheme": "dynamic"}
    (folder / "config.json").write_text(json.dumps(cfg))
    assert load_model(str(folder)).quant.dense == "fp8"


def test_a_config_file_not_named_config_json_ignores_an_hf_quant_config_in_its_folder(tmp_path: Path) -> None:
    """Only a checkpoint's own config.json takes the file beside it: a folder of several configs (the catalog's,
    a test's) with one hf_quant_config.json would otherwise quantize every one of them."""
    folder = _checkpoint(tmp_path / "ckpt", MODELOPT_FP8)
    other = folder / "llama.json"
    shutil.copy(folder / "config.json", other)
    assert load_model(str(other)).quant.dense == "bf16"


def test_a_catalog_checkpoint_of_another_format_is_sized_in_its_own_formats() -> None:
    """kimi-k2-thinking is Kimi-K2's architecture stored with int4 routed experts (W4A16 MoE,
    facts/verified-configs.md kimi-th rows) and the rest bf16; it resolved to Kimi-K2-Instruct's FP8-block file and
    was sized as that (134 GB a rank on 8 H200 under vLLM against 81.44 now). By hand: 60 MoE layers x 384 experts
    x 3 x 7168 x 2048 = 1,014.7B expert weights at 4 bits + a bf16 scale per 32 (0.5625 byte) = 570.8 GB; the
    Instruct checkpoint's own formats are untouched."""
    thinking, instruct = load_model("kimi-k2-thinking"), load_model("kimi-k2")
    q = thinking.quant
    assert (q.attention, q.dense, q.experts, q.embedding, q.lm_head) == ("bf16", "bf16", "int4_g32", "bf16", "bf16")
    assert (instruct.quant.attention, instruct.quant.experts) == ("fp8_block", "fp8_block")
    assert load_model("moonshotai/Kimi-K2-Thinking").quant.experts == "int4_g32"
    res = CliRunner().invoke(main, ["memory", "kimi-k2-thinking", "--hardware", "h200_sxm", "--cards", "8",
                                    "--attn-tp", "8", "--dense-tp", "8", "--embed-tp", "8", "--lmhead-tp", "8",
                                    "--batch", "1", "--seq-len", "4096", "--format", "json"])
    experts = json.loads(res.output[res.output.index("{"):])["breakdown"]["weights.routed_experts"] * 8
    assert abs(experts - 60 * 384 * 3 * 7168 * 2048 * (0.5 + 2 / 32) / 1e9) < 1e-6


def test_a_catalog_checkpoint_is_listed_under_its_configs_names() -> None:
    """`shardplan models` lists a checkpoint of a config's architecture among that config's names, as before it
    had formats of its own, and it names the config it reads."""
    from solver.specs.model_catalog import list_models, model_title

    names = dict(list_models())["moonshotai--Kimi-K2-Instruct.json"]
    assert {"kimi-k2-thinking", "moonshotai/Kimi-K2-Thinking"} <= set(names)
    assert model_title("kimi-k2-thinking", load_model("kimi-k2-thinking").name) == \
        "kimi-k2-thinking (config Kimi-K2-Instruct)"


def _launch(framework: str, *formats: str) -> str:
    res = CliRunner().invoke(main, ["solve", "llama-3.1-70b", "--hardware", "h100_sxm", "--cards", "8", "--framework",
                                    framework, *formats, "--format", "launch", "--top", "1"])
    assert res.exit_code == 0, res.output
    return res.stdout  # the script; its notes go to stderr


def test_check_command_reads_the_formats_the_command_spells() -> None:
    """`solve --weight-dtype fp8 --kv-dtype fp8 --format launch` prints vLLM's `--quantization fp8 --kv-cache-dtype
    fp8` (SGLang's `--kv-cache-dtype fp8_e4m3`); `check --command` read them as 'left at the engine's default'
    and checked a bf16 deployment: 21.41 GB a rank against the plan's 11.43 under vLLM (Llama-3.1-70B TP8: 68.45B
    linear weights x 1 byte / 8 + bf16 embedding and head 0.52 = 9.08 GB of weights). Now the command's formats
    are the ones checked."""
    from solver.launch.check_command import command_deployment

    for framework in ("vllm", "sglang"):
        _, dep = command_deployment(_launch(framework, "--weight-dtype", "fp8", "--kv-dtype", "fp8"), "h100_sxm",
                                    model="llama-3.1-70b", isl=4096, osl=256)
        assert (dep.quant.weights, dep.quant.kv_cache) == ("fp8", "fp8"), framework
    _, dep = command_deployment(_launch("trtllm", "--kv-dtype", "fp8"), "h100_sxm", model="llama-3.1-70b",
                                isl=4096, osl=256)
    assert (dep.quant.weights, dep.quant.kv_cache) == (None, "fp8")  # TRT-LLM's weights are its checkpoint's
    res = CliRunner().invoke(main, ["check", "--command", _launch("vllm", "--weight-dtype", "fp8", "--kv-dtype", "fp8"),
                                    "--model", "llama-3.1-70b", "--hardware", "h100_sxm", "--isl", "4096",
                                    "--osl", "256"])
    assert "params_per_card_gb=9.08" in res.output and "--kv-dtype fp8: read from the command's fp8" in res.output


def test_check_command_leaves_a_quantized_checkpoints_weights_and_the_engines_default_kv_unread() -> None:
    """A load-time `--quantization fp8` on a checkpoint quantized already names no other format (the engine reads
    the checkpoint's: DeepSeek-V3's 128x128 FP8 blocks stay fp8_block), and `--kv-cache-dtype auto` is the engine's
    default, the model dtype: neither is read as a user's choice."""
    from solver.launch.check_command import command_deployment

    line = ("vllm serve ${MODEL_PATH} --tensor-parallel-size 8 --enable-expert-parallel --max-num-seqs 16 "
            "--max-model-len 4352 --quantization fp8 --kv-cache-dtype auto")
    _, dep = command_deployment(line, "h200_sxm", model="deepseek-v3", isl=4096, osl=256)
    assert (dep.quant.weights, dep.quant.kv_cache) == (None, None)


def test_a_format_the_checkpoint_does_not_store_is_said_to_be_a_conversion() -> None:
    """`--weight-dtype fp8` on a bf16 checkpoint plans weights the checkpoint does not hold: the answer says so,
    naming what it stores per group (attention, dense bf16 on Llama; DeepSeek-R1's experts fp8_block under
    `--moe-weight-dtype nvfp4`), as typed (w4a8, not its stored int4); the checkpoint's own element (fp8 on FP8
    blocks) says nothing."""
    from solver.specs.hardware_catalog import load_hardware
    from solver.specs.precision import resolve_precision

    llama, h100 = load_model("llama-3.1-70b"), load_hardware("h100_sxm")
    [note] = [n for n in resolve_precision(llama, h100, weight_dtype="w4a8").notes if "the checkpoint stores" in n]
    assert note.startswith("--weight-dtype w4a8: the checkpoint stores bf16 (attention, dense);")
    [note] = [n for n in resolve_precision(load_model("deepseek-r1"), load_hardware("b200_sxm"),
                                           moe_weight_dtype="nvfp4").notes if "the checkpoint stores" in n]
    assert note.startswith("--moe-weight-dtype nvfp4: the checkpoint stores fp8_block (experts);")
    for same in ("fp8_block", "fp8"):  # the checkpoint's element, at its own or another scale layout
        assert not [n for n in resolve_precision(load_model("deepseek-r1"), h100, weight_dtype=same).notes
                    if "the checkpoint stores" in n]


def test_a_checkpoint_format_a_device_dequantizes_though_it_has_the_rate_says_why() -> None:
    """NVFP4 experts on MI355X, which has an FP4 rate (MXFP4's), run dequantized into 16-bit GEMMs: the note said
    'no native fp4', which MI355X has; it names the rate as being another FP4 format's (H200: still no FP4)."""
    from solver.specs.hardware_catalog import load_hardware
    from solver.specs.precision import resolve_precision

    model = load_model(str(Path(__file__).parent / "data" / "configs_quant" / "nvidia--DeepSeek-R1-FP4.json"))
    mi355x = resolve_precision(model, load_hardware("mi355x"))
    assert "experts weights stay nvfp4 (weight-only on mi355x: its fp4 rate is for another fp4 format)" in mi355x.notes
    assert mi355x.gemm_dtype("experts") == "bf16"
    assert "experts weights stay nvfp4 (weight-only on h200_sxm: no native fp4)" in \
        resolve_precision(model, load_hardware("h200_sxm")).notes


def test_a_checkpoints_kv_scheme_is_the_engines_auto_kv_cache() -> None:
    """vLLM 0.34.0 and SGLang 0.5.23 resolve --kv-cache-dtype auto to the checkpoint's FP8 KV scheme (ModelOpt's
    kv_cache_quant_algo, compressed-tensors' kv_cache_scheme), so a ModelOpt FP8 Llama-3.1-8B with no --kv-dtype
    runs an FP8 cache: 32 layers x 8 KV heads x 128 x 2 (K, V) x 1 byte = 64 KiB a token, 1,024 tokens = 0.0671
    GB (0.1342 at bf16, as it was priced). A device without FP8 (Atlas A3) keeps the 16-bit cache; --kv-dtype bf16
    keeps it at 16 bits."""
    from solver.specs.hardware_catalog import load_hardware
    from solver.specs.precision import resolve_precision

    model = load_model(str(Path(__file__).parent / "data" / "configs_quant" / "nvidia--Llama-3.1-8B-Instruct-FP8.json"))
    assert resolve_precision(model, load_hardware("h100_sxm")).kv_bytes == 1
    assert resolve_precision(model, load_hardware("h100_sxm"), kv_dtype="bf16").kv_bytes == 2
    assert resolve_precision(model, load_hardware("atlas_a3")).kv_bytes == 2


def test_a_modelopt_folders_kv_cache_is_sized_at_its_fp8_scheme(tmp_path: Path) -> None:
    """The hf_quant_config.json folder above (kv_cache_quant_algo FP8) at 1,024 tokens: 0.0671 GB of KV cache by
    hand (32 x 8 x 128 x 2 x 1,024 bytes)."""
    memory = _memory(str(_checkpoint(tmp_path / "ckpt", MODELOPT_FP8)))
    assert abs(memory["breakdown"]["kv_cache"] - 32 * 8 * 128 * 2 * 1024 / 1e9) < 1e-9


def test_a_16_bit_kv_cache_chosen_is_named_not_auto() -> None:
    """`--kv-dtype bf16` printed vLLM's and SGLang's `--kv-cache-dtype auto`, which runs a ModelOpt or
    compressed-tensors checkpoint's FP8 KV scheme (above): the 16-bit cache the plan priced is named."""
    for framework in ("vllm", "sglang"):
        assert "--kv-cache-dtype bfloat16" in _launch(framework, "--kv-dtype", "bf16"), framework


def test_inspect_says_a_checkpoints_kv_scheme_is_the_default_cache(tmp_path: Path) -> None:
    """`inspect` said a ModelOpt checkpoint's FP8 KV scales are 'used with --kv-dtype fp8'; the engines run them
    by default (above), which it now says."""
    res = CliRunner().invoke(main, ["inspect", str(_checkpoint(tmp_path / "ckpt", MODELOPT_FP8))])
    assert "the engines' default KV cache" in res.output and "used with --kv-dtype" not in res.output
