"""Number formats: bytes per element, scale overhead, and the compute dtype a format runs at.

Scale overhead is expressed per parameter for block/group-scaled formats; the exact count depends on the
matrix shape only through ceil() at the edges, which is below 0.1% for the shapes of real models.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from solver.errors import InputError


@dataclass(frozen=True)
class NumberFormat:
    name: str
    bits: float  # storage bits per element
    scale_bytes_per_param: float  # bytes of scales/zero-points per element
    compute: str  # dtype whose peak FLOP/s a GEMM in this format runs at

    @property
    def bytes_per_param(self) -> float:
        return self.bits / 8 + self.scale_bytes_per_param

    @property
    def quantized(self) -> bool:
        """Not one of the plain floating dtypes an engine loads a model in (its --dtype, not its --quantization)."""
        return self.name not in MODEL_DTYPES


# the unquantized formats: a model dtype (the engine's load dtype), not a quantization method
MODEL_DTYPES = ("fp32", "bf16", "fp16")

FORMATS: dict[str, NumberFormat] = {
    f.name: f
    for f in (
        NumberFormat("fp32", 32, 0.0, "fp32"),
        NumberFormat("bf16", 16, 0.0, "bf16"),
        NumberFormat("fp16", 16, 0.0, "fp16"),
        # per-tensor scaled FP8: one scale per matrix, negligible
        NumberFormat("fp8", 8, 0.0, "fp8"),
        # DeepSeek-style 128x128 blocks with one fp32 scale each (config weight_block_size [128, 128])
        NumberFormat("fp8_block", 8, 4 / (128 * 128), "fp8"),
        # W8A8 int8 with a per-output-channel fp32 scale; 4 bytes per row of ~4-7K inputs
        NumberFormat("int8", 8, 4 / 4096, "int8"),
        # int4 weights, group 128, bf16 scale (W4A8 / W4A16 recipes)
        NumberFormat("int4", 4, 2 / 128, "int4"),
        # OCP MXFP4: 32-element blocks share one 8-bit exponent (gpt-oss checkpoints)
        NumberFormat("mxfp4", 4, 1 / 32, "fp4"),
        # NVFP4: 16-element blocks with an fp8 scale (+ a per-tensor fp32 scale, negligible)
        NumberFormat("nvfp4", 4, 1 / 16, "fp4"),
        NumberFormat("fp4", 4, 1 / 16, "fp4"),
        # FP8 with a 5-bit exponent: a KV-cache format only (KV_ONLY), one byte a value as fp8 (e4m3) is; vLLM 0.34.0
        # caches it in a uint8 tensor (utils/torch_utils.py:49), SGLang 0.5.23 in torch.float8_e5m2
        # (srt/mem_cache/kv_cache_dtype.py:60-66). Its own name, not fp8's alias: an engine without the spelling
        # must refuse it, not launch e4m3 (LaunchArg.spelling)
        NumberFormat("fp8_e5m2", 8, 0.0, "fp8"),
    )
}
# the formats the engines cache K and V in but load no weights in
KV_ONLY = ("fp8_e5m2",)

# Scaled formats a quantized checkpoint names beyond the table above, spelled `<element>_<layout>[_s<bytes>]`:
#   t         one scale per tensor (negligible)
#   ch        one scale per output channel (row), taken as a row of ROW_INPUTS inputs, like int8 above
#   g<N>[z]   one scale per N inputs, z: plus a zero point of the element's width (AWQ / GPTQ / asymmetric)
#   g<N>dq    bitsandbytes double quantization: an 8-bit absmax per N, an fp32 scale per 256 of those
#   b<M>x<N>  one scale per M x N block
# _s<bytes>: bytes of one scale (default 2: the fp16/bf16 scales AWQ, GPTQ and compressed-tensors store).
# A spelling equal to a named format (int4_g128 = int4, int8_ch_s4 = int8, fp8_b128x128_s4 = fp8_block) is that
# format (canonical_format). nf4 (bitsandbytes' 16-value normal-float table) has no native GEMM anywhere: its
# compute class is the 4-bit weight-only one (int4), dequantized in the kernel.
ELEMENTS = {"int4": (4, "int4"), "int8": (8, "int8"), "fp8": (8, "fp8"), "nf4": (4, "int4")}
ROW_INPUTS = 4096
_SCALED = re.compile(r"(?P<el>int4|int8|fp8|nf4)_(?:(?P<t>t)|(?P<ch>ch)|g(?P<g>\d+)(?P<gz>z|dq)?|b(?P<bm>\d+)x(?P<bn>\d+))"
                     r"(?:_s(?P<s>[124]))?$")


def _scaled(name: str) -> NumberFormat | None:
    m = _SCALED.match(name)
    if m is None:
        return None
    bits, compute = ELEMENTS[m["el"]]
    scale = int(m["s"] or 2)
    if m["t"]:
        per = 0.0
    elif m["ch"]:
        per = scale / ROW_INPUTS
    elif m["g"]:
        if int(m["g"]) <= 0:
            return None
        per = {"z": (scale + bits / 8), "dq": 1 + 4 / 256}.get(m["gz"] or "", scale) / int(m["g"])
    else:
        if int(m["bm"]) <= 0 or int(m["bn"]) <= 0:
            return None
        per = scale / (int(m["bm"]) * int(m["bn"]))
    return NumberFormat(name, bits, per, compute)


def canonical_format(name: str) -> str:
    """The table's name for a scaled spelling that stores the same bytes and computes alike, else the spelling."""
    fmt = number_format(name)
    for named in FORMATS.values():
        if (named.bits, named.compute) == (fmt.bits, fmt.compute) and \
                abs(named.scale_bytes_per_param - fmt.scale_bytes_per_param) < 1e-12:
            return named.name
    return fmt.name


