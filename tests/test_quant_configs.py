"""Quantized checkpoints as published (tests/data/configs_quant/, SOURCES.md there): each method's own fields
give the format per module group, the activations the GEMMs take and the KV-cache scales; a format no number
format here holds is refused in one line naming the field."""
from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from solver.errors import InputError
from solver.estimate.memory_options import MemoryOptions
from solver.estimate.weights import weights_per_rank
from solver.estimate.params import count_params
from solver.specs.config.read import parse_model_config
from solver.specs.dtypes import canonical_format, number_format
from solver.specs.hardware_catalog import load_hardware
from solver.specs.parallel import ParallelConfig
from solver.specs.precision import resolve_precision

DATA = Path(__file__).parent / "data" / "configs_quant"


def _raw(name: str) -> dict:
    return json.loads((DATA / f"{name}.json").read_text())


def _model(name: str, raw: dict | None = None):
    return parse_model_config(raw if raw is not None else _raw(name), name)


def _groups(m) -> tuple[str, str, str, str]:
    q = m.quant
    return q.attention, q.dense, q.lm_head, q.activation


def test_compressed_tensors_fp8_dynamic_is_per_channel_fp8_with_fp8_activations() -> None:
    m = _model("RedHatAI--Meta-Llama-3.1-8B-Instruct-FP8-dynamic")
    assert _groups(m) == ("fp8_ch", "fp8_ch", "bf16", "fp8")
    assert number_format("fp8_ch").bytes_per_param == 1 + 2 / 4096  # a bf16 scale per row


def test_compressed_tensors_w8a8_int8_runs_at_the_int8_rate() -> None:
    m = _model("RedHatAI--Meta-Llama-3.1-8B-Instruct-quantized.w8a8")
    assert _groups(m) == ("int8_ch", "int8_ch", "bf16", "int8")
    assert resolve_precision(m, load_hardware("h100_sxm")).gemm_dtype("dense") == "int8"


def test_weight_only_int4_runs_at_the_16_bit_rate_with_int4_bytes() -> None:
    m = _model("RedHatAI--Meta-Llama-3.1-8B-Instruct-quantized.w4a16")
    assert _groups(m) == ("int4", "int4", "bf16", "bf16")
    for hw in ("h100_sxm", "b200_sxm"):
        prec = resolve_precision(m, load_hardware(hw))
        assert prec.gemm_dtype("dense") == "bf16" and prec.fmt("dense").bytes_per_param == 0.5 + 2 / 128


def test_a_user_weight_format_spelled_w4a8_keeps_8bit_activations() -> None:
    m = _model("RedHatAI--Meta-Llama-3.1-8B-Instruct-quantized.w4a16")
    assert resolve_precision(m, load_hardware("h100_sxm"), weight_dtype="w4a8").activation == "fp8"
    assert resolve_precision(m, load_hardware("h100_sxm"), weight_dtype="int4").gemm_dtype("dense") == "bf16"


def test_nvfp4_is_w4a4_where_the_hardware_has_fp4() -> None:
    for name in ("RedHatAI--Llama-3.3-70B-Instruct-NVFP4", "nvidia--Llama-3.3-70B-Instruct-FP4"):
        m = _model(name)
        assert _groups(m) == ("nvfp4", "nvfp4", "bf16", "fp4")
        assert resolve_precision(m, load_hardware("b200_sxm")).gemm_dtype("dense") == "fp4"


def test_modelopt_fp8_is_per_tensor_fp8_with_kv_scales() -> None:
    m = _model("nvidia--Llama-3.1-8B-Instruct-FP8")
    assert _groups(m) == ("fp8", "fp8", "bf16", "fp8") and m.quant.kv_cache == "fp8"


def test_checkpoint_kv_scales_the_engines_do_not_take_by_default_leave_the_kv_at_16_bits_and_say_how() -> None:
    # Quark's kv_cache_group is used only under an FP8 --kv-cache-dtype (a ModelOpt or compressed-tensors scheme is
    # the engines' auto: tests/test_quant49.py)
    m = _model("amd--Llama-3.1-8B-Instruct-FP8-KV")
    prec = resolve_precision(m, load_hardware("h100_sxm"))
    assert prec.kv_bytes == 2 and any("--kv-dtype fp8" in n for n in prec.notes)
    assert resolve_precision(m, load_hardware("h100_sxm"), kv_dtype="fp8").kv_bytes == 1


