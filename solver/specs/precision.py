"""Deployment number formats: checkpoint formats, user overrides, and what the hardware can run."""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Mapping

from solver.errors import InputError
from solver.specs.dtypes import (KVFormat, NumberFormat, kv_element_bytes, kv_head_scale_bytes, number_format,
                                 spelled_activation, weight_format)
from solver.specs.model import ModelSpec

if TYPE_CHECKING:  # `inspect` lists a model's formats without loading the devices
    from solver.specs.hardware import Hardware

GROUPS = ("attention", "dense", "experts", "embedding", "lm_head", "norm")


def held_groups(model: ModelSpec) -> tuple[str, ...]:
    """The GROUPS that hold weights of `model`: routed experts only in a MoE model, the dense group (dense FFN,
    shared experts) only where the model has one (its dense_tp_size knob). A group it lacks still gets a format
    (quant.py's stand-in), which sizes nothing and is not worth a note or a line of `inspect`."""
    return tuple(g for g in GROUPS if not (g == "experts" and not model.is_moe)
                 and not (g == "dense" and not model.has_dense_module))


@dataclass(frozen=True)
class Precision:
    """Storage format per module group, activation dtype of GEMMs, and the KV cache's format (element bytes and
    the scale bytes it stores per token and KV head)."""

    weights: dict[str, NumberFormat]
    activation: str  # compute dtype of activations in GEMMs: bf16, fp8, int8
    kv_bytes: int  # a cached value's bytes
    notes: tuple[str, ...] = field(default=())
    # groups whose GEMMs dequantize their weights into 16-bit activations whatever `activation` says: FP4 weights
    # on a device without an FP4 rate (W4A16_ON_DEVICES_WITHOUT)
    a16: frozenset[str] = field(default=frozenset())
    # scale bytes the KV format stores per token and KV head beside the values (dtypes.KV_HEAD_SCALE_BYTES)
    kv_head_scale_bytes: int = 0

    @property
    def kv_format(self) -> KVFormat:
        """The KV cache's format as the layers read it (their state, the cache reads, the KV transfer)."""
        return KVFormat(self.kv_bytes, self.kv_head_scale_bytes)

    def fmt(self, group: str) -> NumberFormat:
        return self.weights[group]

    def gemm_dtype(self, group: str) -> str:
        """dtype whose peak a GEMM runs at: the lower-precision side only helps if both operands use it.

        Activations are quantized per GEMM to what that GEMM's kernel takes: with FP4 activations (an NVFP4
        MoE) an FP8 attention or dense GEMM quantizes its input to FP8 and runs W8A8, not BF16 (the 4-bit
        activation rate needs 4-bit weights)."""
        w = self.weights[group].compute
        if group in self.a16:
            return "bf16"
        if w in ("fp8", "int8") and self.activation == "fp4":
            return w
        if w in ("fp8", "int8") and self.activation in ("fp8", "int8"):
            # the activations' 8-bit format is one the device computes; the other 8-bit weight format is held
            # weight-only and converted in the kernel (FP8 weights beside INT8 W4A8 experts on A100, no FP8 rate)
            return self.activation
        if w in ("fp4", "int4") and self.activation in ("fp8", "int8"):
            return self.activation
        if w == "fp4" and self.activation == "fp4":
            return "fp4"
        return "bf16"

    def weight_only(self, group: str) -> bool:
        """A GEMM over `group` runs weight-only: quantized weights dequantized inside the kernel into 16-bit
        activations (W4A16 / W8A16: Marlin, Machete, Triton matmul_ogs), at `Factors.dequant_gemm` of the dense
        16-bit GEMM's FLOP/s."""
        return self.weights[group].quantized and self.gemm_dtype(group) == "bf16"


