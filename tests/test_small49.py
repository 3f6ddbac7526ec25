"""Stop 49 small mends: a checkpoint's own weight format held to the engine's kernels, KV dtype names in any case,
and the aggregated memory remedy that names nothing to change. One test per rule."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner

from solver.catalog import catalog_dir
from solver.cli.main import main

# ModelOpt's W4A8_AWQ (int4 weights, group 128, FP8 activations) in hf_quant_config.json beside Llama-3.1-8B's config
W4A8_AWQ = {"producer": {"name": "modelopt", "version": "0.29.0"},
            "quantization": {"quant_algo": "W4A8_AWQ", "group_size": 128, "exclude_modules": ["lm_head"]}}


def _w4a8_checkpoint(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(catalog_dir("models") / "meta-llama--Meta-Llama-3.1-8B.json", folder / "config.json")
    (folder / "hf_quant_config.json").write_text(json.dumps(W4A8_AWQ))
    return folder


def test_a_checkpoints_own_w4a8_is_refused_where_the_engine_runs_no_w4a8_kernel(tmp_path: Path) -> None:
    """vLLM runs W4A8 on CUDA only (vllm.yaml weight_dtype_requires): the checkpoint's own W4A8_AWQ, with no flag,
    priced as int4 with FP8 activations (w4afp8) on MI300X, is refused in one line naming the checkpoint's field,
    exit 2, as `--weight-dtype w4a8` is; on H100 it plans. Before, MI300X planned it (exit 0)."""
    ckpt = str(_w4a8_checkpoint(tmp_path / "ckpt"))
    base = ["solve", ckpt, "--cards", "1", "--framework", "vllm", "--top", "1"]
    res = CliRunner().invoke(main, [*base, "--hardware", "mi300x"])
    assert res.exit_code == 2 and res.output.startswith(
        "error: quantization_config (attention, dense): weight dtype w4afp8: vllm runs it on CUDA devices") \
        and res.output.count("\n") == 1, res.output
    assert CliRunner().invoke(main, [*base, "--hardware", "h100_sxm"]).exit_code == 0


def test_check_reports_a_checkpoints_own_unrunnable_w4a8_as_a_violation(tmp_path: Path) -> None:
    """`check --command` of vLLM serving that checkpoint on MI300X names its W4A8 in class C, exit 1."""
    ckpt = str(_w4a8_checkpoint(tmp_path / "ckpt"))
    res = CliRunner().invoke(main, ["check", "--command", f"vllm serve {ckpt} --tensor-parallel-size 1", "--hardware",
                                    "mi300x", "--isl", "1000", "--osl", "200", "--concurrency", "8"])
    assert res.exit_code == 1 and "C (framework): quantization_config (attention, dense): weight dtype w4afp8" \
        in res.output, \
        res.output


def _solve_json(*extra: str) -> str:
    res = CliRunner().invoke(main, ["solve", "llama-3.1-8b", "--hardware", "h100_sxm", "--cards", "1", "--top", "1",
                                    "--time-limit", "2", "--format", "json", *extra])
    assert res.exit_code == 0, res.output
    return res.output


def test_a_kv_dtype_in_any_case_plans_as_its_lower_case_under_an_engine_profile() -> None:
    """--kv-dtype FP8 under sglang is fp8 (options.DTYPE, dtypes.format_key): the same answer, where before it was
    refused "has no spelling for it (it takes ... fp8 ...)", exit 2."""
    assert _solve_json("--framework", "sglang", "--kv-dtype", "FP8") == \
        _solve_json("--framework", "sglang", "--kv-dtype", "fp8")


def test_a_sweeps_per_hardware_dtype_keeps_its_hardware_name_and_reads_the_format_in_any_case() -> None:
    """A sweep's `h100_sxm=INT8` is read as h100_sxm=int8: the hardware key as typed, the format in lower case."""
    from solver.cli.options import DTYPE

    assert DTYPE.convert("h100_sxm=INT8", None, None) == "h100_sxm=int8"
    assert DTYPE.convert("FP8,atlas_a3=Int8", None, None) == "fp8,atlas_a3=int8"
    res = CliRunner().invoke(main, ["sweep", "llama-3.1-8b", "--hardware", "h100_sxm", "--cards", "1", "--framework",
                                    "vllm", "--kv-dtype", "h100_sxm=INT8", "--isl", "1000", "--osl", "200",
                                    "--scenarios", "throughput", "--time-limit", "2"])
    assert res.exit_code == 0, res.output


def test_the_sizes_the_planner_found_none_at_are_said_with_what_binds_not_offered_as_what_would_fit() -> None:
    """DeepSeek-V3.2 on 4 Atlas A3 under cann-recipes at ISL 500,000: "the planner found none at 72, 80, 84 cards"
    names nothing to change, so it follows the memory terms and is no remedy (the error's remedies hold none);
    before it stood alone under "what would fit"."""
    import pytest

    from solver.api import run_solve
    from solver.errors import InfeasibleError
    from solver.specs.scenario import Scenario

    with pytest.raises(InfeasibleError) as err:
        run_solve("deepseek-v3.2", "atlas_a3", 4, Scenario(isl=500000, osl=1024, concurrency=64),
                  framework="cann-recipes", explain_binding=False)
    assert "the planner found none at" in (err.value.terms or "") and "what would fit" not in str(err.value)
    assert not any("found none" in r.text for r in err.value.remedies.options)


def test_a_joint_memory_and_sla_bind_offers_no_sla_relaxation_where_no_memory_change_is_found() -> None:
    """Llama-3.1-405B on 1 H100 at ISL 500,000, 1,000 sequences, TTFT 150 ms: memory and the SLA bind together and
    no size holds the weights and the load, so "relax --ttft-ms" alone (which reruns infeasible) is not offered;
    before, "relaxed together ... memory (no size from 2 to 32 cards ...) and the SLA (relax --ttft-ms)"."""
    code = CliRunner().invoke(main, ["solve", "llama-3.1-405b", "--hardware", "h100_sxm", "--isl", "500000", "--osl",
                                     "256", "--framework", "trtllm", "--cards", "1", "--ttft-ms", "150",
                                     "--concurrency", "1000", "--time-limit", "3"])
    assert code.exit_code == 1 and "no size from 2 to 32 cards holds the weights and 1,000 sequences)" in code.output \
        and "what would fit" not in code.output, code.output
