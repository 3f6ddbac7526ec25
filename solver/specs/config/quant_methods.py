"""The quant methods' own fields, read: each method writes its number format in fields of its own, and METHODS maps a
quant_method to the reader of those fields (compressed-tensors, ModelOpt, AWQ, GPTQ, fbgemm_fp8, Quark,
bitsandbytes). A reader returns Rules: the schemes (weight format, activation format) and the modules each covers,
the modules left unconverted, and the KV-cache format; quant.py applies them to the model's module groups. A value
no number format here holds is refused naming its field (Reader.fail).
"""
from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass
from typing import Any, Callable

from solver.errors import InputError
from solver.specs.config.module_names import Module
from solver.specs.dtypes import KV_FORMATS, canonical_format


@dataclass(frozen=True)
class Scheme:
    weight: str  # a number format name (solver.specs.dtypes)
    activation: str  # "bf16" (weight-only) or the quantized activations' compute dtype


Match = Callable[[Module], bool]


@dataclass(frozen=True)
class Rules:
    schemes: tuple[tuple[Match, Scheme], ...]  # the first that covers a module sets its format
    ignored: Match
    kv_cache: str | None = None
    # the engines' KV-cache dtype "auto" takes kv_cache (the checkpoint's scheme, its scales loaded) rather than the
    # model dtype: ModelOpt's kv_cache_quant_algo and compressed-tensors' kv_cache_scheme, fp8 ones only
    # (_MODELOPT_AUTO_KV, _CT_AUTO_KV; vLLM 0.34.0 (PyPI wheel) engine/arg_utils.py:2329-2332 +
    # utils/torch_utils.py:463-530, model_executor/layers/attention/attention.py 296-312; SGLang 0.5.23 mem_cache/kv_cache_dtype.py:49-58 with compressed_tensors.py:142-151); Quark's
    # kv_cache_group is used only under an FP8 --kv-cache-dtype (vLLM's QuarkConfig resolves no auto dtype)
    kv_cache_auto: bool = False
    # the field each scheme is read from (compressed-tensors' config_groups.<name>.targets), where a method holds
    # several: two that cover one module with different formats are refused naming the second's
    scheme_paths: tuple[str, ...] = ()
    # (field path, module name) of each list entry naming one module (no regex, wildcard or class): one naming a
    # module of the text model that the stack does not have is reported, not silently dropped
    names: tuple[tuple[str, str], ...] = ()


def _any_name(test: Callable[[str], bool]) -> Match:
    """A module matches where any of its names does (the aliases of a wrapped language model)."""
    return lambda m: any(test(n) for n in m.names)


def _is_or_under(p: str) -> Callable[[str], bool]:
    return lambda n: n == p or n.startswith(p + ".")


# module classes compressed-tensors targets name: every linear module, or the embedding
_CLASSES: dict[str, Match] = {"Linear": lambda m: m.kind != "embedding", "Embedding": lambda m: m.kind == "embedding"}


