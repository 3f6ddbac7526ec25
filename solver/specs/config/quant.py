"""Checkpoint number formats per module group, from quantization_config.

Each quant method writes the format in its own fields; _METHODS maps a quant_method to the reader of those fields.
A reader returns rules (_Rules): the schemes (weight format, activation format) and the modules each covers, the
modules left unconverted, and the KV-cache format. The rules are applied to the modules the read layer stack holds
(module_names.py: each layer kind's linear modules, named as the family's checkpoints name them, every layer and
MTP layer), and a group takes the format most of its modules hold (a split is noted). A format no number format here holds is refused naming the field. fp8 and mxfp4 (DeepSeek / Kimi /
MiniMax / gpt-oss checkpoints) keep their own branch, unchanged.
"""
from __future__ import annotations

import fnmatch
import re
from collections import Counter
from dataclasses import dataclass, replace
from typing import Any, Callable

from solver.errors import InputError
from solver.specs.config.module_names import Module, ModuleSet
from solver.specs.dtypes import KV_FORMATS, canonical_format, number_format


@dataclass(frozen=True)
class QuantSpec:
    """Checkpoint number formats per module group (what the published weights are stored in)."""

    method: str = "none"  # quant_method from the config, or "none"
    attention: str = "bf16"
    dense: str = "bf16"  # dense FFN and shared experts
    experts: str = "bf16"  # routed experts
    embedding: str = "bf16"
    lm_head: str = "bf16"
    block_size: tuple[int, int] | None = None
    # the activations the checkpoint's quantized GEMMs take: "bf16" weight-only (W4A16), or fp8 / int8 / fp4
    # (W8A8, W4A4); None where the method does not say (fp8, mxfp4: resolve_precision's rule decides)
    activation: str | None = None
    kv_cache: str | None = None  # the KV-cache format the checkpoint carries scales for (kv_cache_scheme)


# torch_dtype / dtype (the weights' storage without a quantization_config): torch's names and their aliases
_TORCH_DTYPES = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32", "bf16": "bf16", "fp16": "fp16",
                 "fp32": "fp32", "half": "fp16", "float": "fp32"}
_EXPERT_DTYPE = {"fp4": "mxfp4", "mxfp4": "mxfp4", "fp8": "fp8_block", "bf16": "bf16"}
# quant methods whose weights no number format of the precision model holds, with what they store: refused by name
# rather than read as 16-bit weights (memory and bandwidth would be wrong several times over)
_UNREPRESENTABLE = {
    "bitnet": "ternary weights (values in {-1, 0, 1}, 1.58 bits, packed four to a byte with one scale per tensor)",
}


def read_quant(cfg: dict[str, Any], origin: str, warnings: list[str],
               modules: Callable[[], ModuleSet]) -> QuantSpec:
    """`modules`: the model's modules (built only for a quantization_config whose lists are matched)."""
    spec = _read_quant(cfg, origin, warnings, modules)
    expert = cfg.get("expert_dtype")  # DeepSeek-V4: routed experts stored apart from quantization_config
    if expert is not None:
        if str(expert) not in _EXPERT_DTYPE:
            raise InputError(f"{origin}: expert_dtype", f"unknown format {expert!r}")
        spec = replace(spec, experts=_EXPERT_DTYPE[str(expert)])
    return spec


@dataclass(frozen=True)
class Scheme:
    weight: str  # a number format name (solver.specs.dtypes)
    activation: str  # "bf16" (weight-only) or the quantized activations' compute dtype


Match = Callable[[Module], bool]


@dataclass(frozen=True)
class _Rules:
    schemes: tuple[tuple[Match, Scheme], ...]  # the first that covers a module sets its format
    ignored: Match
    kv_cache: str | None = None
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


class _Reader:
    """Typed access to quantization_config's fields; a bad value is one InputError naming the field."""

    def __init__(self, origin: str) -> None:
        self.origin = origin
        self.named: list[tuple[str, str]] = []  # plain module names the lists give (_Rules.names)

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


def _ct_weights(r: _Reader, w: dict[str, Any], path: str, fmt: str) -> str:
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


def _ct_activation(r: _Reader, a: Any, path: str) -> str:
    a = r.obj(a, path)
    if a is None:
        return "bf16"
    bits = r.int(a.get("num_bits"), f"{path}.num_bits", (4, 8))
    kind = r.choice(a.get("type", "int"), f"{path}.type", ("int", "float"))
    if (bits, kind) not in _ACTIVATIONS:
        raise r.fail(f"{path}.num_bits", f"{bits}-bit {kind} activations: no GEMM rate here")
    return _ACTIVATIONS[(bits, kind)]