def test_modelopt_exclude_modules_keep_attention_and_shared_experts_in_the_checkpoint_dtype() -> None:
    m = _model("nvidia--DeepSeek-R1-FP4")
    assert (m.quant.attention, m.quant.dense, m.quant.experts) == ("bf16", "bf16", "nvfp4")


def test_awq_counts_a_16_bit_scale_and_a_4_bit_zero_per_group_of_128() -> None:
    m = _model("Qwen--Qwen3-8B-AWQ")
    assert _groups(m) == ("int4_g128z", "int4_g128z", "fp16", "bf16")
    assert number_format("int4_g128z").bytes_per_param == 0.5 + (2 + 0.5) / 128


def test_gptq_int8_counts_its_zero_points_and_runs_weight_only() -> None:
    m = _model("Qwen--Qwen3-8B-GPTQ-Int8")
    assert _groups(m) == ("int8_g128z", "int8_g128z", "fp16", "bf16")
    assert number_format("int8_g128z").bytes_per_param == 1 + (2 + 1) / 128


def test_gptq_moe_quantizes_the_routed_experts() -> None:
    m = _model("Qwen--Qwen3-30B-A3B-GPTQ-Int4")
    assert (m.quant.attention, m.quant.experts) == ("int4_g128z", "int4_g128z")


def test_fbgemm_fp8_keeps_attention_unconverted_and_notes_the_split_ffn() -> None:
    m = _model("meta-llama--Llama-3.1-405B-Instruct-FP8")
    assert _groups(m) == ("bf16", "fp8_ch_s4", "bf16", "fp8")
    # 126 layers x (gate, up, down): a dense Llama has no shared experts, so only its own MLP modules are counted
    assert any("dense modules are split (372 fp8_ch_s4, 6 bf16 of 378)" in w for w in m.warnings)


def test_quark_mxfp4_excludes_attention() -> None:
    m = _model("amd--DeepSeek-R1-MXFP4-Preview")
    assert (m.quant.attention, m.quant.experts, m.quant.activation) == ("bf16", "mxfp4", "fp4")


def test_quark_fp8_reads_the_kv_cache_from_the_kv_projections_output() -> None:
    m = _model("amd--Llama-3.1-8B-Instruct-FP8-KV")
    assert _groups(m) == ("fp8", "fp8", "bf16", "fp8") and m.quant.kv_cache == "fp8"


def test_bitsandbytes_nf4_double_quant_counts_its_two_level_absmax() -> None:
    m = _model("unsloth--Meta-Llama-3.1-8B-Instruct-bnb-4bit")
    assert _groups(m) == ("nf4_g64dq", "nf4_g64dq", "bf16", "bf16")
    assert number_format("nf4_g64dq").bytes_per_param == 0.5 + (1 + 4 / 256) / 64


def test_bitsandbytes_with_both_4bit_and_8bit_is_refused_naming_load_in_8bit() -> None:
    raw = _raw("unsloth--Meta-Llama-3.1-8B-Instruct-bnb-4bit")
    raw["quantization_config"]["load_in_8bit"] = True
    with pytest.raises(InputError, match="quantization_config.load_in_8bit: true together with load_in_4bit"):
        _model("bnb-both", raw)


def test_weight_bytes_per_rank_by_hand() -> None:
    """Llama-3.1-8B W4A16 at TP 2: the decoder's linear weights at 0.5 + 2/128 bytes, embedding and head bf16."""
    m = _model("RedHatAI--Meta-Llama-3.1-8B-Instruct-quantized.w4a16")
    h, inter, layers, vocab, kv = 4096, 14336, 32, 128256, 8 * 128
    linear = layers * (h * h + 2 * h * kv + h * h + 3 * h * inter)
    expect = linear * (0.5 + 2 / 128) / 2 + 2 * vocab * h * 2 / 2 + (2 * layers + 1) * h * 2
    pc = ParallelConfig(world_size=2, attn_tp_size=2, dense_tp_size=2, embed_tp_size=2, lmhead_tp_size=2)
    got = sum(weights_per_rank(m, pc, resolve_precision(m, load_hardware("h100_sxm")), MemoryOptions()).values())
    assert count_params(m).total == 8_030_261_248
    assert got == pytest.approx(expect, rel=1e-3)