# Weight compute formats that run weight-only at 16 bits (W4A16: dequantized in the kernel, the 16-bit GEMM rate,
# the weight bytes 4-bit) on a device whose rates lack them. vLLM 0.34.0 on Hopper / Ampere: NVFP4 linear layers
# find no W4A4 kernel (kernels/linear/nvfp4/cutlass.py:35 and nvfp4_utils.py:60 cutlass_fp4_supported: the FP4
# CUTLASS GEMM needs sm_100+; flashinfer.py:50-53, 123, 206: sm_100 / sm_12x) and take MarlinNvFp4LinearKernel,
# "NVFP4 weight-only GEMM via Marlin (W4A16)" (nvfp4/marlin.py:19; is_fp4_marlin_supported, sm_75+,
# marlin_utils_fp4.py:32; its activations bf16 / fp16, marlin_utils_fp4.py:136); NVFP4 MoE falls through
# FlashInfer / CUTLASS (cutlass_moe.py:724: sm_100 / sm_120) to MARLIN (fused_moe/oracle/nvfp4.py:238-246,
# experts/marlin_moe.py:539: sm_75+); MXFP4 MoE keeps BF16-activation backends first (oracle/mxfp4.py:421-431:
# TRITON, MARLIN) and warns where a requested activation format falls back to BF16 (oracle/mxfp4.py:564).
# INT4 has no native rate on any device and runs W4A16 unless its activations are declared 8-bit (the checkpoint's
# input activations, --activation-dtype, a w4a8 / w4afp8 spelling): vLLM 0.34.0 serves AWQ / GPTQ int4 through
# Machete (SM 9.0) / Marlin / Triton W4A16 kernels, 16-bit activations (auto_awq.py:231, auto_gptq.py:194;
# kernels/linear/__init__.py:541-555), and its one CUDA W4A8 kernel, CutlassW4A8LinearKernel, takes FP8
# activations on SM 9.0 only, for checkpoints that declare them (mixed_precision/cutlass.py:37-41; w4afp8.py).
# FP4 is not listed, measured: with ("fp4",) gpt-oss-120b's MXFP4 experts on H100 / H200 (the only weight-only rows of the
# calibration CSV) fit dequant_gemm 0.506 of the 16-bit rate, the same FLOP/s as the FP8 grouped GEMM's 0.2528 of
# the FP8 rate, and the rows can tell the two pricings apart only across models: held out, DeepSeek's experts
# lost the gpt-oss rows that held grouped_gemm (refitted without DeepSeek 0.256 -> 0.323), aggregated
# leave-one-model-out TTFT went 31.2% -> 34.8% and the disaggregated complete rows held out by model 22.5% ->
# 34.6% (benchmarks/README.md, "Stop 36: W4A16 on devices without FP4"). FP4 on these devices stays priced at the
# activations' 8-bit rate (the W4A8 rule of gemm_dtype) until rows of a second weight-only model tell the pricings
# apart; the mechanism stays for the formats listed here.
W4A16_ON_DEVICES_WITHOUT: tuple[str, ...] = ("int4",)


# Formats that a published checkpoint of a MoE model applies to its routed experts only: the NVFP4 MoE
# checkpoints quantize the experts and keep attention and the dense GEMMs (dense FFN layers, shared experts) in
# the base checkpoint's format (issue 15, mechanism 6; facts/measurements.md #10 "FP4 MoE"). Measured on the
# calibration CSV: leave-one-model-out TTFT median 32.4% -> 31.3%, TPOT 13.5% -> 13.1% (benchmarks/README.md).
EXPERT_ONLY_FORMATS = ("nvfp4",)