def _kv(r: _Reader, name: str, path: str) -> str:
    if name not in KV_FORMATS:
        raise r.fail(path, f"{name!r}: not a KV-cache format here (known: {', '.join(KV_FORMATS)})")
    return name


def _compressed_tensors(q: dict[str, Any], r: _Reader) -> _Rules:
    top = q.get("format")
    if top is not None:
        top = r.choice(top, "format", _CT_FORMATS)
    groups = r.obj(q.get("config_groups"), "config_groups", optional=False)
    if not groups:
        raise r.fail("config_groups", "is empty: no scheme says what the weights are stored in")
    schemes = []
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
    kv = r.obj(q.get("kv_cache_scheme"), "kv_cache_scheme")
    kv_fmt = None
    if kv is not None:
        bits = r.int(kv.get("num_bits"), "kv_cache_scheme.num_bits", (8,))
        kv_fmt = _kv(r, _ACTIVATIONS[(bits, r.choice(kv.get("type", "int"), "kv_cache_scheme.type",
                                                    ("int", "float")))], "kv_cache_scheme")
    ignore = r.ct_match(r.names(q.get("ignore"), "ignore"), "ignore")
    return _Rules(tuple(schemes), ignore, kv_fmt)


# ModelOpt's quant_algo values: weight format (group size filled in) and activations
_MODELOPT = {
    "FP8": ("fp8", "fp8"), "FP8_PER_CHANNEL_PER_TOKEN": ("fp8_ch", "fp8"), "FP8_PB_WO": ("fp8_b128x128", "bf16"),
    "NVFP4": ("nvfp4", "fp4"), "W4A16_NVFP4": ("nvfp4", "bf16"), "W4A8_NVFP4_FP8": ("nvfp4", "fp8"),
    "MXFP4": ("mxfp4", "fp4"), "W4A8_MXFP4_FP8": ("mxfp4", "fp8"), "MXFP8": ("fp8_g32_s1", "fp8"),
    "W4A16_AWQ": ("int4_g{g}", "bf16"), "W4A8_AWQ": ("int4_g{g}", "fp8"),
    "W8A8_SQ_PER_CHANNEL": ("int8_ch", "int8"), "W8A16": ("int8_ch", "bf16"),
}


def _modelopt_scheme(r: _Reader, entry: dict[str, Any], path: str) -> Scheme:
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


def _modelopt(q: dict[str, Any], r: _Reader) -> _Rules:
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
    return _Rules(tuple(schemes), r.glob(r.names(src.get(skip_key), pre + skip_key), pre + skip_key), kv_fmt)


def _awq(q: dict[str, Any], r: _Reader) -> _Rules:
    bits = r.int(q.get("bits", q.get("w_bit")), "bits", (4,))
    group = r.int(q.get("group_size", q.get("q_group_size", 128)), "group_size", None) \
        if q.get("group_size", q.get("q_group_size", 128)) != -1 else -1
    zero = q.get("zero_point", True)
    if not isinstance(zero, bool):
        raise r.fail("zero_point", f"must be true or false, got {zero!r}")
    layout = "ch" if group == -1 else f"g{group}{'z' if zero else ''}"
    return _Rules(((_layers_only, Scheme(canonical_format(f"int{bits}_{layout}"), "bf16")),),
                  _substring(r.names(q.get("modules_to_not_convert"), "modules_to_not_convert")))


def _gptq(q: dict[str, Any], r: _Reader) -> _Rules:
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
    return _Rules(tuple(schemes), lambda m: sub(m) or any(rx.match(n) for rx in skip_rx for n in m.names))


def _fbgemm_fp8(q: dict[str, Any], r: _Reader) -> _Rules:
    # per-output-channel FP8 weights with an fp32 scale each, activations quantized per row at run time
    return _Rules(((_linear, Scheme("fp8_ch_s4", "fp8")),),
                  _substring(r.names(q.get("modules_to_not_convert"), "modules_to_not_convert")))


_QUARK_ELEMENTS = {"fp8_e4m3": "fp8", "int8": "int8", "uint8": "int8", "int4": "int4", "uint4": "int4", "fp4": "fp4",
                   "mx": "mx"}
_QUARK_ACT = {"fp8_e4m3": "fp8", "int8": "int8", "uint8": "int8", "fp4": "fp4"}


