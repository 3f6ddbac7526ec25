"""Stop 49, second review: rules the late merges got wrong, one test each."""
from __future__ import annotations

from click.testing import CliRunner

from solver.cli.main import main


def test_vllm_refuses_w4afp8_on_rocm_as_it_refuses_w4a8() -> None:
    """w4afp8 is int4 weights with FP8 activations: vLLM 0.34.0's CUTLASS W4A8 recipe (linear and fused MoE), which
    runs on CUDA only, as w4a8 does (vllm.yaml weight_dtype_requires). MI300X: refused in one line naming the flag;
    H100: plans."""
    base = ["solve", "llama-3.1-8b", "--cards", "1", "--framework", "vllm", "--weight-dtype", "w4afp8"]
    res = CliRunner().invoke(main, [*base, "--hardware", "mi300x"])
    assert res.exit_code == 2 and res.output.startswith("error: --weight-dtype: weight dtype w4afp8") \
        and "w4a16 runs" in res.output and res.output.count("\n") == 1, res.output
    assert CliRunner().invoke(main, [*base, "--hardware", "h100_sxm"]).exit_code == 0
