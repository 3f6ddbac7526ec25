"""Checkpoint number formats per module group, from quantization_config.

Each quant method writes the format in its own fields (quant_methods.py: METHODS maps a quant_method to the reader
of those fields, which returns Rules: the schemes (weight format, activation format) and the modules each covers,
the modules left unconverted, the KV-cache format). The rules are applied here to the modules the read layer stack
holds (module_names.py: each layer kind's linear modules, named as the family's checkpoints name them, every layer
and MTP layer), and a group takes the format most of its modules hold (a split is noted). A format no number format
here holds is refused naming the field. fp8 and mxfp4 (DeepSeek / Kimi / MiniMax / gpt-oss checkpoints) keep their
own branch.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace
from typing import Any, Callable

from solver.errors import InputError
from solver.specs.config.module_names import Module, ModuleSet
from solver.specs.config.quant_methods import METHODS, Reader, Rules, Scheme
from solver.specs.dtypes import number_format


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
    kv_cache_auto: bool = False  # the engines' KV dtype "auto" takes kv_cache (quant_methods.Rules.kv_cache_auto)


# torch_dtype / dtype (the weights' storage without a quantization_config), and any other dtype a config writes (a
# recurrent state's: config/recurrent_blocks.py): torch's names and their aliases, as number formats
TORCH_DTYPES = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32", "bf16": "bf16", "fp16": "fp16",
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


_GROUPS = ("attention", "dense", "experts", "embedding", "lm_head")
_STAND_IN = {"experts": "dense", "dense": "experts"}  # an empty group's format (_apply)


def _refuse_overlaps(rules: Rules, modules: ModuleSet, origin: str) -> None:
    """Two schemes of one method covering one module with different formats leave its format unsaid (which one a
    loader applies is the library's choice, not the config's): refused naming the second scheme's field."""
    if len(rules.scheme_paths) != len(rules.schemes):
        return
    for m in modules.modules:
        if rules.ignored(m):
            continue
        covering = [(s, p) for (covers, s), p in zip(rules.schemes, rules.scheme_paths) if covers(m)]
        other = next(((s, p) for s, p in covering[1:] if s != covering[0][0]), None)
        if other is not None:
            raise InputError(f"{origin}: quantization_config.{other[1]}",
                             f"covers {m.names[0]} as {covering[0][1]} does, with another format ({other[0].weight} "
                             f"against {covering[0][0].weight}): which one the module is stored in is not said")


def _apply(rules: Rules, method: str, base: str, modules: ModuleSet, warnings: list[str]) -> QuantSpec:
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
                     activation=acts[0] if acts else None, kv_cache=rules.kv_cache,
                     kv_cache_auto=rules.kv_cache_auto and rules.kv_cache is not None)


def _unmatched_names(rules: Rules, method: str, modules: ModuleSet, warnings: list[str]) -> None:
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
    if method in METHODS:
        reader = Reader(origin)
        rules = replace(METHODS[method](q, reader), names=tuple(reader.named))
        mods = modules()
        _refuse_overlaps(rules, mods, origin)
        return _apply(rules, method, _base_dtype(cfg, origin), mods, warnings)
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
                     f"unsupported quant_method {method!r} (read: fp8, mxfp4, {', '.join(METHODS)})")


def _base_dtype(cfg: dict[str, Any], origin: str) -> str:
    """The checkpoint's own dtype (dtype / torch_dtype): what an unconverted module is stored in. Both given, dtype
    is the one read (PretrainedConfig keeps dtype and takes the older torch_dtype only where dtype is unset)."""
    key = "dtype" if cfg.get("dtype") is not None else "torch_dtype"
    dtype = cfg.get(key)
    if dtype is None:
        return "bf16"
    base = TORCH_DTYPES.get(dtype) if isinstance(dtype, str) else None
    if base is None:  # a misspelt dtype would be read as bf16 and priced as such
        raise InputError(f"{origin}: {key}", f"unknown dtype {dtype!r}; known: {', '.join(TORCH_DTYPES)}")
    return base