def experts_only(prec: Precision, model: ModelSpec, hw: Hardware) -> Precision:
    """A measured deployment's GEMM format, where it is one of EXPERT_ONLY_FORMATS on a MoE model, quantizes the
    routed experts only: the attention and dense groups keep the model's own checkpoint format (16-bit formats
    stay 16-bit; one the hardware cannot compute is served as bf16, as resolve_precision does), and a note says
    so. A dense model, or a format outside the list, is returned unchanged."""
    if not model.is_moe or prec.fmt("experts").name not in EXPERT_ONLY_FORMATS:
        return prec

    def own(group: str) -> NumberFormat:
        fmt = number_format(getattr(model.quant, group), f"quantization_config.{group}")
        return fmt if runs_natively(hw, fmt) or runs_weight_only(hw, fmt) else number_format("bf16")

    kept = {g: own(g) for g in ("attention", "dense") if prec.fmt(g).name in EXPERT_ONLY_FORMATS}
    kept = {g: f for g, f in kept.items() if f.name != prec.fmt(g).name}
    if not kept:
        return prec
    note = ", ".join(f"{g} stays {f.name} (a {prec.fmt('experts').name} MoE checkpoint quantizes the routed experts only)"
                     for g, f in kept.items())
    return replace(prec, weights={**prec.weights, **kept}, notes=(*prec.notes, note), a16=prec.a16 - set(kept))


def listed_by_name(hw: Hardware, fmt: NumberFormat) -> bool:
    """The device lists `fmt` itself weight-only (nvfp4), not its compute dtype (fp4, int4: weight_only_formats'
    dtype entries)."""
    return fmt.name != fmt.compute and fmt.name in hw.weight_only_formats


def runs_natively(hw: Hardware, fmt: NumberFormat) -> bool:
    """`fmt`'s GEMMs run at the device's peak for its compute dtype: a 16/32-bit format, or a quantized one whose
    dtype the device computes, unless the format itself is listed weight-only (MI355X's FP4 rate is MXFP4's: an
    NVFP4 checkpoint is dequantized there)."""
    return fmt.compute in ("bf16", "fp16", "fp32") or \
        (hw.supports(fmt.compute) and not listed_by_name(hw, fmt))


def runs_weight_only(hw: Hardware, fmt: NumberFormat) -> bool:
    """`fmt` is stored as published and dequantized in the GEMM kernel: its name or its compute dtype is among the
    device's weight_only_formats, and it does not run natively."""
    return not runs_natively(hw, fmt) and (listed_by_name(hw, fmt) or fmt.compute in hw.weight_only_formats)


def _refuse_format(hw: Hardware, fmt: NumberFormat, field: str) -> InputError:
    """One line naming the field, the format and the device where nothing on the device runs the format."""
    have = ", ".join(sorted(hw.peak_flops))
    wo = f"; weight-only: {', '.join(hw.weight_only_formats)}" if hw.weight_only_formats else ""
    if fmt.name == fmt.compute:  # the dtype itself (fp8): what the device lacks is its compute
        return InputError(field, f"{hw.name} has no {fmt.compute} support (it has {have}{wo})")
    why = (f"its {fmt.compute} rate is for another {fmt.compute} format" if hw.supports(fmt.compute)
           else f"no {fmt.compute} support")
    return InputError(field, f"{hw.name} runs no {fmt.name}: {why} (it has {have}{wo})")


def _admits(spelled: str) -> set[str]:
    """The activation dtypes a spelled activation (dtypes.ACTIVATION_SPELLINGS) admits."""
    return {"8bit": {"fp8", "int8"}, "bf16": {"bf16", "fp16"}}.get(spelled, {spelled})


def _device_activation(spelled: str, hw: Hardware, field: str) -> str:
    """The activation dtype of a format spelled with its activations (w4a8: the device's 8-bit rate, FP8 before
    INT8; w4afp8: fp8; w4a16: bf16)."""
    if spelled in ("bf16", "fp16"):
        return spelled
    if spelled != "8bit":  # w4afp8: the flag names fp8 activations, which the device must compute
        if not hw.supports(spelled):
            raise InputError(field, f"{hw.name} has no {spelled} rate for the activations this format names (it "
                                    f"has {', '.join(sorted(hw.peak_flops))}; w4a8 takes its 8-bit rate)")
        return spelled
    for cand in ("fp8", "int8"):
        if hw.supports(cand):
            return cand
    raise InputError(field, f"{hw.name} has no 8-bit rate for W4A8 activations (it has {', '.join(sorted(hw.peak_flops))})")


