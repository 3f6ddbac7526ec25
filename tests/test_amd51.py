"""Stop 51's user-level hunt of the AMD path (MI300X / MI325X / MI355X with ATOM, vLLM and SGLang on ROCm), one
rule each."""
from __future__ import annotations

from click.testing import CliRunner

from solver.cli.main import main as cli


def _run(*argv: str) -> tuple[int, str]:
    res = CliRunner(env={"COLUMNS": "400"}).invoke(cli, list(argv), catch_exceptions=False)
    return res.exit_code, res.stdout + res.stderr


_DCP8_V32 = """model: deepseek-ai/DeepSeek-V3.2
hardware: HW
world_size: 8
framework: vllm
workload: {isl: 32768, osl: 1024, concurrency: 16}
parallel_config: {attn_tp_size: 1, dense_tp_size: 8, moe_tp_size: 8, embed_tp_size: 8, lmhead_tp_size: 8,
                  o_proj_tp_size: 8, cp_size: 1, kvp_size: 8}
"""


def test_vllm_refuses_decode_context_parallel_on_a_dsa_model_on_rocm(tmp_path) -> None:
    """vLLM 0.34.0 gives a sparse-attention (DSA) model one ROCm backend, ROCM_AITER_MLA_SPARSE, whose impl says
    supports_dcp = False (rocm_aiter_mla_sparse.py:780), so -dcp finds no valid backend at startup: check names the
    rule on MI355X, and a pasted -dcp command reads back to no admitted configuration; the same layout on a CUDA
    device (FlashMLA sparse: supports_dcp) stays valid."""
    for hw, want in (("mi355x", 1), ("h200_sxm", 0)):
        path = tmp_path / f"{hw}.yaml"
        path.write_text(_DCP8_V32.replace("HW", hw))
        code, out = _run("check", str(path))
        assert code == want and ("C.dcp_dsa_not_on_rocm" in out) == (want == 1), out
    cmd = ("vllm serve x --tensor-parallel-size 8 --decode-context-parallel-size 8 --max-num-seqs 16 "
           "--max-model-len 33792")
    code, out = _run("check", "--model", "deepseek-ai/DeepSeek-V3.2", "--framework", "vllm", "--isl", "32768",
                     "--osl", "1024", "--hardware", "mi355x", "--command", cmd)
    assert code == 2 and len(out.strip().splitlines()) == 1 and "no configuration vllm admits" in out, out


def _launch_notes(*argv: str) -> str:
    code, out = _run("solve", *argv, "--cards", "8", "--top", "1", "--format", "launch", "--time-limit", "5")
    assert code == 0, out
    return "\n".join(line for line in out.splitlines() if line.startswith("# note:"))


def test_atoms_launch_says_a_quantized_weight_format_is_unverified() -> None:
    """The facts give ATOM no weight format (engines.md: a KV dtype row alone), so a quantized format its command
    serves, the user's (INT4 on MI300X) or the checkpoint's own (gpt-oss's MXFP4 on MI355X), is said to be
    unverified on that device; a 16-bit checkpoint, and vLLM (whose profile lists no such field), say nothing."""
    assert "weights int4: atom's sources do not show it" in _launch_notes(
        "meta-llama/Meta-Llama-3.1-70B", "--hardware", "mi300x", "--framework", "atom", "--weight-dtype", "int4")
    notes = _launch_notes("openai/gpt-oss-120b", "--hardware", "mi355x", "--framework", "atom")
    assert "weights mxfp4:" in notes and "unverified on mi355x" in notes, notes
    assert "unverified" not in _launch_notes("meta-llama/Meta-Llama-3.1-70B", "--hardware", "mi300x",
                                             "--framework", "atom")
    assert "unverified" not in _launch_notes("openai/gpt-oss-120b", "--hardware", "mi355x", "--framework", "vllm")


def test_check_says_a_pasted_format_value_the_profile_does_not_spell_is_not_read() -> None:
    """ATOM's --kv_cache_dtype takes bf16 / fp8 (engines.md); a pasted fp8_e4m3 (SGLang's spelling) is not read,
    so the estimate prices the default cache: check says that, not that the launch leaves the flag at the engine's
    default (as if the value were the default)."""
    base = "python3 -m atom.entrypoints.openai_server --model x -tp 8 --max-num-seqs 16 --max-model-len 4352"
    common = ("--model", "meta-llama/Meta-Llama-3.1-70B", "--hardware", "mi300x", "--framework", "atom",
              "--isl", "4096", "--osl", "256")
    code, out = _run("check", *common, "--command", f"{base} --kv_cache_dtype fp8_e4m3")
    assert code == 0 and "fp8_e4m3, none of the values atom's profile spells (bf16, fp8): not read" in out, out
    code, out = _run("check", *common, "--command", f"{base} --kv_cache_dtype fp8")
    assert code == 0 and "none of the values" not in out, out
