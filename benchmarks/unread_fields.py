"""Silent miscounts where a config field sizes weights but the reader never looks at it: for every model_type the
reader holds (family_defaults.yaml lines, the catalog models/, the unseen configs), the transformers modeling code
is scanned for the config attributes that reach a weight's shape, the reader is run on a config of that family
with a record of the fields it looks up, and each shape-sizing attribute the reader neither reads nor knows as
inert is changed (x2, a bool flipped) to see whether the count moves. One that sizes weights in the modeling code
but moves nothing is a silent miscount candidate (`SILENT`); one whose change moves the count or is refused is
read some other way (`moves`).

The static scan (ast over models/<dir>/modeling_*.py of the folder whose configuration class has the model_type;
never imported) walks every class's __init__ in order:
- a config attribute is `config.X`, `self.config.X`, `text_config.X`, `cfg.X` or getattr(config, "X", d);
- a local name or a `self.` attribute assigned from an expression holding attributes carries them on (a small
  dataflow, in statement order, twice over so that a loop's later assignment reaches its earlier use);
- a sink is a weight constructor: nn.Linear / nn.Embedding / nn.Conv* / Conv1D / nn.Parameter (whatever tensor
  call it wraps) / a norm class (any name holding "Norm": its first argument and its keywords other than eps),
  nn.ModuleList / nn.Sequential (the layer count in their range), or a module class defined in the same file
  called with sizes beside `config` (DeepseekV3MLP(config, intermediate_size=...));
- the test of an `if` (or of a conditional expression) whose branch builds a sink sizes weights too: a bias or
  norm switch (`if config.use_qk_norm:`), a layer placement (`layer_idx >= config.first_k_dense_replace`).
It misses: attributes used outside __init__ (a helper function, a property, a forward-time shape), sizes passed
from one class to another through a constructor's positional argument named otherwise, classes imported from
another folder's modeling file, and config properties that compute a field (__post_init__). An attribute is kept
only where it is a field of the family's configuration class (its dataclass fields, __init__ keywords or
attribute_map) or written in the config: `config.X` of a vision config in the same file is dropped that way
unless the text class has a field of that name.

The dynamic side: parse_model_config runs with ReadRecorder's constructor wrapped to keep every recorder made; the
looked-up keys of the text-level recorder (the one holding the family's model_type and most of the text config)
are what the reader reads, a wrapper's aliases (attribute_map) count as reading the field. Known inert: the
reader's _SIZES_NOTHING names and the family line's _sizes_nothing list.

Run: PYTHONPATH=<checkout> python benchmarks/unread_fields.py --wheel /path/to/transformers [--all]
"""
from __future__ import annotations

import argparse
import ast
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.class_defaults import _SKIP, class_table  # noqa: E402
from solver.errors import InputError  # noqa: E402
from solver.estimate.params import count_params  # noqa: E402
from solver.specs.config import fields as fields_module  # noqa: E402
from solver.specs.config.read import _family_defaults, parse_model_config  # noqa: E402
from solver.specs.config.unread import _SIZES_NOTHING  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
_NESTED = ("text_config", "llm_config", "language_config", "llm_cfg")
_CONFIG_NAMES = {"config", "text_config", "cfg"}
_WEIGHT_CALLS = ("Linear", "Embedding", "Conv1d", "Conv2d", "Conv3d", "Conv1D", "ConvTranspose1d", "Parameter",
                 "EmbeddingBag", "ModuleList", "Sequential")
_SHAPELESS_KEYWORDS = {"eps", "padding_idx", "stride", "padding", "dilation", "device", "dtype", "momentum",
                       "padding_mode", "max_norm", "norm_type", "scale_grad_by_freq", "sparse", "layer_idx"}


def _callee(node: ast.Call) -> str:
    f = node.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""


