"""Silent miscounts where a config leaves a field out: for every catalog model (models/*.json) and every unseen
config (tests/data/configs_unseen/), each field the config writes is removed one at a time and the reader's
result compared with the same config holding the transformers configuration class's default for that field.
A config that leaves a field out was built with the class default, so the two must agree, or the reader must
refuse naming the field. A flat config's top-level fields are checked against its own class; a wrapper's
language model (text_config, ...) field by field against the class transformers builds it with (text_class: the
wrapper's sub-config class, or the nested model_type's, with the wrapper's init_kwargs only where it merges them).

The class defaults are read from the wheel's source with ast (never imported): the dataclass fields of the
class whose `model_type` matches and of its bases (transformers 5: `vocab_size: int = 129280`), or the keyword
defaults of an old-style `__init__`. A default of None (or none) is taken from the class's __post_init__ where
it sets the field at its top level under `if self.x is None:` (old style: `if x is None:`), those statements run
on the config's other fields and the class defaults (head_dim None -> hidden // heads, layer_types' pattern);
statements reading anything else (kwargs, sub-configs) leave it skipped, as is a default that is not a literal. A
nested config's tie_word_embeddings is compared with the wrapper's in a file transformers 5.x saved (it ties the
wrapper's head by the wrapper's config), not with the text class's default (4.x's rule, for the older files).

Compared: the parameter total, each layer's mixer kind (sliding or full) and the KV / state bytes of one
request at 8,192 tokens. One line per mismatch: `MISCOUNT` (removed counts, and differs from the default). With
--all also `contradicts` (the class default is refused
against the config's other fields: num_hidden_layers 36 beside 24 layer_types) and `refused` (the removed config
is refused: the rule's other allowed answer). With --post-init also the fields derived so, per model_type.

Run: PYTHONPATH=<checkout> python benchmarks/class_defaults.py --wheel /path/to/transformers [--all] [--post-init]
"""
from __future__ import annotations

import argparse
import ast
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from solver.specs.dtypes import KV16
from solver.errors import InputError  # noqa: E402
from solver.estimate.request_state import state_of_layers  # noqa: E402
from solver.estimate.params import count_params  # noqa: E402
from solver.specs.config.read import parse_model_config  # noqa: E402
from solver.specs.config.head_tie import saved_by_major  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
_NESTED = ("text_config", "llm_config", "language_config", "llm_cfg")
_SKIP = object()


def _literal(node: ast.expr | None) -> Any:
    if node is None:
        return _SKIP
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return _SKIP


def _sub_config_specs(node: ast.Dict, cls: ast.ClassDef) -> dict[str, dict[str, Any]]:
    """The nested configs a wrapper builds (its sub_configs_defaults): per key the class it builds a given dict with
    (a named config class, or AutoConfig by the dict's model_type, falling back to the spec's), the spec's
    init_kwargs, and whether its __post_init__ merges those init_kwargs under a given dict (VoxtralConfig's
    `{**init_kwargs, **self.text_config}`); otherwise init_kwargs only build the config given none."""
    post = next((ast.unparse(f) for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == "__post_init__"), "")
    out: dict[str, dict[str, Any]] = {}
    for k, v in zip(node.keys, node.values):
        key = _literal(k)
        if not isinstance(key, str):
            continue
        spec: dict[str, Any] = {"cls": None, "model_type": None, "init": {},
                                "merge": f"init_kwargs, **self.{key}" in post}
        if isinstance(v, ast.Name):
            spec["cls"] = v.id
        elif isinstance(v, ast.Call):
            kw = {a.arg: a.value for a in v.keywords}
            target = kw.get("config_class", v.args[0] if v.args else None)
            if isinstance(target, ast.Name) and target.id != "AutoConfig":
                spec["cls"] = target.id
            mt, init = _literal(kw.get("model_type")), _literal(kw.get("init_kwargs"))
            spec["model_type"] = mt if isinstance(mt, str) else None
            spec["init"] = init if isinstance(init, dict) else {}
        out[key] = spec
    return out