def test_scaled_spellings_equal_to_a_named_format_are_that_format() -> None:
    assert [canonical_format(n) for n in ("int4_g128", "int8_ch_s4", "fp8_b128x128_s4")] == ["int4", "int8", "fp8_block"]


@pytest.mark.parametrize("name, field", [
    ("gptq-3bit--Meta-Llama-3.1-8B", "quantization_config.bits: 3: no number format here holds it"),
    ("bnb-fp4--Meta-Llama-3.1-8B", "quantization_config.bnb_4bit_quant_type: 'fp4'"),
    ("ct-w2a16--Meta-Llama-3.1-8B", "quantization_config.config_groups.group_0.weights.num_bits: 2"),
])
def test_a_format_no_number_format_holds_is_refused_naming_the_field(name: str, field: str) -> None:
    with pytest.raises(InputError) as e:
        _model(f"refused/{name}")
    assert field in str(e.value) and "\n" not in str(e.value)


def test_a_nvfp4_group_other_than_16_is_refused_naming_group_size() -> None:
    raw = copy.deepcopy(_raw("RedHatAI--Llama-3.3-70B-Instruct-NVFP4"))
    raw["quantization_config"]["config_groups"]["group_0"]["weights"]["group_size"] = 64
    with pytest.raises(InputError, match="config_groups.group_0.weights.group_size: 64"):
        _model("x", raw)


def test_an_unknown_modelopt_algorithm_is_refused_naming_quant_algo() -> None:
    raw = copy.deepcopy(_raw("nvidia--Llama-3.1-8B-Instruct-FP8"))
    raw["quantization_config"]["quant_algo"] = "W2A16"
    with pytest.raises(InputError, match="quantization_config.quant_algo: 'W2A16'"):
        _model("x", raw)


def test_an_unknown_compressed_tensors_target_class_is_refused_naming_targets() -> None:
    raw = copy.deepcopy(_raw("RedHatAI--Meta-Llama-3.1-8B-Instruct-FP8-dynamic"))
    raw["quantization_config"]["config_groups"]["group_0"]["targets"] = ["LlamaDecoderLayer"]
    with pytest.raises(InputError, match="config_groups.group_0.targets: 'LlamaDecoderLayer'"):
        _model("x", raw)


def test_an_unknown_quant_method_is_refused_naming_the_methods_read() -> None:
    raw = copy.deepcopy(_raw("Qwen--Qwen3-8B-AWQ"))
    raw["quantization_config"]["quant_method"] = "hqq"
    with pytest.raises(InputError, match="unsupported quant_method 'hqq' .read: fp8, mxfp4, compressed-tensors"):
        _model("x", raw)


def test_a_compressed_tensors_scheme_without_targets_is_refused_naming_targets() -> None:
    raw = copy.deepcopy(_raw("RedHatAI--Meta-Llama-3.1-8B-Instruct-quantized.w4a16"))
    del raw["quantization_config"]["config_groups"]["group_0"]["targets"]
    with pytest.raises(InputError, match="config_groups.group_0.targets: is empty"):
        _model("x", raw)


# --- the lists are matched against the modules the read layer stack has (module_names.yaml) ---------------------

def _quant_warnings(m) -> list[str]:
    return [w for w in m.warnings if "quantization_config" in w]


def test_mixtral_awq_skips_the_router_not_the_experts_w1_w3() -> None:
    """AutoAWQ's Mixtral writes modules_to_not_convert ["gate"], a name fragment (vLLM's is_layer_skipped_awq):
    it reaches block_sparse_moe.gate, not the experts' w1 / w2 / w3 (Llama naming, gate_proj, would have matched)."""
    m = _model("TheBloke--Mixtral-8x7B-Instruct-v0.1-AWQ")
    assert (m.quant.attention, m.quant.experts) == ("int4_g128z", "int4_g128z")
    assert _quant_warnings(m) == []