class Reader:
    """Typed access to quantization_config's fields; a bad value is one InputError naming the field."""

    def __init__(self, origin: str) -> None:
        self.origin = origin
        self.named: list[tuple[str, str]] = []  # plain module names the lists give (Rules.names)

    def fail(self, path: str, msg: str) -> InputError:
        return InputError(f"{self.origin}: quantization_config.{path}", msg)

    def obj(self, v: Any, path: str, optional: bool = True) -> dict[str, Any] | None:
        if v is None and optional:
            return None
        if not isinstance(v, dict):
            raise self.fail(path, f"must be an object, got {v!r}")
        return v

    def int(self, v: Any, path: str, allowed: tuple[int, ...] | None = None) -> int:
        if not isinstance(v, int) or isinstance(v, bool) or (allowed is None and v <= 0):
            raise self.fail(path, f"must be a positive integer, got {v!r}")
        if allowed is not None and v not in allowed:
            raise self.fail(path, f"{v}: no number format here holds it (held: {', '.join(map(str, allowed))})")
        return v

    def names(self, v: Any, path: str) -> list[str]:
        if v is None:
            return []
        if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
            raise self.fail(path, f"must be a list of module names, got {v!r}")
        return v

    def choice(self, v: Any, path: str, known: tuple[str, ...]) -> str:
        if not isinstance(v, str) or v.lower() not in known:
            raise self.fail(path, f"{v!r}: no number format here holds it (known: {', '.join(known)})")
        return v.lower()

    # matchers: how each method names the modules it covers or skips
    def ct_match(self, patterns: list[str], path: str) -> Match:
        """compressed-tensors: "re:" regexes (re.match: anchored at the start), module classes, or module names
        matched exactly (compressed-tensors 0.20.1 utils/match.py:442-445, match_name)."""
        tests: list[Match] = []
        for p in patterns:
            if p.startswith("re:"):
                try:
                    rx = re.compile(p[3:])
                except re.error as exc:
                    raise self.fail(path, f"{p!r} is not a regular expression ({exc})") from None
                tests.append(_any_name(lambda n, rx=rx: rx.match(n) is not None))
            elif p in _CLASSES:
                tests.append(_CLASSES[p])
            elif p[:1].isupper():  # a module class this reader cannot place in a group
                raise self.fail(path, f"{p!r}: a module class with no module group here (known: Linear, Embedding)")
            else:
                self.named.append((path, p))
                tests.append(_any_name(lambda n, p=p: n == p))
        return lambda m: any(t(m) for t in tests)

    def glob(self, patterns: list[str], path: str) -> Match:
        """ModelOpt's exclude_modules, Quark's exclude: shell-style wildcards, or module names and their children."""
        self.named += [(path, p) for p in patterns if not any(c in p for c in "*?[")]
        return _any_name(lambda n: any(fnmatch.fnmatchcase(n, p) or n == p or n.startswith(p + ".") for p in patterns))


def _substring(patterns: list[str]) -> Match:
    """transformers' / vLLM's modules_to_not_convert for AWQ, GPTQ, fbgemm_fp8, bitsandbytes: a name fragment."""
    return _any_name(lambda n: any(p in n for p in patterns))


def _layers_only(m: Module) -> bool:
    """AWQ, GPTQ and bitsandbytes quantize the decoder layers' linear modules: never the embedding or the head."""
    return m.kind == "layer"


def _linear(m: Module) -> bool:
    return m.kind != "embedding"


_SCALE_BYTES = {"torch.uint8": 1, "torch.float8_e4m3fn": 1, "torch.float8_e8m0fnu": 1, "torch.float16": 2,
                "torch.bfloat16": 2, "torch.float32": 4}
_CT_FORMATS = ("pack-quantized", "int-quantized", "float-quantized", "naive-quantized", "nvfp4-pack-quantized",
               "mxfp4-pack-quantized", "mixed-precision")


def _ct_weights(r: Reader, w: dict[str, Any], path: str, fmt: str) -> str:
    bits = r.int(w.get("num_bits"), f"{path}.num_bits", (4, 8))
    kind = r.choice(w.get("type", "int"), f"{path}.type", ("int", "float"))
    group = w.get("group_size")
    strategy = w.get("strategy")
    if strategy is None:  # compressed-tensors' own inference from group_size
        strategy = "tensor" if group is None else ("channel" if group == -1 else "group")
    strategy = r.choice(strategy, f"{path}.strategy", ("tensor", "channel", "group", "tensor_group", "block"))
    scale_dtype = w.get("scale_dtype")
    if scale_dtype is not None and str(scale_dtype) not in _SCALE_BYTES:
        raise r.fail(f"{path}.scale_dtype", f"{scale_dtype!r}: unknown scale dtype (known: {', '.join(_SCALE_BYTES)})")
    scale = _SCALE_BYTES.get(str(scale_dtype), 2)  # unset: the weights' own 16-bit dtype
    if kind == "float" and bits == 4:  # FP4 (e2m1): the group and its scale say which of the two block formats
        g = r.int(group, f"{path}.group_size", (16, 32))
        return "nvfp4" if g == 16 else "mxfp4"
    # what the values are stored in: packed at their width, or one per byte (int-quantized, naive-quantized)
    element = "fp8" if kind == "float" else ("int4" if bits == 4 and fmt in ("pack-quantized", "mixed-precision") else "int8")
    zero = "" if w.get("symmetric", True) is not False else "z"
    if strategy == "tensor":
        layout = "t"
    elif strategy == "channel":
        layout = "ch"
    elif strategy == "block":
        block = w.get("block_structure")
        if not (isinstance(block, list) and len(block) == 2 and all(isinstance(b, int) and b > 0 for b in block)):
            raise r.fail(f"{path}.block_structure", f"must be two positive integers, got {block!r}")
        layout = f"b{block[0]}x{block[1]}"
    else:
        layout = f"g{r.int(group, f'{path}.group_size')}{zero}"
    name = f"{element}_{layout}" + (f"_s{scale}" if scale != 2 else "")
    return "fp8" if name == "fp8_t" else canonical_format(name)