def _derivations(fn: ast.FunctionDef) -> dict[str, tuple[str, list[ast.stmt]]]:
    """The fields a class sets where they are None, at the top level of its __post_init__ (or an old-style
    __init__): `if self.x is None: <statements setting self.x>` -> x: ("self", statements); the __init__ form
    `if x is None: x = ...` -> x: ("local", statements)."""
    out: dict[str, tuple[str, list[ast.stmt]]] = {}
    for stmt in fn.body:
        test = stmt.test if isinstance(stmt, ast.If) and not stmt.orelse else None
        if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Is)
                and isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value is None):
            continue
        left = test.left
        # the first test of a field decides: a later `if self.x is None` finds it set
        if isinstance(left, ast.Attribute) and isinstance(left.value, ast.Name) and left.value.id == "self":
            out.setdefault(left.attr, ("self", stmt.body))
        elif isinstance(left, ast.Name):
            out.setdefault(left.id, ("local", stmt.body))
    return out


_BUILTINS = {"int": int, "float": float, "min": min, "max": max, "len": len, "range": range, "bool": bool,
             "list": list, "round": round, "abs": abs, "sum": sum, "isinstance": isinstance, "str": str}


def _derive(field: str, rule: tuple[str, list[ast.stmt]], env: dict[str, Any]) -> Any:
    """The value the class's __post_init__ gives `field` left out (None), its other fields `env` (the config's,
    else the class defaults); _SKIP where the statements read anything else (kwargs, sub-configs, imports)."""
    import types

    style, body = rule
    ns = types.SimpleNamespace(**{k: v for k, v in env.items() if k != field}, **{field: None})
    local: dict[str, Any] = {**env, field: None, "self": ns}
    try:
        exec(compile(ast.Module(body=body, type_ignores=[]), "<post_init>", "exec"),  # noqa: S102 (the wheel's own source)
             {"__builtins__": _BUILTINS}, local)
    except Exception:  # noqa: BLE001 (what the statements need beyond the fields: not a simple derivation)
        return _SKIP
    value = getattr(ns, field) if style == "self" else local.get(field)
    return _SKIP if value is None else value


def _class_info(node: ast.ClassDef) -> dict[str, Any]:
    """model_type, attribute_map, base names and the field defaults written in one class body."""
    info: dict[str, Any] = {"bases": [b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in node.bases],
                            "defaults": {}, "model_type": None, "attribute_map": {}, "subs": {}, "derived": {}}
    for stmt in node.body:
        if isinstance(stmt, ast.FunctionDef) and stmt.name in ("__post_init__", "__init__"):
            info["derived"].update(_derivations(stmt))
        if (isinstance(stmt, (ast.AnnAssign, ast.Assign)) and isinstance(stmt.value, ast.Dict)
                and any(isinstance(t, ast.Name) and t.id in ("sub_configs_defaults", "sub_configs")
                        for t in (stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]))):
            info["subs"] = _sub_config_specs(stmt.value, node)
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            info["defaults"][stmt.target.id] = _literal(stmt.value)
        elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            name = stmt.targets[0].id
            if name == "model_type":
                info["model_type"] = _literal(stmt.value)
            elif name == "attribute_map":
                got = _literal(stmt.value)
                info["attribute_map"] = got if isinstance(got, dict) else {}
        elif isinstance(stmt, ast.FunctionDef) and stmt.name == "__init__":  # transformers 4's style
            args = stmt.args
            pos = args.args[len(args.args) - len(args.defaults):]
            for a, d in list(zip(pos, args.defaults)) + list(zip(args.kwonlyargs, args.kw_defaults)):
                info["defaults"].setdefault(a.arg, _literal(d))
    return info