def _quark_weight(r: _Reader, w: dict[str, Any], path: str) -> str:
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


def _quark_scheme(r: _Reader, cfg: dict[str, Any], path: str) -> Scheme | None:
    w = r.obj(cfg.get("weight"), f"{path}.weight")
    if w is None:
        return None
    a = r.obj(cfg.get("input_tensors"), f"{path}.input_tensors")
    act = "bf16"
    if a is not None:
        dtype = r.choice(a.get("dtype"), f"{path}.input_tensors.dtype", (*_QUARK_ACT, "mx"))
        act = "fp4" if dtype == "mx" else _QUARK_ACT[dtype]
    return Scheme(_quark_weight(r, w, f"{path}.weight"), act)


def _quark(q: dict[str, Any], r: _Reader) -> _Rules:
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
    return _Rules(tuple(schemes), r.glob(r.names(q.get("exclude"), "exclude"), "exclude"), kv_fmt)


def _bitsandbytes(q: dict[str, Any], r: _Reader) -> _Rules:
    skip = _substring(r.names(q.get("llm_int8_skip_modules"), "llm_int8_skip_modules"))
    if q.get("load_in_4bit") is True:
        r.choice(q.get("bnb_4bit_quant_type", "fp4"), "bnb_4bit_quant_type", ("nf4",))
        dq = q.get("bnb_4bit_use_double_quant", False)
        if not isinstance(dq, bool):
            raise r.fail("bnb_4bit_use_double_quant", f"must be true or false, got {dq!r}")
        # blocks of 64 share an absmax: fp32, or (double quantization) 8-bit with an fp32 scale per 256 blocks
        return _Rules(((_layers_only, Scheme("nf4_g64dq" if dq else "nf4_g64_s4", "bf16")),), skip)
    if q.get("load_in_8bit") is True:
        # LLM.int8(): int8 rows with an fp32 scale each; outlier columns run in 16 bits, so priced weight-only
        return _Rules(((_layers_only, Scheme("int8", "bf16")),), skip)
    raise r.fail("load_in_4bit", "neither load_in_4bit nor load_in_8bit is true: no format for the weights")


_METHODS: dict[str, Callable[[dict[str, Any], _Reader], _Rules]] = {
    "compressed-tensors": _compressed_tensors, "modelopt": _modelopt, "awq": _awq, "gptq": _gptq,
    "fbgemm_fp8": _fbgemm_fp8, "quark": _quark, "bitsandbytes": _bitsandbytes,
}


_GROUPS = ("attention", "dense", "experts", "embedding", "lm_head")
_STAND_IN = {"experts": "dense", "dense": "experts"}  # an empty group's format (_apply)


def _apply(rules: _Rules, method: str, base: str, modules: ModuleSet, warnings: list[str]) -> QuantSpec:
    """Each group's format: what most of its modules hold (a module ignored, or covered by no scheme, keeps the
    checkpoint's dtype); the activations of the first quantized group of dense, experts, attention. A group the
    model has no module of sizes nothing: the experts of a dense model take the dense group's format, the dense
    group of a MoE model without dense layers or shared experts the experts' (else what most layer modules hold)."""
    def scheme(m: Module) -> Scheme | None:
        return None if rules.ignored(m) else next((s for covers, s in rules.schemes if covers(m)), None)

    held_by = {g: Counter(scheme(m) for m in modules.modules if m.group == g) for g in _GROUPS}
    layers = Counter(scheme(m) for m in modules.modules if m.kind == "layer" and m.group != "norm")

    def bytes_of(s: Scheme | None) -> float:
        return number_format(s.weight if s else base).bytes_per_param

    chosen: dict[str, Scheme | None] = {}
    for group, held in held_by.items():
        held_or = held or held_by.get(_STAND_IN.get(group, ""), None) or layers or Counter([None])
        # the most modules; a tie goes to the larger bytes (the fit stays on the safe side)
        top = max(held_or.items(), key=lambda kv: (kv[1], bytes_of(kv[0])))
        chosen[group] = top[0]
        if len(held) > 1:
            split = ", ".join(f"{c} {s.weight if s else base}" for s, c in held.most_common())
            warnings.append(f"quantization_config ({method}): {group} modules are split ({split} of "
                            f"{sum(held.values())}); sized as {top[0].weight if top[0] else base}")
    acts = [s.activation for g in ("dense", "experts", "attention") if held_by[g] and (s := chosen[g]) is not None]
    _unmatched_names(rules, method, modules, warnings)
    return QuantSpec(method=method, **{g: (s.weight if s else base) for g, s in chosen.items()},
                     activation=acts[0] if acts else None, kv_cache=rules.kv_cache)