def _config_attr(node: ast.AST) -> str | None:
    """X where node reads a config attribute X."""
    if isinstance(node, ast.Attribute):
        base = node.value
        if isinstance(base, ast.Name) and base.id in _CONFIG_NAMES:
            return node.attr
        if isinstance(base, ast.Attribute) and base.attr == "config" and isinstance(base.value, ast.Name) \
                and base.value.id == "self":
            return node.attr
    if isinstance(node, ast.Call) and _callee(node) == "getattr" and len(node.args) >= 2:
        obj, name = node.args[0], node.args[1]
        is_cfg = (isinstance(obj, ast.Name) and obj.id in _CONFIG_NAMES) or (
            isinstance(obj, ast.Attribute) and obj.attr == "config")
        if is_cfg and isinstance(name, ast.Constant) and isinstance(name.value, str):
            return name.value
    return None


class _Init:
    """The dataflow of one __init__: which config attributes each local / self attribute carries, and which reach
    a sink."""

    def __init__(self, local_classes: set[str]):
        self.local_classes = local_classes
        self.names: dict[str, set[str]] = {}
        self.selfs: dict[str, set[str]] = {}
        self.sized: set[str] = set()

    def attrs(self, node: ast.AST | None) -> set[str]:
        out: set[str] = set()
        if node is None:
            return out
        for sub in ast.walk(node):
            got = _config_attr(sub)
            if got is not None:
                out.add(got)
            elif isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load):
                out |= self.names.get(sub.id, set())
            elif isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name) and sub.value.id == "self":
                out |= self.selfs.get(sub.attr, set())
        return out

    def _sink_args(self, call: ast.Call) -> set[str]:
        name = _callee(call)
        out: set[str] = set()
        if "Norm" in name:
            args = call.args[:1]
        elif name in _WEIGHT_CALLS or name in self.local_classes:
            args = call.args
        else:
            return out
        for a in args:
            if not (isinstance(a, ast.Name) and a.id in _CONFIG_NAMES):  # the bare config: read inside that class
                out |= self.attrs(a)
        for kw in call.keywords:
            if kw.arg not in _SHAPELESS_KEYWORDS and not (isinstance(kw.value, ast.Name) and kw.value.id in _CONFIG_NAMES):
                out |= self.attrs(kw.value)
        return out

    def has_sink(self, node: ast.AST) -> bool:
        return any(isinstance(s, ast.Call) and (_callee(s) in _WEIGHT_CALLS or "Norm" in _callee(s)
                                                or _callee(s) in self.local_classes) for s in ast.walk(node))

    def expr(self, node: ast.AST) -> None:
        for sub in ast.walk(node):
            if isinstance(sub, ast.Call):
                self.sized |= self._sink_args(sub)
            elif isinstance(sub, ast.IfExp) and (self.has_sink(sub.body) or self.has_sink(sub.orelse)):
                self.sized |= self.attrs(sub.test)

    def block(self, body: list[ast.stmt]) -> None:
        for stmt in body:
            if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                value = stmt.value
                if value is None:
                    continue
                self.expr(value)
                carried = self.attrs(value)
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                for t in targets:
                    for el in (t.elts if isinstance(t, ast.Tuple) else [t]):
                        if isinstance(el, ast.Name):
                            self.names.setdefault(el.id, set()).update(carried)
                        elif isinstance(el, ast.Attribute) and isinstance(el.value, ast.Name) and el.value.id == "self":
                            self.selfs.setdefault(el.attr, set()).update(carried)
            elif isinstance(stmt, ast.If):
                if any(self.has_sink(s) for s in stmt.body + stmt.orelse):
                    self.sized |= self.attrs(stmt.test)
                self.expr(stmt.test)
                self.block(stmt.body)
                self.block(stmt.orelse)
            elif isinstance(stmt, (ast.For, ast.While)):
                if isinstance(stmt, ast.For):
                    carried = self.attrs(stmt.iter)
                    if isinstance(stmt.target, ast.Name):
                        self.names.setdefault(stmt.target.id, set()).update(carried)
                    if any(self.has_sink(s) for s in stmt.body):
                        self.sized |= carried  # a loop that builds modules: its range counts them
                self.block(stmt.body)
                self.block(stmt.orelse)
            elif isinstance(stmt, (ast.With, ast.Try)):
                self.block(stmt.body)
            elif isinstance(stmt, ast.Expr):
                self.expr(stmt.value)