def class_table(wheel: Path) -> dict[str, dict[str, Any]]:
    """model_type -> {defaults, attribute_map, cls} over every configuration_*.py in the wheel, bases resolved by
    class name (the first definition of a name wins; PreTrainedConfig's own fields are not a family's)."""
    classes: dict[str, dict[str, Any]] = {}
    for path in sorted((wheel / "models").glob("*/configuration_*.py")):
        try:
            tree = ast.parse(path.read_text())
        except SyntaxError:
            continue
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and node.name not in classes:
                classes[node.name] = _class_info(node)

    def merged(name: str, seen: frozenset = frozenset()) -> tuple[dict, dict, dict]:
        info = classes.get(name)
        if info is None or name in seen:
            return {}, {}, {}
        defaults: dict = {}
        amap: dict = {}
        derived: dict = {}
        for base in info["bases"]:
            d, a, r = merged(base, seen | {name})
            defaults.update(d)
            amap.update(a)
            derived.update(r)
        defaults.update(info["defaults"])
        amap.update(info["attribute_map"])
        derived.update(info["derived"])
        return defaults, amap, derived

    table: dict[str, dict[str, Any]] = {}
    for name, info in classes.items():
        defaults, amap, derived = merged(name)
        entry = {"defaults": defaults, "attribute_map": amap, "cls": name, "subs": info["subs"], "derived": derived}
        table["class:" + name] = entry  # a wrapper's sub-config named by its class (Qwen3VLTextConfig)
        mt = info["model_type"]
        if isinstance(mt, str) and mt and mt not in table:
            table[mt] = entry
    return table


