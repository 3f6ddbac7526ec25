"""Stop 49, second review: rules the late merges got wrong, one test each."""
from __future__ import annotations

import pytest
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


def test_a_role_copy_asked_for_its_profiles_role_is_that_profile():
    """for_role changes the role from the profile a copy was made from: a prefill worker's profile asked for no
    role (or a decode worker's, which reads prefill_role false as well) is the engine's profile itself, not a copy of
    the copy, so memos keyed by the profile's identity serve it."""
    from solver.specs.framework import load_framework

    fw = load_framework("sglang")
    prefill = fw.for_role("prefill")
    assert prefill is not fw and prefill.for_role("prefill") is prefill
    assert prefill.for_role(None) is fw and prefill.for_role("decode") is fw


@pytest.mark.slow  # a disaggregated plan (~3 s)
def test_a_plan_whose_attention_choices_form_no_layout_is_refused_not_a_fault():
    """The tables size their memory entries at the least step budget of the views (the EP kernels' own budget beside
    the scheduler's); where no attention choice forms a layout (Kimi-K3's 1.56 TB of weights on one H800 rank)
    there is no view, and the scheduler's budget stands: an exit-1 refusal naming the memory, not
    `min() arg is an empty sequence` (remedies.py --cases 100 --seed 9 --disagg drew it)."""
    r = CliRunner().invoke(main, ["solve", "kimi-k3", "--hardware", "h800", "--isl", "4096", "--osl", "256",
                                  "--framework", "vllm", "--cards", "2", "--serving", "disagg", "--ttft-ms", "800",
                                  "--tpot-ms", "40", "--time-limit", "3"])
    assert r.exit_code == 1, r.output
    assert "internal error" not in r.output and "exceed 1 x 81.6 GB" in " ".join(r.output.split())