# KV cache formats: their element bytes, and (KV_HEAD_SCALE_BYTES) the scales a format packs per token and KV head.
KV_FORMATS = ("bf16", "fp16", "fp8", "fp8_e5m2", "int8")
# Scale bytes a format stores beside K and V per token and KV head: int8 (vLLM 0.34.0's int8_per_token_head, the only
# engine spelling of it) packs one fp32 for the head's K and one for its V inline after the data
# (v1/attention/backends/triton_attn.py:309-319: content = (head_size + head_size_v) x 1 B + 2 x 4 B). fp8 KV is
# per-tensor scaled (negligible).
KV_HEAD_SCALE_BYTES = {"int8": 8}


@dataclass(frozen=True)
class KVFormat:
    """A KV-cache format as the layers read it: the bytes of each cached value, and the scale bytes the format
    stores per token and KV head beside them (KV_HEAD_SCALE_BYTES), which a GQA layer adds per cached head."""

    element_bytes: int
    head_scale_bytes: int = 0


# a 16-bit cache without scales: the format a caller reading a layer's state for its shape (what grows, what is
# constant) or for a 16-bit state (recurrent, convolution) passes
KV16 = KVFormat(2)


def kv_head_scale_bytes(name: str) -> int:
    """The scale bytes per token and KV head the KV format `name` stores (KV_HEAD_SCALE_BYTES; 0 for most)."""
    return KV_HEAD_SCALE_BYTES.get(number_format(name).name, 0)


# Weight-format spellings that also name the GEMMs' activations: int4 weights with 8-bit activations (the device's
# 8-bit rate: "8bit"), FP8 activations (the w4afp8 recipe), or 16-bit ones (weight-only). A plain int4 runs W4A16
# (precision.W4A16_ON_DEVICES_WITHOUT).
ACTIVATION_SPELLINGS = {"w4a8": "8bit", "w4afp8": "fp8", "w4a16": "bf16"}


def format_key(name: str) -> str:
    """A number-format name as the catalog and the engine profiles spell it (lower case, `_` for `-`: FP8 is fp8,
    fp8-block is fp8_block); the input boundary (the command line's DTYPE) gives every reader this spelling."""
    return name.strip().lower().replace("-", "_")


def given_dtype(value: str) -> str:
    """A dtype as a user gives it, every name in format_key's spelling: the one rule of the input boundaries (the
    command line's DTYPE, the Python API, a deployment file's quant). A per-hardware value (`atlas_a3=INT8`,
    comma-separated, a sweep's) keeps its hardware's name as typed; an empty part stays as given (its reader
    refuses it)."""
    def one(part: str) -> str:
        key, sep, val = part.rpartition("=")
        return f"{key}{sep}{format_key(val)}" if val.strip() else part

    return ",".join(one(p) for p in value.split(","))


def spelled_activation(name: str) -> str | None:
    """The activations a weight-format spelling names (ACTIVATION_SPELLINGS), else None."""
    return ACTIVATION_SPELLINGS.get(format_key(name))


def spelled_with(weights: str | None, activations: str | None) -> str | None:
    """`weights` spelled with the 8-bit activations a deployment declares beside them (int4 with int8: w4a8, with
    fp8: w4afp8; ACTIVATION_SPELLINGS), so the planner prices the GEMMs it runs; a format without such a spelling,
    or 16-bit activations (the plain format's default), as given."""
    if weights is None or activations is None:
        return weights
    act = activations.lower()
    if act not in ("fp8", "int8"):
        return weights
    names = [s for s in ACTIVATION_SPELLINGS if number_format(s) == number_format(weights)]
    exact = [s for s in names if ACTIVATION_SPELLINGS[s] == act]
    return next(iter(exact or [s for s in names if ACTIVATION_SPELLINGS[s] == "8bit"]), weights)


def number_format(name: str, field: str = "dtype") -> NumberFormat:
    key = format_key(name)
    aliases = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32", "e4m3": "fp8", "w8a8": "int8",
               "fp8_e4m3": "fp8", **{k: "int4" for k in ACTIVATION_SPELLINGS}}
    key = aliases.get(key, key)
    if key not in FORMATS:
        scaled = _scaled(key)
        if scaled is not None:
            return scaled
        raise InputError(field, f"unknown number format {name!r}; known: {', '.join(FORMATS)}")
    return FORMATS[key]


def weight_format(name: str, field: str) -> NumberFormat:
    """number_format for a weight format: a KV-only format (KV_ONLY) is refused, naming the field."""
    fmt = number_format(name, field)
    if fmt.name in KV_ONLY:
        raise InputError(field, f"{name!r} is a KV-cache format only (pass it as --kv-dtype); weight formats: "
                                f"{', '.join(f for f in FORMATS if f not in KV_ONLY)}")
    return fmt


def kv_element_bytes(name: str, field: str = "kv_dtype") -> int:
    fmt = number_format(name, field)
    if fmt.name not in KV_FORMATS:
        raise InputError(field, f"{name!r} is not a KV-cache format; use one of {', '.join(KV_FORMATS)}")
    return int(fmt.bits // 8)