def _model_dtype_bytes(fmt: NumberFormat) -> int:
    """Bytes of the model dtype that serves `fmt`: its own width for an unquantized format (fp32, bf16, fp16),
    16 bits for a quantized one (its GEMMs dequantize into 16-bit activations)."""
    return int(fmt.bits // 8) if not fmt.quantized else 2


# where the user's format choices come from by default: the command line's flags
USER_FLAGS = {"weight_dtype": "--weight-dtype", "moe_weight_dtype": "--moe-weight-dtype", "kv_dtype": "--kv-dtype"}


def resolve_precision(
    model: ModelSpec,
    hw: Hardware,
    weight_dtype: str | None = None,
    moe_weight_dtype: str | None = None,
    kv_dtype: str | None = None,
    activation_dtype: str | None = None,
    fields: Mapping[str, str] | None = None,
) -> Precision:
    """Formats for a deployment. User choices win; otherwise the checkpoint's, where the hardware runs them.

    A checkpoint format the hardware cannot run (FP8 on Ascend) is served in bf16, and the note says so.
    A format the user names that the hardware lacks is an error. `fields` names where each choice came from
    (weight_dtype, moe_weight_dtype, kv_dtype -> a file's key) for errors and notes; default: the flags.
    """
    notes: list[str] = []
    weight_only_notes: list[tuple[int, NumberFormat, str]] = []  # (where in notes, format, the note's start)
    q = model.quant
    where = {**USER_FLAGS, **(fields or {})}

    def check_user(name: str | None, flag: str) -> NumberFormat | None:
        if name is None:
            return None
        fmt = weight_format(name, flag)
        if not runs_natively(hw, fmt):
            if runs_weight_only(hw, fmt):
                # weight-only: stored in this format, dequantized in the GEMM kernel, computed at the activation
                # dtype (Precision.gemm_dtype maps 4-bit weights to the 8-bit or bf16 activation rate) or, for a
                # format listed by name, at 16 bits (_weight_only_16)
                why = (f"{hw.name}'s {fmt.compute} rate is for another {fmt.compute} format" if hw.supports(fmt.compute)
                       else f"{hw.name} has no {fmt.compute} compute")
                # the user's own spelling (w4a8, not the stored format int4 it maps to), so the note names what was
                # typed; the rate its GEMMs run at is known once the activations are chosen (below)
                weight_only_notes.append((len(notes), fmt, f"{flag} {name}: {why}; weight-only (dequantized in-kernel"))
                return fmt
            raise _refuse_format(hw, fmt, flag)
        return fmt

    said = {k: a for k in ("weight_dtype", "moe_weight_dtype")
            if (n := {"weight_dtype": weight_dtype, "moe_weight_dtype": moe_weight_dtype}[k]) is not None
            and (a := spelled_activation(n)) is not None}
    if said:
        field, spelled = next(iter(said.items()))
        if len(set(said.values())) > 1 or (activation_dtype is not None and number_format(
                activation_dtype, "--activation-dtype").compute not in _admits(spelled)):
            raise InputError(where[field], "names its GEMMs' activations, which another choice contradicts; give "
                                           "one activation dtype")
        if activation_dtype is None:
            activation_dtype = _device_activation(spelled, hw, where[field])
    if moe_weight_dtype is not None and not model.is_moe:  # it would be dropped unread
        raise InputError(where["moe_weight_dtype"], f"{model.name} has no routed experts; use "
                                                    f"{where['weight_dtype'].rpartition(': ')[2]}")
    user_w = check_user(weight_dtype, where["weight_dtype"])
    user_moe = check_user(moe_weight_dtype, where["moe_weight_dtype"])
    keep32 = user_w is not None and user_w.name == "fp32"  # the engine's dtype: every fp32 group stays at 32
    held = held_groups(model)
    halved: set[str] = set()  # groups stored in fp32 and served at 16 bits

    def from_ckpt(name: str, group: str) -> NumberFormat:
        fmt = number_format(name, f"quantization_config.{group}")
        if fmt.name == "fp32" and keep32:
            # fp32 is not a quantization of the linear layers but the engine's load dtype (--dtype float32):
            # the embedding and head of an fp32 checkpoint stay at 32 bits with the rest
            return fmt
        if fmt.name == "fp32":
            # engines load a 32-bit checkpoint at 16 bits unless told otherwise (vLLM's and SGLang's --dtype auto:
            # fp16 for fp32 checkpoints); holding and pricing it at 32 bits would double its weights
            halved.add(group)
            return number_format("bf16")
        if runs_natively(hw, fmt):
            return fmt
        if runs_weight_only(hw, fmt):
            # stored as published and dequantised in the GEMM (e.g. MXFP4 experts on Hopper)
            if group in held:  # MI355X has an FP4 rate, MXFP4's: an NVFP4 checkpoint is dequantized there
                why = (f"its {fmt.compute} rate is for another {fmt.compute} format" if hw.supports(fmt.compute)
                       else f"no native {fmt.compute}")
                notes.append(f"{group} weights stay {fmt.name} (weight-only on {hw.name}: {why})")
            return fmt
        if group in held and (fmt.name in hw.unloaded_formats or fmt.compute in hw.unloaded_formats):
            raise InputError(f"quantization_config.{group}", f"{model.name}'s {fmt.name} checkpoint: no engine on "
                                                             f"{hw.name} loads {fmt.name} (serve a bf16 checkpoint)")
        if group in held:
            notes.append(f"{group} weights are {fmt.name} in the checkpoint but {hw.name} has no {fmt.compute}; "
                         "served as bf16 (pass --weight-dtype/--moe-weight-dtype to choose)")
        return number_format("bf16")

    weights = {
        "attention": user_w or from_ckpt(q.attention, "attention"),
        "dense": user_w or from_ckpt(q.dense, "dense"),
        "experts": user_moe or user_w or from_ckpt(q.experts, "experts"),
        "embedding": from_ckpt(q.embedding, "embedding"),
        "lm_head": from_ckpt(q.lm_head, "lm_head"),
        "norm": number_format("fp32" if keep32 else "bf16"),  # the engine's dtype holds the norms too
    }
    converted: dict[tuple[str, str], dict[str, list[str]]] = {}  # the user's format where the checkpoint stores another
    for group, user, key in (("attention", user_w, "weight_dtype"), ("dense", user_w, "weight_dtype"),
                             ("experts", user_moe or user_w, "moe_weight_dtype" if user_moe else "weight_dtype")):
        fmt = number_format(getattr(q, group), f"quantization_config.{group}")
        stored = fmt.name
        # the same element at another scale layout (fp8 on an FP8-block checkpoint) names the checkpoint's family
        if user is not None and group in held and user.quantized and (fmt.bits, fmt.compute) != (user.bits, user.compute):
            typed = str(moe_weight_dtype if key == "moe_weight_dtype" else weight_dtype)
            converted.setdefault((key, typed), {}).setdefault(stored, []).append(group)
    for (key, typed), stored_as in converted.items():
        # a 16-bit checkpoint is quantized at load by an engine that can (vLLM / SGLang --quantization fp8, which
        # the launch prints), else it is served from a checkpoint converted to the format (the model path)
        stores = "; ".join(f"{f} ({', '.join(gs)})" for f, gs in stored_as.items())
        notes.append(f"{where[key]} {typed}: the checkpoint stores {stores}; planned as served in {typed}, quantized "
                     f"at load where the engine can (--format launch says) or from a checkpoint converted to it")
    if halved:
        notes.append("the checkpoint's fp32 weights are served at 16 bits, as the engines' default dtype does (pass "
                     "--weight-dtype fp32 to hold them at 32)")
    a16 = _weight_only_16(weights, hw, q.activation if user_w is None and user_moe is None else None,
                          activation_dtype)
    if activation_dtype is not None:
        act = number_format(activation_dtype, "--activation-dtype").compute
        if act not in ("bf16", "fp16") and not hw.supports(act):
            raise InputError("--activation-dtype", f"{hw.name} has no {act} support")
    elif q.activation is not None and user_w is None and user_moe is None and \
            (q.activation == "bf16" or hw.supports(q.activation)):
        # the checkpoint says what its GEMMs take (quantization_config's input activations): weight-only
        # (W4A16: 16-bit activations, the 16-bit rate with 4-bit weight bytes) or W8A8 / W4A4 where the hardware
        # has that rate; Precision.gemm_dtype pairs it with each group's weights
        act = q.activation
    else:
        # W8A8-style: 8-bit weights run with 8-bit activations where the hardware has that rate. NVFP4 is W4A4
        # (its GEMMs quantize their input to FP4) where the hardware has the FP4 rate, whatever other groups hold:
        # activations are quantized per GEMM, so FP8 dense GEMMs beside NVFP4 experts still run W8A8
        # (Precision.gemm_dtype), as the NVFP4 MoE checkpoints run (an FP8 dense group must not drag the experts
        # down to the FP8 rate: `--moe-weight-dtype nvfp4` on an FP8 checkpoint is the published R1-FP4 layout)
        low = {w.compute for g, w in weights.items() if g in ("dense", "experts") and w.quantized and g not in a16}
        nvfp4 = any(w.name == "nvfp4" and runs_natively(hw, w) for g, w in weights.items()
                    if g in ("dense", "experts"))
        act = "bf16"
        if nvfp4:
            act = "fp4"
        for cand in ("fp8", "int8"):
            if act == "bf16" and cand in low and hw.supports(cand):
                act = cand
        if act == "bf16" and "fp4" in low:
            # FP4 weights on a device without the FP4 rate take the FP8 rate where the device has it (Stop 36's
            # measured stand-in, H100 / H200); never INT8: no engine's FP4 kernel takes INT8 activations (on A100
            # MXFP4 / NVFP4 run Marlin W4A16), and the INT8 rate priced A100's FP4 GEMMs above its BF16 peak
            act = "fp8" if hw.supports("fp8") else "bf16"
    if kv_dtype is not None:
        kv = kv_element_bytes(kv_dtype, where["kv_dtype"])
        kv_scale = kv_head_scale_bytes(kv_dtype)
        kv_fmt = number_format(kv_dtype, where["kv_dtype"]).compute
        if kv == 1 and not hw.supports(kv_fmt) and kv_fmt not in hw.kv_storage_formats:
            stored = f"; stores {', '.join(hw.kv_storage_formats)}" if hw.kv_storage_formats else ""
            raise InputError(where["kv_dtype"], f"{hw.name} has no {kv_fmt} support (no {kv_fmt} rate{stored}), "
                                                "and no engine stores its KV cache in it")
        if kv == 1 and not hw.supports(kv_fmt):
            notes.append(f"{where['kv_dtype']} {kv_fmt}: {hw.name} stores the KV cache in {kv_fmt} (1 byte) and "
                         "dequantizes it into 16-bit attention math")
    else:
        # the engines' KV dtype "auto" is the model dtype: an fp32 model caches K and V in fp32 (vLLM's
        # --kv-cache-dtype auto under --dtype float32); a quantized model's activations, and so its KV, stay 16-bit
        kv, kv_scale = _model_dtype_bytes(weights["attention"]), 0
        ckpt_kv = q.kv_cache
        if ckpt_kv is not None and kv_element_bytes(ckpt_kv, "quantization_config.kv_cache_scheme") < kv:
            held_kv = hw.supports(number_format(ckpt_kv).compute) or number_format(ckpt_kv).compute in \
                hw.kv_storage_formats
            if q.kv_cache_auto and held_kv:
                # the engines' KV dtype auto takes the checkpoint's scheme (QuantSpec.kv_cache_auto)
                # the checkpoint's scheme is statically scaled (its scales are weights): no per-token scale bytes
                # beside the values, unlike an engine's own per-token-head int8 (dtypes.KV_HEAD_SCALE_BYTES)
                kv = kv_element_bytes(ckpt_kv, "quantization_config.kv_cache_scheme")
                notes.append(f"the checkpoint's {ckpt_kv} KV-cache scheme ({q.method}) is what the engines' KV dtype "
                             f"auto runs: the KV cache is priced at {8 * kv} bits (pass --kv-dtype bf16 for 16)")
            elif kv_head_scale_bytes(ckpt_kv):
                # a format whose engine cache computes its own scales per token and KV head (dtypes.KV_HEAD_SCALE_BYTES)
                # loads no checkpoint scales: an int8 cache (vLLM's int8_per_token_head) quantizes each token as it
                # is written, and an engine without it has no int8 cache to use them in
                notes.append(f"the checkpoint carries {ckpt_kv} KV-cache scales (quantization_config), which no "
                             f"engine's KV cache loads: the KV cache is priced at {8 * kv} bits, the engines' "
                             f"default; --kv-dtype {ckpt_kv} prices a {ckpt_kv} cache whose scales the engine "
                             "computes per token and KV head, where the engine has one")
            else:
                # the scales are used where the KV-cache dtype is set to the format (vLLM / SGLang --kv-cache-dtype)
                notes.append(f"the checkpoint carries {ckpt_kv} KV-cache scales (quantization_config); the KV cache "
                             f"is priced at {8 * kv} bits, the engines' default: pass --kv-dtype {ckpt_kv} to use "
                             "them")
        if kv > 2:
            notes.append(f"the KV cache is priced at {8 * kv} bits, the engines' KV dtype auto following the model "
                         "dtype (pass --kv-dtype to choose); activations, the recurrent and convolution states, "
                         "collective payloads and the GEMM rate stay priced at 16 bits")
    prec = Precision(weights=weights, activation=act, kv_bytes=kv, notes=(), a16=a16, kv_head_scale_bytes=kv_scale)
    for at, fmt, start in reversed(weight_only_notes):
        # the rate the user's weight-only format runs at, named: 16-bit, or the 8-bit activations' (FP4 on Hopper)
        dtype = next(prec.gemm_dtype(g) for g in ("experts", "dense", "attention") if weights[g] is fmt)
        notes.insert(at, f"{start}{' into 16-bit GEMMs' if dtype in ('bf16', 'fp16') else f', GEMMs at the {dtype} rate'})")
    return Precision(weights=weights, activation=act, kv_bytes=kv, notes=tuple(notes), a16=a16,
                     kv_head_scale_bytes=kv_scale)


def _weight_only_16(weights: Mapping[str, NumberFormat], hw: Hardware, ckpt_act: str | None,
                    user_act: str | None) -> frozenset[str]:
    """The GEMM groups that run W4A16 (W4A16_ON_DEVICES_WITHOUT): their weights' compute format is one the device
    has no rate for. None where the user names the activations (--activation-dtype), or where the checkpoint
    says its 4-bit GEMMs take 8-bit activations the device has (W4A8: every quantized group 4-bit). A format the
    device lists weight-only by name (NVFP4 on MI355X, whose FP4 rate is MXFP4's) always: the engines dequantize it
    into a 16-bit GEMM (vLLM 0.34.0 on ROCm: EmulationNvFp4LinearKernel, "dequant -> BF16 matmul", is the one NVFP4
    linear kernel, kernels/linear/__init__.py:611; the MoE's EMULATION backend)."""
    gemm = {g: w for g, w in weights.items() if g in ("attention", "dense", "experts")}
    named = frozenset(g for g, w in gemm.items() if listed_by_name(hw, w) and runs_weight_only(hw, w))
    if user_act is not None:
        return named
    if ckpt_act in ("fp8", "int8") and hw.supports(ckpt_act) and \
            all(w.bits <= 4 for w in gemm.values() if w.quantized):
        return named
    return named | frozenset(g for g, w in gemm.items()
                             if w.compute in W4A16_ON_DEVICES_WITHOUT and not hw.supports(w.compute))
