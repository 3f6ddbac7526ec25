"""Defaults a family's configuration class derives from the config's other fields (its __post_init__), as data on
the family's line, applied where the config leaves the field out:
  _derived: {FIELD: EXPR}      EXPR an arithmetic expression over the config's fields (names, numbers, + - * / //,
                               int()), in the line's order so that one may read another (OlmoHybridConfig:
                               linear_key_head_dim int(0.75 * hidden_size / linear_num_key_heads)); a name the config
                               and the line both leave out leaves FIELD out (the reader then names it as missing)
  _layer_types_default: {cycle, first}  layer_types built over num_hidden_layers: layer i is cycle[i % len], layer 0
                               `first` where given (Lfm3Config: conv, conv, full, conv, sliding, ...; MiniMaxConfig)
  _list_defaults: {FIELD: {cycle, first}}  any other per-layer list built the same way (HYV4Config's indexer_types:
                               "full" at layer 0 and where (i - 1) % 4 == 0, "shared" elsewhere)
  _derived_always: [FIELD]     fields of _derived the class sets whatever the config writes (LongcatFlashConfig's
                               num_hidden_layers setter, run after the fields: num_layers = value // 2); a written
                               value that differs is refused naming FIELD, for the class would drop it
  _list_from_types: {FIELD: {types: TYPES, rates: RATES, fixed: {ENTRY: N}}}  FIELD, a number per layer, read off the
                               list TYPES: fixed[entry], else the mapping RATES' value of the entry (DeepseekV4Config's
                               layer_types and compress_rates for the compress_ratios its older files write); an entry
                               in neither is refused naming TYPES
  _count_from_types: {FIELD: {types: TYPES, entry: NAME}}  FIELD, the count of NAME entries in TYPES, which must be
                               the leading ones (DeepseekV4Config's mlp_layer_types: hash_moe first, for
                               num_hash_layers); NAME elsewhere is refused naming TYPES
"""
from __future__ import annotations

import ast
import operator
from typing import Any

from solver.specs.config.fields import Fields

_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
        ast.FloorDiv: operator.floordiv}


def _eval(node: ast.expr, fields: dict[str, Any]) -> Any:
    """The value of EXPR, or None where a name it reads is not a number in `fields`."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.Name):
        v = fields.get(node.id)
        return v if isinstance(v, (int, float)) and not isinstance(v, bool) else None
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        a, b = _eval(node.left, fields), _eval(node.right, fields)
        if a is None or b is None or (isinstance(node.op, (ast.Div, ast.FloorDiv)) and b == 0):
            return None
        return _OPS[type(node.op)](a, b)
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "int"
            and len(node.args) == 1 and not node.keywords):
        v = _eval(node.args[0], fields)
        return None if v is None else int(v)
    raise ValueError(f"unsupported expression {ast.unparse(node)!r}")


def derive_defaults(cfg: dict[str, Any]) -> list[str]:
    """Fill, in place, the fields the family's class derives and the config leaves out (None); returns their names."""
    out: list[str] = []
    for field, expr in (cfg.get("_derived") or {}).items():
        if cfg.get(field) is not None:
            continue
        value = _eval(ast.parse(str(expr), mode="eval").body, cfg)
        if value is not None:
            cfg[field] = value
            out.append(field)
    for field, rule in (cfg.get("_list_from_types") or {}).items():
        types, rates = cfg.get(rule["types"]), cfg.get(rule["rates"])
        if cfg.get(field) is None and isinstance(types, list) and isinstance(rates, dict):
            table = {**rates, **(rule.get("fixed") or {})}
            if all(isinstance(t, str) and t in table for t in types):  # otherwise refused by refuse_overwritten
                cfg[field] = [table[t] for t in types]
                out.append(field)
    for field, rule in (cfg.get("_count_from_types") or {}).items():
        types = cfg.get(rule["types"])
        if cfg.get(field) is None and isinstance(types, list):
            cfg[field] = sum(1 for t in types if t == rule["entry"])
            out.append(field)
    rules = dict(cfg.get("_list_defaults") or {})
    if cfg.get("_layer_types_default"):
        rules["layer_types"] = cfg["_layer_types_default"]
    layers = cfg.get("num_hidden_layers")
    for field, rule in rules.items():
        if cfg.get(field) is None and isinstance(layers, int) and not isinstance(layers, bool) and layers > 0:
            cycle = list(rule["cycle"])
            types = [cycle[i % len(cycle)] for i in range(layers)]
            if rule.get("first") is not None:
                types[0] = rule["first"]
            cfg[field] = types
            out.append(field)
    return out


def refuse_overwritten(f: Fields) -> None:
    """_derived_always: one line naming a written field the class overwrites with its derivation's other value;
    _list_from_types / _count_from_types: one naming the list whose entries the derivation cannot read."""
    for rule in (f.cfg.get("_list_from_types") or {}).values():
        types, rates = f.cfg.get(rule["types"]), f.cfg.get(rule["rates"])
        if isinstance(types, list) and isinstance(rates, dict):
            known = {**rates, **(rule.get("fixed") or {})}
            bad = next((i for i, t in enumerate(types) if not isinstance(t, str) or t not in known), None)
            if bad is not None:
                raise f.err(f"{rule['types']}[{bad}]", f"{types[bad]!r}: not one of {', '.join(map(str, known))}")
    for rule in (f.cfg.get("_count_from_types") or {}).values():
        types = f.cfg.get(rule["types"])
        if isinstance(types, list):
            n = sum(1 for t in types if t == rule["entry"])
            if any(t != rule["entry"] for t in types[:n]):
                raise f.err(rule["types"], f"{rule['entry']!r} entries after other ones: read only as the first "
                                           "layers")
    rules = f.cfg.get("_derived") or {}
    for field in f.cfg.get("_derived_always") or []:
        expr = str(rules[field])
        value = _eval(ast.parse(expr, mode="eval").body, f.cfg)
        written = f.cfg.get(field)
        if value is not None and written is not None and written != value:
            raise f.err(field, f"{written} disagrees with {expr} = {value}: the class sets {field} to that whatever the "
                               "config writes; write the two in agreement")