_ACTIVATIONS = {(8, "float"): "fp8", (8, "int"): "int8", (4, "float"): "fp4"}


def _ct_activation(r: Reader, a: Any, path: str) -> str:
    a = r.obj(a, path)
    if a is None:
        return "bf16"
    bits = r.int(a.get("num_bits"), f"{path}.num_bits", (4, 8))
    kind = r.choice(a.get("type", "int"), f"{path}.type", ("int", "float"))
    if (bits, kind) not in _ACTIVATIONS:
        raise r.fail(f"{path}.num_bits", f"{bits}-bit {kind} activations: no GEMM rate here")
    return _ACTIVATIONS[(bits, kind)]


def _kv(r: Reader, name: str, path: str) -> str:
    if name not in KV_FORMATS:
        raise r.fail(path, f"{name!r}: not a KV-cache format here (known: {', '.join(KV_FORMATS)})")
    return name


def _compressed_tensors(q: dict[str, Any], r: Reader) -> Rules:
    top = q.get("format")
    if top is not None:
        top = r.choice(top, "format", _CT_FORMATS)
    groups = r.obj(q.get("config_groups"), "config_groups", optional=False)
    if not groups:
        raise r.fail("config_groups", "is empty: no scheme says what the weights are stored in")
    schemes, paths = [], []
    for key, g in groups.items():
        path = f"config_groups.{key}"
        g = r.obj(g, path, optional=False)
        fmt = r.choice(g.get("format") or top or "pack-quantized", f"{path}.format", _CT_FORMATS)
        w = r.obj(g.get("weights"), f"{path}.weights")
        if w is None:
            continue  # an activation-only group stores no weights
        scheme = Scheme(_ct_weights(r, w, f"{path}.weights", fmt),
                        _ct_activation(r, g.get("input_activations"), f"{path}.input_activations"))
        targets = r.names(g.get("targets"), f"{path}.targets")
        if not targets:  # the scheme would cover nothing and the weights be sized 16-bit
            raise r.fail(f"{path}.targets", "is empty: the scheme names no modules it quantizes")
        schemes.append((r.ct_match(targets, f"{path}.targets"), scheme))
        paths.append(f"{path}.targets")
    kv = r.obj(q.get("kv_cache_scheme"), "kv_cache_scheme")
    kv_fmt = None
    if kv is not None:
        bits = r.int(kv.get("num_bits"), "kv_cache_scheme.num_bits", (8,))
        kv_fmt = _kv(r, _ACTIVATIONS[(bits, r.choice(kv.get("type", "int"), "kv_cache_scheme.type",
                                                    ("int", "float")))], "kv_cache_scheme")
    ignore = r.ct_match(r.names(q.get("ignore"), "ignore"), "ignore")
    return Rules(tuple(schemes), ignore, kv_fmt, kv_cache_auto=kv_fmt in _CT_AUTO_KV, scheme_paths=tuple(paths))


# the kv_cache_scheme formats the engines' KV dtype auto runs: a float 8-bit one (fp8). An integer scheme is served
# 16-bit: SGLang 0.5.23 ignores a scheme other than static per-tensor FP8 and keeps the model dtype
# (srt/layers/quantization/compressed_tensors/compressed_tensors.py:142-151, 213-224, 1276-1285); vLLM 0.34.0 loads
# none but a float 8-bit one and refuses the checkpoint (its profile's refused_kv_schemes)
_CT_AUTO_KV = ("fp8",)