def text_class(cfg: dict[str, Any], nested: str, table: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
    """What transformers builds a wrapper's nested language-model dict with: the wrapper's named sub-config class,
    or AutoConfig by the dict's model_type (the spec's where the dict writes none), the fields left out taken from
    that class's defaults; the spec's init_kwargs only where the wrapper merges them under the dict (Voxtral). The
    init_kwargs otherwise build the text config given none: a dict leaving hidden_size out is GemmaConfig()'s 3072
    in PaliGemma, not the 2048 of the text config PaliGemmaConfig() builds (to_diff_dict drops a nested field only
    where it equals the nested class's default, so reading it back gives the same)."""
    wrapper = table.get(str(cfg.get("model_type") or ""))
    spec = (wrapper or {}).get("subs", {}).get(nested)
    inner_mt = cfg[nested].get("model_type")
    if spec is None:
        return table.get(str(inner_mt or ""))
    cls = table.get("class:" + spec["cls"]) if spec["cls"] else table.get(str(inner_mt or spec["model_type"] or ""))
    if cls is None:
        return None
    if not spec["merge"]:
        return cls
    return {**cls, "defaults": {**cls["defaults"], **spec["init"]}}


def _fingerprint(cfg: dict[str, Any]) -> tuple:
    try:
        spec = parse_model_config(json.loads(json.dumps(cfg)), "check")
        kinds = tuple(layer.mixer.kind if layer.mixer is not None else "-" for layer in spec.layers)
        state = state_of_layers(spec.layer_groups, KV16, 1, 8192)
        return ("count", count_params(spec).total, kinds, round(state.kv + state.index + state.constant))
    except InputError as e:
        return ("refused", str(e))


def _describe(fp: tuple) -> str:
    if fp[0] == "refused":
        return "refused: " + fp[1].split(": ", 1)[-1][:90]
    total, kinds, state = fp[1], fp[2], fp[3]
    mix: dict[str, int] = {}
    for k in kinds:
        mix[k] = mix.get(k, 0) + 1
    return f"{total:,} params, {' + '.join(f'{n} {k}' for k, n in mix.items())}, state {state:,} B"


def _default_for(field: str, cls: dict[str, Any]) -> Any:
    if field in cls["defaults"]:
        return cls["defaults"][field]
    target = cls["attribute_map"].get(field)  # the config writes the alias of a field (num_local_experts)
    if target is not None and target in cls["defaults"]:
        return cls["defaults"][target]
    return _SKIP


def check(cfg: dict[str, Any], table: dict[str, dict[str, Any]]) -> list[tuple[str, str, Any, str, str]]:
    """(kind, field, class default, removed, default) for every field whose removal the reader answers otherwise
    than the class default; kind MISCOUNT where the removed config counts, refused where it is refused."""
    nested = next((k for k in _NESTED if isinstance(cfg.get(k), dict) and cfg[k]), None)
    where = cfg[nested] if nested else cfg
    cls = text_class(cfg, nested, table) if nested else table.get(str(cfg.get("model_type") or ""))
    if cls is None:
        return []
    out = []
    wrapper_cls = table.get(str(cfg.get("model_type") or "")) if nested else None
    for field in list(where):
        if field == "model_type":
            continue
        default = _default_for(field, cls)
        target = field if field in cls.get("derived", {}) else cls["attribute_map"].get(field, field)
        if default in (_SKIP, None) and target in cls.get("derived", {}):
            # set in __post_init__ from the config's other fields (head_dim None -> hidden // heads)
            env = {k: v for k, v in cls["defaults"].items() if v is not _SKIP}
            env.update({cls["attribute_map"].get(k, k): v for k, v in where.items() if k != field})
            default = _derive(target, cls["derived"][target], env)
            if default is not _SKIP:
                out.append(("post_init", (f"{nested}." if nested else "") + field, default, "", ""))
        if nested and field == "tie_word_embeddings" and (saved_by_major(cfg) or 0) >= 5:
            # transformers 5.x ties the head by the model class's own config (get_expanded_tied_weights_keys reads
            # self.config.tie_word_embeddings; the head is the wrapper's): in a file it saved, a text config leaving
            # the field out ties by the wrapper's field, written or its class default (4.x tied by the text
            # config's, its class default: solver/specs/config/head_tie.py)
            default = cfg.get(field, _default_for(field, wrapper_cls) if wrapper_cls else _SKIP)
        elif nested and field == "tie_word_embeddings" and saved_by_major(cfg) is None and field in cfg:
            default = cfg[field]  # no version: the wrapper's written flag over the text class's default
        if default is _SKIP or default is None:
            continue

        def variant(value: Any = _SKIP) -> dict[str, Any]:
            inner = {k: v for k, v in where.items() if k != field}
            if value is not _SKIP:
                inner[field] = value
            return {**cfg, nested: inner} if nested else inner

        removed, with_default = _fingerprint(variant()), _fingerprint(variant(default))
        if removed == with_default or (removed[0] == with_default[0] == "refused"):
            continue
        kind = "refused" if removed[0] == "refused" else "contradicts" if with_default[0] == "refused" else "MISCOUNT"
        out.append((kind, (f"{nested}." if nested else "") + field, default, _describe(removed),
                    _describe(with_default)))
    return out


def configs() -> list[Path]:
    return sorted((ROOT / "models").glob("*.json")) + sorted((ROOT / "tests/data/configs_unseen").rglob("*.json"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--wheel", required=True, help="the unzipped transformers package folder (holds models/)")
    ap.add_argument("--all", action="store_true", help="list the refusals too")
    ap.add_argument("--post-init", action="store_true",
                    help="list, per model_type, the fields whose default was derived from __post_init__")
    args = ap.parse_args()
    table = class_table(Path(args.wheel))
    checked = 0
    post_init: dict[str, set[str]] = {}
    for path in configs():
        cfg = json.loads(path.read_text())
        if not isinstance(cfg, dict):
            continue
        checked += 1
        for kind, field, default, removed, with_default in check(cfg, table):
            if kind == "post_init":
                nested = next((k for k in _NESTED if isinstance(cfg.get(k), dict) and cfg[k]), None)
                mt = str((cfg[nested] if nested else cfg).get("model_type") or cfg.get("model_type"))
                post_init.setdefault(mt, set()).add(field.split(".")[-1])
                continue
            if kind == "MISCOUNT" or args.all:
                print(f"{kind}\t{path.relative_to(ROOT)}\t{field}\tdefault {default!r}\tremoved: {removed}\t"
                      f"default: {with_default}")
    if args.post_init:
        for mt, fields in sorted(post_init.items()):
            print(f"post_init\t{mt}\t{', '.join(sorted(fields))}")
    print(f"# {checked} configs, {sum(not k.startswith('class:') for k in table)} configuration classes in the wheel")


if __name__ == "__main__":
    main()