def _unmatched_names(rules: _Rules, method: str, modules: ModuleSet, warnings: list[str]) -> None:
    """A list entry naming a module of the text model (under its root, or its head) that the read stack does not
    hold is applied to nothing: one warning per field, naming it and how the stack names its modules."""
    names = {n for m in modules.modules for n in m.names}
    heads = {n for m in modules.modules if m.kind == "lm_head" for n in m.names}
    missing: dict[str, list[str]] = {}
    for path, entry in dict.fromkeys(rules.names):
        if not (entry in heads or any(entry.startswith(r + ".") for r in modules.roots)):
            continue  # outside the language model (a vision tower, a projector): sized apart, at 16 bits
        if entry in names or any(n.startswith(entry + ".") for n in names):
            continue
        missing.setdefault(path, []).append(entry)
    example = next((m.names[0] for m in modules.modules if m.kind == "layer"), None)
    for path, entries in missing.items():
        more = f" (and {len(entries) - 3} more)" if len(entries) > 3 else ""
        warnings.append(f"quantization_config.{path} ({method}): {', '.join(map(repr, entries[:3]))}{more} name no "
                        f"linear module of the model as read (its layers' modules are named like {example}); "
                        "applied to nothing")


def _read_quant(cfg: dict[str, Any], origin: str, warnings: list[str], modules: Callable[[], ModuleSet]) -> QuantSpec:
    q = cfg.get("quantization_config")
    if q is None:
        base = _base_dtype(cfg, origin)
        return QuantSpec(attention=base, dense=base, experts=base, embedding=base, lm_head=base)
    if not isinstance(q, dict):
        raise InputError(f"{origin}: quantization_config", "must be an object")
    method = str(q.get("quant_method", "")).lower()
    if method in _UNREPRESENTABLE:
        raise InputError(f"{origin}: quantization_config.quant_method",
                         f"{method!r}: {_UNREPRESENTABLE[method]} have no number format here; not sized")
    if method in _METHODS:
        reader = _Reader(origin)
        rules = replace(_METHODS[method](q, reader), names=tuple(reader.named))
        return _apply(rules, method, _base_dtype(cfg, origin), modules(), warnings)
    skip_key = next((k for k in ("modules_to_not_convert", "ignored_layers", "ignore") if q.get(k)), "ignore")
    skip_raw = q.get(skip_key) or []
    if not isinstance(skip_raw, list):
        raise InputError(f"{origin}: quantization_config.{skip_key}", "must be a list of module names")
    skip = [str(m) for m in skip_raw]

    def skipped(*needles: str) -> bool:
        return any(any(n in m for n in needles) for m in skip)

    if method == "fp8":
        block = q.get("weight_block_size")
        if block is not None and not (
            isinstance(block, list) and len(block) == 2
            and all(isinstance(b, int) and not isinstance(b, bool) and b > 0 for b in block)
        ):
            raise InputError(f"{origin}: quantization_config.weight_block_size",
                             f"must be two positive integers, got {block!r}")
        fmt = "fp8_block" if block else "fp8"
        bs = (block[0], block[1]) if block else None
        attn = "bf16" if skipped("self_attn") else fmt
        return QuantSpec(method=method, attention=attn, dense=fmt, experts=fmt, embedding="bf16",
                         lm_head="bf16", block_size=bs)
    if method == "mxfp4":
        return QuantSpec(method=method, attention="bf16" if skipped("self_attn") else "mxfp4", dense="bf16",
                         experts="mxfp4", embedding="bf16", lm_head="bf16")
    raise InputError(f"{origin}: quantization_config.quant_method",
                     f"unsupported quant_method {method!r} (read: fp8, mxfp4, {', '.join(_METHODS)})")


def _base_dtype(cfg: dict[str, Any], origin: str) -> str:
    """The checkpoint's own dtype (torch_dtype / dtype): what an unconverted module is stored in."""
    key = "torch_dtype" if cfg.get("torch_dtype") is not None else "dtype"
    dtype = cfg.get(key)
    if dtype is None:
        return "bf16"
    base = _TORCH_DTYPES.get(dtype) if isinstance(dtype, str) else None
    if base is None:  # a misspelt dtype would be read as bf16 and priced as such
        raise InputError(f"{origin}: {key}", f"unknown dtype {dtype!r}; known: {', '.join(_TORCH_DTYPES)}")
    return base