# ModelOpt's quant_algo values: weight format (group size filled in) and activations
_MODELOPT = {
    "FP8": ("fp8", "fp8"), "FP8_PER_CHANNEL_PER_TOKEN": ("fp8_ch", "fp8"), "FP8_PB_WO": ("fp8_b128x128", "bf16"),
    "NVFP4": ("nvfp4", "fp4"), "W4A16_NVFP4": ("nvfp4", "bf16"), "W4A8_NVFP4_FP8": ("nvfp4", "fp8"),
    "MXFP4": ("mxfp4", "fp4"), "W4A8_MXFP4_FP8": ("mxfp4", "fp8"), "MXFP8": ("fp8_g32_s1", "fp8"),
    "W4A16_AWQ": ("int4_g{g}", "bf16"), "W4A8_AWQ": ("int4_g{g}", "fp8"),
    "W8A8_SQ_PER_CHANNEL": ("int8_ch", "int8"), "W8A16": ("int8_ch", "bf16"),
}


# the kv_cache_quant_algo values the engines' KV dtype auto resolves to the checkpoint's scheme: vLLM 0.34.0 maps
# fp8 (and nvfp4, no KV format here) and falls back to the model dtype for any other (utils/torch_utils.py:90-93,
# 500-510), SGLang 0.5.23 takes FP8 only (mem_cache/kv_cache_dtype.py:52-58): an INT8 scheme is served 16-bit
_MODELOPT_AUTO_KV = ("fp8",)


def _modelopt_scheme(r: Reader, entry: dict[str, Any], path: str) -> Scheme:
    algo = entry.get("quant_algo")
    if not isinstance(algo, str) or algo.upper() not in _MODELOPT:
        raise r.fail(f"{path}quant_algo", f"{algo!r}: no number format here holds it (known: {', '.join(_MODELOPT)})")
    weight, act = _MODELOPT[algo.upper()]
    group = entry.get("group_size")
    if "{g}" in weight:
        weight = canonical_format(weight.format(g=r.int(group if group is not None else 128, f"{path}group_size")))
    elif group is not None and weight in ("nvfp4", "mxfp4"):
        r.int(group, f"{path}group_size", (16,) if weight == "nvfp4" else (32,))
    return Scheme(weight, act)


def _modelopt(q: dict[str, Any], r: Reader) -> Rules:
    nested = r.obj(q.get("quantization"), "quantization")  # hf_quant_config.json's layout, else config.json's
    src, pre = (nested, "quantization.") if nested is not None else (q, "")
    algo = src.get("quant_algo")
    if isinstance(algo, str) and algo.upper() == "MIXED_PRECISION":
        layers = r.obj(src.get("quantized_layers"), f"{pre}quantized_layers", optional=False)
        schemes = []
        for name, entry in layers.items():
            scheme = _modelopt_scheme(r, r.obj(entry, f"{pre}quantized_layers.{name}", optional=False) or {},
                                      f"{pre}quantized_layers.{name}.")
            r.named.append((f"{pre}quantized_layers", name))
            schemes.append((_any_name(_is_or_under(name)), scheme))
    else:
        schemes = [(_linear, _modelopt_scheme(r, src, pre))]
    skip_key = "exclude_modules" if "exclude_modules" in src else "ignore"
    kv = src.get("kv_cache_quant_algo")
    kv_fmt = None if kv is None else _kv(r, str(kv).lower(), f"{pre}kv_cache_quant_algo")
    return Rules(tuple(schemes), r.glob(r.names(src.get(skip_key), pre + skip_key), pre + skip_key), kv_fmt,
                 kv_cache_auto=kv_fmt in _MODELOPT_AUTO_KV)


def _awq(q: dict[str, Any], r: Reader) -> Rules:
    bits = r.int(q.get("bits", q.get("w_bit")), "bits", (4,))
    group = r.int(q.get("group_size", q.get("q_group_size", 128)), "group_size", None) \
        if q.get("group_size", q.get("q_group_size", 128)) != -1 else -1
    zero = q.get("zero_point", True)
    if not isinstance(zero, bool):
        raise r.fail("zero_point", f"must be true or false, got {zero!r}")
    layout = "ch" if group == -1 else f"g{group}{'z' if zero else ''}"
    return Rules(((_layers_only, Scheme(canonical_format(f"int{bits}_{layout}"), "bf16")),),
                  _substring(r.names(q.get("modules_to_not_convert"), "modules_to_not_convert")))