def test_gptq_dynamic_regexes_match_mixtral_block_sparse_moe_names() -> None:
    m = _model("gptqmodel--Mixtral-8x7B-experts-int8")
    assert (m.quant.attention, m.quant.experts) == ("int4_g128z", "int8_g128z")


def test_compressed_tensors_regex_ignore_is_anchored_as_re_match() -> None:
    """re:.*mlp.gate$ (the Qwen3-MoE router) leaves the experts' gate_proj quantized."""
    m = _model("RedHatAI--Qwen3-30B-A3B-FP8-dynamic")
    assert (m.quant.attention, m.quant.experts, m.quant.activation) == ("fp8_ch", "fp8_ch", "fp8")
    assert _quant_warnings(m) == []
    raw = _raw("RedHatAI--Qwen3-30B-A3B-FP8-dynamic")
    raw["quantization_config"]["ignore"] = ["lm_head", "re:mlp.experts.*"]  # anchored at the name's start
    assert _model("x", raw).quant.experts == "fp8_ch"
    raw["quantization_config"]["ignore"] = ["lm_head", "re:.*mlp.experts.*"]
    assert _model("x", raw).quant.experts == "bf16"


def test_a_wrapped_language_model_matches_either_prefix_and_the_tower_is_not_its_module() -> None:
    """Devstral-Small-2 (mistral3 wrapper): the ignore list names the first and last text layers' attention under
    model.language_model (transformers >= 4.52) and the vision tower and projector, all by exact name."""
    m = _model("constructed--Devstral-Small-2-24B-FP8-dynamic")
    assert _groups(m) == ("fp8_ch", "fp8_ch", "bf16", "fp8")
    assert _quant_warnings(m) == ["quantization_config (compressed-tensors): attention modules are split "
                                  "(152 fp8_ch, 8 bf16 of 160); sized as fp8_ch"]
    raw = _raw("constructed--Devstral-Small-2-24B-FP8-dynamic")
    q = raw["quantization_config"]
    q["ignore"] = [n.replace("model.language_model.", "language_model.model.") for n in q["ignore"]]
    assert _quant_warnings(_model("x", raw)) == _quant_warnings(m)  # the older exporters' prefix


def test_an_ignore_entry_naming_no_module_of_the_text_model_is_reported() -> None:
    raw = _raw("constructed--Devstral-Small-2-24B-FP8-dynamic")
    raw["quantization_config"]["ignore"].append("model.language_model.layers.3.self_attn.qkv_proj")
    ws = _quant_warnings(_model("x", raw))
    assert any("quantization_config.ignore (compressed-tensors): 'model.language_model.layers.3.self_attn.qkv_proj' "
               "name no linear module of the model as read" in w for w in ws)


def test_deepseek_r1_fp4_counts_only_the_modules_each_layer_has() -> None:
    """Its exclude globs cover attention, the shared experts and the three dense layers' MLP: every dense module
    (3 dense MLPs + 58 shared experts + the MTP layer's, x3) is excluded, every routed expert quantized: no split."""
    m = _model("nvidia--DeepSeek-R1-FP4")
    assert (m.quant.attention, m.quant.dense, m.quant.experts) == ("bf16", "bf16", "nvfp4")
    assert _quant_warnings(m) == []


# --- FP4 on a device without an FP4 rate: W4A16 (precision.W4A16_ON_DEVICES_WITHOUT) ------------------------

@pytest.fixture
def fp4_weight_only(monkeypatch):
    """The W4A16 rule with FP4 listed, as vLLM's code runs FP4 on Hopper / Ampere: the shipped list is empty until
    the calibration rows can tell the pricings apart (precision.W4A16_ON_DEVICES_WITHOUT's comment)."""
    monkeypatch.setattr("solver.specs.precision.W4A16_ON_DEVICES_WITHOUT", ("fp4",))


def test_fp4_on_a_device_without_an_fp4_rate_is_priced_at_the_activations_8bit_rate_as_shipped() -> None:
    """Shipped: NVFP4 on H100 runs its GEMMs at the 8-bit activations' rate (W4A8), the weight bytes 4-bit."""
    prec = resolve_precision(_model("nvidia--Llama-3.3-70B-Instruct-FP4"), load_hardware("h100_sxm"))
    assert prec.gemm_dtype("dense") == "fp8" and prec.fmt("dense").name == "nvfp4" and not prec.a16


