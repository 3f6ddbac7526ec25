"""Which GEMMs run in which precision (mechanism 6 of the serving issue): activations are quantized per GEMM."""
from __future__ import annotations

from solver.specs.dtypes import number_format
from solver.specs.precision import Precision


def _prec(activation: str, **weights: str) -> Precision:
    groups = {"attention": "bf16", "dense": "bf16", "experts": "bf16", "embedding": "bf16", "lm_head": "bf16",
              "norm": "bf16", **weights}
    return Precision(weights={g: number_format(f) for g, f in groups.items()}, activation=activation, kv_bytes=1)


def test_fp8_attention_beside_an_nvfp4_moe_runs_fp8_not_bf16() -> None:
    p = _prec("fp4", attention="fp8", experts="nvfp4")
    assert p.gemm_dtype("attention") == "fp8"
    assert p.gemm_dtype("experts") == "fp4"


def test_bf16_weights_run_bf16_whatever_the_activation() -> None:
    for act in ("fp4", "fp8", "bf16"):
        assert _prec(act).gemm_dtype("attention") == "bf16"


def test_4bit_weights_with_8bit_activations_run_at_the_activation_rate() -> None:
    assert _prec("fp8", experts="mxfp4").gemm_dtype("experts") == "fp8"  # W4A8
    assert _prec("bf16", experts="mxfp4").gemm_dtype("experts") == "bf16"  # W4A16


def test_8bit_weights_with_bf16_activations_run_bf16() -> None:
    assert _prec("bf16", dense="fp8").gemm_dtype("dense") == "bf16"


def test_nvfp4_experts_beside_fp8_dense_run_w4a4_where_the_hardware_has_fp4() -> None:
    """`--moe-weight-dtype nvfp4` on an FP8 checkpoint (the published DeepSeek-R1-FP4 layout) resolves as
    case_from_row's NVFP4 MoE row does: experts at the FP4 rate, the FP8 dense and attention GEMMs W8A8."""
    from solver.specs.hardware_catalog import load_hardware
    from solver.specs.model_catalog import load_model
    from solver.specs.precision import resolve_precision

    model = load_model("deepseek-r1")
    p = resolve_precision(model, load_hardware("b200_sxm"), moe_weight_dtype="nvfp4")
    assert (p.gemm_dtype("experts"), p.gemm_dtype("dense"), p.gemm_dtype("attention")) == ("fp4", "fp8", "fp8")
    # no FP4 rate (Hopper holds NVFP4 weight-only): the experts are priced at the FP8 activations' rate (W4A8; the
    # W4A16 rule's list is empty as shipped, precision.W4A16_ON_DEVICES_WITHOUT), the FP8 dense GEMMs W8A8
    h = resolve_precision(model, load_hardware("h200_sxm"), moe_weight_dtype="nvfp4")
    assert (h.gemm_dtype("experts"), h.gemm_dtype("dense")) == ("fp8", "fp8")


def test_a_gemm_runs_weight_only_where_quantized_weights_meet_16bit_activations() -> None:
    assert _prec("bf16", experts="mxfp4").weight_only("experts")  # W4A16
    assert _prec("bf16", dense="fp8").weight_only("dense")  # W8A16
    assert not _prec("fp8", experts="mxfp4").weight_only("experts")  # W4A8: 8-bit activations
    assert not _prec("fp8", dense="fp8").weight_only("dense")  # W8A8
    assert not _prec("bf16").weight_only("attention")  # 16-bit weights: no dequantization