def _gptq(q: dict[str, Any], r: Reader) -> Rules:
    def scheme(entry: dict[str, Any], path: str) -> Scheme:
        bits = r.int(entry.get("bits"), f"{path}bits", (4, 8))
        raw = entry.get("group_size", 128)
        group = -1 if raw == -1 else r.int(raw, f"{path}group_size")
        desc = entry.get("desc_act", False)
        if not isinstance(desc, bool):
            raise r.fail(f"{path}desc_act", f"must be true or false, got {desc!r}")
        # the GPTQ layout stores packed zero points per group whether or not sym is set (qzeros); desc_act only
        # reorders the groups (g_idx, 4 bytes per input row of a matrix: not counted, below 0.1%)
        return Scheme(canonical_format(f"int{bits}_{'ch' if group == -1 else f'g{group}z'}"), "bf16")

    base = scheme(q, "")
    schemes: list[tuple[Match, Scheme]] = []
    skips = list(r.names(q.get("modules_to_not_convert"), "modules_to_not_convert"))
    skip_rx: list[re.Pattern[str]] = []
    dynamic = r.obj(q.get("dynamic"), "dynamic") or {}  # GPTQModel's per-module overrides: "-:" skips, else sets
    for key, entry in dynamic.items():
        body = key[2:] if key[:2] in ("-:", "+:") else key
        try:
            rx = re.compile(body)
        except re.error as exc:
            raise r.fail(f"dynamic.{key}", f"is not a regular expression ({exc})") from None
        if key.startswith("-:"):
            skip_rx.append(rx)
        else:
            over = r.obj(entry, f"dynamic.{key}", optional=False) or {}
            schemes.append((lambda m, rx=rx: _layers_only(m) and any(rx.match(n) for n in m.names),
                            scheme({**q, **over}, f"dynamic.{key}.")))
    schemes.append((_layers_only, base))
    sub = _substring(skips)
    return Rules(tuple(schemes), lambda m: sub(m) or any(rx.match(n) for rx in skip_rx for n in m.names))


def _fbgemm_fp8(q: dict[str, Any], r: Reader) -> Rules:
    # per-output-channel FP8 weights with an fp32 scale each, activations quantized per row at run time
    return Rules(((_linear, Scheme("fp8_ch_s4", "fp8")),),
                  _substring(r.names(q.get("modules_to_not_convert"), "modules_to_not_convert")))


_QUARK_ELEMENTS = {"fp8_e4m3": "fp8", "int8": "int8", "uint8": "int8", "int4": "int4", "uint4": "int4", "fp4": "fp4",
                   "mx": "mx"}
_QUARK_ACT = {"fp8_e4m3": "fp8", "int8": "int8", "uint8": "int8", "fp4": "fp4"}


def _quark_weight(r: Reader, w: dict[str, Any], path: str) -> str:
    dtype = r.choice(w.get("dtype"), f"{path}.dtype", tuple(_QUARK_ELEMENTS))
    if dtype == "mx":  # older exports: dtype mx, the element in mx_element_dtype
        r.choice(w.get("mx_element_dtype"), f"{path}.mx_element_dtype", ("fp4",))
        dtype = "fp4"
    qscheme = r.choice(w.get("qscheme"), f"{path}.qscheme", ("per_tensor", "per_channel", "per_group"))
    element = _QUARK_ELEMENTS[dtype]
    if element == "fp4":  # MXFP4: 32-element groups sharing an e8m0 exponent
        r.choice(qscheme, f"{path}.qscheme", ("per_group",))
        r.int(w.get("group_size"), f"{path}.group_size", (32,))
        return "mxfp4"
    zero = "z" if dtype.startswith("uint") or w.get("symmetric") is False else ""
    if qscheme == "per_tensor":
        return "fp8" if element == "fp8" else f"{element}_t"
    if qscheme == "per_channel":
        return canonical_format(f"{element}_ch_s4")  # Quark stores fp32 scales
    return canonical_format(f"{element}_g{r.int(w.get('group_size'), f'{path}.group_size')}{zero}")