@pytest.mark.parametrize("hw", ["h100_sxm", "a100_sxm"])
def test_nvfp4_runs_w4a16_where_the_device_has_no_fp4_rate(hw: str, fp4_weight_only) -> None:
    m = _model("nvidia--Llama-3.3-70B-Instruct-FP4")
    prec = resolve_precision(m, load_hardware(hw))
    assert prec.gemm_dtype("dense") == prec.gemm_dtype("attention") == "bf16"
    assert prec.fmt("dense").name == "nvfp4"  # the weight bytes stay 4-bit
    assert prec.activation == "bf16"


def test_fp4_experts_beside_fp8_dense_run_w4a16_while_the_dense_gemms_stay_w8a8(fp4_weight_only) -> None:
    m = _model("nvidia--DeepSeek-R1-FP4")
    prec = resolve_precision(m, load_hardware("h100_sxm"), weight_dtype="fp8_block", moe_weight_dtype="nvfp4")
    assert (prec.gemm_dtype("dense"), prec.gemm_dtype("experts")) == ("fp8", "bf16")
    prec = resolve_precision(m, load_hardware("b200_sxm"), weight_dtype="fp8_block", moe_weight_dtype="nvfp4")
    assert (prec.gemm_dtype("dense"), prec.gemm_dtype("experts")) == ("fp8", "fp4")


def test_the_users_activation_dtype_overrides_w4a16() -> None:
    m = _model("nvidia--Llama-3.3-70B-Instruct-FP4")
    assert resolve_precision(m, load_hardware("h100_sxm"), activation_dtype="fp8").gemm_dtype("dense") == "fp8"


def test_two_compressed_tensors_groups_covering_one_module_with_different_formats_are_refused() -> None:
    """group_0 quantizes every Linear to int4; a group_1 also targeting Linear at 8 bits leaves the format unsaid
    (read before as the first group's, silently): refused naming the second group's targets."""
    raw = copy.deepcopy(_raw("RedHatAI--Meta-Llama-3.1-8B-Instruct-quantized.w4a16"))
    second = copy.deepcopy(raw["quantization_config"]["config_groups"]["group_0"])
    second["weights"]["num_bits"] = 8
    raw["quantization_config"]["config_groups"]["group_1"] = second
    with pytest.raises(InputError, match="config_groups.group_1.targets: covers .* another format") as e:
        _model("x", raw)
    assert "\n" not in str(e.value)
    # the same scheme twice says one format: read as before
    raw["quantization_config"]["config_groups"]["group_1"] = copy.deepcopy(
        raw["quantization_config"]["config_groups"]["group_0"])
    assert _model("x", raw).quant.dense == "int4"


def test_an_fp8_checkpoint_on_ampere_runs_w8a16_weight_only() -> None:
    """A100 has no FP8 rate; vLLM runs FP8 checkpoints there as W8A16 through Marlin (a100_sxm.yaml's
    weight_only_formats source): the weights stay 1 byte, the GEMMs run at the 16-bit activations' rate."""
    prec = resolve_precision(_model("RedHatAI--Llama-3.3-70B-Instruct-FP8-dynamic"), load_hardware("a100_sxm"))
    # fp8_ch: 8 bits a weight plus one 2-byte scale per 4096-wide output channel
    assert prec.fmt("dense").bits == 8 and prec.gemm_dtype("dense") == prec.activation == "bf16"


def test_an_mxfp4_checkpoint_on_cdna3_keeps_its_experts_4bit_weight_only() -> None:
    """MI300X has no FP4 rate; vLLM serves gpt-oss's MXFP4 experts there 4-bit, dequantized in the MoE kernel
    (mi300x.yaml's weight_only_formats source): stored at 4 bits (gpt-oss-120b fits one 192 GB card), not refused
    or sized as bf16; their GEMMs run at the activations' 8-bit rate, as FP4 on Hopper does (gemm_dtype)."""
    from solver.specs.model_catalog import load_model

    prec = resolve_precision(load_model("gpt-oss-120b"), load_hardware("mi300x"))
    assert prec.fmt("experts").name == "mxfp4" and prec.fmt("experts").bits == 4
    assert prec.gemm_dtype("experts") == "fp8"