def shape_attrs(files: list[Path]) -> set[str]:
    """The config attributes that reach a weight's shape in these modeling files (the module docstring's scan)."""
    sized: set[str] = set()
    for path in files:
        try:
            tree = ast.parse(path.read_text())
        except SyntaxError:
            continue
        classes = [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]
        local = {c.name for c in classes}
        for cls in classes:
            for fn in cls.body:
                if isinstance(fn, ast.FunctionDef) and fn.name == "__init__":
                    flow = _Init(local)
                    for _ in range(2):
                        flow.block(fn.body)
                    sized |= flow.sized
    return sized


def modeling_files(wheel: Path) -> dict[str, list[Path]]:
    """model_type -> the modeling_*.py files of the folder whose configuration class declares it."""
    out: dict[str, list[Path]] = {}
    for path in sorted((wheel / "models").glob("*/configuration_*.py")):
        try:
            tree = ast.parse(path.read_text())
        except SyntaxError:
            continue
        files = sorted(path.parent.glob("modeling_*.py"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                    and node.targets[0].id == "model_type" and isinstance(node.value, ast.Constant) \
                    and isinstance(node.value.value, str) and files:
                out.setdefault(node.value.value, files)
    return out


class _Recording:
    """ReadRecorder's constructor wrapped for the duration: every recorder the reader makes is kept."""

    def __enter__(self) -> list[Any]:
        self.made: list[Any] = []
        cls = fields_module.ReadRecorder
        self.orig = cls.__init__
        made = self.made

        def init(rec: Any, *a: Any, **k: Any) -> None:
            self.orig(rec, *a, **k)
            made.append(rec)
        cls.__init__ = init  # type: ignore[method-assign]
        return self.made

    def __exit__(self, *exc: Any) -> None:
        fields_module.ReadRecorder.__init__ = self.orig  # type: ignore[method-assign]


def _text(cfg: dict[str, Any]) -> tuple[str | None, dict[str, Any]]:
    nested = next((k for k in _NESTED if isinstance(cfg.get(k), dict) and cfg[k]), None)
    return nested, (cfg[nested] if nested else cfg)


def _count(cfg: dict[str, Any]) -> str:
    try:
        return f"{count_params(parse_model_config(json.loads(json.dumps(cfg)), 'check')).total:,}"
    except InputError as e:
        return "refused: " + str(e).split(": ", 1)[-1][:80]


def reads(cfg: dict[str, Any], model_type: str) -> set[str] | None:
    """The keys the reader looks up in the text-level config (None where it refuses the config)."""
    _, text = _text(cfg)
    with _Recording() as made:
        try:
            parse_model_config(json.loads(json.dumps(cfg)), "check")
        except InputError:
            return None
    level = [r for r in made if dict.get(r, "model_type") == model_type] or made
    best = max(level, key=lambda r: len(set(r) & set(text)))
    return {str(k) for k in best.looked_up}


def _varied(value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value * 2 if value else 1
    if isinstance(value, float):
        return value * 2 if value else 1.0
    return _SKIP


def scan(cfg: dict[str, Any], table: dict[str, Any], files: dict[str, list[Path]],
         read_too: bool = False) -> tuple[str, list[tuple]]:
    """(model_type, [(attr, kind, value, varied, count before, count after)]) for one config; `read_too` varies
    the attributes the reader reads as well (kind READ-SILENT where the count does not move)."""
    nested, text = _text(cfg)
    mt = str(text.get("model_type") or (cfg.get("model_type") if not nested else "") or "")
    cls = table.get(mt)
    if cls is None or mt not in files:
        return mt, []
    read = reads(cfg, mt)
    if read is None:
        return mt, []
    fields = set(cls["defaults"]) | set(cls["attribute_map"]) | set(text)
    aliases: dict[str, set[str]] = {}
    for alias, target in cls["attribute_map"].items():
        aliases.setdefault(target, set()).add(alias)
    line = _family_defaults().get(mt, {})
    idle = set(line.get("_sizes_nothing") or ())
    base = _count(cfg)
    out = []
    for attr in sorted(shape_attrs(files[mt]) & fields):
        target = cls["attribute_map"].get(attr, attr)  # the modeling code's alias of a field (num_local_experts)
        is_read = bool({attr, target} & read or (aliases.get(target, set()) & read))
        if is_read and not read_too or attr.startswith("_"):
            continue
        if attr.endswith(("_config", "_cfg")) or isinstance(text.get(attr), dict):
            continue  # a sub-config: its own fields size its module (read by the tower readers, not this scan)
        if _SIZES_NOTHING.search(attr) or attr in idle:
            if not is_read:
                out.append((attr, "inert", None, None, base, base))
            continue
        value = text[attr] if attr in text else cls["defaults"].get(attr, _SKIP)
        varied = _varied(value)
        if varied is _SKIP:
            if not is_read:
                out.append((attr, "unvaried", value if value is not _SKIP else None, None, base, base))
            continue
        inner = {**text, attr: varied}
        after = _count({**cfg, nested: inner} if nested else inner)
        if is_read:
            out.append((attr, "READ-SILENT" if after == base else "read", value, varied, base, after))
        else:
            out.append((attr, "SILENT" if after == base else "moves", value, varied, base, after))
    return mt, out


def configs() -> list[Path]:
    return sorted((ROOT / "models").glob("*.json")) + sorted((ROOT / "tests/data/configs_unseen").rglob("*.json"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--wheel", required=True, help="the unzipped transformers package folder (holds models/)")
    ap.add_argument("--all", action="store_true", help="list the inert and unvaried attributes and the moving ones")
    ap.add_argument("--read", action="store_true", help="vary the shape attributes the reader reads too (`READ-SILENT`:"
                                                        " read, yet the count does not move)")
    args = ap.parse_args()
    wheel = Path(args.wheel)
    table, files = class_table(wheel), modeling_files(wheel)
    runs: list[tuple[str, str, dict[str, Any]]] = []  # every config of a family the wheel has modeling code for
    for path in configs():
        cfg = json.loads(path.read_text())
        if not isinstance(cfg, dict):
            continue
        _, text = _text(cfg)
        mt = str(text.get("model_type") or cfg.get("model_type") or "")
        if mt in files and mt in table and reads(cfg, mt) is not None:
            runs.append((mt, str(path.relative_to(ROOT)), cfg))
    from_files = {mt for mt, _, _ in runs}
    for mt in sorted(set(_family_defaults()) - from_files):  # a line with no config file: its class defaults
        cls = table.get(mt)
        if cls is None or mt not in files:
            continue
        cfg = {k: v for k, v in cls["defaults"].items() if v is not _SKIP and v is not None}
        cfg["model_type"] = mt
        if reads(cfg, mt) is not None:
            runs.append((mt, f"{cls['cls']}()", cfg))
    # per family and attribute: the configs of each outcome, the first silent one shown
    found: dict[tuple[str, str], dict[str, list[str]]] = {}
    shown: dict[tuple[str, str], str] = {}
    for mt, where, cfg in sorted(runs):
        _, rows = scan(cfg, table, files, args.read)
        for attr, kind, value, varied, before, after in rows:
            found.setdefault((mt, attr), {}).setdefault(kind, []).append(where)
            if (mt, attr) not in shown or kind.endswith("SILENT") and "SILENT" not in shown[(mt, attr)]:
                shown[(mt, attr)] = f"{kind}\t{where}\t{value!r} -> {varied!r}\t{before} -> {after}"
    listed = silent = 0
    for (mt, attr), kinds in sorted(found.items()):
        worst = next((k for k in ("SILENT", "READ-SILENT", "moves", "unvaried", "inert", "read") if k in kinds), "")
        listed += worst in ("SILENT", "moves", "unvaried")
        silent += worst == "SILENT"
        if worst.endswith("SILENT") or args.all and worst != "read":
            counts = ", ".join(f"{k} {len(v)}" for k, v in sorted(kinds.items()))
            print(f"{worst}\t{mt}\t{attr}\t[{counts}]\t{shown[(mt, attr)]}")
    families = {mt for mt, _, _ in runs}
    print(f"# {len(families)} families scanned ({len(from_files)} with config files, {len(runs)} configs; "
          f"{len(families - from_files)} from class defaults), {listed} family attributes flagged (shape-sizing, "
          f"not read, not inert), {silent} silent")


if __name__ == "__main__":
    main()