def _quark_scheme(r: Reader, cfg: dict[str, Any], path: str) -> Scheme | None:
    w = r.obj(cfg.get("weight"), f"{path}.weight")
    if w is None:
        return None
    a = r.obj(cfg.get("input_tensors"), f"{path}.input_tensors")
    act = "bf16"
    if a is not None:
        dtype = r.choice(a.get("dtype"), f"{path}.input_tensors.dtype", (*_QUARK_ACT, "mx"))
        act = "fp4" if dtype == "mx" else _QUARK_ACT[dtype]
    return Scheme(_quark_weight(r, w, f"{path}.weight"), act)


def _quark(q: dict[str, Any], r: Reader) -> Rules:
    schemes: list[tuple[Match, Scheme]] = []
    layers = r.obj(q.get("layer_quant_config"), "layer_quant_config") or {}
    kv_fmt = None
    kv_group = r.names(q.get("kv_cache_group"), "kv_cache_group")
    for pattern, cfg in layers.items():
        cfg = r.obj(cfg, f"layer_quant_config.{pattern}", optional=False) or {}
        if pattern in kv_group:  # the K / V projections' output quantization is the KV cache's format
            out = r.obj(cfg.get("output_tensors"), f"layer_quant_config.{pattern}.output_tensors")
            if out is not None:
                kv_fmt = _kv(r, _QUARK_ACT.get(str(out.get("dtype")), str(out.get("dtype"))),
                             f"layer_quant_config.{pattern}.output_tensors.dtype")
        scheme = _quark_scheme(r, cfg, f"layer_quant_config.{pattern}")
        if scheme is not None:
            schemes.append((r.glob([pattern], f"layer_quant_config"), scheme))
    glob = _quark_scheme(r, r.obj(q.get("global_quant_config"), "global_quant_config", optional=False) or {},
                         "global_quant_config")
    if glob is None:
        raise r.fail("global_quant_config.weight", "is not set: no format says what the weights are stored in")
    schemes.append((_linear, glob))
    return Rules(tuple(schemes), r.glob(r.names(q.get("exclude"), "exclude"), "exclude"), kv_fmt)


def _bitsandbytes(q: dict[str, Any], r: Reader) -> Rules:
    skip = _substring(r.names(q.get("llm_int8_skip_modules"), "llm_int8_skip_modules"))
    if q.get("load_in_4bit") is True and q.get("load_in_8bit") is True:
        # transformers' BitsAndBytesConfig raises on both ("only one can be used at the same time"): the weights
        # are stored one way, and reading either would guess which
        raise r.fail("load_in_8bit", "true together with load_in_4bit: a bitsandbytes checkpoint stores its "
                                     "weights in one of the two")
    if q.get("load_in_4bit") is True:
        r.choice(q.get("bnb_4bit_quant_type", "fp4"), "bnb_4bit_quant_type", ("nf4",))
        dq = q.get("bnb_4bit_use_double_quant", False)
        if not isinstance(dq, bool):
            raise r.fail("bnb_4bit_use_double_quant", f"must be true or false, got {dq!r}")
        # blocks of 64 share an absmax: fp32, or (double quantization) 8-bit with an fp32 scale per 256 blocks
        return Rules(((_layers_only, Scheme("nf4_g64dq" if dq else "nf4_g64_s4", "bf16")),), skip)
    if q.get("load_in_8bit") is True:
        # LLM.int8(): int8 rows with an fp32 scale each; outlier columns run in 16 bits, so priced weight-only
        return Rules(((_layers_only, Scheme("int8", "bf16")),), skip)
    raise r.fail("load_in_4bit", "neither load_in_4bit nor load_in_8bit is true: no format for the weights")


METHODS: dict[str, Callable[[dict[str, Any], Reader], Rules]] = {
    "compressed-tensors": _compressed_tensors, "modelopt": _modelopt, "awq": _awq, "gptq": _gptq,
    "fbgemm_fp8": _fbgemm_fp8, "quark": _quark, "bitsandbytes": _bitsandbytes,
}
